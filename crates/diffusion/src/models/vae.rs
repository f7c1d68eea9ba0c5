//! diffusers' `AutoencoderKL`. The decoder: post-quant conv, mid block (resnet, single-head spatial
//! attention, resnet), up blocks, norm, conv out. The encoder (image-to-image only): conv in, down
//! blocks, mid block, norm, conv out to the latent distribution's mean and log-variance, quant conv.

use std::path::Path;

use burn::prelude::*;

use crate::error::Result;
use crate::models::config::VaeConfig;
use crate::models::vae_tiling::{map_tiles, VaeTiles};
use crate::nn::loader::Loader;
use crate::nn::resnet::{Downsample2D, ResnetBlock2D, ResnetSpec, Upsample2D};
use crate::nn::{multi_head_attention_within, Conv2d, GroupNorm, Linear};

/// Old VAE checkpoints name the attention projections `query`/`key`/`value`/`proj_attn`.
pub const LEGACY_ALIASES: &[(&str, &str)] = &[
    (".to_q.", ".query."),
    (".to_k.", ".key."),
    (".to_v.", ".value."),
    (".to_out.0.", ".proj_attn."),
];

/// The encoder is loaded only for image-to-image; text-to-image leaves these tensors unread.
pub const ENCODER_PREFIXES: &[&str] = &["encoder.", "quant_conv."];

/// Single-head self-attention over the pixels of a feature map, with its own group norm.
#[derive(Module, Debug)]
struct SpatialAttention<B: Backend> {
    group_norm: GroupNorm<B>,
    to_q: Linear<B>,
    to_k: Linear<B>,
    to_v: Linear<B>,
    to_out: Linear<B>,
    /// Score elements per attention call (`nn::multi_head_attention_within`).
    score_budget: usize,
}

impl<B: Backend> SpatialAttention<B> {
    fn load(prefix: &str, channels: usize, groups: usize, loader: &mut Loader<B>) -> Result<Self> {
        let c = channels;
        Ok(SpatialAttention {
            group_norm: loader.group_norm(&format!("{prefix}.group_norm"), groups, c, 1e-6)?,
            to_q: loader.linear(&format!("{prefix}.to_q"), c, c, true)?,
            to_k: loader.linear(&format!("{prefix}.to_k"), c, c, true)?,
            to_v: loader.linear(&format!("{prefix}.to_v"), c, c, true)?,
            to_out: loader.linear(&format!("{prefix}.to_out.0"), c, c, true)?,
            score_budget: loader.attention_score_budget,
        })
    }

    fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let [n, c, h, w] = x.dims();
        let tokens = self
            .group_norm
            .forward(x.clone())
            .reshape([n, c, h * w])
            .swap_dims(1, 2);
        let q = self.to_q.forward(tokens.clone());
        let k = self.to_k.forward(tokens.clone());
        let v = self.to_v.forward(tokens);
        let out = self.to_out.forward(multi_head_attention_within(
            q,
            k,
            v,
            1,
            false,
            false,
            self.score_budget,
        ));
        out.swap_dims(1, 2).reshape([n, c, h, w]) + x
    }
}

/// `UNetMidBlock2D` as the VAE uses it: resnet, optional spatial attention, resnet.
#[derive(Module, Debug)]
struct MidBlock<B: Backend> {
    resnet_1: ResnetBlock2D<B>,
    attention: Option<SpatialAttention<B>>,
    resnet_2: ResnetBlock2D<B>,
}

impl<B: Backend> MidBlock<B> {
    fn load(prefix: &str, config: &VaeConfig, loader: &mut Loader<B>) -> Result<Self> {
        let top = *config
            .block_out_channels
            .last()
            .expect("validated non-empty");
        let spec = resnet_spec(config, top, top);
        let groups = config.norm_num_groups;
        Ok(MidBlock {
            resnet_1: ResnetBlock2D::load(&format!("{prefix}.resnets.0"), &spec, loader)?,
            attention: if config.mid_block_add_attention {
                Some(SpatialAttention::load(
                    &format!("{prefix}.attentions.0"),
                    top,
                    groups,
                    loader,
                )?)
            } else {
                None
            },
            resnet_2: ResnetBlock2D::load(&format!("{prefix}.resnets.1"), &spec, loader)?,
        })
    }

    fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let mut x = self.resnet_1.forward(x, None);
        if let Some(attn) = &self.attention {
            x = attn.forward(x);
        }
        self.resnet_2.forward(x, None)
    }
}

/// The VAE's resnets: no time embedding, eps 1e-6.
fn resnet_spec(config: &VaeConfig, inputs: usize, outputs: usize) -> ResnetSpec {
    ResnetSpec {
        inputs,
        outputs,
        temb_channels: None,
        groups: config.norm_num_groups,
        eps: 1e-6,
        output_scale_factor: 1.0,
    }
}

#[derive(Module, Debug)]
struct UpBlock<B: Backend> {
    resnets: Vec<ResnetBlock2D<B>>,
    upsampler: Option<Upsample2D<B>>,
}

#[derive(Module, Debug)]
pub struct VaeDecoder<B: Backend> {
    post_quant_conv: Option<Conv2d<B>>,
    conv_in: Conv2d<B>,
    mid: MidBlock<B>,
    up: Vec<UpBlock<B>>,
    conv_norm_out: GroupNorm<B>,
    conv_out: Conv2d<B>,
    latent_channels: usize,
    scaling_factor: f64,
    /// Added after dividing by `scaling_factor` (0 for VAEs without one).
    shift_factor: f64,
    scale_factor: usize,
    sample_size: usize,
    /// Each up block's output channels.
    up_widths: Vec<usize>,
}

impl<B: Backend> VaeDecoder<B> {
    pub fn load(config: &VaeConfig, path: &Path, loader: &mut Loader<B>) -> Result<Self> {
        config.validate(path)?;
        let boc = &config.block_out_channels;
        let groups = config.norm_num_groups;
        let latent = config.latent_channels;
        let resnet = |inputs, outputs| resnet_spec(config, inputs, outputs);
        let top = *boc.last().expect("validated non-empty");
        let post_quant_conv = if config.use_post_quant_conv {
            Some(loader.conv2d("post_quant_conv", latent, latent, 1, 1, 0)?)
        } else {
            None
        };
        let conv_in = loader.conv2d("decoder.conv_in", latent, top, 3, 1, 1)?;
        let mid = MidBlock::load("decoder.mid_block", config, loader)?;

        let reversed: Vec<usize> = boc.iter().rev().copied().collect();
        let mut out_ch = reversed[0];
        let mut up = Vec::with_capacity(boc.len());
        for i in 0..reversed.len() {
            let prev = out_ch;
            out_ch = reversed[i];
            let p = format!("decoder.up_blocks.{i}");
            let mut resnets = Vec::new();
            for j in 0..config.layers_per_block + 1 {
                let inputs = if j == 0 { prev } else { out_ch };
                resnets.push(ResnetBlock2D::load(
                    &format!("{p}.resnets.{j}"),
                    &resnet(inputs, out_ch),
                    loader,
                )?);
            }
            let upsampler = if i + 1 < reversed.len() {
                Some(Upsample2D::load(
                    &format!("{p}.upsamplers.0"),
                    out_ch,
                    loader,
                )?)
            } else {
                None
            };
            up.push(UpBlock { resnets, upsampler });
        }
        Ok(VaeDecoder {
            post_quant_conv,
            conv_in,
            mid,
            up,
            conv_norm_out: loader.group_norm("decoder.conv_norm_out", groups, boc[0], 1e-6)?,
            conv_out: loader.conv2d("decoder.conv_out", boc[0], config.out_channels, 3, 1, 1)?,
            latent_channels: latent,
            scaling_factor: config.scaling_factor,
            shift_factor: config.shift_factor.unwrap_or(0.0),
            scale_factor: config.scale_factor(),
            sample_size: config.sample_size,
            up_widths: reversed,
        })
    }

    pub fn latent_channels(&self) -> usize {
        self.latent_channels
    }

    /// Latents are divided by this before decoding.
    pub fn scaling_factor(&self) -> f64 {
        self.scaling_factor
    }

