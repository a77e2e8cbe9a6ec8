//! The sandbox's own processes, between the caller and the program's `execve`:
//!
//! * **A** (child of the caller): parent-death signal, default signal handlers, closes every fd
//!   it does not need, drops root's supplementary groups, `unshare`s user, network, PID, IPC
//!   and UTS namespaces, waits for the caller to write its uid/gid maps, starts B, reports B's
//!   pid, waits for B.
//! * **B** (pid 1 of the new PID namespace, a tiny init): becomes uid/gid 1000 inside the user
//!   namespace (the run's outside uid), starts C, reaps every child until C's status arrives,
//!   reports it and exits — and the kernel then kills everything left in the namespace.
//! * **C**: standard streams, resource limits, working directory, `no_new_privs`, Landlock, the
//!   seccomp filter, no other fd, clean environment, `execve(python3 -B -s main.py ARGS…)`.
//!
//! A and B are `clone(CLONE_VM)` children and C a `clone(CLONE_VM | CLONE_VFORK)` child: they
//! run on small stacks of their own inside the caller's memory, so starting a run does not copy
//! the page tables of a large caller (a trainer with 4 GiB resident took 370 ms per run with
//! `fork`, measured). The price is discipline: between the caller's `clone` and C's `execve`
//! only raw system calls ([`crate::sys`]) run, on memory prepared before ([`Plan`]), with no
//! allocation, no locks, no libc (whose `errno` is the caller's thread's), and no panics. The
//! caller frees that memory only once A and B are known to be gone (see `supervise.rs`).

use std::ffi::{CString, c_char, c_int, c_void};
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};

use crate::config::Limits;
use crate::error::SandboxError;
use crate::report::{self, Record, Stage};
use crate::sys::{self, call1, call2, call3, call4};

/// The uid and gid of the program inside its user namespace.
pub(crate) const INSIDE_ID: u32 = 1000;

/// Exit code of A after it reaped B.
pub(crate) const A_REAPED_INIT: i32 = 0;
/// Exit code of A when it failed or stopped before starting B.
pub(crate) const A_NO_INIT: i32 = 1;

/// Everything the children need, prepared by the caller before it clones A. Boxed: its address
/// is fixed for as long as the children may use it.
pub(crate) struct Plan {
    /// The caller's pid (A checks it is still its parent).
    parent_pid: libc::pid_t,
    /// The caller is root: A drops supplementary groups.
    drop_groups: bool,
    /// The caller's dumpable flag (0 or 1), restored by B after its uid change (which resets
    /// the flag of the memory it shares with the caller); -1: leave it.
    dumpable: c_int,
    /// The fds A keeps (the six below, sorted).
    keep_a: [c_int; 6],
    stdin_r: c_int,
    stdout_w: c_int,
    stderr_w: c_int,
    report_w: c_int,
    ack_r: c_int,
    ruleset: c_int,
    /// The pipe that tells B whether A still lives (written by A before B starts).
    life_r: AtomicI32,
    life_w: AtomicI32,
    /// (resource, soft, hard) for `prlimit64`.
    rlimits: [(c_int, u64, u64); 6],
    workdir: CString,
    python: CString,
    oom_path: CString,
    _argv: Vec<CString>,
    argv: Vec<*const c_char>,
    _envp: Vec<CString>,
    envp: Vec<*const c_char>,
    /// The seccomp filter (see `seccomp.rs`).
    seccomp: [libc::sock_filter; crate::seccomp::LEN],
    stacks: Stacks,
}

/// The fds the children use, all at 3 or above.
pub(crate) struct ChildFds {
    pub stdin_r: c_int,
    pub stdout_w: c_int,
    pub stderr_w: c_int,
    pub report_w: c_int,
    pub ack_r: c_int,
    pub ruleset: c_int,
}

/// `struct rlimit64` of `prlimit64`.
#[repr(C)]
struct Rlimit64 {
    cur: u64,
    max: u64,
}

/// Bytes of each child's stack (plus one guard page below it).
const STACK: usize = 256 * 1024;
const GUARD: usize = 4096;

