//! Training a reward model on preference pairs (`rlvr train-rm`), as TRL 1.16's
//! `RewardTrainer` does: a sequence classifier ([`ScoreModel`] with one label, read at each
//! sequence's last token) scores the chosen and the rejected sequence of every pair, and the
//! Bradley–Terry loss ([`rl_loss::bradley_terry`], TRL's `compute_loss`: optional per-pair
//! margin and centring term) pushes the chosen score above the rejected one.
//!
//! Data ([`read_preferences`]): JSON lines with `chosen` and `rejected` and an optional
//! `prompt` (prepended to both) and `margin`, each either text or a list of chat messages, as
//! TRL reads them: text is `prompt + chosen` with the end-of-sequence token appended, messages go
//! through the tokenizer's chat template (no generation prompt); pairs longer than `max_length`
//! tokens are dropped and counted, as TRL filters them.

use std::path::Path;

use burn::module::AutodiffModule;
use burn::optim::{GradientsAccumulator, GradientsParams};
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use rl_loss::bradley_terry;
use rl_models::{ChatMessage, ScoreKind, ScoreModel, Tokenizer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::TrainerError;
use crate::config::OptimSection;
use crate::optim::{AdamWOptimizer, lr_at};

/// The largest preference file read (bytes).
pub const MAX_PREFERENCE_FILE: u64 = 4 << 30;

/// One preference pair as token ids: the whole chosen and rejected sequences (prompt included).
#[derive(Clone, Debug, PartialEq)]
pub struct PreferencePair {
    /// Prompt + chosen response.
    pub chosen: Vec<u32>,
    /// Prompt + rejected response.
    pub rejected: Vec<u32>,
    /// TRL's optional `margin`: the chosen score must exceed the rejected one by it.
    pub margin: Option<f32>,
}

/// The pairs of a preference file and what was left out.
#[derive(Clone, Debug, Default)]
pub struct Preferences {
    /// The pairs kept, in file order.
    pub pairs: Vec<PreferencePair>,
    /// Line numbers (1-based) of the pairs dropped for exceeding `max_length` tokens.
    pub too_long: Vec<usize>,
}

/// How [`read_preferences`] turns text into tokens.
#[derive(Clone, Copy, Debug)]
pub struct PreferenceTokens<'a> {
    /// The policy's tokenizer (with its chat template for message lists).
    pub tokenizer: &'a Tokenizer,
    /// Appended to text (not to chat-template output): the model's end-of-sequence id.
    pub eos: Option<u32>,
    /// Pairs with a side longer than this are dropped (0: no limit).
    pub max_length: usize,
}

/// Reads a JSON-lines preference file (module documentation). A bad line — not JSON, a missing
/// or mistyped field, text where messages are expected or the other way round, a message
/// without a chat template — is an error naming the file, the line and the field.
pub fn read_preferences(
    path: &Path,
    tokens: PreferenceTokens<'_>,
) -> Result<Preferences, TrainerError> {
    let size = std::fs::metadata(path)
        .map_err(|e| TrainerError::io(path, e))?
        .len();
    if size > MAX_PREFERENCE_FILE {
        return Err(TrainerError::Data {
            path: path.display().to_string(),
            record: 0,
            message: format!("{size} bytes, more than the {MAX_PREFERENCE_FILE} read"),
        });
    }
    let text = std::fs::read_to_string(path).map_err(|e| TrainerError::io(path, e))?;
    let mut out = Preferences::default();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |field: &str, message: String| TrainerError::Data {
            path: path.display().to_string(),
            record: i + 1,
            message: format!("{field}: {message}"),
        };
        let v: Value =
            serde_json::from_str(line).map_err(|e| bad("(line)", format!("not JSON: {e}")))?;
        let pair = pair_of(&v, tokens).map_err(|(field, m)| bad(field, m))?;
        let limit = tokens.max_length;
        if limit > 0 && (pair.chosen.len() > limit || pair.rejected.len() > limit) {
            out.too_long.push(i + 1);
        } else {
            out.pairs.push(pair);
        }
    }
    Ok(out)
}

