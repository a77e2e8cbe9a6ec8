//! A real model's RL job, as the `da3po_smollm2` and `da3po_gemma3` examples run it: the model
//! file fetched by its script, a task's prompt files, and a config made of the algorithm's
//! preset, the job's settings file and the user's overrides.
//!
//! Phases, each a function: [`fetch_model`] (the model file, through its
//! `scripts/fetch-*.sh`), [`RealModelJob::write_data`] (the disjoint training and held-out prompt
//! files), [`RealModelJob::config`], then [`Run::checkpoint`](rl_trainer::Run::checkpoint),
//! trained and reported by [`crate::report::train_and_report`] as
//! `rlvr train` does.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use burn::tensor::backend::AutodiffBackend;
use rl_trainer::tasks::{ChatArithmetic, TaskFiles, WordProblems};
use rl_trainer::{Run, TrainConfig, TrainerError};

use crate::report::train_and_report;

/// A task that writes training and held-out prompt files.
pub trait TaskData {
    /// Writes the two sets into `dir`.
    fn write(&self, dir: &Path) -> Result<TaskFiles, TrainerError>;
}

impl TaskData for ChatArithmetic {
    fn write(&self, dir: &Path) -> Result<TaskFiles, TrainerError> {
        ChatArithmetic::write(self, dir)
    }
}

impl TaskData for WordProblems {
    fn write(&self, dir: &Path) -> Result<TaskFiles, TrainerError> {
        WordProblems::write(self, dir)
    }
}

/// One run of a real-model job.
#[derive(Clone, Debug)]
pub struct RealModelJob<T> {
    /// The GGUF file.
    pub model: PathBuf,
    /// Run folder (prompt files in `data/`, then what `rlvr train` writes).
    pub out: PathBuf,
    /// Algorithm preset (`da3po`, `dapo`, ...).
    pub algorithm: String,
    /// Seed of the run (sampling, prompt order); the prompt split has its own.
    pub seed: u64,
    /// The prompts.
    pub task: T,
    /// The job's settings (a TOML training config, applied after the preset).
    pub settings: &'static str,
    /// TOML applied after the settings (`--config FILE`'s text).
    pub overrides: Option<String>,
}

/// The model file: what `script` (a path in the repository at `repo`) prints after checking
/// the cached copy's sha256, or downloading it when there is none. The script's progress and
/// errors go to this process's stderr.
pub fn fetch_model(repo: &Path, script: &str) -> Result<PathBuf, TrainerError> {
    let script = repo.join(script);
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

impl<T: TaskData> RealModelJob<T> {
    /// Writes the training and held-out prompts to `out/data/` (`train.jsonl`, `eval.jsonl`).
    pub fn write_data(&self) -> Result<TaskFiles, TrainerError> {
        self.task.write(&self.out.join("data"))
    }

    /// The training config: the preset, the settings, the overrides, and this job's model,
    /// prompt files, seed and run folder.
    pub fn config(&self, files: &TaskFiles) -> Result<TrainConfig, TrainerError> {
        let mut base = TrainConfig::default();
        base.apply_preset(&self.algorithm)?;
        let mut config = TrainConfig::from_toml_str(self.settings, &base)?;
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

    /// Trains the job's config (`steps` instead of the settings' when given; `resume`: from the
    /// run folder's latest checkpoint) and reports as `rlvr train` does (held-out accuracy before
    /// → after, the learning curve), then prints the wall time since `t0` and the peak RSS.
    /// `name` names the model in the first line printed.
    pub fn train<B: AutodiffBackend>(
        &self,
        name: &str,
        files: &TaskFiles,
        steps: Option<usize>,
        resume: bool,
        device: B::Device,
        t0: Instant,
    ) -> Result<(), TrainerError> {
        let mut config = self.config(files)?;
        if let Some(s) = steps {
            config.steps = s;
        }
        println!(
            "{name} ({}), {} for {} steps; prompts in {}",
            self.model.display(),
            config.algorithm,
            config.steps,
            files.train.parent().unwrap_or(&self.out).display()
        );
        train_and_report::<B>(Run::checkpoint(config)?.resume(resume), device)?;
        println!(
            "wall time {:.0} s, peak RSS {}",
            t0.elapsed().as_secs_f64(),
            peak_rss_mib()
                .map(|m| format!("{m:.0} MiB"))
                .unwrap_or_else(|| "unknown".into())
        );
        Ok(())
    }
}

/// The text of the file given as `--config FILE` (TOML overrides of a job's settings), if any.
pub fn read_overrides(path: Option<&Path>) -> Result<Option<String>, TrainerError> {
    path.map(|p| std::fs::read_to_string(p).map_err(|e| TrainerError::io(p, e)))
        .transpose()
}

/// Peak resident memory of this process so far (`VmHWM`), in MiB; `None` off Linux.
pub fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}
