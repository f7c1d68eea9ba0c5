//! FLUX.2 klein 4B's transformer layers for `sdbench timing --ops --ops-of flux2-klein`
//! (`op_timing`).

use crate::pipeline::op_timing::{OpCase, OpCases};

pub(super) const KLEIN_4B_OP_CASES: OpCases = OpCases {
    whose: "FLUX.2 klein 4B's transformer",
    cases: klein_4b_cases,
};

/// FLUX.2 klein 4B's transformer layers for an image of `height` x `width` (multiples of 16): its
/// 512 text tokens and the image's 2x2-patched latents, width 3072 (24 heads of 128), MLP 9216.
/// Each is a layer as the loaded model runs it: the checkpoint's fused projections are held as
/// their parts (`transformer.rs`). The model's linears have no bias; these cases add one, a
/// rounding error of the work.
fn klein_4b_cases(height: usize, width: usize) -> Vec<OpCase> {
    let image = (height / 16) * (width / 16);
    let tokens = image + 512;
    let (d, mlp) = (3072, 9216);
    vec![
        // Single-stream block, over text and image: q (k and v alike), the MLP's gate (its value
        // alike), then the attention's and MLP's outputs together back to the width.
        OpCase::Linear {
            rows: tokens,
            inputs: d,
            outputs: d,
        },
        OpCase::Linear {
            rows: tokens,
            inputs: d,
            outputs: mlp,
        },
        OpCase::Linear {
            rows: tokens,
            inputs: d + mlp,
            outputs: d,
        },
        // Double-stream block, image stream: q (k, v and out alike), the MLP's gate (its value
        // alike) and its out.
        OpCase::Linear {
            rows: image,
            inputs: d,
            outputs: d,
        },
        OpCase::Linear {
            rows: image,
            inputs: d,
            outputs: mlp,
        },
        OpCase::Linear {
            rows: image,
            inputs: mlp,
            outputs: d,
        },
        // Joint attention over text and image.
        OpCase::Attention {
            n: 1,
            heads: 24,
            queries: tokens,
            keys: tokens,
            dim: 128,
        },
    ]
}
