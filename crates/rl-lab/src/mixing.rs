//! The data-mixing experiment driver shared by `examples/hds_mixing.rs` and `rlvr mix`: runs every
//! method × seed of an [`ExperimentConfig`] on the LM environment of `rl_datamix` and writes
//! a run folder:
//!
//! | file | content |
//! |---|---|
//! | `config.toml` | the resolved configuration |
//! | `metrics.jsonl` | one JSON object per row: `method`, `seed`, `step` and fixed metric names (`train/loss`, `mix/<domain>`, `val/target_loss`, `val/loss/<domain>`, `reward/*`, `sac/*`, `time/*`) |
//! | `mixtures.jsonl` | the mixture trajectory: `{"method", "seed", "step", "mixture": [..]}` every `log_every` steps |
//! | `summary.json`, `summary.md` | mean ± std over seeds, steps to reach the best baseline, per-domain losses, late mixtures, timings |
//! | `mixing.png` | validation loss (mean ± std band) and each method's mean mixture trajectory |

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use burn::tensor::backend::AutodiffBackend;
use rl_datamix::DatamixError;
use rl_datamix::experiment::{ExperimentConfig, RunOutput, Summary, run_method, summarize};

use crate::plot::{Panel, PlotError, Series, save_png};

/// What can stop an experiment.
#[derive(Debug, thiserror::Error)]
pub enum MixingError {
    /// Bad configuration, data or statistics.
    #[error(transparent)]
    Datamix(#[from] DatamixError),
    /// Writing the run folder failed.
    #[error("{path}: {source}")]
    Io {
        /// File or folder.
        path: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// Drawing the plot failed.
    #[error(transparent)]
    Plot(#[from] PlotError),
}

impl MixingError {
    /// Whether the user's input (config, data files) is at fault rather than the run.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            MixingError::Datamix(
                DatamixError::Config { .. }
                    | DatamixError::UnknownName(_)
                    | DatamixError::ConfigParse { .. }
                    | DatamixError::BadLine { .. }
                    | DatamixError::Io { .. }
                    | DatamixError::Data { .. }
            )
        )
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> MixingError + '_ {
    move |source| MixingError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn create(path: &Path) -> Result<BufWriter<File>, MixingError> {
    Ok(BufWriter::new(File::create(path).map_err(io_err(path))?))
}

/// Runs the experiment on backend `B`: progress lines go to `log`, files to `out_dir`; relative
/// data paths resolve against `base_dir`.
pub fn run_experiment<B: AutodiffBackend>(
    cfg: &ExperimentConfig,
    base_dir: &Path,
    out_dir: &Path,
    device: &B::Device,
    log: &mut dyn Write,
) -> Result<Summary, MixingError> {
    cfg.validate()?;
    std::fs::create_dir_all(out_dir).map_err(io_err(out_dir))?;
    let cfg_path = out_dir.join("config.toml");
    std::fs::write(&cfg_path, cfg.to_toml()).map_err(io_err(&cfg_path))?;
    let corpus = cfg.corpus(base_dir)?;
    let metrics_path = out_dir.join("metrics.jsonl");
    let mut metrics = create(&metrics_path)?;
    let mix_path = out_dir.join("mixtures.jsonl");
    let mut mixtures = create(&mix_path)?;
    let mut runs: Vec<RunOutput> = Vec::new();
    let mut write_err: Option<std::io::Error> = None;
    for method in &cfg.methods {
        for &seed in &cfg.seeds {
            let started = std::time::Instant::now();
            let mut sink = |row: &rl_datamix::experiment::MetricRow| {
                if let Err(e) = writeln!(metrics, "{}", row.to_json()) {
                    write_err.get_or_insert(e);
                }
                if let Some((_, v)) = row.values.iter().find(|(k, _)| k == "val/target_loss") {
                    let _ = writeln!(
                        log,
                        "[{} seed {}] step {:>5}/{}  val/target_loss {:.4}  ({:.1} s)",
                        row.method,
                        row.seed,
                        row.step,
                        cfg.steps,
                        v,
                        started.elapsed().as_secs_f64()
                    );
                }
            };
            let run = run_method::<B>(cfg, corpus.clone(), method, seed, device, &mut sink)?;
            for (t, m) in run.mixtures.iter().enumerate() {
                if (t + 1) % cfg.log_every == 0 || t + 1 == run.mixtures.len() {
                    let row = serde_json::json!({
                        "method": run.method, "seed": seed, "step": t + 1, "mixture": m
                    });
                    writeln!(mixtures, "{row}").map_err(io_err(&mix_path))?;
                }
            }
            let _ = writeln!(
                log,
                "[{} seed {}] done in {:.1} s: LM {:.1} ms/step, env stats {:.1} ms/step, scheduler {:.2} ms/step",
                run.method,
                seed,
                run.timing.total_s,
                run.timing.lm_ms,
                run.timing.stats_ms,
                run.timing.agent_ms
            );
            runs.push(run);
        }
    }
    if let Some(e) = write_err {
        return Err(io_err(&metrics_path)(e));
    }
    metrics.flush().map_err(io_err(&metrics_path))?;
    mixtures.flush().map_err(io_err(&mix_path))?;
    let summary = summarize(cfg, &corpus, &runs);
    let sj = out_dir.join("summary.json");
    let text = serde_json::to_string_pretty(&summary).unwrap_or_default();
    std::fs::write(&sj, text).map_err(io_err(&sj))?;
    let md = out_dir.join("summary.md");
    std::fs::write(&md, summary.to_markdown()).map_err(io_err(&md))?;
    plot(&summary, &runs, cfg.steps, &out_dir.join("mixing.png"))?;
    Ok(summary)
}

/// Moving average of `x` over `w` steps, sampled every `w` steps.
fn smooth(x: &[f64], w: usize) -> Vec<(f64, f64)> {
    x.chunks(w.max(1))
        .enumerate()
        .map(|(i, c)| {
            (
                ((i * w) + c.len()) as f64,
                c.iter().sum::<f64>() / c.len() as f64,
            )
        })
        .collect()
}

/// `mixing.png`: the target validation loss of every method (mean ± std band over seeds), then
/// one panel per method with its mean mixture trajectory.
pub fn plot(
    summary: &Summary,
    runs: &[RunOutput],
    steps: usize,
    path: &Path,
) -> Result<(), PlotError> {
    let mut loss = Panel::new(
        "validation loss, target domains (mean ± std over seeds)",
        "LM step",
        "nats / char",
    );
    for m in &summary.methods {
        let pts: Vec<(f64, f64)> = m.curve.iter().map(|c| (c.0 as f64, c.1)).collect();
        let band = m
            .curve
            .iter()
            .map(|c| (c.0 as f64, c.1 - c.2, c.1 + c.2))
            .collect();
        loss = loss.with_series(Series::new(&m.method, pts).with_band(band));
    }
    // Skip the initial evaluation so that the interesting range is visible.
    let tail: Vec<f64> = summary
        .methods
        .iter()
        .flat_map(|m| m.curve.iter().skip(m.curve.len() / 5).map(|c| c.1))
        .collect();
    if let (Some(lo), Some(hi)) = (
        tail.iter().copied().reduce(f64::min),
        tail.iter().copied().reduce(f64::max),
    ) {
        let pad = 0.1 * (hi - lo).max(1e-3);
        loss = loss.with_y_range(lo - pad, hi + pad);
    }
    let mut panels = vec![loss];
    let window = (steps / 60).max(1);
    for m in &summary.methods {
        let rs: Vec<&RunOutput> = runs.iter().filter(|r| r.method == m.method).collect();
        let mut p = Panel::new(
            format!("{}: mixture (mean over seeds)", m.method),
            "LM step",
            "weight",
        )
        .with_y_range(0.0, 1.0);
        for (i, d) in summary.domains.iter().enumerate() {
            let n = rs.iter().map(|r| r.mixtures.len()).min().unwrap_or(0);
            let mean: Vec<f64> = (0..n)
                .map(|t| rs.iter().map(|r| r.mixtures[t][i] as f64).sum::<f64>() / rs.len() as f64)
                .collect();
            p = p.with_series(Series::new(d, smooth(&mean, window)));
        }
        panels.push(p);
    }
    save_png(path, &panels, 4)
}

/// One experiment to run ([`MixingJob::run`]); the `rlvr` package makes it a backend job, so
/// that `rlvr mix --backend` and the example choose the backend.
pub struct MixingJob<'a> {
    /// The experiment.
    pub config: ExperimentConfig,
    /// Folder that relative data paths are resolved against.
    pub base_dir: PathBuf,
    /// Run folder.
    pub out_dir: PathBuf,
    /// Progress output.
    pub log: &'a mut dyn Write,
}

impl MixingJob<'_> {
    /// [`run_experiment`] on backend `B`.
    pub fn run<B: AutodiffBackend>(self, device: B::Device) -> Result<Summary, MixingError> {
        run_experiment::<B>(
            &self.config,
            &self.base_dir,
            &self.out_dir,
            &device,
            self.log,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::{Autodiff, Flex};

    /// The smoke test of `examples/hds_mixing.rs` and `rlvr mix`: the shared driver at a tiny
    /// size writes every file of the run folder.
    #[test]
    fn tiny_experiment_writes_the_run_folder() {
        let tmpdir = tempfile::Builder::new()
            .prefix("rlvr-mixing-")
            .tempdir()
            .unwrap();
        let dir = tmpdir.path();
        let cfg = ExperimentConfig::tiny();
        let mut log = Vec::new();
        let s = run_experiment::<Autodiff<Flex>>(
            &cfg,
            Path::new("."),
            dir,
            &Default::default(),
            &mut log,
        )
        .unwrap();
        assert_eq!(s.methods.len(), 3);
        for f in [
            "config.toml",
            "metrics.jsonl",
            "mixtures.jsonl",
            "summary.json",
            "summary.md",
            "mixing.png",
        ] {
            assert!(dir.join(f).is_file(), "{f}");
        }
        let metrics = std::fs::read_to_string(dir.join("metrics.jsonl")).unwrap();
        let rows: Vec<serde_json::Value> = metrics
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        // Per run: 3 evaluations (steps 0, 3, 6) and 3 train rows (steps 2, 4, 6).
        assert_eq!(rows.len(), 3 * 2 * 6);
        assert!(rows.iter().any(|r| r.get("reward/stability").is_some()));
        assert!(rows.iter().any(|r| r.get("mix/noise").is_some()));
        let log = String::from_utf8(log).unwrap();
        assert!(log.contains("[hds seed 1] done"), "{log}");
        let back = std::fs::read_to_string(dir.join("config.toml")).unwrap();
        assert_eq!(
            ExperimentConfig::from_toml(&back, "config.toml").unwrap(),
            cfg
        );
    }
}
