//! Cross-field checks of a resolved configuration ([`TrainConfig::validate`]); every message
//! names the field and what is accepted.

use rl_loss::PolicyLoss;
use rl_models::Checkpointing;

use super::{DistillForm, DistillSection, EngineConfig, PromptTemplate, TrainConfig};
use crate::TrainerError;

fn config_error(field: &str, e: impl std::fmt::Display) -> TrainerError {
    TrainerError::Config {
        field: field.into(),
        message: e.to_string(),
    }
}

impl TrainConfig {
    // The three registries' objects are built here and only here, for validation and for the
    // run, so that a config that validates builds the same objects the run trains with.

    /// The verifier of `reward.verifier`.
    pub fn build_verifier(&self) -> Result<Box<dyn rl_verifier::Verifier>, TrainerError> {
        self.reward
            .verifier
            .build()
            .map_err(|e| config_error("reward.verifier", e))
    }

    /// The advantage estimator of `advantage`, for groups of `rollout.group_size`.
    pub fn build_estimator(&self) -> Result<rl_advantage::Estimator, TrainerError> {
        self.advantage
            .build(self.rollout.group_size)
            .map_err(|e| config_error("advantage", e))
    }

    /// The group filter of `filter`.
    pub fn build_filter(&self) -> Result<Box<dyn rl_sampler::GroupFilter>, TrainerError> {
        self.filter.build().map_err(|e| config_error("filter", e))
    }

    /// Responses verified at once: the sandbox's concurrency for the `code` verifier (each
    /// verification waits on programs), 1 for the rule-based ones.
    pub fn scoring_parallelism(&self) -> usize {
        match &self.reward.verifier {
            rl_verifier::VerifierConfig::Code(c) => c.sandbox.concurrency.max(1),
            _ => 1,
        }
    }

    /// Cross-field checks; every message names the field.
    pub fn validate(&self) -> Result<(), TrainerError> {
        let bad = |field: &str, message: String| {
            Err(TrainerError::Config {
                field: field.into(),
                message,
            })
        };
        if self.rollout.group_size < 2 {
            return bad(
                "rollout.group_size",
                format!(
                    "{} (a group needs at least 2 responses)",
                    self.rollout.group_size
                ),
            );
        }
        if self.rollout.prompts_per_round == 0 {
            return bad("rollout.prompts_per_round", "0 (must be >= 1)".into());
        }
        if !self.probe.is_off() && self.probe.samples == 0 {
            return bad("probe.samples", "0 (must be >= 1)".into());
        }
        if self.probe.steps.contains(&0) {
            return bad(
                "probe.steps",
                "contains 0 (steps are 1-based: step 1 is the first update)".into(),
            );
        }
        match &self.rollout.engine {
            EngineConfig::Local => {}
            EngineConfig::LlamaCpp { concurrency, .. } | EngineConfig::Vllm { concurrency, .. }
                if *concurrency == 0 =>
            {
                return bad("rollout.engine.concurrency", "0 (must be >= 1)".into());
            }
            EngineConfig::Vllm {
                startup_timeout_s, ..
            } if !(startup_timeout_s.is_finite() && *startup_timeout_s > 0.0) => {
                return bad(
                    "rollout.engine.startup_timeout_s",
                    format!("{startup_timeout_s} (a finite number > 0)"),
                );
            }
            EngineConfig::Sglang { url, .. }
                if !(url.starts_with("http://") || url.starts_with("https://")) =>
            {
                return bad(
                    "rollout.engine.url",
                    format!("`{url}` (an http:// URL, e.g. http://gpu-node:30000)"),
                );
            }
            _ => {}
        }
        if let Some(retry) = self.rollout.engine.retry()
            && !(retry.timeout_s.is_finite() && retry.timeout_s > 0.0)
        {
            return bad(
                "rollout.engine.timeout_s",
                format!("{} (a finite number > 0)", retry.timeout_s),
            );
        }
        if self.model.shared_prompts
            && !self.model.packing
            && self.model.checkpointing != Checkpointing::None
        {
            return bad(
                "model.shared_prompts",
                "true needs model.checkpointing = \"none\" or model.packing = true \
                 (per-layer recomputation of a prompt shared through the KV cache is not \
                 implemented)"
                    .into(),
            );
        }
        if self.rollout.max_new_tokens == 0 {
            return bad("rollout.max_new_tokens", "0 (must be >= 1)".into());
        }
        if self.batch.groups_per_step == 0 {
            return bad("batch.groups_per_step", "0 (must be >= 1)".into());
        }
        if self.optim.epochs == 0 || self.optim.mini_batches == 0 || self.optim.micro_batch == 0 {
            return bad(
                "optim.epochs/mini_batches/micro_batch",
                "must all be >= 1".into(),
            );
        }
        if self.optim.max_consecutive_skips == 0 {
            return bad(
                "optim.max_consecutive_skips",
                "0 (must be >= 1; 1 stops at the first non-finite update)".into(),
            );
        }
        if matches!(self.loss.policy, PolicyLoss::Reinforce)
            && (self.optim.mini_batches > 1 || self.optim.epochs > 1)
        {
            return bad(
                "optim.mini_batches/epochs",
                format!(
                    "{} mini-batches × {} epochs with loss.policy = \"reinforce\" (the rloo \
                     preset's loss): REINFORCE has no importance ratio, so every update after \
                     the first would train on samples of an older policy without correction; \
                     set both to 1, or use a clipped-ratio loss (ppo, gspo)",
                    self.optim.mini_batches, self.optim.epochs
                ),
            );
        }
        if self.optim.mini_batches > self.batch.groups_per_step {
            return bad(
                "optim.mini_batches",
                format!(
                    "{} mini-batches of whole groups need at least as many groups per step ({})",
                    self.optim.mini_batches, self.batch.groups_per_step
                ),
            );
        }
        if !(self.optim.lr.is_finite() && self.optim.lr >= 0.0) {
            return bad(
                "optim.lr",
                format!("{} (a finite number >= 0)", self.optim.lr),
            );
        }
        if !(self.optim.grad_clip.is_finite() && self.optim.grad_clip >= 0.0) {
            return bad(
                "optim.grad_clip",
                format!("{} (a finite number >= 0; 0 = off)", self.optim.grad_clip),
            );
        }
        if self.eval.k == 0 {
            return bad("eval.k", "0 (must be >= 1)".into());
        }
        if let PromptTemplate::Custom(t) = &self.data.template
            && !t.contains("{problem}")
        {
            return bad(
                "data.template",
                "a custom template must contain {problem}".into(),
            );
        }
        self.build_estimator()?;
        self.build_filter()?;
        self.loss.validate().map_err(|e| config_error("loss", e))?;
        self.build_verifier()?;
        if let Some(r) = &self.reward.rewards {
            r.validate()
                .map_err(|e| config_error("reward.rewards", e))?;
        }
        self.reward
            .overlong
            .validate()
            .map_err(|e| config_error("reward.overlong", e))?;
        if let Some(l) = &self.model.lora {
            l.validate().map_err(|e| config_error("model.lora", e))?;
        }
        if let Some(env) = &self.rollout.env {
            self.validate_env(env)?;
        }
        if let Some(d) = &self.distill {
            self.validate_distill(d)?;
        }
        self.validate_critic()?;
        self.validate_reward_model()?;
        if let Some(b) = &self.rollout.budget {
            b.allocation()
                .map_err(|e| config_error("rollout.budget", e))?;
            b.tracker().map_err(|e| config_error("rollout.budget", e))?;
            let g = self.rollout.group_size;
            if g < b.min || g > b.max {
                return bad(
                    "rollout.budget.min/max",
                    format!(
                        "{}..={} does not contain rollout.group_size = {g}: each round splits \
                         prompts × group_size responses, so the mean group must fit",
                        b.min, b.max
                    ),
                );
            }
        }
        Ok(())
    }

