//! SD1.5's layers for `sdbench timing --ops` (`op_timing`).

use crate::pipeline::op_timing::{OpCase, OpCases};

pub(super) const SD15_OP_CASES: OpCases = OpCases {
    whose: "SD1.5's",
    cases: sd15_cases,
};

/// SD1.5's heaviest layers for an image of `height` x `width` (multiples of 8): the UNet's at the
/// guided batch of 2, the VAE decoder's at batch 1.
fn sd15_cases(height: usize, width: usize) -> Vec<OpCase> {
    let (h, w) = (height / 8, width / 8);
    let conv = |n, channels, s: usize| OpCase::Conv3x3 {
        n,
        channels,
        h: (h * s / 8).max(1),
        w: (w * s / 8).max(1),
    };
    let norm = |n, channels, s: usize, silu| OpCase::GroupNorm {
        n,
        channels,
        h: h * s / 8,
        w: w * s / 8,
        silu,
    };
    vec![
        // UNet: resnet convolutions at each level (latent size, /2, /4, /8).
        conv(2, 320, 8),
        conv(2, 640, 4),
        conv(2, 1280, 2),
        conv(2, 1280, 1),
        // UNet transformer at the top level: feed-forward in (GEGLU) and out, self and cross
        // attention (8 heads of 40).
        OpCase::Linear {
            rows: 2 * h * w,
            inputs: 320,
            outputs: 2560,
        },
        OpCase::Linear {
            rows: 2 * h * w,
            inputs: 1280,
            outputs: 320,
        },
        OpCase::Attention {
            n: 2,
            heads: 8,
            queries: h * w,
            keys: h * w,
            dim: 40,
        },
        OpCase::Attention {
            n: 2,
            heads: 8,
            queries: h * w,
            keys: 77,
            dim: 40,
        },
        norm(2, 320, 8, true),
        // VAE decoder: convolutions at each level (latent size x1, x2, x4, x8), its mid-block
        // attention (one head of 512), and its largest norms.
        conv(1, 512, 8),
        conv(1, 512, 16),
        conv(1, 256, 32),
        conv(1, 128, 64),
        OpCase::Attention {
            n: 1,
            heads: 1,
            queries: h * w,
            keys: h * w,
            dim: 512,
        },
        norm(1, 256, 32, true),
        norm(1, 128, 64, true),
        norm(1, 128, 64, false),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cases_follow_the_image_size() {
        let cases = sd15_cases(512, 512);
        assert_eq!(
            cases[0],
            OpCase::Conv3x3 {
                n: 2,
                channels: 320,
                h: 64,
                w: 64
            }
        );
        assert_eq!(cases[0].to_string(), "conv3x3 n=2 c=320 h=64 w=64");
        assert!(cases.contains(&OpCase::Conv3x3 {
            n: 1,
            channels: 128,
            h: 512,
            w: 512
        }));
        let small = sd15_cases(256, 128);
        assert_eq!(
            small[3],
            OpCase::Conv3x3 {
                n: 2,
                channels: 1280,
                h: 4,
                w: 2
            }
        );
    }
}
