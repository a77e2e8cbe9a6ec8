//! The shared HTTP policy against a scripted server on 127.0.0.1: retries on 5xx and dropped
//! connections, no retry on 4xx or on a garbled body, timeouts, connection refused — every error
//! names the engine, the URL and the request. Bounded: at most a few requests, a few seconds.
//!
//! Then the SGLang and vLLM clients against the same scripted server answering in SGLang's
//! documented `/generate` and `/update_weights_from_disk` formats and vLLM's OpenAI
//! `/v1/completions` and `/v1/models` formats (constructed from the engines' protocol definitions
//! and the response shapes RL frameworks parse, not recorded from live servers, which need a GPU).

mod common;

use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Reply, leak, policy, serve};
use rl_rollout::{
    EngineError, FinishReason, GenerateRequest, HttpClient, RolloutEngine, SamplingParams,
    SglangEngine, VllmEngine, VllmOptions, WeightsRef,
};
use serde_json::json;

#[test]
fn server_errors_and_dropped_connections_are_retried() {
    let srv = serve(vec![
        Reply::Status(500, "{\"error\":\"busy\"}"),
        Reply::Drop,
        Reply::Status(200, "{\"ok\":1}"),
    ]);
    let c = HttpClient::new("test", &srv.url, policy(2, 5.0)).unwrap();
    assert_eq!(
        c.post("/completion", &json!({"a": 1})).unwrap(),
        json!({"ok": 1})
    );
    assert_eq!(srv.seen.lock().unwrap().len(), 3);
    assert!(srv.seen.lock().unwrap()[0].starts_with("POST /completion"));
}

#[test]
fn retries_are_bounded_and_the_last_error_names_everything() {
    let srv = serve(vec![Reply::Status(503, "overloaded"); 2]);
    let c = HttpClient::new("test", &srv.url, policy(1, 5.0)).unwrap();
    let e = c.post("/generate", &json!({})).unwrap_err();
    match &e {
        EngineError::Status {
            status,
            body,
            url,
            request,
            ..
        } => {
            assert_eq!((*status, body.as_str()), (503, "overloaded"));
            assert_eq!(
                (url.as_str(), request.as_str()),
                (srv.url.as_str(), "POST /generate")
            );
        }
        other => panic!("{other}"),
    }
    assert_eq!(srv.seen.lock().unwrap().len(), 2, "1 attempt + 1 retry");
}

#[test]
fn client_errors_and_garbled_bodies_are_not_retried() {
    let srv = serve(vec![Reply::Status(400, "{\"error\":\"bad prompt\"}")]);
    let c = HttpClient::new("test", &srv.url, policy(3, 5.0)).unwrap();
    let e = c.post("/completion", &json!({})).unwrap_err();
    assert!(matches!(e, EngineError::Status { status: 400, .. }), "{e}");
    assert!(e.to_string().contains("bad prompt"));
    drop(srv);

    let srv = serve(vec![Reply::Status(200, "{\"content\": \"tru")]);
    let c = HttpClient::new("test", &srv.url, policy(3, 5.0)).unwrap();
    let e = c.post("/completion", &json!({})).unwrap_err();
    assert!(matches!(e, EngineError::Malformed { .. }), "{e}");
    assert!(
        e.to_string().contains("not JSON") && e.to_string().contains(&srv.url),
        "{e}"
    );
    assert_eq!(srv.seen.lock().unwrap().len(), 1);
}

