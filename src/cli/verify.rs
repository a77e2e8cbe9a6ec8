//! `rlvr verify`: verify JSON lines `{"response": "...", "answer": "..."}` read on stdin.
//!
//! Output, exactly one line per input line, in order, so that output line n belongs to input
//! line n (`paste`, `jq -s`, and zipping with the input just work):
//! `{"outcome": "correct|incorrect|unparseable|over_budget", "correct": bool, "reward": f,
//! "extracted": "..." | null, "source": "boxed|answer_line|…" | null}`, plus `"side"` and
//! `"reason"` for unparseable answers and `"reason"` for over-budget ones.
//!
//! With `--verifier code` the answer is the test cases — a string of JSON, or the JSON object or
//! array itself — and a line whose tests are usable also carries `"verdict"` (`passed`,
//! `wrong_answer`, `runtime_error`, `timeout`, `memory`, `syntax_error`, `no_code`, `too_large`,
//! `sandbox_error`), `"passed"`, `"total"`, `"tests"` (each run test's verdict, in order),
//! `"detail"` (why it is not `passed`) and, with `reward = "fraction"`, `"score"` (passed /
//! total; the reward interpolates between the incorrect and correct rewards).
//!
//! A malformed line (invalid UTF-8 or JSON, not an object, `response` missing or not a string,
//! `answer` missing or neither a string nor a number — nor an object or array for `code`) is
//! reported on stderr as
//! `error: line N: field `answer`: …` and gets `{"line": N, "error": "..."}` on stdout, keeping
//! the alignment; the run continues and the exit code is 2. A blank input line gives a blank
//! output line. Outcomes (including an unparseable gold answer) are verdicts, not errors: the
//! summary on stderr counts them by kind, and the exit code is 0 when every line was well formed.

use rl_verifier::{
    CodeVerdict, CodeVerifier, Outcome, OutcomeCounts, RewardMap, Verifier, VerifierConfig,
};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, Io, LineError};

/// Arguments of `rlvr verify`.
#[derive(clap::Args, Debug, Default)]
pub struct VerifyArgs {
    /// Verifier: dapo (verl math_dapo parity), math (equivalence) or code (the response's
    /// final Python block run against the answer's test cases in the sandbox). Default: math,
    /// or the one named in --config.
    #[arg(long)]
    pub verifier: Option<String>,
    /// A verifier configuration file (JSON, or TOML when the name ends in .toml), e.g.
    /// `{"name": "math", "extraction": {"final_number": false}}` or
    /// `{"name": "code", "reward": "fraction", "sandbox": {"limits": {"wall_time": 2}}}`.
    #[arg(long)]
    pub config: Option<std::path::PathBuf>,
    /// A budget limit KEY=VALUE (repeatable): max_input_bytes, max_depth, max_digits, max_steps
    /// (dapo and math; code is bounded by its sandbox limits).
    #[arg(long, value_name = "KEY=VALUE")]
    pub budget: Vec<String>,
    /// dapo only: verl's strict-box mode (last \boxed{} in the last 100 characters, unnormalised).
    #[arg(long)]
    pub strict_box: bool,
    /// Reward for a correct answer (default 1).
    #[arg(long, allow_hyphen_values = true)]
    pub reward_correct: Option<f64>,
    /// Reward for an incorrect answer (default -1 for dapo, as verl; 0 for math).
    #[arg(long, allow_hyphen_values = true)]
    pub reward_incorrect: Option<f64>,
    /// Reward when there is no usable answer or the budget ran out (default: the incorrect
    /// reward).
    #[arg(long, allow_hyphen_values = true)]
    pub reward_failed: Option<f64>,
}

/// Runs `rlvr verify`.
pub fn run(args: VerifyArgs, io: &mut Io<'_>) -> i32 {
    let (checker, rewards) = match build(&args) {
        Ok(v) => v,
        Err(msg) => {
            let _ = writeln!(io.stderr, "error: {msg}");
            return EXIT_BAD_INPUT;
        }
    };
    stream(&checker, &rewards, io)
}

