use burn::prelude::*;

use crate::{
    GlobalCounts, LossConfig, LossError, LossMetrics, PolicyLoss, aggregate, kl_per_token,
};

/// verl clamps the token log-ratio to this before exp.
const LOG_RATIO_CLAMP: f64 = 20.0;
/// verl clamps GSPO's sequence log-ratio at most to this.
const GSPO_LOG_RATIO_MAX: f64 = 10.0;

/// The tensors of one (micro-)batch, all `[sequences, tokens]`.
#[derive(Clone, Debug)]
pub struct LossInput<B: Backend> {
    /// Log-probs of the sampled tokens under the current policy (differentiable).
    pub logp: Tensor<B, 2>,
    /// Log-probs under the policy that generated the data (π_old), no gradient.
    pub old_logp: Tensor<B, 2>,
    /// Advantage of each token (a sequence's scalar broadcast to its tokens).
    pub advantages: Tensor<B, 2>,
    /// True at valid response tokens (from lengths and finish reasons).
    pub mask: Tensor<B, 2, Bool>,
    /// Log-probs under the reference policy (needed with a KL term).
    pub ref_logp: Option<Tensor<B, 2>>,
    /// Per-token entropy of the current policy (needed with an entropy bonus; used for metrics).
    pub entropy: Option<Tensor<B, 2>>,
    /// Importance-sampling weights on the per-token policy loss (see [`crate::IsCorrection`];
    /// `None` = all 1). No gradient flows through them.
    pub is_weights: Option<Tensor<B, 2>>,
}

/// The loss and its parts.
#[derive(Clone, Debug)]
pub struct LossOutput<B: Backend> {
    /// pg + β·KL − c_ent·entropy, a one-element tensor to call `backward` on.
    pub loss: Tensor<B, 1>,
    /// The aggregated policy-gradient loss.
    pub policy_loss: Tensor<B, 1>,
    /// Diagnostics (host values).
    pub metrics: LossMetrics,
}

/// Per-token validity mask from per-sequence lengths (`lengths[i]` leading tokens are valid).
pub fn mask_from_lengths<B: Backend>(
    lengths: &[usize],
    tokens: usize,
    device: &B::Device,
) -> Tensor<B, 2, Bool> {
    let mut data = Vec::with_capacity(lengths.len() * tokens);
    for &l in lengths {
        data.extend((0..tokens).map(|t| t < l));
    }
    Tensor::from_data(TensorData::new(data, [lengths.len(), tokens]), device)
}

/// Per-token policy loss and the quantities its metrics need.
#[derive(Clone, Debug)]
pub struct PerToken<B: Backend> {
    /// ℓ per token (0 at padding).
    pub loss: Tensor<B, 2>,
    /// Importance ratio per token (detached; 1 for REINFORCE when logp = logp_old).
    pub ratio: Tensor<B, 2>,
    /// Clipped at the upper bound.
    pub clipped_upper: Tensor<B, 2, Bool>,
    /// Clipped at the lower bound.
    pub clipped_lower: Tensor<B, 2, Bool>,
    /// Capped by dual-clip.
    pub dual_clipped: Tensor<B, 2, Bool>,
}

fn clip_flags<B: Backend>(
    ratio: &Tensor<B, 2>,
    adv: &Tensor<B, 2>,
    lo: f64,
    hi: f64,
) -> (Tensor<B, 2, Bool>, Tensor<B, 2, Bool>) {
    let upper = adv
        .clone()
        .greater_elem(0.0)
        .bool_and(ratio.clone().greater_elem(1.0 + hi));
    let lower = adv
        .clone()
        .lower_elem(0.0)
        .bool_and(ratio.clone().lower_elem(1.0 - lo));
    (upper, lower)
}

/// max(−A·r, −A·clip(r, 1−lo, 1+hi)).
fn clipped_surrogate<B: Backend>(
    ratio: Tensor<B, 2>,
    adv: Tensor<B, 2>,
    lo: f64,
    hi: f64,
) -> Tensor<B, 2> {
    let l1 = adv.clone().neg() * ratio.clone();
    let l2 = adv.neg() * ratio.clamp(1.0 - lo, 1.0 + hi);
    l1.max_pair(l2)
}

