#![doc = include_str!("../README.md")]
//!
//! ## In detail
//!
//! One [`Trainer`] composes the workspace's pieces, one named phase after another
//! ([`Trainer::step`]):
//!
//! 1. **generate**: prompts (JSON lines or Parquet, [`data`]) → G rollouts each from a
//!    rollout engine (`rl-rollout`'s [`rl_rollout::RolloutEngine`]; by default the in-process
//!    [`LocalEngine`] holding a copy of the policy's weights); the engine's log-probs, finish
//!    reasons and weight versions are kept;
//! 2. **score**: verification (`rl-verifier`) → reward mapping → overlong shaping
//!    ([`scoring::Scorer`]);
//! 3. **filter**: DAPO's dynamic-sampling batcher (`rl-sampler`) takes rounds until N groups
//!    pass, each round sized to the run's keep rate;
//! 4. **advantages** (`rl-advantage`; DA3PO's DAA: Ã_i = λ·Â_i for correct responses of groups
//!    with p̂ < τ);
//! 5. **old/reference log-probs** of the response tokens, fixed at the start of the step, and
//!    the importance-sampling correction of the engine/trainer gap (`rl-loss`);
//! 6. **update**: μ epochs over mini-batches of whole groups; micro-batches accumulate gradients
//!    with the mini-batch's global token/sequence counts (`rl-loss`), so accumulation equals the
//!    full-batch update; AdamW (PyTorch-style ε and decoupled weight decay) with linear warm-up
//!    and global-norm clipping; non-finite updates are skipped and counted;
//! 7. **sync weights** to the engine as version = steps done (asynchronous rollouts with a
//!    staleness bound: `rollout.max_staleness`);
//! 8. **metrics** as JSON lines with fixed names ([`StepMetrics`]); atomic checkpoints (HF
//!    safetensors weights, optimizer moments, RNG, data cursor, keep-rate counts) from which
//!    `resume` continues bit-for-bit.
//!
//! Each phase is one file of [`trainer`] (the table there). Data parallelism is one interface,
//! [`DataParallel`], that every phase calls; a single process is its world of one, and
//! burn-collective's workers ([`distributed`]) come with the default cargo feature
//! `distributed`. The library prints nothing: [`Trainer::run`] reports [`RunEvent`]s.
//!
//! [`Run`] is the entry point from a config: it loads the checkpoint of `model.path` (or the
//! embedded arithmetic task, asked for by name), builds the trainer new or resumed, joins the
//! workers and trains; `rlvr train` and the examples call it.
//!
//! Algorithms are presets ([`TrainConfig::apply_preset`]) over one configuration, overridable
//! field by field in TOML.

mod atomic_dir;
pub mod config;
pub mod data;
#[cfg(feature = "distributed")]
pub mod distributed;
pub mod engine;
mod error;
pub mod eval;
pub mod memory;
pub mod metrics;
pub mod multi_turn;
pub mod optim;
pub mod parallel;
pub mod policy;
pub mod policy_update;
pub mod probe_records;
pub mod reward_model;
pub mod run;
pub mod scoring;
pub mod sft;
pub mod step_stats;
pub mod tasks;
pub mod trainer;

pub use config::{ALGORITHMS, DistillForm, DistillSection, TrainConfig};
pub use engine::{EngineHandle, EngineThread, LocalEngine, LocalModel, build_engine};
pub use error::TrainerError;
pub use eval::{EvalReport, TierEval};
pub use metrics::{StepMetrics, read_metrics};
pub use parallel::{Collective, DataParallel, SingleProcess};
pub use policy::Policy;
pub use run::{Run, Source};
pub use sft::{SftConfig, SftExample, supervised_warm_start};
pub use trainer::{
    ImportanceWeights, RunEvent, SubmittedRound, Trainer, TrainerState, config_diff, end_token_ids,
    latest_checkpoint,
};
