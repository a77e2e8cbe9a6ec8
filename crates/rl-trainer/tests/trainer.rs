//! rl-trainer: presets against the papers, TOML overrides, data loading (DAPO-Math-17K layout,
//! JSON lines and Parquet), the prompt sampler, and tiny end-to-end runs with checkpoint/resume.

use std::path::{Path, PathBuf};

use rl_advantage::EstimatorConfig;
use rl_loss::{Aggregation, KlEstimator, PolicyLoss};
use rl_models::CausalLm;
use rl_sampler::FilterConfig;
use rl_trainer::config::{DataSection, PromptTemplate};
use rl_trainer::data::{Dataset, PromptRenderer, PromptSampler, PromptText};
use rl_trainer::metrics::TIMING_FIELDS;
use rl_trainer::tasks::ArithmeticTask;
use rl_trainer::{TrainConfig, Trainer, TrainerError, latest_checkpoint, read_metrics};
use rl_verifier::OverlongPolicy;

mod common;
use common::B;

// The checkout this test runs from (cargo sets CARGO_MANIFEST_DIR when it runs a test); the
// compile-time value can name another checkout when a build cache is shared between clones.
fn data_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
        .join("tests/data")
}

fn tmp(name: &str) -> common::TmpDir {
    common::tmp("trainer", name)
}

/// Paper defaults (algorithms.md §2–§6): DAPO clip-higher 0.2/0.28, token-mean, dynamic
/// sampling, soft overlong punishment with L_cache = L_max/5 (4096/20480), no KL; DA3PO adds
/// λ = 2, τ = 0.5; GRPO uses k3 KL with β = 0.04 and seq-mean-token-mean; Dr. GRPO normalises
/// by a constant (the max length); GSPO clips at 3e-4/4e-4 per sequence with 4 mini-batches.
#[test]
fn presets_carry_the_papers_defaults() {
    let mut c = TrainConfig::default();
    c.rollout.max_new_tokens = 20480;
    c.apply_preset("dapo").unwrap();
    assert_eq!(
        c.loss.policy,
        PolicyLoss::Ppo {
            clip_low: 0.2,
            clip_high: 0.28,
            dual_clip: Some(10.0)
        }
    );
    assert_eq!(c.loss.aggregation, Aggregation::TokenMean);
    assert!(c.loss.kl.is_none());
    assert!(matches!(c.filter, FilterConfig::DynamicSampling { .. }));
    assert_eq!(
        c.reward.overlong,
        OverlongPolicy::SoftPunish {
            max_len: 20480,
            cache_len: 4096,
            penalty_factor: 1.0,
            mask_truncated: false
        }
    );
    c.apply_preset("da3po").unwrap();
    assert!(
        matches!(c.advantage, EstimatorConfig::Da3po { lambda, tau, .. } if lambda == 2.0 && tau == 0.5)
    );
    c.apply_preset("grpo").unwrap();
    let kl = c.loss.kl.unwrap();
    assert_eq!((kl.estimator, kl.coef), (KlEstimator::K3, 0.04));
    assert_eq!(c.loss.aggregation, Aggregation::SeqMeanTokenMean);
    assert_eq!(c.filter, FilterConfig::None);
    c.apply_preset("dr_grpo").unwrap();
    assert_eq!(
        c.loss.aggregation,
        Aggregation::SeqMeanTokenSumNorm { constant: 20480.0 }
    );
    assert!(matches!(c.advantage, EstimatorConfig::DrGrpo { .. }));
    c.apply_preset("gspo").unwrap();
    assert_eq!(
        c.loss.policy,
        PolicyLoss::Gspo {
            clip_low: 3e-4,
            clip_high: 4e-4
        }
    );
    assert_eq!(c.optim.mini_batches, 4);
    let e = c.apply_preset("trpo").unwrap_err().to_string();
    assert!(
        e.contains("algorithm") && e.contains("da3po") && e.contains("dr_grpo"),
        "{e}"
    );
}

#[test]
fn toml_overrides_field_by_field_and_rejects_unknown_keys() {
    let base = TrainConfig::default();
    let c = TrainConfig::from_toml_str(
        "algorithm = \"dapo\"\nsteps = 7\n[loss.policy]\nclip_high = 0.3\n",
        &base,
    )
    .unwrap();
    assert_eq!(c.steps, 7);
    assert_eq!(
        c.loss.policy,
        PolicyLoss::Ppo {
            clip_low: 0.2,
            clip_high: 0.3,
            dual_clip: Some(10.0)
        }
    );
    assert!(matches!(c.advantage, EstimatorConfig::Dapo { .. }));
    // Switching a tagged enum's variant replaces the preset's table instead of merging into it.
    let c = TrainConfig::from_toml_str("algorithm = \"da3po\"\n[filter]\nname = \"none\"\n", &base)
        .unwrap();
    assert_eq!(c.filter, FilterConfig::None);
    // Issue 29's options from TOML: the prompt weight on a preset's estimator, and
    // difficulty-adaptive group sizes.
    let c = TrainConfig::from_toml_str(
        "algorithm = \"da3po\"\n[advantage]\nprompt_weight = \"linear_r\"\n\
         [rollout.budget]\nmax = 32\nschedule = { name = \"dars_et\" }\n",
        &base,
    )
    .unwrap();
    assert!(matches!(c.advantage, EstimatorConfig::Da3po { .. }));
    assert_eq!(
        c.build_estimator().unwrap().prompt_weight(),
        rl_advantage::PromptWeight::LinearR
    );
    let b = c.rollout.budget.as_ref().unwrap();
    assert_eq!((b.min, b.max, b.decay), (2, 32, 0.5));
    let e = TrainConfig::from_toml_str("[advantage]\nprompt_weight = \"sqrt_r\"\n", &base)
        .unwrap_err()
        .to_string();
    assert!(e.contains("linear_r"), "{e}");
    let e = TrainConfig::from_toml_str("[optim]\nlearning_rate = 1.0\n", &base)
        .unwrap_err()
        .to_string();
    assert!(e.contains("learning_rate"), "{e}");
    let e = TrainConfig::from_toml_str("algorithm = \"reinforce\"\n", &base)
        .unwrap_err()
        .to_string();
    assert!(e.contains("valid names"), "{e}");
    let e = TrainConfig::from_toml_str("[rollout]\ngroup_size = 1\n", &base)
        .unwrap_err()
        .to_string();
    assert!(e.contains("rollout.group_size"), "{e}");
    // Shared prompts with per-layer recomputation only in packed rows.
    let layers = "[model]\nshared_prompts = true\ncheckpointing = \"layers\"\n";
    let e = TrainConfig::from_toml_str(layers, &base)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("model.shared_prompts") && e.contains("model.packing"),
        "{e}"
    );
    let c = TrainConfig::from_toml_str(&format!("{layers}packing = true\n"), &base).unwrap();
    assert!(c.model.memory_plan().packing);
    // Length-dependent preset defaults follow the file's max_new_tokens.
    let c = TrainConfig::from_toml_str(
        "algorithm = \"dapo\"\n[rollout]\nmax_new_tokens = 64\n",
        &base,
    )
    .unwrap();
    assert!(matches!(
        c.reward.overlong,
        OverlongPolicy::SoftPunish {
            max_len: 64,
            cache_len: 12,
            ..
        }
    ));
    let c = TrainConfig::from_toml_str("[rollout]\nmax_new_tokens = 3000\n", &c).unwrap();
    assert!(matches!(
        c.reward.overlong,
        OverlongPolicy::SoftPunish {
            max_len: 3000,
            cache_len: 600,
            ..
        }
    ));
    let c = TrainConfig::from_toml_str(
        "algorithm = \"dr_grpo\"\n[rollout]\nmax_new_tokens = 3000\n",
        &base,
    )
    .unwrap();
    assert_eq!(
        c.loss.aggregation,
        Aggregation::SeqMeanTokenSumNorm { constant: 3000.0 }
    );
    // The resolved config round-trips.
    let c = TrainConfig::from_toml_str("algorithm = \"gspo\"\n", &base).unwrap();
    assert_eq!(TrainConfig::from_toml_str(&c.to_toml(), &base).unwrap(), c);
}

