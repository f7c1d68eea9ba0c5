//! The committed JSON Schema rejects results that break the contract.

use sdbench_bench::result::JSON_SCHEMA;

fn validator() -> jsonschema::Validator {
    let schema: serde_json::Value = serde_json::from_str(JSON_SCHEMA).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

/// A hand-written valid result (the runner test validates real ones).
fn sample() -> serde_json::Value {
    serde_json::from_str(include_str!("../data/result-v1.json")).unwrap()
}

fn errors(value: &serde_json::Value) -> Vec<String> {
    validator()
        .iter_errors(value)
        .map(|e| e.to_string())
        .collect()
}

#[test]
fn the_sample_is_valid() {
    assert_eq!(errors(&sample()), Vec::<String>::new());
    // The same run as a standard SDXL one, and as one from before families were recorded.
    let mut sdxl = sample();
    sdxl["workload"]["name"] = "sdxl-1024-20".into();
    let model = &mut sdxl["workload"]["model"];
    model["sd15_architecture"] = false.into();
    model["family"] = "sdxl".into();
    model["preset"] = "sdxl-base".into();
    assert_eq!(errors(&sdxl), Vec::<String>::new());
    // And as a standard FLUX.2 klein one (flow-matching Euler).
    let mut klein = sample();
    klein["workload"]["name"] = "flux2-klein-1024-4".into();
    klein["workload"]["scheduler"] = "flow_euler".into();
    let model = &mut klein["workload"]["model"];
    model["sd15_architecture"] = false.into();
    model["family"] = "flux2-klein".into();
    model["preset"] = "flux2-klein".into();
    assert_eq!(errors(&klein), Vec::<String>::new());
    let mut older = sample();
    let model = older["workload"]["model"].as_object_mut().unwrap();
    model.remove("family");
    model.remove("preset");
    assert_eq!(errors(&older), Vec::<String>::new());
    // A standard run of the full profile, with its placement.
    let mut full = sample();
    assert_eq!(full["workload"]["standard"], true);
    full["backend"]["memory_profile"] = "full".into();
    full["backend"]["placement"] = serde_json::json!({
        "text_encoders": "device", "vae": "device", "cfg": "batched", "vae_tiling": false,
        "unet_weights": "f16", "release_between_stages": false
    });
    assert_eq!(errors(&full), Vec::<String>::new());
}

/// Makes one change that breaks the contract.
type Breaker = Box<dyn Fn(&mut serde_json::Value)>;

#[test]
fn broken_results_are_rejected() {
    let cases: Vec<(&str, Breaker)> = vec![
        (
            "missing scores",
            Box::new(|v| {
                v.as_object_mut().unwrap().remove("scores");
            }),
        ),
        (
            "other schema version",
            Box::new(|v| v["schema_version"] = 2.into()),
        ),
        (
            "unknown top-level key",
            Box::new(|v| v["extra"] = true.into()),
        ),
        (
            "seconds as text",
            Box::new(|v| v["results"][0]["seconds"] = "1.5".into()),
        ),
        (
            "bad sha256",
            Box::new(|v| v["results"][0]["image"]["sha256"] = "xyz".into()),
        ),
        (
            "width not a multiple of 8",
            Box::new(|v| v["workload"]["width"] = 500.into()),
        ),
        (
            "unknown backend",
            Box::new(|v| v["backend"]["name"] = "opencl".into()),
        ),
        (
            "a standard run with a memory-saving profile",
            Box::new(|v| {
                v["workload"]["standard"] = true.into();
                v["backend"]["memory_profile"] = "low".into();
            }),
        ),
        (
            "unknown memory profile",
            Box::new(|v| v["backend"]["memory_profile"] = "tiny".into()),
        ),
        (
            "invalid run with a score",
            Box::new(|v| {
                v["valid"] = false.into();
                v["invalid_reasons"] = serde_json::json!(["image 1: blank"]);
            }),
        ),
        (
            "invalid run without reasons",
            Box::new(|v| {
                v["valid"] = false.into();
                v["scores"]["score"] = serde_json::Value::Null;
            }),
        ),
        (
            "synthetic run called standard",
            Box::new(|v| v["workload"]["model"]["synthetic"] = true.into()),
        ),
        (
            "another architecture called standard",
            Box::new(|v| v["workload"]["model"]["sd15_architecture"] = false.into()),
        ),
        (
            "an SDXL standard run on another architecture",
            Box::new(|v| {
                v["workload"]["name"] = "sdxl-1024-20".into();
                v["workload"]["model"]["preset"] = "sd15".into();
            }),
        ),
        (
            "an SDXL standard run that does not name its preset",
            Box::new(|v| v["workload"]["name"] = "sdxl-1024-20".into()),
        ),
        (
            "a FLUX.2 klein standard run on another architecture",
            Box::new(|v| {
                v["workload"]["name"] = "flux2-klein-1024-4".into();
                v["workload"]["model"]["preset"] = "sdxl-base".into();
            }),
        ),
        (
            "a custom workload called standard",
            Box::new(|v| v["workload"]["name"] = "custom".into()),
        ),
        (
            "an unknown family",
            Box::new(|v| v["workload"]["model"]["family"] = "sd3".into()),
        ),
        (
            "power available without a figure",
            Box::new(|v| v["scores"]["power"]["avg_w"] = serde_json::Value::Null),
        ),
        (
            "power unavailable without a reason",
            Box::new(|v| v["scores"]["power"]["available"] = false.into()),
        ),
    ];
    for (name, break_it) in cases {
        let mut v = sample();
        break_it(&mut v);
        assert!(!errors(&v).is_empty(), "{name} was accepted");
    }
}

/// Every architecture and preset in the family registry is one the schema accepts, and each
/// standard workload's name is in its list of standard ones.
#[test]
fn the_schema_knows_every_registered_family_and_workload() {
    let schema: serde_json::Value = serde_json::from_str(JSON_SCHEMA).unwrap();
    let text = schema.to_string();
    let model = &schema["properties"]["workload"]["properties"]["model"]["properties"];
    let listed = |field: &str| -> Vec<String> {
        model[field]["enum"]
            .as_array()
            .unwrap_or_else(|| panic!("the schema's model.{field} enum"))
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    };
    let (families, presets) = (listed("family"), listed("preset"));
    for family in sdbench_diffusion::FAMILIES {
        for arch in family.architectures {
            assert!(families.contains(&arch.name().to_string()), "{arch}");
        }
        for preset in family.presets {
            assert!(presets.contains(&preset.name().to_string()), "{preset}");
        }
    }
    for name in sdbench_bench::workload::workload_names() {
        let preset = sdbench_bench::Workload::named(name).unwrap().preset;
        let standard_rule = format!(
            r#"{{"if":{{"properties":{{"workload":{{"properties":{{"name":{{"const":"{name}"}}"#
        );
        let preset_rule = format!(r#""preset":{{"const":"{}"}}"#, preset.name());
        assert!(
            name == "sd15-512-30" || (text.contains(&standard_rule) && text.contains(&preset_rule)),
            "the schema ties {name} to {preset}"
        );
    }
}
