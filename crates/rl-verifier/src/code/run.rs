//! The programs the verifier runs, and how a finished [`Run`] becomes a verdict.
//!
//! * Syntax check, call-based and assert tests run `harness.py` as `main.py`, with a JSON
//!   document on stdin (the solution, the test, a random token); the harness answers with one
//!   line `TOKEN{json}` on stdout (see the harness's header).
//! * Stdin/stdout tests run the solution itself as `main.py` with the test's input on stdin.
//!
//! Classification of a run, in this order: wall-clock or CPU limit → `Timeout`; stdout or stderr
//! over `output_bytes` → `WrongAnswer` (output limit); killed by SIGKILL before the wall-clock
//! limit (not the sandbox's own kill: the kernel's answer to memory exhaustion) or a
//! `MemoryError` as the last line of stderr → `Memory`; any other signal or non-zero exit → `RuntimeError` (even when the output
//! was right); exit 0 → the comparison (stdin/stdout) or the harness's report.

use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rl_sandbox::{Program, Run, Status};
use serde_json::{Value, json};

use super::cases::TestCase;
use super::compare::outputs_match;
use super::verdict::TestVerdict;

/// The harness (`main.py` for the syntax check, call-based and assert tests).
pub const HARNESS: &str = include_str!("harness.py");

/// Characters kept of a detail (stderr line, expected / actual output).
const DETAIL_CHARS: usize = 200;

/// SIGKILL.
const SIGKILL: i32 = 9;

/// A token no solution can guess: 128 bits from std's randomly keyed SipHash, fed with a
/// process-wide counter and the time.
pub fn token() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let t = Instant::now();
    let a = RandomState::new().hash_one((n, t, 0u8));
    let b = RandomState::new().hash_one((t, n, 1u8));
    format!("@@rlvr-{a:016x}{b:016x}@@")
}

/// The syntax-check program.
pub fn syntax_check(code: &str, token: &str) -> Program {
    harness(json!({"mode": "compile", "token": token, "solution": code}).to_string())
}

/// The program of one test case.
pub fn test_program(code: &str, case: &TestCase, token: &str, tol: f64) -> Program {
    match case {
        TestCase::Stdio { input, .. } => Program {
            source: code.to_string(),
            stdin: input.as_bytes().to_vec(),
            ..Program::default()
        },
        TestCase::Assert { code: test } => harness(
            json!({"mode": "assert", "token": token, "solution": code, "test": test}).to_string(),
        ),
        TestCase::Call {
            fn_name,
            args,
            expected,
        } => {
            // args and expected are JSON texts, spliced in so that their numbers keep every
            // digit (the parser checked them).
            let head = json!({"mode": "call", "token": token, "solution": code,
                              "fn_name": fn_name, "tol": tol})
            .to_string();
            let head = head.strip_suffix('}').unwrap_or(&head);
            harness(format!("{head},\"args\":{args},\"expected\":{expected}}}"))
        }
    }
}

fn harness(stdin: String) -> Program {
    Program {
        source: HARNESS.to_string(),
        stdin: stdin.into_bytes(),
        ..Program::default()
    }
}

