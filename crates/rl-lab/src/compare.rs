//! The GRPO / DAPO / DA3PO comparison of `rlvr compare`: the DA3PO paper's experiment at small
//! scale. Every algorithm starts from the same warm-started model per seed, trains on the
//! embedded arithmetic task with an equal budget of generated responses, and is evaluated on the
//! same held-out prompts. [`run_all`] trains (reusing finished runs whose resolved configuration
//! is unchanged); [`report`] reads the runs' metrics and builds a markdown section and a plot;
//! [`write_section`] replaces that section of a document (docs/results.md) between markers.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use burn::tensor::backend::AutodiffBackend;
use rl_advantage::{EstimatorConfig, LambdaRule, PromptWeight};
use rl_models::CausalLm;
use rl_sampler::BudgetSchedule;
use rl_trainer::config::ProbeSection;
use rl_trainer::{RunEvent, StepMetrics, TrainConfig, Trainer, TrainerError, read_metrics};

use crate::plot::{Panel, Series, save_png};
use rl_trainer::tasks::demo::ArithmeticDemo;

const BEGIN: &str = "<!-- rlvr compare: begin -->";
const END: &str = "<!-- rlvr compare: end -->";
/// One line that opens a report on the embedded task: the model's size and shape, the task,
/// `budget` (steps or responses) and the evaluation, so that no toy-scale result reads as a
/// claim about large models.
pub(crate) fn scale_line(demo: &ArithmeticDemo, budget: &str) -> Result<String, TrainerError> {
    let m = demo.data()?.model;
    Ok(format!(
        "**Scale:** a {:.1}M-parameter Qwen3-architecture model (hidden {}, {} layers, {}-token \
         vocabulary) on the embedded arithmetic task, {budget}, held-out avg@{} on {} prompts per \
         tier, CPU. Not a claim about large models.",
        m.num_parameters() as f64 / 1e6,
        m.hidden_size,
        m.num_hidden_layers,
        m.vocab_size,
        demo.train.eval.k,
        demo.eval_per_tier
    ))
}

/// Marker file written into a run folder when its run has finished: the run's resolved config.
pub const COMPLETE: &str = "COMPLETE";

/// What to compare and where the runs live.
#[derive(Clone, Debug)]
pub struct CompareSpec {
    /// Algorithm presets, in report order.
    pub algorithms: Vec<String>,
    /// Seeds (each: one warm-start shared by all algorithms).
    pub seeds: Vec<u64>,
    /// Budget of generated responses per run; `None`: what GRPO generates in `budget_steps`.
    pub rollout_budget: Option<usize>,
    /// Steps of GRPO that define the default budget.
    pub budget_steps: usize,
    /// Evaluation interval in steps.
    pub eval_every: usize,
    /// Held-out hard-tier avg@k that counts as reached.
    pub target: f64,
    /// Folder for the runs and the plot.
    pub out: PathBuf,
    /// Equal optimizer steps instead of equal generated responses: every run makes this many
    /// updates (`rollout_budget` and `budget_steps` are then unused).
    pub steps: Option<usize>,
    /// The theorem probe given to runs whose algorithm carries `:probe` (see [`Variant`]).
    pub probe: ProbeSection,
    /// No run is started after this instant (the study spreads over several sittings; a
    /// started run always finishes).
    pub deadline: Option<Instant>,
}