/// The per-token loss of `policy`. Inputs are neutralised at padding first.
pub fn per_token_policy_loss<B: Backend>(
    policy: &PolicyLoss,
    logp: Tensor<B, 2>,
    old_logp: Tensor<B, 2>,
    advantages: Tensor<B, 2>,
    mask: Tensor<B, 2, Bool>,
) -> PerToken<B> {
    let pad = mask.clone().bool_not();
    let logp = logp.mask_fill(pad.clone(), 0.0);
    let old = old_logp.detach().mask_fill(pad.clone(), 0.0);
    let adv = advantages.detach().mask_fill(pad.clone(), 0.0);
    let shape = adv.dims();
    let device = adv.device();
    let none = || {
        Tensor::<B, 2, Bool>::from_data(
            TensorData::new(vec![false; shape[0] * shape[1]], shape),
            &device,
        )
    };
    let out = match *policy {
        PolicyLoss::Ppo {
            clip_low,
            clip_high,
            dual_clip,
        } => {
            let ratio = (logp - old).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP).exp();
            let mut loss = clipped_surrogate(ratio.clone(), adv.clone(), clip_low, clip_high);
            let (upper, lower) = clip_flags(&ratio, &adv, clip_low, clip_high);
            let mut dual = none();
            if let Some(c) = dual_clip {
                let neg = adv.clone().lower_elem(0.0);
                let capped = loss.clone().min_pair(adv.clone().neg().mul_scalar(c));
                loss = loss.mask_where(neg.clone(), capped);
                dual = neg.bool_and(ratio.clone().greater_elem(c));
            }
            PerToken {
                loss,
                ratio: ratio.detach(),
                clipped_upper: upper,
                clipped_lower: lower,
                dual_clipped: dual,
            }
        }
        PolicyLoss::Gspo {
            clip_low,
            clip_high,
        } => {
            let maskf = mask.clone().float();
            let lengths = maskf.clone().sum_dim(1).clamp_min(1.0); // [n, 1]
            let seq_log_ratio = (logp - old)
                .sum_dim(1)
                .div(lengths.clone())
                .clamp_max(GSPO_LOG_RATIO_MAX);
            let seq_adv = adv.clone().sum_dim(1).div(lengths); // [n, 1]
            let s = seq_log_ratio.exp(); // [n, 1]
            let per_seq = clipped_surrogate(s.clone(), seq_adv.clone(), clip_low, clip_high);
            let loss = per_seq.expand(shape);
            let ratio = s.detach().expand(shape);
            let (upper, lower) = clip_flags(&ratio, &seq_adv.expand(shape), clip_low, clip_high);
            PerToken {
                loss,
                ratio,
                clipped_upper: upper,
                clipped_lower: lower,
                dual_clipped: none(),
            }
        }
        PolicyLoss::GspoToken {
            clip_low,
            clip_high,
        } => {
            let lengths = mask.clone().float().sum_dim(1).clamp_min(1.0);
            let seq_log_ratio = (logp.clone() - old).sum_dim(1).div(lengths).detach();
            let log_ratio = (logp.clone() - logp.detach() + seq_log_ratio.expand(shape))
                .clamp_max(GSPO_LOG_RATIO_MAX);
            let ratio = log_ratio.exp();
            let loss = clipped_surrogate(ratio.clone(), adv.clone(), clip_low, clip_high);
            let (upper, lower) = clip_flags(&ratio, &adv, clip_low, clip_high);
            PerToken {
                loss,
                ratio: ratio.detach(),
                clipped_upper: upper,
                clipped_lower: lower,
                dual_clipped: none(),
            }
        }
        PolicyLoss::Cispo {
            clip_low,
            clip_high,
        } => {
            // Detached: the clipped ratio is a weight, never differentiated (verl's `cispo`).
            let ratio = (logp.clone().detach() - old)
                .clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)
                .exp();
            let weight = ratio.clone().clamp(1.0 - clip_low, 1.0 + clip_high);
            // A clipped weight, whatever the advantage's sign (verl's `pg_clipfrac`).
            let upper = ratio.clone().greater_elem(1.0 + clip_high);
            let lower = ratio.clone().lower_elem(1.0 - clip_low);
            PerToken {
                loss: (weight * adv).neg() * logp,
                ratio,
                clipped_upper: upper,
                clipped_lower: lower,
                dual_clipped: none(),
            }
        }
        PolicyLoss::Reinforce => {
            let ratio = (logp.clone().detach() - old)
                .clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)
                .exp();
            PerToken {
                loss: adv.neg() * logp,
                ratio,
                clipped_upper: none(),
                clipped_lower: none(),
                dual_clipped: none(),
            }
        }
    };
    PerToken {
        loss: out.loss.mask_fill(pad.clone(), 0.0),
        ratio: out.ratio.mask_fill(pad.clone(), 0.0),
        clipped_upper: out.clipped_upper.bool_and(mask.clone()),
        clipped_lower: out.clipped_lower.bool_and(mask.clone()),
        dual_clipped: out.dual_clipped.bool_and(mask),
    }
}

pub(crate) fn check_shape<B: Backend, K>(
    name: &'static str,
    t: &Tensor<B, 2, K>,
    expected: [usize; 2],
) -> Result<(), LossError>
where
    K: burn::tensor::BasicOps<B>,
{
    let got = t.dims();
    if got != expected {
        return Err(LossError::Shape {
            name,
            got: got.to_vec(),
            expected: expected.to_vec(),
        });
    }
    Ok(())
}

