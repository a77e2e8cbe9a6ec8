//! The verifier trait.

use std::fmt;

use crate::Verification;

/// Checks a model response against a gold answer.
///
/// `verify` never panics: every input, however large or malformed, gets an
/// [`crate::Outcome`]. The gold answer is the second argument (and is examined first):
/// verification is not symmetric.
///
/// `dapo` and `math` never block: their work is bounded by a [`crate::Budget`], without threads,
/// signals or timeouts; neither does `last_number`, which reads a fixed 64-character window.
/// **`code` is the exception**: it runs the response's program in a sandbox, so a call blocks
/// for up to (1 + tests) × the per-run wall-clock limit plus process start-up (and any wait for
/// a free sandbox slot while other threads share the verifier); see [`crate::code`]. Call it
/// from a thread that may block (not an async executor's).
pub trait Verifier: Send + Sync + fmt::Debug {
    /// Registry name.
    fn name(&self) -> &'static str;

    /// Verifies one response against one gold answer.
    fn verify(&self, response: &str, gold: &str) -> Verification;
}
