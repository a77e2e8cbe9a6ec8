//! Reward combinators: correctness, a format check, and their weighted sum with per-component
//! values kept for logging.

use std::fmt;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::dapo::{SOLUTION_TAIL_CHARS, last_answer_line, last_chars};
use crate::math::extract::find_boxed;
use crate::{ConfigError, RewardMap, Verification, Verifier, VerifierConfig};

/// One scalar reward term of a (response, gold) pair.
pub trait RewardFunction: Send + Sync + fmt::Debug {
    /// Scores one response; `verification` is set by terms that ran a verifier.
    fn evaluate(&self, response: &str, gold: &str) -> ComponentValue;
}

/// The value of one reward term.
#[derive(Clone, Debug, PartialEq)]
pub struct ComponentValue {
    /// The term's reward (before weighting).
    pub value: f64,
    /// The verification behind it, for terms that verify.
    pub verification: Option<Verification>,
}

/// Correctness: a verifier followed by a [`RewardMap`].
#[derive(Debug)]
pub struct Correctness {
    /// The verifier.
    pub verifier: Box<dyn Verifier>,
    /// Outcome → reward.
    pub rewards: RewardMap,
}

impl RewardFunction for Correctness {
    fn evaluate(&self, response: &str, gold: &str) -> ComponentValue {
        let v = self.verifier.verify(response, gold);
        ComponentValue {
            value: self.rewards.reward(&v.outcome),
            verification: Some(v),
        }
    }
}

/// Where a format check expects the answer. In configs: `"boxed"`, `"answer_line"` or
/// `{"regex": "<pattern>"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FormatCheck {
    /// A balanced `\boxed{…}` or `\fbox{…}` with non-blank content anywhere in the response.
    Boxed,
    /// A `dapo`-style `Answer: …` line in the last 300 characters (what `dapo` reads).
    AnswerLine,
    /// A regular expression (Rust `regex` syntax) that must match somewhere in the response,
    /// e.g. `(?s)^<think>.*</think>`.
    Regex(String),
}

/// Names of the [`FormatCheck`] kinds.
pub const FORMAT_CHECK_NAMES: [&str; 3] = ["boxed", "answer_line", "regex"];

/// Format reward: `present` when the answer is where it is expected, `absent` otherwise.
#[derive(Debug, Clone)]
pub struct FormatReward {
    check: CompiledCheck,
    present: f64,
    absent: f64,
}

#[derive(Debug, Clone)]
enum CompiledCheck {
    Boxed,
    AnswerLine,
    Regex(Regex),
}

impl FormatReward {
    /// Compiles a check; an invalid regex is a [`ConfigError`].
    pub fn new(check: &FormatCheck, present: f64, absent: f64) -> Result<Self, ConfigError> {
        let check = match check {
            FormatCheck::Boxed => CompiledCheck::Boxed,
            FormatCheck::AnswerLine => CompiledCheck::AnswerLine,
            FormatCheck::Regex(pattern) => {
                CompiledCheck::Regex(Regex::new(pattern).map_err(|e| {
                    ConfigError::InvalidValue(rl_core::InvalidValue {
                        field: "format.pattern",
                        value: format!("{pattern:?} ({e})"),
                        expected: "a valid regular expression",
                    })
                })?)
            }
        };
        for (field, v) in [("format.present", present), ("format.absent", absent)] {
            if !v.is_finite() {
                return Err(ConfigError::InvalidValue(rl_core::InvalidValue {
                    field,
                    value: v.to_string(),
                    expected: "a finite number",
                }));
            }
        }
        Ok(FormatReward {
            check,
            present,
            absent,
        })
    }

    /// Whether the response passes the check.
    pub fn passes(&self, response: &str) -> bool {
        match &self.check {
            CompiledCheck::Boxed => find_boxed(response)
                .iter()
                .any(|b| !b.content.trim().is_empty()),
            CompiledCheck::AnswerLine => {
                last_answer_line(last_chars(response, SOLUTION_TAIL_CHARS)).is_some()
            }
            CompiledCheck::Regex(re) => re.is_match(response),
        }
    }
}

impl RewardFunction for FormatReward {
    fn evaluate(&self, response: &str, _gold: &str) -> ComponentValue {
        ComponentValue {
            value: if self.passes(response) {
                self.present
            } else {
                self.absent
            },
            verification: None,
        }
    }
}

