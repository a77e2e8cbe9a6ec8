//! Rollout engines inside the trainer: the local engine's streams, batches and weight updates,
//! temperature-consistent log-probs, the importance-sampling correction with an engine whose
//! log-probs are off by known amounts, staleness, and synchronous vs background engines.

use std::path::Path;
use std::sync::{Arc, Mutex};

use burn::backend::Flex;
use burn::module::AutodiffModule;
use burn::prelude::*;
use rl_loss::IsCorrection;
use rl_models::{CausalLm, GenerationConfig, RowSeed};
use rl_rollout::{
    AnswerLine, Completion, EngineError, FinishReason, GenerateRequest, RolloutEngine,
    SamplingParams, WeightVersion, WeightsKind, WeightsRef, end_at_answer_lines,
};
use rl_trainer::metrics::TIMING_FIELDS;
use rl_trainer::tasks::ArithmeticTask;
use rl_trainer::{LocalEngine, Policy, StepMetrics, TrainConfig, Trainer, read_metrics};

mod common;
use common::B;
type Inner = Flex;

fn tmp(name: &str) -> common::TmpDir {
    common::tmp("rollout", name)
}

/// A tiny model with an init scale 10× HF's, so that log-probs differ by position.
fn model(seed: u64) -> CausalLm<B> {
    common::task_model(seed, Some(0.2)).0
}

fn config(out: &Path, steps: usize) -> TrainConfig {
    common::grpo_one_update(out, steps)
}

fn trainer(cfg: TrainConfig, m: CausalLm<B>) -> Trainer<B, CausalLm<B>> {
    let tok = ArithmeticTask::tokenizer().unwrap();
    let (train, _) = ArithmeticTask::default().split(3, 20, 4).unwrap();
    Trainer::new(cfg, m, tok, train, None, Default::default()).unwrap()
}

fn without_timing(m: &StepMetrics) -> serde_json::Value {
    let mut v = serde_json::to_value(m).unwrap();
    for f in TIMING_FIELDS {
        v.as_object_mut().unwrap().remove(f);
    }
    v
}

fn flat(m: &CausalLm<B>) -> Vec<f32> {
    let dir = tmp(&format!("flat-{:p}", m));
    Policy::<B>::save(m, &dir).unwrap();
    let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
    bytes
        .chunks(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c.get(3).copied().unwrap_or(0)]))
        .collect()
}

fn request(prompt: Vec<u32>, n: usize, seed: u64, temperature: f32) -> GenerateRequest {
    GenerateRequest {
        prompt_ids: prompt,
        n,
        params: SamplingParams {
            temperature,
            max_new_tokens: 5,
            seed,
            ..SamplingParams::default()
        },
    }
}

/// Sample k of a request with seed s draws stream o + k of s, o counting the earlier samples
/// with the same seed; one call is one batch; every completion carries the engine's version;
/// weight updates take the engine's own model type in process, or a saved folder.
#[test]
fn local_engine_streams_batches_and_weight_updates() {
    let m = model(1).valid();
    let mut engine = LocalEngine::new(m.clone(), 3, 0, None);
    let (p1, p2) = (vec![5u32, 6, 7], vec![8u32, 9]);
    let reqs = vec![
        request(p1.clone(), 2, 11, 1.0),
        request(p2.clone(), 1, 11, 1.0),
        request(p1.clone(), 1, 12, 1.0),
    ];
    let out = engine.generate(&reqs).unwrap();
    assert_eq!(out.iter().map(Vec::len).collect::<Vec<_>>(), vec![2, 1, 1]);
    // The same four rows as one batch of the model's sampler, streams written out by hand.
    let cfg = GenerationConfig {
        max_new_tokens: 5,
        ..GenerationConfig::default()
    };
    let rows = [
        (p1.clone(), 11, 0),
        (p1.clone(), 11, 1),
        (p2.clone(), 11, 2),
        (p1.clone(), 12, 0),
    ];
    let prompts: Vec<Vec<u32>> = rows.iter().map(|r| r.0.clone()).collect();
    let streams: Vec<RowSeed> = rows
        .iter()
        .map(|r| RowSeed {
            seed: r.1,
            stream: r.2,
        })
        .collect();
    let want = rl_models::generate_seeded(&m, &prompts, &cfg, &streams).unwrap();
    let got: Vec<&Completion> = out.iter().flatten().collect();
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g.tokens, w.tokens);
        assert_eq!(g.logprobs, w.logprobs);
        assert_eq!(g.version, 3);
        assert_eq!(
            g.finish == FinishReason::Length,
            w.finish_reason == rl_models::FinishReason::Length
        );
    }
    // Distinct seeds are distinct streams: the two samples of request 0 differ from each other
    // in at least their log-prob sequences (a random tiny model over ~20 ids).
    assert_ne!(got[0].logprobs, got[1].logprobs);

    let e = engine
        .update_weights(WeightsRef::InProcess(Box::new(42u32)), 4)
        .unwrap_err();
    assert!(matches!(e, EngineError::Weights { version: 4, .. }), "{e}");
    assert!(e.to_string().contains("CausalLm"), "{e}");
    assert_eq!(engine.version(), 3);

    let other = model(2);
    let dir = tmp("weights");
    Policy::<B>::save(&other, &dir).unwrap();
    assert_eq!(
        engine
            .update_weights(WeightsRef::Directory(dir.to_path_buf()), 4)
            .unwrap(),
        4
    );
    let again = engine.generate(&reqs[..1]).unwrap();
    let want =
        rl_models::generate_seeded(&other.valid(), &prompts[..2], &cfg, &streams[..2]).unwrap();
    assert_eq!(again[0][0].tokens, want[0].tokens);
    assert_eq!(again[0][1].version, 4);
    assert_eq!(engine.weights_kind(), WeightsKind::InProcess);

    let bad = engine.generate(&[request(vec![], 1, 0, 1.0)]).unwrap_err();
    assert!(bad.to_string().contains("prompt_ids"), "{bad}");
}

