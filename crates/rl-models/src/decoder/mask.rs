//! [`AttentionMask`]: which tokens of a batch are real, and the additive bias of masked keys.

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
        })
    }

    /// No padding.
    pub fn full(batch: usize, seq_len: usize) -> Self {
        Self {
            batch,
            seq_len,
            valid: vec![true; batch * seq_len],
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
        })
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
}
