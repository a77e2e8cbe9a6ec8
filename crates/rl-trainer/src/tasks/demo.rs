//! The embedded arithmetic run: a tiny Qwen3-architecture model, a character-level tokenizer
//! built through the `tokenizers` crate, a short supervised warm-start, then RL. Shared by
//! `cargo run --example da3po_qwen3`, `rlvr train` (without a model path) and `rlvr compare`.
//!
//! The warm-start is supervised on the reference responses of the training prompts of all three
//! tiers, and deliberately short (200 updates of 128 examples): it teaches the answer format and
//! leaves the hard tier (three-digit + two-digit) with a small but non-zero pass rate. That is
//! the regime DA3PO is about — hard prompts where correct answers are rare — and it is stated as
//! such in the example's output and docs/results.md.

use std::path::{Path, PathBuf};

use burn::tensor::backend::AutodiffBackend;
use rl_models::{CausalLm, ModelConfig, Tokenizer};
use serde::{Deserialize, Serialize};

use super::arithmetic::ArithmeticTask;
use super::embedded::{load_demo, tiny_qwen3, with_toml_overrides};
use crate::data::{Dataset, Prompt, PromptRenderer};
use crate::{SftConfig, TrainConfig, TrainerError};

/// Everything that defines the embedded run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArithmeticDemo {
    /// The task's tiers.
    pub task: ArithmeticTask,
    /// Training prompts per tier.
    pub train_per_tier: usize,
    /// Training prompts of each tier, in tier order, overriding `train_per_tier` (empty: every
    /// tier has `train_per_tier`). This sets the difficulty mix of the RL pool and of the
    /// warm-start, e.g. `train_mix = [100, 200, 900]` for a pool where hard prompts dominate.
    #[serde(default)]
    pub train_mix: Vec<usize>,
    /// RL on prompts the warm-start never saw: the warm-start reads `train_per_tier` prompts per
    /// tier and the RL pool (`train_mix`, or `train_per_tier`) is drawn after them in each
    /// tier's seeded order, so the pool's pass rates are those of unseen problems rather than
    /// of memorised ones. Off: both read the same prompts.
    #[serde(default)]
    pub disjoint_pool: bool,
    /// Held-out prompts per tier.
    pub eval_per_tier: usize,
    /// Seed of the train/held-out split (fixed across runs so that every seed sees the same data).
    pub data_seed: u64,
    /// Model width.
    pub hidden_size: usize,
    /// Decoder layers.
    pub num_hidden_layers: usize,
    /// Query heads (key/value heads are half of them).
    pub num_attention_heads: usize,
    /// SwiGLU width.
    pub intermediate_size: usize,
    /// The supervised warm-start.
    pub sft: SftConfig,
    /// The RL run (its `algorithm` preset is applied on top).
    pub train: TrainConfig,
}

impl Default for ArithmeticDemo {
    fn default() -> Self {
        let mut train = TrainConfig {
            steps: 80,
            out_dir: PathBuf::from("runs/da3po_qwen3"),
            ..TrainConfig::default()
        };
        // "12+35=" → "Answer: 47<|im_end|>": short sequences keep the CPU run fast; the Qwen
        // chat template path is exercised by real checkpoints (data.chat_template = true).
        train.data.template = crate::config::PromptTemplate::Custom("{problem}=".into());
        train.data.chat_template = false;
        train.rollout.group_size = 8;
        train.rollout.prompts_per_round = 64;
        train.rollout.max_new_tokens = 16;
        train.rollout.temperature = 1.0;
        train.rollout.top_p = 1.0;
        train.batch.groups_per_step = 32;
        train.batch.max_gen_rounds = 8;
        train.batch.on_exhausted = rl_sampler::OnExhausted::TrainOnKept;
        train.optim.lr = 1e-4;
        train.optim.warmup_steps = 5;
        train.optim.weight_decay = 0.0;
        train.optim.grad_clip = 1.0;
        train.optim.mini_batches = 2;
        train.optim.micro_batch = 128;
        train.checkpoint.every = 20;
        train.checkpoint.keep = 1;
        train.eval.every = 10;
        train.eval.k = 8;
        train.eval.temperature = 1.0;
        train.eval.top_p = 1.0;
        train.apply_preset("da3po").expect("registered preset");
        Self {
            task: ArithmeticTask::default(),
            train_per_tier: 900,
            train_mix: Vec::new(),
            disjoint_pool: false,
            eval_per_tier: 50,
            data_seed: 2026,
            hidden_size: 256,
            num_hidden_layers: 2,
            num_attention_heads: 8,
            intermediate_size: 512,
            sft: SftConfig {
                steps: 200,
                batch_size: 128,
                seed: 0,
                optim: SftConfig::default_optim(),
                sort_by_length: false,
            },
            train,
        }
    }
}

/// Data, tokenizer and the model config of a demo.
pub struct DemoData {
    /// The character-level tokenizer.
    pub tokenizer: Tokenizer,
    /// Training prompts (the RL pool).
    pub train: Dataset,
    /// The warm-start's prompts (the RL pool unless `disjoint_pool`).
    pub sft: Dataset,
    /// Held-out prompts.
    pub eval: Dataset,
    /// The tiny Qwen3 config.
    pub model: ModelConfig,
}

