//! Tiled VAE decoding and encoding, computed as diffusers' `enable_vae_tiling` computes them, so
//! that a large image needs the activation memory of one tile: the input is cut into overlapping
//! square tiles (a quarter of a tile's side overlaps), each tile goes through the VAE on its own,
//! and each output tile's top and left edges fade linearly from its neighbours' (above, then left)
//! over a quarter of an output tile. Tiling changes the result slightly (each tile normalises and
//! attends within itself), which is why it is matched against diffusers' tiled output, not the plain.

use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};

/// Fraction of a tile that overlaps its neighbour (diffusers' `tile_overlap_factor`).
const OVERLAP: f64 = 0.25;

/// Tile sides: `sample` image pixels (the VAE config's `sample_size`) and `latent` latent pixels
/// (`sample` over the VAE's scale factor), as diffusers sets them. The latent side is a multiple
/// of 4, at least 4: `map_tiles` keeps three quarters of each tile, which covers the step
/// between tiles exactly only then (every VAE's own tile is: 64, 96 or 128 latents).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VaeTiles {
    pub sample: usize,
    pub latent: usize,
}

impl VaeTiles {
    pub fn new(sample_size: usize, scale_factor: usize) -> Self {
        let scale = scale_factor.max(1);
        let latent = (sample_size / scale / 4 * 4).max(4);
        VaeTiles {
            sample: latent * scale,
            latent,
        }
    }

    /// Whether diffusers would tile the decode of latents `height` x `width`.
    pub fn tiles_latents(&self, height: usize, width: usize) -> bool {
        height > self.latent || width > self.latent
    }

    /// Whether diffusers would tile the encode of an image `height` x `width`.
    pub fn tiles_pixels(&self, height: usize, width: usize) -> bool {
        height > self.sample || width > self.sample
    }
}

/// Runs `vae` on overlapping `in_tile`-sided tiles of `input` ([N, C, H, W]), whose outputs are
/// `out_tile`-sided for a whole tile, and blends them into one output (diffusers' `tiled_decode` and
/// `_tiled_encode`). Tiles start every `in_tile * 3/4`; each keeps its first `out_tile * 3/4`
/// rows and columns after blending.
pub fn map_tiles<B: Backend>(
    input: Tensor<B, 4>,
    in_tile: usize,
    out_tile: usize,
    vae: impl Fn(Tensor<B, 4>) -> Tensor<B, 4>,
) -> Tensor<B, 4> {
    let step = tile_step(in_tile);
    let blend = (out_tile as f64 * OVERLAP) as usize;
    let keep = out_tile - blend;
    let [n, c, height, width] = input.dims();
    let mut rows: Vec<Vec<Tensor<B, 4>>> = (0..height)
        .step_by(step)
        .map(|top| {
            (0..width)
                .step_by(step)
                .map(|left| {
                    vae(input.clone().slice([
                        0..n,
                        0..c,
                        top..(top + in_tile).min(height),
                        left..(left + in_tile).min(width),
                    ]))
                })
                .collect()
        })
        .collect();
    let mut out_rows = Vec::with_capacity(rows.len());
    for i in 0..rows.len() {
        let mut pieces = Vec::with_capacity(rows[i].len());
        for j in 0..rows[i].len() {
            let mut tile = rows[i][j].clone();
            if i > 0 {
                tile = blend_edge(&rows[i - 1][j], tile, blend, 2);
            }
            if j > 0 {
                tile = blend_edge(&rows[i][j - 1], tile, blend, 3);
            }
            // diffusers blends in place: later tiles blend with this tile's blended values.
            rows[i][j] = tile.clone();
            let [tn, tc, th, tw] = tile.dims();
            pieces.push(tile.slice([0..tn, 0..tc, 0..keep.min(th), 0..keep.min(tw)]));
        }
        out_rows.push(Tensor::cat(pieces, 3));
    }
    Tensor::cat(out_rows, 2)
}

/// Where `map_tiles`' tiles start: every three quarters of a tile.
fn tile_step(in_tile: usize) -> usize {
    ((in_tile as f64 * (1.0 - OVERLAP)) as usize).max(1)
}

/// How many tiles `map_tiles` runs over an input of `height` x `width` in `in_tile`-sided tiles.
pub fn tile_count(height: usize, width: usize, in_tile: usize) -> usize {
    let step = tile_step(in_tile);
    height.div_ceil(step) * width.div_ceil(step)
}

