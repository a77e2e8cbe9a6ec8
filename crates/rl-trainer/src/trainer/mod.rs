//! The trainer. One step is a chain of named phases ([`Trainer::step`]), each in its own file:
//!
//! | phase | file | what it reads → what it returns |
//! |---|---|---|
//! | generate, score, filter | `rounds.rs` (a reward model's and a judge's rewards: `model_rewards.rs`) | prompts → engine → scored groups → the kept batch and its [`GenerationStats`] |
//! | advantages | [`Trainer::advantages`] (here) | kept groups → per-response advantages |
//! | old/reference/teacher log-probs, IS weights | `logprobs.rs` | kept groups → [`Behaviour`] |
//! | token advantages (`[distill]`, REINFORCE++ with γ < 1) | `token_advantages.rs` | advantages + behaviour → per-token advantages ([`TokenAdvantages`]) |
//! | values + GAE (PPO, `[critic]`: replaces the two advantage phases) | `value_phases.rs` | kept groups + behaviour → critic values → per-token GAE advantages and returns ([`GaeAdvantages`]) |
//! | update | `update.rs` | batch + advantages + behaviour + mini-batches ([`Trainer::minibatches`]) → [`UpdateStats`] |
//! | critic update (PPO) | `value_phases.rs` | batch + returns + mini-batches → [`CriticStats`] |
//! | sync weights | [`Trainer::sync_weights`] (here) | the policy → the engine's next version |
//! | metrics | [`crate::metrics::step_metrics`] | every phase's output → [`StepMetrics`] |
//!
//! Around the loop: `state.rs` (the [`Trainer`] struct and the state the phases share),
//! `critic.rs` (PPO's value model and its optimizer),
//! `checkpoint.rs` (atomic save, exact resume), `held_out.rs` (held-out evaluation through
//! [`crate::eval`], `rlvr eval`'s code), `probe.rs` (the Theorem 3.1 probe), `prompts.rs`
//! (rendering and caching prompt ids), `teacher.rs` (the distillation teacher). Phase files
//! import `state.rs` and each other's output types, never this file.
//! Data parallelism is [`DataParallel`], called unconditionally by the phases: a single process
//! is its world of one.
//!
//! With `rollout.max_staleness = k ≥ 1` the engine runs on its own thread and the first round
//! of step t+1 is submitted before step t's update ([`Trainer::prefetch`]), so generation
//! overlaps training; rollouts more than k versions old are dropped.
//!
//! The library prints nothing: [`Trainer::run`] reports every step and checkpoint to a callback
//! as a [`RunEvent`], and the command line renders them.

mod checkpoint;
mod critic;
mod held_out;
mod logprobs;
mod model_rewards;
mod probe;
mod prompts;
mod rounds;
mod state;
mod teacher;
mod token_advantages;
mod update;
mod value_phases;

use std::path::Path;
use std::time::Instant;

use burn::tensor::backend::AutodiffBackend;
use rl_advantage::{BatchAdvantages, Sample, compute_batch_with_tokens, compute_token_advantages};
use rl_loss::IsCorrection;
use rl_models::Tokenizer;
use rl_rollout::{RolloutEngine, WeightsKind, WeightsRef};
use rl_sampler::{DynamicBatcher, RolloutGroup};

use crate::atomic_dir::atomic_dir;
pub use crate::step_stats::{CriticStats, EpisodeStats, GenerationStats, UpdateStats};
pub use checkpoint::{config_diff, latest_checkpoint};
pub use critic::{CRITIC_DIR, Critic, CriticUpdate, ValueSeq};
pub use logprobs::{Behaviour, BehaviourLogprobs, ImportanceWeights};
pub(crate) use prompts::Prompts;
pub use prompts::{answer_line, end_token_ids, stop_ids};
pub use rounds::{CollectedBatch, ReceivedRound};
pub use state::{RoundReply, SubmittedRound, Trainer, TrainerState};
use state::{Start, Writers};
pub use token_advantages::TokenAdvantages;
pub use update::{TrainBatch, plan_minibatches};
pub use value_phases::{CriticTargets, GaeAdvantages};

