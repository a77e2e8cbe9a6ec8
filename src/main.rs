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
}

fn main() {
    let cli = Cli::parse();
    let stdin = std::io::stdin();
    let mut stdin = stdin.lock();
    let stdout = std::io::stdout();
    let mut stdout = stdout.lock();
    let stderr = std::io::stderr();
    let mut stderr = stderr.lock();
    let mut io = Io {
        stdin: &mut stdin,
        stdout: &mut stdout,
        stderr: &mut stderr,
    };
    let code = match cli.command {
        Command::Theory(args) => cli::theory::run(args, &mut io),
        Command::Advantages(args) => cli::advantages::run(args, &mut io),
    };
    std::process::exit(code);
}
