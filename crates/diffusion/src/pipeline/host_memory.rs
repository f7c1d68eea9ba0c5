//! The host memory (RAM) a run needs, checked before any weight is read. On the CPU backend every
//! component lives there; on a GPU backend, what a profile keeps on the CPU (the text encoders
//! and the VAE, in f32) and the denoiser's weights while they are offloaded. A run that cannot fit
//! is refused with what it needs and what would fit, instead of being killed part-way by the
//! kernel's out-of-memory killer with no word (synthetic-flux2-klein in f32 on a 24 GB machine).

use std::path::Path;

use crate::device::{BackendKind, SelectedDevice};
use crate::error::{DiffusionError, Result};
use crate::io::weights::Precision;
use crate::models::config::VaeConfig;
use crate::pipeline::cgroup_memory;
use crate::pipeline::memory::MemoryProfile;
use crate::pipeline::memory_need::{
    denoiser_step_bytes, denoiser_weight_bytes, estimate, four_bit_advice, gib, vae_pixels,
    MemoryNeed, ModelSize, RequestShape, DEVICE_PROFILES,
};
use crate::pipeline::{LoadOptions, Placement};

/// What the process holds beside the model: code, the runtime, the backends' pools.
pub(crate) const PROCESS_BYTES: u64 = 256 << 20;

/// The VAE's activations per decoded pixel on the CPU backend: SD1.5 at 512x512 and SDXL at
/// 1024x1024 in f32 peaked at their weights plus about 3.4 KB per pixel (docs/memory.md's CPU
/// table: 4791 and 16488 MiB resident).
const CPU_VAE_BYTES_PER_PIXEL: u64 = 3_400;

/// The environment variable that caps the memory the check assumes free, in GiB (below what the
/// machine reports): to keep headroom for other programs, or to try a smaller machine.
pub const HOST_MEMORY_LIMIT_VAR: &str = "SDBENCH_HOST_MEMORY_LIMIT_GIB";

/// Bytes of host memory `placement` needs for `work` on a model of `size`; `cpu_backend`: the
/// whole model runs on the CPU backend.
pub fn host_need(
    size: &ModelSize,
    placement: &Placement,
    cpu_backend: bool,
    work: &RequestShape,
) -> u64 {
    let text = size.text_encoder_params * placement.text_encoders.bytes();
    let vae_encoder = match placement.vae_encoder || work.image_to_image {
        true => size.vae_encoder_params,
        false => 0,
    };
    let vae = (size.vae_decoder_params + vae_encoder) * placement.vae.bytes();
    let vae_activations = vae_pixels(size, placement, work) * CPU_VAE_BYTES_PER_PIXEL;
    if cpu_backend {
        return PROCESS_BYTES
            + text
            + denoiser_weight_bytes(size, placement)
            + vae
            + denoiser_step_bytes(size, placement, work).max(vae_activations);
    }
    let mut need = PROCESS_BYTES;
    if placement.text_encoders_on_cpu {
        need += text;
    }
    if placement.vae_on_cpu {
        need += vae + vae_activations;
    }
    if placement.denoiser_offload {
        need += denoiser_weight_bytes(size, placement);
    }
    need
}

/// The host memory free for the run: what the system reports available (free plus reclaimable
/// caches), within what the process's cgroup (a container's limit) leaves it, capped by
/// `SDBENCH_HOST_MEMORY_LIMIT_GIB`; `None` where none is known.
pub fn available_host_memory() -> Option<u64> {
    let limit = std::env::var(HOST_MEMORY_LIMIT_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|gib| gib.is_finite() && *gib > 0.0)
        .map(|gib| (gib * (1u64 << 30) as f64) as u64);
    let mut system = sysinfo::System::new();
    system.refresh_memory();
    let reported = Some(system.available_memory()).filter(|&bytes| bytes > 0);
    let cgroup = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|membership| {
            cgroup_memory::available(Path::new(cgroup_memory::CGROUP_ROOT), &membership)
        });
    [reported, cgroup, limit].into_iter().flatten().min()
}

