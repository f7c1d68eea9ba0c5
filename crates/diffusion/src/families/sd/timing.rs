//! What `sdbench timing` times of a Stable Diffusion model: one UNet call at batch 2 (classifier-
//! free guidance's two rows) and one VAE decode.

use super::pipeline::SdPipeline;
use crate::error::Result;
use crate::noise::NormalGenerator;
use crate::pipeline::TimedCall;

impl SdPipeline {
    pub(super) fn timing_calls(&self, width: usize, height: usize) -> Result<Vec<TimedCall<'_>>> {
        let f = self.info.vae_scale_factor;
        let c = self.info.latent_channels;
        let (h, w) = (height / f, width / f);
        let mut noise = NormalGenerator::new(1);
        // The guided batch of two rows (the same prompt twice costs what [negative; prompt]
        // costs).
        let (context, pooled) =
            self.run_prompt_encoding("a photograph of an astronaut riding a horse")?;
        let tokens = self.tokenizer().max_length();
        let context_shape = [2, tokens, context.len() / tokens];
        let context = [context.clone(), context].concat();
        let pooled = pooled.map(|p| [p.clone(), p].concat());
        let (ih, iw) = (height as f32, width as f32);
        let time_ids = [[ih, iw, 0.0, 0.0, ih, iw]; 2];
        let sample = noise.normals(2 * c * h * w);
        let latents = noise.normals(c * h * w);
        let unet = TimedCall {
            label: format!("unet call (batch 2, {c}x{h}x{w} latents)"),
            run: Box::new(move || {
                let text_time = pooled
                    .as_ref()
                    .map(|p| (p.as_slice(), [2, p.len() / 2], &time_ids[..]));
                let sample_shape = [2, c, h, w];
                self.run_unet(
                    &sample,
                    sample_shape,
                    500.0,
                    &context,
                    context_shape,
                    text_time,
                )
                .map(|_| ())
            }),
        };
        let vae = TimedCall {
            label: format!("vae decode ({c}x{h}x{w} -> 3x{height}x{width})"),
            run: Box::new(move || self.run_vae_decode(&latents, [1, c, h, w]).map(|_| ())),
        };
        Ok(vec![unet, vae])
    }
}
