//! `rlvr mix`: the online data-mixing experiment (uniform, ODM, HDS and ablations on an LM
//! trained on text domains) from a TOML config. Progress goes to stderr, the summary tables
//! (markdown) to stdout, and the run folder (metrics, mixture trajectories, plot) to `--out`.
//! `rlvr mix --print-config` prints the default configuration with every key.

use std::path::PathBuf;

use rl_datamix::experiment::ExperimentConfig;

use super::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, Io};
use crate::backend::{BackendKind, run_on};
use rl_lab::mixing::MixingJob;

/// Arguments of `rlvr mix`.
#[derive(clap::Args, Debug, Clone)]
pub struct MixArgs {
    /// Experiment config (TOML). Relative data paths are resolved against its folder.
    #[arg(long, required_unless_present = "print_config")]
    pub config: Option<PathBuf>,
    /// Run folder (default: `runs/mix-<config file stem>`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the default configuration as TOML and exit.
    #[arg(long)]
    pub print_config: bool,
    /// Backend to run on.
    #[arg(long, value_enum, default_value_t = BackendKind::Cpu)]
    pub backend: BackendKind,
}

/// Runs `rlvr mix`; returns the exit code.
pub fn run(args: MixArgs, io: &mut Io<'_>) -> i32 {
    if args.print_config {
        let _ = write!(io.stdout, "{}", ExperimentConfig::default().to_toml());
        return EXIT_OK;
    }
    let Some(path) = args.config else {
        let _ = writeln!(io.stderr, "error: --config FILE is required");
        return EXIT_BAD_INPUT;
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {}: {e}", path.display());
            return EXIT_BAD_INPUT;
        }
    };
    let config = match ExperimentConfig::from_toml(&text, &path.display().to_string()) {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let base_dir = path
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "config".into());
    let out_dir = args
        .out
        .unwrap_or_else(|| PathBuf::from("runs").join(format!("mix-{stem}")));
    let job = MixingJob {
        config,
        base_dir,
        out_dir: out_dir.clone(),
        log: &mut *io.stderr,
    };
    match run_on(args.backend, job) {
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            EXIT_BAD_INPUT
        }
        Ok(Err(e)) => {
            let _ = writeln!(io.stderr, "error: {e}");
            if e.is_bad_input() {
                EXIT_BAD_INPUT
            } else {
                EXIT_FAILURE
            }
        }
        Ok(Ok(summary)) => {
            let _ = write!(io.stdout, "{}", summary.to_markdown());
            let _ = writeln!(io.stderr, "wrote {}", out_dir.display());
            EXIT_OK
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(args: MixArgs) -> (i32, String, String) {
        crate::cli::run_captured("", |io| run(args, io))
    }

    fn args(config: Option<PathBuf>, out: Option<PathBuf>) -> MixArgs {
        MixArgs {
            config,
            out,
            print_config: false,
            backend: BackendKind::Cpu,
        }
    }

    #[test]
    fn runs_a_tiny_config_and_rejects_bad_ones() {
        let tmpdir = tempfile::Builder::new()
            .prefix("rlvr-mix-cli-")
            .tempdir()
            .unwrap();
        let dir = tmpdir.path();
        let cfg = dir.join("tiny.toml");
        let mut tiny = ExperimentConfig::tiny();
        tiny.seeds = vec![0];
        std::fs::write(&cfg, tiny.to_toml()).unwrap();
        let (code, out, err) = call(args(Some(cfg), Some(dir.join("run"))));
        assert_eq!(code, EXIT_OK, "{err}");
        assert!(out.contains("| hds |"), "{out}");
        assert!(dir.join("run/mixing.png").is_file());

        let bad = dir.join("bad.toml");
        std::fs::write(&bad, "steps = 5\nstepz = 3\n").unwrap();
        let (code, _, err) = call(args(Some(bad.clone()), None));
        assert_eq!(code, EXIT_BAD_INPUT);
        assert!(err.contains("stepz"), "{err}");
        std::fs::write(&bad, "[[methods]]\nname = \"sac\"\n").unwrap();
        let (code, _, err) = call(args(Some(bad), None));
        assert_eq!(code, EXIT_BAD_INPUT);
        assert!(err.contains("`sac`") && err.contains("hds_vector"), "{err}");
        let (code, _, _) = call(args(Some(dir.join("missing.toml")), None));
        assert_eq!(code, EXIT_BAD_INPUT);

        let (code, out, _) = call(MixArgs {
            print_config: true,
            ..args(None, None)
        });
        assert_eq!(code, EXIT_OK);
        assert_eq!(
            ExperimentConfig::from_toml(&out, "stdout").unwrap(),
            ExperimentConfig::default()
        );
    }
}
