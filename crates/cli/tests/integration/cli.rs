//! The `sdbench` binary end to end: exit codes, messages, and that a failed run leaves no file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `sdbench` with a data folder of its own for this test process, so the history it writes is
/// never the person's.
fn sdbench(args: &[&str]) -> Output {
    static DATA: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let data = DATA.get_or_init(|| tempfile::tempdir().unwrap());
    Command::new(env!("CARGO_BIN_EXE_sdbench"))
        .args(args)
        .env("SDBENCH_DATA_DIR", data.path())
        .output()
        .unwrap()
}

/// The history's record of the one generation whose prompt contains `text`, whole.
fn generation_record(text: &str) -> serde_json::Value {
    let o = sdbench(&[
        "history",
        "list",
        "--kind",
        "generation",
        "--text",
        text,
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let runs: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");
    let id = runs[0]["id"].as_str().unwrap();
    let o = sdbench(&["history", "show", id]);
    serde_json::from_slice(&o.stdout).unwrap()
}

fn tiny() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../diffusion/tests/fixtures/tiny-sd")
        .display()
        .to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn generate(out: &Path, extra: &[&str]) -> Output {
    let model = tiny();
    let out = out.display().to_string();
    let mut args = vec![
        "generate",
        "--model",
        &model,
        "--prompt",
        "a red barn",
        "--backend",
        "cpu",
        "--out",
        &out,
    ];
    args.extend_from_slice(extra);
    sdbench(&args)
}

fn assert_fails(o: &Output, out: &Path, needle: &str) {
    assert!(!o.status.success(), "should fail: {}", stderr(o));
    assert!(
        stderr(o).contains(needle),
        "stderr should mention {needle:?}: {}",
        stderr(o)
    );
    assert!(
        !out.exists(),
        "a failed run must not leave {}",
        out.display()
    );
}

#[test]
fn generates_a_png_with_parameters() {
    let dir = tempfile::tempdir().unwrap();
    // A small Euler run with the given seed.
    let run = |name: &str, seed: &str| {
        let out = dir.path().join(name);
        let o = generate(
            &out,
            &[
                "--width",
                "24",
                "--height",
                "16",
                "--steps",
                "3",
                "--seed",
                seed,
                "--scheduler",
                "euler",
            ],
        );
        assert!(o.status.success(), "{}", stderr(&o));
        (out, o)
    };
    let (out, o) = run("barn.png", "5");
    assert!(
        stderr(&o).contains("step 3/3"),
        "progress on stderr: {}",
        stderr(&o)
    );
    let (size, text) = png_info(&out);
    assert_eq!(size, (24, 16));
    assert!(
        text.contains("a red barn") && text.contains("Sampler: euler") && text.contains("Seed: 5")
    );

    // Same seed, same image; another seed, another image.
    let (again, _) = run("again.png", "5");
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&again).unwrap());
    let (other, _) = run("other.png", "6");
    assert_ne!(std::fs::read(&out).unwrap(), std::fs::read(&other).unwrap());
}

#[test]
fn image_to_image_and_batches() {
    let dir = tempfile::tempdir().unwrap();
    let picture = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../diffusion/tests/fixtures/tiny-sd.init.png")
        .display()
        .to_string();
    let small = ["--steps", "4", "--seed", "5", "--scheduler", "euler"];

    // Two images per prompt: NAME-1.png and NAME-2.png; the first is the single image's.
    let single = dir.path().join("one.png");
    let o = generate(
        &single,
        &[&small[..], &["--width", "24", "--height", "16"]].concat(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = dir.path().join("pair.png");
    let sized = [
        &small[..],
        &["--width", "24", "--height", "16", "--batch", "2"],
    ]
    .concat();
    let o = generate(&out, &sized);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!out.exists());
    let first = dir.path().join("pair-1.png");
    let second = dir.path().join("pair-2.png");
    let (_, text) = png_info(&second);
    assert!(text.contains("Batch size: 2, Batch pos: 1"), "{text}");
    let read = |p: &Path| sdbench_diffusion::io::image::read_image(p).unwrap().pixels;
    let max_diff = |a: &[u8], b: &[u8]| a.iter().zip(b).map(|(x, y)| x.abs_diff(*y)).max();
    assert!(max_diff(&read(&first), &read(&single)) <= Some(1));
    assert!(max_diff(&read(&first), &read(&second)) > Some(10));

    // From a picture: its size, half of 4 steps.
    let redrawn = dir.path().join("redrawn.png");
    let from = |out: &Path, extra: &[&str]| {
        generate(
            out,
            &[&small[..], &["--init-image", &picture], extra].concat(),
        )
    };
    let o = from(&redrawn, &["--strength", "0.5"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("step 2/2"), "{}", stderr(&o));
    let (size, text) = png_info(&redrawn);
    assert_eq!(size, (24, 16));
    assert!(text.contains("Denoising strength: 0.5"), "{text}");

    // Bad pictures and strengths: a message naming the problem, non-zero exit, no file.
    let bad = dir.path().join("bad.png");
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "not a picture").unwrap();
    let o = generate(&bad, &["--init-image", &notes.display().to_string()]);
    assert_fails(&o, &bad, "not a PNG or JPEG");
    let o = generate(&bad, &["--init-image", "/no/such/picture.png"]);
    assert_fails(&o, &bad, "/no/such/picture.png");
    assert_fails(&from(&bad, &["--width", "32"]), &bad, "is 24x16");
    assert_fails(&from(&bad, &["--strength", "1.5"]), &bad, "at most 1");
    assert_fails(&from(&bad, &["--strength", "0"]), &bad, "strength");
    assert_fails(&from(&bad, &["--strength", "0.1"]), &bad, "runs no step");
    assert_fails(
        &generate(&bad, &["--strength", "0.5"]),
        &bad,
        "--init-image",
    );
    assert_fails(&generate(&bad, &["--batch", "0"]), &bad, "--batch");
    assert_fails(&generate(&bad, &["--batch", "65"]), &bad, "--batch");
}

fn png_info(path: &Path) -> ((u32, u32), String) {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[1..4], b"PNG");
    let width = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    assert_eq!(bytes[24], 8, "8-bit");
    assert_eq!(bytes[25], 2, "RGB");
    (
        (width, height),
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}

#[test]
fn latents_file_is_used_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("z.npy");
    sdbench_diffusion::io::npy::write_f32(&good, &[1, 4, 8, 12], &vec![0.5; 384]).unwrap();
    let out = dir.path().join("z.png");
    let o = generate(
        &out,
        &[
            "--width",
            "24",
            "--height",
            "16",
            "--steps",
            "2",
            "--latents",
            good.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));

    let wrong = dir.path().join("wrong.npy");
    sdbench_diffusion::io::npy::write_f32(&wrong, &[1, 4, 4, 4], &vec![0.5; 64]).unwrap();
    let out = dir.path().join("wrong.png");
    assert_fails(
        &generate(
            &out,
            &[
                "--width",
                "24",
                "--height",
                "16",
                "--latents",
                wrong.to_str().unwrap(),
            ],
        ),
        &out,
        "shape",
    );

    let text = dir.path().join("text.npy");
    std::fs::write(&text, "hello").unwrap();
    assert_fails(
        &generate(&out, &["--latents", text.to_str().unwrap()]),
        &out,
        "not a .npy file",
    );
}

