//! diffusers' `UNet2DConditionModel`, built block by block from `unet/config.json`.

pub mod config;
mod transformer;

use std::path::Path;

use burn::prelude::*;
use burn::tensor::{DType, TensorData};

use crate::error::{DiffusionError, Result};
use crate::nn::loader::Loader;
use crate::nn::resnet::{Downsample2D, ResnetBlock2D, ResnetSpec, Upsample2D};
use crate::nn::{silu, Conv2d, GroupNorm, Linear};
use config::{UNetBlockPlan, UNetConfig};
use transformer::{Transformer2DModel, TransformerSpec};

/// A down or up block: resnets, each optionally followed by a transformer, then a resampler.
#[derive(Module, Debug)]
struct Block<B: Backend> {
    resnets: Vec<ResnetBlock2D<B>>,
    attentions: Vec<Transformer2DModel<B>>,
    downsampler: Option<Downsample2D<B>>,
    upsampler: Option<Upsample2D<B>>,
}

#[derive(Module, Debug)]
struct MidBlock<B: Backend> {
    first: ResnetBlock2D<B>,
    rest: Vec<(Transformer2DModel<B>, ResnetBlock2D<B>)>,
}

/// What the UNet is conditioned on besides the timestep.
pub struct Conditioning<B: Backend> {
    /// Text embeddings [N, S, cross_attention_dim].
    pub context: Tensor<B, 3>,
    /// SDXL's added conditions (`addition_embed_type: "text_time"`); `None` for SD1.x and SD2.x.
    pub text_time: Option<TextTime<B>>,
}

impl<B: Backend> Conditioning<B> {
    /// A guided batch's two halves, [0, n) and [n, 2n): the unconditional and the conditional
    /// rows (diffusers' order).
    pub fn halves(&self, n: usize) -> (Conditioning<B>, Conditioning<B>) {
        let half = |start: usize| Conditioning {
            context: self.context.clone().narrow(0, start, n),
            text_time: self.text_time.as_ref().map(|tt| TextTime {
                text_embeds: tt.text_embeds.clone().narrow(0, start, n),
                time_ids: tt.time_ids[start..start + n].to_vec(),
            }),
        };
        (half(0), half(n))
    }
}

/// SDXL's added conditions, one row per batch entry.
pub struct TextTime<B: Backend> {
    /// The second text encoder's projected pooled output [N, P].
    pub text_embeds: Tensor<B, 2>,
    /// Original height and width, crop top and left, target height and width, per row.
    pub time_ids: Vec<[f32; 6]>,
}

/// `add_time_proj` + `add_embedding`: sinusoids of the six ids, joined to the pooled text embedding
/// and projected to the time embedding's width.
#[derive(Module, Debug)]
struct AddEmbedding<B: Backend> {
    time_dim: usize,
    linear_1: Linear<B>,
    linear_2: Linear<B>,
}

#[derive(Module, Debug)]
pub struct UNet<B: Backend> {
    time_channels: usize,
    flip_sin_to_cos: bool,
    freq_shift: f32,
    linear_1: Linear<B>,
    linear_2: Linear<B>,
    add_embedding: Option<AddEmbedding<B>>,
    conv_in: Conv2d<B>,
    down: Vec<Block<B>>,
    mid: Option<MidBlock<B>>,
    up: Vec<Block<B>>,
    conv_norm_out: GroupNorm<B>,
    conv_out: Conv2d<B>,
    in_channels: usize,
    cross_attention_dim: usize,
}

impl<B: Backend> UNet<B> {
    pub fn load(config: &UNetConfig, path: &Path, loader: &mut Loader<B>) -> Result<Self> {
        let plan = config.plan(path)?;
        let specs = BlockSpecs::new(config, &plan);
        let boc = &config.block_out_channels;
        let embeddings = Embeddings::load(config, specs.temb, loader)?;
        let down = load_down_blocks(&specs, loader)?;
        let mid = load_mid_block(&specs, loader)?;
        let up = load_up_blocks(&specs, loader)?;
        let k_out = config.conv_out_kernel;
        Ok(UNet {
            time_channels: boc[0],
            flip_sin_to_cos: config.flip_sin_to_cos,
            freq_shift: config.freq_shift,
            linear_1: embeddings.linear_1,
            linear_2: embeddings.linear_2,
            add_embedding: embeddings.add_embedding,
            conv_in: embeddings.conv_in,
            down,
            mid,
            up,
            conv_norm_out: loader.group_norm(
                "conv_norm_out",
                config.norm_num_groups,
                boc[0],
                config.norm_eps,
            )?,
            // Kept in the run's precision under int8, as conv_in (`Embeddings::load`).
            conv_out: loader.full_precision(|loader| {
                loader.conv2d("conv_out", boc[0], config.out_channels, k_out, 1, k_out / 2)
            })?,
            in_channels: config.in_channels,
            cross_attention_dim: plan.cross_attention_dim[0],
        })
    }

