//! Difficulty-adaptive rollout budgets: how many responses each prompt of a generation round
//! gets, from the prompts' running pass-rate estimates ([`crate::DifficultyTracker`]), within a
//! fixed total.
//!
//! Every schedule returns group sizes n_i with Σ n_i = total and min ≤ n_i ≤ max, computed by
//! one deterministic rule: every prompt starts at `min`, then the remaining responses are given
//! one at a time to the prompt whose next response has the highest priority (below). Ties go to
//! the harder prompt (lower pass-rate estimate), then to the prompt with fewer responses so
//! far, then to the prompt listed first. A prompt the tracker has not seen counts as p̂ = ½
//! ([`UNSEEN_PASS_RATE`]).
//!
//! | schedule | priority of prompt i's next response (it has n) | source |
//! |---|---|---|
//! | `uniform` | 1/(n + ½): every prompt ⌊total/P⌋ or one more, the extra ones to the hardest | baseline |
//! | `dars_et` | d_i/(n + ½), d_i = DARS equal-treatment target ([`dars_target`]) | DARS, arXiv 2508.13755 |
//! | `dars_hw` | d_i/(n + ½), d_i = DARS hardness-weighted target | DARS, arXiv 2508.13755 |
//! | `knapsack` | V(n + 1, p) − V(n, p), V(n, p) = (1 − pⁿ − (1 − p)ⁿ)·p(1 − p)² | Knapsack RL, arXiv 2509.25849 |
//!
//! d/(n + ½) is the Sainte-Laguë (Webster) divisor rule: the sizes are the DARS targets scaled
//! by one common factor and rounded, so each DARS schedule keeps its defining ratio between
//! prompts (ET: equal cumulative advantage n·2p(1 − p) for hard prompts; HW: proportional to
//! 1 − p) while the total is fixed. With total = Σ d_i (and `base` set to DARS's N) the sizes are
//! exactly the DARS targets.
//! The knapsack rule maximises Σ V(n_i, p_i) exactly: V is concave in n, so giving each unit to
//! the largest marginal gain is optimal (the paper's dynamic programme reaches the same optimum
//! up to ties).
//!
//! `uniform` and both DARS schedules are monotone: a harder prompt never gets fewer responses
//! than an easier one. `knapsack` is not: its value p(1 − p)² vanishes at p = 0, so an unsolved
//! prompt gets `min` unless every prompt with 0 < p < 1 is at `max`.

use serde::{Deserialize, Serialize};

use crate::{DifficultyTracker, SamplerError};

/// Pass rate assumed for a prompt without an estimate.
pub const UNSEEN_PASS_RATE: f64 = 0.5;

/// Default smallest group: a group needs two responses for a baseline.
pub const DEFAULT_MIN_GROUP: usize = 2;

/// How a round's response budget is split across its prompts (`name` is the tag).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "snake_case", deny_unknown_fields)]
pub enum BudgetSchedule {
    /// The same size for every prompt (± 1).
    Uniform {},
    /// DARS equal-treatment schedule (`resampling_func = 1` in the authors' code).
    DarsEt {
        /// Measure a group's cumulative advantage with the std-normalised advantage
        /// (2√(p(1 − p)) per response, GRPO/DAPO) instead of the mean-centred one (2p(1 − p),
        /// Dr. GRPO). The authors' runs use `false` (`grpo_use_std=False`).
        #[serde(default)]
        std: bool,
        /// DARS's first-round group size N (the authors' `rollout.n`, 8 in their runs).
        /// Unset: the uniform share ⌊total/prompts⌋ of each call's budget.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        base: Option<usize>,
    },
    /// DARS hardness-weighted schedule (`resampling_func = 2`).
    DarsHw {
        /// As for `dars_et`.
        #[serde(default)]
        std: bool,
        /// As for `dars_et`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        base: Option<usize>,
    },
    /// Knapsack RL: maximise Σ P(non-zero gradient)·InfoGain.
    Knapsack {},
}

impl Default for BudgetSchedule {
    fn default() -> Self {
        Self::Uniform {}
    }
}

rl_core::registry! {
    /// Registered schedule names.
    pub const BUDGET_SCHEDULE_NAMES;
    /// The schedule registered under `name`, with the source's defaults (`std = false`, `base`
    /// the uniform share).
    fn BudgetSchedule::from_name -> SamplerError, kind "`schedule` value" {
        "uniform" => BudgetSchedule::Uniform {},
        "dars_et" => BudgetSchedule::DarsEt {
            std: false,
            base: None,
        },
        "dars_hw" => BudgetSchedule::DarsHw {
            std: false,
            base: None,
        },
        "knapsack" => BudgetSchedule::Knapsack {},
    }
}

