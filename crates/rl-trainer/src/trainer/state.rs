//! What a trainer holds: the [`Trainer`] struct (models, optimizer, engine, data, the run's
//! state), the [`TrainerState`] a checkpoint restores, and the rounds in flight between the
//! generation phase (`rounds.rs`) and a checkpoint (`checkpoint.rs`). The phases are `impl
//! Trainer` blocks in their own files; this file defines what they share and imports none of
//! them (only the leaf files `critic.rs`, `prompts.rs` and `teacher.rs`), so no file imports in a circle
//! (`python3 tools/import_cycles.py`).

use burn::tensor::backend::AutodiffBackend;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rl_advantage::Estimator;
use rl_advantage::kl_reward::KlInReward;
use rl_env::Trajectory;
use rl_loss::IsCorrection;
use rl_rollout::Completion;
use rl_sampler::{DynamicBatcher, KeepRate};
use rl_verifier::Verifier;
use serde::{Deserialize, Serialize};

use super::critic::Critic;
use super::prompts::Prompts;
use super::teacher::Teacher;
use crate::config::TrainConfig;
use crate::data::SamplerState;
use crate::engine::{EngineHandle, Pending};
use crate::metrics::MetricsWriter;
use crate::multi_turn::Episodes;
use crate::optim::AdamWOptimizer;
use crate::parallel::DataParallel;
use crate::policy::Policy;
use crate::scoring::ScoredResponse;

/// Everything besides weights and optimizer moments that a checkpoint restores.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TrainerState {
    /// Completed steps.
    pub step: usize,
    /// Prompt sampler position.
    pub sampler: SamplerState,
    /// The trainer's RNG (generation seeds, mini-batch order).
    pub rng: ChaCha8Rng,
    /// Next group id.
    pub next_group: u64,
    /// Responses generated so far.
    #[serde(default)]
    pub rollouts: u64,
    /// Groups seen and kept so far (adaptive round sizing).
    #[serde(default)]
    pub keep_rate: KeepRate,
    /// Optimizer updates skipped in a row for non-finite losses or gradients.
    #[serde(default)]
    pub consecutive_skips: usize,
    /// Each prompt's running pass rate, with `[rollout.budget]` (its group sizes come from it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difficulty: Option<rl_sampler::DifficultyTracker>,
    /// The KL penalty in the critic's rewards with its current β (`[critic.kl_in_reward]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kl_in_reward: Option<KlInReward>,
}

impl TrainerState {
    /// The state of a new run seeded with `seed`.
    pub(super) fn fresh(seed: u64) -> Self {
        Self {
            step: 0,
            sampler: SamplerState::default(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            next_group: 0,
            rollouts: 0,
            keep_rate: KeepRate::default(),
            consecutive_skips: 0,
            difficulty: None,
            kl_in_reward: None,
        }
    }
}

/// The models and state a trainer starts from: a new run's, or a checkpoint's.
pub(super) struct Start<B: AutodiffBackend, P: Policy<B>> {
    pub(super) policy: P,
    pub(super) reference: Option<P>,
    pub(super) optim: AdamWOptimizer<B, P>,
    pub(super) critic: Option<Critic<B>>,
    pub(super) state: TrainerState,
    pub(super) inflight: Option<SavedRound>,
}

/// The training loop for a policy `P` on backend `B`.
pub struct Trainer<B: AutodiffBackend, P: Policy<B>> {
    pub(super) config: TrainConfig,
    pub(super) policy: Option<P>,
    pub(super) reference: Option<P>,
    pub(super) teacher: Option<Teacher<P>>,
    pub(super) optim: AdamWOptimizer<B, P>,
    /// PPO's value model (`[critic]`).
    pub(super) critic: Option<Critic<B>>,
    /// The reward model of `[reward.model]` (no graph).
    pub(super) reward_model: Option<rl_models::ScoreModel<B::InnerBackend>>,
    /// The LLM judge of `[reward.judge]`.
    pub(super) judge: Option<rl_rollout::Judge>,
    pub(super) prompts: Prompts,
    pub(super) verifier: Box<dyn Verifier>,
    pub(super) estimator: Estimator,
    pub(super) batcher: DynamicBatcher<ScoredResponse>,
    pub(super) sampler: crate::data::PromptSampler,
    pub(super) state: TrainerState,
    pub(super) allowed_vocab: usize,
    pub(super) device: B::Device,
    pub(super) writers: Writers,
    pub(super) engine: EngineHandle,
    pub(super) prefetched: Option<SubmittedRound>,
    pub(super) is_correction: IsCorrection,
    pub(super) parallel: DataParallel<B::InnerBackend>,
    pub(super) episodes: Option<Episodes>,
}

/// The files a run appends to while it runs (rank 0 only).
#[derive(Default)]
pub(super) struct Writers {
    pub(super) metrics: Option<MetricsWriter>,
    pub(super) probe: Option<MetricsWriter>,
}

/// A round handed to the engine: the prompts (data-set indices) and its rollouts to come.
pub struct SubmittedRound {
    /// Data-set indices of the round's prompts.
    pub prompts: Vec<usize>,
    /// The positions in `prompts` this worker generates (all of them in a single process).
    pub owned: Vec<usize>,
    /// Each prompt's group size (`rollout.group_size`, or `[rollout.budget]`'s allocation).
    pub sizes: Vec<usize>,
    /// The engine's answer.
    pub reply: RoundReply,
}

/// What a submitted round is waiting for.
pub enum RoundReply {
    /// One completion per rollout, from the engine (possibly still generating).
    Completions(Pending),
    /// Multi-turn episodes (`[rollout.env]`), already run to their end, G per owned prompt in
    /// prompt order.
    Episodes(Vec<Trajectory>),
}

/// A finished round as a checkpoint stores it (`inflight.json`): with asynchronous rollouts the
/// round generated for the next step while this one trained.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct SavedRound {
    pub(super) prompts: Vec<usize>,
    pub(super) completions: Vec<Vec<Completion>>,
    /// Each prompt's group size (empty in checkpoints from before `[rollout.budget]`: all
    /// `rollout.group_size`).
    #[serde(default)]
    pub(super) sizes: Vec<usize>,
}
