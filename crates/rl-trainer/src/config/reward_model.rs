//! `[reward.model]`: a trained reward model's score in every response's reward
//! (docs/verifier.md, "Rewards from models"); checked by `validate.rs`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How a reward model's scores are scaled before they are weighted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScoreNormalization {
    /// The raw score.
    #[default]
    None,
    /// (s − mean) / (std + 1e-6) over the responses of each generation round (population std).
    Round,
}

/// A reward model (an HF `*ForSequenceClassification` folder with one label, e.g. from
/// `rlvr train-rm`) scoring each prompt + response at its last token. The response's reward
/// becomes `reward.verifier_weight` × the verifier's (shaped) reward + `weight` × the score;
/// correctness (accuracy, filters) stays the verifier's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RewardModelSection {
    /// The model folder.
    pub path: PathBuf,
    /// The score's weight in the reward.
    #[serde(default = "one")]
    pub weight: f64,
    /// `none` or `round`.
    #[serde(default)]
    pub normalize: ScoreNormalization,
    /// Sequences scored per forward.
    #[serde(default = "default_micro_batch")]
    pub micro_batch: usize,
}

fn one() -> f64 {
    1.0
}

fn default_micro_batch() -> usize {
    16
}
