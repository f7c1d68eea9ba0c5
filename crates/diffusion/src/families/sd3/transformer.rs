//! diffusers' `SD3Transformer2DModel`, Stable Diffusion 3's MMDiT (and 3.5's MMDiT-X): 2x2
//! patches of the latents embedded by a strided convolution plus a sinusoidal table cropped around
//! its centre; the text states projected to the model's width; a conditioning vector from the
//! timestep and the pooled text embedding that modulates every norm. Each block runs one joint
//! attention over [image | text], each stream with its own projections, adaptive norms and
//! feed-forward (GELU, tanh approximation); SD3.5's blocks may add a second, image-only attention
//! (`dual_attention_layers`) and normalise q and k per head (RMS). The last block keeps only the
//! image stream. No positional rotation and no mask: the text's 333 tokens are all attended.

use std::path::Path;

use burn::prelude::*;
use burn::tensor::TensorData;
use serde::Deserialize;

use crate::error::{DiffusionError, Result};
use crate::io::weights::Init;
use crate::nn::loader::Loader;
use crate::nn::RmsNorm;
use crate::nn::{
    gelu_tanh, modulated_layer_norm, multi_head_attention, silu, sinusoids, Conv2d, Linear,
};

/// The timestep's sinusoids (`Timesteps(num_channels=256)`).
const FREQUENCY_WIDTH: usize = 256;
/// Every norm's epsilon (the blocks' `LayerNorm`s, `RMSNorm`s of q and k, `norm_out`).
const EPS: f64 = 1e-6;

/// `transformer/config.json`, with diffusers' defaults.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(default)]
pub struct Sd3TransformerConfig {
    pub sample_size: usize,
    pub patch_size: usize,
    pub in_channels: usize,
    pub num_layers: usize,
    pub attention_head_dim: usize,
    pub num_attention_heads: usize,
    pub joint_attention_dim: usize,
    pub caption_projection_dim: usize,
    pub pooled_projection_dim: usize,
    pub out_channels: Option<usize>,
    pub pos_embed_max_size: Option<usize>,
    /// The blocks with a second, image-only attention (SD3.5 Medium's 0 to 12).
    pub dual_attention_layers: Vec<usize>,
    /// `"rms_norm"` (SD3.5) or none (SD3).
    pub qk_norm: Option<String>,
}

impl Default for Sd3TransformerConfig {
    fn default() -> Self {
        Sd3TransformerConfig {
            sample_size: 128,
            patch_size: 2,
            in_channels: 16,
            num_layers: 18,
            attention_head_dim: 64,
            num_attention_heads: 18,
            joint_attention_dim: 4096,
            caption_projection_dim: 1152,
            pooled_projection_dim: 2048,
            out_channels: Some(16),
            pos_embed_max_size: Some(96),
            dual_attention_layers: Vec::new(),
            qk_norm: None,
        }
    }
}

impl Sd3TransformerConfig {
    /// stabilityai/stable-diffusion-3.5-medium's transformer (2.5B).
    pub fn medium_35() -> Self {
        Sd3TransformerConfig {
            num_layers: 24,
            num_attention_heads: 24,
            caption_projection_dim: 1536,
            pos_embed_max_size: Some(384),
            dual_attention_layers: (0..=12).collect(),
            qk_norm: Some("rms_norm".into()),
            ..Sd3TransformerConfig::default()
        }
    }

    /// stabilityai/stable-diffusion-3.5-large's (and Large Turbo's) transformer (8.1B).
    pub fn large_35() -> Self {
        Sd3TransformerConfig {
            num_layers: 38,
            num_attention_heads: 38,
            caption_projection_dim: 2432,
            pos_embed_max_size: Some(192),
            qk_norm: Some("rms_norm".into()),
            ..Sd3TransformerConfig::default()
        }
    }

    /// stabilityai/stable-diffusion-3-medium-diffusers' transformer (2B).
    pub fn medium_3() -> Self {
        Sd3TransformerConfig {
            num_layers: 24,
            num_attention_heads: 24,
            caption_projection_dim: 1536,
            pos_embed_max_size: Some(192),
            ..Sd3TransformerConfig::default()
        }
    }

