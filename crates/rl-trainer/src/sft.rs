//! Supervised warm-start: a few steps of next-token training on reference responses.

use burn::tensor::backend::AutodiffBackend;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::TrainerError;
use crate::config::OptimSection;
use crate::optim::{AdamWOptimizer, lr_at};
use crate::policy::Policy;
use crate::policy_update::sft_update;

/// Settings of the warm-start: how many updates of how many pairs, and the optimizer in the
/// RL run's own `[optim]` vocabulary (`[sft.optim]` in TOML). The warm-start reads `lr`,
/// `warmup_steps`, `weight_decay`, `grad_clip`, `beta1`, `beta2`, `eps` and `micro_batch`; it
/// stops at the first non-finite update, and `epochs`, `mini_batches` and
/// `max_consecutive_skips` (which describe RL steps) must be left at 1.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SftConfig {
    /// Optimizer updates.
    pub steps: usize,
    /// (prompt, response) pairs per update.
    pub batch_size: usize,
    /// Seed of the example order.
    pub seed: u64,
    /// The optimizer.
    #[serde(default = "SftConfig::default_optim")]
    pub optim: OptimSection,
    /// Order each batch by sequence length before it is cut into micro-batches, so that a
    /// token budget (`optim.micro_batch_tokens`) puts similar lengths together and pads less.
    /// The loss is the same sum (up to float summation order).
    #[serde(default)]
    pub sort_by_length: bool,
}

impl SftConfig {
    /// The warm-start's optimizer defaults: AdamW at lr 1e-3 with 10 warm-up updates, no weight
    /// decay, clip 1, and 128 sequences per forward/backward.
    pub fn default_optim() -> OptimSection {
        OptimSection {
            lr: 1e-3,
            warmup_steps: 10,
            weight_decay: 0.0,
            grad_clip: 1.0,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            epochs: 1,
            mini_batches: 1,
            micro_batch: 128,
            micro_batch_tokens: 0,
            max_consecutive_skips: 1,
        }
    }
}

/// One supervised example: `response` after `prompt`, the loss on the response tokens where
/// `loss_mask` is true (all of them without a mask). A multi-turn demonstration masks its
/// observation tokens (tool results, turn boundaries), as RL does.
#[derive(Clone, Debug, PartialEq)]
pub struct SftExample {
    /// Prompt ids.
    pub prompt: Vec<u32>,
    /// Response ids.
    pub response: Vec<u32>,
    /// Per response token: in the loss (`None`: all).
    pub loss_mask: Option<Vec<bool>>,
}

impl From<(Vec<u32>, Vec<u32>)> for SftExample {
    fn from((prompt, response): (Vec<u32>, Vec<u32>)) -> Self {
        SftExample {
            prompt,
            response,
            loss_mask: None,
        }
    }
}

/// Trains `policy` to produce each example's response after its prompt (token-mean NLL of the
/// response tokens in the loss mask), `steps` updates of `batch_size` examples drawn without
/// replacement (reshuffled each epoch). `on_step(step, loss)` sees every update.
pub fn supervised_warm_start<B: AutodiffBackend, P: Policy<B>>(
    mut policy: P,
    pairs: &[SftExample],
    cfg: &SftConfig,
    device: &B::Device,
    mut on_step: impl FnMut(usize, f64),
) -> Result<P, TrainerError> {
    if pairs.is_empty() || cfg.batch_size == 0 {
        return Err(TrainerError::Config {
            field: "sft".into(),
            message: "needs at least one example and batch_size >= 1".into(),
        });
    }
    let o = &cfg.optim;
    if o.epochs != 1 || o.mini_batches != 1 || o.max_consecutive_skips != 1 {
        return Err(TrainerError::Config {
            field: "sft.optim".into(),
            message: format!(
                "epochs = {}, mini_batches = {}, max_consecutive_skips = {}: the warm-start \
                 makes one update per batch and stops at the first non-finite one; leave all \
                 three at 1",
                o.epochs, o.mini_batches, o.max_consecutive_skips
            ),
        });
    }
    let optim_cfg = OptimSection {
        micro_batch: o.micro_batch.max(1),
        ..*o
    };
    let mut optim = AdamWOptimizer::<B, P>::new(&optim_cfg);
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let mut order: Vec<usize> = (0..pairs.len()).collect();
    order.shuffle(&mut rng);
    let mut pos = 0;
    for step in 0..cfg.steps {
        let mut batch = Vec::with_capacity(cfg.batch_size);
        while batch.len() < cfg.batch_size {
            if pos == order.len() {
                order.shuffle(&mut rng);
                pos = 0;
            }
            let e = &pairs[order[pos]];
            batch.push((
                e.prompt.as_slice(),
                e.response.as_slice(),
                e.loss_mask.as_deref(),
            ));
            pos += 1;
        }
        if cfg.sort_by_length {
            batch.sort_by_key(|(p, r, _)| p.len() + r.len());
        }
        let (p, loss) = sft_update(
            policy,
            &mut optim,
            lr_at(&optim_cfg, step),
            &batch,
            (optim_cfg.micro_batch, optim_cfg.micro_batch_tokens),
            device,
        )?;
        policy = p;
        on_step(step + 1, loss);
    }
    Ok(policy)
}
