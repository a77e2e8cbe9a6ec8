//! llama.cpp's `llama-server` as a rollout engine: `POST /completion` with a token-id prompt,
//! one request per sample (the server batches concurrent requests over its `-np` slots), ids
//! and log-probs from the reply; weights are synchronised by re-exporting the GGUF file and
//! restarting a server this process manages ([`crate::ManagedServer`], launched with
//! [`LLAMA_SERVER_LAUNCH`]).
//!
//! Log-probs: at T = 1 (and for greedy decoding) llama-server's `completion_probabilities[i]
//! .logprob` is log softmax(logits) — the contract of [`crate::Completion::logprobs`]. At T ≠ 1
//! the engine asks for `post_sampling_probs`, which are the probabilities of the distribution
//! sampled from; with top-k/top-p/min-p off that is softmax(logits / T) over the whole
//! vocabulary. T ≠ 1 together with top-k or top-p is refused: the server can report only the
//! truncated distribution then.

use std::time::Duration;

use serde_json::{Value, json};

use crate::http::{HttpClient, RetryPolicy};
use crate::server::{Reload, reload_directory, wait_healthy};
use crate::{
    Completion, EngineError, FinishReason, GenerateRequest, RolloutEngine, WeightVersion,
    WeightsKind, WeightsRef, check_completions, end_at_answer_lines,
};

/// How [`crate::ManagedServer`] starts llama-server on a model: `llama-server -m MODEL …`.
pub const LLAMA_SERVER_LAUNCH: &[&str] = &["-m"];

/// A llama-server client.
pub struct LlamaCppEngine {
    client: HttpClient,
    version: WeightVersion,
    vocab_size: usize,
    concurrency: usize,
    reload: Option<Reload>,
}

impl LlamaCppEngine {
    /// A client of the server at `url`, serving `version`, for a model with `vocab_size` ids;
    /// at most `concurrency` requests in flight. `reload` performs weight updates (none: the
    /// engine refuses them).
    pub fn new(
        url: &str,
        policy: RetryPolicy,
        version: WeightVersion,
        vocab_size: usize,
        concurrency: usize,
        reload: Option<Reload>,
    ) -> Result<Self, EngineError> {
        Ok(Self {
            client: HttpClient::new("llama.cpp", url, policy)?,
            version,
            vocab_size,
            concurrency: concurrency.max(1),
            reload,
        })
    }

    /// `GET /health` until it answers 200 or `wait` passes.
    pub fn wait_healthy(&self, wait: Duration) -> Result<(), EngineError> {
        wait_healthy(&self.client, wait)
    }

    fn body(r: &GenerateRequest, seed: u64) -> Value {
        let p = &r.params;
        let tempered = p.tempered();
        json!({
            "prompt": r.prompt_ids,
            "n_predict": p.max_new_tokens,
            "temperature": p.temperature,
            "top_k": p.top_k,
            "top_p": p.top_p,
            "min_p": 0.0,
            "typical_p": 1.0,
            "repeat_penalty": 1.0,
            "presence_penalty": 0.0,
            "frequency_penalty": 0.0,
            "dry_multiplier": 0.0,
            "xtc_probability": 0.0,
            "seed": seed,
            "n_probs": 1,
            "post_sampling_probs": tempered,
            "return_tokens": true,
            "cache_prompt": false,
            "stream": false,
        })
    }

