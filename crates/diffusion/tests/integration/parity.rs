//! Parity with diffusers on the tiny random-weight pipelines made by scripts/make_fixtures.py:
//! text encoder, one UNet call, VAE decode and encode, seeded noise, full generations for every
//! scheduler with and without a negative prompt, a batch of two, and image-to-image generations
//! (diffusers' img2img pipelines), on the CPU backend and on wgpu through Vulkan.
//!
//! Tolerances are absolute, on values of order 1, and derived from diffusers' own f32 rounding of
//! each fixture (scripts/measure_f32_rounding.py reruns it in float64): generated images to
//! `parity::fixture_tolerance` (1.8e-5 to 3.9e-5 for these four), each component call to
//! `parity::component_tolerance` (4.6e-6 to 1.8e-5).

use crate::common;
use crate::common::FamilyAccess;

use common::{assert_close, Reference};
use sdbench_diffusion::device::select;
use sdbench_diffusion::io::image::read_image;
use sdbench_diffusion::parity;
use sdbench_diffusion::{
    BackendRequest, CancelToken, GenerateRequest, InitImage, InitialNoise, LoadOptions,
    MemoryProfile, ModelSource, Pipeline, Precision, SchedulerKind,
};

const F16_IMAGE_ATOL: f32 = parity::image_tolerance(Precision::F16);
const BF16_IMAGE_ATOL: f32 = parity::image_tolerance(Precision::Bf16);

/// The f32 bound on fixture `name`'s generated images, derived from diffusers' own f32 rounding of
/// them (`parity::fixture_tolerance`).
fn image_atol(name: &str) -> f32 {
    parity::fixture_tolerance(&common::fixtures(), name, Precision::F32).unwrap()
}

/// The f32 bound on component `key` of fixture `name`, derived from diffusers' own f32 rounding
/// of that call (`parity::component_tolerance`).
fn component_atol(name: &str, key: &str) -> f32 {
    parity::component_tolerance(&common::fixtures(), name, key).unwrap()
}

fn load(name: &str, backend: BackendRequest) -> Pipeline {
    load_in(name, backend, Precision::F32)
}

fn load_in(name: &str, backend: BackendRequest, precision: Precision) -> Pipeline {
    load_with(name, backend, precision, LoadOptions::default())
}

fn load_with(
    name: &str,
    backend: BackendRequest,
    precision: Precision,
    options: LoadOptions,
) -> Pipeline {
    let device = select(backend).expect("backend available");
    Pipeline::load_with(
        &ModelSource::Folder(common::fixtures().join(name)),
        device,
        Some(precision),
        options,
    )
    .unwrap()
}

/// With the VAE encoder, for image-to-image.
fn load_img2img(name: &str, backend: BackendRequest) -> Pipeline {
    let options = LoadOptions {
        vae_encoder: true,
        ..LoadOptions::default()
    };
    load_with(name, backend, Precision::F32, options)
}

fn init_image(name: &str) -> sdbench_diffusion::io::image::RgbImage {
    read_image(&common::fixtures().join(format!("{name}.init.png"))).unwrap()
}

