//! An LLM judge behind any OpenAI-compatible server (llama-server, vLLM, SGLang, a hosted API):
//! a rubric filled with the question, the reference answer and the response, one
//! `POST /v1/chat/completions` per response, and a reward read from the judge's reply by a
//! stated rule.
//!
//! * **Rubric**: a template with the placeholders `{question}`, `{reference}` and `{response}`
//!   (`{{` and `}}` for literal braces), filled in one pass, so a response that contains
//!   `{reference}` is sent as written, never replaced. Any other placeholder is a config error.
//! * **Rule** ([`JudgeRule`]): `Number` reads the number right after the last occurrence of a
//!   marker (e.g. `Score:`; ASCII letters in any case), which must lie in `[min, max]`; the reward is
//!   `(x − min) / (max − min)`. `Verdict` takes the last whole word of the reply (case-insensitive)
//!   that is one of the pass or fail words: 1 for pass, 0 for fail.
//! * A reply the rule cannot read is a **zero reward**, marked [`Verdict::Unparsed`] and counted
//!   in [`JudgeStats`], never an error. An endpoint that does not answer after the client's
//!   bounded retries is an [`EngineError`] naming it.
//! * Requests run `concurrency` at a time; equal requests (the same JSON body) are sent once and
//!   their verdicts cached for the judge's lifetime.
//!
//! Tested against a scripted server for every failure case and against llama-server
//! (`tests/judge.rs`).

use std::collections::HashMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::{EngineError, HttpClient, RetryPolicy};

/// How a reward is read from the judge's reply.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum JudgeRule {
    /// The number right after the last `marker` (ASCII letters in any case), in `[min, max]`.
    Number {
        /// Text that precedes the score, e.g. `"Score:"`.
        marker: String,
        /// The lowest score.
        min: f64,
        /// The highest score.
        max: f64,
    },
    /// The last whole word of the reply that is one of `pass` or `fail` (case-insensitive).
    Verdict {
        /// Words that give reward 1 (e.g. `["CORRECT"]`).
        pass: Vec<String>,
        /// Words that give reward 0 (e.g. `["INCORRECT"]`).
        fail: Vec<String>,
    },
}

/// The judge's settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeConfig {
    /// Base URL of the OpenAI-compatible server, e.g. `http://127.0.0.1:8080`.
    pub url: String,
    /// The `model` field of each request.
    pub model: String,
    /// The rubric template (see the module documentation).
    pub rubric: String,
    /// How the reward is read from the reply.
    pub rule: JudgeRule,
    /// Sampling temperature (0: greedy, the usual setting for a judge).
    #[serde(default)]
    pub temperature: f64,
    /// `max_tokens` of each request.
    #[serde(default = "JudgeConfig::default_max_tokens")]
    pub max_tokens: usize,
    /// `seed` of each request.
    #[serde(default)]
    pub seed: u64,
    /// Requests in flight at once.
    #[serde(default = "JudgeConfig::default_concurrency")]
    pub concurrency: usize,
    /// Timeouts and retries.
    #[serde(default)]
    pub retry: RetryPolicy,
    /// Sent as `Authorization: Bearer <key>` when set.
    #[serde(default)]
    pub api_key: Option<String>,
}

impl JudgeConfig {
    fn default_max_tokens() -> usize {
        256
    }

    fn default_concurrency() -> usize {
        4
    }
}

/// One response to judge.
#[derive(Clone, Copy, Debug)]
pub struct JudgeItem<'a> {
    /// The prompt the policy answered.
    pub question: &'a str,
    /// The reference answer.
    pub reference: &'a str,
    /// The policy's response.
    pub response: &'a str,
}

/// What the rule read.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// A score, already mapped to the reward in `[0, 1]`.
    Scored(f64),
    /// The rule found nothing it could read (reward 0).
    Unparsed,
}

/// The judgement of one response.
#[derive(Clone, Debug, PartialEq)]
pub struct Judgement {
    /// The reward in `[0, 1]` (0 when unparsed).
    pub reward: f64,
    /// What the rule read.
    pub verdict: Verdict,
    /// The judge's reply text.
    pub reply: String,
}

