//! `rlvr compare`: the experiment of the DA3PO paper at small scale. GRPO, DAPO and DA3PO (or
//! any presets) start from the same warm-started model per seed, train on the embedded
//! arithmetic task with an equal budget of generated responses, and are evaluated on the same
//! held-out prompts. Writes per-run folders, a plot, and a markdown report (a section of
//! docs/results.md between markers, other sections left untouched).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use burn::tensor::backend::AutodiffBackend;
use rl_models::Qwen3;
use rl_trainer::{StepMetrics, Trainer, TrainerError, read_metrics};

use super::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, Io};
use crate::backend::{BackendJob, BackendKind, run_on};
use crate::demo::ArithmeticDemo;
use crate::plot::{Panel, Series, save_png};

const BEGIN: &str = "<!-- rlvr compare: begin -->";
const END: &str = "<!-- rlvr compare: end -->";
/// Marker file written into a run folder when its run has finished: the run's resolved config.
const COMPLETE: &str = "COMPLETE";

/// Arguments of `rlvr compare`.
#[derive(clap::Args, Debug, Clone)]
pub struct CompareArgs {
    /// Algorithm presets to compare.
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
    /// Markdown file whose compare section is (re)written.
    #[arg(long, default_value = "docs/results.md")]
    pub report: PathBuf,
    /// Only rebuild the report from existing run folders.
    #[arg(long)]
    pub report_only: bool,
    /// Backend.
    #[arg(long, value_enum, default_value_t = BackendKind::Cpu)]
    pub backend: BackendKind,
}

struct Job(CompareArgs, ArithmeticDemo);

impl BackendJob for Job {
    type Output = Result<(), TrainerError>;
    fn run<B: AutodiffBackend>(self, device: B::Device) -> Self::Output {
        if !self.0.report_only {
            run_all::<B>(&self.0, &self.1, &device)?;
        }
        report(&self.0, &self.1)
    }
}

/// Runs `rlvr compare`.
pub fn run(args: CompareArgs, io: &mut Io<'_>) -> i32 {
    let demo = match &args.demo {
        Some(p) => std::fs::read_to_string(p)
            .map_err(|e| TrainerError::io(p, e))
            .and_then(|t| ArithmeticDemo::from_toml_str(&t)),
        None => Ok(ArithmeticDemo::default()),
    };
    let demo = match demo {
        Ok(d) => d,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    match run_on(args.backend, Job(args.clone(), demo)) {
        Ok(Ok(())) => EXIT_OK,
        Ok(Err(e)) => {
            let _ = writeln!(io.stderr, "error: {e}");
            EXIT_FAILURE
        }
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            EXIT_BAD_INPUT
        }
    }
}

fn budget(args: &CompareArgs, demo: &ArithmeticDemo) -> usize {
    args.rollout_budget.unwrap_or(
        args.budget_steps * demo.train.batch.groups_per_step * demo.train.rollout.group_size,
    )
}

fn run_dir(args: &CompareArgs, seed: u64, algo: &str) -> PathBuf {
    args.out.join(format!("seed-{seed}")).join(algo)
}

fn run_all<B: AutodiffBackend>(
    args: &CompareArgs,
    demo: &ArithmeticDemo,
    device: &B::Device,
) -> Result<(), TrainerError> {
    let data = demo.data()?;
    let budget = budget(args, demo);
    for &seed in &args.seeds {
        let ws = args.out.join(format!("seed-{seed}")).join("warm_start");
        let model: Qwen3<B> = if ws.join("config.json").exists() {
            println!("seed {seed}: reusing {}", ws.display());
            Qwen3::load(&ws, device)?
        } else {
            println!(
                "seed {seed}: supervised warm-start ({} updates)",
                demo.sft.steps
            );
            let m = demo.warm_start::<B>(&data, seed, device, |_, _| {})?;
            m.save(&ws)?;
            m
        };
        for algo in &args.algorithms {
            let out = run_dir(args, seed, algo);
            let mut cfg = demo.train_config(algo, seed, &out)?;
            // Equal generation cost: no surplus groups, a shared budget of responses.
            cfg.rollout.prompts_per_round = cfg.batch.groups_per_step;
            cfg.rollout_budget = budget;
            cfg.steps = budget; // never the binding limit
            cfg.eval.every = args.eval_every;
            cfg.checkpoint.every = 0;
            // A run that finished with this exact configuration is kept (an interrupted
            // comparison resumes run by run); any other run in the folder is redone.
            let resolved = cfg.to_toml();
            let marker = out.join(COMPLETE);
            if std::fs::read_to_string(&marker).is_ok_and(|done| done == resolved) {
                println!("seed {seed}: {algo} already complete in {}", out.display());
                continue;
            }
            println!("seed {seed}: {algo} with a budget of {budget} responses");
            let mut t = Trainer::<B, Qwen3<B>>::new(
                cfg,
                model.clone(),
                data.tokenizer.clone(),
                data.train.clone(),
                Some(data.eval.clone()),
                device.clone(),
            )?;
            t.run(|_| {})?;
            std::fs::write(&marker, resolved).map_err(|e| TrainerError::io(&marker, e))?;
        }
    }
    Ok(())
}

