//! `rlvr orchestrator --port P`: burn-collective's global orchestrator, which joins the worker
//! processes of a data-parallel run (`rlvr train --world-size N --rank R --orchestrator
//! HOST:P --node HOST:PORT`). Runs until interrupted. See docs/distributed.md.

use super::{EXIT_FAILURE, EXIT_OK, Io};

/// Arguments of `rlvr orchestrator`.
#[derive(clap::Args, Debug)]
pub struct OrchestratorArgs {
    /// The port to listen on (burn 0.21 binds it on all interfaces).
    #[arg(long, default_value_t = 29400)]
    pub port: u16,
}

/// Runs `rlvr orchestrator`.
pub fn run(args: OrchestratorArgs, io: &mut Io<'_>) -> i32 {
    let _ = writeln!(
        io.stderr,
        "orchestrator listening on port {} (Ctrl-C stops it)",
        args.port
    );
    match rl_trainer::distributed::run_orchestrator(args.port) {
        Ok(()) => EXIT_OK,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            EXIT_FAILURE
        }
    }
}
