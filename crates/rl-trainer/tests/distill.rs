//! On-policy distillation (`[distill]`): a teacher equal to the student gives no signal and
//! leaves the weights exactly as they were, in both forms; a different teacher gives a signal
//! that moves the weights; a teacher behind a vLLM or SGLang server trains as the same teacher
//! in process; a teacher with another vocabulary or tokenizer is refused; bad `[distill]`
//! values name their field.

use std::path::Path;

use rl_models::{CausalLm, ModelConfig, Tokenizer};
use rl_trainer::config::TeacherServer;
use rl_trainer::tasks::ArithmeticTask;
use rl_trainer::tasks::{ALPHABET, SPECIAL_TOKENS};
use rl_trainer::{
    DistillForm, DistillSection, Policy, StepMetrics, TrainConfig, Trainer, TrainerError,
};
use serde_json::{Value, json};

mod common;
use common::{B, flat};

/// rl-rollout's scripted HTTP server on 127.0.0.1.
#[path = "../../rl-rollout/tests/common/mod.rs"]
mod scripted;

fn tmp(name: &str) -> common::TmpDir {
    common::tmp("distill", name)
}

/// One-update GRPO on the embedded task without KL and weight decay, so that a zero
/// distillation signal with `reward_weight = 0` is a zero gradient and a zero AdamW step.
fn config(out: &Path, teacher: &Path, form: DistillForm) -> TrainConfig {
    let mut c = common::grpo_one_update(out, 1);
    c.loss.kl = None;
    c.optim.weight_decay = 0.0;
    c.distill = Some(DistillSection {
        teacher: Some(teacher.to_path_buf()),
        server: None,
        form,
        coef: 1.0,
        reward_weight: 0.0,
        beta: 1.0,
        vocab_chunk: 5,
    });
    c
}

fn trainer(
    c: TrainConfig,
    model: CausalLm<B>,
    tok: Tokenizer,
) -> Result<Trainer<B, CausalLm<B>>, TrainerError> {
    let (train, _) = ArithmeticTask::default().split(3, 20, 4).unwrap();
    Trainer::new(c, model, tok, train, None, Default::default())
}

fn one_step(c: TrainConfig, model: &CausalLm<B>, tok: &Tokenizer) -> (StepMetrics, Vec<f32>) {
    let mut t = trainer(c, model.clone(), tok.clone()).unwrap();
    let m = t.step().unwrap();
    (m, flat(t.policy()))
}

#[test]
fn a_teacher_equal_to_the_student_gives_no_signal_and_no_change() {
    let dir = tmp("same");
    let (model, tok) = common::task_model(5, None);
    let teacher = dir.join("teacher");
    model.save(&teacher).unwrap();
    let before = flat(&model);
    for form in [DistillForm::Sampled, DistillForm::Full] {
        let out = dir.join(format!("{form:?}"));
        let (m, after) = one_step(config(&out, &teacher, form), &model, &tok);
        assert_eq!(m.updates, 1, "{form:?}: the update ran");
        match form {
            DistillForm::Sampled => {
                assert_eq!(m.distill_reverse_kl, Some(0.0));
                assert_eq!(m.distill_divergence, None);
            }
            DistillForm::Full => {
                assert_eq!(m.distill_divergence, Some(0.0));
                assert_eq!(m.distill_reverse_kl, None);
            }
        }
        assert_eq!(m.grad_norm, 0.0, "{form:?}");
        assert!(before == after, "{form:?}: the weights changed");
    }
}

#[test]
fn a_different_teacher_gives_a_signal_that_moves_the_weights() {
    let dir = tmp("other");
    let (model, tok) = common::task_model(5, None);
    let (other, _) = common::task_model(9, None);
    let teacher = dir.join("teacher");
    other.save(&teacher).unwrap();
    let before = flat(&model);
    for form in [DistillForm::Sampled, DistillForm::Full] {
        let out = dir.join(format!("{form:?}"));
        let (m, after) = one_step(config(&out, &teacher, form), &model, &tok);
        let signal = match form {
            DistillForm::Sampled => m.distill_reverse_kl,
            DistillForm::Full => m.distill_divergence,
        };
        // Two random models disagree: the reverse KL's estimate is non-zero and the full
        // divergence positive.
        let s = signal.unwrap_or_else(|| panic!("{form:?}: no distillation metric"));
        assert!(s.is_finite() && s != 0.0, "{form:?}: {s}");
        if form == DistillForm::Full {
            assert!(s > 0.0, "a divergence is positive: {s}");
        }
        assert!(m.grad_norm > 0.0, "{form:?}: {}", m.grad_norm);
        assert!(before != after, "{form:?}: the weights did not change");
    }
}

