//! Difficulty-aware Advantage Amplification (DAA), the DA3PO paper's correction.

use serde::{Deserialize, Serialize};

use crate::AdvantageError;

/// Default amplification factor λ.
pub const DEFAULT_LAMBDA: f64 = 2.0;
/// Default difficulty threshold τ.
pub const DEFAULT_TAU: f64 = 0.5;

/// What DAA does to a correct response of a hard group whose advantage Â is negative.
///
/// The paper's rule, Ã_i = λ·Â_i for correct responses of groups with p̂ < τ, is written for
/// binary rewards, where a correct response of a mixed group always has Â > 0: DAA strengthens
/// the *pull* towards rare correct answers, compensating γ = α+/α− < 1 (Theorem 3.1). With a
/// shaped reward (an overlong penalty, 1/0 rewards, several reward terms) a correct response can
/// sit below its group's mean; λ·Â then pushes that correct answer *away* λ times harder, the
/// opposite of DAA's purpose. So the default leaves such advantages unchanged; on the paper's
/// domain (binary rewards) both settings give identical advantages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum NegativeAdvantage {
    /// `keep` (default): Â < 0 is left as is; only positive advantages of correct responses of
    /// hard groups are multiplied by λ.
    #[default]
    Keep,
    /// `amplify`: the formula read literally, λ·Â whatever the sign of Â.
    Amplify,
}

rl_core::registry! {
    /// Valid values of [`NegativeAdvantage`], as written in configs.
    pub const NEGATIVE_ADVANTAGE_NAMES;
    /// Parses `keep` or `amplify`.
    fn NegativeAdvantage::from_name -> AdvantageError, kind "`negative_advantage` value" {
        "keep" => NegativeAdvantage::Keep,
        "amplify" => NegativeAdvantage::Amplify,
    }
}

impl NegativeAdvantage {
    /// The name as written in configs.
    pub fn name(self) -> &'static str {
        match self {
            Self::Keep => "keep",
            Self::Amplify => "amplify",
        }
    }
}

impl TryFrom<String> for NegativeAdvantage {
    type Error = AdvantageError;
    fn try_from(name: String) -> Result<Self, Self::Error> {
        Self::from_name(&name)
    }
}

impl From<NegativeAdvantage> for String {
    fn from(rule: NegativeAdvantage) -> Self {
        rule.name().to_string()
    }
}

/// How DAA's factor λ is chosen for a group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LambdaRule {
    /// The paper's constant λ (`lambda`, 2 by default).
    #[default]
    Constant,
    /// λ(p̂, G) = 1/γ(p̂, G) = (1 − p̂^(G−1)) / (1 − (1 − p̂)^(G−1)), the factor that undoes the
    /// asymmetry of Theorem 3.1 exactly (`crate::theory::gamma`), optionally clamped to
    /// `lambda_min` ≤ λ ≤ `lambda_max`. It is 1 at p̂ = ½, about 1.65 at G = 8, p̂ = 1/8, and below 1
    /// above p̂ = ½; the τ gate then only decides where it applies (τ = 1: every kept group).
    /// The paper names adaptive factors as its next step; this one is not from the paper.
    Theory,
}

