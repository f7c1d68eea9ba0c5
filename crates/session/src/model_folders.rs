//! Other apps' model folders: where ComfyUI, AUTOMATIC1111/Forge, InvokeAI and
//! stable-diffusion.cpp keep models by default, and folders the person adds (`--models-dir`,
//! `SDBENCH_MODELS_DIRS`). Scanning finds weights files and diffusers folders in them; nothing is
//! copied, moved or opened for writing.

use std::path::{Path, PathBuf};

/// A folder to look for models in, and the app it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppFolder {
    /// "ComfyUI", "AUTOMATIC1111", "Forge", "InvokeAI", "stable-diffusion.cpp", or "added folder".
    pub app: &'static str,
    pub path: PathBuf,
}

/// Each app's default model folder, relative to the home folder (the portable and desktop
/// installs' as well as the git clones').
const USUAL: &[(&str, &str)] = &[
    ("ComfyUI", "ComfyUI/models"),
    ("ComfyUI", "comfy/ComfyUI/models"),
    ("ComfyUI", "Documents/ComfyUI/models"),
    ("ComfyUI", "ComfyUI_windows_portable/ComfyUI/models"),
    (
        "AUTOMATIC1111",
        "stable-diffusion-webui/models/Stable-diffusion",
    ),
    (
        "Forge",
        "stable-diffusion-webui-forge/models/Stable-diffusion",
    ),
    (
        "Forge",
        "webui_forge_cu121_torch231/webui/models/Stable-diffusion",
    ),
    ("InvokeAI", "invokeai/models"),
    ("stable-diffusion.cpp", "stable-diffusion.cpp/models"),
];

/// The environment variable that adds folders, separated as `PATH` is (`:`, `;` on Windows).
pub const MODELS_DIRS_VAR: &str = "SDBENCH_MODELS_DIRS";

/// The folders that exist of: each app's usual one under `home`, `INVOKEAI_ROOT`'s models, and
/// `added` (the person's, listed first, in order).
pub fn app_folders(
    home: Option<&Path>,
    invokeai_root: Option<&Path>,
    added: &[PathBuf],
) -> Vec<AppFolder> {
    let mut folders: Vec<AppFolder> = added
        .iter()
        .map(|path| AppFolder {
            app: "added folder",
            path: path.clone(),
        })
        .collect();
    if let Some(root) = invokeai_root {
        folders.push(AppFolder {
            app: "InvokeAI",
            path: root.join("models"),
        });
    }
    if let Some(home) = home {
        folders.extend(USUAL.iter().map(|(app, rel)| AppFolder {
            app,
            path: home.join(rel),
        }));
    }
    let mut seen = Vec::new();
    folders.retain(|f| {
        let fresh = f.path.is_dir() && !seen.contains(&f.path);
        seen.push(f.path.clone());
        fresh
    });
    folders
}

/// `app_folders` from this process's environment (`HOME` or `USERPROFILE`, `INVOKEAI_ROOT`,
/// `SDBENCH_MODELS_DIRS`) plus `added`.
pub fn from_environment(added: &[PathBuf]) -> Vec<AppFolder> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let home = var("HOME")
        .or_else(|| var("USERPROFILE"))
        .map(PathBuf::from);
    let invokeai = var("INVOKEAI_ROOT").map(PathBuf::from);
    let mut all = added.to_vec();
    if let Some(dirs) = var(MODELS_DIRS_VAR) {
        all.extend(std::env::split_paths(&dirs));
    }
    app_folders(home.as_deref(), invokeai.as_deref(), &all)
}

/// What a scan finds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// A weights file: `.safetensors`, `.gguf`, or a pickle (`.ckpt`, `.pt`, `.pth`), listed
    /// so the person learns why it is not run.
    File(PathBuf),
    /// A diffusers folder (it has a `model_index.json`).
    Folder(PathBuf),
}

/// Folders below a root that a scan enters (ComfyUI's `models/checkpoints/sd15/x.safetensors` is
/// three down; InvokeAI's `models/<base>/<type>/<name>/` four).
const MAX_DEPTH: usize = 5;
/// Entries a scan reports at most per root: a mistaken root (a whole disk) stays quick.
const MAX_FOUND: usize = 2_000;
/// Directory entries a scan reads at most per root.
const MAX_ENTRIES: usize = 100_000;

