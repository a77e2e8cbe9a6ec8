//! `rlvr train --config FILE`: [`rl_trainer::Run`] from a TOML config. Without `model.path` it
//! runs the embedded arithmetic task (what `cargo run --example da3po_qwen3` runs); with it, a
//! real checkpoint on `data.train`. Progress on stderr, the report at the end.

use std::path::PathBuf;

use burn::tensor::backend::AutodiffBackend;
use rl_trainer::distributed::{Topology, WorkerConfig};
use rl_trainer::{Run, TrainConfig, TrainerError};

use super::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, Io};
use crate::backend::{BackendJob, BackendKind, run_on};
use crate::demo::ArithmeticDemo;

/// Arguments of `rlvr train`.
#[derive(clap::Args, Debug)]
pub struct TrainArgs {
    /// TOML config: `algorithm = "da3po"` picks the preset, every other key overrides a field.
    /// Without `model.path` the embedded arithmetic run is trained.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Overrides of the embedded run (task, model size, warm-start) as TOML; ignored with
    /// `model.path`.
    #[arg(long)]
    pub demo: Option<PathBuf>,
    /// Continue from `out_dir/checkpoints/latest`.
    #[arg(long)]
    pub resume: bool,
    /// Backend.
    #[arg(long, value_enum, default_value_t = BackendKind::Cpu)]
    pub backend: BackendKind,
    /// Data-parallel training with N workers as threads of this process, all on the backend's
    /// device (docs/distributed.md).
    #[arg(long, conflicts_with = "world_size")]
    pub workers: Option<usize>,
    /// Data-parallel training across processes: the number of worker processes (each started
    /// with its `--rank`, the same `--orchestrator` and its own `--node`).
    #[arg(long, requires_all = ["rank", "orchestrator", "node"])]
    pub world_size: Option<usize>,
    /// This process's rank, 0..world-size.
    #[arg(long)]
    pub rank: Option<usize>,
    /// The orchestrator (`rlvr orchestrator --port P`), HOST:PORT.
    #[arg(long)]
    pub orchestrator: Option<String>,
    /// This worker's HOST:PORT as the other workers reach it (the port serves its tensors).
    #[arg(long)]
    pub node: Option<String>,
    /// Seconds a worker waits for the others in a collective call before it stops with an
    /// error naming its rank.
    #[arg(long, default_value_t = 300.0)]
    pub worker_timeout: f64,
}

impl TrainArgs {
    /// The data-parallel workers this process runs: none, N local threads, or one process of a
    /// multi-process world.
    fn workers(&self) -> Vec<WorkerConfig> {
        if let Some(n) = self.workers {
            return (0..n)
                .map(|r| WorkerConfig {
                    timeout_s: self.worker_timeout,
                    ..WorkerConfig::local(n, r)
                })
                .collect();
        }
        match (&self.world_size, &self.rank, &self.orchestrator, &self.node) {
            (Some(n), Some(r), Some(o), Some(node)) => vec![WorkerConfig {
                world_size: *n,
                rank: *r,
                timeout_s: self.worker_timeout,
                topology: Topology::Global {
                    orchestrator: o.clone(),
                    node: node.clone(),
                },
            }],
            _ => Vec::new(),
        }
    }
}

/// A run, trained and reported on the backend the command line chose.
struct Job(Run);

impl BackendJob for Job {
    type Output = Result<(), TrainerError>;
    fn run<B: AutodiffBackend>(self, device: B::Device) -> Self::Output {
        crate::report::train_and_report::<B>(self.0, device)
    }
}

/// Runs `rlvr train`.
pub fn run(args: TrainArgs, io: &mut Io<'_>) -> i32 {
    let demo = match ArithmeticDemo::load(args.demo.as_deref()) {
        Ok(d) => d,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let config = match &args.config {
        Some(p) => base_for(p, &demo).and_then(|base| TrainConfig::from_toml_file(p, &base)),
        None => Ok(demo.train.clone()),
    };
    let config = match config {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let run = match config.model.path {
        Some(_) => Run::checkpoint(config),
        None => Run::embedded(demo, config),
    };
    let run = match run.and_then(|r| r.workers(args.workers())) {
        Ok(r) => r.resume(args.resume),
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    match run_on(args.backend, Job(run)) {
        Ok(Ok(())) => EXIT_OK,
        Ok(Err(e)) => {
            let _ = writeln!(io.stderr, "error: {e}");
            match e {
                TrainerError::Config { .. } | TrainerError::Data { .. } => EXIT_BAD_INPUT,
                _ => EXIT_FAILURE,
            }
        }
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            EXIT_BAD_INPUT
        }
    }
}

/// The config a TOML file is applied to: the embedded run's when the file names no
/// `model.path`, else [`TrainConfig::default`] (DAPO-scale lengths and the Qwen chat template).
fn base_for(path: &std::path::Path, demo: &ArithmeticDemo) -> Result<TrainConfig, TrainerError> {
    let text = std::fs::read_to_string(path).map_err(|e| TrainerError::io(path, e))?;
    // A file that does not parse gets the embedded base: reading it again reports the syntax
    // error at its line and column (`TrainConfig::from_toml_file`).
    let Ok(table) = toml::from_str::<toml::Table>(&text) else {
        return Ok(demo.train.clone());
    };
    let real = table.get("model").and_then(|m| m.get("path")).is_some();
    Ok(if real {
        TrainConfig::default()
    } else {
        demo.train.clone()
    })
}
