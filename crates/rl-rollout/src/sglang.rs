//! SGLang's native server API as a rollout engine (what verl and slime use):
//! - `POST /generate` with `input_ids` (one list per sample: the prompt repeated n times, so the
//!   server batches them), `sampling_params` and `return_logprob: true`; the reply is a list in
//!   the same order, each with `meta_info.output_token_logprobs = [[logprob, id, text?], …]` and
//!   `meta_info.finish_reason = {"type": "stop" | "length" | "abort", …}`;
//! - `POST /update_weights_from_disk {"model_path", "weight_version"}` (the trainer's folder of
//!   HF safetensors on a file system the server can read) → `{"success", "message"}`;
//! - scoring given tokens ([`crate::TokenScorer`], a distillation teacher): the same route with
//!   prompt + response as `input_ids`, `max_new_tokens = 1`, `return_logprob: true` and
//!   `logprob_start_len` = the prompt's length − 1; `meta_info.input_token_logprobs` then lists
//!   `[logprob, id, text?]` for the ids from that position on, the first entry's log-prob
//!   `null` (SGLang pads the first one), so entry k + 1 is response token k;
//! - `GET /health`.
//!
//! Log-probs: SGLang reports them after temperature scaling unless the server runs with
//! `SGLANG_RETURN_ORIGINAL_LOGPROB=1` — leave that unset to match `Completion::logprobs`. The
//! trainer's `logprob_mismatch` metric shows a wrong setting at once (at T ≠ 1 the gap is of the
//! order of |1 − 1/T| times the logit scale). Seeds are not sent: SGLang's sampling is seeded per
//! server (`--random-seed`), not per request, in the versions this client was written against.
//!
//! Tested against a scripted server that answers in the documented format
//! (`crates/rl-rollout/tests/sglang.rs`), not against a real SGLang, which needs a GPU.

use serde_json::{Value, json};

use crate::http::{HttpClient, RetryPolicy};
use crate::score::{ScoredEntry, response_scores};
use crate::{
    Completion, EngineError, FinishReason, GenerateRequest, RolloutEngine, ScoreRequest,
    TokenScorer, WeightVersion, WeightsKind, WeightsRef, check_completions, end_at_answer_lines,
};

/// An SGLang server client.
pub struct SglangEngine {
    client: HttpClient,
    version: WeightVersion,
    vocab_size: usize,
}

impl SglangEngine {
    /// A client of the server at `url`, which serves `version` of a model with `vocab_size` ids.
    pub fn new(
        url: &str,
        policy: RetryPolicy,
        version: WeightVersion,
        vocab_size: usize,
    ) -> Result<Self, EngineError> {
        Ok(Self {
            client: HttpClient::new("sglang", url, policy)?,
            version,
            vocab_size,
        })
    }

    /// `GET /health` (with the client's retries).
    pub fn health(&self) -> Result<(), EngineError> {
        self.client.get("/health").map(|_| ())
    }

    /// One batched `POST /generate` of `body`, whose reply must be a list of `expected`
    /// outputs (`unit` names what they are, for the error).
    fn post_batch(
        &self,
        body: &Value,
        expected: usize,
        unit: &str,
    ) -> Result<Vec<Value>, EngineError> {
        let bad = |message: String| EngineError::Malformed {
            engine: RolloutEngine::name(self),
            request: 0,
            message,
        };
        let reply = self.client.post("/generate", body)?;
        let Value::Array(items) = reply else {
            return Err(bad("a batched /generate must answer with a list".into()));
        };
        if items.len() != expected {
            return Err(bad(format!(
                "{} outputs for {expected} {unit}",
                items.len()
            )));
        }
        Ok(items)
    }

    fn sampling_params(r: &GenerateRequest) -> Value {
        let p = &r.params;
        json!({
            "temperature": p.temperature,
            "top_p": p.top_p,
            "top_k": if p.top_k == 0 { -1 } else { p.top_k as i64 },
            "min_p": 0.0,
            "max_new_tokens": p.max_new_tokens,
            "stop_token_ids": p.stop_ids,
            "skip_special_tokens": false,
            "no_stop_trim": true,
        })
    }

