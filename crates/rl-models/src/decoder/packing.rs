//! Packed rows: the training pass of host sequences laid end to end without padding between
//! them (`MemoryPlan::packing`).
//!
//! A padded batch computes every row to the longest sequence: with responses of 8 to 128 tokens
//! most of its positions are padding. Here each sequence `r`, cut at its window start `s_r` into
//! a prefix `seq[..s_r]` and a suffix `seq[s_r..]`, becomes segments of a packed row
//! ([`AttentionMask::packed`]):
//!
//! - a *unit* is one prefix followed by the suffixes that continue it: with shared prompts, a
//!   prompt group (the prompt once, then each response, as [`PromptGroups`] groups them);
//!   otherwise each sequence alone;
//! - units go into rows first-fit by decreasing length, each row at most as long as the longest
//!   unit, so a row's attention is no wider than the padded pass's widest row;
//! - every token attends to the earlier tokens of its own segment and of its prefix, at the
//!   position it has in its own sequence, so each sequence computes what it computes alone.
//!
//! The window entries are gathered from the packed positions; log-probs, entropies and gradients
//! are those of the padded pass up to float summation order. The backward is the memory plans'
//! ([`super::train_pass`]), with the chunked head and per-layer recomputation as configured.

use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Int, Tensor, TensorData};

use super::CausalLm;
use super::head::{check_temperature, check_width};
use super::mask::AttentionMask;
use super::shared_prompt::PromptGroups;
use super::train_pass::{MemoryPlan, WindowPass};
use crate::error::ModelError;
use crate::logprobs::EntropyMode;

/// Where host sequences sit in packed rows, and what the window reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackedLayout {
    /// Packed rows.
    pub rows: usize,
    /// Tokens per row (the fullest row's).
    pub row_len: usize,
    /// The token ids, row-major `[rows, row_len]`, 0 in padding.
    pub ids: Vec<i64>,
    /// The segment of each position (`None`: padding) and each segment's parent, as
    /// [`AttentionMask::packed`] takes them.
    pub segment: Vec<Option<u32>>,
    /// The parent of each segment.
    pub parent: Vec<Option<u32>>,
    /// For sequence `r`, the row-major index of its suffix's first token (window entry 0).
    pub suffix_at: Vec<usize>,
}

impl PackedLayout {
    /// The layout of `seqs` cut at `starts` (one start per sequence, each at most its length;
    /// checked by the caller), with each prompt group's prefix once when `share_prompts`.
    pub fn of(seqs: &[Vec<u32>], starts: &[usize], share_prompts: bool) -> Self {
        // Units: a prefix and the sequences whose suffixes follow it.
        let units: Vec<(Vec<u32>, Vec<usize>)> = if share_prompts {
            let groups = PromptGroups::of(seqs, starts);
            let mut members = vec![Vec::new(); groups.prefixes.len()];
            for (r, &g) in groups.of_row.iter().enumerate() {
                members[g].push(r);
            }
            groups.prefixes.into_iter().zip(members).collect()
        } else {
            (0..seqs.len())
                .map(|r| (seqs[r][..starts[r]].to_vec(), vec![r]))
                .collect()
        };
        let unit_len = |(prefix, members): &(Vec<u32>, Vec<usize>)| {
            prefix.len()
                + members
                    .iter()
                    .map(|&r| seqs[r].len() - starts[r])
                    .sum::<usize>()
        };
        let lens: Vec<usize> = units.iter().map(unit_len).collect();
        let capacity = lens.iter().copied().max().unwrap_or(0);
        // First fit by decreasing length (ties in order of appearance).
        let mut order: Vec<usize> = (0..units.len()).collect();
        order.sort_by_key(|&u| std::cmp::Reverse(lens[u]));
        let mut fill: Vec<usize> = Vec::new();
        let mut row_units: Vec<Vec<usize>> = Vec::new();
        for u in order {
            match fill.iter().position(|&f| f + lens[u] <= capacity) {
                Some(row) => {
                    fill[row] += lens[u];
                    row_units[row].push(u);
                }
                None => {
                    fill.push(lens[u]);
                    row_units.push(vec![u]);
                }
            }
        }
        let rows = row_units.len();
        let row_len = fill.iter().copied().max().unwrap_or(0);
        let mut ids = vec![0i64; rows * row_len];
        let mut segment = vec![None; rows * row_len];
        let mut parent = Vec::new();
        let mut suffix_at = vec![0usize; seqs.len()];
        for (row, us) in row_units.iter().enumerate() {
            let mut at = row * row_len;
            let mut put = |tokens: &[u32], seg: u32, at: &mut usize| {
                for &t in tokens {
                    ids[*at] = i64::from(t);
                    segment[*at] = Some(seg);
                    *at += 1;
                }
            };
            for &u in us {
                let (prefix, members) = &units[u];
                let prefix_seg = (!prefix.is_empty()).then(|| {
                    parent.push(None);
                    (parent.len() - 1) as u32
                });
                if let Some(seg) = prefix_seg {
                    put(prefix, seg, &mut at);
                }
                for &r in members {
                    parent.push(prefix_seg);
                    suffix_at[r] = at;
                    put(&seqs[r][starts[r]..], (parent.len() - 1) as u32, &mut at);
                }
            }
        }
        Self {
            rows,
            row_len,
            ids,
            segment,
            parent,
            suffix_at,
        }
    }