impl LambdaRule {
    /// Valid names, as written in configs.
    pub const NAMES: [&'static str; 2] = ["constant", "theory"];
}

/// DAA: for a kept group with pass rate p̂ = #correct/G, Ã_i = λ·Â_i when response i is correct,
/// p̂ < τ (strict) and, unless `negative_advantage` is `amplify`, Â_i > 0; else Ã_i = Â_i.
///
/// Correctness and p̂ come from the verifier's flags, never from the shaped reward: with DAPO's
/// ±1 reward plus an overlong penalty a correct but long answer can have a reward ≤ 0, and must
/// still be amplified when its advantage is positive. Groups that are all wrong contain nothing
/// to amplify; groups that are all correct have p̂ = 1 ≥ τ, so DAA never touches the groups
/// dynamic sampling drops.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Daa {
    /// Amplification factor λ (> 0).
    pub lambda: f64,
    /// Difficulty threshold τ in (0, 1].
    pub tau: f64,
    /// What happens to a correct response of a hard group with Â < 0.
    #[serde(default)]
    pub negative_advantage: NegativeAdvantage,
    /// How λ is chosen: the constant `lambda`, or 1/γ(p̂, G) ([`LambdaRule::Theory`]).
    #[serde(default)]
    pub lambda_rule: LambdaRule,
    /// Lower bound of the theory factor (none: unbounded).
    #[serde(default)]
    pub lambda_min: Option<f64>,
    /// Upper bound of the theory factor (none: unbounded).
    #[serde(default)]
    pub lambda_max: Option<f64>,
}

impl Default for Daa {
    fn default() -> Self {
        Self {
            lambda: DEFAULT_LAMBDA,
            tau: DEFAULT_TAU,
            negative_advantage: NegativeAdvantage::Keep,
            lambda_rule: LambdaRule::Constant,
            lambda_min: None,
            lambda_max: None,
        }
    }
}

/// What [`Daa::apply`] did to one group.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DaaOutcome {
    /// p̂ = #correct / G.
    pub pass_rate: f64,
    /// Number of advantages multiplied by λ.
    pub amplified: usize,
}

impl Daa {
    /// Validated constructor (negative advantages of correct responses kept, the default).
    pub fn new(lambda: f64, tau: f64) -> Result<Self, AdvantageError> {
        if !(lambda.is_finite() && lambda > 0.0) {
            return Err(AdvantageError::InvalidConfig(rl_core::InvalidValue {
                field: "lambda",
                value: lambda.to_string(),
                expected: "a finite number > 0 (1 disables amplification)",
            }));
        }
        if !(tau.is_finite() && tau > 0.0 && tau <= 1.0) {
            return Err(AdvantageError::InvalidConfig(rl_core::InvalidValue {
                field: "tau",
                value: tau.to_string(),
                expected: "a number in (0, 1]",
            }));
        }
        Ok(Self {
            lambda,
            tau,
            ..Self::default()
        })
    }

    /// The same DAA with λ chosen by `rule`, the theory factor clamped to the given bounds
    /// (each finite and > 0, `lambda_min` ≤ `lambda_max`).
    pub fn with_lambda_rule(
        self,
        rule: LambdaRule,
        lambda_min: Option<f64>,
        lambda_max: Option<f64>,
    ) -> Result<Self, AdvantageError> {
        for (field, bound) in [("lambda_min", lambda_min), ("lambda_max", lambda_max)] {
            if let Some(b) = bound
                && !(b.is_finite() && b > 0.0)
            {
                return Err(AdvantageError::InvalidConfig(rl_core::InvalidValue {
                    field,
                    value: b.to_string(),
                    expected: "a finite number > 0",
                }));
            }
        }
        if let (Some(lo), Some(hi)) = (lambda_min, lambda_max)
            && lo > hi
        {
            return Err(AdvantageError::InvalidConfig(rl_core::InvalidValue {
                field: "lambda_min",
                value: format!("{lo} > lambda_max = {hi}"),
                expected: "lambda_min <= lambda_max",
            }));
        }
        Ok(Self {
            lambda_rule: rule,
            lambda_min,
            lambda_max,
            ..self
        })
    }

    /// The factor applied to an amplified response of a group of `group_size` with pass rate
    /// `pass_rate`: `lambda`, or the clamped 1/γ(p̂, G).
    pub fn factor(&self, pass_rate: f64, group_size: usize) -> f64 {
        match self.lambda_rule {
            LambdaRule::Constant => self.lambda,
            LambdaRule::Theory => {
                let f = 1.0 / crate::theory::formulas::gamma(pass_rate, group_size);
                let f = self.lambda_min.map_or(f, |lo| f.max(lo));
                self.lambda_max.map_or(f, |hi| f.min(hi))
            }
        }
    }

