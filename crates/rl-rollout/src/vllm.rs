//! vLLM's OpenAI-compatible server as a rollout engine (what prime-rl and SkyRL drive):
//! - `POST /v1/completions` with a token-id `prompt`, `n = 1`, `logprobs = 0` (the sampled token's
//!   log-prob only), `return_token_ids = true` (vLLM ≥ 0.10.2) and a per-sample `seed`; the reply's
//!   `choices[0]` has `token_ids`, `logprobs.token_logprobs` and `finish_reason` (`stop`,
//!   `length` or `abort`). One request per sample, at most `concurrency` in flight: vLLM batches
//!   concurrent requests itself, and one request per sample gives every sample its own seed
//!   (a list of identical prompts in one request would share the request's seed).
//! - scoring given tokens ([`crate::TokenScorer`], a distillation teacher): the same route with
//!   prompt + response as the `prompt`, `max_tokens = 1` and `prompt_logprobs = 1`; the reply's
//!   `choices[0].prompt_logprobs[p]` maps the id at position p (and the top-1 id) to its
//!   `{logprob, rank, decoded_token}`, with `null` at position 0, and `prompt_token_ids` (vLLM
//!   ≥ 0.10.2) echoes the ids read. Prompt log-probs are of the raw logits (T = 1);
//! - `GET /v1/models` for the served model's name (the `model` field every request needs);
//! - `GET /health`.
//!
//! [`VllmEngine::probe`] checks at start that the server returns token ids and log-probs and
//! fails with a message naming the missing capability otherwise.
//!
//! Weights: vLLM's in-place weight-transfer routes move GPU tensors (NCCL, CUDA IPC), which a
//! process without CUDA cannot send; from a folder of HF safetensors the route that works with
//! every vLLM version is a restart of `vllm serve FOLDER` ([`crate::ManagedServer`] with
//! [`VLLM_LAUNCH`]), which the caller passes as the [`crate::Reload`] hook. Without a hook the
//! engine refuses weight updates with a typed error.
//!
//! Log-probs: vLLM reports log-probs of the raw logits by default (`--logprobs-mode
//! raw_logprobs`), which is the contract of [`crate::Completion::logprobs`] at T = 1 and for
//! greedy decoding. At T ≠ 1 the server must run with `--logprobs-mode processed_logprobs` (the
//! distribution after temperature) and the engine must be told so (`processed_logprobs`); then,
//! as for llama.cpp, top-k and top-p must be off, since vLLM would report the truncated
//! distribution. Anything else is refused before a request is sent.
//!
//! Tested against a scripted server that answers in the documented format
//! (`crates/rl-rollout/tests/http.rs`), not against a real vLLM, which needs a GPU.

use serde_json::{Value, json};

use crate::http::{HttpClient, RetryPolicy};
use crate::score::{ScoredEntry, response_scores};
use crate::server::{Reload, reload_directory};
use crate::{
    Completion, EngineError, FinishReason, GenerateRequest, RolloutEngine, ScoreRequest,
    TokenScorer, WeightVersion, WeightsKind, WeightsRef, check_completions, end_at_answer_lines,
};

/// How [`crate::ManagedServer`] starts vLLM on a model: `vllm serve MODEL …`.
pub const VLLM_LAUNCH: &[&str] = &["serve"];

/// What a [`VllmEngine`] needs to know about its server.
#[derive(Clone, Debug, Default)]
pub struct VllmOptions {
    /// The model name in `GET /v1/models`; `None`: ask the server.
    pub model: Option<String>,
    /// Requests in flight (0 counts as 1).
    pub concurrency: usize,
    /// The server runs with `--logprobs-mode processed_logprobs` (needed for T ≠ 1).
    pub processed_logprobs: bool,
}

/// A vLLM server client.
pub struct VllmEngine {
    client: HttpClient,
    model: String,
    version: WeightVersion,
    vocab_size: usize,
    concurrency: usize,
    processed_logprobs: bool,
    reload: Option<Reload>,
}

impl VllmEngine {
    /// A client of the server at `url` serving `version` of a model with `vocab_size` ids.
    /// `reload` performs weight updates (none: the engine refuses them).
    pub fn new(
        url: &str,
        policy: RetryPolicy,
        version: WeightVersion,
        vocab_size: usize,
        options: VllmOptions,
        reload: Option<Reload>,
    ) -> Result<Self, EngineError> {
        let client = HttpClient::new("vllm", url, policy)?;
        let model = match options.model {
            Some(m) => m,
            None => Self::served_model(&client)?,
        };
        Ok(Self {
            client,
            model,
            version,
            vocab_size,
            concurrency: options.concurrency.max(1),
            processed_logprobs: options.processed_logprobs,
            reload,
        })
    }

