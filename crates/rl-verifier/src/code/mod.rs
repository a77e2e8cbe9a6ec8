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

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rl_sandbox::Sandbox;

pub use cases::{TestCase, TestSuite};
pub use config::{CodeConfig, CodeReward};
pub use extract::{CodeBlock, final_code_block};

use crate::{AnswerSource, ConfigError, Outcome, Side, Verification, Verifier};

/// The verdict of one test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TestVerdict {
    /// Output (or return value, or every assert) as expected.
    Passed,
    /// A different output or return value, a failed assert, or output over the limit.
    WrongAnswer,
    /// An uncaught exception, a non-zero exit, a signal, or an exit before the test finished.
    RuntimeError,
    /// The wall-clock or CPU-time limit.
    Timeout,
    /// `MemoryError` (the address-space limit) or a kill by the kernel for memory.
    Memory,
}

impl TestVerdict {
    /// `passed`, `wrong_answer`, `runtime_error`, `timeout` or `memory`.
    pub fn name(self) -> &'static str {
        CodeVerdict::from(self).name()
    }
}

/// The verdict of a whole response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CodeVerdict {
    /// Every test passed.
    Passed,
    /// The first failing test gave a wrong answer.
    WrongAnswer,
    /// The first failing test ended with an error.
    RuntimeError,
    /// The first failing test ran out of time.
    Timeout,
    /// The first failing test ran out of memory.
    Memory,
    /// The code does not compile.
    SyntaxError,
    /// The response has no (non-empty) Python code block.
    NoCode,
    /// The code block is longer than `max_code_bytes`; it was not run.
    TooLarge,
    /// The sandbox failed to run a program (a problem of the machine, not of the code).
    SandboxError,
}

impl CodeVerdict {
    /// Every verdict, in reporting order.
    pub const ALL: [CodeVerdict; 9] = [
        CodeVerdict::Passed,
        CodeVerdict::WrongAnswer,
        CodeVerdict::RuntimeError,
        CodeVerdict::Timeout,
        CodeVerdict::Memory,
        CodeVerdict::SyntaxError,
        CodeVerdict::NoCode,
        CodeVerdict::TooLarge,
        CodeVerdict::SandboxError,
    ];

    /// The wire name (`passed`, `wrong_answer`, `runtime_error`, `timeout`, `memory`,
    /// `syntax_error`, `no_code`, `too_large`, `sandbox_error`).
    pub fn name(self) -> &'static str {
        match self {
            CodeVerdict::Passed => "passed",
            CodeVerdict::WrongAnswer => "wrong_answer",
            CodeVerdict::RuntimeError => "runtime_error",
            CodeVerdict::Timeout => "timeout",
            CodeVerdict::Memory => "memory",
            CodeVerdict::SyntaxError => "syntax_error",
            CodeVerdict::NoCode => "no_code",
            CodeVerdict::TooLarge => "too_large",
            CodeVerdict::SandboxError => "sandbox_error",
        }
    }

    /// From its wire name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.name() == name)
    }
}

impl fmt::Display for CodeVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<TestVerdict> for CodeVerdict {
    fn from(v: TestVerdict) -> Self {
        match v {
            TestVerdict::Passed => CodeVerdict::Passed,
            TestVerdict::WrongAnswer => CodeVerdict::WrongAnswer,
            TestVerdict::RuntimeError => CodeVerdict::RuntimeError,
            TestVerdict::Timeout => CodeVerdict::Timeout,
            TestVerdict::Memory => CodeVerdict::Memory,
        }
    }
}

/// One test's result.
#[derive(Clone, Debug, PartialEq)]
pub struct TestResult {
    /// The test's position in the gold's list.
    pub index: usize,
    /// Its verdict.
    pub verdict: TestVerdict,
    /// Why it failed (the last stderr line, expected vs. actual output, …); empty when passed.
    pub detail: String,
    /// Wall-clock time of its run.
    pub wall: Duration,
}

/// The result of checking one response.
#[derive(Clone, Debug, PartialEq)]
pub struct CodeReport {
    /// The overall verdict.
    pub verdict: CodeVerdict,
    /// Tests passed. All-or-nothing: the tests before the first failure.
    pub passed: usize,
    /// Tests that count: the gold's cases, at most `max_tests`.
    pub total: usize,
    /// The gold's cases (more than `total` when `max_tests` cut them).
    pub available: usize,
    /// The tests run, in test order (all-or-nothing: up to the first failure).
    pub tests: Vec<TestResult>,
    /// The code that was checked, when a block was found.
    pub code: Option<String>,
    /// Why the verdict is not `Passed` (the first failing test's detail, the syntax error, …).
    pub detail: String,
}

impl CodeReport {
    fn early(verdict: CodeVerdict, total: usize, available: usize, detail: String) -> Self {
        CodeReport {
            verdict,
            passed: 0,
            total,
            available,
            tests: Vec::new(),
            code: None,
            detail,
        }
    }

    /// passed / total (0 when there is no test).
    pub fn fraction(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.passed as f64 / self.total as f64
        }
    }

    /// The verification: `Passed` → correct; `NoCode` → unparseable response; `TooLarge` and
    /// `SandboxError` → over budget; every other verdict → incorrect. With
    /// [`CodeReward::Fraction`], correct and incorrect verifications carry `score` = passed /
    /// total ([`crate::RewardMap::reward_for`]).
    pub fn verification(&self, reward: CodeReward) -> Verification {
        let outcome = match self.verdict {
            CodeVerdict::Passed => Outcome::Correct,
            CodeVerdict::NoCode => Outcome::Unparseable {
                side: Side::Response,
                reason: self.detail.clone(),
            },
            CodeVerdict::TooLarge | CodeVerdict::SandboxError => Outcome::OverBudget {
                what: self.detail.clone(),
            },
            CodeVerdict::WrongAnswer
            | CodeVerdict::RuntimeError
            | CodeVerdict::Timeout
            | CodeVerdict::Memory
            | CodeVerdict::SyntaxError => Outcome::Incorrect,
        };
        let score = match (&outcome, reward) {
            (Outcome::Correct | Outcome::Incorrect, CodeReward::Fraction) => Some(self.fraction()),
            _ => None,
        };
        Verification {
            outcome,
            extracted: self.code.clone(),
            source: self.code.as_ref().map(|_| AnswerSource::CodeBlock),
            score,
        }
    }
}

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
