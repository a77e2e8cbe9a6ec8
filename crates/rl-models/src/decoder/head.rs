//! The LM head and per-token log-probs: logits of chosen positions, and next-token log-probs and
//! entropies with the head applied in few, evenly sized, transposed row chunks.

use burn::tensor::backend::Backend;
use burn::tensor::{FloatDType, Int, Tensor, TensorData};

use super::CausalLm;
use super::kv_cache::KvCache;
use super::mask::AttentionMask;
use super::matmul::matmul_hf;
use crate::error::ModelError;
use crate::logprobs::{EntropyMode, TokenLogProbs, VocabAxis, logprobs_from_logits_2d};

/// Rows of the LM head computed at once by [`CausalLm::token_logprobs`], as a budget in elements of
/// the `[rows, vocab]` logits block (128 Mi elements = 512 MiB in f32; 883 rows of Qwen3's
/// 151,936-token vocabulary). Under autodiff every chunk's LM-head GEMM has its own full
/// `[vocab, hidden]` weight gradient (622 MB at 0.6B), so few large chunks are much faster than
/// many small ones; rows are spread evenly over the chunks.
pub(super) const LOGPROB_CHUNK_ELEMS: usize = 128 << 20;

/// Rows per LM-head chunk for `n` rows of `vocab` logits within a budget of `chunk_elems` logits
/// per chunk: the fewest chunks that fit, with the rows spread evenly over them.
pub(super) fn chunk_rows(n: usize, vocab: usize, chunk_elems: usize) -> usize {
    let chunks = (n * vocab).div_ceil(chunk_elems.max(1)).max(1);
    n.div_ceil(chunks).max(1)
}

impl<B: Backend> CausalLm<B> {
    /// `logits = norm(h) @ W_head^T` for `[n, H]` hidden states (before the final norm), in f32
    /// (the product runs in the compute dtype).
    pub(super) fn lm_head_2d(&self, h: Tensor<B, 2>) -> Tensor<B, 2> {
        let dtype = h.dtype();
        matmul_hf(self.norm.forward(h), self.head_weight().cast(dtype)).cast(FloatDType::F32)
    }

    /// The LM head's `[vocab, H]` weight: `lm_head.weight`, or the embedding when tied.
    fn head_weight(&self) -> Tensor<B, 2> {
        match &self.lm_head {
            Some(head) => head.weight.val(),
            None => self.embed_tokens.weight.val(),
        }
    }

    /// Transposed logits `W_head · norm(h)ᵀ`, `[vocab, n]`, for `[n, H]` hidden states: the GEMM
    /// reads the head weight in its own `[vocab, H]` layout and writes no transposed result, and
    /// under autodiff the weight gradient `dL/dlogitsᵀ · h` comes out contiguous in the weight's
    /// layout (for a tied head it is added straight onto the embedding's gradient, where a
    /// transposed one took a scalar strided path). f32, like [`Self::lm_head_2d`].
    fn lm_head_t(&self, h: Tensor<B, 2>) -> Tensor<B, 2> {
        let dtype = h.dtype();
        self.head_weight()
            .cast(dtype)
            .matmul(self.norm.forward(h).transpose())
            .cast(FloatDType::F32)
    }

    /// Logits of the last position of every row, `[batch, vocab]` (only that position goes
    /// through the LM head). Used by generation.
    pub(crate) fn last_logits(
        &self,
        input_ids: Tensor<B, 2, Int>,
        mask: Option<&AttentionMask>,
        cache: Option<&mut KvCache<B>>,
    ) -> Result<Tensor<B, 2>, ModelError> {
        let [b, l] = input_ids.dims();
        let h = self.hidden_states(input_ids, mask, cache)?;
        let last = h.slice([0..b, l - 1..l, 0..self.config.hidden_size]);
        Ok(self.lm_head_2d(last.reshape([b, self.config.hidden_size])))
    }