/// An algorithm of a comparison: a preset with optional overrides, written
/// `preset[:key=value]…[:probe]`. The whole string names the run folder (`:` becomes `_`), so it
/// may hold only letters, digits and `_ . = : @ + -`. The overrides:
///
/// | part | what it sets |
/// |---|---|
/// | `lambda=<number>` | DAA's constant λ (`da3po` only) |
/// | `lambda=theory` | DAA's λ = 1/γ(p̂, G) from Theorem 3.1 (`lambda_rule = "theory"`, `da3po` only) |
/// | `lambda_min=<number>`, `lambda_max=<number>` | bounds of the theory factor (with `lambda=theory` only) |
/// | `tau=<number>` | DAA's τ (`da3po` only) |
/// | `weight=<name>` | the prompt weight `[advantage] prompt_weight`, e.g. `linear_r` (any estimator) |
/// | `budget=<schedule>[@<max>]` | difficulty-adaptive group sizes `[rollout.budget]` ([`BudgetArm`]) |
/// | `probe` | the run gets the spec's theorem probe |
///
/// Examples: `da3po:lambda=1.5:tau=0.3`, `dapo:probe`, `da3po:lambda=theory`,
/// `dapo:weight=linear_r`, `dapo:budget=dars_hw`, `dapo:budget=dars_et@16`. Each key may appear
/// once; unknown or malformed parts are errors that list the valid forms.
#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    /// The algorithm preset.
    pub preset: String,
    /// DAA's constant λ, if overridden.
    pub lambda: Option<f64>,
    /// DAA's τ, if overridden.
    pub tau: Option<f64>,
    /// Whether the run is probed.
    pub probe: bool,
    /// `lambda=theory`: λ = 1/γ(p̂, G) (`rl_advantage::LambdaRule::Theory`).
    pub lambda_theory: bool,
    /// Lower bound of the theory factor.
    pub lambda_min: Option<f64>,
    /// Upper bound of the theory factor.
    pub lambda_max: Option<f64>,
    /// The prompt weight (`[advantage] prompt_weight`), if set.
    pub weight: Option<PromptWeight>,
    /// Difficulty-adaptive group sizes, if set.
    pub budget: Option<BudgetArm>,
}

/// `budget=<schedule>[@<max>]` of a [`Variant`]: `[rollout.budget]` with this schedule, the
/// section's default `min` (2) and `decay` (0.5), and `max` = the given one or the schedule's
/// [`BudgetArm::default_max`]. The round's total stays prompts × `rollout.group_size`, so runs
/// with and without it generate the same responses per round. The DARS schedules measure a
/// group's cumulative advantage the way the run's estimator does (`std = true` for the
/// std-normalised `grpo`, `dapo`, `da3po`; `false` for `dr_grpo`, `rloo`), which is the coupling
/// of the authors' code (`grpo_use_std`); their `base` is the round's mean share (G).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BudgetArm {
    /// The schedule's name (`rl_sampler::BUDGET_SCHEDULE_NAMES`).
    pub schedule: String,
    /// The largest group, if given (`@<max>`).
    pub max: Option<usize>,
}

impl BudgetArm {
    /// The largest group when `@<max>` is not given: the sources' caps, DARS equal-treatment 32
    /// and hardness-weighted 64 (the authors' README, at their N = 8), Knapsack RL 128 (the
    /// authors' 7B script's `max_n`); `uniform` needs no more than the group size.
    pub fn default_max(schedule: &str, group_size: usize) -> usize {
        match schedule {
            "dars_et" => 32,
            "dars_hw" => 64,
            "knapsack" => 128,
            _ => group_size,
        }
    }
}

/// The valid parts of a [`Variant`], for error messages.
const VARIANT_FORMS: &str = "lambda=<number>, lambda=theory, lambda_min=<number> and \
     lambda_max=<number> (with lambda=theory), tau=<number>, weight=<prompt weight> (linear_r), \
     budget=<schedule>[@<max>] (uniform, dars_et, dars_hw, knapsack; e.g. budget=dars_hw or \
     budget=dars_hw@32), probe";

