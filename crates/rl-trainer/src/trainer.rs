//! The trainer. One step is a composition of named phases ([`Trainer::step`]):
//!
//! 1. **generate** G responses per prompt ([`generate_round`]),
//! 2. **score** them: decode, verify, shape rewards ([`Scorer::score_round`]),
//! 3. **filter**: dynamic sampling keeps groups until N are kept ([`Trainer::collect_batch`]
//!    repeats 1–3 in rounds sized by [`rl_sampler::RoundSizing`]),
//! 4. **advantages** over the kept groups ([`Trainer::advantages`]),
//! 5. **old/reference log-probs** of the response tokens ([`Trainer::behaviour_logprobs`]),
//! 6. **update**: μ epochs × mini-batches of whole groups ([`Trainer::update`]),
//! 7. **metrics** from the phases' outputs ([`step_metrics`]).
//!
//! Generation uses the trained policy itself, so there are no weights to synchronise.

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
use rl_advantage::{AdvantageEstimator, BatchAdvantages, Sample, compute_batch};
use rl_loss::LossMetrics;
use rl_models::{FinishReason, GenerationConfig, Tokenizer};
use rl_sampler::{BatchReport, BatcherConfig, DynamicBatcher, KeepRate, RolloutGroup};
use rl_verifier::{OutcomeCounts, Verifier};
use serde::{Deserialize, Serialize};

