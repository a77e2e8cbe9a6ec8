//! The three HDS reward components and their combination.
//!
//! * **Loss-driven / inter-domain influence** (`r_align`, a K-vector): with `g_i` the gradient of
//!   domain `i`'s mean loss on a few late-layer matrices,
//!   `s_i = Σ_{j≠i} ⟨g_i, g_j⟩ / ((1/K) Σ_k ‖g_k‖₂)` and `r_align = zn(s)` (z-score, clip ±3).
//! * **Data-driven / quality** (`r_quality`, a scalar): lexical diversity `D ∈ [0, 1]` of the
//!   sequences drawn from the mixture (type–token ratio, or MTLD min–max normalised with
//!   `MTLD_min = 2`, `MTLD_max = sequence length`), combined with training progress `t'`:
//!   `t' / max(D, 0.05)` as in the authors' code (default) or `D` alone.
//! * **Model-driven / stability** (`r_stability`, a scalar):
//!   `min(c, 1 / (Σ_l |‖W_l^t‖_F − ‖W_l^{t−1}‖_F| + 1e-8))`, `c = 5`, and 0 at the first step.
//!
//! Combination: the scalar-critic reward is the action-weighted
//! `R = w_a Σ_i a_i r_align,i + w_d r_quality + w_s r_stability`; the per-domain (code-faithful)
//! reward is the K-vector `w_a r_align + (w_d r_quality + w_s r_stability)·1`. Defaults
//! `(w_a, w_d, w_s) = (1, 10, 10)`.

use serde::{Deserialize, Serialize};

use crate::error::{DatamixError, Result};
use crate::stats::zscore_clip;

/// `A_ij = ⟨g_i, g_j⟩`: the (symmetric) alignment matrix of per-domain gradients.
pub fn alignment_matrix(grads: &[Vec<f32>]) -> Vec<Vec<f64>> {
    let k = grads.len();
    let mut a = vec![vec![0.0; k]; k];
    for i in 0..k {
        for j in i..k {
            let d: f64 = grads[i]
                .iter()
                .zip(&grads[j])
                .map(|(&x, &y)| x as f64 * y as f64)
                .sum();
            a[i][j] = d;
            a[j][i] = d;
        }
    }
    a
}

/// Raw alignment scores `s_i = Σ_{j≠i} ⟨g_i, g_j⟩ / ((1/K) Σ_k ‖g_k‖₂)` (zeros if every
/// gradient is zero).
pub fn alignment_scores(grads: &[Vec<f32>]) -> Vec<f64> {
    let a = alignment_matrix(grads);
    let k = a.len();
    let mean_norm = (0..k).map(|i| a[i][i].sqrt()).sum::<f64>() / k.max(1) as f64;
    if mean_norm <= 0.0 {
        return vec![0.0; k];
    }
    (0..k)
        .map(|i| (0..k).filter(|&j| j != i).map(|j| a[i][j]).sum::<f64>() / mean_norm)
        .collect()
}

/// Type–token ratio: distinct tokens / tokens (0 for an empty sequence).
pub fn type_token_ratio(tokens: &[u32]) -> f64 {
    if tokens.is_empty() {
        return 0.0;
    }
    let mut seen = std::collections::HashSet::new();
    tokens.iter().for_each(|t| {
        seen.insert(*t);
    });
    seen.len() as f64 / tokens.len() as f64
}

fn mtld_one_direction(tokens: impl Iterator<Item = u32>, n: usize, threshold: f64) -> f64 {
    let mut types = std::collections::HashSet::new();
    let (mut count, mut factors, mut ttr) = (0usize, 0.0f64, 1.0f64);
    for t in tokens {
        count += 1;
        types.insert(t);
        ttr = types.len() as f64 / count as f64;
        if ttr <= threshold {
            factors += 1.0;
            count = 0;
            types.clear();
            ttr = 1.0;
        }
    }
    factors += (1.0 - ttr) / (1.0 - threshold);
    if factors > 0.0 {
        n as f64 / factors
    } else {
        // No factor ever completed and the remainder has TTR 1: maximal diversity.
        n as f64
    }
}

