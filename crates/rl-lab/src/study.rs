//! The pre-registered studies of docs/results.md: "Does DA3PO help on hard prompts?"
//! (`configs/study_da3po.toml`) and "Hard-prompt methods against DAPO"
//! (`configs/study_hard_prompts.toml`).
//!
//! A [`StudySpec`] (TOML) names task settings (demo overrides and seeds), the budget of every
//! run (equal optimizer steps or equal generated responses), the methods paired with the
//! baseline by seed, and optionally the λ/τ ablation and the theorem probe. [`run`] trains every
//! run that has not finished with its current configuration — in the order theorem probe,
//! primary pairs, other settings, ablation — and stops starting runs at a time limit, so the
//! study spreads over several sittings. [`report`] rebuilds the markdown section from whatever
//! runs exist (missing runs are listed as such): without `methods`, the DA3PO study's layout
//! (one DA3PO − DAPO table per setting, the ablation plot, the theorem table and plot); with
//! `methods`, one row per method with its paired difference from the baseline, the 95 % interval
//! and the interval of the study's multiple-comparison correction, a verdict per method and one
//! conclusion line. Both layouts share the pairing (`load_pairs`), the statistics
//! ([`Paired`]) and the decision rule ([`classify`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use burn::tensor::backend::AutodiffBackend;
pub use rl_advantage::theory::unfiltered_advantage;
use rl_advantage::theory::{correct_survival, group_survival, wrong_survival};
use rl_advantage::{GroupId, Sample, compute_batch};
use rl_trainer::config::ProbeSection;
use rl_trainer::probe_records::{ProbeRecord, read_probe};
use rl_trainer::{EvalReport, StepMetrics, TrainConfig, TrainerError, read_metrics};
use serde::Deserialize;

use crate::compare::{
    CompareSpec, Variant, evals, hard_mixed_fraction, is_complete, run_all, run_config, run_dir,
};
use crate::plot::{Panel, Series, save_png};
use crate::stats::{Paired, paired_sample_size};
use rl_trainer::tasks::demo::ArithmeticDemo;

const BEGIN: &str = "<!-- rlvr study: begin -->";
const END: &str = "<!-- rlvr study: end -->";

/// The study, as written in its TOML file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudySpec {
    /// Folder of the runs (one sub-folder per setting).
    pub out: PathBuf,
    /// Equal optimizer steps: every run makes this many updates. Exactly one of `steps` and
    /// `responses` is given.
    #[serde(default)]
    pub steps: Option<usize>,
    /// Equal generated responses: every run stops after the step in which its total of
    /// generated responses reaches this (the trainer's `rollout_budget`).
    #[serde(default)]
    pub responses: Option<usize>,
    /// Samples per held-out prompt (the k of avg@k); unset: the setting's demo's.
    #[serde(default)]
    pub eval_k: Option<usize>,
    /// The difference the study is powered to detect (avg@k of `tier`).
    pub delta: f64,
    /// The tier of the primary metric.
    pub tier: String,
    /// The setting of the primary comparison.
    pub primary: String,
    /// Name of the report section: its markers are `<!-- rlvr study NAME: begin -->` and
    /// `… end -->`. Unset: the DA3PO study's markers (`<!-- rlvr study: begin -->`).
    #[serde(default)]
    pub section: Option<String>,
    /// Heading of the report section (unset: "The pre-registered study: results").
    #[serde(default)]
    pub title: Option<String>,
    /// The run every method is paired with (unset: `dapo`, "DAPO").
    #[serde(default)]
    pub baseline: Option<Method>,
    /// The methods, each paired with the baseline by seed, in report order. Empty: the DA3PO
    /// study (`da3po` against `dapo`) in its own report layout.
    #[serde(default)]
    pub methods: Vec<Method>,
    /// The multiple-comparison correction over `methods`.
    #[serde(default)]
    pub correction: Correction,
    /// Task settings, in report order.
    pub settings: Vec<Setting>,
    /// The λ/τ ablation.
    pub ablation: Option<Ablation>,
    /// The theorem probe.
    pub theorem: Option<Theorem>,
}

/// One method of a study: a run name ([`crate::compare::Variant`]) and its label in the report.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Method {
    /// The run (`preset[:key=value]…`, also the run folder's name).
    pub run: String,
    /// Its name in the report.
    pub label: String,
}

/// How the decision intervals of several methods against one baseline are corrected.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Correction {
    /// Each method's decision uses the 95 % interval.
    #[default]
    None,
    /// Bonferroni: with m methods, each decision uses the 1 − 0.05/m interval, so the chance
    /// of any false verdict of difference over the family is at most 5 %.
    Bonferroni,
}

/// The family-wise level of every study.
pub const FAMILY_ALPHA: f64 = 0.05;

/// One task setting: demo overrides and the seeds of its DAPO/DA3PO pairs.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Setting {
    /// Name (the run sub-folder).
    pub name: String,
    /// Overrides of the embedded run (TOML); none: the default demo.
    pub demo: Option<PathBuf>,
    /// Seeds of the DAPO/DA3PO pairs (each seed: one warm-start shared by its runs).
    pub seeds: Vec<u64>,
    /// One line for the report.
    pub description: String,
}

/// The λ × τ grid (λ = 1 is DAPO; λ = 2, τ = 0.5 is the primary DA3PO run).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ablation {
    /// Setting it runs in.
    pub setting: String,
    /// Seeds.
    pub seeds: Vec<u64>,
    /// DAA's λ values.
    pub lambdas: Vec<f64>,
    /// DAA's τ values.
    pub taus: Vec<f64>,
}

/// The theorem probe runs.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Theorem {
    /// Setting it runs in.
    pub setting: String,
    /// Algorithm preset of the probed runs (DAPO: dynamic sampling without DAA).
    pub algorithm: String,
    /// Seeds.
    pub seeds: Vec<u64>,
    /// Probed steps (1-based).
    pub steps: Vec<usize>,
    /// Extra samples per prompt.
    pub samples: usize,
}

