//! Configuration errors. Verification itself never fails: it returns an [`crate::Outcome`].

/// Everything that can be wrong with a verifier, reward or shaping configuration.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// A name (verifier, format check, budget field, …) that is not registered.
    #[error("unknown {what} `{name}`; valid names: {}", valid.join(", "))]
    UnknownName {
        /// What kind of name was looked up.
        what: &'static str,
        /// What was asked for.
        name: String,
        /// The accepted names.
        valid: Vec<&'static str>,
    },
    /// A field with an unusable value.
    #[error("invalid value for `{field}`: {value} (expected {expected})")]
    InvalidValue {
        /// The field, as written in configs.
        field: &'static str,
        /// The offending value.
        value: String,
        /// What is accepted.
        expected: &'static str,
    },
    /// The `code` verifier's sandbox cannot be created here (a missing kernel facility or
    /// interpreter, or an unusable sandbox setting); `reason` names what is missing.
    #[error("the code verifier's sandbox cannot be created: {reason}")]
    Sandbox {
        /// The sandbox's own error, naming what is missing and what would fix it.
        reason: String,
    },
}
