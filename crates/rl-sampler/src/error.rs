use crate::OnExhausted;
use crate::exhausted::exhausted_advice;

/// Errors of filters, the batcher and the tracker.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SamplerError {
    /// A name no registry entry has.
    #[error(transparent)]
    UnknownName(#[from] rl_core::UnknownName),
    /// An invalid configuration value.
    #[error(transparent)]
    InvalidConfig(#[from] rl_core::InvalidValue),
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