fn check_components(name: &str, backend: BackendRequest) {
    let pipe = match backend {
        BackendRequest::Cpu => load_img2img(name, backend),
        _ => load(name, backend),
    };
    let mut r = Reference::open(name);

    let ids: Vec<u32> = r
        .get("text_encoder.input_ids")
        .iter()
        .map(|&x| x as u32)
        .collect();
    let hidden = pipe.sd().unwrap().run_text_encoder(&[ids]).unwrap();
    assert_close(
        &format!("{name} text encoder"),
        &hidden,
        &r.get("text_encoder.last_hidden_state"),
        component_atol(name, "text_encoder.last_hidden_state"),
    );

    // The prompt's conditioning (made by the newer fixtures): SDXL's two encoders side by side
    // and its pooled embedding, SD2's "!"-padded tokens.
    if r.has("prompt.context") {
        let prompt = "a photograph of an astronaut riding a horse";
        let (context, pooled) = pipe.sd().unwrap().run_prompt_encoding(prompt).unwrap();
        let expected = r.get("prompt.context");
        assert_close(
            &format!("{name} prompt context"),
            &context,
            &expected,
            component_atol(name, "prompt.context"),
        );
        assert_eq!(
            pooled.is_some(),
            r.has("prompt.pooled"),
            "{name}: pooled output"
        );
        if let Some(pooled) = pooled {
            let expected = r.get("prompt.pooled");
            assert_close(
                &format!("{name} prompt pooled"),
                &pooled,
                &expected,
                component_atol(name, "prompt.pooled"),
            );
        }
    }

    let s = r.shape("unet.sample");
    let c = r.shape("unet.context");
    let t = r.meta["unet_timestep"].as_f64().unwrap() as f32;
    let text_time = r.has("unet.text_embeds").then(|| {
        let shape = r.shape("unet.text_embeds");
        let ids: Vec<[f32; 6]> = r
            .get("unet.time_ids")
            .chunks_exact(6)
            .map(|row| row.try_into().unwrap())
            .collect();
        (r.get("unet.text_embeds"), [shape[0], shape[1]], ids)
    });
    let out = pipe
        .sd()
        .unwrap()
        .run_unet(
            &r.get("unet.sample"),
            [s[0], s[1], s[2], s[3]],
            t,
            &r.get("unet.context"),
            [c[0], c[1], c[2]],
            text_time
                .as_ref()
                .map(|(pooled, shape, ids)| (pooled.as_slice(), *shape, ids.as_slice())),
        )
        .unwrap();
    assert_close(
        &format!("{name} unet"),
        &out,
        &r.get("unet.out"),
        component_atol(name, "unet.out"),
    );

    let z = r.shape("vae.latents");
    let image = pipe
        .sd()
        .unwrap()
        .run_vae_decode(&r.get("vae.latents"), [z[0], z[1], z[2], z[3]])
        .unwrap();
    assert_close(
        &format!("{name} vae decode"),
        &image,
        &r.get("vae.image"),
        component_atol(name, "vae.image"),
    );

    // On Vulkan the encoder is checked through image-to-image (lavapipe compiles every kernel).
    if backend == BackendRequest::Cpu {
        let mean = pipe
            .sd()
            .unwrap()
            .run_vae_encode(&init_image(name))
            .unwrap();
        assert_close(
            &format!("{name} vae encode"),
            &mean,
            &r.get("vae_encode.mean"),
            component_atol(name, "vae_encode.mean"),
        );
    }
}

/// diffusers' img2img pipeline from the committed picture, for each scheduler `only` names (all
/// when `None`): the picture's latent mean noised at the first kept step, the schedule's tail.
fn check_img2img(name: &str, backend: BackendRequest, only: Option<&[&str]>) {
    let pipe = load_img2img(name, backend);
    let mut r = Reference::open(name);
    let g = r.meta["img2img"].clone();
    let image = init_image(name);
    for run in g["runs"].as_array().unwrap() {
        let key = run["key"].as_str().unwrap();
        if only.is_some_and(|keys| !keys.contains(&key)) {
            continue;
        }
        let request = GenerateRequest {
            steps: g["steps"].as_u64().unwrap() as usize,
            guidance_scale: g["guidance"].as_f64().unwrap(),
            scheduler: Some(SchedulerKind::from_name(run["scheduler"].as_str().unwrap()).unwrap()),
            width: image.width,
            height: image.height,
            noise: InitialNoise::Seed(g["seed"].as_u64().unwrap()),
            init_image: Some(InitImage {
                image: image.clone(),
                strength: g["strength"].as_f64().unwrap(),
            }),
            ..GenerateRequest::new(g["prompt"].as_str().unwrap())
        };
        let mut steps = 0;
        let out = pipe
            .generate(
                &request,
                &mut |e| {
                    if let sdbench_diffusion::Progress::Step { total, .. } = e {
                        steps = *total;
                    }
                },
                &CancelToken::new(),
            )
            .unwrap();
        // floor(5 * 0.6) = 3 steps run (PNDM's schedule repeats one timestep: 4 calls).
        let expected_steps = if key.ends_with("pndm") { 4 } else { 3 };
        assert_eq!(steps, expected_steps, "{name} {key}: steps run");
        let what = format!("{name} {key}");
        assert_close(
            &what,
            &out.images[0].float_image,
            &r.get(key),
            image_atol(name),
        );
    }
}