impl StudySpec {
    /// Parses and checks a study file: the primary, ablation and theorem settings must exist.
    pub fn from_toml_str(text: &str) -> Result<Self, TrainerError> {
        let spec: Self = toml::from_str(text).map_err(|e| TrainerError::Config {
            field: "<study toml>".into(),
            message: e.to_string(),
        })?;
        let bad = |field: &str, message: String| TrainerError::Config {
            field: field.into(),
            message,
        };
        let known: Vec<&str> = spec.settings.iter().map(|s| s.name.as_str()).collect();
        let mut named = vec![("primary", spec.primary.as_str())];
        if let Some(a) = &spec.ablation {
            named.push(("ablation.setting", a.setting.as_str()));
        }
        if let Some(t) = &spec.theorem {
            named.push(("theorem.setting", t.setting.as_str()));
        }
        for (field, name) in named {
            if !known.contains(&name) {
                return Err(TrainerError::Config {
                    field: field.into(),
                    message: format!("unknown setting `{name}`; valid: {}", known.join(", ")),
                });
            }
        }
        match (spec.steps, spec.responses) {
            (Some(0), _) => return Err(bad("steps", "0 (must be >= 1)".into())),
            (_, Some(0)) => return Err(bad("responses", "0 (must be >= 1)".into())),
            (Some(_), None) | (None, Some(_)) => {}
            _ => {
                return Err(bad(
                    "steps",
                    "give exactly one budget: `steps` (equal optimizer steps) or `responses` \
                     (equal generated responses)"
                        .into(),
                ));
            }
        }
        if spec.eval_k == Some(0) {
            return Err(bad("eval_k", "0 (must be >= 1)".into()));
        }
        if let Some(name) = &spec.section
            && (name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        {
            return Err(bad(
                "section",
                format!("`{name}`: letters, digits, _ and - only (it goes into the markers)"),
            ));
        }
        let mut runs = vec![spec.baseline().run];
        for m in &spec.methods {
            if runs.contains(&m.run) {
                return Err(bad(
                    "methods",
                    format!("`{}` is listed twice (or is the baseline)", m.run),
                ));
            }
            runs.push(m.run.clone());
        }
        for r in &runs {
            Variant::parse(r)?;
        }
        if spec.methods.is_empty() && spec.correction != Correction::None {
            return Err(bad(
                "correction",
                "a correction needs `methods` (the DA3PO study has one comparison)".into(),
            ));
        }
        Ok(spec)
    }

    fn setting(&self, name: &str) -> &Setting {
        self.settings
            .iter()
            .find(|s| s.name == name)
            .unwrap_or(&self.settings[0])
    }

    /// The baseline (`dapo` unless the file names another).
    pub fn baseline(&self) -> Method {
        self.baseline.clone().unwrap_or_else(|| Method {
            run: "dapo".into(),
            label: "DAPO".into(),
        })
    }

    /// The runs of every seed of a setting: the baseline first, then the methods (the DA3PO
    /// study: `dapo`, `da3po`).
    pub fn arms(&self) -> Vec<String> {
        if self.methods.is_empty() {
            return vec![self.baseline().run, "da3po".to_string()];
        }
        std::iter::once(self.baseline().run)
            .chain(self.methods.iter().map(|m| m.run.clone()))
            .collect()
    }

    /// The two-sided level of each method's decision interval: 0.05, or 0.05/m with Bonferroni
    /// over m methods.
    pub fn decision_alpha(&self) -> f64 {
        match self.correction {
            Correction::None => FAMILY_ALPHA,
            Correction::Bonferroni => FAMILY_ALPHA / self.methods.len().max(1) as f64,
        }
    }

    /// The budget of every run, in words.
    pub fn budget_words(&self) -> String {
        match (self.steps, self.responses) {
            (Some(s), _) => format!("{s} optimizer steps per run"),
            (None, Some(r)) => format!("{r} generated responses per run"),
            (None, None) => "no budget".into(),
        }
    }

    /// A setting's demo, with the study's `eval_k`.
    pub fn demo(&self, setting: &Setting) -> Result<ArithmeticDemo, TrainerError> {
        let mut demo = setting_demo(setting)?;
        if let Some(k) = self.eval_k {
            demo.train.eval.k = k;
        }
        Ok(demo)
    }

    /// Builds every planned run's configuration (first seed of each comparison), so that a run
    /// name the trainer cannot run is an error before anything trains, not a run that stays
    /// "missing".
    pub fn check(&self) -> Result<(), TrainerError> {
        for (setting, algos, seeds) in plan(self) {
            let demo = self.demo(self.setting(&setting))?;
            let cs = compare_spec(self, &setting, algos.clone(), seeds.clone(), None);
            for a in &algos {
                run_config(&cs, &demo, a, seeds.first().copied().unwrap_or(0))?;
            }
        }
        Ok(())
    }

    /// The resolved configuration of one run of the study (its folder is the config's
    /// `out_dir`; a finished run holds the config's TOML in `COMPLETE` there).
    pub fn resolve(
        &self,
        setting: &str,
        run: &str,
        seed: u64,
    ) -> Result<TrainConfig, TrainerError> {
        let demo = self.demo(self.setting(setting))?;
        let cs = compare_spec(self, setting, vec![run.to_string()], vec![seed], None);
        run_config(&cs, &demo, run, seed)
    }

    fn markers(&self) -> (String, String) {
        match &self.section {
            None => (BEGIN.to_string(), END.to_string()),
            Some(n) => (
                format!("<!-- rlvr study {n}: begin -->"),
                format!("<!-- rlvr study {n}: end -->"),
            ),
        }
    }
}

/// The demo of a setting (default, or the default with its TOML overrides).
pub fn setting_demo(setting: &Setting) -> Result<ArithmeticDemo, TrainerError> {
    ArithmeticDemo::load(setting.demo.as_deref())
}

/// The run name of λ, τ in the ablation: DAPO for λ = 1, the primary DA3PO run for the paper's
/// defaults, else a `da3po:lambda=…:tau=…` variant.
pub fn ablation_algorithm(lambda: f64, tau: f64) -> String {
    if lambda == 1.0 {
        "dapo".into()
    } else if lambda == 2.0 && tau == 0.5 {
        "da3po".into()
    } else {
        format!("da3po:lambda={lambda}:tau={tau}")
    }
}

/// The comparisons of the study, in the order they are run: (setting, algorithms, seeds).
fn plan(spec: &StudySpec) -> Vec<(String, Vec<String>, Vec<u64>)> {
    let mut out = Vec::new();
    if let Some(t) = &spec.theorem {
        out.push((
            t.setting.clone(),
            vec![format!("{}:probe", t.algorithm)],
            t.seeds.clone(),
        ));
    }
    let primary = spec.setting(&spec.primary);
    out.push((primary.name.clone(), spec.arms(), primary.seeds.clone()));
    for s in spec.settings.iter().filter(|s| s.name != spec.primary) {
        out.push((s.name.clone(), spec.arms(), s.seeds.clone()));
    }
    if let Some(a) = &spec.ablation {
        let mut algos: Vec<String> = Vec::new();
        for &l in &a.lambdas {
            for &t in &a.taus {
                let name = ablation_algorithm(l, t);
                if !algos.contains(&name) {
                    algos.push(name);
                }
            }
        }
        out.push((a.setting.clone(), algos, a.seeds.clone()));
    }
    out
}

/// The comparison spec of one setting: the study's budget (equal steps or equal generated
/// responses), no intermediate evaluation (held-out avg@k before and after training).
fn compare_spec(
    spec: &StudySpec,
    setting: &str,
    algorithms: Vec<String>,
    seeds: Vec<u64>,
    deadline: Option<Instant>,
) -> CompareSpec {
    let probe = spec
        .theorem
        .as_ref()
        .map(|t| ProbeSection {
            steps: t.steps.clone(),
            samples: t.samples,
        })
        .unwrap_or_default();
    CompareSpec {
        algorithms,
        seeds,
        rollout_budget: spec.responses,
        budget_steps: spec.steps.unwrap_or(0),
        eval_every: 0,
        target: 1.0,
        out: spec.out.join(setting),
        steps: spec.steps,
        probe,
        deadline,
    }
}

/// Trains every run of the study that is not complete; no run is started after `deadline`.
/// `log` receives one line per decision, `on_event` every run's events.
pub fn run<B: AutodiffBackend>(
    spec: &StudySpec,
    device: &B::Device,
    deadline: Option<Instant>,
    log: &mut dyn FnMut(String),
    on_event: &mut dyn FnMut(rl_trainer::RunEvent<'_>),
) -> Result<(), TrainerError> {
    spec.check()?;
    for (setting, algos, seeds) in plan(spec) {
        let demo = spec.demo(spec.setting(&setting))?;
        let cs = compare_spec(spec, &setting, algos, seeds, deadline);
        run_all::<B>(
            &cs,
            &demo,
            device,
            &mut |line| log(format!("[{setting}] {line}")),
            on_event,
        )?;
    }
    Ok(())
}

/// A finished run's numbers.
#[derive(Clone, Debug)]
struct RunResult {
    responses: u64,
    first: EvalReport,
    last: EvalReport,
    /// Fraction of trained mixed groups with p̂ < 0.4.
    hard_kept: f64,
    /// Optimizer steps made (the last evaluation's step).
    steps: usize,
    /// Mean over training steps of the fraction of trained responses DAA amplified.
    frac_amplified: f64,
    /// Smallest and largest group of the run (`group_sizes`; none without a rollout budget).
    group_sizes: Option<(usize, usize)>,
    /// Fraction of training steps whose groups differ in size (an adaptive budget acting).
    unequal_steps: f64,
}

fn tier_avg(e: &EvalReport, tier: &str) -> f64 {
    e.tiers.get(tier).map_or(f64::NAN, |t| t.avg_at_k)
}

/// The evaluation's standard error of a tier's avg@k, over prompts (total), and its sampling
/// part √(E[p(1 − p)] / (k·P)), the part that more samples per prompt shrink and that does not
/// cancel in a difference of two runs on the same prompts (NaN without the noise split).
fn tier_se(e: &EvalReport, tier: &str) -> (f64, f64) {
    e.tiers.get(tier).map_or((f64::NAN, f64::NAN), |t| {
        let sampling = t.noise.map_or(f64::NAN, |n| {
            (n.within / (t.k.max(1) * t.prompts.max(1)) as f64).sqrt()
        });
        (t.avg_std_error, sampling)
    })
}

fn load_run(
    cs: &CompareSpec,
    demo: &ArithmeticDemo,
    algo: &str,
    seed: u64,
) -> Result<Option<RunResult>, TrainerError> {
    if !is_complete(cs, demo, algo, seed) {
        return Ok(None);
    }
    let m = read_metrics(&run_dir(cs, seed, algo).join("metrics.jsonl"))?;
    let evals = evals(&m);
    let (Some(first), Some(last)) = (evals.first(), evals.last()) else {
        return Ok(None);
    };
    let train: Vec<&StepMetrics> = m.iter().filter(|x| x.step > 0).collect();
    let group_sizes = train.iter().filter_map(|x| x.group_sizes).fold(
        None,
        |acc: Option<(usize, usize)>, [lo, hi]| {
            Some(acc.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))))
        },
    );
    Ok(Some(RunResult {
        responses: last.1,
        first: first.2.clone(),
        last: last.2.clone(),
        hard_kept: hard_mixed_fraction(&train),
        steps: last.0,
        frac_amplified: train.iter().map(|x| x.frac_amplified).sum::<f64>()
            / train.len().max(1) as f64,
        group_sizes,
        unequal_steps: train
            .iter()
            .filter(|x| x.group_sizes.is_some_and(|[lo, hi]| lo < hi))
            .count() as f64
            / train.len().max(1) as f64,
    }))
}

