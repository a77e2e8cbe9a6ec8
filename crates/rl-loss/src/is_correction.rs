//! Importance-sampling correction for the gap between the log-probs of the engine that
//! generated a rollout (π_rollout) and the trainer's π_old.
//!
//! The engine samples from π_rollout, but the loss's ratio is π_θ / π_old: kernels, precision,
//! batch composition and (with asynchronous rollouts) stale weights make the two differ. With
//! ρ_t = exp(log π_old(y_t) − log π_rollout(y_t)) (log-ratio clamped to [−20, 20]):
//!
//! * `none`: no correction (verl's default; the gap is only measured).
//! * `token_tis`: truncated IS, the per-token loss ℓ_t is multiplied by w_t = min(ρ_t, C)
//!   (Yao et al. 2025; verl and slime use C = 2 when on).
//! * `token_mask`: tokens with ρ_t outside [lo, hi] leave the loss (and its token count).
//! * `sequence_mask`: sequences whose geometric-mean ratio exp(mean_t log ρ_t) is outside
//!   [lo, hi] leave the loss (SkyRL recommends [0.99, 1.01]).
//! * `auto` (the default): resolved by the trainer with [`IsCorrection::resolve`] — `none` for
//!   the in-process engine with synchronous rollouts (π_rollout and π_old are the same weights,
//!   and differ by float rounding only), `token_tis` with C = 2 for a remote engine or
//!   asynchronous rollouts, where the gap is systematic (another kernel stack, or weights up to
//!   k steps old) and uncorrected it biases the gradient; truncation at 2 bounds the variance a
//!   weight can add, and is the setting verl, slime and the TIS authors use.
//!
//! The weights and masks depend only on host values known before the update, so they are
//! computed here on the host ([`sequence_weights`]): masks change the global token counts
//! before any micro-batch is formed, and weights enter the loss as a detached tensor
//! ([`crate::LossInput::is_weights`]).

use serde::{Deserialize, Serialize};

use crate::LossError;

/// Clamp of the log-ratio before `exp`, as the policy losses.
const LOG_RATIO_CLAMP: f64 = 20.0;

fn default_cap() -> f64 {
    2.0
}
fn default_token_low() -> f64 {
    0.5
}
fn default_token_high() -> f64 {
    5.0
}
fn default_seq_low() -> f64 {
    0.99
}
fn default_seq_high() -> f64 {
    1.01
}

/// The correction (see the module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "snake_case", deny_unknown_fields)]
pub enum IsCorrection {
    /// `none` in process and synchronous, `token_tis` (C = 2) otherwise.
    #[default]
    Auto,
    /// No correction.
    None,
    /// w_t = min(ρ_t, cap).
    TokenTis {
        /// C > 0 (default 2).
        #[serde(default = "default_cap")]
        cap: f64,
    },
    /// Tokens with ρ_t outside [low, high] are masked.
    TokenMask {
        /// Lower bound (default 0.5, OpenRLHF's).
        #[serde(default = "default_token_low")]
        low: f64,
        /// Upper bound (default 5, OpenRLHF's).
        #[serde(default = "default_token_high")]
        high: f64,
    },
    /// Sequences whose geometric-mean ratio is outside [low, high] are masked.
    SequenceMask {
        /// Lower bound (default 0.99, SkyRL's).
        #[serde(default = "default_seq_low")]
        low: f64,
        /// Upper bound (default 1.01).
        #[serde(default = "default_seq_high")]
        high: f64,
    },
}

rl_core::registry! {
    /// Registered names.
    pub const IS_CORRECTION_NAMES;
    /// By name with each variant's defaults.
    fn IsCorrection::from_name -> LossError, kind "IS correction" {
        "auto" => IsCorrection::Auto,
        "none" => IsCorrection::None,
        "token_tis" => IsCorrection::TokenTis { cap: default_cap() },
        "token_mask" => IsCorrection::TokenMask {
            low: default_token_low(),
            high: default_token_high(),
        },
        "sequence_mask" => IsCorrection::SequenceMask {
            low: default_seq_low(),
            high: default_seq_high(),
        },
    }
}

