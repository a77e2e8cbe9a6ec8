//! Normalisers and seeded random draws shared by the schedulers and environments.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// `zn(x)`: z-score across the components of `x` (population standard deviation), then clip to
/// `[-clip, clip]` — HDS's `mean_std_norm`. A constant vector (std below 1e-12) maps to zeros.
pub fn zscore_clip(x: &[f32], clip: f32) -> Vec<f32> {
    if x.is_empty() {
        return Vec::new();
    }
    let n = x.len() as f64;
    let mean = x.iter().map(|&v| v as f64).sum::<f64>() / n;
    let var = x.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n;
    let std = var.sqrt();
    if std < 1e-12 {
        return vec![0.0; x.len()];
    }
    x.iter()
        .map(|&v| (((v as f64 - mean) / std) as f32).clamp(-clip, clip))
        .collect()
}

/// Running mean and variance (Welford), used to rescale the agent's reward.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunningMeanStd {
    /// Number of values seen.
    pub count: u64,
    /// Their mean.
    pub mean: f64,
    /// Sum of squared deviations from the mean.
    pub m2: f64,
}

impl RunningMeanStd {
    /// Adds one value.
    pub fn push(&mut self, x: f64) {
        self.count += 1;
        let delta = x - self.mean;
        self.mean += delta / self.count as f64;
        self.m2 += delta * (x - self.mean);
    }

    /// Population standard deviation of the values seen (0 before two values).
    pub fn std(&self) -> f64 {
        if self.count < 2 {
            0.0
        } else {
            (self.m2 / self.count as f64).sqrt()
        }
    }

    /// `x` centred by the running mean and divided by the running std (by 1 while the std is
    /// below 1e-8).
    pub fn normalize(&self, x: f64) -> f64 {
        let s = self.std();
        if s < 1e-8 {
            x - self.mean
        } else {
            (x - self.mean) / s
        }
    }
}

/// Mean and population standard deviation (divide by n) of a sample; NaN for an empty one.
pub fn mean_population_std(x: &[f64]) -> (f64, f64) {
    if x.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    let v = x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / n;
    (m, v.sqrt())
}

/// One standard normal draw (Box–Muller on two uniforms from `rng`).
pub fn standard_normal(rng: &mut ChaCha8Rng) -> f64 {
    // u1 in (0, 1] so that ln(u1) is finite.
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// Index drawn from the (not necessarily normalised, non-negative) weights `p`. Falls back to
/// uniform if the weights sum to zero or are not finite.
pub fn categorical(p: &[f32], rng: &mut ChaCha8Rng) -> usize {
    let total: f64 = p.iter().map(|&v| v.max(0.0) as f64).sum();
    if !(total > 0.0 && total.is_finite()) {
        return rng.random_range(0..p.len().max(1));
    }
    let mut u = rng.random::<f64>() * total;
    for (i, &v) in p.iter().enumerate() {
        u -= v.max(0.0) as f64;
        if u < 0.0 {
            return i;
        }
    }
    // Rounding: the last index with positive weight.
    p.iter().rposition(|&v| v > 0.0).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn zn_gives_mean_zero_std_one_and_clips() {
        let x = [1.0f32, 2.0, 3.0, 4.0, 10.0];
        let z = zscore_clip(&x, 100.0);
        let (m, s) = mean_population_std(&z.iter().map(|&v| v as f64).collect::<Vec<_>>());
        assert!(m.abs() < 1e-6, "mean {m}");
        assert!((s - 1.0).abs() < 1e-6, "std {s}");
        // Hand-computed: mean 4, population variance (9+4+1+0+36)/5 = 10, so the last entry is
        // 6/sqrt(10) = 1.897...
        assert!((z[4] - 6.0 / 10f32.sqrt()).abs() < 1e-6);
        // With clip 1.5 only that entry is clipped.
        let c = zscore_clip(&x, 1.5);
        assert_eq!(c[4], 1.5);
        assert_eq!(c[0], z[0]);
        assert_eq!(zscore_clip(&[2.0, 2.0, 2.0], 3.0), vec![0.0; 3]);
        // Two values always map to -1, +1.
        assert_eq!(zscore_clip(&[0.3, 7.0], 3.0), vec![-1.0, 1.0]);
    }

    #[test]
    fn running_mean_std_matches_batch_formula() {
        let xs = [3.0, -1.0, 4.0, 1.0, 5.0, 9.0, 2.0];
        let mut r = RunningMeanStd::default();
        xs.iter().for_each(|&x| r.push(x));
        let (m, s) = mean_population_std(&xs);
        assert!((r.mean - m).abs() < 1e-12 && (r.std() - s).abs() < 1e-12);
        assert!((r.normalize(9.0) - (9.0 - m) / s).abs() < 1e-12);
    }

    #[test]
    fn normal_and_categorical_draws_have_the_right_moments() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let xs: Vec<f64> = (0..20_000).map(|_| standard_normal(&mut rng)).collect();
        let (m, s) = mean_population_std(&xs);
        // Standard error of the mean is 1/sqrt(20000) = 0.007.
        assert!(m.abs() < 0.03 && (s - 1.0).abs() < 0.03, "{m} {s}");
        let p = [0.1f32, 0.0, 0.6, 0.3];
        let mut counts = [0usize; 4];
        for _ in 0..20_000 {
            counts[categorical(&p, &mut rng)] += 1;
        }
        assert_eq!(counts[1], 0);
        for (c, q) in counts.iter().zip(p) {
            assert!((*c as f32 / 20_000.0 - q).abs() < 0.015);
        }
    }
}
