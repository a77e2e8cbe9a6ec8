//! Online data mixing on a small character LM: uniform vs ODM vs the Holistic Data Scheduler.
//!
//! ```text
//! cargo run --example hds_mixing                    # short: uniform, odm, hds × seed 0 × 300 steps
//! cargo run --example hds_mixing -- --full          # 7 methods × 3 seeds × 1000 steps
//! cargo run --example hds_mixing -- --steps 500 --seeds 0,1 --methods uniform,hds
//! cargo run --example hds_mixing -- --tiny          # a few seconds
//! ```
//!
//! Cost on the project's 2-core CPU machine (dev profile, dependencies at opt-level 3, after the
//! build): the short default run took 60 s (18–23 s per method, measured while other builds
//! shared the cores); `--full`, the setup of docs/results.md, takes about 30 minutes (21 runs of
//! 1000 steps; 60–80 s each at the short run's per-step cost). `--steps`, `--seeds` and
//! `--methods` override either.
//!
//! The environment is a 2-layer decoder LM (d = 64) trained on six synthetic domains of known
//! character: arithmetic, a Markov-2 chain, a related chain sharing its transition table, a noisy
//! copy of the arithmetic, pure noise (the trap for loss-driven bandits, not in the validation
//! target) and a low-diversity domain of 16 duplicated sequences. Every LM step draws one
//! micro-batch per domain plus the rest from the scheduler's mixture. Writes `metrics.jsonl`,
//! `mixtures.jsonl`, `summary.md`/`.json` and `mixing.png` into `--out`.

use std::path::PathBuf;

use clap::Parser;
use rlvr::backend::{BackendKind, run_or_exit};
use rlvr::datamix::experiment::{ExperimentConfig, MethodConfig};
use rlvr::lab::mixing::MixingJob;

#[derive(Parser)]
#[command(about = "uniform vs ODM vs HDS data mixing on a small character LM")]
struct Args {
    /// The full study (7 methods × 3 seeds × 1000 steps, about 30 minutes on 2 cores) instead of
    /// the short default (uniform, odm, hds × seed 0 × 300 steps).
    #[arg(long)]
    full: bool,
    /// LM steps per run [default: 300; 1000 with --full].
    #[arg(long)]
    steps: Option<usize>,
    /// Seeds, comma separated [default: 0; 0,1,2 with --full].
    #[arg(long, value_delimiter = ',')]
    seeds: Option<Vec<u64>>,
    /// Methods, comma separated (uniform, odm, odm_group, hds, hds_align, hds_quality,
    /// hds_stability, hds_vector) [default: uniform,odm,hds; with --full uniform, odm,
    /// odm_group, hds, hds_align, hds_quality, hds_stability].
    #[arg(long, value_delimiter = ',')]
    methods: Option<Vec<String>>,
    /// Evaluate every this many steps.
    #[arg(long, default_value_t = 50)]
    eval_every: usize,
    /// Run folder.
    #[arg(long, default_value = "runs/hds_mixing")]
    out: PathBuf,
    /// A seconds-long smoke run (tiny model, 6 steps; ignores the size options and --full).
    #[arg(long)]
    tiny: bool,
    /// Backend.
    #[arg(long, value_enum, default_value_t = BackendKind::Cpu)]
    backend: BackendKind,
}

/// Methods of the short default run.
const SHORT_METHODS: [&str; 3] = ["uniform", "odm", "hds"];
/// Methods of the full study (docs/results.md).
const FULL_METHODS: [&str; 7] = [
    "uniform",
    "odm",
    "odm_group",
    "hds",
    "hds_align",
    "hds_quality",
    "hds_stability",
];

#[global_allocator]
static ALLOC: rl_models::allocator::MiMalloc = rl_models::allocator::MiMalloc;

fn main() {
    rl_models::allocator::tune_for_tensors();
    rl_models::threads::join_compute_pool();
    let args = Args::parse();

    // 1. The experiment: defaults of rl-datamix (model, LM training, domains, HDS/ODM settings).
    let config = if args.tiny {
        ExperimentConfig::tiny()
    } else {
        let (steps, seeds, names): (usize, Vec<u64>, &[&str]) = if args.full {
            (1000, vec![0, 1, 2], &FULL_METHODS)
        } else {
            (300, vec![0], &SHORT_METHODS)
        };
        let names: Vec<String> = args
            .methods
            .clone()
            .unwrap_or_else(|| names.iter().map(|n| n.to_string()).collect());
        let methods: Vec<MethodConfig> = names.iter().map(|m| MethodConfig::named(m)).collect();
        let baselines = ["uniform", "odm", "odm_group"]
            .into_iter()
            .filter(|b| names.iter().any(|m| m == b))
            .map(String::from)
            .collect();
        ExperimentConfig {
            steps: args.steps.unwrap_or(steps),
            seeds: args.seeds.clone().unwrap_or(seeds),
            eval_every: args.eval_every,
            methods,
            baselines,
            ..ExperimentConfig::default()
        }
    };
    println!(
        "{} methods × {} seeds × {} steps on {} domains -> {}",
        config.methods.len(),
        config.seeds.len(),
        config.steps,
        config.data.domains.len(),
        args.out.display()
    );

    // 2. Run every method and seed (progress on stderr), write the run folder.
    let mut stderr = std::io::stderr();
    let job = MixingJob {
        config,
        base_dir: PathBuf::from("."),
        out_dir: args.out.clone(),
        log: &mut stderr,
    };
    let summary = run_or_exit(args.backend, job);

    // 3. The result tables.
    println!("{}", summary.to_markdown());
    println!("plot: {}", args.out.join("mixing.png").display());
}