/// The configuration of one reward term.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum RewardKind {
    /// [`Correctness`]; `rewards` defaults to the verifier's reference mapping.
    Correctness {
        /// The verifier.
        verifier: VerifierConfig,
        /// Outcome → reward.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rewards: Option<RewardMap>,
    },
    /// [`FormatReward`].
    Format {
        /// What to check.
        check: FormatCheck,
        /// Reward when the check passes.
        #[serde(default = "one")]
        present: f64,
        /// Reward when it fails.
        #[serde(default)]
        absent: f64,
    },
}

fn one() -> f64 {
    1.0
}

impl RewardKind {
    /// Builds the reward term.
    pub fn build(&self) -> Result<Box<dyn RewardFunction>, ConfigError> {
        Ok(match self {
            RewardKind::Correctness { verifier, rewards } => {
                let rewards = rewards.unwrap_or_else(|| verifier.default_rewards());
                rewards.validate()?;
                Box::new(Correctness {
                    verifier: verifier.build()?,
                    rewards,
                })
            }
            RewardKind::Format {
                check,
                present,
                absent,
            } => Box::new(FormatReward::new(check, *present, *absent)?),
        })
    }
}

/// One weighted, named term of a [`RewardConfig`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WeightedReward {
    /// Name used in logs; unique within the sum.
    pub name: String,
    /// Weight of the term in the total.
    #[serde(default = "one")]
    pub weight: f64,
    /// The term.
    pub reward: RewardKind,
}

/// A weighted sum of reward terms, e.g. correctness (weight 1) plus a boxed-format bonus
/// (weight 0.1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RewardConfig {
    /// The terms, in logging order.
    pub components: Vec<WeightedReward>,
}

impl RewardConfig {
    /// A single correctness term with the verifier's reference reward mapping.
    pub fn correctness(verifier: VerifierConfig) -> Self {
        RewardConfig {
            components: vec![WeightedReward {
                name: "correctness".into(),
                weight: 1.0,
                reward: RewardKind::Correctness {
                    verifier,
                    rewards: None,
                },
            }],
        }
    }

    /// Validates and builds the sum.
    pub fn build(&self) -> Result<WeightedSum, ConfigError> {
        if self.components.is_empty() {
            return Err(ConfigError::InvalidValue(rl_core::InvalidValue {
                field: "components",
                value: "[]".into(),
                expected: "at least one reward term",
            }));
        }
        let mut terms = Vec::with_capacity(self.components.len());
        for (i, c) in self.components.iter().enumerate() {
            if c.name.is_empty() || self.components[..i].iter().any(|p| p.name == c.name) {
                return Err(ConfigError::InvalidValue(rl_core::InvalidValue {
                    field: "components.name",
                    value: format!("{:?}", c.name),
                    expected: "a non-empty name, unique within the sum",
                }));
            }
            if !c.weight.is_finite() {
                return Err(ConfigError::InvalidValue(rl_core::InvalidValue {
                    field: "components.weight",
                    value: c.weight.to_string(),
                    expected: "a finite number",
                }));
            }
            terms.push((c.name.clone(), c.weight, c.reward.build()?));
        }
        Ok(WeightedSum { terms })
    }
}

/// The built weighted sum.
#[derive(Debug)]
pub struct WeightedSum {
    terms: Vec<(String, f64, Box<dyn RewardFunction>)>,
}

/// One term's contribution, for logging.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ComponentScore {
    /// The term's name.
    pub name: String,
    /// Its weight.
    pub weight: f64,
    /// Its unweighted value.
    pub value: f64,
}

/// A total reward and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct RewardBreakdown {
    /// Σ weight · value.
    pub total: f64,
    /// Every term, in configuration order.
    pub components: Vec<ComponentScore>,
    /// The verification of the first term that ran a verifier (the correctness verdict).
    pub verification: Option<Verification>,
}

impl WeightedSum {
    /// Builds a sum from already-built terms `(name, weight, term)`.
    pub fn new(terms: Vec<(String, f64, Box<dyn RewardFunction>)>) -> Self {
        WeightedSum { terms }
    }

    /// Scores one response.
    pub fn evaluate(&self, response: &str, gold: &str) -> RewardBreakdown {
        let mut total = 0.0;
        let mut components = Vec::with_capacity(self.terms.len());
        let mut verification = None;
        for (name, weight, term) in &self.terms {
            let v = term.evaluate(response, gold);
            total += weight * v.value;
            components.push(ComponentScore {
                name: name.clone(),
                weight: *weight,
                value: v.value,
            });
            if verification.is_none() {
                verification = v.verification;
            }
        }
        RewardBreakdown {
            total,
            components,
            verification,
        }
    }
}
