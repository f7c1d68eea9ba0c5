#!/usr/bin/env python3
"""Tests of scripts/gpu-check against a fake sdbench (a small Python script that answers each
subcommand as the real one does, after sleeping what FAKE_SLEEPS says), so the kit's budget, tables
and exit status are checked without a GPU or a build:

    python3 scripts/test_gpu_check.py
    python3 -m unittest discover -s scripts -p 'test_gpu_check.py'
"""
import contextlib
import importlib.machinery
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "gpu-check")

# Answers `devices --json`, `--version`, `parity`, `timing` (and `timing --ops`), `bench` and
# `generate` (for scripts/memory-peaks). FAKE_BACKENDS: the usable backends (default vulkan);
# FAKE_SLEEPS: {"subcommand": seconds} (FAKE_SLEEP for the others); FAKE_PARITY_OK=0: parity fails;
# FAKE_LOG: a file that gets one JSON line per call (its arguments and SDBENCH_KERNEL_CACHE).
FAKE_SDBENCH = r'''#!/usr/bin/env python3
import json, os, sys, time

args = sys.argv[1:]
command = args[0] if args else ""
cache = os.environ.get("SDBENCH_KERNEL_CACHE")
if os.environ.get("FAKE_LOG"):
    seen = sorted(os.listdir(cache)) if cache and os.path.isdir(cache) else None
    with open(os.environ["FAKE_LOG"], "a") as f:
        f.write(json.dumps({"args": args, "cache": cache, "cache_files": seen}) + "\n")


def arg(name, default=None):
    return args[args.index(name) + 1] if name in args else default


def nap():
    sleeps = json.loads(os.environ.get("FAKE_SLEEPS", "{}"))
    time.sleep(sleeps.get(command, float(os.environ.get("FAKE_SLEEP", "0"))))


if command == "--version":
    print("sdbench 0.1.0 (fake)")
elif command == "devices":
    nap()
    usable = os.environ.get("FAKE_BACKENDS", "vulkan").split(",")
    device = {"index": 0, "name": "fake", "class": "software"}
    backends = [{"backend": b, "usable": b in usable, "detail": "fake",
                 "devices": [dict(device, name=f"fake {b}")] if b in usable else []}
                for b in ["cuda", "vulkan"]]
    backends.append({"backend": "cpu", "usable": True, "detail": "burn flex",
                     "devices": [{"index": 0, "name": "CPU", "class": "cpu"}]})
    print(json.dumps({"backends": backends, "auto": {"backend": usable[0]}}))
elif command == "parity":
    nap()
    ok = os.environ.get("FAKE_PARITY_OK", "1") == "1"
    worst = 1e-3 if ok else 0.5
    print(json.dumps({"backend": arg("--backend"), "precision": arg("--precision"), "tolerance": 3e-2, "ok": ok,
                      "fixtures": [{"fixture": "tiny-sd15", "ok": ok, "worst": worst, "worst_key": "generate.euler"}]}))
    sys.exit(0 if ok else 1)
elif command == "timing" and "--ops" in args and arg("--ops-of") == "flux2-klein":
    nap()
    weights = arg("--ops-weights")
    print(f"backend {arg('--backend')} on fake, {arg('--precision')}: FLUX.2 klein 4B's transformer layers")
    share = "; dequantize 0.250 ms (5%)" if weights else ""
    print(f"op linear rows=4608 in=3072 out=9216: median {5.25 if weights else 5.0:.3f} ms, 150000.0 GFLOP/s "
          f"(n=3){share}")
    print("op attention n=1 heads=24 tokens=4608 dim=128: median 2.000 ms, 500000.0 GFLOP/s (n=3)")
elif command == "timing" and "--ops" in args:
    nap()
    print(f"backend {arg('--backend')} on fake, {arg('--precision')}: SD1.5's layers")
    print("op conv3x3 n=2 c=320 h=64 w=64: median 1.500 ms, 2000.0 GFLOP/s (n=3)")
    print("op groupnorm n=2 c=320 h=64 w=64: median 0.100 ms, 300.0 GB/s (n=3)")
elif command == "timing":
    # The first line, then the sleep: a run killed while sleeping has printed it.
    print(f"backend {arg('--backend')} on fake {arg('--backend')}, {arg('--precision')}, "
          f"model {arg('--model')} (loaded in 1.50 s)", flush=True)
    nap()
    marker = os.path.join(cache, "kernels.bin") if cache else None
    warm = bool(marker and os.path.exists(marker))
    if marker:
        open(marker, "w").close()
    compiled, hits = (3, 178) if warm else (181, 0)
    if arg("--model") == "synthetic-flux2-klein":
        print("transformer call (batch 1, 4096 image + 512 text tokens): median 0.500 s (min 0.5, max 0.5, n=3); "
              "warm-up 20.0 s")
    elif arg("--model") == "synthetic-sd35-medium":
        print("transformer call (batch 1, 4096 image + 333 text tokens): median 0.400 s (min 0.4, max 0.4, n=3); "
              "warm-up 15.0 s")
    elif arg("--model") == "synthetic-flux1-schnell":
        print("transformer call (batch 1, 4096 image + 256 text tokens): median 0.900 s (min 0.9, max 0.9, n=3); "
              "warm-up 30.0 s")
    else:
        print("unet call (batch 2, 4x64x64 latents): median 0.250 s (min 0.2, max 0.3, n=3); warm-up 9.0 s")
    print("vae decode (4x64x64 -> 3x512x512): median 0.125 s (min 0.1, max 0.2, n=3); warm-up 4.0 s")
    if arg("--model") in ("synthetic-sd35-medium", "synthetic-flux1-schnell"):
        print("t5 call (256 tokens): median 0.060 s (min 0.06, max 0.06, n=3); warm-up 2.0 s")
    print(f"kernels: {compiled} compiled in {0.5 if warm else 44.6:.2f} s, {hits} from the cache in 0.20 s, "
          "0 autotuned in 0.00 s (0 from the cache); cache on")
elif command == "bench":
    nap()
    result = {
        "backend": {"precision": "f16"}, "valid": True, "invalid_reasons": [],
        "scores": {"images_per_minute": 12.5, "seconds_per_image": {"median": 4.8}, "steps_per_second": 6.25,
                   "vram_peak_bytes": 3 * 2**30},
        "step_timing": {"sync_cost_ratio": 1.02},
        "cold_start": {"load_seconds": 2.25, "warmup_seconds": 7.5,
                       "kernels": {"compiled": 2, "compile_seconds": 0.4, "cache_hits": 179,
                                   "compiled_while_timed": 0}},
    }
    with open(arg("--out"), "w") as f:
        json.dump(result, f)
elif command == "generate":
    nap()
    print("load 1200 MiB")
    print("peak reserved 2400 MiB")
    print("wrote out.png in 1.25 s: text encoder 0.1 s, unet 1.0 s, vae 0.15 s")
else:
    sys.exit(f"error: the fake sdbench does not know {args}")
'''


