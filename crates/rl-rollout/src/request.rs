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
    /// A sample also ends with its answer line (see [`AnswerLine`]); `None` = off.
    pub answer_line: Option<AnswerLine>,
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
            answer_line: None,
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

/// A sample ends at the end of its answer line: after a `markers` id (a token whose text holds
/// the line's opening, e.g. `####` of the `#### 42` that ends a few-shot answer), the first
/// `line_ends` id (a token whose text holds a newline) ends it, kept as its last token, with
/// [`FinishReason::Stop`]. A base model that has written its answer line otherwise often writes
/// on — another question, more `####` lines — and a verifier that reads the last `#### N` then
/// scores the last of several guesses. The in-process engine stops sampling there; the HTTP
/// engines cut what the server returned ([`end_at_answer_lines`]), so every engine gives the same
/// tokens.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerLine {
    /// Ids that open the answer line.
    pub markers: Vec<u32>,
    /// Ids that end a line.
    pub line_ends: Vec<u32>,
}

impl AnswerLine {
    /// Whether `token`, sampled after the tokens that left `opened` as it is, ends the sample;
    /// sets `opened` once a marker has been sampled. The one rule of every engine.
    pub fn ends(&self, opened: &mut bool, token: u32) -> bool {
        if *opened && self.line_ends.contains(&token) {
            return true;
        }
        if self.markers.contains(&token) {
            *opened = true;
        }
        false
    }

    /// The length of `tokens` up to and including the token that ends its answer line; `None`
    /// when no token does.
    pub fn end(&self, tokens: &[u32]) -> Option<usize> {
        let mut opened = false;
        tokens
            .iter()
            .position(|&t| self.ends(&mut opened, t))
            .map(|i| i + 1)
    }
}

/// Cuts each completion after its answer line where the request asks for one
/// ([`SamplingParams::answer_line`]): tokens and log-probs after it dropped, the finish reason
/// [`FinishReason::Stop`]. Engines that cannot stop there themselves call it on what they return.
pub fn end_at_answer_lines(requests: &[GenerateRequest], replies: &mut [Vec<Completion>]) {
    for (req, rep) in requests.iter().zip(replies) {
        let Some(line) = &req.params.answer_line else {
            continue;
        };
        for c in rep.iter_mut().filter(|c| c.finish != FinishReason::Abort) {
            if let Some(len) = line.end(&c.tokens) {
                c.tokens.truncate(len);
                c.logprobs.truncate(len);
                c.finish = FinishReason::Stop;
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Markers 7 (`####`) and 9 (`▁####`); line ends 3 (`\n`) and 4 (`\n\n`).
    fn line() -> AnswerLine {
        AnswerLine {
            markers: vec![7, 9],
            line_ends: vec![3, 4],
        }
    }

    #[test]
    fn the_answer_line_ends_at_the_first_line_end_after_a_marker() {
        let l = line();
        // A line end before any marker does not end: the worked steps span lines.
        assert_eq!(l.end(&[5, 3, 6, 7, 1, 2, 3, 7, 8, 3]), Some(7));
        assert_eq!(l.end(&[9, 4]), Some(2));
        assert_eq!(l.end(&[5, 3, 6, 7, 1, 2]), None);
        assert_eq!(l.end(&[5, 3, 6]), None);
        assert_eq!(l.end(&[]), None);
        // A token that is both closes nothing before it opens.
        let both = AnswerLine {
            markers: vec![3],
            line_ends: vec![3],
        };
        assert_eq!(both.end(&[3, 5, 3]), Some(3));
    }

    #[test]
    fn completions_are_cut_after_their_answer_line() {
        let params = SamplingParams {
            answer_line: Some(line()),
            ..SamplingParams::default()
        };
        let req = |params: SamplingParams| GenerateRequest {
            prompt_ids: vec![1],
            n: 3,
            params,
        };
        let comp = |tokens: Vec<u32>, finish| Completion {
            logprobs: tokens.iter().map(|&t| -(t as f32)).collect(),
            tokens,
            finish,
            version: 2,
        };
        let sampled = vec![
            comp(vec![5, 7, 1, 3, 6, 7, 2], FinishReason::Length),
            comp(vec![5, 7, 1], FinishReason::Length),
            comp(vec![5, 7, 1, 3, 6], FinishReason::Abort),
        ];
        let requests = [req(params), req(SamplingParams::default())];
        let mut replies = vec![sampled.clone(), sampled.clone()];
        end_at_answer_lines(&requests, &mut replies);
        assert_eq!(
            replies[0],
            vec![
                comp(vec![5, 7, 1, 3], FinishReason::Stop),
                comp(vec![5, 7, 1], FinishReason::Length),
                // An aborted sample is never trained on: left as it came.
                comp(vec![5, 7, 1, 3, 6], FinishReason::Abort),
            ]
        );
        assert_eq!(replies[1], sampled, "no answer line asked for");
    }
}
