//! Theorem 3.1 of DA3PO (α+, α−, γ) against closed forms written here, independently of
//! `rl_advantage::theory`, and the properties a wrong formula would break.
//!
//! Independent closed form. With n = G − 1, the geometric series gives
//!
//!   1 − x^n = (1 − x)(1 + x + … + x^(n−1)),
//!
//! so α+(p, G) = 1/(1 − p^n) = 1 / ((1 − p)·Σ_{k<n} p^k) and
//! α−(p, G) = 1/(1 − (1−p)^n) = 1 / (p·Σ_{k<n} (1−p)^k), γ = α+/α−.
//! The library computes 1 − x^n as −expm1(n·ln x); the sum form shares neither code nor formula
//! with it, and has no cancellation (every term is positive), so the two agree to a few ulps·n.
//!
//! The Monte Carlo with the real DAPO estimator and the real dynamic-sampling filter lives in
//! `crates/rl-sampler/tests/amplification.rs` (the crate that has both).

use proptest::prelude::*;
use rl_advantage::StdMode;
use rl_advantage::theory::{self, SimulationConfig};

/// 1 − x^n as (1 − x)·Σ_{k<n} x^k.
fn one_minus_pow_series(x: f64, n: usize) -> f64 {
    let (mut term, mut sum) = (1.0, 0.0);
    for _ in 0..n {
        sum += term;
        term *= x;
    }
    (1.0 - x) * sum
}

/// (α+, α−, γ) from the series form.
fn closed_form(p: f64, g: usize) -> (f64, f64, f64) {
    let n = g - 1;
    let a_plus = 1.0 / one_minus_pow_series(p, n);
    let a_minus = 1.0 / one_minus_pow_series(1.0 - p, n);
    (a_plus, a_minus, a_plus / a_minus)
}

fn rel_diff(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs()
}

/// Corollary 3.2 of DA3PO: G = 8, p = 0.1: α+ ≈ 1.00, α− ≈ 1.92, γ ≈ 0.52; G = 16: α− ≈ 1.26,
/// γ ≈ 0.79. Exact: (1−0.1)^7 = 0.4782969 → α− = 1/0.5217031 = 1.916799; 0.9^15 = 0.2058911 →
/// α− = 1.259273.
#[test]
fn corollary_3_2() {
    let a = theory::amplification(0.1, 8).unwrap();
    assert!((a.alpha_plus - 1.0).abs() < 1e-6);
    assert!((a.alpha_minus - 1.916799).abs() < 1e-6);
    assert!((a.gamma - 0.521703).abs() < 1e-6);
    let a = theory::amplification(0.1, 16).unwrap();
    assert!((a.alpha_minus - 1.259273).abs() < 1e-6);
    assert!((a.gamma - 0.794109).abs() < 1e-6);
    assert!(theory::amplification(0.0, 8).is_err());
    assert!(theory::amplification(0.5, 1).is_err());
}

/// γ table of algorithms.md §7.4 (computed there with python, 3 decimals).
#[test]
fn gamma_table_of_the_reference() {
    let ps = [0.05, 0.10, 0.20, 0.30, 0.50, 0.70, 0.90];
    let g8 = [0.302, 0.522, 0.790, 0.918, 1.000, 1.090, 1.917];
    let g16 = [0.537, 0.794, 0.965, 0.995, 1.000, 1.005, 1.259];
    for (i, &p) in ps.iter().enumerate() {
        assert!((theory::gamma(p, 8) - g8[i]).abs() < 5e-4, "p={p} G=8");
        assert!((theory::gamma(p, 16) - g16[i]).abs() < 5e-4, "p={p} G=16");
    }
}

/// G = 2: the single other response decides. A correct response's group survives iff the other
/// is wrong (probability 1 − p), a wrong one's iff the other is correct (p): α+ = 1/(1 − p),
/// α− = 1/p, γ = p/(1 − p).
#[test]
fn group_of_two() {
    for p in [0.01, 0.1, 0.25, 0.5, 0.6, 0.9, 0.99] {
        assert!(
            rel_diff(theory::alpha_plus(p, 2), 1.0 / (1.0 - p)) < 1e-12,
            "p={p}"
        );
        assert!(
            rel_diff(theory::alpha_minus(p, 2), 1.0 / p) < 1e-12,
            "p={p}"
        );
        assert!(
            rel_diff(theory::gamma(p, 2), p / (1.0 - p)) < 1e-12,
            "p={p}"
        );
    }
}

