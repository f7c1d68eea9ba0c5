//! Z-Image-Turbo's transformer layers for `sdbench timing --ops --ops-of zimage-turbo`
//! (`op_timing`).

use crate::pipeline::op_timing::{OpCase, OpCases};

pub(super) const TURBO_OP_CASES: OpCases = OpCases {
    whose: "Z-Image-Turbo's transformer",
    cases: turbo_cases,
};

/// Z-Image-Turbo's main-block layers for an image of `height` x `width` (multiples of 16): the
/// image's 2x2-patched latents and a short caption (one padded part of 32 tokens), width 3840 (30
/// heads of 128), feed-forward 10240. The model's linears have no bias; these cases add one.
fn turbo_cases(height: usize, width: usize) -> Vec<OpCase> {
    let tokens = (height / 16) * (width / 16) + 32;
    let (d, ffn) = (3840, 10_240);
    vec![
        // Attention's q (k, v and out alike), the feed-forward's w1 (w3 alike) and w2.
        OpCase::Linear {
            rows: tokens,
            inputs: d,
            outputs: d,
        },
        OpCase::Linear {
            rows: tokens,
            inputs: d,
            outputs: ffn,
        },
        OpCase::Linear {
            rows: tokens,
            inputs: ffn,
            outputs: d,
        },
        OpCase::Attention {
            n: 1,
            heads: 30,
            queries: tokens,
            keys: tokens,
            dim: 128,
        },
    ]
}
