//! A Qwen3 text encoder in llama.cpp's GGUF names (ComfyUI-GGUF's and stable-diffusion.cpp's
//! `text_encoders/Qwen3-4B-Q4_K_M.gguf` and the like, as llama.cpp's `convert_hf_to_gguf.py`
//! writes them): `token_embd.weight`, `blk.N.attn_q.weight`, ... That converter takes a Qwen3
//! model's tensors as they are, renamed by gguf-py's tensor map (`MODEL_ARCH.QWEN3`): unlike a
//! Llama's, Qwen3's q and k rows are not permuted (Qwen3's rotary embedding rotates halves, as
//! llama.cpp's NEOX mode does), so a rename is all it takes. transformers reads such files the
//! same way (a reverse permutation only for `llama`).

use crate::io::component_file::llama_cpp_block;

/// What `general.architecture` says in a Qwen3 file.
pub const ARCHITECTURE: &str = "qwen3";

/// The transformers name (without `model.`; a language-model head as `lm_head.weight`) of the
/// llama.cpp tensor `name`, or `None` for a name a Qwen3 model does not have.
pub fn transformers_name(name: &str) -> Option<String> {
    let whole = match name {
        "token_embd.weight" => Some("embed_tokens.weight"),
        "output_norm.weight" => Some("norm.weight"),
        "output.weight" => Some("lm_head.weight"),
        _ => None,
    };
    if let Some(whole) = whole {
        return Some(whole.to_string());
    }
    let (number, part) = llama_cpp_block(name, "blk.")?;
    let part = match part {
        "attn_norm.weight" => "input_layernorm.weight",
        "attn_q.weight" => "self_attn.q_proj.weight",
        "attn_k.weight" => "self_attn.k_proj.weight",
        "attn_v.weight" => "self_attn.v_proj.weight",
        "attn_output.weight" => "self_attn.o_proj.weight",
        "attn_q_norm.weight" => "self_attn.q_norm.weight",
        "attn_k_norm.weight" => "self_attn.k_norm.weight",
        "ffn_norm.weight" => "post_attention_layernorm.weight",
        "ffn_gate.weight" => "mlp.gate_proj.weight",
        "ffn_up.weight" => "mlp.up_proj.weight",
        "ffn_down.weight" => "mlp.down_proj.weight",
        _ => return None,
    };
    Some(format!("layers.{number}.{part}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_numbers_are_read_only_as_written() {
        assert_eq!(
            transformers_name("blk.12.ffn_down.weight").as_deref(),
            Some("layers.12.mlp.down_proj.weight")
        );
        for odd in [
            "blk.07.ffn_down.weight",
            "blk.+7.ffn_down.weight",
            "blk..ffn_down.weight",
            "blk.7.ffn_down.bias",
            "blk.7",
            "rope_freqs.weight",
        ] {
            assert_eq!(transformers_name(odd), None, "{odd}");
        }
    }
}
