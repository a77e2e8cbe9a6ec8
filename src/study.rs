//! The pre-registered DA3PO vs DAPO study (docs/results.md, "Does DA3PO help on hard prompts?").
//!
//! A [`StudySpec`] (TOML, `configs/study_da3po.toml`) names task settings (demo overrides and
//! seeds), the primary comparison, the λ/τ ablation and the theorem probe. [`run`] trains every
//! run that has not finished with its current configuration — in the order theorem probe,
//! primary pairs, other settings, ablation — and stops starting runs at a time limit, so the
//! study spreads over several sittings. [`report`] rebuilds the markdown section, with the
//! paired 95 % intervals, the ablation plot and the theorem table and plot, from whatever runs
//! exist; missing runs are listed as such.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use burn::tensor::backend::AutodiffBackend;
pub use rl_advantage::theory::unfiltered_advantage;
use rl_advantage::theory::{correct_survival, group_survival, wrong_survival};
use rl_advantage::{GroupId, Sample, compute_batch};
use rl_trainer::config::ProbeSection;
use rl_trainer::probe::{ProbeRecord, read_probe};
use rl_trainer::{EvalReport, StepMetrics, TrainerError, read_metrics};
use serde::Deserialize;

use crate::compare::{
    CompareSpec, evals, hard_mixed_fraction, is_complete, run_all, run_config, run_dir,
};
use crate::demo::ArithmeticDemo;
use crate::plot::{Panel, Series, save_png};
use crate::stats::{Paired, paired_sample_size};

const BEGIN: &str = "<!-- rlvr study: begin -->";
const END: &str = "<!-- rlvr study: end -->";

/// The study, as written in its TOML file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudySpec {
    /// Folder of the runs (one sub-folder per setting).
    pub out: PathBuf,
    /// Optimizer steps of every run (the comparison budget).
    pub steps: usize,
    /// The difference the study is powered to detect (hard-tier avg@k).
    pub delta: f64,
    /// The tier of the primary metric.
    pub tier: String,
    /// The setting of the primary comparison.
    pub primary: String,
    /// Task settings, in report order.
    pub settings: Vec<Setting>,
    /// The λ/τ ablation.
    pub ablation: Option<Ablation>,
    /// The theorem probe.
    pub theorem: Option<Theorem>,
}

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
        if spec.steps == 0 {
            return Err(TrainerError::Config {
                field: "steps".into(),
                message: "0 (must be >= 1)".into(),
            });
        }
        Ok(spec)
    }

    fn setting(&self, name: &str) -> &Setting {
        self.settings
            .iter()
            .find(|s| s.name == name)
            .unwrap_or(&self.settings[0])
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
    let pair = || vec!["dapo".to_string(), "da3po".to_string()];
    let mut out = Vec::new();
    if let Some(t) = &spec.theorem {
        out.push((
            t.setting.clone(),
            vec![format!("{}:probe", t.algorithm)],
            t.seeds.clone(),
        ));
    }
    let primary = spec.setting(&spec.primary);
    out.push((primary.name.clone(), pair(), primary.seeds.clone()));
    for s in spec.settings.iter().filter(|s| s.name != spec.primary) {
        out.push((s.name.clone(), pair(), s.seeds.clone()));
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

/// The comparison spec of one setting.
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
        rollout_budget: None,
        budget_steps: spec.steps,
        eval_every: 0,
        target: 1.0,
        out: spec.out.join(setting),
        steps: Some(spec.steps),
        probe,
        deadline,
    }
}