/// Two images per prompt in one call (`num_images_per_prompt=2`), from given latents.
fn check_batch(name: &str, backend: BackendRequest) {
    let pipe = load(name, backend);
    let mut r = Reference::open(name);
    let g = r.meta["generate"].clone();
    let shape = r.shape("batch.latents");
    let request = GenerateRequest {
        steps: g["steps"].as_u64().unwrap() as usize,
        guidance_scale: g["guidance"].as_f64().unwrap(),
        scheduler: Some(SchedulerKind::Euler),
        width: g["width"].as_u64().unwrap() as usize,
        height: g["height"].as_u64().unwrap() as usize,
        noise: InitialNoise::Latents {
            shape: shape.clone(),
            data: r.get("batch.latents"),
            step_seed: 0,
        },
        batch: shape[0],
        ..GenerateRequest::new(g["prompt"].as_str().unwrap())
    };
    let out = pipe
        .generate(&request, &mut |_| {}, &CancelToken::new())
        .unwrap();
    assert_eq!(out.images.len(), 2);
    let flat: Vec<f32> = out
        .images
        .iter()
        .flat_map(|i| i.float_image.iter().copied())
        .collect();
    assert_close(
        &format!("{name} batch of 2"),
        &flat,
        &r.get("batch.images"),
        image_atol(name),
    );
}

fn check_generations(name: &str, backend: BackendRequest) {
    check_generations_in(name, backend, Precision::F32, image_atol(name), None);
}

fn check_generations_in(
    name: &str,
    backend: BackendRequest,
    precision: Precision,
    atol: f32,
    only: Option<&[&str]>,
) {
    let pipe = load_in(name, backend, precision);
    check_generations_of(&pipe, name, atol, only);
}

/// The reference generations `only` lists (all when `None`) on a loaded pipeline.
fn check_generations_of(pipe: &Pipeline, name: &str, atol: f32, only: Option<&[&str]>) {
    let diffs = parity::generations(pipe, &common::fixtures(), name, only).unwrap();
    if only.is_none() {
        assert_eq!(
            diffs.len(),
            12,
            "every scheduler, with and without a negative prompt"
        );
    }
    for d in diffs {
        let what = format!("{name} {} {}", d.key, pipe.precision.name());
        eprintln!(
            "{what}: max |diff| = {:.3e} (tolerance {atol:.1e})",
            d.max_abs_diff
        );
        assert!(
            d.max_abs_diff <= atol,
            "{what}: max |diff| {:e} exceeds {atol:e}",
            d.max_abs_diff
        );
    }
}

#[test]
fn components_match_diffusers_on_cpu() {
    for &name in common::tiny() {
        check_components(name, BackendRequest::Cpu);
    }
}

#[test]
fn generations_match_diffusers_on_cpu() {
    for &name in common::tiny() {
        check_generations(name, BackendRequest::Cpu);
    }
}

#[test]
fn img2img_and_batches_match_diffusers_on_cpu() {
    for &name in common::tiny() {
        check_img2img(name, BackendRequest::Cpu, None);
        check_batch(name, BackendRequest::Cpu);
    }
}