/// MTLD (McCarthy & Jarvis 2010): mean of the forward and backward factor lengths with TTR
/// threshold `threshold` (0.72 in the paper), counting a partial factor for the remainder. A
/// sequence whose tokens are all distinct gets its own length.
pub fn mtld(tokens: &[u32], threshold: f64) -> f64 {
    let n = tokens.len();
    if n == 0 {
        return 0.0;
    }
    0.5 * (mtld_one_direction(tokens.iter().copied(), n, threshold)
        + mtld_one_direction(tokens.iter().rev().copied(), n, threshold))
}

/// MTLD min–max normalised to `[0, 1]` with `MTLD_min = 2` and `MTLD_max` = the sequence length.
pub fn mtld_normalized(tokens: &[u32]) -> f64 {
    let n = tokens.len() as f64;
    if n <= 2.0 {
        return 0.0;
    }
    ((mtld(tokens, 0.72) - 2.0) / (n - 2.0)).clamp(0.0, 1.0)
}

/// Which lexical-diversity measure the quality reward uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DiversityMeasure {
    /// Type–token ratio per sequence (the authors' code).
    #[default]
    Ttr,
    /// MTLD per sequence, min–max normalised (the paper's text).
    Mtld,
}

impl DiversityMeasure {
    /// Mean diversity of `sequences` in `[0, 1]`; `None` without sequences.
    pub fn of_sequences(self, sequences: &[Vec<u32>]) -> Option<f64> {
        if sequences.is_empty() {
            return None;
        }
        let f = match self {
            DiversityMeasure::Ttr => type_token_ratio,
            DiversityMeasure::Mtld => mtld_normalized,
        };
        Some(sequences.iter().map(|s| f(s)).sum::<f64>() / sequences.len() as f64)
    }
}

/// How diversity `D` and training progress `t' ∈ [0, 1]` make the quality reward.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QualityForm {
    /// `t' / max(D, 0.05)`, the authors' code (rewards less diverse text, more so late).
    #[default]
    ProgressOverDiversity,
    /// `D`: rewards more diverse text.
    Diversity,
}

impl QualityForm {
    /// The quality reward for diversity `d` at progress `progress`.
    pub fn reward(self, progress: f64, d: f64) -> f64 {
        match self {
            QualityForm::ProgressOverDiversity => progress / d.max(0.05),
            QualityForm::Diversity => d,
        }
    }
}

/// `min(cap, 1 / (Σ_l |‖W_l^t‖ − ‖W_l^{t−1}‖| + 1e-8))`; 0 without previous norms.
pub fn stability_reward(norms: &[f32], prev: Option<&[f32]>, cap: f32) -> f32 {
    match prev {
        None => 0.0,
        Some(prev) => {
            let drift: f64 = norms
                .iter()
                .zip(prev)
                .map(|(&a, &b)| (a as f64 - b as f64).abs())
                .sum();
            ((1.0 / (drift + 1e-8)) as f32).min(cap)
        }
    }
}

/// Weights of the three reward components.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RewardWeights {
    /// `w_a`, on the loss-driven alignment reward.
    pub align: f32,
    /// `w_d`, on the data-driven quality reward.
    pub quality: f32,
    /// `w_s`, on the model-driven stability reward.
    pub stability: f32,
}

impl Default for RewardWeights {
    fn default() -> Self {
        Self {
            align: 1.0,
            quality: 10.0,
            stability: 10.0,
        }
    }
}

/// Configuration of the holistic reward.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HolisticRewardConfig {
    /// Component weights, default (1, 10, 10).
    pub weights: RewardWeights,
    /// Diversity measure of the quality reward.
    pub diversity: DiversityMeasure,
    /// How diversity and progress combine.
    pub quality_form: QualityForm,
    /// Cap `c` of the stability reward (5).
    pub stability_cap: f32,
    /// Clip of the z-scored alignment reward (3).
    pub align_clip: f32,
}