    pub fn validate(&self, path: &Path) -> Result<()> {
        crate::models::config::check_counts(
            path,
            &[
                ("patch_size", self.patch_size),
                ("in_channels", self.in_channels),
                ("num_layers", self.num_layers),
                ("attention_head_dim", self.attention_head_dim),
                ("num_attention_heads", self.num_attention_heads),
                ("joint_attention_dim", self.joint_attention_dim),
                ("caption_projection_dim", self.caption_projection_dim),
                ("pooled_projection_dim", self.pooled_projection_dim),
            ],
        )?;
        let unsupported = |what: String| Err(DiffusionError::unsupported(path, what));
        if self.patch_size != 2 {
            return unsupported(format!(
                "transformer patch_size {} (supported: 2)",
                self.patch_size
            ));
        }
        if !matches!(self.qk_norm.as_deref(), None | Some("rms_norm")) {
            return unsupported(format!(
                "transformer qk_norm {:?} (supported: none, \"rms_norm\")",
                self.qk_norm
            ));
        }
        let Some(table) = self.pos_embed_max_size else {
            return unsupported(
                "a transformer without pos_embed_max_size (its positional table is not stored)"
                    .into(),
            );
        };
        let config = |problem: String| Err(DiffusionError::config(path, problem));
        if table == 0 || table > 4096 {
            return config(format!(
                "pos_embed_max_size {table} is not a table side (1 to 4096)"
            ));
        }
        if self.caption_projection_dim != self.inner_dim() {
            return config(format!(
                "caption_projection_dim {} differs from the attention width {} (heads x head width), which the joint attention needs",
                self.caption_projection_dim,
                self.inner_dim()
            ));
        }
        if self.out_channels() != self.in_channels {
            return config(format!(
                "out_channels {} differs from in_channels {}: the pipeline steps the latents by the model's output",
                self.out_channels(),
                self.in_channels
            ));
        }
        if let Some(&layer) = self
            .dual_attention_layers
            .iter()
            .find(|&&l| l >= self.num_layers)
        {
            return config(format!(
                "dual_attention_layers names block {layer} of {}",
                self.num_layers
            ));
        }
        Ok(())
    }

    pub fn inner_dim(&self) -> usize {
        self.num_attention_heads * self.attention_head_dim
    }

    pub fn out_channels(&self) -> usize {
        self.out_channels.unwrap_or(self.in_channels)
    }

    /// The positional table's side (validated: present).
    pub fn table_side(&self) -> usize {
        self.pos_embed_max_size.unwrap_or(0)
    }

    fn qk_normed(&self) -> bool {
        self.qk_norm.is_some()
    }

    /// The positional table's values, which the transformer keeps in host memory.
    pub fn table_parameters(&self) -> u64 {
        (self.table_side() * self.table_side() * self.inner_dim()) as u64
    }

    /// Parameters of the model as its weight file holds them (the positional table included).
    pub fn parameters(&self) -> u64 {
        let d = self.inner_dim() as u64;
        let linear = |i: u64, o: u64| i * o + o;
        let p2 = (self.patch_size * self.patch_size) as u64;
        let (c, out) = (self.in_channels as u64, self.out_channels() as u64);
        let table = self.table_side() as u64;
        let dh = self.attention_head_dim as u64;
        let qk = if self.qk_normed() { 2 * dh } else { 0 };
        let feed_forward = linear(d, 4 * d) + linear(4 * d, d);
        let embed = c * p2 * d + d + table * table * d;
        let time_text = linear(FREQUENCY_WIDTH as u64, d)
            + linear(d, d)
            + linear(self.pooled_projection_dim as u64, d)
            + linear(d, d);
        let context = linear(self.joint_attention_dim as u64, d);
        let blocks: u64 = (0..self.num_layers)
            .map(|i| {
                let last = i + 1 == self.num_layers;
                let dual = self.dual_attention_layers.contains(&i);
                let norm1 = linear(d, if dual { 9 } else { 6 } * d);
                let norm1_context = linear(d, if last { 2 } else { 6 } * d);
                let joint = 7 * linear(d, d) + 2 * qk;
                let context_out = if last { 0 } else { linear(d, d) + feed_forward };
                let second = if dual { 4 * linear(d, d) + qk } else { 0 };
                norm1 + norm1_context + joint + context_out + second + feed_forward
            })
            .sum();
        let out_layers = linear(d, 2 * d) + linear(d, p2 * out);
        embed + time_text + context + blocks + out_layers
    }
}

