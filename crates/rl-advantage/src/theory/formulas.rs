//! The closed forms of Theorem 3.1: α+, α−, γ and the survival probabilities.

use serde::{Deserialize, Serialize};

use crate::AdvantageError;

/// 1 − x^n computed without cancellation for x close to 1.
fn one_minus_pow(x: f64, n: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    -(n * x.ln()).exp_m1()
}

/// α+(p, G) = 1/(1 − p^(G−1)); +∞ at p = 1.
pub fn alpha_plus(p: f64, group_size: usize) -> f64 {
    1.0 / one_minus_pow(p, group_size as f64 - 1.0)
}

/// α−(p, G) = 1/(1 − (1−p)^(G−1)); +∞ at p = 0.
pub fn alpha_minus(p: f64, group_size: usize) -> f64 {
    1.0 / one_minus_pow(1.0 - p, group_size as f64 - 1.0)
}

/// γ(p, G) = α+/α− = (1 − (1−p)^(G−1)) / (1 − p^(G−1)).
pub fn gamma(p: f64, group_size: usize) -> f64 {
    let n = group_size as f64 - 1.0;
    one_minus_pow(1.0 - p, n) / one_minus_pow(p, n)
}

/// Probability that a group of G responses at success rate p survives dynamic sampling (is
/// mixed): 1 − p^G − (1−p)^G.
pub fn group_survival(p: f64, group_size: usize) -> f64 {
    let g = group_size as i32;
    1.0 - p.powi(g) - (1.0 - p).powi(g)
}

/// Probability that a correct response's group survives: not all of the other G−1 responses
/// are correct, 1 − p^(G−1) (= 1/α+).
pub fn correct_survival(p: f64, group_size: usize) -> f64 {
    1.0 - p.powi(group_size as i32 - 1)
}

/// Probability that a wrong response's group survives: not all of the other G−1 responses are
/// wrong, 1 − (1−p)^(G−1) (= 1/α−).
pub fn wrong_survival(p: f64, group_size: usize) -> f64 {
    1.0 - (1.0 - p).powi(group_size as i32 - 1)
}

/// The binomial probability C(n, k) p^k (1−p)^(n−k).
pub fn binomial_pmf(n: usize, k: usize, p: f64) -> f64 {
    let mut c = 1.0;
    for i in 0..k {
        c = c * (n - i) as f64 / (i + 1) as f64;
    }
    c * p.powi(k as i32) * (1.0 - p).powi((n - k) as i32)
}

/// Unfiltered expectations E[Â | correct] and E[Â | wrong] at pass rate p for groups of G, by
/// exact binomial enumeration over the number k of correct responses in the group, where
/// `adv(k)` gives the advantages (correct, wrong) of a group with k correct of G (any
/// estimator). The measured amplification of a run is its kept mean over these.
pub fn unfiltered_advantage(
    group_size: usize,
    p: f64,
    adv: &dyn Fn(usize) -> (f64, f64),
) -> (f64, f64) {
    let g = group_size;
    // A correct response's group has k − 1 correct among the other G − 1; a wrong one's, k.
    let correct = (1..=g)
        .map(|k| binomial_pmf(g - 1, k - 1, p) * adv(k).0)
        .sum();
    let wrong = (0..g).map(|k| binomial_pmf(g - 1, k, p) * adv(k).1).sum();
    (correct, wrong)
}

/// The closed form at one (p, G).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Amplification {
    /// G.
    pub group_size: usize,
    /// True success rate p.
    pub p: f64,
    /// α+.
    pub alpha_plus: f64,
    /// α−.
    pub alpha_minus: f64,
    /// γ = α+/α−.
    pub gamma: f64,
}

pub(crate) fn check(p: f64, group_size: usize) -> Result<(), AdvantageError> {
    if group_size < 2 {
        return Err(AdvantageError::InvalidConfig(rl_core::InvalidValue {
            field: "group_size",
            value: group_size.to_string(),
            expected: "an integer >= 2",
        }));
    }
    if !(p.is_finite() && p > 0.0 && p < 1.0) {
        return Err(AdvantageError::InvalidConfig(rl_core::InvalidValue {
            field: "p",
            value: p.to_string(),
            expected: "a success rate strictly between 0 and 1",
        }));
    }
    Ok(())
}

/// α+, α− and γ for 0 < p < 1 and G ≥ 2.
pub fn amplification(p: f64, group_size: usize) -> Result<Amplification, AdvantageError> {
    check(p, group_size)?;
    Ok(Amplification {
        group_size,
        p,
        alpha_plus: alpha_plus(p, group_size),
        alpha_minus: alpha_minus(p, group_size),
        gamma: gamma(p, group_size),
    })
}
