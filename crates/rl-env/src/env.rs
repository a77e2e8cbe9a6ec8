//! The environment interface: an episode starts from a [`Task`], takes one assistant turn at a
//! time and answers with a [`Step`]: an observation (chat messages, or token ids), a reward
//! contribution and whether the episode is done.

use rl_rollout::FinishReason;
use serde::{Deserialize, Serialize};

use crate::EnvError;

/// What an episode starts from: one prompt of the data set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// The prompt's index in its data set.
    pub index: usize,
    /// The gold answer, as the data set gives it (the trainer's verifier reads it at the end;
    /// an environment may read it too).
    pub answer: String,
    /// Anything else the data set carries for the environment (tool permissions, test cases,
    /// …); `null` when nothing.
    #[serde(default)]
    pub metadata: serde_json::Value,
}

/// One chat message of an observation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// `tool`, `user` or `system`.
    pub role: String,
    /// The text.
    pub content: String,
}

impl Message {
    /// A `tool` message: one tool's result (rendered by Qwen3's chat template as a
    /// `<tool_response>` block of a user turn).
    pub fn tool(content: impl Into<String>) -> Self {
        Message {
            role: "tool".into(),
            content: content.into(),
        }
    }

    /// A `user` message.
    pub fn user(content: impl Into<String>) -> Self {
        Message {
            role: "user".into(),
            content: content.into(),
        }
    }
}

/// One assistant turn as it was sampled.
#[derive(Clone, Copy, Debug)]
pub struct AssistantTurn<'a> {
    /// 0 for the first turn of the episode.
    pub index: usize,
    /// The sampled token ids, a final stop id included.
    pub tokens: &'a [u32],
    /// The decoded text without the end tokens.
    pub text: &'a str,
    /// Why the turn ended.
    pub finish: FinishReason,
}

/// What the environment appends after a turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Observation {
    /// Chat messages, rendered through the chat template's turn boundaries by the
    /// [`crate::TurnCodec`] (which also opens the next assistant turn).
    Messages(Vec<Message>),
    /// Ready token ids, appended as they are (the environment is responsible for the turn
    /// boundaries, including the next assistant header).
    Tokens(Vec<u32>),
}

/// The environment's answer to a turn.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// What to append before the next assistant turn; `None` exactly when `done`.
    pub observation: Option<Observation>,
    /// A reward contribution, added to the episode's environment reward (the outcome reward of
    /// the final answer comes from the trainer's verifier).
    pub reward: f64,
    /// The episode is over (the turn was a final answer, or the environment ends it).
    pub done: bool,
    /// Tool calls made in the turn.
    pub tool_calls: usize,
    /// Of those, calls that became error observations (malformed, unknown tool, tool failed).
    pub tool_errors: usize,
}

impl Step {
    /// The episode ends here with no reward contribution.
    pub fn done() -> Self {
        Step {
            observation: None,
            reward: 0.0,
            done: true,
            tool_calls: 0,
            tool_errors: 0,
        }
    }
}

/// One episode's environment. `step` is called once per finished assistant turn, in order,
/// until it answers `done` (or the episode's limits end it first).
pub trait Environment: Send {
    /// Answers one assistant turn. Errors are for failures the model cannot cause (see
    /// [`EnvError`]); anything the model does wrong is an observation.
    fn step(&mut self, turn: &AssistantTurn<'_>) -> Result<Step, EnvError>;
}

/// Makes one [`Environment`] per episode.
pub trait EnvironmentFactory: Send + Sync {
    /// A name for logs and errors.
    fn name(&self) -> String;

    /// A fresh environment for an episode of `task`.
    fn create(&self, task: &Task) -> Result<Box<dyn Environment>, EnvError>;
}
