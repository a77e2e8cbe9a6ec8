//! A checked batch: samples grouped by prompt, each group validated.

use std::collections::HashMap;

use crate::{AdvantageError, Sample};
use rl_core::GroupId;

/// Groups in order of first appearance, each with the indices of its samples in input order.
pub fn group_indices(samples: &[Sample]) -> Vec<(GroupId, Vec<usize>)> {
    let mut order: Vec<(GroupId, Vec<usize>)> = Vec::new();
    let mut index: HashMap<GroupId, usize> = HashMap::new();
    for (i, s) in samples.iter().enumerate() {
        let slot = *index.entry(s.group).or_insert_with(|| {
            order.push((s.group, Vec::new()));
            order.len() - 1
        });
        order[slot].1.push(i);
    }
    order
}

/// A checked batch: the samples grouped by [`Sample::group`] (groups in order of first
/// appearance, members in input order) and, optionally, each response's token count.
///
/// Estimators read it in [`AdvantageEstimator::batch_advantages`](crate::AdvantageEstimator::batch_advantages). Token counts matter only to
/// estimators that normalise over the whole batch token by token (REINFORCE++); without them
/// every response counts as one token.
#[derive(Clone, Debug)]
pub struct GroupedBatch<'a> {
    samples: &'a [Sample],
    tokens: Option<&'a [usize]>,
    groups: Vec<(GroupId, Vec<usize>)>,
}

impl<'a> GroupedBatch<'a> {
    /// Groups `samples` and checks every group (`check_group`) and the token counts (one per
    /// sample).
    pub fn new(samples: &'a [Sample], tokens: Option<&'a [usize]>) -> Result<Self, AdvantageError> {
        if let Some(t) = tokens
            && t.len() != samples.len()
        {
            return Err(AdvantageError::TokenCountMismatch {
                samples: samples.len(),
                tokens: t.len(),
            });
        }
        let groups = group_indices(samples);
        let mut rewards = Vec::new();
        let mut correct = Vec::new();
        for (group, idx) in &groups {
            rewards.clear();
            correct.clear();
            rewards.extend(idx.iter().map(|&i| samples[i].reward));
            correct.extend(idx.iter().map(|&i| samples[i].correct));
            check_group(*group, &rewards, &correct)?;
        }
        Ok(Self {
            samples,
            tokens,
            groups,
        })
    }

    /// The samples, in input order.
    pub fn samples(&self) -> &'a [Sample] {
        self.samples
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Whether the batch has no samples.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// The groups, each with the input positions of its samples.
    pub fn groups(&self) -> &[(GroupId, Vec<usize>)] {
        &self.groups
    }

    /// Whether the caller gave token counts.
    pub fn has_token_counts(&self) -> bool {
        self.tokens.is_some()
    }

    /// Token count of sample `i`: the given count, or 1 when the batch carries none.
    pub fn tokens(&self, i: usize) -> usize {
        self.tokens.map_or(1, |t| t[i])
    }

    /// Calls `f` once per group with the group's rewards, correctness flags and its slice of
    /// `values` (gathered in group order, written back after the call).
    pub fn per_group(
        &self,
        values: &mut [f64],
        mut f: impl FnMut(GroupId, &[f64], &[bool], &mut [f64]) -> Result<(), AdvantageError>,
    ) -> Result<(), AdvantageError> {
        let mut rewards = Vec::new();
        let mut correct = Vec::new();
        let mut buf = Vec::new();
        for (group, idx) in &self.groups {
            rewards.clear();
            correct.clear();
            buf.clear();
            rewards.extend(idx.iter().map(|&i| self.samples[i].reward));
            correct.extend(idx.iter().map(|&i| self.samples[i].correct));
            buf.extend(idx.iter().map(|&i| values[i]));
            f(*group, &rewards, &correct, &mut buf)?;
            for (k, &i) in idx.iter().enumerate() {
                values[i] = buf[k];
            }
        }
        Ok(())
    }
}

/// Validates one group: matching lengths, at least 2 samples, finite rewards.
pub fn check_group(
    group: GroupId,
    rewards: &[f64],
    correct: &[bool],
) -> Result<(), AdvantageError> {
    if rewards.len() != correct.len() {
        return Err(AdvantageError::LengthMismatch {
            group,
            rewards: rewards.len(),
            correct: correct.len(),
        });
    }
    if rewards.len() < 2 {
        return Err(AdvantageError::GroupTooSmall {
            group,
            size: rewards.len(),
        });
    }
    if let Some((index, &value)) = rewards.iter().enumerate().find(|(_, r)| !r.is_finite()) {
        return Err(AdvantageError::NonFiniteReward {
            group,
            index,
            value,
        });
    }
    Ok(())
}

pub(crate) fn all_equal(rewards: &[f64], tol: f64) -> bool {
    let (lo, hi) = rewards
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &r| {
            (lo.min(r), hi.max(r))
        });
    hi - lo <= tol
}
