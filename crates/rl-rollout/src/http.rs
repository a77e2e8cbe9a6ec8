//! The HTTP policy every remote engine shares: a timeout on every call, bounded retries with
//! exponential backoff for transient failures (connection errors, timeouts, HTTP 5xx and 429),
//! and typed errors naming the engine, the URL and the request.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Completion, EngineError, GenerateRequest};

/// Timeouts and retries of a remote engine (the `[rollout]` keys `timeout_s`, `max_retries`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetryPolicy {
    /// Seconds a call may take (connect, send, generate, read).
    pub timeout_s: f64,
    /// Retries after the first attempt for transient failures.
    pub max_retries: usize,
    /// Wait before the first retry, doubled for each further one.
    pub backoff_s: f64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            timeout_s: 300.0,
            max_retries: 3,
            backoff_s: 0.5,
        }
    }
}

impl RetryPolicy {
    /// Checks the ranges; `engine` names the engine in the error.
    pub fn validate(&self, engine: &str) -> Result<(), EngineError> {
        let bad = |field: &'static str, value: String, expected: &str| {
            Err(EngineError::InvalidRequest {
                engine: engine.to_string(),
                field,
                value,
                expected: expected.to_string(),
            })
        };
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0) {
            return bad(
                "timeout_s",
                self.timeout_s.to_string(),
                "a finite number > 0",
            );
        }
        if !(self.backoff_s.is_finite() && self.backoff_s >= 0.0) {
            return bad(
                "backoff_s",
                self.backoff_s.to_string(),
                "a finite number >= 0",
            );
        }
        Ok(())
    }
}

/// One remote endpoint with its policy.
#[derive(Clone, Debug)]
pub struct HttpClient {
    engine: String,
    base: String,
    policy: RetryPolicy,
    agent: ureq::Agent,
    /// `Authorization: Bearer <key>` on every request, when set.
    api_key: Option<String>,
}

enum Attempt {
    Done(Value),
    Retry(EngineError),
    Fail(EngineError),
}

