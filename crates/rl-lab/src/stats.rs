//! The few statistics the pre-registered studies need: Student's t distribution (for paired
//! confidence intervals and the power calculation) and the paired summary itself.
//!
//! The t CDF is computed from the regularised incomplete beta function,
//! F(t; ν) = 1 − ½ I_{ν/(ν+t²)}(ν/2, ½) for t ≥ 0, with the continued fraction of Numerical
//! Recipes (§6.4) and a Lanczos ln Γ; quantiles by bisection. Tests compare with published
//! table values (tests/stats.rs).

/// ln Γ(x) for x > 0 (Lanczos, g = 7, 9 coefficients; relative error < 1e-13).
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1−x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

const TINY: f64 = 1e-300;

/// `v`, kept at least `TINY` away from 0 (the modified Lentz algorithm divides by it).
fn away_from_zero(v: f64) -> f64 {
    if v.abs() < TINY { TINY } else { v }
}

/// One step of the modified Lentz algorithm with coefficient `aa`: updates `c` and `d` and
/// returns the factor d·c that multiplies the fraction.
fn lentz_step(aa: f64, c: &mut f64, d: &mut f64) -> f64 {
    *d = 1.0 / away_from_zero(1.0 + aa * *d);
    *c = away_from_zero(1.0 + aa / *c);
    *d * *c
}

/// The continued fraction of the incomplete beta function (modified Lentz).
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / away_from_zero(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..=300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        h *= lentz_step(m * (b - m) * x / ((qam + m2) * (a + m2)), &mut c, &mut d);
        let del = lentz_step(
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
            &mut c,
            &mut d,
        );
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The regularised incomplete beta function I_x(a, b), a, b > 0, x ∈ [0, 1].
pub fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

/// The CDF of Student's t with `df` degrees of freedom.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    let tail = 0.5 * inc_beta(df / 2.0, 0.5, df / (df + t * t));
    if t >= 0.0 { 1.0 - tail } else { tail }
}

/// The `p` quantile of Student's t with `df` degrees of freedom (bisection to 1e-12).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if !(p > 0.0 && p < 1.0 && df > 0.0) {
        return f64::NAN;
    }
    let (mut lo, mut hi) = (-1e4, 1e4);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-12 {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// Mean, sample standard deviation and two-sided 95 % t interval of a sample: the paired
/// differences of the study, or one configuration's per-seed values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Paired {
    /// Number of pairs.
    pub n: usize,
    /// Mean difference.
    pub mean: f64,
    /// Sample standard deviation of the differences (n − 1 denominator).
    pub sd: f64,
    /// Lower end of the confidence interval (95 % unless built with [`Paired::at`] and another level).
    pub lo: f64,
    /// Upper end of the confidence interval.
    pub hi: f64,
}

impl Paired {
    /// The two-sided p-value of the paired t test of mean 0 (NaN with fewer than two pairs or
    /// no spread).
    pub fn p_value(&self) -> f64 {
        if self.n < 2 || self.sd.is_nan() || self.sd <= 0.0 {
            return f64::NAN;
        }
        let t = self.mean / (self.sd / (self.n as f64).sqrt());
        2.0 * (1.0 - t_cdf(t.abs(), (self.n - 1) as f64))
    }

    /// The summary of `diffs` with the 95 % interval; with fewer than two pairs the s.d. and
    /// interval are NaN.
    pub fn of(diffs: &[f64]) -> Self {
        Self::at(diffs, 0.05)
    }

    /// The summary of `diffs` with the two-sided interval of level `alpha` (confidence
    /// 1 − α; e.g. α = 0.05/4 = 0.0125, a 98.75 % interval, for a Bonferroni correction over 4
    /// comparisons).
    pub fn at(diffs: &[f64], alpha: f64) -> Self {
        let n = diffs.len();
        let mean = if n == 0 {
            f64::NAN
        } else {
            diffs.iter().sum::<f64>() / n as f64
        };
        if n < 2 {
            return Self {
                n,
                mean,
                sd: f64::NAN,
                lo: f64::NAN,
                hi: f64::NAN,
            };
        }
        let sd = (diffs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
        let q = 1.0 - alpha / 2.0;
        let half = t_quantile(q, (n - 1) as f64) * sd / (n as f64).sqrt();
        Self {
            n,
            mean,
            sd,
            lo: mean - half,
            hi: mean + half,
        }
    }
}

/// The smallest number of pairs n ≥ 2 with n ≥ (t_{1−α/2, n−1} + t_{power, n−1})² · (sd/δ)²:
/// the usual paired-t sample size for detecting a mean difference `delta` with two-sided level
/// `alpha` and the given power (the central-t approximation of the noncentral power).
pub fn paired_sample_size(sd: f64, delta: f64, alpha: f64, power: f64) -> usize {
    let ratio = (sd / delta).powi(2);
    (2..10_000)
        .find(|&n| {
            let df = (n - 1) as f64;
            let z = t_quantile(1.0 - alpha / 2.0, df) + t_quantile(power, df);
            n as f64 >= z * z * ratio
        })
        .unwrap_or(10_000)
}
