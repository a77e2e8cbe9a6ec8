use serde::{Deserialize, Serialize};

/// Loss diagnostics as masked sums with their counts, so that micro-batches and workers can be
/// merged exactly ([`LossMetrics::merge`]) before taking means.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LossMetrics {
    /// Valid tokens in the micro-batch(es).
    pub tokens: usize,
    /// Non-empty sequences.
    pub sequences: usize,
    /// Σ importance ratio r (per token; the sequence ratio for GSPO).
    pub ratio_sum: f64,
    /// Largest ratio seen.
    pub ratio_max: f64,
    /// Tokens clipped at the upper bound (A > 0, r > 1 + ε_high).
    pub clipped_upper: usize,
    /// Tokens clipped at the lower bound (A < 0, r < 1 − ε_low).
    pub clipped_lower: usize,
    /// Tokens capped by dual-clip (A < 0, r > c).
    pub dual_clipped: usize,
    /// Σ (logp_old − logp): verl's `ppo_kl`, the approximate KL to the behaviour policy.
    pub approx_kl_sum: f64,
    /// Σ per-token entropy (0 when no entropy was given).
    pub entropy_sum: f64,
    /// Σ per-token KL estimate to the reference (0 without KL).
    pub kl_sum: f64,
    /// The aggregated policy loss (already globally normalised: sums across micro-batches).
    pub policy_loss: f64,
    /// The aggregated KL term before β.
    pub kl_loss: f64,
    /// The aggregated entropy before its coefficient.
    pub entropy_loss: f64,
    /// The total loss.
    pub loss: f64,
}

impl LossMetrics {
    /// Adds another micro-batch's metrics.
    pub fn merge(&mut self, o: &LossMetrics) {
        self.tokens += o.tokens;
        self.sequences += o.sequences;
        self.ratio_sum += o.ratio_sum;
        self.ratio_max = self.ratio_max.max(o.ratio_max);
        self.clipped_upper += o.clipped_upper;
        self.clipped_lower += o.clipped_lower;
        self.dual_clipped += o.dual_clipped;
        self.approx_kl_sum += o.approx_kl_sum;
        self.entropy_sum += o.entropy_sum;
        self.kl_sum += o.kl_sum;
        self.policy_loss += o.policy_loss;
        self.kl_loss += o.kl_loss;
        self.entropy_loss += o.entropy_loss;
        self.loss += o.loss;
    }

    fn per_token(&self, x: f64) -> f64 {
        if self.tokens == 0 {
            0.0
        } else {
            x / self.tokens as f64
        }
    }
    /// Mean ratio.
    pub fn ratio_mean(&self) -> f64 {
        self.per_token(self.ratio_sum)
    }
    /// Fraction of tokens clipped at the upper bound.
    pub fn clip_frac_upper(&self) -> f64 {
        self.per_token(self.clipped_upper as f64)
    }
    /// Fraction of tokens clipped at the lower bound.
    pub fn clip_frac_lower(&self) -> f64 {
        self.per_token(self.clipped_lower as f64)
    }
    /// Fraction of tokens capped by dual-clip.
    pub fn dual_clip_frac(&self) -> f64 {
        self.per_token(self.dual_clipped as f64)
    }
    /// Mean approximate KL to the behaviour policy.
    pub fn approx_kl(&self) -> f64 {
        self.per_token(self.approx_kl_sum)
    }
    /// Mean entropy.
    pub fn entropy(&self) -> f64 {
        self.per_token(self.entropy_sum)
    }
    /// Mean KL estimate to the reference policy.
    pub fn kl(&self) -> f64 {
        self.per_token(self.kl_sum)
    }
}
