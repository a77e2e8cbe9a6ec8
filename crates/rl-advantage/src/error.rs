use rl_core::GroupId;

/// Everything that can go wrong when configuring or computing advantages.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AdvantageError {
    /// A name no registry entry has.
    #[error(transparent)]
    UnknownName(#[from] rl_core::UnknownName),
    /// An invalid configuration value.
    #[error(transparent)]
    InvalidConfig(#[from] rl_core::InvalidValue),
    /// A group smaller than 2: no baseline exists.
    #[error("group {group} has {size} sample(s); group-relative advantages need at least 2")]
    GroupTooSmall {
        /// The group.
        group: GroupId,
        /// Its size.
        size: usize,
    },
    /// A NaN or infinite reward.
    #[error("group {group}: reward #{index} is not finite ({value})")]
    NonFiniteReward {
        /// The group.
        group: GroupId,
        /// Position inside the group.
        index: usize,
        /// The value.
        value: f64,
    },
    /// Rewards and correctness flags of different lengths.
    #[error("group {group}: {rewards} rewards but {correct} correctness flags")]
    LengthMismatch {
        /// The group.
        group: GroupId,
        /// Number of rewards.
        rewards: usize,
        /// Number of flags.
        correct: usize,
    },
    /// Token counts that do not match the samples one to one.
    #[error("{tokens} token counts for {samples} samples (one count per sample)")]
    TokenCountMismatch {
        /// Number of samples.
        samples: usize,
        /// Number of token counts.
        tokens: usize,
    },
    /// Student and teacher log-probs of one response that differ in length.
    #[error("{student} student log-probs but {teacher} teacher log-probs for one response")]
    LogprobMismatch {
        /// Student log-probs.
        student: usize,
        /// Teacher log-probs.
        teacher: usize,
    },
    /// A response whose per-token inputs differ in length.
    #[error(
        "response {response}: {rewards} token rewards, {values} values and {mask} mask entries (one each per token)"
    )]
    TokenInputMismatch {
        /// The response's index in the batch.
        response: usize,
        /// Number of token rewards.
        rewards: usize,
        /// Number of values.
        values: usize,
        /// Number of mask entries.
        mask: usize,
    },
    /// A NaN or infinite per-token input.
    #[error("response {response}, token {token}: {what} is not finite ({value})")]
    NonFiniteToken {
        /// The response's index in the batch.
        response: usize,
        /// The token's position in the response.
        token: usize,
        /// Which input (`reward`, `value`, `score` or `KL estimate`).
        what: &'static str,
        /// The value.
        value: f64,
    },
    /// A response whose scores, log-probs and mask differ in length.
    #[error(
        "response {response}: {scores} scores, {logp} log-probs, {ref_logp} reference log-probs and {mask} mask entries (one each per token)"
    )]
    KlInputMismatch {
        /// The response's index in the batch.
        response: usize,
        /// Number of scores.
        scores: usize,
        /// Number of policy log-probs.
        logp: usize,
        /// Number of reference log-probs.
        ref_logp: usize,
        /// Number of mask entries.
        mask: usize,
    },
}
