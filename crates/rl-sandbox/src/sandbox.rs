//! The pool: checks the machine once, then runs programs in at most `concurrency` slots.

use std::path::PathBuf;

use serde::Serialize;

use crate::config::SandboxConfig;
use crate::error::SandboxError;
use crate::program::{Program, Run};

/// What a [`Sandbox`] enforces on this machine, as measured by [`Sandbox::new`] (for logs and
/// run metadata: `serde_json::to_string(sandbox.guarantees())`). See `docs/sandbox.md`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Guarantees {
    /// The kernel's Landlock ABI version (1 or more; a sandbox is never built without one).
    pub landlock_abi: u32,
    /// Landlock also denies every TCP bind and connect (ABI 4 and later), on top of the empty
    /// network namespace.
    pub landlock_tcp: bool,
    /// Landlock scopes signals and abstract Unix sockets to the run (ABI 6 and later), on top
    /// of the PID and network namespaces.
    pub landlock_scopes: bool,
    /// A seccomp filter denies creating Unix sockets that could reach the host's pathname
    /// sockets (`socket(AF_UNIX)`, datagram `socketpair`) and io_uring (x86_64 and aarch64).
    pub unix_sockets_blocked: bool,
    /// The namespaces every run gets of its own.
    pub namespaces: Vec<&'static str>,
    /// Each concurrency slot runs under a user id of its own, claimed machine-wide (the caller
    /// is root); otherwise every run uses the caller's own uid.
    pub dedicated_uids: bool,
    /// The user ids the runs have outside their user namespace (inside, every run is 1000).
    pub run_uids: Vec<u32>,
    /// The interpreter every run executes.
    pub python: PathBuf,
    /// Its version, `major.minor.micro`.
    pub python_version: String,
    /// Paths a program may read (and execute, for directories of code) beneath, besides its
    /// working directory (everything) and `/dev/null` (read and write).
    pub readable: Vec<PathBuf>,
    /// Where the working directories are created.
    pub work_root: PathBuf,
}

/// A pool of at most `concurrency` simultaneous runs. `Send + Sync`: share it between threads
/// (behind an `Arc`); [`Sandbox::run_python`] blocks until a slot is free.
pub struct Sandbox {
    config: SandboxConfig,
    guarantees: Guarantees,
    #[cfg(target_os = "linux")]
    inner: linux::Inner,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("config", &self.config)
            .field("guarantees", &self.guarantees)
            .field("in_flight", &self.in_flight())
            .finish()
    }
}

impl Sandbox {
    /// Checks that every guarantee can be given on this machine (Landlock, namespaces, the
    /// interpreter) and returns the pool; otherwise [`SandboxError::Unavailable`] naming what
    /// is missing. A bad setting is [`SandboxError::Config`] naming the field.
    ///
    /// Besides the checks, it asks the interpreter (unsandboxed, once) for its prefixes, and
    /// runs one probe program end to end in the sandbox, so that an interpreter or working
    /// root the sandbox's user cannot reach fails here, not at the first run.
    pub fn new(config: SandboxConfig) -> Result<Self, SandboxError> {
        crate::validate::config(&config)?;
        #[cfg(target_os = "linux")]
        {
            linux::new(config)
        }
        #[cfg(not(target_os = "linux"))]
        {
            Err(SandboxError::Unavailable {
                what: "process isolation",
                why: format!(
                    "rl-sandbox needs Linux (user, network and PID namespaces, Landlock); this \
                     is {}",
                    std::env::consts::OS
                ),
            })
        }
    }

    /// The configuration.
    pub fn config(&self) -> &SandboxConfig {
        &self.config
    }

    /// What this sandbox enforces here (Landlock ABI and features, user ids, interpreter).
    pub fn guarantees(&self) -> &Guarantees {
        &self.guarantees
    }

    /// Runs in progress now (at most `concurrency`; the probe run of [`Sandbox::new`] is not
    /// counted once `new` returned).
    pub fn in_flight(&self) -> usize {
        #[cfg(target_os = "linux")]
        {
            self.inner.slots.in_flight()
        }
        #[cfg(not(target_os = "linux"))]
        {
            0
        }
    }