#[test]
fn a_stalled_server_times_out() {
    let srv = serve(vec![Reply::Stall(Duration::from_secs(3)); 2]);
    let c = HttpClient::new("test", &srv.url, policy(1, 0.5)).unwrap();
    let t = Instant::now();
    let e = c.get("/health").unwrap_err();
    assert!(matches!(e, EngineError::Timeout { attempts: 2, .. }), "{e}");
    assert!(e.to_string().contains("GET /health"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
}

#[test]
fn a_closed_port_is_a_connection_error_and_bad_settings_are_refused() {
    // A port that was just free: bind, read the port, close.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let c = HttpClient::new("test", &url, policy(1, 2.0)).unwrap();
    let e = c.get("/health").unwrap_err();
    assert!(
        matches!(e, EngineError::Connection { attempts: 2, .. }),
        "{e}"
    );
    assert!(e.to_string().contains(&url));

    let e = HttpClient::new("test", "127.0.0.1:8080", policy(1, 2.0)).unwrap_err();
    assert!(e.to_string().contains("`url`"), "{e}");
    let e = HttpClient::new("test", &url, policy(1, 0.0)).unwrap_err();
    assert!(e.to_string().contains("`timeout_s`"), "{e}");
}

fn sglang_request(n: usize, top_k: usize) -> GenerateRequest {
    GenerateRequest {
        prompt_ids: vec![1, 2, 3],
        n,
        params: SamplingParams {
            temperature: 0.7,
            top_k,
            max_new_tokens: 4,
            stop_ids: vec![9],
            ..SamplingParams::default()
        },
    }
}

/// Two requests (n = 2 and n = 1) go out as one batched `/generate` of three samples; the three
/// outputs come back in order, with SGLang's `[logprob, id, text]` triples and finish reasons.
#[test]
fn sglang_generate_sends_one_batch_and_reads_the_documented_reply() {
    const REPLY: &str = r#"[
      {"text": "ab", "output_ids": [5, 9], "meta_info": {"prompt_tokens": 3, "completion_tokens": 2,
        "output_token_logprobs": [[-0.5, 5, null], [-0.25, 9, null]], "finish_reason": {"type": "stop", "matched": 9}}},
      {"text": "cccc", "output_ids": [7, 7, 7, 7], "meta_info": {"prompt_tokens": 3, "completion_tokens": 4,
        "output_token_logprobs": [[-1.0, 7, "c"], [-1.5, 7, "c"], [-2.0, 7, "c"], [-2.5, 7, "c"]], "finish_reason": {"type": "length", "length": 4}}},
      {"text": "d", "output_ids": [4], "meta_info": {"prompt_tokens": 3, "completion_tokens": 1,
        "output_token_logprobs": [[-0.125, 4, "d"]], "finish_reason": {"type": "abort", "message": "paused"}}}
    ]"#;
    let srv = serve(vec![Reply::Status(200, REPLY)]);
    let mut e = SglangEngine::new(&srv.url, policy(0, 5.0), 7, 10).unwrap();
    let out = e
        .generate(&[sglang_request(2, 0), sglang_request(1, 3)])
        .unwrap();
    assert_eq!(out.len(), 2);
    assert_eq!(out[0][0].tokens, vec![5, 9]);
    assert_eq!(out[0][0].logprobs, vec![-0.5, -0.25]);
    assert_eq!(out[0][0].finish, FinishReason::Stop);
    assert_eq!(out[0][1].finish, FinishReason::Length);
    assert_eq!(out[1][0].finish, FinishReason::Abort);
    assert!(out.iter().flatten().all(|c| c.version == 7));
    assert!(srv.seen.lock().unwrap()[0].starts_with("POST /generate "));
    let body = srv.json_body(0);
    assert_eq!(body["input_ids"], json!([[1, 2, 3], [1, 2, 3], [1, 2, 3]]));
    assert_eq!(body["return_logprob"], json!(true));
    let p = &body["sampling_params"];
    assert_eq!(p[0]["top_k"], json!(-1), "top_k 0 (off) is SGLang's -1");
    assert_eq!(p[2]["top_k"], json!(3));
    assert_eq!(p[0]["max_new_tokens"], json!(4));
    assert_eq!(p[0]["stop_token_ids"], json!([9]));
    assert!((p[0]["temperature"].as_f64().unwrap() - 0.7).abs() < 1e-6);
}

#[test]
fn sglang_replies_that_do_not_fit_are_typed_errors() {
    let cases: [(&str, &str); 4] = [
        (
            r#"[{"text": "", "meta_info": {"finish_reason": {"type": "stop"}}}]"#,
            "output_token_logprobs",
        ),
        (
            r#"[{"meta_info": {"output_token_logprobs": [[-0.5, 5]], "finish_reason": {"type": "eos"}}}]"#,
            "finish_reason",
        ),
        (
            r#"[{"meta_info": {"output_token_logprobs": [[-0.5, 50]], "finish_reason": {"type": "stop"}}}]"#,
            "outside the vocabulary",
        ),
        (r#"{"error": "not a list"}"#, "list"),
    ];
    for (reply, want) in cases {
        let srv = serve(vec![Reply::Status(200, reply)]);
        let mut e = SglangEngine::new(&srv.url, policy(0, 5.0), 0, 10).unwrap();
        let err = e.generate(&[sglang_request(1, 0)]).unwrap_err();
        assert!(matches!(err, EngineError::Malformed { .. }), "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains(want) && msg.contains("sglang"),
            "{want}: {msg}"
        );
    }
    let two = r#"[{"meta_info": {"output_token_logprobs": [[-0.5, 5]], "finish_reason": {"type": "stop"}}},
                  {"meta_info": {"output_token_logprobs": [[-0.5, 5]], "finish_reason": {"type": "stop"}}}]"#;
    let srv = serve(vec![Reply::Status(200, two)]);
    let mut e = SglangEngine::new(&srv.url, policy(0, 5.0), 0, 10).unwrap();
    let msg = e.generate(&[sglang_request(1, 0)]).unwrap_err().to_string();
    assert!(msg.contains("2 outputs for 1 samples"), "{msg}");
}

#[test]
fn sglang_weight_updates_send_the_folder_and_check_success() {
    let srv = serve(vec![
        Reply::Status(
            200,
            r#"{"success": true, "message": "Succeeded to update model weights."}"#,
        ),
        Reply::Status(
            200,
            r#"{"success": false, "message": "Failed to load: no safetensors"}"#,
        ),
    ]);
    let mut e = SglangEngine::new(&srv.url, policy(0, 5.0), 3, 10).unwrap();
    let dir = std::path::PathBuf::from("/shared/run/weights");
    assert_eq!(
        e.update_weights(WeightsRef::Directory(dir.clone()), 4)
            .unwrap(),
        4
    );
    assert_eq!(e.version(), 4);
    let body = srv.json_body(0);
    assert_eq!(
        body,
        json!({"model_path": "/shared/run/weights", "weight_version": "4"})
    );
    let err = e.update_weights(WeightsRef::Directory(dir), 5).unwrap_err();
    assert!(
        matches!(err, EngineError::Weights { version: 5, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("no safetensors"));
    assert_eq!(e.version(), 4, "a refused update leaves the version");
    let err = e
        .update_weights(WeightsRef::InProcess(Box::new(0u8)), 5)
        .unwrap_err();
    assert!(
        matches!(err, EngineError::UnsupportedWeights { .. }),
        "{err}"
    );
}

fn vllm_request(n: usize, temperature: f32, top_k: usize, seed: u64) -> GenerateRequest {
    GenerateRequest {
        prompt_ids: vec![1, 2, 3],
        n,
        params: SamplingParams {
            temperature,
            top_k,
            max_new_tokens: 4,
            stop_ids: vec![9],
            seed,
            ..SamplingParams::default()
        },
    }
}

fn vllm(url: &str, processed_logprobs: bool) -> VllmEngine {
    let options = VllmOptions {
        model: Some("qwen".into()),
        concurrency: 1,
        processed_logprobs,
    };
    VllmEngine::new(url, policy(0, 5.0), 7, 10, options, None).unwrap()
}

/// A `/v1/completions` reply with one choice, shaped as vLLM's `CompletionResponse` with
/// `logprobs = 0` and `return_token_ids = true`.
fn vllm_reply(ids: &[u32], lps: &[f32], finish: &str) -> String {
    json!({
        "id": "cmpl-1", "object": "text_completion", "created": 0, "model": "qwen",
        "choices": [{
            "index": 0, "text": "x", "finish_reason": finish, "stop_reason": null,
            "prompt_token_ids": [1, 2, 3], "token_ids": ids,
            "logprobs": {
                "text_offset": vec![0; ids.len()],
                "token_logprobs": lps,
                "tokens": ids.iter().map(|i| format!("token_id:{i}")).collect::<Vec<_>>(),
                "top_logprobs": ids.iter().zip(lps).map(|(i, l)| json!({format!("token_id:{i}"): l})).collect::<Vec<_>>(),
            },
        }],
        "usage": {"prompt_tokens": 3, "completion_tokens": ids.len(), "total_tokens": 3 + ids.len()},
    })
    .to_string()
}

/// Two requests (n = 2 and n = 1) go out as three `/v1/completions`, one per sample, with the
/// sample's seed (seed + k), `logprobs = 0` and `return_token_ids`; ids, log-probs and finish
/// reasons come back in request order.
#[test]
fn vllm_generate_sends_one_request_per_sample_and_reads_the_documented_reply() {
    let srv = serve(vec![
        Reply::Status(200, leak(vllm_reply(&[5, 9], &[-0.5, -0.25], "stop"))),
        Reply::Status(
            200,
            leak(vllm_reply(
                &[7, 7, 7, 7],
                &[-1.0, -1.5, -2.0, -2.5],
                "length",
            )),
        ),
        Reply::Status(200, leak(vllm_reply(&[4], &[-0.125], "abort"))),
    ]);
    let mut e = vllm(&srv.url, false);
    let out = e
        .generate(&[vllm_request(2, 1.0, 0, 10), vllm_request(1, 0.0, 3, 20)])
        .unwrap();
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].len(), 2);
    assert_eq!(out[0][0].tokens, vec![5, 9]);
    assert_eq!(out[0][0].logprobs, vec![-0.5, -0.25]);
    assert_eq!(out[0][0].finish, FinishReason::Stop);
    assert_eq!(out[0][1].finish, FinishReason::Length);
    assert_eq!(out[1][0].finish, FinishReason::Abort);
    assert!(out.iter().flatten().all(|c| c.version == 7));
    let seen = srv.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    assert!(seen.iter().all(|l| l.starts_with("POST /v1/completions ")));
    let bodies = srv.json_bodies();
    let seeds: Vec<_> = bodies.iter().map(|b| b["seed"].clone()).collect();
    assert_eq!(seeds, vec![json!(10), json!(11), json!(20)]);
    for b in &bodies {
        assert_eq!(b["model"], json!("qwen"));
        assert_eq!(b["prompt"], json!([1, 2, 3]));
        assert_eq!(
            (b["n"].clone(), b["logprobs"].clone()),
            (json!(1), json!(0))
        );
        assert_eq!(b["return_token_ids"], json!(true));
        assert_eq!(b["max_tokens"], json!(4));
        assert_eq!(b["stop_token_ids"], json!([9]));
    }
    assert_eq!(bodies[0]["top_k"], json!(-1), "top_k 0 (off) is vLLM's -1");
    assert_eq!(bodies[2]["top_k"], json!(3));
}

/// `GET /v1/models` names the model when none is configured; the probe fails early, naming the
/// missing capability, when token ids or log-probs are absent.
#[test]
fn vllm_capabilities_are_checked_at_start() {
    let models = r#"{"object": "list", "data": [{"id": "/models/qwen3", "object": "model", "max_model_len": 4096}]}"#;
    let no_ids = r#"{"choices": [{"index": 0, "text": "a", "finish_reason": "length",
        "logprobs": {"token_logprobs": [-0.5], "tokens": ["a"], "text_offset": [0], "top_logprobs": [null]}}]}"#;
    let no_logprobs = r#"{"choices": [{"index": 0, "text": "a", "finish_reason": "length",
        "token_ids": [5], "logprobs": null}]}"#;
    let srv = serve(vec![
        Reply::Status(200, models),
        Reply::Status(200, no_ids),
        Reply::Status(200, no_logprobs),
        Reply::Status(200, leak(vllm_reply(&[5], &[-0.5], "length"))),
    ]);
    let options = VllmOptions {
        concurrency: 1,
        ..VllmOptions::default()
    };
    let e = VllmEngine::new(&srv.url, policy(0, 5.0), 0, 10, options, None).unwrap();
    assert_eq!(e.model(), "/models/qwen3");
    let msg = e.probe(&[1, 2]).unwrap_err().to_string();
    assert!(msg.contains("token ids") && msg.contains("0.10.2"), "{msg}");
    let msg = e.probe(&[1, 2]).unwrap_err().to_string();
    assert!(msg.contains("log-probs"), "{msg}");
    e.probe(&[1, 2]).unwrap();
    let seen = srv.seen.lock().unwrap().clone();
    assert!(seen[0].starts_with("GET /v1/models "), "{seen:?}");
    let probe = srv.json_body(1);
    assert_eq!(probe["model"], json!("/models/qwen3"));
    assert_eq!(probe["max_tokens"], json!(1));
}

