//! Evaluation, in one tree that the trainer's periodic evaluation and `rlvr eval` both call:
//!
//! | file | what it does |
//! |---|---|
//! | `benchmark.rs` | k samples per prompt through any rollout engine, each verified; the samples file; summaries (avg@n, pass@k, maj@k) |
//! | `benchmark_run.rs` | a model evaluated on a benchmark file, resumable, as `rlvr eval` runs it ([`BenchmarkRun`]) |
//! | `report.rs` | the trainer's summary by tier ([`EvalReport`]: avg@k and pass@k with standard errors) |
//! | `presets.rs` | benchmark presets (columns, answer format) and the default pass@k list |
//!
//! The scores themselves (avg@n, unbiased pass@k, maj@k, standard errors, bootstrap intervals)
//! are rl-verifier's burn-free [`rl_verifier::Scores`], which Python callers use too. The
//! trainer's evaluation phase is `crate::trainer`'s `held_out.rs` ([`crate::Trainer::evaluate`]).

pub mod benchmark;
pub mod benchmark_run;
pub mod presets;
pub mod report;

pub use benchmark_run::{BenchmarkEvent, BenchmarkRun, PreparedBenchmark};
pub use report::{EvalReport, TierEval};
