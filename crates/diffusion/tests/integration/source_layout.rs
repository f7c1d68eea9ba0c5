//! The layout rules, checked on the sources: no file over 700 lines and no function over 100 in
//! the workspace (tests aside; in the engine's `pipeline/`, `models/`, `families/` and
//! `engine/`, their test modules too); the engine's layers, each importing only the ones below it; no family named outside
//! the family folders but by the registry (a family is a folder under `families/` with a
//! `family.rs`).

use std::fs;
use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 700;
const MAX_FUNCTION_LINES: usize = 100;

fn source_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// The code of a line: without its `//` comment and with string literals emptied, so braces and
/// names in either do not count.
fn code_of(line: &str) -> String {
    let mut code = String::new();
    let mut chars = line.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        match (in_string, c) {
            (true, '\\') => {
                chars.next();
            }
            (true, '"') => {
                in_string = false;
                code.push('"');
            }
            (true, _) => {}
            (false, '"') => {
                in_string = true;
                code.push('"');
            }
            // A raw string on one line (`r#"{"a": 1}"#`), emptied as a string is.
            (false, 'r') if chars.peek() == Some(&'#') => {
                let rest: String = chars.by_ref().collect();
                match rest.find("\"#") {
                    Some(end) => {
                        code.push_str("\"\"");
                        code.push_str(&code_of(&rest[end + 2..]));
                    }
                    None => code.push_str(&rest),
                }
                break;
            }
            (false, '/') if chars.peek() == Some(&'/') => break,
            // A char literal of a brace or a quote: not a brace or a string.
            (false, '\'') if matches!(chars.peek(), Some('{' | '}' | '"')) => {
                chars.next();
            }
            (false, c) => code.push(c),
        }
    }
    code
}

/// Each function's name and its length in lines, from its `fn` line to its closing brace.
fn function_lengths(text: &str) -> Vec<(String, usize)> {
    let lines: Vec<String> = text.lines().map(code_of).collect();
    let mut lengths = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let Some(at) = line.find("fn ") else { continue };
        if at > 0 && !line[..at].ends_with(' ') {
            continue;
        }
        let name: String = line[at + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            continue;
        }
        let mut depth = 0i64;
        let mut opened = false;
        for (offset, code) in lines[start..].iter().enumerate() {
            // A declaration without a body (a trait's) ends at its semicolon.
            if !opened && code.trim_end().ends_with(';') {
                break;
            }
            for c in code.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if opened && depth <= 0 {
                lengths.push((name.clone(), offset + 1));
                break;
            }
        }
    }
    lengths
}

/// The non-test part of a source file: up to its `#[cfg(test)]` module.
fn without_tests(text: &str) -> &str {
    match text.find("\n#[cfg(test)]") {
        Some(at) => &text[..at],
        None => text,
    }
}

/// Every crate's sources (and the app's), tests aside: each `src/` folder of `crates/`, and
/// `src-tauri/`, without `tests.rs` and `*_tests.rs` files.
fn workspace_sources() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut dirs = vec![root.join("src-tauri")];
    for entry in fs::read_dir(root.join("crates")).unwrap() {
        let src = entry.unwrap().path().join("src");
        if src.is_dir() {
            dirs.push(src);
        }
    }
    let mut files = Vec::new();
    for dir in dirs {
        rust_files(&dir, &mut files);
    }
    files.retain(|path| {
        let name = path.file_name().unwrap().to_string_lossy();
        name != "tests.rs"
            && !name.ends_with("_tests.rs")
            && !path.components().any(|c| c.as_os_str() == "tests")
    });
    files
}

#[test]
fn no_workspace_file_is_over_700_lines() {
    let files = workspace_sources();
    let long: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let lines = fs::read_to_string(path).unwrap().lines().count();
            (lines > MAX_FILE_LINES).then(|| format!("{} ({lines} lines)", path.display()))
        })
        .collect();
    assert!(files.len() > 150, "{} files", files.len());
    assert!(long.is_empty(), "over {MAX_FILE_LINES} lines: {long:?}");
}