#[test]
fn seeded_noise_matches_the_documented_generator() {
    for &name in common::tiny() {
        let mut r = Reference::open(name);
        let expected = r.get("noise.seed42");
        let actual = sdbench_diffusion::noise::NormalGenerator::new(42).normals(expected.len());
        // Normals under 8 in magnitude from f64 arithmetic rounded to f32 once: 1 ulp of 8 is 9.5e-7.
        assert_close(&format!("{name} seed 42 noise"), &actual, &expected, 1e-6);
    }
}

/// The GPU code path through wgpu on a Vulkan device (Mesa lavapipe in CI). Skipped with a message
/// when no Vulkan adapter exists, unless SDBENCH_REQUIRE_VULKAN=1 (set by .ci/run) makes it fail.
fn vulkan_or_skip() -> bool {
    let status = sdbench_diffusion::device::probe(sdbench_diffusion::BackendKind::Vulkan);
    if status.usable {
        return true;
    }
    if std::env::var("SDBENCH_REQUIRE_VULKAN").as_deref() == Ok("1") {
        panic!(
            "SDBENCH_REQUIRE_VULKAN=1 but no Vulkan adapter: {}",
            status.detail
        );
    }
    eprintln!(
        "SKIPPED: no Vulkan adapter ({}); install mesa-vulkan-drivers",
        status.detail
    );
    false
}

#[test]
fn components_match_diffusers_on_vulkan() {
    if vulkan_or_skip() {
        for &name in common::tiny() {
            check_components(name, BackendRequest::Vulkan);
        }
    }
}

/// Every scheduler on Vulkan, each pipeline running some: the two SD1.x pipelines split the six
/// (with and without a negative prompt in turn), SD2 (v-prediction) and SDXL two each. The CPU
/// test runs every combination: a scheduler is elementwise tensor work whose kernels do not
/// depend on the pipeline, and lavapipe is slow, so CI keeps this short (20 generations took 32
/// s of the 2 cores alone; these 10 half that).
#[test]
fn generations_match_diffusers_on_vulkan() {
    if vulkan_or_skip() {
        let per_pipeline: [&[&str]; 4] = [
            &[
                "generate.pndm.neg",
                "generate.euler.neg",
                "generate.dpmpp_2m.neg",
            ],
            &[
                "generate.ddim.noneg",
                "generate.euler_a.noneg",
                "generate.dpmpp_2m_karras.noneg",
            ],
            &["generate.euler.neg", "generate.ddim.noneg"],
            &["generate.dpmpp_2m.neg", "generate.pndm.noneg"],
        ];
        for (name, keys) in common::tiny().iter().zip(per_pipeline) {
            check_generations_in(
                name,
                BackendRequest::Vulkan,
                Precision::F32,
                image_atol(name),
                Some(keys),
            );
        }
    }
}

/// Image-to-image (VAE encoder, noising at a later step, ancestral step noise) on SD1.x: the CPU
/// test runs every pipeline, scheduler and a batch, whose code is the backend's ordinary tensor
/// ops; lavapipe compiles every kernel, so CI keeps this short.
#[test]
fn img2img_matches_diffusers_on_vulkan() {
    if vulkan_or_skip() {
        check_img2img(
            "tiny-sd",
            BackendRequest::Vulkan,
            Some(&["img2img.euler_a"]),
        );
    }
}

/// SDXL's VAE overflows in f16: an f16 run decodes in f32 (its config's `force_upcast`), as
/// diffusers' SDXL pipeline does, while SD1.x keeps the run's precision.
/// bf16 on the CPU: every scheduler of SD1 and SDXL. SDXL's own VAE stays in bf16, whose range
/// is f32's: diffusers upcasts it from f16 only.
#[test]
fn bf16_generations_track_diffusers_on_cpu() {
    for name in ["tiny-sd", "tiny-sdxl"] {
        let pipe = load_in(name, BackendRequest::Cpu, Precision::Bf16);
        let p = pipe.info.placement;
        assert_eq!(
            (p.denoiser, p.vae),
            (Precision::Bf16, Precision::Bf16),
            "{name}"
        );
        check_generations_of(&pipe, name, BF16_IMAGE_ATOL, None);
    }
}

