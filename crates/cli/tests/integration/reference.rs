//! The command-line reference in docs/ is what the binary generates from its own argument
//! definitions, every argument has help text, and every `sdbench` command the README shows parses.

use std::path::PathBuf;
use std::process::{Command, Output};

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn sdbench(args: &[String]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sdbench"))
        .args(args)
        .output()
        .unwrap()
}

/// `SDBENCH_WRITE_DOCS=1` rewrites docs/cli-reference.md instead of comparing.
#[test]
fn the_cli_reference_is_current() {
    // `reference` refuses to print when an argument has no help text.
    let out = sdbench(&["reference".to_string()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let generated = String::from_utf8(out.stdout).unwrap();
    assert!(generated.contains("## `sdbench bench`") && generated.contains("--workload"));
    assert!(
        !generated.contains("sdbench reference"),
        "the hidden command is not documented"
    );
    let path = repository().join("docs/cli-reference.md");
    if std::env::var_os("SDBENCH_WRITE_DOCS").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/cli-reference.md is not what `sdbench reference` prints: rewrite it with \
         `SDBENCH_WRITE_DOCS=1 cargo test -p sdbench-cli the_cli_reference_is_current`"
    );
}

#[test]
fn every_sdbench_command_in_the_readme_parses() {
    let readme = std::fs::read_to_string(repository().join("README.md")).unwrap();
    let commands = sdbench_commands(&readme);
    // The README's quick start, quick run and recipes: finding fewer means the reading broke.
    assert!(commands.len() >= 10, "found only {commands:?}");
    for words in &commands {
        let mut args = vec!["reference".to_string(), "--check-args".to_string()];
        args.extend(words.iter().cloned());
        let out = sdbench(&args);
        assert!(
            out.status.success(),
            "the README's `sdbench {}`: {}",
            words.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The check itself refuses what does not parse.
    let out = sdbench(&[
        "reference".into(),
        "--check-args".into(),
        "bench".into(),
        "--no-such-option".into(),
    ]);
    assert!(!out.status.success());
}

/// The arguments of every `sdbench ...` (or `cargo run ... -p sdbench-cli -- ...`) line in the
/// text's shell code blocks, continuation lines joined, quotes removed, comments dropped.
fn sdbench_commands(text: &str) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    let mut in_shell = false;
    let mut pending = String::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_shell = line.trim() == "```sh";
            continue;
        }
        if !in_shell {
            continue;
        }
        pending.push_str(line.trim_end_matches('\\'));
        if line.ends_with('\\') {
            pending.push(' ');
            continue;
        }
        let words = shell_words(&pending);
        pending.clear();
        let args = match words.first().map(String::as_str) {
            Some("sdbench") => words[1..].to_vec(),
            Some("cargo") if words.iter().any(|w| w == "sdbench-cli") => {
                match words.iter().position(|w| w == "--") {
                    Some(at) => words[at + 1..].to_vec(),
                    None => continue,
                }
            }
            _ => continue,
        };
        commands.push(args);
    }
    commands
}

/// A command line split as a POSIX shell splits words with quotes; a word starting with `#`
/// ends it (a comment).
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (None, '#') if word.is_none() => break,
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    words
}
