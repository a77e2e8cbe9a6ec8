//! # rl-trainer — the GRPO / Dr. GRPO / DAPO / DA3PO / GSPO training loop on burn
//!
//! One [`Trainer`] composes the workspace's pieces:
//!
//! 1. prompts (JSON lines or Parquet, [`data`]) → G rollouts each from the [`Policy`] (the
//!    sampler's log-probs and finish reasons kept);
//! 2. verification (`rl-verifier`) → reward mapping → overlong shaping;
//! 3. DAPO's dynamic-sampling batcher (`rl-sampler`): over-sample until N groups pass the filter;
//! 4. advantages (`rl-advantage`; DA3PO's DAA: Ã_i = λ·Â_i for correct responses of groups with
//!    p̂ < τ);
//! 5. μ epochs over mini-batches of whole groups with π_old log-probs fixed at the start of the
//!    step; micro-batches accumulate gradients with the mini-batch's global token/sequence
//!    counts (`rl-loss`), so accumulation equals the full-batch update;
//! 6. AdamW (PyTorch-style ε and decoupled weight decay) with linear warm-up and global-norm
//!    gradient clipping;
//! 7. metrics as JSON lines with fixed names ([`StepMetrics`]) and atomic checkpoints (HF
//!    safetensors weights, optimizer moments, RNG, data cursor, difficulty tracker) from which
//!    `resume` continues bit-for-bit.
//!
//! Algorithms are presets ([`TrainConfig::apply_preset`]) over one configuration, overridable
//! field by field in TOML.

pub mod config;
pub mod data;
mod error;
pub mod eval;
pub mod metrics;
pub mod optim;
pub mod policy;
pub mod rollout;
pub mod sft;
pub mod tasks;
mod trainer;
pub mod update;

pub use config::{ALGORITHMS, TrainConfig};
pub use error::TrainerError;
pub use eval::{EvalReport, TierEval};
pub use metrics::{StepMetrics, read_metrics};
pub use policy::Policy;
pub use sft::{SftConfig, supervised_warm_start};
pub use trainer::{Trainer, TrainerState, config_diff, end_token_ids, latest_checkpoint};
