//! The `code` verifier's configuration.

use std::time::Duration;

use rl_sandbox::{Limits, SandboxConfig};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::ConfigError;

/// How test results become the verification (and so the reward).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CodeReward {
    /// Correct iff every test passes; tests stop at the first failure.
    #[default]
    AllOrNothing,
    /// Every test runs; the verification carries `score` = passed / total and
    /// [`crate::RewardMap::reward_for`] interpolates between the incorrect and correct rewards.
    Fraction,
}

impl CodeReward {
    /// `all_or_nothing` or `fraction`.
    pub fn name(self) -> &'static str {
        match self {
            CodeReward::AllOrNothing => "all_or_nothing",
            CodeReward::Fraction => "fraction",
        }
    }
}

rl_core::registry! {
    /// Valid values of [`CodeReward`], as written in configs.
    pub const CODE_REWARD_NAMES;
    /// From its name.
    fn CodeReward::from_name -> ConfigError, kind "code reward" {
        "all_or_nothing" => CodeReward::AllOrNothing,
        "fraction" => CodeReward::Fraction,
    }
}

/// Configuration of the `code` verifier. In a training config:
/// `reward.verifier = { name = "code", reward = "fraction", sandbox = { limits = { wall_time = 2 } } }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CodeConfig {
    /// All-or-nothing (default) or the fraction of tests passed.
    pub reward: CodeReward,
    /// The sandbox: limits of **each** run (the syntax check and every test are separate runs)
    /// and how many runs at once. Fields not given keep [`CodeConfig::default_sandbox`]'s
    /// values (wall 4 s, CPU 2 s, memory 512 MiB, 2 runs at once), not the sandbox crate's.
    #[serde(deserialize_with = "sandbox_over_defaults")]
    pub sandbox: SandboxConfig,
    /// Tests run per response, at most: a problem with more runs its first `max_tests`
    /// (default 32).
    pub max_tests: usize,
    /// Largest code block accepted, in bytes (default 64 KiB); a larger one is not run.
    pub max_code_bytes: usize,
    /// Tolerance of numbers that are not both integers, in the output comparison and in
    /// call-based return values: |a − b| ≤ tol · max(1, |b|) (default 1e-6; 0 = exact).
    pub float_tolerance: f64,
}

impl CodeConfig {
    /// Default wall-clock limit of one run.
    pub const WALL_TIME: Duration = Duration::from_secs(4);
    /// Default CPU-time limit of one run.
    pub const CPU_TIME: Duration = Duration::from_secs(2);
    /// Default address-space limit of one run.
    pub const MEMORY_BYTES: u64 = 512 << 20;

    /// The sandbox settings used where a config does not say otherwise: the sandbox crate's
    /// defaults with the per-test limits of RL training (wall 4 s, CPU 2 s, memory 512 MiB).
    pub fn default_sandbox() -> SandboxConfig {
        SandboxConfig {
            limits: Limits {
                wall_time: Self::WALL_TIME,
                cpu_time: Self::CPU_TIME,
                memory_bytes: Self::MEMORY_BYTES,
                ..Limits::default()
            },
            ..SandboxConfig::default()
        }
    }

    /// Checks every value (the sandbox checks its own when it is built).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |field: &'static str, value: String, expected: &'static str| {
            Err(ConfigError::InvalidValue(rl_core::InvalidValue {
                field,
                value,
                expected,
            }))
        };
        if self.max_tests == 0 {
            return bad("max_tests", "0".into(), "at least 1");
        }
        if self.max_code_bytes == 0 {
            return bad("max_code_bytes", "0".into(), "a positive number of bytes");
        }
        if !(self.float_tolerance.is_finite() && (0.0..=1.0).contains(&self.float_tolerance)) {
            return bad(
                "float_tolerance",
                self.float_tolerance.to_string(),
                "a number in [0, 1]",
            );
        }
        if self.sandbox.concurrency == 0 {
            return bad("sandbox.concurrency", "0".into(), "at least 1");
        }
        if self.sandbox.limits.wall_time.is_zero() {
            return bad(
                "sandbox.limits.wall_time",
                "0".into(),
                "a positive number of seconds",
            );
        }
        Ok(())
    }
}

