//! Mixtures on the probability simplex and the additive-log-ratio (ALR) parameterisation used by
//! the HDS policy.
//!
//! A mixture over `K` domains is `a = softmax([z, 0])` for `K − 1` real logits `z` (the ALR map,
//! inverse `z_j = ln(a_j / a_K)`). The Jacobian of `z ↦ (a_1, …, a_{K−1})` has determinant
//! `∏_{i=1}^{K} a_i`, so a Gaussian `z ~ N(μ, diag σ²)` induces on the simplex the density
//!
//! ```text
//! log π(a) = Σ_{j<K} log N(z_j; μ_j, σ_j) − Σ_{i=1}^{K} log a_i .
//! ```

use crate::error::{DatamixError, Result};

/// `softmax([z, 0])`: the mixture for ALR logits `z` (length `K − 1`).
pub fn alr_inverse(z: &[f64]) -> Vec<f64> {
    let max = z.iter().copied().fold(0.0f64, f64::max);
    let mut e: Vec<f64> = z.iter().map(|&v| (v - max).exp()).collect();
    e.push((-max).exp());
    let s: f64 = e.iter().sum();
    e.iter().map(|v| v / s).collect()
}

/// `z_j = ln(a_j / a_K)`: the ALR logits of a strictly positive mixture.
pub fn alr(a: &[f64]) -> Vec<f64> {
    let last = a[a.len() - 1];
    a[..a.len() - 1].iter().map(|&v| (v / last).ln()).collect()
}

/// `Σ_j log N(z_j; μ_j, exp(log_std_j))`.
pub fn gaussian_log_density(z: &[f64], mu: &[f64], log_std: &[f64]) -> f64 {
    let half_ln_2pi = 0.5 * (2.0 * std::f64::consts::PI).ln();
    z.iter()
        .zip(mu)
        .zip(log_std)
        .map(|((&z, &m), &ls)| {
            let e = (z - m) / ls.exp();
            -0.5 * e * e - ls - half_ln_2pi
        })
        .sum()
}

/// Exact log-density on the simplex of `a = softmax([z, 0])`, `z ~ N(μ, diag exp(log_std)²)`:
/// `log N(z; μ, σ) − Σ_{i=1}^{K} log a_i` with `z = alr(a)`.
pub fn alr_log_density(a: &[f64], mu: &[f64], log_std: &[f64]) -> f64 {
    let z = alr(a);
    gaussian_log_density(&z, mu, log_std) - a.iter().map(|v| v.ln()).sum::<f64>()
}

/// `(1 − λ)·a + λ/K`: a mixture with a uniform floor `λ ∈ [0, 1]`.
pub fn with_uniform_floor(a: &[f32], floor: f32) -> Vec<f32> {
    let k = a.len() as f32;
    a.iter().map(|&v| (1.0 - floor) * v + floor / k).collect()
}

/// Checks that `p` is a mixture over `k` domains: right length, finite, non-negative, summing
/// to 1 within 1e-3. `what` names the value in the error.
pub fn check_mixture(p: &[f32], k: usize, what: &str) -> Result<()> {
    if p.len() != k {
        return Err(DatamixError::config(
            what,
            format!("has {} weights, expected one per domain ({k})", p.len()),
        ));
    }
    if p.iter().any(|v| !v.is_finite() || *v < 0.0) {
        return Err(DatamixError::config(
            what,
            format!("weights must be finite and >= 0, got {p:?}"),
        ));
    }
    let s: f32 = p.iter().sum();
    if (s - 1.0).abs() > 1e-3 {
        return Err(DatamixError::config(
            what,
            format!("weights must sum to 1, they sum to {s}"),
        ));
    }
    Ok(())
}