/// One line's pair; errors are (field, message).
fn pair_of(v: &Value, t: PreferenceTokens<'_>) -> Result<PreferencePair, (&'static str, String)> {
    let obj = v
        .as_object()
        .ok_or(("(line)", "expected a JSON object".to_string()))?;
    let margin = match obj.get("margin") {
        None | Some(Value::Null) => None,
        Some(m) => Some(
            m.as_f64()
                .filter(|x| x.is_finite())
                .ok_or(("margin", format!("{m} is not a finite number")))? as f32,
        ),
    };
    let prompt = obj.get("prompt");
    let side = |field: &'static str| -> Result<Vec<u32>, (&'static str, String)> {
        let answer = obj.get(field).ok_or((
            field,
            "missing (each line needs chosen and rejected)".to_string(),
        ))?;
        match (prompt, answer) {
            (None | Some(Value::String(_)), Value::String(a)) => {
                let p = prompt.and_then(Value::as_str).unwrap_or("");
                let mut ids = t
                    .tokenizer
                    .encode_prompt(&format!("{p}{a}"))
                    .map_err(|e| (field, e.to_string()))?;
                ids.extend(t.eos);
                Ok(ids)
            }
            (None | Some(Value::Array(_)), Value::Array(a)) => {
                let mut messages = match prompt {
                    Some(p) => messages_of("prompt", p)?,
                    None => Vec::new(),
                };
                messages.extend(messages_of(field, &Value::Array(a.clone()))?);
                t.tokenizer
                    .apply_chat_template(&messages, false, true)
                    .map_err(|e| (field, e.to_string()))
            }
            _ => Err((
                field,
                "prompt and responses must be all text or all chat messages".to_string(),
            )),
        }
    };
    let chosen = side("chosen")?;
    let rejected = side("rejected")?;
    if chosen.is_empty() || rejected.is_empty() {
        return Err(("chosen", "a side tokenizes to no token".to_string()));
    }
    Ok(PreferencePair {
        chosen,
        rejected,
        margin,
    })
}

fn messages_of(field: &'static str, v: &Value) -> Result<Vec<ChatMessage>, (&'static str, String)> {
    let arr = v
        .as_array()
        .ok_or((field, "expected a list of chat messages".to_string()))?;
    arr.iter()
        .map(|m| {
            let role = m.get("role").and_then(Value::as_str);
            let content = m.get("content").and_then(Value::as_str);
            match (role, content) {
                (Some(r), Some(c)) => Ok(ChatMessage::new(r, c)),
                _ => Err((
                    field,
                    format!("{m} is not a message (an object with role and content strings)"),
                )),
            }
        })
        .collect()
}

/// Settings of [`train_reward_model`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RewardModelConfig {
    /// Passes over the training pairs.
    pub epochs: usize,
    /// Pairs per optimizer update.
    pub batch_size: usize,
    /// Pairs per forward/backward (each: its chosen and rejected sequence).
    pub micro_batch: usize,
    /// Seed of the pair order (reshuffled every epoch).
    pub seed: u64,
    /// TRL's `center_rewards_coefficient` (absent: no centring term).
    pub center_rewards_coefficient: Option<f64>,
    /// The optimizer (`lr`, `warmup_steps`, `weight_decay`, `grad_clip`, betas, ε).
    pub optim: OptimSection,
}

/// One optimizer update of [`train_reward_model`].
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct RewardStep {
    /// 1-based update.
    pub step: usize,
    /// Of `total` updates.
    pub total: usize,
    /// The batch's Bradley–Terry loss (TRL's).
    pub loss: f64,
    /// Fraction of the batch's pairs ranked right (chosen strictly higher).
    pub accuracy: f64,
    /// Mean r_chosen − r_rejected.
    pub margin: f64,
    /// Learning rate used.
    pub lr: f64,
    /// Pre-clip gradient norm.
    pub grad_norm: f64,
}

/// Pairs ranked right by a reward model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PairAccuracy {
    /// Pairs scored.
    pub pairs: usize,
    /// Pairs whose chosen score is strictly higher.
    pub correct: usize,
    /// Pairs scored equal.
    pub ties: usize,
}

impl PairAccuracy {
    /// correct / pairs.
    pub fn accuracy(&self) -> f64 {
        self.correct as f64 / self.pairs.max(1) as f64
    }

    /// The 95 % Wilson score interval of the accuracy.
    pub fn interval(&self) -> (f64, f64) {
        let n = self.pairs as f64;
        if n == 0.0 {
            return (0.0, 1.0);
        }
        let (p, z) = (self.accuracy(), 1.96f64);
        let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
        let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / (1.0 + z * z / n);
        (centre - half, centre + half)
    }
}

