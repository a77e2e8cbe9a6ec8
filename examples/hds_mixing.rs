//! Online data mixing on a small character LM: uniform vs ODM vs the Holistic Data Scheduler.
//!
//! ```text
//! cargo run --example hds_mixing                    # 7 methods × 3 seeds × 1000 steps
//! cargo run --example hds_mixing -- --steps 300 --seeds 0 --methods uniform,odm,hds
//! cargo run --example hds_mixing -- --tiny          # a few seconds
//! ```
//!
//! The environment is a 2-layer decoder LM (d = 64) trained on six synthetic domains of known
//! character: arithmetic, a Markov-2 chain, a related chain sharing its transition table, a noisy
//! copy of the arithmetic, pure noise (the trap for loss-driven bandits, not in the validation
//! target) and a low-diversity domain of 16 duplicated sequences. Every LM step draws one
//! micro-batch per domain plus the rest from the scheduler's mixture. Writes `metrics.jsonl`,
//! `mixtures.jsonl`, `summary.md`/`.json` and `mixing.png` into `--out`.

use std::path::PathBuf;

use clap::Parser;
use rlvr::backend::{BackendKind, run_on};
use rlvr::datamix::experiment::{ExperimentConfig, MethodConfig};
use rlvr::mixing::MixingJob;

#[derive(Parser)]
#[command(about = "uniform vs ODM vs HDS data mixing on a small character LM")]
struct Args {
    /// LM steps per run.
    #[arg(long, default_value_t = 1000)]
    steps: usize,
    /// Seeds, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "0,1,2")]
    seeds: Vec<u64>,
    /// Methods, comma separated (uniform, odm, odm_group, hds, hds_align, hds_quality,
    /// hds_stability, hds_vector).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "uniform,odm,odm_group,hds,hds_align,hds_quality,hds_stability"
    )]
    methods: Vec<String>,
    /// Evaluate every this many steps.
    #[arg(long, default_value_t = 50)]
    eval_every: usize,
    /// Run folder.
    #[arg(long, default_value = "runs/hds_mixing")]
    out: PathBuf,
    /// A seconds-long smoke run (tiny model, 6 steps; ignores the size options).
    #[arg(long)]
    tiny: bool,
    /// Backend.
    #[arg(long, value_enum, default_value_t = BackendKind::Cpu)]
    backend: BackendKind,
}

#[global_allocator]
static ALLOC: rl_models::allocator::MiMalloc = rl_models::allocator::MiMalloc;

fn main() {
    rl_models::allocator::tune_for_tensors();
    let args = Args::parse();

    // 1. The experiment: defaults of rl-datamix (model, LM training, domains, HDS/ODM settings).
    let config = if args.tiny {
        ExperimentConfig::tiny()
    } else {
        let methods: Vec<MethodConfig> = args
            .methods
            .iter()
            .map(|m| MethodConfig::named(m))
            .collect();
        let baselines = ["uniform", "odm", "odm_group"]
            .into_iter()
            .filter(|b| args.methods.iter().any(|m| m == b))
            .map(String::from)
            .collect();
        ExperimentConfig {
            steps: args.steps,
            seeds: args.seeds.clone(),
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
    let summary = match run_on(args.backend, job) {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };

    // 3. The result tables.
    println!("{}", summary.to_markdown());
    println!("plot: {}", args.out.join("mixing.png").display());
}