fn f3(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.3}")
    } else {
        "—".into()
    }
}

fn s3(x: f64) -> String {
    if x.is_finite() {
        format!("{x:+.4}")
    } else {
        "—".into()
    }
}

/// The paired results of one setting: per seed (seed, baseline run, other run).
type Pairs = Vec<(u64, Option<RunResult>, Option<RunResult>)>;

/// The baseline's and `other`'s complete runs of each seed (`None`: not complete).
fn load_pairs(
    spec: &StudySpec,
    setting: &Setting,
    seeds: &[u64],
    other: &str,
) -> Result<Pairs, TrainerError> {
    let demo = spec.demo(setting)?;
    let base = spec.baseline().run;
    let cs = compare_spec(
        spec,
        &setting.name,
        vec![base.clone(), other.into()],
        seeds.to_vec(),
        None,
    );
    seeds
        .iter()
        .map(|&s| {
            Ok((
                s,
                load_run(&cs, &demo, &base, s)?,
                load_run(&cs, &demo, other, s)?,
            ))
        })
        .collect()
}

fn diffs(pairs: &Pairs, tier: Option<&str>) -> Vec<f64> {
    pairs
        .iter()
        .filter_map(|(_, a, b)| {
            let (a, b) = (a.as_ref()?, b.as_ref()?);
            let v = |r: &RunResult| tier.map_or(r.last.overall.avg_at_k, |t| tier_avg(&r.last, t));
            Some(v(b) - v(a))
        })
        .collect()
}

/// The pre-registered decision on one method's paired interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Fewer than two complete pairs.
    NoInterval,
    /// Not every pre-registered pair is complete: no conclusion.
    Incomplete,
    /// The interval is above 0.
    Better,
    /// The interval is below 0.
    Worse,
    /// The interval contains 0 and lies inside (−δ, +δ).
    NoEffect,
    /// The interval contains 0 and reaches ±δ.
    NotDetectable,
}

/// The decision rule of the pre-registrations, on an interval `p` of which `planned` pairs were
/// pre-registered, with the effect size `delta`.
pub fn classify(p: &Paired, planned: usize, delta: f64) -> Verdict {
    if !(p.lo.is_finite() && p.hi.is_finite()) {
        Verdict::NoInterval
    } else if p.n < planned {
        Verdict::Incomplete
    } else if p.lo > 0.0 {
        Verdict::Better
    } else if p.hi < 0.0 {
        Verdict::Worse
    } else if p.lo > -delta && p.hi < delta {
        Verdict::NoEffect
    } else {
        Verdict::NotDetectable
    }
}

/// The plain-language verdict on a paired DA3PO − DAPO interval, given how many pairs were
/// planned (the DA3PO study's wording).
pub fn verdict(p: &Paired, planned: usize, delta: f64) -> String {
    if classify(p, planned, delta) == Verdict::Incomplete {
        return format!(
            "**Incomplete: {} of {planned} pre-registered pairs.** No conclusion is drawn; the \
             interval below is an interim look, not the pre-registered test.",
            p.n
        );
    }
    verdict_of(p, planned, delta, "DA3PO", "DAPO", "95 % CI")
}

/// The plain-language verdict on `method` − `baseline`, `p` holding the decision interval
/// (named `ci`, e.g. "95 % CI" or "98.75 % CI").
pub fn verdict_of(
    p: &Paired,
    planned: usize,
    delta: f64,
    method: &str,
    baseline: &str,
    ci: &str,
) -> String {
    match classify(p, planned, delta) {
        Verdict::NoInterval => format!(
            "**No interval yet:** {} complete pair(s) of {planned}; an interval needs two.",
            p.n
        ),
        Verdict::Incomplete => format!(
            "**Incomplete: {} of {planned} pre-registered pairs.** No conclusion is drawn; the \
             {ci} [{:+.4}, {:+.4}] is an interim look, not the pre-registered test.",
            p.n, p.lo, p.hi
        ),
        Verdict::Better => {
            let small = if p.hi < delta {
                format!(
                    " The interval also excludes gains of {delta} or more: the effect is smaller \
                     than the one the study was powered for."
                )
            } else {
                String::new()
            };
            format!(
                "**Confirmed:** {method} beats {baseline} (mean {:+.4}, {ci} [{:+.4}, {:+.4}] excludes 0).{small}",
                p.mean, p.lo, p.hi
            )
        }
        Verdict::Worse => format!(
            "**Refuted:** {method} is worse than {baseline} (mean {:+.4}, {ci} [{:+.4}, {:+.4}]).",
            p.mean, p.lo, p.hi
        ),
        Verdict::NoEffect => format!(
            "**No effect of ±{delta} or more:** the {ci} [{:+.4}, {:+.4}] contains 0 and \
             excludes ±{delta}.",
            p.lo, p.hi
        ),
        Verdict::NotDetectable => format!(
            "**Not detectable at this scale:** the {ci} [{:+.4}, {:+.4}] contains 0 and \
             reaches ±{delta}.",
            p.lo, p.hi
        ),
    }
}