/// Folders of things that are not models a run can start from (adapters, upscalers, and the
/// components ComfyUI keeps apart: a text encoder or a VAE does not run alone), by name, any case.
const NOT_MODELS: &[&str] = &[
    "loras",
    "lora",
    "lycoris",
    "embeddings",
    "embedding",
    "hypernetworks",
    "controlnet",
    "t2i_adapter",
    "ipadapter",
    "ip_adapter",
    "clip_vision",
    "style_models",
    "gligen",
    "photomaker",
    "upscale_models",
    "esrgan",
    "realesrgan",
    "vae_approx",
    "vae",
    "text_encoders",
    "clip",
];

/// Weights files and diffusers folders under `root`, in path order; a diffusers folder's own
/// files are not listed apart, nor folders of adapters and separate components (`NOT_MODELS`).
/// Unreadable folders are skipped.
pub fn scan(root: &Path) -> Vec<Found> {
    let mut found = Vec::new();
    let mut entries = 0;
    let mut stack = vec![(root.to_path_buf(), 0)];
    while let Some((dir, depth)) = stack.pop() {
        if dir.join("model_index.json").is_file() {
            found.push(Found::Folder(dir));
            continue;
        }
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut children: Vec<PathBuf> = read.flatten().map(|e| e.path()).collect();
        entries += children.len();
        children.sort();
        for path in children.into_iter().rev() {
            if path.is_dir() {
                let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
                let skipped = NOT_MODELS.iter().any(|n| n.eq_ignore_ascii_case(name));
                if depth < MAX_DEPTH && !skipped {
                    stack.push((path, depth + 1));
                }
            } else if is_weights_file(&path) {
                found.push(Found::File(path));
            }
        }
        if found.len() >= MAX_FOUND || entries >= MAX_ENTRIES {
            break;
        }
    }
    found.truncate(MAX_FOUND);
    found.sort_by(|a, b| path_of(a).cmp(path_of(b)));
    found
}

/// Folders of an app's model root where a transformer file's parts are kept (ComfyUI's
/// `text_encoders/`, its older `clip/`, and `vae/`).
const PART_FOLDERS: &[&str] = &["text_encoders", "clip", "vae"];
/// Folders that hold transformer files kept apart from their parts (ComfyUI's, and its older
/// name for them).
const DENOISER_FOLDERS: &[&str] = &["diffusion_models", "unet"];

