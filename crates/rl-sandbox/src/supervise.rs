//! The caller's side of one run: prepare, clone A, answer its handshake (uid/gid maps, a pidfd of
//! B), feed stdin and collect stdout/stderr under the caps with `poll` until the wall-clock
//! deadline, kill the run's init on a limit, reap A, remove the working directory, and say how
//! the program ended.

use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::config::Limits;
use crate::error::SandboxError;
use crate::landlock::Rules;
use crate::program::{Program, Run, Status};
use crate::report::{self, RECORD_LEN, Record, Stage};
use crate::slots::Slot;
use crate::spawn::{self, ChildFds, INSIDE_ID, Plan};
use crate::workdir::WorkDir;

/// Why a run gave no [`Run`].
#[derive(Debug)]
pub(crate) enum Failure {
    /// A sandbox process reported a failed setup step (stage, errno).
    Child(Stage, i32),
    /// Anything else.
    Sandbox(SandboxError),
}

impl From<SandboxError> for Failure {
    fn from(e: SandboxError) -> Self {
        Failure::Sandbox(e)
    }
}

/// After a kill, how long the run may take to disappear before A is killed too, and then
/// before the caller gives up waiting for its pipes.
const KILL_GRACE: Duration = Duration::from_secs(10);

/// The fixed parts of every run.
pub(crate) struct Setup<'a> {
    pub python: &'a Path,
    pub work_root: &'a Path,
    pub rules: &'a Rules,
}

/// A and B until reaped: killed and reaped on drop (an error return never leaves them). Owns
/// the [`Plan`] whose memory A and B run in, and frees it only once both are known to be gone.
struct Children {
    a: libc::pid_t,
    init: Option<OwnedFd>,
    reaped: bool,
    /// A was told to go on after its maps were written: B may exist.
    init_possible: bool,
    plan: Option<Box<Plan>>,
}

/// How long the caller waits for B to disappear after A was killed, before it gives up and
/// leaks the run's plan and stacks (a few hundred KiB) rather than free memory B might touch.
const INIT_EXIT_WAIT: Duration = Duration::from_secs(30);

impl Children {
    /// SIGKILL to B through its pidfd (the whole namespace dies with it), else to A.
    fn kill(&self) {
        match &self.init {
            // SAFETY: a pidfd we own; pidfd_send_signal cannot hit a reused pid.
            Some(fd) => unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd.as_raw_fd(),
                    libc::SIGKILL,
                    std::ptr::null::<libc::siginfo_t>(),
                    0u32,
                );
            },
            None => self.kill_a(),
        }
    }

    fn kill_a(&self) {
        if !self.reaped {
            // SAFETY: A is our unreaped child: its pid cannot have been reused.
            unsafe { libc::kill(self.a, libc::SIGKILL) };
        }
    }

    /// Waits for A; its wait status and the CPU time of A and every process it waited for.
    /// Then releases the plan when B is gone too.
    fn reap(&mut self) -> Result<(i32, Duration), SandboxError> {
        let mut status = 0;
        // SAFETY: rusage is plain data.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        loop {
            // SAFETY: A is our child.
            let r = unsafe { libc::wait4(self.a, &mut status, libc::__WALL, &mut ru) };
            if r == self.a {
                break;
            }
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                self.reaped = true;
                self.release(None);
                let what = if e.raw_os_error() == Some(libc::ECHILD) {
                    "waiting for the sandbox process (another thread reaped it: the caller must \
                     not ignore SIGCHLD or wait for every child with waitpid(-1))"
                } else {
                    "waiting for the sandbox process"
                };
                return Err(crate::io_err(what, e));
            }
        }
        self.reaped = true;
        self.release(Some(status));
        let t = |tv: libc::timeval| {
            Duration::from_secs(tv.tv_sec.max(0) as u64)
                + Duration::from_micros(tv.tv_usec.max(0) as u64)
        };
        Ok((status, t(ru.ru_utime) + t(ru.ru_stime)))
    }

    /// Frees the plan once no sandbox process can run in it: A is reaped (its wait status is
    /// `a_status`), and B was reaped by A, never started, or is seen gone through its pidfd.
    /// Otherwise the plan is leaked.
    fn release(&mut self, a_status: Option<i32>) {
        let Some(plan) = self.plan.take() else { return };
        let a_accounted = a_status.is_some_and(|st| {
            libc::WIFEXITED(st)
                && matches!(
                    libc::WEXITSTATUS(st),
                    spawn::A_REAPED_INIT | spawn::A_NO_INIT
                )
        });
        if a_accounted || !self.init_possible || self.init_gone(INIT_EXIT_WAIT) {
            drop(plan);
        } else {
            std::mem::forget(plan);
        }
    }

    /// Waits up to `limit` for B's pidfd to report its exit.
    fn init_gone(&self, limit: Duration) -> bool {
        let Some(fd) = &self.init else { return false };
        let end = Instant::now() + limit;
        loop {
            let mut p = libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let left = end.saturating_duration_since(Instant::now());
            // SAFETY: one valid pollfd.
            let r = unsafe { libc::poll(&mut p, 1, left.as_millis().min(i32::MAX as u128) as i32) };
            if r > 0 {
                return true;
            }
            if r == 0 || Instant::now() >= end {
                return false;
            }
        }
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        if !self.reaped {
            self.kill();
            self.kill_a();
            let _ = self.reap();
        }
    }
}

