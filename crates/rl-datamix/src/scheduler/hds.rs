//! The Holistic Data Scheduler: SAC over mixtures with the holistic reward.
//!
//! Per LM step `t` (one agent step): build the state `s_t` ([`crate::state`]), compute the reward
//! of the mixture `a_t` used at this step ([`crate::rewards`]), store `(s_{t−1}, a_t, R_t, s_t)`,
//! run `updates_per_step` SAC updates once the warm-up is over, and choose `a_{t+1} ~ π(·|s_t)`.
//! During warm-up (the first `warmup_fraction · T` steps) the mixture comes from a warm-up
//! weighter (uniform, static, or ODM) and transitions are stored without updates.
//!
//! Deviations from the authors' code, on purpose (hds.md §5.4, §12.4): scalar critic with the
//! action-weighted reward by default (the per-domain critic is [`CriticKind::PerDomain`]); a
//! working quality term; a defined policy distribution (ALR Gaussian); τ = 0.005, lr 3e-4, MLPs
//! 2×64, no weight decay; progress feature in `[0, 1]` (`progress_scale` = 1 rather than 100); the
//! scalar reward rescaled by its running mean and std (`normalize_reward`), because the constant
//! stability/quality terms (up to 50) would otherwise dominate the critic's regression target.

use burn::tensor::backend::AutodiffBackend;
use serde::{Deserialize, Serialize};

use crate::error::{DatamixError, Result};
use crate::rewards::{HolisticRewardConfig, RewardComponents};
use crate::sac::{Sac, SacConfig, SacLosses, Transition};
use crate::scheduler::{
    Checkpoint, MixingScheduler, OdmConfig, OdmScheduler, Requirements, StaticConfig, StepStats,
};
use crate::simplex::check_mixture;
use crate::state::StateBuilder;
use crate::stats::RunningMeanStd;

/// Scalar critic with the action-weighted reward, or the code's per-domain critic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CriticKind {
    /// `Q(s, a) ∈ R`, reward `w_a Σ a_i r_align,i + w_d r_quality + w_s r_stability`.
    #[default]
    Scalar,
    /// `Q(s, a) ∈ R^K`, reward vector; the actor maximises the mean over domains.
    PerDomain,
}

/// Where the warm-up mixture comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum WarmupMixture {
    /// Uniform.
    Uniform {},
    /// Fixed weights.
    Static(StaticConfig),
    /// An ODM bandit, updated during warm-up.
    Odm(OdmConfig),
}

/// HDS configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HdsConfig {
    /// SAC hyper-parameters.
    pub sac: SacConfig,
    /// Reward weights and forms.
    pub reward: HolisticRewardConfig,
    /// Scalar or per-domain critic.
    pub critic: CriticKind,
    /// Fraction of the run used for warm-up (0.02).
    pub warmup_fraction: f32,
    /// Warm-up mixture (uniform).
    pub warmup: WarmupMixture,
    /// Clip of the z-scored state features (3).
    pub state_clip: f32,
    /// Multiplier of the progress feature (1; the authors' code uses 100).
    pub progress_scale: f32,
    /// Rescale rewards by their running mean and std before storing them (true).
    pub normalize_reward: bool,
    /// Number of policy samples averaged into the applied mixture (1; the authors' 8-GPU runs
    /// averaged 8).
    pub policy_samples: usize,
}

impl Default for HdsConfig {
    fn default() -> Self {
        Self {
            sac: SacConfig::default(),
            reward: HolisticRewardConfig::default(),
            critic: CriticKind::Scalar,
            warmup_fraction: 0.02,
            warmup: WarmupMixture::Uniform {},
            state_clip: 3.0,
            progress_scale: 1.0,
            normalize_reward: true,
            policy_samples: 1,
        }
    }
}

