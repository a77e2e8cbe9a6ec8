//! Test cases: the gold "answer" of a coding problem, as JSON text.
//!
//! Accepted shapes (anything else is an unusable gold, `Unparseable { side: Gold }`):
//!
//! 1. **APPS / TACO / LiveCodeBench**: `{"inputs": [...], "outputs": [...]}` (same length;
//!    other keys are ignored).
//!    * Without `fn_name` (or with `"fn_name": null`): **stdin/stdout** tests. Each input and
//!      output is a string, a number (its JSON text) or a list of strings (joined with `\n`, as
//!      APPS's evaluator joins them).
//!    * With `"fn_name": "name"`: **call-based** tests. The solution is run, then
//!      `name(*args)` is called — `name` is a top-level function of the solution or a method of
//!      its class `Solution` (LeetCode style) — and its return value is compared with the
//!      expected value. Two encodings, per case: APPS / TACO (`inputs[i]` a JSON array of the
//!      arguments, `outputs[i]` the expected value itself, which APPS wraps in a one-element
//!      list) or LiveCodeBench (`inputs[i]` a string of JSON texts one argument per line,
//!      `outputs[i]` a string holding the expected value's JSON text).
//! 2. A list of **`{"input": ..., "output": ...}`** objects: stdin/stdout tests.
//! 3. **Assert-style** tests: `{"asserts": ["assert add(1, 2) == 3", ...]}` (optionally with
//!    `"setup": "import math"`, run before each assert) or a bare list of such strings. Each
//!    string is Python code (usually one `assert`) run after the solution.
//!
//! JSON numbers inside call-based arguments and expected values are passed to Python as their
//! original text (never through `f64`), so integers of any size stay exact.

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// One test case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TestCase {
    /// Run the solution with `input` on stdin; its stdout must match `output`.
    Stdio {
        /// Bytes on standard input.
        input: String,
        /// Expected standard output.
        output: String,
    },
    /// Call `fn_name(*args)` and compare the return value with `expected`.
    Call {
        /// The function (or `Solution` method) name.
        fn_name: String,
        /// The arguments, as the JSON text of an array.
        args: String,
        /// The expected return value, as JSON text.
        expected: String,
    },
    /// Run `code` (usually an `assert`) after the solution; it must finish without an error.
    Assert {
        /// Python code.
        code: String,
    },
}

impl TestCase {
    /// `stdio`, `call` or `assert`.
    pub fn kind(&self) -> &'static str {
        match self {
            TestCase::Stdio { .. } => "stdio",
            TestCase::Call { .. } => "call",
            TestCase::Assert { .. } => "assert",
        }
    }
}

/// The test cases of one problem, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestSuite {
    /// The cases (at least one).
    pub cases: Vec<TestCase>,
}

const SHAPES: &str = "expected {\"inputs\": [...], \"outputs\": [...]} (optionally with \
                      \"fn_name\"), {\"asserts\": [...]}, a list of {\"input\", \"output\"} \
                      objects or a list of assert strings";

