//! The report pipe: fixed-size records that the sandbox's own processes (A, the namespace
//! creator; B, the namespace's init; C, the program before `execve`) send to the caller. A record
//! is 16 bytes, below `PIPE_BUF`, so each write is atomic and records never interleave.

/// One record. `kind` says which of the fields mean what.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Record {
    pub kind: i32,
    pub a: i32,
    pub b: i64,
}

/// Size of a [`Record`] on the pipe.
pub(crate) const RECORD_LEN: usize = std::mem::size_of::<Record>();

/// A has created its namespaces and waits for the caller to write its uid and gid maps.
pub(crate) const READY: i32 = 1;
/// A started B; `b` is B's pid as the caller sees it.
pub(crate) const INIT_PID: i32 = 2;
/// B reaped C: `a` is C's raw wait status, `b` C's CPU time (user + system) in microseconds.
pub(crate) const PROGRAM_STATUS: i32 = 3;
/// A setup step failed: `a` is the [`Stage`], `b` the errno.
pub(crate) const FAILED: i32 = 4;

impl Record {
    /// The record as bytes (for `write`).
    pub(crate) fn to_bytes(self) -> [u8; RECORD_LEN] {
        let mut out = [0u8; RECORD_LEN];
        out[0..4].copy_from_slice(&self.kind.to_ne_bytes());
        out[4..8].copy_from_slice(&self.a.to_ne_bytes());
        out[8..16].copy_from_slice(&self.b.to_ne_bytes());
        out
    }

    /// A record from exactly [`RECORD_LEN`] bytes.
    pub(crate) fn from_bytes(bytes: &[u8; RECORD_LEN]) -> Record {
        let mut k = [0u8; 4];
        let mut a = [0u8; 4];
        let mut b = [0u8; 8];
        k.copy_from_slice(&bytes[0..4]);
        a.copy_from_slice(&bytes[4..8]);
        b.copy_from_slice(&bytes[8..16]);
        Record {
            kind: i32::from_ne_bytes(k),
            a: i32::from_ne_bytes(a),
            b: i64::from_ne_bytes(b),
        }
    }
}

/// The setup step of a sandbox process that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub(crate) enum Stage {
    /// A: `setgroups(0, NULL)` (dropping root's supplementary groups).
    SetGroups = 1,
    /// A: `unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS)`.
    Unshare = 2,
    /// A: the pipe that tells B whether A is still alive.
    LifePipe = 3,
    /// A: starting B (clone).
    ForkInit = 4,
    /// B: `setresgid(1000)` inside the user namespace.
    SetResGid = 5,
    /// B: `setresuid(1000)` inside the user namespace.
    SetResUid = 6,
    /// B: starting C (clone).
    ForkProgram = 7,
    /// B: waiting for its children.
    Reap = 8,
    /// C: `dup2` of the standard streams.
    Stdio = 9,
    /// C: `setrlimit`.
    Rlimit = 10,
    /// C: `chdir` into the working directory.
    Chdir = 11,
    /// C: `prctl(PR_SET_NO_NEW_PRIVS)`.
    NoNewPrivs = 12,
    /// C: `landlock_restrict_self`.
    Landlock = 13,
    /// C: `execve` of the interpreter.
    Exec = 14,
    /// C: installing the seccomp filter.
    Seccomp = 15,
}

impl Stage {
    /// The stage from its number on the pipe.
    pub(crate) fn from_i32(v: i32) -> Option<Stage> {
        use Stage::*;
        Some(match v {
            1 => SetGroups,
            2 => Unshare,
            3 => LifePipe,
            4 => ForkInit,
            5 => SetResGid,
            6 => SetResUid,
            7 => ForkProgram,
            8 => Reap,
            9 => Stdio,
            10 => Rlimit,
            11 => Chdir,
            12 => NoNewPrivs,
            13 => Landlock,
            14 => Exec,
            15 => Seccomp,
            _ => return None,
        })
    }

    /// What the step does, for error messages.
    pub(crate) fn describe(self) -> &'static str {
        use Stage::*;
        match self {
            SetGroups => "dropping supplementary groups (setgroups)",
            Unshare => "creating the user, network, PID, IPC and UTS namespaces (unshare)",
            LifePipe => "creating a pipe in the namespace creator",
            ForkInit => "starting the namespace's init process (clone)",
            SetResGid => "switching to gid 1000 inside the user namespace (setresgid)",
            SetResUid => "switching to uid 1000 inside the user namespace (setresuid)",
            ForkProgram => "starting the program's process (clone)",
            Reap => "waiting for the program (waitpid in the namespace's init)",
            Stdio => "connecting the program's standard streams (dup2)",
            Rlimit => "setting resource limits (setrlimit)",
            Chdir => "entering the working directory (chdir)",
            NoNewPrivs => "setting no_new_privs (prctl)",
            Landlock => "applying the Landlock ruleset (landlock_restrict_self)",
            Exec => "executing the interpreter (execve)",
            Seccomp => "installing the seccomp filter (prctl PR_SET_SECCOMP)",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_bytes() {
        let r = Record {
            kind: PROGRAM_STATUS,
            a: -7,
            b: 1 << 40,
        };
        assert_eq!(Record::from_bytes(&r.to_bytes()), r);
        assert_eq!(RECORD_LEN, 16);
    }

    #[test]
    fn every_stage_round_trips() {
        for v in 1..=15 {
            let s = Stage::from_i32(v).unwrap();
            assert_eq!(s as i32, v);
            assert!(!s.describe().is_empty());
        }
        assert_eq!(Stage::from_i32(0), None);
        assert_eq!(Stage::from_i32(16), None);
    }
}