    /// One completion from a `/completion` reply.
    fn parse(
        &self,
        r: &GenerateRequest,
        index: usize,
        v: &Value,
    ) -> Result<Completion, EngineError> {
        let bad = |message: String| EngineError::Malformed {
            engine: format!("llama.cpp {}", self.client.base()),
            request: index,
            message,
        };
        let probs = v["completion_probabilities"]
            .as_array()
            .ok_or_else(|| bad("no `completion_probabilities` (log-probs) in the reply".into()))?;
        let tempered = r.params.tempered();
        let mut ids = Vec::with_capacity(probs.len());
        let mut lps = Vec::with_capacity(probs.len());
        for (i, p) in probs.iter().enumerate() {
            let id = p["id"]
                .as_u64()
                .and_then(|id| u32::try_from(id).ok())
                .ok_or_else(|| bad(format!("completion_probabilities[{i}] has no token `id`")))?;
            let lp = if tempered {
                p["prob"].as_f64().map(f64::ln)
            } else {
                p["logprob"].as_f64()
            }
            .ok_or_else(|| bad(format!("completion_probabilities[{i}] has no log-prob")))?;
            ids.push(id);
            lps.push(lp as f32);
        }
        let (tokens, logprobs) = match v["tokens"].as_array() {
            None => (ids, lps),
            Some(t) => {
                let tokens = t
                    .iter()
                    .map(|x| x.as_u64().and_then(|id| u32::try_from(id).ok()))
                    .collect::<Option<Vec<u32>>>()
                    .ok_or_else(|| bad("`tokens` holds something other than token ids".into()))?;
                let logprobs = align_logprobs(&tokens, &ids, &lps).ok_or_else(|| {
                    bad(format!(
                        "`completion_probabilities` is not a subsequence of `tokens`: tokens \
                         {tokens:?}, completion_probabilities ids {ids:?}"
                    ))
                })?;
                (tokens, logprobs)
            }
        };
        let finish = match v["stop_type"].as_str() {
            Some("eos") | Some("word") => FinishReason::Stop,
            Some("limit") => FinishReason::Length,
            Some("none") | None => {
                if v["stopped_eos"].as_bool() == Some(true) {
                    FinishReason::Stop
                } else if v["stopped_limit"].as_bool() == Some(true) {
                    FinishReason::Length
                } else {
                    FinishReason::Abort
                }
            }
            Some(other) => return Err(bad(format!("unknown stop_type `{other}`"))),
        };
        Ok(Completion {
            tokens,
            logprobs,
            finish,
            version: self.version,
        })
    }
}

/// The log-prob of each of `tokens` from llama-server's `completion_probabilities` (`ids`,
/// `lps`), which can miss tokens: the server records a token's probability only when the text
/// generated so far is valid UTF-8 again (`process_token` in tools/server/server-context.cpp), so
/// a token that ends inside a multi-byte character has none, and the entries are a subsequence of
/// `tokens`. A token gets its entry's log-prob where the subsequence fixes the position (the
/// leftmost and the rightmost embedding agree) and NaN, "not reported", otherwise. `None`: the
/// entries are not a subsequence of `tokens`.
fn align_logprobs(tokens: &[u32], ids: &[u32], lps: &[f32]) -> Option<Vec<f32>> {
    let leftmost = embed(tokens.iter(), ids.iter())?;
    let rightmost: Vec<usize> = embed(tokens.iter().rev(), ids.iter().rev())?
        .into_iter()
        .rev()
        .map(|j| tokens.len() - 1 - j)
        .collect();
    let mut out = vec![f32::NAN; tokens.len()];
    for ((&l, &r), &lp) in leftmost.iter().zip(&rightmost).zip(lps) {
        if l == r {
            out[l] = lp;
        }
    }
    Some(out)
}

/// Greedy positions in `tokens` of each of `ids` in order, or `None` if `ids` is not a
/// subsequence of `tokens`.
fn embed<'a>(
    tokens: impl Iterator<Item = &'a u32>,
    ids: impl Iterator<Item = &'a u32>,
) -> Option<Vec<usize>> {
    let mut tokens = tokens.enumerate();
    ids.map(|id| tokens.find(|(_, t)| *t == id).map(|(j, _)| j))
        .collect()
}

impl RolloutEngine for LlamaCppEngine {
    fn name(&self) -> String {
        format!("llama.cpp {}", self.client.base())
    }

