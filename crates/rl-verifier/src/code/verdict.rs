//! What checking a response found: each test's verdict and the response's report.

use std::fmt;
use std::time::Duration;

use super::config::CodeReward;
use crate::{AnswerSource, Outcome, Side, Verification};

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
    pub(super) fn early(
        verdict: CodeVerdict,
        total: usize,
        available: usize,
        detail: String,
    ) -> Self {
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
