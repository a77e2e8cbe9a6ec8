//! Typed verification outcomes and the counters that make every kind visible.

use std::fmt;
use std::ops::AddAssign;

use serde::{Deserialize, Serialize};

/// Which input of a verification could not be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// The reference (ground-truth) answer.
    Gold,
    /// The model's response.
    Response,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Gold => "gold",
            Side::Response => "response",
        })
    }
}

/// The verdict of one verification.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    /// The response's answer equals the gold answer.
    Correct,
    /// An answer was found and compared, and it differs from the gold answer.
    Incorrect,
    /// One side has no usable answer (none found, or it does not parse). An unparseable gold
    /// answer is a data problem and is never scored as correct.
    Unparseable {
        /// Which side failed.
        side: Side,
        /// Why, for logs.
        reason: String,
    },
    /// The verification needed more work than its [`crate::Budget`] allows.
    OverBudget {
        /// Which limit was hit.
        what: String,
    },
}

impl Outcome {
    /// The outcome's kind, without its details.
    pub fn kind(&self) -> OutcomeKind {
        match self {
            Outcome::Correct => OutcomeKind::Correct,
            Outcome::Incorrect => OutcomeKind::Incorrect,
            Outcome::Unparseable {
                side: Side::Gold, ..
            } => OutcomeKind::UnparseableGold,
            Outcome::Unparseable {
                side: Side::Response,
                ..
            } => OutcomeKind::UnparseableResponse,
            Outcome::OverBudget { .. } => OutcomeKind::OverBudget,
        }
    }

    /// True only for [`Outcome::Correct`].
    pub fn is_correct(&self) -> bool {
        matches!(self, Outcome::Correct)
    }

    /// The wire name: `correct`, `incorrect`, `unparseable` or `over_budget`.
    pub fn name(&self) -> &'static str {
        match self {
            Outcome::Correct => "correct",
            Outcome::Incorrect => "incorrect",
            Outcome::Unparseable { .. } => "unparseable",
            Outcome::OverBudget { .. } => "over_budget",
        }
    }
}

/// An outcome without its details; the unit of [`OutcomeCounts`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeKind {
    /// [`Outcome::Correct`].
    Correct,
    /// [`Outcome::Incorrect`].
    Incorrect,
    /// [`Outcome::Unparseable`] on the gold side.
    UnparseableGold,
    /// [`Outcome::Unparseable`] on the response side.
    UnparseableResponse,
    /// [`Outcome::OverBudget`].
    OverBudget,
}

impl OutcomeKind {
    /// All kinds, in reporting order.
    pub const ALL: [OutcomeKind; 5] = [
        OutcomeKind::Correct,
        OutcomeKind::Incorrect,
        OutcomeKind::UnparseableGold,
        OutcomeKind::UnparseableResponse,
        OutcomeKind::OverBudget,
    ];

    /// The metric name (`correct`, `incorrect`, `unparseable_gold`, …).
    pub fn name(self) -> &'static str {
        match self {
            OutcomeKind::Correct => "correct",
            OutcomeKind::Incorrect => "incorrect",
            OutcomeKind::UnparseableGold => "unparseable_gold",
            OutcomeKind::UnparseableResponse => "unparseable_response",
            OutcomeKind::OverBudget => "over_budget",
        }
    }
}

/// How the response's answer was found (for logs and for format rewards).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerSource {
    /// The content of a `\boxed{…}` or `\fbox{…}`.
    Boxed,
    /// The rest of an `Answer: …` line (or "the answer is …").
    AnswerLine,
    /// The content of a `$…$`, `$$…$$`, `\(…\)` or `\[…\]` span.
    MathDelimiters,
    /// The whole (short) response, which is a bare expression.
    WholeResponse,
    /// The last number in the text (the configurable fallback).
    FinalNumber,
    /// The response's final fenced code block (the `code` verifier).
    CodeBlock,
}

