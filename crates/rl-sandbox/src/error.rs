//! Errors of the sandbox itself. What a program does (exit codes, signals, limits) is a
//! [`crate::Status`], never an error.

/// Why a program could not be run at all.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// This machine or process cannot give a guarantee the sandbox promises (no Landlock, no
    /// namespaces, an interpreter the sandbox's user cannot reach, …): nothing is run.
    #[error("sandbox unavailable: {what}: {why}")]
    Unavailable {
        /// The missing guarantee or facility.
        what: &'static str,
        /// What was measured, and what would fix it.
        why: String,
    },
    /// A configuration value that cannot be used.
    #[error("invalid sandbox setting `{field}` = {value}: expected {expected}")]
    Config {
        /// The field, as written in configs.
        field: &'static str,
        /// The value given.
        value: String,
        /// What is accepted.
        expected: &'static str,
    },
    /// A system call of the sandbox failed (creating the working directory, a pipe, fork, …).
    #[error("sandbox: {what}: {source}")]
    Io {
        /// What the sandbox was doing.
        what: String,
        /// The system error.
        #[source]
        source: std::io::Error,
    },
}

/// A [`SandboxError::Io`] saying what the sandbox was doing.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) fn io_err(what: impl Into<String>, source: std::io::Error) -> SandboxError {
    SandboxError::Io {
        what: what.into(),
        source,
    }
}