/// diffusers' `blend_v` (`dim` 2) and `blend_h` (`dim` 3): the first `extent` rows (columns) of
/// `tile` fade from the last ones of `previous` (weight 1 - k/extent) to its own (weight k/extent).
fn blend_edge<B: Backend>(
    previous: &Tensor<B, 4>,
    tile: Tensor<B, 4>,
    extent: usize,
    dim: usize,
) -> Tensor<B, 4> {
    let previous_len = previous.dims()[dim];
    let tile_len = tile.dims()[dim];
    let extent = extent.min(previous_len).min(tile_len);
    if extent == 0 {
        return tile;
    }
    let device = tile.device();
    let dtype = tile.dtype();
    let mut shape = [1usize; 4];
    shape[dim] = extent;
    let weights = |f: &dyn Fn(f64) -> f64| {
        let values: Vec<f32> = (0..extent)
            .map(|k| f(k as f64 / extent as f64) as f32)
            .collect();
        Tensor::<B, 4>::from_data(TensorData::new(values, shape), &device).cast(dtype)
    };
    let fade_out = weights(&|t| 1.0 - t);
    let fade_in = weights(&|t| t);
    let edge = previous.clone().narrow(dim, previous_len - extent, extent) * fade_out
        + tile.clone().narrow(dim, 0, extent) * fade_in;
    if extent == tile_len {
        edge
    } else {
        Tensor::cat(vec![edge, tile.narrow(dim, extent, tile_len - extent)], dim)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::B;

    fn ramp(h: usize, w: usize) -> Tensor<B, 4> {
        let values: Vec<f32> = (0..h * w).map(|v| v as f32).collect();
        Tensor::from_data(
            TensorData::new(values, [1, 1, h, w]),
            &crate::device::cpu_device(),
        )
    }

    #[test]
    fn an_identity_map_gives_the_input_back() {
        // Blending equal overlaps reproduces them, whatever the tiling.
        let input = ramp(20, 14);
        let output = map_tiles(input.clone(), 8, 8, |t| t);
        assert_eq!(output.dims(), [1, 1, 20, 14]);
        let diff: f32 = (output - input).abs().max().into_scalar();
        assert!(diff < 1e-4, "{diff}");
    }

    #[test]
    fn tiles_blend_linearly_across_the_overlap() {
        // Each tile becomes its own index: the overlap shows the ramp from one to the next.
        let counter = std::cell::Cell::new(0.0f32);
        let output = map_tiles(ramp(1, 16), 8, 8, |t| {
            counter.set(counter.get() + 1.0);
            t.zeros_like() + counter.get()
        });
        let row: Vec<f32> = output.into_data().to_vec().unwrap();
        // Tiles start at 0, 6, 12; each keeps 6 columns; blends over 2.
        assert_eq!(row.len(), 16);
        assert_eq!(&row[..6], &[1.0; 6]);
        assert_eq!(&row[6..9], &[1.0, 1.5, 2.0]);
        assert_eq!(&row[12..15], &[2.0, 2.5, 3.0]);
    }

    #[test]
    fn tile_count_is_the_tiles_map_tiles_runs() {
        for (h, w, tile) in [
            (16, 16, 8),
            (20, 14, 8),
            (24, 24, 12),
            (13, 40, 4),
            (8, 8, 8),
        ] {
            let calls = std::cell::Cell::new(0);
            map_tiles(ramp(h, w), tile, tile, |t| {
                calls.set(calls.get() + 1);
                t
            });
            assert_eq!(tile_count(h, w, tile), calls.get(), "{h}x{w} in {tile}");
        }
        // 1024x1024 pixels in SDXL's half tiles (64 latents, starting every 48): 3 x 3.
        assert_eq!(tile_count(128, 128, 64), 9);
    }

    #[test]
    fn tile_sizes_follow_the_config() {
        let tiles = VaeTiles::new(512, 8);
        assert_eq!(tiles.latent, 64);
        // A side that is not a multiple of 4 latents (or under 4) is rounded down to one (to 4).
        assert_eq!(
            VaeTiles::new(600, 8),
            VaeTiles {
                sample: 576,
                latent: 72
            }
        );
        assert_eq!(
            VaeTiles::new(8, 8),
            VaeTiles {
                sample: 32,
                latent: 4
            }
        );
        assert!(!tiles.tiles_latents(64, 64) && tiles.tiles_latents(64, 65));
        assert!(!tiles.tiles_pixels(512, 512) && tiles.tiles_pixels(520, 512));
    }
}