/// At T = 0.7 the engine reports log softmax(logits / T) of the sampled tokens: equal (1e-4) to
/// the same values computed here from the model's full logits, and far from the T = 1 values.
/// Inside a trainer step at T = 0.7 the engine's and the trainer's π_old agree within 1e-4 and
/// the first update's ratio π_θ / π_old is 1.
/// The in-process engine stops a sample at the end of its answer line, where the cut that the
/// HTTP engines apply to what their server returns ends the same sample drawn without the line
/// (`rl_rollout::end_at_answer_lines`): the same tokens and finish reasons, and the same
/// log-probs up to the rounding of a batch that sheds its stopped rows sooner (1e-5).
#[test]
fn the_local_engine_stops_where_the_answer_line_cut_ends() {
    let m = model(4).valid();
    let mut engine = LocalEngine::new(m, 0, 0, None);
    let reqs: Vec<GenerateRequest> = (0..12)
        .map(|seed| {
            let mut r = request(vec![5, 6, 7], 1, seed, 1.0);
            r.params.max_new_tokens = 16;
            r
        })
        .collect();
    let free = engine.generate(&reqs).unwrap();
    // Markers and line ends from what sample 0 drew, so that the rule fires.
    let t = &free[0][0].tokens;
    let line = AnswerLine {
        markers: vec![t[1]],
        line_ends: vec![t[3]],
    };
    let with_line: Vec<GenerateRequest> = reqs
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r.params.answer_line = Some(line.clone());
            r
        })
        .collect();
    let mut cut = free.clone();
    end_at_answer_lines(&with_line, &mut cut);
    let stopped = engine.generate(&with_line).unwrap();
    for (s, c) in stopped.iter().flatten().zip(cut.iter().flatten()) {
        assert_eq!((&s.tokens, s.finish), (&c.tokens, c.finish));
        for (a, b) in s.logprobs.iter().zip(&c.logprobs) {
            assert!((a - b).abs() < 1e-5, "{a} vs {b}");
        }
    }
    // The rule fired (sample 0 at least) and left some samples whole.
    let shortened = cut
        .iter()
        .flatten()
        .zip(free.iter().flatten())
        .filter(|(c, f)| c.tokens.len() < f.tokens.len())
        .count();
    assert!((1..12).contains(&shortened), "{shortened} of 12 cut");
}

