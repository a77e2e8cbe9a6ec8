//! The [`MixingScheduler`] trait, the statistics an LM step hands to it, checkpoints, and the
//! serde-tagged [`SchedulerConfig`] that builds any scheduler by name.

use burn::tensor::backend::AutodiffBackend;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{DatamixError, Result};

pub mod fixed;
pub mod hds;
pub mod odm;

pub use fixed::StaticScheduler;
pub use hds::{CriticKind, HdsConfig, HdsScheduler, WarmupMixture};
pub use odm::{LossTransform, OdmConfig, OdmScheduler, OdmVariant};

/// One micro-batch drawn from the mixture (not the forced one-per-domain micro-batches).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Draw {
    /// Domain it came from.
    pub domain: usize,
    /// Its mean training cross-entropy (nats per token).
    pub loss: f32,
}

/// What one LM step measured, handed to [`MixingScheduler::observe`].
///
/// The environment fills only the expensive fields a scheduler asks for through
/// [`MixingScheduler::requirements`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepStats {
    /// 0-based index of the step just taken.
    pub step: usize,
    /// Planned number of steps of the run (for the progress feature).
    pub total_steps: usize,
    /// The distribution the drawn micro-batches were sampled from (the scheduler's mixture after
    /// the environment's uniform floor).
    pub sampling_probs: Vec<f32>,
    /// Mean training cross-entropy per domain in this step (K).
    pub domain_loss: Vec<f32>,
    /// Realised number of sequences per domain in this step (K).
    pub domain_counts: Vec<f32>,
    /// The micro-batches drawn from the mixture, in draw order.
    pub draws: Vec<Draw>,
    /// Per-domain gradients of the domain's mean loss on the monitored late-layer matrices
    /// (K × P), when requested.
    pub domain_grads: Option<Vec<Vec<f32>>>,
    /// Frobenius norms of the L monitored matrices after this step's update.
    pub weight_norms: Vec<f32>,
    /// Frobenius norms of this step's update of those matrices, `‖W^t − W^{t−1}‖`.
    pub weight_update_norms: Vec<f32>,
    /// Token ids of the sequences drawn from the mixture, when requested.
    pub sequences: Vec<Vec<u32>>,
}

impl StepStats {
    /// Training progress `t' = (step + 1) / total_steps ∈ (0, 1]`.
    pub fn progress(&self) -> f64 {
        (self.step + 1) as f64 / self.total_steps.max(1) as f64
    }

    /// Checks shapes against `k` domains and that losses are finite.
    pub fn validate(&self, k: usize) -> Result<()> {
        let bad = |m: String| Err(DatamixError::Stats(m));
        if self.domain_loss.len() != k || self.domain_counts.len() != k {
            return bad(format!(
                "expected {k} per-domain losses and counts, got {} and {}",
                self.domain_loss.len(),
                self.domain_counts.len()
            ));
        }
        if self.sampling_probs.len() != k {
            return bad(format!(
                "expected {k} sampling probabilities, got {}",
                self.sampling_probs.len()
            ));
        }
        if let Some(i) = self.domain_loss.iter().position(|v| !v.is_finite()) {
            return bad(format!(
                "loss of domain {i} is not finite ({})",
                self.domain_loss[i]
            ));
        }
        if let Some(d) = self
            .draws
            .iter()
            .find(|d| d.domain >= k || !d.loss.is_finite())
        {
            return bad(format!("invalid draw {d:?} for {k} domains"));
        }
        if let Some(g) = &self.domain_grads
            && (g.len() != k || g.iter().any(|r| r.len() != g[0].len()))
        {
            return bad(format!(
                "expected {k} per-domain gradients of equal length, got {}",
                g.len()
            ));
        }
        if self.weight_norms.len() != self.weight_update_norms.len() {
            return bad("weight norms and update norms differ in length".into());
        }
        Ok(())
    }
}

/// The expensive statistics a scheduler needs from the environment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Requirements {
    /// Per-domain gradients on the monitored matrices.
    pub domain_grads: bool,
    /// The drawn sequences' token ids.
    pub sequences: bool,
}

/// Serialised scheduler state: `scheduler` names the kind, `state` is its JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Kind of scheduler that wrote it (`static`, `odm`, `hds`).
    pub scheduler: String,
    /// The scheduler's state.
    pub state: serde_json::Value,
}

impl Checkpoint {
    /// Wraps a serialisable state.
    pub fn new<T: Serialize>(scheduler: &str, state: &T) -> Result<Self> {
        Ok(Self {
            scheduler: scheduler.to_string(),
            state: serde_json::to_value(state)
                .map_err(|e| DatamixError::Checkpoint(e.to_string()))?,
        })
    }