    /// The denoiser's latents as the decoder takes them: `z / scaling_factor + shift_factor`
    /// (diffusers' pipelines whose VAE config has a shift factor).
    pub fn unscale_latents(&self, z: Tensor<B, 4>) -> Tensor<B, 4> {
        let z = z / self.scaling_factor;
        if self.shift_factor == 0.0 {
            return z;
        }
        z + self.shift_factor
    }

    /// Image pixels per latent pixel.
    pub fn scale_factor(&self) -> usize {
        self.scale_factor
    }

    /// `z`: [N, latent, h, w] (already divided by the scaling factor) -> image [N, 3, h*f, w*f] in
    /// about [-1, 1], in the activation dtype. Same as diffusers' `vae.decode(z).sample`.
    pub fn decode(&self, z: Tensor<B, 4>) -> Tensor<B, 4> {
        let dtype = self.conv_in.dtype();
        let mut x = z.cast(dtype);
        if let Some(conv) = &self.post_quant_conv {
            x = conv.forward(x);
        }
        x = self.mid.forward(self.conv_in.forward(x));
        for block in &self.up {
            for resnet in &block.resnets {
                x = resnet.forward(x, None);
            }
            if let Some(up) = &block.upsampler {
                x = up.forward(x, None);
            }
        }
        self.conv_out.forward(self.conv_norm_out.forward_silu(x))
    }

    /// diffusers' tile sizes for this VAE (from its config's `sample_size`).
    pub fn tiles(&self) -> VaeTiles {
        VaeTiles::new(self.sample_size, self.scale_factor)
    }

    /// Bytes of the largest tensor a decode of `h` x `w` latents makes: the widest up block's
    /// output at its resolution, as the f32 copy its group norm takes.
    pub fn largest_tensor_bytes(&self, h: usize, w: usize) -> u64 {
        largest_decode_tensor_bytes(&self.up_widths, h, w)
    }

    /// `decode`, tiled when `tiles` says so (diffusers' tiled decode with those tile sides), in
    /// tiles small enough that no tensor is larger than `max_buffer` bytes (the device's largest
    /// buffer; `None`: no limit). Software Vulkan (lavapipe) allows 128 MiB, less than SD's decoder
    /// makes at 512x512 in f32 (256 MiB).
    pub fn decode_within(
        &self,
        z: Tensor<B, 4>,
        max_buffer: Option<u64>,
        tiles: Option<VaeTiles>,
    ) -> Tensor<B, 4> {
        let [_, _, h, w] = z.dims();
        match self.decode_tile(h, w, max_buffer, tiles) {
            Some(t) => map_tiles(z, t, t * self.scale_factor, |x| self.decode(x)),
            None => self.decode(z),
        }
    }

    /// The latent tile side `decode_within` uses for `h` x `w` latents; `None`: one piece. Tiles
    /// shrink by 4 latents (map_tiles' overlap is a quarter) until the largest tensor fits.
    pub fn decode_tile(
        &self,
        h: usize,
        w: usize,
        max_buffer: Option<u64>,
        tiles: Option<VaeTiles>,
    ) -> Option<usize> {
        let mut tile = tiles.filter(|t| t.tiles_latents(h, w)).map(|t| t.latent);
        if let Some(max) = max_buffer {
            let (th, tw) = tile.map_or((h, w), |t| (t.min(h), t.min(w)));
            if self.largest_tensor_bytes(th, tw) > max {
                // Never below 4 latents (latents that small decode in one piece anyway).
                let mut side = (th.max(tw) / 4 * 4).max(4);
                while side > 4 && self.largest_tensor_bytes(side, side) > max {
                    side -= 4;
                }
                tile = Some(side);
            }
        }
        tile.filter(|&t| t < h || t < w)
    }
}

/// `VaeDecoder::largest_tensor_bytes` for up blocks of `up_widths` channels: block `i` works at
/// 2^min(i+1, last) times the latents' resolution (every block but the last upsamples).
fn largest_decode_tensor_bytes(up_widths: &[usize], h: usize, w: usize) -> u64 {
    let last = up_widths.len().saturating_sub(1);
    let widest = (0..up_widths.len())
        .map(|i| up_widths[i] << (2 * (i + 1).min(last)))
        .max()
        .unwrap_or(0);
    (widest * h * w * 4) as u64
}