/// `p / Σp` for non-negative weights (uniform if they sum to 0).
pub fn normalized(p: &[f32]) -> Vec<f32> {
    let s: f32 = p.iter().sum();
    if s > 0.0 {
        p.iter().map(|v| v / s).collect()
    } else {
        vec![1.0 / p.len() as f32; p.len()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// log |det M| by Gaussian elimination with partial pivoting.
    fn log_abs_det(mut m: Vec<Vec<f64>>) -> f64 {
        let n = m.len();
        let mut acc = 0.0;
        for c in 0..n {
            let p = (c..n)
                .max_by(|&i, &j| m[i][c].abs().total_cmp(&m[j][c].abs()))
                .unwrap();
            m.swap(c, p);
            let piv = m[c][c];
            acc += piv.abs().ln();
            let pivot_row = m[c].clone();
            for row in m.iter_mut().skip(c + 1) {
                let f = row[c] / piv;
                for (x, p) in row.iter_mut().zip(&pivot_row).skip(c) {
                    *x -= f * p;
                }
            }
        }
        acc
    }

    #[test]
    fn alr_round_trips() {
        let a = [0.1, 0.2, 0.3, 0.4];
        let back = alr_inverse(&alr(&a));
        for (x, y) in a.iter().zip(back) {
            assert!((x - y).abs() < 1e-12);
        }
    }

    /// The Jacobian term −Σ log a_i equals −log|det ∂a_{1:K−1}/∂z| computed by central finite
    /// differences of the map z ↦ softmax([z, 0]).
    #[test]
    fn alr_jacobian_matches_finite_differences() {
        for z in [vec![0.3, -1.2, 0.7, 2.0], vec![-3.0, 0.0, 1.5], vec![0.0]] {
            let k1 = z.len();
            let h = 1e-6;
            let mut jac = vec![vec![0.0; k1]; k1];
            for j in 0..k1 {
                let mut zp = z.clone();
                let mut zm = z.clone();
                zp[j] += h;
                zm[j] -= h;
                let (ap, am) = (alr_inverse(&zp), alr_inverse(&zm));
                for i in 0..k1 {
                    jac[i][j] = (ap[i] - am[i]) / (2.0 * h);
                }
            }
            let a = alr_inverse(&z);
            let analytic: f64 = a.iter().map(|v| v.ln()).sum();
            let numeric = log_abs_det(jac);
            assert!(
                (analytic - numeric).abs() < 1e-6,
                "z={z:?}: {analytic} vs {numeric}"
            );
            // So the density is log N(z) − log|det J|.
            let mu = vec![0.1; k1];
            let ls = vec![-0.3; k1];
            let direct = gaussian_log_density(&z, &mu, &ls) - numeric;
            assert!((alr_log_density(&a, &mu, &ls) - direct).abs() < 1e-6);
        }
    }

    /// For K = 2 the simplex density integrates to 1 over a_1 ∈ (0, 1) (midpoint rule).
    #[test]
    fn alr_density_integrates_to_one_for_two_domains() {
        let (mu, ls) = ([0.4], [0.2f64.ln() + 1.0]);
        let n = 200_000;
        let mut total = 0.0;
        for i in 0..n {
            let a1 = (i as f64 + 0.5) / n as f64;
            total += alr_log_density(&[a1, 1.0 - a1], &mu, &ls).exp() / n as f64;
        }
        assert!((total - 1.0).abs() < 1e-4, "{total}");
    }

    #[test]
    fn floor_and_mixture_checks() {
        let p = with_uniform_floor(&[1.0, 0.0, 0.0, 0.0], 0.4);
        for (x, y) in p.iter().zip([0.7, 0.1, 0.1, 0.1]) {
            assert!((x - y).abs() < 1e-6, "{p:?}");
        }
        assert!(check_mixture(&p, 4, "m").is_ok());
        assert!(check_mixture(&p, 3, "m").is_err());
        assert!(check_mixture(&[0.5, 0.6], 2, "m").is_err());
        assert!(check_mixture(&[f32::NAN, 1.0], 2, "m").is_err());
        assert_eq!(normalized(&[0.0, 0.0]), vec![0.5, 0.5]);
    }
}
