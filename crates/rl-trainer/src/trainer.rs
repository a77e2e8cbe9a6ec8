//! The trainer. One step is a composition of named phases ([`Trainer::step`]):
//!
//! 1. **generate** G responses per prompt with the rollout engine ([`Trainer::submit_round`],
//!    [`Trainer::receive_round`]),
//! 2. **score** them: decode, verify, shape rewards ([`Scorer::score_round`]),
//! 3. **filter**: dynamic sampling keeps groups until N are kept ([`Trainer::collect_batch`]
//!    repeats 1–3 in rounds sized by [`rl_sampler::RoundSizing`]),
//! 4. **advantages** over the kept groups ([`Trainer::advantages`]),
//! 5. **old/reference log-probs** of the response tokens ([`Trainer::behaviour_logprobs`]) and
//!    the importance-sampling correction against the engine's log-probs
//!    ([`Trainer::importance_weights`]),
//! 6. **update**: μ epochs × mini-batches of whole groups ([`Trainer::update`]),
//! 7. **sync weights** to the engine as the next version ([`Trainer::sync_weights`]),
//! 8. **metrics** from the phases' outputs ([`step_metrics`]).
//!
//! With `rollout.max_staleness = k ≥ 1` the engine runs on its own thread and the first round
//! of step t+1 is submitted before step t's update ([`Trainer::prefetch`]), so generation
//! overlaps training; rollouts more than k versions old are dropped.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use burn::tensor::backend::AutodiffBackend;
use indicatif::{ProgressBar, ProgressStyle};
use rand::seq::SliceRandom;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rl_advantage::{AdvantageEstimator, BatchAdvantages, GroupId, Sample, compute_batch};
use rl_loss::{IsCorrection, IsStats, LossMetrics, sequence_weights};
use rl_models::GgufDtype;
use rl_models::{GenerationConfig, RowSeed, Tokenizer};
use rl_rollout::{
    Completion, FinishReason, LLAMA_SERVER_LAUNCH, LlamaCppEngine, ManagedServer, RetryPolicy,
    RolloutEngine, SamplingParams, SglangEngine, VLLM_LAUNCH, VllmEngine, VllmOptions, WeightsKind,
    WeightsRef, staleness,
};
use rl_sampler::{BatchReport, BatcherConfig, DynamicBatcher, KeepRate, RolloutGroup};
use rl_verifier::{OutcomeCounts, Verifier};
use serde::{Deserialize, Serialize};

use crate::TrainerError;
use crate::config::{EngineConfig, TrainConfig};
use crate::data::{Dataset, PromptRenderer, PromptSampler, SamplerState};
use crate::distributed::Worker;
use crate::engine::{EngineHandle, Generator, LocalEngine, Pending};
use crate::eval::EvalReport;
use crate::metrics::{MetricsWriter, StepMetrics, pass_rate_bin};
use crate::optim::{AdamWOptimizer, first_non_finite_param, lr_at};
use crate::policy::Policy;
use crate::probe::ProbeRecord;
use crate::rollout::{
    Rollout, RoundPrompt, Scorer, group_completions, round_requests, strip_end_tokens,
};
use crate::update::{TrainSeq, policy_update_sharded};

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
}

/// The training loop for a policy `P` on backend `B`.
pub struct Trainer<B: AutodiffBackend, P: Policy<B>> {
    config: TrainConfig,
    policy: Option<P>,
    reference: Option<P>,
    optim: AdamWOptimizer<B, P>,
    tokenizer: Tokenizer,
    train: Dataset,
    eval: Option<Dataset>,
    renderer: PromptRenderer,
    rendered: Vec<Option<Arc<Vec<u32>>>>,
    eval_rendered: Vec<Arc<Vec<u32>>>,
    verifier: Box<dyn Verifier>,
    estimator: Box<dyn AdvantageEstimator>,
    batcher: DynamicBatcher<Rollout>,
    sampler: PromptSampler,
    state: TrainerState,
    end_ids: Vec<u32>,
    allowed_vocab: usize,
    device: B::Device,
    writer: Option<MetricsWriter>,
    probe_writer: Option<MetricsWriter>,
    quiet: bool,
    engine: EngineHandle,
    prefetched: Option<SubmittedRound>,
    is_correction: IsCorrection,
    worker: Option<Worker<B::InnerBackend>>,
}

/// A round handed to the engine: the prompts (data-set indices) and its completions to come.
pub struct SubmittedRound {
    /// Data-set indices of the round's prompts.
    pub prompts: Vec<usize>,
    /// With data-parallel workers: the positions in `prompts` this worker generates (`None`:
    /// all of them).
    pub owned: Option<Vec<usize>>,
    /// The engine's answer.
    pub pending: Pending,
}

/// A finished round as a checkpoint stores it (`inflight.json`): with asynchronous rollouts the
/// round generated for the next step while this one trained.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct SavedRound {
    prompts: Vec<usize>,
    completions: Vec<Vec<Completion>>,
}

/// Token ids that end a response: `<|im_end|>` and `<|endoftext|>` where the tokenizer has them.
pub fn end_token_ids(tokenizer: &Tokenizer) -> Vec<u32> {
    ["<|im_end|>", "<|endoftext|>"]
        .iter()
        .filter_map(|t| tokenizer.token_to_id(t))
        .collect()
}

