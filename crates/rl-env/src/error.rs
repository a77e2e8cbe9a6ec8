//! Errors of the episode machinery. What the *model* does — a malformed tool call, an unknown
//! tool, a tool that fails, code that crashes — is never an error: it becomes an observation
//! the model reads. Errors are for what the model cannot cause: an engine that fails, a
//! tokenizer that cannot render a turn, a sandbox that cannot start, a bad configuration.

use rl_rollout::EngineError;

/// Why an episode batch could not be run.
#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    /// The rollout engine failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// Rendering or decoding a turn failed (the tokenizer's message).
    #[error("turn codec: {0}")]
    Codec(String),
    /// A tool's machinery (not the model's use of it) failed, e.g. the sandbox could not start.
    #[error("tool `{tool}`: {message}")]
    Tool {
        /// The tool.
        tool: String,
        /// What failed.
        message: String,
    },
    /// A configuration value that cannot be used.
    #[error("invalid `{field}` = {value}: expected {expected}")]
    Config {
        /// The field, as written in configs.
        field: String,
        /// The value given.
        value: String,
        /// What is accepted.
        expected: String,
    },
    /// An environment broke its contract (e.g. returned an observation after `done`).
    #[error("environment `{env}`: {message}")]
    Contract {
        /// The environment.
        env: String,
        /// What it did.
        message: String,
    },
}

impl EnvError {
    /// A [`EnvError::Config`] error.
    pub fn config(field: &str, value: impl ToString, expected: impl ToString) -> Self {
        EnvError::Config {
            field: field.to_string(),
            value: value.to_string(),
            expected: expected.to_string(),
        }
    }
}
