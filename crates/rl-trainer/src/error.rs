use std::path::Path;

/// Errors of the trainer.
#[derive(Debug, thiserror::Error)]
pub enum TrainerError {
    /// A bad configuration value; names the field.
    #[error("config field `{field}`: {message}")]
    Config {
        /// Dotted field path.
        field: String,
        /// What is wrong and what is accepted.
        message: String,
    },
    /// A bad line or record in a data file.
    #[error("{path}: record {record}: {message}")]
    Data {
        /// The file.
        path: String,
        /// 1-based line (JSON lines) or row (Parquet) number.
        record: usize,
        /// What is wrong.
        message: String,
    },
    /// File system errors.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A checkpoint that cannot be used.
    #[error("checkpoint {path}: {message}")]
    Checkpoint {
        /// The checkpoint folder.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The model failed.
    #[error(transparent)]
    Model(#[from] rl_models::ModelError),
    /// The tokenizer failed.
    #[error(transparent)]
    Tokenizer(#[from] rl_models::TokenizerError),
    /// Dynamic sampling could not fill a batch.
    #[error(transparent)]
    Sampler(#[from] rl_sampler::SamplerError),
    /// Advantage computation failed.
    #[error(transparent)]
    Advantage(#[from] rl_advantage::AdvantageError),
    /// Loss computation failed.
    #[error(transparent)]
    Loss(#[from] rl_loss::LossError),
    /// Training diverged (non-finite loss or gradient).
    #[error("step {step}: {message}")]
    Diverged {
        /// The step.
        step: usize,
        /// What was not finite.
        message: String,
    },
}

impl TrainerError {
    /// An I/O error at `path`.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        TrainerError::Io {
            path: path.display().to_string(),
            source,
        }
    }
}