#[test]
fn vllm_replies_that_do_not_fit_are_typed_errors() {
    let no_ids = r#"{"choices": [{"index": 0, "text": "a", "finish_reason": "stop",
        "logprobs": {"token_logprobs": [-0.5]}}]}"#;
    let cases: [(String, &str); 5] = [
        (no_ids.to_string(), "token_ids"),
        (vllm_reply(&[5], &[-0.5], "eos"), "finish_reason"),
        (vllm_reply(&[50], &[-0.5], "stop"), "outside the vocabulary"),
        (vllm_reply(&[5, 9], &[-0.5], "stop"), "log-probs"),
        (r#"{"choices": []}"#.to_string(), "0 choices for n = 1"),
    ];
    for (reply, want) in cases {
        let srv = serve(vec![Reply::Status(200, leak(reply))]);
        let mut e = vllm(&srv.url, false);
        let err = e.generate(&[vllm_request(1, 1.0, 0, 0)]).unwrap_err();
        assert!(matches!(err, EngineError::Malformed { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.contains(want) && msg.contains("vllm"), "{want}: {msg}");
    }
}

/// At T != 1 the default server reports untempered log-probs: refused before anything is sent,
/// as is top-k at T != 1 with processed log-probs; T != 1 without truncation goes through.
#[test]
fn vllm_refuses_sampling_whose_logprobs_it_cannot_report() {
    let srv = serve(vec![Reply::Status(
        200,
        leak(vllm_reply(&[5], &[-0.5], "stop")),
    )]);
    let mut raw = vllm(&srv.url, false);
    let err = raw.generate(&[vllm_request(1, 0.7, 0, 0)]).unwrap_err();
    assert!(
        matches!(
            err,
            EngineError::InvalidRequest {
                field: "temperature",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("processed_logprobs"), "{err}");
    let mut processed = vllm(&srv.url, true);
    let err = processed
        .generate(&[vllm_request(1, 0.7, 3, 0)])
        .unwrap_err();
    assert!(err.to_string().contains("truncated"), "{err}");
    assert!(srv.seen.lock().unwrap().is_empty(), "nothing was sent");
    let out = processed.generate(&[vllm_request(1, 0.7, 0, 0)]).unwrap();
    assert_eq!(out[0][0].tokens, vec![5]);
}

/// Weight updates go through the reload hook (a restart of `vllm serve FOLDER` in the trainer),
/// then the engine re-reads the served model's name; a failed or missing hook is a typed error
/// that leaves the version.
#[test]
fn vllm_weight_updates_go_through_the_reload_hook() {
    let srv = serve(vec![Reply::Status(
        200,
        r#"{"object": "list", "data": [{"id": "/run/weights/v4"}]}"#,
    )]);
    let loaded = Arc::new(Mutex::new(Vec::new()));
    let log = loaded.clone();
    let mut fail_next = false;
    let reload: rl_rollout::Reload = Box::new(move |dir: &std::path::Path| {
        if fail_next {
            return Err("vllm serve exited: CUDA out of memory".into());
        }
        fail_next = true;
        log.lock().unwrap().push(dir.to_path_buf());
        Ok(())
    });
    let options = VllmOptions {
        model: Some("qwen".into()),
        concurrency: 1,
        processed_logprobs: false,
    };
    let mut e = VllmEngine::new(&srv.url, policy(0, 5.0), 3, 10, options, Some(reload)).unwrap();
    let dir = std::path::PathBuf::from("/run/weights/v4");
    assert_eq!(
        e.update_weights(WeightsRef::Directory(dir.clone()), 4)
            .unwrap(),
        4
    );
    assert_eq!(e.version(), 4);
    assert_eq!(e.model(), "/run/weights/v4");
    assert_eq!(
        loaded.lock().unwrap().as_slice(),
        std::slice::from_ref(&dir)
    );
    let err = e
        .update_weights(WeightsRef::Directory(dir.clone()), 5)
        .unwrap_err();
    assert!(
        matches!(err, EngineError::Weights { version: 5, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("out of memory"), "{err}");
    assert_eq!(e.version(), 4, "a failed update leaves the version");

    let mut no_hook = vllm(&srv.url, false);
    let err = no_hook
        .update_weights(WeightsRef::Directory(dir), 8)
        .unwrap_err();
    assert!(err.to_string().contains("no reload hook"), "{err}");
    assert_eq!(no_hook.version(), 7);
}
