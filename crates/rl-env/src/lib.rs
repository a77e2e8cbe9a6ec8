//! # rl-env — multi-turn, tool-using episodes for RL
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
