//! Online Data Mixing (Albalak et al. 2023): EXP3 over domains with the training loss as reward.
//!
//! Paper variant ([`OdmVariant::Exp3`]), at step `t = 1, 2, …` with `ε_0 = 1/K`:
//!
//! ```text
//! ε_t   = min(1/K, sqrt(ln K / (K t)))
//! π_t   = (1 − K ε_t) · softmax(ε_{t−1} · R̂) + ε_t
//! R̂_i  ← α R̂_i + (1 − α) f(ℓ) / p_i      for every micro-batch drawn from domain i
//! ```
//!
//! where `p_i` is the probability the micro-batch was actually drawn with and `f(ℓ) = ℓ` (paper)
//! or `exp ℓ` (official code). Official "mixed minibatch" variant ([`OdmVariant::Group`]): every
//! domain present in the step is updated with its mean loss, `R̂_i ← α R̂_i + (1 − α) f(ℓ̄_i)`,
//! and the softmax is replaced by the linear normalisation `π = (1 − K ε_t) R̂ / Σ_j R̂_j + ε_t`.
//!
//! One step of our LM environment contains several micro-batches drawn from `π_t`; the paper's
//! single-arm update is applied once per drawn micro-batch, in draw order, and `t` advances once
//! per step. The forced one-per-domain micro-batches are not draws from `π` and are not used by
//! the EXP3 variant (the group variant uses every domain's mean loss, as in the official code).

use serde::{Deserialize, Serialize};

use crate::error::{DatamixError, Result};
use crate::scheduler::{Checkpoint, MixingScheduler, StepStats};
use crate::simplex::check_mixture;

/// Which ODM update.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OdmVariant {
    /// The paper's EXP3: importance-weighted EMA of the sampled arm, softmax.
    #[default]
    Exp3,
    /// The official "mixed minibatch" group update with linear normalisation.
    Group,
}

/// The reward `f(ℓ)` made of a loss.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossTransform {
    /// `ℓ` (the paper).
    #[default]
    Loss,
    /// `exp ℓ` (the official code).
    ExpLoss,
}

impl LossTransform {
    fn apply(self, loss: f64) -> f64 {
        match self {
            LossTransform::Loss => loss,
            LossTransform::ExpLoss => loss.exp(),
        }
    }
}

/// ODM configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OdmConfig {
    /// Paper EXP3 or the official group update.
    pub variant: OdmVariant,
    /// EMA smoothing α (0.9 in the paper, 0.5 in the official 1B runs).
    pub alpha: f32,
    /// `f(ℓ)`.
    pub reward: LossTransform,
    /// Steps at the start that use `warmup_mixture` (the estimates are still updated).
    pub warmup_steps: usize,
    /// Mixture during warm-up (uniform when absent).
    pub warmup_mixture: Option<Vec<f32>>,
}

impl Default for OdmConfig {
    fn default() -> Self {
        Self {
            variant: OdmVariant::Exp3,
            alpha: 0.9,
            reward: LossTransform::Loss,
            warmup_steps: 0,
            warmup_mixture: None,
        }
    }
}

impl OdmConfig {
    /// The official mixed-minibatch configuration: group update, α = 0.5, reward `exp ℓ`.
    pub fn group() -> Self {
        Self {
            variant: OdmVariant::Group,
            alpha: 0.5,
            reward: LossTransform::ExpLoss,
            ..Self::default()
        }
    }

    /// Checks ranges for `k` domains.
    pub fn validate(&self, k: usize, prefix: &str) -> Result<()> {
        if !(0.0..1.0).contains(&self.alpha) {
            return Err(DatamixError::config(
                format!("{prefix}.alpha"),
                format!("must be in [0, 1), got {}", self.alpha),
            ));
        }
        if let Some(w) = &self.warmup_mixture {
            check_mixture(w, k, &format!("{prefix}.warmup_mixture"))?;
        }
        Ok(())
    }
}

/// `ε_t = min(1/K, sqrt(ln K / (K t)))`, with `ε_0 = 1/K`.
pub fn exploration_rate(k: usize, t: u64) -> f64 {
    let kf = k as f64;
    if t == 0 {
        return 1.0 / kf;
    }
    (1.0 / kf).min((kf.ln() / (kf * t as f64)).sqrt())
}

/// `π_t` of the paper variant: `(1 − K ε_t) softmax(ε_{t−1} R̂) + ε_t`.
pub fn exp3_probabilities(rhat: &[f64], t: u64) -> Vec<f64> {
    let k = rhat.len();
    let (eps, eps_prev) = (
        exploration_rate(k, t),
        exploration_rate(k, t.saturating_sub(1)),
    );
    let max = rhat
        .iter()
        .map(|r| eps_prev * r)
        .fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = rhat.iter().map(|r| (eps_prev * r - max).exp()).collect();
    let s: f64 = e.iter().sum();
    e.iter()
        .map(|v| (1.0 - k as f64 * eps) * v / s + eps)
        .collect()
}

