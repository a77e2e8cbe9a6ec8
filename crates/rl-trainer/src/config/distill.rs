//! `[distill]`: on-policy distillation's teacher, form and weights (docs/algorithms/distill.md),
//! and their checks.

use std::path::PathBuf;

use rl_rollout::RetryPolicy;
use serde::{Deserialize, Serialize};

use super::validate::config_error;
use super::{TrainConfig, default_concurrency, default_retries, default_timeout};
use crate::TrainerError;

/// How the teacher's signal enters the loss (`distill.form`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DistillForm {
    /// The sampled-token reverse-KL estimate as a per-token advantage
    /// ([`rl_advantage::distill::DistillSignal`]).
    #[default]
    Sampled,
    /// GKD's generalized JSD over the full vocabulary, added to the loss
    /// ([`rl_loss::generalized_jsd`]).
    Full,
}

/// Registered `distill.form` names.
pub const DISTILL_FORMS: [&str; 2] = ["sampled", "full"];

/// On-policy distillation (docs/algorithms/distill.md): a frozen teacher scores the student's
/// own responses. Off unless the section is present. The teacher is either a model this
/// process loads (`teacher`) or a server that scores given tokens (`[distill.server]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DistillSection {
    /// The teacher in process: an HF folder or a GGUF file with the policy's tokenizer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub teacher: Option<PathBuf>,
    /// The teacher behind a server (`sampled` form only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<TeacherServer>,
    /// `sampled` (default) or `full`.
    #[serde(default)]
    pub form: DistillForm,
    /// Weight c of the teacher's signal (> 0).
    #[serde(default = "one")]
    pub coef: f64,
    /// Weight w of the verifier's outcome advantage (≥ 0; 0: distillation only).
    #[serde(default)]
    pub reward_weight: f64,
    /// `full` only: β of the generalized JSD (1: reverse KL, 0: forward KL).
    #[serde(default = "one")]
    pub beta: f64,
    /// `full` only: vocabulary columns per chunk of the divergence.
    #[serde(default = "default_vocab_chunk")]
    pub vocab_chunk: usize,
}

fn one() -> f64 {
    1.0
}

fn default_vocab_chunk() -> usize {
    8192
}

/// A teacher someone else serves (`[distill.server]`), which scores the student's tokens
/// through rl-rollout's [`rl_rollout::TokenScorer`]. The server must serve a model with the
/// student's tokenizer: every reply names the ids it scored, and ids other than those sent
/// are an error.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TeacherServer {
    /// vLLM's OpenAI-compatible server: `prompt_logprobs` of `/v1/completions`.
    Vllm {
        /// The server's URL, e.g. `http://gpu-node:8000`.
        url: String,
        /// The served model's name; absent: the first of `GET /v1/models`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// Requests in flight (one per response).
        #[serde(default = "default_concurrency")]
        concurrency: usize,
        /// Seconds per request.
        #[serde(default = "default_timeout")]
        timeout_s: f64,
        /// Retries of a failed request.
        #[serde(default = "default_retries")]
        max_retries: usize,
    },
    /// SGLang's native server: `input_token_logprobs` of one batched `/generate`.
    Sglang {
        /// The server's URL, e.g. `http://gpu-node:30000`.
        url: String,
        /// Seconds per request (the whole batch).
        #[serde(default = "default_timeout")]
        timeout_s: f64,
        /// Retries of a failed request.
        #[serde(default = "default_retries")]
        max_retries: usize,
    },
}

impl TeacherServer {
    /// The server's URL.
    pub fn url(&self) -> &str {
        match self {
            TeacherServer::Vllm { url, .. } | TeacherServer::Sglang { url, .. } => url,
        }
    }

    /// Timeouts and retries (rl-rollout's default backoff).
    pub fn retry(&self) -> RetryPolicy {
        let (TeacherServer::Vllm {
            timeout_s,
            max_retries,
            ..
        }
        | TeacherServer::Sglang {
            timeout_s,
            max_retries,
            ..
        }) = self;
        RetryPolicy {
            timeout_s: *timeout_s,
            max_retries: *max_retries,
            ..RetryPolicy::default()
        }
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
                let t = self.rollout.sampling(&[]).logprob_temperature();
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