/// A server standing for vLLM (`kind = "vllm"`) or SGLang that scores what it is sent with
/// `teacher`, one sequence at a time at every position after the first (as both engines
/// compute prompt log-probs), and answers in the engine's reply shape
/// (crates/rl-rollout/tests/score.rs checks those shapes field by field).
fn scoring_server(teacher: CausalLm<B>, kind: &'static str) -> scripted::Server {
    let score = move |ids: &[u32]| -> Vec<f32> {
        teacher
            .logprobs_detached(&[ids.to_vec()], &[0], ids.len() - 1, 1.0)
            .unwrap()
            .remove(0)
    };
    let ids_of = |v: &Value| -> Vec<u32> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect()
    };
    scripted::serve_with(move |line, body| {
        if line.starts_with("GET /health") {
            return (200, "{}".into());
        }
        let req: Value = serde_json::from_str(body).unwrap();
        let reply = if kind == "vllm" {
            let ids = ids_of(&req["prompt"]);
            let lps = score(&ids);
            let mut entries = vec![Value::Null];
            entries.extend(ids[1..].iter().zip(&lps).map(|(id, lp)| {
                json!({id.to_string(): {"logprob": lp, "rank": 1, "decoded_token": "x"}})
            }));
            json!({"choices": [{"index": 0, "text": "", "finish_reason": "length",
                "prompt_token_ids": ids, "prompt_logprobs": entries}]})
        } else {
            let starts = req["logprob_start_len"].as_array().unwrap();
            let items: Vec<Value> = req["input_ids"]
                .as_array()
                .unwrap()
                .iter()
                .zip(starts)
                .map(|(seq, start)| {
                    let (ids, start) = (ids_of(seq), start.as_u64().unwrap() as usize);
                    let lps = score(&ids);
                    let entries: Vec<Value> = (start..ids.len())
                        .map(|p| match p {
                            p if p == start => json!([null, ids[p], null]),
                            p => json!([lps[p - 1], ids[p], null]),
                        })
                        .collect();
                    json!({"meta_info": {"input_token_logprobs": entries,
                        "finish_reason": {"type": "length"}}})
                })
                .collect();
            json!(items)
        };
        (200, reply.to_string())
    })
}

#[test]
fn a_teacher_behind_a_server_trains_as_the_same_teacher_in_process() {
    let dir = tmp("server");
    let (model, tok) = common::task_model(5, None);
    let (other, _) = common::task_model(9, None);
    let teacher = dir.join("teacher");
    other.save(&teacher).unwrap();
    let before = flat(&model);
    let in_process = config(&dir.join("model"), &teacher, DistillForm::Sampled);
    let (want, want_w) = one_step(in_process, &model, &tok);
    let update: f32 = before
        .iter()
        .zip(&want_w)
        .map(|(a, b)| (a - b).powi(2))
        .sum();
    for kind in ["vllm", "sglang"] {
        let srv = scoring_server(other.clone(), kind);
        let mut c = config(&dir.join(kind), &teacher, DistillForm::Sampled);
        let d = c.distill.as_mut().unwrap();
        d.teacher = None;
        let (url, timeout_s, max_retries) = (srv.url.clone(), 30.0, 0);
        d.server = Some(match kind {
            "vllm" => TeacherServer::Vllm {
                url,
                model: Some("teacher".into()),
                concurrency: 2,
                timeout_s,
                max_retries,
            },
            _ => TeacherServer::Sglang {
                url,
                timeout_s,
                max_retries,
            },
        });
        let (got, got_w) = one_step(c, &model, &tok);
        assert!(!srv.bodies.lock().unwrap().is_empty(), "{kind}: no request");
        let (a, b) = (
            got.distill_reverse_kl.unwrap(),
            want.distill_reverse_kl.unwrap(),
        );
        assert!(
            (a - b).abs() <= 1e-6 * b.abs().max(1.0),
            "{kind}: reverse KL {a} vs {b}"
        );
        let (a, b) = (got.grad_norm, want.grad_norm);
        assert!(
            (a - b).abs() <= 1e-5 * b.abs(),
            "{kind}: grad norm {a} vs {b}"
        );
        let apart: f32 = got_w
            .iter()
            .zip(&want_w)
            .map(|(a, b)| (a - b).powi(2))
            .sum();
        println!("{kind}: |w - w_in_process|^2 = {apart:e}, |update|^2 = {update:e}");
        assert!(apart <= 1e-6 * update, "{kind}: {apart:e} vs {update:e}");
    }
}