    /// Per-token log-probs of the next token, for training and scoring:
    /// `logprobs[b, t] = log p(ids[b, t+1] | ids[b, ..=t])`, `[batch, seq-1]`, plus the entropy of
    /// the same next-token distribution when `entropy` asks for it.
    ///
    /// Differentiable under an autodiff backend. `mask` marks real tokens (right or left padding,
    /// or `None`); positions whose token or next token is padding are set to 0 (mask them out of
    /// the loss with the same lengths). The LM head is applied in row chunks and the log-softmax
    /// is not materialised as a second `[.., vocab]` tensor: `log p = x_y - m - ln Σ exp(x - m)`
    /// with `m` the (detached) row max, `H = ln Σ e - Σ e (x - m) / Σ e` with `e = exp(x - m)`.
    pub fn token_logprobs(
        &self,
        input_ids: Tensor<B, 2, Int>,
        mask: Option<&AttentionMask>,
        entropy: EntropyMode,
    ) -> Result<TokenLogProbs<B>, ModelError> {
        self.token_logprobs_chunked(input_ids, mask, entropy, LOGPROB_CHUNK_ELEMS)
    }

    /// [`Self::token_logprobs`] with the LM head's chunk budget (logits per chunk) as a parameter.
    fn token_logprobs_chunked(
        &self,
        input_ids: Tensor<B, 2, Int>,
        mask: Option<&AttentionMask>,
        entropy: EntropyMode,
        chunk_elems: usize,
    ) -> Result<TokenLogProbs<B>, ModelError> {
        let [b, l] = input_ids.dims();
        if l < 2 {
            return Err(ModelError::InvalidInput(format!(
                "token_logprobs needs sequences of at least 2 tokens, got {l}"
            )));
        }
        let hidden = self.config.hidden_size;
        let h = self.hidden_states(input_ids.clone(), mask, None)?;
        let n = b * (l - 1);
        let h = h.slice([0..b, 0..l - 1, 0..hidden]).reshape([n, hidden]);
        let targets = input_ids.slice([0..b, 1..l]).reshape([n]);
        let (lp, ent) = self.head_logprobs(h, targets, entropy, chunk_elems, 1.0);
        Ok(zero_padding(lp, ent, b, l - 1, mask, |_| 0))
    }

    /// Next-token log-probs only in a window of `width` positions per row, for a loss that only
    /// reads response tokens: `logprobs[b, j] = log p(ids[b, s_b+j+1] | ids[b, ..=s_b+j])` with
    /// `s_b = starts[b]`, `[batch, width]` (and the entropy of the same distribution when
    /// `entropy` asks for it, in every [`EntropyMode`]).
    ///
    /// Equal to the columns `s_b .. s_b + width` of row `b` of [`Self::token_logprobs`] (same
    /// masking: entries whose token or next token is padding are 0), but while the hidden states
    /// are computed for the whole sequence (attention needs them), the final norm, the LM head and
    /// the log-softmax run only on the `batch × width` gathered rows, in the same chunks. For a
    /// prompt of `P_b` tokens followed by its response, `s_b = P_b − 1` puts the response's
    /// tokens in columns `0..`; a row's columns past its length hold zeros (or, without a mask,
    /// the values of its padding tokens): mask them in the loss. Differentiable under an autodiff
    /// backend; on the inner backend (`model.valid()`) it is the forward-only path.
    ///
    /// Errors ([`ModelError::InvalidInput`]): `starts.len()` is not the batch size, `width` is 0,
    /// a window does not fit (`s_b + width > seq − 1`), or the mask does not match the ids.
    pub fn token_logprobs_from(
        &self,
        input_ids: Tensor<B, 2, Int>,
        mask: Option<&AttentionMask>,
        starts: &[usize],
        width: usize,
        entropy: EntropyMode,
    ) -> Result<TokenLogProbs<B>, ModelError> {
        self.token_logprobs_from_tempered(input_ids, mask, starts, width, entropy, 1.0)
    }

    /// [`Self::token_logprobs_from`] of the tempered distribution softmax(logits / T) (and its
    /// entropy), as samplers at temperature T draw from and as verl and TRL compute π_old and π_θ.
    /// `temperature` must be finite and > 0; 1 is [`Self::token_logprobs_from`].
    #[allow(clippy::too_many_arguments)]
    pub fn token_logprobs_from_tempered(
        &self,
        input_ids: Tensor<B, 2, Int>,
        mask: Option<&AttentionMask>,
        starts: &[usize],
        width: usize,
        entropy: EntropyMode,
        temperature: f32,
    ) -> Result<TokenLogProbs<B>, ModelError> {
        check_temperature(temperature)?;
        self.token_logprobs_from_chunked(
            input_ids,
            mask,
            starts,
            width,
            entropy,
            LOGPROB_CHUNK_ELEMS,
            temperature,
        )
    }

