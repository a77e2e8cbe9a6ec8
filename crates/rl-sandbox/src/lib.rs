//! # rl-sandbox — running model-written code with limits, no network and nothing left behind
//!
//! A subprocess runner for untrusted programs (Python 3 first): the code verifier
//! (`rl-verifier`'s `code`) and the `python` tool of `rl-env` run model output only through it.
//! Burn-free and tensor-free: a trainer on any stack can depend on this crate alone.
//!
//! Each run gets a private working directory, its own user, network, PID, IPC and UTS
//! namespaces, Landlock filesystem (and, with a recent kernel, TCP and signal) isolation, a
//! seccomp filter against the host's Unix sockets, and wall-clock, CPU, memory, process,
//! file-size, fd and output limits; when [`Sandbox::run_python`] returns, no process and no file
//! of the run is left. [`Sandbox::new`] fails with [`SandboxError::Unavailable`] rather than run
//! anything with less; [`Sandbox::guarantees`] says what this machine gives.
//!
//! The public types below are the contract that `rl-verifier` and `rl-env` are written
//! against; `docs/sandbox.md` says what is guaranteed (and which test checks it), what is not,
//! and what a run costs. Linux on x86_64 and aarch64 only: elsewhere the crate compiles and
//! `Sandbox::new` returns `Unavailable`.

#![deny(missing_docs)]

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

mod error;
mod sandbox;
mod validate;

#[cfg(target_os = "linux")]
mod fds;
#[cfg(target_os = "linux")]
mod interp;
#[cfg(target_os = "linux")]
mod landlock;
#[cfg(target_os = "linux")]
mod report;
#[cfg(target_os = "linux")]
mod seccomp;
#[cfg(target_os = "linux")]
mod slots;
#[cfg(target_os = "linux")]
mod spawn;
#[cfg(target_os = "linux")]
mod supervise;
#[cfg(target_os = "linux")]
mod sys;
#[cfg(target_os = "linux")]
mod workdir;

pub use error::SandboxError;
#[cfg(target_os = "linux")]
pub(crate) use error::io_err;
pub use sandbox::{Guarantees, Sandbox};

/// Resource limits of one run. Every field has a default; a config names only what it changes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Wall-clock time from start to the last process gone (default 10 s). On expiry every
    /// process of the run is killed (SIGKILL) and the run ends as [`Status::TimedOut`].
    #[serde(with = "secs")]
    pub wall_time: Duration,
    /// CPU time of the program (RLIMIT_CPU, whole seconds, rounded up; default 10 s): a
    /// program past it ends as [`Status::CpuLimit`].
    #[serde(with = "secs")]
    pub cpu_time: Duration,
    /// Address space of each process in bytes (RLIMIT_AS; default 1 GiB). Python raises
    /// `MemoryError` at the limit; the verifier reads that as a memory outcome.
    pub memory_bytes: u64,
    /// Bytes kept of stdout and of stderr each (default 1 MiB). A program that writes more is
    /// killed and ends as [`Status::OutputLimit`]; what it wrote up to the cap is kept.
    pub output_bytes: usize,
    /// Processes (and threads) the run may have at once, the first included (RLIMIT_NPROC under
    /// the run's own user id; default 32): a fork bomb stops there.
    pub max_processes: u32,
    /// Largest file the program may write, in bytes (RLIMIT_FSIZE; default 16 MiB).
    pub max_file_bytes: u64,
    /// Open file descriptors per process (RLIMIT_NOFILE; default 64).
    pub max_open_files: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            wall_time: Duration::from_secs(10),
            cpu_time: Duration::from_secs(10),
            memory_bytes: 1 << 30,
            output_bytes: 1 << 20,
            max_processes: 32,
            max_file_bytes: 16 << 20,
            max_open_files: 64,
        }
    }
}

/// Durations as seconds (a float) in configs: `wall_time = 2.5`.
mod secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let v = f64::deserialize(d)?;
        Duration::try_from_secs_f64(v).map_err(|_| {
            serde::de::Error::custom(format!("{v}: expected a finite number of seconds >= 0"))
        })
    }
}

/// How a [`Sandbox`] is set up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// Limits of every run (a [`Program`] may tighten them).
    pub limits: Limits,
    /// Runs at once, at most (default 2); further calls wait for a free slot.
    pub concurrency: usize,
    /// The Python 3 interpreter (default: `/usr/bin/python3` when it exists, else `python3`
    /// on `PATH`). It must be readable and executable by the sandbox's user id.
    pub python: Option<PathBuf>,
    /// Where each run's private working directory is created and removed (default: the
    /// system temporary directory).
    pub work_root: Option<PathBuf>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            limits: Limits::default(),
            concurrency: 2,
            python: None,
            work_root: None,
        }
    }
}

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