/// A server teacher cannot give the full form's logits, nor log-probs at T != 1; one teacher.
#[test]
fn what_a_server_teacher_cannot_do_is_refused() {
    let base = TrainConfig::default();
    let parse =
        |body: &str| TrainConfig::from_toml_str(body, &base).and_then(|c| c.validate().map(|_| c));
    let server = "[distill.server]\nkind = \"sglang\"\nurl = \"http://127.0.0.1:9\"\n";
    let e = parse(&format!("[distill]\nform = \"full\"\n{server}"))
        .err()
        .unwrap();
    assert!(e.to_string().contains("distill.form"), "{e}");
    let e = parse(&format!(
        "[rollout]\ntemperature = 0.7\n[distill]\n{server}"
    ))
    .err()
    .unwrap();
    assert!(e.to_string().contains("rollout.temperature"), "{e}");
    let e = parse(&format!("[distill]\nteacher = \"t\"\n{server}"))
        .err()
        .unwrap();
    assert!(e.to_string().contains("distill.server"), "{e}");
    let e = parse("[distill]\ncoef = 1.0\n").err().unwrap();
    assert!(e.to_string().contains("distill.teacher"), "{e}");
    let e = parse("[distill.server]\nkind = \"llama_cpp\"\nurl = \"u\"\n")
        .err()
        .unwrap();
    assert!(
        e.to_string().contains("vllm") && e.to_string().contains("sglang"),
        "{e}"
    );
    let c = parse(&format!("[distill]\n{server}")).unwrap();
    assert_eq!(
        c.distill.unwrap().server.unwrap().url(),
        "http://127.0.0.1:9"
    );
}

#[test]
fn a_teacher_with_another_vocabulary_or_tokenizer_is_refused() {
    let dir = tmp("mismatch");
    let (model, tok) = common::task_model(5, None);
    // Another vocabulary size.
    let bigger = dir.join("bigger");
    let mut mc = ModelConfig::tiny(tok.num_defined_ids() + 3);
    mc.eos_token_id = rl_trainer::end_token_ids(&tok);
    let big: CausalLm<B> = mc.init_seeded(1, &Default::default()).unwrap();
    big.save(&bigger).unwrap();
    let c = config(&dir.join("a"), &bigger, DistillForm::Sampled);
    let e = trainer(c, model.clone(), tok.clone())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("distill.teacher") && e.contains("rows"), "{e}");
    // The same size, another tokenizer: the alphabet in reverse order.
    let swapped = dir.join("swapped");
    model.save(&swapped).unwrap();
    let reversed: String = ALPHABET.chars().rev().collect();
    Tokenizer::char_level(&reversed, &SPECIAL_TOKENS)
        .unwrap()
        .save(swapped.join("tokenizer.json"))
        .unwrap();
    let c = config(&dir.join("b"), &swapped, DistillForm::Sampled);
    let e = trainer(c, model.clone(), tok.clone())
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("distill.teacher") && e.contains("id 0") && e.contains("share a tokenizer"),
        "{e}"
    );
    // The same tokenizer saved beside the teacher is accepted.
    tok.save(swapped.join("tokenizer.json")).unwrap();
    let c = config(&dir.join("c"), &swapped, DistillForm::Sampled);
    assert!(trainer(c, model, tok).is_ok());
}

#[test]
fn bad_distill_settings_name_their_field() {
    let base = TrainConfig::default();
    let parse = |body: &str| {
        TrainConfig::from_toml_str(&format!("[distill]\nteacher = \"t\"\n{body}"), &base)
            .and_then(|c| c.validate().map(|_| c))
    };
    let e = parse("form = \"topk\"").err().unwrap().to_string();
    assert!(e.contains("sampled") && e.contains("full"), "{e}");
    let e = parse("coef = 0.0").err().unwrap().to_string();
    assert!(e.contains("distill.coef"), "{e}");
    let e = parse("reward_weight = -1.0").err().unwrap().to_string();
    assert!(e.contains("distill.reward_weight"), "{e}");
    let e = parse("form = \"full\"\nbeta = 1.5")
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("distill.beta"), "{e}");
    let e = parse("form = \"full\"\nvocab_chunk = 0")
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("distill.vocab_chunk"), "{e}");
    let c = parse("form = \"full\"\nbeta = 0.5\nreward_weight = 0.5").unwrap();
    let d = c.distill.unwrap();
    assert_eq!(
        (d.form, d.beta, d.coef, d.reward_weight),
        (DistillForm::Full, 0.5, 1.0, 0.5)
    );
}