    /// [`Self::token_logprobs_from`] with the LM head's chunk budget and the temperature as
    /// parameters.
    #[allow(clippy::too_many_arguments)]
    fn token_logprobs_from_chunked(
        &self,
        input_ids: Tensor<B, 2, Int>,
        mask: Option<&AttentionMask>,
        starts: &[usize],
        width: usize,
        entropy: EntropyMode,
        chunk_elems: usize,
        temperature: f32,
    ) -> Result<TokenLogProbs<B>, ModelError> {
        let [b, l] = input_ids.dims();
        let (rows, next) = window_index(b, l, starts, width)?;
        let hidden = self.config.hidden_size;
        let h = self.hidden_states(input_ids.clone(), mask, None)?;
        let device = h.device();
        let index =
            |v: Vec<i64>| Tensor::<B, 1, Int>::from_data(TensorData::new(v, [b * width]), &device);
        let h = h.reshape([b * l, hidden]).select(0, index(rows));
        let targets = input_ids.reshape([b * l]).select(0, index(next));
        let (lp, ent) = self.head_logprobs(h, targets, entropy, chunk_elems, temperature);
        Ok(zero_padding(lp, ent, b, width, mask, |row| starts[row]))
    }

    /// The raw next-token logits (f32, no temperature) at the window positions of
    /// [`Self::token_logprobs_from`]: `[batch * width, vocab]`, row `b * width + j` predicting
    /// the token after position `starts[b] + j`. What a full-vocabulary loss (distillation)
    /// reads; only the `batch × width` gathered rows go through the final norm and the LM head.
    /// Rows past a sequence's end hold the logits of padding positions: mask them.
    ///
    /// Errors ([`ModelError::InvalidInput`]): as [`Self::token_logprobs_from`].
    pub fn window_logits(
        &self,
        input_ids: Tensor<B, 2, Int>,
        mask: Option<&AttentionMask>,
        starts: &[usize],
        width: usize,
    ) -> Result<Tensor<B, 2>, ModelError> {
        let [b, l] = input_ids.dims();
        let (rows, _) = window_index(b, l, starts, width)?;
        let hidden = self.config.hidden_size;
        let h = self.hidden_states(input_ids, mask, None)?;
        let index = Tensor::<B, 1, Int>::from_data(TensorData::new(rows, [b * width]), &h.device());
        let h = h.reshape([b * l, hidden]).select(0, index);
        Ok(self.lm_head_2d(h))
    }

    /// Host sequences right-padded (token 0, masked) into one `[batch, L]` batch for
    /// [`Self::token_logprobs_from`] with these `starts` and `width`: L is long enough for every
    /// row's tokens and every row's window (a row with a long prompt and a short response still
    /// gets `width` columns, past its end).
    pub fn window_batch(
        &self,
        seqs: &[Vec<u32>],
        starts: &[usize],
        width: usize,
    ) -> Result<(Tensor<B, 2, Int>, AttentionMask), ModelError> {
        let l = seqs
            .iter()
            .zip(starts)
            .map(|(q, &s)| q.len().max(s.saturating_add(width).saturating_add(1)))
            .max()
            .unwrap_or(0);
        let b = seqs.len();
        let mut flat = Vec::with_capacity(b * l);
        for seq in seqs {
            flat.extend(seq.iter().map(|&t| i64::from(t)));
            flat.extend(std::iter::repeat_n(0i64, l - seq.len()));
        }
        let lengths: Vec<usize> = seqs.iter().map(Vec::len).collect();
        let mask = AttentionMask::right_padded(&lengths, l)?;
        let ids = Tensor::<B, 2, Int>::from_data(TensorData::new(flat, [b, l]), &self.device());
        Ok((ids, mask))
    }

    /// [`Self::token_logprobs_from`] for sequences given on the host, without entropy, read back:
    /// for sequence `seqs[i]` of `len_i` tokens, `log p(seqs[i][t+1] | seqs[i][..=t])` for `t` in
    /// `starts[i] .. len_i − 1` (`len_i − 1 − starts[i]` values, none when `starts[i] = len_i − 1`).
    /// With `starts[i] = prompt_len_i − 1` these are the log-probs of the response tokens (the
    /// old-policy log-probs of RL). The sequences are right-padded into one batch, with the window
    /// as wide as the longest response. Run it on a model without autodiff (`model.valid()`).
    ///
    /// Errors ([`ModelError::InvalidInput`]): `starts` and `seqs` differ in length, a start is not
    /// below its sequence's length, or a token id is not below `vocab_size`.
    pub fn token_logprobs_from_host(
        &self,
        seqs: &[Vec<u32>],
        starts: &[usize],
    ) -> Result<Vec<Vec<f32>>, ModelError> {
        self.token_logprobs_from_host_tempered(seqs, starts, 1.0)
    }