impl HdsConfig {
    /// Checks ranges for `k` domains.
    pub fn validate(&self, k: usize, prefix: &str) -> Result<()> {
        self.sac.validate(&format!("{prefix}.sac"))?;
        self.reward.validate(&format!("{prefix}.reward"))?;
        if !(0.0..1.0).contains(&self.warmup_fraction) {
            return Err(DatamixError::config(
                format!("{prefix}.warmup_fraction"),
                "must be in [0, 1)",
            ));
        }
        match &self.warmup {
            WarmupMixture::Uniform {} => {}
            WarmupMixture::Static(c) => {
                check_mixture(&c.weights, k, &format!("{prefix}.warmup.weights"))?
            }
            WarmupMixture::Odm(c) => c.validate(k, &format!("{prefix}.warmup"))?,
        }
        if self.state_clip.is_nan() || self.state_clip <= 0.0 {
            return Err(DatamixError::config(
                format!("{prefix}.state_clip"),
                "must be > 0",
            ));
        }
        if self.policy_samples == 0 {
            return Err(DatamixError::config(
                format!("{prefix}.policy_samples"),
                "must be >= 1",
            ));
        }
        Ok(())
    }
}

#[derive(Clone, Debug)]
enum Warmup {
    Fixed(Vec<f32>),
    Odm(OdmScheduler),
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Last {
    rewards: RewardComponents,
    reward: f64,
    losses: Option<SacLosses>,
}

#[derive(Serialize, Deserialize)]
struct HdsState {
    agent: Option<serde_json::Value>,
    builder: Option<StateBuilder>,
    warmup_odm: Option<Checkpoint>,
    prev_state: Option<Vec<f32>>,
    prev_norms: Option<Vec<f32>>,
    current: Vec<f32>,
    reward_stats: RunningMeanStd,
    last: Last,
}

/// The HDS scheduler; the agent is created at the first observation, when the number of
/// monitored matrices is known.
pub struct HdsScheduler<B: AutodiffBackend> {
    cfg: HdsConfig,
    k: usize,
    warmup_steps: usize,
    seed: u64,
    device: B::Device,
    agent: Option<Sac<B>>,
    builder: Option<StateBuilder>,
    warmup: Warmup,
    prev_state: Option<Vec<f32>>,
    prev_norms: Option<Vec<f32>>,
    current: Vec<f32>,
    reward_stats: RunningMeanStd,
    last: Last,
}

impl<B: AutodiffBackend> HdsScheduler<B> {
    /// A fresh scheduler for `k` domains and a run of `total_steps` steps.
    pub fn new(
        cfg: HdsConfig,
        k: usize,
        total_steps: usize,
        seed: u64,
        device: B::Device,
    ) -> Result<Self> {
        cfg.validate(k, "hds")?;
        let warmup_steps = (cfg.warmup_fraction as f64 * total_steps as f64).round() as usize;
        let warmup = match &cfg.warmup {
            WarmupMixture::Uniform {} => Warmup::Fixed(vec![1.0 / k as f32; k]),
            WarmupMixture::Static(c) => Warmup::Fixed(c.weights.clone()),
            WarmupMixture::Odm(c) => Warmup::Odm(OdmScheduler::new(c.clone(), k)?),
        };
        let current = match &warmup {
            Warmup::Fixed(w) if warmup_steps > 0 => w.clone(),
            Warmup::Odm(o) if warmup_steps > 0 => o.mixture(),
            _ => vec![1.0 / k as f32; k],
        };
        Ok(Self {
            cfg,
            k,
            warmup_steps,
            seed,
            device,
            agent: None,
            builder: None,
            warmup,
            prev_state: None,
            prev_norms: None,
            current,
            reward_stats: RunningMeanStd::default(),
            last: Last::default(),
        })
    }

    /// Number of warm-up steps.
    pub fn warmup_steps(&self) -> usize {
        self.warmup_steps
    }

    /// The SAC agent (after the first observation).
    pub fn agent(&self) -> Option<&Sac<B>> {
        self.agent.as_ref()
    }

    fn reward_dim(&self) -> usize {
        match self.cfg.critic {
            CriticKind::Scalar => 1,
            CriticKind::PerDomain => self.k,
        }
    }

    fn make_agent(&self, l: usize) -> Result<(StateBuilder, Sac<B>)> {
        let b = StateBuilder::new(self.k, l, self.cfg.state_clip, self.cfg.progress_scale);
        let sac = Sac::new(
            self.cfg.sac.clone(),
            b.dim(),
            self.k,
            self.reward_dim(),
            self.seed,
            self.device.clone(),
        )?;
        Ok((b, sac))
    }

    fn warmup_mixture(&self) -> Vec<f32> {
        match &self.warmup {
            Warmup::Fixed(w) => w.clone(),
            Warmup::Odm(o) => o.mixture(),
        }
    }
}

impl<B: AutodiffBackend> MixingScheduler for HdsScheduler<B> {
    fn name(&self) -> &str {
        "hds"
    }