    pub fn in_channels(&self) -> usize {
        self.in_channels
    }

    pub fn cross_attention_dim(&self) -> usize {
        self.cross_attention_dim
    }

    /// Whether `forward` needs SDXL's added conditions.
    pub fn needs_text_time(&self) -> bool {
        self.add_embedding.is_some()
    }

    /// Width of the pooled text embedding the added conditions take (0 without them).
    pub fn text_time_pooled_size(&self) -> usize {
        match &self.add_embedding {
            Some(add) => add.linear_1.inputs() - 6 * add.time_dim,
            None => 0,
        }
    }

    fn sinusoids(&self, values: &[f32], dim: usize) -> Vec<f32> {
        crate::nn::sinusoids(values, dim, self.flip_sin_to_cos, self.freq_shift)
    }

    /// The timestep's sinusoidal embedding, [batch, time channels] in f32.
    pub fn timestep_embedding(
        &self,
        timestep: f32,
        batch: usize,
        device: &B::Device,
    ) -> Tensor<B, 2> {
        let dim = self.time_channels;
        let data = self.sinusoids(&vec![timestep; batch], dim);
        Tensor::from_data(TensorData::new(data, [batch, dim]), (device, DType::F32))
    }

    /// SDXL's `aug_emb`: [text_embeds | sinusoids of the six ids] through `add_embedding`.
    fn added_embedding(
        &self,
        add: &AddEmbedding<B>,
        text_time: &TextTime<B>,
        batch: usize,
        dtype: DType,
    ) -> Result<Tensor<B, 2>> {
        let [rows, pooled] = text_time.text_embeds.dims();
        let expected = self.text_time_pooled_size();
        if rows != batch || text_time.time_ids.len() != batch || pooled != expected {
            return Err(DiffusionError::Request(format!(
                "the UNet's added conditions need {batch} rows of a {expected}-wide pooled text embedding and six time ids; got {rows} rows of {pooled} and {} rows of ids",
                text_time.time_ids.len()
            )));
        }
        let ids: Vec<f32> = text_time.time_ids.iter().flatten().copied().collect();
        let width = 6 * add.time_dim;
        let time = Tensor::<B, 2>::from_data(
            TensorData::new(self.sinusoids(&ids, add.time_dim), [batch, width]),
            (&text_time.text_embeds.device(), DType::F32),
        );
        let joined = Tensor::cat(
            vec![text_time.text_embeds.clone().cast(DType::F32), time],
            1,
        )
        .cast(dtype);
        Ok(add.linear_2.forward(silu(add.linear_1.forward(joined))))
    }

    /// `sample`: [N, C, h, w] latents, `timestep`, `cond`: text embeddings [N, S, cross_dim] (and
    /// SDXL's added conditions) -> the model's prediction [N, C_out, h, w], in the activation dtype.
    pub fn forward(
        &self,
        sample: Tensor<B, 4>,
        timestep: f32,
        cond: &Conditioning<B>,
    ) -> Result<Tensor<B, 4>> {
        let [batch, _, _, _] = sample.dims();
        let dtype = self.conv_in.dtype();
        let context = &cond.context;
        let t = self
            .timestep_embedding(timestep, batch, &sample.device())
            .cast(dtype);
        let mut emb = self.linear_2.forward(silu(self.linear_1.forward(t)));
        match (&self.add_embedding, &cond.text_time) {
            (Some(add), Some(text_time)) => {
                emb = emb + self.added_embedding(add, text_time, batch, dtype)?;
            }
            (Some(_), None) => {
                return Err(DiffusionError::Request(
                    "this UNet (addition_embed_type \"text_time\") needs a pooled text embedding and time ids".into(),
                ))
            }
            (None, _) => {}
        }
        let emb = Some(&emb);

        let mut x = self.conv_in.forward(sample.cast(dtype));
        let mut skips = vec![x.clone()];
        for block in &self.down {
            for (j, resnet) in block.resnets.iter().enumerate() {
                x = resnet.forward(x, emb);
                if let Some(attn) = block.attentions.get(j) {
                    x = attn.forward(x, context);
                }
                skips.push(x.clone());
            }
            if let Some(down) = &block.downsampler {
                x = down.forward(x);
                skips.push(x.clone());
            }
        }
        if let Some(mid) = &self.mid {
            x = mid.first.forward(x, emb);
            for (attn, resnet) in &mid.rest {
                x = resnet.forward(attn.forward(x, context), emb);
            }
        }
        for block in &self.up {
            for (j, resnet) in block.resnets.iter().enumerate() {
                let skip = skips.pop().expect("one skip per up-block resnet");
                x = resnet.forward(Tensor::cat(vec![x, skip], 1), emb);
                if let Some(attn) = block.attentions.get(j) {
                    x = attn.forward(x, context);
                }
            }
            if let Some(up) = &block.upsampler {
                // Match the skip connection's size when an odd size was halved (diffusers'
                // `upsample_size`).
                let target = skips.last().map(|s| {
                    let [_, _, h, w] = s.dims();
                    [h, w]
                });
                x = up.forward(x, target);
            }
        }
        Ok(self.conv_out.forward(self.conv_norm_out.forward_silu(x)))
    }
}