    /// The real tokens of the rows (those computed; the rest of `rows · row_len` is padding).
    pub fn tokens(&self) -> usize {
        self.segment.iter().filter(|s| s.is_some()).count()
    }
}

impl<B: AutodiffBackend> CausalLm<B> {
    /// The training pass of host sequences in packed rows (see the module documentation): the
    /// `[b, width]` window from each sequence's start, as [`Self::train_window`] returns it,
    /// each prompt group's prefix computed once when `plan.shared_prompts`.
    ///
    /// Errors ([`ModelError::InvalidInput`]): `width` is 0, the temperature is not positive, or
    /// as [`Self::token_logprobs_from_host`] (starts and sequences, token ids).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn packed_pass(
        &self,
        seqs: &[Vec<u32>],
        starts: &[usize],
        width: usize,
        entropy: EntropyMode,
        temperature: f32,
        plan: MemoryPlan,
    ) -> Result<WindowPass<B>, ModelError> {
        self.check_host_windows(seqs, starts)?;
        check_temperature(temperature)?;
        check_width(width)?;
        let layout = PackedLayout::of(seqs, starts, plan.shared_prompts);
        let [p, l] = [layout.rows, layout.row_len];
        let mask = AttentionMask::packed(p, l, &layout.segment, layout.parent.clone())?;
        let device = self.device();
        let ids = Tensor::<B, 2, Int>::from_data(TensorData::new(layout.ids, [p, l]), &device);

        // Window entry j of sequence r: the suffix position j, predicting suffix token j + 1;
        // past the suffix's last prediction it is padding (0, as in the padded pass).
        let b = seqs.len();
        let mut rows = Vec::with_capacity(b * width);
        let mut targets = Vec::with_capacity(b * width);
        let mut padding = Vec::with_capacity(b * width);
        for (r, (seq, &s)) in seqs.iter().zip(starts).enumerate() {
            let at = layout.suffix_at[r];
            for j in 0..width {
                let real = s + j + 1 < seq.len();
                rows.push((at + if real { j } else { 0 }) as i64);
                targets.push(if real { i64::from(seq[s + j + 1]) } else { 0 });
                padding.push(!real);
            }
        }
        let targets = Tensor::<B::InnerBackend, 1, Int>::from_data(
            TensorData::new(targets, [b * width]),
            &device,
        );
        let padding = padding.iter().any(|&x| x).then_some(padding);
        self.trunk_pass(
            ids,
            Some(&mask),
            rows,
            targets,
            padding,
            [b, width],
            entropy,
            temperature,
            plan,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two prompt groups and a lone sequence: shared, the 3-token prompt once before its two
    /// responses; unshared, each sequence alone; rows first fit by decreasing length.
    #[test]
    fn layouts() {
        let seqs = vec![
            vec![1, 2, 3, 10, 11],
            vec![1, 2, 3, 12],
            vec![4, 20, 21, 22, 23, 24],
        ];
        let starts = [3, 3, 1];
        let shared = PackedLayout::of(&seqs, &starts, true);
        // units: [1 2 3 | 10 11 | 12] (6 tokens), [4 | 20 .. 24] (6 tokens): one row each
        assert_eq!((shared.rows, shared.row_len), (2, 6));
        assert_eq!(shared.ids, vec![1, 2, 3, 10, 11, 12, 4, 20, 21, 22, 23, 24]);
        let s = |v: &[u32]| v.iter().map(|&x| Some(x)).collect::<Vec<_>>();
        assert_eq!(shared.segment, s(&[0, 0, 0, 1, 1, 2, 3, 4, 4, 4, 4, 4]));
        assert_eq!(shared.parent, vec![None, Some(0), Some(0), None, Some(3)]);
        assert_eq!(shared.suffix_at, vec![3, 5, 7]);
        assert_eq!(shared.tokens(), 12);
        let alone = PackedLayout::of(&seqs, &starts, false);
        // units of 5, 4 and 6 tokens into rows of 6: [6], [5], [4]
        assert_eq!((alone.rows, alone.row_len), (3, 6));
        assert_eq!(alone.suffix_at, vec![6 + 3, 12 + 3, 1]);
        assert_eq!(alone.tokens(), 15);
        // short units share a row: 2 + 2 + 3 tokens into rows of 4
        let short = vec![vec![1, 2], vec![3, 4], vec![5, 6, 7, 8]];
        let packed = PackedLayout::of(&short, &[1, 1, 0], false);
        assert_eq!((packed.rows, packed.row_len), (2, 4));
        assert_eq!(packed.ids, vec![5, 6, 7, 8, 1, 2, 3, 4]);
        assert_eq!(packed.segment[..4], s(&[0, 0, 0, 0]));
        assert_eq!(packed.parent, vec![None, None, Some(1), None, Some(3)]);
    }
}