    fn num_domains(&self) -> usize {
        self.k
    }

    fn requirements(&self) -> Requirements {
        let w = &self.cfg.reward.weights;
        Requirements {
            domain_grads: w.align != 0.0,
            sequences: w.quality != 0.0,
        }
    }

    fn mixture(&self) -> Vec<f32> {
        self.current.clone()
    }

    fn observe(&mut self, stats: &StepStats) -> Result<()> {
        stats.validate(self.k)?;
        if self.agent.is_none() {
            let (b, sac) = self.make_agent(stats.weight_norms.len())?;
            self.builder = Some(b);
            self.agent = Some(sac);
        }
        let in_warmup = stats.step < self.warmup_steps;
        if let (true, Warmup::Odm(o)) = (in_warmup, &mut self.warmup) {
            o.observe(stats)?;
        }
        let rewards = RewardComponents::compute(
            &self.cfg.reward,
            self.k,
            stats.domain_grads.as_deref(),
            &stats.sequences,
            stats.progress(),
            &stats.weight_norms,
            self.prev_norms.as_deref(),
        );
        let w = self.cfg.reward.weights;
        let raw: Vec<f32> = match self.cfg.critic {
            CriticKind::Scalar => vec![rewards.scalar(&self.current, &w)],
            CriticKind::PerDomain => rewards.per_domain(&w),
        };
        let reward: Vec<f32> = if self.cfg.normalize_reward {
            raw.iter().for_each(|&r| self.reward_stats.push(r as f64));
            raw.iter()
                .map(|&r| self.reward_stats.normalize(r as f64) as f32)
                .collect()
        } else {
            raw.clone()
        };
        let (Some(builder), Some(agent)) = (self.builder.as_mut(), self.agent.as_mut()) else {
            return Err(DatamixError::Stats("agent not initialised".into()));
        };
        let state = builder.build(stats)?;
        if let Some(prev) = self.prev_state.take() {
            agent.push(Transition {
                state: prev,
                action: self.current.clone(),
                reward,
                next_state: state.clone(),
            })?;
        }
        let mut losses = None;
        if !in_warmup {
            for _ in 0..self.cfg.sac.updates_per_step {
                losses = agent.update().or(losses);
            }
        }
        let next_is_warmup = stats.step + 1 < self.warmup_steps;
        self.current = if next_is_warmup {
            self.warmup_mixture()
        } else {
            let n = self.cfg.policy_samples;
            let mut acc = vec![0.0f32; self.k];
            for _ in 0..n {
                for (x, v) in acc.iter_mut().zip(agent.act(&state)?) {
                    *x += v / n as f32;
                }
            }
            acc
        };
        self.prev_state = Some(state);
        self.prev_norms = Some(stats.weight_norms.clone());
        self.last = Last {
            reward: raw.iter().map(|&v| v as f64).sum::<f64>() / raw.len() as f64,
            rewards,
            losses: losses.or(self.last.losses),
        };
        Ok(())
    }

    fn diagnostics(&self) -> Vec<(&'static str, f64)> {
        let r = &self.last.rewards;
        let aligned: f32 = r.align.iter().zip(&self.current).map(|(a, b)| a * b).sum();
        let mut d = vec![
            ("reward/total", self.last.reward),
            ("reward/align", aligned as f64),
            ("reward/quality", r.quality as f64),
            ("reward/stability", r.stability as f64),
        ];
        if let Some(l) = self.last.losses {
            d.extend([
                ("sac/critic_loss", l.critic as f64),
                ("sac/actor_loss", l.actor as f64),
                ("sac/alpha", l.alpha as f64),
                ("sac/log_prob", l.log_prob as f64),
            ]);
        }
        d
    }

    fn checkpoint(&self) -> Result<Checkpoint> {
        let st = HdsState {
            agent: self.agent.as_ref().map(|a| a.checkpoint()).transpose()?,
            builder: self.builder.clone(),
            warmup_odm: match &self.warmup {
                Warmup::Odm(o) => Some(o.checkpoint()?),
                Warmup::Fixed(_) => None,
            },
            prev_state: self.prev_state.clone(),
            prev_norms: self.prev_norms.clone(),
            current: self.current.clone(),
            reward_stats: self.reward_stats.clone(),
            last: self.last.clone(),
        };
        Checkpoint::new("hds", &st)
    }