use crate::TrainerError;
use crate::config::TrainConfig;
use crate::data::Dataset;
use crate::engine::{EngineHandle, LocalEngine, Pending, build_engine};
use crate::memory::measured;
use crate::metrics::{
    MetricsWriter, PhasePeaks, PhaseTimes, StepMetrics, StepRecord, step_metrics,
};
use crate::multi_turn::Episodes;
use crate::optim::{AdamWOptimizer, lr_at};
use crate::parallel::{Collective, DataParallel};
use crate::policy::Policy;
use crate::scoring::ScoredResponse;

/// What [`Trainer::run`] reports to its callback.
#[derive(Clone, Copy, Debug)]
pub enum RunEvent<'a> {
    /// The run starts (or resumes) at `step` of `total`.
    Started {
        /// Steps already done.
        step: usize,
        /// `config.steps`.
        total: usize,
    },
    /// A step finished (step 0: the evaluation before the first step), with its metrics as
    /// written to `metrics.jsonl`; `last` on the run's final step.
    Step {
        /// The step's metrics (with the evaluation, when one ran).
        metrics: &'a StepMetrics,
        /// `config.steps`.
        total: usize,
        /// Whether this is the last step (steps or the rollout budget exhausted).
        last: bool,
    },
    /// A checkpoint was written.
    Checkpoint {
        /// Its folder.
        path: &'a Path,
    },
    /// The run is done.
    Finished,
    /// A line about the run's setup or phases, for people (the resolved config, the
    /// warm-start's progress); [`crate::Run`] sends these, [`Trainer::run`] does not.
    Note(&'a str),
}

impl<B: AutodiffBackend, P: Policy<B>> Trainer<B, P> {
    /// A new run. The reference policy for KL (if configured with β > 0) is a frozen copy of
    /// `policy`. With `[model.lora]`, `policy` is frozen and gets fresh LoRA adapters
    /// ([`Policy::with_lora`], seeded by `config.seed`), which are all the run trains.
    pub fn new(
        config: TrainConfig,
        policy: P,
        tokenizer: Tokenizer,
        train: Dataset,
        eval: Option<Dataset>,
        device: B::Device,
    ) -> Result<Self, TrainerError> {
        // The critic starts from the policy before any adapters (verl: the actor's weights).
        let critic = config
            .critic
            .as_ref()
            .map(|c| Critic::new(c, &config.optim, || policy.critic(config.seed), &device))
            .transpose()?;
        let policy = match &config.model.lora {
            Some(lora) => {
                lora.validate().map_err(|e| TrainerError::Config {
                    field: "model.lora".into(),
                    message: e.to_string(),
                })?;
                policy.with_lora(lora, config.seed)?
            }
            None => policy,
        };
        let start = Start {
            policy,
            reference: None,
            optim: AdamWOptimizer::new(&config.optim),
            critic,
            state: TrainerState::fresh(config.seed),
            inflight: None,
        };
        Self::assemble(config, start, tokenizer, train, eval, device)
    }

    /// Continues the run saved at checkpoint folder `ckpt` (see [`latest_checkpoint`]).
    pub fn resume(
        config: TrainConfig,
        ckpt: &Path,
        tokenizer: Tokenizer,
        train: Dataset,
        eval: Option<Dataset>,
        device: B::Device,
    ) -> Result<Self, TrainerError> {
        let start = checkpoint::load(&config, ckpt, &device)?;
        Self::assemble(config, start, tokenizer, train, eval, device)
    }

