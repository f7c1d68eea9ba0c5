//! Telemetry readers on recorded fake sysfs trees, one per vendor.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use sdbench_telemetry::power::{peak_vram, summarize_power, throttle_reasons};
use sdbench_telemetry::system::drm_gpus;
use sdbench_telemetry::{discover, Reading, Sample, Sampler, Vendor};

fn put(root: &Path, path: &str, text: &str) {
    let file = root.join(path);
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(file, text).unwrap();
}

/// A machine with an AMD discrete GPU, an Intel Arc (xe) GPU, an Intel iGPU without hwmon, an
/// NVIDIA card (left to NVML), a display connector, and two RAPL packages.
fn fake_machine(root: &Path) {
    let amd = "sys/class/drm/card1/device";
    put(root, &format!("{amd}/vendor"), "0x1002\n");
    put(root, &format!("{amd}/device"), "0x744c\n");
    put(
        root,
        &format!("{amd}/uevent"),
        "DRIVER=amdgpu\nPCI_SLOT_NAME=0000:03:00.0\n",
    );
    put(
        root,
        &format!("{amd}/product_name"),
        "AMD Radeon RX 7900 XTX\n",
    );
    put(root, &format!("{amd}/mem_info_vram_used"), "1073741824\n");
    put(root, &format!("{amd}/mem_info_vram_total"), "25753026560\n");
    put(root, &format!("{amd}/gpu_busy_percent"), "97\n");
    put(
        root,
        &format!("{amd}/hwmon/hwmon4/power1_average"),
        "287000000\n",
    );
    put(root, &format!("{amd}/hwmon/hwmon4/temp1_input"), "64000\n");
    put(
        root,
        &format!("{amd}/hwmon/hwmon4/freq1_input"),
        "2498000000\n",
    );
    // Recorded from an RX 7900 XTX: its shader clock levels, the current one starred.
    put(
        root,
        &format!("{amd}/pp_dpm_sclk"),
        "0: 500Mhz\n1: 1733Mhz \n2: 2498Mhz *\n3: 2525Mhz\n",
    );
    put(root, "sys/class/drm/card1-DP-1/status", "connected\n");

    let arc = "sys/class/drm/card2/device";
    put(root, &format!("{arc}/vendor"), "0x8086\n");
    put(root, &format!("{arc}/device"), "0x56a0\n");
    put(
        root,
        &format!("{arc}/uevent"),
        "DRIVER=xe\nPCI_SLOT_NAME=0000:04:00.0\n",
    );
    put(root, &format!("{arc}/hwmon/hwmon5/name"), "xe\n");
    put(
        root,
        &format!("{arc}/hwmon/hwmon5/energy1_input"),
        "1000000000\n",
    );

    let igpu = "sys/class/drm/card0/device";
    put(root, &format!("{igpu}/vendor"), "0x8086\n");
    put(
        root,
        &format!("{igpu}/uevent"),
        "DRIVER=i915\nPCI_SLOT_NAME=0000:00:02.0\n",
    );

    let nv = "sys/class/drm/card3/device";
    put(root, &format!("{nv}/vendor"), "0x10de\n");
    put(
        root,
        &format!("{nv}/uevent"),
        "DRIVER=nvidia\nPCI_SLOT_NAME=0000:01:00.0\n",
    );

    for (zone, energy) in [("intel-rapl:0", "5000000"), ("intel-rapl:1", "7000000")] {
        put(
            root,
            &format!("sys/class/powercap/{zone}/name"),
            "package\n",
        );
        put(
            root,
            &format!("sys/class/powercap/{zone}/energy_uj"),
            energy,
        );
        put(
            root,
            &format!("sys/class/powercap/{zone}/max_energy_range_uj"),
            "262143328850\n",
        );
    }
    put(root, "sys/class/powercap/intel-rapl:0:0/energy_uj", "1\n");
}

