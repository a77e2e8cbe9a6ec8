//! # rlvr — reinforcement learning with verifiable rewards on burn
//!
//! The umbrella package: a facade that re-exports the workspace crates and selects the backend
//! once ([`backend`]); with its default feature `cli`, also what shows a run (`progress`, and
//! `report::train_and_report`, which trains an [`rl_trainer::Run`] with progress and reports
//! it), the `rlvr` command line (`cli`) and, as `lab`, the `rl-lab` crate of the experiments it
//! runs (compare, study, mixing, their statistics and plots). A library user who wants the
//! facade only depends on it with `default-features = false, features = ["cpu"]` and compiles
//! neither clap, the lab nor plotters.
//!
//! | crate | what it does | burn? |
//! |---|---|---|
//! | [`advantage`] (`rl-advantage`) | GRPO, Dr. GRPO, RLOO, DAPO, DA3PO advantages; Theorem 3.1 of DA3PO | no |
//! | [`sampler`] (`rl-sampler`) | dynamic sampling, group filters, difficulty tracking | no |
//! | [`verifier`] (`rl-verifier`) | math verifiers, reward combinators, overlong shaping | no |
//! | [`loss`] (`rl-loss`) | PPO/clip-higher/dual-clip/GSPO losses, aggregation, KL | yes |
//! | [`models`] (`rl-models`) | Qwen3, Llama, Qwen2, Gemma 3; generation, log-probs, tokenizers | yes |
//! | [`trainer`] (`rl-trainer`) | the GRPO/DAPO/DA3PO/GSPO training loop | yes |
//! | [`datamix`] (`rl-datamix`) | online data mixing: uniform, ODM, HDS | yes |

/// The README's Rust examples, run as doctests (the README itself is the repository's front
/// page, not this crate's documentation).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub use rl_advantage as advantage;
pub use rl_datamix as datamix;
pub use rl_loss as loss;
pub use rl_models as models;
pub use rl_sampler as sampler;
pub use rl_trainer as trainer;
pub use rl_verifier as verifier;

pub mod backend;
/// The experiments (`rlvr compare`, `study`, `mix`), their statistics and plots.
#[cfg(feature = "cli")]
pub use rl_lab as lab;
#[cfg(feature = "cli")]
pub mod cli;
/// The embedded arithmetic run, which lives in `rl_trainer::tasks::demo`.
pub use rl_trainer::tasks::demo;
#[cfg(feature = "cli")]
pub mod gemma3;
#[cfg(feature = "cli")]
pub mod progress;
#[cfg(feature = "cli")]
pub mod real_model;
#[cfg(feature = "cli")]
pub mod report;
#[cfg(feature = "cli")]
pub mod smollm2;