    /// The state, checking that it was written by a scheduler of kind `expected`.
    pub fn state<T: DeserializeOwned>(&self, expected: &str) -> Result<T> {
        if self.scheduler != expected {
            return Err(DatamixError::Checkpoint(format!(
                "written by a `{}` scheduler, cannot restore into `{expected}`",
                self.scheduler
            )));
        }
        serde_json::from_value(self.state.clone())
            .map_err(|e| DatamixError::Checkpoint(format!("{expected} state: {e}")))
    }

    /// JSON text of the checkpoint (floats round-trip exactly).
    pub fn to_json(&self) -> String {
        // A `Value` always serialises.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Parses [`Checkpoint::to_json`] output.
    pub fn from_json(text: &str) -> Result<Self> {
        serde_json::from_str(text).map_err(|e| DatamixError::Checkpoint(e.to_string()))
    }
}

/// An online data-mixing policy: it proposes the mixture of the next LM step and learns from
/// the statistics of the step taken.
pub trait MixingScheduler {
    /// Short name (`uniform`, `odm`, `hds`, ...).
    fn name(&self) -> &str;
    /// Number of domains K.
    fn num_domains(&self) -> usize;
    /// Which expensive statistics [`MixingScheduler::observe`] needs.
    fn requirements(&self) -> Requirements {
        Requirements::default()
    }
    /// Mixture for the next step: K non-negative weights summing to 1.
    fn mixture(&self) -> Vec<f32>;
    /// Learns from the step just taken (with the mixture last returned) and chooses the next.
    fn observe(&mut self, stats: &StepStats) -> Result<()>;
    /// Latest internal metrics under fixed names (`reward/align`, `sac/alpha`, ...).
    fn diagnostics(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
    /// Full state, such that [`MixingScheduler::restore`] on a scheduler built from the same
    /// config continues identically.
    fn checkpoint(&self) -> Result<Checkpoint>;
    /// Restores a state written by [`MixingScheduler::checkpoint`].
    fn restore(&mut self, checkpoint: &Checkpoint) -> Result<()>;
}

/// A static mixture's weights.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticConfig {
    /// One weight per domain, summing to 1.
    pub weights: Vec<f32>,
}

/// Any scheduler's configuration; `kind` selects it. Round-trips through JSON and TOML.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum SchedulerConfig {
    /// The uniform mixture.
    Uniform {},
    /// A fixed mixture.
    Static(StaticConfig),
    /// Online Data Mixing (EXP3 over domains, loss as reward).
    Odm(OdmConfig),
    /// The Holistic Data Scheduler (SAC with the holistic reward).
    Hds(HdsConfig),
}

/// Names accepted by [`SchedulerConfig::by_name`].
pub const SCHEDULER_NAMES: &[&str] = &[
    "uniform",
    "odm",
    "odm_group",
    "hds",
    "hds_align",
    "hds_quality",
    "hds_stability",
    "hds_vector",
];

impl SchedulerConfig {
    /// A default configuration by name: `uniform`; `odm` (paper EXP3, α = 0.9, reward ℓ);
    /// `odm_group` (the official mixed-minibatch variant, α = 0.5, reward exp ℓ); `hds` (weights
    /// 1/10/10, scalar critic); `hds_align`, `hds_quality`, `hds_stability` (one reward
    /// component, weight 1); `hds_vector` (the code-faithful per-domain critic).
    pub fn by_name(name: &str) -> Result<Self> {
        let hds_only = |a: f32, q: f32, s: f32| {
            let mut c = HdsConfig::default();
            c.reward.weights = crate::rewards::RewardWeights {
                align: a,
                quality: q,
                stability: s,
            };
            SchedulerConfig::Hds(c)
        };
        Ok(match name {
            "uniform" => SchedulerConfig::Uniform {},
            "odm" => SchedulerConfig::Odm(OdmConfig::default()),
            "odm_group" => SchedulerConfig::Odm(OdmConfig::group()),
            "hds" => SchedulerConfig::Hds(HdsConfig::default()),
            "hds_align" => hds_only(1.0, 0.0, 0.0),
            "hds_quality" => hds_only(0.0, 1.0, 0.0),
            "hds_stability" => hds_only(0.0, 0.0, 1.0),
            "hds_vector" => SchedulerConfig::Hds(HdsConfig {
                critic: CriticKind::PerDomain,
                ..HdsConfig::default()
            }),
            other => {
                return Err(DatamixError::UnknownName {
                    kind: "scheduler",
                    name: other.to_string(),
                    valid: SCHEDULER_NAMES.join(", "),
                });
            }
        })
    }

