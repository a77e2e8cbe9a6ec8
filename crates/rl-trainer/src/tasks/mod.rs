//! A built-in arithmetic task family with difficulty tiers, generated deterministically: the
//! embedded default of `cargo run --example da3po_qwen3` and of the trainer's tests. The whole
//! embedded run built on it (split, tiny model, warm-start, RL settings) is [`demo`].
//!
//! A problem is `a+b` (or `a-b`, `a*b`); the expected response is `Answer: <n>` followed by the
//! end-of-turn token, so the `dapo` verifier (verl `math_dapo` parity) scores it exactly as it
//! scores DAPO-Math-17K responses.

use std::collections::HashSet;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rl_models::Tokenizer;
use serde::{Deserialize, Serialize};

use crate::TrainerError;
use crate::data::{Dataset, Prompt, PromptText};

pub mod chat_arithmetic;
pub mod demo;
pub mod tool_use;
pub use chat_arithmetic::ChatArithmetic;
pub use demo::ArithmeticDemo;
pub use tool_use::ToolUseDemo;

/// `default` with the keys of a TOML document on top (any field, nested tables merged key by
/// key); unknown keys are errors. The embedded runs' `--demo FILE`.
pub(crate) fn with_toml_overrides<T: Serialize + serde::de::DeserializeOwned>(
    default: T,
    text: &str,
) -> Result<T, TrainerError> {
    let bad = |message: String| TrainerError::Config {
        field: "<demo toml>".into(),
        message,
    };
    let user: toml::Table = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
    let mut merged = toml::Table::try_from(default).map_err(|e| bad(e.to_string()))?;
    crate::config::merge_toml(&mut merged, user);
    toml::Value::Table(merged)
        .try_into()
        .map_err(|e: toml::de::Error| bad(e.to_string()))
}

/// The default demo, or with `path` the default with that file's overrides (`parse`).
pub(crate) fn load_demo<T: Default>(
    path: Option<&std::path::Path>,
    parse: impl FnOnce(&str) -> Result<T, TrainerError>,
) -> Result<T, TrainerError> {
    match path {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| TrainerError::io(p, e))?;
            parse(&text)
        }
        None => Ok(T::default()),
    }
}

/// The tiny Qwen3 of the embedded runs over `tokenizer`'s ids: `hidden` wide, `layers` decoder
/// layers of `heads` query heads (half as many key/value heads) and a SwiGLU of `intermediate`,
/// ending at the tokenizer's end tokens.
pub fn tiny_qwen3(
    tokenizer: &Tokenizer,
    hidden: usize,
    layers: usize,
    heads: usize,
    intermediate: usize,
) -> rl_models::ModelConfig {
    let mut model = rl_models::ModelConfig::tiny(tokenizer.num_defined_ids());
    model.hidden_size = hidden;
    model.num_hidden_layers = layers;
    model.num_attention_heads = heads;
    model.num_key_value_heads = (heads / 2).max(1);
    model.head_dim = hidden / heads;
    model.intermediate_size = intermediate;
    model.eos_token_id = crate::end_token_ids(tokenizer);
    model
}

/// Characters of every prompt and response of the task.
pub const ALPHABET: &str = "0123456789+-*= :\n";
/// Added tokens of the task's tokenizer: Qwen's end/turn tokens, and `Answer:` as one token so
/// that the answer line costs two tokens instead of eight (it decodes to the same text).
pub const SPECIAL_TOKENS: [&str; 4] = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "Answer:"];

/// One difficulty tier: operands drawn uniformly from the ranges.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tier {
    /// Name used in metrics.
    pub name: String,
    /// Inclusive range of the first operand.
    pub a: (i64, i64),
    /// Inclusive range of the second operand.
    pub b: (i64, i64),
    /// Operator: `+`, `-` or `*`.
    pub op: char,
}

impl Tier {
    /// A tier named `name` of `a op b`, operands drawn from the inclusive ranges `a` and `b`.
    pub fn new(name: &str, a: (i64, i64), b: (i64, i64), op: char) -> Self {
        Self {
            name: name.into(),
            a,
            b,
            op,
        }
    }

    fn count(&self) -> usize {
        ((self.a.1 - self.a.0 + 1) * (self.b.1 - self.b.0 + 1)) as usize
    }
}