fn pairs_section(
    md: &mut String,
    spec: &StudySpec,
    setting: &Setting,
    primary: bool,
) -> Result<(), TrainerError> {
    let tier = spec.tier.as_str();
    let pairs = load_pairs(spec, setting, &setting.seeds, "da3po")?;
    let _ = writeln!(
        md,
        "### {} setting{}: {}\n",
        setting.name,
        if primary { " (primary)" } else { "" },
        setting.description
    );
    let _ = writeln!(
        md,
        "| seed | step-0 {tier} | DAPO {tier} | DA3PO {tier} | Δ {tier} | Δ overall | responses DAPO / DA3PO | mixed groups with p̂ < 0.4, DAPO / DA3PO |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
    for (seed, a, b) in &pairs {
        let cell = |r: &Option<RunResult>| {
            r.as_ref()
                .map_or("not run".into(), |r| f3(tier_avg(&r.last, tier)))
        };
        let start = a
            .as_ref()
            .or(b.as_ref())
            .map_or(f64::NAN, |r| tier_avg(&r.first, tier));
        // Both runs of a seed start from one warm-start: their step-0 evaluations agree.
        let shared = match (a, b) {
            (Some(a), Some(b)) if a.first != b.first => " (step-0 evaluations differ!)",
            _ => "",
        };
        let (d, dov) = match (a, b) {
            (Some(a), Some(b)) => (
                tier_avg(&b.last, tier) - tier_avg(&a.last, tier),
                b.last.overall.avg_at_k - a.last.overall.avg_at_k,
            ),
            _ => (f64::NAN, f64::NAN),
        };
        let resp =
            |r: &Option<RunResult>| r.as_ref().map_or("—".into(), |r| r.responses.to_string());
        let hk = |r: &Option<RunResult>| r.as_ref().map_or("—".into(), |r| f3(r.hard_kept));
        let _ = writeln!(
            md,
            "| {seed} | {}{shared} | {} | {} | {} | {} | {} / {} | {} / {} |",
            f3(start),
            cell(a),
            cell(b),
            s3(d),
            s3(dov),
            resp(a),
            resp(b),
            hk(a),
            hk(b)
        );
    }
    let p = Paired::of(&diffs(&pairs, Some(tier)));
    let po = Paired::of(&diffs(&pairs, None));
    let _ = writeln!(
        md,
        "\nPaired DA3PO − DAPO over {} complete pairs: {tier} tier {} (s.d. {}), 95 % CI [{}, {}], paired t p = {}; overall {} (s.d. {}), 95 % CI [{}, {}].\n",
        p.n,
        s3(p.mean),
        f3(p.sd),
        s3(p.lo),
        s3(p.hi),
        f3(p.p_value()),
        s3(po.mean),
        f3(po.sd),
        s3(po.lo),
        s3(po.hi)
    );
    if primary {
        let _ = writeln!(md, "{}\n", verdict(&p, setting.seeds.len(), spec.delta));
        if p.sd.is_finite() {
            let _ = writeln!(
                md,
                "Observed paired s.d. {:.4}: detecting {} with 80 % power at 5 % (two-sided) would take {} pairs at this spread (post hoc, for planning the next study; not a test).\n",
                p.sd,
                spec.delta,
                paired_sample_size(p.sd, spec.delta, 0.05, 0.8)
            );
        }
    } else {
        // The same rule, applied to a secondary setting; the decision rests on the primary one.
        let _ = writeln!(
            md,
            "By the pre-registered rule (secondary setting: reported, not part of the decision): {}\n",
            verdict(&p, setting.seeds.len(), spec.delta)
        );
    }
    Ok(())
}

fn ablation_section(
    md: &mut String,
    spec: &StudySpec,
    a: &Ablation,
    image: &Path,
) -> Result<Option<PathBuf>, TrainerError> {
    let tier = spec.tier.as_str();
    let setting = spec.setting(&a.setting);
    let _ = writeln!(
        md,
        "### Ablation: λ × τ ({} setting, seeds {:?})\n",
        setting.name, a.seeds
    );
    let _ = writeln!(
        md,
        "Final {tier}-tier avg@k, mean over complete seeds (n), and the paired difference from DAPO (λ = 1) with its 95 % CI. The plot shows the paired difference, one panel per τ, on one y scale.\n"
    );
    let _ = writeln!(
        md,
        "| λ | τ | run | n | {tier} avg@k | Δ vs DAPO | 95 % CI |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|");
    // One panel per τ: the paired difference from DAPO against λ, with its 95 % CI as error
    // bars (the seeds' spread in absolute avg@k is mostly between warm-starts, which pairing
    // removes). All panels share one y range so that they compare at a glance.
    let mut panels = Vec::new();
    // The shared y range: DAPO's 0 and every interval's ends (f64::min/max skip a NaN end).
    let (mut y_lo, mut y_hi) = (0.0f64, 0.0f64);
    let mut mismatched = Vec::new();
    for &t in &a.taus {
        let mut pts = Vec::new();
        let mut bars = Vec::new();
        let mut n_max = 0;
        for &l in &a.lambdas {
            let algo = ablation_algorithm(l, t);
            let pairs = load_pairs(spec, setting, &a.seeds, &algo)?;
            let vals: Vec<f64> = pairs
                .iter()
                .filter_map(|(_, _, b)| b.as_ref().map(|r| tier_avg(&r.last, tier)))
                .collect();
            let v = Paired::of(&vals);
            let d = Paired::of(&diffs(&pairs, Some(tier)));
            // Each run must start from its seed's DAPO run's warm-start (a warm-start recomputed
            // on another machine could differ).
            for (seed, a, b) in &pairs {
                if let (Some(a), Some(b)) = (a, b)
                    && a.first != b.first
                {
                    mismatched.push(format!("`{algo}` seed {seed}"));
                }
            }
            let _ = writeln!(
                md,
                "| {l} | {t} | `{algo}` | {} | {} | {} | {} |",
                v.n,
                f3(v.mean),
                if l == 1.0 {
                    "0 (reference)".into()
                } else {
                    s3(d.mean)
                },
                if l == 1.0 {
                    "—".into()
                } else {
                    format!("[{}, {}]", s3(d.lo), s3(d.hi))
                }
            );
            if l == 1.0 && v.n > 0 {
                pts.push((l, 0.0));
            } else if d.mean.is_finite() {
                pts.push((l, d.mean));
                bars.push((l, d.lo, d.hi));
                y_lo = y_lo.min(d.mean).min(d.lo);
                y_hi = y_hi.max(d.mean).max(d.hi);
                n_max = n_max.max(d.n);
            }
        }
        if !pts.is_empty() {
            panels.push(
                Panel::new(
                    format!("τ = {t}: Δ vs DAPO (n ≤ {n_max} pairs)"),
                    "λ (1 = DAPO)",
                    format!("Δ final {tier} avg@k, 95 % CI"),
                )
                .with_series(Series::new("", pts).with_error_bars(bars)),
            );
        }
    }
    if !mismatched.is_empty() {
        let _ = writeln!(
            md,
            "\n**Step-0 evaluations differ from the DAPO run's for {}**: those runs did not start from the same warm-start.",
            mismatched.join(", ")
        );
    }
    if panels.is_empty() {
        let _ = writeln!(md, "\nNo ablation run is complete yet; no plot.\n");
        return Ok(None);
    }
    let panels: Vec<Panel> = panels
        .into_iter()
        .map(|p| p.with_y_range(y_lo, y_hi))
        .collect();
    draw(image, &panels, panels.len().min(3))?;
    Ok(Some(image.to_path_buf()))
}

fn draw(path: &Path, panels: &[Panel], cols: usize) -> Result<(), TrainerError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| TrainerError::io(dir, e))?;
    }
    save_png(path, panels, cols).map_err(|e| TrainerError::Metrics {
        path: path.display().to_string(),
        message: format!("drawing the plot: {e}"),
    })
}