impl<B: AutodiffBackend, P: Policy<B>> Trainer<B, P> {
    /// A new run. The reference policy for KL (if configured with β > 0) is a frozen copy of
    /// `policy`.
    pub fn new(
        config: TrainConfig,
        policy: P,
        tokenizer: Tokenizer,
        train: Dataset,
        eval: Option<Dataset>,
        device: B::Device,
    ) -> Result<Self, TrainerError> {
        let state = TrainerState {
            step: 0,
            sampler: SamplerState::default(),
            rng: ChaCha8Rng::seed_from_u64(config.seed),
            next_group: 0,
            rollouts: 0,
            keep_rate: KeepRate::default(),
            consecutive_skips: 0,
        };
        let optim = AdamWOptimizer::new(&config.optim);
        Self::assemble(
            config, policy, None, optim, tokenizer, train, eval, device, state,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn assemble(
        config: TrainConfig,
        policy: P,
        reference: Option<P>,
        optim: AdamWOptimizer<B, P>,
        tokenizer: Tokenizer,
        train: Dataset,
        eval: Option<Dataset>,
        device: B::Device,
        state: TrainerState,
    ) -> Result<Self, TrainerError> {
        config.validate()?;
        if train.is_empty() {
            return Err(TrainerError::Config {
                field: "data.train".into(),
                message: "the training set is empty".into(),
            });
        }
        let uses_kl = config.loss.kl.is_some_and(|k| k.coef > 0.0);
        let reference = if uses_kl {
            Some(reference.unwrap_or_else(|| policy.clone()))
        } else {
            None
        };
        let verifier = config
            .reward
            .verifier
            .build()
            .map_err(|e| TrainerError::Config {
                field: "reward.verifier".into(),
                message: e.to_string(),
            })?;
        let estimator = config.advantage.build(config.rollout.group_size)?;
        let batcher = DynamicBatcher::new(
            BatcherConfig {
                target_groups: config.batch.groups_per_step,
                max_gen_rounds: config.batch.max_gen_rounds,
                on_exhausted: config.batch.on_exhausted,
            },
            config.filter.build()?,
        )?;
        let renderer = PromptRenderer::new(&config.data);
        let eval_rendered = match &eval {
            Some(d) => d
                .prompts
                .iter()
                .map(|p| renderer.render(p, &tokenizer).map(Arc::new))
                .collect::<Result<Vec<_>, _>>()?,
            None => Vec::new(),
        };
        let end_ids = end_token_ids(&tokenizer);
        if end_ids.is_empty() {
            return Err(TrainerError::Config {
                field: "model.tokenizer".into(),
                message: "the tokenizer has neither <|im_end|> nor <|endoftext|>; responses could never end".into(),
            });
        }
        let allowed_vocab = config
            .model
            .allowed_vocab_size
            .unwrap_or_else(|| tokenizer.num_defined_ids())
            .min(policy.vocab_size());
        let sampler = PromptSampler::restore(train.len(), config.seed, state.sampler);
        let engine = build_engine(
            &config,
            &policy,
            &tokenizer,
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
        let mut trainer = Self {
            rendered: vec![None; train.len()],
            config,
            policy: Some(policy),
            reference,
            optim,
            tokenizer,
            train,
            eval,
            renderer,
            eval_rendered,
            verifier,
            estimator,
            batcher,
            sampler,
            state,
            end_ids,
            allowed_vocab,
            device,
            writer: None,
            probe_writer: None,
            quiet: !std::io::stderr().is_terminal(),
            engine,
            prefetched: None,
            is_correction,
            worker: None,
        };
        // A remote engine that serves another version (a fresh server: the base model) gets
        // this run's weights before the first round.
        if needs_sync {
            trainer.sync_weights()?;
        }
        Ok(trainer)
    }

    /// Makes this trainer one data-parallel worker of several (docs/distributed.md). Every
    /// worker runs the same configuration from the same state; each generates and scores its
    /// share of every round's prompts (positions rank, rank + N, …), the scored groups are
    /// exchanged so that dynamic sampling, advantages and metrics are computed on the whole
    /// round by every worker alike, and each worker trains on its share of every mini-batch's
    /// groups with counts, gradients and statistics summed over the workers
    /// ([`crate::update::policy_update_sharded`]). Rank 0 writes metrics and checkpoints.
    /// Asynchronous rollouts (`rollout.max_staleness` ≥ 1) are not supported yet.
    pub fn with_worker(mut self, worker: Worker<B::InnerBackend>) -> Result<Self, TrainerError> {
        if self.config.rollout.max_staleness > 0 {
            return Err(TrainerError::Config {
                field: "rollout.max_staleness".into(),
                message: format!(
                    "{} with data-parallel workers: only synchronous rollouts (0) are supported",
                    self.config.rollout.max_staleness
                ),
            });
        }
        if worker.world_size() > 1 && !worker.is_leader() {
            self.quiet = true;
        }
        self.worker = Some(worker);
        Ok(self)
    }

    /// Takes the data-parallel worker out (to leave the collective after training).
    pub fn take_worker(&mut self) -> Option<Worker<B::InnerBackend>> {
        self.worker.take()
    }

    /// The data-parallel worker, if any.
    pub fn worker(&self) -> Option<&Worker<B::InnerBackend>> {
        self.worker.as_ref()
    }

    /// False on data-parallel workers other than rank 0 (which write nothing).
    fn leads(&self) -> bool {
        self.worker.as_ref().is_none_or(|w| w.is_leader())
    }

    /// Whether item `i` of a round's prompts or of a batch's groups is this worker's share
    /// (every item without workers).
    fn owns(&self, i: usize) -> bool {
        self.worker
            .as_ref()
            .is_none_or(|w| i % w.world_size() == w.rank())
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
    pub fn local_engine(&self) -> LocalEngine<P::Generator> {
        LocalEngine::new(
            self.policy().generator(),
            self.state.step as u64,
            self.config.rollout.generation_batch,
            Some(self.allowed_vocab),
        )
    }

    /// The importance-sampling correction in use (`auto` resolved).
    pub fn is_correction(&self) -> IsCorrection {
        self.is_correction
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
        let err = |message: String| TrainerError::Checkpoint {
            path: ckpt.display().to_string(),
            message,
        };
        let saved_text = std::fs::read_to_string(ckpt.join("config.toml"))
            .map_err(|e| TrainerError::io(&ckpt.join("config.toml"), e))?;
        let saved: TrainConfig =
            toml::from_str(&saved_text).map_err(|e| err(format!("config.toml: {e}")))?;
        let diffs = config_diff(&saved, &config);
        if !diffs.is_empty() {
            return Err(err(format!(
                "the config differs from the checkpoint's in: {} (only `steps` may change on resume)",
                diffs.join(", ")
            )));
        }
        let policy = P::load(&ckpt.join("model"), &device)?;
        let optim = AdamWOptimizer::new(&config.optim).load(&policy, ckpt, &device)?;
        let state_path = ckpt.join("state.json");
        let state: TrainerState = serde_json::from_str(
            &std::fs::read_to_string(&state_path).map_err(|e| TrainerError::io(&state_path, e))?,
        )
        .map_err(|e| err(format!("state.json: {e}")))?;
        let reference_dir = config.out_dir.join("reference");
        let reference = if config.loss.kl.is_some_and(|k| k.coef > 0.0) {
            Some(P::load(&reference_dir, &device)?)
        } else {
            None
        };
        let inflight_path = ckpt.join("inflight.json");
        let inflight: Option<SavedRound> = if inflight_path.exists() {
            Some(
                serde_json::from_str(
                    &std::fs::read_to_string(&inflight_path)
                        .map_err(|e| TrainerError::io(&inflight_path, e))?,
                )
                .map_err(|e| err(format!("inflight.json: {e}")))?,
            )
        } else {
            None
        };
        let mut trainer = Self::assemble(
            config, policy, reference, optim, tokenizer, train, eval, device, state,
        )?;
        trainer.prefetched = inflight.map(|r| SubmittedRound {
            prompts: r.prompts,
            owned: None,
            pending: Pending::Ready(Ok(r.completions)),
        });
        Ok(trainer)
    }

    /// The current policy.
    pub fn policy(&self) -> &P {
        self.policy
            .as_ref()
            .expect("the policy is only taken during an update")
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

    /// Silences the per-step terminal output.
    pub fn set_quiet(&mut self, quiet: bool) {
        self.quiet = quiet;
    }

    fn prompt_ids(&mut self, index: usize) -> Result<Arc<Vec<u32>>, TrainerError> {
        if let Some(ids) = &self.rendered[index] {
            return Ok(ids.clone());
        }
        let ids = Arc::new(
            self.renderer
                .render(&self.train.prompts[index], &self.tokenizer)?,
        );
        self.rendered[index] = Some(ids.clone());
        Ok(ids)
    }

    fn generation_config(&self, temperature: f32, top_p: f32, top_k: usize) -> GenerationConfig {
        GenerationConfig {
            max_new_tokens: self.config.rollout.max_new_tokens,
            temperature,
            top_p,
            top_k,
            seed: 0,
            eos_token_ids: self.end_ids.clone(),
            stop_token_ids: Vec::new(),
            allowed_vocab_size: Some(self.allowed_vocab),
        }
    }

    /// The rollout sampling parameters (the seed is set per chunk).
    fn sampling_params(&self) -> SamplingParams {
        let r = &self.config.rollout;
        SamplingParams {
            temperature: r.temperature,
            top_p: r.top_p,
            top_k: r.top_k,
            max_new_tokens: r.max_new_tokens,
            stop_ids: self.end_ids.clone(),
            seed: 0,
        }
    }

    /// The temperature of every log-prob the loss reads (π_rollout, π_old, π_θ, π_ref).
    fn logprob_temperature(&self) -> f32 {
        self.sampling_params().logprob_temperature()
    }

    /// avg@k / pass@k on the held-out set with a seed derived from the run seed and `tag`.
    pub fn evaluate(&mut self, tag: u64) -> Result<Option<EvalReport>, TrainerError> {
        let Some(eval) = &self.eval else {
            return Ok(None);
        };
        let e = self.config.eval;
        let n = if e.max_prompts == 0 {
            eval.len()
        } else {
            e.max_prompts.min(eval.len())
        };
        let gen_cfg = self.generation_config(e.temperature, e.top_p, 0);
        let inputs: Vec<Vec<u32>> = (0..n)
            .flat_map(|i| std::iter::repeat_n(self.eval_rendered[i].as_ref().clone(), e.k))
            .collect();
        let seed = self.config.seed ^ 0xE7A1_0000_0000 ^ (tag << 20);
        let correct = self.generate_texts(&inputs, gen_cfg, seed)?;
        let results: Vec<(Option<String>, Vec<bool>)> = (0..n)
            .map(|i| {
                let p = &eval.prompts[i];
                let r = (0..e.k)
                    .map(|j| {
                        self.verifier
                            .verify(&correct[i * e.k + j], &p.answer)
                            .outcome
                            .is_correct()
                    })
                    .collect();
                (p.tier.clone(), r)
            })
            .collect();
        Ok(Some(EvalReport::from_results(&results)))
    }

    /// Decoded completions of `inputs` by the in-process policy (evaluation and the probe, which
    /// never go through the rollout engine), generated in chunks of `rollout.generation_batch`
    /// sequences (0: one chunk); chunk c is seeded with `seed ^ c`, its rows with their index.
    fn generate_texts(
        &self,
        inputs: &[Vec<u32>],
        mut gen_cfg: GenerationConfig,
        seed: u64,
    ) -> Result<Vec<String>, TrainerError> {
        let chunk = match self.config.rollout.generation_batch {
            0 => inputs.len(),
            b => b,
        };
        let generator = self.policy().generator();
        let mut texts = Vec::with_capacity(inputs.len());
        for (c, part) in inputs.chunks(chunk.max(1)).enumerate() {
            gen_cfg.seed = seed ^ c as u64;
            let streams: Vec<RowSeed> = (0..part.len() as u64)
                .map(|stream| RowSeed {
                    seed: gen_cfg.seed,
                    stream,
                })
                .collect();
            for g in generator.generate(part, &gen_cfg, &streams)? {
                texts.push(
                    self.tokenizer
                        .decode(strip_end_tokens(&g.tokens, &self.end_ids), false)?,
                );
            }
        }
        Ok(texts)
    }

    /// Generation phase, first half: samples the next round's prompts (as many as
    /// [`rl_sampler::RoundSizing`] says for the groups still needed), draws one seed per chunk of
    /// `rollout.generation_batch` sequences and hands the requests to the engine.
    pub fn submit_round(&mut self) -> Result<SubmittedRound, TrainerError> {
        let r = self.config.rollout.clone();
        let needed = self
            .config
            .batch
            .groups_per_step
            .saturating_sub(self.batcher.pending());
        let count = self.config.batch.round_sizing.prompts(
            &self.state.keep_rate.with(&self.batcher.report()),
            needed,
            r.prompts_per_round,
        );
        let idx = self.sampler.next(count);
        let rendered = self.render(&idx)?;
        let prompts = round_prompts(&self.train, &idx, rendered);
        let params = self.sampling_params();
        let rng = &mut self.state.rng;
        let mut seeds = || rng.next_u64();
        let requests = round_requests(
            &prompts,
            r.group_size,
            &params,
            r.generation_batch,
            &mut seeds,
        );
        let owned = self
            .worker
            .as_ref()
            .map(|_| (0..idx.len()).filter(|&p| self.owns(p)).collect::<Vec<_>>());
        let requests = match &owned {
            Some(mine) => own_requests(requests, mine, r.group_size),
            None => requests,
        };
        let pending = self.engine.submit(requests)?;
        Ok(SubmittedRound {
            prompts: idx,
            owned,
            pending,
        })
    }

    fn render(&mut self, idx: &[usize]) -> Result<Vec<Arc<Vec<u32>>>, TrainerError> {
        idx.iter().map(|&i| self.prompt_ids(i)).collect()
    }

    /// Generation phase, second half: waits for a submitted round and returns G completions per
    /// prompt, without the groups that may not be trained on — those with a completion more
    /// than `rollout.max_staleness` versions behind the policy of this step, or aborted by the
    /// engine — which are counted in `stats`.
    /// Returns the kept prompts' positions in the round, their data-set indices and their
    /// completions (with data-parallel workers: of this worker's share).
    #[allow(clippy::type_complexity)]
    pub fn receive_round(
        &mut self,
        round: SubmittedRound,
        stats: &mut RolloutStats,
    ) -> Result<(Vec<usize>, Vec<usize>, Vec<Vec<Completion>>), TrainerError> {
        let replies = round.pending.wait()?;
        let mine = round
            .owned
            .unwrap_or_else(|| (0..round.prompts.len()).collect());
        let groups = group_completions(replies, mine.len(), self.config.rollout.group_size)?;
        let policy_version = self.state.step as u64;
        let k = self.config.rollout.max_staleness as u64;
        let mut positions = Vec::with_capacity(groups.len());
        let mut prompts = Vec::with_capacity(groups.len());
        let mut kept = Vec::with_capacity(groups.len());
        for (pos, g) in mine.into_iter().zip(groups) {
            let p = round.prompts[pos];
            let stale = g.iter().any(|c| staleness(policy_version, c.version) > k);
            let aborted = g.iter().any(|c| c.finish == FinishReason::Abort);
            if stale || aborted {
                stats.stale_groups_dropped += 1;
                stats.dropped_responses += g.len();
            } else {
                positions.push(pos);
                prompts.push(p);
                kept.push(g);
            }
        }
        Ok((positions, prompts, kept))
    }

    /// Generation rounds — generate, score, filter — until the batcher returns a batch. The
    /// first round may have been submitted by [`Trainer::prefetch`] during the previous step.
    pub fn collect_batch(
        &mut self,
    ) -> Result<(Vec<RolloutGroup<Rollout>>, RolloutStats), TrainerError> {
        let mut stats = RolloutStats::default();
        loop {
            let round = match self.prefetched.take() {
                Some(r) => r,
                None => self.submit_round()?,
            };
            let dropped = (stats.stale_groups_dropped, stats.dropped_responses);
            let (positions, idx, completions) = self.receive_round(round, &mut stats)?;
            let rendered = self.render(&idx)?;
            let prompts = round_prompts(&self.train, &idx, rendered);
            let scorer = Scorer {
                verifier: self.verifier.as_ref(),
                rewards: self.config.reward_map(),
                overlong: self.config.reward.overlong,
                tokenizer: &self.tokenizer,
                end_ids: &self.end_ids,
            };
            let mut outcomes = OutcomeCounts::default();
            let mut groups = scorer.score_round(&prompts, completions, &mut 0, &mut outcomes)?;
            if let Some(w) = &self.worker {
                let share = RoundShare {
                    groups: positions.into_iter().zip(groups).collect(),
                    outcomes,
                    stale_groups: stats.stale_groups_dropped - dropped.0,
                    dropped_responses: stats.dropped_responses - dropped.1,
                };
                let all = share.exchange(w)?;
                (stats.stale_groups_dropped, stats.dropped_responses) = dropped;
                stats.stale_groups_dropped += all.stale_groups;
                stats.dropped_responses += all.dropped_responses;
                outcomes = all.outcomes;
                groups = all.groups.into_iter().map(|(_, g)| g).collect();
            }
            // Group ids in round order (with workers: the same on every worker).
            for g in &mut groups {
                g.group = GroupId(self.state.next_group);
                self.state.next_group += 1;
            }
            self.probe_round(&groups)?;
            stats.outcomes.merge(&outcomes);
            stats.observe_round(&groups);
            if let Some(batch) = self.batcher.push_round(groups)? {
                self.state.keep_rate.observe(&batch.report);
                stats.report = batch.report;
                return Ok((batch.groups, stats));
            }
        }
    }

    /// The theorem probe (`probe` section): on a probed step, draws `probe.samples` extra
    /// responses for each group's prompt with the rollout's sampling settings and the current
    /// policy, and records the estimated pass rate beside the group's verdicts, advantages and
    /// the filter's decision in `probe.jsonl`. Its seeds come from the group ids, not from the
    /// trainer's RNG, so a probed run trains exactly as an unprobed one.
    fn probe_round(&mut self, groups: &[RolloutGroup<Rollout>]) -> Result<(), TrainerError> {
        let step = self.state.step + 1;
        if self.probe_writer.is_none() || !self.config.probe.steps.contains(&step) {
            return Ok(());
        }
        let n = self.config.probe.samples;
        let r = &self.config.rollout;
        let gen_cfg = self.generation_config(r.temperature, r.top_p, r.top_k);
        let mut records = Vec::with_capacity(groups.len());
        for g in groups {
            let index = g.prompt as usize;
            let ids = self.prompt_ids(index)?;
            let inputs = vec![ids.as_ref().clone(); n];
            let seed = self.config.seed ^ 0x9B0B_E000_0000_0000 ^ (g.group.0 << 16);
            let answer = &self.train.prompts[index].answer;
            let probe_correct = self
                .generate_texts(&inputs, gen_cfg.clone(), seed)?
                .iter()
                .filter(|text| self.verifier.verify(text, answer).outcome.is_correct())
                .count();
            let advantages = self.advantages(std::slice::from_ref(g))?.advantages;
            records.push(ProbeRecord {
                step,
                prompt: g.prompt,
                tier: self.train.prompts[index].tier.clone(),
                correct: g.correct.clone(),
                advantages,
                kept: self.batcher.filter().keep(&g.rewards, &g.correct),
                probe_samples: n,
                probe_correct,
            });
        }
        if let Some(w) = &mut self.probe_writer {
            for rec in &records {
                w.write_record(rec)?;
            }
        }
        Ok(())
    }

    /// With `rollout.max_staleness` ≥ 1: submits the next step's first round now, so that the
    /// engine generates it (with the weights of this step's rollouts) while this step trains.
    pub fn prefetch(&mut self) -> Result<(), TrainerError> {
        if self.config.rollout.max_staleness > 0 && self.prefetched.is_none() {
            self.prefetched = Some(self.submit_round()?);
        }
        Ok(())
    }

    /// Weight-sync phase: hands the policy's weights to the engine as version `state.step` —
    /// in process for the local engine, else as HF safetensors in `out_dir/weights`.
    pub fn sync_weights(&mut self) -> Result<(), TrainerError> {
        let version = self.state.step as u64;
        let weights = match self.engine.weights_kind() {
            WeightsKind::InProcess => WeightsRef::InProcess(Box::new(self.policy().generator())),
            WeightsKind::Directory => {
                let dir = self
                    .config
                    .rollout
                    .engine
                    .weights_dir()
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|| self.config.out_dir.join("weights"));
                let policy = self.policy.as_ref().expect("policy present");
                atomic_dir(&dir, |tmp| policy.save(tmp))?;
                WeightsRef::Directory(dir)
            }
        };
        self.engine.update_weights(weights, version)?;
        Ok(())
    }

    /// Importance-sampling phase: per-token weights and masks from π_old (`old`) and each
    /// rollout's engine log-probs under `loss.is_correction` (resolved), with the mismatch
    /// statistics.
    pub fn importance_weights(
        &self,
        items: &[&Rollout],
        old: &[Vec<f32>],
    ) -> Result<ImportanceWeights, TrainerError> {
        let mut out = ImportanceWeights {
            active: !matches!(self.is_correction, IsCorrection::None | IsCorrection::Auto),
            ..ImportanceWeights::default()
        };
        for (i, (r, o)) in items.iter().zip(old).enumerate() {
            let w = sequence_weights(&self.is_correction, o, &r.rollout_logp).map_err(|e| {
                TrainerError::Batch {
                    sequence: i,
                    message: format!("importance weights: {e}"),
                }
            })?;
            if r.train {
                out.stats.merge(&w.stats);
            }
            out.weights.push(w.weights);
            out.keep.push(w.keep);
        }
        Ok(out)
    }

    /// Advantages of the kept groups' responses (explicit group ids), in group order.
    pub fn advantages(
        &self,
        groups: &[RolloutGroup<Rollout>],
    ) -> Result<BatchAdvantages, TrainerError> {
        let samples: Vec<Sample> = groups
            .iter()
            .flat_map(|g| {
                g.items
                    .iter()
                    .map(move |it| Sample::new(g.group, it.reward, it.correct))
            })
            .collect();
        Ok(compute_batch(self.estimator.as_ref(), &samples, None)?)
    }

    /// π_old (the policy before this step's updates) and, with KL, reference log-probs of every
    /// response token of `items`, computed in micro-batches of `optim.micro_batch` sequences.
    pub fn behaviour_logprobs(
        &self,
        items: &[&Rollout],
    ) -> Result<BehaviourLogprobs, TrainerError> {
        let micro = self.config.optim.micro_batch;
        let t = self.logprob_temperature();
        let old = response_logprobs(self.policy(), items, micro, t)?;
        let reference = match &self.reference {
            Some(rp) => Some(response_logprobs(rp, items, micro, t)?),
            None => None,
        };
        Ok(BehaviourLogprobs { old, reference })
    }

    /// π_old (and reference) log-probs and importance weights of the rollouts this worker
    /// trains on (all of them without workers; the others' entries are left empty), with the
    /// importance-sampling statistics summed over the workers.
    #[allow(clippy::type_complexity)]
    fn shared_logprobs(
        &self,
        groups: &[RolloutGroup<Rollout>],
    ) -> Result<(Vec<Vec<f32>>, Option<Vec<Vec<f32>>>, ImportanceWeights), TrainerError> {
        let Some(w) = &self.worker else {
            let items: Vec<&Rollout> = groups.iter().flat_map(|g| g.items.iter()).collect();
            let BehaviourLogprobs { old, reference } = self.behaviour_logprobs(&items)?;
            let is = self.importance_weights(&items, &old)?;
            return Ok((old, reference, is));
        };
        let mut mine = Vec::new();
        let mut at = Vec::new();
        let mut i = 0;
        for (gi, g) in groups.iter().enumerate() {
            for it in &g.items {
                if self.owns(gi) {
                    mine.push(it);
                    at.push(i);
                }
                i += 1;
            }
        }
        let BehaviourLogprobs {
            old: o,
            reference: r,
        } = self.behaviour_logprobs(&mine)?;
        let local = self.importance_weights(&mine, &o)?;
        let is = ImportanceWeights {
            active: local.active,
            weights: scatter(&at, i, local.weights),
            keep: scatter(&at, i, local.keep),
            stats: w.sum_is_stats(&local.stats)?,
        };
        Ok((scatter(&at, i, o), r.map(|r| scatter(&at, i, r)), is))
    }

    /// μ epochs × `optim.mini_batches` optimizer updates over mini-batches of whole groups.
    /// An update whose loss or gradient norm is not finite is skipped and counted; more than
    /// `optim.max_consecutive_skips` − 1 skips in a row stop training with
    /// [`TrainerError::Diverged`].
    #[allow(clippy::too_many_arguments)]
    pub fn update(
        &mut self,
        step: usize,
        lr: f64,
        groups: &[RolloutGroup<Rollout>],
        advantages: &[f64],
        old: &[Vec<f32>],
        reference: Option<&[Vec<f32>]>,
        is: &ImportanceWeights,
    ) -> Result<UpdateStats, TrainerError> {
        let temperature = self.logprob_temperature();
        let items: Vec<&Rollout> = groups.iter().flat_map(|g| g.items.iter()).collect();
        let mut starts = Vec::with_capacity(groups.len());
        let mut k = 0;
        for g in groups {
            starts.push(k);
            k += g.items.len();
        }
        let micro = self.config.optim.micro_batch;
        let mb = self.config.optim.mini_batches;
        let mut stats = UpdateStats::default();
        for _ in 0..self.config.optim.epochs {
            let mut order: Vec<usize> = (0..groups.len()).collect();
            if self.config.optim.epochs > 1 || mb > 1 {
                order.shuffle(&mut self.state.rng);
            }
            for part in 0..mb {
                let lo = part * order.len() / mb;
                let hi = (part + 1) * order.len() / mb;
                let mut batch = Vec::new();
                for &gi in &order[lo..hi] {
                    if !self.owns(gi) {
                        continue;
                    }
                    for i in starts[gi]..starts[gi] + groups[gi].items.len() {
                        let r = items[i];
                        batch.push(TrainSeq {
                            prompt: &r.prompt_ids,
                            response: &r.response,
                            old_logp: &old[i],
                            ref_logp: reference.map(|v| v[i].as_slice()),
                            advantage: advantages[i] as f32,
                            train: r.train,
                            is_weights: is.active.then(|| is.weights[i].as_slice()),
                            keep: is.active.then(|| is.keep[i].as_slice()),
                        });
                        stats.trained_tokens += r.prompt_ids.len() + r.response.len();
                    }
                }
                let policy = self.policy.take().expect("policy present");
                let out = policy_update_sharded(
                    policy,
                    &mut self.optim,
                    lr,
                    &self.config.loss,
                    &batch,
                    micro,
                    temperature,
                    &self.device,
                    self.worker.as_ref(),
                )?;
                self.policy = Some(out.policy);
                if out.applied {
                    self.state.consecutive_skips = 0;
                    stats.loss.merge(&out.metrics);
                    stats.grad_norm_sum += out.grad_norm;
                    stats.applied += 1;
                } else {
                    self.state.consecutive_skips += 1;
                    stats.skipped += 1;
                    let limit = self.config.optim.max_consecutive_skips;
                    if self.state.consecutive_skips >= limit {
                        return Err(TrainerError::Diverged {
                            step,
                            message: format!(
                                "{} consecutive updates skipped (optim.max_consecutive_skips = \
                                 {limit}); the last had loss {} and gradient norm {}",
                                self.state.consecutive_skips, out.metrics.loss, out.grad_norm
                            ),
                        });
                    }
                }
            }
        }
        Ok(stats)
    }

    /// One training step: the phases of the module documentation, in order.
    pub fn step(&mut self) -> Result<StepMetrics, TrainerError> {
        let t0 = Instant::now();
        let step = self.state.step + 1;
        let lr = lr_at(&self.config.optim, self.state.step);

        let (groups, rollout) = self.collect_batch()?; // generate → score → filter
        let time_rollout = t0.elapsed().as_secs_f64();
        let adv = self.advantages(&groups)?;
        self.prefetch()?; // k ≥ 1: the next step's first round generates during this update

        let t1 = Instant::now();
        let items: Vec<&Rollout> = groups.iter().flat_map(|g| g.items.iter()).collect();
        let (old, reference, is) = self.shared_logprobs(&groups)?;
        let time_logprobs = t1.elapsed().as_secs_f64();

        let t2 = Instant::now();
        let mut update = self.update(
            step,
            lr,
            &groups,
            &adv.advantages,
            &old,
            reference.as_deref(),
            &is,
        )?;
        let time_train = t2.elapsed().as_secs_f64();
        if let Some(w) = &self.worker {
            update.trained_tokens =
                w.sum("summing trained tokens", &[update.trained_tokens as f64])?[0] as usize;
        }

        let version = self.state.step as u64;
        self.state.step = step;
        let t3 = Instant::now();
        self.sync_weights()?;
        let time_sync = t3.elapsed().as_secs_f64();

        self.state.rollouts += (rollout.generated + rollout.dropped_responses) as u64;
        let mut m = step_metrics(step, lr, &rollout, &groups, &adv, &is.stats, &update);
        m.weight_version = version;
        let lags: Vec<u64> = items
            .iter()
            .map(|r| staleness(version, r.version))
            .collect();
        m.staleness_max = lags.iter().copied().max().unwrap_or(0);
        m.staleness_mean = lags.iter().sum::<u64>() as f64 / lags.len().max(1) as f64;
        m.rollouts_total = self.state.rollouts;
        m.time_rollout_s = time_rollout;
        m.rollout_tokens_per_s = rollout.gen_tokens as f64 / time_rollout.max(1e-9);
        m.time_logprobs_s = time_logprobs;
        m.time_train_s = time_train;
        m.time_sync_s = time_sync;
        m.train_tokens_per_s = update.trained_tokens as f64 / time_train.max(1e-9);
        m.time_step_s = t0.elapsed().as_secs_f64();
        Ok(m)
    }

    /// Runs until `config.steps` steps are done: evaluation before the first step (when
    /// starting fresh), every `eval.every` steps and after the last; metrics to
    /// `out_dir/metrics.jsonl`; checkpoints every `checkpoint.every` steps and at the end.
    /// `on_step` sees every step's metrics.
    pub fn run(&mut self, mut on_step: impl FnMut(&StepMetrics)) -> Result<(), TrainerError> {
        let out = self.config.out_dir.clone();
        std::fs::create_dir_all(&out).map_err(|e| TrainerError::io(&out, e))?;
        let fresh = self.state.step == 0;
        let leads = self.leads();
        let cfg_path = out.join("config.toml");
        if leads {
            std::fs::write(&cfg_path, self.config.to_toml())
                .map_err(|e| TrainerError::io(&cfg_path, e))?;
        }
        if leads
            && fresh
            && let Some(r) = &self.reference
        {
            let dir = out.join("reference");
            if !dir.join("config.json").exists() {
                atomic_dir(&dir, |tmp| r.save(tmp))?;
            }
        }
        self.writer = if leads {
            Some(MetricsWriter::open(
                &out.join("metrics.jsonl"),
                (!fresh).then_some(self.state.step),
            )?)
        } else {
            None
        };
        self.probe_writer = if leads && !self.config.probe.is_off() {
            // A fresh run starts an empty file; a resumed one drops what its killed run
            // probed after the checkpoint.
            Some(MetricsWriter::open(
                &out.join("probe.jsonl"),
                Some(self.state.step),
            )?)
        } else {
            None
        };
        if fresh && self.eval.is_some() {
            let report = self.evaluate(0)?;
            let m = StepMetrics {
                step: 0,
                eval: report,
                ..StepMetrics::default()
            };
            if !self.quiet
                && let Some(e) = &m.eval
            {
                eprintln!("[eval step 0] {}", e.summary());
            }
            self.write(&m)?;
            on_step(&m);
        }
        let total = self.config.steps;
        let bar = if self.quiet {
            ProgressBar::hidden()
        } else {
            let b = ProgressBar::new(total as u64);
            b.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            b.set_position(self.state.step as u64);
            b
        };
        let log_every = (total / 20).max(1);
        let budget = self.config.rollout_budget as u64;
        let exhausted = |st: &TrainerState| budget > 0 && st.rollouts >= budget;
        while self.state.step < total && !exhausted(&self.state) {
            let mut m = self.step()?;
            let s = m.step;
            let done = s >= total || exhausted(&self.state);
            let e = self.config.eval.every;
            if (e > 0 && s % e == 0) || done {
                m.eval = self.evaluate(s as u64)?;
            }
            bar.set_position(s as u64);
            bar.set_message(format!(
                "acc {:.3} reward {:+.3} kept {}/{} rounds {} amp {:.2}",
                m.acc, m.reward_mean, m.groups_kept, m.groups_seen, m.gen_rounds, m.frac_amplified
            ));
            if self.quiet
                && leads
                && (s % log_every == 0 || done || m.eval.is_some())
                && std::env::var_os("RLVR_QUIET").is_none()
            {
                eprintln!(
                    "step {s:>5}/{total} acc {:.3} reward {:+.3} kept {}/{} rounds {} amp {:.2} loss {:+.4} {:.1}s",
                    m.acc,
                    m.reward_mean,
                    m.groups_kept,
                    m.groups_seen,
                    m.gen_rounds,
                    m.frac_amplified,
                    m.loss,
                    m.time_step_s
                );
            }
            if let Some(ev) = &m.eval
                && leads
                && std::env::var_os("RLVR_QUIET").is_none()
            {
                bar.suspend(|| eprintln!("[eval step {s}] {}", ev.summary()));
            }
            self.write(&m)?;
            on_step(&m);
            let every = self.config.checkpoint.every;
            if leads && ((every > 0 && s % every == 0) || done) {
                self.save_checkpoint()?;
            }
        }
        bar.finish_and_clear();
        Ok(())
    }

    fn write(&mut self, m: &StepMetrics) -> Result<(), TrainerError> {
        if let Some(w) = &mut self.writer {
            w.write(m)?;
        }
        Ok(())
    }

    /// Writes `out_dir/checkpoints/step-NNNNNN` atomically and points `latest` at it.
    pub fn save_checkpoint(&mut self) -> Result<PathBuf, TrainerError> {
        let root = self.config.out_dir.join("checkpoints");
        std::fs::create_dir_all(&root).map_err(|e| TrainerError::io(&root, e))?;
        self.state.sampler = self.sampler.state();
        let name = format!("step-{:06}", self.state.step);
        let dir = root.join(&name);
        let policy = self.policy.as_ref().expect("policy present");
        if let Some(param) = first_non_finite_param::<B, P>(policy) {
            return Err(TrainerError::Checkpoint {
                path: dir.display().to_string(),
                message: format!("refusing to save weights with a NaN or infinity in `{param}`"),
            });
        }
        let state =
            serde_json::to_string_pretty(&self.state).map_err(|e| TrainerError::Checkpoint {
                path: dir.display().to_string(),
                message: e.to_string(),
            })?;
        let config = self.config.to_toml();
        // A round generating for the next step is waited for and saved, so that a resumed run
        // trains on the same rollouts (they were generated with the previous weights).
        let inflight = match self.prefetched.take() {
            Some(round) => {
                let completions = round.pending.wait()?;
                let saved = SavedRound {
                    prompts: round.prompts.clone(),
                    completions: completions.clone(),
                };
                self.prefetched = Some(SubmittedRound {
                    prompts: round.prompts,
                    owned: round.owned,
                    pending: Pending::Ready(Ok(completions)),
                });
                Some(
                    serde_json::to_string(&saved).map_err(|e| TrainerError::Checkpoint {
                        path: dir.display().to_string(),
                        message: e.to_string(),
                    })?,
                )
            }
            None => None,
        };
        let policy = self.policy.as_ref().expect("policy present");
        atomic_dir(&dir, |tmp| {
            policy.save(&tmp.join("model"))?;
            self.optim.save(policy, tmp)?;
            write_file(&tmp.join("state.json"), state.as_bytes())?;
            if let Some(r) = &inflight {
                write_file(&tmp.join("inflight.json"), r.as_bytes())?;
            }
            write_file(&tmp.join("config.toml"), config.as_bytes())
        })?;
        let latest = root.join("latest");
        let tmp = root.join("latest.tmp");
        write_file(&tmp, name.as_bytes())?;
        std::fs::rename(&tmp, &latest).map_err(|e| TrainerError::io(&latest, e))?;
        // Keep the newest `keep` checkpoints.
        let mut all: Vec<PathBuf> = std::fs::read_dir(&root)
            .map_err(|e| TrainerError::io(&root, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.is_dir()
                    && p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("step-") && !n.contains(".tmp"))
            })
            .collect();
        all.sort();
        let keep = self.config.checkpoint.keep.max(1);
        if all.len() > keep {
            for old in &all[..all.len() - keep] {
                std::fs::remove_dir_all(old).map_err(|e| TrainerError::io(old, e))?;
            }
        }
        Ok(dir)
    }
}

/// Sums over every response generated in a step's rounds (all of them, kept or not).
#[derive(Clone, Debug, Default)]
pub struct RolloutStats {
    /// Responses generated.
    pub generated: usize,
    /// Correct responses.
    pub correct: usize,
    /// Sum of shaped rewards.
    pub reward_sum: f64,
    /// Responses that hit `max_new_tokens`.
    pub truncated: usize,
    /// Generated tokens.
    pub gen_tokens: usize,
    /// Per tier: (correct, responses).
    pub tiers: BTreeMap<String, (usize, usize)>,
    /// Pass-rate histogram of every generated group.
    pub pass_rate_hist: [usize; 5],
    /// Verifier outcomes.
    pub outcomes: OutcomeCounts,
    /// The batcher's counters for the emitted batch.
    pub report: BatchReport,
    /// Groups dropped before scoring: staler than `rollout.max_staleness`, or aborted.
    pub stale_groups_dropped: usize,
    /// Their responses.
    pub dropped_responses: usize,
}

impl RolloutStats {
    /// Adds a scored round.
    pub fn observe_round(&mut self, groups: &[RolloutGroup<Rollout>]) {
        for g in groups {
            self.pass_rate_hist[pass_rate_bin(g.pass_rate())] += 1;
            for it in &g.items {
                self.generated += 1;
                self.reward_sum += it.reward;
                self.correct += it.correct as usize;
                self.truncated += (it.finish == FinishReason::Length) as usize;
                self.gen_tokens += it.response.len();
                if let Some(t) = &it.tier {
                    let e = self.tiers.entry(t.clone()).or_default();
                    e.0 += it.correct as usize;
                    e.1 += 1;
                }
            }
        }
    }
}

/// Per-token log-probs of every rollout's response under the policy before the step's updates
/// (π_old) and, with KL, under the reference policy.
#[derive(Clone, Debug, Default)]
pub struct BehaviourLogprobs {
    /// π_old, one vector per rollout.
    pub old: Vec<Vec<f32>>,
    /// π_ref, one vector per rollout (KL only).
    pub reference: Option<Vec<Vec<f32>>>,
}

/// What a step's updates did.
#[derive(Clone, Debug, Default)]
pub struct UpdateStats {
    /// Loss metrics merged over the applied updates.
    pub loss: LossMetrics,
    /// Sum of the applied updates' pre-clip gradient norms.
    pub grad_norm_sum: f64,
    /// Updates applied.
    pub applied: usize,
    /// Updates skipped (non-finite loss or gradient).
    pub skipped: usize,
    /// Prompt + response tokens forwarded.
    pub trained_tokens: usize,
}

/// The importance-sampling correction of a step's rollouts (see [`rl_loss::IsCorrection`]).
#[derive(Clone, Debug, Default)]
pub struct ImportanceWeights {
    /// False for `none`: the loss takes no weights and no masks.
    pub active: bool,
    /// Per rollout, one weight per response token.
    pub weights: Vec<Vec<f32>>,
    /// Per rollout, false where a response token is masked.
    pub keep: Vec<Vec<bool>>,
    /// |log π_old − log π_rollout|, truncation and mask counts over the trained tokens.
    pub stats: IsStats,
}

/// Detached log-probs of each rollout's response tokens under `policy`, one vector of
/// `response.len()` values per rollout, in micro-batches of `micro` sequences.
fn response_logprobs<B: AutodiffBackend, P: Policy<B>>(
    policy: &P,
    items: &[&Rollout],
    micro: usize,
    temperature: f32,
) -> Result<Vec<Vec<f32>>, TrainerError> {
    let mut out = Vec::with_capacity(items.len());
    for (c, chunk) in items.chunks(micro.max(1)).enumerate() {
        if let Some(i) = chunk.iter().position(|r| r.prompt_ids.is_empty()) {
            return Err(TrainerError::Batch {
                sequence: c * micro.max(1) + i,
                message: "empty prompt: the first response token has no context".into(),
            });
        }
        let ids: Vec<Vec<u32>> = chunk
            .iter()
            .map(|r| [r.prompt_ids.as_slice(), &r.response].concat())
            .collect();
        let starts: Vec<usize> = chunk.iter().map(|r| r.prompt_ids.len() - 1).collect();
        let width = chunk
            .iter()
            .map(|r| r.response.len())
            .max()
            .unwrap_or(1)
            .max(1);
        out.extend(policy.logprobs_detached(&ids, &starts, width, temperature)?);
    }
    Ok(out)
}

/// The metrics phase: a step's [`StepMetrics`] from the outputs of the other phases (timing
/// fields and totals are filled by the caller).
pub fn step_metrics(
    step: usize,
    lr: f64,
    rollout: &RolloutStats,
    groups: &[RolloutGroup<Rollout>],
    adv: &BatchAdvantages,
    is: &IsStats,
    update: &UpdateStats,
) -> StepMetrics {
    let per_response = |x: usize| x as f64 / rollout.generated.max(1) as f64;
    let rep = rollout.report;
    let items: Vec<&Rollout> = groups.iter().flat_map(|g| g.items.iter()).collect();
    let mut kept_hist = [0usize; 5];
    for g in groups {
        kept_hist[pass_rate_bin(g.pass_rate())] += 1;
    }
    let l = &update.loss;
    let u = update.applied.max(1) as f64;
    StepMetrics {
        step,
        lr,
        reward_mean: rollout.reward_sum / rollout.generated.max(1) as f64,
        acc: per_response(rollout.correct),
        acc_by_tier: rollout
            .tiers
            .iter()
            .map(|(k, &(c, n))| (k.clone(), c as f64 / n.max(1) as f64))
            .collect(),
        pass_rate_hist: rollout.pass_rate_hist,
        kept_pass_rate_hist: kept_hist,
        kept_all_correct: groups.iter().filter(|g| g.pass_rate() == 1.0).count(),
        kept_all_wrong: groups.iter().filter(|g| g.pass_rate() == 0.0).count(),
        gen_rounds: rep.rounds,
        groups_seen: rep.groups_seen,
        groups_kept: rep.groups_kept,
        groups_used: rep.groups_used,
        surplus_dropped: rep.surplus_dropped,
        frac_all_correct: rep.frac_all_correct(),
        frac_all_wrong: rep.frac_all_wrong(),
        responses_generated: rollout.generated,
        frac_amplified: adv.stats.amplified as f64 / items.len().max(1) as f64,
        adv_mean: adv.stats.mean,
        adv_std: adv.stats.std,
        adv_min: adv.stats.min,
        adv_max: adv.stats.max,
        loss: l.loss / u,
        pg_loss: l.policy_loss / u,
        kl_loss: l.kl_loss / u,
        entropy: l.entropy(),
        clip_frac_upper: l.clip_frac_upper(),
        clip_frac_lower: l.clip_frac_lower(),
        dual_clip_frac: l.dual_clip_frac(),
        ratio_mean: l.ratio_mean(),
        ratio_max: l.ratio_max,
        approx_kl: l.approx_kl(),
        kl_ref: l.kl(),
        grad_norm: update.grad_norm_sum / u,
        response_len_mean: items.iter().map(|r| r.response.len()).sum::<usize>() as f64
            / items.len().max(1) as f64,
        response_len_max: items.iter().map(|r| r.response.len()).max().unwrap_or(0),
        truncation_rate: per_response(rollout.truncated),
        logprob_mismatch: is.abs_diff_mean(),
        logprob_mismatch_max: is.abs_diff_max,
        is_frac_truncated: is.frac_truncated(),
        is_frac_masked: is.frac_masked(),
        stale_groups_dropped: rollout.stale_groups_dropped,
        outcomes: rollout
            .outcomes
            .as_pairs()
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect(),
        updates: update.applied,
        updates_skipped: update.skipped,
        ..StepMetrics::default()
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), TrainerError> {
    std::fs::write(path, bytes).map_err(|e| TrainerError::io(path, e))
}

/// The engine of `config.rollout.engine` serving `policy`'s weights as `version`: the
/// in-process [`LocalEngine`], or a llama-server started on 127.0.0.1 on a GGUF export of the
/// weights (in `out_dir/engine/`), restarted on a new export at every weight sync.
fn build_engine<B: AutodiffBackend, P: Policy<B>>(
    config: &TrainConfig,
    policy: &P,
    tokenizer: &Tokenizer,
    allowed_vocab: usize,
    version: u64,
) -> Result<Box<dyn RolloutEngine>, TrainerError> {
    let (server, server_args, concurrency, timeout_s, max_retries) = match &config.rollout.engine {
        EngineConfig::Local => {
            return Ok(Box::new(LocalEngine::new(
                policy.generator(),
                version,
                config.rollout.generation_batch,
                Some(allowed_vocab),
            )));
        }
        EngineConfig::Sglang {
            url,
            timeout_s,
            max_retries,
            ..
        } => {
            let retry = RetryPolicy {
                timeout_s: *timeout_s,
                max_retries: *max_retries,
                backoff_s: 0.5,
            };
            // A fresh server serves the base model, not necessarily this run's version:
            // version u64::MAX makes `with_engine`-style checks push the current weights first.
            let engine = SglangEngine::new(url, retry, u64::MAX, policy.vocab_size())?;
            engine.health()?;
            return Ok(Box::new(engine));
        }
        EngineConfig::Vllm { .. } => return build_vllm(config, policy, version),
        EngineConfig::LlamaCpp {
            server,
            server_args,
            concurrency,
            timeout_s,
            max_retries,
        } => (server, server_args, concurrency, timeout_s, max_retries),
    };
    let dir = config.out_dir.join("engine");
    let initial = dir.join("initial");
    std::fs::create_dir_all(&initial).map_err(|e| TrainerError::io(&initial, e))?;
    policy.save(&initial)?;
    tokenizer.save(initial.join("tokenizer.json"))?;
    let gguf = dir.join("model.gguf");
    rl_models::export_gguf(&initial, &gguf, GgufDtype::F32)?;
    let ctx = concurrency * (config.rollout.max_new_tokens + 2048);
    let mut args: Vec<String> = [
        "-c".to_string(),
        ctx.to_string(),
        "-np".into(),
        concurrency.to_string(),
        "-ctk".into(),
        "f32".into(),
        "-ctv".into(),
        "f32".into(),
        "-fa".into(),
        "off".into(),
    ]
    .into();
    args.extend(server_args.iter().cloned());
    let port = free_port()?;
    let wait = std::time::Duration::from_secs(300);
    let mut srv = ManagedServer::start(
        server,
        LLAMA_SERVER_LAUNCH,
        &gguf,
        port,
        &args,
        &dir.join("server.log"),
        wait,
    )?;
    let url = srv.url();
    let tok = tokenizer.clone();
    let reload = Box::new(move |weights: &Path| -> Result<(), String> {
        tok.save(weights.join("tokenizer.json"))
            .map_err(|e| e.to_string())?;
        rl_models::export_gguf(weights, &gguf, GgufDtype::F32).map_err(|e| e.to_string())?;
        srv.restart(&gguf, wait).map_err(|e| e.to_string())
    });
    let policy_http = RetryPolicy {
        timeout_s: *timeout_s,
        max_retries: *max_retries,
        backoff_s: 0.5,
    };
    Ok(Box::new(LlamaCppEngine::new(
        &url,
        policy_http,
        version,
        policy.vocab_size(),
        *concurrency,
        Some(reload),
    )?))
}

/// A port on 127.0.0.1 that was free a moment ago, for a server this process starts.
fn free_port() -> Result<u16, TrainerError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| TrainerError::Generator {
            message: format!("no free port on 127.0.0.1 for the engine server: {e}"),
        })
}

/// `vllm serve` on 127.0.0.1 on the policy's weights as HF safetensors (`out_dir/weights`),
/// restarted on the new weights at every sync, with its capabilities probed before training.
fn build_vllm<B: AutodiffBackend, P: Policy<B>>(
    config: &TrainConfig,
    policy: &P,
    version: u64,
) -> Result<Box<dyn RolloutEngine>, TrainerError> {
    let EngineConfig::Vllm {
        server,
        server_args,
        processed_logprobs,
        concurrency,
        timeout_s,
        max_retries,
        startup_timeout_s,
    } = &config.rollout.engine
    else {
        return Err(TrainerError::Generator {
            message: format!("not a vLLM engine: {:?}", config.rollout.engine),
        });
    };
    let weights = config.out_dir.join("weights");
    atomic_dir(&weights, |tmp| policy.save(tmp))?;
    let mut args: Vec<String> = vec!["--skip-tokenizer-init".into()];
    args.extend(server_args.iter().cloned());
    let wait = std::time::Duration::from_secs_f64(*startup_timeout_s);
    let log = config.out_dir.join("vllm.log");
    let mut srv = ManagedServer::start(
        server,
        VLLM_LAUNCH,
        &weights,
        free_port()?,
        &args,
        &log,
        wait,
    )?;
    let url = srv.url();
    let reload = Box::new(move |dir: &Path| -> Result<(), String> {
        srv.restart(dir, wait).map_err(|e| e.to_string())
    });
    let retry = RetryPolicy {
        timeout_s: *timeout_s,
        max_retries: *max_retries,
        backoff_s: 0.5,
    };
    let options = VllmOptions {
        model: None,
        concurrency: *concurrency,
        processed_logprobs: *processed_logprobs,
    };
    let engine = VllmEngine::new(
        &url,
        retry,
        version,
        policy.vocab_size(),
        options,
        Some(reload),
    )?;
    engine.probe(&[0])?;
    Ok(Box::new(engine))
}

/// The prompts of a round from their data-set indices and rendered ids.
fn round_prompts<'a>(
    train: &'a Dataset,
    idx: &[usize],
    rendered: Vec<Arc<Vec<u32>>>,
) -> Vec<RoundPrompt<'a>> {
    idx.iter()
        .zip(rendered)
        .map(|(&i, ids)| RoundPrompt {
            index: i,
            ids,
            answer: &train.prompts[i].answer,
            tier: train.prompts[i].tier.clone(),
        })
        .collect()
}

