//! The window pass of sequences that share their prompts: each distinct prompt is computed once
//! and its keys and values serve every response that follows it.
//!
//! In RL a group's G responses follow one prompt, and the update's padded batch computes that
//! prompt G times (for short responses after a chat template, most of the update's tokens). Here
//! sequence `r` is cut at its window start `s_r` (the position that predicts response token 0)
//! into a *prefix* `seq[..s_r]` and a *suffix* `seq[s_r..]`:
//!
//! 1. the distinct prefixes, left-padded, go through the decoder once, filling a [`KvCache`]
//!    (under autodiff its keys and values keep their graph);
//! 2. the cache's rows are repeated so that row `r` holds its prefix's keys and values
//!    ([`KvCache::retain_rows`]: a gather, whose backward sums the rows' gradients into the
//!    shared prefix);
//! 3. the right-padded suffixes go through the decoder with that cache: every suffix token
//!    attends to its own prefix and to the suffix tokens before it, at the positions it has in
//!    the whole sequence.
//!
//! The window rows are the suffix positions `0..width`, so the log-probs, entropies and every
//! gradient are those of the padded batch ([`CausalLm::window_batch`]) up to float summation
//! order.

use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};

use super::CausalLm;
use super::head::check_width;
use super::mask::AttentionMask;
use crate::error::ModelError;

/// Which sequences share a prefix: the distinct prefixes (in order of first appearance) and,
/// per sequence, the index of its prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptGroups {
    /// The distinct prefixes `seq[..start]`.
    pub prefixes: Vec<Vec<u32>>,
    /// `of_row[r]`: the prefix of sequence `r`.
    pub of_row: Vec<usize>,
}

impl PromptGroups {
    /// The prefixes `seqs[r][..starts[r]]` grouped by equal tokens. `starts` must hold one
    /// start per sequence, each at most the sequence's length (checked by the caller).
    pub fn of(seqs: &[Vec<u32>], starts: &[usize]) -> Self {
        let mut prefixes: Vec<Vec<u32>> = Vec::new();
        let mut index = std::collections::HashMap::<&[u32], usize>::new();
        let mut of_row = Vec::with_capacity(seqs.len());
        for (seq, &s) in seqs.iter().zip(starts) {
            let prefix = &seq[..s];
            let next = index.len();
            let i = *index.entry(prefix).or_insert(next);
            if i == prefixes.len() {
                prefixes.push(prefix.to_vec());
            }
            of_row.push(i);
        }
        Self { prefixes, of_row }
    }

    /// Whether at least two sequences share a prefix.
    pub fn shares(&self) -> bool {
        self.prefixes.len() < self.of_row.len()
    }
}

/// The window rows of a shared-prompt forward: `[b · width, H]` final hidden states (before
/// the final norm), their next tokens, and the right-padded mask of the suffixes (the window of
/// row `r` is columns `0..width` of its suffix).
pub(super) struct SharedRows<B: Backend> {
    pub(super) hidden: Tensor<B, 2>,
    pub(super) targets: Tensor<B, 1, Int>,
    pub(super) suffix_mask: AttentionMask,
}

impl<B: Backend> CausalLm<B> {
    /// The hidden states of the window of `width` positions from `starts[r]` of each host
    /// sequence, each distinct prefix of `groups` (`PromptGroups::of(seqs, starts)`) computed
    /// once (see the module documentation). A window may reach past its sequence's end (into
    /// padding), as in [`Self::window_batch`].
    ///
    /// Errors ([`ModelError::InvalidInput`]): `width` is 0, or as
    /// [`Self::token_logprobs_from_host`] (starts and sequences, token ids).
    pub(super) fn shared_window_rows(
        &self,
        seqs: &[Vec<u32>],
        starts: &[usize],
        width: usize,
        groups: &PromptGroups,
    ) -> Result<SharedRows<B>, ModelError> {
        self.check_host_windows(seqs, starts)?;
        check_width(width)?;
        let device = self.device();
        let b = seqs.len();

        // 1. Each distinct prefix once, left-padded, into the cache.
        let prefix_len = groups.prefixes.iter().map(Vec::len).max().unwrap_or(0);
        let suffix_lens: Vec<usize> = seqs.iter().zip(starts).map(|(q, &s)| q.len() - s).collect();
        let suffix_len = suffix_lens
            .iter()
            .copied()
            .max()
            .unwrap_or(0)
            .max(width + 1);
        let mut cache = None;
        if prefix_len > 0 {
            let p = groups.prefixes.len();
            let mut flat = Vec::with_capacity(p * prefix_len);
            for prefix in &groups.prefixes {
                flat.extend(std::iter::repeat_n(0i64, prefix_len - prefix.len()));
                flat.extend(prefix.iter().map(|&t| i64::from(t)));
            }
            let ids =
                Tensor::<B, 2, Int>::from_data(TensorData::new(flat, [p, prefix_len]), &device);
            let lengths: Vec<usize> = groups.prefixes.iter().map(Vec::len).collect();
            let mask = AttentionMask::left_padded(&lengths, prefix_len)?;
            let mut filled = self.new_cache(p, prefix_len + suffix_len);
            self.hidden_states(ids, Some(&mask), Some(&mut filled))?;
            // 2. Row r gets its prefix's keys and values.
            filled.retain_rows(&groups.of_row)?;
            cache = Some(filled);
        }

        // 3. The suffixes after their prefixes.
        let mut flat = Vec::with_capacity(b * suffix_len);
        for (seq, &s) in seqs.iter().zip(starts) {
            flat.extend(seq[s..].iter().map(|&t| i64::from(t)));
            flat.extend(std::iter::repeat_n(0i64, suffix_len - (seq.len() - s)));
        }
        let ids = Tensor::<B, 2, Int>::from_data(TensorData::new(flat, [b, suffix_len]), &device);
        let suffix_mask = AttentionMask::right_padded(&suffix_lens, suffix_len)?;
        let h = self.hidden_states(ids.clone(), Some(&suffix_mask), cache.as_mut())?;
        let hidden_size = self.config.hidden_size;
        let hidden = h
            .slice([0..b, 0..width, 0..hidden_size])
            .reshape([b * width, hidden_size]);
        let targets = ids.slice([0..b, 1..width + 1]).reshape([b * width]);
        Ok(SharedRows {
            hidden,
            targets,
            suffix_mask,
        })
    }
}
