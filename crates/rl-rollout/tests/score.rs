//! Scoring given tokens (`TokenScorer`) through vLLM's `prompt_logprobs` and SGLang's
//! `input_token_logprobs`, against the scripted server of `common/` answering in the shapes
//! of vLLM's `CompletionResponseChoice` (`prompt_logprobs: list[dict[int, Logprob] | None]`,
//! `null` at position 0) and SGLang's `/generate` meta_info (`[logprob, id, text]` from
//! `logprob_start_len` on, the first entry's log-prob padded with `null`). Constructed from
//! the engines' protocol definitions, not recorded from live servers, which need a GPU.

mod common;

use common::{Reply, leak, policy, serve};
use rl_rollout::{EngineError, ScoreRequest, SglangEngine, TokenScorer, VllmEngine, VllmOptions};
use serde_json::{Value, json};

fn request(prompt: &[u32], response: &[u32]) -> ScoreRequest {
    ScoreRequest {
        prompt_ids: prompt.to_vec(),
        response_ids: response.to_vec(),
    }
}

fn vllm(url: &str) -> VllmEngine {
    let options = VllmOptions {
        model: Some("teacher".into()),
        concurrency: 1,
        processed_logprobs: false,
    };
    VllmEngine::new(url, policy(0, 5.0), 0, 10, options, None).unwrap()
}

/// vLLM's reply to a scoring request of `ids`: position p > 0 maps `ids[p]` to `lps[p]` and,
/// where `top` gives one, a top-1 id to its log-prob (`prompt_logprobs = 1`).
fn vllm_scores(ids: &[u32], lps: &[f64], top: &[Option<(u32, f64)>]) -> String {
    let entries: Vec<Value> = ids
        .iter()
        .enumerate()
        .map(|(p, &id)| {
            if p == 0 {
                return Value::Null;
            }
            let mut e = serde_json::Map::new();
            e.insert(
                id.to_string(),
                json!({"logprob": lps[p], "rank": 2, "decoded_token": format!("t{id}")}),
            );
            if let Some((t, lp)) = top[p] {
                e.insert(
                    t.to_string(),
                    json!({"logprob": lp, "rank": 1, "decoded_token": format!("t{t}")}),
                );
            }
            Value::Object(e)
        })
        .collect();
    json!({
        "id": "cmpl-1", "object": "text_completion", "created": 0, "model": "teacher",
        "choices": [{
            "index": 0, "text": "x", "finish_reason": "length", "stop_reason": null,
            "logprobs": null, "token_ids": [3],
            "prompt_token_ids": ids, "prompt_logprobs": entries,
        }],
        "usage": {"prompt_tokens": ids.len(), "completion_tokens": 1, "total_tokens": ids.len() + 1},
    })
    .to_string()
}

/// Two requests go out as two `/v1/completions` with prompt + response, `max_tokens = 1` and
/// `prompt_logprobs = 1`; each response token's log-prob is read from the entry keyed by its
/// own id (not the top-1 beside it), prompt positions ignored.
#[test]
fn vllm_scores_are_the_prompt_logprobs_of_the_ids_sent() {
    let first = vllm_scores(
        &[1, 2, 3, 5, 9],
        &[0.0, -9.0, -9.0, -0.5, -2.25],
        &[None, None, None, Some((4, -0.1)), None],
    );
    let second = vllm_scores(&[4, 6], &[0.0, -1.5], &[None, Some((7, -0.2))]);
    let srv = serve(vec![
        Reply::Status(200, leak(first)),
        Reply::Status(200, leak(second)),
    ]);
    let scores = vllm(&srv.url)
        .score(&[request(&[1, 2, 3], &[5, 9]), request(&[4], &[6])])
        .unwrap();
    assert_eq!(scores, vec![vec![-0.5, -2.25], vec![-1.5]]);
    let bodies = srv.json_bodies();
    assert_eq!(bodies[0]["prompt"], json!([1, 2, 3, 5, 9]));
    assert_eq!(bodies[1]["prompt"], json!([4, 6]));
    for b in &bodies {
        assert_eq!(b["model"], json!("teacher"));
        assert_eq!(b["prompt_logprobs"], json!(1));
        assert_eq!(b["max_tokens"], json!(1));
    }
    assert!(
        srv.seen.lock().unwrap()[0].starts_with("POST /v1/completions "),
        "{:?}",
        srv.seen
    );
}