/// The weights files a transformer file kept apart from its parts may run with: those under the
/// part folders (`PART_FOLDERS`) of the model root whose `diffusion_models/` (or `unet/`) holds
/// it, up to three levels above it; none for a file elsewhere. In path order, at most
/// `MAX_FOUND`.
pub fn part_candidates(file: &Path) -> Vec<PathBuf> {
    let Some(root) = file
        .ancestors()
        .skip(1)
        .take(3)
        .find(|dir| {
            let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
            DENOISER_FOLDERS
                .iter()
                .any(|d| d.eq_ignore_ascii_case(name))
        })
        .and_then(Path::parent)
    else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(root) else {
        return found;
    };
    let mut stack: Vec<(PathBuf, usize)> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            p.is_dir() && PART_FOLDERS.iter().any(|f| f.eq_ignore_ascii_case(name))
        })
        .map(|p| (p, 0))
        .collect();
    while let Some((dir, depth)) = stack.pop() {
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        for path in read.flatten().map(|e| e.path()) {
            if path.is_dir() && depth < 2 {
                stack.push((path, depth + 1));
            } else if is_weights_file(&path) && found.len() < MAX_FOUND {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

fn path_of(found: &Found) -> &Path {
    match found {
        Found::File(p) | Found::Folder(p) => p,
    }
}

fn is_weights_file(path: &Path) -> bool {
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let Some(extension) = extension else {
        return false;
    };
    // A sharded component's parts belong to a folder, not a model of their own.
    let shard = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.contains("-of-0"));
    !shard
        && matches!(
            extension.as_str(),
            "safetensors" | "gguf" | "ckpt" | "pt" | "pth"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b"x").unwrap();
    }

    #[test]
    fn finds_each_apps_folders_and_what_they_hold() {
        let home = tempfile::tempdir().unwrap();
        let home = home.path();
        // ComfyUI's layout, A1111's, and a diffusers folder inside InvokeAI's.
        touch(&home.join("ComfyUI/models/checkpoints/sd15/v1-5.safetensors"));
        touch(&home.join("ComfyUI/models/diffusion_models/flux-2-klein-4b-Q4_K.gguf"));
        touch(&home.join("ComfyUI/models/vae/ae.safetensors"));
        touch(&home.join("ComfyUI/models/loras/style.safetensors"));
        touch(&home.join("ComfyUI/models/checkpoints/old.ckpt"));
        touch(&home.join("ComfyUI/models/checkpoints/notes.txt"));
        touch(&home.join("stable-diffusion-webui/models/Stable-diffusion/dream.safetensors"));
        let invoke = home.join("invoke");
        touch(&invoke.join("models/sdxl/main/juggernaut/model_index.json"));
        touch(&invoke.join(
            "models/sdxl/main/juggernaut/unet/diffusion_pytorch_model-00001-of-00002.safetensors",
        ));
        let added = home.join("mine");
        touch(&added.join("a.gguf"));
        let missing = home.join("not-there");

        let folders = app_folders(Some(home), Some(&invoke), &[added.clone(), missing]);
        let apps: Vec<(&str, PathBuf)> = folders.iter().map(|f| (f.app, f.path.clone())).collect();
        assert_eq!(
            apps,
            vec![
                ("added folder", added.clone()),
                ("InvokeAI", invoke.join("models")),
                ("ComfyUI", home.join("ComfyUI/models")),
                (
                    "AUTOMATIC1111",
                    home.join("stable-diffusion-webui/models/Stable-diffusion")
                ),
            ],
            "only folders that exist, the person's first"
        );

        let comfy = scan(&home.join("ComfyUI/models"));
        assert_eq!(
            comfy,
            vec![
                Found::File(home.join("ComfyUI/models/checkpoints/old.ckpt")),
                Found::File(home.join("ComfyUI/models/checkpoints/sd15/v1-5.safetensors")),
                Found::File(home.join("ComfyUI/models/diffusion_models/flux-2-klein-4b-Q4_K.gguf")),
            ],
            "a VAE or a LoRA is not a model to run"
        );
        // A diffusers folder is one model: its shards are not listed apart.
        assert_eq!(
            scan(&invoke.join("models")),
            vec![Found::Folder(invoke.join("models/sdxl/main/juggernaut"))]
        );
    }

    #[test]
    fn a_transformer_files_parts_are_looked_for_in_its_apps_part_folders() {
        let root = tempfile::tempdir().unwrap();
        let models = root.path().join("ComfyUI/models");
        let file = models.join("diffusion_models/flux2/klein.safetensors");
        for path in [
            &file,
            &models.join("text_encoders/qwen_3_4b.safetensors"),
            &models.join("clip/qwen_3_4b-Q8_0.gguf"),
            &models.join("vae/FLUX2/flux2-vae.safetensors"),
            &models.join("vae/notes.txt"),
            &models.join("loras/style.safetensors"),
            &models.join("text_encoders/1/2/3/too-deep.safetensors"),
        ] {
            touch(path);
        }
        assert_eq!(
            part_candidates(&file),
            vec![
                models.join("clip/qwen_3_4b-Q8_0.gguf"),
                models.join("text_encoders/qwen_3_4b.safetensors"),
                models.join("vae/FLUX2/flux2-vae.safetensors"),
            ]
        );
        // ComfyUI's older `unet/` too; a file in no such folder has none.
        let unet = models.join("unet/klein.safetensors");
        touch(&unet);
        assert_eq!(part_candidates(&unet).len(), 3);
        let elsewhere = root.path().join("downloads/klein.safetensors");
        touch(&elsewhere);
        assert!(part_candidates(&elsewhere).is_empty());
    }

    #[test]
    fn a_scan_stays_within_its_depth() {
        let root = tempfile::tempdir().unwrap();
        let deep =
            (0..=MAX_DEPTH + 1).fold(root.path().to_path_buf(), |p, i| p.join(i.to_string()));
        touch(&deep.join("too-deep.safetensors"));
        touch(&root.path().join("0/1/shallow.safetensors"));
        assert_eq!(
            scan(root.path()),
            vec![Found::File(root.path().join("0/1/shallow.safetensors"))]
        );
    }
}