impl Variant {
    /// Parses `preset[:key=value]…[:probe]`; unknown keys, repeated keys, bad numbers, unknown
    /// weights or schedules and characters a folder name cannot hold are config errors naming
    /// the algorithm string.
    pub fn parse(name: &str) -> Result<Self, TrainerError> {
        let bad = |message: String| TrainerError::Config {
            field: format!("algorithms (`{name}`)"),
            message,
        };
        if let Some(c) = name
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || "_.=:@+-".contains(*c)))
        {
            let hint = if c == '/' {
                "; write a budget's max after `@` (budget=dars_hw@32)"
            } else {
                ""
            };
            return Err(bad(format!(
                "`{c}` cannot be part of a run name (it names the run's folder: letters, digits \
                 and _ . = : @ + - only){hint}"
            )));
        }
        let mut parts = name.split(':');
        let preset = parts.next().unwrap_or_default().to_string();
        if preset.is_empty() {
            return Err(bad("no preset before the first `:`".into()));
        }
        let mut v = Variant {
            preset,
            lambda: None,
            tau: None,
            probe: false,
            lambda_theory: false,
            lambda_min: None,
            lambda_max: None,
            weight: None,
            budget: None,
        };
        let mut seen: Vec<&str> = Vec::new();
        for part in parts {
            let number = |x: &str| {
                x.parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite())
                    .ok_or_else(|| bad(format!("`{x}` is not a number")))
            };
            let key = part.split_once('=').map_or(part, |(k, _)| k);
            if seen.contains(&key) {
                return Err(bad(format!("`{key}` is given twice")));
            }
            seen.push(key);
            match part.split_once('=') {
                Some(("lambda", "theory")) => v.lambda_theory = true,
                Some(("lambda", x)) => v.lambda = Some(number(x)?),
                Some(("lambda_min", x)) => v.lambda_min = Some(number(x)?),
                Some(("lambda_max", x)) => v.lambda_max = Some(number(x)?),
                Some(("tau", x)) => v.tau = Some(number(x)?),
                Some(("weight", x)) => {
                    v.weight = Some(PromptWeight::from_name(x).map_err(|e| bad(e.to_string()))?)
                }
                Some(("budget", x)) => {
                    let (schedule, max) = match x.split_once('@') {
                        Some((s, m)) => {
                            let max =
                                m.parse::<usize>().ok().filter(|&m| m > 0).ok_or_else(|| {
                                    bad(format!(
                                        "`{m}` is not a group size (budget=<schedule>@<max>)"
                                    ))
                                })?;
                            (s, Some(max))
                        }
                        None => (x, None),
                    };
                    BudgetSchedule::from_name(schedule).map_err(|e| bad(e.to_string()))?;
                    v.budget = Some(BudgetArm {
                        schedule: schedule.to_string(),
                        max,
                    });
                }
                None if part == "probe" => v.probe = true,
                _ => {
                    return Err(bad(format!(
                        "unknown override `{part}`; valid: {VARIANT_FORMS}"
                    )));
                }
            }
        }
        if (v.lambda_min.is_some() || v.lambda_max.is_some()) && !v.lambda_theory {
            return Err(bad(
                "lambda_min and lambda_max bound the theory factor: give them with lambda=theory"
                    .into(),
            ));
        }
        Ok(v)
    }

    /// Applies the overrides to a config built from the preset.
    fn apply(&self, cfg: &mut TrainConfig, probe: &ProbeSection) -> Result<(), TrainerError> {
        let config = |e: &dyn std::fmt::Display| TrainerError::Config {
            field: "algorithms".into(),
            message: e.to_string(),
        };
        if self.lambda.is_some() || self.tau.is_some() {
            let (l0, t0) = match &cfg.advantage {
                EstimatorConfig::Da3po { lambda, tau, .. } => (*lambda, *tau),
                _ => (f64::NAN, f64::NAN),
            };
            cfg.advantage = cfg
                .advantage
                .with_daa(self.lambda.unwrap_or(l0), self.tau.unwrap_or(t0))
                .map_err(|e| config(&e))?;
        }
        if self.lambda_theory {
            cfg.advantage = cfg
                .advantage
                .with_lambda_rule(LambdaRule::Theory, self.lambda_min, self.lambda_max)
                .map_err(|e| config(&e))?;
        }
        if let Some(w) = self.weight {
            cfg.advantage = cfg.advantage.with_prompt_weight(w);
        }
        if let Some(b) = &self.budget {
            let std = matches!(
                cfg.advantage,
                EstimatorConfig::Grpo { .. }
                    | EstimatorConfig::Dapo { .. }
                    | EstimatorConfig::Da3po { .. }
            );
            let schedule = match BudgetSchedule::from_name(&b.schedule).map_err(|e| config(&e))? {
                BudgetSchedule::DarsEt { base, .. } => BudgetSchedule::DarsEt { std, base },
                BudgetSchedule::DarsHw { base, .. } => BudgetSchedule::DarsHw { std, base },
                other => other,
            };
            let max = b
                .max
                .unwrap_or_else(|| BudgetArm::default_max(&b.schedule, cfg.rollout.group_size));
            // min and decay: the section's own defaults.
            let section = serde_json::json!({ "schedule": schedule, "max": max });
            cfg.rollout.budget = Some(serde_json::from_value(section).map_err(|e| config(&e))?);
        }
        if self.probe {
            cfg.probe = probe.clone();
        }
        Ok(())
    }
}

/// The budget of generated responses per run.
pub fn budget(spec: &CompareSpec, demo: &ArithmeticDemo) -> usize {
    spec.rollout_budget.unwrap_or(
        spec.budget_steps * demo.train.batch.groups_per_step * demo.train.rollout.group_size,
    )
}