impl HttpClient {
    /// A client of `base` (e.g. `http://127.0.0.1:8080`) for `engine` (its name in errors).
    pub fn new(engine: &str, base: &str, policy: RetryPolicy) -> Result<Self, EngineError> {
        policy.validate(engine)?;
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(EngineError::InvalidRequest {
                engine: engine.to_string(),
                field: "url",
                value: base.to_string(),
                expected: "an http:// URL (e.g. http://127.0.0.1:8080)".into(),
            });
        }
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs_f64(policy.timeout_s)))
            .http_status_as_error(false)
            .build()
            .into();
        Ok(Self {
            engine: engine.to_string(),
            base: base.trim_end_matches('/').to_string(),
            policy,
            agent,
            api_key: None,
        })
    }

    /// The same client sending `Authorization: Bearer <key>` with every request.
    pub fn with_api_key(mut self, key: &str) -> Self {
        self.api_key = Some(key.to_string());
        self
    }

    /// The base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The engine's name.
    pub fn engine(&self) -> &str {
        &self.engine
    }

    /// `GET path`, parsed as JSON (with retries).
    pub fn get(&self, path: &str) -> Result<Value, EngineError> {
        self.call("GET", path, None)
    }

    /// `POST path` with a JSON body, the reply parsed as JSON (with retries).
    pub fn post(&self, path: &str, body: &Value) -> Result<Value, EngineError> {
        self.call("POST", path, Some(body))
    }

    /// `POST path` once per body, at most `concurrency` requests in flight (each with the
    /// client's retries); the replies in the order of `bodies`. For engines that batch
    /// concurrent requests on the server (llama.cpp slots, vLLM's continuous batching).
    pub fn post_many(
        &self,
        path: &str,
        bodies: &[Value],
        concurrency: usize,
    ) -> Vec<Result<Value, EngineError>> {
        let mut replies: Vec<Option<Result<Value, EngineError>>> =
            (0..bodies.len()).map(|_| None).collect();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let slots = std::sync::Mutex::new(&mut replies);
        std::thread::scope(|s| {
            for _ in 0..concurrency.max(1).min(bodies.len()) {
                s.spawn(|| {
                    loop {
                        let j = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(body) = bodies.get(j) else { break };
                        let r = self.post(path, body);
                        if let Ok(mut g) = slots.lock() {
                            g[j] = Some(r);
                        }
                    }
                });
            }
        });
        replies
            .into_iter()
            .map(|r| {
                r.unwrap_or_else(|| {
                    Err(EngineError::Stopped {
                        engine: self.engine.clone(),
                        message: format!("POST {path}: a request thread ended without an answer"),
                    })
                })
            })
            .collect()
    }

    /// One `POST path` per sample, `body(request, seed)` giving sample k of a request the seed
    /// `seed + k` (so every sample draws its own stream), [`HttpClient::post_many`] with
    /// `concurrency`, and each reply read by `parse(request index, reply)`: the completions of
    /// every request, in order. For servers without a per-sample seed inside one request.
    pub fn post_per_sample(
        &self,
        path: &str,
        requests: &[GenerateRequest],
        concurrency: usize,
        body: impl Fn(&GenerateRequest, u64) -> Value,
        parse: impl Fn(usize, &Value) -> Result<Completion, EngineError>,
    ) -> Result<Vec<Vec<Completion>>, EngineError> {
        let (owner, bodies): (Vec<usize>, Vec<Value>) = requests
            .iter()
            .enumerate()
            .flat_map(|(i, r)| {
                let body = &body;
                (0..r.n).map(move |k| (i, body(r, r.params.seed.wrapping_add(k as u64))))
            })
            .unzip();
        let replies = self.post_many(path, &bodies, concurrency);
        let mut out: Vec<Vec<Completion>> =
            requests.iter().map(|r| Vec::with_capacity(r.n)).collect();
        for (&i, reply) in owner.iter().zip(replies) {
            out[i].push(parse(i, &reply?)?);
        }
        Ok(out)
    }

    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value, EngineError> {
        let request = format!("{method} {path}");
        let attempts = self.policy.max_retries + 1;
        let mut last = None;
        for attempt in 0..attempts {
            if attempt > 0 {
                let wait = self.policy.backoff_s * 2f64.powi(attempt as i32 - 1);
                std::thread::sleep(Duration::from_secs_f64(wait));
            }
            match self.attempt(method, path, body, &request, attempt + 1) {
                Attempt::Done(v) => return Ok(v),
                Attempt::Fail(e) => return Err(e),
                Attempt::Retry(e) => last = Some(e),
            }
        }
        Err(last.expect("at least one attempt"))
    }

    /// A failure below HTTP (while sending, or while reading the reply): a timeout, or a
    /// connection error whose message starts with `context`. Both are retried.
    fn transport_error(
        &self,
        e: ureq::Error,
        request: &str,
        attempts: usize,
        context: &str,
    ) -> EngineError {
        match e {
            ureq::Error::Timeout(_) => EngineError::Timeout {
                engine: self.engine.clone(),
                url: self.base.clone(),
                request: request.to_string(),
                timeout_s: self.policy.timeout_s,
                attempts,
            },
            e => EngineError::Connection {
                engine: self.engine.clone(),
                url: self.base.clone(),
                request: request.to_string(),
                attempts,
                message: format!("{context}{e}"),
            },
        }
    }

    fn attempt(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        request: &str,
        attempts: usize,
    ) -> Attempt {
        let url = format!("{}{path}", self.base);
        let auth = self.api_key.as_ref().map(|k| format!("Bearer {k}"));
        let result = match body {
            Some(b) => {
                let mut r = self
                    .agent
                    .post(&url)
                    .header("Content-Type", "application/json");
                if let Some(a) = &auth {
                    r = r.header("Authorization", a);
                }
                r.send(b.to_string().as_bytes())
            }
            None if method == "GET" => {
                let mut r = self.agent.get(&url);
                if let Some(a) = &auth {
                    r = r.header("Authorization", a);
                }
                r.call()
            }
            None => {
                let mut r = self.agent.post(&url);
                if let Some(a) = &auth {
                    r = r.header("Authorization", a);
                }
                r.send_empty()
            }
        };
        let mut resp = match result {
            Ok(r) => r,
            Err(e) => return Attempt::Retry(self.transport_error(e, request, attempts, "")),
        };
        let status = resp.status().as_u16();
        let text = match resp
            .body_mut()
            .with_config()
            .limit(1 << 30)
            .read_to_string()
        {
            Ok(t) => t,
            Err(e) => {
                let e = self.transport_error(e, request, attempts, "reading the reply: ");
                return Attempt::Retry(e);
            }
        };
        if status >= 400 {
            let body = crate::error::clip(&text, 500);
            let e = EngineError::Status {
                engine: self.engine.clone(),
                url: self.base.clone(),
                request: request.to_string(),
                status,
                body,
            };
            return if status >= 500 || status == 429 {
                Attempt::Retry(e)
            } else {
                Attempt::Fail(e)
            };
        }
        match serde_json::from_str(&text) {
            Ok(v) => Attempt::Done(v),
            // A truncated or garbled body is not retried: the server answered, wrongly.
            Err(e) => Attempt::Fail(EngineError::Malformed {
                engine: format!("{} {}", self.engine, self.base),
                request: 0,
                message: format!("{request}: the reply is not JSON ({e}): {:.200}", text),
            }),
        }
    }
}
