//! `rlvr train --config FILE`: the trainer from a TOML config. Without `model.path` it runs the
//! embedded arithmetic task (what `cargo run --example da3po_qwen3` runs); with it, a real Qwen3
//! checkpoint on `data.train`.

use std::path::PathBuf;
use std::time::Instant;

use burn::tensor::backend::AutodiffBackend;
use rl_models::{CausalLm, Tokenizer};
use rl_trainer::data::Dataset;
use rl_trainer::distributed::{Topology, Worker, WorkerConfig};
use rl_trainer::{
    EvalReport, StepMetrics, TrainConfig, Trainer, TrainerError, latest_checkpoint, read_metrics,
};

use super::progress::Progress;
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

struct Job {
    config: TrainConfig,
    demo: ArithmeticDemo,
    resume: bool,
    workers: Vec<WorkerConfig>,
}

impl BackendJob for Job {
    type Output = Result<(), TrainerError>;
    fn run<B: AutodiffBackend>(self, device: B::Device) -> Self::Output {
        check_source(&self.config)?;
        let one = |worker: Option<WorkerConfig>, device: B::Device| match self
            .config
            .model
            .path
            .clone()
        {
            None => run_embedded::<B>(
                &self.demo,
                self.config.clone(),
                self.resume,
                None,
                device,
                worker,
            ),
            Some(dir) => run_checkpoint::<B>(self.config.clone(), dir, self.resume, device, worker),
        };
        if self.workers.len() <= 1 {
            return one(self.workers.first().cloned(), device);
        }
        // Local workers: one thread each; the first error (by rank) is the run's.
        std::thread::scope(|s| {
            let handles: Vec<_> = self
                .workers
                .iter()
                .map(|w| {
                    let (w, device, one) = (w.clone(), device.clone(), &one);
                    s.spawn(move || one(Some(w), device))
                })
                .collect();
            let mut first = Ok(());
            for (rank, h) in handles.into_iter().enumerate() {
                let r = h.join().unwrap_or_else(|_| {
                    Err(TrainerError::Distributed {
                        rank,
                        message: "the worker thread panicked".into(),
                    })
                });
                if first.is_ok() {
                    first = r;
                }
            }
            first
        })
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
    let workers = args.workers();
    if let Some(e) = workers.iter().find_map(|w| w.validate().err()) {
        let _ = writeln!(io.stderr, "error: {e}");
        return EXIT_BAD_INPUT;
    }
    match run_on(
        args.backend,
        Job {
            config,
            demo,
            resume: args.resume,
            workers,
        },
    ) {
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

/// Trains per `config`: the embedded arithmetic run when `model.path` is unset, else the
/// checkpoint on `data.train`.
pub fn train_from_config<B: AutodiffBackend>(
    config: TrainConfig,
    resume: bool,
    device: B::Device,
) -> Result<(), TrainerError> {
    check_source(&config)?;
    match config.model.path.clone() {
        None => run_embedded::<B>(
            &ArithmeticDemo::default(),
            config,
            resume,
            None,
            device,
            None,
        ),
        Some(dir) => run_checkpoint::<B>(config, dir, resume, device, None),
    }
}

/// A config trains a checkpoint when it names `model.path`, and the embedded arithmetic run
/// when it names no model and no data: prompt files without a model are an error (the embedded
/// run would silently train on its own prompts instead).
fn check_source(config: &TrainConfig) -> Result<(), TrainerError> {
    if config.model.path.is_some() {
        return Ok(());
    }
    let given = [
        ("data.train", &config.data.train),
        ("data.eval", &config.data.eval),
    ];
    match given.iter().find_map(|(f, p)| p.as_ref().map(|p| (f, p))) {
        Some((field, path)) => Err(TrainerError::Config {
            field: "model.path".into(),
            message: format!(
                "missing, but {field} = {:?} is set: prompt files need a model to train (an HF \
                 folder or a GGUF file in model.path); the embedded arithmetic run (no model.path) \
                 trains on its own prompts, so remove data.train and data.eval to run it",
                path.display().to_string()
            ),
        }),
        None => Ok(()),
    }
}

fn print_eval(label: &str, e: &EvalReport) {
    println!(
        "{label:<24} overall avg@{k} {:.3} pass@{k} {:.3}",
        e.overall.avg_at_k,
        e.overall.pass_at_k,
        k = e.overall.k
    );
    for (t, v) in &e.tiers {
        println!(
            "{:<24}   {t:<7} avg@{k} {:.3} pass@{k} {:.3}",
            "",
            v.avg_at_k,
            v.pass_at_k,
            k = v.k
        );
    }
}

/// Summarises a finished run from its metrics file and draws `learning_curve.png`.
/// After a run: the held-out avg@k by tier at the first and last evaluation, the learning curve
/// (`out_dir/learning_curve.png`) and the run folder; returns the run's metrics.
pub fn report(config: &TrainConfig) -> Result<Vec<StepMetrics>, TrainerError> {
    let out = &config.out_dir;
    let metrics = read_metrics(&out.join("metrics.jsonl"))?;
    let evals: Vec<_> = metrics
        .iter()
        .filter_map(|m| m.eval.as_ref().map(|e| (m.step, e)))
        .collect();
    if let (Some((s0, first)), Some((s1, last))) = (evals.first(), evals.last()) {
        print_eval(&format!("held-out, step {s0}:"), first);
        print_eval(&format!("held-out, step {s1}:"), last);
        println!(
            "held-out avg@k, step {s0} -> step {s1} (± half-width of the 95 % interval, 1.96 standard errors over prompts):"
        );
        let line = |name: &str, a: &rl_trainer::TierEval, b: &rl_trainer::TierEval| {
            println!(
                "{name:<8} avg@{}: {:.3} ± {:.3} -> {:.3} ± {:.3} ({:+.3})",
                b.k,
                a.avg_at_k,
                1.96 * a.avg_std_error,
                b.avg_at_k,
                1.96 * b.avg_std_error,
                b.avg_at_k - a.avg_at_k
            )
        };
        for (tier, a) in &first.tiers {
            if let Some(b) = last.tiers.get(tier) {
                line(tier, a, b);
            }
        }
        if first.tiers.len() > 1 {
            line("overall", &first.overall, &last.overall);
        }
    }
    let png = out.join("learning_curve.png");
    crate::report::plot_run(&metrics, &config.algorithm, &png).map_err(|e| {
        TrainerError::Metrics {
            path: png.display().to_string(),
            message: format!("drawing the learning curve: {e}"),
        }
    })?;
    println!(
        "run folder: {} (config.toml, metrics.jsonl, checkpoints/, learning_curve.png)",
        out.display()
    );
    Ok(metrics)
}

/// The embedded arithmetic run: tokenizer, split, seeded tiny Qwen3, supervised warm-start
/// (skipped when resuming), RL, report. With `worker`, this is one data-parallel worker (every
/// worker builds the same warm-started model; rank 0 prints, saves and reports).
pub fn run_embedded<B: AutodiffBackend>(
    demo: &ArithmeticDemo,
    config: TrainConfig,
    resume: bool,
    init: Option<&std::path::Path>,
    device: B::Device,
    worker: Option<WorkerConfig>,
) -> Result<(), TrainerError> {
    let leader = worker.as_ref().is_none_or(|w| w.rank == 0);
    macro_rules! say {
        ($($t:tt)*) => { if leader { println!($($t)*) } };
    }
    let data = demo.data()?;
    say!(
        "embedded run: {} tiers x {} train / {} held-out prompts; tiny Qwen3 (hidden {}, {} layers, vocab {}); {} for {} steps",
        demo.task.tiers.len(),
        demo.train_per_tier,
        demo.eval_per_tier,
        demo.hidden_size,
        demo.num_hidden_layers,
        data.model.vocab_size,
        config.algorithm,
        config.steps
    );
    say!("resolved config:\n{}", config.to_toml());
    let t0 = Instant::now();
    let dev = device.clone();
    let trainer = match (resume, latest_checkpoint(&config.out_dir)) {
        (true, Some(ckpt)) => {
            say!("resuming from {}", ckpt.display());
            Trainer::<B, CausalLm<B>>::resume(
                config,
                &ckpt,
                data.tokenizer.clone(),
                data.train.clone(),
                Some(data.eval.clone()),
                device,
            )?
        }
        _ => {
            let model = match init {
                Some(dir) => {
                    say!("starting from {}", dir.display());
                    CausalLm::<B>::load(dir, &device)?
                }
                None => {
                    say!(
                        "supervised warm-start: {} updates of {} examples (reference responses of all tiers; short, so the hard tier is left with a small pass rate)",
                        demo.sft.steps,
                        demo.sft.batch_size
                    );
                    let steps = demo.sft.steps;
                    let model = demo.warm_start::<B>(&data, config.seed, &device, |s, loss| {
                        if leader && (s % 50 == 0 || s == steps) {
                            println!("  sft step {s:>4} loss {loss:.4}");
                        }
                    })?;
                    let dir = config.out_dir.join("warm_start");
                    if leader {
                        model.save(&dir)?;
                    }
                    say!(
                        "warm-start done in {:.0}s (saved to {})",
                        t0.elapsed().as_secs_f64(),
                        dir.display()
                    );
                    model
                }
            };
            Trainer::new(
                config,
                model,
                data.tokenizer.clone(),
                data.train.clone(),
                Some(data.eval.clone()),
                device,
            )?
        }
    };
    let mut trainer = join(trainer, worker, &dev)?;
    let t1 = Instant::now();
    let mut progress = Progress::new(leader);
    trainer.run(|e| progress.on_event(e))?;
    say!("RL done in {:.0}s", t1.elapsed().as_secs_f64());
    finish(trainer, leader)
}

/// A real checkpoint: `model.path` (an HF folder or a GGUF file; tokenizer from
/// `model.tokenizer`, else the GGUF's vocabulary or `<path>/tokenizer.json`), prompts from `data.train` / `data.eval`.
pub fn run_checkpoint<B: AutodiffBackend>(
    config: TrainConfig,
    dir: PathBuf,
    resume: bool,
    device: B::Device,
    worker: Option<WorkerConfig>,
) -> Result<(), TrainerError> {
    let leader = worker.as_ref().is_none_or(|w| w.rank == 0);
    let tokenizer = Tokenizer::for_model(&dir, config.model.tokenizer.as_deref())?;
    let train_path = config
        .data
        .train
        .clone()
        .ok_or_else(|| TrainerError::Config {
            field: "data.train".into(),
            message: "required with model.path: a .jsonl or .parquet prompt set".into(),
        })?;
    let train = Dataset::load(&train_path, &config.data)?;
    let eval = match &config.data.eval {
        Some(p) => Some(Dataset::load(p, &config.data)?),
        None => None,
    };
    if leader {
        println!("resolved config:\n{}", config.to_toml());
        println!(
            "{} training prompts{}",
            train.len(),
            eval.as_ref()
                .map(|e| format!(", {} held-out", e.len()))
                .unwrap_or_default()
        );
    }
    let dev = device.clone();
    let trainer = match (resume, latest_checkpoint(&config.out_dir)) {
        (true, Some(ckpt)) => {
            Trainer::<B, CausalLm<B>>::resume(config, &ckpt, tokenizer, train, eval, device)?
        }
        _ => {
            let model = CausalLm::<B>::load(&dir, &device)?;
            Trainer::new(config, model, tokenizer, train, eval, device)?
        }
    };
    let mut trainer = join(trainer, worker, &dev)?;
    let mut progress = Progress::new(leader);
    trainer.run(|e| progress.on_event(e))?;
    finish(trainer, leader)
}

/// Joins the data-parallel workers, when there are any.
fn join<B: AutodiffBackend>(
    trainer: Trainer<B, CausalLm<B>>,
    worker: Option<WorkerConfig>,
    device: &B::Device,
) -> Result<Trainer<B, CausalLm<B>>, TrainerError> {
    match worker {
        Some(cfg) => {
            let w = Worker::<B::InnerBackend>::join(cfg, device)?;
            trainer.with_collective(Box::new(w))
        }
        None => Ok(trainer),
    }
}

/// After training: leaves the workers' collective; the report (rank 0).
fn finish<B: AutodiffBackend>(
    mut trainer: Trainer<B, CausalLm<B>>,
    leader: bool,
) -> Result<(), TrainerError> {
    trainer.take_parallel().leave()?;
    if leader {
        report(trainer.config()).map(drop)
    } else {
        Ok(())
    }
}