/// SIGPIPE blocked on this thread while stdin is written (a program that exits without reading
/// must not kill the caller); a pending one is consumed and the mask restored on drop.
struct SigpipeBlocked {
    old: libc::sigset_t,
}

impl SigpipeBlocked {
    fn new() -> SigpipeBlocked {
        // SAFETY: sigset manipulation on local values.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGPIPE);
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            SigpipeBlocked { old }
        }
    }
}

impl Drop for SigpipeBlocked {
    fn drop(&mut self) {
        // SAFETY: as above; a zero timeout never blocks.
        unsafe {
            if libc::sigismember(&self.old, libc::SIGPIPE) == 0 {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, libc::SIGPIPE);
                let zero = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                while libc::sigtimedwait(&set, std::ptr::null_mut(), &zero) == libc::SIGPIPE {}
            }
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut());
        }
    }
}

/// One output stream, kept up to `cap` bytes.
struct Capture {
    fd: Option<OwnedFd>,
    data: Vec<u8>,
}

/// Writes `text` to `/proc/<pid>/<file>` in one `write` (as the uid/gid map files require).
fn write_proc(pid: libc::pid_t, file: &str, text: &str) -> Result<(), SandboxError> {
    let path = format!("/proc/{pid}/{file}");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .map_err(|e| crate::io_err(format!("opening {path}"), e))?;
    f.write_all(text.as_bytes())
        .map_err(|e| crate::io_err(format!("writing {text:?} to {path}"), e))
}

fn write_byte(fd: &OwnedFd) -> Result<(), SandboxError> {
    loop {
        // SAFETY: writes one byte from a static buffer.
        let r = unsafe { libc::write(fd.as_raw_fd(), b"g".as_ptr().cast(), 1) };
        if r == 1 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if r < 0 && e.raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        return Err(crate::io_err("answering the sandbox process", e));
    }
}