/// One bin of the theorem table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TheoremBin {
    /// Lower and upper edge of the estimated pass rate.
    pub range: (f64, f64),
    /// Groups in the bin.
    pub groups: usize,
    /// Mean estimated pass rate.
    pub p_mean: f64,
    /// Measured fraction of groups the filter kept / predicted mean of 1 − p^G − (1−p)^G.
    pub group_survival: (f64, f64),
    /// Measured fraction of correct responses in kept groups / predicted
    /// Σ p(1 − p^(G−1)) / Σ p.
    pub correct_survival: (f64, f64),
    /// The same for wrong responses with 1 − (1−p)^(G−1).
    pub wrong_survival: (f64, f64),
    /// Measured mean advantage of kept correct responses / its unfiltered expectation.
    pub correct_adv: (f64, f64),
    /// Measured mean advantage of kept wrong responses / its unfiltered expectation.
    pub wrong_adv: (f64, f64),
}

impl TheoremBin {
    /// The binomial standard error of the measured group survival, √(s(1−s)/n).
    pub fn group_survival_se(&self) -> f64 {
        let s = self.group_survival.0;
        (s * (1.0 - s) / self.groups as f64).sqrt()
    }
    /// α+ as it occurred: measured kept mean over the unfiltered expectation.
    pub fn alpha_plus(&self) -> f64 {
        self.correct_adv.0 / self.correct_adv.1
    }
    /// α− as it occurred.
    pub fn alpha_minus(&self) -> f64 {
        self.wrong_adv.0 / self.wrong_adv.1
    }
    /// α+ of Theorem 3.1 averaged over the bin's groups: 1 / predicted correct survival.
    pub fn alpha_plus_theory(&self) -> f64 {
        1.0 / self.correct_survival.1
    }
    /// α− of Theorem 3.1 averaged over the bin's groups.
    pub fn alpha_minus_theory(&self) -> f64 {
        1.0 / self.wrong_survival.1
    }
}

/// Bins probe records by estimated pass rate and compares them with Theorem 3.1. `adv(k)` as in
/// [`unfiltered_advantage`] (Theorem 3.1's maths: `rl_advantage::theory`).
pub fn theorem_bins(
    records: &[ProbeRecord],
    edges: &[f64],
    adv: &dyn Fn(usize) -> (f64, f64),
) -> Vec<TheoremBin> {
    let mut bins = Vec::new();
    for w in edges.windows(2) {
        let (lo, hi) = (w[0], w[1]);
        let last = hi >= edges[edges.len() - 1];
        let rs: Vec<&ProbeRecord> = records
            .iter()
            .filter(|r| {
                let p = r.pass_rate();
                p >= lo && (p < hi || (last && p <= hi))
            })
            .collect();
        if rs.is_empty() {
            continue;
        }
        let mut b = TheoremBin {
            range: (lo, hi),
            groups: rs.len(),
            ..TheoremBin::default()
        };
        let (mut kept, mut pred_g) = (0.0, 0.0);
        let (mut nc, mut kc, mut nw, mut kw) = (0.0, 0.0, 0.0, 0.0);
        let (mut pc, mut pc_s, mut pw, mut pw_s) = (0.0, 0.0, 0.0, 0.0);
        let (mut adv_c, mut adv_w, mut exp_c, mut exp_w) = (0.0, 0.0, 0.0, 0.0);
        let mut p_sum = 0.0;
        for r in &rs {
            let g = r.correct.len();
            let p = r.pass_rate();
            p_sum += p;
            pred_g += group_survival(p, g);
            pc += p;
            pc_s += p * correct_survival(p, g);
            pw += 1.0 - p;
            pw_s += (1.0 - p) * wrong_survival(p, g);
            let (ec, ew) = unfiltered_advantage(g, p, adv);
            exp_c += p * ec;
            exp_w += (1.0 - p) * ew;
            if r.kept {
                kept += 1.0;
            }
            for (c, a) in r.correct.iter().zip(&r.advantages) {
                if *c {
                    nc += 1.0;
                    if r.kept {
                        kc += 1.0;
                        adv_c += a;
                    }
                } else {
                    nw += 1.0;
                    if r.kept {
                        kw += 1.0;
                        adv_w += a;
                    }
                }
            }
        }
        let n = rs.len() as f64;
        b.p_mean = p_sum / n;
        b.group_survival = (kept / n, pred_g / n);
        b.correct_survival = (kc / nc, pc_s / pc);
        b.wrong_survival = (kw / nw, pw_s / pw);
        b.correct_adv = (adv_c / kc, exp_c / pc);
        b.wrong_adv = (adv_w / kw, exp_w / pw);
        bins.push(b);
    }
    bins
}

/// Bins with fewer groups are in the theorem table but not in its plot.
const MIN_PLOTTED: usize = 10;

/// Bin edges of the theorem table (estimated pass rates from the probe's samples).
pub const THEOREM_EDGES: [f64; 9] = [0.0, 0.05, 0.15, 0.3, 0.5, 0.7, 0.85, 0.95, 1.0];