#[test]
fn loads_the_dapo_math_17k_layout_from_jsonl_and_parquet() {
    let cfg = DataSection::default();
    let mut sets = Vec::new();
    for f in [
        "dapo_sample.jsonl",
        "dapo_sample.snappy.parquet",
        "dapo_sample.zstd.parquet",
    ] {
        let d = Dataset::load(&data_dir().join(f), &cfg).unwrap();
        assert_eq!(d.len(), 3, "{f}");
        assert_eq!(d.prompts[1].answer, "3");
        match &d.prompts[0].text {
            PromptText::Chat(m) => {
                assert_eq!(m[0].role, "user");
                assert!(
                    m[0].content.contains("What is $1+1$?")
                        && m[0].content.starts_with("Solve the following")
                );
            }
            other => panic!("{other:?}"),
        }
        sets.push(d);
    }
    assert_eq!(sets[0], sets[1]);
    assert_eq!(sets[1], sets[2]);
}

/// Code test cases in the answer column (an object or an array) reach the verifier as their
/// JSON text, which parses back to the same value; a boolean answer is still an error.
#[test]
fn structured_answers_are_passed_as_json_text() {
    let dir = tmp("json-answers");
    let p = dir.join("code.jsonl");
    std::fs::write(
        &p,
        "{\"problem\": \"echo\", \"answer\": {\"inputs\": [\"1\\n\"], \"outputs\": [\"1\\n\"]}}\n\
         {\"problem\": \"add\", \"answer\": [\"assert add(1, 2) == 3\"]}\n",
    )
    .unwrap();
    let cfg = DataSection {
        prompt_key: "problem".into(),
        answer_key: "answer".into(),
        ..DataSection::default()
    };
    let d = Dataset::load(&p, &cfg).unwrap();
    let back = |i: usize| serde_json::from_str::<serde_json::Value>(&d.prompts[i].answer).unwrap();
    assert_eq!(
        back(0),
        serde_json::json!({"inputs": ["1\n"], "outputs": ["1\n"]})
    );
    assert_eq!(back(1), serde_json::json!(["assert add(1, 2) == 3"]));
    std::fs::write(&p, "{\"problem\": \"x\", \"answer\": true}\n").unwrap();
    match Dataset::load(&p, &cfg) {
        Err(TrainerError::Data {
            record: 1, message, ..
        }) => {
            assert!(message.contains("`answer`"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn bad_records_name_the_file_record_and_column() {
    let dir = tmp("bad-data");
    let p = dir.join("bad.jsonl");
    std::fs::write(
        &p,
        "{\"problem\": \"1+1\", \"answer\": \"2\"}\n\n{\"problem\": 3, \"answer\": \"2\"}\n",
    )
    .unwrap();
    let cfg = DataSection {
        prompt_key: "problem".into(),
        answer_key: "answer".into(),
        ..DataSection::default()
    };
    match Dataset::load(&p, &cfg) {
        Err(TrainerError::Data {
            record: 3, message, ..
        }) => assert!(message.contains("problem"), "{message}"),
        other => panic!("{other:?}"),
    }
    std::fs::write(&p, "{\"problem\": \"1+1\"}\n").unwrap();
    assert!(matches!(
        Dataset::load(&p, &cfg),
        Err(TrainerError::Data { record: 1, .. })
    ));
    std::fs::write(&p, "not json\n").unwrap();
    assert!(matches!(
        Dataset::load(&p, &cfg),
        Err(TrainerError::Data { record: 1, .. })
    ));
    assert!(matches!(
        Dataset::load(&dir.join("x.csv"), &cfg),
        Err(TrainerError::Config { .. })
    ));
}

#[test]
fn prompt_rendering_applies_the_dapo_template_and_chat_template() {
    let tok = ArithmeticTask::tokenizer().unwrap();
    let (train, _) = ArithmeticTask::default().split(1, 5, 2).unwrap();
    let cfg = DataSection {
        template: PromptTemplate::Custom("{problem}=".into()),
        chat_template: false,
        ..DataSection::default()
    };
    let p = &train.prompts[0];
    let PromptText::Text(problem) = &p.text else {
        panic!()
    };
    let ids = PromptRenderer::new(&cfg).render(p, &tok).unwrap();
    assert_eq!(tok.decode(&ids, false).unwrap(), format!("{problem}="));
    let dapo = PromptRenderer::new(&DataSection::default()).user_text("PROBLEM");
    assert!(
        dapo.starts_with("Solve the following math problem step by step.")
            && dapo.contains("\n\nPROBLEM\n\n")
    );
    assert!(dapo.ends_with("after \"Answer:\""));
}

#[test]
fn prompt_sampler_is_seeded_covers_each_epoch_and_restores() {
    let mut a = PromptSampler::new(10, 42);
    let first: Vec<usize> = a.next(10);
    let mut sorted = first.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        (0..10).collect::<Vec<_>>(),
        "an epoch is a permutation"
    );
    let mid = a.next(3);
    let state = a.state();
    let rest = a.next(12);
    let mut b = PromptSampler::restore(10, 42, state);
    assert_eq!(b.next(12), rest);
    let mut c = PromptSampler::new(10, 42);
    assert_eq!(c.next(13), [first, mid].concat());
    assert_ne!(PromptSampler::new(10, 43).next(10), c.next(10));
}

#[test]
fn arithmetic_split_is_disjoint_and_deterministic() {
    let task = ArithmeticTask::default();
    let (tr, ev) = task.split(7, 200, 20).unwrap();
    let (tr2, ev2) = task.split(7, 100, 20).unwrap();
    assert_eq!(
        ev, ev2,
        "the held-out set does not depend on the training size"
    );
    assert_eq!(ev.len(), 60);
    for p in &ev.prompts {
        assert!(
            !tr.prompts.iter().any(|q| q.text == p.text),
            "{:?} leaks into training",
            p.text
        );
    }
    assert_eq!(tr2.len(), 300);
    // Answers are the arithmetic: parse "a+b" and check.
    for p in tr.prompts.iter().take(50) {
        let PromptText::Text(t) = &p.text else {
            panic!()
        };
        let (a, b) = t.split_once('+').unwrap();
        assert_eq!(
            p.answer,
            (a.parse::<i64>().unwrap() + b.parse::<i64>().unwrap()).to_string()
        );
    }
}

fn tiny_config(algo: &str, out: &Path, steps: usize) -> TrainConfig {
    let mut c = common::task_config(algo, out, steps);
    c.rollout.max_new_tokens = 8;
    c.optim.warmup_steps = 2;
    c.optim.micro_batch = 5;
    c.optim.mini_batches = 2;
    c.optim.epochs = 2;
    c.checkpoint.every = 2;
    c.checkpoint.keep = 2;
    c.eval.every = 2;
    c.eval.k = 2;
    c.eval.max_prompts = 4;
    c
}

fn tiny_run(
    algo: &str,
    out: &Path,
    steps: usize,
) -> (
    TrainConfig,
    Dataset,
    Dataset,
    rl_models::Tokenizer,
    CausalLm<B>,
) {
    let (train, eval) = ArithmeticTask::default().split(3, 20, 4).unwrap();
    let (model, tok) = common::task_model(5, None);
    (tiny_config(algo, out, steps), train, eval, tok, model)
}

fn strip_timing(v: &mut serde_json::Value) {
    if let Some(o) = v.as_object_mut() {
        for f in TIMING_FIELDS {
            o.remove(f);
        }
    }
}

fn metric_lines(out: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(out.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            strip_timing(&mut v);
            v
        })
        .collect()
}

/// GRPO (with its k3 KL to a frozen reference) on a random tiny Qwen3: every step trains,
/// metrics are written, checkpoints rotate, and a run resumed from step 2 reproduces the
/// uninterrupted run's metrics exactly (timing fields aside), with synchronous rollouts and
/// with asynchronous ones (k = 1: the checkpoint holds the round generated for step 3 with the
/// step-2 weights, which the resumed run trains on).
#[test]
fn grpo_runs_checkpoints_and_resumes_exactly() {
    resumes_exactly(0);
}

#[test]
fn grpo_with_asynchronous_rollouts_resumes_exactly() {
    resumes_exactly(1);
}

/// With `[model.lora]` (r = 4 on every module): only the adapters train — the frozen base in
/// the checkpoint's `model/lora/base/` equals the initial weights bit for bit, while the
/// merged `model/` (what engines and users load) has moved — and a resumed run (adapters and
/// their AdamW moments reloaded from PEFT files and the optimizer state) reproduces the
/// uninterrupted run's metrics exactly, with GRPO's KL to the frozen reference.
#[test]
fn lora_trains_only_the_adapters_and_resumes_exactly() {
    let lora = rl_models::LoraConfig::new(4, 8.0);
    let (a, model) = resumes_exactly_with(0, Some(lora));
    let ckpt = latest_checkpoint(&a).unwrap().join("model");
    let base = CausalLm::<B>::load(ckpt.join("lora/base"), &Default::default()).unwrap();
    assert_eq!(weights(&base), weights(&model), "the frozen base changed");
    let merged = CausalLm::<B>::load(&ckpt, &Default::default()).unwrap();
    let moved = weights(&merged)
        .iter()
        .zip(weights(&model))
        .filter(|(x, y)| x != &y)
        .count();
    assert!(moved > 0, "the adapters did not train");
    assert!(ckpt.join("lora/adapter_model.safetensors").is_file());
}

/// `model.dtype = "bf16"` (CPU backend): the run trains, resumes exactly, and keeps f32 master
/// weights (the checkpoint's weights differ from the start and are not bf16-rounded); the TOML
/// value is checked and a bad one names the field and the valid values.
#[test]
fn bf16_compute_trains_f32_masters_and_resumes_exactly() {
    let (a, model) = resumes_exactly_tweaked(0, "bf16", |c| {
        c.model.dtype = rl_models::ComputeDtype::Bf16;
    });
    let m = read_metrics(&a.join("metrics.jsonl")).unwrap();
    assert!(
        m[1..]
            .iter()
            .all(|m| m.loss.is_finite() && m.grad_norm.is_finite())
    );
    let saved = CausalLm::<B>::load(
        latest_checkpoint(&a).unwrap().join("model"),
        &Default::default(),
    )
    .unwrap();
    let (w0, w1) = (weights(&model), weights(&saved));
    assert!(w0.iter().zip(&w1).any(|(x, y)| x != y), "nothing trained");
    // a bf16 value is an f32 whose low 16 bits are zero
    let off_bf16 = w1.iter().filter(|w| w.to_bits() & 0xFFFF != 0).count();
    assert!(
        off_bf16 > w1.len() / 2,
        "the saved masters look bf16-rounded"
    );

    let base = TrainConfig::default();
    let c = TrainConfig::from_toml_str("[model]\ndtype = \"bf16\"\n", &base).unwrap();
    assert_eq!(c.model.dtype, rl_models::ComputeDtype::Bf16);
    let e = TrainConfig::from_toml_str("[model]\ndtype = \"f16\"\n", &base)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("dtype") && e.contains("bf16") && e.contains("f32"),
        "{e}"
    );
}

fn resumes_exactly(k: usize) {
    resumes_exactly_with(k, None);
}

/// `[rollout.budget]` (DARS hardness-weighted, groups of 2 to 8 around G = 4) with asynchronous
/// rollouts: the run trains with the allocated sizes, every round updates the tracker, and a
/// resumed run (the tracker in `state.json`, the prefetched round's sizes in `inflight.json`)
/// reproduces the uninterrupted run's metrics exactly.
#[test]
fn adaptive_group_sizes_follow_difficulty_and_resume_exactly() {
    let (a, _) = resumes_exactly_tweaked(1, "budget", |c| {
        c.rollout.budget = Some(rl_trainer::config::AdaptiveBudget {
            schedule: rl_sampler::BudgetSchedule::DarsHw {
                std: false,
                base: None,
            },
            min: 2,
            max: 8,
            decay: 0.5,
        });
    });
    let m = read_metrics(&a.join("metrics.jsonl")).unwrap();
    let sizes: Vec<[usize; 2]> = m[1..].iter().map(|m| m.group_sizes.unwrap()).collect();
    // The random model answers nothing right: every estimate is 0 (or ½ unseen), so the
    // hardness-weighted targets are equal and every group has G = 4 (unequal estimates are
    // the unit test `group_sizes_follow_the_tracker` in trainer/rounds.rs).
    assert!(sizes.iter().all(|s| *s == [4, 4]), "{sizes:?}");
    let ckpt = latest_checkpoint(&a).unwrap();
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(ckpt.join("state.json")).unwrap()).unwrap();
    assert!(
        state["difficulty"]["prompts"]
            .as_object()
            .is_some_and(|p| !p.is_empty())
    );
    // A group size outside the budget is a config error naming the fields.
    let (mut c, ..) = tiny_run("grpo", &a, 1);
    c.rollout.budget = Some(rl_trainer::config::AdaptiveBudget {
        schedule: rl_sampler::BudgetSchedule::Uniform {},
        min: 6,
        max: 8,
        decay: 0.5,
    });
    assert!(
        c.validate()
            .unwrap_err()
            .to_string()
            .contains("rollout.budget.min/max")
    );
}

/// Runs 4 steps, then 2 steps + a resume to 4, and checks both agree; returns the
/// uninterrupted run's folder and the initial model.
fn resumes_exactly_with(
    k: usize,
    lora: Option<rl_models::LoraConfig>,
) -> (common::TmpDir, CausalLm<B>) {
    let tag = if lora.is_some() { "lora" } else { "" };
    resumes_exactly_tweaked(k, tag, |c| c.model.lora = lora.clone())
}

/// [`resumes_exactly_with`] with any change to the three configs (uninterrupted, first half,
/// resumed), named `tag` in the folders.
fn resumes_exactly_tweaked(
    k: usize,
    tag: &str,
    tweak: impl Fn(&mut TrainConfig),
) -> (common::TmpDir, CausalLm<B>) {
    let a = tmp(&format!("full-k{k}-{tag}"));
    let (mut cfg, train, eval, tok, model) = tiny_run("grpo", &a, 4);
    cfg.rollout.max_staleness = k;
    tweak(&mut cfg);
    let mut t = Trainer::new(
        cfg,
        model.clone(),
        tok.clone(),
        train.clone(),
        Some(eval.clone()),
        Default::default(),
    )
    .unwrap();
    t.run(|_| {}).unwrap();
    let full = read_metrics(&a.join("metrics.jsonl")).unwrap();
    assert_eq!(full.len(), 5, "eval at step 0 + 4 steps");
    let last = &full[4];
    assert_eq!(last.updates, 4, "2 epochs × 2 mini-batches");
    assert_eq!(last.groups_used, 4);
    assert!(last.loss.is_finite() && last.kl_ref.is_finite() && last.entropy > 0.0);
    assert!(last.eval.is_some() && full[2].eval.is_some() && full[1].eval.is_none());
    assert!(a.join("reference/model.safetensors").exists());
    let ckpts: Vec<_> = std::fs::read_dir(a.join("checkpoints"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .collect();
    assert_eq!(ckpts.len(), 3, "step-2, step-4 and latest: {ckpts:?}");

    let b = tmp(&format!("resumed-k{k}-{tag}"));
    let (mut cfg2, ..) = tiny_run("grpo", &b, 2);
    cfg2.rollout.max_staleness = k;
    tweak(&mut cfg2);
    let mut t = Trainer::new(
        cfg2,
        model.clone(),
        tok.clone(),
        train.clone(),
        Some(eval.clone()),
        Default::default(),
    )
    .unwrap();
    t.run(|_| {}).unwrap();
    drop(t);
    let ckpt = latest_checkpoint(&b).unwrap();
    assert_eq!(ckpt.join("inflight.json").exists(), k > 0);
    let (mut cfg4, ..) = tiny_run("grpo", &b, 4);
    cfg4.rollout.max_staleness = k;
    tweak(&mut cfg4);
    let mut r =
        Trainer::<B, CausalLm<B>>::resume(cfg4, &ckpt, tok, train, Some(eval), Default::default())
            .unwrap();
    assert_eq!(r.step_count(), 2);
    r.run(|_| {}).unwrap();
    assert_eq!(metric_lines(&a), metric_lines(&b));
    if k > 0 {
        assert!(full[2..].iter().all(|m| m.staleness_max == 1));
    }
    (a, model)
}

#[test]
fn resume_rejects_a_changed_config() {
    let a = tmp("changed");
    let (cfg, train, eval, tok, model) = tiny_run("dr_grpo", &a, 2);
    let mut t = Trainer::new(
        cfg,
        model,
        tok.clone(),
        train.clone(),
        Some(eval.clone()),
        Default::default(),
    )
    .unwrap();
    t.run(|_| {}).unwrap();
    let (mut cfg, ..) = tiny_run("dr_grpo", &a, 3);
    cfg.optim.lr = 5e-3;
    let e = Trainer::<B, CausalLm<B>>::resume(
        cfg,
        &latest_checkpoint(&a).unwrap(),
        tok,
        train,
        Some(eval),
        Default::default(),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("optim.lr"), "{e}");
}

/// A random model answers nothing correctly: every group is all-wrong, dynamic sampling keeps
/// none, and after max_gen_rounds the run stops with a typed error saying so (DAPO's behaviour),
/// instead of training on nothing.
#[test]
fn dapo_on_a_hopeless_model_stops_with_a_clear_error() {
    let a = tmp("hopeless");
    let (cfg, train, eval, tok, model) = tiny_run("da3po", &a, 1);
    let mut t = Trainer::new(cfg, model, tok, train, Some(eval), Default::default()).unwrap();
    let e = t.step().unwrap_err();
    assert!(
        matches!(
            e,
            TrainerError::Sampler(rl_sampler::SamplerError::Exhausted {
                kept: 0,
                all_wrong: 8,
                ..
            })
        ),
        "{e}"
    );
}

/// The same hopeless model with `on_exhausted = "train_on_kept"`: the step keeps no group, so
/// it makes no update and says so in its metrics; the run goes on.
#[test]
fn train_on_kept_with_nothing_kept_makes_no_update() {
    let a = tmp("hopeless-kept");
    let (mut cfg, train, eval, tok, model) = tiny_run("da3po", &a, 2);
    cfg.batch.on_exhausted = rl_sampler::OnExhausted::TrainOnKept;
    let mut t = Trainer::new(cfg, model, tok, train, Some(eval), Default::default()).unwrap();
    for step in 1..=2 {
        let m = t.step().unwrap();
        assert_eq!(m.step, step);
        assert_eq!((m.groups_kept, m.groups_used), (0, 0), "step {step}");
        assert_eq!((m.updates, m.updates_skipped), (0, 0), "step {step}");
        assert!(m.responses_generated > 0);
        assert_eq!(m.loss, 0.0);
    }
}

/// A Qwen3 whose differentiable log-probs are NaN: lp + 0·NaN keeps the autodiff graph but makes
/// every loss non-finite. It stands for a forward or backward pass that overflows.
#[derive(burn::module::Module, Clone, Debug)]
struct InfiniteGradient<Bk: burn::tensor::backend::Backend> {
    inner: CausalLm<Bk>,
}

impl rl_trainer::Policy<B> for InfiniteGradient<B> {
    type Inference = <CausalLm<B> as rl_trainer::Policy<B>>::Inference;
    fn inference(&self) -> Self::Inference {
        rl_trainer::Policy::<B>::inference(&self.inner)
    }
    fn logprobs(
        &self,
        ids: &[Vec<u32>],
        starts: &[usize],
        width: usize,
        entropy: rl_models::EntropyMode,
        temperature: f32,
    ) -> Result<rl_models::TokenLogProbs<B>, TrainerError> {
        let mut lp = <CausalLm<B> as rl_trainer::Policy<B>>::logprobs(
            &self.inner,
            ids,
            starts,
            width,
            entropy,
            temperature,
        )?;
        let zero = lp.logprobs.clone() - lp.logprobs.clone().detach();
        lp.logprobs = lp.logprobs + zero.mul_scalar(f32::NAN);
        Ok(lp)
    }
    fn logprobs_detached(
        &self,
        ids: &[Vec<u32>],
        starts: &[usize],
        width: usize,
        temperature: f32,
    ) -> Result<Vec<Vec<f32>>, TrainerError> {
        <CausalLm<B> as rl_trainer::Policy<B>>::logprobs_detached(
            &self.inner,
            ids,
            starts,
            width,
            temperature,
        )
    }
    fn save(&self, dir: &Path) -> Result<(), TrainerError> {
        rl_trainer::Policy::<B>::save(&self.inner, dir)
    }
    fn load(dir: &Path, device: &burn::tensor::Device<B>) -> Result<Self, TrainerError> {
        Ok(Self {
            inner: <CausalLm<B> as rl_trainer::Policy<B>>::load(dir, device)?,
        })
    }
    fn vocab_size(&self) -> usize {
        rl_trainer::Policy::<B>::vocab_size(&self.inner)
    }
}

fn weights(m: &CausalLm<B>) -> Vec<f32> {
    m.hf_tensors()
        .unwrap()
        .into_iter()
        .flat_map(|(_, _, data)| data)
        .collect()
}

/// Non-finite updates never reach the weights: the update is skipped (weights bit-identical,
/// counted in `updates_skipped`, metrics finite and writable), and `optim.max_consecutive_skips`
/// skips in a row stop the run with `Diverged` naming the step.
#[test]
fn non_finite_gradients_skip_the_update_then_stop_the_run() {
    let a = tmp("infinite-grad");
    let (mut cfg, train, eval, tok, model) = tiny_run("grpo", &a, 3);
    cfg.optim.mini_batches = 1;
    cfg.optim.epochs = 1;
    cfg.optim.max_consecutive_skips = 2;
    let before = weights(&model);
    let policy = InfiniteGradient { inner: model };
    let mut t = Trainer::new(cfg, policy, tok, train, Some(eval), Default::default()).unwrap();
    let m = t.step().unwrap();
    assert_eq!((m.updates, m.updates_skipped), (0, 1));
    assert!(
        m.grad_norm.is_finite() && m.loss.is_finite(),
        "metrics stay writable"
    );
    assert_eq!(
        weights(&t.policy().inner),
        before,
        "a skipped update changes nothing"
    );
    let e = t.step().unwrap_err();
    assert!(
        matches!(&e, TrainerError::Diverged { step: 2, message } if message.contains("2 consecutive")),
        "{e}"
    );
    assert_eq!(weights(&t.policy().inner), before);
}

/// A checkpoint is never written with a NaN or infinite weight; the error names the parameter.
#[test]
fn checkpoints_refuse_non_finite_weights() {
    use burn::module::{ModuleMapper, Param};
    struct PoisonFirst(bool);
    impl ModuleMapper<B> for PoisonFirst {
        fn map_float<const D: usize>(
            &mut self,
            param: Param<burn::tensor::Tensor<B, D>>,
        ) -> Param<burn::tensor::Tensor<B, D>> {
            if std::mem::replace(&mut self.0, false) {
                param.map(|t| t.clone().mul_scalar(f32::NAN))
            } else {
                param
            }
        }
    }
    let a = tmp("nan-weights");
    let (cfg, train, eval, tok, model) = tiny_run("grpo", &a, 1);
    use burn::module::Module as _;
    let model = model.map(&mut PoisonFirst(true));
    let mut t = Trainer::new(cfg, model, tok, train, Some(eval), Default::default()).unwrap();
    let e = t.save_checkpoint().unwrap_err();
    assert!(
        matches!(&e, TrainerError::Checkpoint { message, .. } if message.contains("NaN or infinity in `embed_tokens")),
        "{e}"
    );
    assert!(latest_checkpoint(&a).is_none());
}

/// REINFORCE (the rloo preset's loss) has no importance ratio: several mini-batches or epochs
/// would train later updates on stale samples without correction, so `validate` refuses them.
#[test]
fn reinforce_with_several_updates_per_batch_is_rejected() {
    let mut c = TrainConfig::default();
    c.apply_preset("rloo").unwrap();
    c.validate().unwrap();
    for (mb, ep) in [(2, 1), (1, 2)] {
        c.optim.mini_batches = mb;
        c.optim.epochs = ep;
        let e = c.validate().unwrap_err().to_string();
        assert!(
            e.contains("optim.mini_batches/epochs") && e.contains("REINFORCE"),
            "{e}"
        );
    }
    c.optim.mini_batches = 1;
    c.optim.epochs = 1;
    c.optim.max_consecutive_skips = 0;
    let e = c.validate().unwrap_err().to_string();
    assert!(e.contains("optim.max_consecutive_skips"), "{e}");
}

/// AdamW skips a gradient with a NaN in it: the weights and moments stay as they were (the next
/// finite step then moves the weights exactly as a fresh optimizer's first step does).
#[test]
fn adamw_skips_a_non_finite_gradient_norm() {
    use burn::module::{ModuleVisitor, Param};
    use burn::optim::GradientsParams;
    use rl_trainer::optim::AdamWOptimizer;
    struct Grads {
        grads: GradientsParams,
        value: f32,
    }
    impl ModuleVisitor<B> for Grads {
        fn visit_float<const D: usize>(&mut self, p: &Param<burn::tensor::Tensor<B, D>>) {
            let g = p.val().inner().ones_like().mul_scalar(self.value);
            self.grads.register(p.id, g);
        }
    }
    let grads = |model: &CausalLm<B>, value: f32| {
        let mut v = Grads {
            grads: GradientsParams::new(),
            value,
        };
        burn::module::Module::visit(model, &mut v);
        v.grads
    };
    let dir = tmp("adamw-nan");
    let (_, _, _, _, model) = tiny_run("grpo", &dir, 1);
    let cfg = TrainConfig::default().optim;
    let before = weights(&model);
    let mut optim = AdamWOptimizer::<B, CausalLm<B>>::new(&cfg);
    let g = grads(&model, f32::NAN);
    let out = optim.step(1e-3, model.clone(), g);
    assert!(!out.applied && out.grad_norm.is_nan());
    assert_eq!(weights(&out.model), before);
    // Then a finite gradient: identical to a fresh optimizer's first step (moments untouched).
    let after_skip = optim.step(1e-3, out.model, grads(&model, 0.5));
    let mut fresh = AdamWOptimizer::<B, CausalLm<B>>::new(&cfg);
    let reference = fresh.step(1e-3, model.clone(), grads(&model, 0.5));
    assert!(after_skip.applied && reference.applied);
    assert_eq!(weights(&after_skip.model), weights(&reference.model));
    assert_ne!(weights(&reference.model), before);
}

/// The theorem probe (`probe` section): a probed GRPO run trains exactly as the unprobed one
/// (the probe's samples have their own seeds), and `probe.jsonl` holds one record per generated
/// group of each probed step — as many as the step's `groups_seen` — with G verdicts, G
/// advantages that are all 0 for a uniform group (z-score of zero spread), `probe.samples`
/// extra samples, and `kept` true (GRPO has no filter).
#[test]
fn the_theorem_probe_records_every_group_and_leaves_training_unchanged() {
    let plain = tmp("probe-off");
    let probed = tmp("probe-on");
    let mut lines = Vec::new();
    for (out, probe) in [(&plain, false), (&probed, true)] {
        let (mut cfg, train, eval, tok, model) = tiny_run("grpo", out, 3);
        if probe {
            cfg.probe.steps = vec![1, 3];
            cfg.probe.samples = 5;
        }
        let mut t = Trainer::new(cfg, model, tok, train, Some(eval), Default::default()).unwrap();
        t.run(|_| {}).unwrap();
        lines.push(metric_lines(out));
    }
    assert_eq!(lines[0], lines[1], "the probe changed training");
    assert!(!plain.join("probe.jsonl").exists());
    let records = rl_trainer::probe_records::read_probe(&probed.join("probe.jsonl")).unwrap();
    let metrics = read_metrics(&probed.join("metrics.jsonl")).unwrap();
    for step in [1usize, 3] {
        let seen = metrics.iter().find(|m| m.step == step).unwrap().groups_seen;
        let at: Vec<_> = records.iter().filter(|r| r.step == step).collect();
        assert_eq!(at.len(), seen, "step {step}");
        for r in at {
            assert_eq!((r.correct.len(), r.advantages.len()), (4, 4));
            assert_eq!(r.probe_samples, 5);
            assert!(r.probe_correct <= 5 && r.kept);
            if r.correct.iter().all(|&c| c == r.correct[0]) {
                assert!(r.advantages.iter().all(|&a| a == 0.0), "{r:?}");
            }
        }
    }
    assert!(records.iter().all(|r| r.step == 1 || r.step == 3));
    // Validation names the field.
    let (mut cfg, ..) = tiny_run("grpo", &probed, 3);
    cfg.probe.steps = vec![0];
    let e = cfg.validate().unwrap_err().to_string();
    assert!(e.contains("probe.steps"), "{e}");
}

/// Every leaf of `TrainConfig::default()` as (dotted field, TOML value), in serialisation order.
fn default_fields() -> Vec<(String, String)> {
    fn walk(prefix: &str, v: &toml::Value, out: &mut Vec<(String, String)>) {
        match v {
            toml::Value::Table(t) => {
                for (k, v) in t {
                    let p = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&p, v, out);
                }
            }
            other => out.push((prefix.to_string(), other.to_string())),
        }
    }
    let v = toml::Value::try_from(TrainConfig::default()).unwrap();
    let mut out = Vec::new();
    walk("", &v, &mut out);
    out
}

/// docs/trainer.md's table of fields and defaults ("## Fields and defaults") lists exactly the
/// fields `TrainConfig::default()` serialises, each with its default as TOML writes it.
#[test]
fn docs_trainer_md_lists_every_field_with_its_default() {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/trainer.md"),
    )
    .unwrap();
    let section = doc
        .split("## Fields and defaults")
        .nth(1)
        .expect("docs/trainer.md has a `## Fields and defaults` section");
    let section = section.split("\n## ").next().unwrap();
    let rows: Vec<(String, String)> = section
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (
                cells[1].trim_matches('`').to_string(),
                cells[2].trim_matches('`').to_string(),
            )
        })
        .collect();
    let expected = default_fields();
    let table: String = expected
        .iter()
        .map(|(f, v)| format!("| `{f}` | `{v}` |\n"))
        .collect();
    assert_eq!(
        rows, expected,
        "docs/trainer.md's table differs from the code; the code's defaults are:\n{table}"
    );
}