/// Fills a temporary sibling folder with `fill`, then renames it to `dir` (replacing an old
/// one), so that a crash never leaves a half-written `dir`.
fn atomic_dir(
    dir: &Path,
    fill: impl FnOnce(&Path) -> Result<(), TrainerError>,
) -> Result<(), TrainerError> {
    let tmp = dir.with_extension(format!("tmp{}", std::process::id()));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(|e| TrainerError::io(&tmp, e))?;
    }
    std::fs::create_dir_all(&tmp).map_err(|e| TrainerError::io(&tmp, e))?;
    fill(&tmp)?;
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| TrainerError::io(dir, e))?;
    }
    std::fs::rename(&tmp, dir).map_err(|e| TrainerError::io(dir, e))
}

/// The checkpoint `out_dir/checkpoints/latest` points at, if any.
pub fn latest_checkpoint(out_dir: &Path) -> Option<PathBuf> {
    let root = out_dir.join("checkpoints");
    let name = std::fs::read_to_string(root.join("latest")).ok()?;
    let dir = root.join(name.trim());
    dir.join("state.json").exists().then_some(dir)
}

/// Dotted paths at which two configs differ, ignoring `steps`.
pub fn config_diff(a: &TrainConfig, b: &TrainConfig) -> Vec<String> {
    fn walk(prefix: &str, a: &toml::Value, b: &toml::Value, out: &mut Vec<String>) {
        match (a, b) {
            (toml::Value::Table(x), toml::Value::Table(y)) => {
                let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
                keys.sort();
                keys.dedup();
                for k in keys {
                    let p = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    match (x.get(k), y.get(k)) {
                        (Some(va), Some(vb)) => walk(&p, va, vb, out),
                        _ => out.push(p),
                    }
                }
            }
            _ if a != b => out.push(prefix.to_string()),
            _ => {}
        }
    }
    let (Ok(va), Ok(vb)) = (toml::Value::try_from(a), toml::Value::try_from(b)) else {
        return vec!["<unserialisable>".into()];
    };
    let mut out = Vec::new();
    walk("", &va, &vb, &mut out);
    out.retain(|p| p != "steps");
    out
}

