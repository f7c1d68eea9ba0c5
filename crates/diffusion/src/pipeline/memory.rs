//! Memory profiles: named ways to place a pipeline so that it fits a smaller GPU, each trading some
//! speed for memory. A profile only chooses `LoadOptions` (and, for `cpu`, the backend); what each
//! option does is in `LoadOptions`.

use crate::pipeline::LoadOptions;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemoryProfile {
    /// Everything on the GPU, classifier-free guidance as one doubled batch: the fastest, and the
    /// profile of the standard score.
    Full,
    /// The text encoders on the CPU; the allocator's unused memory handed back to the device
    /// between denoising and decoding.
    Balanced,
    /// As balanced, plus sequential classifier-free guidance (half the denoiser's activations), the
    /// denoiser's weights in host memory while the VAE decodes, and tiled VAE decoding and encoding
    /// above the VAE's tile size.
    Low,
    /// As low, plus int8 denoiser weights (W8A16), attention in smaller chunks and VAE tiles of half
    /// the VAE's own side.
    Minimal,
    /// Everything on the CPU backend.
    Cpu,
}

/// Score elements per attention call in the `minimal` profile: 2^24 f32 = 64 MiB (a quarter of
/// `nn::SCORE_BUDGET`).
pub const SMALL_SCORE_BUDGET: usize = 1 << 24;

/// Score elements one attention call may hold: the profile's budget (`SMALL_SCORE_BUDGET` with
/// `small`, else `nn::SCORE_BUDGET`), capped so that a chunk of f32 scores fits in the device's
/// largest buffer (lavapipe's is 128 MiB, half of `nn::SCORE_BUDGET`'s 256 MiB).
pub fn attention_score_budget(small: bool, max_buffer_bytes: Option<u64>) -> usize {
    let budget = match small {
        true => SMALL_SCORE_BUDGET,
        false => crate::nn::SCORE_BUDGET,
    };
    let fits = max_buffer_bytes.map_or(usize::MAX, |bytes| (bytes / 4) as usize);
    budget.min(fits).max(1)
}

impl MemoryProfile {
    pub const ALL: [MemoryProfile; 5] = [
        MemoryProfile::Full,
        MemoryProfile::Balanced,
        MemoryProfile::Low,
        MemoryProfile::Minimal,
        MemoryProfile::Cpu,
    ];
    pub const NAMES: [&'static str; 5] = ["full", "balanced", "low", "minimal", "cpu"];

    pub fn name(self) -> &'static str {
        match self {
            MemoryProfile::Full => "full",
            MemoryProfile::Balanced => "balanced",
            MemoryProfile::Low => "low",
            MemoryProfile::Minimal => "minimal",
            MemoryProfile::Cpu => "cpu",
        }
    }

    pub fn from_name(name: &str) -> Option<MemoryProfile> {
        MemoryProfile::ALL.into_iter().find(|p| p.name() == name)
    }

    /// `base` (what the request needs, such as the VAE encoder) with this profile's placement.
    pub fn load_options(self, base: LoadOptions) -> LoadOptions {
        use MemoryProfile::*;
        let saving = matches!(self, Balanced | Low | Minimal);
        let low = matches!(self, Low | Minimal);
        let minimal = self == Minimal;
        LoadOptions {
            text_encoders_on_cpu: base.text_encoders_on_cpu || saving,
            release_memory_between_stages: base.release_memory_between_stages || saving,
            sequential_cfg: base.sequential_cfg || low,
            vae_tiling: base.vae_tiling || low,
            denoiser_offload: base.denoiser_offload || low,
            denoiser_int8: base.denoiser_int8 || minimal,
            small_attention_chunks: base.small_attention_chunks || minimal,
            small_vae_tiles: base.small_vae_tiles || minimal,
            ..base
        }
    }

    /// The profile whose options `options` are (the `cpu` profile's are `full`'s: told apart by
    /// the backend).
    pub fn of_options(options: &LoadOptions) -> Option<MemoryProfile> {
        let base = LoadOptions {
            vae_encoder: options.vae_encoder,
            planned: options.planned,
            ..LoadOptions::default()
        };
        MemoryProfile::ALL
            .into_iter()
            .find(|p| p.load_options(base) == *options)
    }

    /// Whether the profile needs the CPU backend.
    pub fn needs_cpu_backend(self) -> bool {
        self == MemoryProfile::Cpu
    }
}

impl std::fmt::Display for MemoryProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attention_chunks_fit_the_largest_buffer() {
        assert_eq!(attention_score_budget(false, None), crate::nn::SCORE_BUDGET);
        assert_eq!(attention_score_budget(true, None), SMALL_SCORE_BUDGET);
        // lavapipe: 128 MiB buffers hold 2^25 f32 scores, fewer than the full profile's 2^26.
        assert_eq!(attention_score_budget(false, Some(128 << 20)), 1 << 25);
        assert_eq!(
            attention_score_budget(true, Some(128 << 20)),
            SMALL_SCORE_BUDGET
        );
        assert_eq!(attention_score_budget(false, Some(2)), 1);
    }

    #[test]
    fn each_profile_saves_more_than_the_last() {
        let base = LoadOptions {
            vae_encoder: true,
            ..LoadOptions::default()
        };
        let full = MemoryProfile::Full.load_options(base);
        assert_eq!(full, base);
        let balanced = MemoryProfile::Balanced.load_options(base);
        assert!(balanced.text_encoders_on_cpu && balanced.release_memory_between_stages);
        assert!(!balanced.sequential_cfg && !balanced.vae_tiling && balanced.vae_encoder);
        let low = MemoryProfile::Low.load_options(base);
        assert!(
            low.text_encoders_on_cpu
                && low.sequential_cfg
                && low.vae_tiling
                && low.denoiser_offload
        );
        assert!(!balanced.denoiser_offload && !low.denoiser_int8 && !low.small_attention_chunks);
        let minimal = MemoryProfile::Minimal.load_options(base);
        assert_eq!(
            minimal,
            LoadOptions {
                denoiser_int8: true,
                small_attention_chunks: true,
                small_vae_tiles: true,
                ..low
            }
        );
        assert!(MemoryProfile::Cpu.needs_cpu_backend());
        for (profile, name) in MemoryProfile::ALL.into_iter().zip(MemoryProfile::NAMES) {
            assert_eq!(MemoryProfile::from_name(name), Some(profile));
        }
        assert_eq!(MemoryProfile::from_name("tiny"), None);
    }

    /// A load that plans its first request is still told apart by its profile.
    #[test]
    fn the_profile_is_found_from_options_with_a_planned_request() {
        let planned = LoadOptions {
            vae_encoder: true,
            planned: Some(crate::pipeline::memory_need::RequestShape::image(768, 512)),
            ..LoadOptions::default()
        };
        for profile in MemoryProfile::ALL {
            let options = profile.load_options(planned);
            let found = MemoryProfile::of_options(&options);
            // cpu places a pipeline as full does: the backend tells them apart.
            let expected = match profile {
                MemoryProfile::Cpu => MemoryProfile::Full,
                other => other,
            };
            assert_eq!(found, Some(expected), "{profile}");
        }
    }
}
