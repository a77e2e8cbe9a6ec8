//! `rlvr study`: the pre-registered studies ([`rl_lab::study`]; their files are
//! crates/rl-lab/configs/study_*.toml). Trains the runs the study file plans that are not
//! complete (stopping to start new ones after `--time-limit-min`), prints the report and, with
//! `--report FILE`, writes it between the study markers of FILE (its plots go to img/ beside it).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use burn::tensor::backend::AutodiffBackend;
use rl_trainer::TrainerError;

use super::{EXIT_BAD_INPUT, Io, job_exit};
use crate::backend::{BackendJob, BackendKind, run_on};
use rl_lab::study::{self, StudySpec, report, write_section};

/// Arguments of `rlvr study`.
#[derive(clap::Args, Debug, Clone)]
pub struct StudyArgs {
    /// The study file (e.g. crates/rl-lab/configs/study_da3po.toml).
    #[arg(long)]
    pub config: PathBuf,
    /// Markdown file whose study section is (re)written (e.g. docs/results.md).
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Only rebuild the report from the runs that exist.
    #[arg(long)]
    pub report_only: bool,
    /// Start no run after this many minutes (a started run finishes); the rest waits for the
    /// next sitting.
    #[arg(long)]
    pub time_limit_min: Option<f64>,
    /// Backend.
    #[arg(long, value_enum, default_value_t = BackendKind::Cpu)]
    pub backend: BackendKind,
}

struct Job<'a, 'io> {
    args: StudyArgs,
    spec: StudySpec,
    io: &'a mut Io<'io>,
}

impl BackendJob for Job<'_, '_> {
    type Output = Result<(), TrainerError>;
    fn run<B: AutodiffBackend>(self, device: B::Device) -> Self::Output {
        let io = self.io;
        if !self.args.report_only {
            let deadline = self
                .args
                .time_limit_min
                .map(|m| Instant::now() + Duration::from_secs_f64(m.max(0.0) * 60.0));
            let started = Instant::now();
            let mut progress = crate::progress::Progress::new(true);
            study::run::<B>(
                &self.spec,
                &device,
                deadline,
                &mut |line| {
                    let _ = writeln!(
                        io.stderr,
                        "[{:>6.1} min] {line}",
                        started.elapsed().as_secs_f64() / 60.0
                    );
                },
                &mut |e| progress.on_event(e),
            )?;
        }
        let img = self
            .args
            .report
            .as_ref()
            .map(|r| r.parent().unwrap_or(Path::new(".")).join("img"))
            .unwrap_or_else(|| self.spec.out.clone());
        let md = report(&self.spec, &self.args.config, &img)?;
        let _ = writeln!(io.stdout, "{md}");
        if let Some(path) = &self.args.report {
            write_section(&self.spec, path, &md)?;
            let _ = writeln!(
                io.stderr,
                "study section written to {}; plots in {}",
                path.display(),
                img.display()
            );
        }
        Ok(())
    }
}

/// Runs `rlvr study`.
pub fn run(args: StudyArgs, io: &mut Io<'_>) -> i32 {
    let spec = std::fs::read_to_string(&args.config)
        .map_err(|e| TrainerError::io(&args.config, e))
        .and_then(|t| StudySpec::from_toml_str(&t));
    let spec = match spec {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let backend = args.backend;
    let job = Job {
        args,
        spec,
        io: &mut *io,
    };
    job_exit(run_on(backend, job), io)
}