def load_gpu_check():
    loader = importlib.machinery.SourceFileLoader("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("gpu_check", loader))
    loader.exec_module(module)
    return module


def section(out, heading):
    """The table rows (cells) under the first heading that starts with `heading`."""
    lines = out.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("## " + heading))
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        if line.startswith("| ") and not line.startswith("| ---"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


class GpuCheckAgainstAFake(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.fake = os.path.join(self.tmp.name, "sdbench")
        with open(self.fake, "w") as f:
            f.write(FAKE_SDBENCH)
        os.chmod(self.fake, 0o755)
        self.log = os.path.join(self.tmp.name, "calls.jsonl")

    def tearDown(self):
        self.tmp.cleanup()

    def check(self, *args, sleeps=None, sleep=0.02, backends="vulkan", parity_ok=True):
        """Runs gpu-check on the fake: (exit status, stdout, seconds)."""
        env = dict(os.environ, FAKE_LOG=self.log, FAKE_SLEEPS=json.dumps(sleeps or {}), FAKE_SLEEP=str(sleep),
                   FAKE_BACKENDS=backends, FAKE_PARITY_OK="1" if parity_ok else "0")
        # --python /bin/false: no torch here, whatever this machine has.
        cmd = [sys.executable, SCRIPT, "--sdbench", self.fake, "--python", "/bin/false", *args]
        start = time.monotonic()
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)
        return p.returncode, p.stdout, time.monotonic() - start

    def calls(self):
        with open(self.log) as f:
            return [json.loads(line) for line in f]

    def test_a_generous_budget_runs_every_part(self):
        code, out, _ = self.check("--budget", "60", "--reserve", "1")
        self.assertEqual(code, 0, out)
        for heading in ["Parity with diffusers in f16", "SD1.5 at 512x512", "Synthetic benchmark, standard",
                        "SDXL base at 1024x1024", "FLUX.2 klein 4B at 1024x1024", "Parity with diffusers in f32", "Layers on vulkan",
                        "Parity with diffusers in bf16", "Memory profiles: synthetic at 512x512",
                        "Memory profiles: synthetic-flux2-klein at 1024x1024",
                        "Memory profiles: synthetic-sdxl-base at 1024x1024"]:
            self.assertTrue(section(out, heading), f"no table under {heading!r}:\n{out}")
        self.assertEqual(section(out, "Parity with diffusers in f16")[1][:3], ["vulkan", "f16", "ok"])
        bench = section(out, "Synthetic benchmark")[1]
        self.assertEqual(bench[:3], ["vulkan", "f16", "12.50"])
        self.assertEqual(bench[-6:], ["2.25", "7.50", "2", "0.40", "179", "0"])
        self.assertIn("steady state", out)
        self.assertEqual(section(out, "Layers on vulkan")[1][:3], ["vulkan", "conv3x3 n=2 c=320 h=64 w=64", "1.500"])
        # The run's precision, then Q8_0 and Q4_K: the linear layers only, with the dequantization's share.
        self.assertEqual(section(out, "FLUX.2 klein's linear layers with quantized weights on vulkan")[1:], [
            ["vulkan", "f16", "linear rows=4608 in=3072 out=9216", "5.000", "-", "-"],
            ["vulkan", "Q8_0", "linear rows=4608 in=3072 out=9216", "5.250", "0.250", "5%"],
            ["vulkan", "Q4_K", "linear rows=4608 in=3072 out=9216", "5.250", "0.250", "5%"],
        ])
        self.assertEqual(len(section(out, "Memory profiles: synthetic at")), 5)  # header and four profiles
        self.assertNotIn("skipped", out)
        self.assertNotIn("Vulkan on the same machine", out)  # vulkan was checked already
        self.assertNotIn("Out of device memory", out)  # no CUDA
        self.assertRegex(out, r"\nBudget: \d+ s used of 60 s")

    def test_cold_then_warm_timing_share_one_kernel_cache(self):
        # Each timing call sleeps 0.15 s, so its wall time shows in the table's one decimal.
        code, out, _ = self.check("--budget", "60", "--reserve", "1", "--parts", "timing,bench,sdxl",
                                  sleeps={"timing": 0.15})
        self.assertEqual(code, 0, out)
        header, cold, warm = section(out, "SD1.5 at 512x512")
        columns = dict(zip(header, zip(cold, warm)))
        self.assertEqual(columns["caches"], ("cold", "warm"))
        self.assertEqual(columns["device"], ("fake vulkan", "fake vulkan"))
        self.assertEqual(columns["load s"], ("1.50", "1.50"))
        self.assertEqual(columns["kernels compiled"], ("181", "3"))
        self.assertEqual(columns["compile s"], ("44.60", "0.50"))
        self.assertEqual(columns["from cache"], ("0", "178"))
        self.assertEqual(columns["UNet s"], ("0.250", "0.250"))
        self.assertEqual(columns["VAE s"], ("0.125", "0.125"))
        self.assertEqual(columns["diffusers UNet s"], ("-", "-"))
        self.assertTrue(all(float(s) >= 0.1 for s in columns["wall s"]), columns["wall s"])
        # One folder: empty for the cold run, kept for the warm run, the benchmark and SDXL.
        calls = [c for c in self.calls() if c["args"][0] in ("timing", "bench")]
        self.assertEqual([c["args"][0] for c in calls], ["timing", "timing", "bench", "timing"])
        self.assertEqual(len({c["cache"] for c in calls}), 1)
        self.assertEqual(calls[0]["cache_files"], [])
        self.assertEqual(calls[1]["cache_files"], ["kernels.bin"])
        self.assertEqual(section(out, "SDXL base")[1][3], "warm")
        self.assertEqual(section(out, "SDXL base")[1][8], "178")

    def test_the_flux2_part_times_its_transformer_in_the_denoiser_columns(self):
        code, out, _ = self.check("--budget", "60", "--reserve", "1", "--parts", "timing,flux2")
        self.assertEqual(code, 0, out)
        header, warm = section(out, "FLUX.2 klein 4B at 1024x1024")
        columns = dict(zip(header, warm))
        self.assertEqual((columns["caches"], columns["UNet s"], columns["VAE s"]), ("warm", "0.500", "0.125"))
        calls = [c for c in self.calls() if c["args"][0] == "timing"]
        self.assertIn("synthetic-flux2-klein", calls[-1]["args"])

    def test_the_sd3_part_times_its_transformer_and_t5(self):
        code, out, _ = self.check("--budget", "60", "--reserve", "1", "--parts", "timing,sd3")
        self.assertEqual(code, 0, out)
        header, warm = section(out, "SD3.5 Medium at 1024x1024")
        columns = dict(zip(header, warm))
        self.assertEqual((columns["caches"], columns["UNet s"], columns["VAE s"]), ("warm", "0.400", "0.125"))
        header, t5 = section(out, "SD3.5's T5-XXL encoder")
        columns = dict(zip(header, t5))
        self.assertEqual((columns["T5 s"], columns["diffusers T5 s"], columns["ratio"]), ("0.060", "-", "-"))
        calls = [c for c in self.calls() if c["args"][0] == "timing"]
        self.assertIn("synthetic-sd35-medium", calls[-1]["args"])

    def test_the_flux1_part_times_its_transformer_and_t5(self):
        code, out, _ = self.check("--budget", "60", "--reserve", "1", "--parts", "timing,flux1")
        self.assertEqual(code, 0, out)
        header, warm = section(out, "FLUX.1 [schnell] at 1024x1024")
        columns = dict(zip(header, warm))
        self.assertEqual((columns["caches"], columns["UNet s"], columns["VAE s"]), ("warm", "0.900", "0.125"))
        header, t5 = section(out, "FLUX.1's T5-XXL encoder")
        columns = dict(zip(header, t5))
        self.assertEqual((columns["T5 s"], columns["diffusers T5 s"], columns["ratio"]), ("0.060", "-", "-"))
        calls = [c for c in self.calls() if c["args"][0] == "timing"]
        self.assertIn("synthetic-flux1-schnell", calls[-1]["args"])

    def test_quick_leaves_out_the_full_size_parts(self):
        code, out, _ = self.check("--budget", "60", "--reserve", "1", "--quick")
        self.assertEqual(code, 0, out)
        for heading in ["SDXL base", "FLUX.2 klein 4B at 1024x1024", "SD3.5 Medium", "FLUX.1 [schnell]",
                        "FLUX.2 klein's linear layers"]:
            self.assertNotIn(heading, out)
        self.assertFalse([c for c in self.calls() if "--ops-of" in c["args"]])
        self.assertTrue(section(out, "Synthetic benchmark, quick"), out)

    def test_a_short_budget_skips_later_parts(self):
        # Parity starts while at least 2 x reserve remain and must leave less than that: with a
        # 3 s reserve the fake's start-up and a loaded machine have about 2 s of slack either way
        # (a 1 s reserve left too little on a busy machine).
        budget = 10
        code, out, seconds = self.check("--budget", str(budget), "--reserve", "3", sleeps={"parity": 4.5}, sleep=0)
        self.assertEqual(code, 0, out)  # skipped parts are listed, not failures
        self.assertEqual(section(out, "Parity with diffusers in f16")[1][:3], ["vulkan", "f16", "ok"])
        self.assertIn("skipped: no time left", section(out, "SD1.5 at 512x512")[1][4])
        self.assertIn("skipped: no time left", section(out, "Synthetic benchmark")[1][1])
        self.assertRegex(out, r"skipped: no time left \(\d+ s of the budget remained\)")
        skipped = out.split("Skipped (no time left):\n")[1]
        for part in ["timing synthetic vulkan f16 cold", "bench vulkan", "parity vulkan f32",
                     "memory profiles synthetic vulkan"]:
            self.assertIn("- " + part, skipped)
        self.assertNotIn("Failures", out)
        self.assertLess(seconds, budget + 1.5)

    def test_a_part_that_runs_out_of_time_fails(self):
        budget = 3.5
        code, out, seconds = self.check("--budget", str(budget), "--reserve", "1", "--parts", "timing,bench",
                                        sleeps={"timing": 10}, sleep=0)
        self.assertEqual(code, 1, out)
        header, cold, warm = section(out, "SD1.5 at 512x512")
        self.assertEqual(cold[1], "fake vulkan")  # what it printed before it was killed
        self.assertIn("timed out after", cold[3])
        self.assertIn("not run", warm[4])
        self.assertIn("skipped: no time left", section(out, "Synthetic benchmark")[1][1])
        self.assertRegex(out.split("Failures:\n")[1], r"- timing synthetic vulkan f16 cold: timed out after \d+ s")
        self.assertLess(seconds, budget + 1.5)

    def test_bf16_parity_runs_only_where_the_backend_has_bf16(self):
        code, out, _ = self.check("--budget", "30", "--reserve", "1", "--parts", "paritybf16", backends="vulkan")
        self.assertEqual(code, 0, out)
        self.assertEqual(section(out, "Parity with diffusers in bf16")[1][:3],
                         ["vulkan", "bf16", "not run: this backend has no bf16"])
        self.assertFalse([c for c in self.calls() if c["args"][0] == "parity"])
        code, out, _ = self.check("--budget", "30", "--reserve", "1", "--parts", "paritybf16", backends="cuda")
        self.assertEqual(code, 0, out)
        self.assertEqual(section(out, "Parity with diffusers in bf16")[1][:3], ["cuda", "bf16", "ok"])

    def test_a_failing_parity_fails_the_run(self):
        code, out, _ = self.check("--budget", "30", "--reserve", "1", "--parts", "parity16,parity32", parity_ok=False)
        self.assertEqual(code, 1, out)
        self.assertEqual(section(out, "Parity with diffusers in f16")[1][:4], ["vulkan", "f16", "FAILED", "5.00e-01"])
        self.assertEqual(section(out, "Parity with diffusers in f32")[1][:3], ["vulkan", "f32", "FAILED"])
        failures = out.split("Failures:\n")[1]
        self.assertIn("- parity vulkan f16", failures)
        self.assertIn("- parity vulkan f32", failures)

    def test_vulkan_beside_cuda_is_timed_last_in_its_own_cache(self):
        code, out, _ = self.check("--budget", "30", "--reserve", "1", "--parts", "timing,vulkan", backends="cuda,vulkan")
        self.assertEqual(code, 0, out)
        self.assertIn("backends checked: cuda;", out)
        self.assertEqual([r[0] for r in section(out, "SD1.5 at 512x512")[1:]], ["cuda", "cuda"])
        self.assertIn("No diffusers reference", out)
        header, vulkan = section(out, "Vulkan on the same machine")
        self.assertEqual(vulkan[:4], ["vulkan", "fake vulkan", "f16", "cold"])
        self.assertEqual(vulkan[header.index("kernels compiled")], "181")
        calls = [c for c in self.calls() if c["args"][0] == "timing"]
        self.assertEqual(len(calls), 3)
        self.assertEqual(calls[0]["cache"], calls[1]["cache"])
        self.assertNotEqual(calls[0]["cache"], calls[2]["cache"])
        self.assertEqual(calls[2]["cache_files"], [])


class Helpers(unittest.TestCase):
    def setUp(self):
        self.kit = load_gpu_check()

    def test_budget(self):
        now = [100.0]
        budget = self.kit.Budget(60, reserve=10, clock=lambda: now[0])
        self.assertEqual(budget.timeout_for(1000), 50)
        self.assertEqual(budget.timeout_for(20), 20)
        now[0] += 35  # 25 s left: 15 s to run
        self.assertEqual(budget.timeout_for(1000), 15)
        now[0] += 10  # 15 s left: 5 s, less than the reserve
        self.assertIsNone(budget.timeout_for(1000))
        self.assertEqual(budget.skip_note(), "skipped: no time left (15 s of the budget remained)")
        self.assertEqual(budget.used(), 45)

    def test_parse_timing(self):
        text = ("backend cuda on NVIDIA H100 80GB HBM3, f16, model synthetic (loaded in 6.50 s)\n"
                "parameters: text encoders 123.1M, unet 859.5M, vae decoder 49.5M\n"
                "unet call (batch 2, 4x64x64 latents): median 0.041 s (min 0.040, max 0.043, n=3); warm-up 50.1 s\n"
                "vae decode (4x64x64 -> 3x512x512): median 0.030 s (min 0.029, max 0.031, n=3); warm-up 9.9 s\n"
                "kernels: 181 compiled in 44.60 s, 0 from the cache in 0.00 s, 6 autotuned in 40.00 s "
                "(0 from the cache); cache on\n")
        self.assertEqual(self.kit.parse_timing(text), {
            "device": "NVIDIA H100 80GB HBM3", "load": 6.5, "compiled": 181, "compile s": 44.6, "from cache": 0,
            "unet call": 0.041, "vae decode": 0.03})
        self.assertEqual(self.kit.parse_timing("error: no device\n"), {})

    def test_run_kills_a_command_at_its_timeout(self):
        start = time.monotonic()
        with contextlib.redirect_stderr(io.StringIO()):  # the command's echo
            r = self.kit.run([sys.executable, "-c", "import time; print('started', flush=True); time.sleep(30)"], 1)
        self.assertLess(time.monotonic() - start, 5)
        self.assertEqual((r.code, r.out, r.timed_out), (124, "started\n", 1))
        self.assertEqual(self.kit.problem(r), "timed out after 1 s")


if __name__ == "__main__":
    unittest.main()
