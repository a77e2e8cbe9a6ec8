#![doc = include_str!("../README.md")]
//!
//! ## In detail
//!
//! Pure Rust (no tensor framework, no Python): a trainer on any stack can depend on this crate.
//!
//! ## Verifiers ([`Verifier`], built by name with [`VerifierConfig::from_name`])
//!
//! Every check returns a typed [`Outcome`] — `Correct`, `Incorrect`, `Unparseable { side,
//! reason }` or `OverBudget { what }` — plus the extracted prediction. For `dapo` and `math`,
//! work is bounded by an explicit [`Budget`] (input bytes, nesting depth, digits, steps): no
//! threads, signals or timeouts; `last_number` reads a fixed 64-character window. `code` runs
//! programs in a sandbox (`rl-sandbox`) and is the one verifier that blocks: up to
//! (1 + tests) × the per-run wall-clock limit per call. [`OutcomeCounts`] counts outcomes by
//! kind (mergeable across workers) so that a verifier failure shows up as a failure, not as a
//! silent 0.
//!
//! | name | behaviour | reference |
//! |---|---|---|
//! | `dapo` | verl's `math_dapo`: last 300 chars, last `(?i)Answer\s*:\s*(.+)` match, `normalize_final_answer`, exact string equality; strict-box mode | [`dapo`] |
//! | `code` | the final fenced Python block run against test cases (stdin/stdout, call-based, asserts) in the sandbox; typed verdicts ([`CodeVerdict`]); all-or-nothing or fraction-of-tests rewards | [`code`] |
//! | `gsm8k` | verl's GSM8K scorer: the last `#### N` (strict) or the last number (flexible) in the last 300 characters, compared as a string | [`gsm8k`] |
//! | `last_number` | the number a short reply ends with (after one `.`/`!` and closing `*`, `$`, `)`), strict about trailing text; exact decimal comparison with thousands commas; a fixed 64-character window | [`last_number`] |
//! | `math` | math-verify–style equivalence: boxed / answer-line / `$…$` / final-number extraction, a LaTeX + plain-text parser, exact big-rational arithmetic, balls for irrationals, seeded random points for free variables | [`math`] |
//!
//! ## Rewards
//!
//! * [`RewardMap`]: outcome → reward (`binary` 1/0, `signed` +1/−1, or any values per outcome);
//!   [`RewardMap::reward_for`] also reads a graded [`Verification::score`] (fraction of tests).
//! * [`RewardConfig`] / [`WeightedSum`]: Σ wᵢ·rᵢ over correctness and format terms
//!   ([`FormatCheck`]), keeping every term's value for logging.
//! * [`OverlongPolicy`] (reward shaping, lengths in tokens from the sampler via
//!   [`ResponseLength`]): DAPO's soft overlong punishment
//!   R(L) = 0 for L ≤ L_max − L_cache, ((L_max − L_cache) − L)/L_cache for
//!   L_max − L_cache < L ≤ L_max, −1 for L > L_max (L_max 20480, L_cache 4096: 18432 → −0.5);
//!   or masking truncated samples out of the loss.
//!
//! ## Benchmark scores ([`scores`])
//!
//! avg@k, the unbiased pass@k estimator and maj@k over verified samples ([`Scores`]), each with
//! its standard error over prompts and a seeded bootstrap 95 % interval ([`Estimate`]).
//!
//! ```
//! use rl_verifier::{OverlongPolicy, ResponseLength, VerifierConfig};
//! let cfg = VerifierConfig::from_name("math").unwrap();
//! let verifier = cfg.build().unwrap();
//! let rewards = cfg.default_rewards(); // 1 / 0 for `math`, +1 / −1 for `dapo`
//! let v = verifier.verify("... so the answer is $\\boxed{\\dfrac{1}{2}}$.", "0.5");
//! assert!(v.is_correct());
//! let shaped = OverlongPolicy::dapo().shape(rewards.reward(&v.outcome), ResponseLength::finished(18432));
//! assert_eq!(shaped.reward, 0.5);
//! ```

#![warn(missing_docs)]
mod budget;
pub mod code;
pub mod combine;
pub mod dapo;
mod error;
pub mod gsm8k;
pub mod last_number;
pub mod math;
mod outcome;
mod registry;
mod reward;
pub mod scores;
mod shaping;
mod verifier;

pub use budget::Budget;
pub use code::{
    BadTests, CodeConfig, CodeReport, CodeReward, CodeVerdict, CodeVerifier, TestResult,
    TestVerdict,
};
pub use combine::{
    ComponentScore, ComponentValue, Correctness, FORMAT_CHECK_NAMES, FormatCheck, FormatReward,
    RewardBreakdown, RewardConfig, RewardFunction, RewardKind, WeightedReward, WeightedSum,
};
pub use dapo::{DapoConfig, DapoVerifier};
pub use error::ConfigError;
pub use last_number::{LastNumberConfig, LastNumberVerifier};
pub use math::{BoxedMode, ExtractionConfig, MathConfig, MathVerifier};
pub use outcome::{AnswerSource, Outcome, OutcomeCounts, OutcomeKind, Side, Verification};
pub use registry::{VERIFIER_NAMES, VerifierConfig};
pub use reward::RewardMap;
pub use rl_core::{InvalidValue, UnknownName};
pub use scores::{Bootstrap, Estimate, Noise, PromptSamples, Scores, maj_at_k, pass_at_k};
pub use shaping::{OverlongPolicy, ResponseLength, ShapedReward, soft_overlong_penalty};
pub use verifier::Verifier;
