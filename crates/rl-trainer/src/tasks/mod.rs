//! A built-in arithmetic task family with difficulty tiers, generated deterministically: the
//! embedded default of `cargo run --example da3po_qwen3` and of the trainer's tests. The whole
//! embedded run built on it (split, tiny model, warm-start, RL settings) is [`demo`]. For real
//! models: [`chat_arithmetic`] (one-number answers for an instruct model) and
//! [`word_problems`] (multi-step problems worked out in the answer, for a base model).
//!
//! A problem is `a+b` (or `a-b`, `a*b`); the expected response is `Answer: <n>` followed by the
//! end-of-turn token, so the `dapo` verifier (verl `math_dapo` parity) scores it exactly as it
//! scores DAPO-Math-17K responses.

mod arithmetic;
pub mod chat_arithmetic;
pub mod demo;
mod embedded;
mod task_files;
pub mod tool_use;
pub mod word_problems;

pub use arithmetic::{ALPHABET, ArithmeticTask, SPECIAL_TOKENS, Tier};
pub use chat_arithmetic::ChatArithmetic;
pub use demo::ArithmeticDemo;
pub use embedded::tiny_qwen3;
pub use task_files::TaskFiles;
pub use tool_use::ToolUseDemo;
pub use word_problems::WordProblems;
