//! [`AttentionMask`]: which tokens of a batch are real, how packed rows divide into sequences,
//! and the additive bias of masked keys.

use crate::error::ModelError;

/// Additive attention bias of masked positions. Finite (HF uses the dtype minimum) so that a
/// fully masked query row (a left-pad position) yields finite values rather than NaN; two masks
/// added stay finite too.
pub(crate) const MASK_BIAS: f32 = -1.0e30;

/// Which tokens of a `[batch, seq]` input are real (`true`) and which are padding (`false`),
/// in the sense of HF's `attention_mask` (1 = attend). Padding can be on either side (or
/// anywhere): padded keys are masked out and position ids count only real tokens
/// (`position = cumsum(mask) - 1`, as HF `generate` does), so a padded row computes the same
/// function as the row alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttentionMask {
    pub(super) batch: usize,
    pub(super) seq_len: usize,
    pub(super) valid: Vec<bool>,
    /// Packed rows: the segment of each token, when the rows hold several sequences.
    pub(super) segments: Option<Segments>,
}

/// How packed rows divide into segments (see [`AttentionMask::packed`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Segments {
    /// The segment of each real token (row-major, as `valid`); padding holds `u32::MAX`.
    of_token: Vec<u32>,
    /// The parent of each segment.
    parent: Vec<Option<u32>>,
    /// The position of each segment's first token: its parent's first position plus the
    /// parent's length.
    base: Vec<usize>,
}

impl Segments {
    /// Whether segment `key` is `query` or one of its ancestors (never for padding).
    pub(super) fn sees(&self, query: u32, key: u32) -> bool {
        let mut s = Some(query);
        while let Some(q) = s {
            let Some(&parent) = self.parent.get(q as usize) else {
                return false;
            };
            if q == key {
                return true;
            }
            s = parent;
        }
        false
    }

    /// The segment of token `i` (row-major), `u32::MAX` for padding.
    pub(super) fn of(&self, i: usize) -> u32 {
        self.of_token[i]
    }

    /// Position ids of the tokens (row-major): a token's segment base plus the real tokens of its
    /// segment before it; 0 for padding.
    pub(super) fn positions(&self) -> Vec<usize> {
        let mut seen = vec![0usize; self.parent.len()];
        let mut out = Vec::with_capacity(self.of_token.len());
        for &s in &self.of_token {
            if s == u32::MAX {
                out.push(0);
            } else {
                out.push(self.base[s as usize] + seen[s as usize]);
                seen[s as usize] += 1;
            }
        }
        out
    }
}

impl AttentionMask {
    /// A mask from row-major flags (`valid[b * seq_len + t]`).
    pub fn new(batch: usize, seq_len: usize, valid: Vec<bool>) -> Result<Self, ModelError> {
        if valid.len() != batch * seq_len {
            return Err(ModelError::InvalidInput(format!(
                "attention mask has {} flags, expected batch {batch} x seq_len {seq_len}",
                valid.len()
            )));
        }
        Ok(Self {
            batch,
            seq_len,
            valid,
            segments: None,
        })
    }

    /// No padding.
    pub fn full(batch: usize, seq_len: usize) -> Self {
        Self {
            batch,
            seq_len,
            valid: vec![true; batch * seq_len],
            segments: None,
        }
    }

    /// Row `b` holds `lengths[b]` real tokens at the start, then padding.
    pub fn right_padded(lengths: &[usize], seq_len: usize) -> Result<Self, ModelError> {
        Self::padded(lengths, seq_len, false)
    }

    /// Row `b` holds padding, then `lengths[b]` real tokens at the end.
    pub fn left_padded(lengths: &[usize], seq_len: usize) -> Result<Self, ModelError> {
        Self::padded(lengths, seq_len, true)
    }

    fn padded(lengths: &[usize], seq_len: usize, left: bool) -> Result<Self, ModelError> {
        let mut valid = Vec::with_capacity(lengths.len() * seq_len);
        for (b, &len) in lengths.iter().enumerate() {
            if len > seq_len {
                return Err(ModelError::InvalidInput(format!(
                    "row {b}: length {len} exceeds seq_len {seq_len}"
                )));
            }
            let pad = seq_len - len;
            valid.extend((0..seq_len).map(|t| if left { t >= pad } else { t < len }));
        }
        Ok(Self {
            batch: lengths.len(),
            seq_len,
            valid,
            segments: None,
        })
    }

