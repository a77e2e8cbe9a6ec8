#![doc = include_str!("../README.md")]
//!
//! ## In detail
//!
//! Burn-free and tokenizer-free: a trainer on any stack can run tool-using episodes through any
//! `rl-rollout` engine with this crate alone.
//!
//! * [`Environment`]: one episode; takes one assistant turn at a time ([`AssistantTurn`]:
//!   sampled ids and decoded text) and answers with a [`Step`]: an [`Observation`] (chat
//!   messages or token ids), a reward contribution and `done`. [`EnvironmentFactory`] makes
//!   one per [`Task`].
//! * [`EpisodeRunner`]: runs a batch of episodes through any generation call, one turn for
//!   every live episode per engine call, with `max_turns` and a per-episode token budget
//!   ([`EpisodeLimits`]).
//! * [`Trajectory`]: the episode as **one token sequence built by appending**: sampled ids kept
//!   exactly as sampled (with the engine's log-probs), observation ids appended after them with
//!   `sampled = false` — the loss mask. Nothing earlier is ever re-tokenised.
//! * Tool calls in Qwen3's format ([`parse_tool_calls`]): `<tool_call>{"name": …, "arguments":
//!   {…}}</tool_call>`; results go back as `tool` messages, which Qwen3's chat template renders
//!   as `<tool_response>` blocks of a user turn. A malformed call, an unknown tool or a failing
//!   tool is an error observation the model reads, never a crash.
//! * [`tools`]: a [`ToolRegistry`] and the built-in tools `calculator` (exact rational
//!   arithmetic, bounded) and `python` (run in `rl-sandbox`).
//! * [`ToolEnvironment`] (`name = "tools"` in [`EnvConfig`]): answers tool calls until a turn
//!   without one, the final answer, which the trainer's verifier scores.
//!
//! The trainer side ([`TurnCodec`]: decoding turns, rendering observations through the chat
//! template) lives with the tokenizer, in `rl-trainer`.
//!
//! ## Writing an environment
//!
//! One `step` per finished assistant turn; the outcome reward of the final answer comes from
//! the trainer's verifier, `Step::reward` adds a contribution:
//!
//! ```
//! use rl_env::{AssistantTurn, EnvError, Environment, EnvironmentFactory, Message, Observation,
//!              Step, Task};
//! use rl_rollout::FinishReason;
//!
//! /// Guess a number with "higher" / "lower" hints.
//! struct Guess { target: i64 }
//!
//! impl Environment for Guess {
//!     fn step(&mut self, turn: &AssistantTurn<'_>) -> Result<Step, EnvError> {
//!         let hint = match turn.text.trim().parse::<i64>() {
//!             Ok(n) if n == self.target => return Ok(Step::done()),
//!             Ok(n) if n < self.target => "higher",
//!             Ok(_) => "lower",
//!             Err(_) => "answer with a number",
//!         };
//!         Ok(Step {
//!             observation: Some(Observation::Messages(vec![Message::user(hint)])),
//!             reward: -0.05,
//!             done: false,
//!             tool_calls: 0,
//!             tool_errors: 0,
//!         })
//!     }
//! }
//!
//! struct Guesses;
//!
//! impl EnvironmentFactory for Guesses {
//!     fn name(&self) -> String { "guess".into() }
//!     fn create(&self, task: &Task) -> Result<Box<dyn Environment>, EnvError> {
//!         Ok(Box::new(Guess { target: task.answer.parse().unwrap_or(0) }))
//!     }
//! }
//!
//! let task = Task { answer: "42".into(), ..Task::default() };
//! let mut env = Guesses.create(&task).unwrap();
//! let turn = |text| AssistantTurn { index: 0, tokens: &[], text, finish: FinishReason::Stop };
//! let step = env.step(&turn("17")).unwrap();
//! assert_eq!(step.observation, Some(Observation::Messages(vec![Message::user("higher")])));
//! assert!(env.step(&turn("42")).unwrap().done);
//! ```

#![deny(missing_docs)]

mod codec;
mod config;
mod env;
mod episodes;
mod error;
pub mod pyjson;
mod tool_call;
mod tool_env;
pub mod tools;
mod trajectory;

pub use codec::TurnCodec;
pub use config::{ENV_NAMES, EnvConfig};
pub use env::{AssistantTurn, Environment, EnvironmentFactory, Message, Observation, Step, Task};
pub use episodes::{EpisodeLimits, EpisodeRunner, EpisodeStart, Generate, turn_seed};
pub use error::EnvError;
pub use tool_call::{
    ParsedCall, TOOL_CALL_CLOSE, TOOL_CALL_OPEN, ToolCall, has_tool_call, parse_tool_calls,
    render_tool_call,
};
pub use tool_env::{ToolEnvironment, ToolEpisode};
pub use tools::{Tool, ToolError, ToolRegistry, ToolsConfig};
pub use trajectory::{EpisodeEnd, Trajectory, TurnRecord};
