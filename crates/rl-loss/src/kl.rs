use burn::prelude::*;

use crate::KlEstimator;

/// Per-token KL estimate of KL(π_θ ‖ π_ref) from log-probs, x = logp − ref_logp.
///
/// k1 = x; k2 = x²/2; k3 = e^{−x} + x − 1 with −x clamped to [−20, 20] and the result to
/// [−10, 10] (verl `low_var_kl`); abs = |x|. With `straight_through`, the value is the chosen
/// estimator's and the gradient is k2's (verl's "+" estimators).
pub fn kl_per_token<B: Backend>(
    logp: Tensor<B, 2>,
    ref_logp: Tensor<B, 2>,
    estimator: KlEstimator,
    straight_through: bool,
) -> Tensor<B, 2> {
    let x = logp - ref_logp;
    let value = match estimator {
        KlEstimator::K1 => x.clone(),
        KlEstimator::K2 => x.clone().square().mul_scalar(0.5),
        KlEstimator::K3 => {
            let neg = x.clone().neg().clamp(-20.0, 20.0);
            (neg.clone().exp() - neg - 1.0).clamp(-10.0, 10.0)
        }
        KlEstimator::Abs => x.clone().abs(),
    };
    if straight_through {
        let k2 = x.square().mul_scalar(0.5);
        value.detach() + k2.clone() - k2.detach()
    } else {
        value
    }
}