    fn assemble(
        config: TrainConfig,
        start: Start<B, P>,
        tokenizer: Tokenizer,
        train: Dataset,
        eval: Option<Dataset>,
        device: B::Device,
    ) -> Result<Self, TrainerError> {
        config.validate()?;
        if train.is_empty() {
            return Err(TrainerError::Config {
                field: "data.train".into(),
                message: "the training set is empty".into(),
            });
        }
        let Start {
            policy,
            reference,
            optim,
            critic,
            mut state,
            inflight,
        } = start;
        let policy = policy.with_compute_dtype(config.model.dtype)?;
        let reference = reference
            .map(|r| r.with_compute_dtype(config.model.dtype))
            .transpose()?;
        if let Some(b) = &config.rollout.budget
            && state.difficulty.is_none()
        {
            state.difficulty = Some(b.tracker()?);
        }
        if let Some(c) = &config.critic
            && state.kl_in_reward.is_none()
        {
            state.kl_in_reward = c.kl_in_reward()?;
        }
        let uses_kl = config.needs_reference();
        let reference = if uses_kl {
            Some(reference.unwrap_or_else(|| policy.clone()))
        } else {
            None
        };
        let verifier = config.build_verifier()?;
        let reward_model = config
            .reward
            .model
            .as_ref()
            .map(|m| load_reward_model::<B::InnerBackend>(&m.path, &device))
            .transpose()?;
        let judge = config
            .reward
            .judge
            .clone()
            .map(rl_rollout::Judge::new)
            .transpose()
            .map_err(|e| TrainerError::Config {
                field: "reward.judge".into(),
                message: e.to_string(),
            })?;
        let estimator = config.build_estimator()?;
        let batcher = DynamicBatcher::new(config.batch, config.build_filter()?)?;
        let episodes = Episodes::of(&config)?;
        let tools = Episodes::prompt_tools(episodes.as_ref());
        let prompts = Prompts::new(&config, tokenizer, train, eval, tools)?;
        let allowed_vocab = config
            .model
            .allowed_vocab_size
            .unwrap_or_else(|| prompts.tokenizer.num_defined_ids())
            .min(policy.vocab_size());
        let teacher = teacher::load_teacher::<B, P>(
            &config,
            &prompts.tokenizer,
            policy.vocab_size(),
            &device,
        )?;
        let sampler =
            crate::data::PromptSampler::restore(prompts.train.len(), config.seed, state.sampler);
        let engine = build_engine(
            &config,
            &policy,
            &prompts.tokenizer,
            allowed_vocab,
            state.step as u64,
        )?;
        let in_process = engine.weights_kind() == WeightsKind::InProcess;
        let needs_sync = engine.version() != state.step as u64;
        let engine = EngineHandle::new(engine, config.rollout.max_staleness > 0)?;
        let is_correction = config
            .loss
            .is_correction
            .resolve(in_process && config.rollout.max_staleness == 0);
        let parallel = DataParallel::single();
        let group_size = config.rollout.group_size;
        let prefetched = inflight.map(|r| SubmittedRound {
            owned: parallel.owned(r.prompts.len()),
            sizes: if r.sizes.is_empty() {
                vec![group_size; r.prompts.len()]
            } else {
                r.sizes
            },
            prompts: r.prompts,
            reply: RoundReply::Completions(Pending::Ready(Ok(r.completions))),
        });
        let mut trainer = Self {
            config,
            policy: Some(policy),
            reference,
            teacher,
            optim,
            critic,
            reward_model,
            judge,
            prompts,
            verifier,
            estimator,
            batcher,
            sampler,
            state,
            allowed_vocab,
            device,
            writers: Writers::default(),
            engine,
            prefetched,
            is_correction,
            parallel,
            episodes,
        };
        // A remote engine that serves another version (a fresh server: the base model) gets
        // this run's weights before the first round.
        if needs_sync {
            trainer.sync_weights()?;
        }
        Ok(trainer)
    }

    /// Makes this trainer one data-parallel worker of the world `collective` joined
    /// (docs/distributed.md; [`crate::distributed::Worker`] with the `distributed` feature).
    /// Every worker runs the same configuration from the same state; see [`crate::parallel`]
    /// for what each computes and exchanges. Rank 0 writes metrics and checkpoints.
    /// Asynchronous rollouts (`rollout.max_staleness` ≥ 1) and PPO's critic are not supported yet.
    ///
    /// The policy is forked ([`burn::module::Module::fork`]: the same weights, its own autodiff
    /// leaves), so that workers that are threads of one process may start from clones of one
    /// model. burn's autodiff graph is shared by the threads of a process: two workers
    /// back-propagating through the same parameter leaves at once corrupted each other's
    /// gradients (measured: a per-tensor gap of 0.2–0.9 against one worker's gradient in 3 of 14
    /// runs of the two-worker tests, and burn-autodiff's "Node should have a step registered"
    /// panic in another).
    pub fn with_collective(
        mut self,
        collective: Box<dyn Collective<B::InnerBackend>>,
    ) -> Result<Self, TrainerError> {
        if self.critic.is_some() {
            return Err(TrainerError::Config {
                field: "critic".into(),
                message: "PPO's critic with data-parallel workers is not supported yet: train \
                          it in one process"
                    .into(),
            });
        }
        if self.config.rollout.max_staleness > 0 {
            return Err(TrainerError::Config {
                field: "rollout.max_staleness".into(),
                message: format!(
                    "{} with data-parallel workers: only synchronous rollouts (0) are supported",
                    self.config.rollout.max_staleness
                ),
            });
        }
        self.parallel = DataParallel::new(collective);
        self.policy = self.policy.take().map(|p| p.fork(&self.device));
        Ok(self)
    }