use crate::TrainerError;
use crate::config::TrainConfig;
use crate::data::{Dataset, PromptRenderer, PromptSampler, SamplerState};
use crate::eval::EvalReport;
use crate::metrics::{MetricsWriter, StepMetrics, pass_rate_bin};
use crate::optim::{AdamWOptimizer, first_non_finite_param, lr_at};
use crate::policy::Policy;
use crate::rollout::{Rollout, RoundPrompt, Scorer, generate_round, strip_end_tokens};
use crate::update::{TrainSeq, policy_update};

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
    quiet: bool,
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
        Ok(Self {
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
            quiet: !std::io::stderr().is_terminal(),
        })
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
        Self::assemble(
            config, policy, reference, optim, tokenizer, train, eval, device, state,
        )
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
        let mut gen_cfg = self.generation_config(e.temperature, e.top_p, 0);
        let inputs: Vec<Vec<u32>> = (0..n)
            .flat_map(|i| std::iter::repeat_n(self.eval_rendered[i].as_ref().clone(), e.k))
            .collect();
        let chunk = if self.config.rollout.generation_batch == 0 {
            inputs.len()
        } else {
            self.config.rollout.generation_batch
        };
        let mut correct = Vec::with_capacity(inputs.len());
        let policy = self.policy.as_ref().expect("policy present");
        for (c, part) in inputs.chunks(chunk.max(1)).enumerate() {
            gen_cfg.seed = self.config.seed ^ 0xE7A1_0000_0000 ^ (tag << 20) ^ c as u64;
            for g in policy.generate(part, &gen_cfg)? {
                let text = self
                    .tokenizer
                    .decode(strip_end_tokens(&g.tokens, &self.end_ids), false)?;
                correct.push(text);
            }
        }
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

    /// Generation rounds — generate, score, filter — until the batcher returns a batch. Each
    /// round samples as many prompts as [`rl_sampler::RoundSizing`] says.
    pub fn collect_batch(
        &mut self,
    ) -> Result<(Vec<RolloutGroup<Rollout>>, RolloutStats), TrainerError> {
        let r = self.config.rollout.clone();
        let gen_cfg = self.generation_config(r.temperature, r.top_p, r.top_k);
        let mut stats = RolloutStats::default();
        loop {
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
            let rendered = idx
                .iter()
                .map(|&i| self.prompt_ids(i))
                .collect::<Result<Vec<_>, _>>()?;
            let prompts: Vec<RoundPrompt<'_>> = idx
                .iter()
                .zip(rendered)
                .map(|(&i, ids)| RoundPrompt {
                    index: i,
                    ids,
                    answer: &self.train.prompts[i].answer,
                    tier: self.train.prompts[i].tier.clone(),
                })
                .collect();
            let rng = &mut self.state.rng;
            let mut seeds = || rng.next_u64();
            let generations = generate_round(
                self.policy.as_ref().expect("policy present"),
                &prompts,
                r.group_size,
                &gen_cfg,
                r.generation_batch,
                &mut seeds,
            )?;
            let scorer = Scorer {
                verifier: self.verifier.as_ref(),
                rewards: self.config.reward_map(),
                overlong: self.config.reward.overlong,
                tokenizer: &self.tokenizer,
                end_ids: &self.end_ids,
            };
            let groups = scorer.score_round(
                &prompts,
                generations,
                &mut self.state.next_group,
                &mut stats.outcomes,
            )?;
            stats.observe_round(&groups);
            if let Some(batch) = self.batcher.push_round(groups)? {
                self.state.keep_rate.observe(&batch.report);
                stats.report = batch.report;
                return Ok((batch.groups, stats));
            }
        }
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
        let old = response_logprobs(self.policy(), items, micro)?;
        let reference = match &self.reference {
            Some(rp) => Some(response_logprobs(rp, items, micro)?),
            None => None,
        };
        Ok(BehaviourLogprobs { old, reference })
    }

    /// μ epochs × `optim.mini_batches` optimizer updates over mini-batches of whole groups.
    /// An update whose loss or gradient norm is not finite is skipped and counted; more than
    /// `optim.max_consecutive_skips` − 1 skips in a row stop training with
    /// [`TrainerError::Diverged`].
    pub fn update(
        &mut self,
        step: usize,
        lr: f64,
        groups: &[RolloutGroup<Rollout>],
        advantages: &[f64],
        old: &[Vec<f32>],
        reference: Option<&[Vec<f32>]>,
    ) -> Result<UpdateStats, TrainerError> {
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
                    for i in starts[gi]..starts[gi] + groups[gi].items.len() {
                        let r = items[i];
                        batch.push(TrainSeq {
                            prompt: &r.prompt_ids,
                            response: &r.response,
                            old_logp: &old[i],
                            ref_logp: reference.map(|v| v[i].as_slice()),
                            advantage: advantages[i] as f32,
                            train: r.train,
                        });
                        stats.trained_tokens += r.prompt_ids.len() + r.response.len();
                    }
                }
                let policy = self.policy.take().expect("policy present");
                let out = policy_update(
                    policy,
                    &mut self.optim,
                    lr,
                    &self.config.loss,
                    &batch,
                    micro,
                    &self.device,
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

        let (groups, rollout) = self.collect_batch()?;
        let time_rollout = t0.elapsed().as_secs_f64();
        let adv = self.advantages(&groups)?;

        let t1 = Instant::now();
        let items: Vec<&Rollout> = groups.iter().flat_map(|g| g.items.iter()).collect();
        let BehaviourLogprobs { old, reference } = self.behaviour_logprobs(&items)?;
        let mismatch = LogprobMismatch::measure(&items, &old);
        let time_logprobs = t1.elapsed().as_secs_f64();

        let t2 = Instant::now();
        let update = self.update(
            step,
            lr,
            &groups,
            &adv.advantages,
            &old,
            reference.as_deref(),
        )?;
        let time_train = t2.elapsed().as_secs_f64();

        self.state.step = step;
        self.state.rollouts += rollout.generated as u64;
        let mut m = step_metrics(step, lr, &rollout, &groups, &adv, mismatch, &update);
        m.rollouts_total = self.state.rollouts;
        m.time_rollout_s = time_rollout;
        m.rollout_tokens_per_s = rollout.gen_tokens as f64 / time_rollout.max(1e-9);
        m.time_logprobs_s = time_logprobs;
        m.time_train_s = time_train;
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
        let cfg_path = out.join("config.toml");
        std::fs::write(&cfg_path, self.config.to_toml())
            .map_err(|e| TrainerError::io(&cfg_path, e))?;
        if fresh && let Some(r) = &self.reference {
            let dir = out.join("reference");
            if !dir.join("config.json").exists() {
                atomic_dir(&dir, |tmp| r.save(tmp))?;
            }
        }
        self.writer = Some(MetricsWriter::open(
            &out.join("metrics.jsonl"),
            (!fresh).then_some(self.state.step),
        )?);
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
                && std::env::var_os("RLVR_QUIET").is_none()
            {
                bar.suspend(|| eprintln!("[eval step {s}] {}", ev.summary()));
            }
            self.write(&m)?;
            on_step(&m);
            let every = self.config.checkpoint.every;
            if (every > 0 && s % every == 0) || done {
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
        atomic_dir(&dir, |tmp| {
            policy.save(&tmp.join("model"))?;
            self.optim.save(policy, tmp)?;
            write_file(&tmp.join("state.json"), state.as_bytes())?;
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

/// |sampler log-prob − π_old log-prob| over the trained tokens.
#[derive(Clone, Copy, Debug, Default)]
pub struct LogprobMismatch {
    /// Mean.
    pub mean: f64,
    /// Largest.
    pub max: f64,
}

impl LogprobMismatch {
    fn measure(items: &[&Rollout], old: &[Vec<f32>]) -> Self {
        let (mut sum, mut max, mut n) = (0.0f64, 0.0f64, 0usize);
        for (r, o) in items.iter().zip(old) {
            for (a, b) in r.sampler_logp.iter().zip(o) {
                let d = (a - b).abs() as f64;
                sum += d;
                max = max.max(d);
                n += 1;
            }
        }
        LogprobMismatch {
            mean: sum / n.max(1) as f64,
            max,
        }
    }
}

/// Detached log-probs of each rollout's response tokens under `policy`, one vector of
/// `response.len()` values per rollout, in micro-batches of `micro` sequences.
fn response_logprobs<B: AutodiffBackend, P: Policy<B>>(
    policy: &P,
    items: &[&Rollout],
    micro: usize,
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
        out.extend(policy.logprobs_detached(&ids, &starts, width)?);
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
    mismatch: LogprobMismatch,
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
        logprob_mismatch: mismatch.mean,
        logprob_mismatch_max: mismatch.max,
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
