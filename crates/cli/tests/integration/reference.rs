//! The command-line reference in docs/ is what the binary generates from its own argument
//! definitions, every argument has help text, and every `sdbench` command the README shows parses
//! and runs as far as an offline test machine allows.

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

/// Every command line in the text's shell code blocks, as words: continuation lines joined,
/// quotes removed, comments dropped.
fn shell_lines(text: &str) -> Vec<Vec<String>> {
    let mut lines = Vec::new();
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
        if !words.is_empty() {
            lines.push(words);
        }
    }
    lines
}

/// The arguments of every `sdbench ...` (or `cargo run ... -p sdbench-cli -- ...`) line in the
/// text's shell code blocks.
fn sdbench_commands(text: &str) -> Vec<Vec<String>> {
    shell_lines(text)
        .into_iter()
        .filter_map(|words| match words.first().map(String::as_str) {
            Some("sdbench") => Some(words[1..].to_vec()),
            Some("cargo") if words.iter().any(|w| w == "sdbench-cli") => words
                .iter()
                .position(|w| w == "--")
                .map(|at| words[at + 1..].to_vec()),
            _ => None,
        })
        .collect()
}

/// The README's other commands (cargo, npm, the repository's scripts), in its shell blocks and
/// in its text's `code`, name packages, features, npm scripts and files that exist: a rename
/// fails here, not in a newcomer's terminal. A kind of command no check knows fails too.
#[test]
fn the_readmes_other_commands_name_what_exists() {
    let root = repository();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let mut lines = shell_lines(&readme);
    // `cargo ...` in the text, between backticks.
    for (i, part) in readme.split('`').enumerate() {
        if i % 2 == 1 && part.starts_with("cargo ") {
            lines.push(shell_words(part));
        }
    }
    let mut checked = 0;
    for line in &lines {
        for command in line.split(|w| w == "&&") {
            let Some(first) = command.first().map(String::as_str) else {
                continue;
            };
            let shown = command.join(" ");
            match first {
                "sdbench" => continue,
                "cargo" => check_cargo(&root, command, &shown),
                "npm" => check_npm(&root, command, &shown),
                script if script.starts_with("scripts/") => {
                    assert!(
                        root.join(script).is_file(),
                        "the README's `{shown}`: no such script"
                    )
                }
                _ => panic!("the README's `{shown}`: no check here knows this command; add one"),
            }
            checked += 1;
        }
    }
    // The quick start's two commands, the app's build and the server at least.
    assert!(checked >= 5, "found only {checked} commands in {lines:?}");
}

/// `cargo run|build|test [--release] [-p PACKAGE] [--features F] ...`: the package is the
/// workspace's (the root package without -p) and has the features.
fn check_cargo(root: &std::path::Path, words: &[String], shown: &str) {
    assert!(
        matches!(
            words.get(1).map(String::as_str),
            Some("run" | "build" | "test")
        ),
        "the README's `{shown}`: not cargo run, build or test"
    );
    let own = words.iter().position(|w| w == "--").unwrap_or(words.len());
    let value = |flag: &str| {
        words[..own]
            .iter()
            .position(|w| w == flag)
            .map(|at| words[at + 1].clone())
    };
    let manifests = std::iter::once(root.join("Cargo.toml")).chain(
        std::fs::read_dir(root.join("crates"))
            .unwrap()
            .map(|e| e.unwrap().path().join("Cargo.toml")),
    );
    let manifest = match value("-p") {
        None => root.join("Cargo.toml"),
        Some(package) => manifests
            .filter(|m| m.is_file())
            .find(|m| {
                std::fs::read_to_string(m)
                    .unwrap()
                    .lines()
                    .any(|l| l.trim() == format!("name = \"{package}\""))
            })
            .unwrap_or_else(|| panic!("the README's `{shown}`: no package {package}")),
    };
    if let Some(features) = value("--features") {
        let text = std::fs::read_to_string(&manifest).unwrap();
        let section = text
            .split("\n[")
            .find(|s| s.starts_with("features]"))
            .unwrap_or_else(|| {
                panic!(
                    "the README's `{shown}`: {} has no features",
                    manifest.display()
                )
            });
        for feature in features.split(',') {
            assert!(
                section
                    .lines()
                    .any(|l| l.starts_with(&format!("{feature} ="))),
                "the README's `{shown}`: {} has no feature {feature}",
                manifest.display()
            );
        }
    }
}

