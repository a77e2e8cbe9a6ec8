//! `code`: the response's final Python code block, run against the problem's test cases in the
//! sandbox (`rl-sandbox`).
//!
//! Pipeline of [`CodeVerifier::check`] (`verify` maps its [`CodeReport`] to a
//! [`Verification`]):
//! 1. **Gold first.** The gold string is JSON test cases ([`cases`]: APPS/TACO/LiveCodeBench
//!    `{"inputs", "outputs"[, "fn_name"]}`, a list of `{"input", "output"}`, or assert strings).
//!    Unusable → [`BadTests`] (`Unparseable { side: Gold }`), never correct.
//! 2. **Extraction** ([`extract`]): the final fenced Python block; none → [`CodeVerdict::NoCode`];
//!    more than `max_code_bytes` → [`CodeVerdict::TooLarge`].
//! 3. **Syntax check**: `compile()` of the code in the sandbox → [`CodeVerdict::SyntaxError`].
//! 4. **Tests**: the first `max_tests` cases, each its own sandbox run, up to
//!    `sandbox.concurrency` at once. Stdin/stdout tests compare the output ([`compare`]);
//!    call-based and assert tests run in a harness (`run.rs`, `harness.py`). All-or-nothing
//!    stops at the first failure (in test order, whatever finished first); fraction runs them
//!    all.
//! 5. **Verdict**: `Passed` iff every test passed, otherwise the first failing test's verdict.
//!
//! **Time.** Unlike `math` and `dapo`, this verifier blocks: one check takes at most
//! (1 + tests) × `sandbox.limits.wall_time` plus process start-up and clean-up (about ten
//! milliseconds per run on a 2-core machine) when its runs do not wait for each other, and less when tests run in
//! parallel — plus any time spent waiting for a free sandbox slot while other threads use the
//! same verifier. It never panics and runs model code only through the sandbox.

pub mod cases;
pub mod compare;
mod config;
pub mod extract;
mod run;
mod verdict;

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rl_sandbox::Sandbox;

pub use cases::{TestCase, TestSuite};
pub use config::{CodeConfig, CodeReward};
pub use extract::{CodeBlock, final_code_block};
pub use verdict::{CodeReport, CodeVerdict, TestResult, TestVerdict};

use crate::{ConfigError, Outcome, Side, Verification, Verifier};

/// The gold answer is not usable test cases (`Unparseable { side: Gold }`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unusable test cases: {reason}")]
pub struct BadTests {
    /// What is wrong, naming the offending field.
    pub reason: String,
}

impl CodeConfig {
    /// Validates the configuration, creates the sandbox and builds the verifier.
    pub fn build(&self) -> Result<CodeVerifier, ConfigError> {
        self.validate()?;
        let sandbox = Sandbox::new(self.sandbox.clone()).map_err(|e| ConfigError::Sandbox {
            reason: e.to_string(),
        })?;
        Ok(CodeVerifier {
            config: self.clone(),
            sandbox: Arc::new(sandbox),
        })
    }
}

/// The `code` verifier. `Send + Sync`: share it between threads; runs beyond
/// `sandbox.concurrency` wait for a free slot.
pub struct CodeVerifier {
    config: CodeConfig,
    sandbox: Arc<Sandbox>,
}