    /// From HF-style rows of 0/1.
    pub fn from_rows<R: AsRef<[bool]>>(rows: &[R]) -> Result<Self, ModelError> {
        let seq_len = rows.first().map(|r| r.as_ref().len()).unwrap_or(0);
        let mut valid = Vec::with_capacity(rows.len() * seq_len);
        for (b, r) in rows.iter().enumerate() {
            if r.as_ref().len() != seq_len {
                return Err(ModelError::InvalidInput(format!(
                    "attention mask row {b} has {} entries, row 0 has {seq_len}",
                    r.as_ref().len()
                )));
            }
            valid.extend_from_slice(r.as_ref());
        }
        Ok(Self {
            batch: rows.len(),
            seq_len,
            valid,
            segments: None,
        })
    }

    /// Packed rows: each of the `batch` rows of `seq_len` tokens holds several sequences laid end
    /// to end. `segment[b * seq_len + t]` is the segment of token `t` of row `b` (`None`:
    /// padding); `parent[s]` the segment that segment `s` continues, if any. A token attends to
    /// the earlier tokens of its own segment and of its segment's ancestors, and its position is
    /// its segment's base (the parent's base plus the parent's length; 0 without a parent) plus
    /// the tokens of its segment before it. A prompt shared by several responses is one segment,
    /// each response a segment whose parent it is: each response then computes as if it followed
    /// the prompt alone. Without a KV cache only.
    ///
    /// Errors ([`ModelError::InvalidInput`]): `segment` is not `batch · seq_len` long, an id is
    /// not below `parent.len()`, a parent id is not below its child's, a segment has no tokens
    /// or spans two rows, or a child has a token before its parent's last.
    pub fn packed(
        batch: usize,
        seq_len: usize,
        segment: &[Option<u32>],
        parent: Vec<Option<u32>>,
    ) -> Result<Self, ModelError> {
        let bad = |m: String| {
            Err(ModelError::InvalidInput(format!(
                "packed attention mask: {m}"
            )))
        };
        if segment.len() != batch * seq_len {
            return bad(format!(
                "{} segment ids, expected batch {batch} x seq_len {seq_len}",
                segment.len()
            ));
        }
        let n = parent.len();
        if let Some((s, p)) = parent
            .iter()
            .enumerate()
            .find_map(|(s, p)| p.filter(|&p| p as usize >= s).map(|p| (s, p)))
        {
            return bad(format!(
                "segment {s} has parent {p}, which is not an earlier segment"
            ));
        }
        // Per segment: its row, first and last token index within the row, and length.
        let mut span: Vec<Option<(usize, usize, usize, usize)>> = vec![None; n];
        for (i, s) in segment.iter().enumerate() {
            let Some(s) = *s else { continue };
            let (row, t) = (i / seq_len.max(1), i % seq_len.max(1));
            let Some(entry) = span.get_mut(s as usize) else {
                return bad(format!("token {t} of row {row} is in segment {s}, of {n}"));
            };
            match entry {
                None => *entry = Some((row, t, t, 1)),
                Some((r, _, last, len)) if *r == row => (*last, *len) = (t, *len + 1),
                Some((r, ..)) => return bad(format!("segment {s} spans rows {r} and {row}")),
            }
        }
        let mut base = vec![0usize; n];
        for s in 0..n {
            let Some((row, first, _, _)) = span[s] else {
                return bad(format!("segment {s} has no tokens"));
            };
            if let Some(p) = parent[s] {
                let (prow, _, plast, plen) = span[p as usize].expect("earlier segments checked");
                if prow != row || plast >= first {
                    return bad(format!(
                        "segment {s} (row {row}, from token {first}) does not follow its parent \
                         {p} (row {prow}, to token {plast})"
                    ));
                }
                base[s] = base[p as usize] + plen;
            }
        }
        Ok(Self {
            batch,
            seq_len,
            valid: segment.iter().map(Option::is_some).collect(),
            segments: Some(Segments {
                of_token: segment.iter().map(|s| s.unwrap_or(u32::MAX)).collect(),
                parent,
                base,
            }),
        })
    }

