//! PPO's critic (`[critic]`, docs/algorithms/ppo.md): a value model ([`ScoreModel`] with one
//! output per position, HF's `*ForTokenClassification`) and its own AdamW. It reads a value for
//! every response token — V_t at the position that predicts token t, as verl's critic slices
//! `values[:, -response_length - 1 : -1]` — and regresses them on the GAE returns with the
//! clipped value loss ([`rl_loss::value_loss`], token-mean over each mini-batch, verl's
//! default `critic.loss_agg_mode`). Its forward is plain: the policy's memory plan
//! (checkpointing, chunked head, packing) does not apply to it.
//!
//! A leaf of the trainer: the phases that use it are in `value_phases.rs`.

use std::path::Path;

use burn::module::AutodiffModule;
use burn::optim::{GradientsAccumulator, GradientsParams};
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use rl_loss::{Aggregation, GlobalCounts, value_loss};
use rl_models::{ScoreKind, ScoreModel};

use crate::TrainerError;
use crate::config::{CriticSection, OptimSection};
use crate::optim::{AdamWOptimizer, first_non_finite_param};
use crate::policy_update::micro_batch_plan;

/// The folder of a checkpoint that holds the critic's weights and optimizer state.
pub const CRITIC_DIR: &str = "critic";

/// One response as the critic sees it: its prompt, its tokens, and for the update the values
/// at generation time, the returns and the tokens in the loss.
#[derive(Clone, Copy, Debug)]
pub struct ValueSeq<'a> {
    /// Prompt ids (non-empty).
    pub prompt: &'a [u32],
    /// Response ids.
    pub response: &'a [u32],
    /// V_old of each response token (update only).
    pub old_values: &'a [f32],
    /// The GAE return of each response token (update only).
    pub returns: &'a [f32],
    /// True on the tokens in the loss (sampled, not masked out of training).
    pub mask: &'a [bool],
}

/// What one [`Critic::update`] over a mini-batch did.
#[derive(Clone, Copy, Debug, Default)]
pub struct CriticUpdate {
    /// The mini-batch's value loss (token-mean).
    pub loss: f64,
    /// Tokens where the clipped term was the larger, and tokens in the loss.
    pub clipped: usize,
    /// Tokens in the loss.
    pub tokens: usize,
    /// Global gradient norm before clipping.
    pub grad_norm: f64,
    /// False when the loss or the gradient was not finite and the update was skipped.
    pub applied: bool,
}

/// The value model and its optimizer.
pub struct Critic<B: AutodiffBackend> {
    model: Option<ScoreModel<B>>,
    optim: AdamWOptimizer<B, ScoreModel<B>>,
    lr: f64,
    cliprange: f64,
}

impl<B: AutodiffBackend> Critic<B> {
    /// A critic for a new run: `section.model` loaded (a one-label token classifier), else
    /// `from_policy()` (the policy's decoder with a fresh head), with a fresh optimizer.
    pub fn new(
        section: &CriticSection,
        optim: &OptimSection,
        from_policy: impl FnOnce() -> Result<ScoreModel<B>, TrainerError>,
        device: &B::Device,
    ) -> Result<Self, TrainerError> {
        let model = match &section.model {
            Some(path) => ScoreModel::load(path, device)?,
            None => from_policy()?,
        };
        Self::with_model(model, section, optim, "critic.model")
    }

    /// The critic saved in checkpoint folder `ckpt` ([`Critic::save`]) with its optimizer state.
    pub fn load(
        ckpt: &Path,
        section: &CriticSection,
        optim: &OptimSection,
        device: &B::Device,
    ) -> Result<Self, TrainerError> {
        let dir = ckpt.join(CRITIC_DIR);
        let model = ScoreModel::load(&dir, device)?;
        let mut critic = Self::with_model(model, section, optim, "critic (checkpoint)")?;
        let model = critic.model.as_ref().expect("just built");
        critic.optim =
            AdamWOptimizer::new(&critic_optim(section, optim)).load(model, &dir, device)?;
        Ok(critic)
    }

