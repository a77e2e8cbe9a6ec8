use std::fmt;

use serde::{Deserialize, Serialize};

/// Explicit identity of a group (all responses to one prompt in one generation round).
///
/// Groups are never inferred from the layout of a batch or from prompt text: two groups for the
/// same prompt text are still two groups. Trainers usually number prompts per round; a string
/// uid can be hashed into a `GroupId`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct GroupId(pub u64);

impl fmt::Display for GroupId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl From<u64> for GroupId {
    fn from(v: u64) -> Self {
        GroupId(v)
    }
}

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