/// One optimizer update per batch (one epoch of one mini-batch): the behaviour phase skips its
/// π_old forward pass and the update takes π_old from its own forward, detached. This is the
/// two-pass path's computation because π_old *is* the policy being updated: both run the same
/// weights on the same sequences in the same micro-batches, so the log-probs agree up to the
/// rounding of the two forward implementations (the detached pass goes through the inference
/// model, a different order of f32 operations: here at most a few 1e-7 per log-prob), and with
/// them ratios, importance weights, loss, gradient and step. Checked over two steps of DAPO
/// (with GRPO's KL term, whose π_ref pass both paths keep) under `none` and under `token_tis`
/// (weights from π_old against the engine's log-probs):
/// - counts (tokens, sequences, clipped, truncated, masked tokens) are equal;
/// - the one-pass ratio is exactly 1 and its approximate KL exactly 0 (x − x = 0 in floating
///   point), the two-pass ratio within 1e-5 of 1;
/// - losses and gradient norms agree to 1e-5 relative (a log-prob gap δ ≤ 1e-6 changes each
///   ratio by ≈ δ, and the loss, a weighted mean of ratios times advantages, by as little); the
///   KL term, a difference of f32 numbers near 1, within the bound derived beside its check;
/// - Σ|log π_old − log π_rollout| agrees to tokens × 1e-6 (δ per token);
/// - the parameters through the update they received, ‖θ₁ − θ₂‖ / ‖θ₁ − θ₀‖ < 1e-5 over all
///   but the 0.1 % of elements that moved apart most (`common::trimmed_update_gap`: AdamW's
///   step of an element whose gradient is within a few ε of zero depends on the gradient's last
///   bits). Measured 8.9e-7–1.1e-6 on both SIMD paths of an AVX-512 Xeon (2026-12-07; all
///   elements: up to 1.6e-5); the bound leaves a factor 9.
#[test]
fn one_update_per_batch_takes_pi_old_from_its_own_forward_exactly() {
    use rl_loss::IsCorrection;
    let (model, tok) = common::task_model(5, None);
    let (train, _) = ArithmeticTask::default().split(3, 20, 4).unwrap();
    for correction in [IsCorrection::None, IsCorrection::TokenTis { cap: 2.0 }] {
        let run = |two_pass: bool| {
            let name = format!("pi-old-{}-{two_pass}", correction.name());
            // DAPO without the filter, as in tests/distributed.rs: the soft overlong penalty
            // gives a random model's responses different rewards, so advantages are not all 0;
            // plus GRPO's KL term, so that the π_ref pass is covered too.
            let dir = tmp(&name);
            let mut c = common::grpo_one_update(&dir, 2);
            let kl = c.loss.kl;
            c.apply_preset("dapo").unwrap();
            c.loss.kl = kl;
            c.filter = FilterConfig::None;
            c.rollout.generation_batch = c.rollout.group_size;
            c.loss.is_correction = correction;
            let mut t = Trainer::new(
                c,
                model.clone(),
                tok.clone(),
                train.clone(),
                None,
                Default::default(),
            )
            .unwrap();
            assert!(t.old_from_update());
            let mut steps = Vec::new();
            for _ in 0..2 {
                let h = common::hand_step(&mut t, |t, groups| {
                    if two_pass {
                        t.behaviour_two_pass(groups)
                    } else {
                        t.behaviour(groups)
                    }
                });
                assert_eq!(h.behaviour.old_from_update, !two_pass);
                assert_eq!(h.update.applied, 1);
                assert!(
                    h.advantages.iter().any(|&a| a != 0.0),
                    "nothing to learn from"
                );
                let is = h.update.is_stats.unwrap_or(h.behaviour.is.stats);
                assert!(is.tokens > 0);
                steps.push((h.update.loss, h.update.grad_norm_sum, is));
            }
            (steps, common::flat(t.policy()))
        };
        let (one, two) = (run(false), run(true));
        let rel = |a: f64, b: f64| (a - b).abs() / a.abs().max(b.abs()).max(1e-12);
        for ((l1, g1, is1), (l2, g2, is2)) in one.0.iter().zip(&two.0) {
            let c = format!("{correction:?}: {l1:?} {is1:?} vs {l2:?} {is2:?}");
            assert_eq!(
                (
                    l1.tokens,
                    l1.sequences,
                    l1.clipped_upper,
                    l1.clipped_lower,
                    l1.dual_clipped
                ),
                (
                    l2.tokens,
                    l2.sequences,
                    l2.clipped_upper,
                    l2.clipped_lower,
                    l2.dual_clipped
                ),
                "{c}"
            );
            assert_eq!(
                (is1.tokens, is1.truncated, is1.masked),
                (is2.tokens, is2.truncated, is2.masked),
                "{c}"
            );
            assert!(
                l1.ratio_max == 1.0 && l1.ratio_sum == l1.tokens as f64,
                "{c}"
            );
            assert!(l1.approx_kl_sum == 0.0, "{c}");
            assert!((l2.ratio_max - 1.0).abs() < 1e-5, "{c}");
            for (a, b) in [
                (l1.loss, l2.loss),
                (l1.policy_loss, l2.policy_loss),
                (l1.entropy_loss, l2.entropy_loss),
                (*g1, *g2),
            ] {
                assert!(rel(a, b) < 1e-5, "{c}: {a} vs {b}");
            }
            // The KL term k3 = e^d − d − 1 (d = log π_ref − log π_θ) is a small difference of
            // numbers near 1, each computed in f32: one token's term moves by a whole
            // ulp(1) = 2^-23 when its e^d rounds the other way, and by |1 − e^d|·δ ≈ |d|·δ for
            // a log-prob gap δ. Over the mean of T tokens (Cauchy–Schwarz, k3 ≈ d²/2):
            // |Δ kl_loss| ≤ δ·√(2·kl_loss) + 2^-23, with δ = 1e-6.
            let kl_bound = 1e-6 * (2.0 * l1.kl_loss.abs()).sqrt() + 2f64.powi(-23);
            assert!(
                (l1.kl_loss - l2.kl_loss).abs() <= kl_bound,
                "{c}: kl_loss {} vs {} (bound {kl_bound:e})",
                l1.kl_loss,
                l2.kl_loss
            );
            assert!(
                (is1.abs_diff_sum - is2.abs_diff_sum).abs() <= is1.tokens as f64 * 1e-6,
                "{c}"
            );
        }
        let start = common::flat(&model);
        let gap = common::trimmed_update_gap(&two.1, &one.1, &start);
        eprintln!("{correction:?}: parameters {gap:e} of the update apart");
        assert!(
            gap < 1e-5,
            "{correction:?}: parameters {gap:e} of the update apart"
        );
    }
}

