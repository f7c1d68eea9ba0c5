//! The prompts and seeds of the standard workloads (`family::WorkloadSpec`, each descriptor's
//! `workloads`): what a benchmark run makes images of. Scores compare only under the same
//! workload name and version, so any change here is a new version.

/// A workload's prompts and seeds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Prompts {
    /// Each prompt with its own seed.
    Paired(&'static [(&'static str, u64)]),
    /// Every prompt with every seed, prompt by prompt.
    EverySeed {
        prompts: &'static [&'static str],
        seeds: &'static [u64],
    },
}

impl Prompts {
    /// The (prompt, seed) of each timed generation, in order.
    pub fn pairs(&self) -> Vec<(&'static str, u64)> {
        match *self {
            Prompts::Paired(pairs) => pairs.to_vec(),
            Prompts::EverySeed { prompts, seeds } => prompts
                .iter()
                .flat_map(|&p| seeds.iter().map(move |&s| (p, s)))
                .collect(),
        }
    }
}

/// SD Bench's five prompts and seeds (version 1 of the UNet families' workloads).
pub const SDBENCH_PROMPTS: Prompts = Prompts::Paired(&[
    ("a photograph of an astronaut riding a horse on the moon, highly detailed", 42),
    ("a cozy wooden cabin in a snowy pine forest at dusk, warm light in the windows, oil painting", 1234),
    ("portrait of an old fisherman with a weathered face, dramatic studio lighting, 85mm photograph", 2718),
    ("a futuristic city skyline at night, neon signs, flying cars, digital art", 31415),
    ("a bowl of fresh fruit on a marble table, still life, soft window light", 8080),
]);

/// MLPerf Client 2.0's text-to-image prompts (mlcommons/mlperf_client,
/// `data/prompts/flux_2_klein_4b/flux_2_klein_prompts.json`), each made with seeds 42-45 as it
/// makes them: sixteen images.
pub const MLPERF_CLIENT_PROMPTS: Prompts = Prompts::EverySeed {
    prompts: &[
        "A photorealistic close-up of a fluffy ginger tabby cat perched on a weathered wooden windowsill at golden-hour sunset, warm amber light streaming through the dusty glass and rim-lighting its soft fur, a blurred city skyline and slowly drifting dust motes in the background, shallow depth of field, shot on a 50mm lens, highly detailed with natural color grading.",
        "A sweeping cinematic aerial view of a sprawling futuristic megacity at night, towering glass skyscrapers glowing with bands of teal and magenta light along their facades, sleek flying vehicles streaking between the buildings and leaving long light trails, reflections shimmering on rain-slicked empty streets far below, volumetric fog and dramatic atmospheric lighting, ultra-detailed science-fiction concept art.",
        "A serene Japanese garden in early autumn at dawn, a vermilion wooden footbridge arching over a still koi pond that mirrors the pale sky, maple trees turning crimson and gold, a moss-covered stone lantern beside smooth river rocks, delicate morning mist hanging in the air, soft diffused light and a painterly composition with rich natural color, extremely detailed.",
        "Ultra-realistic commercial studio product photography of two minimalist ceramic coffee mugs on a polished concrete surface: a matte black mug centered in the foreground with hot coffee and visible steam rising, the words \"GOOD MORNING\" printed across its front in clean, crisp white capital letters facing the camera, and a matching matte yellow mug to its right; concrete gray studio backdrop, soft white highlights, three-point softbox lighting with diffused reflections and no harsh shadows, rule-of-thirds composition, high-angle medium shot, sharp focus on the mugs, steam, and lettering, shot on an 85mm lens at f/5.6, ISO 200.",
    ],
    seeds: &[42, 43, 44, 45],
};