/// The verifier: any through the trait, `code` directly for its per-test report.
enum Checker {
    Answer(Box<dyn Verifier>),
    Code(CodeVerifier),
}

impl Checker {
    fn name(&self) -> &'static str {
        match self {
            Checker::Answer(v) => v.name(),
            Checker::Code(v) => v.name(),
        }
    }
}

fn build(args: &VerifyArgs) -> Result<(Checker, RewardMap), String> {
    let mut cfg = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("--config {}: {e}", path.display()))?;
            let cfg: VerifierConfig = if path.extension().is_some_and(|e| e == "toml") {
                toml::from_str(&text).map_err(|e| format!("--config {}: {e}", path.display()))?
            } else {
                serde_json::from_str(&text)
                    .map_err(|e| format!("--config {}: {e}", path.display()))?
            };
            if let Some(name) = &args.verifier
                && name != cfg.name()
            {
                return Err(format!(
                    "--verifier {name} contradicts --config, which configures `{}`",
                    cfg.name()
                ));
            }
            cfg
        }
        None => VerifierConfig::from_name(args.verifier.as_deref().unwrap_or("math"))
            .map_err(|e| format!("--verifier: {e}"))?,
    };
    for item in &args.budget {
        let (key, value) = item
            .split_once('=')
            .ok_or_else(|| format!("--budget {item:?}: expected KEY=VALUE"))?;
        let name = cfg.name();
        cfg.budget_mut()
            .ok_or_else(|| {
                format!(
                    "--budget applies to the dapo and math verifiers; `{name}` has no step budget \
                     (code: its sandbox limits, set in --config; last_number: a fixed window)"
                )
            })?
            .set(key, value)
            .map_err(|e| format!("--budget: {e}"))?;
    }
    if args.strict_box {
        match &mut cfg {
            VerifierConfig::Dapo(d) => d.strict_box = true,
            other => {
                return Err(format!(
                    "--strict-box applies to the dapo verifier, not `{}`",
                    other.name()
                ));
            }
        }
    }
    let mut rewards = cfg.default_rewards();
    if let Some(r) = args.reward_correct {
        rewards.correct = r;
    }
    if let Some(r) = args.reward_incorrect {
        rewards.incorrect = r;
    }
    let failed = args.reward_failed.unwrap_or(rewards.incorrect);
    if args.reward_failed.is_some() || args.reward_incorrect.is_some() {
        rewards.unparseable_response = failed;
        rewards.unparseable_gold = failed;
        rewards.over_budget = failed;
    }
    rewards.validate().map_err(|e| e.to_string())?;
    let checker = match &cfg {
        VerifierConfig::Code(c) => Checker::Code(c.build().map_err(|e| e.to_string())?),
        _ => Checker::Answer(cfg.build().map_err(|e| e.to_string())?),
    };
    Ok((checker, rewards))
}

/// One well-formed input line.
struct Pair {
    response: String,
    answer: String,
}

/// Parses one line; `structured` (the `code` verifier) also accepts an object or array answer,
/// taken as its JSON text exactly as written (numbers keep every digit).
fn parse_line(bytes: &[u8], structured: bool) -> Result<Pair, LineError> {
    let text = std::str::from_utf8(bytes).map_err(|e| LineError {
        field: None,
        message: format!("invalid UTF-8: {e}"),
    })?;
    let value: Value = serde_json::from_str(text).map_err(|e| LineError {
        field: None,
        message: format!("invalid JSON: {e}"),
    })?;
    let Value::Object(obj) = value else {
        return Err(LineError {
            field: None,
            message: "expected a JSON object".into(),
        });
    };
    let response = match obj.get("response") {
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(LineError::field("response", "expected a string")),
        None => return Err(LineError::field("response", "missing")),
    };
    let answer = match obj.get("answer") {
        Some(Value::String(s)) => s.clone(),
        // Ground truths are sometimes stored as numbers; their JSON text is the answer.
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Object(_) | Value::Array(_)) if structured => raw_answer(text)?,
        Some(_) if structured => {
            return Err(LineError::field(
                "answer",
                "expected test cases: a JSON object or array, or a string holding one",
            ));
        }
        Some(_) => return Err(LineError::field("answer", "expected a string or a number")),
        None => return Err(LineError::field("answer", "missing")),
    };
    Ok(Pair { response, answer })
}