#[test]
fn a_single_file_checkpoint_generates_with_its_config_folder() {
    let dir = tempfile::tempdir().unwrap();
    let checkpoint = format!("{}.ldm.safetensors", tiny());
    let run = |out: &Path, extra: &[&str]| {
        let out = out.display().to_string();
        let mut args = vec![
            "generate",
            "--model",
            &checkpoint,
            "--prompt",
            "a red barn",
            "--backend",
            "cpu",
            "--width",
            "24",
            "--height",
            "16",
            "--steps",
            "2",
            "--out",
            &out,
        ];
        args.extend_from_slice(extra);
        sdbench(&args)
    };
    let out = dir.path().join("ckpt.png");
    let tiny = tiny();
    let o = run(&out, &["--model-config", &tiny]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(png_info(&out).0, (24, 16));

    // Without the config the file is read as SD1.5, which it is not.
    let out = dir.path().join("sd15.png");
    assert_fails(&run(&out, &[]), &out, "config needs");
    // A config folder goes with a checkpoint file only.
    let o = generate(&out, &["--model-config", &tiny]);
    assert_fails(&o, &out, "only to a single-file checkpoint");
    let o = run(&out, &["--model-config", "/nonexistent/config"]);
    assert_fails(&o, &out, "is not a folder");

    // A VAE kept as a file of its own replaces the checkpoint's.
    let vae = format!("{tiny}/vae/diffusion_pytorch_model.safetensors");
    let out = dir.path().join("vae.png");
    let o = run(&out, &["--model-config", &tiny, "--vae", &vae]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(png_info(&out).0, (24, 16));
    let out = dir.path().join("bad.png");
    let o = run(
        &out,
        &[
            "--model-config",
            &tiny,
            "--vae",
            "/nonexistent/vae.safetensors",
        ],
    );
    assert_fails(
        &o,
        &out,
        "the --vae file /nonexistent/vae.safetensors does not exist",
    );
    let o = run(&out, &["--model-config", &tiny, "--text-encoder", &vae]);
    assert_fails(&o, &out, "holds its own text encoders");
    // Component files go with a model file, not a folder.
    let o = generate(&out, &["--vae", &vae]);
    assert_fails(&o, &out, "go with a model file");
}

#[test]
fn a_generated_image_is_recorded_in_the_history() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("history.png");
    let prompt = "a lighthouse recorded in history";
    let model = tiny();
    let out_s = out.display().to_string();
    let o = sdbench(&[
        "generate",
        "--model",
        &model,
        "--prompt",
        prompt,
        "--backend",
        "cpu",
        "--width",
        "24",
        "--height",
        "16",
        "--steps",
        "2",
        "--scheduler",
        "euler",
        "--seed",
        "7",
        "--out",
        &out_s,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let shown = generation_record(prompt);
    assert_eq!(shown["seed"], 7);
    assert_eq!(shown["steps"], 2);
    assert_eq!(shown["step_seconds"].as_array().unwrap().len(), 2);
    assert_eq!(
        shown["image_path"].as_str().unwrap(),
        std::path::absolute(&out).unwrap().display().to_string()
    );
}

#[test]
fn bad_arguments_fail_without_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.png");
    assert_fails(&generate(&out, &["--width", "30"]), &out, "multiple of 8");
    assert_fails(&generate(&out, &["--steps", "0"]), &out, "steps");
    let o = generate(&out, &["--scheduler", "magic"]);
    assert_eq!(o.status.code(), Some(2), "usage errors exit 2");
    assert_fails(&o, &out, "magic");
    // Another family's scheduler is refused by the model's family, listing its own.
    let o = generate(&out, &["--scheduler", "flow_euler"]);
    assert_fails(
        &o,
        &out,
        "--scheduler flow_euler does not apply to Stable Diffusion models",
    );
    assert_fails(
        &o,
        &out,
        "pndm, ddim, euler, euler_a, dpmpp_2m, dpmpp_2m_karras",
    );
    // Guidance options out of range are refused before the model is read; in range, by a
    // family that takes none.
    let o = generate(&out, &["--cfg-truncation", "1.5"]);
    assert_fails(
        &o,
        &out,
        "guidance truncation must be a fraction from 0 to 1 (got 1.5)",
    );
    let o = generate(&out, &["--cfg-normalization", "0"]);
    assert_fails(&o, &out, "guidance normalization must be a factor above 0");
    let o = generate(&out, &["--cfg-truncation", "0.5"]);
    assert_fails(
        &o,
        &out,
        "guidance truncation and normalization do not apply to Stable Diffusion models",
    );
    let o = sdbench(&[
        "generate",
        "--model",
        "/nonexistent/model",
        "--prompt",
        "x",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_fails(&o, &out, "does not exist");
    let nested = dir.path().join("missing-dir/x.png");
    assert_fails(&generate(&nested, &[]), &nested, "does not exist");
    let jpg = dir.path().join("x.jpg");
    assert_fails(&generate(&jpg, &[]), &jpg, ".png");
}

#[test]
fn threads_are_set_shown_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.png");
    let o = generate(
        &out,
        &[
            "--threads",
            "1",
            "--steps",
            "1",
            "--width",
            "32",
            "--height",
            "32",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    // The CPU device is named by its processor and threads.
    let device = format!("{} (1 thread)", sdbench_diffusion::device::cpu_model());
    assert!(stderr(&o).contains(&device), "{}", stderr(&o));
    std::fs::remove_file(&out).unwrap();
    let o = generate(&out, &["--threads", "0"]);
    assert_eq!(o.status.code(), Some(2), "usage errors exit 2");
    assert_fails(&o, &out, "--threads");
}

/// On a server (no desktop session) Mesa's Vulkan device-select layer made libwayland print
/// "error: XDG_RUNTIME_DIR is invalid or not set" during the Vulkan probe, though nothing failed.
#[test]
fn devices_without_a_desktop_session_print_no_error() {
    static DATA: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let data = DATA.get_or_init(|| tempfile::tempdir().unwrap());
    let o = Command::new(env!("CARGO_BIN_EXE_sdbench"))
        .arg("devices")
        .env("SDBENCH_DATA_DIR", data.path())
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("NODEVICE_SELECT")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        !stderr(&o).to_lowercase().contains("error"),
        "nothing failed, so nothing may say error: {}",
        stderr(&o)
    );
}

#[test]
fn a_device_number_the_backend_lacks_is_refused_with_what_it_has() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("img.png");
    let o = generate(&out, &["--device", "1", "--steps", "1"]);
    assert_fails(&o, &out, "there is no cpu device 1");
    let listed = format!("0: {}", sdbench_diffusion::device::cpu_model());
    assert!(stderr(&o).contains(&listed), "{}", stderr(&o));
}

#[test]
fn devices_lists_every_backend() {
    let o = sdbench(&["devices"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    for name in ["cuda", "rocm", "vulkan", "metal", "dx12", "cpu"] {
        assert!(text.contains(name), "{text}");
    }
    assert!(text.contains("auto selects"));
}

#[test]
fn a_closed_stdout_ends_the_run_quietly() {
    // The reading end is closed before `devices` (which probes every backend first) prints.
    let mut child = Command::new(env!("CARGO_BIN_EXE_sdbench"))
        .arg("devices")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(141), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
}

#[test]
fn timing_ops_prints_a_rate_for_every_layer() {
    // The `op ` lines of `sdbench timing --ops` on the CPU at 64x32, one call per layer.
    let ops = |extra: &[&str]| -> (Vec<String>, String) {
        let mut args = vec!["timing", "--ops"];
        args.extend_from_slice(extra);
        args.extend(["--backend", "cpu", "--width", "64", "--height", "32"]);
        args.extend(["--repeat", "1"]);
        let o = sdbench(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        let lines = out
            .lines()
            .filter(|l| l.starts_with("op "))
            .map(String::from);
        (lines.collect(), out)
    };
    let (sd15, out) = ops(&[]);
    assert_eq!(sd15.len(), 17, "{out}");
    assert!(
        sd15[0].starts_with("op conv3x3 n=2 c=320 h=4 w=8: median "),
        "{out}"
    );
    for line in &sd15 {
        assert!(
            line.contains(" GFLOP/s (n=1)") || line.contains(" GB/s (n=1)"),
            "{line}"
        );
    }
    // The layer lists are SD1.5's and FLUX.2 klein's: a model is not an argument of --ops.
    let o = sdbench(&["timing", "--ops", "--model", "synthetic-sdxl-base"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // FLUX.2's list with its linear weights kept in a file's codes (Q4_K), which names the same
    // layers as f32 weights do and adds each linear's dequantization time (one run: FLUX.2's
    // layers at 512 text tokens are most of this test's time; SD1.5's list above runs f32).
    let (flux2, out) = ops(&["--ops-of", "flux2-klein", "--ops-weights", "Q4_K"]);
    assert_eq!(flux2.len(), 7, "{out}");
    // 4x2 patched image tokens and 512 text tokens; the layers as the loaded model runs them,
    // not the checkpoint's fused projections (3072 to 27648).
    assert!(
        flux2[0].starts_with("op linear rows=520 in=3072 out=3072: median "),
        "{out}"
    );
    assert!(
        flux2[1].starts_with("op linear rows=520 in=3072 out=9216: median "),
        "{out}"
    );
    assert!(out.contains(", linear weights Q4_K"), "{out}");
    let linears: Vec<&String> = flux2
        .iter()
        .filter(|l| l.starts_with("op linear"))
        .collect();
    assert!(!linears.is_empty(), "{out}");
    for line in linears {
        assert!(
            line.contains("; dequantize ") && line.ends_with("%)"),
            "{line}"
        );
    }
    let o = sdbench(&["timing", "--ops", "--ops-weights", "Q7_K"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// `sdbench parity` passes on the CPU and fails, exit 1, when diffusers' images are not what the
/// engine makes (here: the reference says guidance 3 while the images were made at 7.5).
#[test]
fn parity_checks_the_engine_against_the_reference_images() {
    let fixtures = PathBuf::from(tiny()).parent().unwrap().to_path_buf();
    let fixtures_arg = fixtures.display().to_string();
    let o = sdbench(&[
        "parity",
        "--fixtures",
        &fixtures_arg,
        "--backend",
        "cpu",
        "--only",
        "tiny-sd",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["backend"], "cpu");
    // `auto` precision: the CPU's f32.
    assert_eq!(report["precision"], "f32");
    assert_eq!(report["fixtures"][0]["runs"].as_array().unwrap().len(), 12);
    assert!(report["fixtures"][0]["worst"].as_f64().unwrap() < 1e-4);

    // Without --fixtures, from a folder inside the clone: found above it.
    let inside = Command::new(env!("CARGO_BIN_EXE_sdbench"))
        .args(["parity", "--backend", "cpu", "--only", "tiny-sd", "--json"])
        .current_dir(fixtures.join("tiny-sd").join("unet"))
        .output()
        .unwrap();
    assert!(inside.status.success(), "{}", stderr(&inside));

    let dir = tempfile::tempdir().unwrap();
    let copy = |name: &str| std::fs::copy(fixtures.join(name), dir.path().join(name)).unwrap();
    copy("tiny-sd.reference.safetensors");
    let json = std::fs::read_to_string(fixtures.join("tiny-sd.reference.json")).unwrap();
    let mut meta: serde_json::Value = serde_json::from_str(&json).unwrap();
    meta["generate"]["guidance"] = 3.0.into();
    std::fs::write(dir.path().join("tiny-sd.reference.json"), meta.to_string()).unwrap();
    copy_dir(&fixtures.join("tiny-sd"), &dir.path().join("tiny-sd"));
    let altered = dir.path().display().to_string();
    let o = sdbench(&[
        "parity",
        "--fixtures",
        &altered,
        "--backend",
        "cpu",
        "--only",
        "tiny-sd",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("tiny-sd cpu f32: 12 generations") && out.contains("FAILED"),
        "{out}"
    );
    assert!(
        stderr(&o).contains("parity with diffusers failed on cpu f32"),
        "{}",
        stderr(&o)
    );

    let o = sdbench(&["parity", "--fixtures", "/no/such/folder"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no reference fixtures there"),
        "{}",
        stderr(&o)
    );
}

/// Copies a fixture folder (files and folders only), so a test can run on any platform.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// `--vram-report`: the allocator's memory after each phase on a GPU backend (the software Vulkan
/// device here); on the CPU, which has no device allocator, a line saying so, and the image still.
#[test]
fn generate_reports_vram_after_each_phase() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cpu.png");
    let o = generate(
        &out,
        &[
            "--width",
            "16",
            "--height",
            "16",
            "--steps",
            "2",
            "--vram-report",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.is_file());
    assert!(
        stderr(&o).contains("no VRAM report: the cpu backend has no device memory allocator"),
        "{}",
        stderr(&o)
    );

    if !vulkan_usable() {
        return;
    }
    let model = tiny();
    let out = dir.path().join("vulkan.png");
    let o = sdbench(&[
        "generate",
        "--model",
        &model,
        "--prompt",
        "a red barn, its memory reported",
        "--backend",
        "vulkan",
        "--precision",
        "f32",
        "--width",
        "16",
        "--height",
        "16",
        "--steps",
        "2",
        "--seed",
        "3",
        "--vram-report",
        "--out",
        &out.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let rows: Vec<&str> = err
        .lines()
        .skip_while(|l| !l.starts_with("VRAM after each phase"))
        .skip(2)
        .take_while(|l| !l.starts_with("wrote"))
        .collect();
    let names: Vec<String> = rows
        .iter()
        .map(|r| {
            let words: Vec<&str> = r.split_whitespace().collect();
            words[..words.len().saturating_sub(2)].join(" ")
        })
        .collect();
    assert_eq!(
        names,
        [
            "load",
            "text encode",
            "step 1",
            "step 2",
            "step 3",
            "decode",
            "peak"
        ],
        "{err}"
    );
    let reserved: f64 = rows[6].split_whitespace().last().unwrap().parse().unwrap();
    assert!(reserved > 0.0, "{err}");
    // Each phase was also printed as it ended, before the table.
    let streamed: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("vram after "))
        .collect();
    assert_eq!(streamed.len(), 6, "{err}");
    assert!(streamed[0].starts_with("vram after load: "), "{err}");
    assert!(
        streamed[5].starts_with("vram after decode: ") && streamed[5].ends_with("MiB reserved")
    );
    // The history's record of the image keeps the report.
    let shown = generation_record("its memory reported");
    let phases = shown["vram_report"]["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 6, "{shown}");
    assert_eq!(phases[5]["phase"], "decode");
    assert!(phases[5]["reserved_bytes"].as_u64().unwrap() > 0);
}

/// `--memory`: a profile runs and says so; `cpu` with another backend is refused by name.
#[test]
fn memory_profiles_run_and_conflicts_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("low.png");
    let o = generate(
        &out,
        &[
            "--width", "32", "--height", "32", "--steps", "2", "--memory", "low",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        out.is_file() && stderr(&o).contains("memory profile: low"),
        "{}",
        stderr(&o)
    );

    let model = tiny();
    let out = dir.path().join("conflict.png");
    let o = sdbench(&[
        "generate",
        "--model",
        &model,
        "--prompt",
        "x",
        "--memory",
        "cpu",
        "--backend",
        "vulkan",
        "--out",
        &out.display().to_string(),
    ]);
    assert_fails(
        &o,
        &out,
        "--memory cpu runs everything on the CPU backend, but --backend vulkan",
    );
}

/// Whether `sdbench devices` lists a usable Vulkan device; without one, fails where CI requires
/// it (SDBENCH_REQUIRE_VULKAN=1) and skips elsewhere.
pub fn vulkan_usable() -> bool {
    let o = sdbench(&["devices", "--json"]);
    let devices: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let usable = devices["backends"]
        .as_array()
        .unwrap()
        .iter()
        .any(|b| b["backend"] == "vulkan" && b["usable"] == true);
    assert!(
        usable || std::env::var("SDBENCH_REQUIRE_VULKAN").as_deref() != Ok("1"),
        "no Vulkan device"
    );
    usable
}

/// A profile that cannot fit the device's memory (here a small `--memory-limit` on SD1.5's
/// architecture) is refused before any weight is read, naming what it needs and the profile that
/// would fit; `auto` says what it chose and why.
#[test]
fn a_profile_that_cannot_fit_is_refused_naming_one_that_fits() {
    if !vulkan_usable() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.png");
    let run = |extra: &[&str]| {
        let out = out.display().to_string();
        let mut args = vec![
            "generate",
            "--model",
            "synthetic",
            "--prompt",
            "x",
            "--backend",
            "vulkan",
            "--precision",
            "f16",
            "--out",
            &out,
        ];
        args.extend_from_slice(extra);
        let start = std::time::Instant::now();
        let o = sdbench(&args);
        (o, start.elapsed())
    };
    let (o, took) = run(&["--memory-limit", "2.5"]);
    assert_fails(
        &o,
        &out,
        "out of device memory before starting: the full memory profile needs about",
    );
    let err = stderr(&o);
    assert!(
        err.contains("has 2.5 GiB (the limit given); --memory "),
        "{err}"
    );
    // Refused before the synthetic weights (a billion values) were made.
    assert!(took.as_secs() < 20, "took {took:?}: {err}");

    // The size asked for is what the check measures before loading: 512x512 would fit in
    // 4 GiB, 1024x1024 does not.
    let (o, took) = run(&["--width", "1024", "--height", "1024", "--memory-limit", "4"]);
    assert_fails(&o, &out, "needs about");
    let err = stderr(&o);
    assert!(err.contains("for one 1024x1024 image (sd1, f16)"), "{err}");
    assert!(took.as_secs() < 20, "took {took:?}: {err}");

    let (o, _) = run(&["--memory", "minimal", "--memory-limit", "0.5"]);
    assert_fails(&o, &out, "no profile on this device fits: use --memory cpu");

    let (o, _) = run(&["--memory-limit", "0"]);
    assert_fails(&o, &out, "--memory-limit 0: give the device memory in GiB");

    // A model that is not a built-in architecture is estimated from its own weights (the
    // tiny model's are a few megabytes) with its family's activations (at 16x16 pixels, almost
    // only the VAE's pools: 0.25 GiB).
    let model = tiny();
    let o = sdbench(&[
        "generate",
        "--model",
        &model,
        "--prompt",
        "x",
        "--backend",
        "vulkan",
        "--width",
        "16",
        "--height",
        "16",
        "--steps",
        "1",
        "--memory",
        "auto",
        "--memory-limit",
        "1",
        "--out",
        &out.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("memory profile: auto chose full (needs about 0.3 GiB for one 16x16 image of the 1.0 GiB the device has (the limit given))"),
        "{}",
        stderr(&o)
    );
}

/// A FLUX.2 klein folder runs through the same commands: generate (no guidance for the distilled
/// model, said so), a custom benchmark of its workload, and timing of its transformer.
#[test]
fn a_flux2_klein_model_generates_benchmarks_and_times() {
    let dir = tempfile::tempdir().unwrap();
    let model = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../diffusion/tests/fixtures/tiny-flux2-klein")
        .display()
        .to_string();
    let out = dir.path().join("klein.png");
    let png = out.display().to_string();
    let common = ["--model", model.as_str(), "--backend", "cpu"];
    let mut args = vec!["generate", "--prompt", "a red cube", "--steps", "2"];
    args.extend(["--width", "48", "--height", "32", "--out", png.as_str()]);
    args.extend(common);
    let o = sdbench(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("step-distilled"), "{}", stderr(&o));
    assert_eq!(png_info(&out).0, (48, 32));
    // Its sides are multiples of 8 for the tiny VAE (16 for FLUX.2's own): 36 is refused.
    let bad = dir.path().join("bad.png");
    let bad_png = bad.display().to_string();
    let mut args = vec!["generate", "--prompt", "a red cube", "--steps", "1"];
    args.extend(["--width", "36", "--height", "32", "--out", bad_png.as_str()]);
    args.extend(common);
    assert_fails(&sdbench(&args), &bad, "multiple of 8");

    // A reference picture: without a size the image takes the picture's, cropped to multiples of
    // 16 (75x66 -> 64x64), and the PNG's parameters name the picture.
    let picture = dir.path().join("ref.png");
    let pixels = (0..75 * 66 * 3).map(|i| (i * 7 % 256) as u8).collect();
    let image = sdbench_diffusion::io::image::RgbImage {
        width: 75,
        height: 66,
        pixels,
    };
    sdbench_diffusion::io::image::write_png(&picture, &image, &[]).unwrap();
    let picture_arg = picture.display().to_string();
    let referenced = dir.path().join("referenced.png");
    let referenced_png = referenced.display().to_string();
    let mut args = vec!["generate", "--prompt", "the same cube", "--steps", "1"];
    args.extend(["--reference-image", picture_arg.as_str()]);
    args.extend(["--out", referenced_png.as_str()]);
    args.extend(common);
    let o = sdbench(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let (size, text) = png_info(&referenced);
    assert_eq!(size, (64, 64));
    assert!(
        text.contains(&format!("\"reference_images\":[\"{picture_arg}\"]")),
        "{text}"
    );
    // FLUX.2 takes no picture to start from (here the 48x32 image above), and Stable Diffusion no
    // reference: both refused before the weights are read.
    let refused_before_loading = |args: &[&str], needle: &str| {
        let o = sdbench(args);
        assert_fails(&o, &bad, needle);
        let said = stderr(&o);
        assert!(!said.contains("loading"), "before loading: {said}");
    };
    let mut args = vec!["generate", "--prompt", "a red cube", "--steps", "2"];
    args.extend(["--init-image", png.as_str(), "--out", bad_png.as_str()]);
    args.extend(common);
    refused_before_loading(&args, "--reference-image");
    let sd = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../diffusion/tests/fixtures/tiny-sd")
        .display()
        .to_string();
    let mut args = vec!["generate", "--prompt", "a red cube", "--steps", "1"];
    args.extend([
        "--reference-image",
        picture_arg.as_str(),
        "--out",
        bad_png.as_str(),
    ]);
    args.extend(["--model", sd.as_str(), "--backend", "cpu"]);
    refused_before_loading(&args, "take no reference pictures");

    let result = dir.path().join("klein.json");
    let result_arg = result.display().to_string();
    let mut args = vec!["bench", "--workload", "flux2-klein-1024-4", "--steps", "2"];
    args.extend(["--width", "32", "--height", "32", "--images", "2"]);
    args.extend(["--out", result_arg.as_str()]);
    args.extend(common);
    let o = sdbench(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&result).unwrap()).unwrap();
    assert_eq!(r["workload"]["scheduler"], "flow_euler");
    assert_eq!(r["workload"]["model"]["family"], "flux2-klein");
    assert_eq!(r["workload"]["standard"], false);
    assert_eq!(r["results"].as_array().unwrap().len(), 2);

    let mut args = vec!["timing", "--width", "64", "--height", "64", "--repeat", "1"];
    args.extend(common);
    let o = sdbench(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("transformer call (batch 1, 64 image + 512 text tokens)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("vae decode (32x16x16 -> 3x64x64)"),
        "{stdout}"
    );
}

/// A model that cannot fit the machine's memory on the CPU is refused before anything loads,
/// with its need and what would fit: never a kill by the kernel's out-of-memory killer part-way.
/// (FLUX.2 klein 4B in f32 needs about 27 GiB; the check is told the machine has 12.)
#[test]
fn a_model_larger_than_host_memory_is_refused_before_loading() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("klein.png");
    let started = std::time::Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_sdbench"))
        .args([
            "generate",
            "--model",
            "synthetic-flux2-klein",
            "--backend",
            "cpu",
        ])
        .args([
            "--precision",
            "f32",
            "--prompt",
            "a lighthouse",
            "--steps",
            "1",
            "--out",
        ])
        .arg(&out)
        .env("SDBENCH_HOST_MEMORY_LIMIT_GIB", "12")
        .env("SDBENCH_DATA_DIR", dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let message = stderr(&o);
    assert!(
        message.contains("out of host memory before starting")
            && message.contains("needs about")
            && message.contains("of RAM"),
        "{message}"
    );
    assert!(!out.exists());
    // Refused from the configs, not after making 27 GiB of weights.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

/// A file of `tensors`, each of its shape, all zeros.
fn zeros_file(path: &Path, tensors: &[(String, Vec<usize>)]) {
    let data: Vec<Vec<f32>> = tensors
        .iter()
        .map(|(_, s)| vec![0.0; s.iter().product()])
        .collect();
    let tensors: Vec<(&str, Vec<usize>, &[f32])> = tensors
        .iter()
        .zip(&data)
        .map(|((n, s), d)| (n.as_str(), s.clone(), d.as_slice()))
        .collect();
    sdbench_diffusion::io::safetensors::write_f32(path, &tensors).unwrap();
}

/// A transformer file with FLUX.2 klein 4B's names and sizes where they tell its preset (the
/// embedder's width, 5 double- and 20 single-stream blocks); a text encoder file of `width`; a
/// VAE file of `latent` channels.
fn comfyui_parts(models: &Path, text_width: usize, latent: usize) -> [PathBuf; 3] {
    let mut klein = vec![
        ("x_embedder.weight".to_string(), vec![3072, 128]),
        // The modulation FLUX.2's blocks share (FLUX.1's blocks have their own).
        (
            "double_stream_modulation_img.linear.weight".to_string(),
            vec![1],
        ),
    ];
    klein.extend((0..5).map(|i| (format!("transformer_blocks.{i}.norm.weight"), vec![1])));
    klein.extend((0..20).map(|i| {
        (
            format!("single_transformer_blocks.{i}.norm.weight"),
            vec![1],
        )
    }));
    let paths = [
        models.join("diffusion_models/klein/flux-2-klein-4b-bf16.safetensors"),
        models.join(format!(
            "text_encoders/qwen3-width-{text_width}.safetensors"
        )),
        models.join(format!("vae/vae-{latent}-channels.safetensors")),
    ];
    for path in &paths {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    }
    zeros_file(&paths[0], &klein);
    zeros_file(
        &paths[1],
        &[("model.embed_tokens.weight".into(), vec![1, text_width])],
    );
    zeros_file(
        &paths[2],
        &[
            ("decoder.conv_in.weight".into(), vec![1, latent, 1, 1]),
            ("decoder.up_blocks.0.resnets.0.norm1.weight".into(), vec![1]),
        ],
    );
    paths
}

/// The entry of `sdbench models --json`'s output for `path`.
fn listed_model(listed: &serde_json::Value, path: &Path) -> serde_json::Value {
    listed["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["model"] == path.display().to_string())
        .unwrap_or_else(|| panic!("{} is not listed: {listed}", path.display()))
        .clone()
}

/// `sdbench models` pairs a FLUX.1 [dev] transformer file in Black Forest Labs' names (its
/// sizes: 19 double- and 38 single-stream blocks of width 3072, the guidance embedding) with
/// ComfyUI's `clip_l`, `t5xxl` and `ae` files beside it, each told by its names and width.
#[test]
fn models_pairs_a_flux1_transformer_with_the_clip_t5_and_vae_beside_it() {
    let home = tempfile::tempdir().unwrap();
    let comfy = home.path().join("ComfyUI/models");
    for sub in ["diffusion_models", "text_encoders", "vae"] {
        std::fs::create_dir_all(comfy.join(sub)).unwrap();
    }
    let mut names = vec![
        ("img_in.weight".to_string(), vec![3072, 64]),
        ("vector_in.in_layer.weight".to_string(), vec![1]),
        ("guidance_in.in_layer.weight".to_string(), vec![1]),
    ];
    names.extend((0..19).map(|i| (format!("double_blocks.{i}.img_mod.lin.weight"), vec![1])));
    names.extend((0..38).map(|i| (format!("single_blocks.{i}.modulation.lin.weight"), vec![1])));
    let dev = comfy.join("diffusion_models/flux1-dev.safetensors");
    zeros_file(&dev, &names);
    let clip = comfy.join("text_encoders/clip_l.safetensors");
    zeros_file(
        &clip,
        &[(
            "text_model.embeddings.token_embedding.weight".into(),
            vec![1, 768],
        )],
    );
    let t5 = comfy.join("text_encoders/t5xxl_fp16.safetensors");
    zeros_file(
        &t5,
        &[
            ("shared.weight".into(), vec![1, 4096]),
            (
                "encoder.block.0.layer.0.SelfAttention.q.weight".into(),
                vec![1],
            ),
        ],
    );
    let vae = comfy.join("vae/ae.safetensors");
    zeros_file(
        &vae,
        &[
            ("decoder.conv_in.weight".into(), vec![1, 16, 1, 1]),
            ("decoder.up_blocks.0.resnets.0.norm1.weight".into(), vec![1]),
        ],
    );
    let o = Command::new(env!("CARGO_BIN_EXE_sdbench"))
        .args(["models", "--json"])
        .env("HOME", home.path())
        .env("HF_HUB_CACHE", home.path().join("hf"))
        .env_remove("SDBENCH_MODELS_DIRS")
        .env_remove("INVOKEAI_ROOT")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let listed: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let paired = listed_model(&listed, &dev);
    assert_eq!(paired["runnable"], true, "{paired}");
    assert_eq!(paired["family"], "FLUX.1");
    let texts: Vec<&str> = paired["text_encoders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(texts.len(), 2, "{paired}");
    for file in [&clip, &t5] {
        assert!(
            texts.contains(&file.display().to_string().as_str()),
            "{paired}"
        );
    }
    assert_eq!(paired["vae"], vae.display().to_string());
}

/// `sdbench models` finds what other apps keep, says what each is and why it cannot run.
#[test]
fn models_lists_other_apps_files_and_why_each_runs_or_not() {
    let home = tempfile::tempdir().unwrap();
    let comfy = home.path().join("ComfyUI/models");
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../diffusion/tests/fixtures");
    std::fs::create_dir_all(comfy.join("checkpoints")).unwrap();
    std::fs::create_dir_all(comfy.join("diffusion_models")).unwrap();
    let gguf = comfy.join("checkpoints/tiny-sd.gguf");
    std::fs::copy(fixtures.join("weight-formats/tiny-sd.ldm.q8_0.gguf"), &gguf).unwrap();
    std::fs::write(comfy.join("checkpoints/old.ckpt"), b"pickle").unwrap();
    // FLUX.2's names: its blocks, and the modulation they share (FLUX.1's blocks have their own).
    let flux = comfy.join("diffusion_models/flux-2-klein-4b.safetensors");
    sdbench_diffusion::io::safetensors::write_f32(
        &flux,
        &[
            ("double_blocks.0.img_attn.qkv.weight", vec![3, 2], &[0.0; 6]),
            (
                "double_stream_modulation_img.lin.weight",
                vec![3, 2],
                &[0.0; 6],
            ),
        ],
    )
    .unwrap();
    let models = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_sdbench"))
            .arg("models")
            .args(args)
            .env("HOME", home.path())
            .env("HF_HUB_CACHE", home.path().join("hf"))
            .env_remove("SDBENCH_MODELS_DIRS")
            .env_remove("INVOKEAI_ROOT")
            .output()
            .unwrap()
    };
    let o = models(&["--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let listed: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(listed["folders"][0]["app"], "ComfyUI", "{listed}");
    let entry = |path: &Path| listed_model(&listed, path);
    let tiny = entry(&gguf);
    assert_eq!(tiny["runnable"], true, "{tiny}");
    assert_eq!(tiny["found_in"], "ComfyUI");
    assert_eq!(tiny["family"], "Stable Diffusion");
    let weights = tiny["weights"].as_str().unwrap();
    assert!(
        weights.starts_with("GGUF ") && weights.contains("Q8_0"),
        "{weights}"
    );
    let flux = entry(&flux);
    assert_eq!(flux["runnable"], false);
    let problem = flux["problem"].as_str().unwrap();
    assert!(
        problem.contains("the only FLUX.2 configs built in") && problem.contains("--model-config"),
        "{flux}"
    );
    // No text encoder or VAE beside it: which are missing.
    let [klein, text, vae] = comfyui_parts(&comfy, 1024, 16);
    let json = || serde_json::from_slice::<serde_json::Value>(&models(&["--json"]).stdout).unwrap();
    let alone = listed_model(&json(), &klein);
    assert_eq!(alone["runnable"], false, "{alone}");
    assert!(
        alone["problem"]
            .as_str()
            .unwrap()
            .contains("text_encoder (a Qwen3 text encoder), vae (a VAE) not found beside it"),
        "{alone}"
    );
    // Qwen3-4B's width and FLUX.2's 32 latent channels beside it (after the others in path
    // order): it runs with those.
    let [_, text_4b, vae_32] = comfyui_parts(&comfy, 2560, 32);
    assert!(text < text_4b && vae < vae_32);
    let paired = listed_model(&json(), &klein);
    assert_eq!(paired["runnable"], true, "{paired}");
    assert_eq!(paired["family"], "FLUX.2 klein");
    assert_eq!(
        paired["text_encoders"],
        serde_json::json!([text_4b.display().to_string()])
    );
    assert_eq!(paired["vae"], vae_32.display().to_string());
    let o = models(&["--runnable"]);
    let text_out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        text_out.contains(&format!(
            "runs: --model {} --text-encoder {} --vae {}",
            klein.display(),
            text_4b.display(),
            vae_32.display()
        )),
        "{text_out}"
    );
    // Each model's name is a line of its own; the parts are not models.
    for part in [&text, &text_4b, &vae, &vae_32] {
        assert!(
            !text_out.lines().any(|l| l == part.display().to_string()),
            "a part is listed as a model: {text_out}"
        );
    }

    let pickle = entry(&comfy.join("checkpoints/old.ckpt"));
    assert!(
        pickle["problem"].as_str().unwrap().contains("pickle"),
        "{pickle}"
    );

    // The text form says how to run what runs; --runnable leaves out the rest.
    let o = models(&["--runnable"]);
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        text.contains(&format!("runs: --model {}", gguf.display())),
        "{text}"
    );
    assert!(
        !text.contains("old.ckpt") && !text.contains("cannot run"),
        "{text}"
    );

    // A folder that is not there is a usage error, named.
    let o = models(&["--models-dir", "/no/such/folder"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("/no/such/folder is not a folder"),
        "{}",
        stderr(&o)
    );
}
