//! A study's finished runs read back (per seed and arm) and the verdicts on their paired
//! differences.

use rl_trainer::tasks::demo::ArithmeticDemo;
use rl_trainer::{EvalReport, StepMetrics, TrainerError, read_metrics};

use crate::compare::{CompareSpec, evals, hard_mixed_fraction, is_complete, run_dir};
use crate::stats::Paired;

use super::spec::{Setting, StudySpec, compare_spec};

/// A finished run's numbers.
#[derive(Clone, Debug)]
pub(super) struct RunResult {
    pub(super) responses: u64,
    pub(super) first: EvalReport,
    pub(super) last: EvalReport,
    /// Fraction of trained mixed groups with p̂ < 0.4.
    pub(super) hard_kept: f64,
    /// Optimizer steps made (the last evaluation's step).
    pub(super) steps: usize,
    /// Mean over training steps of the fraction of trained responses DAA amplified.
    pub(super) frac_amplified: f64,
    /// Smallest and largest group of the run (`group_sizes`; none without a rollout budget).
    pub(super) group_sizes: Option<(usize, usize)>,
    /// Fraction of training steps whose groups differ in size (an adaptive budget acting).
    pub(super) unequal_steps: f64,
}

pub(super) fn tier_avg(e: &EvalReport, tier: &str) -> f64 {
    e.tiers.get(tier).map_or(f64::NAN, |t| t.avg_at_k)
}

/// The evaluation's standard error of a tier's avg@k, over prompts (total), and its sampling
/// part √(E[p(1 − p)] / (k·P)), the part that more samples per prompt shrink and that does not
/// cancel in a difference of two runs on the same prompts (NaN without the noise split).
pub(super) fn tier_se(e: &EvalReport, tier: &str) -> (f64, f64) {
    e.tiers.get(tier).map_or((f64::NAN, f64::NAN), |t| {
        let sampling = t.noise.map_or(f64::NAN, |n| {
            (n.within / (t.k.max(1) * t.prompts.max(1)) as f64).sqrt()
        });
        (t.avg_std_error, sampling)
    })
}

pub(super) fn load_run(
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

pub(super) fn f3(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.3}")
    } else {
        "—".into()
    }
}

pub(super) fn s3(x: f64) -> String {
    if x.is_finite() {
        format!("{x:+.4}")
    } else {
        "—".into()
    }
}

/// The paired results of one setting: per seed (seed, baseline run, other run).
pub(super) type Pairs = Vec<(u64, Option<RunResult>, Option<RunResult>)>;

/// The baseline's and `other`'s complete runs of each seed (`None`: not complete).
pub(super) fn load_pairs(
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

pub(super) fn diffs(pairs: &Pairs, tier: Option<&str>) -> Vec<f64> {
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
