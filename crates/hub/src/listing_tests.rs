use super::*;

#[test]
fn the_licence_comes_from_the_card_else_the_tags() {
    let model = |json: &str| serde_json::from_str::<ApiModel>(json).unwrap().license();
    assert_eq!(
        model(r#"{"cardData": {"license": "apache-2.0"}, "tags": ["license:mit"]}"#).as_deref(),
        Some("apache-2.0")
    );
    assert_eq!(
        model(r#"{"cardData": {"license": ["mit", "apache-2.0"]}}"#).as_deref(),
        Some("mit or apache-2.0")
    );
    assert_eq!(
        model(r#"{"tags": ["diffusers", "license:openrail++"]}"#).as_deref(),
        Some("openrail++")
    );
    assert_eq!(model(r#"{"cardData": {"license": 3}}"#), None);
    assert_eq!(
        model(&format!(
            r#"{{"cardData": {{"license": "{}"}}}}"#,
            "x".repeat(65)
        )),
        None
    );
    assert_eq!(model("{}"), None);
}
