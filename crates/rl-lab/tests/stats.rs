//! Student's t and the paired summary (`rl_lab::stats`) against published values.
//!
//! Quantiles: the two-sided 95 % and one-sided 80 % columns of the standard t table (e.g.
//! NIST/SEMATECH e-Handbook of Statistical Methods, §1.3.6.7.2), to the 4 decimals printed.

use rl_lab::stats::{Paired, ln_gamma, paired_sample_size, t_cdf, t_quantile};

#[test]
fn t_quantiles_match_the_table() {
    for (p, df, table) in [
        (0.975, 1.0, 12.7062),
        (0.975, 4.0, 2.7764),
        (0.975, 5.0, 2.5706),
        (0.975, 9.0, 2.2622),
        (0.975, 10.0, 2.2281),
        (0.975, 30.0, 2.0423),
        (0.8, 4.0, 0.9410),
        (0.8, 5.0, 0.9195),
        (0.8, 9.0, 0.8834),
        (0.8, 10.0, 0.8791),
    ] {
        let q = t_quantile(p, df);
        assert!(
            (q - table).abs() < 6e-5,
            "t({p}, {df}) = {q}, table {table}"
        );
        assert!((t_cdf(q, df) - p).abs() < 1e-9);
        // Symmetry.
        assert!((t_quantile(1.0 - p, df) + q).abs() < 1e-8);
    }
    // Many degrees of freedom: the normal quantile 1.959964.
    assert!((t_quantile(0.975, 1e7) - 1.959964).abs() < 1e-5);
    // df = 1 is the Cauchy distribution: F(t) = 1/2 + atan(t)/π.
    for t in [-3.0, -0.5, 0.0, 0.7, 5.0] {
        let cauchy = 0.5 + f64::atan(t) / std::f64::consts::PI;
        assert!((t_cdf(t, 1.0) - cauchy).abs() < 1e-12);
    }
}

#[test]
fn ln_gamma_matches_factorials_and_sqrt_pi() {
    assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-12);
    assert!((ln_gamma(10.0) - 362_880f64.ln()).abs() < 1e-10);
    assert!((ln_gamma(1.0)).abs() < 1e-12);
}

/// The first comparison's paired hard-tier differences (docs/results.md, 5 seeds). By hand:
/// mean 0.041/5 = 0.0082; squared deviations sum to 6.908e-4, s.d. = √(6.908e-4/4) = 0.013142;
/// half-width 2.7764 · 0.013142/√5 = 0.016318 → [−0.008118, +0.024518].
#[test]
fn paired_interval_of_the_first_comparison() {
    let p = Paired::of(&[-0.005, 0.007, 0.030, 0.002, 0.007]);
    assert_eq!(p.n, 5);
    assert!((p.mean - 0.0082).abs() < 1e-12);
    assert!((p.sd - 0.013142).abs() < 1e-6);
    assert!((p.lo + 0.008118).abs() < 1e-5, "{p:?}");
    assert!((p.hi - 0.024518).abs() < 1e-5, "{p:?}");
    // t = 0.0082 / (0.013142/√5) = 1.3952 on 4 d.f. The closed form for 4 d.f.,
    // F(t) = 1/2 + (3/8)·(t/√(1 + t²/4))·(1 − t²/(12(1 + t²/4))), gives
    // F = 1/2 + 0.375 · 1.144281 · 0.890885 = 0.882283, so two-sided p = 0.235434.
    assert!((p.p_value() - 0.235434).abs() < 2e-5, "{}", p.p_value());
    let one = Paired::of(&[0.01]);
    assert!(one.sd.is_nan() && one.lo.is_nan());
}

/// The pre-registration's calculation (docs/results.md): s.d. 0.013, δ = 0.02, α = 0.05, power
/// 0.8. With table values: n = 5 needs (2.7764 + 0.9410)² · 0.4225 = 5.84 > 5; n = 6 needs
/// (2.5706 + 0.9195)² · 0.4225 = 5.15 ≤ 6 → 6. With the conservative s.d. 0.0202: n = 10 needs
/// (2.2622 + 0.8834)² · 1.0201 = 10.09 > 10; n = 11 needs (2.2281 + 0.8791)² · 1.0201 = 9.85
/// ≤ 11 → 11.
#[test]
fn paired_sample_size_of_the_pre_registration() {
    assert_eq!(paired_sample_size(0.013, 0.02, 0.05, 0.8), 6);
    assert_eq!(paired_sample_size(0.0202, 0.02, 0.05, 0.8), 11);
}