/// REINFORCE++ with γ < 1: the token-advantage phase lays the estimator's discounted values
/// (rl-advantage's `compute_token_advantages`, checked against verl there) on each response's
/// sampled tokens in order, with one value per response token; γ = 1 has no token advantages;
/// a step trains on them (the weights differ from γ = 1's from the same start and seed); and
/// γ < 1 with `[distill]` is refused by field.
#[test]
fn discounted_reinforce_pp_trains_on_token_advantages() {
    let dir = tmp("gamma");
    let (model, tok) = common::task_model(5, None);
    let (train, _) = ArithmeticTask::default().split(3, 20, 4).unwrap();
    let config = |gamma: f64, name: &str| {
        let mut c = common::task_config("reinforce_pp", &dir.join(name), 1);
        c.rollout.max_new_tokens = 6;
        c.eval.every = 0;
        c.checkpoint.every = 0;
        let toml = format!("[advantage]\nname = \"reinforce_plus_plus\"\ngamma = {gamma:?}\n");
        TrainConfig::from_toml_str(&toml, &c).unwrap()
    };
    let new_trainer = |c: TrainConfig| {
        Trainer::new(
            c,
            model.clone(),
            tok.clone(),
            train.clone(),
            None,
            Default::default(),
        )
        .unwrap()
    };
    let mut weights = Vec::new();
    for gamma in [1.0, 0.5] {
        let mut t = new_trainer(config(gamma, &format!("phase-{gamma}")));
        let batch = t.collect_batch().unwrap();
        let adv = t.advantages(&batch.groups).unwrap();
        let behaviour = t.behaviour(&batch.groups).unwrap();
        let tokens = t
            .token_advantages(&batch.groups, &adv.advantages, &behaviour)
            .unwrap();
        let items: Vec<_> = batch
            .groups
            .iter()
            .flat_map(|g| g.items.iter().map(move |r| (g.group, r)))
            .collect();
        if gamma == 1.0 {
            assert!(tokens.is_none());
        } else {
            let per = tokens.expect("γ < 1 gives token advantages").per_response;
            let samples: Vec<rl_advantage::Sample> = items
                .iter()
                .map(|(g, r)| rl_advantage::Sample::new(*g, r.reward, r.correct))
                .collect();
            let counts: Vec<usize> = items
                .iter()
                .map(|(_, r)| if r.train { r.sampled_len() } else { 0 })
                .collect();
            let est = t.config().build_estimator().unwrap();
            let want = rl_advantage::compute_token_advantages(&est, &samples, &counts)
                .unwrap()
                .unwrap();
            assert_eq!(per.len(), items.len());
            let mut discounted = 0;
            for ((p, w), (_, r)) in per.iter().zip(&want).zip(&items) {
                assert_eq!(p.len(), r.response.len());
                let laid: Vec<f32> = if r.train {
                    w.iter().map(|&x| x as f32).collect()
                } else {
                    vec![0.0; p.len()]
                };
                assert_eq!(p[..laid.len()], laid[..], "sampled tokens in order");
                discounted += usize::from(w.windows(2).any(|v| v[0] != v[1]));
            }
            assert!(discounted > 0, "no response's values differ along it");
        }
        let mut fresh = new_trainer(config(gamma, &format!("step-{gamma}")));
        let m = fresh.step().unwrap();
        assert_eq!(m.updates, 1);
        weights.push(common::flat(fresh.policy()));
    }
    assert!(weights[0] != weights[1], "γ = 0.5 trained as γ = 1");
    let mut c = config(0.5, "distill");
    c.distill = Some(rl_trainer::DistillSection {
        teacher: Some(dir.join("teacher")),
        server: None,
        form: Default::default(),
        coef: 1.0,
        reward_weight: 0.0,
        beta: 1.0,
        vocab_chunk: 8,
    });
    let e = c.validate().unwrap_err().to_string();
    assert!(e.contains("advantage.gamma"), "{e}");
}