#[test]
fn sdxl_decodes_in_f32_when_its_vae_asks_for_it() {
    if vulkan_or_skip() {
        let sdxl = load_in("tiny-sdxl", BackendRequest::Vulkan, Precision::F16);
        let p = sdxl.info.placement;
        assert_eq!(
            (p.text_encoders, p.denoiser, p.vae),
            (Precision::F16, Precision::F16, Precision::F32)
        );
        assert_eq!(sdxl.info.family, sdbench_diffusion::Family::SDXL);
        drop(sdxl);
        let sd = load_in("tiny-sd", BackendRequest::Vulkan, Precision::F16);
        assert_eq!(sd.info.placement.vae, Precision::F16);
        check_generations_in(
            "tiny-sdxl",
            BackendRequest::Vulkan,
            Precision::F16,
            F16_IMAGE_ATOL,
            Some(&["generate.euler.noneg"]),
        );
    }
}

/// The text encoders and the VAE on the CPU beside an f16 UNet on the device: conditioning and
/// latents cross between the backends and the images still track diffusers; SDXL's two encoders
/// and pooled embedding, and image-to-image's VAE encoder, included.
#[test]
fn text_encoders_and_vae_run_on_the_cpu_beside_the_device() {
    if vulkan_or_skip() {
        let options = LoadOptions {
            vae_encoder: true,
            text_encoders_on_cpu: true,
            vae_on_cpu: true,
            sequential_cfg: false,
            vae_tiling: false,
            release_memory_between_stages: false,
            denoiser_offload: false,
            denoiser_int8: false,
            small_attention_chunks: false,
            small_vae_tiles: false,
            planned: None,
        };
        let sdxl = load_with("tiny-sdxl", BackendRequest::Vulkan, Precision::F16, options);
        let p = sdxl.info.placement;
        assert_eq!(
            (p.text_encoders, p.denoiser, p.vae),
            (Precision::F32, Precision::F16, Precision::F32)
        );
        assert!(p.text_encoders_on_cpu && p.vae_on_cpu);
        check_generations_of(
            &sdxl,
            "tiny-sdxl",
            F16_IMAGE_ATOL,
            Some(&["generate.euler.neg"]),
        );
        drop(sdxl);

        let sd = load_with("tiny-sd", BackendRequest::Vulkan, Precision::F32, options);
        let mean = sd
            .sd()
            .unwrap()
            .run_vae_encode(&init_image("tiny-sd"))
            .unwrap();
        let expected = Reference::open("tiny-sd").get("vae_encode.mean");
        assert_close(
            "tiny-sd vae encode on the cpu",
            &mean,
            &expected,
            component_atol("tiny-sd", "vae_encode.mean"),
        );
        check_generations_of(
            &sd,
            "tiny-sd",
            image_atol("tiny-sd"),
            Some(&["generate.euler.noneg"]),
        );
    }
}

/// The f16 path GPUs take by default (`--precision auto`), from the fp16 variant files.
#[test]
fn f16_generations_track_diffusers_on_vulkan() {
    if vulkan_or_skip() {
        let keys = [
            "generate.euler.neg",
            "generate.dpmpp_2m.noneg",
            "generate.pndm.neg",
        ];
        check_generations_in(
            "tiny-sd",
            BackendRequest::Vulkan,
            Precision::F16,
            F16_IMAGE_ATOL,
            Some(&keys),
        );
        // Its UNet downsamples by padding one row and column at the end (`downsample_padding`
        // 0), which burn's padding did in f32 and the fusion backend refused for f16 input.
        check_generations_in(
            "tiny-variant",
            BackendRequest::Vulkan,
            Precision::F16,
            F16_IMAGE_ATOL,
            Some(&keys[..1]),
        );
    }
}

