//! What a comparison is: its algorithms and variants, seeds and budget, where each run lives,
//! and the markers of its report.

use std::path::PathBuf;
use std::time::Instant;

use rl_advantage::{EstimatorConfig, LambdaRule, PromptWeight};
use rl_sampler::BudgetSchedule;
use rl_trainer::config::ProbeSection;
use rl_trainer::tasks::demo::ArithmeticDemo;
use rl_trainer::{TrainConfig, TrainerError};

/// The markers between which [`super::write_section`] writes the report.
pub(super) const BEGIN: &str = "<!-- rlvr compare: begin -->";
pub(super) const END: &str = "<!-- rlvr compare: end -->";

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
    pub(super) fn apply(
        &self,
        cfg: &mut TrainConfig,
        probe: &ProbeSection,
    ) -> Result<(), TrainerError> {
        let config = |e: &dyn std::fmt::Display| TrainerError::Config {
            field: "algorithms".into(),
            message: e.to_string(),
        };
        if self.lambda.is_some() || self.tau.is_some() {
            // The one not given keeps the estimator's DAA setting, or DAA's default.
            let d = cfg.advantage.daa_config().unwrap_or_default();
            cfg.advantage = cfg
                .advantage
                .with_daa(self.lambda.unwrap_or(d.lambda), self.tau.unwrap_or(d.tau))
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
