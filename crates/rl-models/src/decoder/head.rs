//! The LM head and per-token log-probs: logits of chosen positions, and next-token log-probs and
//! entropies with the head applied in few, evenly sized, transposed row chunks.

use burn::tensor::backend::Backend;
use burn::tensor::{FloatDType, Int, Tensor, TensorData};

use super::CausalLm;
use super::kv_cache::KvCache;
use super::layers::matmul_hf;
use super::mask::AttentionMask;
use crate::error::ModelError;
use crate::logprobs::{EntropyMode, TokenLogProbs, VocabAxis, logprobs_from_logits_2d};

/// Rows of the LM head computed at once by [`CausalLm::token_logprobs`], as a budget in elements of
/// the `[rows, vocab]` logits block (128 Mi elements = 512 MiB in f32; 883 rows of Qwen3's
/// 151,936-token vocabulary). Under autodiff every chunk's LM-head GEMM has its own full
/// `[vocab, hidden]` weight gradient (622 MB at 0.6B), so few large chunks are much faster than
/// many small ones; rows are spread evenly over the chunks.
const LOGPROB_CHUNK_ELEMS: usize = 128 << 20;

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
    if width == 0 {
        return Err(ModelError::InvalidInput(
            "the log-prob window must be at least 1 position wide".to_string(),
        ));
    }
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
    let m = mask?;
    let mut invalid = Vec::with_capacity(b * w);
    for row in 0..b {
        let s = start(row);
        invalid.extend((s..s + w).map(|t| !(m.is_valid(row, t) && m.is_valid(row, t + 1))));
    }
    invalid
        .iter()
        .any(|&x| x)
        .then(|| Tensor::from_data(TensorData::new(invalid, [b, w]), device))
}