#[test]
fn discovers_each_vendor_and_explains_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    fake_machine(dir.path());
    let found = discover(dir.path(), false);
    let ids: Vec<&str> = found.sources.iter().map(|s| s.info().id.as_str()).collect();
    assert_eq!(ids, ["amdgpu:card1", "xe:card2", "rapl:package"]);
    assert_eq!(found.unavailable.len(), 1, "{:?}", found.unavailable);
    let igpu = &found.unavailable[0];
    assert_eq!(
        (igpu.vendor, igpu.device.as_str()),
        (Vendor::Intel, "card0")
    );
    assert!(
        igpu.reason.contains("no i915 hwmon energy counter"),
        "{}",
        igpu.reason
    );

    let amd = &found.sources[0];
    assert_eq!(amd.info().device, "AMD Radeon RX 7900 XTX");
    assert_eq!(amd.info().pci_bus.as_deref(), Some("0000:03:00.0"));
    assert!(amd.info().method.contains("power1_average"));
}

#[test]
fn amdgpu_reads_power_vram_clock_and_temperature() {
    let dir = tempfile::tempdir().unwrap();
    fake_machine(dir.path());
    let mut found = discover(dir.path(), false);
    let reading = found.sources[0].read();
    assert_eq!(
        reading,
        Reading {
            power_w: Some(287.0),
            vram_used_bytes: Some(1 << 30),
            vram_total_bytes: Some(25_753_026_560),
            gpu_clock_mhz: Some(2498),
            gpu_clock_max_mhz: Some(2525),
            temperature_c: Some(64.0),
            utilization_pct: Some(97.0),
            ..Reading::default()
        }
    );
}

#[test]
fn energy_counters_become_power_and_rapl_wraps_are_unfolded() {
    let dir = tempfile::tempdir().unwrap();
    fake_machine(dir.path());
    let mut found = discover(dir.path(), false);
    let first_arc = found.sources[1].read();
    assert_eq!(first_arc.energy_j, Some(1000.0));
    assert_eq!(first_arc.power_w, None, "one reading has no rate yet");
    let first_cpu = found.sources[2].read();
    assert_eq!(first_cpu.energy_j, Some(12.0));

    let start = Instant::now();
    std::thread::sleep(Duration::from_millis(200));
    // +30 J on the GPU; package 0 wraps (range 262143.32885 J), package 1 +2 J.
    put(
        dir.path(),
        "sys/class/drm/card2/device/hwmon/hwmon5/energy1_input",
        "1030000000",
    );
    put(
        dir.path(),
        "sys/class/powercap/intel-rapl:0/energy_uj",
        "1000000",
    );
    put(
        dir.path(),
        "sys/class/powercap/intel-rapl:1/energy_uj",
        "9000000",
    );
    let arc = found.sources[1].read();
    let cpu = found.sources[2].read();
    let elapsed = start.elapsed().as_secs_f64();
    assert_eq!(arc.energy_j, Some(1030.0));
    let arc_power = arc.power_w.unwrap();
    assert!(
        arc_power <= 30.0 / 0.2 + 1e-9 && arc_power >= 30.0 / elapsed - 1.0,
        "{arc_power}"
    );
    let unfolded = 262_143.328_85 + 1.0 + 9.0;
    assert!(
        (cpu.energy_j.unwrap() - unfolded).abs() < 1e-6,
        "{:?}",
        cpu.energy_j
    );
    // Wrapped delta: (262143.32885 - 5 + 1) + 2 J.
    let cpu_power = cpu.power_w.unwrap();
    let delta = 262_143.328_85 - 5.0 + 1.0 + 2.0;
    assert!(
        cpu_power <= delta / 0.2 + 1e-6 && cpu_power > delta / (elapsed + 0.05),
        "{cpu_power}"
    );
}