/// `len` empty entries, with `values[k]` placed at `at[k]` (a worker's share of a batch, laid
/// out at its rollouts' places).
fn scatter<T: Clone>(at: &[usize], len: usize, values: Vec<Vec<T>>) -> Vec<Vec<T>> {
    let mut out = vec![Vec::new(); len];
    for (&k, v) in at.iter().zip(values) {
        out[k] = v;
    }
    out
}

/// The requests of `round_requests` for the prompts at positions `mine` (each request holds
/// samples of one prompt; `group_size` samples per prompt, in prompt order).
fn own_requests(
    requests: Vec<rl_rollout::GenerateRequest>,
    mine: &[usize],
    group_size: usize,
) -> Vec<rl_rollout::GenerateRequest> {
    let mut row = 0;
    requests
        .into_iter()
        .filter(|r| {
            let pos = row / group_size.max(1);
            row += r.n;
            mine.binary_search(&pos).is_ok()
        })
        .collect()
}

/// One worker's scored groups of a round (with their positions in the round) and the counts
/// that go with them, as exchanged between data-parallel workers.
#[derive(Serialize, Deserialize)]
struct RoundShare {
    groups: Vec<(usize, RolloutGroup<Rollout>)>,
    outcomes: OutcomeCounts,
    stale_groups: usize,
    dropped_responses: usize,
}

impl RoundShare {
    /// Every worker's share merged, groups in round order: the same on every worker.
    fn exchange<B: burn::prelude::Backend>(self, w: &Worker<B>) -> Result<Self, TrainerError> {
        let bytes = serde_json::to_vec(&self).map_err(|e| TrainerError::Distributed {
            rank: w.rank(),
            message: format!("encoding scored rollouts: {e}"),
        })?;
        let mut all = RoundShare {
            groups: Vec::new(),
            outcomes: OutcomeCounts::default(),
            stale_groups: 0,
            dropped_responses: 0,
        };
        for (rank, b) in w
            .all_gather_bytes("exchanging scored rollouts", &bytes)?
            .into_iter()
            .enumerate()
        {
            let s: RoundShare =
                serde_json::from_slice(&b).map_err(|e| TrainerError::Distributed {
                    rank: w.rank(),
                    message: format!("scored rollouts from worker {rank}: {e}"),
                })?;
            all.groups.extend(s.groups);
            all.outcomes.merge(&s.outcomes);
            all.stale_groups += s.stale_groups;
            all.dropped_responses += s.dropped_responses;
        }
        all.groups.sort_by_key(|(pos, _)| *pos);
        Ok(all)
    }
}
