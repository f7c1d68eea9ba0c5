//! Which of a family's components each file given on its own is: `--text-encoder` files come
//! in any order, and each is matched to the one text encoder whose names and widths it holds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{DiffusionError, Result};
use crate::io::tensor_file::{describe_names, TensorFile};

/// A component a file may stand for.
pub struct Role<'a> {
    /// Its name in model_index.json: "text_encoder_2".
    pub component: &'static str,
    /// What messages call it: "CLIP-G".
    pub what: &'static str,
    /// Whether a file holds it (its tensor names, and the widths the model's configs give).
    pub fits: &'a dyn Fn(&Path) -> bool,
}

/// Each of `files` (given by `option`) matched to the one role it fits. Refused, naming the
/// file: one that fits no role or more than one, two that fit the same role.
pub fn assign(
    files: &[PathBuf],
    roles: &[Role],
    option: &str,
    family: &str,
) -> Result<BTreeMap<&'static str, PathBuf>> {
    let mut assigned: BTreeMap<&'static str, PathBuf> = BTreeMap::new();
    let all = || {
        roles
            .iter()
            .map(|r| format!("{} ({})", r.what, r.component))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for file in files {
        let fitting: Vec<&Role> = roles.iter().filter(|r| (r.fits)(file)).collect();
        let role = match fitting.as_slice() {
            [one] => one,
            [] => {
                return Err(DiffusionError::unsupported(
                    file,
                    format!(
                        "{option}: the file is none of the components a {family} model takes this way ({}), by its tensor names and widths; it holds {}: is it another model's?",
                        all(),
                        what_it_holds(file)
                    ),
                ))
            }
            several => {
                let names: Vec<&str> = several.iter().map(|r| r.what).collect();
                return Err(DiffusionError::unsupported(
                    file,
                    format!(
                        "{option}: the file fits more than one of a {family} model's components ({}), so which it is cannot be told",
                        names.join(", ")
                    ),
                ));
            }
        };
        if let Some(earlier) = assigned.get(role.component) {
            return Err(DiffusionError::unsupported(
                file,
                format!(
                    "{option}: this file and {} both hold the {} ({}); give one",
                    earlier.display(),
                    role.what,
                    role.component
                ),
            ));
        }
        assigned.insert(role.component, file.clone());
    }
    Ok(assigned)
}

/// What a file that fits no role holds, for its refusal: a GGUF's architecture (a T5 GGUF says
/// `t5encoder`, one converted with another label is otherwise a mystery) and its tensors' names.
fn what_it_holds(file: &Path) -> String {
    match TensorFile::open(file) {
        Ok(opened) => {
            let names = describe_names(&opened);
            match opened.gguf_text("general.architecture") {
                Some(architecture) => format!(
                    "a GGUF whose general.architecture is {:?} ({names})",
                    architecture.chars().take(64).collect::<String>()
                ),
                None => names,
            }
        }
        Err(e) => format!("nothing readable ({e})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Fits<'a> = &'a dyn Fn(&Path) -> bool;

    fn roles<'a>(fits: &'a [(&'static str, Fits<'a>)]) -> Vec<Role<'a>> {
        fits.iter()
            .map(|(component, fits)| Role {
                component,
                what: component,
                fits: *fits,
            })
            .collect()
    }

    /// Files are matched by what they hold, in whatever order they come; a file no role takes,
    /// one two roles take and two files for one role are refused by name.
    #[test]
    fn files_are_matched_in_any_order_and_refused_by_name() {
        let named = |needle: &'static str| move |p: &Path| p.to_string_lossy().contains(needle);
        let (a, b, c) = (named("first"), named("second"), named("third"));
        let list: [(&'static str, Fits); 3] = [
            ("text_encoder", &a),
            ("text_encoder_2", &b),
            ("text_encoder_3", &c),
        ];
        let roles = roles(&list);
        let files = |names: &[&str]| names.iter().map(PathBuf::from).collect::<Vec<_>>();
        let expected: BTreeMap<&str, PathBuf> = [
            ("text_encoder", "first.safetensors".into()),
            ("text_encoder_2", "second.safetensors".into()),
            ("text_encoder_3", "third.safetensors".into()),
        ]
        .into();
        let orders = [
            [
                "first.safetensors",
                "second.safetensors",
                "third.safetensors",
            ],
            [
                "third.safetensors",
                "first.safetensors",
                "second.safetensors",
            ],
            [
                "second.safetensors",
                "third.safetensors",
                "first.safetensors",
            ],
        ];
        for order in orders {
            let found = assign(&files(&order), &roles, "--text-encoder", "tiny").unwrap();
            assert_eq!(found, expected, "{order:?}");
        }
        let some = assign(
            &files(&["second.safetensors"]),
            &roles,
            "--text-encoder",
            "tiny",
        );
        assert_eq!(some.unwrap().len(), 1);

        let refused = |names: &[&str]| {
            assign(&files(names), &roles, "--text-encoder", "tiny")
                .unwrap_err()
                .to_string()
        };
        let none = refused(&["vae.safetensors"]);
        assert!(
            none.contains("vae.safetensors") && none.contains("none of"),
            "{none}"
        );
        let both = refused(&["first.safetensors", "a/first.safetensors"]);
        assert!(both.contains("both hold the text_encoder"), "{both}");
        let two_roles = refused(&["first_and_second.safetensors"]);
        assert!(two_roles.contains("more than one"), "{two_roles}");
    }
}