    /// `[critic]`: present exactly with `algorithm = "ppo"`, its numbers, and what it cannot be
    /// combined with yet.
    fn validate_critic(&self) -> Result<(), TrainerError> {
        let bad = |field: &str, message: String| {
            Err(TrainerError::Config {
                field: field.into(),
                message,
            })
        };
        let Some(c) = &self.critic else {
            if self.algorithm == "ppo" {
                return bad(
                    "critic",
                    "missing: algorithm = \"ppo\" trains a critic ([critic] section)".into(),
                );
            }
            return Ok(());
        };
        if self.algorithm != "ppo" {
            return bad(
                "critic",
                format!(
                    "given with algorithm = \"{}\": a critic is PPO's (algorithm = \"ppo\"); \
                     the other presets' advantages are critic-free",
                    self.algorithm
                ),
            );
        }
        let lr = c.lr(self.optim.lr);
        if !(lr.is_finite() && lr > 0.0) {
            return bad("critic.lr", format!("{lr} (must be a finite number > 0)"));
        }
        if !(c.cliprange_value.is_finite() && c.cliprange_value > 0.0) {
            return bad(
                "critic.cliprange_value",
                format!("{} (must be a finite number > 0)", c.cliprange_value),
            );
        }
        c.gae().map_err(|e| config_error("critic", e))?;
        c.kl_in_reward()
            .map_err(|e| config_error("critic.kl_in_reward", e))?;
        if self.distill.is_some() {
            return bad(
                "distill",
                "given with a critic: both set the per-token advantages; use one".into(),
            );
        }
        Ok(())
    }