/// One attention's projections (`Attention` with `bias=True`): q, k, v and the output, q and k
/// optionally RMS-normed per head.
#[derive(Module, Debug)]
struct Projections<B: Backend> {
    q: Linear<B>,
    k: Linear<B>,
    v: Linear<B>,
    norm_q: Option<RmsNorm<B>>,
    norm_k: Option<RmsNorm<B>>,
}

#[derive(Module, Debug)]
struct FeedForward<B: Backend> {
    up: Linear<B>,
    down: Linear<B>,
}

#[derive(Module, Debug)]
struct Block<B: Backend> {
    /// `norm1.linear`: 6 (9 with a second attention) modulations of the image stream.
    norm1: Linear<B>,
    /// `norm1_context.linear`: 6 modulations of the text stream, or 2 (scale, shift) in the last
    /// block (`AdaLayerNormContinuous`).
    norm1_context: Linear<B>,
    image: Projections<B>,
    text: Projections<B>,
    to_out: Linear<B>,
    /// `to_add_out`: absent in the last block.
    to_add_out: Option<Linear<B>>,
    /// `attn2` with its output projection.
    second: Option<(Projections<B>, Linear<B>)>,
    ff: FeedForward<B>,
    /// Absent in the last block.
    ff_context: Option<FeedForward<B>>,
}

#[derive(Module, Debug)]
pub struct Sd3Transformer<B: Backend> {
    patch: Conv2d<B>,
    /// [side * side, width]: the positional table, in host memory. Skipped as a module field so
    /// that moving the weights (offloading) leaves it there.
    #[module(skip)]
    table: Tensor<B, 2>,
    time_1: Linear<B>,
    time_2: Linear<B>,
    text_1: Linear<B>,
    text_2: Linear<B>,
    context_embedder: Linear<B>,
    blocks: Vec<Block<B>>,
    norm_out: Linear<B>,
    proj_out: Linear<B>,
    heads: usize,
    table_side: usize,
    in_channels: usize,
}

impl<B: Backend> Sd3Transformer<B> {
    pub fn load(
        config: &Sd3TransformerConfig,
        path: &Path,
        loader: &mut Loader<B>,
    ) -> Result<Self> {
        config.validate(path)?;
        let d = config.inner_dim();
        let c = config.in_channels;
        let side = config.table_side();
        // The embedders, the conditioning and the output layers stay in the run's precision
        // under int8 (as the other DiTs' do): they are small, and every value passes through them.
        let (patch, time_1, time_2, text_1, text_2, context_embedder, norm_out, proj_out) = loader
            .full_precision(|l| {
                Ok((
                    l.conv2d("pos_embed.proj", c, d, 2, 2, 0)?,
                    l.linear(
                        "time_text_embed.timestep_embedder.linear_1",
                        FREQUENCY_WIDTH,
                        d,
                        true,
                    )?,
                    l.linear("time_text_embed.timestep_embedder.linear_2", d, d, true)?,
                    l.linear(
                        "time_text_embed.text_embedder.linear_1",
                        config.pooled_projection_dim,
                        d,
                        true,
                    )?,
                    l.linear("time_text_embed.text_embedder.linear_2", d, d, true)?,
                    l.linear("context_embedder", config.joint_attention_dim, d, true)?,
                    l.linear("norm_out.linear", d, 2 * d, true)?,
                    l.linear("proj_out", d, 4 * config.out_channels(), true)?,
                ))
            })?;
        // On the host: SD3.5 Medium's 384x384 table is 432 MiB in f16 (more than some devices'
        // largest buffer) and a call reads only its image's crop of it.
        let table = loader
            .host_tensor("pos_embed.pos_embed", [1, side * side, d], Init::FanIn(d))?
            .reshape([side * side, d]);
        let blocks = (0..config.num_layers)
            .map(|i| Block::load(loader, i, config))
            .collect::<Result<_>>()?;
        Ok(Sd3Transformer {
            patch,
            table,
            time_1,
            time_2,
            text_1,
            text_2,
            context_embedder,
            blocks,
            norm_out,
            proj_out,
            heads: config.num_attention_heads,
            table_side: side,
            in_channels: c,
        })
    }

    pub fn in_channels(&self) -> usize {
        self.in_channels
    }

    pub fn block_count(&self) -> usize {
        self.blocks.len()
    }

