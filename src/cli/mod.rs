//! The `rlvr` command line. Each subcommand is a module with a `clap::Args` struct and a
//! `run(args, io) -> i32` function (the process exit code), so that tests can drive it with
//! in-memory input and output.
//!
//! Exit codes: 0 success, 1 runtime failure, 2 bad input or bad arguments.

use std::io::{BufRead, Write};

pub mod advantages;
pub mod compare;
pub mod eval;
pub mod export_demo;
pub mod export_gguf;
pub mod export_hf;
pub mod generate;
pub mod mix;
pub mod orchestrator;
pub mod score;
pub mod study;
pub mod theory;
pub mod train;
pub mod train_rm;
pub mod verify;

/// Exit code for success.
pub const EXIT_OK: i32 = 0;
/// Exit code for a runtime failure (I/O, model, training).
pub const EXIT_FAILURE: i32 = 1;
/// Exit code for bad input lines or bad arguments.
pub const EXIT_BAD_INPUT: i32 = 2;

/// The streams a subcommand reads and writes.
pub struct Io<'a> {
    /// Standard input (JSON lines for the streaming commands).
    pub stdin: &'a mut dyn BufRead,
    /// Standard output (results, one JSON object per line).
    pub stdout: &'a mut dyn Write,
    /// Standard error (diagnostics naming the input line).
    pub stderr: &'a mut dyn Write,
}

/// The exit code of a backend job that trains and reports (`compare`, `study`): 0 on success,
/// 1 when it fails, 2 when the backend asked for is not compiled in; errors go to stderr.
pub fn job_exit(
    result: Result<Result<(), rl_trainer::TrainerError>, crate::backend::BackendNotCompiled>,
    io: &mut Io<'_>,
) -> i32 {
    match result {
        Ok(Ok(())) => EXIT_OK,
        Ok(Err(e)) => {
            let _ = writeln!(io.stderr, "error: {e}");
            EXIT_FAILURE
        }
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            EXIT_BAD_INPUT
        }
    }
}

/// Runs a command on `input` as standard input; returns its exit code, stdout and stderr (tests).
#[cfg(test)]
pub(crate) fn run_captured(
    input: &str,
    cmd: impl FnOnce(&mut Io<'_>) -> i32,
) -> (i32, String, String) {
    let mut stdin = input.as_bytes();
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let code = cmd(&mut Io {
        stdin: &mut stdin,
        stdout: &mut stdout,
        stderr: &mut stderr,
    });
    (
        code,
        String::from_utf8(stdout).expect("utf-8 stdout"),
        String::from_utf8(stderr).expect("utf-8 stderr"),
    )
}

/// Why one input line was rejected.
#[derive(Debug, Clone, PartialEq)]
pub struct LineError {
    /// The offending field, if the line parsed as JSON.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl LineError {
    /// An error about `field`.
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: Some(field.into()),
            message: message.into(),
        }
    }
}

/// Drives a JSON-lines filter: each non-blank input line is parsed as JSON and handed to
/// `handle`, whose output object is written as one line. A line that fails (bad JSON, or an
/// error from `handle`) gets a diagnostic on stderr naming the line number and field; nothing
/// is written to stdout for it and processing continues. Returns [`EXIT_BAD_INPUT`] if any line
/// failed, [`EXIT_FAILURE`] on an I/O error, [`EXIT_OK`] otherwise.
pub fn json_lines(
    io: &mut Io<'_>,
    mut handle: impl FnMut(serde_json::Value) -> Result<serde_json::Value, LineError>,
) -> i32 {
    let mut failed = 0usize;
    let mut line = String::new();
    let mut line_no = 0usize;
    loop {
        line.clear();
        match io.stdin.read_line(&mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                let _ = writeln!(io.stderr, "error: reading line {}: {e}", line_no + 1);
                return EXIT_FAILURE;
            }
        }
        line_no += 1;
        if line.trim().is_empty() {
            continue;
        }
        let result = serde_json::from_str::<serde_json::Value>(&line)
            .map_err(|e| LineError {
                field: None,
                message: format!("invalid JSON: {e}"),
            })
            .and_then(&mut handle);
        match result {
            Ok(out) => {
                if writeln!(io.stdout, "{out}").is_err() {
                    return EXIT_FAILURE;
                }
            }
            Err(e) => {
                failed += 1;
                let _ = match &e.field {
                    Some(f) => writeln!(
                        io.stderr,
                        "error: line {line_no}: field `{f}`: {}",
                        e.message
                    ),
                    None => writeln!(io.stderr, "error: line {line_no}: {}", e.message),
                };
            }
        }
    }
    if failed > 0 {
        let _ = writeln!(io.stderr, "{failed} of {line_no} lines rejected");
        EXIT_BAD_INPUT
    } else {
        EXIT_OK
    }
}
