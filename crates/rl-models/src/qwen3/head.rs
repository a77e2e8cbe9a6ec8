//! The LM head and per-token log-probs: logits of chosen positions, and next-token log-probs and
//! entropies with the head applied in few, evenly sized, transposed row chunks.

use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};

use super::Qwen3;
use super::kv_cache::KvCache;
use super::layers::matmul_hf;
use super::mask::AttentionMask;
use crate::error::ModelError;
use crate::logprobs::{EntropyMode, TokenLogProbs, VocabAxis, logprobs_from_logits_2d};

/// Rows of the LM head computed at once by [`Qwen3::token_logprobs`], as a budget in elements of
/// the `[rows, vocab]` logits block (128 Mi elements = 512 MiB in f32; 883 rows of Qwen3's
/// 151,936-token vocabulary). Under autodiff every chunk's LM-head GEMM has its own full
/// `[vocab, hidden]` weight gradient (622 MB at 0.6B), so few large chunks are much faster than
/// many small ones; rows are spread evenly over the chunks.
const LOGPROB_CHUNK_ELEMS: usize = 128 << 20;

/// Rows per LM-head chunk for `n` rows of `vocab` logits within a budget of `chunk_elems` logits
/// per chunk: the fewest chunks that fit, with the rows spread evenly over them.
fn chunk_rows(n: usize, vocab: usize, chunk_elems: usize) -> usize {
    let chunks = (n * vocab).div_ceil(chunk_elems.max(1)).max(1);
    n.div_ceil(chunks).max(1)
}

impl<B: Backend> Qwen3<B> {
    /// `logits = norm(h) @ W_head^T` for `[n, H]` hidden states (before the final norm).
    pub(super) fn lm_head_2d(&self, h: Tensor<B, 2>) -> Tensor<B, 2> {
        matmul_hf(self.norm.forward(h), self.head_weight())
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
    /// transposed one took a scalar strided path).
    fn lm_head_t(&self, h: Tensor<B, 2>) -> Tensor<B, 2> {
        self.head_weight().matmul(self.norm.forward(h).transpose())
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
        let chunk = chunk_rows(n, self.config.vocab_size, chunk_elems);
        let mut lps = Vec::new();
        let mut ents = Vec::new();
        let mut r0 = 0;
        while r0 < n {
            let r1 = (r0 + chunk).min(n);
            let logits_t = self.lm_head_t(h.clone().slice([r0..r1, 0..hidden]));
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
        let mut logprobs = cat(lps).reshape([b, l - 1]);
        let mut entropy_t = if ents.is_empty() {
            None
        } else {
            Some(cat(ents).reshape([b, l - 1]))
        };
        if let Some(m) = mask {
            let invalid: Vec<bool> = (0..b)
                .flat_map(|row| (0..l - 1).map(move |t| (row, t)))
                .map(|(row, t)| !(m.is_valid(row, t) && m.is_valid(row, t + 1)))
                .collect();
            if invalid.iter().any(|&x| x) {
                let device = logprobs.device();
                let invalid = Tensor::<B, 2, burn::tensor::Bool>::from_data(
                    TensorData::new(invalid, [b, l - 1]),
                    &device,
                );
                logprobs = logprobs.mask_fill(invalid.clone(), 0.0);
                entropy_t = entropy_t.map(|e| e.mask_fill(invalid, 0.0));
            }
        }
        Ok(TokenLogProbs {
            logprobs,
            entropy: entropy_t,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qwen3::Qwen3Config;
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
        let model = Qwen3Config::tiny(32).init_seeded::<AD>(3, &device).unwrap();
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
}