    fn parse(&self, index: usize, v: &Value) -> Result<Completion, EngineError> {
        let bad = |message: String| EngineError::Malformed {
            engine: self.name(),
            request: index,
            message,
        };
        let meta = &v["meta_info"];
        let lps = meta["output_token_logprobs"].as_array().ok_or_else(|| {
            bad("no `meta_info.output_token_logprobs` (was return_logprob honoured?)".into())
        })?;
        let mut tokens = Vec::with_capacity(lps.len());
        let mut logprobs = Vec::with_capacity(lps.len());
        for (i, e) in lps.iter().enumerate() {
            let (Some(lp), Some(id)) = (e[0].as_f64(), e[1].as_u64()) else {
                return Err(bad(format!(
                    "output_token_logprobs[{i}] is not [logprob, token_id, …]: {e}"
                )));
            };
            logprobs.push(lp as f32);
            tokens.push(id as u32);
        }
        if let Some(ids) = v["output_ids"].as_array() {
            let ids: Vec<u64> = ids.iter().filter_map(Value::as_u64).collect();
            if ids.len() != tokens.len() || ids.iter().zip(&tokens).any(|(a, &b)| *a != b as u64) {
                return Err(bad(
                    "`output_ids` and `output_token_logprobs` disagree".into()
                ));
            }
        }
        let finish = match meta["finish_reason"]["type"].as_str() {
            Some("stop") => FinishReason::Stop,
            Some("length") => FinishReason::Length,
            Some("abort") => FinishReason::Abort,
            other => {
                return Err(bad(format!(
                    "meta_info.finish_reason.type is {other:?}, expected stop, length or abort"
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

impl TokenScorer for SglangEngine {
    fn score(&self, requests: &[ScoreRequest]) -> Result<Vec<Vec<f32>>, EngineError> {
        let name = RolloutEngine::name(self);
        for (i, r) in requests.iter().enumerate() {
            r.validate(&name, i, self.vocab_size)?;
        }
        if requests.is_empty() {
            return Ok(Vec::new());
        }
        let starts: Vec<usize> = requests.iter().map(|r| r.prompt_ids.len() - 1).collect();
        let sequences: Vec<Vec<u32>> = requests.iter().map(ScoreRequest::sequence).collect();
        let body = json!({
            "input_ids": sequences,
            "sampling_params": vec![json!({"max_new_tokens": 1, "temperature": 1.0}); requests.len()],
            "return_logprob": true,
            "logprob_start_len": starts,
            "stream": false,
        });
        let items = self.post_batch(&body, requests.len(), "sequences")?;
        let vocab = self.vocab_size;
        requests
            .iter()
            .zip(&items)
            .zip(starts.iter().zip(&sequences))
            .enumerate()
            .map(|(i, ((r, v), (&start, sequence)))| {
                let entries = v["meta_info"]["input_token_logprobs"]
                    .as_array()
                    .ok_or_else(|| EngineError::Malformed {
                        engine: name.clone(),
                        request: i,
                        message: "no `meta_info.input_token_logprobs` (was logprob_start_len \
                                  honoured?)"
                            .into(),
                    })?;
                let expected = sequence.len() - start;
                if entries.len() != expected {
                    return Err(EngineError::Malformed {
                        engine: name.clone(),
                        request: i,
                        message: format!(
                            "{} input log-probs from position {start}, expected {expected}",
                            entries.len()
                        ),
                    });
                }
                let entry = |position: usize| -> ScoredEntry {
                    let e = &entries[position - start];
                    let (Some(lp), Some(id)) = (e[0].as_f64(), e[1].as_u64()) else {
                        return Err(format!(
                            "input_token_logprobs entry is not [logprob, id, …]: {e}"
                        ));
                    };
                    // SGLang reports ids >= its vocabulary size - 1 as 0.
                    let sent = sequence[position];
                    let id = if id == 0 && sent as usize + 1 >= vocab {
                        sent
                    } else {
                        id as u32
                    };
                    Ok((id, lp))
                };
                response_scores(&name, i, r, entry)
            })
            .collect()
    }
}

impl RolloutEngine for SglangEngine {
    fn name(&self) -> String {
        format!("sglang {}", self.client.base())
    }

    fn generate(
        &mut self,
        requests: &[GenerateRequest],
    ) -> Result<Vec<Vec<Completion>>, EngineError> {
        let name = self.name();
        for (i, r) in requests.iter().enumerate() {
            r.validate(&name, i)?;
        }
        let mut owner = Vec::new();
        let mut input_ids = Vec::new();
        let mut params = Vec::new();
        for (i, r) in requests.iter().enumerate() {
            for _ in 0..r.n {
                owner.push(i);
                input_ids.push(json!(r.prompt_ids));
                params.push(Self::sampling_params(r));
            }
        }
        if owner.is_empty() {
            return Ok(requests.iter().map(|_| Vec::new()).collect());
        }
        let body = json!({
            "input_ids": input_ids,
            "sampling_params": params,
            "return_logprob": true,
            "stream": false,
        });
        let items = self.post_batch(&body, owner.len(), "samples")?;
        let mut out: Vec<Vec<Completion>> =
            requests.iter().map(|r| Vec::with_capacity(r.n)).collect();
        for (&i, v) in owner.iter().zip(&items) {
            out[i].push(self.parse(i, v)?);
        }
        check_completions(&name, requests, &out, self.vocab_size)?;
        end_at_answer_lines(requests, &mut out);
        Ok(out)
    }

    fn update_weights(
        &mut self,
        weights: WeightsRef,
        version: WeightVersion,
    ) -> Result<WeightVersion, EngineError> {
        let name = self.name();
        let dir =
            weights.into_directory(&name, "a directory of HF safetensors the server can read")?;
        let reply = self.client.post(
            "/update_weights_from_disk",
            &json!({"model_path": dir, "weight_version": version.to_string()}),
        )?;
        if reply["success"].as_bool() != Some(true) {
            return Err(EngineError::Weights {
                engine: name,
                version,
                message: format!(
                    "the server refused: {}",
                    reply["message"].as_str().unwrap_or("(no message)")
                ),
            });
        }
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
