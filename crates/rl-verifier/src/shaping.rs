//! Length-based reward shaping: DAPO's soft overlong punishment and truncation masking.

use serde::{Deserialize, Serialize};

use crate::ConfigError;

/// The length of one response as the generator reports it. Lengths are in tokens and come from
/// the sampler, never from the text: the trainer maps the finish reason `length` (the generation
/// hit its token limit) to `truncated = true`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponseLength {
    /// Generated tokens.
    pub tokens: usize,
    /// The generation stopped at the token limit, not at an end-of-sequence or stop token.
    pub truncated: bool,
}

impl ResponseLength {
    /// A response that ended on its own.
    pub fn finished(tokens: usize) -> Self {
        ResponseLength {
            tokens,
            truncated: false,
        }
    }

    /// A response cut at the token limit.
    pub fn truncated(tokens: usize) -> Self {
        ResponseLength {
            tokens,
            truncated: true,
        }
    }
}

/// What to do with long and truncated responses. Every choice changes the learning signal, so
/// it is explicit configuration (`{"kind": "soft_punish", "max_len": 20480, "cache_len": 4096}`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum OverlongPolicy {
    /// Rewards unchanged, every sample trains.
    #[default]
    Off,
    /// DAPO's soft overlong punishment (arXiv 2503.14476, eq. 13), added to the reward:
    /// with L_max = `max_len`, L_cache = `cache_len` and L the response length in tokens,
    /// penalty = 0 if L ≤ L_max − L_cache; ((L_max − L_cache) − L) / L_cache if
    /// L_max − L_cache < L ≤ L_max; −1 if L > L_max; multiplied by `penalty_factor` (verl's
    /// `overlong_buffer.penalty_factor`, default 1).
    SoftPunish {
        /// L_max: the longest response, in tokens (DAPO: 20480).
        max_len: usize,
        /// L_cache: the punishment interval before L_max (DAPO: 4096).
        cache_len: usize,
        /// Scale of the penalty.
        #[serde(default = "one")]
        penalty_factor: f64,
        /// Also mask truncated samples out of the loss (TRL's DAPO preset does both).
        #[serde(default)]
        mask_truncated: bool,
    },
    /// Overlong filtering: truncated samples are masked out of the loss (no gradient); rewards
    /// unchanged.
    MaskTruncated,
}

fn one() -> f64 {
    1.0
}

/// A reward after shaping.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShapedReward {
    /// The reward to train on: the input reward plus `penalty`.
    pub reward: f64,
    /// The length penalty that was added (0 or negative), for logging.
    pub penalty: f64,
    /// False when the sample must be masked out of the loss.
    pub keep: bool,
}

impl OverlongPolicy {
    /// DAPO's defaults: L_max 20480, L_cache 4096, factor 1, no masking.
    pub fn dapo() -> Self {
        OverlongPolicy::SoftPunish {
            max_len: 20480,
            cache_len: 4096,
            penalty_factor: 1.0,
            mask_truncated: false,
        }
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let OverlongPolicy::SoftPunish {
            max_len,
            cache_len,
            penalty_factor,
            ..
        } = *self
        {
            if max_len == 0 {
                return Err(ConfigError::InvalidValue(rl_core::InvalidValue {
                    field: "overlong.max_len",
                    value: "0".into(),
                    expected: "a positive number of tokens",
                }));
            }
            if cache_len == 0 || cache_len > max_len {
                return Err(ConfigError::InvalidValue(rl_core::InvalidValue {
                    field: "overlong.cache_len",
                    value: cache_len.to_string(),
                    expected: "a number of tokens in 1..=max_len",
                }));
            }
            if !penalty_factor.is_finite() || penalty_factor < 0.0 {
                return Err(ConfigError::InvalidValue(rl_core::InvalidValue {
                    field: "overlong.penalty_factor",
                    value: penalty_factor.to_string(),
                    expected: "a finite number ≥ 0",
                }));
            }
        }
        Ok(())
    }

    /// The length penalty (0 or negative) for one response.
    pub fn penalty(&self, length: ResponseLength) -> f64 {
        match *self {
            OverlongPolicy::SoftPunish {
                max_len,
                cache_len,
                penalty_factor,
                ..
            } => penalty_factor * soft_overlong_penalty(length.tokens, max_len, cache_len),
            OverlongPolicy::Off | OverlongPolicy::MaskTruncated => 0.0,
        }
    }

    /// Whether the sample trains (false: mask it out of the loss).
    pub fn keep(&self, length: ResponseLength) -> bool {
        match *self {
            OverlongPolicy::MaskTruncated => !length.truncated,
            OverlongPolicy::SoftPunish { mask_truncated, .. } => {
                !(mask_truncated && length.truncated)
            }
            OverlongPolicy::Off => true,
        }
    }

    /// Applies the policy to one reward.
    pub fn shape(&self, reward: f64, length: ResponseLength) -> ShapedReward {
        let penalty = self.penalty(length);
        ShapedReward {
            reward: reward + penalty,
            penalty,
            keep: self.keep(length),
        }
    }
}

/// DAPO's soft overlong penalty R_length(L) for L_max = `max_len`, L_cache = `cache_len`
/// (see [`OverlongPolicy::SoftPunish`]). `cache_len` must be positive.
pub fn soft_overlong_penalty(len: usize, max_len: usize, cache_len: usize) -> f64 {
    let start = max_len.saturating_sub(cache_len);
    if len <= start {
        0.0
    } else if len <= max_len {
        -((len - start) as f64) / cache_len as f64
    } else {
        -1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dapo_and_trl_vectors() {
        // algorithms.md §10.2 (DAPO eq. 13): (20480, 4096): ≤16384 → 0, 18432 → −0.5,
        // 20480 → −1; TRL's example (100, 20) at 90 → (80 − 90)/20 = −0.5.
        assert_eq!(soft_overlong_penalty(16384, 20480, 4096), 0.0);
        assert_eq!(soft_overlong_penalty(18432, 20480, 4096), -0.5);
        assert_eq!(soft_overlong_penalty(20480, 20480, 4096), -1.0);
        assert_eq!(soft_overlong_penalty(20481, 20480, 4096), -1.0);
        assert_eq!(soft_overlong_penalty(90, 100, 20), -0.5);
        // One token into the interval: (16384 − 16385)/4096.
        assert_eq!(soft_overlong_penalty(16385, 20480, 4096), -1.0 / 4096.0);
    }

    #[test]
    fn policies() {
        let p = OverlongPolicy::dapo();
        let s = p.shape(1.0, ResponseLength::finished(18432));
        assert_eq!((s.reward, s.penalty, s.keep), (0.5, -0.5, true));
        let m = OverlongPolicy::MaskTruncated;
        assert!(!m.keep(ResponseLength::truncated(10)));
        assert!(m.keep(ResponseLength::finished(10)));
        assert_eq!(m.shape(1.0, ResponseLength::truncated(10)).reward, 1.0);
        assert!(OverlongPolicy::Off.keep(ResponseLength::truncated(10)));
        let bad = OverlongPolicy::SoftPunish {
            max_len: 10,
            cache_len: 20,
            penalty_factor: 1.0,
            mask_truncated: false,
        };
        let err = bad.validate().unwrap_err().to_string();
        assert!(err.contains("overlong.cache_len"), "{err}");
    }
}