    /// The same DAA with another rule for negative advantages.
    pub fn with_negative_advantage(self, negative_advantage: NegativeAdvantage) -> Self {
        Self {
            negative_advantage,
            ..self
        }
    }

    /// Whether a response with this correctness and (unamplified) advantage, in a group with
    /// pass rate `pass_rate`, is amplified.
    pub fn amplifies(&self, pass_rate: f64, correct: bool, advantage: f64) -> bool {
        correct
            && pass_rate < self.tau
            && (advantage > 0.0 || self.negative_advantage == NegativeAdvantage::Amplify)
    }

    /// Pass rate of a group from its correctness flags.
    pub fn pass_rate(correct: &[bool]) -> f64 {
        if correct.is_empty() {
            return 0.0;
        }
        correct.iter().filter(|&&c| c).count() as f64 / correct.len() as f64
    }

    /// Amplifies one group's advantages in place.
    pub fn apply(&self, advantages: &mut [f64], correct: &[bool]) -> DaaOutcome {
        let pass_rate = Self::pass_rate(correct);
        let factor = self.factor(pass_rate, correct.len());
        let mut amplified = 0;
        for (a, &c) in advantages.iter_mut().zip(correct) {
            if self.amplifies(pass_rate, c, *a) {
                *a *= factor;
                amplified += 1;
            }
        }
        DaaOutcome {
            pass_rate,
            amplified,
        }
    }
}

fn default_lambda() -> f64 {
    DEFAULT_LAMBDA
}
fn default_tau() -> f64 {
    DEFAULT_TAU
}

/// DAA as an optional layer of an estimator's configuration (`[advantage.daa]` of
/// `reinforce_plus_plus` and `reinforce_plus_plus_baseline`): the same settings as `da3po`'s,
/// each with its default, unknown keys refused. [`DaaConfig::build`] checks the values.
///
/// ```
/// use rl_advantage::EstimatorConfig;
/// let cfg: EstimatorConfig =
///     serde_json::from_str(r#"{"name":"reinforce_plus_plus_baseline","daa":{"lambda":3.0}}"#)
///         .unwrap();
/// let est = cfg.build(8).unwrap();
/// assert_eq!(est.daa().unwrap().lambda, 3.0);
/// assert_eq!(est.daa().unwrap().tau, 0.5);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DaaConfig {
    /// Amplification factor λ (> 0; default 2).
    #[serde(default = "default_lambda")]
    pub lambda: f64,
    /// Difficulty threshold τ in (0, 1] (default 0.5): groups with p̂ < τ are hard.
    #[serde(default = "default_tau")]
    pub tau: f64,
    /// What happens to a correct response of a hard group with Â < 0 (default `keep`).
    #[serde(default)]
    pub negative_advantage: NegativeAdvantage,
    /// How λ is chosen (default `constant`).
    #[serde(default)]
    pub lambda_rule: LambdaRule,
    /// Lower bound of the theory factor (unset: unbounded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lambda_min: Option<f64>,
    /// Upper bound of the theory factor (unset: unbounded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lambda_max: Option<f64>,
}

impl Default for DaaConfig {
    fn default() -> Self {
        Self {
            lambda: DEFAULT_LAMBDA,
            tau: DEFAULT_TAU,
            negative_advantage: NegativeAdvantage::Keep,
            lambda_rule: LambdaRule::Constant,
            lambda_min: None,
            lambda_max: None,
        }
    }
}

impl DaaConfig {
    /// The validated [`Daa`]; errors name the field (`lambda`, `tau`, `lambda_min`,
    /// `lambda_max`).
    pub fn build(&self) -> Result<Daa, AdvantageError> {
        Daa::new(self.lambda, self.tau)?
            .with_negative_advantage(self.negative_advantage)
            .with_lambda_rule(self.lambda_rule, self.lambda_min, self.lambda_max)
    }
}