/// The task: a list of tiers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArithmeticTask {
    /// Tiers from easiest to hardest.
    pub tiers: Vec<Tier>,
}

impl Default for ArithmeticTask {
    /// easy: (one- or two-digit) + one-digit; medium: two-digit + two-digit; hard: three-digit +
    /// two-digit. Each tier needs the previous one's skill plus longer carries.
    fn default() -> Self {
        let t = |name: &str, a, b| Tier::new(name, a, b, '+');
        Self {
            tiers: vec![
                t("easy", (0, 99), (0, 9)),
                t("medium", (10, 99), (10, 99)),
                t("hard", (100, 999), (10, 99)),
            ],
        }
    }
}

fn apply(op: char, a: i64, b: i64) -> Result<i64, TrainerError> {
    match op {
        '+' => Ok(a + b),
        '-' => Ok(a - b),
        '*' => Ok(a * b),
        other => Err(TrainerError::Config {
            field: "task.tiers.op".into(),
            message: format!("unknown operator `{other}`; valid: +, -, *"),
        }),
    }
}

impl ArithmeticTask {
    /// Disjoint held-out and training sets. Per tier the problems are put in a seeded random
    /// order (`ChaCha8Rng::seed_from_u64(seed)`); the first `eval` form the held-out set and the
    /// next `train` (at most all the rest) the training set, so the held-out set does not
    /// depend on `train`.
    pub fn split(
        &self,
        seed: u64,
        train: usize,
        eval: usize,
    ) -> Result<(Dataset, Dataset), TrainerError> {
        self.split_with(seed, train, eval, |a, op, b| format!("{a}{op}{b}"))
    }

    /// [`split`](Self::split) with each problem written by `text(a, op, b)` (the same
    /// problems in the same order for the same seed, whatever the wording).
    pub fn split_with(
        &self,
        seed: u64,
        train: usize,
        eval: usize,
        text: impl Fn(i64, char, i64) -> String,
    ) -> Result<(Dataset, Dataset), TrainerError> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (mut tr, mut ev) = (Vec::new(), Vec::new());
        for tier in &self.tiers {
            if tier.a.0 > tier.a.1 || tier.b.0 > tier.b.1 {
                return Err(TrainerError::Config {
                    field: "task.tiers".into(),
                    message: format!("tier `{}` has an empty operand range", tier.name),
                });
            }
            let total = tier.count();
            if eval >= total {
                return Err(TrainerError::Config {
                    field: "eval_per_tier".into(),
                    message: format!(
                        "{eval} held-out problems leave none of tier `{}`'s {total} for training",
                        tier.name
                    ),
                });
            }
            let wanted = (eval + train).min(total);
            let problems: Vec<(i64, i64)> = if total <= 1 << 20 {
                let mut all: Vec<(i64, i64)> = (tier.a.0..=tier.a.1)
                    .flat_map(|a| (tier.b.0..=tier.b.1).map(move |b| (a, b)))
                    .collect();
                all.shuffle(&mut rng);
                all.truncate(wanted);
                all
            } else {
                let mut seen = HashSet::new();
                let mut v = Vec::with_capacity(wanted);
                while v.len() < wanted {
                    let p = (
                        rng.random_range(tier.a.0..=tier.a.1),
                        rng.random_range(tier.b.0..=tier.b.1),
                    );
                    if seen.insert(p) {
                        v.push(p);
                    }
                }
                v
            };
            for (i, (a, b)) in problems.into_iter().enumerate() {
                let answer = apply(tier.op, a, b)?;
                let dest = if i < eval { &mut ev } else { &mut tr };
                dest.push(Prompt {
                    id: dest.len() as u64,
                    text: PromptText::Text(text(a, tier.op, b)),
                    answer: answer.to_string(),
                    tier: Some(tier.name.clone()),
                });
            }
        }
        Ok((Dataset { prompts: tr }, Dataset { prompts: ev }))
    }

    /// The task's character-level tokenizer (built through the `tokenizers` crate like any
    /// `tokenizer.json`).
    pub fn tokenizer() -> Result<Tokenizer, TrainerError> {
        Ok(Tokenizer::char_level(ALPHABET, &SPECIAL_TOKENS)?)
    }

    /// The reference response for a prompt (supervised warm-start target, without end token).
    pub fn response(prompt: &Prompt) -> String {
        format!("Answer: {}", prompt.answer)
    }
}
