//! PPO's per-token advantages from a learned value: generalized advantage estimation (GAE,
//! Schulman et al. 2016, arXiv 1506.02438) as verl 0.9.1 computes it
//! (`core_algos.compute_gae_advantage_return`, `adv_estimator = "gae"`).
//!
//! For one response with token rewards r_t (an outcome reward sits on the last token), the
//! critic's values V_t and a mask m_t (false on a multi-turn episode's observation tokens),
//! backwards from the last token with V_next = 0 and g = 0:
//!
//! ```text
//! δ_t = r_t + γ·V_next − V_t
//! g'  = δ_t + γλ·g
//! if m_t { V_next = V_t; g = g' }      (an observation token neither bootstraps nor accumulates)
//! A_t = g,  R_t = A_t + V_t            (the return the critic regresses on)
//! ```
//!
//! The advantages are then whitened over every masked-in token of the batch (verl's
//! `masked_whiten`: Bessel-corrected token variance, ε = 1e-8 in the mean's count and under the
//! square root, the mean not added back); the returns are not. Tests: equal to verl's own function
//! on fixtures with uneven lengths, masks with holes and γ, λ < 1
//! (`tests/gae.rs`, made by `tools/verl/gen_verl_fixtures.py`).

use crate::AdvantageError;
use crate::estimator::reinforce_pp::verl_masked_whiten;

/// One response's per-token inputs to GAE (all three of the response's length).
#[derive(Clone, Copy, Debug)]
pub struct TokenTrajectory<'a> {
    /// r_t: the reward of each token (an outcome reward on the last one, zeros elsewhere; a KL
    /// penalty in the reward subtracts on every token).
    pub rewards: &'a [f64],
    /// V_t: the critic's value at each token, from the policy that generated the response.
    pub values: &'a [f64],
    /// m_t: true on the tokens the policy sampled, false on observation tokens.
    pub mask: &'a [bool],
}

/// A batch's GAE output, one vector per response, each of the response's length.
#[derive(Clone, Debug, PartialEq)]
pub struct GaeBatch {
    /// Whitened advantages; 0 on masked-out tokens (which no loss reads).
    pub advantages: Vec<Vec<f64>>,
    /// Returns A_t + V_t before whitening: the critic's regression targets.
    pub returns: Vec<Vec<f64>>,
}

/// GAE's discount γ and trace decay λ.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gae {
    /// γ ∈ [0, 1] (verl's `algorithm.gamma`, default 1).
    pub gamma: f64,
    /// λ ∈ [0, 1] (verl's `algorithm.lam`, default 1).
    pub lam: f64,
}

impl Default for Gae {
    /// verl's defaults: γ = λ = 1.
    fn default() -> Self {
        Self {
            gamma: 1.0,
            lam: 1.0,
        }
    }
}

impl Gae {
    /// Checks γ and λ (each finite, in [0, 1]).
    pub fn new(gamma: f64, lam: f64) -> Result<Self, AdvantageError> {
        for (field, v) in [("gae.gamma", gamma), ("gae.lam", lam)] {
            if !(v.is_finite() && (0.0..=1.0).contains(&v)) {
                return Err(AdvantageError::InvalidConfig(rl_core::InvalidValue {
                    field,
                    value: v.to_string(),
                    expected: "a number in [0, 1]",
                }));
            }
        }
        Ok(Self { gamma, lam })
    }

    /// One response's advantages (not whitened) and returns; `index` names the response in
    /// errors. Errors when the three inputs differ in length or hold a non-finite number.
    pub fn response(
        &self,
        index: usize,
        t: &TokenTrajectory<'_>,
    ) -> Result<(Vec<f64>, Vec<f64>), AdvantageError> {
        check(index, t)?;
        let n = t.rewards.len();
        let (mut advantages, mut returns) = (vec![0.0; n], vec![0.0; n]);
        let (mut next_value, mut last) = (0.0, 0.0);
        for i in (0..n).rev() {
            let delta = t.rewards[i] + self.gamma * next_value - t.values[i];
            if t.mask[i] {
                last = delta + self.gamma * self.lam * last;
                next_value = t.values[i];
            }
            advantages[i] = last;
            returns[i] = last + t.values[i];
        }
        Ok((advantages, returns))
    }

