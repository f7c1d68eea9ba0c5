//! FLUX.1's latent layout: the VAE's latents cut into 2x2 patches, each patch one token whose
//! channels run (channel, row, column), tokens row by row (`FluxPipeline._pack_latents`); and
//! each token's position (0, row, column) in patches (`_prepare_latent_image_ids`).

use burn::prelude::*;

use super::transformer::Position;

/// [N, C, h, w] -> tokens [N, (h/2)(w/2), 4C].
pub fn pack<B: Backend>(x: Tensor<B, 4>) -> Tensor<B, 3> {
    let [n, c, h, w] = x.dims();
    let (h2, w2) = (h / 2, w / 2);
    x.reshape([n, c, h2, 2, w2, 2])
        .permute([0, 2, 4, 1, 3, 5])
        .reshape([n, h2 * w2, 4 * c])
}

/// Tokens [N, (h/2)(w/2), 4C] -> [N, C, h, w].
pub fn unpack<B: Backend>(x: Tensor<B, 3>, h: usize, w: usize) -> Tensor<B, 4> {
    let [n, _, c4] = x.dims();
    let (h2, w2, c) = (h / 2, w / 2, c4 / 4);
    x.reshape([n, h2, w2, c, 2, 2])
        .permute([0, 3, 1, 4, 2, 5])
        .reshape([n, c, h, w])
}

/// The positions of `rows` x `columns` image tokens, row by row.
pub fn image_positions(rows: usize, columns: usize) -> Vec<Position> {
    (0..rows)
        .flat_map(|y| (0..columns).map(move |x| [0.0, y as f32, x as f32]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::cpu_device;
    use crate::pipeline::B;
    use burn::tensor::TensorData;

    /// `_pack_latents` puts latent (c, 2y+dy, 2x+dx) at token (y, x), channel 4c + 2dy + dx;
    /// `unpack` undoes it.
    #[test]
    fn packing_follows_diffusers_and_unpacking_undoes_it() {
        let (c, h, w) = (3, 4, 6);
        let values: Vec<f32> = (0..c * h * w).map(|v| v as f32).collect();
        let x =
            Tensor::<B, 4>::from_data(TensorData::new(values.clone(), [1, c, h, w]), &cpu_device());
        let tokens = pack(x.clone());
        assert_eq!(tokens.dims(), [1, 6, 12]);
        let packed = tokens.clone().into_data().into_vec::<f32>().unwrap();
        for (ch, y, xx) in [(0, 0, 0), (2, 3, 5), (1, 2, 1)] {
            let token = (y / 2) * (w / 2) + xx / 2;
            let channel = 4 * ch + 2 * (y % 2) + xx % 2;
            assert_eq!(packed[token * 12 + channel], values[(ch * h + y) * w + xx]);
        }
        let back = unpack(tokens, h, w).into_data().into_vec::<f32>().unwrap();
        assert_eq!(back, values);
        assert_eq!(image_positions(2, 3)[4], [0.0, 1.0, 1.0]);
    }
}
