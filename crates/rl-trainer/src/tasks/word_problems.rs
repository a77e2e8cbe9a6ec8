//! Multi-step arithmetic word problems for reasoning from a base model: "Ava has 12 apples. She
//! buys 5 more and then gives away 3. How many apples does she have now?", in tiers by the
//! number of operations (two or three) and the size of the numbers, with the answer to work out
//! and to end with `#### N` (the GSM8K convention, scored by the `gsm8k` verifier).
//!
//! Every problem is made from a template with its numbers drawn from a seeded generator, so the
//! answer is known; every intermediate and final value is a positive integer, and the answer is
//! none of the numbers the question states (otherwise copying one would earn the reward: with
//! such problems allowed, 28 % of the add-sub-small tier's answers were in the question, and a
//! base model learned to repeat a number from it instead of working the problem out). The held-out and
//! training sets are disjoint in their arithmetic (no held-out (template, numbers) appears in
//! training, whatever the names and things). Written as JSON lines that `rlvr train`,
//! `rlvr eval` and TRL read alike (`prompt` = the question alone, `answer`, `tier`); the
//! few-shot frame around a question is the run's prompt template ([`FEW_SHOT`]).

use std::collections::HashSet;
use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::task_files::TaskFiles;
use crate::TrainerError;
use crate::data::{Dataset, Prompt, PromptText};

/// The few-shot frame a base model reads (`data.template = { custom = FEW_SHOT }`): two worked
/// problems of other templates than any tier's, then the question after `Question: ` and the
/// answer to be written after `Answer:`. A reply ends at the blank line before a next question
/// (`rollout.stop = ["\n\n"]`).
pub const FEW_SHOT: &str = "Question: A baker makes 24 rolls in the morning and 18 rolls in \
the afternoon. She sells 30 of them. How many rolls are left?\nAnswer: She makes 24 + 18 = 42 \
rolls. After selling 30, 42 - 30 = 12 rolls are left.\n#### 12\n\nQuestion: Tom reads 6 pages \
every day for 5 days, then 4 more pages. How many pages does he read?\nAnswer: In 5 days he \
reads 6 * 5 = 30 pages. With 4 more, 30 + 4 = 34 pages.\n#### 34\n\nQuestion: {problem}\nAnswer:";

/// How a tier's problems are built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Template {
    /// `a + b − c` (two operations): has, buys more, gives away.
    AddSub,
    /// `a × b + c` (two operations): boxes of equal size, and some more.
    MulAdd,
    /// `a + b × c − d` (three operations): has, buys bags of equal size, gives away.
    ThreeStep,
}

/// A tier: a template and the range of its numbers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WordTier {
    /// Name used in metrics.
    pub name: String,
    /// How the problem is built.
    pub template: Template,
    /// The range of the amounts (`a`, `b`, `c`, `d` where they count things).
    pub amounts: (u32, u32),
    /// The range of a group size or count of groups (`×`'s operands).
    pub factors: (u32, u32),
}

impl WordTier {
    fn new(name: &str, template: Template, amounts: (u32, u32), factors: (u32, u32)) -> Self {
        Self {
            name: name.into(),
            template,
            amounts,
            factors,
        }
    }
}

/// The task: tiers, split sizes and seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WordProblems {
    /// Tiers, easiest first.
    pub tiers: Vec<WordTier>,
    /// Training problems per tier.
    pub train_per_tier: usize,
    /// Held-out problems per tier.
    pub eval_per_tier: usize,
    /// Seed of the problems and the split.
    pub data_seed: u64,
}

impl Default for WordProblems {
    /// Six tiers, each of two or more operations: add-sub with amounts 1–9, 2–20 and 10–99,
    /// mul-add with factors 2–9, and three steps with amounts 2–20 and 10–99; 400 training and
    /// 32 held-out problems per tier.
    fn default() -> Self {
        Self {
            tiers: vec![
                WordTier::new("add-sub-small", Template::AddSub, (1, 9), (0, 0)),
                WordTier::new("add-sub", Template::AddSub, (2, 20), (0, 0)),
                WordTier::new("add-sub-large", Template::AddSub, (10, 99), (0, 0)),
                WordTier::new("mul-add", Template::MulAdd, (1, 20), (2, 9)),
                WordTier::new("three-step", Template::ThreeStep, (2, 20), (2, 9)),
                WordTier::new("three-step-large", Template::ThreeStep, (10, 99), (2, 9)),
            ],
            train_per_tier: 400,
            eval_per_tier: 32,
            data_seed: 0,
        }
    }
}