    /// Checks the configuration for `k` domains; `prefix` is the config path for messages.
    pub fn validate(&self, k: usize, prefix: &str) -> Result<()> {
        match self {
            SchedulerConfig::Uniform {} => Ok(()),
            SchedulerConfig::Static(c) => {
                crate::simplex::check_mixture(&c.weights, k, &format!("{prefix}.weights"))
            }
            SchedulerConfig::Odm(c) => c.validate(k, prefix),
            SchedulerConfig::Hds(c) => c.validate(k, prefix),
        }
    }

    /// Builds the scheduler for `k` domains and a run of `total_steps` steps. The HDS agent runs
    /// on backend `B` and `device`; `seed` seeds every random choice.
    pub fn build<B: AutodiffBackend>(
        &self,
        k: usize,
        total_steps: usize,
        seed: u64,
        device: &B::Device,
    ) -> Result<Box<dyn MixingScheduler>> {
        if k < 2 {
            return Err(DatamixError::config("domains", "need at least 2 domains"));
        }
        self.validate(k, "scheduler")?;
        Ok(match self {
            SchedulerConfig::Uniform {} => Box::new(StaticScheduler::uniform(k)),
            SchedulerConfig::Static(c) => Box::new(StaticScheduler::new(c.weights.clone())?),
            SchedulerConfig::Odm(c) => Box::new(OdmScheduler::new(c.clone(), k)?),
            SchedulerConfig::Hds(c) => Box::new(HdsScheduler::<B>::new(
                c.clone(),
                k,
                total_steps,
                seed,
                device.clone(),
            )?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_round_trip_through_json_and_toml() {
        for name in SCHEDULER_NAMES {
            let c = SchedulerConfig::by_name(name).unwrap();
            let j = serde_json::to_string(&c).unwrap();
            assert_eq!(
                serde_json::from_str::<SchedulerConfig>(&j).unwrap(),
                c,
                "{j}"
            );
            #[derive(Serialize, Deserialize)]
            struct W {
                s: SchedulerConfig,
            }
            let t = toml::to_string(&W { s: c.clone() }).unwrap();
            assert_eq!(toml::from_str::<W>(&t).unwrap().s, c, "{t}");
        }
        let s = SchedulerConfig::Static(StaticConfig {
            weights: vec![0.25, 0.75],
        });
        let j = serde_json::to_string(&s).unwrap();
        assert_eq!(j, r#"{"kind":"static","weights":[0.25,0.75]}"#);
    }

    #[test]
    fn unknown_names_and_keys_are_errors() {
        let e = SchedulerConfig::by_name("dorem").unwrap_err().to_string();
        assert!(
            e.contains("dorem") && e.contains("odm_group") && e.contains("hds"),
            "{e}"
        );
        let e = serde_json::from_str::<SchedulerConfig>(r#"{"kind":"odm","alpah":0.5}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("alpah"), "{e}");
        let e = serde_json::from_str::<SchedulerConfig>(r#"{"kind":"uniform","x":1}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains('x'), "{e}");
        let e = serde_json::from_str::<SchedulerConfig>(r#"{"kind":"sac"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("uniform") && e.contains("hds"), "{e}");
        let bad = SchedulerConfig::Static(StaticConfig {
            weights: vec![0.5, 0.6],
        });
        let e = bad.validate(2, "scheduler").unwrap_err().to_string();
        assert!(e.contains("scheduler.weights"), "{e}");
    }

    #[test]
    fn step_stats_validation_names_the_problem() {
        let s = StepStats {
            step: 0,
            total_steps: 10,
            sampling_probs: vec![0.5, 0.5],
            domain_loss: vec![1.0, f32::NAN],
            domain_counts: vec![1.0, 1.0],
            ..Default::default()
        };
        let e = s.validate(2).unwrap_err().to_string();
        assert!(e.contains("domain 1"), "{e}");
        assert!(s.validate(3).is_err());
    }

    #[test]
    fn checkpoint_kind_is_checked() {
        let c = Checkpoint::new("odm", &vec![1.0f64]).unwrap();
        let e = c.state::<Vec<f64>>("hds").unwrap_err().to_string();
        assert!(e.contains("odm") && e.contains("hds"), "{e}");
        let back = Checkpoint::from_json(&c.to_json()).unwrap();
        assert_eq!(back, c);
        assert!(Checkpoint::from_json("{").is_err());
    }
}