#[test]
fn no_workspace_function_is_over_100_lines() {
    let mut long = Vec::new();
    for path in workspace_sources() {
        let text = fs::read_to_string(&path).unwrap();
        for (name, lines) in function_lengths(without_tests(&text)) {
            if lines > MAX_FUNCTION_LINES {
                long.push(format!("{}: {name} ({lines} lines)", path.display()));
            }
        }
    }
    assert!(long.is_empty(), "over {MAX_FUNCTION_LINES} lines: {long:?}");
}

#[test]
fn no_function_in_the_engine_is_over_100_lines_tests_included() {
    let mut files = Vec::new();
    for dir in ["pipeline", "models", "families", "engine"] {
        rust_files(&source_dir().join(dir), &mut files);
    }
    let mut long = Vec::new();
    let mut counted = 0;
    for path in &files {
        for (name, lines) in function_lengths(&fs::read_to_string(path).unwrap()) {
            counted += 1;
            if lines > MAX_FUNCTION_LINES {
                long.push(format!("{}: {name} ({lines} lines)", path.display()));
            }
        }
    }
    assert!(counted > 300, "{counted} functions found");
    assert!(long.is_empty(), "over {MAX_FUNCTION_LINES} lines: {long:?}");
}

#[test]
fn the_function_lengths_counted_are_the_functions_lengths() {
    let text = "fn a() {\n    let s = \"}\";\n    if x { y(r#\"}\"#) }\n}\n\
                trait T {\n    fn b(&self);\n}\n\
                pub(crate) fn c<T>(\n    x: T,\n) -> u8 {\n    b'{'\n}\n";
    assert_eq!(
        function_lengths(text),
        [("a".to_string(), 4), ("c".to_string(), 5)]
    );
}

