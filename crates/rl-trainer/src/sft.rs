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
use crate::update::sft_update;

/// Settings of the warm-start.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SftConfig {
    /// Optimizer updates.
    pub steps: usize,
    /// (prompt, response) pairs per update.
    pub batch_size: usize,
    /// Peak learning rate.
    pub lr: f64,
    /// Linear warm-up updates.
    pub warmup_steps: usize,
    /// AdamW weight decay.
    pub weight_decay: f64,
    /// Global gradient-norm clip (0 = off).
    pub grad_clip: f64,
    /// Sequences per forward/backward.
    pub micro_batch: usize,
    /// Seed of the example order.
    pub seed: u64,
}

/// Trains `policy` to produce `response` after `prompt` for the given pairs (token-mean NLL of
/// the response tokens), `steps` updates of `batch_size` pairs drawn without replacement
/// (reshuffled each epoch). `on_step(step, loss)` sees every update.
pub fn supervised_warm_start<B: AutodiffBackend, P: Policy<B>>(
    mut policy: P,
    pairs: &[(Vec<u32>, Vec<u32>)],
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
    let optim_cfg = OptimSection {
        lr: cfg.lr,
        warmup_steps: cfg.warmup_steps,
        weight_decay: cfg.weight_decay,
        grad_clip: cfg.grad_clip,
        beta1: 0.9,
        beta2: 0.999,
        eps: 1e-8,
        epochs: 1,
        mini_batches: 1,
        micro_batch: cfg.micro_batch.max(1),
        max_consecutive_skips: 1, // the supervised loop stops at the first non-finite update
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
            let (p, r) = &pairs[order[pos]];
            batch.push((p.as_slice(), r.as_slice()));
            pos += 1;
        }
        let (p, loss) = sft_update(
            policy,
            &mut optim,
            lr_at(&optim_cfg, step),
            &batch,
            optim_cfg.micro_batch,
            device,
        )?;
        policy = p;
        on_step(step + 1, loss);
    }
    Ok(policy)
}