#[test]
fn gpu_identity_comes_from_drm() {
    let dir = tempfile::tempdir().unwrap();
    fake_machine(dir.path());
    let gpus = drm_gpus(dir.path());
    let summary: Vec<(String, String, Option<String>, Option<String>)> = gpus
        .iter()
        .map(|g| {
            (
                g.name.clone(),
                g.vendor.clone(),
                g.driver.clone(),
                g.pci_bus.clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (
                "Intel GPU".into(),
                "Intel".into(),
                Some("i915".into()),
                Some("0000:00:02.0".into())
            ),
            (
                "AMD Radeon RX 7900 XTX".into(),
                "AMD".into(),
                Some("amdgpu".into()),
                Some("0000:03:00.0".into())
            ),
            (
                "Intel GPU 0x56a0".into(),
                "Intel".into(),
                Some("xe".into()),
                Some("0000:04:00.0".into())
            ),
            (
                "NVIDIA GPU".into(),
                "NVIDIA".into(),
                Some("nvidia".into()),
                Some("0000:01:00.0".into())
            ),
        ]
    );
    assert_eq!(gpus[1].vram_bytes, Some(25_753_026_560));
}

fn sample(t: f64, power: Option<f64>, energy: Option<f64>) -> Sample {
    Sample {
        t,
        source: "gpu".into(),
        reading: Reading {
            power_w: power,
            energy_j: energy,
            ..Reading::default()
        },
    }
}

#[test]
fn power_summary_prefers_the_energy_counter() {
    // 100 J/s by the counter; the instantaneous power readings are noisy around it.
    let samples: Vec<Sample> = (0..=20)
        .map(|i| {
            let t = i as f64 * 0.1;
            sample(
                t,
                Some(if i % 2 == 0 { 90.0 } else { 110.0 }),
                Some(500.0 + 100.0 * t),
            )
        })
        .collect();
    let s = summarize_power(&samples, "gpu", 0.5, 1.5).unwrap();
    assert!((s.avg_w - 100.0).abs() < 1e-9, "{s:?}");
    assert_eq!(s.method, "energy counter");
    assert_eq!((s.min_w, s.max_w), (90.0, 110.0));
    assert!((s.energy_j - 100.0).abs() < 1e-9);
    assert_eq!(s.samples, 11);
    assert!(summarize_power(&samples, "other", 0.0, 2.0).is_err());
}

#[test]
fn power_summary_integrates_power_samples_without_a_counter() {
    // A ramp from 100 W to 200 W over 1 s: average 150 W.
    let samples: Vec<Sample> = (0..=10)
        .map(|i| sample(i as f64 * 0.1, Some(100.0 + 100.0 * i as f64 / 10.0), None))
        .collect();
    let s = summarize_power(&samples, "gpu", 0.0, 1.0).unwrap();
    assert!((s.avg_w - 150.0).abs() < 1e-9, "{s:?}");
    assert_eq!(s.method, "power samples");
    assert_eq!((s.min_w, s.max_w), (100.0, 200.0));
    let err = summarize_power(&samples, "gpu", 0.42, 0.48).unwrap_err();
    assert!(err.contains("at least two"), "{err}");

    let mut with_vram = samples.clone();
    with_vram[3].reading.vram_used_bytes = Some(7);
    with_vram[4].reading.vram_used_bytes = Some(9);
    with_vram[4].reading.throttle = vec!["power_cap".into()];
    with_vram[5].reading.throttle = vec!["power_cap".into(), "hw_thermal".into()];
    assert_eq!(peak_vram(&with_vram, "gpu", 0.0, 1.0), Some(9));
    assert_eq!(peak_vram(&with_vram, "gpu", 0.35, 1.0), Some(9));
    assert_eq!(peak_vram(&with_vram, "gpu", 0.45, 1.0), None);
    assert_eq!(
        throttle_reasons(&with_vram, "gpu", 0.0, 1.0),
        ["hw_thermal", "power_cap"]
    );
}

#[test]
fn the_sampler_reads_at_ten_hertz_on_its_own_thread() {
    let dir = tempfile::tempdir().unwrap();
    fake_machine(dir.path());
    let found = discover(dir.path(), false);
    let epoch = Instant::now();
    let sampler = Sampler::start(found.sources, Duration::from_millis(100), epoch);
    std::thread::sleep(Duration::from_millis(450));
    assert_eq!(sampler.latest().len(), 3);
    let samples = sampler.stop();
    let amd: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.source == "amdgpu:card1")
        .collect();
    // Readings at 0, .1, .2, .3, .4 s and a last one at stop.
    assert!((5..=7).contains(&amd.len()), "{} samples", amd.len());
    assert!(amd.windows(2).all(|w| w[1].t > w[0].t));
    let last = amd.last().unwrap().t;
    assert!(
        last >= 0.44,
        "the final reading at stop is missing ({last})"
    );
}