impl Default for CodeConfig {
    fn default() -> Self {
        CodeConfig {
            reward: CodeReward::AllOrNothing,
            sandbox: Self::default_sandbox(),
            max_tests: 32,
            max_code_bytes: 64 << 10,
            float_tolerance: 1e-6,
        }
    }
}

/// Reads a (partial) sandbox section on top of [`CodeConfig::default_sandbox`]: the sandbox
/// crate's own `#[serde(default)]` would fill missing fields with its general defaults (10 s).
fn sandbox_over_defaults<'de, D: Deserializer<'de>>(d: D) -> Result<SandboxConfig, D::Error> {
    use serde::de::Error;
    let given = Value::deserialize(d)?;
    let mut base = serde_json::to_value(CodeConfig::default_sandbox()).map_err(D::Error::custom)?;
    merge(&mut base, given);
    serde_json::from_value(base).map_err(|e| D::Error::custom(format!("sandbox: {e}")))
}

/// Overlays `given` on `base`, object by object.
fn merge(base: &mut Value, given: Value) {
    match (base, given) {
        (Value::Object(b), Value::Object(g)) => {
            for (k, v) in g {
                match b.get_mut(&k) {
                    Some(slot) => merge(slot, v),
                    None => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (slot, v) => *slot = v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_sandbox_sections_keep_the_code_defaults() {
        let c: CodeConfig =
            serde_json::from_str(r#"{"sandbox": {"limits": {"wall_time": 1.5}}}"#).unwrap();
        assert_eq!(c.sandbox.limits.wall_time, Duration::from_millis(1500));
        assert_eq!(c.sandbox.limits.cpu_time, CodeConfig::CPU_TIME);
        assert_eq!(c.sandbox.limits.memory_bytes, CodeConfig::MEMORY_BYTES);
        assert_eq!(c.sandbox.concurrency, SandboxConfig::default().concurrency);
        let c: CodeConfig =
            toml::from_str("reward = \"fraction\"\nmax_tests = 5\n[sandbox]\nconcurrency = 4\n")
                .unwrap();
        assert_eq!(c.reward, CodeReward::Fraction);
        assert_eq!(c.max_tests, 5);
        assert_eq!(c.sandbox.concurrency, 4);
        assert_eq!(c.sandbox.limits.wall_time, CodeConfig::WALL_TIME);
        // Round trip.
        let back: CodeConfig = serde_json::from_value(serde_json::to_value(&c).unwrap()).unwrap();
        assert_eq!(back, c);
        assert_eq!(
            serde_json::from_str::<CodeConfig>("{}").unwrap(),
            CodeConfig::default()
        );
    }

    #[test]
    fn unknown_and_invalid_values_are_named() {
        let e = serde_json::from_str::<CodeConfig>(r#"{"sandbox": {"limits": {"wall_tim": 1}}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("wall_tim"), "{e}");
        let e = serde_json::from_str::<CodeConfig>(r#"{"max_test": 1}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("max_test"), "{e}");
        let e = serde_json::from_str::<CodeConfig>(r#"{"reward": "partial"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("fraction"), "{e}");
        for (c, field) in [
            (
                CodeConfig {
                    max_tests: 0,
                    ..CodeConfig::default()
                },
                "max_tests",
            ),
            (
                CodeConfig {
                    float_tolerance: f64::NAN,
                    ..CodeConfig::default()
                },
                "float_tolerance",
            ),
            (
                CodeConfig {
                    max_code_bytes: 0,
                    ..CodeConfig::default()
                },
                "max_code_bytes",
            ),
        ] {
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains(field), "{e}");
        }
        assert_eq!(
            CodeReward::from_name("fraction").unwrap(),
            CodeReward::Fraction
        );
        assert!(
            CodeReward::from_name("x")
                .unwrap_err()
                .to_string()
                .contains("all_or_nothing")
        );
    }
}