    /// Takes the data-parallel world out (to leave it after training), leaving a single
    /// process.
    pub fn take_parallel(&mut self) -> DataParallel<B::InnerBackend> {
        std::mem::take(&mut self.parallel)
    }

    /// The data-parallel world this trainer is a worker of (one worker by default).
    pub fn parallel(&self) -> &DataParallel<B::InnerBackend> {
        &self.parallel
    }

    /// Generates rollouts with `engine` instead of the in-process [`LocalEngine`], on the
    /// training thread with synchronous rollouts and on a background thread when
    /// `rollout.max_staleness` ≥ 1. `loss.is_correction = "auto"` becomes `token_tis` (C = 2)
    /// unless the engine shares this process and rollouts are synchronous. The engine is given
    /// the current weights first unless it already serves this run's version.
    pub fn with_engine(self, engine: Box<dyn RolloutEngine>) -> Result<Self, TrainerError> {
        let background = self.config.rollout.max_staleness > 0;
        self.install_engine(engine, background)
    }

    /// [`Trainer::with_engine`] with the engine always on a background thread (also with
    /// synchronous rollouts, e.g. to keep a slow remote engine's calls off the training thread;
    /// the results are the same as inline).
    pub fn with_engine_in_background(
        self,
        engine: Box<dyn RolloutEngine>,
    ) -> Result<Self, TrainerError> {
        self.install_engine(engine, true)
    }

    fn install_engine(
        mut self,
        engine: Box<dyn RolloutEngine>,
        background: bool,
    ) -> Result<Self, TrainerError> {
        let current = engine.version() == self.state.step as u64;
        let in_process = engine.weights_kind() == WeightsKind::InProcess;
        self.prefetched = None;
        self.engine = EngineHandle::new(engine, background)?;
        self.is_correction = self
            .config
            .loss
            .is_correction
            .resolve(in_process && self.config.rollout.max_staleness == 0);
        if !current {
            self.sync_weights()?;
        }
        Ok(self)
    }

    /// A new [`LocalEngine`] serving the current policy weights as the current version, with the
    /// run's generation batch and allowed vocabulary (to wrap in a test or custom engine).
    pub fn local_engine(&self) -> LocalEngine<P::Inference> {
        LocalEngine::new(
            self.policy().inference(),
            self.state.step as u64,
            self.config.rollout.generation_batch,
            Some(self.allowed_vocab),
        )
        .sharing_prompts(self.config.model.shared_prompts)
    }

    /// Runs episodes in `factory`'s environments instead of the one `[rollout.env]` names,
    /// with that section's bounds (which must be present: it also turns multi-turn rollouts
    /// on). Prompts show no tool list: put one in the data if the environment needs it.
    pub fn with_environment(
        mut self,
        factory: std::sync::Arc<dyn rl_env::EnvironmentFactory>,
    ) -> Result<Self, TrainerError> {
        let Some(env) = &self.config.rollout.env else {
            return Err(TrainerError::Config {
                field: "rollout.env".into(),
                message: "a custom environment needs the [rollout.env] section (its bounds)".into(),
            });
        };
        self.episodes = Some(Episodes::custom(factory, env));
        Ok(self)
    }

    /// The importance-sampling correction in use (`auto` resolved).
    pub fn is_correction(&self) -> IsCorrection {
        self.is_correction
    }

    /// The current policy.
    pub fn policy(&self) -> &P {
        self.policy
            .as_ref()
            .expect("the policy is only taken during an update")
    }

    /// PPO's critic (`[critic]`; `None` for the critic-free algorithms).
    pub fn critic(&self) -> Option<&Critic<B>> {
        self.critic.as_ref()
    }

