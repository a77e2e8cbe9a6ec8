//! Helpers shared by rl-trainer's integration tests (each test file compiles its own copy, so
//! a file may use only some of them).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use burn::backend::{Autodiff, Flex};
use burn::module::{Module, ModuleVisitor, Param};
use burn::prelude::*;
use rl_models::{Qwen3, Qwen3Config, Tokenizer};
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

/// A fresh, empty temporary folder `rlvr-<prefix>-<pid>-<name>`.
pub fn tmp(prefix: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rlvr-{prefix}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The arithmetic task's tokenizer and a tiny random Qwen3 over it (ends at its end tokens),
/// with HF's init scale unless `init_range` says otherwise.
pub fn task_model(seed: u64, init_range: Option<f64>) -> (Qwen3<B>, Tokenizer) {
    let tok = ArithmeticTask::tokenizer().unwrap();
    let mut mc = Qwen3Config::tiny(tok.num_defined_ids());
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
pub fn flat(model: &Qwen3<B>) -> Vec<f32> {
    let mut v = Flatten(Vec::new());
    model.visit(&mut v);
    v.0
}