    /// The weights of the reward's parts, `[reward.model]` and `[reward.judge]`.
    fn validate_reward_model(&self) -> Result<(), TrainerError> {
        let r = &self.reward;
        for (field, w) in [
            ("reward.verifier_weight", r.verifier_weight),
            ("reward.judge_weight", r.judge_weight),
        ] {
            if !(w.is_finite() && w >= 0.0) {
                return Err(config_error(
                    field,
                    format!("{w} (must be a finite number >= 0)"),
                ));
            }
        }
        if r.judge.is_none() && r.judge_weight != 1.0 {
            return Err(config_error(
                "reward.judge_weight",
                format!("{} without [reward.judge]", r.judge_weight),
            ));
        }
        if r.model.is_none() && r.judge.is_none() && r.verifier_weight != 1.0 {
            return Err(config_error(
                "reward.verifier_weight",
                format!(
                    "{} without [reward.model] or [reward.judge]: the verifier's reward is the \
                     whole reward",
                    r.verifier_weight
                ),
            ));
        }
        let Some(m) = &r.model else {
            return Ok(());
        };
        if !(m.weight.is_finite() && m.weight >= 0.0) {
            return Err(config_error(
                "reward.model.weight",
                format!("{} (must be a finite number >= 0)", m.weight),
            ));
        }
        if m.micro_batch == 0 {
            return Err(config_error("reward.model.micro_batch", "0 (must be >= 1)"));
        }
        Ok(())
    }

    /// `[rollout.env]` and what multi-turn episodes do not support yet.
    fn validate_env(&self, env: &rl_env::EnvConfig) -> Result<(), TrainerError> {
        let bad = |field: &str, message: String| {
            Err(TrainerError::Config {
                field: field.into(),
                message,
            })
        };
        env.validate().map_err(|e| config_error("rollout.env", e))?;
        if !self.data.chat_template {
            return bad(
                "data.chat_template",
                "false with [rollout.env]: observations are appended through the chat \
                 template's turn boundaries, so prompts must be rendered with it (true)"
                    .into(),
            );
        }
        if self.rollout.max_staleness > 0 {
            return bad(
                "rollout.max_staleness",
                format!(
                    "{} with [rollout.env]: multi-turn episodes run synchronously (0)",
                    self.rollout.max_staleness
                ),
            );
        }
        if !self.probe.is_off() {
            return bad(
                "probe.steps",
                "the Theorem 3.1 probe samples single responses; turn it off with [rollout.env]"
                    .into(),
            );
        }
        Ok(())
    }
}

impl TrainConfig {
    /// `[distill]`: one teacher, what a server teacher cannot do, γ = 1, the weights (through
    /// [`Self::distill_signal`]), the full form's β and chunk.
    pub(super) fn validate_distill(&self, d: &DistillSection) -> Result<(), TrainerError> {
        let in_process = d
            .teacher
            .as_ref()
            .is_some_and(|t| !t.as_os_str().is_empty());
        match (in_process, &d.server) {
            (false, None) => {
                return Err(config_error(
                    "distill.teacher",
                    "no teacher: set distill.teacher (an HF folder or a GGUF file with the \
                     policy's tokenizer) or add a [distill.server] section (kind = \"vllm\" or \
                     \"sglang\")",
                ));
            }
            (true, Some(_)) => {
                return Err(config_error(
                    "distill.server",
                    "given with distill.teacher: one teacher, either in process (teacher) or \
                     behind a server ([distill.server])",
                ));
            }
            (false, Some(server)) => {
                if d.form == DistillForm::Full {
                    return Err(config_error(
                        "distill.form",
                        "\"full\" with [distill.server]: the full form needs the teacher's \
                         logits over the vocabulary, which a server does not return; use \
                         form = \"sampled\" or an in-process teacher",
                    ));
                }
                let t = self.rollout.sampling(&[], None).logprob_temperature();
                if t != 1.0 {
                    return Err(config_error(
                        "rollout.temperature",
                        format!(
                            "{t} with [distill.server]: a server scores tokens under the \
                             untempered distribution (T = 1), while the student's log-probs \
                             use T = {t}; sample at T = 1 or use an in-process teacher"
                        ),
                    ));
                }
                server
                    .retry()
                    .validate("distill.server")
                    .map_err(|e| config_error("distill.server", e))?;
            }
            (true, None) => {}
        }
        let gamma = self.advantage.gamma();
        if gamma != 1.0 {
            return Err(config_error(
                "advantage.gamma",
                format!(
                    "{gamma} with [distill]: discounted REINFORCE++ advantages differ token by \
                     token and the distillation signal takes one outcome advantage per \
                     response; use gamma = 1 with [distill]"
                ),
            ));
        }
        self.distill_signal()?;
        if d.form == DistillForm::Full {
            if !(0.0..=1.0).contains(&d.beta) {
                return Err(config_error(
                    "distill.beta",
                    format!(
                        "{} (a number in [0, 1]; 1: reverse KL, 0: forward KL)",
                        d.beta
                    ),
                ));
            }
            if d.vocab_chunk == 0 {
                return Err(config_error("distill.vocab_chunk", "0 (must be >= 1)"));
            }
        }
        Ok(())
    }

    /// The weights of the distillation signal of `[distill]` (`None` without the section).
    pub fn distill_signal(
        &self,
    ) -> Result<Option<rl_advantage::distill::DistillSignal>, TrainerError> {
        self.distill
            .as_ref()
            .map(|d| {
                rl_advantage::distill::DistillSignal::new(d.coef, d.reward_weight)
                    .map_err(|e| config_error("distill", e))
            })
            .transpose()
    }
}