#[test]
fn tempered_log_probs_agree_between_engine_and_trainer() {
    let m = model(3);
    let inner: CausalLm<Inner> = m.valid();
    let mut engine = LocalEngine::new(inner.clone(), 0, 0, None);
    let prompt = vec![5u32, 6, 7, 8];
    let out = engine
        .generate(&[request(prompt.clone(), 3, 9, 0.7)])
        .unwrap();
    let mut max_t1_gap = 0.0f32;
    for c in &out[0] {
        let ids: Vec<i64> = prompt.iter().chain(&c.tokens).map(|&t| t as i64).collect();
        let l = ids.len();
        let logits: Vec<f32> = inner
            .forward(
                Tensor::from_data(TensorData::new(ids.clone(), [1, l]), &Default::default()),
                None,
                None,
            )
            .unwrap()
            .into_data()
            .to_vec()
            .unwrap();
        let v = inner.config().vocab_size;
        for (j, (&tok, &lp)) in c.tokens.iter().zip(&c.logprobs).enumerate() {
            let row = &logits[(prompt.len() - 1 + j) * v..(prompt.len() + j) * v];
            let lse = |t: f64| {
                let m = row
                    .iter()
                    .fold(f64::NEG_INFINITY, |a, &x| a.max(x as f64 / t));
                m + row
                    .iter()
                    .map(|&x| (x as f64 / t - m).exp())
                    .sum::<f64>()
                    .ln()
            };
            let want = row[tok as usize] as f64 / 0.7 - lse(0.7);
            assert!((lp as f64 - want).abs() < 1e-4, "token {j}: {lp} vs {want}");
            let t1 = row[tok as usize] as f64 - lse(1.0);
            max_t1_gap = max_t1_gap.max((lp as f64 - t1).abs() as f32);
        }
    }
    assert!(
        max_t1_gap > 1e-2,
        "T = 0.7 and T = 1 log-probs too close to tell apart: {max_t1_gap}"
    );

    let out = tmp("tempered");
    let mut cfg = config(&out, 1);
    cfg.rollout.temperature = 0.7;
    let mut t = trainer(cfg, m);
    let s = t.step().unwrap();
    assert!(s.logprob_mismatch_max < 1e-4, "{}", s.logprob_mismatch_max);
    assert!(
        (s.ratio_mean - 1.0).abs() < 1e-4 && (s.ratio_max - 1.0).abs() < 1e-4,
        "{} {}",
        s.ratio_mean,
        s.ratio_max
    );
    assert_eq!(s.updates, 1);
}

/// The local engine with its replies changed by `tweak` before the trainer sees them: a
/// generator whose log-probs or versions are off by known amounts.
struct Tweaked {
    inner: LocalEngine<CausalLm<Inner>>,
    tweak: Tweak,
}

/// What [`Tweaked`] does to a call's replies.
type Tweak = Box<dyn FnMut(&mut [Vec<Completion>]) + Send>;

impl RolloutEngine for Tweaked {
    fn name(&self) -> String {
        "tweaked local".into()
    }
    fn generate(
        &mut self,
        requests: &[GenerateRequest],
    ) -> Result<Vec<Vec<Completion>>, EngineError> {
        let mut out = self.inner.generate(requests)?;
        (self.tweak)(&mut out);
        Ok(out)
    }
    fn update_weights(
        &mut self,
        w: WeightsRef,
        v: WeightVersion,
    ) -> Result<WeightVersion, EngineError> {
        self.inner.update_weights(w, v)
    }
    fn version(&self) -> WeightVersion {
        self.inner.version()
    }
    fn weights_kind(&self) -> WeightsKind {
        self.inner.weights_kind()
    }
}