impl IsCorrection {
    /// Registry name.
    pub fn name(&self) -> &'static str {
        match self {
            IsCorrection::Auto => "auto",
            IsCorrection::None => "none",
            IsCorrection::TokenTis { .. } => "token_tis",
            IsCorrection::TokenMask { .. } => "token_mask",
            IsCorrection::SequenceMask { .. } => "sequence_mask",
        }
    }

    /// Whether the loss takes per-token weights or masks under this correction (`none` and an
    /// unresolved `auto` take none).
    pub fn reweights(&self) -> bool {
        !matches!(self, IsCorrection::None | IsCorrection::Auto)
    }

    /// `auto` resolved: `none` when the rollouts come from the trainer's own weights in
    /// process and synchronously (`same_weights`), `token_tis` with C = 2 otherwise. Other
    /// settings are returned unchanged.
    pub fn resolve(self, same_weights: bool) -> Self {
        match self {
            IsCorrection::Auto if same_weights => IsCorrection::None,
            IsCorrection::Auto => IsCorrection::TokenTis { cap: default_cap() },
            other => other,
        }
    }

    /// Checks ranges: C > 0, 0 ≤ lo < hi, all finite.
    pub fn validate(&self) -> Result<(), LossError> {
        match *self {
            IsCorrection::TokenTis { cap } if !(cap.is_finite() && cap > 0.0) => {
                Err(LossError::InvalidConfig(rl_core::InvalidValue {
                    field: "is_correction.cap",
                    value: cap.to_string(),
                    expected: "a finite number > 0",
                }))
            }
            IsCorrection::TokenMask { low, high } | IsCorrection::SequenceMask { low, high } => {
                if !(low.is_finite() && low >= 0.0) {
                    return Err(LossError::InvalidConfig(rl_core::InvalidValue {
                        field: "is_correction.low",
                        value: low.to_string(),
                        expected: "a finite number >= 0",
                    }));
                }
                if !(high.is_finite() && high > low) {
                    return Err(LossError::InvalidConfig(rl_core::InvalidValue {
                        field: "is_correction.high",
                        value: format!("{high} (low = {low})"),
                        expected: "a finite number > low",
                    }));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// The correction of one sequence's tokens.
#[derive(Clone, Debug, PartialEq)]
pub struct SequenceWeights {
    /// Factor on each token's loss (1 where nothing is truncated).
    pub weights: Vec<f32>,
    /// False where a token leaves the loss.
    pub keep: Vec<bool>,
    /// Mergeable statistics.
    pub stats: IsStats,
}

/// Sums and counts over tokens, mergeable across sequences, micro-batches and workers.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct IsStats {
    /// Tokens compared.
    pub tokens: usize,
    /// Σ |log π_old − log π_rollout|.
    pub abs_diff_sum: f64,
    /// max |log π_old − log π_rollout|.
    pub abs_diff_max: f64,
    /// Tokens whose weight was truncated at C.
    pub truncated: usize,
    /// Tokens masked (token or sequence masks).
    pub masked: usize,
}

impl IsStats {
    /// Adds `other`.
    pub fn merge(&mut self, other: &IsStats) {
        self.tokens += other.tokens;
        self.abs_diff_sum += other.abs_diff_sum;
        self.abs_diff_max = self.abs_diff_max.max(other.abs_diff_max);
        self.truncated += other.truncated;
        self.masked += other.masked;
    }

    /// Mean |log π_old − log π_rollout|.
    pub fn abs_diff_mean(&self) -> f64 {
        self.abs_diff_sum / self.tokens.max(1) as f64
    }

    /// Fraction of tokens truncated.
    pub fn frac_truncated(&self) -> f64 {
        self.truncated as f64 / self.tokens.max(1) as f64
    }

    /// Fraction of tokens masked.
    pub fn frac_masked(&self) -> f64 {
        self.masked as f64 / self.tokens.max(1) as f64
    }
}

/// Weights and masks of one sequence from its π_old and π_rollout log-probs (one per token).
/// `auto` must have been resolved. Errors: the two lengths differ, a log-prob is not finite.
pub fn sequence_weights(
    correction: &IsCorrection,
    old: &[f32],
    rollout: &[f32],
) -> Result<SequenceWeights, LossError> {
    if old.len() != rollout.len() {
        return Err(LossError::Shape {
            name: "rollout_logp",
            got: vec![rollout.len()],
            expected: vec![old.len()],
        });
    }
    if let Some(x) = old.iter().chain(rollout).find(|x| !x.is_finite()) {
        return Err(LossError::InvalidConfig(rl_core::InvalidValue {
            field: "rollout_logp",
            value: x.to_string(),
            expected: "finite log-probs",
        }));
    }
    let n = old.len();
    let log_ratio: Vec<f64> = old
        .iter()
        .zip(rollout)
        .map(|(&o, &r)| (o as f64 - r as f64).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP))
        .collect();
    let mut stats = IsStats {
        tokens: n,
        ..IsStats::default()
    };
    for (&o, &r) in old.iter().zip(rollout) {
        let d = (o as f64 - r as f64).abs();
        stats.abs_diff_sum += d;
        stats.abs_diff_max = stats.abs_diff_max.max(d);
    }
    let mut weights = vec![1.0f32; n];
    let mut keep = vec![true; n];
    match *correction {
        IsCorrection::Auto | IsCorrection::None => {}
        IsCorrection::TokenTis { cap } => {
            for (w, &lr) in weights.iter_mut().zip(&log_ratio) {
                let rho = lr.exp();
                if rho > cap {
                    stats.truncated += 1;
                }
                *w = rho.min(cap) as f32;
            }
        }
        IsCorrection::TokenMask { low, high } => {
            for (k, &lr) in keep.iter_mut().zip(&log_ratio) {
                let rho = lr.exp();
                if !(low..=high).contains(&rho) {
                    *k = false;
                    stats.masked += 1;
                }
            }
        }
        IsCorrection::SequenceMask { low, high } => {
            if n > 0 {
                let geo = (log_ratio.iter().sum::<f64>() / n as f64).exp();
                if !(low..=high).contains(&geo) {
                    keep.iter_mut().for_each(|k| *k = false);
                    stats.masked += n;
                }
            }
        }
    }
    Ok(SequenceWeights {
        weights,
        keep,
        stats,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // π_old and π_rollout log-probs of a 3-token sequence. Log-ratios: +0.5, −0.3, +1.0, so
    // ρ = e^0.5 = 1.6487, e^−0.3 = 0.7408, e^1 = 2.7183; their mean log-ratio is 0.4
    // (geometric-mean ratio e^0.4 = 1.4918); |differences| sum to 1.8, max 1.0.
    const OLD: [f32; 3] = [-1.0, -0.5, -0.25];
    const ROLL: [f32; 3] = [-1.5, -0.2, -1.25];

    fn close(a: f32, b: f64) -> bool {
        (a as f64 - b).abs() < 1e-6
    }

    #[test]
    fn token_tis_truncates_at_the_cap() {
        let w = sequence_weights(&IsCorrection::TokenTis { cap: 2.0 }, &OLD, &ROLL).unwrap();
        assert!(close(w.weights[0], 0.5f64.exp()));
        assert!(close(w.weights[1], (-0.3f64).exp()));
        assert!(close(w.weights[2], 2.0));
        assert_eq!(w.keep, vec![true; 3]);
        assert_eq!(w.stats.truncated, 1);
        assert_eq!(w.stats.masked, 0);
        assert!((w.stats.abs_diff_sum - 1.8).abs() < 1e-6);
        assert!((w.stats.abs_diff_max - 1.0).abs() < 1e-6);
    }

    #[test]
    fn token_mask_drops_tokens_outside_the_band() {
        // [0.5, 2]: 1.6487 and 0.7408 stay, 2.7183 goes.
        let c = IsCorrection::TokenMask {
            low: 0.5,
            high: 2.0,
        };
        let w = sequence_weights(&c, &OLD, &ROLL).unwrap();
        assert_eq!(w.keep, vec![true, true, false]);
        assert_eq!(w.weights, vec![1.0; 3]);
        assert_eq!((w.stats.masked, w.stats.truncated), (1, 0));
        // [0.8, 2]: 0.7408 goes too.
        let c = IsCorrection::TokenMask {
            low: 0.8,
            high: 2.0,
        };
        assert_eq!(
            sequence_weights(&c, &OLD, &ROLL).unwrap().keep,
            vec![true, false, false]
        );
    }

    #[test]
    fn sequence_mask_uses_the_geometric_mean_ratio() {
        // e^0.4 = 1.4918: inside [0.5, 1.5], outside [0.5, 1.4].
        let inside = IsCorrection::SequenceMask {
            low: 0.5,
            high: 1.5,
        };
        let w = sequence_weights(&inside, &OLD, &ROLL).unwrap();
        assert_eq!(w.keep, vec![true; 3]);
        let outside = IsCorrection::SequenceMask {
            low: 0.5,
            high: 1.4,
        };
        let w = sequence_weights(&outside, &OLD, &ROLL).unwrap();
        assert_eq!(w.keep, vec![false; 3]);
        assert_eq!(w.stats.masked, 3);
    }

    #[test]
    fn none_only_measures() {
        let w = sequence_weights(&IsCorrection::None, &OLD, &ROLL).unwrap();
        assert_eq!(w.weights, vec![1.0; 3]);
        assert_eq!(w.keep, vec![true; 3]);
        assert_eq!(w.stats.tokens, 3);
        let mut s = w.stats;
        s.merge(&w.stats);
        assert!((s.abs_diff_mean() - 0.6).abs() < 1e-6);
    }

    #[test]
    fn auto_resolves_by_where_the_rollouts_come_from() {
        assert_eq!(IsCorrection::Auto.resolve(true), IsCorrection::None);
        assert_eq!(
            IsCorrection::Auto.resolve(false),
            IsCorrection::TokenTis { cap: 2.0 }
        );
        let m = IsCorrection::TokenMask {
            low: 0.1,
            high: 3.0,
        };
        assert_eq!(m.resolve(true), m);
    }

    #[test]
    fn bad_settings_name_the_field() {
        let msg = |c: IsCorrection| c.validate().unwrap_err().to_string();
        assert!(msg(IsCorrection::TokenTis { cap: 0.0 }).contains("is_correction.cap"));
        assert!(msg(IsCorrection::TokenTis { cap: f64::NAN }).contains("is_correction.cap"));
        assert!(
            msg(IsCorrection::TokenMask {
                low: 2.0,
                high: 2.0
            })
            .contains("is_correction.high")
        );
        assert!(
            msg(IsCorrection::SequenceMask {
                low: -1.0,
                high: 2.0
            })
            .contains("is_correction.low")
        );
        let e = IsCorrection::from_name("tis").unwrap_err().to_string();
        assert!(e.contains("unknown IS correction `tis`") && e.contains("token_tis"));
        let e = sequence_weights(&IsCorrection::None, &OLD, &ROLL[..2]).unwrap_err();
        assert!(matches!(e, LossError::Shape { .. }));
    }
}
