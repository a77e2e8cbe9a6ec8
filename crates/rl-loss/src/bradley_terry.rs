//! The Bradley–Terry loss of a reward model on preference pairs, as TRL's `RewardTrainer`
//! computes it (`compute_loss`, TRL 1.16):
//!
//! ```text
//! ℓ = mean_i −log σ(r_c,i − r_r,i − m_i)  +  c · mean_i (r_c,i + r_r,i)²
//! ```
//!
//! with r_c, r_r the scores of the chosen and rejected responses, an optional per-pair margin m
//! (TRL's `margin` column) and an optional centring coefficient c (TRL's
//! `center_rewards_coefficient`, which keeps the scores near zero). The accuracy counts pairs
//! with r_c > r_r strictly. Tested against TRL's function and its autograd gradient
//! (`bradley_terry_matches_trl`; fixtures by `tools/trl/gen_reward_loss_fixtures.py`).

use burn::prelude::*;
use burn::tensor::activation::log_sigmoid;

use crate::LossError;

/// The loss of one batch of pairs and TRL's two pair metrics.
#[derive(Debug)]
pub struct PairLoss<B: Backend> {
    /// The loss (differentiable in both score tensors).
    pub loss: Tensor<B, 1>,
    /// Pairs whose chosen score is strictly higher, as a fraction.
    pub accuracy: f64,
    /// mean(r_c − r_r).
    pub mean_margin: f64,
}

/// The Bradley–Terry loss of `chosen` and `rejected` scores (`[pairs]`), with an optional margin
/// `[pairs]` and centring coefficient (finite, ≥ 0).
pub fn bradley_terry<B: Backend>(
    chosen: Tensor<B, 1>,
    rejected: Tensor<B, 1>,
    margin: Option<Tensor<B, 1>>,
    center_coefficient: Option<f64>,
) -> Result<PairLoss<B>, LossError> {
    let [n] = chosen.dims();
    if n == 0 {
        return Err(LossError::Shape {
            name: "chosen",
            got: vec![0],
            expected: vec![1],
        });
    }
    for (name, t) in [("rejected", Some(&rejected)), ("margin", margin.as_ref())] {
        if let Some(t) = t
            && t.dims() != [n]
        {
            return Err(LossError::Shape {
                name,
                got: t.dims().to_vec(),
                expected: vec![n],
            });
        }
    }
    if let Some(c) = center_coefficient
        && !(c.is_finite() && c >= 0.0)
    {
        return Err(LossError::InvalidConfig(rl_core::InvalidValue {
            field: "center_rewards_coefficient",
            value: c.to_string(),
            expected: "a finite number >= 0",
        }));
    }
    let gap = chosen.clone() - rejected.clone();
    let shifted = match margin {
        Some(m) => gap.clone() - m.detach(),
        None => gap.clone(),
    };
    let mut loss = log_sigmoid(shifted).mean().neg();
    if let Some(c) = center_coefficient {
        loss = loss + (chosen + rejected).square().mean().mul_scalar(c);
    }
    let gap = gap.detach();
    let stats: Vec<f64> = Tensor::cat(
        vec![gap.clone().greater_elem(0.0).float().mean(), gap.mean()],
        0,
    )
    .into_data()
    .convert::<f64>()
    .into_vec::<f64>()
    .map_err(|e| LossError::Data(format!("{e:?}")))?;
    Ok(PairLoss {
        loss,
        accuracy: stats[0],
        mean_margin: stats[1],
    })
}
