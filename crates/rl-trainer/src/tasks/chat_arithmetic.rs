//! Graded arithmetic as chat questions for a pretrained instruct model: "What is 37 + 96? Give
//! only the number.", six tiers from one-digit sums to three-digit sums and a product, split
//! into disjoint training and held-out sets and written as JSON lines that `rlvr train`,
//! `rlvr eval` and TRL read alike (`prompt`, `answer`, `tier`).
//!
//! The model's own chat template wraps the question (`data.chat_template = true`,
//! `data.template = "raw"`), and the `last_number` verifier reads the reply's final number.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::arithmetic::{ArithmeticTask, Tier};
use super::task_files::TaskFiles;
use crate::TrainerError;
use crate::data::Dataset;

/// The question asked for `a op b`: `{a}`, `{op}` and `{b}` are replaced.
pub const QUESTION: &str = "What is {a} {op} {b}? Give only the number.";

/// The task: tiers, split sizes and the wording of the question.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ChatArithmetic {
    /// Tiers, easiest first.
    pub task: ArithmeticTask,
    /// Training problems per tier (at most all those the held-out set leaves).
    pub train_per_tier: usize,
    /// Held-out problems per tier.
    pub eval_per_tier: usize,
    /// Seed of the split.
    pub data_seed: u64,
    /// The question, with `{a}`, `{op}` and `{b}` (see [`QUESTION`]).
    pub question: String,
}

impl Default for ChatArithmetic {
    /// Six tiers: 1-digit + 1-digit (operands 0–9), 2-digit + 1-digit, 2-digit + 2-digit,
    /// 3-digit + 2-digit, 3-digit + 3-digit and 2-digit × 1-digit (1–9); 32 held-out
    /// problems per tier, up to 400 training problems (1d+1d has 100 in all, so 68).
    fn default() -> Self {
        Self {
            task: ArithmeticTask {
                tiers: vec![
                    Tier::new("1d+1d", (0, 9), (0, 9), '+'),
                    Tier::new("2d+1d", (10, 99), (0, 9), '+'),
                    Tier::new("2d+2d", (10, 99), (10, 99), '+'),
                    Tier::new("3d+2d", (100, 999), (10, 99), '+'),
                    Tier::new("3d+3d", (100, 999), (100, 999), '+'),
                    Tier::new("2dx1d", (10, 99), (1, 9), '*'),
                ],
            },
            train_per_tier: 400,
            eval_per_tier: 32,
            data_seed: 0,
            question: QUESTION.into(),
        }
    }
}

impl ChatArithmetic {
    /// The question for `a op b` (`*` written as `×`).
    pub fn question_for(&self, a: i64, op: char, b: i64) -> String {
        let op = if op == '*' { '×' } else { op };
        self.question
            .replace("{a}", &a.to_string())
            .replace("{op}", &op.to_string())
            .replace("{b}", &b.to_string())
    }

    /// Disjoint training and held-out sets ([`ArithmeticTask::split_with`]).
    pub fn split(&self) -> Result<(Dataset, Dataset), TrainerError> {
        self.task.split_with(
            self.data_seed,
            self.train_per_tier,
            self.eval_per_tier,
            |a, op, b| self.question_for(a, op, b),
        )
    }

    /// Writes `train.jsonl` and `eval.jsonl` into `dir` (created if needed): one object per
    /// line with `prompt` (the question), `answer` and `tier`.
    pub fn write(&self, dir: &Path) -> Result<TaskFiles, TrainerError> {
        let (train, eval) = self.split()?;
        TaskFiles::write(dir, &train, &eval)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{DataSection, PromptTemplate};
    use crate::data::PromptText;

    #[test]
    fn sets_are_disjoint_and_read_back_with_their_answers() {
        let task = ChatArithmetic {
            train_per_tier: 50,
            eval_per_tier: 8,
            ..Default::default()
        };
        let dir = std::env::temp_dir().join(format!("rlvr-chat-arith-{}", std::process::id()));
        let files = task.write(&dir).unwrap();
        let cfg = DataSection {
            prompt_key: "prompt".into(),
            answer_key: "answer".into(),
            tier_key: Some("tier".into()),
            template: PromptTemplate::Raw,
            ..Default::default()
        };
        let train = Dataset::load(&files.train, &cfg).unwrap();
        let eval = Dataset::load(&files.eval, &cfg).unwrap();
        assert_eq!(eval.len(), 6 * 8);
        assert_eq!(train.len(), 6 * 50);
        let text = |p: &crate::data::Prompt| match &p.text {
            PromptText::Text(t) => t.clone(),
            PromptText::Chat(_) => unreachable!(),
        };
        let held: std::collections::HashSet<String> = eval.prompts.iter().map(text).collect();
        for p in &train.prompts {
            assert!(!held.contains(&text(p)), "{} is in both sets", text(p));
        }
        // each answer is the arithmetic of its own question, re-derived from the text
        for p in train.prompts.iter().chain(&eval.prompts) {
            let q = text(p);
            let body = q
                .strip_prefix("What is ")
                .and_then(|r| r.strip_suffix("? Give only the number."))
                .unwrap();
            let parts: Vec<&str> = body.split(' ').collect();
            let (a, b): (i64, i64) = (parts[0].parse().unwrap(), parts[2].parse().unwrap());
            let want = match parts[1] {
                "+" => a + b,
                "×" => a * b,
                op => panic!("operator {op}"),
            };
            assert_eq!(p.answer, want.to_string(), "{q}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
