//! Helpers shared by rl-trainer's integration tests (each test file compiles its own copy, so
//! a file may use only some of them).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use burn::backend::{Autodiff, Flex};
use burn::module::{Module, ModuleVisitor, Param};
use burn::prelude::*;
use rl_models::{CausalLm, ModelConfig, Tokenizer};
use rl_trainer::TrainConfig;
use rl_trainer::config::PromptTemplate;
use rl_trainer::tasks::ArithmeticTask;

/// Preset `algo` on the embedded task at test size: `steps` steps into `out`, prompts as
/// `{problem}=` without the chat template, 4 prompts of 4 responses per round, 4 groups per step,
/// at most 2 rounds, lr 1e-3.
pub fn task_config(algo: &str, out: &Path, steps: usize) -> TrainConfig {
    let mut c = TrainConfig::default();
    c.apply_preset(algo).unwrap();
    c.steps = steps;
    c.out_dir = out.to_path_buf();
    c.data.template = PromptTemplate::Custom("{problem}=".into());
    c.data.chat_template = false;
    c.rollout.group_size = 4;
    c.rollout.prompts_per_round = 4;
    c.batch.groups_per_step = 4;
    c.batch.max_gen_rounds = 2;
    c.optim.lr = 1e-3;
    c
}

/// The CPU training backend of the tests.
pub type B = Autodiff<Flex>;

/// Its inner backend (models without a graph).
pub type Inner = Flex;

/// A fresh, empty temporary folder `rlvr-<prefix>-<pid>-<name>`, removed when the returned
/// guard drops — unless the test is failing (panicking), so that its logs and checkpoints stay
/// for a look.
pub fn tmp(prefix: &str, name: &str) -> TmpDir {
    let d = std::env::temp_dir().join(format!("rlvr-{prefix}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    TmpDir(d)
}

/// A test's temporary folder; see [`tmp`]. Derefs to its path.
pub struct TmpDir(PathBuf);

impl std::ops::Deref for TmpDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TmpDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept {} (the test failed)", self.0.display());
        } else if let Err(e) = std::fs::remove_dir_all(&self.0) {
            eprintln!("could not remove {}: {e}", self.0.display());
        }
    }
}

/// The arithmetic task's tokenizer and a tiny random Qwen3 over it (ends at its end tokens),
/// with HF's init scale unless `init_range` says otherwise.
pub fn task_model(seed: u64, init_range: Option<f64>) -> (CausalLm<B>, Tokenizer) {
    let tok = ArithmeticTask::tokenizer().unwrap();
    let mut mc = ModelConfig::tiny(tok.num_defined_ids());
    mc.eos_token_id = rl_trainer::end_token_ids(&tok);
    if let Some(r) = init_range {
        mc.initializer_range = r;
    }
    (mc.init_seeded(seed, &Default::default()).unwrap(), tok)
}

/// GRPO on the arithmetic task with one optimizer update per step (so that it runs before any
/// weight changes), one round of 4 prompts × 4 responses of at most 6 tokens per step, no
/// filter, no checkpoints or evaluations.
pub fn grpo_one_update(out: &Path, steps: usize) -> TrainConfig {
    let mut c = task_config("grpo", out, steps);
    c.rollout.max_new_tokens = 6;
    c.optim.mini_batches = 1;
    c.optim.epochs = 1;
    c.checkpoint.every = 0;
    c.eval.every = 0;
    c
}

struct Flatten(Vec<f32>);

impl ModuleVisitor<B> for Flatten {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        self.0.extend(
            param
                .val()
                .into_data()
                .convert::<f32>()
                .to_vec::<f32>()
                .unwrap(),
        );
    }
}

/// Every parameter of `model`, flattened in visiting order.
pub fn flat(model: &CausalLm<B>) -> Vec<f32> {
    let mut v = Flatten(Vec::new());
    model.visit(&mut v);
    v.0
}

