//! The arithmetic problems: tiers of operand ranges, the deterministic split, the tokenizer and
//! the expected response.

use std::collections::HashSet;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rl_models::Tokenizer;
use serde::{Deserialize, Serialize};

use crate::TrainerError;
use crate::data::{Dataset, Prompt, PromptText};

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