/// PPO (`algorithm = "ppo"`) with one critic warm-up step and an adaptive KL penalty in the
/// reward: the critic trains every step and the policy from step 2, both write their metrics,
/// β moves, and a run resumed from step 2 reproduces the uninterrupted one (critic weights and
/// moments in the checkpoint's `critic/`, β in `state.json`).
#[test]
fn ppo_trains_a_critic_and_resumes_exactly() {
    let (a, _) = resumes_exactly_tweaked(0, "ppo", ppo_tweak);
    let m = read_metrics(&a.join("metrics.jsonl")).unwrap();
    let critic = |s: usize| m[s].critic.clone().expect("critic metrics");
    assert!(
        !critic(1).policy_updated && m[1].updates == 0,
        "warm-up step"
    );
    assert!(critic(2).policy_updated && m[2].updates == 4);
    for s in 1..=4 {
        let c = critic(s);
        assert_eq!(c.updates, 4, "one critic update per policy mini-batch");
        assert!(c.value_loss.is_finite() && c.value_loss > 0.0, "{c:?}");
        assert!(c.vf_explained_var.is_finite() && c.kl.is_some_and(f64::is_finite));
    }
    assert_ne!(critic(1).kl_coef, critic(4).kl_coef, "adaptive β");
    assert!(
        a.join("checkpoints/step-000004/critic/model.safetensors")
            .exists()
    );
    assert!(
        a.join("checkpoints/step-000004/critic/optimizer_params.json")
            .exists()
    );
}