fn theorem_section(
    md: &mut String,
    spec: &StudySpec,
    t: &Theorem,
    image: &Path,
) -> Result<Option<PathBuf>, TrainerError> {
    let setting = spec.setting(&t.setting);
    let demo = spec.demo(setting)?;
    let algo = format!("{}:probe", t.algorithm);
    let cs = compare_spec(
        spec,
        &setting.name,
        vec![algo.clone()],
        t.seeds.clone(),
        None,
    );
    let mut records = Vec::new();
    let mut done = Vec::new();
    for &seed in &t.seeds {
        if is_complete(&cs, &demo, &algo, seed) {
            records.extend(read_probe(&run_dir(&cs, seed, &algo).join("probe.jsonl"))?);
            done.push(seed);
        }
    }
    let _ = writeln!(
        md,
        "### Theorem 3.1 inside training ({} setting, `{algo}`, seeds {done:?} of {:?}, steps {:?}, {} extra samples per prompt)\n",
        setting.name, t.seeds, t.steps, t.samples
    );
    if records.is_empty() {
        let _ = writeln!(md, "No probed run is complete yet.\n");
        return Ok(None);
    }
    // The run's estimator and rewards give the advantage of a group with k correct of G.
    let cfg = run_config(&cs, &demo, &algo, done[0])?;
    let g = cfg.rollout.group_size;
    let estimator = cfg.advantage.build(g)?;
    let rewards = cfg.reward_map();
    let adv = |k: usize| -> (f64, f64) {
        let samples: Vec<Sample> = (0..g)
            .map(|i| {
                let c = i < k;
                let r = if c {
                    rewards.correct
                } else {
                    rewards.incorrect
                };
                Sample::new(GroupId(0), r, c)
            })
            .collect();
        let a = compute_batch(estimator.as_ref(), &samples, None)
            .map(|b| b.advantages)
            .unwrap_or_else(|_| vec![f64::NAN; g]);
        let c = if k > 0 { a[0] } else { f64::NAN };
        let w = if k < g { a[g - 1] } else { f64::NAN };
        (c, w)
    };
    let bins = theorem_bins(&records, &THEOREM_EDGES, &adv);
    // The probe must not change training: a probed run's metrics equal the unprobed run's.
    let plain = compare_spec(
        spec,
        &setting.name,
        vec![t.algorithm.clone()],
        done.clone(),
        None,
    );
    let (mut same, mut differ) = (Vec::new(), Vec::new());
    for &seed in &done {
        if !is_complete(&plain, &demo, &t.algorithm, seed) {
            continue;
        }
        let a = untimed(&run_dir(&cs, seed, &algo).join("metrics.jsonl"))?;
        let b = untimed(&run_dir(&plain, seed, &t.algorithm).join("metrics.jsonl"))?;
        if a == b {
            same.push(seed)
        } else {
            differ.push(seed)
        }
    }
    if !(same.is_empty() && differ.is_empty()) {
        let _ = writeln!(
            md,
            "Probed vs unprobed `{}` runs of the same seed, metrics without timing fields: identical for seeds {same:?}{}.\n",
            t.algorithm,
            if differ.is_empty() {
                String::new()
            } else {
                format!(", **different for seeds {differ:?}**")
            }
        );
    }
    let _ = writeln!(
        md,
        "{} probed groups (G = {g}). Survival = fraction kept by dynamic sampling, measured / predicted from each prompt's estimated p; Â = mean advantage of kept responses, measured / unfiltered expectation (exact binomial average of the run's estimator at each prompt's p); α± measured = the ratio of the two, next to Theorem 3.1's 1/(1 − p^(G−1)) and 1/(1 − (1−p)^(G−1)) averaged over the bin.\n",
        records.len()
    );
    let _ = writeln!(
        md,
        "| p̂ ({} samples) | groups | mean p̂ | group survival | correct survival | wrong survival | Â kept correct | Â kept wrong | α+ measured / theory | α− measured / theory | γ measured / theory |",
        t.samples
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|---|");
    let pair = |x: (f64, f64)| format!("{} / {}", f3(x.0), f3(x.1));
    for b in &bins {
        let _ = writeln!(
            md,
            "| [{:.2}, {:.2}{} | {} | {:.3} | {} ± {} / {} | {} | {} | {} | {} | {} | {} | {} |",
            b.range.0,
            b.range.1,
            if b.range.1 >= 1.0 { "]" } else { ")" },
            b.groups,
            b.p_mean,
            f3(b.group_survival.0),
            f3(b.group_survival_se()),
            f3(b.group_survival.1),
            pair(b.correct_survival),
            pair(b.wrong_survival),
            pair(b.correct_adv),
            pair(b.wrong_adv),
            pair((b.alpha_plus(), b.alpha_plus_theory())),
            pair((b.alpha_minus(), b.alpha_minus_theory())),
            pair((
                b.alpha_plus() / b.alpha_minus(),
                b.alpha_plus_theory() / b.alpha_minus_theory()
            )),
        );
    }
    let _ = writeln!(
        md,
        "\nGroup survival is shown ± its binomial standard error. The plot shows bins with at least {MIN_PLOTTED} groups (measured group survival with a ±2 s.e. band); the table shows every bin."
    );
    // Plot: survival and α± against p, measured per bin and Theorem 3.1's curves.
    let grid: Vec<f64> = (1..100).map(|i| i as f64 / 100.0).collect();
    let curve = |f: &dyn Fn(f64) -> f64| grid.iter().map(|&p| (p, f(p))).collect::<Vec<_>>();
    let plotted: Vec<&TheoremBin> = bins.iter().filter(|b| b.groups >= MIN_PLOTTED).collect();
    let measured = |f: &dyn Fn(&TheoremBin) -> f64| {
        plotted
            .iter()
            .map(|b| (b.p_mean, f(b)))
            .filter(|x| x.1.is_finite())
            .collect::<Vec<_>>()
    };
    let band: Vec<(f64, f64, f64)> = plotted
        .iter()
        .map(|b| {
            let (m, se) = (b.group_survival.0, b.group_survival_se());
            (b.p_mean, m - 2.0 * se, m + 2.0 * se)
        })
        .collect();
    let survival = Panel::new(
        "survival under dynamic sampling",
        "pass rate p",
        "fraction kept",
    )
    .with_series(Series::new("groups, measured", measured(&|b| b.group_survival.0)).with_band(band))
    .with_series(Series::new(
        "1 − p^G − (1−p)^G",
        curve(&|p| group_survival(p, g)),
    ))
    .with_series(Series::new(
        "correct, measured",
        measured(&|b| b.correct_survival.0),
    ))
    .with_series(Series::new(
        "1 − p^(G−1)",
        curve(&|p| correct_survival(p, g)),
    ))
    .with_series(Series::new(
        "wrong, measured",
        measured(&|b| b.wrong_survival.0),
    ))
    .with_series(Series::new(
        "1 − (1−p)^(G−1)",
        curve(&|p| wrong_survival(p, g)),
    ));
    let alphas = Panel::new("advantage amplification in training", "pass rate p", "α")
        .with_series(Series::new("α+ measured", measured(&|b| b.alpha_plus())))
        .with_series(Series::new(
            "α+ = 1/(1 − p^(G−1))",
            curve(&|p| 1.0 / correct_survival(p, g)),
        ))
        .with_series(Series::new("α− measured", measured(&|b| b.alpha_minus())))
        .with_series(Series::new(
            "α− = 1/(1 − (1−p)^(G−1))",
            curve(&|p| 1.0 / wrong_survival(p, g)),
        ))
        .with_y_range(0.8, 4.0);
    draw(image, &[survival, alphas], 2)?;
    Ok(Some(image.to_path_buf()))
}

/// A metrics file's lines as JSON without the timing fields.
fn untimed(path: &Path) -> Result<Vec<serde_json::Value>, TrainerError> {
    let mut lines: Vec<serde_json::Value> = rl_trainer::metrics::read_jsonl(path)?;
    for v in &mut lines {
        if let Some(o) = v.as_object_mut() {
            for f in rl_trainer::metrics::TIMING_FIELDS {
                o.remove(f);
            }
        }
    }
    Ok(lines)
}

/// Every run the study plans, with its status.
fn runs_section(md: &mut String, spec: &StudySpec) -> Result<(), TrainerError> {
    let _ = writeln!(md, "### Every planned run\n");
    let mut table: BTreeMap<(String, String), (Vec<u64>, Vec<u64>)> = BTreeMap::new();
    for (setting, algos, seeds) in plan(spec) {
        let demo = spec.demo(spec.setting(&setting))?;
        let cs = compare_spec(spec, &setting, algos.clone(), seeds.clone(), None);
        for a in &algos {
            let e = table.entry((setting.clone(), a.clone())).or_default();
            for &s in &seeds {
                if e.0.contains(&s) || e.1.contains(&s) {
                    continue;
                }
                if is_complete(&cs, &demo, a, s) {
                    e.0.push(s);
                } else {
                    e.1.push(s);
                }
            }
        }
    }
    let _ = writeln!(md, "| setting | run | complete seeds | missing seeds |");
    let _ = writeln!(md, "|---|---|---|---|");
    for ((setting, a), (done, missing)) in &table {
        let _ = writeln!(md, "| {setting} | `{a}` | {done:?} | {missing:?} |");
    }
    Ok(())
}

/// Mean of the finite values (NaN for none).
fn mean_of(xs: impl IntoIterator<Item = f64>) -> f64 {
    let (sum, n) = xs
        .into_iter()
        .filter(|x| x.is_finite())
        .fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 { f64::NAN } else { sum / n as f64 }
}

/// `x` with at most `decimals` decimals, trailing zeros dropped: 95, 98.75, 0.0125.
fn trimmed(x: f64, decimals: usize) -> String {
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// The interval's confidence in words: "95 %", "98.75 %", "98.33 %".
fn confidence_words(alpha: f64) -> String {
    format!("{} %", trimmed(100.0 * (1.0 - alpha), 2))
}

/// One method's paired statistics in a setting.
struct MethodStats {
    label: String,
    run: String,
    pairs: Pairs,
    /// Δ on the tier with the 95 % interval.
    p95: Paired,
    /// Δ on the tier with the decision interval (the correction's level).
    decision: Paired,
    /// Δ overall (all tiers) with the 95 % interval.
    overall: Paired,
    verdict: Verdict,
}

/// The methods layout of one setting: a row per method (paired Δ from the baseline, 95 % and
/// decision intervals, p), each method's verdict, the runs' cost and dynamics, the per-seed Δ,
/// and for the primary setting the conclusion line.
fn methods_section(
    md: &mut String,
    spec: &StudySpec,
    setting: &Setting,
    primary: bool,
) -> Result<(), TrainerError> {
    let tier = spec.tier.as_str();
    let base = spec.baseline();
    let planned = setting.seeds.len();
    let alpha = spec.decision_alpha();
    let m = spec.methods.len();
    let dci = format!("{} CI", confidence_words(alpha));
    let mut stats = Vec::new();
    for method in &spec.methods {
        let pairs = load_pairs(spec, setting, &setting.seeds, &method.run)?;
        let d = diffs(&pairs, Some(tier));
        let decision = Paired::at(&d, alpha);
        stats.push(MethodStats {
            label: method.label.clone(),
            run: method.run.clone(),
            p95: Paired::of(&d),
            verdict: classify(&decision, planned, spec.delta),
            decision,
            overall: Paired::of(&diffs(&pairs, None)),
            pairs,
        });
    }
    let _ = writeln!(
        md,
        "### {} setting{}: {}\n",
        setting.name,
        if primary { " (primary)" } else { "" },
        setting.description
    );
    let correction = match spec.correction {
        Correction::None => {
            "no multiple-comparison correction: each decision uses the 95 % interval".to_string()
        }
        Correction::Bonferroni => format!(
            "Bonferroni over {m} methods: each decision uses the {} interval (level {}/{m} = {}), so the chance of any false verdict of difference is at most {}",
            confidence_words(alpha),
            FAMILY_ALPHA,
            trimmed(alpha, 4),
            FAMILY_ALPHA
        ),
    };
    let _ = writeln!(
        md,
        "Δ = method − {} in final held-out {tier}-tier avg@k, paired by seed ({planned} pre-registered seeds); p from the two-sided paired t test, unadjusted; {correction}.\n",
        base.label
    );
    let _ = writeln!(
        md,
        "| method | run | pairs | {} {tier} | method {tier} | Δ {tier} (s.d.) | 95 % CI | {dci} | p | Δ overall, 95 % CI | verdict |",
        base.label
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|---|");
    let ci = |p: &Paired| format!("[{}, {}]", s3(p.lo), s3(p.hi));
    for st in &stats {
        let complete: Vec<(&RunResult, &RunResult)> = st
            .pairs
            .iter()
            .filter_map(|(_, a, b)| Some((a.as_ref()?, b.as_ref()?)))
            .collect();
        let base_mean = mean_of(complete.iter().map(|(a, _)| tier_avg(&a.last, tier)));
        let method_mean = mean_of(complete.iter().map(|(_, b)| tier_avg(&b.last, tier)));
        let word = match st.verdict {
            Verdict::NoInterval => "no interval yet",
            Verdict::Incomplete => "incomplete",
            Verdict::Better => "**better**",
            Verdict::Worse => "**worse**",
            Verdict::NoEffect => "no effect of ±δ",
            Verdict::NotDetectable => "not detectable",
        };
        let _ = writeln!(
            md,
            "| {} | `{}` | {}/{planned} | {} | {} | {} ({}) | {} | {} | {} | {} {} | {word} |",
            st.label,
            st.run,
            st.p95.n,
            f3(base_mean),
            f3(method_mean),
            s3(st.p95.mean),
            f3(st.p95.sd),
            ci(&st.p95),
            ci(&st.decision),
            f3(st.p95.p_value()),
            s3(st.overall.mean),
            ci(&st.overall),
        );
    }
    let _ = writeln!(md);
    for st in &stats {
        let _ = writeln!(
            md,
            "- {} (`{}`): {}",
            st.label,
            st.run,
            verdict_of(
                &st.decision,
                planned,
                spec.delta,
                &st.label,
                &base.label,
                &dci
            )
        );
    }
    // Cost and dynamics of every arm's complete runs.
    let _ = writeln!(
        md,
        "\nCost and dynamics, means over each run's complete seeds. Responses: generated in the whole run (the budget is reached within the last step); steps: optimizer updates made; amplified: fraction of trained responses whose advantage DAA amplified; p̂ < 0.4: fraction of trained mixed groups with p̂ < 0.4; group sizes: smallest and largest group of any step (\"—\": every group has G responses), and the fraction of steps whose groups differ in size; evaluation s.e.: the final {tier}-tier avg@k's standard error over prompts, and its sampling part √(E[p(1 − p)]/(kP)), the part that does not cancel between two runs on the same prompts.\n"
    );
    let _ = writeln!(
        md,
        "| run | complete seeds | responses | steps | amplified | p̂ < 0.4 | group sizes | evaluation s.e. total / sampling |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
    let mut arms: Vec<(String, Vec<&RunResult>)> = vec![(
        base.run.clone(),
        stats
            .first()
            .map(|st| st.pairs.iter().filter_map(|(_, a, _)| a.as_ref()).collect())
            .unwrap_or_default(),
    )];
    for st in &stats {
        arms.push((
            st.run.clone(),
            st.pairs.iter().filter_map(|(_, _, b)| b.as_ref()).collect(),
        ));
    }
    for (run, rs) in &arms {
        let sizes = rs.iter().filter_map(|r| r.group_sizes).fold(
            None,
            |acc: Option<(usize, usize)>, (lo, hi)| {
                Some(acc.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))))
            },
        );
        let se: Vec<(f64, f64)> = rs.iter().map(|r| tier_se(&r.last, tier)).collect();
        let _ = writeln!(
            md,
            "| `{run}` | {} | {} | {} | {} | {} | {} | {} / {} |",
            rs.len(),
            fixed(mean_of(rs.iter().map(|r| r.responses as f64)), 0),
            fixed(mean_of(rs.iter().map(|r| r.steps as f64)), 1),
            f3(mean_of(rs.iter().map(|r| r.frac_amplified))),
            f3(mean_of(rs.iter().map(|r| r.hard_kept))),
            sizes.map_or("—".into(), |(a, b)| format!(
                "{a}–{b}, {} of steps",
                f3(mean_of(rs.iter().map(|r| r.unequal_steps)))
            )),
            f4(mean_of(se.iter().map(|x| x.0))),
            f4(mean_of(se.iter().map(|x| x.1))),
        );
    }
    // Per seed.
    let _ = writeln!(
        md,
        "\nPer seed: step-0 and {} final {tier} avg@k, and each method's Δ.\n",
        base.label
    );
    let mut header = format!("| seed | step-0 {tier} | {} {tier} |", base.label);
    for st in &stats {
        let _ = write!(header, " Δ {} |", st.label);
    }
    let _ = writeln!(md, "{header}");
    let _ = writeln!(md, "|---|---|---|{}", "---|".repeat(stats.len()));
    let mut mismatched = Vec::new();
    for (i, &seed) in setting.seeds.iter().enumerate() {
        let base_run = stats.first().and_then(|st| st.pairs[i].1.as_ref());
        let start = base_run
            .or_else(|| stats.iter().find_map(|st| st.pairs[i].2.as_ref()))
            .map_or(f64::NAN, |r| tier_avg(&r.first, tier));
        let mut row = format!(
            "| {seed} | {} | {} |",
            f3(start),
            base_run.map_or("not run".into(), |r| f3(tier_avg(&r.last, tier)))
        );
        for st in &stats {
            let cell = match &st.pairs[i] {
                (_, Some(a), Some(b)) => {
                    if a.first != b.first {
                        mismatched.push(format!("`{}` seed {seed}", st.run));
                    }
                    s3(tier_avg(&b.last, tier) - tier_avg(&a.last, tier))
                }
                (_, _, None) => "not run".into(),
                (_, None, Some(_)) => "—".into(),
            };
            let _ = write!(row, " {cell} |");
        }
        let _ = writeln!(md, "{row}");
    }
    if !mismatched.is_empty() {
        let _ = writeln!(
            md,
            "\n**Step-0 evaluations differ from the {} run's for {}**: those runs did not start from the same warm-start.",
            base.label,
            mismatched.join(", ")
        );
    }
    let _ = writeln!(md);
    if primary {
        let _ = writeln!(md, "{}\n", conclusion(spec, setting, &stats, &dci)?);
    }
    Ok(())
}

/// The plain conclusion of the primary setting, with its scale: every method's verdict once
/// every pre-registered pair is complete, else that no conclusion is drawn yet.
fn conclusion(
    spec: &StudySpec,
    setting: &Setting,
    stats: &[MethodStats],
    dci: &str,
) -> Result<String, TrainerError> {
    let demo = spec.demo(setting)?;
    let model = demo.data()?.model;
    let planned = setting.seeds.len();
    let scale = format!(
        "a {:.1}M-parameter model on the embedded arithmetic task, {}, held-out avg@{} on {} prompts per tier, {planned} seeds",
        model.num_parameters() as f64 / 1e6,
        spec.budget_words(),
        demo.train.eval.k,
        demo.eval_per_tier
    );
    let done = stats.iter().map(|s| s.decision.n).min().unwrap_or(0);
    if stats
        .iter()
        .any(|s| matches!(s.verdict, Verdict::NoInterval | Verdict::Incomplete))
    {
        return Ok(format!(
            "**No conclusion yet** ({scale}): {done} of {planned} pre-registered pairs are complete for every method; the numbers above are interim, not the pre-registered test."
        ));
    }
    let tier = spec.tier.as_str();
    let base = spec.baseline().label;
    let delta = spec.delta;
    let parts: Vec<String> = stats
        .iter()
        .map(|s| {
            let p = &s.decision;
            let iv = format!("{:+.4}, {dci} [{:+.4}, {:+.4}]", p.mean, p.lo, p.hi);
            match s.verdict {
                Verdict::Better => format!("{} is better than {base} ({iv})", s.label),
                Verdict::Worse => format!("{} is worse than {base} ({iv})", s.label),
                Verdict::NoEffect => {
                    format!("{} has no effect of ±{delta} or more ({iv})", s.label)
                }
                _ => format!(
                    "{}: a difference is not detectable at this scale ({iv})",
                    s.label
                ),
            }
        })
        .collect();
    Ok(format!(
        "**Conclusion at this scale** ({scale}; not a claim about large models): on the {tier} tier, {}.",
        parts.join("; ")
    ))
}

/// `x` with `decimals` decimals, "—" when not finite.
fn fixed(x: f64, decimals: usize) -> String {
    if x.is_finite() {
        format!("{x:.decimals$}")
    } else {
        "—".into()
    }
}

fn f4(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.4}")
    } else {
        "—".into()
    }
}