/// The engine's top-level modules from the bottom up: a module may import its own layer's and
/// the ones below, never one above (lib.rs, the crate's front, re-exports every layer).
const LAYERS: &[&[&str]] = &[
    &["error"],
    &["io", "noise", "reference_pictures"],
    &["nn"],
    &["device"],
    &["models"],
    &["scheduler", "quality"],
    &["pipeline"],
    &["families"],
    &["engine", "parity"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// The top-level module a source file is in (`io` for src/io/gguf.rs, `parity` for src/parity.rs).
fn top_module(path: &Path) -> String {
    let rest = path.strip_prefix(source_dir()).unwrap();
    let first = rest
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// The segments of the module a source file is (`families::sd::unet` for
/// src/families/sd/unet/mod.rs).
fn module_depth(path: &Path) -> usize {
    let rest = path.strip_prefix(source_dir()).unwrap();
    let segments = rest.components().count();
    match path.file_name().unwrap().to_str() {
        Some("mod.rs") => segments - 1,
        _ => segments,
    }
}

/// Whether a line's `super::super::...` climbs out of its file's top-level module, where the
/// layers rule would not see it.
fn climbs_out(code: &str, depth: usize) -> bool {
    code.match_indices("super::")
        .map(|(at, _)| {
            code.as_bytes()[at..]
                .chunks(7)
                .take_while(|c| *c == b"super::")
                .count()
        })
        .any(|hops| hops >= depth)
}

/// Every `crate::<module>` a line's code names, and the family folder of any
/// `crate::families::<family>` (a `crate::{...}` group gives an empty module, refused).
fn crate_paths(code: &str) -> Vec<(String, Option<String>)> {
    let word = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    code.split("crate::")
        .skip(1)
        .map(|rest| {
            let module = word(rest);
            let family = rest
                .strip_prefix("families::")
                .map(word)
                .filter(|f| !f.is_empty());
            (module, family)
        })
        .collect()
}

/// Each non-test line of the engine's sources outside lib.rs, with its file's top module, as
/// `(file, line number, top module, code)`.
fn engine_lines() -> Vec<(PathBuf, usize, String, String)> {
    let mut files = Vec::new();
    rust_files(&source_dir(), &mut files);
    let mut lines = Vec::new();
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path == source_dir().join("lib.rs")
            || name.ends_with("_tests.rs")
            || name.contains("test_support")
        {
            continue;
        }
        let top = top_module(&path);
        let text = fs::read_to_string(&path).unwrap();
        for (number, line) in without_tests(&text).lines().enumerate() {
            lines.push((path.clone(), number + 1, top.clone(), code_of(line)));
        }
    }
    lines
}

#[test]
fn each_layer_imports_only_the_layers_below_it() {
    let mut up = Vec::new();
    let mut counted = 0;
    for (path, number, top, code) in engine_lines() {
        let own = layer_of(&top).unwrap_or_else(|| panic!("{top} is in no layer (LAYERS)"));
        if climbs_out(&code, module_depth(&path)) {
            up.push(format!(
                "{}:{number}: super:: past its top module: {}",
                path.display(),
                code.trim()
            ));
        }
        for (module, family) in crate_paths(&code) {
            counted += 1;
            let Some(layer) = layer_of(&module) else {
                // `crate::Pipeline`: a name lib.rs re-exports hides which layer it is in.
                up.push(format!(
                    "{}:{number}: crate::{module} (import it from its module)",
                    path.display()
                ));
                continue;
            };
            // A family builds on the layers below, never on another family.
            let other_family = top == "families"
                && family.is_some_and(|f| !path.components().any(|c| c.as_os_str() == f.as_str()));
            if layer > own || other_family {
                up.push(format!("{}:{number}: {}", path.display(), code.trim()));
            }
        }
    }
    assert!(counted > 400, "{counted} crate paths found");
    assert!(up.is_empty(), "imports of a layer above: {up:#?}");
}

#[test]
fn the_layers_rule_sees_an_import_from_above() {
    assert_eq!(
        crate_paths("use crate::families::sd::FAMILY; let x = crate::io::gguf::open();"),
        [
            ("families".to_string(), Some("sd".to_string())),
            ("io".to_string(), None)
        ]
    );
    // src/families/sd/unet/config.rs is families::sd::unet::config: three hops reach the crate.
    let config = source_dir().join("families/sd/unet/config.rs");
    assert_eq!(module_depth(&config), 4);
    assert!(!climbs_out("use super::super::spec::Spec;", 4));
    assert!(climbs_out("use super::super::super::super::io::gguf;", 4));
    assert_eq!(module_depth(&source_dir().join("io/mod.rs")), 1);
    assert!(climbs_out("use super::nn::Linear;", 1));
    assert!(layer_of("io") < layer_of("nn"));
    assert!(layer_of("models") < layer_of("pipeline"));
    assert!(layer_of("pipeline") < layer_of("families"));
    assert!(layer_of("families") < layer_of("engine"));
}

#[test]
fn no_family_is_named_outside_the_family_folders_but_by_the_registry() {
    let families_dir = source_dir().join("families");
    let families: Vec<String> = fs::read_dir(&families_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("family.rs").is_file())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(families.len() >= 4, "{families:?}");
    // models/ holds the shared networks only.
    for entry in fs::read_dir(source_dir().join("models")).unwrap() {
        let path = entry.unwrap().path();
        assert!(!path.join("family.rs").is_file(), "{}", path.display());
    }
    let registry = source_dir().join("engine").join("registry.rs");
    let mut named = Vec::new();
    for (path, number, top, code) in engine_lines() {
        if top == "families" || path == registry {
            continue;
        }
        let names_module = crate_paths(&code)
            .iter()
            .any(|(module, family)| module == "families" || family.is_some());
        // A family's preset or architecture constant (`Preset::SD15`, `Family::SDXL`).
        let names_constant = ["Preset::", "Family::"].iter().any(|kind| {
            code.split(kind)
                .skip(1)
                .any(|rest| rest.starts_with(|c: char| c.is_ascii_uppercase()))
        });
        if names_module || names_constant {
            named.push(format!("{}:{number}: {}", path.display(), code.trim()));
        }
    }
    assert!(named.is_empty(), "{named:#?}");
}
