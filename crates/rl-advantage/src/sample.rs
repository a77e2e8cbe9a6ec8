use serde::{Deserialize, Serialize};

use rl_core::GroupId;

/// One scored response.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// The group it belongs to.
    pub group: GroupId,
    /// Scalar reward (possibly shaped, e.g. with an overlong penalty).
    pub reward: f64,
    /// The verifier's verdict, kept separate from the shaped reward.
    pub correct: bool,
}

impl Sample {
    /// A sample.
    pub fn new(group: GroupId, reward: f64, correct: bool) -> Self {
        Self {
            group,
            reward,
            correct,
        }
    }
}
