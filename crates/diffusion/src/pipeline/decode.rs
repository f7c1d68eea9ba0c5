//! The decode stage every family shares: where the VAE decodes (tiles from the placement, or from
//! the device's largest buffer) and how a decoded image becomes the result's picture.

use burn::prelude::*;
use burn::tensor::DType;

use crate::device::SelectedDevice;
use crate::error::Result;
use crate::io::image::postprocess;
use crate::models::vae::VaeDecoder;
use crate::models::vae_tiling::{self, VaeTiles};
use crate::pipeline::{tensor_to_vec, GeneratedImage, Placement, B};

/// A placement's decode: the tiles it asks for (`vae_tiling`, half-size with `small_vae_tiles`)
/// and the largest buffer of the VAE's device (`None` on the CPU: no limit).
pub(crate) struct DecodePlan {
    pub tiles: Option<VaeTiles>,
    pub max_buffer: Option<u64>,
}

impl DecodePlan {
    pub fn of(vae: &VaeDecoder<B>, placement: &Placement, device: &SelectedDevice) -> Self {
        let own = vae.tiles();
        DecodePlan {
            tiles: placement
                .vae_tiling
                .then(|| match placement.small_vae_tiles {
                    true => VaeTiles::new(own.sample / 2, vae.scale_factor()),
                    false => own,
                }),
            max_buffer: match placement.vae_on_cpu {
                true => None,
                false => device.max_buffer_bytes(),
            },
        }
    }

    /// The decode of unscaled latents, tiled where the plan says.
    pub fn decode(&self, vae: &VaeDecoder<B>, z: Tensor<B, 4>) -> Tensor<B, 4> {
        vae.decode_within(z, self.max_buffer, self.tiles)
    }

    /// How many tiles each image of `width` x `height` decodes in (1: one piece).
    pub fn tile_count(&self, vae: &VaeDecoder<B>, width: usize, height: usize) -> usize {
        let f = vae.scale_factor().max(1);
        let (h, w) = (height / f, width / f);
        match vae.decode_tile(h, w, self.max_buffer, self.tiles) {
            Some(tile) => vae_tiling::tile_count(h, w, tile),
            None => 1,
        }
    }
}

/// A decoded image [1, 3, H, W] in about [-1, 1] as the result's picture, its non-finite values
/// counted.
pub(crate) fn decoded_image(decoded: Tensor<B, 4>) -> Result<GeneratedImage> {
    let decoded = decoded.cast(DType::F32);
    let [_, _, h, w] = decoded.dims();
    let values = tensor_to_vec(decoded)?;
    let non_finite = values.iter().filter(|v| !v.is_finite()).count();
    let (float_image, image) = postprocess(&values, h, w);
    Ok(GeneratedImage {
        image,
        float_image,
        non_finite,
    })
}
