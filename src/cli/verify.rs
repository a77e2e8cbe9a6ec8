//! `rlvr verify`: verify JSON lines `{"response": "...", "answer": "..."}` read on stdin.
//!
//! Output, exactly one line per input line, in order, so that output line n belongs to input
//! line n (`paste`, `jq -s`, and zipping with the input just work):
//! `{"outcome": "correct|incorrect|unparseable|over_budget", "correct": bool, "reward": f,
//! "extracted": "..." | null, "source": "boxed|answer_line|…" | null}`, plus `"side"` and
//! `"reason"` for unparseable answers and `"reason"` for over-budget ones.
//!
//! A malformed line (invalid UTF-8 or JSON, not an object, `response` missing or not a string,
//! `answer` missing or neither a string nor a number) is reported on stderr as
//! `error: line N: field `answer`: …` and gets `{"line": N, "error": "..."}` on stdout, keeping
//! the alignment; the run continues and the exit code is 2. A blank input line gives a blank
//! output line. Outcomes (including an unparseable gold answer) are verdicts, not errors: the
//! summary on stderr counts them by kind, and the exit code is 0 when every line was well formed.

use rl_verifier::{Outcome, OutcomeCounts, RewardMap, Verifier, VerifierConfig};
use serde_json::{Map, Value, json};

use super::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, Io, LineError};

/// Arguments of `rlvr verify`.
#[derive(clap::Args, Debug, Default)]
pub struct VerifyArgs {
    /// Verifier: dapo (verl math_dapo parity) or math (equivalence). Default: math, or the one
    /// named in --config.
    #[arg(long)]
    pub verifier: Option<String>,
    /// A verifier configuration file (JSON, or TOML when the name ends in .toml), e.g.
    /// `{"name": "math", "extraction": {"final_number": false}}`.
    #[arg(long)]
    pub config: Option<std::path::PathBuf>,
    /// A budget limit KEY=VALUE (repeatable): max_input_bytes, max_depth, max_digits, max_steps.
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
    let (verifier, rewards) = match build(&args) {
        Ok(v) => v,
        Err(msg) => {
            let _ = writeln!(io.stderr, "error: {msg}");
            return EXIT_BAD_INPUT;
        }
    };
    stream(verifier.as_ref(), &rewards, io)
}

fn build(args: &VerifyArgs) -> Result<(Box<dyn Verifier>, RewardMap), String> {
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
        cfg.budget_mut()
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
    let verifier = cfg.build().map_err(|e| e.to_string())?;
    Ok((verifier, rewards))
}

/// One well-formed input line.
struct Pair {
    response: String,
    answer: String,
}

fn parse_line(bytes: &[u8]) -> Result<Pair, LineError> {
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
        Some(_) => return Err(LineError::field("answer", "expected a string or a number")),
        None => return Err(LineError::field("answer", "missing")),
    };
    Ok(Pair { response, answer })
}

fn result_line(verifier: &dyn Verifier, rewards: &RewardMap, pair: &Pair) -> (Value, Outcome) {
    let v = verifier.verify(&pair.response, &pair.answer);
    let mut out = Map::new();
    out.insert("outcome".into(), json!(v.outcome.name()));
    out.insert("correct".into(), json!(v.is_correct()));
    out.insert("reward".into(), json!(rewards.reward(&v.outcome)));
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
    (Value::Object(out), v.outcome)
}

fn stream(verifier: &dyn Verifier, rewards: &RewardMap, io: &mut Io<'_>) -> i32 {
    let mut counts = OutcomeCounts::default();
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
            match parse_line(line) {
                Ok(pair) => {
                    let (out, outcome) = result_line(verifier, rewards, &pair);
                    counts.record(&outcome);
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
    let _ = writeln!(
        io.stderr,
        "rlvr verify ({}): {line_no} lines, {failed} rejected; {counts}",
        verifier.name()
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
            (args("sympy"), "valid names: dapo, math"),
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
        let dir = std::env::temp_dir().join(format!("rlvr-verify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
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
        std::fs::remove_dir_all(&dir).ok();
    }
}