    /// Consumes the trainer, returning the policy.
    pub fn into_policy(mut self) -> P {
        self.policy
            .take()
            .expect("the policy is only taken during an update")
    }

    /// Completed steps.
    pub fn step_count(&self) -> usize {
        self.state.step
    }

    /// The resolved configuration.
    pub fn config(&self) -> &TrainConfig {
        &self.config
    }

    /// The temperature of every log-prob the loss reads (π_rollout, π_old, π_θ, π_ref).
    fn logprob_temperature(&self) -> f32 {
        self.config
            .rollout
            .sampling(&[], None)
            .logprob_temperature()
    }

    /// Advantages phase: the kept groups' responses (explicit group ids), in group order. Each
    /// response's token count (its sampled tokens; 0 when overlong handling masks it out of the
    /// loss) weighs it in the estimators that whiten over the batch's tokens (REINFORCE++); the
    /// per-group estimators ignore it.
    pub fn advantages(
        &self,
        groups: &[RolloutGroup<ScoredResponse>],
    ) -> Result<BatchAdvantages, TrainerError> {
        let (samples, tokens) = advantage_inputs(groups);
        Ok(compute_batch_with_tokens(
            &self.estimator,
            &samples,
            &tokens,
            None,
        )?)
    }

    /// The estimator's advantages token by token, where they differ along a response
    /// (REINFORCE++ with γ < 1; `None` otherwise): for each response of this worker, one value
    /// per response token, its sampled tokens taking the estimator's values in order and the
    /// others (observations, a response masked out of the loss) 0; other workers' responses
    /// get an empty vector.
    pub(super) fn estimator_token_advantages(
        &self,
        groups: &[RolloutGroup<ScoredResponse>],
    ) -> Result<Option<Vec<Vec<f32>>>, TrainerError> {
        let (samples, tokens) = advantage_inputs(groups);
        let Some(values) = compute_token_advantages(&self.estimator, &samples, &tokens)? else {
            return Ok(None);
        };
        let mut values = values.into_iter();
        let mut out = Vec::with_capacity(samples.len());
        for (gi, g) in groups.iter().enumerate() {
            for r in &g.items {
                let mut v = values.next().unwrap_or_default().into_iter();
                if !self.parallel.owns(gi) {
                    out.push(Vec::new());
                    continue;
                }
                out.push(
                    (0..r.response.len())
                        .map(|j| match r.train && r.is_sampled(j) {
                            true => v.next().unwrap_or(0.0) as f32,
                            false => 0.0,
                        })
                        .collect(),
                );
            }
        }
        Ok(Some(out))
    }

