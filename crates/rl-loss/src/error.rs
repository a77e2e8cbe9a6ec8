/// Errors of loss configuration and inputs.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LossError {
    /// A name no registry entry has.
    #[error(transparent)]
    UnknownName(#[from] rl_core::UnknownName),
    /// An invalid configuration value.
    #[error(transparent)]
    InvalidConfig(#[from] rl_core::InvalidValue),
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
    /// A tensor read from the device that did not convert.
    #[error("reading a tensor from the device: {0}")]
    Data(String),
}
