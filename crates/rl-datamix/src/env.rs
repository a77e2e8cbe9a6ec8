//! The LM trainer as the scheduler's environment.
//!
//! One [`LmEnv::step`] is one optimiser step of the [`TinyLm`]: the batch has `micro_batches`
//! micro-batches of `micro_batch_size` sequences each — one micro-batch per domain, the rest drawn
//! i.i.d. from the mixture (optionally mixed with a uniform floor) — one forward and one backward
//! pass on the mean cross-entropy, an AdamW step with linear warm-up and cosine decay, and the
//! statistics of [`StepStats`]: per-domain losses and counts, the drawn micro-batches' losses,
//! per-domain gradients on the FF output weights of the last `align_layers` blocks (when asked,
//! by the probe trick of [`crate::lm`]), and the Frobenius norms of every block's FF output
//! weight and of its update.

use std::sync::Arc;
use std::time::Instant;

use burn::module::AutodiffModule;
use burn::optim::adaptor::OptimizerAdaptor;
use burn::optim::{AdamW, AdamWConfig, GradientsParams, Optimizer};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Int, Tensor, TensorData};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::data::Corpus;
use crate::error::{DatamixError, Result};
use crate::lm::{LmConfig, TinyLm, per_domain_weight_grads, sequence_cross_entropy};
use crate::params::tensor_to_vec;
use crate::scheduler::{Draw, Requirements, StepStats};
use crate::simplex::{check_mixture, with_uniform_floor};
use crate::stats::categorical;

/// LM training settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LmTrainConfig {
    /// Peak learning rate (3e-3).
    pub lr: f64,
    /// Final learning rate as a fraction of the peak (0.1).
    pub min_lr_fraction: f64,
    /// Fraction of steps of linear warm-up (0.02).
    pub warmup_fraction: f64,
    /// Decoupled weight decay (0.1).
    pub weight_decay: f32,
    /// Adam β₂ (0.95).
    pub beta2: f32,
    /// Micro-batches per step, at least K (16).
    pub micro_batches: usize,
    /// Sequences per micro-batch (1).
    pub micro_batch_size: usize,
    /// Uniform floor λ: drawn micro-batches come from `(1 − λ)·mixture + λ/K` (0).
    pub uniform_floor: f32,
    /// Number of last blocks whose FF output gradients feed the alignment reward (1).
    pub align_layers: usize,
}

impl Default for LmTrainConfig {
    fn default() -> Self {
        Self {
            lr: 3e-3,
            min_lr_fraction: 0.1,
            warmup_fraction: 0.02,
            weight_decay: 0.1,
            beta2: 0.95,
            micro_batches: 16,
            micro_batch_size: 1,
            uniform_floor: 0.0,
            align_layers: 1,
        }
    }
}

impl LmTrainConfig {
    /// Checks ranges for `k` domains and `n_layers` blocks.
    pub fn validate(&self, k: usize, n_layers: usize, prefix: &str) -> Result<()> {
        let err = |f: &str, m: String| Err(DatamixError::config(format!("{prefix}.{f}"), m));
        if !(self.lr > 0.0 && self.lr.is_finite()) {
            return err("lr", "must be a finite number > 0".into());
        }
        if !(0.0..=1.0).contains(&self.min_lr_fraction) {
            return err("min_lr_fraction", "must be in [0, 1]".into());
        }
        if !(0.0..1.0).contains(&self.warmup_fraction) {
            return err("warmup_fraction", "must be in [0, 1)".into());
        }
        if self.micro_batches < k {
            return err(
                "micro_batches",
                format!(
                    "must be at least the number of domains ({k}): one micro-batch per domain is always drawn"
                ),
            );
        }
        if self.micro_batch_size == 0 {
            return err("micro_batch_size", "must be >= 1".into());
        }
        if !(0.0..=1.0).contains(&self.uniform_floor) {
            return err("uniform_floor", "must be in [0, 1]".into());
        }
        if self.align_layers == 0 || self.align_layers > n_layers {
            return err(
                "align_layers",
                format!("must be in 1..={n_layers} (the model's blocks)"),
            );
        }
        Ok(())
    }

    /// Learning rate at step `t` of `total`: linear warm-up then cosine to `min_lr_fraction`.
    pub fn lr_at(&self, t: usize, total: usize) -> f64 {
        let warm = (self.warmup_fraction * total as f64).round() as usize;
        if t < warm {
            return self.lr * (t + 1) as f64 / warm as f64;
        }
        let span = (total.saturating_sub(warm)).max(1) as f64;
        let p = ((t - warm) as f64 / span).min(1.0);
        let min = self.lr * self.min_lr_fraction;
        min + 0.5 * (self.lr - min) * (1.0 + (std::f64::consts::PI * p).cos())
    }
}

