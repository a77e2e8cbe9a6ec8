//! Student's t and the paired summary (`rlvr::stats`) against published values.
//!
//! Quantiles: the two-sided 95 % and one-sided 80 % columns of the standard t table (e.g.
//! NIST/SEMATECH e-Handbook of Statistical Methods, §1.3.6.7.2), to the 4 decimals printed.

use rlvr::stats::{Paired, ln_gamma, paired_sample_size, t_cdf, t_quantile};

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