/// Counts over a judge's lifetime.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JudgeStats {
    /// Responses judged (cache hits included).
    pub judged: usize,
    /// Requests sent to the server.
    pub requests: usize,
    /// Responses answered from the cache or by an equal request of the same call.
    pub cache_hits: usize,
    /// Replies the rule could not read.
    pub unparsed: usize,
}

/// An LLM judge (see the module documentation).
#[derive(Debug)]
pub struct Judge {
    config: JudgeConfig,
    client: HttpClient,
    cache: Mutex<HashMap<String, Judgement>>,
    stats: Mutex<JudgeStats>,
}

const ENGINE: &str = "judge";

impl Judge {
    /// Checks the config (rubric placeholders, rule bounds and words, sizes, the URL) and makes
    /// the client.
    pub fn new(config: JudgeConfig) -> Result<Self, EngineError> {
        let bad =
            |field: &'static str, value: String, expected: &str| EngineError::InvalidRequest {
                engine: ENGINE.to_string(),
                field,
                value,
                expected: expected.to_string(),
            };
        fill(&config.rubric, &JudgeItem {
            question: "",
            reference: "",
            response: "",
        })
        .map_err(|e| bad("rubric", e, "a template whose only placeholders are {question}, {reference} and {response} ({{ and }} for braces)"))?;
        match &config.rule {
            JudgeRule::Number { marker, min, max } => {
                if !(min.is_finite() && max.is_finite() && min < max) {
                    return Err(bad(
                        "rule",
                        format!("min {min}, max {max}"),
                        "finite min < max",
                    ));
                }
                if marker.trim().is_empty() {
                    return Err(bad(
                        "rule.marker",
                        format!("{marker:?}"),
                        "non-empty text before the score, e.g. \"Score:\"",
                    ));
                }
            }
            JudgeRule::Verdict { pass, fail } => {
                let words = pass.iter().chain(fail);
                if pass.is_empty() || fail.is_empty() {
                    return Err(bad(
                        "rule",
                        format!("pass {pass:?}, fail {fail:?}"),
                        "at least one pass word and one fail word",
                    ));
                }
                for w in words {
                    if w.is_empty() || !w.chars().all(char::is_alphanumeric) {
                        return Err(bad("rule", format!("{w:?}"), "words of letters and digits"));
                    }
                }
                if pass
                    .iter()
                    .any(|p| fail.iter().any(|f| f.eq_ignore_ascii_case(p)))
                {
                    return Err(bad(
                        "rule",
                        format!("pass {pass:?}, fail {fail:?}"),
                        "no word both pass and fail",
                    ));
                }
            }
        }
        if !(config.temperature.is_finite() && config.temperature >= 0.0) {
            return Err(bad(
                "temperature",
                config.temperature.to_string(),
                "a finite number >= 0",
            ));
        }
        if config.max_tokens == 0 {
            return Err(bad("max_tokens", "0".into(), "at least 1"));
        }
        if config.concurrency == 0 {
            return Err(bad("concurrency", "0".into(), "at least 1"));
        }
        let mut client = HttpClient::new(ENGINE, &config.url, config.retry)?;
        if let Some(key) = &config.api_key {
            client = client.with_api_key(key);
        }
        Ok(Self {
            config,
            client,
            cache: Mutex::new(HashMap::new()),
            stats: Mutex::new(JudgeStats::default()),
        })
    }

    /// The counts so far.
    pub fn stats(&self) -> JudgeStats {
        self.stats.lock().map(|s| *s).unwrap_or_default()
    }

    /// The request body for one item.
    pub fn request(&self, item: &JudgeItem<'_>) -> Value {
        // `new` checked the template, so filling cannot fail; an empty prompt would only
        // mean a template that `new` refused.
        let prompt = fill(&self.config.rubric, item).unwrap_or_default();
        json!({
            "model": self.config.model,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
            "seed": self.config.seed,
            "stream": false,
        })
    }

    /// Judges every item, `concurrency` requests at a time; equal requests go out once. Errors
    /// only when the endpoint fails after its retries, or answers without a reply text.
    pub fn judge(&self, items: &[JudgeItem<'_>]) -> Result<Vec<Judgement>, EngineError> {
        let bodies: Vec<Value> = items.iter().map(|i| self.request(i)).collect();
        let keys: Vec<String> = bodies.iter().map(Value::to_string).collect();
        // The distinct requests not in the cache, in first-seen order.
        let mut to_send: Vec<usize> = Vec::new();
        {
            let cache = self.cache.lock().map_err(|_| poisoned())?;
            let mut seen = std::collections::HashSet::new();
            for (i, k) in keys.iter().enumerate() {
                if !cache.contains_key(k) && seen.insert(k.as_str()) {
                    to_send.push(i);
                }
            }
        }
        let send: Vec<Value> = to_send.iter().map(|&i| bodies[i].clone()).collect();
        let replies = self
            .client
            .post_many("/v1/chat/completions", &send, self.config.concurrency);
        let mut fresh = Vec::with_capacity(send.len());
        for (&i, reply) in to_send.iter().zip(replies) {
            let text = reply_text(&reply?, i)?;
            let verdict = read(&self.config.rule, &text);
            let reward = match verdict {
                Verdict::Scored(r) => r,
                Verdict::Unparsed => 0.0,
            };
            fresh.push((
                keys[i].clone(),
                Judgement {
                    reward,
                    verdict,
                    reply: text,
                },
            ));
        }
        let mut cache = self.cache.lock().map_err(|_| poisoned())?;
        cache.extend(fresh);
        let out: Vec<Judgement> = keys
            .iter()
            .map(|k| cache.get(k).cloned().ok_or_else(poisoned))
            .collect::<Result<_, _>>()?;
        let mut stats = self.stats.lock().map_err(|_| poisoned())?;
        stats.judged += items.len();
        stats.requests += to_send.len();
        stats.cache_hits += items.len() - to_send.len();
        stats.unparsed += out
            .iter()
            .filter(|j| j.verdict == Verdict::Unparsed)
            .count();
        Ok(out)
    }
}