/// Wall-clock split of the last step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepTiming {
    /// Batch sampling, forward, backward and optimiser step (ms).
    pub lm_ms: f64,
    /// Extra statistics for the scheduler: per-domain gradients, norms (ms).
    pub stats_ms: f64,
}

/// The environment: a [`TinyLm`] trained on a [`Corpus`].
pub struct LmEnv<B: AutodiffBackend> {
    cfg: LmTrainConfig,
    corpus: Arc<Corpus>,
    model: TinyLm<B>,
    optim: OptimizerAdaptor<AdamW, TinyLm<B>, B>,
    rng: ChaCha8Rng,
    step: usize,
    total_steps: usize,
    device: B::Device,
    prev_weights: Vec<Vec<f32>>,
    timing: StepTiming,
}

fn frobenius(v: &[f32]) -> f32 {
    v.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt() as f32
}

impl<B: AutodiffBackend> LmEnv<B> {
    /// A fresh model for `corpus`, for a run of `total_steps` steps, seeded by `seed`.
    pub fn new(
        model_cfg: &LmConfig,
        cfg: LmTrainConfig,
        corpus: Arc<Corpus>,
        total_steps: usize,
        seed: u64,
        device: B::Device,
    ) -> Result<Self> {
        model_cfg.validate("model")?;
        let k = corpus.domains.len();
        cfg.validate(k, model_cfg.n_layers, "train")?;
        if corpus.seq_len != model_cfg.seq_len {
            return Err(DatamixError::config(
                "model.seq_len",
                format!("corpus was built for {} tokens", corpus.seq_len),
            ));
        }
        for d in &corpus.domains {
            if d.train.len() < corpus.seq_len + 1 || d.val.is_empty() {
                return Err(DatamixError::Data {
                    domain: d.name.clone(),
                    message: "not enough tokens for one training and one validation window".into(),
                });
            }
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let model = TinyLm::new(model_cfg, corpus.vocab.len(), &mut rng, &device);
        let optim = AdamWConfig::new()
            .with_beta_1(0.9)
            .with_beta_2(cfg.beta2)
            .with_epsilon(1e-8)
            .with_weight_decay(cfg.weight_decay)
            .init();
        let prev_weights = (0..model.num_layers())
            .map(|l| tensor_to_vec(model.ff_out_weight(l)))
            .collect();
        Ok(Self {
            cfg,
            corpus,
            model,
            optim,
            rng,
            step: 0,
            total_steps,
            device,
            prev_weights,
            timing: StepTiming::default(),
        })
    }

    /// Number of domains K.
    pub fn num_domains(&self) -> usize {
        self.corpus.domains.len()
    }

    /// Steps taken.
    pub fn steps_done(&self) -> usize {
        self.step
    }

    /// Timing of the last step.
    pub fn timing(&self) -> StepTiming {
        self.timing
    }

    /// The model.
    pub fn model(&self) -> &TinyLm<B> {
        &self.model
    }

    fn window(&mut self, domain: usize) -> &[u32] {
        let w = self.corpus.seq_len + 1;
        let train = &self.corpus.domains[domain].train;
        let start = self.rng.random_range(0..=train.len() - w);
        &self.corpus.domains[domain].train[start..start + w]
    }

    /// One training step with `mixture`; `req` says which expensive statistics to measure.
    pub fn step(&mut self, mixture: &[f32], req: Requirements) -> Result<StepStats> {
        let t0 = Instant::now();
        let k = self.num_domains();
        check_mixture(mixture, k, "mixture")?;
        let probs = with_uniform_floor(mixture, self.cfg.uniform_floor);
        let mut mb_domain: Vec<usize> = (0..k).collect();
        for _ in k..self.cfg.micro_batches {
            mb_domain.push(categorical(&probs, &mut self.rng));
        }
        let (s, mbs) = (self.corpus.seq_len, self.cfg.micro_batch_size);
        let n = mb_domain.len() * mbs;
        let mut inp = Vec::with_capacity(n * s);
        let mut tgt = Vec::with_capacity(n * s);
        let mut seq_domain = Vec::with_capacity(n);
        let mut sequences = Vec::new();
        for (m, &d) in mb_domain.iter().enumerate() {
            for _ in 0..mbs {
                let w = self.window(d).to_vec();
                inp.extend(w[..s].iter().map(|&x| x as i64));
                tgt.extend(w[1..].iter().map(|&x| x as i64));
                seq_domain.push(d);
                if req.sequences && m >= k {
                    sequences.push(w[..s].to_vec());
                }
            }
        }
        let dev = &self.device;
        let inp = Tensor::<B, 2, Int>::from_data(TensorData::new(inp, [n, s]), dev);
        let tgt = Tensor::<B, 2, Int>::from_data(TensorData::new(tgt, [n, s]), dev);
        let layers = self.model.num_layers();
        let d_model = self.model.ff_out_weight(0).dims()[1];
        let probes: Vec<Option<Tensor<B, 3>>> = (0..layers)
            .map(|l| {
                (req.domain_grads && l >= layers - self.cfg.align_layers)
                    .then(|| Tensor::zeros([n, s, d_model], dev).require_grad())
            })
            .collect();
        let (logits, hidden) = self.model.forward(inp, &probes);
        let ce = sequence_cross_entropy(logits, tgt);
        let loss = ce.clone().mean();
        let grads = loss.backward();
        let mut lm_ms = t0.elapsed().as_secs_f64() * 1e3;

        let t1 = Instant::now();
        let domain_grads = if req.domain_grads {
            let mut per: Vec<Vec<f32>> = vec![Vec::new(); k];
            for (l, p) in probes.iter().enumerate() {
                if let Some(p) = p {
                    let delta = p
                        .grad(&grads)
                        .ok_or_else(|| DatamixError::Stats("probe received no gradient".into()))?;
                    let g =
                        per_domain_weight_grads(hidden[l].clone().inner(), delta, &seq_domain, k);
                    per.iter_mut().zip(g).for_each(|(a, b)| a.extend(b));
                }
            }
            Some(per)
        } else {
            None
        };
        let stats_ms_grads = t1.elapsed().as_secs_f64() * 1e3;

        let t2 = Instant::now();
        let gp = GradientsParams::from_grads(grads, &self.model);
        let lr = self.cfg.lr_at(self.step, self.total_steps);
        self.model = self.optim.step(lr, self.model.clone(), gp);
        let ce = tensor_to_vec(ce.inner());
        if ce.iter().any(|v| !v.is_finite()) {
            return Err(DatamixError::Stats(format!(
                "training loss diverged at step {}",
                self.step
            )));
        }
        lm_ms += t2.elapsed().as_secs_f64() * 1e3;

        let t3 = Instant::now();
        let mut domain_loss = vec![0.0f32; k];
        let mut counts = vec![0.0f32; k];
        for (&d, &c) in seq_domain.iter().zip(&ce) {
            domain_loss[d] += c;
            counts[d] += 1.0;
        }
        domain_loss
            .iter_mut()
            .zip(&counts)
            .for_each(|(l, c)| *l /= c.max(1.0));
        let draws = mb_domain
            .iter()
            .enumerate()
            .skip(k)
            .map(|(m, &d)| Draw {
                domain: d,
                loss: ce[m * mbs..(m + 1) * mbs].iter().sum::<f32>() / mbs as f32,
            })
            .collect();
        let mut weight_norms = Vec::with_capacity(layers);
        let mut update_norms = Vec::with_capacity(layers);
        for l in 0..layers {
            let w = tensor_to_vec(self.model.ff_out_weight(l));
            weight_norms.push(frobenius(&w));
            let diff: Vec<f32> = w
                .iter()
                .zip(&self.prev_weights[l])
                .map(|(a, b)| a - b)
                .collect();
            update_norms.push(frobenius(&diff));
            self.prev_weights[l] = w;
        }
        self.timing = StepTiming {
            lm_ms,
            stats_ms: stats_ms_grads + t3.elapsed().as_secs_f64() * 1e3,
        };
        let stats = StepStats {
            step: self.step,
            total_steps: self.total_steps,
            sampling_probs: probs,
            domain_loss,
            domain_counts: counts,
            draws,
            domain_grads,
            weight_norms,
            weight_update_norms: update_norms,
            sequences,
        };
        self.step += 1;
        Ok(stats)
    }

    /// Mean validation cross-entropy of every domain (nats per token), without autodiff.
    pub fn evaluate(&self) -> Vec<f32> {
        let model = self.model.valid();
        let s = self.corpus.seq_len;
        self.corpus
            .domains
            .iter()
            .map(|d| {
                let n = d.val.len();
                let mut inp = Vec::with_capacity(n * s);
                let mut tgt = Vec::with_capacity(n * s);
                for w in &d.val {
                    inp.extend(w[..s].iter().map(|&x| x as i64));
                    tgt.extend(w[1..].iter().map(|&x| x as i64));
                }
                let inp = Tensor::<B::InnerBackend, 2, Int>::from_data(
                    TensorData::new(inp, [n, s]),
                    &self.device,
                );
                let tgt = Tensor::<B::InnerBackend, 2, Int>::from_data(
                    TensorData::new(tgt, [n, s]),
                    &self.device,
                );
                let (logits, _) = model.forward(inp, &[]);
                tensor_to_vec(sequence_cross_entropy(logits, tgt).mean())[0]
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DataConfig;
    use burn::backend::{Autodiff, Flex};
    use std::path::Path;

    type AB = Autodiff<Flex>;

    fn small() -> (LmConfig, LmTrainConfig, Arc<Corpus>) {
        let lm = LmConfig {
            d_model: 16,
            n_layers: 2,
            n_heads: 2,
            d_ff: 32,
            seq_len: 16,
        };
        let data = DataConfig {
            train_chars: 4000,
            val_sequences: 4,
            ..DataConfig::default()
        };
        let corpus = Arc::new(data.build(lm.seq_len, 0, Path::new(".")).unwrap());
        let train = LmTrainConfig {
            micro_batches: 8,
            micro_batch_size: 2,
            ..LmTrainConfig::default()
        };
        (lm, train, corpus)
    }

    #[test]
    fn lr_schedule() {
        let c = LmTrainConfig::default();
        // 2 % of 1000 = 20 warm-up steps.
        assert!((c.lr_at(0, 1000) - 3e-3 / 20.0).abs() < 1e-12);
        assert!((c.lr_at(19, 1000) - 3e-3).abs() < 1e-12);
        assert!((c.lr_at(20, 1000) - 3e-3).abs() < 1e-12);
        // Half-way through the decay: the mean of peak and floor.
        assert!((c.lr_at(510, 1000) - 0.5 * (3e-3 + 3e-4)).abs() < 1e-9);
        assert!((c.lr_at(1000, 1000) - 3e-4).abs() < 1e-12);
    }

    #[test]
    fn step_statistics_and_learning() {
        let (lm, train, corpus) = small();
        let dev = Default::default();
        let mut env = LmEnv::<AB>::new(&lm, train, corpus, 60, 1, dev).unwrap();
        let k = env.num_domains();
        let before = env.evaluate();
        let req = Requirements {
            domain_grads: true,
            sequences: true,
        };
        let mut mixture = vec![0.0f32; k];
        mixture[0] = 1.0;
        let st = env.step(&mixture, req).unwrap();
        st.validate(k).unwrap();
        // 8 micro-batches of 2: one per domain (2 sequences each), the 2 drawn ones from domain 0.
        assert_eq!(st.domain_counts[0], 6.0);
        assert!(st.domain_counts[1..].iter().all(|&c| c == 2.0));
        assert_eq!(st.draws.len(), 2);
        assert!(st.draws.iter().all(|d| d.domain == 0));
        assert_eq!(st.sequences.len(), 4);
        let g = st.domain_grads.as_ref().unwrap();
        assert_eq!(g[0].len(), 32 * 16);
        assert_eq!(st.weight_norms.len(), 2);
        assert!(st.weight_update_norms.iter().all(|&u| u > 0.0));
        // Noise domain's loss starts near ln 64.
        assert!((st.domain_loss[4] - 64f32.ln()).abs() < 0.1);
        let uniform = vec![1.0 / k as f32; k];
        for _ in 0..59 {
            env.step(&uniform, Requirements::default()).unwrap();
        }
        let after = env.evaluate();
        assert!(after[0] < before[0] - 0.5, "{before:?} -> {after:?}");
        assert!(env.step(&[1.0], req).is_err());
    }

    #[test]
    fn same_seed_same_run() {
        let (lm, train, corpus) = small();
        let run = |seed: u64| {
            let mut env = LmEnv::<AB>::new(
                &lm,
                train.clone(),
                corpus.clone(),
                5,
                seed,
                Default::default(),
            )
            .unwrap();
            let m = vec![1.0 / 6.0; 6];
            for _ in 0..5 {
                env.step(&m, Requirements::default()).unwrap();
            }
            env.evaluate()
        };
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4));
    }

    #[test]
    fn config_errors_name_the_field() {
        let (lm, mut train, corpus) = small();
        train.micro_batches = 3;
        let e = LmEnv::<AB>::new(&lm, train, corpus, 5, 0, Default::default())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("train.micro_batches") && e.contains('6'), "{e}");
    }
}
