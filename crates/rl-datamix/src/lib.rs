//! # rl-datamix — online data mixing for LM pre-training
//!
//! The per-domain mixture of a pre-training run, re-chosen every LM step by a
//! [`MixingScheduler`](scheduler::MixingScheduler): a static mixture, ODM (EXP3 over domains,
//! Albalak et al. 2023) or the Holistic Data Scheduler (HDS: Soft Actor-Critic with a holistic
//! reward). The LM trainer is the scheduler's environment ([`env::LmEnv`], a small decoder LM
//! in burn on text domains of known character, [`data`]); [`surrogate`] is a millisecond-scale
//! stand-in with linear tasks. See `docs/hds.md` in the repository.
//!
//! ## Formulas
//!
//! **ODM** ([`scheduler::odm`]), at step `t` with `ε_0 = 1/K`:
//! `ε_t = min(1/K, sqrt(ln K / (K t)))`, `π_t = (1 − K ε_t)·softmax(ε_{t−1} R̂) + ε_t`, and for
//! every micro-batch drawn from domain `i` with probability `p_i` and loss `ℓ`:
//! `R̂_i ← α R̂_i + (1 − α) f(ℓ)/p_i` (`α = 0.9`, `f(ℓ) = ℓ` or `exp ℓ`). The official group
//! variant updates every domain with its mean loss, `R̂_i ← α R̂_i + (1 − α) f(ℓ̄_i)`, and uses
//! `π = (1 − K ε_t) R̂/Σ R̂ + ε_t`.
//!
//! **HDS reward** ([`rewards`]): per-domain gradients `g_i` on late FF output weights,
//! `s_i = Σ_{j≠i}⟨g_i, g_j⟩ / ((1/K) Σ_k ‖g_k‖)`, `r_align = zn(s)` (z-score, clip ±3);
//! `r_quality = t'/max(D, 0.05)` (code form) or `D`, with `D` the type–token ratio or the
//! normalised MTLD of the drawn text and `t'` the training progress;
//! `r_stability = min(5, 1/(Σ_l |‖W_l^t‖_F − ‖W_l^{t−1}‖_F| + 1e-8))`. The scalar critic sees
//! `R = w_a Σ_i a_i r_align,i + w_d r_quality + w_s r_stability` (defaults 1, 10, 10); the
//! per-domain critic sees `w_a r_align + (w_d r_quality + w_s r_stability)·1`.
//!
//! **Policy** ([`simplex`], [`sac`]): `z ~ N(μ(s), diag σ(s)²)` in `R^{K−1}`, `a = softmax([z, 0])`
//! (additive log-ratio), with the exact simplex density
//! `log π(a|s) = Σ_j log N(z_j; μ_j, σ_j) − Σ_{i=1}^{K} log a_i` and target entropy `−(K − 1)`.
//!
//! **SAC losses** ([`sac`]): critics `Σ_k mean(Q_k(s, a) − y)²` with
//! `y = R + γ (min_k Q'_k(s', a') − α log π(a'|s'))`, `a' ~ π(·|s')`; actor
//! `mean(α log π(ã|s) − min_k Q_k(s, ã))` with `ã` reparameterised; temperature
//! `−log α · mean(log π(ã|s) + H̄)`; targets `θ' ← τθ + (1 − τ)θ'`.
//!
//! ## Example
//!
//! ```
//! use burn::backend::{Autodiff, Flex};
//! use rl_datamix::scheduler::SchedulerConfig;
//! use rl_datamix::surrogate::{run_surrogate, Surrogate, SurrogateConfig};
//!
//! let mut env = Surrogate::new(SurrogateConfig::default(), 50, 0).unwrap();
//! let mut odm = SchedulerConfig::by_name("odm")
//!     .unwrap()
//!     .build::<Autodiff<Flex>>(env.num_domains(), 50, 0, &Default::default())
//!     .unwrap();
//! let run = run_surrogate(&mut env, odm.as_mut(), 50).unwrap();
//! assert_eq!(run.mixtures.len(), 50);
//! ```

pub mod data;
pub mod env;
pub mod error;
pub mod experiment;
pub mod lm;
pub mod params;
pub mod rewards;
pub mod sac;
pub mod scheduler;
pub mod simplex;
pub mod state;
pub mod stats;
pub mod surrogate;

#[cfg(test)]
mod test_refs;

pub use error::{DatamixError, Result};
pub use scheduler::{
    Checkpoint, MixingScheduler, Requirements, SCHEDULER_NAMES, SchedulerConfig, StepStats,
};
