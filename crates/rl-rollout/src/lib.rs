#![doc = include_str!("../README.md")]
//!
//! ## In detail
//!
//! The interface between an RL trainer and whatever generates its rollouts: the trainer's own
//! model in process, or an inference engine over HTTP ([`SglangEngine`], [`VllmEngine`],
//! [`LlamaCppEngine`]; [`ManagedServer`] starts and restarts a server on 127.0.0.1). Token ids go in,
//! token ids come out; no tokenizer, no tensors, no burn — a trainer written against
//! [`RolloutEngine`] runs with any engine.
//!
//! * [`GenerateRequest`]: prompt ids, the number of samples `n` and [`SamplingParams`]
//!   (temperature, top-p, top-k, max new tokens, stop ids, seed).
//! * [`Completion`]: the generated ids, one log-prob per generated token, the [`FinishReason`]
//!   and the [`WeightVersion`] of the weights that generated it.
//! * [`RolloutEngine::update_weights`] loads new weights ([`WeightsRef`]: a folder of HF
//!   safetensors, or an in-process object for an engine in the same process) tagged with the
//!   trainer's version; the engine answers with the version it now serves.
//! * [`TokenScorer`]: the log-probs a served model gives tokens it did not generate (a
//!   distillation teacher behind vLLM or SGLang).
//! * [`staleness`]: how many weight versions a rollout lags behind the policy being trained.
//!
//! ## What the log-probs are
//!
//! `Completion::logprobs[t]` is log π_rollout(y_t | x, y_<t) under the *tempered* distribution
//! softmax(logits / T) over the whole vocabulary — before top-k / top-p truncation, as verl and
//! TRL compute π_old (at T = 0, greedy decoding, T = 1 is used). The trainer's π_old and π_θ use
//! the same T, so the ratio π_old / π_rollout measures only the engine/trainer gap (kernels,
//! precision, stale weights), which the importance-sampling corrections of `rl-loss` act on.
//!
//! ## Versions
//!
//! Version v means "the weights after v optimizer steps of the trainer". An engine starts at the
//! version it was built with and only moves when [`RolloutEngine::update_weights`] succeeds; a
//! rollout generated at version v used at the update of version u has staleness u − v.

#![warn(missing_docs)]
mod engine;
mod error;
pub mod http;
pub mod judge;
pub mod llama_cpp;
mod request;
mod score;
mod server;
pub mod sglang;
pub mod vllm;

pub use engine::{RolloutEngine, WeightsKind, WeightsRef, check_completions, staleness};
pub use error::EngineError;
pub use http::{HttpClient, RetryPolicy};
pub use judge::{Judge, JudgeConfig, JudgeItem, JudgeRule, JudgeStats, Judgement, Verdict};
pub use llama_cpp::{LLAMA_SERVER_LAUNCH, LlamaCppEngine};
pub use request::{
    AnswerLine, Completion, FinishReason, GenerateRequest, SamplingParams, WeightVersion,
    end_at_answer_lines, is_valid_logprob,
};
pub use score::{ScoreRequest, TokenScorer};
pub use server::{ManagedServer, Reload};
pub use sglang::SglangEngine;
pub use vllm::{VLLM_LAUNCH, VllmEngine, VllmOptions};