    /// The largest latent side (in latent pixels) the positional table covers.
    pub fn max_latent_side(&self) -> usize {
        2 * self.table_side
    }

    /// One call: `latents` [N, C, H, W] (H, W even, at most `max_latent_side`) with their
    /// `positions` (`positions`), `context` [N, L, joint width] and `pooled` [N, pooled width] at
    /// `timestep` (`1000 x sigma`), skipping the blocks `skip` lists (skip-layer guidance).
    /// Returns the predicted velocity [N, C, H, W] in the activations' dtype.
    pub fn forward(
        &self,
        latents: Tensor<B, 4>,
        positions: Tensor<B, 2>,
        context: Tensor<B, 3>,
        pooled: Tensor<B, 2>,
        timestep: f32,
        skip: &[usize],
    ) -> Tensor<B, 4> {
        let [n, c, h, w] = latents.dims();
        let dtype = self.table.dtype();
        let device = latents.device();
        let (ht, wt) = (h / 2, w / 2);
        let d = self.table.dims()[1];

        // Patches through the strided convolution, (row, column) order, plus the table's centre.
        let x = self
            .patch
            .forward(latents.cast(dtype))
            .reshape([n, d, ht * wt])
            .swap_dims(1, 2);
        let mut x = x + positions.unsqueeze::<3>();

        // The conditioning: the timestep's embedding plus the pooled text's.
        let freq = sinusoids(&[timestep], FREQUENCY_WIDTH, true, 0.0);
        let freq = Tensor::<B, 2>::from_data(TensorData::new(freq, [1, FREQUENCY_WIDTH]), &device);
        let time = self
            .time_2
            .forward(silu(self.time_1.forward(freq.cast(dtype))));
        let text = self
            .text_2
            .forward(silu(self.text_1.forward(pooled.cast(dtype))));
        let conditioning = silu(time + text);

        let mut context = Some(self.context_embedder.forward(context.cast(dtype)));
        for (i, block) in self.blocks.iter().enumerate() {
            if skip.contains(&i) {
                continue;
            }
            let Some(text) = context.take() else { break };
            (x, context) = block.forward(x, text, &conditioning, self.heads);
        }
        let m = self.norm_out.forward(conditioning);
        let (scale, shift) = (chunk(&m, 2, 0), chunk(&m, 2, 1));
        let x = modulated_layer_norm(x, &shift, &scale, EPS);
        self.proj_out
            .forward(x)
            .reshape([n, ht, wt, 2, 2, c])
            .permute([0, 5, 1, 3, 2, 4])
            .reshape([n, c, h, w])
    }

    /// The positional table's crop for `latents` [N, C, H, W]: its (H/2) x (W/2) patches around
    /// the table's centre, [patches, width], on the latents' device. Every call of a generation
    /// takes the same, so it is cropped and uploaded once (`forward`).
    pub fn positions(&self, latents: &Tensor<B, 4>) -> Tensor<B, 2> {
        let [_, _, h, w] = latents.dims();
        let (ht, wt) = (h / 2, w / 2);
        let side = self.table_side;
        let d = self.table.dims()[1];
        let (top, left) = ((side - ht) / 2, (side - wt) / 2);
        self.table
            .clone()
            .reshape([side, side, d])
            .slice([top..top + ht, left..left + wt, 0..d])
            .reshape([ht * wt, d])
            .to_device(&latents.device())
    }
}

/// Part `k` of `parts` equal chunks of a modulation [N, parts * D], as [N, 1, D].
fn chunk<B: Backend>(m: &Tensor<B, 2>, parts: usize, k: usize) -> Tensor<B, 3> {
    let [n, width] = m.dims();
    let d = width / parts;
    m.clone().narrow(1, k * d, d).reshape([n, 1, d])
}

impl<B: Backend> Projections<B> {
    fn load(
        loader: &mut Loader<B>,
        p: &str,
        [q, k, v]: [&str; 3],
        norms: Option<[&str; 2]>,
        config: &Sd3TransformerConfig,
    ) -> Result<Self> {
        let d = config.inner_dim();
        let dh = config.attention_head_dim;
        let lin = |l: &mut Loader<B>, name: &str| l.linear(&format!("{p}.{name}"), d, d, true);
        let (q, k, v) = (lin(loader, q)?, lin(loader, k)?, lin(loader, v)?);
        let (norm_q, norm_k) = match norms.filter(|_| config.qk_normed()) {
            Some([nq, nk]) => {
                let mut norm =
                    |name: &str| RmsNorm::load(loader, &format!("{p}.{name}.weight"), dh, EPS);
                (Some(norm(nq)?), Some(norm(nk)?))
            }
            None => (None, None),
        };
        Ok(Projections {
            q,
            k,
            v,
            norm_q,
            norm_k,
        })
    }