    /// Runs `program` with Python 3 in a fresh private working directory and returns how it
    /// ended. Blocks for a free slot, then at most the wall-clock limit plus the cleanup.
    ///
    /// Whatever the program does is a [`crate::Status`]; an error means the sandbox itself
    /// failed (or, for [`SandboxError::Config`], that `program` names a file outside its
    /// working directory, has NUL bytes in an argument, or carries invalid limits).
    pub fn run_python(&self, program: &Program) -> Result<Run, SandboxError> {
        let limits = program.limits.as_ref().unwrap_or(&self.config.limits);
        crate::validate::limits(limits)?;
        #[cfg(target_os = "linux")]
        {
            crate::workdir::check_names(program)?;
            let slot = self.inner.slots.acquire();
            linux::run(&self.inner, slot.slot(), program, limits)
                .map_err(|f| linux::failure_to_error(&self.inner, f))
        }
        #[cfg(not(target_os = "linux"))]
        {
            Err(SandboxError::Unavailable {
                what: "process isolation",
                why: "rl-sandbox needs Linux".into(),
            })
        }
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    use super::{Guarantees, Sandbox};
    use crate::landlock::{Grant, Handled, Rules};
    use crate::report::Stage;
    use crate::slots::{Slot, Slots};
    use crate::supervise::{self, Failure, Setup};
    use crate::{Limits, Program, Run, SandboxConfig, SandboxError};

    /// The Linux state of a [`Sandbox`].
    pub(super) struct Inner {
        pub python: PathBuf,
        pub work_root: PathBuf,
        pub rules: Rules,
        pub slots: Slots,
    }

    /// What the probe run prints.
    const PROBE: &str = "rlvr-sandbox-probe";

    pub(super) fn new(config: SandboxConfig) -> Result<Sandbox, SandboxError> {
        if !crate::sys::SUPPORTED {
            return Err(SandboxError::Unavailable {
                what: "process isolation",
                why: format!(
                    "rl-sandbox starts its processes with system-call stubs for x86_64 and \
                     aarch64 only; this is {}",
                    std::env::consts::ARCH
                ),
            });
        }
        let abi = crate::landlock::abi()?;
        let python = crate::interp::resolve(config.python.as_deref())?;
        let interp = crate::interp::query(&python)?;
        let root = config.work_root.clone().unwrap_or_else(std::env::temp_dir);
        let work_root = std::fs::canonicalize(&root)
            .map_err(|e| crate::io_err(format!("work_root {}", root.display()), e))?;
        if !work_root.is_dir() {
            return Err(SandboxError::Config {
                field: "work_root",
                value: format!("{:?}", root.display().to_string()),
                expected: "an existing directory every user can traverse (default: the system \
                           temporary directory)",
            });
        }

        let mut paths: Vec<(PathBuf, Grant)> = Vec::new();
        let mut add = |p: PathBuf, g: Grant| {
            if p.exists() && !paths.iter().any(|(q, _)| *q == p) {
                paths.push((p, g));
            }
        };
        for d in ["/usr", "/lib", "/lib64", "/bin", "/sbin"] {
            add(PathBuf::from(d), Grant::ReadExecute);
        }
        for f in ["/etc/ld.so.cache", "/etc/localtime"] {
            add(PathBuf::from(f), Grant::Read);
        }
        for d in &interp.dirs {
            add(d.clone(), Grant::ReadExecute);
        }
        for f in &interp.files {
            add(f.clone(), Grant::Read);
        }
        add(PathBuf::from("/dev/null"), Grant::ReadWrite);
        for f in ["/dev/zero", "/dev/urandom"] {
            add(PathBuf::from(f), Grant::Read);
        }
        let handled = Handled::for_abi(abi);
        let rules = Rules { handled, paths };

        let slots = Slots::new(config.concurrency, &crate::slots::lock_dir(&work_root))?;
        let run_uids = slots.uids();
        // SAFETY: a plain getter.
        let dedicated = unsafe { libc::geteuid() } == 0;
        let guarantees = Guarantees {
            landlock_abi: abi,
            landlock_tcp: handled.net != 0,
            landlock_scopes: handled.scoped != 0,
            unix_sockets_blocked: crate::seccomp::AVAILABLE,
            namespaces: vec!["user", "network", "pid", "ipc", "uts"],
            dedicated_uids: dedicated,
            run_uids,
            python: python.clone(),
            python_version: interp.version.clone(),
            readable: rules
                .paths
                .iter()
                .filter(|(p, _)| p != Path::new("/dev/null"))
                .map(|(p, _)| p.clone())
                .collect(),
            work_root: work_root.clone(),
        };
        let sandbox = Sandbox {
            config,
            guarantees,
            inner: Inner {
                python,
                work_root,
                rules,
                slots,
            },
        };
        probe(&sandbox)?;
        Ok(sandbox)
    }

    /// One run of `print(PROBE)` end to end, with room for a loaded machine.
    fn probe(s: &Sandbox) -> Result<(), SandboxError> {
        let base = &s.config.limits;
        let limits = Limits {
            wall_time: base.wall_time.max(Duration::from_secs(30)),
            cpu_time: base.cpu_time.max(Duration::from_secs(10)),
            output_bytes: base.output_bytes.max(4096),
            ..base.clone()
        };
        let program = Program {
            source: format!("print({PROBE:?})\n"),
            ..Program::default()
        };
        let inner = &s.inner;
        let slot = inner.slots.acquire();
        let uid = slot.slot().uid;
        let python = inner.python.display().to_string();
        let hint = "an interpreter under a directory other users cannot enter (pyenv under \
                    /root is one) cannot run in the sandbox: set `python = \"/usr/bin/python3\"` \
                    (or another interpreter every user can read and execute)";
        match run(inner, slot.slot(), &program, &limits) {
            Ok(r) if r.status.success() && r.stdout_text().trim() == PROBE => Ok(()),
            Ok(r) => Err(SandboxError::Unavailable {
                what: "the Python interpreter",
                why: format!(
                    "a probe run of {python} as uid {uid} ended {:?}, stdout {:?}, stderr {:?}; \
                     {hint}",
                    r.status,
                    r.stdout_text(),
                    r.stderr_text()
                ),
            }),
            Err(Failure::Child(Stage::Exec, errno)) => Err(SandboxError::Unavailable {
                what: "the Python interpreter",
                why: format!(
                    "the sandbox's user (uid {uid}) cannot execute {python}: {}; {hint}",
                    std::io::Error::from_raw_os_error(errno)
                ),
            }),
            Err(Failure::Child(Stage::Chdir, errno)) => Err(SandboxError::Unavailable {
                what: "the working directory",
                why: format!(
                    "the sandbox's user (uid {uid}) cannot enter a directory in {}: {}; set \
                     `work_root` to a directory every user can traverse (e.g. \"/tmp\")",
                    inner.work_root.display(),
                    std::io::Error::from_raw_os_error(errno)
                ),
            }),
            Err(Failure::Child(stage, errno)) => Err(SandboxError::Unavailable {
                what: match stage {
                    Stage::Unshare | Stage::SetResUid | Stage::SetResGid => "namespaces",
                    Stage::Landlock | Stage::NoNewPrivs => "Landlock filesystem isolation",
                    Stage::Seccomp => "the seccomp filter",
                    _ => "the sandbox's processes",
                },
                why: format!(
                    "{} failed: {}",
                    stage.describe(),
                    std::io::Error::from_raw_os_error(errno)
                ),
            }),
            Err(Failure::Sandbox(e)) => Err(e),
        }
    }

    pub(super) fn run(
        inner: &Inner,
        slot: &Slot,
        program: &Program,
        limits: &Limits,
    ) -> Result<Run, Failure> {
        let setup = Setup {
            python: &inner.python,
            work_root: &inner.work_root,
            rules: &inner.rules,
        };
        supervise::run(&setup, slot, program, limits)
    }

    pub(super) fn failure_to_error(inner: &Inner, f: Failure) -> SandboxError {
        match f {
            Failure::Sandbox(e) => e,
            Failure::Child(Stage::Exec, errno) => SandboxError::Io {
                what: format!("executing {} in the sandbox", inner.python.display()),
                source: std::io::Error::from_raw_os_error(errno),
            },
            Failure::Child(stage, errno) => SandboxError::Io {
                what: format!("sandbox set-up: {}", stage.describe()),
                source: std::io::Error::from_raw_os_error(errno),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandbox_is_send_and_sync() {
        fn both<T: Send + Sync>() {}
        both::<Sandbox>();
    }
}