    /// [`Self::token_logprobs_from_host`] of softmax(logits / `temperature`) (see
    /// [`Self::token_logprobs_from_tempered`]).
    pub fn token_logprobs_from_host_tempered(
        &self,
        seqs: &[Vec<u32>],
        starts: &[usize],
        temperature: f32,
    ) -> Result<Vec<Vec<f32>>, ModelError> {
        self.check_host_windows(seqs, starts)?;
        let counts: Vec<usize> = seqs
            .iter()
            .zip(starts)
            .map(|(q, &s)| q.len() - 1 - s)
            .collect();
        let width = counts.iter().copied().max().unwrap_or(0);
        if width == 0 {
            return Ok(vec![Vec::new(); seqs.len()]);
        }
        let (ids, mask) = self.window_batch(seqs, starts, width)?;
        let out = self.token_logprobs_from_tempered(
            ids,
            Some(&mask),
            starts,
            width,
            EntropyMode::None,
            temperature,
        )?;
        let values: Vec<f32> = out
            .logprobs
            .into_data()
            .convert::<f32>()
            .into_vec()
            .map_err(|e| ModelError::Data(format!("{e:?}")))?;
        Ok(counts
            .iter()
            .enumerate()
            .map(|(i, &c)| values[i * width..i * width + c].to_vec())
            .collect())
    }

    /// Host sequences given with their window starts: one start per sequence, each below its
    /// sequence's length, and every token id below `vocab_size`.
    pub(super) fn check_host_windows(
        &self,
        seqs: &[Vec<u32>],
        starts: &[usize],
    ) -> Result<(), ModelError> {
        if seqs.len() != starts.len() {
            return Err(ModelError::InvalidInput(format!(
                "{} window starts for {} sequences",
                starts.len(),
                seqs.len()
            )));
        }
        for (i, (seq, &s)) in seqs.iter().zip(starts).enumerate() {
            if s >= seq.len() {
                return Err(ModelError::InvalidInput(format!(
                    "sequence {i}: start {s} is not below its length {}",
                    seq.len()
                )));
            }
            self.check_ids(seq)?;
        }
        Ok(())
    }

    /// Log-probs of `targets[i]` (`[n]`) after the final hidden states `h[i]` (`[n, H]`, before the
    /// final norm), and the entropies if asked: the final norm, the LM head (transposed, see
    /// [`Self::lm_head_t`]) and the log-softmax over row chunks of at most `chunk_elems` logits,
    /// spread evenly; logits are divided by `temperature` when it is not 1. The one head path of
    /// [`Self::token_logprobs`] and [`Self::token_logprobs_from`].
    pub(super) fn head_logprobs(
        &self,
        h: Tensor<B, 2>,
        targets: Tensor<B, 1, Int>,
        entropy: EntropyMode,
        chunk_elems: usize,
        temperature: f32,
    ) -> (Tensor<B, 1>, Option<Tensor<B, 1>>) {
        let [n, hidden] = h.dims();
        let chunk = chunk_rows(n, self.config.vocab_size, chunk_elems);
        let mut lps = Vec::new();
        let mut ents = Vec::new();
        let mut r0 = 0;
        while r0 < n {
            let r1 = (r0 + chunk).min(n);
            let mut logits_t = self.lm_head_t(h.clone().slice([r0..r1, 0..hidden]));
            if temperature != 1.0 {
                logits_t = logits_t.div_scalar(temperature);
            }
            let (lp, ent) = logprobs_from_logits_2d(
                logits_t,
                targets.clone().narrow(0, r0, r1 - r0),
                entropy,
                VocabAxis::Rows,
            );
            lps.push(lp);
            if let Some(e) = ent {
                ents.push(e);
            }
            r0 = r1;
        }
        let cat = |v: Vec<Tensor<B, 1>>| {
            if v.len() == 1 {
                v.into_iter().next().expect("one element")
            } else {
                Tensor::cat(v, 0)
            }
        };
        let ent = if ents.is_empty() {
            None
        } else {
            Some(cat(ents))
        };
        (cat(lps), ent)
    }
}

