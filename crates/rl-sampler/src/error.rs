use crate::OnExhausted;
use crate::exhausted::exhausted_advice;

/// Errors of filters, the batcher and the tracker.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SamplerError {
    /// A filter name that is not registered.
    #[error("unknown group filter `{name}`; valid names: {}", valid.join(", "))]
    UnknownFilter {
        /// What was asked for.
        name: String,
        /// Registered names.
        valid: Vec<&'static str>,
    },
    /// An invalid configuration value.
    #[error("invalid value for `{field}`: {value} ({expected})")]
    InvalidConfig {
        /// Field name as written in configs.
        field: &'static str,
        /// The value.
        value: String,
        /// What is accepted.
        expected: &'static str,
    },
    /// A malformed group (lengths disagree).
    #[error("group {group}: {rewards} rewards, {correct} correctness flags, {items} items")]
    MalformedGroup {
        /// The group id.
        group: u64,
        /// Rewards.
        rewards: usize,
        /// Flags.
        correct: usize,
        /// Payload items.
        items: usize,
    },
    /// Dynamic sampling could not fill the batch within the round limit.
    #[error(
        "dynamic sampling kept {kept} of the {needed} groups needed after {rounds} generation rounds \
         (max_gen_rounds = {rounds}); {seen} groups seen, {all_correct} all-correct and {all_wrong} \
         all-wrong. {}",
        exhausted_advice(*on_exhausted, *kept)
    )]
    Exhausted {
        /// Rounds used.
        rounds: usize,
        /// Groups kept.
        kept: usize,
        /// Groups needed.
        needed: usize,
        /// Groups seen.
        seen: usize,
        /// Zero-spread groups that were all correct.
        all_correct: usize,
        /// Zero-spread groups that were all wrong.
        all_wrong: usize,
        /// The policy in force (the advice depends on it).
        on_exhausted: OnExhausted,
    },
}