fn poisoned() -> EngineError {
    EngineError::Stopped {
        engine: ENGINE.to_string(),
        message: "a judging thread panicked".to_string(),
    }
}

/// `choices[0].message.content` of a chat completion.
fn reply_text(reply: &Value, request: usize) -> Result<String, EngineError> {
    reply
        .pointer("/choices/0/message/content")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| EngineError::Malformed {
            engine: ENGINE.to_string(),
            request,
            message: format!(
                "no choices[0].message.content in {}",
                crate::error::clip(&reply.to_string(), 300)
            ),
        })
}

/// The rubric with its placeholders filled, in one pass; the name of a bad placeholder as the
/// error.
fn fill(template: &str, item: &JudgeItem<'_>) -> Result<String, String> {
    let mut out = String::with_capacity(template.len() + item.response.len());
    let mut rest = template;
    while let Some(at) = rest.find(['{', '}']) {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("{{") {
            out.push('{');
            rest = after;
        } else if let Some(after) = tail.strip_prefix("}}") {
            out.push('}');
            rest = after;
        } else if tail.starts_with('}') {
            return Err("a lone `}` (write `}}`)".to_string());
        } else {
            let end = tail
                .find('}')
                .ok_or_else(|| "an unclosed `{`".to_string())?;
            out.push_str(match &tail[1..end] {
                "question" => item.question,
                "reference" => item.reference,
                "response" => item.response,
                other => return Err(format!("the placeholder {{{other}}}")),
            });
            rest = &tail[end + 1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// What `rule` reads from `reply`.
pub fn read(rule: &JudgeRule, reply: &str) -> Verdict {
    match rule {
        JudgeRule::Number { marker, min, max } => {
            // The last place the marker starts, ASCII letters compared case-insensitively.
            let (m, bytes) = (marker.as_bytes(), reply.as_bytes());
            let Some(at) = (0..=bytes.len().saturating_sub(m.len()))
                .rev()
                .filter(|&i| bytes.len() >= i + m.len())
                .find(|&i| bytes[i..i + m.len()].eq_ignore_ascii_case(m))
            else {
                return Verdict::Unparsed;
            };
            // Non-ASCII bytes matched exactly, so the marker's end is a character boundary.
            let after = reply.get(at + m.len()..).unwrap_or("");
            match leading_number(after.trim_start()) {
                Some(x) if x >= *min && x <= *max => Verdict::Scored((x - min) / (max - min)),
                _ => Verdict::Unparsed,
            }
        }
        JudgeRule::Verdict { pass, fail } => {
            let words: Vec<&str> = reply
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .collect();
            for w in words.iter().rev() {
                if pass.iter().any(|p| p.to_lowercase() == w.to_lowercase()) {
                    return Verdict::Scored(1.0);
                }
                if fail.iter().any(|f| f.to_lowercase() == w.to_lowercase()) {
                    return Verdict::Scored(0.0);
                }
            }
            Verdict::Unparsed
        }
    }
}

/// A decimal number at the start of `s` (`-`, digits, an optional `.` and digits), e.g. `7`,
/// `-2.5`, `8.` (the `.` ending a sentence is not part of it).
fn leading_number(s: &str) -> Option<f64> {
    let bytes = s.as_bytes();
    let mut end = usize::from(bytes.first() == Some(&b'-'));
    let int_start = end;
    while end < bytes.len() && bytes[end].is_ascii_digit() {
        end += 1;
    }
    if end == int_start {
        return None;
    }
    if end + 1 < bytes.len() && bytes[end] == b'.' && bytes[end + 1].is_ascii_digit() {
        end += 1;
        while end < bytes.len() && bytes[end].is_ascii_digit() {
            end += 1;
        }
    }
    s[..end].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item<'a>(q: &'a str, r: &'a str, a: &'a str) -> JudgeItem<'a> {
        JudgeItem {
            question: q,
            reference: r,
            response: a,
        }
    }

    #[test]
    fn the_rubric_is_filled_once() {
        let t = "Q: {question}\nRef: {reference}\nA: {response}\n{{json}}";
        let got = fill(t, &item("2+2?", "4", "it is {reference}")).unwrap();
        assert_eq!(got, "Q: 2+2?\nRef: 4\nA: it is {reference}\n{json}");
        assert!(
            fill("{answer}", &item("", "", ""))
                .unwrap_err()
                .contains("{answer}")
        );
        assert!(fill("{question", &item("", "", "")).is_err());
        assert!(fill("a } b", &item("", "", "")).is_err());
    }

    #[test]
    fn numbers_are_read_after_the_last_marker() {
        let rule = JudgeRule::Number {
            marker: "Score:".into(),
            min: 0.0,
            max: 10.0,
        };
        assert_eq!(read(&rule, "Good.\nScore: 7"), Verdict::Scored(0.7));
        // The last marker counts; "8/10" reads 8; a trailing full stop is not a decimal point.
        assert_eq!(
            read(&rule, "score: 2 ... final SCORE: 8/10."),
            Verdict::Scored(0.8)
        );
        assert_eq!(read(&rule, "Score: 2.5"), Verdict::Scored(0.25));
        assert_eq!(read(&rule, "Score: 11"), Verdict::Unparsed);
        assert_eq!(read(&rule, "Score: none"), Verdict::Unparsed);
        assert_eq!(read(&rule, "I give it 9"), Verdict::Unparsed);
        // A marker after non-ASCII text whose lowercase has more characters.
        assert_eq!(read(&rule, "İİ Score: 10"), Verdict::Scored(1.0));
        assert_eq!(read(&rule, "Score"), Verdict::Unparsed);
    }

    #[test]
    fn verdict_words_are_whole_and_the_last_one_counts() {
        let rule = JudgeRule::Verdict {
            pass: vec!["CORRECT".into()],
            fail: vec!["INCORRECT".into(), "WRONG".into()],
        };
        assert_eq!(
            read(&rule, "The answer is incorrect."),
            Verdict::Scored(0.0)
        );
        assert_eq!(
            read(&rule, "Not WRONG at all: Correct"),
            Verdict::Scored(1.0)
        );
        assert_eq!(read(&rule, "correctness unclear"), Verdict::Unparsed);
        assert_eq!(read(&rule, ""), Verdict::Unparsed);
    }
}