/// p = 1/2: both outcomes survive with probability 1 − 2^−n (n = G − 1), so
/// α+ = α− = 2^n/(2^n − 1) (integers, exact in f64 for n ≤ 52) and γ = 1.
#[test]
fn one_half_is_exact() {
    for g in 2..=50usize {
        let m = 1u64 << (g - 1);
        let want = m as f64 / (m - 1) as f64;
        assert!(rel_diff(theory::alpha_plus(0.5, g), want) < 1e-14, "G={g}");
        assert!(rel_diff(theory::alpha_minus(0.5, g), want) < 1e-14, "G={g}");
        assert!((theory::gamma(0.5, g) - 1.0).abs() < 1e-14, "G={g}");
    }
}

/// Limits as G grows, for fixed p in (0, 1): α+ − 1 = p^n/(1 − p^n) → 0 and likewise α−, so
/// γ → 1. Once max(p, 1−p)^n < 1e-13 (n = G − 1), all three are within 3e-13 of 1 (x/(1−x) <
/// 2x for x < 1/2). At the first G where the bound holds, and 20 beyond it.
#[test]
fn limits_as_the_group_grows() {
    for p in [0.02, 0.1, 0.3, 0.5, 0.7, 0.95] {
        let worst = f64::max(p, 1.0 - p);
        let n0 = ((1e-13f64).ln() / worst.ln()).ceil() as usize + 1;
        for g in [n0 + 1, n0 + 21] {
            let a = theory::amplification(p, g).unwrap();
            assert!(
                (a.alpha_plus - 1.0).abs() < 3e-13,
                "p={p} G={g}: {}",
                a.alpha_plus
            );
            assert!(
                (a.alpha_minus - 1.0).abs() < 3e-13,
                "p={p} G={g}: {}",
                a.alpha_minus
            );
            assert!((a.gamma - 1.0).abs() < 3e-13, "p={p} G={g}: {}", a.gamma);
        }
        // And not before: at G = 4, α− − 1 = (1−p)^3/(1 − (1−p)^3) is far from 0 for these p.
        let q = (1.0 - p) * (1.0 - p) * (1.0 - p);
        assert!(
            rel_diff(theory::alpha_minus(p, 4) - 1.0, q / (1.0 - q)) < 1e-9,
            "p={p}"
        );
    }
}

/// The library's own Monte Carlo (`rlvr theory --simulate`) agrees with the series form within
/// 3 standard errors. When an outcome's filter event is too rare to be sampled (p = 0.1, G = 8:
/// all 8 correct has probability 1e-8), the estimated SE is 0 and the MC resolution is
/// 1/(#responses), so the bound has a floor of 1e-5.
#[test]
fn library_monte_carlo_matches_the_closed_form() {
    for (p, g) in [(0.1, 8), (0.1, 16), (0.3, 8), (0.5, 4), (0.8, 8)] {
        let sim = theory::simulate(
            p,
            g,
            &SimulationConfig {
                groups: 200_000,
                seed: 7,
                std: StdMode::Sample,
            },
        )
        .unwrap();
        let (a_plus, a_minus, gamma) = closed_form(p, g);
        for (what, got, se, want) in [
            ("α+", sim.alpha_plus, sim.alpha_plus_se, a_plus),
            ("α−", sim.alpha_minus, sim.alpha_minus_se, a_minus),
            ("γ", sim.gamma, sim.gamma_se, gamma),
        ] {
            assert!(
                (got - want).abs() <= (3.0 * se).max(1e-5),
                "p={p} G={g} {what} {got} vs {want} (se {se})"
            );
        }
        assert!(sim.alpha_minus_se > 0.0 && sim.alpha_minus_se < 0.05);
    }
}

