//! The engine's component lists as the model store reads them: which components of a pipeline a
//! download fetches and a cached snapshot must hold. The hub names no component; this is where
//! the engine's families tell it.

use sdbench_diffusion::components_to_fetch;
use sdbench_hub::{Hub, HubSettings, WantedComponent};
use serde_json::{Map, Value};

/// `sdbench_hub::ChooseComponents` over the engine's model families: the components the family
/// of a model_index.json's `_class_name` reads, or why no family runs it.
pub fn engine_components(index: &Map<String, Value>) -> Result<Vec<WantedComponent>, String> {
    let components = components_to_fetch(index).map_err(|problem| format!("it {problem}"))?;
    Ok(components
        .into_iter()
        .map(|c| WantedComponent {
            folder: c.name.to_string(),
            needs: c
                .kind
                .needed_files()
                .iter()
                .map(|f| f.to_string())
                .collect(),
            weights: c.kind.has_weights(),
        })
        .collect())
}

/// A hub that fetches what the engine reads.
pub fn engine_hub(settings: HubSettings) -> Hub {
    Hub::new(settings, engine_components)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// For each repository layout the hub's tests hold (crates/hub/tests/fixtures/listings, with
    /// what diffusers' own download fetches of it), the engine's components give exactly
    /// diffusers' files, less the weights diffusers takes from folders model_index.json does
    /// not list (SDXL base's `vae_1_0/`); a layout no family runs yet is refused by its class.
    #[test]
    fn the_engine_fetches_what_diffusers_fetches_of_each_layout() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../hub/tests/fixtures/listings");
        let mut checked = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let json: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let strings = |key: &str| -> Vec<String> {
                json[key]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap().to_string())
                    .collect()
            };
            let index = json["model_index"].as_object().unwrap();
            let class = index["_class_name"].as_str().unwrap();
            let wanted = match engine_components(index) {
                Ok(wanted) => wanted,
                Err(problem) => {
                    assert_eq!(
                        class,
                        "StableDiffusion3Pipeline",
                        "{}: {problem}",
                        path.display()
                    );
                    assert!(problem.contains(class), "{problem}");
                    continue;
                }
            };
            let files = strings("files");
            let paths: Vec<&str> = files.iter().map(String::as_str).collect();
            let mut planned: Vec<String> = sdbench_hub::components::plan(&paths, &wanted)
                .unwrap()
                .into_iter()
                .map(|f| f.path)
                .collect();
            planned.sort();
            let expected: Vec<String> = strings("diffusers")
                .into_iter()
                .filter(|f| {
                    f.split_once('/')
                        .is_none_or(|(folder, _)| index.contains_key(folder))
                })
                .collect();
            assert_eq!(planned, expected, "{}", path.display());
            checked += 1;
        }
        assert!(checked >= 4, "{checked} layouts");
    }
}