/// Trains every run of the study that is not complete; no run is started after `deadline`.
pub fn run<B: AutodiffBackend>(
    spec: &StudySpec,
    device: &B::Device,
    deadline: Option<Instant>,
    log: &mut dyn FnMut(String),
) -> Result<(), TrainerError> {
    for (setting, algos, seeds) in plan(spec) {
        let demo = setting_demo(spec.setting(&setting))?;
        let cs = compare_spec(spec, &setting, algos, seeds, deadline);
        run_all::<B>(&cs, &demo, device, &mut |line| {
            log(format!("[{setting}] {line}"))
        })?;
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
}

fn tier_avg(e: &EvalReport, tier: &str) -> f64 {
    e.tiers.get(tier).map_or(f64::NAN, |t| t.avg_at_k)
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
    Ok(Some(RunResult {
        responses: last.1,
        first: first.2.clone(),
        last: last.2.clone(),
        hard_kept: hard_mixed_fraction(&train),
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

/// The paired DAPO/DA3PO results of one setting: per seed (seed, DAPO, DA3PO).
type Pairs = Vec<(u64, Option<RunResult>, Option<RunResult>)>;

fn load_pairs(
    spec: &StudySpec,
    setting: &Setting,
    seeds: &[u64],
    other: &str,
) -> Result<Pairs, TrainerError> {
    let demo = setting_demo(setting)?;
    let cs = compare_spec(
        spec,
        &setting.name,
        vec!["dapo".into(), other.into()],
        seeds.to_vec(),
        None,
    );
    seeds
        .iter()
        .map(|&s| {
            Ok((
                s,
                load_run(&cs, &demo, "dapo", s)?,
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

/// The plain-language verdict on a paired interval, given how many pairs were planned.
pub fn verdict(p: &Paired, planned: usize, delta: f64) -> String {
    if !(p.lo.is_finite() && p.hi.is_finite()) {
        return format!(
            "**No interval yet:** {} complete pair(s) of {planned}; an interval needs two.",
            p.n
        );
    }
    if p.n < planned {
        return format!(
            "**Incomplete: {} of {planned} pre-registered pairs.** No conclusion is drawn; the \
             interval below is an interim look, not the pre-registered test.",
            p.n
        );
    }
    if p.lo > 0.0 {
        let small = if p.hi < delta {
            format!(
                " The interval also excludes gains of {delta} or more: the effect is smaller \
                 than the one the study was powered for."
            )
        } else {
            String::new()
        };
        format!(
            "**Confirmed:** DA3PO beats DAPO (mean {:+.4}, 95 % CI [{:+.4}, {:+.4}] excludes 0).{small}",
            p.mean, p.lo, p.hi
        )
    } else if p.hi < 0.0 {
        format!(
            "**Refuted:** DA3PO is worse than DAPO (mean {:+.4}, 95 % CI [{:+.4}, {:+.4}]).",
            p.mean, p.lo, p.hi
        )
    } else if p.lo > -delta && p.hi < delta {
        format!(
            "**No effect of ±{delta} or more:** the 95 % CI [{:+.4}, {:+.4}] contains 0 and \
             excludes ±{delta}.",
            p.lo, p.hi
        )
    } else {
        format!(
            "**Not detectable at this scale:** the 95 % CI [{:+.4}, {:+.4}] contains 0 and \
             reaches ±{delta}.",
            p.lo, p.hi
        )
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
    let demo = setting_demo(setting)?;
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
        let demo = setting_demo(spec.setting(&setting))?;
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

/// Builds the study's markdown section (markers included); plots go to `img_dir`
/// (`study_ablation.png`, `study_theorem.png`), linked as `img/<name>`.
pub fn report(spec: &StudySpec, config: &Path, img_dir: &Path) -> Result<String, TrainerError> {
    let mut md = String::new();
    let _ = writeln!(md, "{BEGIN}");
    let primary_demo = setting_demo(spec.setting(&spec.primary))?;
    let _ = writeln!(
        md,
        "## The pre-registered study: results\n\n{}\n",
        crate::compare::scale_line(
            &primary_demo,
            &format!("{} optimizer steps per run", spec.steps)
        )?
    );
    let _ = writeln!(
        md,
        "Generated by `rlvr study --config {} --report docs/results.md` from the runs in `{}` (every run: {} optimizer steps; held-out avg@k evaluated before and after training). Δ = DA3PO − DAPO, paired by seed.\n",
        config.display(),
        spec.out.display(),
        spec.steps
    );
    let primary = spec.setting(&spec.primary).clone();
    pairs_section(&mut md, spec, &primary, true)?;
    for s in spec.settings.iter().filter(|s| s.name != spec.primary) {
        pairs_section(&mut md, spec, s, false)?;
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
    let _ = writeln!(md, "{END}");
    Ok(md)
}

/// Replaces the study section of `path` (between its markers), or appends it.
pub fn write_section(path: &Path, section: &str) -> Result<(), TrainerError> {
    crate::compare::write_between(path, BEGIN, END, section)
}
