//! Requests and completions.

use serde::{Deserialize, Serialize};

use crate::EngineError;

/// The number of optimizer steps behind a set of weights (see the crate documentation).
pub type WeightVersion = u64;

/// How to sample. The order of operations on each step's logits is HF's: temperature, then
/// top-k, then top-p, then a draw from the renormalised result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SamplingParams {
    /// Softmax temperature; 0 = greedy.
    pub temperature: f32,
    /// Nucleus sampling mass in (0, 1]; 1 = off.
    pub top_p: f32,
    /// Keep the k most likely tokens; 0 = off.
    pub top_k: usize,
    /// Most tokens generated per sample, a final stop token included.
    pub max_new_tokens: usize,
    /// Ids that end a sample (kept as its last token; finish reason [`FinishReason::Stop`]).
    pub stop_ids: Vec<u32>,
    /// Seed. Engines that honour seeds give the same samples for the same request, seed and
    /// weights; samples of one request draw independent streams of it.
    pub seed: u64,
}

impl Default for SamplingParams {
    fn default() -> Self {
        Self {
            temperature: 1.0,
            top_p: 1.0,
            top_k: 0,
            max_new_tokens: 64,
            stop_ids: Vec::new(),
            seed: 0,
        }
    }
}

impl SamplingParams {
    /// Sampling at a temperature other than 1 (greedy decoding is not tempered).
    pub fn tempered(&self) -> bool {
        self.temperature > 0.0 && self.temperature != 1.0
    }

    /// Top-k or top-p cut the distribution before the draw.
    pub fn truncates(&self) -> bool {
        self.top_k > 0 || self.top_p < 1.0
    }

    /// The temperature that log-probs are computed at: T, or 1 for greedy decoding.
    pub fn logprob_temperature(&self) -> f32 {
        if self.temperature > 0.0 {
            self.temperature
        } else {
            1.0
        }
    }

    /// Checks every field; `engine` names the engine in the error.
    pub fn validate(&self, engine: &str) -> Result<(), EngineError> {
        let bad = |field: &'static str, value: String, expected: &str| {
            Err(EngineError::InvalidRequest {
                engine: engine.to_string(),
                field,
                value,
                expected: expected.to_string(),
            })
        };
        if !(self.temperature.is_finite() && self.temperature >= 0.0) {
            return bad(
                "temperature",
                self.temperature.to_string(),
                "a finite number >= 0 (0 = greedy)",
            );
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return bad("top_p", self.top_p.to_string(), "a number in (0, 1]");
        }
        if self.max_new_tokens == 0 {
            return bad("max_new_tokens", "0".into(), "at least 1");
        }
        Ok(())
    }
}

/// `n` samples of one prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GenerateRequest {
    /// Prompt token ids (already rendered with the chat template).
    pub prompt_ids: Vec<u32>,
    /// Number of samples.
    pub n: usize,
    /// Sampling parameters.
    pub params: SamplingParams,
}

impl GenerateRequest {
    /// Checks the request; `index` is its position in the call.
    pub fn validate(&self, engine: &str, index: usize) -> Result<(), EngineError> {
        if self.prompt_ids.is_empty() {
            return Err(EngineError::InvalidRequest {
                engine: engine.to_string(),
                field: "prompt_ids",
                value: format!("[] (request {index})"),
                expected: "at least one token".into(),
            });
        }
        if self.n == 0 {
            return Err(EngineError::InvalidRequest {
                engine: engine.to_string(),
                field: "n",
                value: format!("0 (request {index})"),
                expected: "at least 1 sample".into(),
            });
        }
        self.params.validate(engine)
    }
}

/// Why a sample ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// It produced a stop id (the last token).
    Stop,
    /// It reached `max_new_tokens`.
    Length,
    /// The engine cut it short (paused, or a weight update): never used for training.
    Abort,
}

/// Whether `x` may stand in [`Completion::logprobs`]: a finite log-prob ≤ 0 (up to 1e-3 of
/// rounding above it), or NaN, "not reported".
pub fn is_valid_logprob(x: f32) -> bool {
    x.is_nan() || (x.is_finite() && x <= 1e-3)
}

/// One sample.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    /// The generated ids (the prompt is not repeated), a final stop id included.
    pub tokens: Vec<u32>,
    /// log π_rollout of each generated token under softmax(logits / T) over the whole
    /// vocabulary (see the crate documentation); NaN where the engine reported none
    /// (llama-server, for a token that ends inside a multi-byte UTF-8 character). Trainers treat
    /// such a token as on-policy: importance weight 1, outside the mismatch statistics.
    pub logprobs: Vec<f32>,
    /// Why it ended.
    pub finish: FinishReason,
    /// The weights it was generated with.
    pub version: WeightVersion,
}
