//! On-policy distillation (`[distill]`): a teacher equal to the student gives no signal and
//! leaves the weights exactly as they were, in both forms; a different teacher gives a signal
//! that moves the weights; a teacher with another vocabulary or tokenizer is refused; bad
//! `[distill]` values name their field.

use std::path::Path;

use rl_models::{CausalLm, ModelConfig, Tokenizer};
use rl_trainer::tasks::ArithmeticTask;
use rl_trainer::tasks::{ALPHABET, SPECIAL_TOKENS};
use rl_trainer::{DistillForm, DistillSection, StepMetrics, TrainConfig, Trainer, TrainerError};

mod common;
use common::{B, flat};

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
        teacher: teacher.to_path_buf(),
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