/// The precision `--precision auto` runs in: the device's default, except on the CPU backend when
/// the default (f32) does not fit the host's memory and bf16 does, with a note saying so. `None`
/// for `available`: nothing is known to compare with, the default stands.
pub fn auto_precision(
    size: &ModelSize,
    vae: &VaeConfig,
    device: &SelectedDevice,
    work: &RequestShape,
    options: &LoadOptions,
    available: Option<u64>,
) -> (Precision, Option<String>) {
    let default = device.default_precision();
    let (Some(available), true) = (available, device.kind == BackendKind::Cpu) else {
        return (default, None);
    };
    let need = |precision| {
        let placement = Placement::for_model(size.family, vae, precision, options);
        host_need(size, &placement, true, work)
    };
    let (full, half) = (need(default), need(Precision::Bf16));
    if full <= available || !device.supports(Precision::Bf16) || half > available {
        return (default, None);
    }
    let note = format!(
        "--precision auto runs bf16 on the CPU: {} needs about {} of RAM, bf16 about {}, and this          machine has {} available (bf16 is slower there; the result records it)",
        default.name(),
        gib(full),
        gib(half),
        gib(available)
    );
    (Precision::Bf16, Some(note))
}

/// Refuses a load whose host memory need is more than `available`, naming the need and the
/// lighter settings that would fit (bf16 where the device has it; the `minimal` profile's int8
/// denoiser).
pub fn check_host_fit(
    size: &ModelSize,
    vae: &VaeConfig,
    placement: &Placement,
    device: &SelectedDevice,
    work: &RequestShape,
    options: &LoadOptions,
    available: u64,
) -> Result<()> {
    let cpu_backend = device.kind == BackendKind::Cpu;
    let need = host_need(size, placement, cpu_backend, work);
    if need <= available {
        return Ok(());
    }
    let lighter = |precision: Precision, profile: MemoryProfile| {
        let options = match profile {
            MemoryProfile::Minimal => profile.load_options(*options),
            // Full's own switches, not added to the ones that moved things to the host.
            MemoryProfile::Full => profile.load_options(LoadOptions {
                vae_encoder: options.vae_encoder,
                planned: options.planned,
                ..LoadOptions::default()
            }),
            _ => *options,
        };
        let placement = Placement::for_model(size.family, vae, precision, &options);
        host_need(size, &placement, cpu_backend, work)
    };
    let mut tried = Vec::new();
    let in_host =
        placement.text_encoders_on_cpu || placement.vae_on_cpu || placement.denoiser_offload;
    if !cpu_backend && in_host {
        // On a GPU, what the host holds is what the profile moved off the device.
        tried.push((
            "--memory full (everything on the GPU, if it fits there)",
            lighter(placement.denoiser, MemoryProfile::Full),
        ));
    }
    if cpu_backend && placement.denoiser != Precision::Bf16 && device.supports(Precision::Bf16) {
        tried.push((
            "--precision bf16",
            lighter(Precision::Bf16, MemoryProfile::Full),
        ));
    }
    if cpu_backend && !placement.denoiser_int8 {
        tried.push((
            "--memory minimal (int8 weights)",
            lighter(placement.denoiser, MemoryProfile::Minimal),
        ));
    }
    let advice = match tried.iter().find(|(_, need)| *need <= available) {
        Some((what, need)) => format!("{what} needs about {}", gib(*need)),
        None => "no lighter setting fits either: close other programs, or use a machine with \
                 more memory"
            .to_string(),
    };
    let on = match cpu_backend {
        true => "on the CPU".to_string(),
        false => format!("beside {}", device.info.name),
    };
    Err(DiffusionError::DoesNotFit(format!(
        "out of host memory before starting: {} in {} {on} needs about {} of RAM for {}, but \
         this machine has {} available; {advice}",
        size.family,
        placement.denoiser.name(),
        gib(need),
        work.describe(),
        gib(available),
    )))
}

/// What `--memory auto` chose, and why, for the front ends to show.
#[derive(Debug, Clone, PartialEq)]
pub struct AutoChoice {
    pub profile: MemoryProfile,
    pub reason: String,
}

/// `auto` on the CPU backend, which runs everything in host memory: `cpu`, unless the weights in
/// `precision` do not fit the host and `minimal`'s int8 denoiser weights do, said with both needs.
fn choice_on_the_cpu(
    size: &ModelSize,
    vae: &VaeConfig,
    precision: Precision,
    work: &RequestShape,
    host: Option<u64>,
) -> Result<AutoChoice> {
    let need = |profile: MemoryProfile| {
        let options = profile.load_options(LoadOptions {
            vae_encoder: work.image_to_image,
            ..LoadOptions::default()
        });
        host_need(
            size,
            &Placement::for_model(size.family, vae, precision, &options),
            true,
            work,
        )
    };
    let everything = AutoChoice {
        profile: MemoryProfile::Cpu,
        reason: "the CPU backend runs everything".into(),
    };
    let Some(host) = host else {
        return Ok(everything);
    };
    let (full, int8) = (need(MemoryProfile::Cpu), need(MemoryProfile::Minimal));
    if full <= host || int8 > host {
        return Ok(everything);
    }
    Ok(AutoChoice {
        profile: MemoryProfile::Minimal,
        reason: format!(
            "the CPU backend runs everything, and in {} it needs about {} of RAM where this \
             machine has {} available; minimal's int8 denoiser weights need about {} (slower, and \
             the result records it)",
            precision.name(),
            gib(full),
            gib(host),
            gib(int8)
        ),
    })
}