/// The layer specs every block of one UNet shares: its resnets' and its transformers' by level.
struct BlockSpecs<'a> {
    config: &'a UNetConfig,
    plan: &'a UNetBlockPlan,
    /// The time embedding's width, which every resnet reads.
    temb: usize,
}

impl<'a> BlockSpecs<'a> {
    fn new(config: &'a UNetConfig, plan: &'a UNetBlockPlan) -> Self {
        let boc = &config.block_out_channels;
        BlockSpecs {
            config,
            plan,
            temb: config.time_embedding_dim.unwrap_or(4 * boc[0]),
        }
    }

    fn levels(&self) -> usize {
        self.config.block_out_channels.len()
    }

    fn resnet(&self, inputs: usize, outputs: usize) -> ResnetSpec {
        ResnetSpec {
            inputs,
            outputs,
            temb_channels: Some(self.temb),
            groups: self.config.norm_num_groups,
            eps: self.config.norm_eps,
            output_scale_factor: 1.0,
        }
    }

    /// The transformer after a resnet of `channels` at down level `level`.
    fn transformer(&self, channels: usize, level: usize) -> TransformerSpec {
        TransformerSpec {
            channels,
            heads: self.plan.heads[level],
            layers: self.plan.transformer_layers[level],
            context_dim: self.plan.cross_attention_dim[level],
            groups: self.config.norm_num_groups,
            linear_projection: self.config.use_linear_projection,
            upcast_attention: self.config.upcast_attention,
        }
    }
}

/// The time embedding, SDXL's added embedding and `conv_in`.
struct Embeddings<B: Backend> {
    linear_1: Linear<B>,
    linear_2: Linear<B>,
    add_embedding: Option<AddEmbedding<B>>,
    conv_in: Conv2d<B>,
}

impl<B: Backend> Embeddings<B> {
    /// With int8 weights (the `minimal` profile) these layers stay in the run's precision: the
    /// timestep and added embeddings feed every resnet, and conv_in/conv_out touch the latents
    /// directly, so their error would reach every output; together they are under 1% of the
    /// weights.
    fn load(config: &UNetConfig, temb: usize, loader: &mut Loader<B>) -> Result<Self> {
        let time_channels = config.block_out_channels[0];
        loader.full_precision(|loader| {
            let linear_1 = loader.linear("time_embedding.linear_1", time_channels, temb, true)?;
            let linear_2 = loader.linear("time_embedding.linear_2", temb, temb, true)?;
            let add_embedding = match (
                config.addition_time_embed_dim,
                config.projection_class_embeddings_input_dim,
            ) {
                (Some(time_dim), Some(inputs)) if config.addition_embed_type.is_some() => {
                    Some(AddEmbedding {
                        time_dim,
                        linear_1: loader.linear("add_embedding.linear_1", inputs, temb, true)?,
                        linear_2: loader.linear("add_embedding.linear_2", temb, temb, true)?,
                    })
                }
                _ => None,
            };
            let k_in = config.conv_in_kernel;
            let conv_in = loader.conv2d(
                "conv_in",
                config.in_channels,
                time_channels,
                k_in,
                1,
                k_in / 2,
            )?;
            Ok(Embeddings {
                linear_1,
                linear_2,
                add_embedding,
                conv_in,
            })
        })
    }
}

