//! A millisecond-scale mixing environment (hds.md §12.7): K linear-regression tasks share one
//! parameter vector θ ∈ R^d.
//!
//! Clean domain `i` has targets `y = x·θ*_i + 0.1·ξ` with `θ*_i = θ̄ + spread·u_i` (a cluster
//! around `θ̄`); the last domain is pure noise, `y = noise_std·ξ` independent of `x`
//! (`x, ξ, u_i, θ̄ ~ N(0, I)`, scaled by `1/√d` where stated). One step draws one micro-batch per
//! domain plus `micro_batches − K` from the mixture, and takes an SGD step on the mean squared
//! error `½(x·θ − y)²`. The validation loss against the clean targets' mean is exact:
//! `E_x ½(x·(θ − θ̄*))² = ½‖θ − θ̄*‖²`. The per-domain gradients, the realised counts and the
//! norms of the two halves of θ (the "monitored matrices") are reported exactly as the LM
//! environment reports them, so every scheduler runs unchanged on it.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::error::{DatamixError, Result};
use crate::scheduler::{Draw, MixingScheduler, StepStats};
use crate::simplex::with_uniform_floor;
use crate::stats::{categorical, standard_normal};

/// Surrogate parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SurrogateConfig {
    /// Dimension d of θ.
    pub dim: usize,
    /// Number of clean domains (the noise domain comes last).
    pub clean_domains: usize,
    /// Spread of the clean targets around their centre.
    pub spread: f32,
    /// Standard deviation of the noise domain's targets.
    pub noise_std: f32,
    /// Micro-batches per step (the first K are one per domain).
    pub micro_batches: usize,
    /// Samples per micro-batch.
    pub micro_batch_size: usize,
    /// SGD learning rate.
    pub lr: f32,
    /// Uniform floor λ mixed into the scheduler's mixture.
    pub uniform_floor: f32,
}

impl Default for SurrogateConfig {
    fn default() -> Self {
        Self {
            dim: 16,
            clean_domains: 4,
            spread: 0.3,
            noise_std: 2.0,
            micro_batches: 12,
            micro_batch_size: 4,
            lr: 0.02,
            uniform_floor: 0.0,
        }
    }
}

