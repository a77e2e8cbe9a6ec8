//! Theorem 3.1 of DA3PO: how dynamic sampling amplifies expected advantages.
//!
//! DAPO's dynamic sampling keeps a group of G responses only if it is mixed (some correct,
//! some wrong). Take one response of a prompt with true success rate p. If it is correct, its
//! group survives iff not all of the other G−1 responses are correct: probability
//! 1 − p^(G−1). If it is wrong, the group survives iff not all others are wrong: probability
//! 1 − (1−p)^(G−1). Advantages of uniform groups are zero, so filtering removes no signal; it
//! only removes the zero-signal groups from the denominator of the batch average. Relative to
//! unfiltered sampling, the mean advantage of correct responses is therefore multiplied by
//!
//! α+(p, G) = 1 / (1 − p^(G−1)),
//!
//! that of incorrect responses by α−(p, G) = 1 / (1 − (1−p)^(G−1)), and their ratio is
//! γ = α+/α−. For p < 1/2, p^(G−1) < (1−p)^(G−1), hence γ < 1: on hard prompts, wrong answers are
//! pushed away harder than rare right answers are pulled in. γ(p)·γ(1−p) = 1 by symmetry.
//!
//! [`simulate`] checks this by Monte Carlo: it samples groups, z-scores them, applies the
//! filter and measures the ratio of filtered to unfiltered mean advantage per outcome.

pub(crate) mod formulas;
mod simulate;

pub use formulas::*;
pub use simulate::*;
