//! The family registry: every model family the engine runs, one line each. A family is one
//! folder under `families/` that exports a `FamilyDescriptor`; generic code finds a model's family
//! here (by `model_index.json`'s `_class_name`, a preset, or the family that reads single files)
//! and never names one.

use std::path::Path;

use serde_json::{Map, Value};

use crate::error::{DiffusionError, Result};
use crate::families::{flux1, flux2, sd, sd3, zimage};
use crate::io::tensor_file::{check_model_file, describe_names, TensorFile};
use crate::pipeline::family::WorkloadSpec;
use crate::pipeline::family::{Component, FamilyDescriptor, Preset};
use crate::pipeline::{folder_index, ModelSource};

/// The families, in the order front ends list them.
pub static FAMILIES: &[&FamilyDescriptor] = &[
    &sd::FAMILY,
    &flux2::FAMILY,
    &zimage::FAMILY,
    &sd3::FAMILY,
    &flux1::FAMILY,
];

impl Preset {
    /// Every family's presets, in the registry's order.
    pub fn all() -> impl Iterator<Item = Preset> {
        FAMILIES.iter().flat_map(|d| d.presets.iter().copied())
    }

    /// The preset called `name`, if any.
    pub fn named(name: &str) -> Option<Preset> {
        Preset::all().find(|p| p.name() == name)
    }
}

/// The preset `synthetic` alone names: SD1.5 with generated weights, the standard workload's model.
pub const PLAIN_SYNTHETIC: Preset = Preset::SD15;

/// The workload a benchmark runs when nothing names one, and whose score is "the" SD Bench score.
pub static STANDARD_WORKLOAD: &WorkloadSpec = &sd::workloads::SD15_512_30;

/// Every family's standard workloads, in the registry's order (the standard one first).
pub fn standard_workloads() -> impl Iterator<Item = &'static WorkloadSpec> {
    FAMILIES
        .iter()
        .flat_map(|family| family.workloads.iter().copied())
}

/// The family whose pipeline loads `folder` (by the `_class_name` its `model_index.json`
/// names), and that `model_index.json`. A class no family claims is refused by name.
pub fn family_of_folder(folder: &Path) -> Result<(&'static FamilyDescriptor, Map<String, Value>)> {
    let index = folder_index(folder)?;
    match family_of_index(&index) {
        Ok(descriptor) => Ok((descriptor, index)),
        Err(problem) => Err(DiffusionError::ModelFolder {
            path: folder.to_path_buf(),
            problem,
        }),
    }
}

/// The family that runs the pipeline a `model_index.json` describes, by its `_class_name`; the
/// refusal of a class no family claims names the ones SD Bench runs (worded to follow the
/// folder or repository it is about: "holds a `QwenImagePipeline` ...").
pub fn family_of_index(
    index: &Map<String, Value>,
) -> std::result::Result<&'static FamilyDescriptor, String> {
    let Some(class) = index.get("_class_name").and_then(Value::as_str) else {
        return Err(format!(
            "has a model_index.json that names no pipeline (`_class_name`); SD Bench runs {}",
            described_classes()
        ));
    };
    FAMILIES
        .iter()
        .copied()
        .find(|d| d.claims(class))
        .ok_or_else(|| {
            format!(
                "holds a `{class}` (model_index.json); SD Bench runs {}",
                described_classes()
            )
        })
}

/// The components of the pipeline a `model_index.json` describes that its family reads, in the
/// family's order: what a download fetches of its repository. One the family requires that the
/// index does not list is refused by name; one the index lists as `[null, null]` is absent, as
/// diffusers reads it.
pub fn components_to_fetch(
    index: &Map<String, Value>,
) -> std::result::Result<Vec<&'static Component>, String> {
    let family = family_of_index(index)?;
    let listed = |name: &str| {
        index
            .get(name)
            .and_then(Value::as_array)
            .is_some_and(|parts| parts.iter().any(|p| !p.is_null()))
    };
    let mut wanted = Vec::new();
    let mut lacking = Vec::new();
    for component in family.components {
        if listed(component.name) {
            wanted.push(component);
        } else if !component.optional {
            lacking.push(component.name);
        }
    }
    if !lacking.is_empty() {
        return Err(format!(
            "lists no {} in its model_index.json, which a {} pipeline reads",
            lacking.join(", "),
            family.name
        ));
    }
    Ok(wanted)
}