impl Default for HolisticRewardConfig {
    fn default() -> Self {
        Self {
            weights: RewardWeights::default(),
            diversity: DiversityMeasure::Ttr,
            quality_form: QualityForm::ProgressOverDiversity,
            stability_cap: 5.0,
            align_clip: 3.0,
        }
    }
}

impl HolisticRewardConfig {
    /// Checks ranges; `prefix` is the config path for error messages.
    pub fn validate(&self, prefix: &str) -> Result<()> {
        let w = &self.weights;
        for (name, v) in [
            ("align", w.align),
            ("quality", w.quality),
            ("stability", w.stability),
        ] {
            if !v.is_finite() {
                return Err(DatamixError::config(
                    format!("{prefix}.weights.{name}"),
                    "must be a finite number",
                ));
            }
        }
        if !(self.stability_cap > 0.0 && self.stability_cap.is_finite()) {
            return Err(DatamixError::config(
                format!("{prefix}.stability_cap"),
                "must be a finite number > 0",
            ));
        }
        if self.align_clip.is_nan() || self.align_clip <= 0.0 {
            return Err(DatamixError::config(
                format!("{prefix}.align_clip"),
                "must be > 0",
            ));
        }
        Ok(())
    }
}

/// The reward components of one step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RewardComponents {
    /// `r_align`, one per domain (zeros when no gradients were measured).
    pub align: Vec<f32>,
    /// `r_quality` (0 when no sequences were drawn).
    pub quality: f32,
    /// `r_stability`.
    pub stability: f32,
}

impl RewardComponents {
    /// Computes the components from per-domain gradients, the drawn sequences and the monitored
    /// weight norms now and at the previous step.
    pub fn compute(
        cfg: &HolisticRewardConfig,
        k: usize,
        grads: Option<&[Vec<f32>]>,
        sequences: &[Vec<u32>],
        progress: f64,
        norms: &[f32],
        prev_norms: Option<&[f32]>,
    ) -> Self {
        let align = match grads {
            Some(g) => {
                let s: Vec<f32> = alignment_scores(g).iter().map(|&v| v as f32).collect();
                zscore_clip(&s, cfg.align_clip)
            }
            None => vec![0.0; k],
        };
        let quality = cfg
            .diversity
            .of_sequences(sequences)
            .map(|d| cfg.quality_form.reward(progress, d) as f32)
            .unwrap_or(0.0);
        let stability = stability_reward(norms, prev_norms, cfg.stability_cap);
        Self {
            align,
            quality,
            stability,
        }
    }

    /// Scalar-critic reward `w_a Σ_i a_i r_align,i + w_d r_quality + w_s r_stability`.
    pub fn scalar(&self, action: &[f32], w: &RewardWeights) -> f32 {
        let aligned: f32 = action.iter().zip(&self.align).map(|(a, r)| a * r).sum();
        w.align * aligned + w.quality * self.quality + w.stability * self.stability
    }

