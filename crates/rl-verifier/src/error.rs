//! Configuration errors. Verification itself never fails: it returns an [`crate::Outcome`].

/// Everything that can be wrong with a verifier, reward or shaping configuration.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// A name (verifier, format check, budget field, …) that is not registered.
    #[error(transparent)]
    UnknownName(#[from] rl_core::UnknownName),
    /// A field with an unusable value.
    #[error(transparent)]
    InvalidValue(#[from] rl_core::InvalidValue),
    /// The `code` verifier's sandbox cannot be created here (a missing kernel facility or
    /// interpreter, or an unusable sandbox setting); `reason` names what is missing.
    #[error("the code verifier's sandbox cannot be created: {reason}")]
    Sandbox {
        /// The sandbox's own error, naming what is missing and what would fix it.
        reason: String,
    },
}