    fn with_model(
        model: ScoreModel<B>,
        section: &CriticSection,
        optim: &OptimSection,
        field: &str,
    ) -> Result<Self, TrainerError> {
        if model.kind() != ScoreKind::Token || model.num_labels() != 1 {
            return Err(TrainerError::Config {
                field: field.into(),
                message: format!(
                    "a critic is a token classifier with one label (a value per position); \
                     this model is a {:?} classifier with {} labels",
                    model.kind(),
                    model.num_labels()
                ),
            });
        }
        Ok(Self {
            model: Some(model),
            optim: AdamWOptimizer::new(&critic_optim(section, optim)),
            lr: section.lr(optim.lr),
            cliprange: section.cliprange_value,
        })
    }

    /// The value model.
    pub fn model(&self) -> &ScoreModel<B> {
        self.model
            .as_ref()
            .expect("the critic is only taken during an update")
    }

    /// Writes the weights (HF `*ForTokenClassification`, f32) and the optimizer state to
    /// `ckpt/critic`, refusing weights with a NaN or an infinity.
    pub fn save(&self, ckpt: &Path) -> Result<(), TrainerError> {
        let dir = ckpt.join(CRITIC_DIR);
        let model = self.model();
        if let Some(param) = first_non_finite_param::<B, ScoreModel<B>>(model) {
            return Err(TrainerError::Checkpoint {
                path: dir.display().to_string(),
                message: format!(
                    "refusing to save critic weights with a NaN or infinity in `{param}`"
                ),
            });
        }
        model.save(&dir)?;
        self.optim.save(model, &dir)
    }

