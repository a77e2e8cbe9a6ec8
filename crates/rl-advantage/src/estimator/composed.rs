//! [`Estimator`]: a baseline followed by its modifiers, the shape verl composes advantages in.

use super::AdvantageEstimator;
use crate::AdvantageError;
use crate::daa::Daa;
use crate::group::GroupedBatch;
use crate::weight::PromptWeight;
use rl_core::GroupId;

/// An advantage estimator as a trainer runs it: a **baseline** (any [`AdvantageEstimator`]:
/// GRPO's z-score, Dr. GRPO's centring, RLOO, REINFORCE++'s batch whitening, or one of your
/// own), then the **modifiers**, each optional and applied per group in this order:
///
/// 1. the Difficulty-aware Advantage Amplification ([`Daa`]), which makes `da3po` out of the
///    GRPO baseline (and composes on REINFORCE++);
/// 2. the [`PromptWeight`] of the group's pass rate.
///
/// [`crate::EstimatorConfig::build`] makes one from a config; [`crate::compute_batch`] runs it.
///
/// ```
/// use rl_advantage::{Daa, Estimator, GroupId, Grpo, Sample, compute_batch};
/// // DA3PO by hand: GRPO advantages, then DAA with λ = 2, τ = 0.5.
/// let est = Estimator::new(Grpo::default())
///     .named("da3po")
///     .with_daa(Daa::new(2.0, 0.5).unwrap());
/// let samples: Vec<Sample> =
///     (0..8).map(|i| Sample::new(GroupId(0), if i < 3 { 1.0 } else { -1.0 }, i < 3)).collect();
/// let out = compute_batch(&est, &samples, None).unwrap();
/// assert!((out.advantages[0] - 2.0 * 1.207614).abs() < 1e-5);
/// assert_eq!(out.stats.amplified, 3);
/// ```
#[derive(Debug)]
pub struct Estimator {
    name: &'static str,
    baseline: Box<dyn AdvantageEstimator>,
    daa: Option<Daa>,
    prompt_weight: PromptWeight,
}

impl Estimator {
    /// The baseline alone, named after it, without modifiers.
    pub fn new(baseline: impl AdvantageEstimator + 'static) -> Self {
        Self::from_boxed(Box::new(baseline))
    }

    /// [`Estimator::new`] for a baseline already boxed.
    pub fn from_boxed(baseline: Box<dyn AdvantageEstimator>) -> Self {
        Self {
            name: baseline.name(),
            baseline,
            daa: None,
            prompt_weight: PromptWeight::None,
        }
    }

    /// The same estimator reported under `name` (a config's registry name: `dapo` is the GRPO
    /// baseline, `da3po` the GRPO baseline with DAA).
    pub fn named(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }

    /// Adds DAA after the baseline.
    pub fn with_daa(mut self, daa: Daa) -> Self {
        self.daa = Some(daa);
        self
    }

    /// Adds a weight of each group's advantages, applied last.
    pub fn with_prompt_weight(mut self, weight: PromptWeight) -> Self {
        self.prompt_weight = weight;
        self
    }

    /// The registry name it reports.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Whether the baseline normalises over the whole batch
    /// ([`AdvantageEstimator::batch_level`]).
    pub fn batch_level(&self) -> bool {
        self.baseline.batch_level()
    }

    /// The baseline.
    pub fn baseline(&self) -> &dyn AdvantageEstimator {
        self.baseline.as_ref()
    }

    /// The amplification applied after the baseline, if any (it says which samples were
    /// amplified, [`crate::BatchAdvantages::amplified`]).
    pub fn daa(&self) -> Option<Daa> {
        self.daa
    }

    /// The weight applied to each group's advantages ([`PromptWeight::None`] when unset).
    pub fn prompt_weight(&self) -> PromptWeight {
        self.prompt_weight
    }

    /// The modifiers on one group's advantages, in order.
    fn modify(&self, values: &mut [f64], correct: &[bool]) {
        if let Some(d) = self.daa {
            d.apply(values, correct);
        }
        self.prompt_weight.apply(values, correct);
    }
}

impl AdvantageEstimator for Estimator {
    fn name(&self) -> &'static str {
        Estimator::name(self)
    }

    fn group_advantages(
        &self,
        group: GroupId,
        rewards: &[f64],
        correct: &[bool],
        out: &mut [f64],
    ) -> Result<(), AdvantageError> {
        self.baseline
            .group_advantages(group, rewards, correct, out)?;
        self.modify(out, correct);
        Ok(())
    }

    fn batch_advantages(
        &self,
        batch: &GroupedBatch<'_>,
        out: &mut [f64],
    ) -> Result<(), AdvantageError> {
        self.baseline.batch_advantages(batch, out)?;
        batch.per_group(out, |_, _, correct, values| {
            self.modify(values, correct);
            Ok(())
        })
    }

    fn batch_level(&self) -> bool {
        Estimator::batch_level(self)
    }

    /// The baseline's token advantages, then per group and token by token DAA (each token
    /// decides by its own sign under `keep`) and the prompt weight.
    fn token_advantages(
        &self,
        batch: &GroupedBatch<'_>,
    ) -> Option<Result<Vec<Vec<f64>>, AdvantageError>> {
        let mut per = match self.baseline.token_advantages(batch)? {
            Ok(per) => per,
            Err(e) => return Some(Err(e)),
        };
        let samples = batch.samples();
        for (_, idx) in batch.groups() {
            let correct: Vec<bool> = idx.iter().map(|&i| samples[i].correct).collect();
            let pass_rate = Daa::pass_rate(&correct);
            let weight = self.prompt_weight.weight(pass_rate);
            let daa = self.daa.map(|d| (d, d.factor(pass_rate, idx.len())));
            for &i in idx {
                for a in per[i].iter_mut() {
                    if let Some((d, factor)) = daa
                        && d.amplifies(pass_rate, samples[i].correct, *a)
                    {
                        *a *= factor;
                    }
                    *a *= weight;
                }
            }
        }
        Some(Ok(per))
    }
}
