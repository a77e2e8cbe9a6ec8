//! The HDS state vector, built once per LM step from [`StepStats`].
//!
//! For K domains and L monitored matrices (dimension `3K + 2L + 1`):
//! `[zn(ℓ̄), zn(ℓ̄^t − ℓ̄^{t−1}), zn(n), zn(‖W_l‖_F), zn(‖W_l^t − W_l^{t−1}‖_F), progress]`,
//! with `zn` = z-score across components then clip to ±3, the loss change zero at the first step,
//! `n` the realised per-domain sequence counts and `progress = scale · (t + 1) / T`.

use serde::{Deserialize, Serialize};

use crate::error::{DatamixError, Result};
use crate::scheduler::StepStats;
use crate::stats::zscore_clip;

/// Builds HDS states; remembers the previous step's losses.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StateBuilder {
    k: usize,
    l: usize,
    clip: f32,
    progress_scale: f32,
    prev_loss: Option<Vec<f32>>,
}

impl StateBuilder {
    /// A builder for `k` domains and `l` monitored matrices.
    pub fn new(k: usize, l: usize, clip: f32, progress_scale: f32) -> Self {
        Self {
            k,
            l,
            clip,
            progress_scale,
            prev_loss: None,
        }
    }

    /// Number of domains K.
    pub fn num_domains(&self) -> usize {
        self.k
    }

    /// Number of monitored matrices L.
    pub fn num_matrices(&self) -> usize {
        self.l
    }

    /// `3K + 2L + 1`.
    pub fn dim(&self) -> usize {
        3 * self.k + 2 * self.l + 1
    }

    /// The state after the step described by `stats`.
    pub fn build(&mut self, stats: &StepStats) -> Result<Vec<f32>> {
        stats.validate(self.k)?;
        if stats.weight_norms.len() != self.l {
            return Err(DatamixError::Stats(format!(
                "expected {} monitored weight norms, got {}",
                self.l,
                stats.weight_norms.len()
            )));
        }
        let c = self.clip;
        let delta: Vec<f32> = match &self.prev_loss {
            Some(p) => stats
                .domain_loss
                .iter()
                .zip(p)
                .map(|(a, b)| a - b)
                .collect(),
            None => vec![0.0; self.k],
        };
        let mut s = Vec::with_capacity(self.dim());
        s.extend(zscore_clip(&stats.domain_loss, c));
        s.extend(zscore_clip(&delta, c));
        s.extend(zscore_clip(&stats.domain_counts, c));
        s.extend(zscore_clip(&stats.weight_norms, c));
        s.extend(zscore_clip(&stats.weight_update_norms, c));
        s.push(self.progress_scale * stats.progress() as f32);
        self.prev_loss = Some(stats.domain_loss.clone());
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_layout() {
        let mut b = StateBuilder::new(3, 2, 3.0, 1.0);
        assert_eq!(b.dim(), 14);
        let mut st = StepStats {
            step: 4,
            total_steps: 10,
            sampling_probs: vec![1.0 / 3.0; 3],
            domain_loss: vec![1.0, 2.0, 3.0],
            domain_counts: vec![2.0, 2.0, 2.0],
            weight_norms: vec![1.0, 2.0],
            weight_update_norms: vec![0.5, 0.1],
            ..Default::default()
        };
        let s = b.build(&st).unwrap();
        assert_eq!(s.len(), 14);
        let z = (1.5f32).sqrt(); // zn(1,2,3) = (−√1.5, 0, √1.5)
        assert!((s[0] + z).abs() < 1e-6 && s[1].abs() < 1e-6 && (s[2] - z).abs() < 1e-6);
        assert_eq!(&s[3..9], &[0.0; 6]); // no loss change yet; equal counts
        assert_eq!(&s[9..13], &[-1.0, 1.0, 1.0, -1.0]);
        assert!((s[13] - 0.5).abs() < 1e-7);
        st.domain_loss = vec![1.0, 1.0, 4.0];
        let s = b.build(&st).unwrap();
        // Changes (0, −1, 1): zn = (0, −√1.5, √1.5).
        assert!(s[3].abs() < 1e-6 && (s[4] + z).abs() < 1e-6 && (s[5] - z).abs() < 1e-6);
        st.weight_norms = vec![1.0];
        assert!(b.build(&st).is_err());
    }
}