/// `npm --prefix ui install` or `npm --prefix ui run SCRIPT`: the folder has a package.json with
/// that script.
fn check_npm(root: &std::path::Path, words: &[String], shown: &str) {
    let rest: Vec<&str> = words.iter().map(String::as_str).collect();
    let (folder, rest) = match rest.as_slice() {
        ["npm", "--prefix", folder, rest @ ..] => (root.join(folder), rest.to_vec()),
        ["npm", rest @ ..] => (root.to_path_buf(), rest.to_vec()),
        _ => unreachable!(),
    };
    let package: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("package.json"))
            .unwrap_or_else(|e| panic!("the README's `{shown}`: {e}")),
    )
    .unwrap();
    match rest.as_slice() {
        ["install"] | ["ci"] => {}
        ["run", script, ..] => assert!(
            package["scripts"][*script].is_string(),
            "the README's `{shown}`: package.json has no script {script}"
        ),
        _ => panic!("the README's `{shown}`: no check here knows this npm command; add one"),
    }
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

/// The README's `sdbench` commands run as far as a machine with no network and no models allows:
/// the quick synthetic run finishes and writes its result; each recipe's `generate` stops at the
/// missing model, naming the command that fetches it, and writes no picture; the main job's and
/// each recipe's `bench` says it runs on synthetic weights instead, naming the download, and is
/// stopped there (the full-size benchmark it starts takes minutes to hours on a CPU).
#[test]
fn the_readmes_commands_run_as_far_as_an_offline_machine_allows() {
    let readme = std::fs::read_to_string(repository().join("README.md")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let run = |words: &[String]| {
        Command::new(env!("CARGO_BIN_EXE_sdbench"))
            .args(words)
            .current_dir(dir.path())
            .env("SDBENCH_DATA_DIR", dir.path().join("data"))
            .env("HF_HUB_CACHE", dir.path().join("hub"))
            .env("HF_HUB_OFFLINE", "1")
            .output()
            .unwrap()
    };
    // Started, its notes read until `until` appears (or the process ends), then stopped.
    let start_until = |words: &[String], until: &str| -> String {
        let mut child = Command::new(env!("CARGO_BIN_EXE_sdbench"))
            .args(words)
            .current_dir(dir.path())
            .env("SDBENCH_DATA_DIR", dir.path().join("data"))
            .env("HF_HUB_CACHE", dir.path().join("hub"))
            .env("HF_HUB_OFFLINE", "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (lines, read) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        let mut seen = String::new();
        while let Ok(line) = read.recv_timeout(std::time::Duration::from_secs(60)) {
            seen.push_str(&line);
            seen.push('\n');
            if seen.contains(until) {
                break;
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        seen
    };
    let (mut quick, mut recipes, mut benches) = (0, 0, 0);
    for words in sdbench_commands(&readme) {
        let shown = words.join(" ");
        match words.first().map(String::as_str) {
            Some("bench") if words.iter().any(|w| w == "--synthetic") => {
                let out = run(&words);
                assert!(
                    out.status.success(),
                    "`sdbench {shown}`: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let result = dir.path().join("benchmark_diffusion_result.json");
                let text = std::fs::read_to_string(&result).unwrap();
                let value: serde_json::Value = serde_json::from_str(&text).unwrap();
                assert_eq!(value["workload"]["model"]["synthetic"], true, "{shown}");
                quick += 1;
            }
            Some("generate") => {
                let model = words[words.iter().position(|w| w == "--model").unwrap() + 1].clone();
                let picture = &words[words.iter().position(|w| w == "--out").unwrap() + 1];
                let out = run(&words);
                let stderr = String::from_utf8_lossy(&out.stderr);
                assert!(!out.status.success(), "`sdbench {shown}` ran offline");
                assert!(
                    stderr.contains(&format!("sdbench download --model {model}")),
                    "`sdbench {shown}`: {stderr}"
                );
                assert!(!dir.path().join(picture).exists(), "{shown}");
                recipes += 1;
            }
            Some("bench") => {
                let seen = start_until(&words, "Running on synthetic weights instead");
                assert!(
                    seen.contains("Running on synthetic weights instead")
                        && seen.contains("sdbench download --model"),
                    "`sdbench {shown}`: {seen}"
                );
                benches += 1;
            }
            _ => {}
        }
    }
    assert_eq!(
        (quick, recipes, benches),
        (1, 6, 7),
        "the README's quick run, its six recipes' generate, and the main job's and the recipes' bench"
    );
}
