//! The name registry: every verifier's configuration under its name.

use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::code::CodeConfig;
use crate::dapo::DapoConfig;
use crate::gsm8k::Gsm8kConfig;
use crate::last_number::LastNumberConfig;
use crate::math::MathConfig;
use crate::{Budget, ConfigError, RewardMap, Verifier};

/// A verifier configuration, tagged by name so that it round-trips through JSON and TOML:
/// `{"name": "math", "budget": {"max_steps": 100000}}` or `{"name": "dapo", "strict_box": true}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "snake_case")]
pub enum VerifierConfig {
    /// Programs run against test cases in a sandbox ([`crate::code`]).
    Code(CodeConfig),
    /// verl `math_dapo` parity ([`crate::dapo`]).
    Dapo(DapoConfig),
    /// verl's GSM8K scorer ([`crate::gsm8k`]).
    Gsm8k(Gsm8kConfig),
    /// The number a short reply ends with ([`crate::last_number`]).
    LastNumber(LastNumberConfig),
    /// Mathematical equivalence ([`crate::math`]).
    Math(MathConfig),
}

rl_core::registry! {
    /// Names accepted by [`VerifierConfig::from_name`], in registry order.
    pub const VERIFIER_NAMES;
    /// The default configuration of a registered verifier.
    fn VerifierConfig::from_name -> ConfigError, kind "verifier" {
        "code" => VerifierConfig::Code(CodeConfig::default()),
        "dapo" => VerifierConfig::Dapo(DapoConfig::default()),
        "gsm8k" => VerifierConfig::Gsm8k(Gsm8kConfig::default()),
        "last_number" => VerifierConfig::LastNumber(LastNumberConfig::default()),
        "math" => VerifierConfig::Math(MathConfig::default()),
    }
}

impl VerifierConfig {
    /// The registry name.
    pub fn name(&self) -> &'static str {
        match self {
            VerifierConfig::Code(_) => "code",
            VerifierConfig::Dapo(_) => "dapo",
            VerifierConfig::Gsm8k(_) => "gsm8k",
            VerifierConfig::LastNumber(_) => "last_number",
            VerifierConfig::Math(_) => "math",
        }
    }

    /// The budget (`dapo`, `math`; `code` is bounded by its sandbox limits instead,
    /// `last_number` by its fixed window).
    pub fn budget(&self) -> Option<&Budget> {
        match self {
            VerifierConfig::Code(_) | VerifierConfig::LastNumber(_) | VerifierConfig::Gsm8k(_) => {
                None
            }
            VerifierConfig::Dapo(c) => Some(&c.budget),
            VerifierConfig::Math(c) => Some(&c.budget),
        }
    }

    /// The budget, for editing (`None` for `code` and `last_number`).
    pub fn budget_mut(&mut self) -> Option<&mut Budget> {
        match self {
            VerifierConfig::Code(_) | VerifierConfig::LastNumber(_) | VerifierConfig::Gsm8k(_) => {
                None
            }
            VerifierConfig::Dapo(c) => Some(&mut c.budget),
            VerifierConfig::Math(c) => Some(&mut c.budget),
        }
    }

    /// The reward mapping the verifier's reference implementation uses: +1/−1 for `dapo`
    /// (verl's `compute_score`), 1/0 for `math` (math-verify as TRL uses it), for `code`
    /// (pass/fail; with `reward = "fraction"`, [`RewardMap::reward_for`] interpolates) and for
    /// `last_number`.
    pub fn default_rewards(&self) -> RewardMap {
        match self {
            VerifierConfig::Code(_) => RewardMap::binary(),
            VerifierConfig::Dapo(_) => RewardMap::signed(),
            VerifierConfig::LastNumber(_) => RewardMap::binary(),
            VerifierConfig::Gsm8k(_) => RewardMap::binary(),
            VerifierConfig::Math(_) => RewardMap::binary(),
        }
    }

    /// Validates the configuration and builds the verifier (`code`: creates its sandbox, an
    /// error naming what is missing when it cannot be created).
    pub fn build(&self) -> Result<Box<dyn Verifier>, ConfigError> {
        Ok(match self {
            VerifierConfig::Code(c) => Box::new(c.build()?),
            VerifierConfig::Dapo(c) => Box::new(c.build()?),
            VerifierConfig::LastNumber(c) => Box::new(c.build()?),
            VerifierConfig::Gsm8k(c) => Box::new(c.build()?),
            VerifierConfig::Math(c) => Box::new(c.clone().build()?),
        })
    }
}

impl FromStr for VerifierConfig {
    type Err = ConfigError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        VerifierConfig::from_name(s)
    }
}

impl Default for VerifierConfig {
    /// The `math` verifier with default settings.
    fn default() -> Self {
        VerifierConfig::Math(MathConfig::default())
    }
}
