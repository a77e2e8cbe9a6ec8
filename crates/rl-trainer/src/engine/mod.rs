//! Rollout engines on the trainer's side: the in-process [`LocalEngine`] (the default), the
//! [`EngineThread`] that drives any [`RolloutEngine`](rl_rollout::RolloutEngine) in the background for asynchronous
//! rollouts, and the inference servers the trainer launches itself (`managed`: llama-server,
//! vLLM; SGLang as a client), built from `[rollout.engine]`.

mod local;
mod managed;
mod thread;

pub use local::{LocalEngine, LocalModel};
pub use managed::build_engine;
pub use thread::{EngineHandle, EngineThread, Pending};