/// The result of one verification: the verdict and what was extracted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    /// The verdict.
    pub outcome: Outcome,
    /// The response's answer as the verifier saw it (for `dapo`: the normalised prediction,
    /// verl's `pred`), when one was found.
    pub extracted: Option<String>,
    /// Where in the response the answer was found, when one was found.
    pub source: Option<AnswerSource>,
    /// A graded score in [0, 1] behind a correct or incorrect verdict, for verifiers that have
    /// one: the fraction of tests passed for `code` with `reward = "fraction"`; `None`
    /// otherwise. [`crate::RewardMap::reward_for`] uses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
}

impl Verification {
    /// A verification with an outcome only.
    pub fn new(outcome: Outcome) -> Self {
        Verification {
            outcome,
            extracted: None,
            source: None,
            score: None,
        }
    }

    /// Shorthand for `self.outcome.is_correct()`.
    pub fn is_correct(&self) -> bool {
        self.outcome.is_correct()
    }
}

/// Counts of outcomes by kind: a metric that can be merged across batches and workers, so that
/// "everything scored 0 because the verifier failed" shows up as failures, not as zeros.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OutcomeCounts {
    /// Correct verdicts.
    pub correct: u64,
    /// Incorrect verdicts.
    pub incorrect: u64,
    /// Gold answers that could not be used (data problems).
    pub unparseable_gold: u64,
    /// Responses without a usable answer.
    pub unparseable_response: u64,
    /// Verifications stopped by the budget.
    pub over_budget: u64,
}

impl OutcomeCounts {
    /// Counts one outcome.
    pub fn record(&mut self, outcome: &Outcome) {
        self.add_kind(outcome.kind(), 1);
    }

    /// Adds `n` outcomes of one kind.
    pub fn add_kind(&mut self, kind: OutcomeKind, n: u64) {
        let slot = match kind {
            OutcomeKind::Correct => &mut self.correct,
            OutcomeKind::Incorrect => &mut self.incorrect,
            OutcomeKind::UnparseableGold => &mut self.unparseable_gold,
            OutcomeKind::UnparseableResponse => &mut self.unparseable_response,
            OutcomeKind::OverBudget => &mut self.over_budget,
        };
        *slot = slot.saturating_add(n);
    }

    /// The count of one kind.
    pub fn get(&self, kind: OutcomeKind) -> u64 {
        match kind {
            OutcomeKind::Correct => self.correct,
            OutcomeKind::Incorrect => self.incorrect,
            OutcomeKind::UnparseableGold => self.unparseable_gold,
            OutcomeKind::UnparseableResponse => self.unparseable_response,
            OutcomeKind::OverBudget => self.over_budget,
        }
    }

    /// Adds another set of counts (another batch or worker).
    pub fn merge(&mut self, other: &OutcomeCounts) {
        for kind in OutcomeKind::ALL {
            self.add_kind(kind, other.get(kind));
        }
    }

    /// Number of verifications counted.
    pub fn total(&self) -> u64 {
        OutcomeKind::ALL
            .iter()
            .fold(0u64, |acc, &k| acc.saturating_add(self.get(k)))
    }

    /// Verifications that did not reach a verdict (unparseable either side, or over budget).
    pub fn failed(&self) -> u64 {
        self.unparseable_gold
            .saturating_add(self.unparseable_response)
            .saturating_add(self.over_budget)
    }

    /// correct / total, or `None` when nothing was counted.
    pub fn accuracy(&self) -> Option<f64> {
        let total = self.total();
        (total > 0).then(|| self.correct as f64 / total as f64)
    }

    /// `(name, count)` pairs in reporting order, for metric loggers.
    pub fn as_pairs(&self) -> [(&'static str, u64); 5] {
        OutcomeKind::ALL.map(|k| (k.name(), self.get(k)))
    }
}

impl AddAssign<&OutcomeCounts> for OutcomeCounts {
    fn add_assign(&mut self, rhs: &OutcomeCounts) {
        self.merge(rhs);
    }
}

impl<'a> FromIterator<&'a Outcome> for OutcomeCounts {
    fn from_iter<I: IntoIterator<Item = &'a Outcome>>(iter: I) -> Self {
        let mut counts = OutcomeCounts::default();
        for outcome in iter {
            counts.record(outcome);
        }
        counts
    }
}

impl fmt::Display for OutcomeCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pairs = self.as_pairs();
        for (i, (name, n)) in pairs.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{name} {n}")?;
        }
        Ok(())
    }
}
