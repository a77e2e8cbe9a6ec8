//! `rlvr`: the command line of the rlvr workspace. See `rlvr --help`.

use clap::{Parser, Subcommand};
use rlvr::cli::{self, Io};

#[derive(Parser)]
#[command(
    name = "rlvr",
    version,
    about = "Reinforcement learning with verifiable rewards on burn"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// DA3PO Theorem 3.1: dynamic-sampling amplification alpha+/alpha-/gamma (optionally simulated).
    Theory(cli::theory::TheoryArgs),
    /// Group advantages for JSON lines {"group","rewards","correct"} read on stdin.
    Advantages(cli::advantages::AdvantagesArgs),
    /// Verify JSON lines {"response","answer"} read on stdin with the dapo or math verifier.
    Verify(cli::verify::VerifyArgs),
    /// Per-token log-probs of JSON lines {"ids": [..]} under a model (HF folder or GGUF).
    Score(cli::score::ScoreArgs),
    /// Evaluate a model on a benchmark file through any engine: avg@n, pass@k, maj@k with errors.
    Eval(cli::eval::EvalArgs),
    /// Continue a prompt (--prompt TEXT or --ids 1,2,3) with a model (HF folder or GGUF); prints one JSON object.
    Generate(cli::generate::GenerateArgs),
    /// Online data mixing (uniform, ODM, HDS) on an LM trained on text domains, from a TOML config.
    Mix(cli::mix::MixArgs),
    /// Train with GRPO / Dr. GRPO / DAPO / DA3PO / GSPO / PPO from a TOML config (embedded arithmetic run without model.path).
    Train(cli::train::TrainArgs),
    /// Train a reward model on preference pairs (JSON lines prompt/chosen/rejected) with TRL's Bradley-Terry loss.
    TrainRm(cli::train_rm::TrainRmArgs),
    /// The orchestrator that joins the processes of a data-parallel `rlvr train --world-size N`.
    Orchestrator(cli::orchestrator::OrchestratorArgs),
    /// Compare algorithms (default GRPO, DAPO, DA3PO) on the embedded task over seeds at equal rollout budgets.
    Compare(cli::compare::CompareArgs),
    /// The pre-registered DA3PO vs DAPO study (paired seeds, λ/τ ablation, Theorem 3.1 inside training), resumable.
    Study(cli::study::StudyArgs),
    /// Write a checkpoint (HF layout with tokenizer.json; Qwen3, Llama, Qwen2, Gemma 3) as GGUF for llama.cpp.
    ExportGguf(cli::export_gguf::ExportGgufArgs),
    /// Write a GGUF model file (Llama, Qwen2, Qwen3, Gemma 3) as an HF folder with its tokenizer and chat template.
    ExportHf(cli::export_hf::ExportHfArgs),
    /// Write the embedded arithmetic job (warm-started HF Qwen3, tokenizer, prompt files) for other trainers.
    ExportDemo(cli::export_demo::ExportDemoArgs),
}

#[global_allocator]
static ALLOC: rl_models::allocator::MiMalloc = rl_models::allocator::MiMalloc;

fn main() {
    rl_models::allocator::tune_for_tensors();
    rl_models::threads::join_compute_pool();
    print_panics_whole();
    let cli = Cli::parse();
    let stdin = std::io::stdin();
    let mut stdin = stdin.lock();
    // Not locked: `rlvr train --workers N` prints from its worker threads.
    let mut stdout = std::io::stdout();
    let mut stderr = std::io::stderr();
    let mut io = Io {
        stdin: &mut stdin,
        stdout: &mut stdout,
        stderr: &mut stderr,
    };
    let code = match cli.command {
        Command::Theory(args) => cli::theory::run(args, &mut io),
        Command::Advantages(args) => cli::advantages::run(args, &mut io),
        Command::Verify(args) => cli::verify::run(args, &mut io),
        Command::Score(args) => cli::score::run(args, &mut io),
        Command::Generate(args) => cli::generate::run(args, &mut io),
        Command::Eval(args) => cli::eval::run(args, &mut io),
        Command::Mix(args) => cli::mix::run(args, &mut io),
        Command::Train(args) => cli::train::run(args, &mut io),
        Command::TrainRm(args) => cli::train_rm::run(args, &mut io),
        Command::Compare(args) => cli::compare::run(args, &mut io),
        Command::Study(args) => cli::study::run(args, &mut io),
        Command::Orchestrator(args) => cli::orchestrator::run(args, &mut io),
        Command::ExportGguf(args) => cli::export_gguf::run(args, &mut io),
        Command::ExportHf(args) => cli::export_hf::run(args, &mut io),
        Command::ExportDemo(args) => cli::export_demo::run(args, &mut io),
    };
    std::process::exit(code);
}

/// Prints a panic's message (and backtrace) while holding the stderr lock, so that it never
/// splits a line another thread is writing: a data-parallel worker whose peer dies gets panics
/// from its communication threads at the moment it prints its own error (the default hook writes
/// to stderr without the lock that `eprintln!` and `writeln!(stderr)` take).
fn print_panics_whole() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _whole = std::io::stderr().lock();
        default_hook(info);
    }));
}