impl fmt::Debug for CodeVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CodeVerifier")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl CodeVerifier {
    /// Builds the verifier ([`CodeConfig::build`]).
    pub fn new(config: CodeConfig) -> Result<Self, ConfigError> {
        config.build()
    }

    /// The configuration.
    pub fn config(&self) -> &CodeConfig {
        &self.config
    }

    /// Checks one response against the gold's test cases (JSON text); `Err` when the tests are
    /// unusable.
    pub fn check(&self, response: &str, gold: &str) -> Result<CodeReport, BadTests> {
        let suite = TestSuite::parse(gold).map_err(|reason| BadTests { reason })?;
        Ok(self.check_suite(response, &suite))
    }

    /// Checks one response against parsed test cases.
    pub fn check_suite(&self, response: &str, suite: &TestSuite) -> CodeReport {
        let available = suite.cases.len();
        let total = available.min(self.config.max_tests);
        let block = match final_code_block(response) {
            Ok(b) if b.code.trim().is_empty() => {
                let detail = "the final Python code block is empty".to_string();
                return CodeReport::early(CodeVerdict::NoCode, total, available, detail);
            }
            Ok(b) => b,
            Err(missing) => {
                return CodeReport::early(
                    CodeVerdict::NoCode,
                    total,
                    available,
                    missing.to_string(),
                );
            }
        };
        if block.code.len() > self.config.max_code_bytes {
            let detail = format!(
                "max_code_bytes: the code block has {} bytes (limit {})",
                block.code.len(),
                self.config.max_code_bytes
            );
            let mut r = CodeReport::early(CodeVerdict::TooLarge, total, available, detail);
            r.code = Some(block.code);
            return r;
        }
        let mut report = self.run_code(&block.code, suite);
        report.code = Some(block.code);
        report
    }

    /// Runs `code` (no extraction) against the test cases: syntax check, then the tests.
    pub fn run_code(&self, code: &str, suite: &TestSuite) -> CodeReport {
        let available = suite.cases.len();
        let cases = &suite.cases[..available.min(self.config.max_tests)];
        let total = cases.len();
        let early = |v, detail| CodeReport::early(v, total, available, detail);
        let wall = self.config.sandbox.limits.wall_time;

        // 1. Syntax check.
        let token = run::token();
        match self.sandbox.run_python(&run::syntax_check(code, &token)) {
            Err(e) => return early(CodeVerdict::SandboxError, format!("sandbox: {e}")),
            Ok(r) => {
                if let Some((v, detail)) = run::failure(&r, wall) {
                    return early(v.into(), format!("syntax check: {detail}"));
                }
                match run::report(&r, &token) {
                    Some(rep) if rep["ok"] == true => {}
                    Some(rep) => {
                        let detail = run::short(rep["error"].as_str().unwrap_or("SyntaxError"));
                        return early(CodeVerdict::SyntaxError, detail);
                    }
                    None => {
                        let detail = "syntax check: no report from the checker".to_string();
                        return early(CodeVerdict::SandboxError, detail);
                    }
                }
            }
        }

        // 2. Tests, up to `concurrency` at once; all-or-nothing stops at the first failure.
        let stop_early = self.config.reward == CodeReward::AllOrNothing;
        let results: Mutex<Vec<Option<Result<TestResult, String>>>> = Mutex::new(vec![None; total]);
        let next = AtomicUsize::new(0);
        let first_failure = AtomicUsize::new(usize::MAX);
        let work = || {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    break;
                }
                if stop_early && i > first_failure.load(Ordering::Relaxed) {
                    continue;
                }
                let result = self.run_test(code, i, &cases[i]);
                let failed = !matches!(&result, Ok(t) if t.verdict == TestVerdict::Passed);
                if failed {
                    first_failure.fetch_min(i, Ordering::Relaxed);
                }
                if let Ok(mut slots) = results.lock() {
                    slots[i] = Some(result);
                }
            }
        };
        let threads = self.config.sandbox.concurrency.min(total).max(1);
        if threads == 1 {
            work();
        } else {
            std::thread::scope(|scope| {
                for _ in 1..threads {
                    // Out of threads: the caller does the work.
                    let spawned = std::thread::Builder::new()
                        .name("rlvr-code-test".into())
                        .spawn_scoped(scope, work);
                    if spawned.is_err() {
                        break;
                    }
                }
                work();
            });
        }
        let slots = match results.into_inner() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        };

        // 3. The verdict: the first failure in test order.
        let mut report = early(CodeVerdict::Passed, String::new());
        for slot in slots {
            match slot {
                Some(Ok(t)) => {
                    let verdict = t.verdict;
                    if verdict == TestVerdict::Passed {
                        report.passed += 1;
                    } else if report.verdict == CodeVerdict::Passed {
                        report.verdict = verdict.into();
                        report.detail = format!("test {}: {}", t.index, t.detail);
                    }
                    report.tests.push(t);
                    if verdict != TestVerdict::Passed && stop_early {
                        break;
                    }
                }
                Some(Err(e)) => {
                    report.verdict = CodeVerdict::SandboxError;
                    report.detail = format!("sandbox: {e}");
                    break;
                }
                // Skipped after an earlier failure (all-or-nothing); unreachable before it.
                None => break,
            }
        }
        report
    }

    fn run_test(&self, code: &str, index: usize, case: &TestCase) -> Result<TestResult, String> {
        let token = run::token();
        let tol = self.config.float_tolerance;
        let program = run::test_program(code, case, &token, tol);
        let r = self
            .sandbox
            .run_python(&program)
            .map_err(|e| e.to_string())?;
        let (verdict, detail) =
            run::classify(&r, case, &token, tol, self.config.sandbox.limits.wall_time);
        Ok(TestResult {
            index,
            verdict,
            detail,
            wall: r.wall,
        })
    }
}