    fn generate(
        &mut self,
        requests: &[GenerateRequest],
    ) -> Result<Vec<Vec<Completion>>, EngineError> {
        let name = self.name();
        for (i, r) in requests.iter().enumerate() {
            r.validate(&name, i)?;
            let p = &r.params;
            if p.tempered() && p.truncates() {
                return Err(EngineError::InvalidRequest {
                    engine: name,
                    field: "temperature",
                    value: format!(
                        "{} with top_k {} / top_p {}",
                        p.temperature, p.top_k, p.top_p
                    ),
                    expected: "T = 1, or no top-k/top-p: llama-server reports only the truncated \
                               distribution's probabilities at T != 1"
                        .into(),
                });
            }
        }
        let mut out = self.client.post_per_sample(
            "/completion",
            requests,
            self.concurrency,
            Self::body,
            |i, v| self.parse(&requests[i], i, v),
        )?;
        check_completions(&name, requests, &out, self.vocab_size)?;
        end_at_answer_lines(requests, &mut out);
        Ok(out)
    }

    fn update_weights(
        &mut self,
        weights: WeightsRef,
        version: WeightVersion,
    ) -> Result<WeightVersion, EngineError> {
        reload_directory(
            &self.name(),
            self.reload.as_mut(),
            "this engine cannot take new weights",
            weights,
            version,
        )?;
        self.version = version;
        Ok(version)
    }

    fn version(&self) -> WeightVersion {
        self.version
    }

    fn weights_kind(&self) -> WeightsKind {
        WeightsKind::Directory
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reply of llama-server (llama-cpp-python 0.3.36's llama.cpp) to SmolLM2-135M-Instruct at
    /// T = 1: 22 generated tokens, 18 probability entries. Tokens 40303, 10813 and 238 are the
    /// leading pieces of multi-byte characters (completed by 126, 231 and 125), so the text after
    /// them is not valid UTF-8 and the server recorded no probability for them.
    #[test]
    fn tokens_inside_a_character_get_no_logprob() {
        let tokens = [
            8792, 3353, 8631, 284, 6168, 2026, 40303, 126, 10813, 238, 231, 327, 2408, 1372, 551,
            4806, 16275, 1732, 40303, 125, 30, 2,
        ];
        let ids = [
            8792, 3353, 8631, 284, 6168, 2026, 126, 231, 327, 2408, 1372, 551, 4806, 16275, 1732,
            125, 30, 2,
        ];
        let lps: Vec<f32> = (0..ids.len()).map(|k| -(k as f32) - 0.5).collect();
        let out = align_logprobs(&tokens, &ids, &lps).unwrap();
        let missing: Vec<usize> = (0..out.len()).filter(|&j| out[j].is_nan()).collect();
        assert_eq!(missing, [6, 8, 9, 18]);
        let reported: Vec<f32> = out.iter().copied().filter(|x| !x.is_nan()).collect();
        assert_eq!(reported, lps);
    }

    /// Where the entry's position is not fixed (token 7 twice, one entry for 7: the first 7 may
    /// be the unreported piece, or the second), neither token gets the log-prob.
    #[test]
    fn an_ambiguous_position_is_not_guessed() {
        let out = align_logprobs(&[5, 7, 7, 9], &[5, 7, 9], &[-1.0, -2.0, -3.0]).unwrap();
        assert_eq!(out[0], -1.0);
        assert!(out[1].is_nan() && out[2].is_nan());
        assert_eq!(out[3], -3.0);
        let all = align_logprobs(&[5, 7, 9], &[5, 7, 9], &[-1.0, -2.0, -3.0]).unwrap();
        assert_eq!(all, [-1.0, -2.0, -3.0]);
    }

    #[test]
    fn entries_that_are_not_a_subsequence_are_refused() {
        assert!(align_logprobs(&[5, 7], &[7, 5], &[-1.0, -2.0]).is_none());
        assert!(align_logprobs(&[5], &[5, 5], &[-1.0, -2.0]).is_none());
    }
}
