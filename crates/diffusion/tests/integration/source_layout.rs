//! The layout rules, checked on the sources: no file over 700 lines and no function over 100 in
//! the workspace (tests aside; in the engine's `pipeline/` and `models/`, their test modules
//! too); no family named in `pipeline/` but by the registry (a family is a folder under
//! `models/` with a `family.rs`).

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
fn no_function_in_pipeline_or_models_is_over_100_lines() {
    let mut files = Vec::new();
    rust_files(&source_dir().join("pipeline"), &mut files);
    rust_files(&source_dir().join("models"), &mut files);
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

#[test]
fn pipeline_names_no_family_but_in_the_registry() {
    let models = source_dir().join("models");
    let families: Vec<String> = fs::read_dir(&models)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("family.rs").is_file())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(families.len() >= 3, "{families:?}");
    let mut files = Vec::new();
    rust_files(&source_dir().join("pipeline"), &mut files);
    let mut named = Vec::new();
    for path in &files {
        let file = path.file_name().unwrap().to_string_lossy();
        if file == "registry.rs" || file.ends_with("_tests.rs") || file.contains("test_support") {
            continue;
        }
        let text = fs::read_to_string(path).unwrap();
        for (number, line) in without_tests(&text).lines().enumerate() {
            let code = code_of(line);
            let names_module = families
                .iter()
                .any(|f| code.contains(&format!("models::{f}")));
            // A family's preset or architecture constant (`Preset::SD15`, `Family::SDXL`).
            let names_constant = ["Preset::", "Family::"].iter().any(|kind| {
                code.split(kind)
                    .skip(1)
                    .any(|rest| rest.starts_with(|c: char| c.is_ascii_uppercase()))
            });
            if names_module || names_constant {
                named.push(format!(
                    "{}:{}: {}",
                    path.display(),
                    number + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(named.is_empty(), "{named:#?}");
}
