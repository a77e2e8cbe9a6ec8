//! DA3PO on Qwen3 — the project's main job.
//!
//! `cargo run --example da3po_qwen3` (no arguments): the embedded run, on the CPU, offline, in a
//! few minutes on 2 cores:
//!   1. a deterministic arithmetic task with three difficulty tiers of sums (easy: 0–99 + 0–9,
//!      medium: two-digit + two-digit, hard: three-digit + two-digit) split into training and
//!      held-out prompts;
//!   2. a tiny Qwen3-architecture model (random init, seeded) with a character-level tokenizer
//!      built through the `tokenizers` crate (the code path of the real Qwen3 tokenizer);
//!   3. a short supervised warm-start on the reference responses of the training prompts of all
//!      tiers (200 updates of 128), which teaches the answer format and leaves the hard tier with
//!      a small but non-zero pass rate (documented: the RL phase starts from this model);
//!   4. DA3PO (DAPO + Difficulty-aware Advantage Amplification) on the verifier's reward;
//!   5. held-out accuracy by tier before and after, and a run folder with the resolved config,
//!      metrics.jsonl, a checkpoint and a learning-curve PNG.
//!
//! `cargo run --release --example da3po_qwen3 -- --model DIR --data FILE [--eval FILE]
//! [--config FILE] [--backend wgpu|cuda]`: the same trainer on a real Qwen3 checkpoint (HF
//! layout with tokenizer.json) and prompt set (JSON lines or Parquet; DAPO-Math-17K works as is).

use std::path::PathBuf;
use std::time::Instant;

use burn::tensor::backend::AutodiffBackend;
use clap::Parser;
use rlvr::backend::{BackendJob, BackendKind, run_or_exit};
use rlvr::demo::ArithmeticDemo;
use rlvr::report::train_and_report;
use rlvr::trainer::{Run, TrainConfig, TrainerError};

#[derive(Parser, Debug, Clone)]
#[command(
    about = "DA3PO on Qwen3: the embedded arithmetic run, or a real checkpoint and prompt set"
)]
struct Args {
    /// HF Qwen3 checkpoint folder (config.json, *.safetensors, tokenizer.json).
    #[arg(long, requires = "data")]
    model: Option<PathBuf>,
    /// Training prompts (.jsonl or .parquet).
    #[arg(long, requires = "model")]
    data: Option<PathBuf>,
    /// Held-out prompts (.jsonl or .parquet).
    #[arg(long)]
    eval: Option<PathBuf>,
    /// TOML overrides of the training config (any field; `algorithm` picks the preset).
    #[arg(long)]
    config: Option<PathBuf>,
    /// TOML overrides of the embedded run itself (task, model size, warm-start, RL settings).
    #[arg(long)]
    demo: Option<PathBuf>,
    /// Algorithm preset for the embedded run: grpo, dr_grpo, dapo, da3po, gspo.
    #[arg(long, default_value = "da3po")]
    algorithm: String,
    /// RL steps (embedded run).
    #[arg(long)]
    steps: Option<usize>,
    /// Seed of the model init, warm-start order and sampling.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Run folder.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Start the RL phase from this saved model (e.g. an earlier run's `warm_start/`) instead of
    /// running the supervised warm-start.
    #[arg(long)]
    init: Option<PathBuf>,
    /// Continue from the run folder's latest checkpoint.
    #[arg(long)]
    resume: bool,
    /// Backend.
    #[arg(long, value_enum, default_value_t = BackendKind::Cpu)]
    backend: BackendKind,
}

struct Job(Args);

impl BackendJob for Job {
    type Output = Result<(), TrainerError>;
    fn run<B: AutodiffBackend>(self, device: B::Device) -> Self::Output {
        match (&self.0.model, &self.0.data) {
            (Some(model), Some(data)) => real::<B>(&self.0, model.clone(), data.clone(), device),
            _ => embedded::<B>(&self.0, device),
        }
    }
}

fn embedded<B: AutodiffBackend>(args: &Args, device: B::Device) -> Result<(), TrainerError> {
    let demo = ArithmeticDemo::load(args.demo.as_deref())?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("runs/{}_qwen3", args.algorithm)));
    let mut config = demo.train_config(&args.algorithm, args.seed, &out)?;
    // Responses run from 2 to 16 tokens: micro-batches grouped by length under a budget of
    // 1024 padded tokens compute on far fewer padding tokens than one of 128 padded to the
    // longest, for the same loss and gradients (docs/performance.md, "burn-flex patched,
    // micro-batches grouped by length"). Set here, not in the demo's defaults, which the
    // committed study runs were trained with.
    config.optim.micro_batch_tokens = 1024;
    if let Some(s) = args.steps {
        config.steps = s;
    }
    if let Some(path) = &args.config {
        config = TrainConfig::from_toml_file(path, &config)?;
    }
    let t0 = Instant::now();
    let run = Run::embedded(demo, config)?
        .resume(args.resume)
        .init(args.init.clone());
    train_and_report::<B>(run, device)?;
    println!("total {:.0}s", t0.elapsed().as_secs_f64());
    Ok(())
}

fn real<B: AutodiffBackend>(
    args: &Args,
    model_dir: PathBuf,
    data: PathBuf,
    device: B::Device,
) -> Result<(), TrainerError> {
    let mut base = TrainConfig::default();
    base.apply_preset(&args.algorithm)?;
    base.seed = args.seed;
    base.model.path = Some(model_dir.clone());
    base.data.train = Some(data);
    base.data.eval = args.eval.clone();
    if let Some(o) = &args.out {
        base.out_dir = o.clone();
    }
    let config = match &args.config {
        Some(p) => TrainConfig::from_toml_file(p, &base)?,
        None => base,
    };
    train_and_report::<B>(Run::checkpoint(config)?.resume(args.resume), device)
}

#[global_allocator]
static ALLOC: rl_models::allocator::MiMalloc = rl_models::allocator::MiMalloc;

fn main() {
    rl_models::allocator::tune_for_tensors();
    rl_models::threads::join_compute_pool();
    let args = Args::parse();
    run_or_exit(args.backend, Job(args.clone()));
}