#[test]
fn vllm_score_replies_that_do_not_fit_are_typed_errors() {
    let ids = [1, 2, 5, 9];
    let good = |lps: &[f64]| vllm_scores(&ids, lps, &[None; 4]);
    let mut shifted: Value = serde_json::from_str(&good(&[0.0, -1.0, -0.5, -0.25])).unwrap();
    shifted["choices"][0]["prompt_token_ids"] = json!([1, 2, 5, 8]);
    let mut missing: Value = serde_json::from_str(&good(&[0.0, -1.0, -0.5, -0.25])).unwrap();
    missing["choices"][0]["prompt_logprobs"][3] = json!({"8": {"logprob": -0.1, "rank": 1}});
    let mut short: Value = serde_json::from_str(&good(&[0.0, -1.0, -0.5, -0.25])).unwrap();
    short["choices"][0]["prompt_logprobs"] = json!([null, {"2": {"logprob": -1.0}}]);
    let cases: [(String, &str); 5] = [
        (
            r#"{"choices": [{"index": 0, "text": "x", "finish_reason": "length"}]}"#.into(),
            "prompt_logprobs",
        ),
        (short.to_string(), "2 prompt log-probs for 4 ids sent"),
        (shifted.to_string(), "`prompt_token_ids` differ"),
        (missing.to_string(), "no log-prob for the id sent, 9"),
        (good(&[0.0, -1.0, 0.5, -0.25]), "position 2: log-prob 0.5"),
    ];
    for (reply, want) in cases {
        let srv = serve(vec![Reply::Status(200, leak(reply))]);
        let err = vllm(&srv.url)
            .score(&[request(&[1, 2], &[5, 9])])
            .unwrap_err();
        assert!(matches!(err, EngineError::Malformed { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.contains(want) && msg.contains("vllm"), "{want}: {msg}");
    }
}

/// Requests the server cannot score are refused before anything is sent.
#[test]
fn score_requests_without_a_prompt_or_outside_the_vocabulary_are_refused() {
    let srv = serve(vec![]);
    let e = vllm(&srv.url);
    for (r, want) in [
        (request(&[], &[5]), "prompt_ids"),
        (request(&[1], &[10]), "< 10"),
    ] {
        let err = e.score(&[request(&[1], &[2]), r]).unwrap_err();
        assert!(matches!(err, EngineError::InvalidRequest { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.contains(want) && msg.contains("request 1"), "{msg}");
    }
    assert!(srv.seen.lock().unwrap().is_empty());
}

/// SGLang's `input_token_logprobs` from `start` on: `[null, id, null]` first, then
/// `[lp, id, null]`.
fn sglang_item(ids: &[u32], start: usize, lps: &[f64]) -> Value {
    let entries: Vec<Value> = ids[start..]
        .iter()
        .zip(&lps[start..])
        .enumerate()
        .map(|(k, (&id, &lp))| {
            if k == 0 {
                json!([null, id, null])
            } else {
                json!([lp, id, null])
            }
        })
        .collect();
    json!({
        "text": "x", "output_ids": [3],
        "meta_info": {
            "prompt_tokens": ids.len(), "completion_tokens": 1,
            "input_token_logprobs": entries,
            "output_token_logprobs": [[-0.1, 3, null]],
            "finish_reason": {"type": "length", "length": 1},
        },
    })
}

/// One batched `/generate` with each sequence, `logprob_start_len` = prompt length − 1 and
/// `max_new_tokens = 1`; entry k + 1 is response token k. SGLang reports ids at or above its
/// vocabulary size − 1 as 0, which is accepted for such an id only.
#[test]
fn sglang_scores_are_the_input_logprobs_after_the_prompt() {
    let a = sglang_item(&[1, 2, 3, 5, 9], 2, &[0.0, 0.0, -7.0, -0.5, -2.25]);
    let mut b = sglang_item(&[4, 9], 0, &[0.0, -1.5]);
    b["meta_info"]["input_token_logprobs"][1][1] = json!(0);
    let srv = serve(vec![Reply::Status(200, leak(json!([a, b]).to_string()))]);
    let e = SglangEngine::new(&srv.url, policy(0, 5.0), 0, 10).unwrap();
    let scores = e
        .score(&[request(&[1, 2, 3], &[5, 9]), request(&[4], &[9])])
        .unwrap();
    assert_eq!(scores, vec![vec![-0.5, -2.25], vec![-1.5]]);
    let body = srv.json_body(0);
    assert_eq!(body["input_ids"], json!([[1, 2, 3, 5, 9], [4, 9]]));
    assert_eq!(body["logprob_start_len"], json!([2, 0]));
    assert_eq!(body["return_logprob"], json!(true));
    assert_eq!(body["sampling_params"][1]["max_new_tokens"], json!(1));
}

#[test]
fn sglang_score_replies_that_do_not_fit_are_typed_errors() {
    let ids = [1, 2, 5, 9];
    let lps = [0.0, -1.0, -0.5, -0.25];
    // Entries from position 2 instead of 1: every id is one position off.
    let shifted = sglang_item(&[1, 2, 5, 9, 4], 2, &[0.0, 0.0, -1.0, -0.5, -0.25]);
    let mut null_lp = sglang_item(&ids, 1, &lps);
    null_lp["meta_info"]["input_token_logprobs"][2][0] = Value::Null;
    let mut zero = sglang_item(&ids, 1, &lps);
    zero["meta_info"]["input_token_logprobs"][1][1] = json!(0);
    let cases: [(Value, &str); 5] = [
        (json!({"error": "not a list"}), "list"),
        (json!([{"meta_info": {}}]), "input_token_logprobs"),
        (
            json!([sglang_item(&ids, 0, &lps)]),
            "4 input log-probs from position 1, expected 3",
        ),
        (json!([shifted]), "scored token id 9, but 5 was sent"),
        (
            json!([null_lp]),
            "position 3: input_token_logprobs entry is not",
        ),
    ];
    for (reply, want) in cases {
        let srv = serve(vec![Reply::Status(200, leak(reply.to_string()))]);
        let e = SglangEngine::new(&srv.url, policy(0, 5.0), 0, 10).unwrap();
        let err = e.score(&[request(&[1, 2], &[5, 9])]).unwrap_err();
        assert!(matches!(err, EngineError::Malformed { .. }), "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains(want) && msg.contains("sglang"),
            "{want}: {msg}"
        );
    }
    // Id 0 for an id below the vocabulary's last is a wrong id, not the clipping quirk.
    let srv = serve(vec![Reply::Status(200, leak(json!([zero]).to_string()))]);
    let e = SglangEngine::new(&srv.url, policy(0, 5.0), 0, 10).unwrap();
    let msg = e
        .score(&[request(&[1, 2], &[5, 9])])
        .unwrap_err()
        .to_string();
    assert!(msg.contains("scored token id 0, but 5 was sent"), "{msg}");
}