fn mean_std(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    if xs.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let m = xs.iter().sum::<f64>() / n;
    let v = if xs.len() > 1 {
        xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (m, v.sqrt())
}

fn fmt_ms(xs: &[f64]) -> String {
    let (m, s) = mean_std(xs);
    if m.is_nan() {
        "n/a".into()
    } else {
        format!("{m:.3} ± {s:.3}")
    }
}

/// (step, rollouts, eval) of a run's evaluations.
fn evals(m: &[StepMetrics]) -> Vec<(usize, u64, &rl_trainer::EvalReport)> {
    let mut rollouts = 0;
    let mut out = Vec::new();
    for x in m {
        rollouts = rollouts.max(x.rollouts_total);
        if let Some(e) = &x.eval {
            out.push((x.step, rollouts, e));
        }
    }
    out
}

fn report(args: &CompareArgs, demo: &ArithmeticDemo) -> Result<(), TrainerError> {
    let budget = budget(args, demo);
    let tiers: Vec<String> = demo.task.tiers.iter().map(|t| t.name.clone()).collect();
    // Algorithms in the order given on the command line.
    let mut runs: Vec<(String, Vec<Vec<StepMetrics>>)> = Vec::new();
    for algo in &args.algorithms {
        let seeds = args
            .seeds
            .iter()
            .map(|&seed| read_metrics(&run_dir(args, seed, algo).join("metrics.jsonl")))
            .collect::<Result<Vec<_>, _>>()?;
        runs.push((algo.clone(), seeds));
    }
    let k = demo.train.eval.k;
    let mut md = String::new();
    let _ = writeln!(md, "{BEGIN}");
    let _ = writeln!(
        md,
        "## DA3PO vs DAPO vs GRPO on the embedded arithmetic task\n"
    );
    let _ = writeln!(
        md,
        "Generated by `rlvr compare --seeds {} --algorithms {}` (equal budget: {budget} generated responses per run; \
         held-out avg@{k}/pass@{k} on {} prompts per tier; mean ± std over {} seeds). Each seed's runs start from the same \
         supervised warm-start ({} updates), so differences come from the RL phase alone. Task: {}.\n",
        args.seeds
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(","),
        args.algorithms.join(","),
        demo.eval_per_tier,
        args.seeds.len(),
        demo.sft.steps,
        demo.task
            .tiers
            .iter()
            .map(|t| format!(
                "{} = a{}b with a in {}..={}, b in {}..={}",
                t.name, t.op, t.a.0, t.a.1, t.b.0, t.b.1
            ))
            .collect::<Vec<_>>()
            .join("; ")
    );
    // Final accuracy at the budget.
    let _ = writeln!(md, "### Held-out accuracy at the end of the budget\n");
    let mut header = String::from("| algorithm | steps | ");
    for t in &tiers {
        let _ = write!(header, "{t} avg@{k} | ");
    }
    let _ = write!(header, "overall avg@{k} | overall pass@{k} |");
    let _ = writeln!(md, "{header}");
    let _ = writeln!(md, "|{}", "---|".repeat(tiers.len() + 4));
    let start: Vec<&rl_trainer::EvalReport> = runs
        .first()
        .map(|(_, v)| {
            v.iter()
                .filter_map(|m| evals(m).first().map(|e| e.2))
                .collect()
        })
        .unwrap_or_default();
    let mut row = String::from("| warm-start (step 0) | 0 | ");
    for t in &tiers {
        let xs: Vec<f64> = start
            .iter()
            .filter_map(|e| e.tiers.get(t).map(|v| v.avg_at_k))
            .collect();
        let _ = write!(row, "{} | ", fmt_ms(&xs));
    }
    let _ = write!(
        row,
        "{} | {} |",
        fmt_ms(&start.iter().map(|e| e.overall.avg_at_k).collect::<Vec<_>>()),
        fmt_ms(
            &start
                .iter()
                .map(|e| e.overall.pass_at_k)
                .collect::<Vec<_>>()
        )
    );
    let _ = writeln!(md, "{row}");
    for (algo, seeds) in runs.iter() {
        let last: Vec<(usize, &rl_trainer::EvalReport)> = seeds
            .iter()
            .filter_map(|m| evals(m).last().map(|e| (e.0, e.2)))
            .collect();
        let steps: Vec<f64> = last.iter().map(|e| e.0 as f64).collect();
        let mut row = format!("| {algo} | {:.0} | ", mean_std(&steps).0);
        for t in &tiers {
            let xs: Vec<f64> = last
                .iter()
                .filter_map(|e| e.1.tiers.get(t).map(|v| v.avg_at_k))
                .collect();
            let _ = write!(row, "{} | ", fmt_ms(&xs));
        }
        let _ = write!(
            row,
            "{} | {} |",
            fmt_ms(
                &last
                    .iter()
                    .map(|e| e.1.overall.avg_at_k)
                    .collect::<Vec<_>>()
            ),
            fmt_ms(
                &last
                    .iter()
                    .map(|e| e.1.overall.pass_at_k)
                    .collect::<Vec<_>>()
            )
        );
        let _ = writeln!(md, "{row}");
    }
    // Fixed step counts.
    let min_last = runs
        .iter()
        .flat_map(|(_, v)| v.iter().filter_map(|m| evals(m).last().map(|e| e.0)))
        .min()
        .unwrap_or(0);
    let _ = writeln!(md, "\n### Hard-tier avg@{k} at fixed step counts\n");
    let fixed: Vec<usize> = (1..=4)
        .map(|i| i * args.eval_every * (min_last / args.eval_every / 4).max(1))
        .filter(|&s| s <= min_last)
        .collect();
    let _ = writeln!(
        md,
        "| algorithm | {} |",
        fixed
            .iter()
            .map(|s| format!("step {s}"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let _ = writeln!(md, "|---|{}", "---|".repeat(fixed.len()));
    for (algo, seeds) in runs.iter() {
        let mut row = format!("| {algo} |");
        for &s in &fixed {
            let xs: Vec<f64> = seeds
                .iter()
                .filter_map(|m| {
                    evals(m)
                        .into_iter()
                        .find(|e| e.0 == s)
                        .and_then(|e| e.2.tiers.get("hard").map(|v| v.avg_at_k))
                })
                .collect();
            let _ = write!(row, " {} |", fmt_ms(&xs));
        }
        let _ = writeln!(md, "{row}");
    }
    // Target, rollouts per kept group, amplification, kept pass rates.
    let _ = writeln!(md, "\n### Cost and dynamics\n");
    let _ = writeln!(
        md,
        "| algorithm | steps to hard avg@{k} ≥ {} | rollouts to target | responses per kept group | generation rounds per step | frac. amplified | kept groups with p̂ < 0.4 |",
        args.target
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|");
    for (algo, seeds) in runs.iter() {
        let (mut steps, mut rolls, mut reached) = (Vec::new(), Vec::new(), 0);
        let (mut per_kept, mut rounds, mut amp, mut hard_kept) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for m in seeds {
            if let Some(e) = evals(m).into_iter().find(|e| {
                e.2.tiers
                    .get("hard")
                    .is_some_and(|v| v.avg_at_k >= args.target)
            }) {
                steps.push(e.0 as f64);
                rolls.push(e.1 as f64);
                reached += 1;
            }
            let train: Vec<&StepMetrics> = m.iter().filter(|x| x.step > 0).collect();
            let generated: usize = train.iter().map(|x| x.responses_generated).sum();
            let used: usize = train.iter().map(|x| x.groups_used).sum();
            per_kept.push(generated as f64 / used.max(1) as f64);
            rounds.push(
                train.iter().map(|x| x.gen_rounds as f64).sum::<f64>() / train.len().max(1) as f64,
            );
            amp.push(
                train.iter().map(|x| x.frac_amplified).sum::<f64>() / train.len().max(1) as f64,
            );
            let hist: [usize; 5] = train.iter().fold([0; 5], |mut h, x| {
                for (acc, n) in h.iter_mut().zip(x.kept_pass_rate_hist) {
                    *acc += n;
                }
                h
            });
            let tot: usize = hist.iter().sum();
            hard_kept.push((hist[0] + hist[1]) as f64 / tot.max(1) as f64);
        }
        let _ = writeln!(
            md,
            "| {algo} | {} ({reached}/{} seeds) | {} | {} | {} | {} | {} |",
            fmt_ms(&steps),
            seeds.len(),
            fmt_ms(&rolls),
            fmt_ms(&per_kept),
            fmt_ms(&rounds),
            fmt_ms(&amp),
            fmt_ms(&hard_kept)
        );
    }
    // Plot: hard and overall avg@k vs rollouts, mean ± std.
    let mut panels = Vec::new();
    for (tier, title) in [(Some("hard"), "hard tier"), (None, "overall")] {
        let mut p = Panel::new(
            format!("held-out avg@{k}, {title} (mean ± std over seeds)"),
            "generated responses",
            "avg@k",
        );
        for (algo, seeds) in runs.iter() {
            let curves: Vec<Vec<(f64, f64)>> = seeds
                .iter()
                .map(|m| {
                    evals(m)
                        .into_iter()
                        .map(|e| {
                            (
                                e.1 as f64,
                                tier.map_or(e.2.overall.avg_at_k, |t| {
                                    e.2.tiers.get(t).map_or(f64::NAN, |v| v.avg_at_k)
                                }),
                            )
                        })
                        .collect()
                })
                .collect();
            let n = curves.iter().map(Vec::len).min().unwrap_or(0);
            let mut pts = Vec::new();
            let mut band = Vec::new();
            for i in 0..n {
                let xs: Vec<f64> = curves.iter().map(|c| c[i].0).collect();
                let ys: Vec<f64> = curves.iter().map(|c| c[i].1).collect();
                let (mx, _) = mean_std(&xs);
                let (my, sy) = mean_std(&ys);
                pts.push((mx, my));
                band.push((mx, my - sy, my + sy));
            }
            p = p.with_series(Series::new(algo.clone(), pts).with_band(band));
        }
        panels.push(p);
    }
    std::fs::create_dir_all(&args.out).map_err(|e| TrainerError::io(&args.out, e))?;
    let png = args.out.join("compare.png");
    save_png(&png, &panels, 2).map_err(|e| TrainerError::Config {
        field: "plot".into(),
        message: e.to_string(),
    })?;
    let doc_png = args
        .report
        .parent()
        .map(|d| d.join("img").join("compare_da3po.png"));
    if let Some(p) = &doc_png {
        std::fs::create_dir_all(p.parent().unwrap_or(Path::new(".")))
            .map_err(|e| TrainerError::io(p, e))?;
        std::fs::copy(&png, p).map_err(|e| TrainerError::io(p, e))?;
        let _ = writeln!(
            md,
            "\n![held-out accuracy vs generated responses](img/compare_da3po.png)\n"
        );
    }
    let _ = writeln!(md, "{END}");
    write_section(&args.report, &md)?;
    println!("{md}");
    println!(
        "report section written to {}; plot {}",
        args.report.display(),
        png.display()
    );
    Ok(())
}

/// Replaces the text between the markers in `path` (or appends it), keeping the rest.
fn write_section(path: &Path, section: &str) -> Result<(), TrainerError> {
    let old = std::fs::read_to_string(path).unwrap_or_default();
    let new = match (old.find(BEGIN), old.find(END)) {
        (Some(a), Some(b)) if a < b => format!(
            "{}{}{}",
            &old[..a],
            section.trim_end(),
            &old[b + END.len()..]
        ),
        _ if old.is_empty() => format!("# Results\n\n{section}"),
        _ => format!("{}\n\n{section}", old.trim_end()),
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| TrainerError::io(dir, e))?;
    }
    std::fs::write(path, new).map_err(|e| TrainerError::io(path, e))
}
