//! The report's sections on the paired runs: the primary comparison, the ablation, the runs,
//! the methods and the conclusion.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rl_trainer::TrainerError;

use crate::compare::is_complete;
use crate::plot::{Panel, Series, save_png};
use crate::stats::{Paired, paired_sample_size};

use super::results::{
    Pairs, RunResult, Verdict, classify, diffs, f3, load_pairs, s3, tier_avg, tier_se, verdict,
    verdict_of,
};
use super::spec::{
    Ablation, Correction, FAMILY_ALPHA, Setting, StudySpec, ablation_algorithm, compare_spec, plan,
};

pub(super) fn pairs_section(
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

pub(super) fn ablation_section(
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

pub(super) fn draw(path: &Path, panels: &[Panel], cols: usize) -> Result<(), TrainerError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| TrainerError::io(dir, e))?;
    }
    save_png(path, panels, cols).map_err(|e| TrainerError::Metrics {
        path: path.display().to_string(),
        message: format!("drawing the plot: {e}"),
    })
}

/// A metrics file's lines as JSON without the timing fields.
pub(super) fn untimed(path: &Path) -> Result<Vec<serde_json::Value>, TrainerError> {
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
pub(super) fn runs_section(md: &mut String, spec: &StudySpec) -> Result<(), TrainerError> {
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
pub(super) fn mean_of(xs: impl IntoIterator<Item = f64>) -> f64 {
    let (sum, n) = xs
        .into_iter()
        .filter(|x| x.is_finite())
        .fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 { f64::NAN } else { sum / n as f64 }
}

/// `x` with at most `decimals` decimals, trailing zeros dropped: 95, 98.75, 0.0125.
pub(super) fn trimmed(x: f64, decimals: usize) -> String {
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// The interval's confidence in words: "95 %", "98.75 %", "98.33 %".
pub(super) fn confidence_words(alpha: f64) -> String {
    format!("{} %", trimmed(100.0 * (1.0 - alpha), 2))
}

/// One method's paired statistics in a setting.
pub(super) struct MethodStats {
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
pub(super) fn methods_section(
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
pub(super) fn conclusion(
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
pub(super) fn fixed(x: f64, decimals: usize) -> String {
    if x.is_finite() {
        format!("{x:.decimals$}")
    } else {
        "—".into()
    }
}

pub(super) fn f4(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.4}")
    } else {
        "—".into()
    }
}