/// The family that loads `source`: a folder's by its `model_index.json`, a preset's by its
/// architecture, a file given with a folder (`--model-config`) the folder's (refused when the
/// file is another family's), a model file alone the family that claims it (`file_owner`).
pub fn family_of(source: &ModelSource) -> Result<&'static FamilyDescriptor> {
    match source {
        ModelSource::Folder(folder) => Ok(family_of_folder(folder)?.0),
        ModelSource::Synthetic(preset) => Ok(preset.family().descriptor()),
        ModelSource::Checkpoint {
            config: Some(folder),
            file,
            ..
        } => {
            let family = family_of_folder(folder)?.0;
            // A family's refusal of the file alone (sizes no built-in config has) does not apply:
            // the folder's configs describe it.
            if let Ok(Some(owner)) = file_owner(file) {
                if owner.family() != family {
                    return Err(DiffusionError::Weights {
                        path: file.clone(),
                        problem: format!(
                            "is a {} file, but its configs (--model-config {}) describe a {} model",
                            owner.family().name,
                            folder.display(),
                            family.name
                        ),
                    });
                }
            }
            Ok(family)
        }
        ModelSource::Checkpoint { file, .. } => match file_owner(file)? {
            Some(owner) => Ok(owner.family()),
            None => Err(DiffusionError::Weights {
                path: file.clone(),
                problem: unclaimed(file)?,
            }),
        },
    }
}

/// Who reads a model file given alone.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FileOwner {
    /// A whole single-file checkpoint of this family (its text encoders and VAE inside).
    Checkpoint(&'static FamilyDescriptor),
    /// A denoiser kept on its own, read with this preset's configs.
    Denoiser(Preset),
}

impl FileOwner {
    pub fn family(self) -> &'static FamilyDescriptor {
        match self {
            FileOwner::Checkpoint(family) => family,
            FileOwner::Denoiser(preset) => preset.family().descriptor(),
        }
    }
}

/// The family that claims a model file, asking each (its checkpoints, its denoiser files):
/// `None` when none does; an error when one refuses it as its own of a kind it does not run, or
/// when two claim it.
pub fn file_owner(file: &Path) -> Result<Option<FileOwner>> {
    check_model_file(file)?;
    let mut owners = Vec::new();
    for family in FAMILIES {
        if let Some(claims) = family.checkpoints {
            if claims(file)? {
                owners.push(FileOwner::Checkpoint(family));
            }
        }
        if let Some(files) = family.denoiser_files {
            if let Some(preset) = (files.preset)(file)? {
                owners.push(FileOwner::Denoiser(preset));
            }
        }
    }
    match owners.as_slice() {
        [] => Ok(None),
        [owner] => Ok(Some(*owner)),
        _ => Err(DiffusionError::Weights {
            path: file.to_path_buf(),
            problem: format!(
                "is claimed by more than one model family ({}): name its diffusers folder with --model-config",
                owners.iter().map(|o| o.family().name).collect::<Vec<_>>().join(", ")
            ),
        }),
    }
}

/// Why a file no family claims is refused: what it holds, and what SD Bench reads as files.
fn unclaimed(file: &Path) -> Result<String> {
    let holds = describe_names(&TensorFile::open(file)?);
    let mut read: Vec<String> = Vec::new();
    for family in FAMILIES {
        if family.checkpoints.is_some() {
            let what: Vec<&str> = family.classes.iter().map(|(_, what)| *what).collect();
            read.push(format!("{} checkpoints", what.join(", ")));
        }
        if family.denoiser_files.is_some() {
            read.push(format!("{} transformer files", family.name));
        }
    }
    Ok(format!(
        "holds {holds}, which no model family reads; as model files of their own SD Bench reads {}",
        read.join(", ")
    ))
}