const NAMES: [&str; 12] = [
    "Ava", "Ben", "Chloe", "Dev", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Keiko",
    "Liam",
];
const THINGS: [&str; 10] = [
    "apples", "marbles", "books", "coins", "stamps", "pencils", "shells", "cards", "stickers",
    "buttons",
];

/// One problem: its arithmetic (the template and numbers, which decide the split) and its text.
struct Problem {
    key: (Template, Vec<u32>),
    text: String,
    answer: u32,
}

fn draw(rng: &mut ChaCha8Rng, (lo, hi): (u32, u32)) -> u32 {
    rng.random_range(lo..=hi)
}

/// A problem of `tier` from `rng`.
fn problem(tier: &WordTier, rng: &mut ChaCha8Rng) -> Problem {
    let name = NAMES[rng.random_range(0..NAMES.len())];
    let thing = THINGS[rng.random_range(0..THINGS.len())];
    let (numbers, text, answer) = match tier.template {
        Template::AddSub => {
            let (a, b) = (draw(rng, tier.amounts), draw(rng, tier.amounts));
            let c = rng.random_range(1..=a + b - 1);
            (
                vec![a, b, c],
                format!(
                    "{name} has {a} {thing}. {name} buys {b} more and then gives away {c}. How \
                     many {thing} does {name} have now?"
                ),
                a + b - c,
            )
        }
        Template::MulAdd => {
            let (a, b) = (draw(rng, tier.factors), draw(rng, tier.factors));
            let c = draw(rng, tier.amounts);
            (
                vec![a, b, c],
                format!(
                    "{name} buys {a} boxes of {thing} with {b} {thing} in each box, and then \
                     finds {c} more. How many {thing} does {name} have in all?"
                ),
                a * b + c,
            )
        }
        Template::ThreeStep => {
            let a = draw(rng, tier.amounts);
            let (b, c) = (draw(rng, tier.factors), draw(rng, tier.factors));
            let d = rng.random_range(1..=a + b * c - 1);
            (
                vec![a, b, c, d],
                format!(
                    "{name} has {a} {thing}. {name} buys {b} bags with {c} {thing} in each bag, \
                     and then gives away {d}. How many {thing} does {name} have now?"
                ),
                a + b * c - d,
            )
        }
    };
    Problem {
        key: (tier.template, numbers),
        text,
        answer,
    }
}

impl WordProblems {
    /// The training and held-out sets: per tier, `eval_per_tier` held-out problems first, then
    /// up to `train_per_tier` training problems, each arithmetic (template and numbers) once
    /// over all tiers and none with an answer that its question states, drawn
    /// from one seeded stream per tier (at most 50 draws per problem wanted; a tier too small
    /// for its sizes is an error naming it).
    pub fn split(&self) -> Result<(Dataset, Dataset), TrainerError> {
        let (mut train, mut eval) = (Vec::new(), Vec::new());
        // Every arithmetic once over all tiers: tiers of one template with overlapping ranges
        // could otherwise hold one problem out in one tier and train on it in another.
        let mut seen: HashSet<(Template, Vec<u32>)> = HashSet::new();
        for (t, tier) in self.tiers.iter().enumerate() {
            if tier.amounts.0 == 0 || tier.amounts.0 > tier.amounts.1 {
                return Err(TrainerError::Config {
                    field: format!("tiers[{t}].amounts"),
                    message: format!("{:?}: a range lo..=hi with 1 <= lo <= hi", tier.amounts),
                });
            }
            if tier.template != Template::AddSub
                && (tier.factors.0 < 2 || tier.factors.0 > tier.factors.1)
            {
                return Err(TrainerError::Config {
                    field: format!("tiers[{t}].factors"),
                    message: format!("{:?}: a range lo..=hi with 2 <= lo <= hi", tier.factors),
                });
            }
            let mut rng = ChaCha8Rng::seed_from_u64(self.data_seed ^ (t as u64 + 1) << 32);
            let want = self.eval_per_tier + self.train_per_tier;
            let mut made = 0;
            for _ in 0..want * 50 {
                if made == want {
                    break;
                }
                let p = problem(tier, &mut rng);
                // An answer that the question states can be copied instead of worked out: a
                // policy that repeats one of the question's numbers would be rewarded for it.
                if p.key.1.contains(&p.answer) || !seen.insert(p.key) {
                    continue;
                }
                let target = if made < self.eval_per_tier {
                    &mut eval
                } else {
                    &mut train
                };
                target.push(Prompt {
                    id: 0,
                    text: PromptText::Text(p.text),
                    answer: p.answer.to_string(),
                    tier: Some(tier.name.clone()),
                });
                made += 1;
            }
            if made < want {
                return Err(TrainerError::Config {
                    field: format!("tiers[{t}]"),
                    message: format!(
                        "{}: only {made} distinct problems in {} draws, {want} wanted",
                        tier.name,
                        want * 50
                    ),
                });
            }
        }
        let number = |mut v: Vec<Prompt>| {
            for (i, p) in v.iter_mut().enumerate() {
                p.id = i as u64;
            }
            Dataset { prompts: v }
        };
        Ok((number(train), number(eval)))
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

    /// The numbers a problem's text states, in order.
    fn numbers(text: &str) -> Vec<u32> {
        text.split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().unwrap())
            .collect()
    }