/// PPO with asynchronous rollouts (one version of staleness): the critic reads the prefetched
/// round's values at update time, and a resumed run (the round in `inflight.json`) reproduces
/// the uninterrupted one.
#[test]
fn ppo_with_asynchronous_rollouts_resumes_exactly() {
    let (a, _) = resumes_exactly_tweaked(1, "ppo", ppo_tweak);
    let m = read_metrics(&a.join("metrics.jsonl")).unwrap();
    assert!(m[1..].iter().all(|s| s.critic.is_some()));
}

/// Data-parallel workers do not train a critic yet: joining a world is refused, naming the
/// field.
#[test]
fn ppo_refuses_data_parallel_workers() {
    let a = tmp("ppo-dp");
    let (cfg, train, eval, tok, model) = tiny_run("ppo", &a, 1);
    let t = Trainer::new(cfg, model, tok, train, Some(eval), Default::default()).unwrap();
    let e = t
        .with_collective(Box::new(rl_trainer::SingleProcess))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("critic"), "{e}");
}

fn ppo_tweak(c: &mut TrainConfig) {
    c.apply_preset("ppo").unwrap();
    let critic = c.critic.as_mut().unwrap();
    critic.warmup_steps = 1;
    critic.lr = Some(1e-3);
    critic.gamma = 0.99;
    critic.lam = 0.95;
    critic.kl_in_reward = Some(rl_trainer::config::KlInRewardSection {
        coef: 0.05,
        penalty: rl_advantage::kl_reward::KlPenalty::Kl,
        target_kl: Some(0.01),
        horizon: 100.0,
    });
}