/// `[n = b · w]` log-probs (and entropies) as `[b, w]`, with 0 where entry `[row, j]`, at
/// position `t = start(row) + j` of the sequence, has a padding token at `t` or `t + 1`.
fn zero_padding<B: Backend>(
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
mod tests {
    use super::*;
    use crate::decoder::ModelConfig;
    use burn::backend::{Autodiff, Flex};

    #[test]
    fn lm_head_chunks_are_few_and_even() {
        // 256 rows of Qwen3's vocabulary fit the 128 Mi budget: one chunk (was 220 + 36 rows).
        assert_eq!(chunk_rows(256, 151_936, LOGPROB_CHUNK_ELEMS), 256);
        // 1000 rows need ceil(1000 * 151936 / 2^27) = 2 chunks of 500 rows, not 883 + 117.
        assert_eq!(chunk_rows(1000, 151_936, LOGPROB_CHUNK_ELEMS), 500);
        // 10 rows of 7 logits in budgets of 20: ceil(70 / 20) = 4 chunks of ceil(10 / 4) = 3 rows.
        assert_eq!(chunk_rows(10, 7, 20), 3);
        // a budget below one row still makes progress, one row at a time
        assert_eq!(chunk_rows(5, 100, 10), 1);
    }

    #[test]
    fn chunked_log_probs_do_not_depend_on_the_chunking() {
        // Each row's log-softmax only reads its own logits, so any chunking gives the same
        // log-probs and entropies as one chunk (only the GEMM's row blocking differs).
        type AD = Autodiff<Flex>;
        let device = Default::default();
        let model = ModelConfig::tiny(32).init_seeded::<AD>(3, &device).unwrap();
        let ids: Vec<i64> = (0..3 * 9).map(|i| (i * 5 % 32) as i64).collect();
        let ids = Tensor::<AD, 2, Int>::from_data(TensorData::new(ids, [3, 9]), &device);
        let mask = AttentionMask::right_padded(&[9, 6, 8], 9).unwrap();
        let run = |budget| {
            let out = model
                .token_logprobs_chunked(ids.clone(), Some(&mask), EntropyMode::Detached, budget)
                .unwrap();
            let lp: Vec<f32> = out.logprobs.into_data().to_vec().unwrap();
            let ent: Vec<f32> = out.entropy.unwrap().into_data().to_vec().unwrap();
            (lp, ent)
        };
        let (lp1, ent1) = run(LOGPROB_CHUNK_ELEMS); // 24 rows x 32 logits: one chunk
        for budget in [32 * 5, 32 * 7 + 3, 1] {
            let (lp, ent) = run(budget); // 5, 4 (of 7, 7, 7, 3 rows) and 24 chunks
            for (a, b) in lp1.iter().zip(&lp).chain(ent1.iter().zip(&ent)) {
                assert!((a - b).abs() <= 1e-5, "budget {budget}: {a} vs {b}");
            }
        }
    }

    /// A tiny model with unit-scale logits (HF's 0.02 init gives near-uniform ones, where a
    /// shifted position could still agree to a few decimals).
    fn sharp_model<B: Backend>(vocab: usize, tied: bool, seed: u64) -> CausalLm<B> {
        let mut config = ModelConfig::tiny(vocab);
        config.initializer_range = 0.4;
        config.tie_word_embeddings = tied;
        config.init_seeded::<B>(seed, &Default::default()).unwrap()
    }

    fn make_ids<B: Backend>(b: usize, l: usize, vocab: usize) -> Tensor<B, 2, Int> {
        let v: Vec<i64> = (0..b * l).map(|i| ((i * 7 + 3) % vocab) as i64).collect();
        Tensor::from_data(TensorData::new(v, [b, l]), &Default::default())
    }

    fn host<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f32> {
        t.into_data().convert::<f32>().into_vec().unwrap()
    }

    /// Right-padded rows of unequal prompt and total lengths; `starts[b] = prompt_len[b] - 1`.
    /// Row 1 (7 tokens: positions 1..=7) and row 2 (10 tokens: positions 3..=9) end inside their
    /// windows: 2 + 1 columns predict a padding token or sit on one.
    const LENGTHS: [usize; 3] = [12, 7, 10];
    const STARTS: [usize; 3] = [4, 1, 3];
    const WIDTH: usize = 7;
    const SEQ: usize = 12;

    #[test]
    fn windowed_log_probs_equal_the_slice_of_the_full_path() {
        // On the inner backend (what old log-probs run on), every entropy mode, one chunk and
        // small uneven chunks of the windowed head; right and left padding.
        let vocab = 40;
        let model = sharp_model::<Flex>(vocab, true, 5);
        let ids = make_ids::<Flex>(3, SEQ, vocab);
        let left_lengths = [12, 9, 10];
        let cases = [
            (
                AttentionMask::right_padded(&LENGTHS, SEQ).unwrap(),
                STARTS,
                3,
            ),
            // left padding (0, 3, 2 pad tokens): every window entry is real
            (
                AttentionMask::left_padded(&left_lengths, SEQ).unwrap(),
                [4, 4, 3],
                0,
            ),
        ];
        for (mask, starts, want_zeroed) in &cases {
            for mode in [
                EntropyMode::None,
                EntropyMode::Detached,
                EntropyMode::Differentiable,
            ] {
                let full = model.token_logprobs(ids.clone(), Some(mask), mode).unwrap();
                let full_lp = host(full.logprobs);
                let full_ent = full.entropy.map(host);
                assert_eq!(full_ent.is_some(), mode != EntropyMode::None);
                // The test can tell positions apart: shifting the window by one changes values.
                let shift = (0..3)
                    .flat_map(|row| (0..WIDTH).map(move |j| (row, starts[row] + j)))
                    .filter(|&(row, t)| t + 2 < SEQ && mask.is_valid(row, t + 2))
                    .map(|(row, t)| {
                        let at = |t: usize| full_lp[row * (SEQ - 1) + t];
                        (at(t) - at(t + 1)).abs()
                    })
                    .fold(0.0f32, f32::max);
                assert!(shift > 0.1, "neighbouring log-probs too close: {shift}");
                for budget in [LOGPROB_CHUNK_ELEMS, vocab * 4 + 3, 1] {
                    let out = model
                        .token_logprobs_from_chunked(
                            ids.clone(),
                            Some(mask),
                            starts,
                            WIDTH,
                            mode,
                            budget,
                            1.0,
                        )
                        .unwrap();
                    assert_eq!(out.logprobs.dims(), [3, WIDTH]);
                    let lp = host(out.logprobs);
                    let ent = out.entropy.map(host);
                    assert_eq!(ent.is_some(), mode != EntropyMode::None);
                    let mut zeroed = 0;
                    for (row, &s) in starts.iter().enumerate() {
                        for j in 0..WIDTH {
                            let (w, f) = (row * WIDTH + j, row * (SEQ - 1) + s + j);
                            let real = mask.is_valid(row, s + j) && mask.is_valid(row, s + j + 1);
                            if !real {
                                assert_eq!((lp[w], full_lp[f]), (0.0, 0.0), "{row},{j}");
                                zeroed += 1;
                            }
                            assert!(
                                (lp[w] - full_lp[f]).abs() <= 1e-5,
                                "{mode:?} budget {budget} [{row}, {j}]: {} vs {}",
                                lp[w],
                                full_lp[f]
                            );
                            if let (Some(e), Some(fe)) = (&ent, &full_ent) {
                                assert!(
                                    (e[w] - fe[f]).abs() <= 1e-5,
                                    "{mode:?} budget {budget} entropy [{row}, {j}]"
                                );
                            }
                        }
                    }
                    assert_eq!(zeroed, *want_zeroed);
                }
            }
        }
    }

    /// Every parameter's gradient, by HF name.
    fn all_grads(
        m: &CausalLm<Autodiff<Flex>>,
        grads: &<Autodiff<Flex> as burn::tensor::backend::AutodiffBackend>::Gradients,
    ) -> Vec<(String, Vec<f32>)> {
        let g2 = |t: Tensor<Autodiff<Flex>, 2>| host(t.grad(grads).expect("gradient"));
        let g1 = |t: Tensor<Autodiff<Flex>, 1>| host(t.grad(grads).expect("gradient"));
        let mut out = vec![("embed".to_string(), g2(m.embed_tokens.weight.val()))];
        for (n, layer) in m.layers.iter().enumerate() {
            let a = &layer.self_attn;
            for (name, w) in [
                ("q", &a.q_proj),
                ("k", &a.k_proj),
                ("v", &a.v_proj),
                ("o", &a.o_proj),
                ("gate", &layer.mlp.gate_proj),
                ("up", &layer.mlp.up_proj),
                ("down", &layer.mlp.down_proj),
            ] {
                out.push((format!("{n}.{name}"), g2(w.weight.val())));
            }
            for (name, w) in [
                ("input_norm", Some(&layer.input_layernorm)),
                ("post_norm", Some(&layer.post_attention_layernorm)),
                ("q_norm", a.q_norm.as_ref()),
                ("k_norm", a.k_norm.as_ref()),
            ] {
                if let Some(w) = w {
                    out.push((format!("{n}.{name}"), g1(w.weight.val())));
                }
            }
        }
        out.push(("norm".to_string(), g1(m.norm.weight.val())));
        if let Some(head) = &m.lm_head {
            out.push(("lm_head".to_string(), g2(head.weight.val())));
        }
        out
    }

    #[test]
    fn windowed_gradients_equal_the_sliced_full_loss() {
        // loss = Σ c[b, j] (log p + 0.1 H) over the real window entries, with distinct weights
        // c so that a permuted or shifted window changes the gradient; the full path's loss puts
        // the same weights at columns s_b + j of its [b, seq − 1] output.
        type AD = Autodiff<Flex>;
        let device = Default::default();
        let vocab = 40;
        for tied in [true, false] {
            let model = sharp_model::<AD>(vocab, tied, 9);
            let ids = make_ids::<AD>(3, SEQ, vocab);
            let mask = AttentionMask::right_padded(&LENGTHS, SEQ).unwrap();
            let weight = |row: usize, j: usize| {
                let t = STARTS[row] + j;
                let real = mask.is_valid(row, t) && mask.is_valid(row, t + 1);
                if real {
                    1.0 + (row * WIDTH + j) as f32 / 10.0
                } else {
                    0.0
                }
            };
            let mut c_full = vec![0.0f32; 3 * (SEQ - 1)];
            let mut c_win = vec![0.0f32; 3 * WIDTH];
            for row in 0..3 {
                for j in 0..WIDTH {
                    c_full[row * (SEQ - 1) + STARTS[row] + j] = weight(row, j);
                    c_win[row * WIDTH + j] = weight(row, j);
                }
            }
            let loss = |out: TokenLogProbs<AD>, c: Vec<f32>, shape: [usize; 2]| {
                let c = Tensor::<AD, 2>::from_data(TensorData::new(c, shape), &device);
                (out.logprobs * c.clone()).sum() + (out.entropy.unwrap() * c).sum() * 0.1
            };
            let full = model
                .token_logprobs(ids.clone(), Some(&mask), EntropyMode::Differentiable)
                .unwrap();
            let full_loss = loss(full, c_full, [3, SEQ - 1]);
            let want = all_grads(&model, &full_loss.clone().backward());
            let want_loss = host(full_loss)[0];
            for budget in [LOGPROB_CHUNK_ELEMS, vocab * 4] {
                let out = model
                    .token_logprobs_from_chunked(
                        ids.clone(),
                        Some(&mask),
                        &STARTS,
                        WIDTH,
                        EntropyMode::Differentiable,
                        budget,
                        1.0,
                    )
                    .unwrap();
                let win_loss = loss(out, c_win.clone(), [3, WIDTH]);
                let got = all_grads(&model, &win_loss.clone().backward());
                let got_loss = host(win_loss)[0];
                assert!((got_loss - want_loss).abs() <= 1e-5 * want_loss.abs().max(1.0));
                assert_eq!(got.len(), want.len());
                for ((name, g), (_, w)) in got.iter().zip(&want) {
                    let scale = w.iter().fold(0.0f32, |a, &x| a.max(x.abs()));
                    assert!(scale > 0.0, "{name}: zero gradient");
                    let d = g
                        .iter()
                        .zip(w)
                        .fold(0.0f32, |a, (x, y)| a.max((x - y).abs()));
                    assert!(
                        d <= 1e-5 * scale,
                        "tied {tied}, budget {budget}, {name}: max |Δ| = {d} (max |g| = {scale})"
                    );
                }
            }
        }
    }

    #[test]
    fn host_windows_equal_each_sequence_scored_alone() {
        // Ragged sequences (one with a long prompt and a short response, one with no response
        // token at all), each compared with the full path over the sequence alone, unpadded.
        let vocab = 40;
        let model = sharp_model::<Flex>(vocab, false, 11);
        let seqs: Vec<Vec<u32>> = [(12, 9), (7, 2), (10, 4), (3, 3)]
            .iter()
            .enumerate()
            .map(|(i, &(len, _))| {
                (0..len)
                    .map(|t| ((t * 5 + i * 11 + 1) % vocab) as u32)
                    .collect()
            })
            .collect();
        let starts = [8, 1, 3, 2]; // prompt lengths 9, 2, 4, 3
        let got = model.token_logprobs_from_host(&seqs, &starts).unwrap();
        assert_eq!(
            got.iter().map(Vec::len).collect::<Vec<_>>(),
            vec![3, 5, 6, 0]
        );
        for (i, seq) in seqs.iter().enumerate() {
            let t = Tensor::<Flex, 2, Int>::from_data(
                TensorData::new(seq.iter().map(|&x| i64::from(x)).collect(), [1, seq.len()]),
                &Default::default(),
            );
            let alone = host(
                model
                    .token_logprobs(t, None, EntropyMode::None)
                    .unwrap()
                    .logprobs,
            );
            for (j, g) in got[i].iter().enumerate() {
                let want = alone[starts[i] + j];
                assert!((g - want).abs() <= 1e-5, "seq {i} token {j}: {g} vs {want}");
            }
        }
        // nothing to score: no model run
        assert_eq!(
            model.token_logprobs_from_host(&seqs[3..], &[2]).unwrap(),
            vec![Vec::<f32>::new()]
        );
    }

    #[test]
    fn bad_windows_are_typed_errors() {
        let vocab = 40;
        let model = sharp_model::<Flex>(vocab, true, 1);
        let ids = make_ids::<Flex>(3, SEQ, vocab);
        let mask = AttentionMask::right_padded(&LENGTHS, SEQ).unwrap();
        let run = |mask: Option<&AttentionMask>, starts: &[usize], width: usize| {
            model.token_logprobs_from(ids.clone(), mask, starts, width, EntropyMode::None)
        };
        let invalid = |r: Result<TokenLogProbs<Flex>, ModelError>| {
            matches!(r, Err(ModelError::InvalidInput(_)))
        };
        assert!(invalid(run(Some(&mask), &[0, 0], 3))); // one start missing
        assert!(invalid(run(Some(&mask), &STARTS, 0))); // empty window
        assert!(invalid(run(Some(&mask), &[4, 5, 3], WIDTH))); // 5 + 7 > 11
        assert!(invalid(run(None, &[0, 0, usize::MAX], 1))); // no overflow
        assert!(invalid(run(None, &[0, 0, 0], SEQ))); // wider than the predicting positions
        let other = AttentionMask::right_padded(&[3, 3], SEQ).unwrap();
        assert!(invalid(run(Some(&other), &[0, 0, 0], 2))); // mask of another batch
        // the largest window that fits: every predicting position
        assert_eq!(
            run(None, &[0, 0, 0], SEQ - 1).unwrap().logprobs.dims(),
            [3, SEQ - 1]
        );
        let seqs = vec![vec![1u32, 2, 3], vec![4, 5]];
        let host_invalid =
            |r: Result<Vec<Vec<f32>>, ModelError>| matches!(r, Err(ModelError::InvalidInput(_)));
        assert!(host_invalid(model.token_logprobs_from_host(&seqs, &[0])));
        assert!(host_invalid(model.token_logprobs_from_host(&seqs, &[0, 2]))); // start = len
        assert!(host_invalid(
            model.token_logprobs_from_host(&[vec![]], &[0])
        ));
        assert!(host_invalid(
            model.token_logprobs_from_host(&[vec![1, 40]], &[0]) // id = vocab
        ));
        assert_eq!(
            model.token_logprobs_from_host(&[], &[]).unwrap(),
            Vec::<Vec<f32>>::new()
        );
    }
}