    /// Each answer re-derived from its text by the template's arithmetic (written out here
    /// independently of the generator) and absent from the question's numbers, the held-out
    /// arithmetic absent from training, the sizes as asked, and every tier needing two or more
    /// operations.
    #[test]
    fn answers_follow_the_text_and_the_sets_are_disjoint() {
        let task = WordProblems {
            train_per_tier: 200,
            eval_per_tier: 20,
            ..Default::default()
        };
        let (train, eval) = task.split().unwrap();
        assert_eq!((train.len(), eval.len()), (6 * 200, 6 * 20));
        let text = |p: &Prompt| match &p.text {
            PromptText::Text(t) => t.clone(),
            PromptText::Chat(_) => unreachable!(),
        };
        let arithmetic = |p: &Prompt| {
            let t = text(p);
            let n = numbers(&t);
            let want = if t.contains("boxes") {
                n[0] * n[1] + n[2]
            } else if t.contains("bags") {
                n[0] + n[1] * n[2] - n[3]
            } else {
                n[0] + n[1] - n[2]
            };
            assert_eq!(p.answer, want.to_string(), "{t}");
            assert!(want > 0, "{t}");
            assert!(!n.contains(&want), "{t}: the answer is in the question");
            (t.contains("boxes"), t.contains("bags"), n)
        };
        let held: HashSet<_> = eval.prompts.iter().map(arithmetic).collect();
        for p in &train.prompts {
            assert!(!held.contains(&arithmetic(p)), "{} is held out", text(p));
        }
        for (tier, range) in [("add-sub-small", 1..=9), ("add-sub", 2..=20)] {
            for p in train
                .prompts
                .iter()
                .filter(|p| p.tier.as_deref() == Some(tier))
            {
                assert!(numbers(&text(p))[..2].iter().all(|x| range.contains(x)));
            }
        }
        // the few-shot frame's own answers are right: 24 + 18 - 30 and 6 * 5 + 4
        assert!(FEW_SHOT.contains("#### 12") && 24 + 18 - 30 == 12);
        assert!(FEW_SHOT.contains("#### 34") && 6 * 5 + 4 == 34);
        assert_eq!(FEW_SHOT.matches("{problem}").count(), 1);
    }

    #[test]
    fn a_tier_too_small_for_its_sizes_is_named() {
        let task = WordProblems {
            tiers: vec![WordTier::new("tiny", Template::AddSub, (2, 2), (0, 0))],
            train_per_tier: 10,
            eval_per_tier: 5,
            data_seed: 0,
        };
        let e = task.split().unwrap_err().to_string();
        assert!(e.contains("tiers[0]") && e.contains("tiny"), "{e}");
        let bad = WordProblems {
            tiers: vec![WordTier::new("bad", Template::MulAdd, (1, 5), (1, 9))],
            ..Default::default()
        };
        assert!(
            bad.split()
                .unwrap_err()
                .to_string()
                .contains("tiers[0].factors")
        );
    }
}