/// ‖θ − θ_ref‖₂ / ‖θ_ref − θ₀‖₂ over the parameter elements (flattened as [`flat`] does), leaving
/// out the 0.1 % (rounded up) whose gap |θ − θ_ref| is largest: how far two runs' parameters
/// are apart, as a fraction of the update the reference run made.
///
/// Why some elements are left out: AdamW moves an element by lr·m̂/(√v̂ + ε), and for an
/// element whose gradient is within a few ε = 1e-8 of zero that step is a fraction of lr set by
/// the gradient's last bits, which two summation orders round differently. Measured
/// (tests/distributed.rs, shared prompts against the plain pass, 2026-12-07): two of 75,520
/// elements, with gradients 2.19e-8 against 2.79e-8 and 4.71e-9 against 5.94e-9, carried the
/// whole parameter gap of 2.5e-4 of the update after one step, while the two gradients agreed
/// within 7e-7 per tensor; 4 of the 75,520 gradients were below 1e-7. A wrong computation
/// (a missing share, a wrong normaliser) moves far more than 0.1 % of the elements.
pub fn trimmed_update_gap(params: &[f32], reference: &[f32], start: &[f32]) -> f64 {
    assert_eq!(params.len(), reference.len());
    assert_eq!(start.len(), reference.len());
    let mut gaps: Vec<f64> = params
        .iter()
        .zip(reference)
        .map(|(a, b)| ((a - b) as f64).powi(2))
        .collect();
    gaps.sort_by(f64::total_cmp);
    let keep = gaps.len() - gaps.len().div_ceil(1000);
    let gap: f64 = gaps[..keep].iter().sum::<f64>().sqrt();
    let update: f64 = reference
        .iter()
        .zip(start)
        .map(|(a, b)| ((a - b) as f64).powi(2))
        .sum::<f64>()
        .sqrt();
    gap / update
}

struct FlattenGrads<'a> {
    grads: &'a burn::optim::GradientsParams,
    /// One `(name, values)` per float parameter, in visiting order.
    tensors: Vec<(String, Vec<f32>)>,
}

impl ModuleVisitor<B> for FlattenGrads<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let n = param.val().shape().num_elements();
        let values = match self
            .grads
            .get::<<B as burn::tensor::backend::AutodiffBackend>::InnerBackend, D>(param.id)
        {
            Some(g) => g.into_data().convert::<f32>().to_vec::<f32>().unwrap(),
            None => vec![0.0; n],
        };
        self.tensors.push((
            format!("#{} {:?}", self.tensors.len(), param.val().dims()),
            values,
        ));
    }
}

/// The gradient of every float parameter of `model` in `grads` (zeros where it has none), one
/// `(name, values)` per parameter tensor in [`flat`]'s order; the name is the tensor's index and
/// shape.
pub fn flat_grads(
    model: &CausalLm<B>,
    grads: &burn::optim::GradientsParams,
) -> Vec<(String, Vec<f32>)> {
    let mut v = FlattenGrads {
        grads,
        tensors: Vec::new(),
    };
    model.visit(&mut v);
    v.tensors
}

/// What one hand-written step ([`hand_step`]) produced.
pub struct HandStep {
    /// Responses generated for the batch.
    pub generated: usize,
    /// One advantage per response of the kept groups.
    pub advantages: Vec<f64>,
    /// The behaviour phase's output.
    pub behaviour: rl_trainer::trainer::Behaviour,
    /// The update phase's output.
    pub update: rl_trainer::trainer::UpdateStats,
}

/// One training step written by hand from the trainer's public phases, as a custom loop would:
/// collect a batch, advantages, the behaviour phase chosen by `behaviour`, mini-batches, update,
/// finish the step.
pub fn hand_step<P: rl_trainer::Policy<B>>(
    t: &mut rl_trainer::Trainer<B, P>,
    behaviour: impl FnOnce(
        &rl_trainer::Trainer<B, P>,
        &[rl_sampler::RolloutGroup<rl_trainer::scoring::ScoredResponse>],
    ) -> Result<rl_trainer::trainer::Behaviour, rl_trainer::TrainerError>,
) -> HandStep {
    let step = t.step_count() + 1;
    let lr = rl_trainer::optim::lr_at(&t.config().optim, t.step_count());
    let batch = t.collect_batch().unwrap();
    let adv = t.advantages(&batch.groups).unwrap();
    let behaviour = behaviour(t, &batch.groups).unwrap();
    let minibatches = t.minibatches(batch.groups.len());
    let train = rl_trainer::trainer::TrainBatch {
        groups: &batch.groups,
        advantages: &adv.advantages,
        token_advantages: None,
        behaviour: &behaviour,
        minibatches: &minibatches,
    };
    let update = t.update(step, lr, &train).unwrap();
    t.finish_step().unwrap();
    HandStep {
        generated: batch.stats.generated,
        advantages: adv.advantages,
        behaviour,
        update,
    }
}