    /// q, k and v of `h` [N, S, D], q and k normed per head.
    fn project(&self, h: Tensor<B, 3>, heads: usize) -> [Tensor<B, 3>; 3] {
        let [n, s, d] = h.dims();
        let norm = |t: Tensor<B, 3>, norm: &Option<RmsNorm<B>>| match norm {
            Some(norm) => norm
                .forward(t.reshape([n, s, heads, d / heads]))
                .reshape([n, s, d]),
            None => t,
        };
        [
            norm(self.q.forward(h.clone()), &self.norm_q),
            norm(self.k.forward(h.clone()), &self.norm_k),
            self.v.forward(h),
        ]
    }
}

impl<B: Backend> FeedForward<B> {
    fn load(loader: &mut Loader<B>, p: &str, d: usize) -> Result<Self> {
        Ok(FeedForward {
            up: loader.linear(&format!("{p}.net.0.proj"), d, 4 * d, true)?,
            down: loader.linear(&format!("{p}.net.2"), 4 * d, d, true)?,
        })
    }

    fn forward(&self, x: Tensor<B, 3>) -> Tensor<B, 3> {
        self.down.forward(gelu_tanh(self.up.forward(x)))
    }
}

impl<B: Backend> Block<B> {
    fn load(loader: &mut Loader<B>, i: usize, config: &Sd3TransformerConfig) -> Result<Self> {
        let d = config.inner_dim();
        let p = format!("transformer_blocks.{i}");
        let last = i + 1 == config.num_layers;
        let dual = config.dual_attention_layers.contains(&i);
        // The blocks' modulations go int8 with the rest of the block, as Z-Image's do: they
        // are a third of the MMDiT's weights (SD3.5 Large: 2.7 of 8.1 billion), and in the
        // run's precision they would hold `minimal` 2.7 GB above its int8 weights.
        let image = if dual { 9 } else { 6 };
        let text = if last { 2 } else { 6 };
        let norm1 = loader.linear(&format!("{p}.norm1.linear"), d, image * d, true)?;
        let norm1_context =
            loader.linear(&format!("{p}.norm1_context.linear"), d, text * d, true)?;
        let attn = format!("{p}.attn");
        let image = Projections::load(
            loader,
            &attn,
            ["to_q", "to_k", "to_v"],
            Some(["norm_q", "norm_k"]),
            config,
        )?;
        let text = Projections::load(
            loader,
            &attn,
            ["add_q_proj", "add_k_proj", "add_v_proj"],
            Some(["norm_added_q", "norm_added_k"]),
            config,
        )?;
        let to_out = loader.linear(&format!("{attn}.to_out.0"), d, d, true)?;
        let to_add_out = match last {
            true => None,
            false => Some(loader.linear(&format!("{attn}.to_add_out"), d, d, true)?),
        };
        let second = match dual {
            true => {
                let attn2 = format!("{p}.attn2");
                let projections = Projections::load(
                    loader,
                    &attn2,
                    ["to_q", "to_k", "to_v"],
                    Some(["norm_q", "norm_k"]),
                    config,
                )?;
                Some((
                    projections,
                    loader.linear(&format!("{attn2}.to_out.0"), d, d, true)?,
                ))
            }
            false => None,
        };
        let ff = FeedForward::load(loader, &format!("{p}.ff"), d)?;
        let ff_context = match last {
            true => None,
            false => Some(FeedForward::load(loader, &format!("{p}.ff_context"), d)?),
        };
        Ok(Block {
            norm1,
            norm1_context,
            image,
            text,
            to_out,
            to_add_out,
            second,
            ff,
            ff_context,
        })
    }