/// Sequential classifier-free guidance (the unconditional and conditional halves one after the
/// other) makes what the doubled batch makes, and so still tracks diffusers; SDXL's pooled
/// embedding and size ids are split with the text, and a batch of two splits by rows.
#[test]
fn sequential_cfg_equals_batched_cfg() {
    let sequential = LoadOptions {
        sequential_cfg: true,
        ..LoadOptions::default()
    };
    for name in ["tiny-sd", "tiny-sdxl"] {
        let batched = load_in(name, BackendRequest::Cpu, Precision::F32);
        let one_by_one = load_with(name, BackendRequest::Cpu, Precision::F32, sequential);
        assert!(one_by_one.info.placement.sequential_cfg);
        let request = GenerateRequest {
            negative_prompt: "blurry".into(),
            steps: 3,
            width: 32,
            height: 32,
            batch: 2,
            noise: InitialNoise::Seed(11),
            ..GenerateRequest::new("a red barn")
        };
        let run = |pipe: &Pipeline| {
            pipe.generate(&request, &mut |_| {}, &CancelToken::new())
                .unwrap()
        };
        let (a, b) = (run(&batched), run(&one_by_one));
        for (x, y) in a.images.iter().zip(&b.images) {
            let worst = x
                .float_image
                .iter()
                .zip(&y.float_image)
                .map(|(p, q)| (p - q).abs())
                .fold(0f32, f32::max);
            assert!(worst <= 1e-5, "{name}: sequential differs by {worst:e}");
        }
        check_generations_of(
            &one_by_one,
            name,
            image_atol(name),
            Some(&["generate.euler.neg"]),
        );
    }
}

/// Tiled VAE decoding and encoding (`LoadOptions::vae_tiling`) make what diffusers makes after
/// `enable_tiling()`, on inputs of several tiles each way (tiny-sd's VAE tiles are 16 pixels, 8
/// latents); the plain output differs by far more, so the tiles really ran.
#[test]
fn tiled_vae_matches_diffusers_tiled_vae_on_cpu() {
    check_tiled_vae(BackendRequest::Cpu);
}

#[test]
fn tiled_vae_matches_diffusers_tiled_vae_on_vulkan() {
    if vulkan_or_skip() {
        check_tiled_vae(BackendRequest::Vulkan);
    }
}

fn check_tiled_vae(backend: BackendRequest) {
    let mut r = Reference::open("tiny-sd-vae-tiling");
    let latents = r.get("latents");
    let rgb = r.get("rgb");
    let picture = sdbench_diffusion::io::image::RgbImage {
        width: 28,
        height: 40,
        pixels: rgb.iter().map(|&v| v as u8).collect(),
    };
    // The VAE's own tiles (diffusers' `enable_tiling()`), and the minimal profile's half-size
    // ones (diffusers with `tile_sample_min_size` and `tile_latent_min_size` halved).
    for (small_vae_tiles, name) in [(false, "tiled"), (true, "half")] {
        let tiled = LoadOptions {
            vae_encoder: true,
            vae_tiling: true,
            small_vae_tiles,
            ..LoadOptions::default()
        };
        let pipe = load_with("tiny-sd", backend, Precision::F32, tiled);
        let image = pipe
            .sd()
            .unwrap()
            .run_vae_decode(&latents, [1, 4, 20, 14])
            .unwrap();
        let key = format!("image.{name}");
        let atol = component_atol("tiny-sd-vae-tiling", &key);
        assert_close(&format!("{name} vae decode"), &image, &r.get(&key), atol);
        let (plain_gap, _) = common::max_abs_diff(&image, &r.get("image.plain"));
        assert!(
            plain_gap > 100.0 * atol,
            "{name}: tiling changed nothing: {plain_gap:e}"
        );
        // 20x14 latents in tiles of 8 (starting every 6) or 4 (every 3).
        let tiles = if small_vae_tiles { 7 * 5 } else { 4 * 3 };
        assert_eq!(pipe.decode_tile_count(28, 40), tiles, "{name}");

        let mean = pipe.sd().unwrap().run_vae_encode(&picture).unwrap();
        let key = format!("mean.{name}");
        let atol = component_atol("tiny-sd-vae-tiling", &key);
        assert_close(&format!("{name} vae encode"), &mean, &r.get(&key), atol);
        let (plain_gap, _) = common::max_abs_diff(&mean, &r.get("mean.plain"));
        assert!(
            plain_gap > 100.0 * atol,
            "{name}: tiling changed nothing: {plain_gap:e}"
        );
    }
    // Without tiling, and no buffer limit on these sizes: one piece.
    let plain = load_with("tiny-sd", backend, Precision::F32, LoadOptions::default());
    assert_eq!(plain.decode_tile_count(28, 40), 1);
}

