//! Scoring given tokens: the log-probs a served model assigns to a response it did not
//! generate — what an on-policy distillation teacher behind a server provides
//! (docs/algorithms/distill.md).
//!
//! [`TokenScorer::score`] takes a prompt and a response as token ids and returns
//! log π(y_t | x, y_<t) for every response token, under the served model's untempered
//! distribution (T = 1, no truncation). Implemented by [`crate::VllmEngine`] (`prompt_logprobs`
//! of `/v1/completions`) and [`crate::SglangEngine`] (`input_token_logprobs` of `/generate`).
//! llama.cpp's server cannot: its `/v1/completions` refuses `echo` and its `/completion`
//! reports probabilities of generated tokens only.
//!
//! Each reply names the token id it scored at every position; a reply that scored other ids
//! than the ones sent (another tokenization, an off-by-one position) is an error, not a
//! silently wrong signal.

use crate::{EngineError, is_valid_logprob};

/// A response to score after its prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScoreRequest {
    /// The prompt's ids (at least one: the first response token needs a context).
    pub prompt_ids: Vec<u32>,
    /// The ids whose log-probs are wanted.
    pub response_ids: Vec<u32>,
}

impl ScoreRequest {
    /// The sequence the server reads: prompt then response.
    pub fn sequence(&self) -> Vec<u32> {
        let mut ids = Vec::with_capacity(self.prompt_ids.len() + self.response_ids.len());
        ids.extend_from_slice(&self.prompt_ids);
        ids.extend_from_slice(&self.response_ids);
        ids
    }

    /// Refuses an empty prompt and ids outside `vocab_size`.
    pub fn validate(
        &self,
        engine: &str,
        index: usize,
        vocab_size: usize,
    ) -> Result<(), EngineError> {
        let invalid = |field: &'static str, value: String, expected: String| {
            Err(EngineError::InvalidRequest {
                engine: engine.to_string(),
                field,
                value: format!("{value} (request {index})"),
                expected,
            })
        };
        if self.prompt_ids.is_empty() {
            return invalid(
                "prompt_ids",
                "[]".into(),
                "at least one id: the first response token is scored given the prompt".into(),
            );
        }
        let ids = self.prompt_ids.iter().chain(&self.response_ids);
        if let Some(&id) = ids.into_iter().find(|&&id| id as usize >= vocab_size) {
            return invalid("token id", id.to_string(), format!("< {vocab_size}"));
        }
        Ok(())
    }
}

/// A model behind a server that scores given tokens (its errors name the engine and URL).
pub trait TokenScorer: Send {
    /// One log-prob per response token of every request, in order.
    fn score(&self, requests: &[ScoreRequest]) -> Result<Vec<Vec<f32>>, EngineError>;
}

/// What one reply says of a sequence position: the id the server scored there and its
/// log-prob, or why the entry is missing or not of the engine's shape.
pub(crate) type ScoredEntry = Result<(u32, f64), String>;

/// The response log-probs of request `index`: `entry(position)` read at every response
/// position of `request`'s sequence (prompt then response), each checked to be the id sent
/// and a valid log-prob.
pub(crate) fn response_scores(
    engine: &str,
    index: usize,
    request: &ScoreRequest,
    entry: impl Fn(usize) -> ScoredEntry,
) -> Result<Vec<f32>, EngineError> {
    let bad = |message: String| EngineError::Malformed {
        engine: engine.to_string(),
        request: index,
        message,
    };
    let start = request.prompt_ids.len();
    let mut out = Vec::with_capacity(request.response_ids.len());
    for (t, &sent) in request.response_ids.iter().enumerate() {
        let position = start + t;
        let (id, lp) = entry(position).map_err(|m| bad(format!("position {position}: {m}")))?;
        if id != sent {
            return Err(bad(format!(
                "position {position} scored token id {id}, but {sent} was sent: the server \
                 scored other tokens (another tokenizer, or positions shifted)"
            )));
        }
        let lp = lp as f32;
        if !is_valid_logprob(lp) || lp.is_nan() {
            return Err(bad(format!(
                "position {position}: log-prob {lp} is not a finite value <= 0"
            )));
        }
        out.push(lp);
    }
    Ok(out)
}
