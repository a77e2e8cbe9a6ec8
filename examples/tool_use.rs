//! Multi-turn, tool-using RL: a tiny Qwen3 learns to call a calculator.
//!
//! `cargo run --example tool_use` (no arguments), on the CPU, offline, a few minutes on 2 cores:
//!   1. arithmetic a tiny model cannot do reliably in its head — four-digit sums and
//!      three-digit × two-digit products — split into training and held-out prompts, rendered
//!      with Qwen3's chat template;
//!   2. a tiny Qwen3-architecture model with a character-level tokenizer that has Qwen3's turn
//!      and tool tags as single tokens;
//!   3. a short supervised warm-start that shows the tool-call format on some training prompts
//!      (`<tool_call>{"name": "calculator", ...}</tool_call>`, the result as a
//!      `<tool_response>`, then `Answer: n`) and direct answers on the others;
//!   4. DA3PO on episodes of up to three assistant turns: each turn's tool calls are run by
//!      rl-env's `calculator`, the results are appended as observation tokens (masked out of the
//!      loss), and the final answer is verified;
//!   5. held-out accuracy by tier and the tool-call rate before and after, and a run folder with
//!      metrics.jsonl, eval/ (every sampled episode, with its transcript) and learning_curve.png.
//!
//! `--demo FILE` overrides any field of the run (TOML, e.g. `tool_demo_rate = 0.5` or
//! `[train.rollout.env] max_turns = 4`).

use std::path::PathBuf;
use std::time::Instant;

use burn::tensor::backend::AutodiffBackend;
use clap::Parser;
use rlvr::backend::{BackendJob, BackendKind, run_or_exit};
use rlvr::models::CausalLm;
use rlvr::progress::Progress;
use rlvr::trainer::eval::benchmark::read_samples;
use rlvr::trainer::tasks::ToolUseDemo;
use rlvr::trainer::{TrainConfig, Trainer, TrainerError};

#[derive(Parser, Debug, Clone)]
#[command(about = "Multi-turn RL with a calculator tool on a tiny Qwen3 (embedded, offline)")]
struct Args {
    /// RL steps.
    #[arg(long)]
    steps: Option<usize>,
    /// Seed of the model init, warm-start and sampling.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Run folder.
    #[arg(long, default_value = "runs/tool_use")]
    out: PathBuf,
    /// TOML overrides of the run (any field of the tool-use demo).
    #[arg(long)]
    demo: Option<PathBuf>,
    /// Backend.
    #[arg(long, value_enum, default_value_t = BackendKind::Cpu)]
    backend: BackendKind,
}

struct Job(Args);

impl BackendJob for Job {
    type Output = Result<(), TrainerError>;
    fn run<B: AutodiffBackend>(self, device: B::Device) -> Self::Output {
        run::<B>(&self.0, device)
    }
}

fn run<B: AutodiffBackend>(args: &Args, device: B::Device) -> Result<(), TrainerError> {
    let demo = ToolUseDemo::load(args.demo.as_deref())?;
    let data = demo.data()?;
    let mut config = demo.train.clone();
    config.seed = args.seed;
    config.out_dir = args.out.clone();
    if let Some(s) = args.steps {
        config.steps = s;
    }
    let env = config.rollout.env.clone().unwrap_or_default();
    println!(
        "tool-use run: tiers {} ({} train / {} held-out prompts each); tiny Qwen3 (hidden {}, {} layers, vocab {}); {} for {} steps; episodes of up to {} turns with tools [{}]",
        demo.task
            .tiers
            .iter()
            .map(|t| format!("{} {}{}{}", t.name, range(t.a), t.op, range(t.b)))
            .collect::<Vec<_>>()
            .join(", "),
        demo.train_per_tier,
        demo.eval_per_tier,
        demo.hidden_size,
        demo.num_hidden_layers,
        data.model.vocab_size,
        config.algorithm,
        config.steps,
        env.max_turns,
        env.tools.enabled.join(", "),
    );
    let t0 = Instant::now();
    println!(
        "supervised warm-start: {} updates of {} examples ({:.0}% call the calculator, the rest answer directly)",
        demo.sft.steps,
        demo.sft.batch_size,
        100.0 * demo.tool_demo_rate
    );
    let steps = demo.sft.steps;
    let model: CausalLm<B> = demo.warm_start::<B>(&data, config.seed, &device, |s, loss| {
        if s % 25 == 0 || s == steps {
            println!("  sft step {s:>4} loss {loss:.4}");
        }
    })?;
    let dir = config.out_dir.join("warm_start");
    model.save(&dir)?;
    println!(
        "warm-start done in {:.0}s (saved to {})",
        t0.elapsed().as_secs_f64(),
        dir.display()
    );
    let mut trainer = Trainer::new(
        config,
        model,
        data.tokenizer.clone(),
        data.train.clone(),
        Some(data.eval.clone()),
        device,
    )?;
    let t1 = Instant::now();
    let mut progress = Progress::new(true);
    trainer.run(|e| progress.on_event(e))?;
    println!("RL done in {:.0}s", t1.elapsed().as_secs_f64());
    report(trainer.config())?;
    println!("total {:.0}s", t0.elapsed().as_secs_f64());
    Ok(())
}

fn range((lo, hi): (i64, i64)) -> String {
    format!("[{lo}..{hi}]")
}

/// Held-out accuracy by tier before → after and the learning curve (as `rlvr train` reports
/// them), then the tool-call rate and one episode's transcript.
fn report(config: &TrainConfig) -> Result<(), TrainerError> {
    let metrics = rlvr::report::report(config)?;
    let evals: Vec<_> = metrics
        .iter()
        .filter_map(|m| m.eval.as_ref().map(|e| (m.step, e)))
        .collect();
    let (Some((_, first)), Some((last_step, last))) = (evals.first(), evals.last()) else {
        return Ok(());
    };
    println!(
        "overall  avg@{}: {:.3} -> {:.3} (s.e. {:.3} / {:.3})",
        last.overall.k,
        first.overall.avg_at_k,
        last.overall.avg_at_k,
        first.overall.avg_std_error,
        last.overall.avg_std_error
    );
    if let (Some(a), Some(b)) = (first.tool_call_rate, last.tool_call_rate) {
        println!(
            "tool-call rate (held-out): {a:.3} -> {b:.3} ({:+.3})",
            b - a
        );
    }
    let samples = read_samples(
        &config
            .out_dir
            .join(format!("eval/step-{last_step:06}.jsonl")),
        last.overall.k,
    )?;
    if let Some(s) = samples
        .iter()
        .find(|s| s.correct && s.tool_calls.unwrap_or(0) > 0)
    {
        println!(
            "a held-out episode after training (prompt {}):\n{}",
            s.prompt,
            s.transcript.as_deref().unwrap_or(&s.text)
        );
    }
    Ok(())
}

#[global_allocator]
static ALLOC: rl_models::allocator::MiMalloc = rl_models::allocator::MiMalloc;

fn main() {
    rl_models::allocator::tune_for_tensors();
    rl_models::threads::join_compute_pool();
    let args = Args::parse();
    run_or_exit(args.backend, Job(args.clone()));
}