impl Verifier for CodeVerifier {
    fn name(&self) -> &'static str {
        "code"
    }

    fn verify(&self, response: &str, gold: &str) -> Verification {
        match self.check(response, gold) {
            Ok(report) => report.verification(self.config.reward),
            Err(e) => Verification::new(Outcome::Unparseable {
                side: Side::Gold,
                reason: e.reason,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AnswerSource;

    fn report(verdict: CodeVerdict, passed: usize, total: usize) -> CodeReport {
        CodeReport {
            verdict,
            passed,
            total,
            available: total,
            tests: Vec::new(),
            code: Some("print(1)\n".into()),
            detail: "why".into(),
        }
    }

    #[test]
    fn verdicts_map_to_outcomes() {
        let all = CodeReward::AllOrNothing;
        let v = report(CodeVerdict::Passed, 5, 5).verification(all);
        assert_eq!(v.outcome, Outcome::Correct);
        assert_eq!(v.source, Some(AnswerSource::CodeBlock));
        assert_eq!(v.extracted.as_deref(), Some("print(1)\n"));
        assert_eq!(v.score, None);
        for verdict in [
            CodeVerdict::WrongAnswer,
            CodeVerdict::RuntimeError,
            CodeVerdict::Timeout,
            CodeVerdict::Memory,
            CodeVerdict::SyntaxError,
        ] {
            assert_eq!(
                report(verdict, 2, 5).verification(all).outcome,
                Outcome::Incorrect
            );
        }
        assert_eq!(
            report(CodeVerdict::NoCode, 0, 5).verification(all).outcome,
            Outcome::Unparseable {
                side: Side::Response,
                reason: "why".into()
            }
        );
        for verdict in [CodeVerdict::TooLarge, CodeVerdict::SandboxError] {
            assert!(matches!(
                report(verdict, 0, 5).verification(all).outcome,
                Outcome::OverBudget { .. }
            ));
        }
        let frac = CodeReward::Fraction;
        assert_eq!(
            report(CodeVerdict::WrongAnswer, 2, 5)
                .verification(frac)
                .score,
            Some(0.4)
        );
        assert_eq!(
            report(CodeVerdict::Passed, 5, 5).verification(frac).score,
            Some(1.0)
        );
        assert_eq!(
            report(CodeVerdict::NoCode, 0, 5).verification(frac).score,
            None
        );
    }

    #[test]
    fn names_round_trip() {
        for v in CodeVerdict::ALL {
            assert_eq!(CodeVerdict::from_name(v.name()), Some(v));
        }
        assert_eq!(TestVerdict::Memory.name(), "memory");
        assert_eq!(CodeVerdict::from_name("ok"), None);
    }

    #[test]
    fn the_verifier_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<CodeVerifier>();
    }
}
