#![doc = include_str!("../README.md")]
//!
//! ## In detail
//!
//! Everything works on `[sequences, tokens]` tensors with an explicit boolean mask of valid
//! (response) tokens that comes from the sampler (lengths, finish reasons), never from pad ids.
//! Padded positions are neutralised before any arithmetic, so pad values (even NaN or ±∞) and
//! pad lengths change neither the loss nor the gradient.
//!
//! ## Per-token policy losses ([`PolicyLoss`]); r = exp(logp − logp_old), A = advantage
//!
//! * `ppo` (verl `vanilla`): ℓ = max(−A·r, −A·clip(r, 1−ε_low, 1+ε_high)); with dual-clip c
//!   (Ye et al. 2019) and A < 0 the loss is further capped: ℓ = min(ℓ, −c·A). DAPO's
//!   clip-higher is ε_low = 0.2, ε_high = 0.28. The log-ratio is clamped to [−20, 20] before exp.
//! * `gspo` (Qwen, arXiv 2507.18071): sequence ratio s_i = exp((1/|o_i|) Σ_t (logp − logp_old)),
//!   ℓ_i = max(−A_i·s_i, −A_i·clip(s_i, 1−ε_low, 1+ε_high)), broadcast to the tokens of o_i and
//!   aggregated per sequence (paper ranges ε = 3e-4 / 4e-4).
//! * `gspo_token`: s_{i,t} = sg(s_i)·π_θ(o_t)/sg(π_θ(o_t)), the same clipped form per token;
//!   equal to `gspo` in value and gradient when A_{i,t} = A_i.
//! * `reinforce`: ℓ = −A·logp (no ratio), for on-policy single updates.
//! * `cispo` (MiniMax-M1, arXiv 2506.13585; verl `cispo`): ℓ = −sg(clip(r, 1−ε_low, 1+ε_high))·A·logp.
//!   The clipped ratio is a detached weight: every token keeps a REINFORCE gradient scaled by it
//!   (none is zeroed, unlike PPO's clip). The value is not a surrogate of the objective; its
//!   gradient is. Clip flags count weights at either bound whatever the advantage's sign.
//!
//! ## Aggregation ([`Aggregation`]) with explicit global counts ([`GlobalCounts`])
//!
//! The per-token loss ℓ is separate from its aggregation. Normalisers are *global* (the whole
//! mini-batch across micro-batches and workers), so that k accumulated micro-batches give
//! exactly the full batch's loss and gradient:
//!
//! * `token_mean` (DAPO): Σ m·ℓ / N_tokens;
//! * `seq_mean_token_mean` (GRPO): Σ_i (Σ_t m·ℓ / |o_i|) / N_seqs;
//! * `seq_mean_token_sum`: Σ_i Σ_t m·ℓ / N_seqs;
//! * `seq_mean_token_sum_norm` (Dr. GRPO): Σ_i Σ_t m·ℓ / (N_seqs · L) with a fixed constant L
//!   (the paper's 1/G mean over responses and a constant instead of 1/|o_i|; TRL divides by
//!   B·max_completion_length the same way; verl's mode of this name omits 1/N_seqs).
//!
//! ## KL to a reference policy ([`KlEstimator`]), x = logp − logp_ref
//!
//! k1 = x, k2 = x²/2, k3 = e^{−x} + x − 1 (−x clamped to [−20, 20], k3 to [−10, 10], as verl's
//! `low_var_kl`), `abs` = |x|. Straight-through: forward value of the estimator, gradient of k2.
//! The total loss is pg + β·KL − c_ent·entropy, each aggregated the same way (entropy bonus 0 by
//! default). Every call returns [`LossMetrics`] as masked sums with counts, mergeable across
//! micro-batches.
//!
//! ## On-policy distillation ([`generalized_jsd`])
//!
//! The generalized JSD of GKD (TRL's `generalized_jsd_loss`) between the student's and a
//! teacher's full next-token distributions, per position, summed in vocabulary chunks, with a
//! closed-form gradient; β = 1 is the reverse KL. Aggregate it like a per-token loss.
//!
//! ## PPO's value loss ([`value_loss`])
//!
//! The critic's clipped regression on GAE returns, ℓ = ½·max((v − R)², (clip(v, v_old ± ε) − R)²)
//! per token, aggregated like the policy loss; equal to verl's `compute_value_loss`.
//!
//! ## Reward models: the Bradley–Terry loss ([`bradley_terry`])
//!
//! −log σ(r_chosen − r_rejected − margin), mean over pairs, plus an optional centring term
//! c·mean((r_c + r_r)²), as TRL's `RewardTrainer` computes it.
//!
//! ## Importance-sampling correction ([`IsCorrection`])
//!
//! For rollouts from an engine whose log-probs π_rollout differ from π_old: truncated token
//! weights min(π_old/π_rollout, C), token masks and geometric-mean sequence masks, computed on
//! the host ([`sequence_weights`]) and applied to the per-token loss before aggregation.

mod aggregate;
mod bradley_terry;
mod config;
mod distill;
mod error;
mod is_correction;
mod kl;
mod loss;
mod metrics;
mod value;

pub use aggregate::{GlobalCounts, aggregate};
pub use bradley_terry::{PairLoss, bradley_terry};
pub use config::{
    AGGREGATION_NAMES, Aggregation, KL_NAMES, KlConfig, KlEstimator, LossConfig, POLICY_LOSS_NAMES,
    PolicyLoss,
};
pub use distill::generalized_jsd;
pub use error::LossError;
pub use is_correction::{
    IS_CORRECTION_NAMES, IsCorrection, IsStats, SequenceWeights, sequence_weights,
};
pub use kl::kl_per_token;
pub use loss::{
    LossInput, LossOutput, PerToken, compute_loss, mask_from_lengths, per_token_policy_loss,
};
pub use metrics::LossMetrics;
pub use rl_core::{InvalidValue, UnknownName};
pub use value::{DEFAULT_CLIPRANGE_VALUE, ValueLossOutput, value_loss};