impl BudgetSchedule {
    /// The registry name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Uniform {} => "uniform",
            Self::DarsEt { .. } => "dars_et",
            Self::DarsHw { .. } => "dars_hw",
            Self::Knapsack {} => "knapsack",
        }
    }

    /// Whether a harder prompt is guaranteed at least as many responses as an easier one.
    pub fn is_monotone(&self) -> bool {
        !matches!(self, Self::Knapsack {})
    }
}

/// DARS's total rollouts for a prompt with pass rate `pass_rate`, first-round group size `base`
/// (N) and cap `max` (N_max): N + min(⌈ΔN⌉, N_max − N), computed as in the authors' code
/// (`schedule_ET` / `schedule_HW`, `verl/trainer/ppo/ray_dars_trainer.py`):
///
/// * a = max(p, 0.5/N) (the code replaces an accuracy of 0 by 0.5/N; on first-round accuracies
///   k/N, the only values it sees, the clamp is the same rule, and it keeps the target
///   monotone for running estimates between 0 and 0.5/N);
/// * a ≥ ½: ΔN = 0;
/// * S(a) = 2a(1 − a), peak N/2 (mean-centred), or S(a) = 2√(a(1 − a)), peak N (`std`);
/// * equal treatment: ΔN = (peak − N·S)/S; hardness-weighted: ΔN = (2(1 − a)·peak − N·S)/S.
///
/// Closed forms (mean-centred): ET N + ΔN = N/(4a(1 − a)), HW N + ΔN = N/(2a).
pub fn dars_target(
    pass_rate: f64,
    base: usize,
    max: usize,
    hardness_weighted: bool,
    std: bool,
) -> usize {
    let n = base as f64;
    let a = pass_rate.max(0.5 / n);
    if a >= 0.5 {
        return base;
    }
    let (s, peak) = if std {
        (2.0 * (a * (1.0 - a)).sqrt(), n)
    } else {
        (2.0 * a * (1.0 - a), 0.5 * n)
    };
    let current = n * s;
    let target = if hardness_weighted {
        2.0 * (1.0 - a) * peak
    } else {
        peak
    };
    let delta = ((target - current) / s).ceil().max(0.0);
    // `delta` is finite and ≥ 0; the cast saturates for huge values.
    base + (delta as usize).min(max.saturating_sub(base))
}

/// Knapsack RL's marginal value of one more response for a prompt that has `n`:
/// V(n + 1) − V(n) = p(1 − p)²·(pⁿ(1 − p) + (1 − p)ⁿp); 0 for p ∈ {0, 1}.
fn knapsack_gain(p: f64, n: usize) -> f64 {
    if p <= 0.0 || p >= 1.0 {
        return 0.0;
    }
    let q = 1.0 - p;
    let n = i32::try_from(n).unwrap_or(i32::MAX);
    p * q * q * (p.powi(n) * q + q.powi(n) * p)
}

/// A rollout budget: the schedule and the per-prompt bounds. The total is given per call (it is
/// the trainer's prompts × group size, or any fixed number of responses per round).
///
/// ```
/// use rl_sampler::{BudgetSchedule, RolloutBudget};
/// let budget = RolloutBudget::new(BudgetSchedule::from_name("dars_hw").unwrap(), 2, 64).unwrap();
/// // Four prompts, 32 responses (8 each on average): the hard ones get more.
/// let sizes = budget.allocate(32, &[Some(0.0), Some(0.125), Some(0.25), Some(0.5)]).unwrap();
/// assert_eq!(sizes, vec![17, 9, 4, 2]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RolloutBudget {
    /// How the budget is split.
    #[serde(default)]
    pub schedule: BudgetSchedule,
    /// Smallest group (≥ 2).
    #[serde(default = "default_min")]
    pub min: usize,
    /// Largest group (≥ `min`); DARS's N_max.
    pub max: usize,
}

fn default_min() -> usize {
    DEFAULT_MIN_GROUP
}

/// One prompt in the allocation queue: the priority of its next response and the tie-breaks.
#[derive(Clone, Copy, Debug)]
struct Slot {
    priority: f64,
    pass_rate: f64,
    n: usize,
    index: usize,
}

impl PartialEq for Slot {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}
impl Eq for Slot {}
impl PartialOrd for Slot {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Slot {
    /// Greater = served first: higher priority, then harder, then fewer responses, then listed
    /// first.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.priority
            .total_cmp(&other.priority)
            .then_with(|| other.pass_rate.total_cmp(&self.pass_rate))
            .then_with(|| other.n.cmp(&self.n))
            .then_with(|| other.index.cmp(&self.index))
    }
}

impl RolloutBudget {
    /// A validated budget.
    pub fn new(schedule: BudgetSchedule, min: usize, max: usize) -> Result<Self, SamplerError> {
        let b = Self { schedule, min, max };
        b.validate()?;
        Ok(b)
    }

