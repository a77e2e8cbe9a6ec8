use serde::{Deserialize, Serialize};

/// Counters for one emitted batch (all explicit so that workers can sum them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchReport {
    /// Generation rounds consumed.
    pub rounds: usize,
    /// Groups generated and scored.
    pub groups_seen: usize,
    /// Groups that passed the filter (including surplus).
    pub groups_kept: usize,
    /// Groups in the batch.
    pub groups_used: usize,
    /// Kept groups dropped because the batch was full.
    pub surplus_dropped: usize,
    /// Filtered groups whose responses were all correct.
    pub zero_spread_all_correct: usize,
    /// Filtered groups whose responses were all wrong.
    pub zero_spread_all_wrong: usize,
    /// Other filtered groups (e.g. outside a pass-rate band).
    pub filtered_other: usize,
    /// Responses generated.
    pub responses_seen: usize,
}

impl BatchReport {
    /// groups_kept / groups_seen.
    pub fn kept_fraction(&self) -> f64 {
        ratio(self.groups_kept, self.groups_seen)
    }
    /// Fraction of seen groups that were all correct.
    pub fn frac_all_correct(&self) -> f64 {
        ratio(self.zero_spread_all_correct, self.groups_seen)
    }
    /// Fraction of seen groups that were all wrong.
    pub fn frac_all_wrong(&self) -> f64 {
        ratio(self.zero_spread_all_wrong, self.groups_seen)
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}
