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
    /// A bad configuration value located in its file (TOML).
    #[error("{file}:{line}:{column}: config field `{field}`: {message}")]
    ConfigAt {
        /// The file (`<config>` for a string).
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column (characters).
        column: usize,
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
    /// The rollout engine failed.
    #[error(transparent)]
    Engine(#[from] rl_rollout::EngineError),
    /// A multi-turn episode could not be run (engine, tool machinery, environment).
    #[error(transparent)]
    Env(#[from] rl_env::EnvError),
    /// Dynamic sampling could not fill a batch.
    #[error(transparent)]
    Sampler(#[from] rl_sampler::SamplerError),
    /// Advantage computation failed.
    #[error(transparent)]
    Advantage(#[from] rl_advantage::AdvantageError),
    /// Loss computation failed.
    #[error(transparent)]
    Loss(#[from] rl_loss::LossError),
    /// Training diverged: non-finite losses or gradients in more consecutive updates than
    /// `optim.max_consecutive_skips` allows, or a non-finite supervised loss.
    #[error("step {step}: training diverged: {message}")]
    Diverged {
        /// The step.
        step: usize,
        /// What was not finite.
        message: String,
    },
    /// A training batch whose parts do not fit together (a bug in the caller, not in the data).
    #[error("training batch, sequence {sequence}: {message}")]
    Batch {
        /// Index of the sequence in its mini-batch.
        sequence: usize,
        /// What does not fit.
        message: String,
    },
    /// An inference server the trainer starts could not be launched.
    #[error("engine launch: {message}")]
    EngineLaunch {
        /// What failed.
        message: String,
    },
    /// The rollout engine answered with something other than what was asked for.
    #[error("engine reply: {message}")]
    EngineReply {
        /// What was wrong.
        message: String,
    },
    /// A data-parallel worker could not reach the others (a worker died, stalls or disagrees).
    #[error("worker {rank}: {message}")]
    Distributed {
        /// This worker's rank.
        rank: usize,
        /// What failed.
        message: String,
    },
    /// Metrics that cannot be written or read.
    #[error("metrics {path}: {message}")]
    Metrics {
        /// The metrics file.
        path: String,
        /// What went wrong.
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