/// `π_t` of the group variant: `(1 − K ε_t) R̂ / Σ R̂ + ε_t` (uniform weights if `Σ R̂ ≤ 0`).
pub fn group_probabilities(rhat: &[f64], t: u64) -> Vec<f64> {
    let k = rhat.len();
    let eps = exploration_rate(k, t);
    let s: f64 = rhat.iter().sum();
    rhat.iter()
        .map(|r| {
            let w = if s > 0.0 { r / s } else { 1.0 / k as f64 };
            (1.0 - k as f64 * eps) * w + eps
        })
        .collect()
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct OdmState {
    rhat: Vec<f64>,
    /// Index of the next step (1-based).
    t: u64,
    pi: Vec<f64>,
}

/// The ODM scheduler.
#[derive(Clone, Debug)]
pub struct OdmScheduler {
    cfg: OdmConfig,
    k: usize,
    state: OdmState,
}

impl OdmScheduler {
    /// A fresh scheduler over `k` domains.
    pub fn new(cfg: OdmConfig, k: usize) -> Result<Self> {
        cfg.validate(k, "odm")?;
        let rhat = vec![0.0; k];
        let pi = Self::probabilities(&cfg, &rhat, 1);
        Ok(Self {
            cfg,
            k,
            state: OdmState { rhat, t: 1, pi },
        })
    }

    fn probabilities(cfg: &OdmConfig, rhat: &[f64], t: u64) -> Vec<f64> {
        match cfg.variant {
            OdmVariant::Exp3 => exp3_probabilities(rhat, t),
            OdmVariant::Group => group_probabilities(rhat, t),
        }
    }

    /// The current reward estimates `R̂`.
    pub fn estimates(&self) -> &[f64] {
        &self.state.rhat
    }

    /// The bandit's own distribution `π_t` (ignores warm-up).
    pub fn policy(&self) -> Vec<f32> {
        self.state.pi.iter().map(|&v| v as f32).collect()
    }

    fn in_warmup(&self) -> bool {
        self.state.t <= self.cfg.warmup_steps as u64
    }
}

impl MixingScheduler for OdmScheduler {
    fn name(&self) -> &str {
        match self.cfg.variant {
            OdmVariant::Exp3 => "odm",
            OdmVariant::Group => "odm_group",
        }
    }

    fn num_domains(&self) -> usize {
        self.k
    }

    fn mixture(&self) -> Vec<f32> {
        if self.in_warmup() {
            match &self.cfg.warmup_mixture {
                Some(w) => w.clone(),
                None => vec![1.0 / self.k as f32; self.k],
            }
        } else {
            self.policy()
        }
    }

    fn observe(&mut self, stats: &StepStats) -> Result<()> {
        stats.validate(self.k)?;
        let a = self.cfg.alpha as f64;
        let f = self.cfg.reward;
        let st = &mut self.state;
        match self.cfg.variant {
            OdmVariant::Exp3 => {
                for d in &stats.draws {
                    let p = stats.sampling_probs[d.domain] as f64;
                    if p <= 0.0 {
                        return Err(DatamixError::Stats(format!(
                            "domain {} was drawn with probability {p}",
                            d.domain
                        )));
                    }
                    let r = &mut st.rhat[d.domain];
                    *r = a * *r + (1.0 - a) * f.apply(d.loss as f64) / p;
                }
            }
            OdmVariant::Group => {
                for i in 0..self.k {
                    if stats.domain_counts[i] > 0.0 {
                        let r = &mut st.rhat[i];
                        *r = a * *r + (1.0 - a) * f.apply(stats.domain_loss[i] as f64);
                    }
                }
            }
        }
        st.t += 1;
        st.pi = Self::probabilities(&self.cfg, &st.rhat, st.t);
        Ok(())
    }

    fn diagnostics(&self) -> Vec<(&'static str, f64)> {
        vec![("odm/eps", exploration_rate(self.k, self.state.t))]
    }

    fn checkpoint(&self) -> Result<Checkpoint> {
        Checkpoint::new(self.name(), &self.state)
    }

    fn restore(&mut self, checkpoint: &Checkpoint) -> Result<()> {
        let s: OdmState = checkpoint.state(self.name())?;
        if s.rhat.len() != self.k || s.pi.len() != self.k {
            return Err(DatamixError::Checkpoint(format!(
                "ODM state has {} domains, scheduler has {}",
                s.rhat.len(),
                self.k
            )));
        }
        self.state = s;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::Draw;
    use crate::test_refs;

    fn stats(k: usize, probs: &[f32], draws: &[(usize, f32)], losses: &[f32]) -> StepStats {
        StepStats {
            step: 0,
            total_steps: 100,
            sampling_probs: probs.to_vec(),
            domain_loss: losses.to_vec(),
            domain_counts: vec![1.0; k],
            draws: draws
                .iter()
                .map(|&(domain, loss)| Draw { domain, loss })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn exploration_rate_follows_the_schedule() {
        // K = 5: 1/K = 0.2 until ln5/(5t) < 0.04, i.e. t > 8.05.
        assert_eq!(exploration_rate(5, 0), 0.2);
        assert_eq!(exploration_rate(5, 8), 0.2);
        assert!((exploration_rate(5, 9) - (5f64.ln() / 45.0).sqrt()).abs() < 1e-15);
        assert!((exploration_rate(5, 1000) - (5f64.ln() / 5000.0).sqrt()).abs() < 1e-15);
    }

    #[test]
    fn exp3_probabilities_sum_to_one_and_respect_epsilon() {
        // The group variant's estimates are EMAs of losses or exp(loss), hence >= 0.
        let rhat = [3.0, -1.0, 40.0, 0.0, 7.5];
        let rhat_pos = [3.0, 1.0, 40.0, 0.0, 7.5];
        for t in [1u64, 5, 9, 50, 10_000] {
            for p in [
                exp3_probabilities(&rhat, t),
                group_probabilities(&rhat_pos, t),
            ] {
                let s: f64 = p.iter().sum();
                assert!((s - 1.0).abs() < 1e-12, "t={t} sum {s}");
                let eps = exploration_rate(5, t);
                assert!(p.iter().all(|&v| v >= eps - 1e-15), "t={t} {p:?} eps {eps}");
            }
        }
        // While ε_t = 1/K the distribution is uniform whatever R̂.
        assert!(
            exp3_probabilities(&rhat, 3)
                .iter()
                .all(|&v| (v - 0.2).abs() < 1e-15)
        );
    }

    /// Trajectories against `tools/datamix/reference.py` (an independent numpy implementation
    /// of the formulas in the module docs).
    #[test]
    fn odm_matches_reference_trajectories() {
        for (variant, alpha, transform, expected) in [
            (
                OdmVariant::Exp3,
                0.9,
                LossTransform::Loss,
                test_refs::ODM_EXP3_PI,
            ),
            (
                OdmVariant::Group,
                0.5,
                LossTransform::ExpLoss,
                test_refs::ODM_GROUP_PI,
            ),
        ] {
            let cfg = OdmConfig {
                variant,
                alpha,
                reward: transform,
                ..OdmConfig::default()
            };
            let k = 4;
            let mut s = OdmScheduler::new(cfg, k).unwrap();
            for (step, (draws, losses)) in test_refs::ODM_STEPS.iter().enumerate() {
                let probs = s.mixture();
                s.observe(&stats(k, &probs, draws, losses)).unwrap();
                let got = s.mixture();
                for (g, e) in got.iter().zip(expected[step]) {
                    assert!(
                        (*g as f64 - e).abs() < 1e-6,
                        "{variant:?} step {step}: {got:?} vs {:?}",
                        expected[step]
                    );
                }
            }
        }
    }

    /// Domain 2 always has loss 4.2 (noise), the others 1.0: both variants sample it more than
    /// 1/K and more than any other domain. For EXP3 the size follows from the fixed point
    /// R̂_i ≈ ℓ_i/π_i, π ∝ exp(ε R̂) with ε_500 = sqrt(ln 4/2000) ≈ 0.026: π_2/π_clean ≈
    /// exp(0.026·(4.2/0.3 − 1/0.23)) ≈ 1.3, so π_2 ≈ 0.3.
    #[test]
    fn high_loss_domain_attracts_odm() {
        for cfg in [OdmConfig::default(), OdmConfig::group()] {
            let mut s = OdmScheduler::new(cfg, 4).unwrap();
            let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(1);
            for step in 0..500 {
                let p = s.mixture();
                let draws: Vec<(usize, f32)> = (0..4)
                    .map(|_| {
                        let d = crate::stats::categorical(&p, &mut rng);
                        (d, if d == 2 { 4.2 } else { 1.0 })
                    })
                    .collect();
                let mut st = stats(4, &p, &draws, &[1.0, 1.0, 4.2, 1.0]);
                st.step = step;
                s.observe(&st).unwrap();
            }
            let p = s.mixture();
            assert!(p[2] > 0.27, "{p:?}");
            assert!((0..4).all(|i| i == 2 || p[i] < p[2] - 0.03), "{p:?}");
        }
    }

    #[test]
    fn warmup_mixture_and_validation() {
        let cfg = OdmConfig {
            warmup_steps: 2,
            warmup_mixture: Some(vec![0.7, 0.1, 0.1, 0.1]),
            ..OdmConfig::default()
        };
        let mut s = OdmScheduler::new(cfg, 4).unwrap();
        assert_eq!(s.mixture(), vec![0.7, 0.1, 0.1, 0.1]);
        let p = s.mixture();
        s.observe(&stats(4, &p, &[(0, 2.0)], &[1.0; 4])).unwrap();
        assert_eq!(s.mixture(), vec![0.7, 0.1, 0.1, 0.1]);
        s.observe(&stats(4, &p, &[(0, 2.0)], &[1.0; 4])).unwrap();
        assert_ne!(s.mixture(), vec![0.7, 0.1, 0.1, 0.1]);
        let bad = OdmConfig {
            alpha: 1.5,
            ..OdmConfig::default()
        };
        let e = OdmScheduler::new(bad, 4).unwrap_err().to_string();
        assert!(e.contains("alpha"), "{e}");
        assert!(
            s.observe(&stats(4, &[0.0, 0.5, 0.5, 0.0], &[(0, 1.0)], &[1.0; 4]))
                .is_err()
        );
    }
}