/// The folder of one run (a variant's `:` becomes `_`, which every file system accepts).
pub fn run_dir(spec: &CompareSpec, seed: u64, algo: &str) -> PathBuf {
    spec.out
        .join(format!("seed-{seed}"))
        .join(algo.replace(':', "_"))
}

/// The resolved configuration of one run: the demo's config with `algo`'s preset, the shared
/// budget of generated responses, and generation rounds sized to the run's observed keep rate
/// (at most 2N prompts a round), so that dynamic sampling pays for the groups it filters out
/// but little for kept groups that are dropped because the batch is already full.
pub fn run_config(
    spec: &CompareSpec,
    demo: &ArithmeticDemo,
    algo: &str,
    seed: u64,
) -> Result<TrainConfig, TrainerError> {
    let variant = Variant::parse(algo)?;
    let mut cfg = demo.train_config(&variant.preset, seed, &run_dir(spec, seed, algo))?;
    variant.apply(&mut cfg, &spec.probe)?;
    cfg.batch.round_sizing = rl_sampler::RoundSizing::Adaptive;
    cfg.rollout.prompts_per_round = 2 * cfg.batch.groups_per_step;
    match spec.steps {
        Some(steps) => {
            cfg.steps = steps;
            cfg.rollout_budget = 0;
        }
        None => {
            cfg.rollout_budget = budget(spec, demo);
            cfg.steps = cfg.rollout_budget; // never the binding limit
        }
    }
    cfg.eval.every = spec.eval_every;
    cfg.checkpoint.every = 0;
    cfg.validate()?;
    Ok(cfg)
}