/// A log-prob temperature must be finite and > 0.
pub(super) fn check_temperature(temperature: f32) -> Result<(), ModelError> {
    if temperature.is_finite() && temperature > 0.0 {
        Ok(())
    } else {
        Err(ModelError::InvalidInput(format!(
            "log-prob temperature {temperature}: expected a finite number > 0"
        )))
    }
}

/// A log-prob window is at least one position wide.
pub(super) fn check_width(width: usize) -> Result<(), ModelError> {
    if width == 0 {
        return Err(ModelError::InvalidInput(
            "the log-prob window must be at least 1 position wide".to_string(),
        ));
    }
    Ok(())
}

/// The flattened hidden-state rows of a window of `width` positions from `starts[row]` in a
/// `[b, l]` batch (row `row * l + t` predicts flattened token `row * l + t + 1`), and the rows of
/// their next tokens; errors when a window does not fit.
pub(super) fn window_index(
    b: usize,
    l: usize,
    starts: &[usize],
    width: usize,
) -> Result<(Vec<i64>, Vec<i64>), ModelError> {
    if starts.len() != b {
        return Err(ModelError::InvalidInput(format!(
            "{} window starts for a batch of {b} rows",
            starts.len()
        )));
    }
    check_width(width)?;
    // Positions that predict a next token: 0 ..= l - 2.
    let predicting = l.saturating_sub(1);
    if let Some((row, &s)) = starts
        .iter()
        .enumerate()
        .find(|&(_, &s)| width > predicting || s > predicting - width)
    {
        return Err(ModelError::InvalidInput(format!(
            "row {row}: window of {width} positions from {s} does not fit a sequence of {l} \
             tokens (start + width must be at most {predicting})"
        )));
    }
    let rows: Vec<i64> = starts
        .iter()
        .enumerate()
        .flat_map(|(row, &s)| (0..width).map(move |j| (row * l + s + j) as i64))
        .collect();
    let next = rows.iter().map(|&r| r + 1).collect();
    Ok((rows, next))
}

/// Which entries `[row, j]` of a `[b, w]` window (position `t = start(row) + j`) have a padding
/// token at `t` or `t + 1`; `None` when there are none.
pub(super) fn padding_entries<B: Backend>(
    b: usize,
    w: usize,
    mask: Option<&AttentionMask>,
    start: impl Fn(usize) -> usize,
    device: &B::Device,
) -> Option<Tensor<B, 2, burn::tensor::Bool>> {
    padding_flags(b, w, mask, start)
        .map(|invalid| Tensor::from_data(TensorData::new(invalid, [b, w]), device))
}

/// [`padding_entries`] on the host: `[b · w]` flags, row-major; `None` when no entry is padding.
pub(super) fn padding_flags(
    b: usize,
    w: usize,
    mask: Option<&AttentionMask>,
    start: impl Fn(usize) -> usize,
) -> Option<Vec<bool>> {
    let m = mask?;
    let mut invalid = Vec::with_capacity(b * w);
    for row in 0..b {
        let s = start(row);
        invalid.extend((s..s + w).map(|t| !(m.is_valid(row, t) && m.is_valid(row, t + 1))));
    }
    invalid.iter().any(|&x| x).then_some(invalid)
}

/// `[n = b · w]` log-probs (and entropies) as `[b, w]`, with 0 where entry `[row, j]`, at
/// position `t = start(row) + j` of the sequence, has a padding token at `t` or `t + 1`.
pub(super) fn zero_padding<B: Backend>(
    logprobs: Tensor<B, 1>,
    entropy: Option<Tensor<B, 1>>,
    b: usize,
    w: usize,
    mask: Option<&AttentionMask>,
    start: impl Fn(usize) -> usize,
) -> TokenLogProbs<B> {
    let mut logprobs = logprobs.reshape([b, w]);
    let mut entropy = entropy.map(|e| e.reshape([b, w]));
    if let Some(invalid) = padding_entries::<B>(b, w, mask, start, &logprobs.device()) {
        logprobs = logprobs.mask_fill(invalid.clone(), 0.0);
        entropy = entropy.map(|e| e.mask_fill(invalid, 0.0));
    }
    TokenLogProbs { logprobs, entropy }
}

#[cfg(test)]
mod tests;