    /// Every response's advantages, whitened over the batch's masked-in tokens, and returns.
    /// Fewer than two masked-in tokens, or advantages all equal, give zero advantages (verl
    /// raises on the first and divides rounding noise by √1e-8 on the second).
    pub fn batch(&self, responses: &[TokenTrajectory<'_>]) -> Result<GaeBatch, AdvantageError> {
        let mut flat = Vec::new();
        let mut weights = Vec::new();
        let mut returns = Vec::with_capacity(responses.len());
        for (i, t) in responses.iter().enumerate() {
            let (a, r) = self.response(i, t)?;
            flat.extend(a);
            weights.extend(t.mask.iter().map(|&m| if m { 1.0 } else { 0.0 }));
            returns.push(r);
        }
        verl_masked_whiten(&mut flat, &weights, 0.0);
        let mut rest = flat.as_slice();
        let advantages = responses
            .iter()
            .map(|t| {
                let (head, tail) = rest.split_at(t.mask.len());
                rest = tail;
                head.to_vec()
            })
            .collect();
        Ok(GaeBatch {
            advantages,
            returns,
        })
    }
}

fn check(index: usize, t: &TokenTrajectory<'_>) -> Result<(), AdvantageError> {
    let n = t.rewards.len();
    if t.values.len() != n || t.mask.len() != n {
        return Err(AdvantageError::TokenInputMismatch {
            response: index,
            rewards: n,
            values: t.values.len(),
            mask: t.mask.len(),
        });
    }
    for (what, xs) in [("reward", t.rewards), ("value", t.values)] {
        if let Some(token) = xs.iter().position(|x| !x.is_finite()) {
            return Err(AdvantageError::NonFiniteToken {
                response: index,
                token,
                what,
                value: xs[token],
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Worked by hand: γ = 0.5, λ = 0.5, rewards (0, 0, 1), values (0.2, 0.4, 0.6).
    /// t = 2: δ = 1 − 0.6 = 0.4, g = 0.4; t = 1: δ = 0 + 0.5·0.6 − 0.4 = −0.1,
    /// g = −0.1 + 0.25·0.4 = 0; t = 0: δ = 0.5·0.4 − 0.2 = 0, g = 0 + 0.25·0 = 0.
    #[test]
    fn one_response_by_hand() {
        let g = Gae::new(0.5, 0.5).unwrap();
        let t = TokenTrajectory {
            rewards: &[0.0, 0.0, 1.0],
            values: &[0.2, 0.4, 0.6],
            mask: &[true, true, true],
        };
        let (a, r) = g.response(0, &t).unwrap();
        for (x, y) in a.iter().zip([0.0, 0.0, 0.4]) {
            assert!((x - y).abs() < 1e-12, "{a:?}");
        }
        for (x, y) in r.iter().zip([0.2, 0.4, 1.0]) {
            assert!((x - y).abs() < 1e-12, "{r:?}");
        }
    }

    /// An observation token in the middle is skipped: with γ = λ = 1 the advantage of the first
    /// token is r − V_0 whatever the observation token's value; the observation token carries the
    /// later token's advantage.
    #[test]
    fn observation_tokens_neither_bootstrap_nor_accumulate() {
        let g = Gae::default();
        let t = TokenTrajectory {
            rewards: &[0.0, 0.0, 1.0],
            values: &[0.25, 9.0, 0.5],
            mask: &[true, false, true],
        };
        let (a, _) = g.response(0, &t).unwrap();
        assert_eq!(a, vec![0.75, 0.5, 0.5]);
    }

    #[test]
    fn bad_inputs_are_named() {
        assert!(Gae::new(1.5, 1.0).is_err());
        assert!(Gae::new(1.0, f64::NAN).is_err());
        let g = Gae::default();
        let e = g
            .batch(&[TokenTrajectory {
                rewards: &[0.0, 1.0],
                values: &[0.0],
                mask: &[true, true],
            }])
            .unwrap_err();
        assert!(e.to_string().contains("response 0"), "{e}");
        let e = g
            .response(
                3,
                &TokenTrajectory {
                    rewards: &[0.0, f64::INFINITY],
                    values: &[0.0, 0.0],
                    mask: &[true, true],
                },
            )
            .unwrap_err();
        assert!(e.to_string().contains("token 1"), "{e}");
    }

    #[test]
    fn a_batch_with_one_token_has_zero_advantages() {
        let out = Gae::default()
            .batch(&[TokenTrajectory {
                rewards: &[1.0],
                values: &[0.5],
                mask: &[true],
            }])
            .unwrap();
        assert_eq!(out.advantages, vec![vec![0.0]]);
        assert_eq!(out.returns, vec![vec![1.0]]);
    }
}
