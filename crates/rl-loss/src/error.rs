/// Errors of loss configuration and inputs.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LossError {
    /// A registry name that does not exist.
    #[error("unknown {kind} `{name}`; valid names: {}", valid.join(", "))]
    UnknownName {
        /// What kind of thing (policy loss, aggregation, KL estimator).
        kind: &'static str,
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
    /// Input tensors whose shapes disagree.
    #[error("shape mismatch: `{name}` has shape {got:?}, expected {expected:?}")]
    Shape {
        /// The input.
        name: &'static str,
        /// Its shape.
        got: Vec<usize>,
        /// The expected shape.
        expected: Vec<usize>,
    },
    /// Global counts that cannot normalise this micro-batch.
    #[error(
        "global counts ({tokens} tokens, {sequences} sequences) are smaller than this micro-batch's ({local_tokens} tokens, {local_sequences} sequences)"
    )]
    Counts {
        /// Global tokens given.
        tokens: usize,
        /// Global sequences given.
        sequences: usize,
        /// Valid tokens in this micro-batch.
        local_tokens: usize,
        /// Non-empty sequences in this micro-batch.
        local_sequences: usize,
    },
    /// The configuration needs an input that was not given.
    #[error("missing input `{0}` (required by the loss configuration)")]
    MissingInput(&'static str),
}
