//! How a sandbox is set up: [`SandboxConfig`] and the [`Limits`] of every run.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Resource limits of one run. Every field has a default; a config names only what it changes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Wall-clock time from start to the last process gone (default 10 s). On expiry every
    /// process of the run is killed (SIGKILL) and the run ends as [`Status::TimedOut`](crate::Status::TimedOut).
    #[serde(with = "secs")]
    pub wall_time: Duration,
    /// CPU time of the program (RLIMIT_CPU, whole seconds, rounded up; default 10 s): a
    /// program past it ends as [`Status::CpuLimit`](crate::Status::CpuLimit).
    #[serde(with = "secs")]
    pub cpu_time: Duration,
    /// Address space of each process in bytes (RLIMIT_AS; default 1 GiB). Python raises
    /// `MemoryError` at the limit; the verifier reads that as a memory outcome.
    pub memory_bytes: u64,
    /// Bytes kept of stdout and of stderr each (default 1 MiB). A program that writes more is
    /// killed and ends as [`Status::OutputLimit`](crate::Status::OutputLimit); what it wrote up to the cap is kept.
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

/// How a [`Sandbox`](crate::Sandbox) is set up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// Limits of every run (a [`Program`](crate::Program) may tighten them).
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
