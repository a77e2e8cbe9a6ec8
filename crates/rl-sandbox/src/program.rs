//! What a run is given ([`Program`]) and what it gives back ([`Run`], [`Status`]).

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::Limits;

/// One program to run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Program {
    /// The Python source, written to `main.py` in the run's working directory and run as
    /// `python3 main.py ARGS…` there.
    pub source: String,
    /// Bytes on the program's standard input (then end of file).
    pub stdin: Vec<u8>,
    /// Further files written into the working directory before the run: (relative name, bytes).
    pub files: Vec<(String, Vec<u8>)>,
    /// Command-line arguments after `main.py`.
    pub args: Vec<String>,
    /// Limits for this run instead of the sandbox's (each field at most the sandbox's own is
    /// not enforced: the caller chooses).
    pub limits: Option<Limits>,
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Status {
    /// The program exited with this code.
    Exited {
        /// The exit code.
        code: i32,
    },
    /// The program was ended by this signal (not one of the sandbox's own kills below).
    Signaled {
        /// The signal number.
        signal: i32,
    },
    /// The wall-clock limit passed; every process was killed.
    TimedOut,
    /// The CPU-time limit passed.
    CpuLimit,
    /// The program wrote more than `output_bytes` on stdout or stderr; it was killed.
    OutputLimit,
}

impl Status {
    /// Exit code 0.
    pub fn success(&self) -> bool {
        matches!(self, Status::Exited { code: 0 })
    }
}

/// What a run produced.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    /// How it ended.
    pub status: Status,
    /// Standard output, at most `output_bytes`.
    pub stdout: Vec<u8>,
    /// Standard error, at most `output_bytes`.
    pub stderr: Vec<u8>,
    /// Wall-clock time from start until every process of the run was gone.
    pub wall: Duration,
    /// CPU time (user + system) of the run's processes that were waited for.
    pub cpu: Duration,
    /// The private working directory the run used (removed before `run_python` returned).
    pub work_dir: PathBuf,
}

impl Run {
    /// stdout as text (invalid UTF-8 replaced).
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// stderr as text (invalid UTF-8 replaced).
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}