/// Scores every sequence of `seqs` (right-padded, read at each last token): `[n]`.
fn scores<BB: Backend>(
    model: &ScoreModel<BB>,
    seqs: &[&[u32]],
) -> Result<Tensor<BB, 1>, TrainerError> {
    let ids: Vec<Vec<u32>> = seqs.iter().map(|s| s.to_vec()).collect();
    let lengths: Vec<usize> = seqs.iter().map(|s| s.len()).collect();
    // No window: the batch is as long as its longest sequence.
    let ends: Vec<usize> = lengths.iter().map(|n| n.saturating_sub(1)).collect();
    let (input, _) = model.body.window_batch(&ids, &ends, 0)?;
    Ok(model
        .sequence_scores(input, &lengths)?
        .reshape([seqs.len()]))
}

/// The score of every sequence of `seqs` (each non-empty), `micro` sequences per forward.
pub fn score_sequences<BB: Backend>(
    model: &ScoreModel<BB>,
    seqs: &[&[u32]],
    micro: usize,
) -> Result<Vec<f32>, TrainerError> {
    let mut out = Vec::with_capacity(seqs.len());
    for chunk in seqs.chunks(micro.max(1)) {
        out.extend(
            scores(model, chunk)?
                .into_data()
                .convert::<f32>()
                .into_vec::<f32>()
                .map_err(|e| batch_error(format!("reading scores: {e:?}")))?,
        );
    }
    Ok(out)
}

/// How many of `pairs` `model` ranks right, `micro` pairs per forward.
pub fn pair_accuracy<BB: Backend>(
    model: &ScoreModel<BB>,
    pairs: &[PreferencePair],
    micro: usize,
) -> Result<PairAccuracy, TrainerError> {
    let mut out = PairAccuracy::default();
    for chunk in pairs.chunks(micro.max(1)) {
        let seqs: Vec<&[u32]> = chunk
            .iter()
            .map(|p| p.chosen.as_slice())
            .chain(chunk.iter().map(|p| p.rejected.as_slice()))
            .collect();
        let s = score_sequences(model, &seqs, 2 * chunk.len())?;
        let k = chunk.len();
        for i in 0..k {
            out.pairs += 1;
            out.correct += usize::from(s[i] > s[k + i]);
            out.ties += usize::from(s[i] == s[k + i]);
        }
    }
    Ok(out)
}

fn batch_error(message: String) -> TrainerError {
    TrainerError::Batch {
        sequence: 0,
        message,
    }
}

/// Trains `model` (a one-label sequence classifier) on `pairs`: `epochs` passes in a seeded
/// order, one AdamW update per `batch_size` pairs (the last batch of an epoch may be smaller),
/// each the Bradley–Terry loss of the batch accumulated over micro-batches of `micro_batch`
/// pairs (each weighted by its share of the batch, so the update is the whole batch's mean).
/// `on_step` sees every update. A non-finite loss or gradient stops training with
/// [`TrainerError::Diverged`].
pub fn train_reward_model<B: AutodiffBackend>(
    mut model: ScoreModel<B>,
    pairs: &[PreferencePair],
    cfg: &RewardModelConfig,
    mut on_step: impl FnMut(&RewardStep),
) -> Result<ScoreModel<B>, TrainerError> {
    if model.kind() != ScoreKind::Sequence || model.num_labels() != 1 {
        return Err(TrainerError::Config {
            field: "model".into(),
            message: format!(
                "a reward model is a sequence classifier with one label; this one is a {:?} \
                 classifier with {} labels",
                model.kind(),
                model.num_labels()
            ),
        });
    }
    if pairs.is_empty() || cfg.batch_size == 0 || cfg.epochs == 0 {
        return Err(TrainerError::Config {
            field: "train-rm".into(),
            message: "needs at least one pair, batch_size >= 1 and epochs >= 1".into(),
        });
    }
    let device = model.body.device();
    let mut optim = AdamWOptimizer::<B, ScoreModel<B>>::new(&cfg.optim);
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let per_epoch = pairs.len().div_ceil(cfg.batch_size);
    let total = per_epoch * cfg.epochs;
    let mut step = 0;
    for _ in 0..cfg.epochs {
        let mut order: Vec<usize> = (0..pairs.len()).collect();
        order.shuffle(&mut rng);
        for batch in order.chunks(cfg.batch_size) {
            let lr = lr_at(&cfg.optim, step);
            step += 1;
            let mut acc = GradientsAccumulator::<ScoreModel<B>>::new();
            let mut report = RewardStep {
                step,
                total,
                lr,
                ..RewardStep::default()
            };
            for micro in batch.chunks(cfg.micro_batch.max(1)) {
                let k = micro.len();
                let seqs: Vec<&[u32]> = micro
                    .iter()
                    .map(|&i| pairs[i].chosen.as_slice())
                    .chain(micro.iter().map(|&i| pairs[i].rejected.as_slice()))
                    .collect();
                let s = scores(&model, &seqs)?;
                let margin = micro.iter().any(|&i| pairs[i].margin.is_some()).then(|| {
                    let m: Vec<f32> = micro
                        .iter()
                        .map(|&i| pairs[i].margin.unwrap_or(0.0))
                        .collect();
                    Tensor::<B, 1>::from_data(TensorData::new(m, [k]), &device)
                });
                let out = bradley_terry(
                    s.clone().slice(0..k),
                    s.slice(k..2 * k),
                    margin,
                    cfg.center_rewards_coefficient,
                )
                .map_err(|e| batch_error(format!("Bradley–Terry loss: {e}")))?;
                let share = k as f64 / batch.len() as f64;
                let loss = out.loss.mul_scalar(share);
                report.loss += loss.clone().into_scalar().elem::<f64>();
                report.accuracy += out.accuracy * share;
                report.margin += out.mean_margin * share;
                acc.accumulate(&model, GradientsParams::from_grads(loss.backward(), &model));
            }
            if !report.loss.is_finite() {
                return Err(TrainerError::Diverged {
                    step,
                    message: format!("the reward model's loss is {}", report.loss),
                });
            }
            let out = optim.step(lr, model, acc.grads());
            model = out.model;
            report.grad_norm = out.grad_norm;
            if !out.applied {
                return Err(TrainerError::Diverged {
                    step,
                    message: format!("the reward model's gradient norm is {}", out.grad_norm),
                });
            }
            on_step(&report);
        }
    }
    Ok(model)
}