/// The surrogate environment.
#[derive(Clone, Debug)]
pub struct Surrogate {
    cfg: SurrogateConfig,
    theta: Vec<f32>,
    targets: Vec<Vec<f32>>,
    centre: Vec<f32>,
    rng: ChaCha8Rng,
    step: usize,
    total_steps: usize,
    prev_theta: Vec<f32>,
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn norm(a: &[f32]) -> f32 {
    dot(a, a).sqrt()
}

impl Surrogate {
    /// A fresh environment for a run of `total_steps` steps, seeded by `seed`.
    pub fn new(cfg: SurrogateConfig, total_steps: usize, seed: u64) -> Result<Self> {
        if cfg.dim < 2 || cfg.clean_domains < 1 {
            return Err(DatamixError::config(
                "surrogate",
                "need dim >= 2 and clean_domains >= 1",
            ));
        }
        let k = cfg.clean_domains + 1;
        if cfg.micro_batches < k || cfg.micro_batch_size == 0 {
            return Err(DatamixError::config(
                "surrogate.micro_batches",
                format!("must be at least the number of domains ({k})"),
            ));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let d = cfg.dim;
        let mut gauss = |n: usize, scale: f32| -> Vec<f32> {
            (0..n)
                .map(|_| standard_normal(&mut rng) as f32 * scale)
                .collect()
        };
        let centre_raw = gauss(d, 1.0);
        let targets: Vec<Vec<f32>> = (0..cfg.clean_domains)
            .map(|_| {
                let u = gauss(d, cfg.spread);
                centre_raw.iter().zip(u).map(|(c, u)| c + u).collect()
            })
            .collect();
        let centre: Vec<f32> = (0..d)
            .map(|j| targets.iter().map(|t| t[j]).sum::<f32>() / targets.len() as f32)
            .collect();
        Ok(Self {
            theta: vec![0.0; d],
            prev_theta: vec![0.0; d],
            targets,
            centre,
            rng,
            step: 0,
            total_steps,
            cfg,
        })
    }

    /// Number of domains K (clean + noise).
    pub fn num_domains(&self) -> usize {
        self.cfg.clean_domains + 1
    }

    /// Index of the noise domain.
    pub fn noise_domain(&self) -> usize {
        self.cfg.clean_domains
    }

    /// Validation loss `½‖θ − θ̄*‖²`.
    pub fn validation_loss(&self) -> f32 {
        0.5 * self
            .theta
            .iter()
            .zip(&self.centre)
            .map(|(a, b)| (a - b).powi(2))
            .sum::<f32>()
    }

    /// (loss, gradient) of one micro-batch of domain `i` at the current θ.
    fn micro_batch(&mut self, i: usize) -> (f32, Vec<f32>) {
        let d = self.cfg.dim;
        let n = self.cfg.micro_batch_size;
        let mut loss = 0.0;
        let mut grad = vec![0.0f32; d];
        for _ in 0..n {
            let x: Vec<f32> = (0..d)
                .map(|_| standard_normal(&mut self.rng) as f32)
                .collect();
            let xi = standard_normal(&mut self.rng) as f32;
            let y = if i < self.cfg.clean_domains {
                dot(&x, &self.targets[i]) + 0.1 * xi
            } else {
                self.cfg.noise_std * xi
            };
            let r = dot(&x, &self.theta) - y;
            loss += 0.5 * r * r / n as f32;
            for (g, xj) in grad.iter_mut().zip(&x) {
                *g += r * xj / n as f32;
            }
        }
        (loss, grad)
    }

    /// One SGD step with `mixture`; returns the statistics a scheduler observes.
    pub fn step(&mut self, mixture: &[f32]) -> Result<StepStats> {
        let k = self.num_domains();
        crate::simplex::check_mixture(mixture, k, "mixture")?;
        let probs = with_uniform_floor(mixture, self.cfg.uniform_floor);
        let mut domains: Vec<usize> = (0..k).collect();
        for _ in k..self.cfg.micro_batches {
            domains.push(categorical(&probs, &mut self.rng));
        }
        let d = self.cfg.dim;
        let mut per_loss = vec![0.0f32; k];
        let mut per_grad = vec![vec![0.0f32; d]; k];
        let mut counts = vec![0.0f32; k];
        let mut total = vec![0.0f32; d];
        let mut draws = Vec::new();
        for (m, &i) in domains.iter().enumerate() {
            let (l, g) = self.micro_batch(i);
            per_loss[i] += l;
            counts[i] += 1.0;
            for j in 0..d {
                per_grad[i][j] += g[j];
                total[j] += g[j] / domains.len() as f32;
            }
            if m >= k {
                draws.push(Draw { domain: i, loss: l });
            }
        }
        for i in 0..k {
            per_loss[i] /= counts[i];
            per_grad[i].iter_mut().for_each(|g| *g /= counts[i]);
        }
        self.prev_theta = self.theta.clone();
        for (t, g) in self.theta.iter_mut().zip(&total) {
            *t -= self.cfg.lr * g;
        }
        let h = d / 2;
        let halves = |v: &[f32]| vec![norm(&v[..h]), norm(&v[h..])];
        let delta: Vec<f32> = self
            .theta
            .iter()
            .zip(&self.prev_theta)
            .map(|(a, b)| a - b)
            .collect();
        let stats = StepStats {
            step: self.step,
            total_steps: self.total_steps,
            sampling_probs: probs,
            domain_loss: per_loss,
            domain_counts: counts
                .iter()
                .map(|c| c * self.cfg.micro_batch_size as f32)
                .collect(),
            draws,
            domain_grads: Some(per_grad),
            weight_norms: halves(&self.theta),
            weight_update_norms: halves(&delta),
            sequences: Vec::new(),
        };
        self.step += 1;
        Ok(stats)
    }
}

/// Trajectory of a scheduler on the surrogate.
#[derive(Clone, Debug, Default)]
pub struct SurrogateRun {
    /// Mixture used at each step.
    pub mixtures: Vec<Vec<f32>>,
    /// Validation loss after each step.
    pub val_loss: Vec<f32>,
}

impl SurrogateRun {
    /// Mean weight of domain `i` over steps `from..`.
    pub fn mean_weight(&self, i: usize, from: usize) -> f32 {
        let tail = &self.mixtures[from.min(self.mixtures.len())..];
        tail.iter().map(|m| m[i]).sum::<f32>() / tail.len().max(1) as f32
    }
}

/// Runs `scheduler` for `steps` steps on `env`.
pub fn run_surrogate(
    env: &mut Surrogate,
    scheduler: &mut dyn MixingScheduler,
    steps: usize,
) -> Result<SurrogateRun> {
    let mut run = SurrogateRun::default();
    for _ in 0..steps {
        let m = scheduler.mixture();
        let stats = env.step(&m)?;
        scheduler.observe(&stats)?;
        run.mixtures.push(m);
        run.val_loss.push(env.validation_loss());
    }
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::{Checkpoint, SchedulerConfig};
    use burn::backend::{Autodiff, Flex};

    type AB = Autodiff<Flex>;

    fn build(name: &str, k: usize, steps: usize, seed: u64) -> Box<dyn MixingScheduler> {
        SchedulerConfig::from_name(name)
            .unwrap()
            .build::<AB>(k, steps, seed, &Default::default())
            .unwrap()
    }

    #[test]
    fn surrogate_gradients_are_exact_for_the_loss() {
        // With θ = 0 the mean gradient of a clean domain is −E[x xᵀ]θ*_i ≈ −θ*_i; check the
        // SGD step moves the validation loss down under the uniform mixture.
        let mut env = Surrogate::new(SurrogateConfig::default(), 200, 1).unwrap();
        let before = env.validation_loss();
        let mut s = build("uniform", env.num_domains(), 200, 0);
        let run = run_surrogate(&mut env, s.as_mut(), 200).unwrap();
        assert!(
            run.val_loss[199] < 0.5 * before,
            "{before} -> {}",
            run.val_loss[199]
        );
    }

    /// The regression test of hds.md §12.7: the loss-driven bandit (ODM, both variants) samples
    /// the noise domain more than 1/K, HDS samples it less.
    #[test]
    fn odm_oversamples_noise_while_hds_does_not() {
        let steps = 1500;
        for seed in [0u64, 1] {
            let mut w = Vec::new();
            for name in ["odm", "odm_group", "hds", "uniform"] {
                let mut env = Surrogate::new(SurrogateConfig::default(), steps, seed).unwrap();
                let k = env.num_domains();
                let mut s = build(name, k, steps, seed);
                let run = run_surrogate(&mut env, s.as_mut(), steps).unwrap();
                let noise = run.mean_weight(env.noise_domain(), steps / 2);
                eprintln!(
                    "seed {seed} {name}: noise weight {noise:.3} final val {:.4}",
                    run.val_loss[steps - 1]
                );
                w.push(noise);
            }
            let uniform = 1.0 / 5.0;
            assert!(w[0] > uniform && w[1] > uniform, "ODM {w:?}");
            assert!(w[2] < uniform, "HDS {w:?}");
        }
    }

    /// Checkpoint → resume (through JSON) continues with identical mixtures.
    #[test]
    fn checkpoint_resume_gives_identical_next_mixtures() {
        let steps = 120;
        for name in ["uniform", "odm", "odm_group", "hds", "hds_vector"] {
            let mut env = Surrogate::new(SurrogateConfig::default(), steps, 3).unwrap();
            let k = env.num_domains();
            let mut a = build(name, k, steps, 3);
            for _ in 0..60 {
                let st = env.step(&a.mixture()).unwrap();
                a.observe(&st).unwrap();
            }
            let text = a.checkpoint().unwrap().to_json();
            let mut b = build(name, k, steps, 42);
            b.restore(&Checkpoint::from_json(&text).unwrap()).unwrap();
            for _ in 0..20 {
                let (ma, mb) = (a.mixture(), b.mixture());
                assert_eq!(ma, mb, "{name}");
                let st = env.step(&ma).unwrap();
                a.observe(&st).unwrap();
                b.observe(&st).unwrap();
            }
            assert_eq!(a.diagnostics(), b.diagnostics(), "{name}");
            // A checkpoint of another kind is refused.
            let other = build(if name == "odm" { "hds" } else { "odm" }, k, steps, 0);
            assert!(b.restore(&other.checkpoint().unwrap()).is_err(), "{name}");
        }
    }
}