impl TestSuite {
    /// Parses the JSON text of a gold answer; the error says what is wrong, for
    /// `Unparseable { side: Gold }`.
    pub fn parse(gold: &str) -> Result<TestSuite, String> {
        let value: Value = serde_json::from_str(gold)
            .map_err(|e| format!("the test cases are not valid JSON: {e}"))?;
        let cases = match &value {
            Value::Object(obj) if obj.contains_key("inputs") || obj.contains_key("outputs") => {
                match obj.get("fn_name") {
                    None | Some(Value::Null) => io_lists(obj)?,
                    Some(Value::String(name)) => call_lists(gold, name)?,
                    Some(_) => return Err("`fn_name`: expected a string".into()),
                }
            }
            Value::Object(obj) if obj.contains_key("asserts") => {
                let setup = match obj.get("setup") {
                    None | Some(Value::Null) => String::new(),
                    Some(Value::String(s)) => s.clone(),
                    Some(_) => return Err("`setup`: expected a string".into()),
                };
                let Some(Value::Array(items)) = obj.get("asserts") else {
                    return Err("`asserts`: expected a list of strings".into());
                };
                asserts(items, &setup, "asserts")?
            }
            Value::Object(_) => return Err(format!("unknown test case format: {SHAPES}")),
            Value::Array(items) if items.first().is_some_and(Value::is_string) => {
                asserts(items, "", "")?
            }
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    let Value::Object(obj) = item else {
                        return Err(format!(
                            "[{i}]: expected an {{\"input\", \"output\"}} object ({SHAPES})"
                        ));
                    };
                    let field = |key: &str| {
                        obj.get(key)
                            .ok_or_else(|| format!("[{i}]: `{key}` is missing"))
                            .and_then(|v| stdio_text(v).map_err(|e| format!("[{i}].{key}: {e}")))
                    };
                    Ok(TestCase::Stdio {
                        input: field("input")?,
                        output: field("output")?,
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
            _ => return Err(SHAPES.to_string()),
        };
        if cases.is_empty() {
            return Err("no test cases".into());
        }
        Ok(TestSuite { cases })
    }
}

/// A stdin/stdout text: a string, a number's JSON text, or lines joined with `\n`.
fn stdio_text(v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Array(lines) => lines
            .iter()
            .map(|l| l.as_str().ok_or(()))
            .collect::<Result<Vec<_>, _>>()
            .map(|l| l.join("\n"))
            .map_err(|_| "expected a string or a list of strings".to_string()),
        _ => Err("expected a string or a list of strings".into()),
    }
}

fn io_lists(obj: &serde_json::Map<String, Value>) -> Result<Vec<TestCase>, String> {
    let list = |key: &str| match obj.get(key) {
        Some(Value::Array(items)) => Ok(items),
        Some(_) => Err(format!("`{key}`: expected a list")),
        None => Err(format!("`{key}` is missing")),
    };
    let (inputs, outputs) = (list("inputs")?, list("outputs")?);
    if inputs.len() != outputs.len() {
        return Err(format!(
            "{} inputs but {} outputs",
            inputs.len(),
            outputs.len()
        ));
    }
    inputs
        .iter()
        .zip(outputs)
        .enumerate()
        .map(|(i, (input, output))| {
            Ok(TestCase::Stdio {
                input: stdio_text(input).map_err(|e| format!("inputs[{i}]: {e}"))?,
                output: stdio_text(output).map_err(|e| format!("outputs[{i}]: {e}"))?,
            })
        })
        .collect()
}

/// Is `name` a Python identifier (ASCII)?
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The call-based cases, keeping every JSON value's original text.
fn call_lists(gold: &str, fn_name: &str) -> Result<Vec<TestCase>, String> {
    #[derive(Deserialize)]
    struct Raw<'a> {
        #[serde(borrow)]
        inputs: Vec<&'a RawValue>,
        #[serde(borrow)]
        outputs: Vec<&'a RawValue>,
    }
    if !is_identifier(fn_name) {
        return Err(format!("`fn_name`: {fn_name:?} is not a Python identifier"));
    }
    let raw: Raw<'_> = serde_json::from_str(gold)
        .map_err(|e| format!("call-based tests: expected lists `inputs` and `outputs`: {e}"))?;
    if raw.inputs.len() != raw.outputs.len() {
        return Err(format!(
            "{} inputs but {} outputs",
            raw.inputs.len(),
            raw.outputs.len()
        ));
    }
    let valid = |text: &str| serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok();
    let mut cases = Vec::with_capacity(raw.inputs.len());
    for (i, (input, output)) in raw.inputs.iter().zip(&raw.outputs).enumerate() {
        let input_text = input.get().trim();
        let (args, expected) = if input_text.starts_with('[') {
            // APPS / TACO: the arguments' array, the expected value itself.
            (input_text.to_string(), output.get().trim().to_string())
        } else if input_text.starts_with('"') {
            // LiveCodeBench: one argument's JSON per line; the output is JSON text.
            let lines: String =
                serde_json::from_str(input_text).map_err(|e| format!("inputs[{i}]: {e}"))?;
            let mut args = Vec::new();
            for (j, line) in lines.split('\n').enumerate() {
                let line = line.trim();
                if line.is_empty() {
                    continue;
                }
                if !valid(line) {
                    return Err(format!(
                        "inputs[{i}]: line {}: not a JSON value: {line:.80}",
                        j + 1
                    ));
                }
                args.push(line);
            }
            let expected: String = serde_json::from_str(output.get()).map_err(|_| {
                format!("outputs[{i}]: expected a string holding JSON text (the input is a string)")
            })?;
            let expected = expected.trim().to_string();
            if !valid(&expected) {
                return Err(format!("outputs[{i}]: not JSON text: {expected:.80}"));
            }
            (format!("[{}]", args.join(", ")), expected)
        } else {
            return Err(format!(
                "inputs[{i}]: expected a list of arguments or a string of JSON lines"
            ));
        };
        cases.push(TestCase::Call {
            fn_name: fn_name.to_string(),
            args,
            expected,
        });
    }
    Ok(cases)
}