proptest! {
    #[test]
    fn alphas_and_gamma_match_the_series_form(p in 0.001f64..0.999, g in 2usize..200) {
        let a = theory::amplification(p, g).unwrap();
        let (a_plus, a_minus, gamma) = closed_form(p, g);
        prop_assert!(rel_diff(a.alpha_plus, a_plus) < 1e-12, "{} vs {}", a.alpha_plus, a_plus);
        prop_assert!(rel_diff(a.alpha_minus, a_minus) < 1e-12, "{} vs {}", a.alpha_minus, a_minus);
        prop_assert!(rel_diff(a.gamma, gamma) < 1e-12, "{} vs {}", a.gamma, gamma);
        prop_assert!(rel_diff(theory::alpha_plus(p, g), a_plus) < 1e-12);
        prop_assert!(rel_diff(theory::alpha_minus(p, g), a_minus) < 1e-12);
        prop_assert!(rel_diff(theory::gamma(p, g), gamma) < 1e-12);
    }

    /// Filtering only removes groups, so no response's expected signal shrinks: α± ≥ 1, and
    /// > 1 wherever the surplus p^n (resp. (1−p)^n) is representable next to 1.
    #[test]
    fn alphas_are_at_least_one(p in 0.001f64..0.999, g in 2usize..200) {
        let n = (g - 1) as i32;
        let (ap, am) = (theory::alpha_plus(p, g), theory::alpha_minus(p, g));
        prop_assert!(ap >= 1.0 && am >= 1.0, "{ap} {am}");
        if p.powi(n) > 1e-12 {
            prop_assert!(ap > 1.0, "{ap}");
        }
        if (1.0 - p).powi(n) > 1e-12 {
            prop_assert!(am > 1.0, "{am}");
        }
    }

    /// α+ increases with p (an easier prompt's correct answers are more often in all-correct
    /// groups, which are dropped), α− decreases. Strict where the change is representable:
    /// p2 − p1 > 1e-3 and the relevant p^n above 1e-10 (the change then exceeds 1e-13).
    #[test]
    fn alpha_plus_increases_and_alpha_minus_decreases_in_p(
        x in 0.001f64..0.999, y in 0.001f64..0.999, g in 2usize..200
    ) {
        let (p1, p2) = (x.min(y), x.max(y));
        let n = (g - 1) as i32;
        let (ap1, ap2) = (theory::alpha_plus(p1, g), theory::alpha_plus(p2, g));
        let (am1, am2) = (theory::alpha_minus(p1, g), theory::alpha_minus(p2, g));
        prop_assert!(ap1 <= ap2, "α+({p1}) = {ap1} > α+({p2}) = {ap2}");
        prop_assert!(am1 >= am2, "α−({p1}) = {am1} < α−({p2}) = {am2}");
        if p2 - p1 > 1e-3 {
            if p2.powi(n) > 1e-10 {
                prop_assert!(ap1 < ap2, "α+({p1}) = {ap1}, α+({p2}) = {ap2}");
            }
            if (1.0 - p1).powi(n) > 1e-10 {
                prop_assert!(am1 > am2, "α−({p1}) = {am1}, α−({p2}) = {am2}");
            }
        }
    }

    /// γ < 1 ⇔ p < 1/2 (hard prompts: wrong answers pushed away harder than right ones are pulled
    /// in), γ > 1 ⇔ p > 1/2. 1 − γ = (p^n − (1−p)^n)/(1 − p^n) vanishes near p = 1/2 and for large
    /// G; the strict inequality is checked where it is representable (|p − 1/2| > 1e-3 and
    /// max(p, 1−p)^n > 1e-10), the weak one everywhere.
    #[test]
    fn gamma_below_one_exactly_for_hard_prompts(p in 0.001f64..0.999, g in 2usize..200) {
        let n = (g - 1) as i32;
        let gamma = theory::gamma(p, g);
        let resolvable = (p - 0.5).abs() > 1e-3 && p.max(1.0 - p).powi(n) > 1e-10;
        if p < 0.5 {
            prop_assert!(gamma <= 1.0, "{gamma}");
            prop_assert!(!resolvable || gamma < 1.0, "{gamma}");
        } else if p > 0.5 {
            prop_assert!(gamma >= 1.0, "{gamma}");
            prop_assert!(!resolvable || gamma > 1.0, "{gamma}");
        }
        // Where resolvable, the side of 1 agrees with the series form's.
        let (_, _, want) = closed_form(p, g);
        if resolvable {
            prop_assert_eq!(gamma < 1.0, want < 1.0);
        }
    }

    /// More responses per group make uniform groups rarer: α± never grow with G.
    #[test]
    fn alphas_non_increasing_in_group_size(p in 0.001f64..0.999, g in 2usize..100) {
        prop_assert!(theory::alpha_plus(p, g + 1) <= theory::alpha_plus(p, g) + 1e-12);
        prop_assert!(theory::alpha_minus(p, g + 1) <= theory::alpha_minus(p, g) + 1e-12);
    }
}