/// "StableDiffusionPipeline (SD1.x, SD2.x), ... and Flux2KleinPipeline (FLUX.2 klein) models".
pub fn described_classes() -> String {
    let classes: Vec<String> = FAMILIES
        .iter()
        .flat_map(|d| d.classes.iter())
        .map(|(class, what)| format!("{class} ({what})"))
        .collect();
    match classes.split_last() {
        Some((last, [])) => format!("{last} models"),
        Some((last, rest)) => format!("{} and {last} models", rest.join(", ")),
        None => "no models".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::weights::Precision;
    use crate::pipeline::family::Preset;
    use crate::pipeline::memory_need::{estimate, ModelSize, RequestShape};
    use crate::pipeline::ComponentFiles;
    use crate::pipeline::{GenerateRequest, LoadOptions, Placement};
    use crate::scheduler::SchedulerKind;

    /// Every family has each part a generic caller relies on, and no two claim the same thing.
    #[test]
    fn every_family_describes_each_part() {
        let mut classes = Vec::new();
        let mut presets = Vec::new();
        let mut architectures = Vec::new();
        for family in FAMILIES {
            assert!(!family.name.is_empty());
            assert!(
                !family.classes.is_empty(),
                "{family:?} claims no pipeline class"
            );
            assert!(
                !family.schedulers.is_empty(),
                "{family:?} runs no scheduler"
            );
            // No family guides at 0; a family that guides at 1.5 (the rule is above 0 or
            // above 1) guides at every larger scale. One whose scale is an input of the model
            // (FLUX.1 [dev]'s) never runs a second pass.
            assert!(!(family.guided)(0.0), "{family:?}");
            if (family.guided)(1.5) {
                assert!(
                    [2.0, 7.5, 30.0].iter().all(|&s| (family.guided)(s)),
                    "{family:?}"
                );
            }
            assert!(
                !family.architectures.is_empty(),
                "{family:?} runs no architecture"
            );
            // Its parity fixtures exist, each with diffusers' generations.
            assert!(
                !family.parity_fixtures.is_empty(),
                "{family:?} has no parity fixture"
            );
            let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
            for name in family.parity_fixtures {
                let (model, _) = crate::parity::fixture_model(name);
                assert!(
                    fixtures.join(model).join("model_index.json").is_file(),
                    "{name}"
                );
                assert!(
                    fixtures.join(format!("{name}.reference.json")).is_file(),
                    "{name}"
                );
            }
            for (class, what) in family.classes {
                assert!(!what.is_empty());
                assert!(!classes.contains(class), "{class} claimed twice");
                classes.push(*class);
            }
            for arch in family.architectures {
                assert_eq!(
                    arch.descriptor(),
                    *family,
                    "{arch} points at another family"
                );
                assert!(!architectures.contains(&arch.name()), "{arch} twice");
                architectures.push(arch.name());
                assert!(arch.usual_side() % 64 == 0 && arch.usual_side() >= 256);
                let upstream = (arch.architecture().upstream)();
                assert!(upstream.denoiser > 0 && upstream.vae_decoder > 0, "{arch}");
                // Its memory coefficients give a need that grows with the image.
                let size = ModelSize::upstream(*arch, arch.usual_side());
                let placement = Placement::for_model(
                    *arch,
                    &crate::pipeline::memory_test_support::vae(),
                    Precision::F16,
                    &LoadOptions::default(),
                );
                let small = estimate(&size, &placement, &RequestShape::image(512, 512));
                let large = estimate(&size, &placement, &RequestShape::image(1024, 1024));
                assert!(large.denoise > small.denoise, "{arch}: {small:?} {large:?}");
            }
            for preset in family.presets {
                assert_eq!(preset.family().descriptor(), *family, "{preset}");
                assert!(family.architectures.contains(&preset.family()), "{preset}");
                assert!(!presets.contains(&preset.name()), "{preset} twice");
                assert!(preset.repository().contains('/'));
                assert!(!preset.short_label().is_empty() && !preset.long_label().is_empty());
                assert!(preset.step_cost() >= 1.0, "{preset}: SD1.5's is the least");
                presets.push(preset.name());
                assert_eq!(Preset::named(preset.name()), Some(*preset));
                assert_eq!(
                    family_of(&ModelSource::Synthetic(*preset)).unwrap(),
                    *family
                );
            }
        }
        // Every scheduler steps some family's models.
        for kind in SchedulerKind::ALL {
            assert!(
                FAMILIES.iter().any(|f| f.schedulers.contains(&kind)),
                "{} belongs to no family",
                kind.name()
            );
        }
        assert!(FAMILIES.iter().any(|d| d.checkpoints.is_some()));
    }

    /// A family that says it takes reference pictures takes one; the others refuse it.
    #[test]
    fn the_reference_pictures_flag_is_what_each_family_checks() {
        for family in FAMILIES {
            let request = GenerateRequest {
                reference_images: vec![crate::io::image::RgbImage {
                    width: 64,
                    height: 64,
                    pixels: vec![128; 64 * 64 * 3],
                }],
                ..GenerateRequest::new("a lighthouse")
            };
            assert_eq!(
                family.check_request(&request).is_ok(),
                family.reference_pictures,
                "{family:?}"
            );
        }
    }

    /// Each workload runs on its family's preset with a scheduler and sizes the family takes,
    /// under a name of its own; the standard one comes first, on the plain synthetic preset.
    #[test]
    fn every_workload_is_one_its_family_runs() {
        let mut names = Vec::new();
        for family in FAMILIES {
            for w in family.workloads {
                assert!(family.presets.contains(&w.preset), "{}", w.name);
                assert!(family.schedulers.contains(&w.scheduler), "{}", w.name);
                assert!(w.version >= 1 && w.steps >= 1, "{}", w.name);
                assert!(!w.prompts.pairs().is_empty(), "{}", w.name);
                let request = GenerateRequest {
                    width: w.width,
                    height: w.height,
                    steps: w.steps,
                    scheduler: Some(w.scheduler),
                    guidance_scale: w.guidance,
                    ..GenerateRequest::new(w.prompts.pairs()[0].0)
                };
                family.check_request(&request).unwrap();
                // Named `<model>-<side>-<steps>`.
                let suffix = format!("-{}-{}", w.width.max(w.height), w.steps);
                assert!(w.name.ends_with(&suffix), "{}", w.name);
                assert!(!names.contains(&w.name), "{} twice", w.name);
                names.push(w.name);
            }
        }
        assert_eq!(standard_workloads().next(), Some(STANDARD_WORKLOAD));
        assert_eq!(STANDARD_WORKLOAD.preset, PLAIN_SYNTHETIC);
        assert_eq!(standard_workloads().count(), names.len());
    }

    /// Each family lists each component once, and every parity fixture of its holds every
    /// component its model_index.json lists: the files each kind needs and a network's weights.
    #[test]
    fn every_familys_components_are_in_its_fixtures() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        for family in FAMILIES {
            let names: Vec<&str> = family.components.iter().map(|c| c.name).collect();
            for (i, name) in names.iter().enumerate() {
                assert!(!names[..i].contains(name), "{family:?}: {name} twice");
            }
            assert!(
                family
                    .components
                    .iter()
                    .any(|c| !c.optional && c.kind.has_weights()),
                "{family:?} lists no network"
            );
            for fixture in family.parity_fixtures {
                let (model, _) = crate::parity::fixture_model(fixture);
                let folder = fixtures.join(model);
                let index = folder_index(&folder).unwrap();
                let wanted = components_to_fetch(&index).unwrap();
                assert!(wanted.len() >= 4, "{fixture}: {wanted:?}");
                for component in wanted {
                    let dir = folder.join(component.name);
                    for file in component.kind.needed_files() {
                        assert!(
                            dir.join(file).is_file(),
                            "{fixture}: {}/{file}",
                            component.name
                        );
                    }
                    if component.kind.has_weights() {
                        let weights = std::fs::read_dir(&dir)
                            .unwrap()
                            .flatten()
                            .any(|e| e.file_name().to_string_lossy().ends_with(".safetensors"));
                        assert!(weights, "{fixture}: {} has no weights", component.name);
                    }
                }
            }
        }
    }

    /// A model_index.json lacking a component its family requires is refused naming it; one
    /// listed as `[null, null]` (SD's safety checker in the fixtures) is absent, and components
    /// the family does not read are not fetched.
    #[test]
    fn components_to_fetch_follow_the_family_and_the_index() {
        let index = |json: &str| -> Map<String, Value> { serde_json::from_str(json).unwrap() };
        let sd = index(
            r#"{"_class_name": "StableDiffusionPipeline", "safety_checker": ["stable_diffusion", "StableDiffusionSafetyChecker"],
                "text_encoder": ["transformers", "CLIPTextModel"], "tokenizer": ["transformers", "CLIPTokenizer"],
                "text_encoder_2": [null, null], "unet": ["diffusers", "UNet2DConditionModel"],
                "vae": ["diffusers", "AutoencoderKL"], "scheduler": ["diffusers", "PNDMScheduler"]}"#,
        );
        let names: Vec<&str> = components_to_fetch(&sd)
            .unwrap()
            .iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(
            names,
            ["text_encoder", "tokenizer", "unet", "vae", "scheduler"]
        );
        let mut no_unet = sd.clone();
        no_unet.insert("unet".into(), serde_json::json!([null, null]));
        no_unet.remove("vae");
        let err = components_to_fetch(&no_unet).unwrap_err();
        assert!(
            err.contains("unet, vae") && err.contains("Stable Diffusion"),
            "{err}"
        );
        let err =
            components_to_fetch(&index(r#"{"_class_name": "QwenImagePipeline"}"#)).unwrap_err();
        assert!(err.starts_with("holds a `QwenImagePipeline`"), "{err}");
    }

    /// FLUX.1's, FLUX.2's and Z-Image's transformer files are claimed by their own families
    /// (FLUX.1's and FLUX.2's share Black Forest Labs' block names), each refused alone naming
    /// it: their tiny sizes are no built-in preset's.
    #[test]
    fn each_transformer_file_is_claimed_by_its_own_family() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        for (name, family) in [
            (
                "weight-formats/tiny-flux2-klein.bfl-transformer.safetensors",
                "FLUX.2",
            ),
            (
                "weight-formats/tiny-zimage.original-transformer.safetensors",
                "Z-Image",
            ),
            (
                "weight-formats/tiny-flux1-dev.bfl-transformer.safetensors",
                "FLUX.1 transformer of 2 double- and 2 single-stream blocks",
            ),
        ] {
            let err = file_owner(&fixtures.join(name)).unwrap_err().to_string();
            assert!(err.contains(family), "{name}: {err}");
        }
    }

    /// Every model file is claimed by its own family alone: SD's checkpoints (safetensors and
    /// GGUF) by Stable Diffusion, SD3's single files by SD3 (refused alone: their sizes are no
    /// built-in preset's); an SDXL refiner is refused by name, and a file no family claims (a
    /// video model's names) is refused naming what it holds.
    #[test]
    fn each_model_file_is_claimed_by_its_own_family() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let sd = FAMILIES
            .iter()
            .copied()
            .find(|f| f.checkpoints.is_some())
            .unwrap();
        for name in [
            "tiny-sd.ldm.safetensors",
            "tiny-sd2.ldm.safetensors",
            "tiny-sdxl.ldm.safetensors",
            "weight-formats/tiny-sd.ldm.q8_0.gguf",
        ] {
            let owner = file_owner(&fixtures.join(name)).unwrap();
            assert_eq!(owner, Some(FileOwner::Checkpoint(sd)), "{name}");
        }
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, tensors: &[&str]| {
            let path = dir.path().join(name);
            let values = [0.0f32; 2];
            let tensors: Vec<(&str, Vec<usize>, &[f32])> =
                tensors.iter().map(|n| (*n, vec![2], &values[..])).collect();
            crate::io::safetensors::write_f32(&path, &tensors).unwrap();
            path
        };
        let refiner = file(
            "refiner.safetensors",
            &[
                "conditioner.embedders.0.model.transformer.resblocks.0.attn.in_proj_weight",
                "model.diffusion_model.input_blocks.0.0.weight",
            ],
        );
        let err = file_owner(&refiner).unwrap_err().to_string();
        assert!(err.contains("Stable Diffusion XL refiner"), "{err}");
        let sd3 = file(
            "sd3.safetensors",
            &[
                "model.diffusion_model.joint_blocks.0.x_block.attn.qkv.weight",
                "model.diffusion_model.joint_blocks.1.x_block.attn.qkv.weight",
                "text_encoders.clip_g.transformer.text_model.final_layer_norm.weight",
            ],
        );
        let err = file_owner(&sd3).unwrap_err().to_string();
        assert!(
            err.contains("a Stable Diffusion 3 MMDiT of 2 joint blocks")
                && err.contains("--model-config"),
            "{err}"
        );
        // A video model's names: no family's.
        let wan = file(
            "wan.safetensors",
            &[
                "model.diffusion_model.blocks.0.self_attn.q.weight",
                "model.diffusion_model.blocks.1.self_attn.q.weight",
                "model.diffusion_model.text_embedding.0.weight",
            ],
        );
        assert_eq!(file_owner(&wan).unwrap(), None);
        let source = ModelSource::Checkpoint {
            file: wan.clone(),
            config: None,
            parts: ComponentFiles::default(),
        };
        let err = family_of(&source).unwrap_err().to_string();
        for needle in [
            "3 tensors: 2 under model.diffusion_model.blocks, 1 under model.diffusion_model.text_embedding",
            "which no model family reads",
        ] {
            assert!(err.contains(needle), "{needle}: {err}");
        }
        // It says what each family reads as files of their own.
        for family in FAMILIES {
            if family.denoiser_files.is_some() {
                assert!(
                    err.contains(&format!("{} transformer files", family.name)),
                    "{err}"
                );
            }
            for (_, what) in family
                .classes
                .iter()
                .filter(|_| family.checkpoints.is_some())
            {
                assert!(err.contains(what), "{what}: {err}");
            }
        }
    }

    /// A checkpoint given with another family's configs (`--model-config`) is refused naming both.
    #[test]
    fn a_file_with_another_familys_configs_is_refused() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let sd = FAMILIES
            .iter()
            .copied()
            .find(|f| f.checkpoints.is_some())
            .unwrap();
        let flux_folder = fixtures.join("tiny-flux2-klein");
        let mismatch = ModelSource::Checkpoint {
            file: fixtures.join("tiny-sd.ldm.safetensors"),
            config: Some(flux_folder),
            parts: ComponentFiles::default(),
        };
        let err = family_of(&mismatch).unwrap_err().to_string();
        let flux = family_of_folder(&fixtures.join("tiny-flux2-klein"))
            .unwrap()
            .0;
        let expected = [
            format!("is a {} file", sd.name),
            format!("{} model", flux.name),
        ];
        assert!(expected.iter().all(|e| err.contains(e.as_str())), "{err}");
    }

    #[test]
    fn a_class_no_family_claims_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("model_index.json"),
            r#"{"_class_name": "KandinskyV22Pipeline"}"#,
        )
        .unwrap();
        let err = family_of_folder(dir.path()).unwrap_err().to_string();
        assert!(err.contains("KandinskyV22Pipeline"), "{err}");
        for family in FAMILIES {
            for (class, _) in family.classes {
                assert!(err.contains(class), "{err}");
            }
        }
        std::fs::write(dir.path().join("model_index.json"), "{}").unwrap();
        let err = family_of_folder(dir.path()).unwrap_err().to_string();
        assert!(err.contains("names no pipeline"), "{err}");
    }
}
