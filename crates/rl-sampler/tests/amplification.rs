//! DA3PO Theorem 3.1 measured with the real pieces: `rl_advantage`'s DAPO estimator (GRPO
//! z-scores, sample std) on Bernoulli groups with ±1 rewards, and this crate's dynamic-sampling
//! filter (`FilterConfig::from_name("dynamic_sampling")`). The expected values are the closed
//! form written here, not `rl_advantage::theory`.
//!
//! What is measured. For an outcome (correct, say), over N independent groups j with c_j correct
//! responses, S_j the sum of their advantages and K_j ∈ {0, 1} the filter's decision:
//!
//!   unfiltered mean advantage of a correct response  m_all  = Σ_j S_j / Σ_j c_j,
//!   mean advantage of a kept correct response        m_kept = Σ_j K_j S_j / Σ_j K_j c_j,
//!   α̂+ = m_kept / m_all.
//!
//! "Unfiltered" must be the per-response mean over *every* sampled correct response, those of
//! the groups the filter drops included (they carry the advantage the estimator gives a uniform
//! group, 0). Then, as N → ∞,
//!
//!   α̂+ → (E[K S]/E[K c]) / (E[S]/E[c]) = E[c]/E[K c]               (E[K S] = E[S]: K = 0 only
//!                                                                    for uniform groups, S = 0)
//!        = G p / (G p − G·p^G)                                     (K = 0 with c > 0 only when
//!                                                                    all G are correct, c = G)
//!        = 1 / (1 − p^(G−1)) = α+(p, G),
//!
//! and likewise α̂− → 1/(1 − (1−p)^(G−1)) = α−. (Weighting groups instead of responses — the
//! mean over groups of each group's mean advantage — converges to something else.) A filter
//! that dropped mixed groups, or an estimator that gave uniform groups a non-zero advantage,
//! moves α̂± away from these values.
//!
//! Standard error: α̂ = (A/B)/(C/D) with the group means A = mean(K S), B = mean(K c),
//! C = mean(S), D = mean(c). Groups are independent, so by the delta method
//! Var(α̂) ≈ (1/N²)·Σ_j ψ_j², with the influence ψ_j = α̂·(K_j S_j/A − K_j c_j/B − S_j/C + c_j/D)
//! (Σ_j ψ_j = 0 exactly). This needs enough dropped groups of each kind for the normal
//! approximation, so N is sized for at least 100 expected all-correct and all-wrong groups.

use rl_advantage::{AdvantageEstimator, EstimatorConfig, GroupId};
use rl_sampler::FilterConfig;

/// SplitMix64 (Steele, Lea, Flood 2014): a small seeded generator, enough for Bernoulli draws.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1) with 53 random bits.
    fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// Per-group sums for one outcome.
#[derive(Default, Clone, Copy)]
struct GroupSums {
    /// Sum of the advantages of this outcome's responses.
    s: f64,
    /// Number of this outcome's responses.
    c: f64,
    /// Kept by the filter.
    k: bool,
}

/// α̂ and its delta-method standard error from per-group sums (see the module docs).
fn ratio_and_se(groups: &[GroupSums]) -> (f64, f64) {
    let n = groups.len() as f64;
    let kf = |g: &GroupSums| if g.k { 1.0 } else { 0.0 };
    let a = groups.iter().map(|g| kf(g) * g.s).sum::<f64>() / n;
    let b = groups.iter().map(|g| kf(g) * g.c).sum::<f64>() / n;
    let c = groups.iter().map(|g| g.s).sum::<f64>() / n;
    let d = groups.iter().map(|g| g.c).sum::<f64>() / n;
    let alpha = (a / b) / (c / d);
    let var: f64 = groups
        .iter()
        .map(|g| {
            let psi = alpha * (kf(g) * g.s / a - kf(g) * g.c / b - g.s / c + g.c / d);
            psi * psi
        })
        .sum::<f64>()
        / (n * n);
    (alpha, var.sqrt())
}

struct Measured {
    alpha_plus: (f64, f64),
    alpha_minus: (f64, f64),
    kept: usize,
}