    /// V_t of every response token of `seqs` under the current weights (no graph), in
    /// micro-batches of at most `micro` sequences and `micro_tokens` padded tokens.
    pub fn values(
        &self,
        seqs: &[ValueSeq<'_>],
        (micro, micro_tokens): (usize, usize),
    ) -> Result<Vec<Vec<f32>>, TrainerError> {
        let model = self.model().valid();
        let device = model.body.device();
        let mut out = vec![Vec::new(); seqs.len()];
        for part in micro_batch_plan(&lengths(seqs), micro, micro_tokens) {
            let chunk: Vec<ValueSeq<'_>> = part.iter().map(|&i| seqs[i]).collect();
            let width = width(&chunk);
            let values = response_values(&model, &chunk, width, &device)?;
            let host = values
                .into_data()
                .convert::<f32>()
                .into_vec::<f32>()
                .map_err(|e| batch_error(format!("reading the critic's values: {e:?}")))?;
            for (row, &i) in part.iter().enumerate() {
                out[i] = host[row * width..row * width + seqs[i].response.len()].to_vec();
            }
        }
        Ok(out)
    }

    /// One optimizer update of the critic over a mini-batch: the clipped value loss of each
    /// micro-batch with the mini-batch's token count, gradients accumulated, clipped
    /// (`optim.grad_clip`) and applied at the critic's learning rate. A non-finite loss or
    /// gradient norm skips the update.
    pub fn update(
        &mut self,
        seqs: &[ValueSeq<'_>],
        (micro, micro_tokens): (usize, usize),
    ) -> Result<CriticUpdate, TrainerError> {
        let model = self.model.take().expect("critic present");
        let result = self.gradients(&model, seqs, (micro, micro_tokens));
        let (grads, mut stats) = match result {
            Ok(v) => v,
            Err(e) => {
                self.model = Some(model);
                return Err(e);
            }
        };
        let Some(grads) = grads else {
            self.model = Some(model);
            stats.grad_norm = f64::NAN;
            return Ok(stats);
        };
        let step = self.optim.step(self.lr, model, grads);
        self.model = Some(step.model);
        stats.grad_norm = step.grad_norm;
        stats.applied = step.applied;
        Ok(stats)
    }

    fn gradients(
        &self,
        model: &ScoreModel<B>,
        seqs: &[ValueSeq<'_>],
        (micro, micro_tokens): (usize, usize),
    ) -> Result<(Option<GradientsParams>, CriticUpdate), TrainerError> {
        check(seqs)?;
        let counts = GlobalCounts::from_lengths(
            &seqs
                .iter()
                .map(|s| s.mask.iter().filter(|&&m| m).count())
                .collect::<Vec<_>>(),
        );
        let device = model.body.device();
        let mut acc = GradientsAccumulator::<ScoreModel<B>>::new();
        let mut stats = CriticUpdate::default();
        for part in micro_batch_plan(&lengths(seqs), micro, micro_tokens) {
            let chunk: Vec<ValueSeq<'_>> = part.iter().map(|&i| seqs[i]).collect();
            let width = width(&chunk);
            let values = response_values(model, &chunk, width, &device)?;
            let shape = [chunk.len(), width];
            let (mut old, mut returns, mut mask) = (
                vec![0f32; chunk.len() * width],
                vec![0f32; chunk.len() * width],
                vec![false; chunk.len() * width],
            );
            for (row, s) in chunk.iter().enumerate() {
                let at = row * width;
                old[at..at + s.response.len()].copy_from_slice(s.old_values);
                returns[at..at + s.response.len()].copy_from_slice(s.returns);
                mask[at..at + s.response.len()].copy_from_slice(s.mask);
            }
            let out = value_loss(
                values,
                Tensor::from_data(TensorData::new(old, shape), &device),
                Tensor::from_data(TensorData::new(returns, shape), &device),
                Tensor::from_data(TensorData::new(mask, shape), &device),
                self.cliprange,
                Aggregation::TokenMean,
                counts,
            )
            .map_err(|e| batch_error(format!("value loss: {e}")))?;
            let loss: f64 = out.loss.clone().into_scalar().elem::<f64>();
            stats.loss += loss;
            stats.clipped += out.clipped;
            stats.tokens += out.tokens;
            if !loss.is_finite() {
                return Ok((None, stats));
            }
            acc.accumulate(
                model,
                GradientsParams::from_grads(out.loss.backward(), model),
            );
        }
        Ok((Some(acc.grads()), stats))
    }
}

/// The critic's AdamW: `[optim]`'s settings with the critic's learning rate.
fn critic_optim(section: &CriticSection, optim: &OptimSection) -> OptimSection {
    OptimSection {
        lr: section.lr(optim.lr),
        warmup_steps: 0,
        ..*optim
    }
}

fn batch_error(message: String) -> TrainerError {
    TrainerError::Batch {
        sequence: 0,
        message,
    }
}

fn lengths(seqs: &[ValueSeq<'_>]) -> Vec<usize> {
    seqs.iter()
        .map(|s| s.prompt.len() + s.response.len())
        .collect()
}

fn width(seqs: &[ValueSeq<'_>]) -> usize {
    seqs.iter()
        .map(|s| s.response.len())
        .max()
        .unwrap_or(1)
        .max(1)
}

/// Every sequence has a prompt, and the update's per-token inputs match its response.
fn check(seqs: &[ValueSeq<'_>]) -> Result<(), TrainerError> {
    for (i, s) in seqs.iter().enumerate() {
        let n = s.response.len();
        if s.prompt.is_empty() {
            return Err(TrainerError::Batch {
                sequence: i,
                message: "empty prompt: the first response token has no value position".into(),
            });
        }
        for (name, len) in [
            ("old values", s.old_values.len()),
            ("returns", s.returns.len()),
            ("mask entries", s.mask.len()),
        ] {
            if len != n {
                return Err(TrainerError::Batch {
                    sequence: i,
                    message: format!("{len} {name} for a {n}-token response"),
                });
            }
        }
    }
    Ok(())
}

/// `[rows, width]` values: row i, column j is the critic's output at the position that
/// predicts response token j (prompt length − 1 + j); columns past a response's end repeat
/// its last position (masked by every reader).
fn response_values<BB: Backend>(
    model: &ScoreModel<BB>,
    seqs: &[ValueSeq<'_>],
    width: usize,
    device: &BB::Device,
) -> Result<Tensor<BB, 2>, TrainerError> {
    if let Some(i) = seqs.iter().position(|s| s.prompt.is_empty()) {
        return Err(TrainerError::Batch {
            sequence: i,
            message: "empty prompt: the first response token has no value position".into(),
        });
    }
    let ids: Vec<Vec<u32>> = seqs
        .iter()
        .map(|s| [s.prompt, s.response].concat())
        .collect();
    let starts: Vec<usize> = seqs.iter().map(|s| s.prompt.len() - 1).collect();
    let (input, mask) = model.body.window_batch(&ids, &starts, width)?;
    let [n, l] = input.dims();
    let mut index = Vec::with_capacity(n * width);
    for row in 0..n {
        let last = ids[row].len() - 1;
        for j in 0..width {
            index.push((row * l + (starts[row] + j).min(last)) as i64);
        }
    }
    let scores = model.token_scores(input, Some(&mask))?;
    let index = Tensor::<BB, 1, Int>::from_data(TensorData::new(index, [n * width]), device);
    Ok(scores.reshape([n * l]).select(0, index).reshape([n, width]))
}
