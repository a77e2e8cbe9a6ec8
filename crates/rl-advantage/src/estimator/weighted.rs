//! An estimator whose groups' advantages are scaled by a prompt weight ([`PromptWeight`]).

use super::AdvantageEstimator;
use crate::AdvantageError;
use crate::daa::Daa;
use crate::group::GroupedBatch;
use crate::weight::PromptWeight;
use rl_core::GroupId;

/// An estimator followed by a [`PromptWeight`] of each group (built by
/// [`crate::EstimatorConfig::build`] when `prompt_weight` is not `none`).
#[derive(Debug)]
pub struct PromptWeighted {
    /// The estimator whose group advantages are weighted (DAA included, for `da3po`).
    pub inner: Box<dyn AdvantageEstimator>,
    /// The weight.
    pub weight: PromptWeight,
}

impl AdvantageEstimator for PromptWeighted {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn group_advantages(
        &self,
        group: GroupId,
        rewards: &[f64],
        correct: &[bool],
        out: &mut [f64],
    ) -> Result<(), AdvantageError> {
        self.inner.group_advantages(group, rewards, correct, out)?;
        self.weight.apply(out, correct);
        Ok(())
    }

    fn batch_advantages(
        &self,
        batch: &GroupedBatch<'_>,
        out: &mut [f64],
    ) -> Result<(), AdvantageError> {
        self.inner.batch_advantages(batch, out)?;
        batch.per_group(out, |_, _, correct, values| {
            self.weight.apply(values, correct);
            Ok(())
        })
    }

    fn batch_level(&self) -> bool {
        self.inner.batch_level()
    }

    fn daa(&self) -> Option<Daa> {
        self.inner.daa()
    }

    fn prompt_weight(&self) -> PromptWeight {
        self.weight
    }
}
