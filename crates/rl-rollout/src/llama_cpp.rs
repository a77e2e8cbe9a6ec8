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
    WeightsKind, WeightsRef, check_completions,
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
        let mut tokens = Vec::with_capacity(probs.len());
        let mut logprobs = Vec::with_capacity(probs.len());
        for (i, p) in probs.iter().enumerate() {
            let id = p["id"]
                .as_u64()
                .ok_or_else(|| bad(format!("completion_probabilities[{i}] has no token `id`")))?;
            let lp = if tempered {
                p["prob"].as_f64().map(f64::ln)
            } else {
                p["logprob"].as_f64()
            }
            .ok_or_else(|| bad(format!("completion_probabilities[{i}] has no log-prob")))?;
            tokens.push(id as u32);
            logprobs.push(lp as f32);
        }
        if let Some(t) = v["tokens"].as_array() {
            let ids: Vec<u64> = t.iter().filter_map(Value::as_u64).collect();
            if !ids.iter().zip(&tokens).all(|(a, &b)| *a == b as u64) {
                return Err(bad(
                    "`tokens` and `completion_probabilities` disagree".into()
                ));
            }
        }
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
        let out = self.client.post_per_sample(
            "/completion",
            requests,
            self.concurrency,
            Self::body,
            |i, v| self.parse(&requests[i], i, v),
        )?;
        check_completions(&name, requests, &out, self.vocab_size)?;
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