fn empty_block<B: Backend>() -> Block<B> {
    Block {
        resnets: Vec::new(),
        attentions: Vec::new(),
        downsampler: None,
        upsampler: None,
    }
}

fn load_down_blocks<B: Backend>(
    specs: &BlockSpecs,
    loader: &mut Loader<B>,
) -> Result<Vec<Block<B>>> {
    let config = specs.config;
    let boc = &config.block_out_channels;
    let n = specs.levels();
    let mut down = Vec::with_capacity(n);
    let mut out_ch = boc[0];
    for (i, kind) in config.down_block_types.iter().enumerate() {
        let in_ch = out_ch;
        out_ch = boc[i];
        let p = format!("down_blocks.{i}");
        let cross = kind == "CrossAttnDownBlock2D";
        let mut block = empty_block();
        for j in 0..specs.plan.layers_per_block[i] {
            let inputs = if j == 0 { in_ch } else { out_ch };
            block.resnets.push(ResnetBlock2D::load(
                &format!("{p}.resnets.{j}"),
                &specs.resnet(inputs, out_ch),
                loader,
            )?);
            if cross {
                block.attentions.push(Transformer2DModel::load(
                    &format!("{p}.attentions.{j}"),
                    &specs.transformer(out_ch, i),
                    loader,
                )?);
            }
        }
        if i + 1 < n {
            block.downsampler = Some(Downsample2D::load(
                &format!("{p}.downsamplers.0"),
                out_ch,
                config.downsample_padding,
                loader,
            )?);
        }
        down.push(block);
    }
    Ok(down)
}

fn load_mid_block<B: Backend>(
    specs: &BlockSpecs,
    loader: &mut Loader<B>,
) -> Result<Option<MidBlock<B>>> {
    let config = specs.config;
    if config.mid_block_type.is_none() {
        return Ok(None);
    }
    let last = specs.levels() - 1;
    let c = config.block_out_channels[last];
    let spec = ResnetSpec {
        output_scale_factor: config.mid_block_scale_factor,
        ..specs.resnet(c, c)
    };
    let first = ResnetBlock2D::load("mid_block.resnets.0", &spec, loader)?;
    // diffusers' mid block has one attention/resnet pair; `transformer_layers_per_block` sets the
    // depth inside that transformer.
    let attn = Transformer2DModel::load(
        "mid_block.attentions.0",
        &specs.transformer(c, last),
        loader,
    )?;
    let res = ResnetBlock2D::load("mid_block.resnets.1", &spec, loader)?;
    Ok(Some(MidBlock {
        first,
        rest: vec![(attn, res)],
    }))
}

fn load_up_blocks<B: Backend>(specs: &BlockSpecs, loader: &mut Loader<B>) -> Result<Vec<Block<B>>> {
    let config = specs.config;
    let n = specs.levels();
    let mut up = Vec::with_capacity(n);
    let reversed: Vec<usize> = config.block_out_channels.iter().rev().copied().collect();
    let mut out_ch = reversed[0];
    for (i, kind) in config.up_block_types.iter().enumerate() {
        let rev = n - 1 - i; // the down block this up block mirrors
        let prev_out = out_ch;
        out_ch = reversed[i];
        let in_ch = reversed[(i + 1).min(n - 1)];
        let p = format!("up_blocks.{i}");
        let cross = kind == "CrossAttnUpBlock2D";
        let layers = specs.plan.layers_per_block[rev] + 1;
        let mut block = empty_block();
        for j in 0..layers {
            let skip = if j == layers - 1 { in_ch } else { out_ch };
            let inputs = if j == 0 { prev_out } else { out_ch };
            block.resnets.push(ResnetBlock2D::load(
                &format!("{p}.resnets.{j}"),
                &specs.resnet(inputs + skip, out_ch),
                loader,
            )?);
            if cross {
                block.attentions.push(Transformer2DModel::load(
                    &format!("{p}.attentions.{j}"),
                    &specs.transformer(out_ch, rev),
                    loader,
                )?);
            }
        }
        if i + 1 < n {
            block.upsampler = Some(Upsample2D::load(
                &format!("{p}.upsamplers.0"),
                out_ch,
                loader,
            )?);
        }
        up.push(block);
    }
    Ok(up)
}