    /// `x` [N, S, D] and `context` [N, L, D] with `conditioning` [N, D] (already through SiLU)
    /// -> the image stream and, but in the last block, the text stream.
    fn forward(
        &self,
        x: Tensor<B, 3>,
        context: Tensor<B, 3>,
        conditioning: &Tensor<B, 2>,
        heads: usize,
    ) -> (Tensor<B, 3>, Option<Tensor<B, 3>>) {
        let s = x.dims()[1];
        let m = self.norm1.forward(conditioning.clone());
        let parts = if self.second.is_some() { 9 } else { 6 };
        let part = |k: usize| chunk(&m, parts, k);
        let h = modulated_layer_norm(x.clone(), &part(0), &part(1), EPS);
        // The second attention reads the block's input, modulated its own way.
        let h2 = self
            .second
            .as_ref()
            .map(|_| modulated_layer_norm(x.clone(), &part(6), &part(7), EPS));
        let mc = self.norm1_context.forward(conditioning.clone());
        let ch = match self.ff_context {
            // AdaLayerNormContinuous: (scale, shift).
            None => {
                modulated_layer_norm(context.clone(), &chunk(&mc, 2, 1), &chunk(&mc, 2, 0), EPS)
            }
            Some(_) => {
                modulated_layer_norm(context.clone(), &chunk(&mc, 6, 0), &chunk(&mc, 6, 1), EPS)
            }
        };

        // Joint attention over [image | text].
        let [q, k, v] = self.image.project(h, heads);
        let [cq, ck, cv] = self.text.project(ch, heads);
        let joint = multi_head_attention(
            Tensor::cat(vec![q, cq], 1),
            Tensor::cat(vec![k, ck], 1),
            Tensor::cat(vec![v, cv], 1),
            heads,
            false,
            false,
        );
        let l = joint.dims()[1] - s;
        let image_out = self.to_out.forward(joint.clone().narrow(1, 0, s));
        let mut x = x + part(2) * image_out;

        if let (Some((projections, out)), Some(h2)) = (&self.second, h2) {
            let [q, k, v] = projections.project(h2, heads);
            let second = out.forward(multi_head_attention(q, k, v, heads, false, false));
            x = x + part(8) * second;
        }
        let h = modulated_layer_norm(x.clone(), &part(3), &part(4), EPS);
        let x = x + part(5) * self.ff.forward(h);

        let context = match (&self.to_add_out, &self.ff_context) {
            (Some(to_add_out), Some(ff_context)) => {
                let text_out = to_add_out.forward(joint.narrow(1, s, l));
                let context = context + chunk(&mc, 6, 2) * text_out;
                let h = modulated_layer_norm(
                    context.clone(),
                    &chunk(&mc, 6, 3),
                    &chunk(&mc, 6, 4),
                    EPS,
                );
                Some(context + chunk(&mc, 6, 5) * ff_context.forward(h))
            }
            _ => None,
        };
        (x, context)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The upstream transformers' sizes: diffusers' `SD3Transformer2DModel(**config)` counted on
    /// the meta device, parameters plus the stored positional table.
    #[test]
    fn the_built_in_configs_are_valid_and_sized_as_upstream() {
        let path = Path::new("transformer/config.json");
        for (config, expected) in [
            (Sd3TransformerConfig::medium_35(), MEDIUM_35_PARAMETERS),
            (Sd3TransformerConfig::large_35(), LARGE_35_PARAMETERS),
            (Sd3TransformerConfig::medium_3(), MEDIUM_3_PARAMETERS),
        ] {
            config.validate(path).unwrap();
            assert_eq!(config.parameters(), expected, "{config:?}");
        }
        let odd = Sd3TransformerConfig {
            caption_projection_dim: 1000,
            ..Sd3TransformerConfig::medium_35()
        };
        let err = odd.validate(path).unwrap_err().to_string();
        assert!(err.contains("caption_projection_dim"), "{err}");
        let beyond = Sd3TransformerConfig {
            dual_attention_layers: vec![30],
            ..Sd3TransformerConfig::medium_35()
        };
        assert!(beyond.validate(path).is_err());
        let layer_norm = Sd3TransformerConfig {
            qk_norm: Some("layer_norm".into()),
            ..Sd3TransformerConfig::medium_35()
        };
        assert!(layer_norm.validate(path).is_err());
    }

    const MEDIUM_35_PARAMETERS: u64 = 2_469_663_936;
    const LARGE_35_PARAMETERS: u64 = 8_146_280_768;
    const MEDIUM_3_PARAMETERS: u64 = 2_084_951_104;
}