/// [`pair_accuracy`] of an autodiff model, on its inner backend (no graph).
pub fn held_out_accuracy<B: AutodiffBackend>(
    model: &ScoreModel<B>,
    pairs: &[PreferencePair],
    micro: usize,
) -> Result<PairAccuracy, TrainerError> {
    pair_accuracy(&model.valid(), pairs, micro)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bad lines of a preference file are errors naming the file, the line and the field; a
    /// pair over `max_length` is dropped and its line counted.
    #[test]
    fn bad_preference_lines_name_their_line_and_field() {
        let tok = Tokenizer::char_level("abc", &[]).unwrap();
        let dir = std::env::temp_dir().join(format!("rlvr-prefs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let tokens = PreferenceTokens {
            tokenizer: &tok,
            eos: None,
            max_length: 4,
        };
        let read = |name: &str, text: &str| {
            let p = dir.join(name);
            std::fs::write(&p, text).unwrap();
            read_preferences(&p, tokens)
        };
        let ok = read("ok.jsonl", "{\"prompt\":\"a\",\"chosen\":\"b\",\"rejected\":\"c\"}\n\n{\"chosen\":\"abcab\",\"rejected\":\"c\"}\n").unwrap();
        assert_eq!(ok.pairs.len(), 1);
        assert_eq!(ok.pairs[0].chosen, tok.encode_prompt("ab").unwrap());
        assert_eq!(ok.too_long, vec![3]);
        for (text, record, field) in [
            (
                "{\"chosen\":\"a\",\"rejected\":\"b\"}\n{\"chosen\":\"a\"}\n",
                2,
                "rejected",
            ),
            ("not json\n", 1, "(line)"),
            (
                "{\"chosen\":\"a\",\"rejected\":\"b\",\"margin\":\"x\"}\n",
                1,
                "margin",
            ),
            (
                "{\"prompt\":[],\"chosen\":\"a\",\"rejected\":\"b\"}\n",
                1,
                "chosen",
            ),
            ("{\"chosen\":[{\"role\":1}],\"rejected\":[]}\n", 1, "chosen"),
            ("{\"chosen\":\"z\",\"rejected\":\"a\"}\n", 1, "chosen"),
        ] {
            match read("bad.jsonl", text) {
                Err(TrainerError::Data {
                    record: r, message, ..
                }) => {
                    assert_eq!(r, record, "{text}: {message}");
                    assert!(message.starts_with(field), "{text}: {message}");
                }
                other => panic!("{text}: {other:?}"),
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
