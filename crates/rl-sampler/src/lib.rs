#![doc = include_str!("../README.md")]
//!
//! ## In detail
//!
//! Plain Rust, no tensor framework.
//!
//! * [`GroupFilter`]: decides whether a group of G scored responses is kept. Built-ins:
//!   DAPO dynamic sampling (keep iff the metric — correctness by default, or the reward — has
//!   non-zero spread, i.e. 0 < #correct < G: DAPO Eq. 11's constraint
//!   0 < |{o_i : is_equivalent(a, o_i)}| < G), a pass-rate band (keep iff min < p̂ < max) and
//!   none.
//! * [`DynamicBatcher`]: DAPO Algorithm 1's dynamic sampling buffer. It takes generation rounds,
//!   keeps the groups that pass the filter and returns a batch once N groups are kept (surplus
//!   truncated deterministically: first kept, first used), or stops after `max_gen_rounds`
//!   rounds (0 = unlimited) with an explicit policy: error, or train on what was kept.
//! * [`RoundSizing`] and [`KeepRate`]: how many prompts each generation round samples — a fixed
//!   number (verl), or just enough to fill the remaining batch at the run's observed keep rate,
//!   so that few kept groups are generated only to be dropped.
//! * [`DifficultyTracker`]: a per-prompt running pass-rate estimate that curricula and DAA
//!   variants can read (the built-in trainer does not use it).
//! * [`RolloutBudget`]: difficulty-adaptive group sizes. Given the prompts' running pass-rate
//!   estimates and a fixed total of responses, returns one group size per prompt (sum = total,
//!   min ≤ n ≤ max) by a [`BudgetSchedule`]: `uniform`, DARS's equal-treatment and
//!   hardness-weighted schedules (arXiv 2508.13755), or Knapsack RL's value (arXiv 2509.25849).

#![warn(missing_docs)]
mod batcher;
mod budget;
mod difficulty;
mod error;
mod exhausted;
mod filter;
mod report;
mod round;

pub use batcher::{Batch, BatcherConfig, DynamicBatcher, RolloutGroup, Scored};
pub use budget::{
    BUDGET_SCHEDULE_NAMES, BudgetSchedule, DEFAULT_MIN_GROUP, RolloutBudget, UNSEEN_PASS_RATE,
    dars_target,
};
pub use difficulty::{DifficultyTracker, PromptStats};
pub use error::SamplerError;
pub use exhausted::OnExhausted;
pub use filter::{
    DynamicSampling, FILTER_NAMES, FilterConfig, FilterMetric, GroupFilter, NoFilter, PassRateBand,
};
pub use report::BatchReport;
pub use rl_core::{GroupId, InvalidValue, UnknownName};
pub use round::{KeepRate, RoundSizing};
