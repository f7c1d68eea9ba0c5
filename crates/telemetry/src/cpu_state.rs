//! The CPU's clocks, temperature and thermal throttling on Linux, read beside RAPL's power: the
//! mean of the cores' `cpufreq/scaling_cur_freq` against the largest `cpuinfo_max_freq`, the
//! package temperature from the `k10temp`, `coretemp` or `zenpower` hwmon, and the kernel's
//! thermal throttle counters (`thermal_throttle/{core,package}_throttle_count`, Intel's): a count
//! that rose since the last reading means the CPU was thermally throttled in between. Virtual
//! machines usually have none of these files; what is missing stays unread.

use std::path::{Path, PathBuf};

use crate::reading::Reading;
use crate::sysfs::{entries, read_trimmed, read_u64};

/// The hwmon drivers whose first temperature is the CPU package's (AMD's Tctl, Intel's package).
const CPU_TEMPERATURE_DRIVERS: &[&str] = &["k10temp", "coretemp", "zenpower"];

#[derive(Debug, Default)]
pub struct CpuState {
    /// Each core's `cpufreq` folder.
    cpufreq: Vec<PathBuf>,
    max_mhz: Option<u32>,
    temperature: Option<PathBuf>,
    throttle_counters: Vec<PathBuf>,
    last_count: Option<u64>,
}

impl CpuState {
    /// The files under `root` (`/` on a real machine).
    pub fn open(root: &Path) -> CpuState {
        let cpus: Vec<PathBuf> = entries(&root.join("sys/devices/system/cpu"), "cpu")
            .into_iter()
            .filter(|p| {
                let name = p.file_name().unwrap_or_default().to_string_lossy();
                name.len() > 3 && name[3..].bytes().all(|b| b.is_ascii_digit())
            })
            .collect();
        let cpufreq: Vec<PathBuf> = cpus
            .iter()
            .map(|cpu| cpu.join("cpufreq"))
            .filter(|f| f.join("scaling_cur_freq").is_file())
            .collect();
        let max_mhz = cpufreq
            .iter()
            .filter_map(|f| read_u64(&f.join("cpuinfo_max_freq")))
            .max()
            .map(|khz| (khz / 1000) as u32);
        let temperature = entries(&root.join("sys/class/hwmon"), "hwmon")
            .into_iter()
            .find(|h| {
                read_trimmed(&h.join("name"))
                    .is_some_and(|name| CPU_TEMPERATURE_DRIVERS.contains(&name.as_str()))
            })
            .map(|h| h.join("temp1_input"))
            .filter(|t| t.is_file());
        let throttle_counters: Vec<PathBuf> = cpus
            .iter()
            .flat_map(|cpu| {
                ["core_throttle_count", "package_throttle_count"]
                    .map(|counter| cpu.join("thermal_throttle").join(counter))
            })
            .filter(|c| c.is_file())
            .collect();
        CpuState {
            cpufreq,
            max_mhz,
            temperature,
            throttle_counters,
            last_count: None,
        }
    }

    /// Adds what it reads now to `reading`: the mean core clock and its maximum, the package
    /// temperature, and "cpu_thermal" when a throttle count rose since the last call.
    pub fn read_into(&mut self, reading: &mut Reading) {
        let clocks: Vec<u64> = self
            .cpufreq
            .iter()
            .filter_map(|f| read_u64(&f.join("scaling_cur_freq")))
            .collect();
        if !clocks.is_empty() {
            let mean_khz = clocks.iter().sum::<u64>() / clocks.len() as u64;
            reading.gpu_clock_mhz = Some((mean_khz / 1000) as u32);
            reading.gpu_clock_max_mhz = self.max_mhz;
        }
        reading.temperature_c = (self.temperature.as_ref())
            .and_then(|t| read_u64(t))
            .map(|millidegrees| millidegrees as f64 / 1000.0);
        if self.throttle_counters.is_empty() {
            return;
        }
        let counts: Vec<u64> = (self.throttle_counters.iter())
            .filter_map(|c| read_u64(c))
            .collect();
        if counts.len() != self.throttle_counters.len() {
            return;
        }
        let count = counts.iter().sum();
        if self.last_count.is_some_and(|last| count > last) {
            reading.throttle.push("cpu_thermal".into());
        }
        reading.throttle_read = self.last_count.is_some();
        self.last_count = Some(count);
    }
}