/// One GRPO step through an engine whose log-probs are the local engine's minus δ_t (δ = 1 at
/// even positions t, 0.25 at odd ones), which records every completion's length: log π_old − log π_rollout = δ_t up to the float
/// rounding between two forward passes of the same weights (< 1e-5), so by hand, over the N
/// trained tokens of which E sit at even positions (E = Σ ⌈L/2⌉ over the responses):
/// mismatch mean = (E·1 + (N − E)·0.25) / N and max = 1; token TIS with C = 2 truncates exactly
/// the even positions (e¹ = 2.718 > 2, e^0.25 = 1.284 < 2): E / N; a token mask [0.5, 2] masks
/// the same E / N; the geometric-mean sequence mask [0.99, 1.01] masks every sequence (its mean
/// δ is at least 0.25 > ln 1.01); `none` only measures.
#[test]
fn importance_weights_take_hand_computed_values_with_a_perturbed_engine() {
    let cases = [
        (IsCorrection::None, "none"),
        (IsCorrection::TokenTis { cap: 2.0 }, "tis"),
        (
            IsCorrection::TokenMask {
                low: 0.5,
                high: 2.0,
            },
            "token_mask",
        ),
        (
            IsCorrection::SequenceMask {
                low: 0.99,
                high: 1.01,
            },
            "seq_mask",
        ),
    ];
    for (correction, name) in cases {
        let out = tmp(name);
        let mut cfg = config(&out, 1);
        cfg.loss.is_correction = correction;
        let t = trainer(cfg, model(4));
        let lengths = Arc::new(Mutex::new(Vec::new()));
        let seen = lengths.clone();
        let engine = Tweaked {
            inner: t.local_engine(),
            tweak: Box::new(move |out| {
                for c in out.iter_mut().flatten() {
                    for (t, lp) in c.logprobs.iter_mut().enumerate() {
                        *lp -= if t % 2 == 0 { 1.0 } else { 0.25 };
                    }
                    seen.lock().unwrap().push(c.tokens.len());
                }
            }),
        };
        let mut t = t.with_engine(Box::new(engine)).unwrap();
        assert_eq!(t.is_correction(), correction);
        let s = t.step().unwrap();
        let lens = lengths.lock().unwrap().clone();
        assert_eq!(
            lens.len(),
            16,
            "{name}: one round of 4 × 4, all trained (no filter)"
        );
        let n: usize = lens.iter().sum();
        let even: usize = lens.iter().map(|l| l.div_ceil(2)).sum();
        let mean = (even as f64 + 0.25 * (n - even) as f64) / n as f64;
        assert!(
            (s.logprob_mismatch - mean).abs() < 1e-5,
            "{name}: {} vs {mean}",
            s.logprob_mismatch
        );
        assert!((s.logprob_mismatch_max - 1.0).abs() < 1e-5, "{name}");
        let frac = even as f64 / n as f64;
        let (truncated, masked) = match correction {
            IsCorrection::None => (0.0, 0.0),
            IsCorrection::TokenTis { .. } => (frac, 0.0),
            IsCorrection::TokenMask { .. } => (0.0, frac),
            _ => (0.0, 1.0),
        };
        assert_eq!(s.is_frac_truncated, truncated, "{name}");
        assert_eq!(s.is_frac_masked, masked, "{name}");
        // The masks reach the loss: the ratio statistics are over the tokens left in it (the
        // first update's ratio is 1 on each of them; with none left the mean is 0).
        if matches!(correction, IsCorrection::SequenceMask { .. }) {
            assert_eq!(
                s.ratio_mean, 0.0,
                "every token masked: nothing left to train on"
            );
        } else {
            assert!(
                (s.ratio_mean - 1.0).abs() < 1e-5,
                "{name}: {}",
                s.ratio_mean
            );
        }
    }
}

/// Synchronous rollouts (k = 0): in step 2 (policy version 1) the first round claims version 0,
/// one version stale, so its 4 groups are dropped and counted, a second round fills the batch,
/// and the 16 dropped responses still count against the rollout budget (16 + 32 in total).
#[test]
fn stale_rollouts_are_dropped_and_counted() {
    let out = tmp("stale");
    let t = trainer(config(&out, 2), model(5));
    // The second call claims its completions came from weights two versions older.
    let mut calls = 0;
    let engine = Tweaked {
        inner: t.local_engine(),
        tweak: Box::new(move |out| {
            calls += 1;
            if calls == 2 {
                for c in out.iter_mut().flatten() {
                    c.version = c.version.saturating_sub(2);
                }
            }
        }),
    };
    let mut t = t.with_engine(Box::new(engine)).unwrap();
    let s1 = t.step().unwrap();
    assert_eq!(
        (s1.stale_groups_dropped, s1.gen_rounds, s1.weight_version),
        (0, 1, 0)
    );
    let s2 = t.step().unwrap();
    assert_eq!(s2.weight_version, 1);
    assert_eq!(s2.stale_groups_dropped, 4);
    assert_eq!(
        s2.gen_rounds, 2,
        "the dropped round counts against batch.max_gen_rounds"
    );
    assert_eq!(s2.groups_used, 4);
    assert_eq!((s2.staleness_max, s2.staleness_mean), (0, 0.0));
    assert_eq!(s2.rollouts_total, 48);
}

/// k = 0 with the engine on a background thread gives the synchronous trainer's metrics and
/// weights exactly; k = 1 trains on rollouts one version old after the first step.
#[test]
fn background_engine_at_k0_matches_inline_and_k1_runs_one_version_behind() {
    let run = |name: &str, k: usize, background: bool| {
        let out = tmp(name);
        let mut cfg = config(&out, 3);
        cfg.rollout.max_staleness = k;
        let t = trainer(cfg, model(6));
        let mut t = if background {
            let e = t.local_engine();
            t.with_engine_in_background(Box::new(e)).unwrap()
        } else {
            t
        };
        t.run(|_| {}).unwrap();
        let m = read_metrics(&out.join("metrics.jsonl")).unwrap();
        (m, flat(t.policy()))
    };
    let (inline, w_inline) = run("inline", 0, false);
    let (bg, w_bg) = run("background", 0, true);
    assert_eq!(inline.len(), 3);
    assert_eq!(
        inline.iter().map(without_timing).collect::<Vec<_>>(),
        bg.iter().map(without_timing).collect::<Vec<_>>()
    );
    assert_eq!(w_inline, w_bg);
    let (k1, _) = run("k1", 1, false);
    assert_eq!(
        k1[0].staleness_max, 0,
        "step 1: nothing generated before it"
    );
    assert!(
        k1[1..]
            .iter()
            .all(|m| m.staleness_max == 1 && m.weight_version >= 1)
    );
    assert!(
        k1[1].logprob_mismatch > 1e-4,
        "stale rollouts differ from π_old: {}",
        k1[1].logprob_mismatch
    );
    assert!(
        inline
            .iter()
            .all(|m| m.staleness_max == 0 && m.logprob_mismatch < 1e-5)
    );
}

