//! llama.cpp's `llama-server` as a rollout engine: `POST /completion` with a token-id prompt,
//! one request per sample (the server batches concurrent requests over its `-np` slots), ids
//! and log-probs from the reply; weights are synchronised by re-exporting the GGUF file and
//! restarting a server this process manages ([`LlamaServer`]).
//!
//! Log-probs: at T = 1 (and for greedy decoding) llama-server's `completion_probabilities[i]
//! .logprob` is log softmax(logits) — the contract of [`crate::Completion::logprobs`]. At T ≠ 1
//! the engine asks for `post_sampling_probs`, which are the probabilities of the distribution
//! sampled from; with top-k/top-p/min-p off that is softmax(logits / T) over the whole
//! vocabulary. T ≠ 1 together with top-k or top-p is refused: the server can report only the
//! truncated distribution then.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::http::{HttpClient, RetryPolicy};
use crate::{
    Completion, EngineError, FinishReason, GenerateRequest, RolloutEngine, WeightVersion,
    WeightsKind, WeightsRef, check_completions,
};

/// Turns a weights folder (HF safetensors) into a GGUF file and (re)starts the server on it.
pub type Reload = Box<dyn FnMut(&Path) -> Result<(), String> + Send>;

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
        let tempered = p.temperature > 0.0 && p.temperature != 1.0;
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
        let tempered = r.params.temperature > 0.0 && r.params.temperature != 1.0;
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

fn wait_healthy(client: &HttpClient, wait: Duration) -> Result<(), EngineError> {
    let start = Instant::now();
    let probe = HttpClient::new(
        client.engine(),
        client.base(),
        RetryPolicy {
            timeout_s: 5.0,
            max_retries: 0,
            backoff_s: 0.0,
        },
    )?;
    loop {
        match probe.get("/health") {
            Ok(_) => return Ok(()),
            Err(e) if start.elapsed() >= wait => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
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
            if p.temperature > 0.0 && p.temperature != 1.0 && (p.top_k > 0 || p.top_p < 1.0) {
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
        // One job per sample; sample k of a request uses seed + k.
        let jobs: Vec<(usize, Value)> = requests
            .iter()
            .enumerate()
            .flat_map(|(i, r)| {
                (0..r.n).map(move |k| (i, Self::body(r, r.params.seed.wrapping_add(k as u64))))
            })
            .collect();
        let mut replies: Vec<Option<Result<Value, EngineError>>> =
            (0..jobs.len()).map(|_| None).collect();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let slots = std::sync::Mutex::new(&mut replies);
        std::thread::scope(|s| {
            for _ in 0..self.concurrency.min(jobs.len()) {
                s.spawn(|| {
                    loop {
                        let j = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some((_, body)) = jobs.get(j) else { break };
                        let r = self.client.post("/completion", body);
                        if let Ok(mut g) = slots.lock() {
                            g[j] = Some(r);
                        }
                    }
                });
            }
        });
        let mut out: Vec<Vec<Completion>> =
            requests.iter().map(|r| Vec::with_capacity(r.n)).collect();
        for ((i, _), reply) in jobs.iter().zip(replies) {
            let v = reply.unwrap_or_else(|| {
                Err(EngineError::Stopped {
                    engine: name.clone(),
                    message: "a request thread ended without an answer".into(),
                })
            })?;
            out[*i].push(self.parse(&requests[*i], *i, &v)?);
        }
        check_completions(&name, requests, &out, self.vocab_size)?;
        Ok(out)
    }

    fn update_weights(
        &mut self,
        weights: WeightsRef,
        version: WeightVersion,
    ) -> Result<WeightVersion, EngineError> {
        let name = self.name();
        let fail = |message: String| EngineError::Weights {
            engine: name.clone(),
            version,
            message,
        };
        let dir = weights.into_directory(&name, "a directory of HF safetensors")?;
        let reload = self
            .reload
            .as_mut()
            .ok_or_else(|| fail("no reload hook: this engine cannot take new weights".into()))?;
        reload(&dir).map_err(fail)?;
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

/// A `llama-server` process this program started (on 127.0.0.1), stopped on drop.
pub struct LlamaServer {
    binary: PathBuf,
    port: u16,
    args: Vec<String>,
    child: Option<Child>,
    log: PathBuf,
}

impl LlamaServer {
    /// Starts `binary -m model --host 127.0.0.1 --port port args…` and waits (up to `wait`) for
    /// `/health`; the server's output goes to `log`.
    pub fn start(
        binary: &Path,
        model: &Path,
        port: u16,
        args: &[String],
        log: &Path,
        wait: Duration,
    ) -> Result<Self, EngineError> {
        let mut s = Self {
            binary: binary.to_path_buf(),
            port,
            args: args.to_vec(),
            child: None,
            log: log.to_path_buf(),
        };
        s.restart(model, wait)?;
        Ok(s)
    }

    /// The server's URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Stops the server and starts it again on `model`.
    pub fn restart(&mut self, model: &Path, wait: Duration) -> Result<(), EngineError> {
        self.stop();
        let engine = format!("llama-server {}", self.url());
        let log = std::fs::File::create(&self.log).map_err(|e| EngineError::Stopped {
            engine: engine.clone(),
            message: format!("{}: {e}", self.log.display()),
        })?;
        let err_log = log.try_clone().map_err(|e| EngineError::Stopped {
            engine: engine.clone(),
            message: e.to_string(),
        })?;
        let child = Command::new(&self.binary)
            .arg("-m")
            .arg(model)
            .args(["--host", "127.0.0.1", "--port", &self.port.to_string()])
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err_log)
            .spawn()
            .map_err(|e| EngineError::Stopped {
                engine: engine.clone(),
                message: format!("cannot start {}: {e}", self.binary.display()),
            })?;
        self.child = Some(child);
        let client = HttpClient::new("llama-server", &self.url(), RetryPolicy::default())?;
        if let Err(e) = wait_healthy(&client, wait) {
            let tail = std::fs::read_to_string(&self.log).unwrap_or_default();
            let tail: String = tail.lines().rev().take(5).collect::<Vec<_>>().join(" | ");
            self.stop();
            return Err(EngineError::Stopped {
                engine,
                message: format!("not healthy within {:?}: {e}; log: {tail}", wait),
            });
        }
        Ok(())
    }

    /// Kills the server (SIGKILL) and waits for it.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// The process id, while running.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        self.stop();
    }
}