impl ArithmeticDemo {
    /// The default with the keys of a TOML document on top (any field, e.g. `sft.steps = 300`
    /// or `[train.optim] lr = 1e-4`); unknown keys are errors.
    pub fn from_toml_str(text: &str) -> Result<Self, TrainerError> {
        let demo: Self = with_toml_overrides(Self::default(), text)?;
        demo.train.validate()?;
        Ok(demo)
    }

    /// The (warm-start, RL pool, held-out) split. Per tier, in the task's seeded order: the
    /// held-out prompts first (independent of everything else), then the warm-start's
    /// `train_per_tier`, then — with `disjoint_pool` — the RL pool's; without it the RL pool is
    /// the first prompts of the warm-start's. The pool's size per tier is `train_mix[tier]`
    /// (default `train_per_tier`), at most what the tier has left.
    fn split(&self) -> Result<(Dataset, Dataset, Dataset), TrainerError> {
        let tiers = self.task.tiers.len();
        if !self.train_mix.is_empty() && self.train_mix.len() != tiers {
            return Err(TrainerError::Config {
                field: "train_mix".into(),
                message: format!(
                    "{} counts for {tiers} tiers; give one count per tier, in tier order",
                    self.train_mix.len()
                ),
            });
        }
        let pool = |t: usize| {
            self.train_mix
                .get(t)
                .copied()
                .unwrap_or(self.train_per_tier)
        };
        let most = (0..tiers).map(pool).max().unwrap_or(0);
        let wanted = if self.disjoint_pool {
            self.train_per_tier + most
        } else {
            self.train_per_tier.max(most)
        };
        let (all, eval) = self
            .task
            .split(self.data_seed, wanted, self.eval_per_tier)?;
        let mut seen = vec![0usize; tiers];
        let (mut sft, mut rl) = (Vec::new(), Vec::new());
        for p in all.prompts {
            let t = self
                .task
                .tiers
                .iter()
                .position(|t| Some(&t.name) == p.tier.as_ref())
                .unwrap_or(0);
            let i = seen[t];
            seen[t] += 1;
            if i < self.train_per_tier {
                sft.push(p.clone());
            }
            let j = if self.disjoint_pool {
                i.checked_sub(self.train_per_tier)
            } else {
                Some(i)
            };
            if j.is_some_and(|j| j < pool(t)) {
                rl.push(p);
            }
        }
        let renumber = |v: Vec<Prompt>| Dataset {
            prompts: v
                .into_iter()
                .enumerate()
                .map(|(id, p)| Prompt { id: id as u64, ..p })
                .collect(),
        };
        Ok((renumber(sft), renumber(rl), eval))
    }

    /// The default, or with `path` the default with that TOML file's overrides
    /// ([`ArithmeticDemo::from_toml_str`]).
    pub fn load(path: Option<&Path>) -> Result<Self, TrainerError> {
        load_demo(path, Self::from_toml_str)
    }

    /// Builds the tokenizer, the split and the model config.
    pub fn data(&self) -> Result<DemoData, TrainerError> {
        let tokenizer = ArithmeticTask::tokenizer()?;
        let (sft, train, eval) = self.split()?;
        let model = tiny_qwen3(
            &tokenizer,
            self.hidden_size,
            self.num_hidden_layers,
            self.num_attention_heads,
            self.intermediate_size,
        );
        Ok(DemoData {
            tokenizer,
            train,
            sft,
            eval,
            model,
        })
    }

    /// A seeded random model, warm-started on the reference responses of the training prompts.
    /// `on_step(step, loss)` sees every supervised update.
    pub fn warm_start<B: AutodiffBackend>(
        &self,
        data: &DemoData,
        seed: u64,
        device: &B::Device,
        on_step: impl FnMut(usize, f64),
    ) -> Result<CausalLm<B>, TrainerError> {
        let model: CausalLm<B> = data.model.init_seeded(seed, device)?;
        let renderer = PromptRenderer::new(&self.train.data);
        let end = crate::end_token_ids(&data.tokenizer);
        let mut pairs = Vec::with_capacity(data.sft.len());
        for p in &data.sft.prompts {
            let prompt = renderer.render(p, &data.tokenizer)?;
            let mut response = data.tokenizer.encode(&ArithmeticTask::response(p))?;
            response.push(end[0]);
            pairs.push(crate::SftExample::from((prompt, response)));
        }
        let sft = SftConfig { seed, ..self.sft };
        crate::supervised_warm_start(model, &pairs, &sft, device, on_step)
    }

    /// The RL config for `algorithm` and `seed`, writing into `out_dir`.
    pub fn train_config(
        &self,
        algorithm: &str,
        seed: u64,
        out_dir: &Path,
    ) -> Result<TrainConfig, TrainerError> {
        let mut c = self.train.clone();
        c.apply_preset(algorithm)?;
        c.seed = seed;
        c.out_dir = out_dir.to_path_buf();
        c.validate()?;
        Ok(c)
    }
}