/// The values + GAE phase on a real batch, against a derivation written here: each response's
/// values are the critic's outputs at the positions that predict its tokens, read from the
/// sequence forwarded alone (no padding); its reward sits on its last token; GAE runs backwards
/// (δ_t = r_t + γV_{t+1} − V_t, A_t = δ_t + γλA_{t+1}), returns are A + V, and the advantages
/// are whitened over every token of the batch with the Bessel-corrected variance.
#[test]
fn ppo_advantages_follow_gae_over_the_critics_values() {
    use burn::tensor::{Int, Tensor, TensorData};
    let a = tmp("ppo-gae");
    let (mut cfg, train, eval, tok, model) = tiny_run("ppo", &a, 1);
    let critic = cfg.critic.as_mut().unwrap();
    critic.gamma = 0.9;
    critic.lam = 0.8;
    let (gamma, lam) = (0.9f64, 0.8f64);
    let mut t = Trainer::new(cfg, model, tok, train, Some(eval), Default::default()).unwrap();
    let batch = t.collect_batch().unwrap();
    let behaviour = t.behaviour(&batch.groups).unwrap();
    let gae = t.gae_advantages(&batch.groups, &behaviour).unwrap();
    let scorer = t.critic().unwrap().model();
    let items: Vec<_> = batch.groups.iter().flat_map(|g| g.items.iter()).collect();
    let (mut raw, mut returns, mut values) = (Vec::new(), Vec::new(), Vec::new());
    for r in &items {
        let ids: Vec<i64> = r
            .prompt_ids
            .iter()
            .chain(&r.response)
            .map(|&x| x as i64)
            .collect();
        let n = ids.len();
        let input =
            Tensor::<B, 2, Int>::from_data(TensorData::new(ids, [1, n]), &Default::default());
        let scores: Vec<f32> = scorer
            .token_scores(input, None)
            .unwrap()
            .into_data()
            .to_vec()
            .unwrap();
        let p = r.prompt_ids.len();
        let v: Vec<f64> = (0..r.response.len())
            .map(|j| scores[p - 1 + j] as f64)
            .collect();
        let mut adv = vec![0.0; v.len()];
        let (mut next_v, mut last) = (0.0, 0.0);
        for j in (0..v.len()).rev() {
            let reward = if j + 1 == v.len() { r.reward } else { 0.0 };
            last = reward + gamma * next_v - v[j] + gamma * lam * last;
            next_v = v[j];
            adv[j] = last;
        }
        returns.push(adv.iter().zip(&v).map(|(a, b)| a + b).collect::<Vec<f64>>());
        raw.push(adv);
        values.push(v);
    }
    let flat: Vec<f64> = raw.iter().flatten().copied().collect();
    let n = flat.len() as f64;
    let mean = flat.iter().sum::<f64>() / n;
    let var = flat.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
    for i in 0..items.len() {
        for j in 0..values[i].len() {
            let close = |x: f64, y: f64| (x - y).abs() <= 2e-4 * (1.0 + y.abs());
            assert!(
                close(gae.targets.values[i][j] as f64, values[i][j]),
                "V {i} {j}"
            );
            assert!(
                close(gae.targets.returns[i][j] as f64, returns[i][j]),
                "R {i} {j}"
            );
            let whitened = (raw[i][j] - mean) / (var + 1e-8).sqrt();
            let got = gae.tokens.per_response[i][j] as f64;
            assert!(close(got, whitened), "A {i} {j}: {got} vs {whitened}");
        }
    }
    assert!(flat.iter().any(|&x| x != 0.0));
}