/// The `answer` field's JSON text as written in the line.
fn raw_answer(line: &str) -> Result<String, LineError> {
    #[derive(serde::Deserialize)]
    struct Raw<'a> {
        #[serde(borrow)]
        answer: &'a RawValue,
    }
    serde_json::from_str::<Raw<'_>>(line)
        .map(|r| r.answer.get().to_string())
        .map_err(|e| LineError::field("answer", e.to_string()))
}

/// The output line of one pair, its outcome, and the code verdict (`code` with usable tests).
fn result_line(
    checker: &Checker,
    rewards: &RewardMap,
    pair: &Pair,
) -> (Value, Outcome, Option<CodeVerdict>) {
    let mut out = Map::new();
    let (v, verdict) = match checker {
        Checker::Answer(verifier) => (verifier.verify(&pair.response, &pair.answer), None),
        Checker::Code(verifier) => match verifier.check(&pair.response, &pair.answer) {
            Ok(report) => {
                let v = report.verification(verifier.config().reward);
                out.insert("verdict".into(), json!(report.verdict.name()));
                out.insert("passed".into(), json!(report.passed));
                out.insert("total".into(), json!(report.total));
                let tests: Vec<&str> = report.tests.iter().map(|t| t.verdict.name()).collect();
                out.insert("tests".into(), json!(tests));
                out.insert("detail".into(), json!(report.detail));
                if let Some(score) = v.score {
                    out.insert("score".into(), json!(score));
                }
                (v, Some(report.verdict))
            }
            // Unusable tests: the same verdict `verify` gives (unparseable gold).
            Err(_) => (verifier.verify(&pair.response, &pair.answer), None),
        },
    };
    out.insert("outcome".into(), json!(v.outcome.name()));
    out.insert("correct".into(), json!(v.is_correct()));
    out.insert("reward".into(), json!(rewards.reward_for(&v)));
    out.insert("extracted".into(), json!(v.extracted));
    out.insert("source".into(), json!(v.source));
    match &v.outcome {
        Outcome::Unparseable { side, reason } => {
            out.insert("side".into(), json!(side));
            out.insert("reason".into(), json!(reason));
        }
        Outcome::OverBudget { what } => {
            out.insert("reason".into(), json!(what));
        }
        Outcome::Correct | Outcome::Incorrect => {}
    }
    (Value::Object(out), v.outcome, verdict)
}

