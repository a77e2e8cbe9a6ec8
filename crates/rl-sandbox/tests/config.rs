//! The configuration example of docs/sandbox.md parses, and is the defaults.

use std::time::Duration;

use rl_sandbox::{Limits, SandboxConfig};
use serde::Deserialize;

#[derive(Deserialize)]
struct Wrapper {
    sandbox: SandboxConfig,
}

fn docs_example() -> String {
    // The checkout this test runs from (cargo sets CARGO_MANIFEST_DIR when it runs a test); the
    // compile-time value can name another checkout when a build cache is shared between clones.
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or(env!("CARGO_MANIFEST_DIR").into());
    let path = std::path::Path::new(&dir).join("../../docs/sandbox.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let start = text.find("```toml\n").expect("a toml block") + "```toml\n".len();
    let end = start + text[start..].find("```").unwrap();
    text[start..end].to_string()
}

#[test]
fn the_documented_example_is_the_defaults() {
    let w: Wrapper = toml::from_str(&docs_example()).unwrap();
    let expected = SandboxConfig {
        python: Some("/usr/bin/python3".into()),
        ..SandboxConfig::default()
    };
    assert_eq!(w.sandbox, expected);
}

#[test]
fn durations_are_seconds_and_unknown_fields_are_errors() {
    let l: Limits = toml::from_str("wall_time = 2.5\ncpu_time = 1").unwrap();
    assert_eq!(l.wall_time, Duration::from_millis(2500));
    assert_eq!(l.cpu_time, Duration::from_secs(1));
    assert_eq!(l.memory_bytes, Limits::default().memory_bytes);
    assert!(toml::from_str::<Limits>("wall_tme = 1.0").is_err());
    assert!(toml::from_str::<Limits>("wall_time = -1.0").is_err());
    assert!(toml::from_str::<SandboxConfig>("concurency = 2").is_err());
    let json = serde_json::to_string(&SandboxConfig::default()).unwrap();
    let back: SandboxConfig = serde_json::from_str(&json).unwrap();
    assert_eq!(back, SandboxConfig::default());
}