    /// Per-domain reward `w_a r_align + (w_d r_quality + w_s r_stability)·1`.
    pub fn per_domain(&self, w: &RewardWeights) -> Vec<f32> {
        let shared = w.quality * self.quality + w.stability * self.stability;
        self.align.iter().map(|r| w.align * r + shared).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alignment_is_symmetric_and_matches_hand_computation() {
        // g1 = (1, 0), g2 = (1, 1), g3 = (0, -2).
        let g = vec![vec![1.0, 0.0], vec![1.0, 1.0], vec![0.0, -2.0]];
        let a = alignment_matrix(&g);
        for (i, row) in a.iter().enumerate() {
            for (j, v) in row.iter().enumerate() {
                assert_eq!(*v, a[j][i]);
            }
        }
        // <g1,g2> = 1, <g1,g3> = 0, <g2,g3> = -2; norms 1, sqrt 2, 2; mean norm (3 + sqrt 2)/3.
        let m = (3.0 + 2f64.sqrt()) / 3.0;
        let s = alignment_scores(&g);
        let expect = [1.0 / m, (1.0 - 2.0) / m, -2.0 / m];
        for (x, y) in s.iter().zip(expect) {
            assert!((x - y).abs() < 1e-12, "{s:?}");
        }
        assert_eq!(alignment_scores(&[vec![0.0], vec![0.0]]), vec![0.0, 0.0]);
    }

    #[test]
    fn ttr_and_mtld_by_hand() {
        assert_eq!(type_token_ratio(&[1, 2, 2, 3]), 0.75);
        // "1 1 1 1": forward TTR after 2 tokens is 0.5 <= 0.72 → a factor; then again after the
        // next 2 tokens; remainder TTR 1 → partial 0. So 4 / 2 = 2 in both directions.
        assert_eq!(mtld(&[1, 1, 1, 1], 0.72), 2.0);
        // All distinct: no factor completes, remainder TTR 1: the length.
        assert_eq!(mtld(&[1, 2, 3, 4, 5], 0.72), 5.0);
        assert_eq!(mtld_normalized(&[1, 2, 3, 4, 5]), 1.0);
        assert_eq!(mtld_normalized(&[1, 1, 1, 1]), 0.0);
    }

    /// Reference values from `tools/datamix/reference.py` (the `lexical_diversity` package's
    /// `lex_div.mtld`, run on the same token lists).
    #[test]
    fn mtld_matches_lexical_diversity_package() {
        let cases = crate::test_refs::MTLD_CASES;
        for (tokens, expect) in cases {
            let got = mtld(tokens, 0.72);
            assert!((got - expect).abs() < 1e-9, "{tokens:?}: {got} vs {expect}");
        }
    }

    #[test]
    fn stability_reward_is_capped() {
        assert_eq!(stability_reward(&[1.0, 2.0], None, 5.0), 0.0);
        // Drift |1.5-1| + |2-2.5| = 1 → 1/(1+1e-8) ≈ 1, below the cap.
        assert!((stability_reward(&[1.5, 2.0], Some(&[1.0, 2.5]), 5.0) - 1.0).abs() < 1e-6);
        // Drift 0.01 → 100, capped at 5; identical norms → 1e8, capped.
        assert_eq!(stability_reward(&[1.0], Some(&[1.01]), 5.0), 5.0);
        assert_eq!(stability_reward(&[1.0], Some(&[1.0]), 5.0), 5.0);
        assert_eq!(stability_reward(&[1.0], Some(&[1.0]), 2.0), 2.0);
    }

    #[test]
    fn scalar_and_vector_combinations() {
        let c = RewardComponents {
            align: vec![1.0, -1.0, 0.0],
            quality: 0.5,
            stability: 2.0,
        };
        let w = RewardWeights::default();
        // 1·(0.5·1 + 0.25·(−1)) + 10·0.5 + 10·2 = 0.25 + 25.
        assert!((c.scalar(&[0.5, 0.25, 0.25], &w) - 25.25).abs() < 1e-6);
        assert_eq!(c.per_domain(&w), vec![26.0, 24.0, 25.0]);
    }

    #[test]
    fn quality_forms() {
        assert!((QualityForm::ProgressOverDiversity.reward(0.5, 0.25) - 2.0).abs() < 1e-12);
        assert!((QualityForm::ProgressOverDiversity.reward(0.5, 0.0) - 10.0).abs() < 1e-12);
        assert_eq!(QualityForm::Diversity.reward(0.5, 0.25), 0.25);
        assert_eq!(DiversityMeasure::Ttr.of_sequences(&[]), None);
        let d = DiversityMeasure::Ttr
            .of_sequences(&[vec![1, 1], vec![1, 2]])
            .unwrap();
        assert_eq!(d, 0.75);
    }
}
