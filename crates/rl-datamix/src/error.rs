//! The crate's error type.

/// Everything that can go wrong in `rl-datamix`. Library code never panics on user input: bad
/// configs, domain files, step statistics and checkpoints all come back as one of these.
#[derive(Debug, thiserror::Error)]
pub enum DatamixError {
    /// A configuration value is out of range or inconsistent.
    #[error("invalid config field `{field}`: {message}")]
    Config {
        /// Dotted path of the offending field, e.g. `hds.sac.gamma`.
        field: String,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// A name looked up in a registry does not exist.
    #[error(transparent)]
    UnknownName(#[from] rl_core::UnknownName),
    /// A config file could not be parsed (syntax, unknown key, wrong type).
    #[error("parsing config {origin}: {message}")]
    ConfigParse {
        /// File name or `<string>`.
        origin: String,
        /// The parser's message (names the key and line).
        message: String,
    },
    /// A line of a domain file is malformed.
    #[error("{path}:{line}: {message}")]
    BadLine {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Domain data is unusable (too short, empty, ...).
    #[error("domain `{domain}`: {message}")]
    Data {
        /// The domain's name.
        domain: String,
        /// What is wrong.
        message: String,
    },
    /// Step statistics handed to a scheduler do not match it (wrong K, NaN loss, ...).
    #[error("step statistics: {0}")]
    Stats(String),
    /// A checkpoint does not fit the scheduler it is restored into.
    #[error("checkpoint: {0}")]
    Checkpoint(String),
}

impl DatamixError {
    /// Shorthand for [`DatamixError::Config`].
    pub fn config(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Config {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Result alias used throughout the crate.
pub type Result<T, E = DatamixError> = std::result::Result<T, E>;
