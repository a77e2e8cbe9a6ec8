use serde::{Deserialize, Serialize};

/// What to do when `max_gen_rounds` rounds did not fill the batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnExhausted {
    /// Stop with [`crate::SamplerError::Exhausted`] (verl's behaviour).
    #[default]
    Error,
    /// Return the groups kept so far as a smaller batch; with none kept, an empty batch (the
    /// trainer's step then generates and logs but makes no update).
    TrainOnKept,
}

/// What to change when rounds run out: `train_on_kept` only helps when some group was kept.
pub(crate) fn exhausted_advice(on_exhausted: OnExhausted, kept: usize) -> &'static str {
    match (on_exhausted, kept) {
        (OnExhausted::Error, 1..) => {
            "Raise max_gen_rounds, sample more prompts per round, or set on_exhausted = \"train_on_kept\""
        }
        _ => {
            "No group had both correct and wrong responses: raise max_gen_rounds or sample more \
             prompts per round, or start from a policy whose pass rates are neither 0 nor 1 \
             (a longer warm-start, easier prompts)"
        }
    }
}