#[derive(Module, Debug)]
struct DownBlock<B: Backend> {
    resnets: Vec<ResnetBlock2D<B>>,
    downsampler: Option<Downsample2D<B>>,
}

/// The encoder half: an image to the mean of its latent distribution.
#[derive(Module, Debug)]
pub struct VaeEncoder<B: Backend> {
    conv_in: Conv2d<B>,
    down: Vec<DownBlock<B>>,
    mid: MidBlock<B>,
    conv_norm_out: GroupNorm<B>,
    conv_out: Conv2d<B>,
    quant_conv: Option<Conv2d<B>>,
    latent_channels: usize,
    scale_factor: usize,
}

impl<B: Backend> VaeEncoder<B> {
    pub fn load(config: &VaeConfig, path: &Path, loader: &mut Loader<B>) -> Result<Self> {
        config.validate(path)?;
        config.validate_encoder(path)?;
        let boc = &config.block_out_channels;
        let top = *boc.last().expect("validated non-empty");
        let latent = config.latent_channels;
        let mut down = Vec::with_capacity(boc.len());
        let mut out_ch = boc[0];
        for (i, &channels) in boc.iter().enumerate() {
            let prev = out_ch;
            out_ch = channels;
            let p = format!("encoder.down_blocks.{i}");
            let mut resnets = Vec::new();
            for j in 0..config.layers_per_block {
                let inputs = if j == 0 { prev } else { out_ch };
                let spec = resnet_spec(config, inputs, out_ch);
                resnets.push(ResnetBlock2D::load(
                    &format!("{p}.resnets.{j}"),
                    &spec,
                    loader,
                )?);
            }
            // diffusers' encoder pads right and bottom, then convolves with stride 2 (padding 0).
            let downsampler = if i + 1 < boc.len() {
                Some(Downsample2D::load(
                    &format!("{p}.downsamplers.0"),
                    out_ch,
                    0,
                    loader,
                )?)
            } else {
                None
            };
            down.push(DownBlock {
                resnets,
                downsampler,
            });
        }
        Ok(VaeEncoder {
            conv_in: loader.conv2d("encoder.conv_in", config.in_channels, boc[0], 3, 1, 1)?,
            down,
            mid: MidBlock::load("encoder.mid_block", config, loader)?,
            conv_norm_out: loader.group_norm(
                "encoder.conv_norm_out",
                config.norm_num_groups,
                top,
                1e-6,
            )?,
            conv_out: loader.conv2d("encoder.conv_out", top, 2 * latent, 3, 1, 1)?,
            quant_conv: if config.use_quant_conv {
                Some(loader.conv2d("quant_conv", 2 * latent, 2 * latent, 1, 1, 0)?)
            } else {
                None
            },
            latent_channels: latent,
            scale_factor: config.scale_factor(),
        })
    }

    /// `encode`, tile by tile when the image is larger than a tile: diffusers' `vae.encode` after
    /// `enable_tiling()` (the mean of each tile's distribution is blended, as diffusers blends the
    /// moments channel by channel), with `tiles` as its tile sizes (`tiles()`: diffusers' own).
    pub fn encode_tiled(&self, image: Tensor<B, 4>, tiles: VaeTiles) -> Tensor<B, 4> {
        let [_, _, h, w] = image.dims();
        if !tiles.tiles_pixels(h, w) {
            return self.encode(image);
        }
        map_tiles(image, tiles.sample, tiles.latent, |tile| self.encode(tile))
    }