/// Runs `program` under `limits` in `slot`.
pub(crate) fn run(
    setup: &Setup<'_>,
    slot: &Slot,
    program: &Program,
    limits: &Limits,
) -> Result<Run, Failure> {
    crate::workdir::check_names(program)?;
    // SAFETY: a plain getter.
    let root = unsafe { libc::geteuid() } == 0;
    let mut workdir = WorkDir::create(
        setup.work_root,
        program,
        root.then_some((slot.uid, slot.gid)),
    )?;
    let ruleset = setup.rules.ruleset(&workdir.path)?;
    let pipe = |what: &str| {
        crate::fds::pipe().map_err(|e| crate::io_err(format!("creating the {what} pipe"), e))
    };
    let (stdin_r, stdin_w) = pipe("stdin")?;
    let (stdout_r, stdout_w) = pipe("stdout")?;
    let (stderr_r, stderr_w) = pipe("stderr")?;
    let (report_r, report_w) = pipe("report")?;
    let (ack_r, ack_w) = pipe("handshake")?;
    for fd in [&stdin_w, &stdout_r, &stderr_r, &report_r] {
        crate::fds::set_nonblocking(fd).map_err(|e| crate::io_err("setting O_NONBLOCK", e))?;
    }
    let plan = Plan::new(
        setup.python,
        &workdir.path,
        &program.args,
        limits,
        ChildFds {
            stdin_r: stdin_r.as_raw_fd(),
            stdout_w: stdout_w.as_raw_fd(),
            stderr_w: stderr_w.as_raw_fd(),
            report_w: report_w.as_raw_fd(),
            ack_r: ack_r.as_raw_fd(),
            ruleset: ruleset.as_raw_fd(),
        },
    )?;

    let start = Instant::now();
    let deadline = start + limits.wall_time;
    // SAFETY: `plan` moves into `children`, which frees it only when A and B are gone.
    let a = unsafe { plan.start() }
        .map_err(|e| crate::io_err("starting the sandbox process (clone)", e))?;
    let mut children = Children {
        a,
        init: None,
        reaped: false,
        init_possible: false,
        plan: Some(plan),
    };
    drop((stdin_r, stdout_w, stderr_w, report_w, ack_r, ruleset));
    let mut ack_w = Some(ack_w);

    let _sigpipe = SigpipeBlocked::new();
    let mut stdin = if program.stdin.is_empty() {
        None
    } else {
        Some(stdin_w)
    };
    let mut stdin_pos = 0usize;
    let mut out = Capture {
        fd: Some(stdout_r),
        data: Vec::new(),
    };
    let mut err = Capture {
        fd: Some(stderr_r),
        data: Vec::new(),
    };
    let mut report = Some(report_r);
    let mut pending: Vec<u8> = Vec::new();
    let mut failed: Option<(Stage, i32)> = None;
    let mut program_status: Option<(i32, i64)> = None;
    let mut output_exceeded = false;
    let mut timed_out = false;
    let mut killed_at: Option<Instant> = None;
    let mut a_killed = false;
    let cap = limits.output_bytes;
    let mut buf = vec![0u8; 64 * 1024];

    loop {
        if out.fd.is_none() && err.fd.is_none() && report.is_none() {
            break;
        }
        let now = Instant::now();
        if killed_at.is_none() && now >= deadline {
            timed_out = true;
            children.kill();
            killed_at = Some(now);
        }
        let wake = match killed_at {
            None => deadline,
            Some(k) if !a_killed => k + KILL_GRACE,
            Some(k) => k + 2 * KILL_GRACE,
        };
        if now >= wake {
            if !a_killed {
                // B did not take the namespace down in time: end A (B gets SIGKILL with it).
                children.kill_a();
                a_killed = true;
                continue;
            }
            return Err(crate::io_err(
                "waiting for the run's processes to end after SIGKILL",
                std::io::Error::from(std::io::ErrorKind::TimedOut),
            )
            .into());
        }
        let timeout_ms = (wake - now).as_millis().clamp(1, i32::MAX as u128) as i32;

        let mut fds: [libc::pollfd; 4] = [libc::pollfd {
            fd: -1,
            events: 0,
            revents: 0,
        }; 4];
        let raw = |o: &Option<OwnedFd>| o.as_ref().map_or(-1, |f| f.as_raw_fd());
        fds[0] = libc::pollfd {
            fd: raw(&out.fd),
            events: libc::POLLIN,
            revents: 0,
        };
        fds[1] = libc::pollfd {
            fd: raw(&err.fd),
            events: libc::POLLIN,
            revents: 0,
        };
        fds[2] = libc::pollfd {
            fd: raw(&report),
            events: libc::POLLIN,
            revents: 0,
        };
        fds[3] = libc::pollfd {
            fd: raw(&stdin),
            events: libc::POLLOUT,
            revents: 0,
        };
        // SAFETY: fds is a valid array; negative fds are ignored by poll.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 4, timeout_ms) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(crate::io_err("poll on the program's pipes", e).into());
        }

        // stdout and stderr.
        for (i, cap_stream) in [(0usize, &mut out), (1, &mut err)] {
            if fds[i].revents == 0 {
                continue;
            }
            let Some(fd) = cap_stream.fd.as_ref() else {
                continue;
            };
            // SAFETY: buf is writable for its length.
            let r = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if r > 0 {
                let got = &buf[..r as usize];
                let room = cap.saturating_sub(cap_stream.data.len());
                if got.len() > room {
                    cap_stream.data.extend_from_slice(&got[..room]);
                    if !output_exceeded {
                        output_exceeded = true;
                        if killed_at.is_none() {
                            children.kill();
                            killed_at = Some(Instant::now());
                        }
                    }
                } else {
                    cap_stream.data.extend_from_slice(got);
                }
            } else if r == 0 {
                cap_stream.fd = None;
            } else {
                let e = std::io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EINTR) | Some(libc::EAGAIN) => {}
                    _ => return Err(crate::io_err("reading the program's output", e).into()),
                }
            }
        }

        // The report pipe.
        if fds[2].revents != 0
            && let Some(fd) = report.as_ref()
        {
            // SAFETY: as above.
            let r = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if r > 0 {
                pending.extend_from_slice(&buf[..r as usize]);
                while pending.len() >= RECORD_LEN {
                    let mut rec = [0u8; RECORD_LEN];
                    rec.copy_from_slice(&pending[..RECORD_LEN]);
                    pending.drain(..RECORD_LEN);
                    let rec = Record::from_bytes(&rec);
                    match rec.kind {
                        // After a kill during the handshake, A is gone or going.
                        report::READY if killed_at.is_some() => {}
                        report::READY => {
                            let maps = [
                                ("setgroups", "deny".to_string()),
                                ("uid_map", format!("{INSIDE_ID} {} 1\n", slot.uid)),
                                ("gid_map", format!("{INSIDE_ID} {} 1\n", slot.gid)),
                            ];
                            for (file, text) in &maps {
                                write_proc(a, file, text)?;
                            }
                            if let Some(w) = ack_w.as_ref() {
                                children.init_possible = true;
                                write_byte(w)?;
                            }
                        }
                        report::INIT_PID => {
                            let b = rec.b as libc::pid_t;
                            // SAFETY: B cannot be reaped (and its pid reused) before A gets
                            // the acknowledgement below.
                            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, b, 0u32) };
                            if fd < 0 {
                                return Err(crate::io_err(
                                    format!("pidfd_open of the sandbox's init process {b}"),
                                    std::io::Error::last_os_error(),
                                )
                                .into());
                            }
                            // SAFETY: a new descriptor.
                            children.init = Some(unsafe { OwnedFd::from_raw_fd(fd as i32) });
                            if let Some(w) = ack_w.take() {
                                if killed_at.is_some() {
                                    children.kill();
                                    let _ = write_byte(&w);
                                } else {
                                    write_byte(&w)?;
                                }
                            }
                        }
                        report::PROGRAM_STATUS => program_status = Some((rec.a, rec.b)),
                        report::FAILED if failed.is_none() => {
                            failed = Stage::from_i32(rec.a).map(|s| (s, rec.b as i32));
                        }
                        _ => {}
                    }
                }
            } else if r == 0 {
                report = None;
            } else {
                let e = std::io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EINTR) | Some(libc::EAGAIN) => {}
                    _ => return Err(crate::io_err("reading the sandbox's report pipe", e).into()),
                }
            }
        }

        // stdin.
        if fds[3].revents != 0
            && let Some(fd) = stdin.as_ref()
        {
            let rest = &program.stdin[stdin_pos..];
            let len = rest.len().min(64 * 1024);
            // SAFETY: rest is readable for len bytes.
            let r = unsafe { libc::write(fd.as_raw_fd(), rest.as_ptr().cast(), len) };
            if r > 0 {
                stdin_pos += r as usize;
                if stdin_pos >= program.stdin.len() {
                    stdin = None;
                }
            } else {
                let e = std::io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EINTR) | Some(libc::EAGAIN) => {}
                    // EPIPE: the program closed its stdin or ended; the rest is not wanted.
                    _ => stdin = None,
                }
            }
        }
    }
    drop(stdin);
    drop(ack_w);
    let (a_status, cpu) = children.reap()?;
    let wall = start.elapsed();
    workdir.remove()?;

    if let Some((stage, errno)) = failed {
        return Err(Failure::Child(stage, errno));
    }
    let status = if output_exceeded {
        Status::OutputLimit
    } else if let Some((st, cpu_us)) = program_status {
        if libc::WIFEXITED(st) {
            Status::Exited {
                code: libc::WEXITSTATUS(st),
            }
        } else if libc::WIFSIGNALED(st) {
            let signal = libc::WTERMSIG(st);
            let limit_us = spawn::cpu_seconds(limits) as i64 * 1_000_000;
            if signal == libc::SIGXCPU || (signal == libc::SIGKILL && cpu_us >= limit_us) {
                Status::CpuLimit
            } else {
                Status::Signaled { signal }
            }
        } else {
            Status::Signaled { signal: 0 }
        }
    } else if timed_out {
        Status::TimedOut
    } else {
        return Err(crate::io_err(
            format!(
                "the sandbox's init process ended without reporting the program's status \
                 (namespace creator's wait status {a_status:#x})"
            ),
            std::io::Error::other("no status"),
        )
        .into());
    };
    Ok(Run {
        status,
        stdout: out.data,
        stderr: err.data,
        wall,
        cpu,
        work_dir: workdir.path.clone(),
    })
}