/// The full loss of one micro-batch: policy term, optional KL and entropy terms, each
/// aggregated with the global `counts`, plus metrics.
pub fn compute_loss<B: Backend>(
    config: &LossConfig,
    input: LossInput<B>,
    counts: GlobalCounts,
) -> Result<LossOutput<B>, LossError> {
    config.validate()?;
    let shape = input.mask.dims();
    check_shape("logp", &input.logp, shape)?;
    check_shape("old_logp", &input.old_logp, shape)?;
    check_shape("advantages", &input.advantages, shape)?;
    if let Some(r) = &input.ref_logp {
        check_shape("ref_logp", r, shape)?;
    }
    if let Some(e) = &input.entropy {
        check_shape("entropy", e, shape)?;
    }
    if let Some(w) = &input.is_weights {
        check_shape("is_weights", w, shape)?;
    }
    let mask = input.mask;
    let pad = mask.clone().bool_not();
    let agg = config.aggregation;

    let pt = per_token_policy_loss(
        &config.policy,
        input.logp.clone(),
        input.old_logp.clone(),
        input.advantages,
        mask.clone(),
    );
    let per_token = match input.is_weights {
        Some(w) => pt.loss * w.detach().mask_fill(pad.clone(), 0.0),
        None => pt.loss,
    };
    let policy_loss = aggregate(per_token, mask.clone(), agg, counts);
    let mut loss = policy_loss.clone();

    let logp_d = input.logp.clone().detach().mask_fill(pad.clone(), 0.0);
    let old_d = input.old_logp.detach().mask_fill(pad.clone(), 0.0);
    let maskf = mask.clone().float();
    // Metric sums, gathered into one tensor so that the host reads them in one transfer.
    let mut sums: Vec<Tensor<B, 1>> = vec![
        maskf.clone().sum(),
        maskf.clone().sum_dim(1).greater_elem(0.0).float().sum(),
        pt.ratio.clone().sum(),
        pt.ratio.max().reshape([1]),
        pt.clipped_upper.float().sum(),
        pt.clipped_lower.float().sum(),
        pt.dual_clipped.float().sum(),
        (old_d - logp_d).sum(),
        policy_loss.clone().detach(),
    ];

    let (mut kl_sum, mut kl_loss) = (None, None);
    if let Some(kl) = config.kl {
        let ref_logp = input.ref_logp.ok_or(LossError::MissingInput("ref_logp"))?;
        let ref_logp = ref_logp.detach().mask_fill(pad.clone(), 0.0);
        let logp = input.logp.clone().mask_fill(pad.clone(), 0.0);
        let k = kl_per_token(logp, ref_logp, kl.estimator, kl.straight_through)
            .mask_fill(pad.clone(), 0.0);
        kl_sum = Some(k.clone().detach().sum());
        let kl_term = aggregate(k, mask.clone(), agg, counts);
        kl_loss = Some(kl_term.clone().detach());
        loss = loss + kl_term.mul_scalar(kl.coef);
    }
    let (mut ent_sum, mut ent_loss) = (None, None);
    if config.entropy_coef != 0.0 || input.entropy.is_some() {
        match input.entropy {
            Some(e) => {
                let e = e.mask_fill(pad.clone(), 0.0);
                ent_sum = Some(e.clone().detach().sum());
                let ent_term = aggregate(e, mask.clone(), agg, counts);
                ent_loss = Some(ent_term.clone().detach());
                if config.entropy_coef != 0.0 {
                    loss = loss - ent_term.mul_scalar(config.entropy_coef);
                }
            }
            None => return Err(LossError::MissingInput("entropy")),
        }
    }
    let zero = || Tensor::<B, 1>::zeros([1], &mask.device());
    sums.push(kl_sum.unwrap_or_else(zero));
    sums.push(kl_loss.unwrap_or_else(zero));
    sums.push(ent_sum.unwrap_or_else(zero));
    sums.push(ent_loss.unwrap_or_else(zero));
    sums.push(loss.clone().detach());
    let v: Vec<f32> = Tensor::cat(sums, 0)
        .into_data()
        .convert::<f32>()
        .into_vec()
        .map_err(|e| {
            LossError::InvalidConfig(rl_core::InvalidValue {
                field: "metrics",
                value: format!("{e:?}"),
                expected: "readable f32 data",
            })
        })?;
    let metrics = LossMetrics {
        tokens: v[0] as usize,
        sequences: v[1] as usize,
        ratio_sum: v[2] as f64,
        ratio_max: v[3] as f64,
        clipped_upper: v[4] as usize,
        clipped_lower: v[5] as usize,
        dual_clipped: v[6] as usize,
        approx_kl_sum: v[7] as f64,
        policy_loss: v[8] as f64,
        kl_sum: v[9] as f64,
        kl_loss: v[10] as f64,
        entropy_sum: v[11] as f64,
        entropy_loss: v[12] as f64,
        loss: v[13] as f64,
    };
    if metrics.tokens > counts.tokens || metrics.sequences > counts.sequences {
        return Err(LossError::Counts {
            tokens: counts.tokens,
            sequences: counts.sequences,
            local_tokens: metrics.tokens,
            local_sequences: metrics.sequences,
        });
    }
    Ok(LossOutput {
        loss,
        policy_loss,
        metrics,
    })
}