/// `Paired::at` with α = 0.05 is `Paired::of`; with α = 0.05/4 (Bonferroni over 4 methods) the
/// quantile is t_{0.99375}. With 2 degrees of freedom the t CDF has the closed form
/// F(t) = ½ + t/(2√(2 + t²)), so the two-sided level-α quantile is (1 − α)·√(2/(1 − (1 − α)²)):
/// α = 0.0125 gives 0.9875·√(2/0.02484375) = 0.9875·8.97235 = 8.86020. For the sample
/// [0.01, 0.02, 0.03] (mean 0.02, s.d. 0.01) the half-width is 8.86020·0.01/√3 = 0.051154.
#[test]
fn paired_intervals_at_other_levels() {
    let x = [-0.005, 0.007, 0.030, 0.002, 0.007];
    assert_eq!(Paired::at(&x, 0.05), Paired::of(&x));
    let p = Paired::at(&[0.01, 0.02, 0.03], 0.0125);
    assert!((p.mean - 0.02).abs() < 1e-12 && (p.sd - 0.01).abs() < 1e-12);
    assert!((p.hi - 0.02 - 0.051154).abs() < 1e-6, "{p:?}");
    assert!((p.lo - 0.02 + 0.051154).abs() < 1e-6, "{p:?}");
    // The p-value does not depend on the level.
    assert_eq!(p.p_value(), Paired::of(&[0.01, 0.02, 0.03]).p_value());
}

/// The hard-prompt study's calculation (docs/results.md, "Hard-prompt methods against DAPO"):
/// δ = 0.01, power 0.8, Bonferroni over 4 methods (α = 0.0125 two-sided), the DA3PO study's
/// observed paired s.d. 0.008568 (11 pairs) and its one-sided 80 % upper confidence bound
/// 0.008568·√(10/χ²₀.₂₀,₁₀) = 0.008568·√(10/6.1791) = 0.010900. The quantiles below are
/// checked here against Simpson integration of Student's t density (independent of the
/// incomplete-beta code):
/// * s.d. 0.008568: n = 11 needs (3.0382 + 0.8791)²·0.73418 = 11.27 > 11; n = 12 needs
///   (2.9809 + 0.8755)²·0.73418 = 10.92 ≤ 12 → 12;
/// * s.d. 0.010900: n = 16 needs (2.8366 + 0.8662)²·1.18810 = 16.29 > 16; n = 17 needs
///   (2.8131 + 0.8647)²·1.18810 = 16.07 ≤ 17 → 17.
#[test]
fn paired_sample_size_of_the_hard_prompt_study() {
    assert_eq!(paired_sample_size(0.008568, 0.01, 0.0125, 0.8), 12);
    assert_eq!(paired_sample_size(0.010900, 0.01, 0.0125, 0.8), 17);
    // F(t) = ½ + ∫₀ᵗ Γ((ν+1)/2)/(√(νπ)Γ(ν/2))·(1 + x²/ν)^(−(ν+1)/2) dx, Simpson, 20,000 steps.
    let cdf = |t: f64, df: f64| {
        let c = (ln_gamma((df + 1.0) / 2.0) - ln_gamma(df / 2.0)).exp()
            / (df * std::f64::consts::PI).sqrt();
        let f = |x: f64| c * (1.0 + x * x / df).powf(-(df + 1.0) / 2.0);
        let n = 20_000;
        let h = t / n as f64;
        let inner: f64 = (1..n)
            .map(|i| f(i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 })
            .sum();
        0.5 + h / 3.0 * (f(0.0) + inner + f(t))
    };
    for (p, df, value) in [
        (0.99375, 10.0, 3.0382),
        (0.99375, 11.0, 2.9809),
        (0.99375, 15.0, 2.8366),
        (0.99375, 16.0, 2.8131),
        (0.8, 10.0, 0.8791),
        (0.8, 11.0, 0.8755),
        (0.8, 15.0, 0.8662),
        (0.8, 16.0, 0.8647),
    ] {
        // The 4-decimal value is within 5e-5 of the quantile: F differs from p by at most
        // 5e-5 times the density (< 0.3).
        assert!((cdf(value, df) - p).abs() < 2e-5, "F({value}; {df}) vs {p}");
        assert!((t_quantile(p, df) - value).abs() < 6e-5, "t({p}, {df})");
    }
}
