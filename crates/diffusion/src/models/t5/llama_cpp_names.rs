//! A T5 encoder in llama.cpp's GGUF names, as city96's `t5-v1_1-xxl-encoder-gguf` files (which
//! ComfyUI-GGUF and stable-diffusion.cpp read beside SD3.5 and FLUX.1) keep it: `token_embd`,
//! `enc.blk.N.attn_q`, ..., `enc.output_norm`, gguf-py's tensor map for `MODEL_ARCH.T5ENCODER`.
//! A rename is all it takes (no tensor is reordered).

use crate::io::component_file::{llama_cpp_block, LlamaCppNames, TextEncoderNames};

/// What `general.architecture` says in such a file.
pub const ARCHITECTURE: &str = "t5encoder";

/// How a T5 encoder file (`--text-encoder`: transformers' names, or llama.cpp's) is read.
pub fn file_names() -> TextEncoderNames {
    TextEncoderNames {
        what: "T5 encoder",
        prefix: "",
        marker: "shared.weight",
        llama_cpp: Some(LlamaCppNames {
            architecture: ARCHITECTURE,
            transformers_name,
        }),
    }
}

/// The transformers name of the llama.cpp tensor `name`, or `None` for one a T5 encoder does
/// not have.
pub fn transformers_name(name: &str) -> Option<String> {
    let whole = match name {
        "token_embd.weight" => Some("shared.weight"),
        "enc.output_norm.weight" => Some("encoder.final_layer_norm.weight"),
        _ => None,
    };
    if let Some(whole) = whole {
        return Some(whole.to_string());
    }
    let (number, part) = llama_cpp_block(name, "enc.blk.")?;
    let part = match part {
        "attn_q.weight" => "layer.0.SelfAttention.q.weight",
        "attn_k.weight" => "layer.0.SelfAttention.k.weight",
        "attn_v.weight" => "layer.0.SelfAttention.v.weight",
        "attn_o.weight" => "layer.0.SelfAttention.o.weight",
        "attn_rel_b.weight" => "layer.0.SelfAttention.relative_attention_bias.weight",
        "attn_norm.weight" => "layer.0.layer_norm.weight",
        "ffn_norm.weight" => "layer.1.layer_norm.weight",
        "ffn_gate.weight" => "layer.1.DenseReluDense.wi_0.weight",
        "ffn_up.weight" => "layer.1.DenseReluDense.wi_1.weight",
        "ffn_down.weight" => "layer.1.DenseReluDense.wo.weight",
        _ => return None,
    };
    Some(format!("encoder.block.{number}.{part}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_gguf_pys_and_block_numbers_read_as_written() {
        assert_eq!(
            transformers_name("enc.blk.23.ffn_gate.weight").as_deref(),
            Some("encoder.block.23.layer.1.DenseReluDense.wi_0.weight")
        );
        assert_eq!(
            transformers_name("token_embd.weight").as_deref(),
            Some("shared.weight")
        );
        for odd in [
            "enc.blk.07.attn_q.weight",
            "dec.blk.0.attn_q.weight",
            "enc.blk.0.attn_q.bias",
            "output.weight",
        ] {
            assert_eq!(transformers_name(odd), None, "{odd}");
        }
    }
}