/// Trains every (seed, algorithm) run of `spec` that has not finished with its current
/// configuration. `log` receives one line per decision, `on_event` every run's events.
pub fn run_all<B: AutodiffBackend>(
    spec: &CompareSpec,
    demo: &ArithmeticDemo,
    device: &B::Device,
    log: &mut dyn FnMut(String),
    on_event: &mut dyn FnMut(RunEvent<'_>),
) -> Result<(), TrainerError> {
    let data = demo.data()?;
    let budget = match spec.steps {
        Some(s) => format!("{s} optimizer steps"),
        None => format!("a budget of {} responses", budget(spec, demo)),
    };
    let late = || spec.deadline.is_some_and(|d| Instant::now() >= d);
    for &seed in &spec.seeds {
        let ws = spec.out.join(format!("seed-{seed}")).join("warm_start");
        let todo: Vec<&String> = spec
            .algorithms
            .iter()
            .filter(|a| !is_complete(spec, demo, a, seed))
            .collect();
        if todo.is_empty() {
            log(format!("seed {seed}: all runs already complete"));
            continue;
        }
        if late() {
            log(format!(
                "seed {seed}: not started, the time limit has passed ({} runs left)",
                todo.len()
            ));
            continue;
        }
        let model: CausalLm<B> = if ws.join("config.json").exists() {
            log(format!("seed {seed}: reusing {}", ws.display()));
            CausalLm::load(&ws, device)?
        } else {
            log(format!(
                "seed {seed}: supervised warm-start ({} updates)",
                demo.sft.steps
            ));
            let m = demo.warm_start::<B>(&data, seed, device, |_, _| {})?;
            m.save(&ws)?;
            m
        };
        for algo in todo {
            if late() {
                log(format!(
                    "seed {seed}: {algo} not started, the time limit has passed"
                ));
                continue;
            }
            let cfg = run_config(spec, demo, algo, seed)?;
            let out = cfg.out_dir.clone();
            let resolved = cfg.to_toml();
            let marker = out.join(COMPLETE);
            log(format!("seed {seed}: {algo} with {budget}"));
            // What an interrupted or differently configured run left is not resumed: the
            // comparison's runs are short, and a clean folder keeps one metrics line per step.
            if out.exists() {
                std::fs::remove_dir_all(&out).map_err(|e| TrainerError::io(&out, e))?;
            }
            let mut t = Trainer::<B, CausalLm<B>>::new(
                cfg,
                model.clone(),
                data.tokenizer.clone(),
                data.train.clone(),
                Some(data.eval.clone()),
                device.clone(),
            )?;
            t.run(&mut *on_event)?;
            std::fs::write(&marker, resolved).map_err(|e| TrainerError::io(&marker, e))?;
        }
    }
    Ok(())
}

/// Whether the run of (`algo`, `seed`) finished with exactly the configuration it would get
/// now (an interrupted comparison resumes run by run; any other run in the folder is redone).
///
/// The marker holds the resolved config as it was written. A config key added to rlvr later
/// (with the default that keeps the old behaviour) is missing from older markers, so the marker
/// is also read back as a [`TrainConfig`] — the missing keys take their defaults — and compared
/// after writing it out again: the committed study runs stay complete when the config grows.
pub fn is_complete(spec: &CompareSpec, demo: &ArithmeticDemo, algo: &str, seed: u64) -> bool {
    let Ok(cfg) = run_config(spec, demo, algo, seed) else {
        return false;
    };
    let now = cfg.to_toml();
    std::fs::read_to_string(cfg.out_dir.join(COMPLETE)).is_ok_and(|done| {
        done == now || toml::from_str::<TrainConfig>(&done).is_ok_and(|c| c.to_toml() == now)
    })
}

/// Mean and sample (Bessel, n − 1) standard deviation over seeds; NaN for none, s.d. 0 for one.
fn mean_sample_std(xs: &[f64]) -> (f64, f64) {
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

/// "mean ± std" over seeds; a single value is shown alone (no spread to report).
fn fmt_ms(xs: &[f64]) -> String {
    let (m, s) = mean_sample_std(xs);
    match xs.len() {
        0 => "n/a".into(),
        1 => format!("{m:.3}"),
        _ => format!("{m:.3} ± {s:.3}"),
    }
}

/// The fraction of a run's trained mixed groups (0 < p̂ < 1) with p̂ < 0.4, from the training
/// steps' `kept_pass_rate_hist` (bins of 0.2). Mixed groups only: without a filter (GRPO)
/// all-wrong groups are trained too, sit in the p̂ = 0 bin, and carry no gradient.
pub(crate) fn hard_mixed_fraction(train: &[&StepMetrics]) -> f64 {
    let hist: [usize; 5] = train.iter().fold([0; 5], |mut h, x| {
        for (acc, n) in h.iter_mut().zip(x.kept_pass_rate_hist) {
            *acc += n;
        }
        h
    });
    let wrong: usize = train.iter().map(|x| x.kept_all_wrong).sum();
    let right: usize = train.iter().map(|x| x.kept_all_correct).sum();
    let mixed = hist.iter().sum::<usize>().saturating_sub(wrong + right);
    let hard = (hist[0] + hist[1]).saturating_sub(wrong);
    hard as f64 / mixed.max(1) as f64
}

/// (step, rollouts, eval) of a run's evaluations.
pub(crate) fn evals(m: &[StepMetrics]) -> Vec<(usize, u64, &rl_trainer::EvalReport)> {
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

/// A generated report: the markdown section (between its markers) and the plot it shows.
#[derive(Clone, Debug)]
pub struct CompareReport {
    /// The markdown section, markers included.
    pub markdown: String,
    /// The plot written into `spec.out`.
    pub plot: PathBuf,
}

/// Builds the report from the runs' metrics files and writes the plot to `spec.out/compare.png`
/// (and a copy to `doc_image`, which the markdown then links as `img/<file name>`).
pub fn report(
    spec: &CompareSpec,
    demo: &ArithmeticDemo,
    doc_image: Option<&Path>,
) -> Result<CompareReport, TrainerError> {
    let budget = budget(spec, demo);
    let tiers: Vec<String> = demo.task.tiers.iter().map(|t| t.name.clone()).collect();
    // Algorithms in the order given on the command line.
    let mut runs: Vec<(String, Vec<Vec<StepMetrics>>)> = Vec::new();
    for algo in &spec.algorithms {
        let seeds = spec
            .seeds
            .iter()
            .map(|&seed| read_metrics(&run_dir(spec, seed, algo).join("metrics.jsonl")))
            .collect::<Result<Vec<_>, _>>()?;
        runs.push((algo.clone(), seeds));
    }
    let k = demo.train.eval.k;
    let mut md = String::new();
    let _ = writeln!(md, "{BEGIN}");
    let _ = writeln!(
        md,
        "## DA3PO vs DAPO vs GRPO on the embedded arithmetic task\n\n{}\n",
        scale_line(
            demo,
            &format!(
                "{budget} generated responses per run, {} seeds",
                spec.seeds.len()
            )
        )?
    );
    let _ = writeln!(
        md,
        "Generated by `rlvr compare --seeds {} --algorithms {}` (equal budget: {budget} generated responses per run; \
         held-out avg@{k}/pass@{k} on {} prompts per tier; {}). Each seed's runs start from the same \
         supervised warm-start ({} updates), so differences come from the RL phase alone. Generation rounds are sized to \
         the run's observed keep rate (`batch.round_sizing = \"adaptive\"`, at most 2N prompts a round), so dynamic \
         sampling pays for the groups its filter removes, not for kept groups dropped from a full batch. Task: {}.\n",
        spec.seeds
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(","),
        spec.algorithms.join(","),
        demo.eval_per_tier,
        match spec.seeds.len() {
            1 => "one seed, so no spread is shown".to_string(),
            n => format!("mean ± std over {n} seeds"),
        },
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
        let mut row = format!("| {algo} | {:.0} | ", mean_sample_std(&steps).0);
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
        .map(|i| i * spec.eval_every * (min_last / spec.eval_every / 4).max(1))
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
        "| algorithm | steps to hard avg@{k} ≥ {} | rollouts to target | responses per trained group | generation rounds per step | surplus kept groups dropped per step | frac. amplified | trained mixed groups with p̂ < 0.4 |",
        spec.target
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
    for (algo, seeds) in runs.iter() {
        let (mut steps, mut rolls, mut reached) = (Vec::new(), Vec::new(), 0);
        let (mut per_kept, mut rounds, mut amp, mut hard_kept, mut surplus) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for m in seeds {
            if let Some(e) = evals(m).into_iter().find(|e| {
                e.2.tiers
                    .get("hard")
                    .is_some_and(|v| v.avg_at_k >= spec.target)
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
            surplus.push(
                train.iter().map(|x| x.surplus_dropped as f64).sum::<f64>()
                    / train.len().max(1) as f64,
            );
            hard_kept.push(hard_mixed_fraction(&train));
        }
        let _ = writeln!(
            md,
            "| {algo} | {} ({reached}/{} seeds) | {} | {} | {} | {} | {} | {} |",
            fmt_ms(&steps),
            seeds.len(),
            fmt_ms(&rolls),
            fmt_ms(&per_kept),
            fmt_ms(&rounds),
            fmt_ms(&surplus),
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
                let (mx, _) = mean_sample_std(&xs);
                let (my, sy) = mean_sample_std(&ys);
                pts.push((mx, my));
                band.push((mx, my - sy, my + sy));
            }
            p = p.with_series(Series::new(algo.clone(), pts).with_band(band));
        }
        panels.push(p);
    }
    std::fs::create_dir_all(&spec.out).map_err(|e| TrainerError::io(&spec.out, e))?;
    let png = spec.out.join("compare.png");
    save_png(&png, &panels, 2).map_err(|e| TrainerError::Metrics {
        path: png.display().to_string(),
        message: format!("drawing the plot: {e}"),
    })?;
    if let Some(p) = doc_image {
        if let Some(dir) = p.parent() {
            std::fs::create_dir_all(dir).map_err(|e| TrainerError::io(dir, e))?;
        }
        std::fs::copy(&png, p).map_err(|e| TrainerError::io(p, e))?;
        let name = p
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("compare.png");
        let _ = writeln!(
            md,
            "\n![held-out accuracy vs generated responses](img/{name})\n"
        );
    }
    let _ = writeln!(md, "{END}");
    Ok(CompareReport {
        markdown: md,
        plot: png,
    })
}

/// Replaces the text between the markers in `path` (or appends it), keeping the rest.
pub fn write_section(path: &Path, section: &str) -> Result<(), TrainerError> {
    write_between(path, BEGIN, END, section)
}

/// Replaces the text from `begin` to `end` in `path` with `section` (which carries the markers),
/// or appends `section`, keeping the rest of the file.
pub fn write_between(
    path: &Path,
    begin: &str,
    end: &str,
    section: &str,
) -> Result<(), TrainerError> {
    let old = std::fs::read_to_string(path).unwrap_or_default();
    let new = match (old.find(begin), old.find(end)) {
        (Some(a), Some(b)) if a < b => format!(
            "{}{}{}",
            &old[..a],
            section.trim_end(),
            &old[b + end.len()..]
        ),
        _ if old.is_empty() => format!("# Results\n\n{section}"),
        _ => format!("{}\n\n{section}", old.trim_end()),
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| TrainerError::io(dir, e))?;
    }
    std::fs::write(path, new).map_err(|e| TrainerError::io(path, e))
}