/// Builds the study's markdown section (markers included); plots go to `img_dir`
/// (`study_ablation.png`, `study_theorem.png`), linked as `img/<name>`. Every planned run's
/// configuration is built first ([`StudySpec::check`]).
pub fn report(spec: &StudySpec, config: &Path, img_dir: &Path) -> Result<String, TrainerError> {
    spec.check()?;
    let (begin, end) = spec.markers();
    let mut md = String::new();
    let _ = writeln!(md, "{begin}");
    let primary_demo = spec.demo(spec.setting(&spec.primary))?;
    let _ = writeln!(
        md,
        "## {}\n\n{}\n",
        spec.title
            .as_deref()
            .unwrap_or("The pre-registered study: results"),
        crate::compare::scale_line(&primary_demo, &spec.budget_words())?
    );
    let primary = spec.setting(&spec.primary).clone();
    if spec.methods.is_empty() {
        let _ = writeln!(
            md,
            "Generated by `rlvr study --config {} --report docs/results.md` from the runs in `{}` (every run: {}; held-out avg@k evaluated before and after training). Δ = DA3PO − DAPO, paired by seed.\n",
            config.display(),
            spec.out.display(),
            spec.budget_words().trim_end_matches(" per run")
        );
        pairs_section(&mut md, spec, &primary, true)?;
        for s in spec.settings.iter().filter(|s| s.name != spec.primary) {
            pairs_section(&mut md, spec, s, false)?;
        }
    } else {
        let _ = writeln!(
            md,
            "Generated by `rlvr study --config {} --report docs/results.md` from the runs in `{}` (every run: {}, held-out avg@{} evaluated before and after training; each seed's runs share one supervised warm-start, the prompt order, the rollout seeds and the held-out prompts). Methods against {} (`{}`): {}.\n",
            config.display(),
            spec.out.display(),
            spec.budget_words().trim_end_matches(" per run"),
            primary_demo.train.eval.k,
            spec.baseline().label,
            spec.baseline().run,
            spec.methods
                .iter()
                .map(|m| format!("{} (`{}`)", m.label, m.run))
                .collect::<Vec<_>>()
                .join(", ")
        );
        methods_section(&mut md, spec, &primary, true)?;
        for s in spec.settings.iter().filter(|s| s.name != spec.primary) {
            methods_section(&mut md, spec, s, false)?;
        }
    }
    if let Some(a) = &spec.ablation {
        let img = img_dir.join("study_ablation.png");
        if ablation_section(&mut md, spec, a, &img)?.is_some() {
            let _ = writeln!(
                md,
                "\n![ablation: final avg@k against λ per τ](img/study_ablation.png)\n"
            );
        }
    }
    if let Some(t) = &spec.theorem {
        let img = img_dir.join("study_theorem.png");
        if theorem_section(&mut md, spec, t, &img)?.is_some() {
            let _ = writeln!(
                md,
                "\n![Theorem 3.1 inside training](img/study_theorem.png)\n"
            );
        }
    }
    runs_section(&mut md, spec)?;
    let _ = writeln!(md, "{end}");
    Ok(md)
}

/// Replaces the study's section of `path` (between its markers), or appends it.
pub fn write_section(spec: &StudySpec, path: &Path, section: &str) -> Result<(), TrainerError> {
    let (begin, end) = spec.markers();
    crate::compare::write_between(path, &begin, &end, section)
}