    /// Weight-sync phase: hands the policy's weights to the engine as version `state.step` —
    /// in process for the local engine, else as HF safetensors in `out_dir/weights`.
    pub fn sync_weights(&mut self) -> Result<(), TrainerError> {
        let version = self.state.step as u64;
        let weights = match self.engine.weights_kind() {
            WeightsKind::InProcess => WeightsRef::InProcess(Box::new(self.policy().inference())),
            WeightsKind::Directory => {
                let dir = self
                    .config
                    .rollout
                    .engine
                    .weights_dir()
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|| self.config.out_dir.join("weights"));
                let policy = self.policy();
                atomic_dir(&dir, |tmp| policy.save(tmp))?;
                WeightsRef::Directory(dir)
            }
        };
        self.engine.update_weights(weights, version)?;
        Ok(())
    }

    /// Counts the step as done and hands the updated weights to the engine as the next version
    /// ([`Trainer::sync_weights`]); returns the version the step trained (the steps before it).
    pub fn finish_step(&mut self) -> Result<u64, TrainerError> {
        let trained = self.state.step as u64;
        self.state.step += 1;
        self.sync_weights()?;
        Ok(trained)
    }

    /// One training step: the phases of the module documentation, in order, each timed and
    /// measured by [`measured`].
    pub fn step(&mut self) -> Result<StepMetrics, TrainerError> {
        let t0 = Instant::now();
        let step = self.state.step + 1;
        let lr = lr_at(&self.config.optim, self.state.step);

        let (batch, rollout) = measured(|| self.collect_batch()); // generate → score → filter
        let batch = batch?;
        // `on_exhausted = "train_on_kept"` with no group kept: nothing to learn from, so no
        // advantages, log-probs or update; the step still counts and is logged.
        let learn = !batch.groups.is_empty();
        // PPO's advantages need the critic's values and the behaviour log-probs (below); the
        // critic-free estimators' need only the rewards.
        let ppo = self.critic.is_some();
        let critic_free = if learn && !ppo {
            self.advantages(&batch.groups)?
        } else {
            BatchAdvantages {
                advantages: Vec::new(),
                amplified: Vec::new(),
                stats: Default::default(),
            }
        };
        self.prefetch()?; // k ≥ 1: the next step's first round generates during this update

        let (phase, logprobs) = measured(|| -> Result<_, TrainerError> {
            if !learn {
                return Ok((Behaviour::default(), critic_free, None, None));
            }
            let behaviour = self.behaviour(&batch.groups)?;
            if ppo {
                let gae = self.gae_advantages(&batch.groups, &behaviour)?;
                return Ok((
                    behaviour,
                    gae.advantages,
                    Some(gae.tokens),
                    Some(gae.targets),
                ));
            }
            let tokens =
                self.token_advantages(&batch.groups, &critic_free.advantages, &behaviour)?;
            Ok((behaviour, critic_free, tokens, None))
        });
        let (behaviour, adv, tokens, targets) = phase?;

        // PPO's critic warm-up: its first steps train only the critic.
        let warmup = self.config.critic.as_ref().map_or(0, |c| c.warmup_steps);
        let (updates, train) = measured(|| -> Result<_, TrainerError> {
            if !learn {
                return Ok((UpdateStats::default(), None));
            }
            let minibatches = self.minibatches(batch.groups.len());
            let critic = match &targets {
                Some(t) => Some(CriticStats {
                    policy_updated: step > warmup,
                    ..self.critic_update(&batch.groups, t, &minibatches)?
                }),
                None => None,
            };
            if step <= warmup {
                return Ok((UpdateStats::default(), critic));
            }
            let train = TrainBatch {
                groups: &batch.groups,
                advantages: &adv.advantages,
                token_advantages: tokens.as_ref().map(|t| t.per_response.as_slice()),
                behaviour: &behaviour,
                minibatches: &minibatches,
            };
            Ok((self.update(step, lr, &train)?, critic))
        });
        let (update, critic) = updates?;

        let (version, sync) = measured(|| self.finish_step());
        let version = version?;

        self.state.rollouts += batch.stats.responses_charged();
        Ok(step_metrics(&StepRecord {
            step,
            lr,
            weight_version: version,
            rollouts_total: self.state.rollouts,
            generation: &batch.stats,
            groups: &batch.groups,
            advantages: &adv,
            is: update.is_stats.as_ref().unwrap_or(&behaviour.is.stats),
            update: &update,
            times: PhaseTimes {
                rollout_s: rollout.seconds,
                logprobs_s: logprobs.seconds,
                train_s: train.seconds,
                sync_s: sync.seconds,
                step_s: t0.elapsed().as_secs_f64(),
            },
            peaks: PhasePeaks {
                rollout_mb: rollout.peak_mb,
                logprobs_mb: logprobs.peak_mb,
                train_mb: train.peak_mb,
            },
            adaptive_sizes: self.config.rollout.budget.is_some(),
            distill_reverse_kl: tokens.and_then(|t| t.reverse_kl),
            critic: critic.as_ref(),
            reward_parts: {
                let r = &self.config.reward;
                (r.model.is_some() || r.judge.is_some())
                    .then_some((r.model.is_some(), r.judge.is_some()))
            },
        }))
    }

    /// Runs until `config.steps` steps are done: evaluation before the first step (when
    /// starting fresh), every `eval.every` steps and after the last; metrics to
    /// `out_dir/metrics.jsonl`; checkpoints every `checkpoint.every` steps and at the end.
    /// `on_event` sees the start, every step's metrics, every checkpoint and the end.
    pub fn run(&mut self, mut on_event: impl FnMut(RunEvent<'_>)) -> Result<(), TrainerError> {
        let out = self.config.out_dir.clone();
        std::fs::create_dir_all(&out).map_err(|e| TrainerError::io(&out, e))?;
        let fresh = self.state.step == 0;
        let leads = self.parallel.is_leader();
        if leads {
            self.open_outputs(&out, fresh)?;
        }
        let total = self.config.steps;
        on_event(RunEvent::Started {
            step: self.state.step,
            total,
        });
        if fresh && self.prompts.eval.is_some() {
            let m = StepMetrics {
                step: 0,
                eval: self.evaluate_at(0)?,
                ..StepMetrics::default()
            };
            self.write(&m)?;
            on_event(RunEvent::Step {
                metrics: &m,
                total,
                last: false,
            });
        }
        let budget = self.config.rollout_budget as u64;
        let exhausted = |st: &TrainerState| budget > 0 && st.rollouts >= budget;
        while self.state.step < total && !exhausted(&self.state) {
            let mut m = self.step()?;
            let s = m.step;
            let last = s >= total || exhausted(&self.state);
            let e = self.config.eval.every;
            if (e > 0 && s % e == 0) || last {
                m.eval = self.evaluate_at(s)?;
            }
            self.write(&m)?;
            on_event(RunEvent::Step {
                metrics: &m,
                total,
                last,
            });
            let every = self.config.checkpoint.every;
            if leads && ((every > 0 && s % every == 0) || last) {
                let path = self.save_checkpoint()?;
                on_event(RunEvent::Checkpoint { path: &path });
            }
        }
        on_event(RunEvent::Finished);
        Ok(())
    }

    /// Rank 0 at the start of a run: the resolved config, the frozen reference model (KL) and
    /// the metrics and probe files (a resumed run drops what its killed run wrote after the
    /// checkpoint).
    fn open_outputs(&mut self, out: &Path, fresh: bool) -> Result<(), TrainerError> {
        let cfg_path = out.join("config.toml");
        std::fs::write(&cfg_path, self.config.to_toml())
            .map_err(|e| TrainerError::io(&cfg_path, e))?;
        if fresh && let Some(r) = &self.reference {
            let dir = out.join("reference");
            if !dir.join("config.json").exists() {
                atomic_dir(&dir, |tmp| r.save(tmp))?;
            }
        }
        self.writers.metrics = Some(MetricsWriter::open(
            &out.join("metrics.jsonl"),
            (!fresh).then_some(self.state.step),
        )?);
        self.writers.probe = if self.config.probe.is_off() {
            None
        } else {
            Some(MetricsWriter::open(
                &out.join("probe.jsonl"),
                Some(self.state.step),
            )?)
        };
        Ok(())
    }

    fn write(&mut self, m: &StepMetrics) -> Result<(), TrainerError> {
        if let Some(w) = &mut self.writers.metrics {
            w.write(m)?;
        }
        Ok(())
    }
}