fn stream(checker: &Checker, rewards: &RewardMap, io: &mut Io<'_>) -> i32 {
    let structured = matches!(checker, Checker::Code(_));
    let mut counts = OutcomeCounts::default();
    let mut verdicts = [0usize; CodeVerdict::ALL.len()];
    let mut failed = 0usize;
    let mut line_no = 0usize;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match io.stdin.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                let _ = writeln!(io.stderr, "error: reading line {}: {e}", line_no + 1);
                return EXIT_FAILURE;
            }
        }
        line_no += 1;
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let written = if line.iter().all(u8::is_ascii_whitespace) {
            writeln!(io.stdout)
        } else {
            match parse_line(line, structured) {
                Ok(pair) => {
                    let (out, outcome, verdict) = result_line(checker, rewards, &pair);
                    counts.record(&outcome);
                    if let Some(k) =
                        verdict.and_then(|v| CodeVerdict::ALL.iter().position(|&a| a == v))
                    {
                        verdicts[k] += 1;
                    }
                    writeln!(io.stdout, "{out}")
                }
                Err(e) => {
                    failed += 1;
                    let message = match &e.field {
                        Some(f) => format!("field `{f}`: {}", e.message),
                        None => e.message.clone(),
                    };
                    let _ = writeln!(io.stderr, "error: line {line_no}: {message}");
                    writeln!(io.stdout, "{}", json!({"line": line_no, "error": message}))
                }
            }
        };
        if written.is_err() {
            return EXIT_FAILURE;
        }
    }
    let code_summary = if structured {
        let parts: Vec<String> = CodeVerdict::ALL
            .iter()
            .zip(verdicts)
            .filter(|(_, n)| *n > 0)
            .map(|(v, n)| format!("{} {n}", v.name()))
            .collect();
        format!("; verdicts: {}", parts.join(", "))
    } else {
        String::new()
    };
    let _ = writeln!(
        io.stderr,
        "rlvr verify ({}): {line_no} lines, {failed} rejected; {counts}{code_summary}",
        checker.name()
    );
    if failed > 0 { EXIT_BAD_INPUT } else { EXIT_OK }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_with(args: VerifyArgs, input: &str) -> (i32, Vec<Value>, String) {
        let mut stdin = std::io::Cursor::new(input.as_bytes().to_vec());
        let mut out = Vec::new();
        let mut err = Vec::new();
        let code = {
            let mut io = Io {
                stdin: &mut stdin,
                stdout: &mut out,
                stderr: &mut err,
            };
            run(args, &mut io)
        };
        let out = String::from_utf8(out).unwrap();
        let lines = out
            .split('\n')
            .take(out.matches('\n').count())
            .map(|l| {
                if l.is_empty() {
                    Value::Null
                } else {
                    serde_json::from_str(l).unwrap()
                }
            })
            .collect();
        (code, lines, String::from_utf8(err).unwrap())
    }

    fn args(verifier: &str) -> VerifyArgs {
        VerifyArgs {
            verifier: Some(verifier.into()),
            ..VerifyArgs::default()
        }
    }

    #[test]
    fn dapo_lines_match_verl() {
        // Vectors measured by running verl's math_dapo.py (algorithms.md §10.3).
        let input = concat!(
            r#"{"response": "Let me think.\nAnswer: 42", "answer": "42"}"#,
            "\n",
            r#"{"response": "Answer: \\dfrac{1}{2}", "answer": "\\frac{1}{2}"}"#,
            "\n",
            r#"{"response": "The answer is \\boxed{7}", "answer": 7}"#,
            "\n"
        );
        let (code, lines, err) = run_with(args("dapo"), input);
        assert_eq!(code, EXIT_OK, "{err}");
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0]["outcome"], "correct");
        assert_eq!(lines[0]["reward"], 1.0);
        assert_eq!(lines[0]["extracted"], "42");
        assert_eq!(lines[1]["outcome"], "incorrect");
        assert_eq!(lines[1]["reward"], -1.0);
        assert_eq!(lines[1]["extracted"], "\\dfrac{1}{2}");
        assert_eq!(lines[2]["outcome"], "unparseable");
        assert_eq!(lines[2]["side"], "response");
        assert_eq!(lines[2]["correct"], false);
        assert_eq!(lines[2]["reward"], -1.0);
        assert!(err.contains("correct 1, incorrect 1"), "{err}");
    }

    #[test]
    fn bad_lines_are_named_and_outputs_stay_aligned() {
        let input = concat!(
            r#"{"response": "\\boxed{1/2}", "answer": "0.5"}"#,
            "\n",
            "not json\n",
            "\n",
            r#"{"response": "x"}"#,
            "\n",
            r#"{"response": 3, "answer": "3"}"#,
            "\n",
            r#"{"response": "Answer: 3", "answer": ["3"]}"#,
            "\n",
            r#"["a"]"#,
            "\n",
            r#"{"response": "$\\frac{1}{2004!}$", "answer": "\\frac{1}{2006!}", "id": 9}"#,
        );
        let mut bytes = input.as_bytes().to_vec();
        bytes.extend_from_slice(b"\n\xff\xfe\n");
        let mut stdin = std::io::Cursor::new(bytes);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run(
            args("math"),
            &mut Io {
                stdin: &mut stdin,
                stdout: &mut out,
                stderr: &mut err,
            },
        );
        let err = String::from_utf8(err).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert_eq!(code, EXIT_BAD_INPUT, "{err}");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 9, "{out}");
        let v = |i: usize| serde_json::from_str::<Value>(lines[i]).unwrap();
        assert_eq!(v(0)["outcome"], "correct");
        assert_eq!(v(1)["line"], 2);
        assert_eq!(lines[2], "");
        assert_eq!(v(3)["error"], "field `answer`: missing");
        assert_eq!(v(4)["error"], "field `response`: expected a string");
        assert_eq!(v(5)["line"], 6);
        assert_eq!(v(6)["error"], "expected a JSON object");
        assert_eq!(v(7)["outcome"], "incorrect");
        assert_eq!(v(8)["line"], 9);
        for n in [2, 4, 5, 6, 7, 9] {
            assert!(
                err.contains(&format!("error: line {n}: ")),
                "line {n}: {err}"
            );
        }
        assert!(err.contains("9 lines, 6 rejected"), "{err}");
    }

    #[test]
    fn rewards_budget_and_argument_errors() {
        let input = r#"{"response": "\\boxed{10^{100000}}", "answer": "5"}"#;
        let a = VerifyArgs {
            reward_correct: Some(2.0),
            reward_incorrect: Some(-0.5),
            reward_failed: Some(-3.0),
            budget: vec!["max_digits=50".into()],
            ..args("math")
        };
        let (code, lines, _) = run_with(a, &format!("{input}\n"));
        assert_eq!(code, EXIT_OK);
        assert_eq!(lines[0]["outcome"], "over_budget");
        assert_eq!(lines[0]["reward"], -3.0);
        assert!(lines[0]["reason"].as_str().unwrap().contains("max_digits"));

        for (bad, needle) in [
            (
                args("sympy"),
                "valid names: code, dapo, gsm8k, last_number, math",
            ),
            (
                VerifyArgs {
                    budget: vec!["max_steps=10".into()],
                    ..args("code")
                },
                "sandbox limits",
            ),
            (
                VerifyArgs {
                    budget: vec!["max_stepz=1".into()],
                    ..args("math")
                },
                "max_steps",
            ),
            (
                VerifyArgs {
                    budget: vec!["max_steps".into()],
                    ..args("math")
                },
                "KEY=VALUE",
            ),
            (
                VerifyArgs {
                    strict_box: true,
                    ..args("math")
                },
                "dapo",
            ),
        ] {
            let (code, _, err) = run_with(bad, "");
            assert_eq!(code, EXIT_BAD_INPUT);
            assert!(err.contains(needle), "{err}");
        }
    }

    #[test]
    fn config_file_selects_and_configures() {
        let tmpdir = tempfile::Builder::new()
            .prefix("rlvr-verify-")
            .tempdir()
            .unwrap();
        let dir = tmpdir.path();
        let path = dir.join("v.toml");
        std::fs::write(&path, "name = \"dapo\"\nstrict_box = true\n").unwrap();
        let a = VerifyArgs {
            config: Some(path.clone()),
            verifier: None,
            ..VerifyArgs::default()
        };
        let input = "{\"response\": \"so \\\\boxed{42}\", \"answer\": \"42\"}\n";
        let (code, lines, err) = run_with(a, input);
        assert_eq!(code, EXIT_OK, "{err}");
        assert_eq!(lines[0]["outcome"], "correct");
        assert_eq!(lines[0]["source"], "boxed");
        let a = VerifyArgs {
            config: Some(path),
            verifier: Some("math".into()),
            ..VerifyArgs::default()
        };
        let (code, _, err) = run_with(a, input);
        assert_eq!(code, EXIT_BAD_INPUT);
        assert!(err.contains("contradicts"), "{err}");
        std::fs::remove_dir_all(dir).ok();
    }
    /// False (with the reason on stderr) where the sandbox cannot run here, outside CI.
    fn sandbox_available() -> bool {
        match rl_verifier::CodeConfig::default().build() {
            Ok(_) => true,
            Err(e) if std::env::var("CI").as_deref() != Ok("true") => {
                eprintln!("skipping: {e}");
                false
            }
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn code_lines_carry_verdicts_tests_and_graded_rewards() {
        if !sandbox_available() {
            return;
        }
        let double = "```python\\nprint(int(input()) * 2)\\n```";
        let plus = "```python\\nprint(int(input()) + 2)\\n```";
        let tests = r#"{"inputs": ["2", "5"], "outputs": ["4", "10"]}"#;
        let lines = [
            // The tests as an object, as a string of JSON, as an array (asserts).
            format!(r#"{{"response": "{double}", "answer": {tests}}}"#),
            format!(r#"{{"response": "{plus}", "answer": {}}}"#, json!(tests)),
            r#"{"response": "```python\ndef f(x):\n    return x + 1\n```", "answer": ["assert f(1) == 2", "assert f(2) == 3"]}"#.to_string(),
            r#"{"response": "no code", "answer": [{"input": "1", "output": "1"}]}"#.to_string(),
            r#"{"response": "```python\nprint(1)\n```", "answer": "not json"}"#.to_string(),
            r#"{"response": "```python\nprint(1)\n```", "answer": true}"#.to_string(),
            // 25! + 1 is not 25!: the answer's digits reach the program unrounded.
            r#"{"response": "```python\nimport math\ndef f(n):\n    return math.factorial(n)\n```", "answer": {"fn_name": "f", "inputs": [[25]], "outputs": [15511210043330985984000001]}}"#.to_string(),
            r#"{"response": "```python\nwhile True:\n    pass\n```", "answer": [{"input": "", "output": "1"}]}"#.to_string(),
        ];
        let input = lines.join("\n") + "\n";
        let tmpdir = tempfile::Builder::new()
            .prefix("rlvr-verify-code-")
            .tempdir()
            .unwrap();
        let dir = tmpdir.path();
        let path = dir.join("code.toml");
        std::fs::write(
            &path,
            "name = \"code\"\nreward = \"fraction\"\n[sandbox.limits]\nwall_time = 2\ncpu_time = 1\n",
        )
        .unwrap();
        let a = VerifyArgs {
            config: Some(path),
            reward_incorrect: Some(-1.0),
            ..VerifyArgs::default()
        };
        let (code, out, err) = run_with(a, &input);
        std::fs::remove_dir_all(dir).ok();
        assert_eq!(code, EXIT_BAD_INPUT, "{err}");
        assert_eq!(out.len(), lines.len(), "{out:?}");
        assert_eq!(out[0]["outcome"], "correct");
        assert_eq!(out[0]["verdict"], "passed");
        assert_eq!(
            (out[0]["passed"].as_u64(), out[0]["total"].as_u64()),
            (Some(2), Some(2))
        );
        assert_eq!(out[0]["tests"], json!(["passed", "passed"]));
        assert_eq!(out[0]["source"], "code_block");
        assert_eq!(out[0]["reward"], 1.0);
        // n + 2: 4 passes (n = 2), 7 != 10 fails: fraction 1/2, reward -1 + 0.5 * 2 = 0.
        assert_eq!(out[1]["outcome"], "incorrect");
        assert_eq!(out[1]["verdict"], "wrong_answer");
        assert_eq!(out[1]["tests"], json!(["passed", "wrong_answer"]));
        assert_eq!(out[1]["score"], 0.5);
        assert_eq!(out[1]["reward"], 0.0);
        assert!(
            out[1]["detail"].as_str().unwrap().starts_with("test 1: "),
            "{}",
            out[1]
        );
        assert_eq!(out[2]["verdict"], "passed");
        assert_eq!(out[3]["outcome"], "unparseable");
        assert_eq!(out[3]["side"], "response");
        assert_eq!(out[3]["verdict"], "no_code");
        assert_eq!(out[3]["reward"], -1.0);
        assert_eq!(out[4]["outcome"], "unparseable");
        assert_eq!(out[4]["side"], "gold");
        assert!(out[4].get("verdict").is_none());
        assert_eq!(out[5]["line"], 6);
        assert!(
            out[5]["error"].as_str().unwrap().contains("test cases"),
            "{}",
            out[5]
        );
        assert_eq!(out[6]["verdict"], "wrong_answer");
        assert_eq!(out[7]["verdict"], "timeout");
        assert!(err.contains("error: line 6: field `answer`"), "{err}");
        assert!(
            err.contains("verdicts: passed 2, wrong_answer 2, timeout 1, no_code 1"),
            "{err}"
        );
    }
}