    /// The first model of `GET /v1/models`.
    fn served_model(client: &HttpClient) -> Result<String, EngineError> {
        let reply = client.get("/v1/models")?;
        reply["data"][0]["id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| EngineError::Malformed {
                engine: format!("vllm {}", client.base()),
                request: 0,
                message: format!("`GET /v1/models` lists no model id: {reply}"),
            })
    }

    /// The model name sent with every request.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// `GET /health` (with the client's retries).
    pub fn health(&self) -> Result<(), EngineError> {
        self.client.get("/health").map(|_| ())
    }

    /// One greedy token of `prompt_ids`: fails, naming the capability, when the server does not
    /// return token ids (`return_token_ids`, vLLM ≥ 0.10.2) or log-probs.
    pub fn probe(&self, prompt_ids: &[u32]) -> Result<(), EngineError> {
        let name = self.name();
        let body = json!({
            "model": self.model,
            "prompt": prompt_ids,
            "max_tokens": 1,
            "temperature": 0.0,
            "logprobs": 0,
            "return_token_ids": true,
        });
        let reply = self.client.post("/v1/completions", &body)?;
        let choice = &reply["choices"][0];
        let missing = |what: &str| EngineError::Generation {
            engine: name.clone(),
            message: format!(
                "the server does not return {what}; this client needs vLLM >= 0.10.2 \
                 (`return_token_ids`) with log-probs enabled (`--max-logprobs` >= 0)"
            ),
        };
        if !choice["token_ids"].is_array() {
            return Err(missing("token ids (`choices[].token_ids`)"));
        }
        if !choice["logprobs"]["token_logprobs"].is_array() {
            return Err(missing("log-probs (`choices[].logprobs.token_logprobs`)"));
        }
        Ok(())
    }

    fn body(&self, r: &GenerateRequest, seed: u64) -> Value {
        let p = &r.params;
        json!({
            "model": self.model,
            "prompt": r.prompt_ids,
            "n": 1,
            "max_tokens": p.max_new_tokens,
            "temperature": p.temperature,
            "top_p": p.top_p,
            "top_k": if p.top_k == 0 { -1 } else { p.top_k as i64 },
            "min_p": 0.0,
            "presence_penalty": 0.0,
            "frequency_penalty": 0.0,
            "repetition_penalty": 1.0,
            "seed": seed,
            "logprobs": 0,
            "return_token_ids": true,
            "stop_token_ids": p.stop_ids,
            "ignore_eos": false,
            "skip_special_tokens": false,
            "stream": false,
        })
    }

    /// Refuses sampling settings whose log-probs this server cannot report (module docs).
    fn check_logprob_mode(&self, index: usize, r: &GenerateRequest) -> Result<(), EngineError> {
        let p = &r.params;
        if !p.tempered() {
            return Ok(());
        }
        let expected = if !self.processed_logprobs {
            "T = 1 or greedy, or a server started with `--logprobs-mode processed_logprobs` \
             and the engine told so (`processed_logprobs = true`): the default mode reports \
             log-probs of the untempered logits"
        } else if p.truncates() {
            "no top-k/top-p at T != 1: vLLM's processed log-probs are of the truncated \
             distribution"
        } else {
            return Ok(());
        };
        Err(EngineError::InvalidRequest {
            engine: self.name(),
            field: "temperature",
            value: format!(
                "{} with top_k {} / top_p {} (request {index})",
                p.temperature, p.top_k, p.top_p
            ),
            expected: expected.into(),
        })
    }

    /// One completion from a `/v1/completions` reply with `n = 1`.
    fn parse(&self, index: usize, v: &Value) -> Result<Completion, EngineError> {
        let bad = |message: String| EngineError::Malformed {
            engine: self.name(),
            request: index,
            message,
        };
        let choices = v["choices"]
            .as_array()
            .ok_or_else(|| bad("no `choices` list".into()))?;
        let [choice] = choices.as_slice() else {
            return Err(bad(format!("{} choices for n = 1", choices.len())));
        };
        let ids = choice["token_ids"].as_array().ok_or_else(|| {
            bad("no `choices[0].token_ids` (vLLM >= 0.10.2 with return_token_ids)".into())
        })?;
        let mut tokens = Vec::with_capacity(ids.len());
        for (i, id) in ids.iter().enumerate() {
            let id = id
                .as_u64()
                .filter(|&id| id <= u32::MAX as u64)
                .ok_or_else(|| bad(format!("token_ids[{i}] is not a token id: {id}")))?;
            tokens.push(id as u32);
        }
        let lps = choice["logprobs"]["token_logprobs"]
            .as_array()
            .ok_or_else(|| bad("no `choices[0].logprobs.token_logprobs`".into()))?;
        let mut logprobs = Vec::with_capacity(lps.len());
        for (i, lp) in lps.iter().enumerate() {
            let lp = lp
                .as_f64()
                .ok_or_else(|| bad(format!("token_logprobs[{i}] is not a number: {lp}")))?;
            logprobs.push(lp as f32);
        }
        let finish = match choice["finish_reason"].as_str() {
            Some("stop") => FinishReason::Stop,
            Some("length") => FinishReason::Length,
            Some("abort") => FinishReason::Abort,
            other => {
                return Err(bad(format!(
                    "finish_reason is {other:?}, expected stop, length or abort"
                )));
            }
        };
        Ok(Completion {
            tokens,
            logprobs,
            finish,
            version: self.version,
        })
    }
}