    fn restore(&mut self, checkpoint: &Checkpoint) -> Result<()> {
        let st: HdsState = checkpoint.state("hds")?;
        check_mixture(&st.current, self.k, "checkpoint mixture")?;
        let (builder, agent) = match (st.builder, st.agent) {
            (Some(b), Some(a)) => {
                if b.num_domains() != self.k || b.num_matrices() > 100_000 {
                    return Err(DatamixError::Checkpoint(format!(
                        "state builder for {} domains and {} matrices does not fit {} domains",
                        b.num_domains(),
                        b.num_matrices(),
                        self.k
                    )));
                }
                let (_, mut sac) = self.make_agent(b.num_matrices())?;
                sac.restore(&a)?;
                (Some(b), Some(sac))
            }
            (None, None) => (None, None),
            _ => {
                return Err(DatamixError::Checkpoint(
                    "agent and state builder must both be present or absent".into(),
                ));
            }
        };
        match (&mut self.warmup, &st.warmup_odm) {
            (Warmup::Odm(o), Some(c)) => o.restore(c)?,
            (Warmup::Fixed(_), None) => {}
            _ => {
                return Err(DatamixError::Checkpoint(
                    "warm-up weighter kind differs from the configuration".into(),
                ));
            }
        }
        self.builder = builder;
        self.agent = agent;
        self.prev_state = st.prev_state;
        self.prev_norms = st.prev_norms;
        self.current = st.current;
        self.reward_stats = st.reward_stats;
        self.last = st.last;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::surrogate::{Surrogate, SurrogateConfig};
    use burn::backend::{Autodiff, Flex};

    type AB = Autodiff<Flex>;

    /// Warm-up: the warm-up mixture is applied and transitions are stored without updates;
    /// afterwards one update per step once the buffer holds a batch.
    #[test]
    fn warmup_then_updates() {
        let steps = 100;
        let cfg = HdsConfig {
            warmup_fraction: 0.4,
            warmup: WarmupMixture::Static(StaticConfig {
                weights: vec![0.6, 0.1, 0.1, 0.1, 0.1],
            }),
            ..HdsConfig::default()
        };
        let mut env = Surrogate::new(SurrogateConfig::default(), steps, 0).unwrap();
        let mut h = HdsScheduler::<AB>::new(cfg, 5, steps, 0, Default::default()).unwrap();
        assert_eq!(h.warmup_steps(), 40);
        for t in 0..steps {
            let m = h.mixture();
            if t < 40 {
                assert_eq!(m, vec![0.6, 0.1, 0.1, 0.1, 0.1], "step {t}");
            }
            let st = env.step(&m).unwrap();
            h.observe(&st).unwrap();
            let agent = h.agent().unwrap();
            // Transition (s_{t-1}, a_t, R_t, s_t) exists from the second step on.
            assert_eq!(agent.buffer().len(), t);
            let expect_updates = if t < 40 { 0 } else { (t + 1 - 40) as u64 };
            assert_eq!(agent.updates(), expect_updates, "step {t}");
        }
        let d: Vec<&str> = h.diagnostics().iter().map(|x| x.0).collect();
        assert!(
            d.contains(&"sac/alpha") && d.contains(&"reward/align"),
            "{d:?}"
        );
        // The surrogate provides no text, so the quality reward is 0; the stability reward is
        // positive and capped.
        let r = &h.last.rewards;
        assert_eq!(r.quality, 0.0);
        assert!(r.stability > 0.0 && r.stability <= 5.0);
    }

    #[test]
    fn bad_configs_name_the_field() {
        let mut c = HdsConfig::default();
        c.sac.gamma = 1.5;
        let e = c.validate(5, "hds").unwrap_err().to_string();
        assert!(e.contains("hds.sac.gamma"), "{e}");
        let c = HdsConfig {
            policy_samples: 0,
            ..HdsConfig::default()
        };
        let e = c.validate(5, "hds").unwrap_err().to_string();
        assert!(e.contains("hds.policy_samples"), "{e}");
        let c = HdsConfig {
            warmup: WarmupMixture::Static(StaticConfig { weights: vec![1.0] }),
            ..HdsConfig::default()
        };
        let e = c.validate(5, "hds").unwrap_err().to_string();
        assert!(e.contains("hds.warmup.weights"), "{e}");
    }
}
