//! SD3's and SD3.5's MMDiT layers for `sdbench timing --ops --ops-of sd35-medium` (or
//! `sd35-large`, `sd35-large-turbo`, `sd3-medium`) (`op_timing`).

use super::transformer::Sd3TransformerConfig;
use super::{CLIP_TOKENS, T5_TOKENS};
use crate::pipeline::op_timing::{OpCase, OpCases};

pub(super) const MEDIUM_35_OP_CASES: OpCases = OpCases {
    whose: "SD3.5 Medium's MMDiT-X",
    cases: |height, width| mmdit_cases(&Sd3TransformerConfig::medium_35(), height, width),
};

pub(super) const LARGE_35_OP_CASES: OpCases = OpCases {
    whose: "SD3.5 Large's MMDiT",
    cases: |height, width| mmdit_cases(&Sd3TransformerConfig::large_35(), height, width),
};

pub(super) const MEDIUM_3_OP_CASES: OpCases = OpCases {
    whose: "SD3 Medium's MMDiT",
    cases: |height, width| mmdit_cases(&Sd3TransformerConfig::medium_3(), height, width),
};

/// A joint block's layers for an image of `height` x `width` (multiples of 16): the image's
/// 2x2-patched latents and the prompt's CLIP and T5 tokens (77 + 256), each stream's q (k, v and
/// out alike) and its MLP's two linears (ratio 4), the joint attention over both, and, in
/// MMDiT-X's dual-attention blocks, the second attention over the image alone.
fn mmdit_cases(config: &Sd3TransformerConfig, height: usize, width: usize) -> Vec<OpCase> {
    let image = (height / 16) * (width / 16);
    let context = CLIP_TOKENS + T5_TOKENS;
    let heads = config.num_attention_heads;
    let dim = config.attention_head_dim;
    let d = heads * dim;
    let linear = |rows, inputs, outputs| OpCase::Linear {
        rows,
        inputs,
        outputs,
    };
    let attention = |tokens| OpCase::Attention {
        n: 1,
        heads,
        queries: tokens,
        keys: tokens,
        dim,
    };
    let mut cases = vec![
        linear(image, d, d),
        linear(image, d, 4 * d),
        linear(image, 4 * d, d),
        linear(context, d, d),
        linear(context, d, 4 * d),
        linear(context, 4 * d, d),
        attention(image + context),
    ];
    if !config.dual_attention_layers.is_empty() {
        cases.push(attention(image));
    }
    cases
}

#[cfg(test)]
mod tests {
    use super::*;

    /// At 1024x1024: 4096 image tokens beside 333 of the prompt; Medium's 24 heads of 64 and its
    /// image-only second attention, Large's 38 heads without one.
    #[test]
    fn the_cases_are_the_blocks_layers_at_their_widths() {
        let medium = (MEDIUM_35_OP_CASES.cases)(1024, 1024);
        assert_eq!(medium.len(), 8);
        assert_eq!(medium[0].to_string(), "linear rows=4096 in=1536 out=1536");
        assert_eq!(medium[4].to_string(), "linear rows=333 in=1536 out=6144");
        assert_eq!(
            medium[6],
            OpCase::Attention {
                n: 1,
                heads: 24,
                queries: 4429,
                keys: 4429,
                dim: 64
            }
        );
        assert!(matches!(medium[7], OpCase::Attention { queries: 4096, .. }));
        let large = (LARGE_35_OP_CASES.cases)(512, 768);
        assert_eq!(large.len(), 7);
        assert_eq!(large[2].to_string(), "linear rows=1536 in=9728 out=2432");
        assert!(matches!(large[6], OpCase::Attention { heads: 38, .. }));
    }
}
