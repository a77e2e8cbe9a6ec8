//! `[distill]`: on-policy distillation's teacher, form and weights (docs/algorithms/distill.md);
//! checked by `validate.rs`.

use std::path::PathBuf;

use rl_rollout::RetryPolicy;
use serde::{Deserialize, Serialize};

use super::remote::{default_concurrency, default_retries, default_timeout};

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
