//! Reference image hashes: for each model revision, the perceptual hash of each standard prompt's
//! image as the reference engine made it. A run whose images are all within a few bits of them
//! "matches the reference" (it drew the same pictures); the table is a JSON file:
//!
//! ```json
//! { "<model revision or files:digest>": { "workload": "sd15-512-30",
//!                                         "phash": ["<16 hex digits>", …one per prompt] } }
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use sdbench_bench::result::BenchResult;

use crate::error::{Result, ServerError};

/// Perceptual-hash bits two renderings of the same picture may differ in (f16 against f32, one
/// GPU against another); unrelated pictures differ in about half of the 64.
pub const MAX_DISTANCE: u32 = 10;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reference {
    pub workload: String,
    pub phash: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct ReferenceTable {
    by_model: BTreeMap<String, Reference>,
}

impl ReferenceTable {
    pub fn parse(text: &str) -> Result<ReferenceTable> {
        let by_model: BTreeMap<String, Reference> = serde_json::from_str(text)
            .map_err(|e| ServerError::Config(format!("the reference hash table: {e}")))?;
        for (model, reference) in &by_model {
            if let Some(bad) = reference.phash.iter().find(|h| parse_hash(h).is_none()) {
                return Err(ServerError::Config(format!(
                    "the reference hash table: `{bad}` (model {model}) is not 16 hex digits"
                )));
            }
        }
        Ok(ReferenceTable { by_model })
    }

    pub fn load(path: &Path) -> Result<ReferenceTable> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ServerError::Config(format!(
                "cannot read the reference hash table {}: {e}",
                path.display()
            ))
        })?;
        Self::parse(&text)
    }

    /// The table as its JSON file holds it.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(&self.by_model).unwrap_or_default() + "\n"
    }

    /// Adds (or replaces) the reference that a run of the reference engine made: its model's
    /// key and each prompt's perceptual hash. The run must be valid, on real weights, with each
    /// of its workload's prompts once; returns the model key.
    pub fn add_run(&mut self, r: &BenchResult) -> Result<String> {
        let refuse = |why: &str| Err(ServerError::Config(format!("not a reference run: {why}")));
        if !r.valid {
            return refuse("the run is invalid");
        }
        if r.workload.model.synthetic {
            return refuse("synthetic weights");
        }
        let mut phash = vec![String::new(); r.workload.prompts.len()];
        for image in &r.results {
            match phash.get_mut(image.prompt_index) {
                Some(slot) if slot.is_empty() => slot.clone_from(&image.image.check.phash),
                _ => return refuse("each prompt must have exactly one image"),
            }
        }
        if phash.iter().any(String::is_empty) {
            return refuse("a prompt has no image");
        }
        let key = crate::checks::model_key(r);
        self.by_model.insert(
            key.clone(),
            Reference {
                workload: r.workload.name.clone(),
                phash,
            },
        );
        Ok(key)
    }

    pub fn len(&self) -> usize {
        self.by_model.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_model.is_empty()
    }

    /// `Some(true)` when every image is within `MAX_DISTANCE` bits of its prompt's reference,
    /// `Some(false)` when one is not, `None` when the table has no reference for the model and
    /// workload.
    pub fn matches(&self, model_key: &str, r: &BenchResult) -> Option<bool> {
        let reference = self.by_model.get(model_key)?;
        if reference.workload != r.workload.name {
            return None;
        }
        Some(r.results.iter().all(|image| {
            let expected = reference
                .phash
                .get(image.prompt_index)
                .and_then(|h| parse_hash(h));
            let actual = parse_hash(&image.image.check.phash);
            matches!((expected, actual), (Some(e), Some(a)) if (e ^ a).count_ones() <= MAX_DISTANCE)
        }))
    }
}

fn parse_hash(hex: &str) -> Option<u64> {
    (hex.len() == 16).then(|| u64::from_str_radix(hex, 16).ok())?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> BenchResult {
        BenchResult::from_json(include_str!("../../bench/tests/data/result-v1.json")).unwrap()
    }

    #[test]
    fn a_reference_run_becomes_a_table_entry_its_images_match() {
        let mut table = ReferenceTable::default();
        let r = run();
        assert_eq!(
            table.add_run(&r).unwrap(),
            "abc",
            "keyed by the model revision"
        );
        let table = ReferenceTable::parse(&table.to_json()).unwrap();
        assert_eq!(table.matches("abc", &r), Some(true));
        assert_eq!(table.matches("another revision", &r), None);
        // A few bits off is the same picture; many are another.
        let mut near = r.clone();
        let hash = u64::from_str_radix(&r.results[0].image.check.phash, 16).unwrap();
        near.results[0].image.check.phash = format!("{:016x}", hash ^ 0b111);
        assert_eq!(table.matches("abc", &near), Some(true));
        let mut far = r.clone();
        far.results[0].image.check.phash = format!("{:016x}", !hash);
        assert_eq!(table.matches("abc", &far), Some(false));
        let mut other_workload = r.clone();
        other_workload.workload.name = "custom".into();
        assert_eq!(table.matches("abc", &other_workload), None);
    }

    #[test]
    fn bad_tables_and_runs_are_named() {
        let bad =
            ReferenceTable::parse(r#"{"abc": {"workload": "sd15-512-30", "phash": ["xyz"]}}"#);
        assert!(bad.unwrap_err().to_string().contains("`xyz`"));
        let mut invalid = run();
        invalid.valid = false;
        let refused = ReferenceTable::default().add_run(&invalid).unwrap_err();
        assert!(refused.to_string().contains("invalid"));
    }
}