/// `choose_auto` for a model of `size` and `host` bytes of available host memory (`None`:
/// unknown, not checked).
pub fn choose_profile(
    size: &ModelSize,
    vae: &VaeConfig,
    device: &SelectedDevice,
    precision: Precision,
    work: &RequestShape,
    host: Option<u64>,
) -> Result<AutoChoice> {
    let choice = |profile, reason: String| Ok(AutoChoice { profile, reason });
    if device.kind == BackendKind::Cpu {
        return choice_on_the_cpu(size, vae, precision, work, host);
    }
    let Some(available) = device.memory_for_fit() else {
        return choice(
            MemoryProfile::Full,
            format!(
                "{} does not report its memory size, so auto keeps full; --memory-limit GIB tells it",
                device.info.name
            ),
        );
    };
    let placement_of = |p: MemoryProfile| {
        let options = p.load_options(LoadOptions {
            vae_encoder: work.image_to_image,
            ..LoadOptions::default()
        });
        Placement::for_model(size.family, vae, precision, &options)
    };
    let host_need = |p| host_need(size, &placement_of(p), false, work);
    let fits_host = |p| host.is_none_or(|h| host_need(p) <= h);
    let what = work.describe();
    let on_device: Vec<(MemoryProfile, MemoryNeed)> = DEVICE_PROFILES
        .into_iter()
        .map(|p| (p, estimate(size, &placement_of(p), work)))
        .filter(|(_, need)| need.peak() <= available)
        .collect();
    if let Some((profile, need)) = on_device.iter().find(|(p, _)| fits_host(*p)) {
        let mut reason = format!(
            "needs about {} for {what} of the {} the device has ({})",
            gib(need.peak()),
            gib(available),
            device.memory_for_fit_meaning()
        );
        if let (Some((faster, _)), Some(h)) = (on_device.first(), host) {
            if faster != profile {
                reason += &format!(
                    "; {faster} fits the device too, but keeps about {} in RAM and this machine has {} available",
                    gib(host_need(*faster)),
                    gib(h)
                );
            }
        }
        return choice(*profile, reason);
    }
    // Every profile that fits the device keeps too much in RAM: name the one that keeps least.
    let least_in_ram = on_device.iter().min_by_key(|(p, _)| host_need(*p));
    if let (Some((profile, need)), Some(h)) = (least_in_ram, host) {
        return Err(DiffusionError::DoesNotFit(format!(
            "out of host memory before starting: --memory auto found no profile that fits both \
             the device and the host for {what}: {profile} fits {} ({} of {}) but keeps about {} \
             in RAM, and this machine has {} available; close other programs, or use a machine \
             with more memory",
            device.info.name,
            gib(need.peak()),
            gib(available),
            gib(host_need(*profile)),
            gib(h)
        )));
    }
    let minimal = placement_of(MemoryProfile::Minimal);
    let mut reason = format!(
        "even minimal needs about {} for {what} and the device has {} ({})",
        gib(estimate(size, &minimal, work).peak()),
        gib(available),
        device.memory_for_fit_meaning()
    );
    if let Some(advice) = four_bit_advice(size, &minimal, work, available) {
        reason += &format!("; {advice}");
    }
    choice(MemoryProfile::Cpu, reason)
}

#[cfg(test)]
mod tests {
    use crate::pipeline::memory::MemoryProfile;
    use crate::pipeline::memory_test_support::host_need_of;
    use crate::pipeline::Preset;
    use crate::Precision;

    /// Every preset's f32 need on the CPU is about its parameters at 4 bytes, and bf16 halves it.
    /// (Each family's measured peaks and host checks are in its folder's memory tests.)
    #[test]
    fn bf16_and_int8_need_less() {
        for preset in Preset::all() {
            let f32 = host_need_of(preset, Precision::F32, MemoryProfile::Full);
            let bf16 = host_need_of(preset, Precision::Bf16, MemoryProfile::Full);
            let int8 = host_need_of(preset, Precision::F32, MemoryProfile::Minimal);
            assert!(
                bf16 < f32 * 7 / 10 && int8 < f32,
                "{preset}: {f32} {bf16} {int8}"
            );
        }
    }
}
