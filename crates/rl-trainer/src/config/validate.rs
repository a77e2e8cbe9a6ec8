//! Cross-field checks of a resolved configuration ([`TrainConfig::validate`]); every message
//! names the field and what is accepted.

use rl_loss::PolicyLoss;

use super::{EngineConfig, PromptTemplate, TrainConfig};
use crate::TrainerError;

impl TrainConfig {
    /// The verifier of `reward.verifier` (built once for validation and once for the run, from
    /// this one place).
    pub fn build_verifier(&self) -> Result<Box<dyn rl_verifier::Verifier>, TrainerError> {
        self.reward
            .verifier
            .build()
            .map_err(|e| TrainerError::Config {
                field: "reward.verifier".into(),
                message: e.to_string(),
            })
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
        let timeout = match &self.rollout.engine {
            EngineConfig::Local => None,
            EngineConfig::LlamaCpp {
                concurrency,
                timeout_s,
                ..
            } => {
                if *concurrency == 0 {
                    return bad("rollout.engine.concurrency", "0 (must be >= 1)".into());
                }
                Some(*timeout_s)
            }
            EngineConfig::Vllm {
                concurrency,
                timeout_s,
                startup_timeout_s,
                ..
            } => {
                if *concurrency == 0 {
                    return bad("rollout.engine.concurrency", "0 (must be >= 1)".into());
                }
                if !(startup_timeout_s.is_finite() && *startup_timeout_s > 0.0) {
                    return bad(
                        "rollout.engine.startup_timeout_s",
                        format!("{startup_timeout_s} (a finite number > 0)"),
                    );
                }
                Some(*timeout_s)
            }
            EngineConfig::Sglang { url, timeout_s, .. } => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return bad(
                        "rollout.engine.url",
                        format!("`{url}` (an http:// URL, e.g. http://gpu-node:30000)"),
                    );
                }
                Some(*timeout_s)
            }
        };
        if let Some(t) = timeout
            && !(t.is_finite() && t > 0.0)
        {
            return bad(
                "rollout.engine.timeout_s",
                format!("{t} (a finite number > 0)"),
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
        self.advantage
            .build(self.rollout.group_size)
            .map_err(|e| TrainerError::Config {
                field: "advantage".into(),
                message: e.to_string(),
            })?;
        self.filter.build().map_err(|e| TrainerError::Config {
            field: "filter".into(),
            message: e.to_string(),
        })?;
        self.loss.validate().map_err(|e| TrainerError::Config {
            field: "loss".into(),
            message: e.to_string(),
        })?;
        self.build_verifier()?;
        if let Some(r) = &self.reward.rewards {
            r.validate().map_err(|e| TrainerError::Config {
                field: "reward.rewards".into(),
                message: e.to_string(),
            })?;
        }
        self.reward
            .overlong
            .validate()
            .map_err(|e| TrainerError::Config {
                field: "reward.overlong".into(),
                message: e.to_string(),
            })?;
        Ok(())
    }
}