/// Bad rollout and correction settings are errors naming the field.
#[test]
fn bad_rollout_settings_name_the_field() {
    let base = TrainConfig::default();
    let err = |toml: &str| {
        TrainConfig::from_toml_str(toml, &base)
            .unwrap_err()
            .to_string()
    };
    let e = err("[loss.is_correction]\nname = \"tis\"\n");
    assert!(e.contains("tis") && e.contains("token_tis"), "{e}");
    let e = err("[loss.is_correction]\nname = \"token_tis\"\ncap = 0.0\n");
    assert!(e.contains("is_correction.cap"), "{e}");
    let e = err("[loss.is_correction]\nname = \"token_mask\"\nlow = 2.0\nhigh = 1.0\n");
    assert!(e.contains("is_correction.high"), "{e}");
    let e = err("[rollout]\nmax_staleness = -1\n");
    assert!(e.contains("max_staleness"), "{e}");
    let e = err("[rollout.engine]\nkind = \"sglang\"\nurl = \"gpu-node:30000\"\n");
    assert!(e.contains("rollout.engine.url"), "{e}");
    let e = err("[rollout.engine]\nkind = \"vlm\"\n");
    assert!(
        e.contains("llama_cpp") && e.contains("sglang") && e.contains("vllm"),
        "{e}"
    );
    let e = err("[rollout.engine]\nkind = \"vllm\"\n");
    assert!(e.contains("server"), "{e}");
    let e = err("[rollout.engine]\nkind = \"vllm\"\nserver = \"vllm\"\nconcurrency = 0\n");
    assert!(e.contains("rollout.engine.concurrency"), "{e}");
    let e = err("[rollout.engine]\nkind = \"vllm\"\nserver = \"vllm\"\nstartup_timeout_s = 0.0\n");
    assert!(e.contains("rollout.engine.startup_timeout_s"), "{e}");
    let ok = TrainConfig::from_toml_str("[loss.is_correction]\nname = \"sequence_mask\"\n", &base)
        .unwrap();
    assert_eq!(
        ok.loss.is_correction,
        IsCorrection::SequenceMask {
            low: 0.99,
            high: 1.01
        }
    );
}

/// The error of building a trainer whose `[rollout.engine]` (in `toml`) cannot start.
fn engine_start_error(out: &Path, toml: &str) -> String {
    let cfg = TrainConfig::from_toml_str(toml, &config(out, 1)).unwrap();
    let tok = ArithmeticTask::tokenizer().unwrap();
    let (train, _) = ArithmeticTask::default().split(3, 20, 4).unwrap();
    match Trainer::<B, CausalLm<B>>::new(cfg, model(7), tok, train, None, Default::default()) {
        Ok(_) => panic!("a trainer without its engine"),
        Err(e) => e.to_string(),
    }
}

/// A vLLM engine whose executable is not there: building the trainer fails at once with an
/// error naming the program (the trainer starts `vllm serve` itself; no fallback).
#[test]
fn a_missing_vllm_executable_is_an_error_at_start() {
    let out = tmp("vllm");
    let toml = "[rollout.engine]\nkind = \"vllm\"\nserver = \"/nonexistent/bin/vllm\"\nstartup_timeout_s = 5.0\n";
    let e = engine_start_error(&out, toml);
    assert!(
        e.contains("/nonexistent/bin/vllm") && e.contains("cannot start"),
        "{e}"
    );
}

/// An SGLang engine whose server is not there: building the trainer fails at once with an error
/// naming SGLang, its URL and the health request (no silent fallback to the local engine).
#[test]
fn an_unreachable_sglang_server_is_an_error_at_start() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = tmp("sglang");
    let url = format!("http://127.0.0.1:{port}");
    let toml = format!(
        "[rollout.engine]\nkind = \"sglang\"\nurl = \"{url}\"\ntimeout_s = 2.0\nmax_retries = 0\n"
    );
    let e = engine_start_error(&out, &toml);
    assert!(
        e.contains("sglang") && e.contains(&url) && e.contains("GET /health"),
        "{e}"
    );
}