/// The `balanced` memory profile on the device (text encoders on the CPU, the allocator's pooled
/// memory released between denoising and decoding) still tracks diffusers.
#[test]
fn the_balanced_memory_profile_tracks_diffusers_on_vulkan() {
    if vulkan_or_skip() {
        let options = MemoryProfile::Balanced.load_options(LoadOptions::default());
        let pipe = load_with("tiny-sd", BackendRequest::Vulkan, Precision::F32, options);
        let p = pipe.info.placement;
        assert!(p.text_encoders_on_cpu && p.release_memory_between_stages);
        check_generations_of(
            &pipe,
            "tiny-sd",
            image_atol("tiny-sd"),
            Some(&["generate.euler.neg"]),
        );
    }
}

/// `LoadOptions::denoiser_offload` (the `low` profile): the UNet's weights leave the device while the
/// VAE decodes, and come back for the next image, which is still what diffusers makes.
#[test]
fn the_unet_leaves_the_device_while_the_vae_decodes() {
    if vulkan_or_skip() {
        let options = LoadOptions {
            denoiser_offload: true,
            ..LoadOptions::default()
        };
        let pipe = load_with("tiny-sd", BackendRequest::Vulkan, Precision::F32, options);
        let loaded = pipe.device.allocator_memory().unwrap().in_use;
        // Two generations: the second brings the UNet back to the device.
        check_generations_of(
            &pipe,
            "tiny-sd",
            image_atol("tiny-sd"),
            Some(&["generate.euler.neg", "generate.euler.noneg"]),
        );
        let after = pipe.device.allocator_memory().unwrap().in_use;
        let unet_bytes = pipe.parameter_counts().denoiser as u64 * 4;
        assert!(
            after + unet_bytes * 9 / 10 <= loaded,
            "the UNet's {unet_bytes} bytes did not leave the device: {loaded} -> {after}"
        );
    }
}

/// Peak signal-to-noise ratio of `b` against `a`, both on the [0, 1] scale.
fn psnr(a: &[f32], b: &[f32]) -> f64 {
    let mse = a
        .iter()
        .zip(b)
        .map(|(x, y)| ((x - y) as f64).powi(2))
        .sum::<f64>()
        / a.len() as f64;
    10.0 * (1.0 / mse.max(1e-20)).log10()
}

/// Int8 UNet weights (the `minimal` profile's W8A16) against the same run with the UNet's weights
/// in the run's precision, on every tiny pipeline: the images stay within `INT8_MIN_PSNR` of it,
/// and the UNet's weights take about a byte each. f16 activations on the device; f32 on
/// the CPU. Observed: 54 to 64 dB.
const INT8_MIN_PSNR: f64 = 40.0;