    /// Whether the rows are packed ([`Self::packed`]).
    pub fn is_packed(&self) -> bool {
        self.segments.is_some()
    }

    /// Batch size.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// Sequence length.
    pub fn seq_len(&self) -> usize {
        self.seq_len
    }

    /// Whether token `t` of row `b` is real (`false` outside the mask).
    pub fn is_valid(&self, b: usize, t: usize) -> bool {
        b < self.batch && t < self.seq_len && self.valid[b * self.seq_len + t]
    }

    /// Number of real tokens of each row.
    pub fn lengths(&self) -> Vec<usize> {
        (0..self.batch)
            .map(|b| {
                self.valid[b * self.seq_len..(b + 1) * self.seq_len]
                    .iter()
                    .filter(|&&v| v)
                    .count()
            })
            .collect()
    }

    /// Row-major flags.
    pub fn as_slice(&self) -> &[bool] {
        &self.valid
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_from_lengths() {
        let r = AttentionMask::right_padded(&[2, 3, 0], 3).unwrap();
        assert_eq!(
            r.as_slice(),
            &[true, true, false, true, true, true, false, false, false]
        );
        let l = AttentionMask::left_padded(&[2, 3, 0], 3).unwrap();
        assert_eq!(
            l.as_slice(),
            &[false, true, true, true, true, true, false, false, false]
        );
        assert_eq!(l.lengths(), vec![2, 3, 0]);
        assert!(!l.is_valid(0, 0) && l.is_valid(0, 1) && !l.is_valid(5, 0));
        assert!(AttentionMask::right_padded(&[4], 3).is_err());
        assert!(AttentionMask::new(2, 3, vec![true; 5]).is_err());
        assert!(AttentionMask::from_rows(&[vec![true], vec![true, false]]).is_err());
        let m = AttentionMask::from_rows(&[[true, false], [false, true]]).unwrap();
        assert_eq!((m.batch(), m.seq_len()), (2, 2));
    }

    /// Row 0: a prompt (segment 0, 3 tokens), two responses after it (1: 2 tokens, 2: 1 token),
    /// padding; row 1: a lone sequence (3) of 2 tokens, then one of 3 tokens (4). Positions
    /// restart at each lone sequence and continue the prompt in each response; a response sees
    /// the prompt and itself, never its sibling.
    #[test]
    fn packed_segments() {
        #[rustfmt::skip]
        let seg = [
            Some(0), Some(0), Some(0), Some(1), Some(1), Some(2), None,
            Some(3), Some(3), Some(4), Some(4), Some(4), None, None,
        ];
        let m =
            AttentionMask::packed(2, 7, &seg, vec![None, Some(0), Some(0), None, None]).unwrap();
        let s = m.segments.as_ref().unwrap();
        assert_eq!(
            s.positions(),
            vec![0, 1, 2, 3, 4, 3, 0, 0, 1, 0, 1, 2, 0, 0]
        );
        assert!(s.sees(1, 0) && s.sees(2, 0) && s.sees(1, 1));
        assert!(!s.sees(2, 1) && !s.sees(0, 1) && !s.sees(4, 3));
        assert!(!s.sees(u32::MAX, u32::MAX) && !s.sees(1, u32::MAX) && !s.sees(u32::MAX, 0));
        assert_eq!(m.lengths(), vec![6, 5]);
        assert!(m.is_packed() && !AttentionMask::full(1, 2).is_packed());
        // a parent after its child, a child before its parent ends, a row-spanning segment
        let err = |seg: &[Option<u32>], parent: Vec<Option<u32>>| {
            AttentionMask::packed(1, seg.len(), seg, parent)
                .unwrap_err()
                .to_string()
        };
        assert!(err(&[Some(1), Some(0)], vec![Some(1), None]).contains("not an earlier"));
        assert!(err(&[Some(0), Some(1), Some(0)], vec![None, Some(0)]).contains("does not follow"));
        assert!(err(&[Some(0), Some(2)], vec![None, None, None]).contains("no tokens"));
        assert!(err(&[Some(0), Some(5)], vec![None]).contains("segment 5, of 1"));
        let spans = AttentionMask::packed(2, 1, &[Some(0), Some(0)], vec![None]);
        assert!(
            spans
                .unwrap_err()
                .to_string()
                .contains("spans rows 0 and 1")
        );
    }
}