    /// `image`: [N, 3, H, W] in [-1, 1] -> the latent distribution's mean [N, latent, H/f, W/f]
    /// (not yet multiplied by the scaling factor), in f32. diffusers'
    /// `vae.encode(image).latent_dist.mode()`.
    pub fn encode(&self, image: Tensor<B, 4>) -> Tensor<B, 4> {
        let dtype = self.conv_in.dtype();
        let mut x = self.conv_in.forward(image.cast(dtype));
        for block in &self.down {
            for resnet in &block.resnets {
                x = resnet.forward(x, None);
            }
            if let Some(down) = &block.downsampler {
                x = down.forward(x);
            }
        }
        x = self.mid.forward(x);
        let mut moments = self.conv_out.forward(self.conv_norm_out.forward_silu(x));
        if let Some(conv) = &self.quant_conv {
            moments = conv.forward(moments);
        }
        let [n, _, h, w] = moments.dims();
        moments
            .slice([0..n, 0..self.latent_channels, 0..h, 0..w])
            .cast(burn::tensor::DType::F32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::cpu_device;
    use crate::io::synthetic_weights::SyntheticWeights;
    use crate::io::weights::Precision;
    use crate::pipeline::B;
    use burn::tensor::Distribution;

    #[test]
    fn the_largest_decode_tensor_is_the_last_upsampler_output_in_f32() {
        // SD's VAE at 512x512 (64x64 latents): 256 channels at 512x512, 4 bytes: the buffer
        // lavapipe refused.
        assert_eq!(
            largest_decode_tensor_bytes(&[512, 512, 256, 128], 64, 64),
            256 * 512 * 512 * 4
        );
        assert_eq!(largest_decode_tensor_bytes(&[64], 4, 4), 64 * 16 * 4);
    }

    /// A decode whose largest tensor would not fit a buffer limit runs in tiles that do, and
    /// stays close to the plain decode (tiles change it slightly where they blend).
    #[test]
    fn a_buffer_limit_decodes_in_tiles_that_fit() {
        let config = VaeConfig {
            down_block_types: vec!["DownEncoderBlock2D".into(); 2],
            up_block_types: vec!["UpDecoderBlock2D".into(); 2],
            block_out_channels: vec![32, 32],
            // Tiles of 16 pixels, 8 latents.
            sample_size: 16,
            ..VaeConfig::default()
        };
        let device = cpu_device();
        let mut source = SyntheticWeights::new(7);
        let mut loader = Loader::<B>::new(&mut source, &device, Precision::F32);
        let vae = VaeDecoder::load(&config, Path::new("test"), &mut loader).unwrap();
        let z = Tensor::<B, 4>::random([1, 4, 24, 24], Distribution::Normal(0.0, 1.0), &device);
        let plain = vae.decode_within(z.clone(), None, None);
        let whole = vae.largest_tensor_bytes(24, 24);
        assert_eq!(
            vae.decode_within(z.clone(), Some(whole), None)
                .into_data()
                .to_vec::<f32>()
                .unwrap(),
            plain.clone().into_data().to_vec::<f32>().unwrap(),
            "a decode that fits is not tiled"
        );
        // A quarter of the bytes: tiles of 12 latents (12^2 <= 24^2 / 4), the largest that fit.
        assert_eq!(vae.decode_tile(24, 24, Some(whole / 4), None), Some(12));
        assert!(vae.largest_tensor_bytes(16, 16) > whole / 4);
        assert_eq!(vae.decode_tile(24, 24, Some(whole), None), None);
        // Latents narrower than the smallest tile (4) decode whole, whatever the limit.
        assert_eq!(vae.decode_tile(3, 3, Some(1), None), None);
        let tiled = vae.decode_within(z.clone(), Some(whole / 4), None);
        let by_hand = map_tiles(z, 12, 12 * vae.scale_factor(), |x| vae.decode(x));
        assert_eq!(tiled.dims(), plain.dims());
        assert_eq!(
            tiled.into_data().to_vec::<f32>().unwrap(),
            by_hand.into_data().to_vec::<f32>().unwrap()
        );
        // With the VAE's own tiling asked for, the smaller of the two tiles; smaller tiles asked
        // for are used as they are.
        let half = VaeTiles::new(8, vae.scale_factor());
        assert_eq!(vae.decode_tile(24, 24, None, Some(half)), Some(4));
        assert_eq!(vae.decode_tile(24, 24, None, Some(vae.tiles())), Some(8));
        assert_eq!(
            vae.decode_tile(24, 24, Some(whole / 4), Some(vae.tiles())),
            Some(8)
        );
    }
}