/// Samples `n` groups of G Bernoulli(p) responses with ±1 rewards, runs the real estimator and
/// the real filter on each, and measures α̂±.
fn measure(p: f64, g: usize, n: usize, rng: &mut SplitMix64) -> Measured {
    let estimator = EstimatorConfig::from_name("dapo")
        .unwrap()
        .build(g)
        .unwrap();
    let filter = FilterConfig::from_name("dynamic_sampling")
        .unwrap()
        .build()
        .unwrap();
    let mut rewards = vec![0.0; g];
    let mut correct = vec![false; g];
    let mut adv = vec![0.0; g];
    let mut plus = Vec::with_capacity(n);
    let mut minus = Vec::with_capacity(n);
    let mut kept = 0;
    for j in 0..n {
        for i in 0..g {
            correct[i] = rng.uniform() < p;
            rewards[i] = if correct[i] { 1.0 } else { -1.0 };
        }
        estimator
            .group_advantages(GroupId(j as u64), &rewards, &correct, &mut adv)
            .unwrap();
        let k = filter.keep(&rewards, &correct);
        kept += usize::from(k);
        let (mut pos, mut neg) = (
            GroupSums {
                k,
                ..Default::default()
            },
            GroupSums {
                k,
                ..Default::default()
            },
        );
        for i in 0..g {
            let o = if correct[i] { &mut pos } else { &mut neg };
            o.s += adv[i];
            o.c += 1.0;
        }
        plus.push(pos);
        minus.push(neg);
    }
    Measured {
        alpha_plus: ratio_and_se(&plus),
        alpha_minus: ratio_and_se(&minus),
        kept,
    }
}

/// Independent closed form: α+ = 1/(1 − p^(G−1)), α− = 1/(1 − (1−p)^(G−1)).
fn closed_form(p: f64, g: usize) -> (f64, f64) {
    let n = (g - 1) as i32;
    (1.0 / (1.0 - p.powi(n)), 1.0 / (1.0 - (1.0 - p).powi(n)))
}

/// Groups sampled per case at most (time bound: ≈ 1 s for all cases in a debug build).
const MAX_GROUPS: usize = 150_000;
/// Expected number of dropped all-correct and all-wrong groups, each, at least.
const MIN_DROPPED: f64 = 100.0;

/// Random (G, p), seeded. G is uniform in 2..=10; p is uniform on the part of [0.02, 0.98] where
/// `MAX_GROUPS` groups give `MIN_DROPPED` expected uniform groups of each kind:
/// min(p, 1−p)^G ≥ MIN_DROPPED/MAX_GROUPS.
fn cases(seed: u64, count: usize) -> Vec<(usize, f64, usize)> {
    let mut rng = SplitMix64(seed);
    let mut out = Vec::new();
    while out.len() < count {
        let g = 2 + (rng.next_u64() % 9) as usize;
        let lo = (MIN_DROPPED / MAX_GROUPS as f64)
            .powf(1.0 / g as f64)
            .max(0.02);
        if lo >= 0.5 {
            continue;
        }
        let p = lo + (1.0 - 2.0 * lo) * rng.uniform();
        let rarest = p.min(1.0 - p).powi(g as i32);
        let n = ((MIN_DROPPED / rarest).ceil() as usize).clamp(20_000, MAX_GROUPS);
        out.push((g, p, n));
    }
    out
}

#[test]
fn dynamic_sampling_amplifies_by_the_closed_form_alphas() {
    let mut rng = SplitMix64(0x0DA3);
    for (g, p, n) in cases(2026, 6) {
        let m = measure(p, g, n, &mut rng);
        let (want_plus, want_minus) = closed_form(p, g);
        // Expected kept fraction of groups: 1 − p^G − (1−p)^G.
        assert!(m.kept > 0 && m.kept < n, "G={g} p={p}: kept {}", m.kept);
        for (what, (got, se), want) in [
            ("α+", m.alpha_plus, want_plus),
            ("α−", m.alpha_minus, want_minus),
        ] {
            assert!(
                se > 0.0,
                "G={g} p={p} {what}: SE 0 (no dropped group of that kind)"
            );
            assert!(
                (got - want).abs() <= 3.0 * se,
                "G={g} p={p:.4} N={n} {what}: measured {got:.6} ± {se:.2e}, closed form {want:.6} \
                 ({:.1} SE)",
                (got - want) / se
            );
        }
    }
}
