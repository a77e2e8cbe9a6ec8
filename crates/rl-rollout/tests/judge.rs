//! The LLM judge against a scripted OpenAI-compatible server on 127.0.0.1 (request format, rules,
//! cache, concurrency, unreadable replies, malformed replies, retries, a dead endpoint) and
//! against a real llama-server serving SmolLM2-135M-Instruct (`scripts/build-llama-server.sh`,
//! `scripts/fetch-smollm2.sh`; under CI a missing binary or model fails the test, elsewhere it is
//! skipped with a message).

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::{Reply, leak, policy, serve, serve_with};
use rl_rollout::{
    EngineError, Judge, JudgeConfig, JudgeItem, JudgeRule, JudgeStats, LLAMA_SERVER_LAUNCH,
    ManagedServer, Verdict,
};
use serde_json::{Value, json};

const RUBRIC: &str = "Question: {question}\nReference: {reference}\nResponse: {response}\n\
                      Is the response correct? Answer CORRECT or INCORRECT.";

fn verdict_rule() -> JudgeRule {
    JudgeRule::Verdict {
        pass: vec!["CORRECT".into()],
        fail: vec!["INCORRECT".into()],
    }
}

fn config(url: &str, rule: JudgeRule, concurrency: usize) -> JudgeConfig {
    JudgeConfig {
        url: url.to_string(),
        model: "judge-model".into(),
        rubric: RUBRIC.into(),
        rule,
        temperature: 0.0,
        max_tokens: 16,
        seed: 7,
        concurrency,
        retry: policy(1, 5.0),
        api_key: None,
    }
}

/// An OpenAI chat completion whose message is `text`.
fn chat(text: &str) -> String {
    json!({
        "id": "x", "object": "chat.completion", "model": "judge-model",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}]
    })
    .to_string()
}

fn item<'a>(question: &'a str, response: &'a str) -> JudgeItem<'a> {
    JudgeItem {
        question,
        reference: "4",
        response,
    }
}

#[test]
fn requests_are_chat_completions_and_verdicts_are_read() {
    let srv = serve(vec![
        Reply::Status(200, leak(chat("Reasoning... CORRECT"))),
        Reply::Status(200, leak(chat("It is INCORRECT."))),
        Reply::Status(200, leak(chat("I cannot tell."))),
    ]);
    let judge = Judge::new(config(&srv.url, verdict_rule(), 1)).unwrap();
    let out = judge
        .judge(&[
            item("2+2?", "4"),
            item("2+2?", "5"),
            item("2+2?", "it is {reference}"),
        ])
        .unwrap();
    assert_eq!(
        out.iter().map(|j| j.reward).collect::<Vec<_>>(),
        vec![1.0, 0.0, 0.0]
    );
    assert_eq!(out[2].verdict, Verdict::Unparsed);
    assert_eq!(out[2].reply, "I cannot tell.");
    assert_eq!(
        judge.stats(),
        JudgeStats {
            judged: 3,
            requests: 3,
            cache_hits: 0,
            unparsed: 1
        }
    );
    let seen = srv.seen.lock().unwrap().clone();
    assert!(
        seen.iter()
            .all(|l| l.starts_with("POST /v1/chat/completions")),
        "{seen:?}"
    );
    let body = srv.json_body(2);
    assert_eq!(body["model"], "judge-model");
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["max_tokens"], 16);
    assert_eq!(body["seed"], 7);
    assert_eq!(body["messages"][0]["role"], "user");
    // The response's own braces are sent as written.
    assert_eq!(
        body["messages"][0]["content"],
        "Question: 2+2?\nReference: 4\nResponse: it is {reference}\n\
         Is the response correct? Answer CORRECT or INCORRECT."
    );
}

