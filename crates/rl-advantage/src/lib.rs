#![doc = include_str!("../README.md")]
//!
//! ## In detail
//!
//! Plain Rust, no tensor framework: a trainer written with any stack can depend on this crate
//! alone. Every sample carries an explicit [`GroupId`], its scalar reward and a separate
//! `correct` flag from the verifier; groups are never inferred from layout or prompt text and
//! correctness is never inferred from the (possibly shaped) reward.
//!
//! ## Estimators (one group of G responses with rewards R_1..R_G)
//!
//! | name | advantage Â_i | source |
//! |---|---|---|
//! | `grpo` | (R_i − mean R) / (std R + ε), std sample (Bessel, verl/TRL) or population | DeepSeekMath, arXiv 2402.03300 |
//! | `dr_grpo` | R_i − mean R | Dr. GRPO, arXiv 2503.20783 |
//! | `rloo` | R_i − mean_{j≠i} R_j | Ahmadian et al. 2024 (RLOO) |
//! | `dapo` | as `grpo`; meaningful after dynamic sampling | DAPO, arXiv 2503.14476 |
//! | `da3po` | `dapo`, then DAA: Ã_i = λ·Â_i if response i is correct, p̂ < τ and Â_i > 0, else Â_i | DA3PO, arXiv 2608.27982 |
//! | `reinforce_plus_plus` | R_i whitened over every token of the batch (token-weighted mean, Bessel-corrected token variance, verl's ε = 1e-8 terms); no group baseline | REINFORCE++, arXiv 2501.03262; verl `reinforce_plus_plus` (γ = 1) |
//! | `reinforce_plus_plus_baseline` | R_i − mean of its group, then the same whitening | REINFORCE++-baseline, arXiv 2501.03262; verl `reinforce_plus_plus_baseline` |
//!
//! p̂ = (#correct in the group)/G is computed from the `correct` flags; the inequality is strict;
//! defaults λ = 2, τ = 0.5. A correct response whose Â is negative (possible only with shaped
//! rewards) is left unchanged by default ([`NegativeAdvantage::Keep`]): DAA strengthens the pull
//! towards rare correct answers, never the push away from one. A group whose rewards are all equal within `equal_tol` gets exactly
//! zero advantages (never reward/ε). Optional batch whitening is an explicit, separate step.
//!
//! The two REINFORCE++ estimators normalise over the whole batch, not per group
//! ([`AdvantageEstimator::batch_level`]): pass each response's token count with
//! [`compute_batch_with_tokens`] to weigh responses by length as verl does (without counts every
//! response counts as one token). DAA composes on top of them as an optional layer
//! (`daa = { lambda, tau, … }`, [`DaaConfig`]), applied per group after the whitening.
//!
//! ## An estimator is a baseline plus modifiers ([`Estimator`])
//!
//! The names above are compositions, as verl builds them: a baseline ([`AdvantageEstimator`]:
//! [`Grpo`] for `grpo`, `dapo` and `da3po`, [`DrGrpo`], [`Rloo`], [`ReinforcePlusPlus`]), then
//! the modifiers per group, each optional: DAA ([`Daa`]), then the prompt weight
//! ([`PromptWeight`]). [`EstimatorConfig::build`] makes the composition from a config;
//! [`Estimator::new`] wraps a baseline of your own.
//!
//! ## Prompt weighting (every estimator, `prompt_weight`)
//!
//! A weight w(p̂) of the whole group, applied after the estimator (and after DAA):
//! Ã_i = w(p̂)·Â_i. `none` (default, w = 1) or `linear_r` (w = 1/p̂, the Linear-R weighting of
//! arXiv 2602.11128; on `dr_grpo` with 0/1 rewards it gives the paper's (r_i − p̂)/p̂). Groups
//! with p̂ = 0 are left unchanged. See [`PromptWeight`].
//!
//! ## On-policy distillation ([`distill`])
//!
//! A teacher's log-probs of the student's own sampled tokens give a per-token advantage,
//! A_t = w·Â + c·(log π_T(y_t) − log π_S(y_t)) (the sampled-token reverse-KL estimate, negated),
//! composed with any estimator's outcome advantage Â ([`distill::DistillSignal`]).
//!
//! ## PPO's advantages from a critic ([`gae`])
//!
//! Per-token generalized advantage estimation from a value model's predictions, γ and λ,
//! skipping observation tokens, then whitened over the batch's tokens, as verl's `gae` estimator
//! computes them; the returns are the critic's targets ([`gae::Gae::batch`]). The KL penalty in the
//! reward before it, with a fixed or adaptive β, is [`kl_reward`].
//!
//! ## Theory ([`theory`])
//!
//! Theorem 3.1 of DA3PO: under DAPO's dynamic sampling, a response with true success rate p has
//! its expected advantage amplified by the inverse probability that its group survives:
//! α+(p, G) = 1/(1 − p^(G−1)) (correct), α−(p, G) = 1/(1 − (1−p)^(G−1)) (incorrect), and
//! γ = α+/α− < 1 exactly when p < 1/2.
//!
//! ```
//! use rl_advantage::{EstimatorConfig, Sample, GroupId, compute_batch};
//! let est = EstimatorConfig::from_name("grpo").unwrap().build(8).unwrap();
//! let samples: Vec<Sample> = (0..8)
//!     .map(|i| Sample::new(GroupId(7), if i < 3 { 1.0 } else { -1.0 }, i < 3))
//!     .collect();
//! let out = compute_batch(&est, &samples, None).unwrap();
//! assert!((out.advantages[0] - 1.2076).abs() < 1e-4);
//! ```

#![warn(missing_docs)]
mod batch;
mod daa;
pub mod distill;
mod error;
mod estimator;
pub mod gae;
mod group;
pub mod kl_reward;
mod sample;
pub mod theory;
mod weight;

pub use batch::{
    BatchAdvantages, BatchStats, Whitening, compute_batch, compute_batch_with_tokens,
    compute_token_advantages,
};
pub use daa::{
    Daa, DaaConfig, DaaOutcome, LambdaRule, NEGATIVE_ADVANTAGE_NAMES, NegativeAdvantage,
};
pub use error::AdvantageError;
pub use estimator::composed::Estimator;
pub use estimator::config::{ESTIMATOR_NAMES, EstimatorConfig};
pub use estimator::reinforce_pp::{REINFORCE_PP_WHITEN_EPS, ReinforcePlusPlus};
pub use estimator::{AdvantageEstimator, DrGrpo, Grpo, Rloo, STD_NAMES, StdMode};
pub use group::{GroupedBatch, group_indices};
pub use rl_core::{GroupId, InvalidValue, UnknownName};
pub use sample::Sample;
pub use weight::{PROMPT_WEIGHT_NAMES, PromptWeight};