impl VllmEngine {
    fn score_body(&self, sequence: &[u32]) -> Value {
        json!({
            "model": self.model,
            "prompt": sequence,
            "max_tokens": 1,
            "temperature": 1.0,
            "prompt_logprobs": 1,
            "return_token_ids": true,
            "skip_special_tokens": false,
            "stream": false,
        })
    }

    /// The response log-probs of request `index` from its `/v1/completions` reply.
    fn parse_scores(
        &self,
        index: usize,
        request: &ScoreRequest,
        sequence: &[u32],
        v: &Value,
    ) -> Result<Vec<f32>, EngineError> {
        let bad = |message: String| EngineError::Malformed {
            engine: RolloutEngine::name(self),
            request: index,
            message,
        };
        let choice = &v["choices"][0];
        let entries = choice["prompt_logprobs"].as_array().ok_or_else(|| {
            bad("no `choices[0].prompt_logprobs` (was prompt_logprobs honoured?)".into())
        })?;
        if entries.len() != sequence.len() {
            return Err(bad(format!(
                "{} prompt log-probs for {} ids sent",
                entries.len(),
                sequence.len()
            )));
        }
        if let Some(read) = choice["prompt_token_ids"].as_array() {
            let same = read.len() == sequence.len()
                && read
                    .iter()
                    .zip(sequence)
                    .all(|(a, &b)| a.as_u64() == Some(b as u64));
            if !same {
                return Err(bad(
                    "`prompt_token_ids` differ from the ids sent: the server read another \
                     sequence"
                        .into(),
                ));
            }
        }
        let entry = |position: usize| -> ScoredEntry {
            let id = sequence[position];
            let scored = entries[position]
                .as_object()
                .ok_or_else(|| format!("prompt_logprobs entry is {}", entries[position]))?;
            let lp = scored
                .get(&id.to_string())
                .ok_or_else(|| {
                    let keys: Vec<&String> = scored.keys().collect();
                    format!("no log-prob for the id sent, {id} (the entry scores {keys:?})")
                })?
                .get("logprob")
                .and_then(Value::as_f64)
                .ok_or_else(|| format!("the entry of id {id} has no numeric `logprob`"))?;
            Ok((id, lp))
        };
        response_scores(&RolloutEngine::name(self), index, request, entry)
    }
}

impl TokenScorer for VllmEngine {
    fn score(&self, requests: &[ScoreRequest]) -> Result<Vec<Vec<f32>>, EngineError> {
        let name = RolloutEngine::name(self);
        for (i, r) in requests.iter().enumerate() {
            r.validate(&name, i, self.vocab_size)?;
        }
        let sequences: Vec<Vec<u32>> = requests.iter().map(ScoreRequest::sequence).collect();
        let bodies: Vec<Value> = sequences.iter().map(|s| self.score_body(s)).collect();
        let replies = self
            .client
            .post_many("/v1/completions", &bodies, self.concurrency);
        requests
            .iter()
            .zip(&sequences)
            .zip(replies)
            .enumerate()
            .map(|(i, ((r, seq), reply))| self.parse_scores(i, r, seq, &reply?))
            .collect()
    }
}

impl RolloutEngine for VllmEngine {
    fn name(&self) -> String {
        format!("vllm {}", self.client.base())
    }

    fn generate(
        &mut self,
        requests: &[GenerateRequest],
    ) -> Result<Vec<Vec<Completion>>, EngineError> {
        let name = self.name();
        for (i, r) in requests.iter().enumerate() {
            r.validate(&name, i)?;
            self.check_logprob_mode(i, r)?;
        }
        let mut out = self.client.post_per_sample(
            "/v1/completions",
            requests,
            self.concurrency,
            |r, seed| self.body(r, seed),
            |i, v| self.parse(i, v),
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
            "start vLLM through the trainer (`server`) to sync weights",
            weights,
            version,
        )?;
        // A restarted `vllm serve FOLDER` names its model after the folder.
        self.model = Self::served_model(&self.client)?;
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