/// A score after a marker, mapped to [0, 1]; out of range or missing is unparsed.
#[test]
fn scores_are_read_after_the_marker() {
    let srv = serve(vec![
        Reply::Status(200, leak(chat("Mostly right. Score: 8"))),
        Reply::Status(200, leak(chat("Score: 12"))),
    ]);
    let rule = JudgeRule::Number {
        marker: "Score:".into(),
        min: 0.0,
        max: 10.0,
    };
    let judge = Judge::new(config(&srv.url, rule, 1)).unwrap();
    let out = judge.judge(&[item("a", "b"), item("a", "c")]).unwrap();
    assert_eq!(out[0].verdict, Verdict::Scored(0.8));
    assert_eq!(
        (out[1].verdict.clone(), out[1].reward),
        (Verdict::Unparsed, 0.0)
    );
}

/// Equal requests go out once, within a call and across calls; 24 distinct ones with 4 in
/// flight come back in the order asked.
#[test]
fn equal_requests_are_cached_and_concurrent_replies_keep_their_order() {
    let srv = serve_with(|_, body| {
        let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
        let prompt = v["messages"][0]["content"]
            .as_str()
            .unwrap_or("")
            .to_string();
        // The response's number decides the verdict: even numbers are "correct".
        let n: u64 = prompt
            .split("Response: ")
            .nth(1)
            .and_then(|r| r.split('\n').next())
            .and_then(|r| r.trim().parse().ok())
            .unwrap_or(1);
        std::thread::sleep(Duration::from_millis(5 * (n % 3)));
        let word = if n.is_multiple_of(2) {
            "CORRECT"
        } else {
            "INCORRECT"
        };
        (200, chat(word))
    });
    let judge = Judge::new(config(&srv.url, verdict_rule(), 4)).unwrap();
    let numbers: Vec<String> = (0..24).map(|n| n.to_string()).collect();
    let mut items: Vec<JudgeItem<'_>> = numbers.iter().map(|n| item("q", n)).collect();
    items.push(item("q", "0"));
    items.push(item("q", "1"));
    let out = judge.judge(&items).unwrap();
    for (k, j) in out.iter().enumerate() {
        let n = if k < 24 { k } else { k - 24 };
        assert_eq!(j.reward, if n % 2 == 0 { 1.0 } else { 0.0 }, "item {k}");
    }
    assert_eq!(judge.stats().requests, 24);
    assert_eq!(judge.stats().cache_hits, 2);
    let again = judge.judge(&items[..3]).unwrap();
    assert_eq!(again, out[..3].to_vec());
    assert_eq!(judge.stats().requests, 24);
    assert_eq!(srv.json_bodies().len(), 24);
}

/// Transient failures are retried; a reply without a message and a dead endpoint are errors
/// naming the judge and its URL; bad settings are refused before any request.
#[test]
fn failures_are_typed_errors() {
    let srv = serve(vec![
        Reply::Status(503, "{\"error\":\"loading\"}"),
        Reply::Status(200, leak(chat("CORRECT"))),
        Reply::Status(200, "{\"choices\":[]}"),
    ]);
    let judge = Judge::new(config(&srv.url, verdict_rule(), 1)).unwrap();
    assert_eq!(judge.judge(&[item("q", "4")]).unwrap()[0].reward, 1.0);
    let e = judge.judge(&[item("q", "5")]).unwrap_err();
    assert!(matches!(e, EngineError::Malformed { .. }), "{e}");
    assert!(e.to_string().contains("judge"), "{e}");

    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let judge = Judge::new(config(&dead, verdict_rule(), 1)).unwrap();
    let e = judge.judge(&[item("q", "4")]).unwrap_err();
    assert!(e.to_string().contains(&dead), "{e}");

    for (bad, field) in [
        (
            JudgeConfig {
                rubric: "{question} {answer}".into(),
                ..config(&dead, verdict_rule(), 1)
            },
            "rubric",
        ),
        (
            JudgeConfig {
                rule: JudgeRule::Number {
                    marker: "Score:".into(),
                    min: 5.0,
                    max: 5.0,
                },
                ..config(&dead, verdict_rule(), 1)
            },
            "rule",
        ),
        (
            JudgeConfig {
                rule: JudgeRule::Verdict {
                    pass: vec!["yes".into()],
                    fail: vec!["YES".into()],
                },
                ..config(&dead, verdict_rule(), 1)
            },
            "rule",
        ),
        (config(&dead, verdict_rule(), 0), "concurrency"),
        (config("ftp://x", verdict_rule(), 1), "url"),
    ] {
        let e = Judge::new(bad).unwrap_err();
        assert!(
            e.to_string().contains(&format!("`{field}`")),
            "{field}: {e}"
        );
    }
}