    /// Checks `min` ≥ 2, `max` ≥ `min` and a DARS `base` ≥ 1.
    pub fn validate(&self) -> Result<(), SamplerError> {
        if self.min < DEFAULT_MIN_GROUP {
            return Err(SamplerError::InvalidConfig(rl_core::InvalidValue {
                field: "min",
                value: self.min.to_string(),
                expected: "an integer >= 2 (a group needs a baseline)",
            }));
        }
        if self.max < self.min {
            return Err(SamplerError::InvalidConfig(rl_core::InvalidValue {
                field: "max",
                value: format!("{} < min = {}", self.max, self.min),
                expected: "an integer >= min",
            }));
        }
        if let BudgetSchedule::DarsEt { base: Some(b), .. }
        | BudgetSchedule::DarsHw { base: Some(b), .. } = self.schedule
            && b < 1
        {
            return Err(SamplerError::InvalidConfig(rl_core::InvalidValue {
                field: "base",
                value: b.to_string(),
                expected: "an integer >= 1 (DARS's first-round group size), or unset",
            }));
        }
        Ok(())
    }

    /// Group sizes for prompts with these pass-rate estimates (`None`: not seen yet, counted as
    /// [`UNSEEN_PASS_RATE`]), in the same order, summing to `total`.
    ///
    /// Errors: an invalid budget; a pass rate outside [0, 1]; a total outside
    /// [prompts × min, prompts × max].
    pub fn allocate(
        &self,
        total: usize,
        pass_rates: &[Option<f64>],
    ) -> Result<Vec<usize>, SamplerError> {
        self.validate()?;
        let prompts = pass_rates.len();
        let (lo, hi) = (
            prompts.saturating_mul(self.min),
            prompts.saturating_mul(self.max),
        );
        if total < lo || total > hi {
            return Err(SamplerError::InvalidConfig(rl_core::InvalidValue {
                field: "total",
                value: format!(
                    "{total} responses for {prompts} prompts with min = {}, max = {} \
                     (feasible: {lo}..={hi})",
                    self.min, self.max
                ),
                expected: "prompts × min <= total <= prompts × max",
            }));
        }
        let mut rates = Vec::with_capacity(prompts);
        for (i, p) in pass_rates.iter().enumerate() {
            let p = p.unwrap_or(UNSEEN_PASS_RATE);
            if !(p.is_finite() && (0.0..=1.0).contains(&p)) {
                return Err(SamplerError::InvalidConfig(rl_core::InvalidValue {
                    field: "pass_rate",
                    value: format!("{p} (prompt #{i})"),
                    expected: "a number in [0, 1], or none for an unseen prompt",
                }));
            }
            rates.push(p);
        }
        let mut sizes = vec![self.min; prompts];
        if prompts == 0 || total == lo {
            return Ok(sizes);
        }
        // DARS's first-round group size N: as configured, else the uniform share (≥ min ≥ 2).
        let share = total / prompts;
        let demand: Vec<f64> = rates
            .iter()
            .map(|&p| match self.schedule {
                BudgetSchedule::Uniform {} | BudgetSchedule::Knapsack {} => 1.0,
                BudgetSchedule::DarsEt { std, base } => {
                    dars_target(p, base.unwrap_or(share), self.max, false, std) as f64
                }
                BudgetSchedule::DarsHw { std, base } => {
                    dars_target(p, base.unwrap_or(share), self.max, true, std) as f64
                }
            })
            .collect();
        let priority = |i: usize, n: usize| match self.schedule {
            BudgetSchedule::Knapsack {} => knapsack_gain(rates[i], n),
            _ => demand[i] / (n as f64 + 0.5),
        };
        let mut queue: std::collections::BinaryHeap<Slot> = (0..prompts)
            .filter(|_| self.min < self.max)
            .map(|i| Slot {
                priority: priority(i, self.min),
                pass_rate: rates[i],
                n: self.min,
                index: i,
            })
            .collect();
        for _ in lo..total {
            // total ≤ prompts × max, so a prompt below `max` remains while units remain.
            let Some(mut slot) = queue.pop() else { break };
            slot.n += 1;
            sizes[slot.index] = slot.n;
            if slot.n < self.max {
                slot.priority = priority(slot.index, slot.n);
                queue.push(slot);
            }
        }
        Ok(sizes)
    }

    /// [`RolloutBudget::allocate`] with each prompt's estimate read from `tracker` (its EMA pass
    /// rate; prompts it has not seen count as [`UNSEEN_PASS_RATE`]).
    pub fn allocate_tracked(
        &self,
        total: usize,
        tracker: &DifficultyTracker,
        prompts: &[u64],
    ) -> Result<Vec<usize>, SamplerError> {
        let rates: Vec<Option<f64>> = prompts.iter().map(|&p| tracker.pass_rate(p)).collect();
        self.allocate(total, &rates)
    }
}