fn asserts(items: &[Value], setup: &str, key: &str) -> Result<Vec<TestCase>, String> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::String(s) if !s.trim().is_empty() => Ok(TestCase::Assert {
                code: if setup.is_empty() {
                    s.clone()
                } else {
                    format!("{setup}\n{s}")
                },
            }),
            Value::String(_) => Err(format!("{key}[{i}]: an empty test")),
            _ => Err(format!("{key}[{i}]: expected a string of Python code")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(gold: &str) -> Vec<TestCase> {
        TestSuite::parse(gold).unwrap().cases
    }

    fn err(gold: &str) -> String {
        TestSuite::parse(gold).unwrap_err()
    }

    fn stdio(input: &str, output: &str) -> TestCase {
        TestCase::Stdio {
            input: input.into(),
            output: output.into(),
        }
    }

    #[test]
    fn apps_stdio() {
        let cases = parse(r#"{"inputs": ["1 2\n", ["3 4", "5"]], "outputs": ["3\n", 7]}"#);
        assert_eq!(cases, vec![stdio("1 2\n", "3\n"), stdio("3 4\n5", "7")]);
        let cases = parse(r#"{"inputs": ["x"], "outputs": ["y"], "fn_name": null, "extra": 1}"#);
        assert_eq!(cases, vec![stdio("x", "y")]);
    }

    #[test]
    fn input_output_objects() {
        let cases = parse(r#"[{"input": "2\n", "output": "4\n"}, {"input": "", "output": "0"}]"#);
        assert_eq!(cases, vec![stdio("2\n", "4\n"), stdio("", "0")]);
        assert!(err(r#"[{"input": "2"}]"#).contains("[0]: `output` is missing"));
        assert!(err(r#"[{"input": "2", "output": "4"}, 5]"#).contains("[1]"));
        assert!(err(r#"[{"input": {}, "output": "4"}]"#).contains("[0].input"));
    }

    #[test]
    fn call_based_apps_and_livecodebench() {
        let gold = r#"{"fn_name": "add", "inputs": [[1, 2], [123456789012345678901234567890, 1]],
                      "outputs": [[3], 123456789012345678901234567891]}"#;
        assert_eq!(
            parse(gold),
            vec![
                TestCase::Call {
                    fn_name: "add".into(),
                    args: "[1, 2]".into(),
                    expected: "[3]".into()
                },
                TestCase::Call {
                    fn_name: "add".into(),
                    args: "[123456789012345678901234567890, 1]".into(),
                    expected: "123456789012345678901234567891".into()
                }
            ]
        );
        let gold = r#"{"fn_name": "twoSum", "inputs": ["[2, 7, 11]\n9\n"], "outputs": ["[0, 1]"]}"#;
        assert_eq!(
            parse(gold),
            vec![TestCase::Call {
                fn_name: "twoSum".into(),
                args: "[[2, 7, 11], 9]".into(),
                expected: "[0, 1]".into()
            }]
        );
        assert!(
            err(r#"{"fn_name": "f(1)", "inputs": [[1]], "outputs": [1]}"#).contains("identifier")
        );
        assert!(
            err(r#"{"fn_name": "f", "inputs": [[1]], "outputs": []}"#).contains("1 inputs but 0")
        );
        assert!(
            err(r#"{"fn_name": "f", "inputs": ["{oops"], "outputs": ["1"]}"#).contains("line 1")
        );
        assert!(err(r#"{"fn_name": "f", "inputs": ["1"], "outputs": [1]}"#).contains("outputs[0]"));
        assert!(err(r#"{"fn_name": "f", "inputs": [5], "outputs": [1]}"#).contains("inputs[0]"));
        assert!(err(r#"{"fn_name": 3, "inputs": [[1]], "outputs": [1]}"#).contains("fn_name"));
    }

    #[test]
    fn asserts_both_shapes() {
        let a = |code: &str| TestCase::Assert { code: code.into() };
        assert_eq!(
            parse(r#"["assert f(1) == 2", "assert f(2) == 3"]"#),
            vec![a("assert f(1) == 2"), a("assert f(2) == 3")]
        );
        assert_eq!(
            parse(r#"{"asserts": ["assert g() == 1"], "setup": "import math"}"#),
            vec![a("import math\nassert g() == 1")]
        );
        assert!(err(r#"{"asserts": "assert x"}"#).contains("list of strings"));
        assert!(err(r#"["assert x", 3]"#).contains("[1]"));
        assert!(err(r#"{"asserts": ["  "]}"#).contains("empty"));
    }

    #[test]
    fn unusable_golds() {
        assert!(err("").contains("not valid JSON"));
        assert!(err("42").contains("expected"));
        assert!(err(r#""print(1)""#).contains("expected"));
        assert!(err("[]").contains("no test cases"));
        assert!(err(r#"{"inputs": [], "outputs": []}"#).contains("no test cases"));
        assert!(err(r#"{"inputs": ["1"], "outputs": ["1", "2"]}"#).contains("1 inputs but 2"));
        assert!(err(r#"{"inputs": ["1"]}"#).contains("`outputs` is missing"));
        assert!(err(r#"{"inputs": "1", "outputs": "1"}"#).contains("expected a list"));
        assert!(err(r#"{"tests": []}"#).contains("unknown test case format"));
        assert!(err(r#"{"inputs": [null], "outputs": ["1"]}"#).contains("inputs[0]"));
    }
}