/// A critic is PPO's: given with another preset, or missing with `ppo`, the config names the
/// field.
#[test]
fn critic_belongs_to_ppo() {
    let c = TrainConfig {
        critic: Some(Default::default()),
        ..Default::default()
    };
    let e = c.validate().unwrap_err().to_string();
    assert!(e.contains("critic") && e.contains("ppo"), "{e}");
    let mut c = TrainConfig::default();
    c.apply_preset("ppo").unwrap();
    c.validate().unwrap();
    c.critic.as_mut().unwrap().lam = 1.5;
    let e = c.validate().unwrap_err().to_string();
    assert!(e.contains("lam"), "{e}");
    c.critic = None;
    let e = c.validate().unwrap_err().to_string();
    assert!(e.contains("critic"), "{e}");
}

/// `[reward.model]` with the verifier's weight 0: every response's reward is the reward model's
/// score normalised over its round, times the weight — the score read here from the sequence
/// forwarded alone (no padding) through `ScoreModel::sequence_scores`, the normalisation
/// written out — while correctness stays the verifier's; the metrics carry both parts.
#[test]
fn a_reward_model_scores_each_round() {
    use burn::tensor::{Int, Tensor, TensorData};
    use rl_models::{ScoreKind, ScoreModel};
    let a = tmp("reward-model");
    let (mut cfg, train, eval, tok, model) = tiny_run("grpo", &a, 1);
    let rm_dir = a.join("rm");
    ScoreModel::from_causal_lm(model.clone(), ScoreKind::Sequence, 1, None, 7)
        .unwrap()
        .save(&rm_dir)
        .unwrap();
    cfg.reward.verifier_weight = 0.0;
    cfg.reward.model = Some(rl_trainer::config::RewardModelSection {
        path: rm_dir.clone(),
        weight: 2.0,
        normalize: rl_trainer::config::ScoreNormalization::Round,
        micro_batch: 3,
    });
    cfg.batch.max_gen_rounds = 1;
    let mut t = Trainer::new(cfg, model, tok, train, Some(eval), Default::default()).unwrap();
    let batch = t.collect_batch().unwrap();
    let rm = ScoreModel::<common::Inner>::load(&rm_dir, &Default::default()).unwrap();
    let items: Vec<_> = batch.groups.iter().flat_map(|g| g.items.iter()).collect();
    let raw: Vec<f64> = items
        .iter()
        .map(|r| {
            let ids: Vec<i64> = r
                .prompt_ids
                .iter()
                .chain(&r.response)
                .map(|&x| x as i64)
                .collect();
            let n = ids.len();
            let input = Tensor::<common::Inner, 2, Int>::from_data(
                TensorData::new(ids, [1, n]),
                &Default::default(),
            );
            let s: Vec<f32> = rm
                .sequence_scores(input, &[n])
                .unwrap()
                .into_data()
                .to_vec()
                .unwrap();
            s[0] as f64
        })
        .collect();
    let n = raw.len() as f64;
    let mean = raw.iter().sum::<f64>() / n;
    let std = (raw.iter().map(|s| (s - mean) * (s - mean)).sum::<f64>() / n).sqrt();
    for (r, s) in items.iter().zip(&raw) {
        let want = 2.0 * (s - mean) / (std + 1e-6);
        assert!(
            (r.reward - want).abs() < 1e-3 * (1.0 + want.abs()),
            "{} vs {want}",
            r.reward
        );
        assert!((r.model_score.unwrap() - s).abs() < 1e-4 * (1.0 + s.abs()));
    }
    assert!(batch.stats.reward_parts.responses == items.len());
}

/// A scripted OpenAI-compatible chat server on 127.0.0.1 for the judge: it answers every
/// request with `reply(request body)` until the returned guard drops.
fn scripted_chat_server(
    reply: impl Fn(&str) -> String + Send + Sync + 'static,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicBool>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopped = stop.clone();
    std::thread::spawn(move || {
        while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
            let Ok((stream, _)) = listener.accept() else {
                std::thread::sleep(std::time::Duration::from_millis(2));
                continue;
            };
            stream.set_nonblocking(false).unwrap();
            let mut r = BufReader::new(stream);
            let mut len = 0;
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0u8; len];
            let _ = r.read_exact(&mut body);
            let content = reply(&String::from_utf8_lossy(&body));
            let json = serde_json::json!({"choices": [{"message": {"role": "assistant", "content": content}}]})
                .to_string();
            let mut s = r.into_inner();
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{json}",
                json.len()
            );
        }
    });
    (url, stop)
}

/// `[reward.judge]` beside the verifier: every response's reward is the verifier's plus
/// `judge_weight` × the judge's, where the scripted judge gives `Score: 10` (reward 1) when the
/// response it is shown contains the reference answer it is shown, `Score: 0` otherwise, and an
/// unreadable reply to every response that holds the digit 7 — those are rewards of 0, counted
/// in the metrics. The judge sees the problem, the reference and the decoded response.
#[test]
fn a_judge_adds_its_reward_and_counts_unreadable_replies() {
    let (url, stop) = scripted_chat_server(|body| {
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        let text = v["messages"][0]["content"].as_str().unwrap().to_string();
        let field = |name: &str| {
            text.split(&format!("<{name}>"))
                .nth(1)
                .and_then(|t| t.split(&format!("</{name}>")).next())
                .unwrap_or("")
                .to_string()
        };
        let (reference, response) = (field("ref"), field("resp"));
        if response.contains('7') {
            "I cannot tell.".into()
        } else if !reference.is_empty() && response.contains(&reference) {
            "Score: 10".into()
        } else {
            "Score: 0".into()
        }
    });
    let a = tmp("judge");
    let (mut cfg, train, eval, tok, model) = tiny_run("grpo", &a, 1);
    cfg.reward.judge_weight = 0.5;
    cfg.reward.judge = Some(rl_rollout::JudgeConfig {
        url,
        model: "judge".into(),
        rubric: "Q <q>{question}</q> <ref>{reference}</ref> <resp>{response}</resp>".into(),
        rule: rl_rollout::JudgeRule::Number {
            marker: "Score:".into(),
            min: 0.0,
            max: 10.0,
        },
        temperature: 0.0,
        max_tokens: 8,
        seed: 0,
        concurrency: 2,
        retry: Default::default(),
        api_key: None,
    });
    cfg.rollout.max_new_tokens = 6;
    let verifier = cfg.build_verifier().unwrap();
    let rewards = cfg.reward_map();
    let answers: Vec<String> = train.prompts.iter().map(|p| p.answer.clone()).collect();
    let mut t = Trainer::new(cfg, model, tok, train, Some(eval), Default::default()).unwrap();
    let batch = t.collect_batch().unwrap();
    let mut unparsed = 0;
    for r in batch.groups.iter().flat_map(|g| g.items.iter()) {
        let answer = &answers[r.prompt_index];
        let v = rewards.reward_for(&verifier.verify(&r.text, answer));
        let judged = if r.text.contains('7') {
            unparsed += 1;
            0.0
        } else if r.text.contains(answer.as_str()) {
            1.0
        } else {
            0.0
        };
        assert!(
            (r.reward - (v + 0.5 * judged)).abs() < 1e-9,
            "{}: {} vs {v} + {judged}/2",
            r.text,
            r.reward
        );
    }
    let parts = batch.stats.reward_parts;
    assert_eq!(parts.judge_unparsed, unparsed);
    assert!(
        unparsed > 0,
        "the scripted replies exercise the unreadable case"
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
}