fn required(path: PathBuf, hint: &str) -> Option<PathBuf> {
    if path.exists() {
        return Some(path);
    }
    let msg = format!("{} not found: {hint}", path.display());
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{msg}");
    }
    eprintln!("skipping: {msg}");
    None
}

fn cache_dir(var: &str, default: &str) -> PathBuf {
    std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(default))
}

/// SmolLM2-135M-Instruct behind llama-server (its chat template from the GGUF) judges four
/// responses, two of them equal: three requests, a reply text for each, equal judgements for the
/// equal responses, none sent for a repeated call, three again from a judge without the cache.
#[test]
fn a_real_llama_server_judges() {
    let Some(bin) = required(
        cache_dir("RLVR_LLAMA_DIR", ".cache/rlvr-llama").join("bin/llama-server"),
        "run `bash scripts/build-llama-server.sh`",
    ) else {
        return;
    };
    let Some(gguf) = required(
        std::env::var_os("RLVR_SMOLLM2_GGUF")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                cache_dir("RLVR_SMOLLM2_DIR", ".cache/rlvr-smollm2")
                    .join("SmolLM2-135M-Instruct.Q4_1.gguf")
            }),
        "run `bash scripts/fetch-smollm2.sh`",
    ) else {
        return;
    };
    let dir = tempfile::Builder::new()
        .prefix("rl-rollout-judge-")
        .tempdir()
        .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // `--no-repack`: llama.cpp's CPU weight repacking of this Q4_1 file crashes the server
    // (SIGSEGV right after start-up) on a Xeon with AMX; the layout only changes the speed.
    let args: Vec<String> = [
        "-c",
        "2048",
        "-np",
        "2",
        "-t",
        "2",
        "--no-warmup",
        "--no-repack",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let server = ManagedServer::start(
        &bin,
        LLAMA_SERVER_LAUNCH,
        &gguf,
        port,
        &args,
        &dir.path().join("server.log"),
        Duration::from_secs(120),
    )
    .unwrap();
    let mut cfg = config(&server.url(), verdict_rule(), 2);
    cfg.retry = policy(1, 120.0);
    cfg.max_tokens = 12;
    let items = [
        item("What is 2 + 2?", "4"),
        item("What is 2 + 2?", "5"),
        item("What is 2 + 2?", "4"),
        item("What is 3 + 3?", "6"),
    ];
    let judge = Judge::new(cfg.clone()).unwrap();
    let out = judge.judge(&items).unwrap();
    let stats = judge.stats();
    assert_eq!((stats.judged, stats.requests, stats.cache_hits), (4, 3, 1));
    for j in &out {
        assert!(!j.reply.trim().is_empty(), "{out:?}");
        match j.verdict {
            Verdict::Scored(r) => assert_eq!(r, j.reward),
            Verdict::Unparsed => assert_eq!(j.reward, 0.0),
        }
    }
    assert_eq!(out[0], out[2]);
    judge.judge(&items).unwrap();
    assert_eq!(judge.stats().requests, 3);
    // A second judge has no cache: it sends its three requests again. (Its greedy replies may
    // differ from the first judge's: llama-server's numerics depend on which requests share a
    // batch and on its prompt cache.)
    let fresh = Judge::new(cfg).unwrap();
    assert!(
        fresh
            .judge(&items)
            .unwrap()
            .iter()
            .all(|j| !j.reply.trim().is_empty())
    );
    assert_eq!(fresh.stats().requests, 3);
    eprintln!(
        "SmolLM2 as judge: {:?}",
        out.iter().map(|j| (&j.reply, j.reward)).collect::<Vec<_>>()
    );
}