/// Three stacks (A, B, C) in one mapping, each above a guard page.
struct Stacks {
    base: *mut u8,
    len: usize,
}

impl Stacks {
    fn new() -> io::Result<Stacks> {
        let len = 3 * (GUARD + STACK);
        // SAFETY: a fresh anonymous mapping.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stacks = Stacks {
            base: base.cast(),
            len,
        };
        for i in 0..3 {
            // SAFETY: inside the mapping.
            let guard = unsafe { stacks.base.add(i * (GUARD + STACK)) };
            if unsafe { libc::mprotect(guard.cast(), GUARD, libc::PROT_NONE) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(stacks)
    }

    /// The top of stack `i` (0: A, 1: B, 2: C).
    fn top(&self, i: usize) -> *mut u8 {
        // SAFETY: one past the end of stack i, inside (or at the end of) the mapping.
        unsafe { self.base.add((i + 1) * (GUARD + STACK)) }
    }
}

impl Drop for Stacks {
    fn drop(&mut self) {
        // SAFETY: our mapping, no longer used by any child (see `supervise.rs`).
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

fn cstring(field: &'static str, s: &[u8]) -> Result<CString, SandboxError> {
    CString::new(s).map_err(|_| SandboxError::Config {
        field,
        value: format!("{:?}", String::from_utf8_lossy(s)),
        expected: "text without NUL bytes",
    })
}

/// The hard limit of `resource` in the caller (a child without CAP_SYS_RESOURCE cannot raise a
/// limit above it, so requested limits are clamped to it).
fn hard_limit(resource: c_int) -> u64 {
    let mut cur = Rlimit64 { cur: 0, max: 0 };
    // SAFETY: reads the caller's own limit into cur.
    let r = unsafe {
        libc::syscall(
            libc::SYS_prlimit64,
            0,
            resource,
            std::ptr::null::<Rlimit64>(),
            &mut cur as *mut Rlimit64,
        )
    };
    if r == 0 { cur.max } else { u64::MAX }
}

/// `RLIMIT_CPU`'s soft limit: whole seconds, rounded up, at least 1.
pub(crate) fn cpu_seconds(limits: &Limits) -> u64 {
    let d = limits.cpu_time;
    let s = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    s.max(1)
}

impl Plan {
    /// Prepares a run of `python -B -s main.py ARGS…` in `workdir`.
    pub(crate) fn new(
        python: &Path,
        workdir: &Path,
        args: &[String],
        limits: &Limits,
        fds: ChildFds,
    ) -> Result<Box<Plan>, SandboxError> {
        let python_c = cstring("python", python.as_os_str().as_encoded_bytes())?;
        let workdir_bytes = workdir.as_os_str().as_encoded_bytes();
        let workdir_c = cstring("work_root", workdir_bytes)?;
        let mut argv_store = Vec::with_capacity(4 + args.len());
        for a in ["python3", "-B", "-s", "main.py"] {
            argv_store.push(cstring("python", a.as_bytes())?);
        }
        for a in args {
            argv_store.push(cstring("args", a.as_bytes())?);
        }
        let mut env_store = vec![cstring("env", b"PATH=/usr/local/bin:/usr/bin:/bin")?];
        for var in ["HOME=", "TMPDIR="] {
            let mut v = var.as_bytes().to_vec();
            v.extend_from_slice(workdir_bytes);
            env_store.push(cstring("work_root", &v)?);
        }
        for v in [
            "LANG=C.UTF-8",
            "PYTHONHASHSEED=0",
            "PYTHONIOENCODING=utf-8",
            "PYTHONDONTWRITEBYTECODE=1",
            // glibc reserves 64 MiB of address space per thread arena: with its default of 8
            // arenas per core, an RLIMIT_AS of 1 GiB allowed 14 threads (measured); with 2
            // arenas, a thread costs its stack.
            "MALLOC_ARENA_MAX=2",
        ] {
            env_store.push(cstring("env", v.as_bytes())?);
        }
        let argv: Vec<*const c_char> = argv_store
            .iter()
            .map(|c| c.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect();
        let envp: Vec<*const c_char> = env_store
            .iter()
            .map(|c| c.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect();

        // SAFETY: plain getters.
        let (pid, euid, dumpable) = unsafe {
            (
                libc::getpid(),
                libc::geteuid(),
                libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0),
            )
        };
        let cpu = cpu_seconds(limits);
        // RLIMIT_NPROC counts the tasks of the program's uid in its user namespace: B (the
        // namespace's init) always, and A too when the caller is not root (A, in the namespace
        // since its unshare, keeps the caller's uid, which is the program's).
        let ours = if euid == 0 { 1 } else { 2 };
        let nproc = u64::from(limits.max_processes) + ours;
        let nofile = u64::from(limits.max_open_files);
        let wanted: [(c_int, u64, u64); 6] = [
            (libc::RLIMIT_CPU as c_int, cpu, cpu + 1),
            (
                libc::RLIMIT_AS as c_int,
                limits.memory_bytes,
                limits.memory_bytes,
            ),
            (libc::RLIMIT_NPROC as c_int, nproc, nproc),
            (
                libc::RLIMIT_FSIZE as c_int,
                limits.max_file_bytes,
                limits.max_file_bytes,
            ),
            (libc::RLIMIT_NOFILE as c_int, nofile, nofile),
            (libc::RLIMIT_CORE as c_int, 0, 0),
        ];
        let rlimits = wanted.map(|(r, soft, hard)| {
            let cap = hard_limit(r);
            (r, soft.min(cap), hard.min(cap))
        });
        let mut keep_a = [
            fds.stdin_r,
            fds.stdout_w,
            fds.stderr_w,
            fds.report_w,
            fds.ack_r,
            fds.ruleset,
        ];
        keep_a.sort_unstable();
        let stacks =
            Stacks::new().map_err(|e| crate::io_err("mapping the sandbox processes' stacks", e))?;
        Ok(Box::new(Plan {
            parent_pid: pid,
            drop_groups: euid == 0,
            dumpable: if dumpable == 0 || dumpable == 1 {
                dumpable
            } else {
                -1
            },
            keep_a,
            stdin_r: fds.stdin_r,
            stdout_w: fds.stdout_w,
            stderr_w: fds.stderr_w,
            report_w: fds.report_w,
            ack_r: fds.ack_r,
            ruleset: fds.ruleset,
            life_r: AtomicI32::new(-1),
            life_w: AtomicI32::new(-1),
            rlimits,
            workdir: workdir_c,
            python: python_c,
            oom_path: cstring("env", b"/proc/self/oom_score_adj")?,
            _argv: argv_store,
            argv,
            _envp: env_store,
            envp,
            seccomp: crate::seccomp::filter(),
            stacks,
        }))
    }

    /// Starts A. Returns its pid, or the error of `clone`.
    ///
    /// # Safety
    /// `self` must stay allocated, unmoved and unchanged until A and B are gone.
    pub(crate) unsafe fn start(&self) -> io::Result<libc::pid_t> {
        // No handler of the caller may run in A before A resets them: every signal is blocked
        // across the clone (A inherits the mask), and the caller's mask is restored after.
        // SAFETY: sigset manipulation on locals; clone per this function's contract.
        unsafe {
            let mut all: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
            let r = sys::clone(
                (libc::CLONE_VM | libc::SIGCHLD) as usize,
                self.stacks.top(0),
                process_a,
                self as *const Plan as *mut c_void,
            );
            libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
            if r < 0 {
                return Err(io::Error::from_raw_os_error(-r as i32));
            }
            Ok(r as libc::pid_t)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Everything below runs in the sandbox's processes: raw system calls on prepared memory only.
// ---------------------------------------------------------------------------------------------

unsafe fn send(fd: c_int, rec: Record) {
    let bytes = rec.to_bytes();
    loop {
        // SAFETY: bytes is a valid buffer.
        let r = unsafe {
            call3(
                libc::SYS_write,
                fd as usize,
                bytes.as_ptr() as usize,
                bytes.len(),
            )
        };
        if r != -(libc::EINTR as isize) {
            return;
        }
    }
}

/// Reports a failed step (`r` is the failed call's `-errno`) and exits with `status`.
unsafe fn fail(fd: c_int, stage: Stage, r: isize, status: i32) -> ! {
    unsafe {
        send(
            fd,
            Record {
                kind: report::FAILED,
                a: stage as i32,
                b: -(r as i64),
            },
        );
        sys::exit(status)
    }
}

/// Waits for the caller's one-byte go-ahead; false when the caller is gone.
unsafe fn wait_ack(fd: c_int) -> bool {
    let mut b = 0u8;
    loop {
        // SAFETY: reads one byte into b.
        let r = unsafe { call3(libc::SYS_read, fd as usize, &mut b as *mut u8 as usize, 1) };
        if r == 1 {
            return true;
        }
        if r != -(libc::EINTR as isize) {
            return false;
        }
    }
}

unsafe fn close(fd: c_int) {
    unsafe { call1(libc::SYS_close, fd as usize) };
}

/// Closes fds `first..=last`.
unsafe fn close_fds(first: u32, last: u32) {
    if first <= last {
        unsafe { call3(libc::SYS_close_range, first as usize, last as usize, 0) };
    }
}

/// Closes every fd from 3 on except the sorted `keep`.
unsafe fn close_all_but(keep: &[c_int; 6]) {
    let mut lo: u32 = 3;
    for &fd in keep {
        let fd = fd as u32;
        if fd > lo {
            unsafe { close_fds(lo, fd - 1) };
        }
        if fd >= lo {
            lo = fd + 1;
        }
    }
    unsafe { close_fds(lo, u32::MAX) };
}

unsafe fn set_parent_death_signal() {
    unsafe {
        call2(
            libc::SYS_prctl,
            libc::PR_SET_PDEATHSIG as usize,
            libc::SIGKILL as usize,
        )
    };
}

/// Default dispositions for every signal and an empty mask (ignored signals and handlers of the
/// caller must not reach the program, nor run in the caller's memory).
unsafe fn default_signals() {
    // A kernel `struct sigaction` of zeros is SIG_DFL, no flags, empty mask, whatever the
    // architecture's layout.
    let dfl = [0u64; 4];
    let mut sig = 1usize;
    while sig <= 64 {
        if sig != libc::SIGKILL as usize && sig != libc::SIGSTOP as usize {
            unsafe { call4(libc::SYS_rt_sigaction, sig, dfl.as_ptr() as usize, 0, 8) };
        }
        sig += 1;
    }
    let empty = 0u64;
    unsafe {
        call4(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK as usize,
            &empty as *const u64 as usize,
            0,
            8,
        )
    };
}

/// Process A. Never returns.
extern "C" fn process_a(arg: *mut c_void) -> i32 {
    // SAFETY: arg is the caller's Plan, alive until A and B are gone; only raw system calls.
    unsafe {
        let p = &*(arg as *const Plan);
        set_parent_death_signal();
        if call1(libc::SYS_getppid, 0) != p.parent_pid as isize {
            sys::exit(A_NO_INIT);
        }
        default_signals();
        close_all_but(&p.keep_a);
        // Out of the caller's session and process group: its terminal's signals and a
        // `kill(-pgrp)` by the caller's neighbours do not reach the run.
        call1(libc::SYS_setsid, 0);
        if p.drop_groups {
            let r = call2(libc::SYS_setgroups, 0, 0);
            if r != 0 {
                fail(p.report_w, Stage::SetGroups, r, A_NO_INIT);
            }
        }
        let flags = libc::CLONE_NEWUSER
            | libc::CLONE_NEWNET
            | libc::CLONE_NEWPID
            | libc::CLONE_NEWIPC
            | libc::CLONE_NEWUTS;
        let r = call1(libc::SYS_unshare, flags as usize);
        if r != 0 {
            fail(p.report_w, Stage::Unshare, r, A_NO_INIT);
        }
        send(
            p.report_w,
            Record {
                kind: report::READY,
                a: 0,
                b: 0,
            },
        );
        if !wait_ack(p.ack_r) {
            sys::exit(A_NO_INIT);
        }
        let mut life = [0 as c_int; 2];
        let r = call2(
            libc::SYS_pipe2,
            life.as_mut_ptr() as usize,
            libc::O_CLOEXEC as usize,
        );
        if r != 0 {
            fail(p.report_w, Stage::LifePipe, r, A_NO_INIT);
        }
        p.life_r.store(life[0], Ordering::SeqCst);
        p.life_w.store(life[1], Ordering::SeqCst);
        let b = sys::clone(
            (libc::CLONE_VM | libc::SIGCHLD) as usize,
            p.stacks.top(1),
            process_b,
            arg,
        );
        if b < 0 {
            fail(p.report_w, Stage::ForkInit, b, A_NO_INIT);
        }
        close(life[0]);
        for fd in [p.stdin_r, p.stdout_w, p.stderr_w, p.ruleset] {
            close(fd);
        }
        send(
            p.report_w,
            Record {
                kind: report::INIT_PID,
                a: 0,
                b: b as i64,
            },
        );
        // The caller opens a pidfd of B before B can be reaped (and its pid reused).
        if !wait_ack(p.ack_r) {
            call2(libc::SYS_kill, b as usize, libc::SIGKILL as usize);
        }
        close(p.ack_r);
        let mut status: c_int = 0;
        loop {
            let r = call4(
                libc::SYS_wait4,
                b as usize,
                &mut status as *mut c_int as usize,
                libc::__WALL as usize,
                0,
            );
            if r == b {
                sys::exit(A_REAPED_INIT);
            }
            if r != -(libc::EINTR as isize) {
                // Not reaped: the caller then waits for B itself.
                sys::exit(2);
            }
        }
    }
}

/// A time in microseconds.
#[allow(clippy::unnecessary_cast)] // the fields are 32-bit on 32-bit targets
fn micros(t: libc::timeval) -> i64 {
    t.tv_sec as i64 * 1_000_000 + t.tv_usec as i64
}

/// Process B, pid 1 of the new PID namespace. Never returns.
extern "C" fn process_b(arg: *mut c_void) -> i32 {
    // SAFETY: as in process_a.
    unsafe {
        let p = &*(arg as *const Plan);
        let id = INSIDE_ID as usize;
        let r = call3(libc::SYS_setresgid, id, id, id);
        if r != 0 {
            fail(p.report_w, Stage::SetResGid, r, 1);
        }
        let r = call3(libc::SYS_setresuid, id, id, id);
        if r != 0 {
            fail(p.report_w, Stage::SetResUid, r, 1);
        }
        // The uid change reset the dumpable flag of the memory B shares with the caller: put
        // the caller's back.
        if p.dumpable >= 0 {
            call2(
                libc::SYS_prctl,
                libc::PR_SET_DUMPABLE as usize,
                p.dumpable as usize,
            );
        }
        // After the uid change, which clears the parent-death signal.
        set_parent_death_signal();
        // A died before that: its end of the life pipe (B's copy closed here) is closed.
        close(p.life_w.load(Ordering::SeqCst));
        close(p.ack_r);
        let life_r = p.life_r.load(Ordering::SeqCst);
        let mut pfd = libc::pollfd {
            fd: life_r,
            events: libc::POLLIN,
            revents: 0,
        };
        let zero = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let r = sys::call(
            libc::SYS_ppoll,
            &mut pfd as *mut libc::pollfd as usize,
            1,
            &zero as *const libc::timespec as usize,
            0,
            8,
            0,
        );
        if r != 0 {
            sys::exit(1);
        }
        close(life_r);
        // C runs until its execve with B suspended (vfork), on its own stack.
        let c = sys::clone(
            (libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD) as usize,
            p.stacks.top(2),
            process_c,
            arg,
        );
        if c < 0 {
            fail(p.report_w, Stage::ForkProgram, c, 1);
        }
        for fd in [p.stdin_r, p.stdout_w, p.stderr_w, p.ruleset] {
            close(fd);
        }
        loop {
            let mut status: c_int = 0;
            let mut ru: libc::rusage = std::mem::zeroed();
            let r = call4(
                libc::SYS_wait4,
                usize::MAX, // -1: any child
                &mut status as *mut c_int as usize,
                libc::__WALL as usize,
                &mut ru as *mut libc::rusage as usize,
            );
            if r == c {
                send(
                    p.report_w,
                    Record {
                        kind: report::PROGRAM_STATUS,
                        a: status,
                        b: micros(ru.ru_utime) + micros(ru.ru_stime),
                    },
                );
                // Exiting ends the namespace: the kernel kills and reaps every process left.
                sys::exit(0);
            }
            if r < 0 && r != -(libc::EINTR as isize) {
                fail(p.report_w, Stage::Reap, r, 1);
            }
        }
    }
}

/// Process C, the program. Never returns.
extern "C" fn process_c(arg: *mut c_void) -> i32 {
    // SAFETY: as in process_a.
    unsafe {
        let p = &*(arg as *const Plan);
        set_parent_death_signal();
        if call1(libc::SYS_getppid, 0) != 1 {
            sys::exit(1);
        }
        call1(libc::SYS_setsid, 0);
        default_signals();
        for (from, to) in [(p.stdin_r, 0), (p.stdout_w, 1), (p.stderr_w, 2)] {
            let r = call3(libc::SYS_dup3, from as usize, to, 0);
            if r < 0 {
                fail(p.report_w, Stage::Stdio, r, 1);
            }
        }
        // The OOM killer takes the program first (best effort; a vfork child's own value,
        // which the kernel does not copy to the caller sharing its memory; kept by execve).
        let oom = sys::call(
            libc::SYS_openat,
            libc::AT_FDCWD as usize,
            p.oom_path.as_ptr() as usize,
            (libc::O_WRONLY | libc::O_CLOEXEC) as usize,
            0,
            0,
            0,
        );
        if oom >= 0 {
            call3(libc::SYS_write, oom as usize, b"1000".as_ptr() as usize, 4);
            close(oom as c_int);
        }
        for &(res, cur, max) in &p.rlimits {
            let lim = Rlimit64 { cur, max };
            let r = call4(
                libc::SYS_prlimit64,
                0,
                res as usize,
                &lim as *const Rlimit64 as usize,
                0,
            );
            if r != 0 {
                fail(p.report_w, Stage::Rlimit, r, 1);
            }
        }
        let r = call1(libc::SYS_chdir, p.workdir.as_ptr() as usize);
        if r != 0 {
            fail(p.report_w, Stage::Chdir, r, 1);
        }
        let r = call2(libc::SYS_prctl, libc::PR_SET_NO_NEW_PRIVS as usize, 1);
        if r != 0 {
            fail(p.report_w, Stage::NoNewPrivs, r, 1);
        }
        let r = call2(libc::SYS_landlock_restrict_self, p.ruleset as usize, 0);
        if r != 0 {
            fail(p.report_w, Stage::Landlock, r, 1);
        }
        if crate::seccomp::LEN > 0 {
            let prog = libc::sock_fprog {
                len: crate::seccomp::LEN as u16,
                filter: p.seccomp.as_ptr() as *mut libc::sock_filter,
            };
            let r = call3(
                libc::SYS_prctl,
                libc::PR_SET_SECCOMP as usize,
                libc::SECCOMP_MODE_FILTER as usize,
                &prog as *const libc::sock_fprog as usize,
            );
            if r != 0 {
                fail(p.report_w, Stage::Seccomp, r, 1);
            }
        }
        // The report pipe moves to fd 3 (closed by a successful execve); nothing else stays.
        let rep: c_int = 3;
        if p.report_w != rep {
            let r = call3(libc::SYS_dup3, p.report_w as usize, rep as usize, 0);
            if r < 0 {
                fail(p.report_w, Stage::Stdio, r, 1);
            }
        }
        call3(
            libc::SYS_fcntl,
            rep as usize,
            libc::F_SETFD as usize,
            libc::FD_CLOEXEC as usize,
        );
        close_fds(4, u32::MAX);
        let r = call3(
            libc::SYS_execve,
            p.python.as_ptr() as usize,
            p.argv.as_ptr() as usize,
            p.envp.as_ptr() as usize,
        );
        fail(rep, Stage::Exec, r, 127)
    }
}