/// Cuts `s` to [`DETAIL_CHARS`] characters.
pub fn short(s: &str) -> String {
    let s = s.trim();
    match s.char_indices().nth(DETAIL_CHARS) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// The last non-blank line of stderr.
fn last_line(stderr: &str) -> &str {
    stderr
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

/// What a run's status and stderr say before any output is looked at; `None` for exit 0.
pub fn failure(run: &Run, limits_wall: Duration) -> Option<(TestVerdict, String)> {
    let stderr = run.stderr_text();
    let last = last_line(&stderr);
    let memory = last.starts_with("MemoryError");
    match run.status {
        Status::TimedOut => Some((
            TestVerdict::Timeout,
            format!("wall-clock limit ({} s)", limits_wall.as_secs_f64()),
        )),
        Status::CpuLimit => Some((TestVerdict::Timeout, "CPU-time limit".into())),
        Status::OutputLimit => Some((TestVerdict::WrongAnswer, "output limit exceeded".into())),
        // A SIGKILL at the wall-clock limit is the sandbox's own (reported as a timeout).
        Status::Signaled { signal } if signal == SIGKILL && run.wall >= limits_wall => Some((
            TestVerdict::Timeout,
            format!(
                "killed at the wall-clock limit ({} s)",
                limits_wall.as_secs_f64()
            ),
        )),
        Status::Signaled { signal } if signal == SIGKILL || memory => Some((
            TestVerdict::Memory,
            format!("killed by signal {signal} (memory exhausted)"),
        )),
        Status::Signaled { signal } => Some((
            TestVerdict::RuntimeError,
            if last.is_empty() {
                format!("killed by signal {signal}")
            } else {
                format!("killed by signal {signal}: {}", short(last))
            },
        )),
        Status::Exited { code } if code != 0 => Some(if memory {
            (TestVerdict::Memory, short(last))
        } else if last.is_empty() {
            (TestVerdict::RuntimeError, format!("exit code {code}"))
        } else {
            (TestVerdict::RuntimeError, short(last))
        }),
        Status::Exited { .. } => None,
    }
}

/// The harness's report in a run's stdout, if it is there.
pub fn report(run: &Run, token: &str) -> Option<Value> {
    let out = run.stdout_text();
    let start = out.rfind(token)? + token.len();
    let line = out[start..].lines().next().unwrap_or("");
    serde_json::from_str(line).ok()
}

/// The verdict of one finished test run, and a detail for logs.
pub fn classify(
    run: &Run,
    case: &TestCase,
    token: &str,
    tol: f64,
    limits_wall: Duration,
) -> (TestVerdict, String) {
    if let Some(failed) = failure(run, limits_wall) {
        return failed;
    }
    match case {
        TestCase::Stdio { output, .. } => {
            let got = run.stdout_text();
            if outputs_match(&got, output, tol) {
                (TestVerdict::Passed, String::new())
            } else {
                (
                    TestVerdict::WrongAnswer,
                    format!("expected {:?}, got {:?}", short(output), short(&got)),
                )
            }
        }
        TestCase::Call { expected, .. } | TestCase::Assert { code: expected } => {
            match report(run, token) {
                Some(r) if r["ok"] == Value::Bool(true) => (TestVerdict::Passed, String::new()),
                Some(r) => {
                    let detail = match (r["got"].as_str(), r["error"].as_str()) {
                        (Some(got), _) if matches!(case, TestCase::Call { .. }) => {
                            format!("expected {}, got {}", short(expected), short(got))
                        }
                        (_, Some(e)) => short(e),
                        _ => "the test failed".into(),
                    };
                    (TestVerdict::WrongAnswer, detail)
                }
                None => (
                    TestVerdict::RuntimeError,
                    "the program exited before the test finished (exit or os._exit in the \
                     solution)"
                        .into(),
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn run(status: Status, stdout: &str, stderr: &str) -> Run {
        Run {
            status,
            stdout: stdout.as_bytes().to_vec(),
            stderr: stderr.as_bytes().to_vec(),
            wall: Duration::from_millis(20),
            cpu: Duration::from_millis(15),
            work_dir: PathBuf::from("/tmp/x"),
        }
    }

    const WALL: Duration = Duration::from_secs(4);
    const OK: Status = Status::Exited { code: 0 };
    const FAIL: Status = Status::Exited { code: 1 };

    fn stdio(output: &str) -> TestCase {
        TestCase::Stdio {
            input: String::new(),
            output: output.into(),
        }
    }

    fn verdict(r: &Run, case: &TestCase) -> TestVerdict {
        classify(r, case, "@@T@@", 1e-6, WALL).0
    }

    #[test]
    fn stdio_runs() {
        let case = stdio("3\n");
        assert_eq!(verdict(&run(OK, "3\n", ""), &case), TestVerdict::Passed);
        assert_eq!(
            verdict(&run(OK, "3   \n\n", "warning"), &case),
            TestVerdict::Passed
        );
        let (v, detail) = classify(&run(OK, "4\n", ""), &case, "@@T@@", 1e-6, WALL);
        assert_eq!(v, TestVerdict::WrongAnswer);
        assert_eq!(detail, r#"expected "3", got "4""#);
        // Right output, but the program failed afterwards.
        let tb = "Traceback (most recent call last):\n  File \"main.py\", line 2\nValueError: x\n";
        let (v, detail) = classify(&run(FAIL, "3\n", tb), &case, "@@T@@", 1e-6, WALL);
        assert_eq!(v, TestVerdict::RuntimeError);
        assert_eq!(detail, "ValueError: x");
        assert_eq!(
            verdict(&run(Status::Exited { code: 3 }, "3\n", ""), &case),
            TestVerdict::RuntimeError
        );
    }

    #[test]
    fn limits_and_signals() {
        let case = stdio("3\n");
        assert_eq!(
            verdict(&run(Status::TimedOut, "3\n", ""), &case),
            TestVerdict::Timeout
        );
        assert_eq!(
            verdict(&run(Status::CpuLimit, "", ""), &case),
            TestVerdict::Timeout
        );
        assert_eq!(
            verdict(&run(Status::OutputLimit, "3\n", ""), &case),
            TestVerdict::WrongAnswer
        );
        let tb = "Traceback (most recent call last):\n  File \"main.py\", line 1\nMemoryError\n";
        assert_eq!(verdict(&run(FAIL, "", tb), &case), TestVerdict::Memory);
        assert_eq!(
            verdict(&run(Status::Signaled { signal: 9 }, "", ""), &case),
            TestVerdict::Memory
        );
        let mut late = run(Status::Signaled { signal: 9 }, "", "");
        late.wall = WALL;
        assert_eq!(verdict(&late, &case), TestVerdict::Timeout);
        let (v, detail) = classify(
            &run(
                Status::Signaled { signal: 11 },
                "",
                "Fatal Python error: Segmentation fault",
            ),
            &case,
            "@@T@@",
            1e-6,
            WALL,
        );
        assert_eq!(v, TestVerdict::RuntimeError);
        assert!(detail.starts_with("killed by signal 11"), "{detail}");
        // A timeout wins over whatever was printed.
        assert_eq!(
            verdict(&run(Status::TimedOut, "", "MemoryError"), &case),
            TestVerdict::Timeout
        );
    }

    #[test]
    fn harness_reports() {
        let call = TestCase::Call {
            fn_name: "f".into(),
            args: "[1]".into(),
            expected: "2".into(),
        };
        let asserts = TestCase::Assert {
            code: "assert f(1) == 2".into(),
        };
        let ok = run(OK, "@@T@@{\"ok\": true, \"got\": \"2\"}\n", "");
        assert_eq!(verdict(&ok, &call), TestVerdict::Passed);
        assert_eq!(verdict(&ok, &asserts), TestVerdict::Passed);
        let wrong = run(OK, "@@T@@{\"ok\": false, \"got\": \"3\"}\n", "");
        let (v, detail) = classify(&wrong, &call, "@@T@@", 1e-6, WALL);
        assert_eq!(
            (v, detail.as_str()),
            (TestVerdict::WrongAnswer, "expected 2, got 3")
        );
        let failed = run(
            OK,
            "@@T@@{\"ok\": false, \"error\": \"AssertionError\"}\n",
            "",
        );
        let (v, detail) = classify(&failed, &asserts, "@@T@@", 1e-6, WALL);
        assert_eq!(
            (v, detail.as_str()),
            (TestVerdict::WrongAnswer, "AssertionError")
        );
        // Exit 0 without the token: the solution left early; a forged report has no token.
        assert_eq!(
            verdict(&run(OK, "", ""), &asserts),
            TestVerdict::RuntimeError
        );
        let forged = run(OK, "{\"ok\": true}\n", "");
        assert_eq!(verdict(&forged, &call), TestVerdict::RuntimeError);
        // A report with the token but a failed exit is judged by the exit.
        let tb = "Traceback (most recent call last):\nNameError: name 'g' is not defined\n";
        assert_eq!(
            verdict(&run(FAIL, "", tb), &asserts),
            TestVerdict::RuntimeError
        );
    }

    #[test]
    fn call_program_keeps_big_numbers_as_text() {
        let case = TestCase::Call {
            fn_name: "f".into(),
            args: "[123456789012345678901234567890]".into(),
            expected: "[1.5e300]".into(),
        };
        let p = test_program("def f(x): return x", &case, "@@T@@", 1e-6);
        let stdin = String::from_utf8(p.stdin).unwrap();
        let v: Value = serde_json::from_str(&stdin).unwrap();
        assert_eq!(v["mode"], "call");
        assert_eq!(v["fn_name"], "f");
        assert!(
            stdin.contains("\"args\":[123456789012345678901234567890]"),
            "{stdin}"
        );
        assert_eq!(p.source, HARNESS);
    }

    #[test]
    fn tokens_differ_and_details_are_short() {
        assert_ne!(token(), token());
        assert!(token().len() > 32);
        let long = "x".repeat(1000);
        assert_eq!(short(&long).chars().count(), DETAIL_CHARS + 1);
        assert_eq!(short(" ab "), "ab");
    }
}