/// amdgpu's clock level tables as the driver writes them, and what is not one.
#[test]
fn amdgpu_clock_tables_give_their_top_level() {
    use sdbench_telemetry::amd::top_dpm_level_mhz;
    assert_eq!(
        top_dpm_level_mhz("0: 96Mhz\n1: 456Mhz *\n2: 1000Mhz\n"),
        Some(1000)
    );
    assert_eq!(top_dpm_level_mhz("0: 500MHz\n1: 2100MHz\n"), Some(2100));
    assert_eq!(top_dpm_level_mhz("OD_SCLK:\n"), None);
    assert_eq!(top_dpm_level_mhz(""), None);
}

/// The CPU's state beside RAPL's power, from a tree recorded on an Intel machine (two cores'
/// cpufreq, the coretemp hwmon, the kernel's thermal throttle counters): the mean core clock
/// against the largest maximum, the package temperature, and "cpu_thermal" in the reading after
/// a throttle count rose (the first reading has no count to compare with, so it reads none).
#[test]
fn the_cpu_package_reading_carries_clocks_temperature_and_thermal_throttling() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fake_machine(root);
    for (cpu, khz) in [("cpu0", "3400000"), ("cpu1", "2800000")] {
        let base = format!("sys/devices/system/cpu/{cpu}");
        put(
            root,
            &format!("{base}/cpufreq/scaling_cur_freq"),
            &format!("{khz}\n"),
        );
        put(
            root,
            &format!("{base}/cpufreq/cpuinfo_max_freq"),
            "4700000\n",
        );
        put(
            root,
            &format!("{base}/thermal_throttle/core_throttle_count"),
            "3\n",
        );
        put(
            root,
            &format!("{base}/thermal_throttle/package_throttle_count"),
            "7\n",
        );
    }
    put(
        root,
        "sys/devices/system/cpu/cpufreq/policy0/scaling_governor",
        "performance\n",
    );
    put(root, "sys/class/hwmon/hwmon0/name", "acpitz\n");
    put(root, "sys/class/hwmon/hwmon0/temp1_input", "27800\n");
    put(root, "sys/class/hwmon/hwmon2/name", "coretemp\n");
    put(root, "sys/class/hwmon/hwmon2/temp1_input", "71000\n");
    let mut found = discover(root, false);
    let cpu = &mut found.sources[2];
    assert_eq!(cpu.info().id, "rapl:package");
    let first = cpu.read();
    assert_eq!(first.gpu_clock_mhz, Some(3100));
    assert_eq!(first.gpu_clock_max_mhz, Some(4700));
    assert_eq!(first.temperature_c, Some(71.0));
    assert!(
        first.throttle.is_empty() && !first.throttle_read,
        "{first:?}"
    );
    let steady = cpu.read();
    assert!(
        steady.throttle.is_empty() && steady.throttle_read,
        "{steady:?}"
    );
    put(
        root,
        "sys/devices/system/cpu/cpu1/thermal_throttle/package_throttle_count",
        "8\n",
    );
    let throttled = cpu.read();
    assert_eq!(throttled.throttle, ["cpu_thermal"]);
    assert!(throttled.throttle_read);
}
