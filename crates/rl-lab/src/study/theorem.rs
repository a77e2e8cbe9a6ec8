//! The Theorem 3.1 section: the probe's groups binned by estimated pass rate against the
//! theorem's closed forms.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rl_advantage::theory::{
    correct_survival, group_survival, unfiltered_advantage, wrong_survival,
};
use rl_advantage::{GroupId, Sample, compute_batch};
use rl_trainer::TrainerError;
use rl_trainer::probe_records::{ProbeRecord, read_probe};

use crate::compare::{is_complete, run_config, run_dir};
use crate::plot::{Panel, Series};

use super::results::f3;
use super::sections::{draw, untimed};
use super::spec::{StudySpec, Theorem, compare_spec};

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
pub(super) const MIN_PLOTTED: usize = 10;

/// Bin edges of the theorem table (estimated pass rates from the probe's samples).
pub const THEOREM_EDGES: [f64; 9] = [0.0, 0.05, 0.15, 0.3, 0.5, 0.7, 0.85, 0.95, 1.0];

pub(super) fn theorem_section(
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
        let a = compute_batch(&estimator, &samples, None)
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
