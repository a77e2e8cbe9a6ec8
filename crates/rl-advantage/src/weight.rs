//! Asymmetric prompt weighting: one positive weight w(p̂) per group, multiplying all of the
//! group's advantages (arXiv 2602.11128, "Asymmetric Prompt Weighting for Reinforcement Learning
//! with Verifiable Rewards", Heckel, Soltanolkotabi and Thramboulidis).
//!
//! The paper writes a group-relative update for binary rewards r ∈ {0, 1} as a prompt weight
//! ω(ρ̂) times the centred reward: A_i = ω(ρ̂)·(r_i − ρ̂), ρ̂ the group's empirical success rate.
//! GRPO, DAPO and RLOO correspond to weights that are symmetric around ρ̂ = ½ (GRPO's is
//! 1/√(ρ̂(1 − ρ̂))); the paper's weightings are larger for hard prompts. Only the Linear-R form
//! could be confirmed from the sources available to us (see `docs/algorithms/prompt_weight.md`);
//! the Sqrt-R, Plateau-R and Uniform-R forms are not implemented.

use serde::{Deserialize, Serialize};

use crate::{AdvantageError, Daa};

/// A weight w(p̂) of a whole group's advantages, from the group's pass rate p̂ = #correct / G
/// (the verifier's flags, as for DAA).
///
/// Applied after the estimator (and after DAA, for `da3po`): Ã_i = w(p̂)·Â_i for every response
/// i of the group. Both DAA's factor and w(p̂) are positive scalars and DAA's gate reads only p̂
/// and the sign of Â, so the two commute; applying the weight last keeps DAA's meaning (a
/// correct response of a hard group gets λ times the advantage it would have had) and its
/// `amplified` report unchanged, and makes the weight the prompt's share of the whole update.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum PromptWeight {
    /// `none` (default): w = 1, the estimator's own advantages.
    #[default]
    None,
    /// `linear_r`: w(p̂) = 1/p̂ (the paper's Linear-REINFORCE weight). On `dr_grpo` with 0/1
    /// rewards this is the paper's estimator A_i = (r_i − p̂)/p̂: −1 for a wrong response,
    /// 1/p̂ − 1 for a correct one. A group without a correct response (p̂ = 0) is left as the
    /// estimator gave it (1/0 is undefined; its advantages are zero unless a shaped reward
    /// spreads them).
    LinearR,
}

rl_core::registry! {
    /// Valid values of [`PromptWeight`], as written in configs (the paper's Sqrt-R, Plateau-R
    /// and Uniform-R forms are not implemented: their formulas could not be confirmed).
    pub const PROMPT_WEIGHT_NAMES;
    /// Parses `none` or `linear_r`.
    fn PromptWeight::from_name -> AdvantageError, kind "`prompt_weight` value" {
        "none" => PromptWeight::None,
        "linear_r" => PromptWeight::LinearR,
    }
}

impl PromptWeight {
    /// The name as written in configs.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::LinearR => "linear_r",
        }
    }

    /// True for `none` (used to keep serialized configs unchanged).
    pub fn is_none(&self) -> bool {
        *self == Self::None
    }

    /// The weight of a group with pass rate `pass_rate` (1 where the form is undefined).
    pub fn weight(self, pass_rate: f64) -> f64 {
        match self {
            Self::None => 1.0,
            Self::LinearR if pass_rate > 0.0 => 1.0 / pass_rate,
            Self::LinearR => 1.0,
        }
    }

    /// Multiplies one group's advantages in place by w(p̂), p̂ from `correct`; returns w.
    pub fn apply(self, advantages: &mut [f64], correct: &[bool]) -> f64 {
        let w = self.weight(Daa::pass_rate(correct));
        if w != 1.0 {
            for a in advantages.iter_mut() {
                *a *= w;
            }
        }
        w
    }
}

impl TryFrom<String> for PromptWeight {
    type Error = AdvantageError;
    fn try_from(name: String) -> Result<Self, Self::Error> {
        Self::from_name(&name)
    }
}

impl From<PromptWeight> for String {
    fn from(w: PromptWeight) -> Self {
        w.name().to_string()
    }
}