/// The reward model of `[reward.model]`: a one-label sequence classifier.
fn load_reward_model<BB: burn::tensor::backend::Backend>(
    path: &Path,
    device: &BB::Device,
) -> Result<rl_models::ScoreModel<BB>, TrainerError> {
    let m = rl_models::ScoreModel::<BB>::load(path, device).map_err(|e| TrainerError::Config {
        field: "reward.model.path".into(),
        message: e.to_string(),
    })?;
    if m.kind() != rl_models::ScoreKind::Sequence || m.num_labels() != 1 {
        return Err(TrainerError::Config {
            field: "reward.model.path".into(),
            message: format!(
                "{}: a reward model is a sequence classifier with one label, not a {:?} \
                 classifier with {} labels",
                path.display(),
                m.kind(),
                m.num_labels()
            ),
        });
    }
    Ok(m)
}

/// The advantage phase's inputs: one [`Sample`] per response (its group id, reward and verdict)
/// and its token count (sampled tokens; 0 when overlong handling masks it out of the loss).
fn advantage_inputs(groups: &[RolloutGroup<ScoredResponse>]) -> (Vec<Sample>, Vec<usize>) {
    groups
        .iter()
        .flat_map(|g| g.items.iter().map(move |it| (g.group, it)))
        .map(|(group, it)| {
            let tokens = if it.train { it.sampled_len() } else { 0 };
            (Sample::new(group, it.reward, it.correct), tokens)
        })
        .unzip()
}