/// `max_share`: the most the int8 weights may hold of the plain ones' bytes.
fn check_int8_denoiser(
    backend: BackendRequest,
    precision: Precision,
    models: &[&str],
    max_share: f64,
) {
    let int8 = LoadOptions {
        denoiser_int8: true,
        ..LoadOptions::default()
    };
    for &name in models {
        let plain = load_in(name, backend, precision);
        let quantized = load_with(name, backend, precision, int8);
        assert!(quantized.info.placement.denoiser_int8);
        let request = GenerateRequest {
            negative_prompt: "blurry".into(),
            steps: 4,
            width: 32,
            height: 32,
            noise: InitialNoise::Seed(5),
            ..GenerateRequest::new("a red barn")
        };
        let run = |pipe: &Pipeline| {
            pipe.generate(&request, &mut |_| {}, &CancelToken::new())
                .unwrap()
        };
        let (a, b) = (run(&plain), run(&quantized));
        let db = psnr(&a.images[0].float_image, &b.images[0].float_image);
        eprintln!(
            "{name} {backend:?} {}: int8 denoiser PSNR {db:.1} dB",
            precision.name()
        );
        assert!(
            (INT8_MIN_PSNR..200.0).contains(&db),
            "{name}: int8 weights give {db:.1} dB (at least {INT8_MIN_PSNR} expected; 200+ means nothing was quantized)"
        );
        let (p, q) = (
            plain.denoiser_weight_bytes(),
            quantized.denoiser_weight_bytes(),
        );
        eprintln!("{name}: denoiser weights {p} bytes, {q} as int8");
        // A byte per quantized weight, instead of 2 (f16) or 4 (f32); the kept layers, norms
        // (f32 always), biases and per-channel f32 scales make up the rest, a larger share in
        // the tiny models than in real ones.
        assert!(
            q as f64 <= p as f64 * max_share,
            "{name}: the int8 denoiser holds {q} bytes, the plain one {p} (at most {max_share} of it expected)"
        );
    }
}

#[test]
fn int8_unet_weights_stay_close_to_full_precision_on_cpu() {
    // 1.3 bytes a weight against f32's 4.
    check_int8_denoiser(BackendRequest::Cpu, Precision::F32, common::tiny(), 0.325);
}

/// The DiTs' int8 transformers (`minimal`) the same way, on the CPU. Their tiny widths (16 to 64)
/// leave a large share to the per-channel scales, biases and the layers kept in f32: observed
/// 48% of the f32 bytes for SD3 (about 66% by count with its modulations kept in f32, as they
/// were), 51% for FLUX.2 klein, 76% for Z-Image (its embedders are most of its tiny transformer).
#[test]
fn int8_transformer_weights_stay_close_to_full_precision_on_cpu() {
    let cpu = BackendRequest::Cpu;
    check_int8_denoiser(cpu, Precision::F32, &["tiny-sd3", "tiny-flux2-klein"], 0.55);
    check_int8_denoiser(cpu, Precision::F32, &["tiny-zimage"], 0.8);
}

/// On the device, the f16 dequantization on SD's and SDXL's shapes (lavapipe takes a minute for
/// all four tiny models; the CPU test covers each model's layers).
#[test]
fn int8_unet_weights_stay_close_to_f16_on_vulkan() {
    if vulkan_or_skip() {
        check_int8_denoiser(
            BackendRequest::Vulkan,
            Precision::F16,
            &["tiny-sd", "tiny-sdxl"],
            0.65, // 1.3 bytes a weight against f16's 2
        );
    }
}

/// A component whose bound was never measured is refused with the command that measures it, not
/// given a default.
#[test]
fn a_component_without_a_measured_bound_names_the_script_that_measures_it() {
    let err = parity::component_tolerance(&common::fixtures(), "tiny-sd", "unet.unmeasured")
        .expect_err("no bound was measured for this key");
    let message = err.to_string();
    assert!(
        message.contains("unet.unmeasured")
            && message.contains("measure_f32_rounding.py --components"),
        "{message}"
    );
}
