//! `rlvr compare`: a thin wrapper around [`rl_lab::compare`] (the DA3PO paper's experiment at
//! small scale). Trains the runs, prints the markdown report, and writes it into a document
//! (between markers, other sections untouched) only when `--report FILE` is given.

use std::path::{Path, PathBuf};

use burn::tensor::backend::AutodiffBackend;
use rl_trainer::TrainerError;

use super::{EXIT_BAD_INPUT, Io, job_exit};
use crate::backend::{BackendJob, BackendKind, run_on};
use crate::demo::ArithmeticDemo;
use rl_lab::compare::{CompareSpec, report, run_all, write_section};

/// Arguments of `rlvr compare`.
#[derive(clap::Args, Debug, Clone)]
pub struct CompareArgs {
    /// Algorithms to compare: presets, each with optional overrides
    /// (`preset[:key=value]…`: lambda=NUMBER|theory, lambda_min, lambda_max, tau,
    /// weight=linear_r, budget=SCHEDULE or SCHEDULE@MAX, probe; see `rl_lab::compare::Variant`).
    #[arg(long, value_delimiter = ',', default_value = "grpo,dapo,da3po")]
    pub algorithms: Vec<String>,
    /// Seeds (each: one warm-start shared by all algorithms).
    #[arg(long, value_delimiter = ',', default_value = "0,1,2")]
    pub seeds: Vec<u64>,
    /// Budget of generated responses per run; default: what GRPO generates in `--budget-steps`
    /// steps.
    #[arg(long)]
    pub rollout_budget: Option<usize>,
    /// Steps of GRPO that define the default budget.
    #[arg(long, default_value_t = 60)]
    pub budget_steps: usize,
    /// Evaluation interval in steps.
    #[arg(long, default_value_t = 10)]
    pub eval_every: usize,
    /// Held-out hard-tier avg@k that counts as reached.
    #[arg(long, default_value_t = 0.15)]
    pub target: f64,
    /// Overrides of the embedded run (TOML, as `cargo run --example da3po_qwen3 -- --demo`).
    #[arg(long)]
    pub demo: Option<PathBuf>,
    /// Folder for the runs and the plot.
    #[arg(long, default_value = "runs/compare")]
    pub out: PathBuf,
    /// Markdown file whose compare section is (re)written (e.g. docs/results.md; its plot goes
    /// to img/compare_da3po.png beside it). Without it the report is only printed.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Only rebuild the report from existing run folders.
    #[arg(long)]
    pub report_only: bool,
    /// Backend.
    #[arg(long, value_enum, default_value_t = BackendKind::Cpu)]
    pub backend: BackendKind,
}

impl CompareArgs {
    fn spec(&self) -> CompareSpec {
        CompareSpec {
            algorithms: self.algorithms.clone(),
            seeds: self.seeds.clone(),
            rollout_budget: self.rollout_budget,
            budget_steps: self.budget_steps,
            eval_every: self.eval_every,
            target: self.target,
            out: self.out.clone(),
            steps: None,
            probe: Default::default(),
            deadline: None,
        }
    }
}

struct Job<'a, 'io> {
    args: CompareArgs,
    demo: ArithmeticDemo,
    io: &'a mut Io<'io>,
}

impl BackendJob for Job<'_, '_> {
    type Output = Result<(), TrainerError>;
    fn run<B: AutodiffBackend>(self, device: B::Device) -> Self::Output {
        let spec = self.args.spec();
        let io = self.io;
        if !self.args.report_only {
            let mut progress = crate::progress::Progress::new(true);
            run_all::<B>(
                &spec,
                &self.demo,
                &device,
                &mut |line| {
                    let _ = writeln!(io.stderr, "{line}");
                },
                &mut |e| progress.on_event(e),
            )?;
        }
        let image = self.args.report.as_ref().map(|r| {
            r.parent()
                .unwrap_or(Path::new("."))
                .join("img")
                .join("compare_da3po.png")
        });
        let rep = report(&spec, &self.demo, image.as_deref())?;
        let _ = writeln!(io.stdout, "{}", rep.markdown);
        if let Some(path) = &self.args.report {
            write_section(path, &rep.markdown)?;
            let _ = writeln!(
                io.stderr,
                "report section written to {}; plot {}",
                path.display(),
                rep.plot.display()
            );
        } else {
            let _ = writeln!(io.stderr, "plot {}", rep.plot.display());
        }
        Ok(())
    }
}

/// Runs `rlvr compare`.
pub fn run(args: CompareArgs, io: &mut Io<'_>) -> i32 {
    let demo = match ArithmeticDemo::load(args.demo.as_deref()) {
        Ok(d) => d,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let backend = args.backend;
    let job = Job {
        args,
        demo,
        io: &mut *io,
    };
    job_exit(run_on(backend, job), io)
}
