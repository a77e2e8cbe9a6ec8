//! On-policy distillation's sampled-token signal as per-token advantages.
//!
//! The student samples a response y; a teacher scores the student's own tokens. The per-token
//! reverse KL KL(π_S ‖ π_T) has the single-sample estimate log π_S(y_t) − log π_T(y_t) at the
//! sampled token (its expectation over y_t ~ π_S is the reverse KL of that position). Used as
//! a per-token advantage with the sign flipped, the policy gradient lowers the reverse KL:
//!
//! A_t = w·Â + c·(log π_T(y_t) − log π_S(y_t))
//!
//! with Â the response's outcome advantage from any estimator, w = `reward_weight` (0: pure
//! distillation) and c = `coef`. This is tinker-cookbook's on-policy distillation recipe
//! (`reverse_kl = sampled logprobs − teacher logprobs`, `advantages −= coef · reverse_kl`, no
//! discounting) and prime-rl's. π_S is the policy the tokens were sampled from, as seen by the
//! trainer (π_old).

use crate::AdvantageError;

/// The weights of the two signals (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DistillSignal {
    /// c: weight of the teacher's signal, > 0.
    pub coef: f64,
    /// w: weight of the outcome advantage, ≥ 0 (0: distillation only).
    pub reward_weight: f64,
}

impl DistillSignal {
    /// Checks both weights (finite; `coef` > 0, `reward_weight` ≥ 0).
    pub fn new(coef: f64, reward_weight: f64) -> Result<Self, AdvantageError> {
        if !(coef.is_finite() && coef > 0.0) {
            return Err(AdvantageError::InvalidConfig(rl_core::InvalidValue {
                field: "distill.coef",
                value: coef.to_string(),
                expected: "a finite number > 0",
            }));
        }
        if !(reward_weight.is_finite() && reward_weight >= 0.0) {
            return Err(AdvantageError::InvalidConfig(rl_core::InvalidValue {
                field: "distill.reward_weight",
                value: reward_weight.to_string(),
                expected: "a finite number ≥ 0 (0: distillation only)",
            }));
        }
        Ok(Self {
            coef,
            reward_weight,
        })
    }

    /// A_t for one response: its outcome advantage and its tokens' student and teacher
    /// log-probs. Errors when the two log-prob vectors differ in length or hold a non-finite
    /// value (naming the token).
    pub fn token_advantages(
        &self,
        outcome: f64,
        student: &[f32],
        teacher: &[f32],
    ) -> Result<Vec<f32>, AdvantageError> {
        if student.len() != teacher.len() {
            return Err(AdvantageError::LogprobMismatch {
                student: student.len(),
                teacher: teacher.len(),
            });
        }
        let base = self.reward_weight * outcome;
        student
            .iter()
            .zip(teacher)
            .enumerate()
            .map(|(t, (&s, &q))| {
                if !(s.is_finite() && q.is_finite()) {
                    return Err(AdvantageError::InvalidConfig(rl_core::InvalidValue {
                        field: "distill log-probs",
                        value: format!("token {t}: student {s}, teacher {q}"),
                        expected: "finite log-probs",
                    }));
                }
                Ok((base + self.coef * (f64::from(q) - f64::from(s))) as f32)
            })
            .collect()
    }
}

/// The sampled-token reverse-KL estimate summed over tokens and its count, Σ_t (log π_S −
/// log π_T) and the number of tokens: add them over responses (and workers), then divide.
pub fn reverse_kl_sum(student: &[f32], teacher: &[f32]) -> (f64, usize) {
    let sum = student
        .iter()
        .zip(teacher)
        .map(|(&s, &q)| f64::from(s) - f64::from(q))
        .sum();
    (sum, student.len().min(teacher.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Derivation: with c = 0.5, w = 2, Â = 0.25 the base is 0.5; token 0 has
    /// log π_T − log π_S = −1.0 − (−0.5) = −0.5 → 0.5 + 0.5·(−0.5) = 0.25; token 1 has
    /// −0.25 − (−2.25) = 2 → 0.5 + 1 = 1.5.
    #[test]
    fn token_advantages_follow_the_formula() {
        let s = DistillSignal::new(0.5, 2.0).unwrap();
        let a = s
            .token_advantages(0.25, &[-0.5, -2.25], &[-1.0, -0.25])
            .unwrap();
        assert_eq!(a, vec![0.25, 1.5]);
        // Teacher = student and no reward: no signal at all.
        let z = DistillSignal::new(1.0, 0.0).unwrap();
        assert_eq!(
            z.token_advantages(3.0, &[-0.7, -1.1], &[-0.7, -1.1])
                .unwrap(),
            vec![0.0, 0.0]
        );
        // Σ (log π_S − log π_T) = (−0.5 + 1.0) + (−2.25 + 0.25) = −1.5 over 2 tokens.
        assert_eq!(reverse_kl_sum(&[-0.5, -2.25], &[-1.0, -0.25]), (-1.5, 2));
    }

    #[test]
    fn bad_weights_and_inputs_are_errors() {
        assert!(DistillSignal::new(0.0, 0.0).is_err());
        assert!(DistillSignal::new(f64::NAN, 0.0).is_err());
        assert!(DistillSignal::new(1.0, -1.0).is_err());
        let s = DistillSignal::new(1.0, 0.0).unwrap();
        assert!(s.token_advantages(0.0, &[-1.0], &[]).is_err());
        assert!(
            s.token_advantages(0.0, &[f32::NEG_INFINITY], &[-1.0])
                .is_err()
        );
    }
}
