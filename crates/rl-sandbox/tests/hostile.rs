//! Hostile programs against the sandbox. Every test is bounded in time (limits of 1–3 s,
//! elapsed checked), and every hostile test checks afterwards that no process of the run is
//! left (a unique marker passed as an argument is in no `/proc/*/cmdline`) and that the run's
//! working directory is gone.

#![cfg(target_os = "linux")]

use std::io::ErrorKind;
use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rl_sandbox::{Limits, Program, Run, Sandbox, SandboxConfig, SandboxError, Status};

/// One sandbox for the tests that need no special configuration.
fn shared() -> &'static Sandbox {
    static S: OnceLock<Sandbox> = OnceLock::new();
    S.get_or_init(|| {
        Sandbox::new(SandboxConfig {
            concurrency: 4,
            ..SandboxConfig::default()
        })
        .expect("a sandbox on this machine (root, Landlock, /usr/bin/python3)")
    })
}

fn limits(wall: f64, cpu: f64) -> Limits {
    Limits {
        wall_time: Duration::from_secs_f64(wall),
        cpu_time: Duration::from_secs_f64(cpu),
        ..Limits::default()
    }
}

fn marker(test: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("rlvr-marker-{test}-{}-{nanos}", std::process::id())
}

/// Runs `source` with the marker as first argument (then `args`) and returns the run and the
/// time it took.
fn run(source: &str, mark: &str, args: &[&str], limits: Limits) -> (Run, Duration) {
    let mut all = vec![mark.to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    let program = Program {
        source: source.to_string(),
        args: all,
        limits: Some(limits),
        ..Program::default()
    };
    let t = Instant::now();
    let r = shared()
        .run_python(&program)
        .expect("the sandbox itself works");
    (r, t.elapsed())
}

/// Pids whose command line contains `mark`.
fn processes_with(mark: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline"))
            && String::from_utf8_lossy(&cmd).contains(mark)
        {
            found.push(format!(
                "{name}: {}",
                String::from_utf8_lossy(&cmd).replace('\0', " ")
            ));
        }
    }
    found
}

/// Nothing of the run is left: no process, no working directory.
fn assert_clean(run: &Run, mark: &str) {
    let left = processes_with(mark);
    assert!(left.is_empty(), "processes left: {left:?}");
    assert!(
        !run.work_dir.exists(),
        "working directory left: {}",
        run.work_dir.display()
    );
}

/// A directory of the test outside any working directory, removed on drop (also when the
/// test fails).
struct Outside(PathBuf);

impl std::ops::Deref for Outside {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl AsRef<Path> for Outside {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Outside {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn outside_dir(test: &str) -> Outside {
    let d = std::env::temp_dir().join(marker(test));
    std::fs::create_dir(&d).unwrap();
    Outside(d)
}

#[test]
fn an_infinite_loop_hits_the_cpu_limit() {
    let m = marker("loop");
    let (r, t) = run("while True:\n    pass\n", &m, &[], limits(5.0, 1.0));
    assert_eq!(r.status, Status::CpuLimit, "{r:?}");
    assert!(t < Duration::from_secs(5), "{t:?}");
    assert!(r.cpu >= Duration::from_millis(900), "{r:?}");
    assert_clean(&r, &m);
}

#[test]
fn a_program_that_catches_sigxcpu_is_killed_at_the_hard_limit() {
    let m = marker("xcpu");
    let src =
        "import signal\nsignal.signal(signal.SIGXCPU, lambda *a: None)\nwhile True:\n    pass\n";
    let (r, t) = run(src, &m, &[], limits(6.0, 1.0));
    assert_eq!(r.status, Status::CpuLimit, "{r:?}");
    assert!(t < Duration::from_secs(6), "{t:?}");
    assert_clean(&r, &m);
}

#[test]
fn sleeping_forever_times_out() {
    let m = marker("sleep");
    let (r, t) = run("import time\ntime.sleep(1000)\n", &m, &[], limits(1.0, 1.0));
    assert_eq!(r.status, Status::TimedOut, "{r:?}");
    assert!(
        t >= Duration::from_secs(1) && t < Duration::from_secs(4),
        "{t:?}"
    );
    assert!(r.wall >= Duration::from_secs(1), "{r:?}");
    assert_clean(&r, &m);
}

#[test]
fn ignoring_sigterm_does_not_outlive_the_wall_clock_limit() {
    let m = marker("sigterm");
    let src = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('ready', flush=True)\ntime.sleep(1000)\n";
    let (r, t) = run(src, &m, &[], limits(1.0, 1.0));
    assert_eq!(r.status, Status::TimedOut, "{r:?}");
    assert_eq!(r.stdout_text(), "ready\n");
    assert!(t < Duration::from_secs(4), "{t:?}");
    assert_clean(&r, &m);
}

#[test]
fn a_fork_bomb_ends_within_its_wall_clock_limit() {
    let m = marker("forkbomb");
    let src =
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n";
    let (r, t) = run(src, &m, &[], limits(2.0, 10.0));
    assert_eq!(r.status, Status::TimedOut, "{r:?}");
    assert!(t < Duration::from_secs(5), "{t:?}");
    assert_clean(&r, &m);
}

#[test]
fn the_process_limit_stops_forks() {
    let m = marker("nproc");
    let src = "import os, time\nn = 0\ntry:\n    while n < 100:\n        if os.fork() == 0:\n            time.sleep(1000)\n        n += 1\nexcept OSError as e:\n    print(n, e.errno)\n";
    let mut l = limits(3.0, 3.0);
    l.max_processes = 5;
    let (r, t) = run(src, &m, &[], l);
    assert_eq!(r.status, Status::Exited { code: 0 }, "{r:?}");
    // The program and 4 children; the fifth fork fails with EAGAIN (11).
    assert_eq!(r.stdout_text(), "4 11\n", "{r:?}");
    assert!(t < Duration::from_secs(3), "{t:?}");
    assert_clean(&r, &m);
}

#[test]
fn a_ten_gigabyte_allocation_is_a_memory_error() {
    let m = marker("alloc");
    let (r, t) = run("x = bytearray(10 * 2**30)\n", &m, &[], limits(3.0, 3.0));
    assert_eq!(r.status, Status::Exited { code: 1 }, "{r:?}");
    assert!(
        r.stderr_text().contains("MemoryError"),
        "{}",
        r.stderr_text()
    );
    assert!(t < Duration::from_secs(3), "{t:?}");
    assert_clean(&r, &m);
}

#[test]
fn a_file_past_the_size_limit_fails_to_write() {
    let m = marker("fsize");
    let src = "try:\n    open('big', 'wb').write(b'x' * (2 << 20))\nexcept OSError as e:\n    print('refused', e.errno)\n";
    let mut l = limits(3.0, 3.0);
    l.max_file_bytes = 1 << 20;
    let (r, _) = run(src, &m, &[], l);
    // EFBIG (27): Python ignores SIGXFSZ, so the write fails instead of killing the process.
    assert_eq!(r.stdout_text(), "refused 27\n", "{r:?}");
    assert_clean(&r, &m);
}

#[test]
fn a_hundred_megabytes_of_output_hit_the_output_limit() {
    let m = marker("output");
    let src =
        "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(100):\n    sys.stdout.write(chunk)\n";
    let mut l = limits(3.0, 3.0);
    l.output_bytes = 64 << 10;
    let (r, t) = run(src, &m, &[], l);
    assert_eq!(r.status, Status::OutputLimit, "{:?}", r.status);
    assert_eq!(r.stdout.len(), 64 << 10);
    assert!(r.stdout.iter().all(|&b| b == b'x'));
    assert!(t < Duration::from_secs(3), "{t:?}");
    assert_clean(&r, &m);
}

#[test]
fn output_on_stderr_is_capped_too_and_exactly_the_cap_is_fine() {
    let m = marker("stderr");
    let mut l = limits(3.0, 3.0);
    l.output_bytes = 1000;
    let (r, _) = run(
        "import sys\nsys.stderr.write('e' * 5000)\n",
        &m,
        &[],
        l.clone(),
    );
    assert_eq!(r.status, Status::OutputLimit);
    assert_eq!(r.stderr.len(), 1000);
    let (r, _) = run("import sys\nsys.stdout.write('o' * 1000)\n", &m, &[], l);
    assert_eq!(r.status, Status::Exited { code: 0 });
    assert_eq!(r.stdout.len(), 1000);
    assert_clean(&r, &m);
}

#[test]
fn no_network_reaches_the_host() {
    let m = marker("net");
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let tcp_port = tcp.local_addr().unwrap().port().to_string();
    let udp_port = udp.local_addr().unwrap().port().to_string();
    let src = r#"
import socket, sys
tcp, udp = int(sys.argv[2]), int(sys.argv[3])
try:
    socket.create_connection(("127.0.0.1", tcp), timeout=2)
    print("tcp connected")
except OSError as e:
    print("tcp failed", type(e).__name__)
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"x", ("127.0.0.1", udp))
    print("udp sent")
except OSError as e:
    print("udp failed", type(e).__name__)
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen()
    print("tcp bound")
except OSError as e:
    print("bind failed", type(e).__name__)
try:
    socket.getaddrinfo("example.com", 80)
    print("dns resolved")
except OSError as e:
    print("dns failed", type(e).__name__)
print(sorted(n for _, n in socket.if_nameindex()))
"#;
    let (r, t) = run(src, &m, &[&tcp_port, &udp_port], limits(3.0, 3.0));
    let out = r.stdout_text();
    assert_eq!(r.status, Status::Exited { code: 0 }, "{r:?}");
    assert!(out.contains("tcp failed"), "{out}");
    assert!(out.contains("udp failed"), "{out}");
    assert!(out.contains("bind failed"), "{out}");
    assert!(out.contains("dns failed"), "{out}");
    assert!(out.contains("['lo']"), "{out}");
    assert_eq!(tcp.accept().unwrap_err().kind(), ErrorKind::WouldBlock);
    let mut buf = [0u8; 8];
    assert_eq!(
        udp.recv_from(&mut buf).unwrap_err().kind(),
        ErrorKind::WouldBlock
    );
    assert!(t < Duration::from_secs(3), "{t:?}");
    assert_clean(&r, &m);
}

#[test]
fn host_unix_sockets_cannot_be_reached() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::net::{UnixDatagram, UnixListener};
    let m = marker("unix");
    let dir = outside_dir("unix");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let stream_path = dir.join("stream.sock");
    let dgram_path = dir.join("dgram.sock");
    let listener = UnixListener::bind(&stream_path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let dgram = UnixDatagram::bind(&dgram_path).unwrap();
    dgram.set_nonblocking(true).unwrap();
    for p in [&stream_path, &dgram_path] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let src = r#"
import asyncio, ctypes, os, socket, sys
stream, dgram = sys.argv[2], sys.argv[3]
def attempt(name, f):
    try:
        f()
        print(name, "allowed")
    except OSError as e:
        print(name, type(e).__name__)
attempt("stream connect", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).connect(stream))
attempt("dgram sendto", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"x", dgram))
attempt("dgram pair", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM))
a, b = socket.socketpair()
a.sendall(b"ping")
print("stream pair", b.recv(4).decode())
attempt("pair reconnect", lambda: a.connect(stream))
print("asyncio", asyncio.run(asyncio.sleep(0, result="ok")))
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(425, 8, ctypes.create_string_buffer(120))
print("io_uring", r, os.strerror(ctypes.get_errno()))
"#;
    let (r, _) = run(
        src,
        &m,
        &[stream_path.to_str().unwrap(), dgram_path.to_str().unwrap()],
        limits(3.0, 3.0),
    );
    let out = r.stdout_text();
    assert_eq!(r.status, Status::Exited { code: 0 }, "{r:?}");
    assert!(out.contains("stream connect PermissionError"), "{out}");
    assert!(out.contains("dgram sendto PermissionError"), "{out}");
    assert!(out.contains("dgram pair PermissionError"), "{out}");
    assert!(out.contains("stream pair ping"), "{out}");
    assert!(!out.contains("allowed"), "{out}");
    assert!(out.contains("asyncio ok"), "{out}");
    assert!(
        out.contains("io_uring -1 Function not implemented"),
        "{out}"
    );
    assert_eq!(listener.accept().unwrap_err().kind(), ErrorKind::WouldBlock);
    let mut buf = [0u8; 8];
    assert_eq!(
        dgram.recv(&mut buf).unwrap_err().kind(),
        ErrorKind::WouldBlock
    );
    assert_clean(&r, &m);
    drop(dir);
}

#[test]
fn files_outside_the_working_directory_cannot_be_read() {
    let m = marker("read");
    let dir = outside_dir("read");
    let secret = dir.join("secret.txt");
    std::fs::write(&secret, "the-secret-42").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
    let src = r#"
import os, sys
for path in [sys.argv[2], "/etc/passwd", "/proc/self/status", "/root/.bashrc", "/work/main/Cargo.toml"]:
    try:
        print(path, open(path).read()[:40])
    except OSError as e:
        print(path, type(e).__name__)
for name, f in [("link", lambda: os.link(sys.argv[2], "copy")),
                ("rename", lambda: os.rename(sys.argv[2], "moved"))]:
    try:
        f()
        print(name, "done", open("copy" if name == "link" else "moved").read())
    except OSError as e:
        print(name, "refused", type(e).__name__)
for d in ["/tmp", "/", "/home", os.path.dirname(sys.argv[2])]:
    try:
        print(d, os.listdir(d))
    except OSError as e:
        print(d, type(e).__name__)
"#;
    let (r, _) = run(src, &m, &[secret.to_str().unwrap()], limits(3.0, 3.0));
    let out = r.stdout_text();
    assert!(!out.contains("the-secret-42"), "{out}");
    assert!(!out.contains("root:"), "{out}");
    assert!(
        out.contains(&format!("{} PermissionError", secret.display())),
        "{out}"
    );
    assert!(out.contains("/etc/passwd PermissionError"), "{out}");
    // Hard links and renames into the working directory would move a file beneath its rule.
    assert!(out.contains("link refused"), "{out}");
    assert!(out.contains("rename refused"), "{out}");
    assert!(secret.exists());
    assert!(out.contains("/tmp PermissionError"), "{out}");
    assert!(!out.contains('['), "a directory listing: {out}");
    assert_eq!(r.status, Status::Exited { code: 0 }, "{r:?}");
    assert_clean(&r, &m);
    drop(dir);
}

#[test]
fn directories_outside_the_working_directory_cannot_be_written() {
    let m = marker("write");
    let dir = outside_dir("write");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let src = r#"
import os, sys
for path in [os.path.join(sys.argv[2], "planted"), "/tmp/planted-" + sys.argv[1], "/dev/shm/planted", "/usr/planted"]:
    try:
        open(path, "w").write("x")
        print(path, "written")
    except OSError as e:
        print(path, type(e).__name__)
try:
    os.symlink("/etc/passwd", "link")
    print("link", open("link").read()[:10])
except OSError as e:
    print("link", type(e).__name__)
open("mine.txt", "w").write("ok")
print("own", open("mine.txt").read())
open("/dev/null", "w").write("discarded")
print("devnull ok")
"#;
    let (r, _) = run(src, &m, &[dir.to_str().unwrap()], limits(3.0, 3.0));
    let out = r.stdout_text();
    assert!(!out.contains("written"), "{out}");
    assert!(out.contains("planted PermissionError"), "{out}");
    assert!(out.contains("link PermissionError"), "{out}");
    assert!(out.contains("own ok"), "{out}");
    assert!(out.contains("devnull ok"), "{out}");
    assert!(!dir.join("planted").exists());
    assert!(!Path::new(&format!("/tmp/planted-{m}")).exists());
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    assert_clean(&r, &m);
    drop(dir);
}

#[test]
fn a_deep_locked_tree_and_odd_files_are_removed() {
    let m = marker("tree");
    let src = r#"
import os, socket
top = os.getcwd()
for i in range(200):  # 20 kB of path: past PATH_MAX
    os.mkdir("d" * 100)
    os.chdir("d" * 100)
open("f", "w").write("x")
os.mkfifo("fifo")
os.symlink("/usr", "usr-link")
os.chdir(top)
for root, dirs, files in os.walk("d" * 100, topdown=False):
    os.chmod(root, 0)
os.chmod(".", 0o500)
print("built")
"#;
    let (r, t) = run(src, &m, &[], limits(3.0, 3.0));
    assert_eq!(r.status, Status::Exited { code: 0 }, "{r:?}");
    assert_eq!(r.stdout_text(), "built\n");
    // Removing a directory costs ~3 ms on this machine's ext4 (mounted with `discard`).
    assert!(t < Duration::from_secs(5), "{t:?}");
    assert_clean(&r, &m);
    assert!(Path::new("/usr/bin").exists());
}

#[test]
fn killing_parents_and_everyone_does_not_reach_the_caller() {
    let m = marker("kill");
    let mut bystander = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let me = std::process::id().to_string();
    let other = bystander.id().to_string();
    let src = r#"
import os, signal, sys
targets = [("parent", os.getppid()), ("everyone", -1), ("caller", int(sys.argv[2])), ("bystander", int(sys.argv[3]))]
for name, pid in targets:
    try:
        os.kill(pid, signal.SIGKILL)
        print(name, "sent")
    except OSError as e:
        print(name, type(e).__name__)
print("alive", os.getpid(), os.getppid())
"#;
    let (r, t) = run(src, &m, &[&me, &other], limits(3.0, 3.0));
    let out = r.stdout_text();
    assert_eq!(r.status, Status::Exited { code: 0 }, "{r:?}");
    // The program is pid 2 of its own PID namespace, under the sandbox's init (pid 1).
    assert!(out.contains("alive 2 1"), "{out}");
    // The host pids do not exist in the program's PID namespace.
    assert!(out.contains("caller ProcessLookupError"), "{out}");
    assert!(
        bystander.try_wait().unwrap().is_none(),
        "the bystander was killed"
    );
    bystander.kill().unwrap();
    bystander.wait().unwrap();
    assert!(t < Duration::from_secs(3), "{t:?}");
    assert_clean(&r, &m);
}

#[test]
fn a_daemon_dies_with_the_program() {
    let m = marker("daemon");
    let src = r#"
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        print("daemon up", flush=True)
        time.sleep(1000)
    os._exit(0)
time.sleep(0.2)
print("parent done", flush=True)
"#;
    let (r, t) = run(src, &m, &[], limits(3.0, 3.0));
    assert_eq!(r.status, Status::Exited { code: 0 }, "{r:?}");
    assert!(r.stdout_text().contains("daemon up"), "{r:?}");
    assert!(t < Duration::from_secs(3), "{t:?}");
    assert_clean(&r, &m);
}

#[test]
fn stdin_files_and_arguments_reach_the_program() {
    let program = Program {
        source: r#"
import os, sys
print(repr(sys.stdin.read()))
print(open("data/input.txt").read())
print(sys.argv[1:])
print(os.getcwd() == os.environ["HOME"] == os.environ["TMPDIR"], os.path.basename(os.getcwd()).startswith("rlvr-sandbox-"))
print(os.getuid(), os.getgid(), os.getgroups())
print(sorted(os.listdir(".")))
"#
        .into(),
        stdin: b"hello\nworld\n".to_vec(),
        files: vec![("data/input.txt".into(), b"42".to_vec())],
        args: vec!["a b".into(), "c".into()],
        limits: Some(limits(3.0, 3.0)),
    };
    assert_eq!(dumpable(), 1);
    let r = shared().run_python(&program).unwrap();
    // The init process changed uid in memory it shares with this process: the flag that
    // change resets (who owns /proc/self, core dumps, ptrace by the same user) is restored.
    assert_eq!(dumpable(), 1, "this process lost its dumpable flag");
    assert_eq!(r.status, Status::Exited { code: 0 }, "{r:?}");
    assert_eq!(
        r.stdout_text(),
        "'hello\\nworld\\n'\n42\n['a b', 'c']\nTrue True\n1000 1000 []\n['data', 'main.py']\n"
    );
    assert_eq!(r.stderr_text(), "", "start-up must be silent");
    assert!(!r.work_dir.exists());
}

#[test]
fn a_program_that_never_reads_a_large_stdin_does_not_block() {
    let m = marker("stdin");
    let program = Program {
        source: "print('done')\n".into(),
        stdin: vec![b'y'; 16 << 20],
        args: vec![m.clone()],
        limits: Some(limits(3.0, 3.0)),
        ..Program::default()
    };
    let t = Instant::now();
    let r = shared().run_python(&program).unwrap();
    assert_eq!(r.status, Status::Exited { code: 0 }, "{r:?}");
    assert_eq!(r.stdout_text(), "done\n");
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert_clean(&r, &m);
}

#[test]
fn exit_codes_and_signals_are_reported() {
    let m = marker("codes");
    let (r, _) = run("import sys\nsys.exit(3)\n", &m, &[], limits(3.0, 3.0));
    assert_eq!(r.status, Status::Exited { code: 3 });
    let (r, _) = run("raise ValueError('boom')\n", &m, &[], limits(3.0, 3.0));
    assert_eq!(r.status, Status::Exited { code: 1 });
    assert!(r.stderr_text().contains("ValueError: boom"));
    let (r, _) = run(
        "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n",
        &m,
        &[],
        limits(3.0, 3.0),
    );
    assert_eq!(r.status, Status::Signaled { signal: 11 });
    let (r, _) = run(
        "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
        &m,
        &[],
        limits(3.0, 3.0),
    );
    assert_eq!(r.status, Status::Signaled { signal: 9 });
    assert_clean(&r, &m);
}

#[test]
fn the_program_holds_no_privilege() {
    let m = marker("privilege");
    let src = r#"
import os, socket
for name, f in [("setuid", lambda: os.setuid(0)), ("hostname", lambda: socket.sethostname("x")),
                ("chroot", lambda: os.chroot(".")), ("mknod", lambda: os.mknod("dev", 0o600 | 0o20000, os.makedev(1, 3)))]:
    try:
        f()
        print(name, "allowed")
    except OSError as e:
        print(name, type(e).__name__)
"#;
    let (r, _) = run(src, &m, &[], limits(3.0, 3.0));
    let out = r.stdout_text();
    assert!(!out.contains("allowed"), "{out}");
    assert_eq!(r.status, Status::Exited { code: 0 }, "{r:?}");
    assert_clean(&r, &m);
}

#[test]
fn the_init_process_sharing_the_callers_memory_is_out_of_reach() {
    // B, pid 1 of the run's namespace, runs in the caller's memory: the program must not be
    // able to read it through ptrace, process_vm_readv, /proc/1/mem or pidfd_getfd.
    let m = marker("init");
    let src = r#"
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def errno_of(r):
    return "ok" if r >= 0 else os.strerror(ctypes.get_errno())
print("ptrace", errno_of(libc.ptrace(16, 1, None, None)))  # PTRACE_ATTACH
buf = ctypes.create_string_buffer(64)
class Iov(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
local = Iov(ctypes.cast(buf, ctypes.c_void_p), 64)
remote = Iov(0x400000, 64)
print("vm_readv", errno_of(libc.process_vm_readv(1, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)))
try:
    open("/proc/1/mem", "rb").read(1)
    print("mem ok")
except OSError as e:
    print("mem", type(e).__name__)
fd = libc.syscall(434, 1, 0)  # pidfd_open
print("pidfd_getfd", errno_of(libc.syscall(438, fd, 3, 0)) if fd >= 0 else "no pidfd")
"#;
    let (r, _) = run(src, &m, &[], limits(3.0, 3.0));
    let out = r.stdout_text();
    assert_eq!(r.status, Status::Exited { code: 0 }, "{r:?}");
    assert!(!out.contains(" ok"), "{out}");
    assert!(out.contains("ptrace Operation not permitted"), "{out}");
    assert!(out.contains("vm_readv Operation not permitted"), "{out}");
    assert!(out.contains("mem PermissionError"), "{out}");
    assert!(out.contains("pidfd_getfd Operation not permitted"), "{out}");
    assert_clean(&r, &m);
}

#[test]
fn concurrency_is_bounded() {
    let sandbox = Sandbox::new(SandboxConfig {
        concurrency: 2,
        ..SandboxConfig::default()
    })
    .unwrap();
    let done = AtomicBool::new(false);
    let most = AtomicUsize::new(0);
    let t = Instant::now();
    let spans: Vec<(f64, f64)> = std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            while !done.load(Ordering::SeqCst) {
                most.fetch_max(sandbox.in_flight(), Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        let runs: Vec<_> = (0..6)
            .map(|_| {
                s.spawn(|| {
                    // The program's own start and end (the realtime clock is the host's).
                    let program = Program {
                        source:
                            "import time\ns = time.time()\ntime.sleep(0.4)\nprint(s, time.time())\n"
                                .into(),
                        limits: Some(limits(5.0, 3.0)),
                        ..Program::default()
                    };
                    let r = sandbox.run_python(&program).unwrap();
                    assert!(r.status.success(), "{r:?}");
                    let out = r.stdout_text();
                    let v: Vec<f64> = out.split_whitespace().map(|x| x.parse().unwrap()).collect();
                    (v[0], v[1])
                })
            })
            .collect();
        let spans = runs.into_iter().map(|h| h.join().unwrap()).collect();
        done.store(true, Ordering::SeqCst);
        sampler.join().unwrap();
        spans
    });
    let total = t.elapsed();
    assert_eq!(most.load(Ordering::SeqCst), 2, "in flight at most");
    // At no instant do three programs run: at each start, count the programs running.
    for (i, a) in spans.iter().enumerate() {
        let running = spans.iter().filter(|b| b.0 <= a.0 && a.0 < b.1).count();
        assert!(
            running <= 2,
            "at the start of program {i}, {running} run: {spans:?}"
        );
    }
    // Three rounds of 0.4 s at least; not much more than the runs themselves.
    assert!(total >= Duration::from_millis(1200), "{total:?}");
    assert!(total < Duration::from_secs(6), "{total:?}");
    assert_eq!(sandbox.in_flight(), 0);
}

#[test]
fn configuration_errors_name_the_field() {
    let field = |r: Result<Sandbox, SandboxError>| match r {
        Err(SandboxError::Config { field, .. }) => field,
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("accepted"),
    };
    let c = SandboxConfig {
        concurrency: 0,
        ..SandboxConfig::default()
    };
    assert_eq!(field(Sandbox::new(c)), "concurrency");
    let mut c = SandboxConfig::default();
    c.limits.memory_bytes = 1 << 20;
    let e = Sandbox::new(c).unwrap_err();
    assert!(e.to_string().contains("limits.memory_bytes"), "{e}");
    assert!(e.to_string().contains("67108864"), "{e}");
    let mut c = SandboxConfig::default();
    c.limits.cpu_time = Duration::ZERO;
    assert_eq!(field(Sandbox::new(c)), "limits.cpu_time");
    let mut c = SandboxConfig::default();
    c.limits.max_processes = 1;
    assert_eq!(field(Sandbox::new(c)), "limits.max_processes");
    let mut c = SandboxConfig::default();
    c.limits.output_bytes = 0;
    assert_eq!(field(Sandbox::new(c)), "limits.output_bytes");
    let mut c = SandboxConfig::default();
    c.limits.wall_time = Duration::ZERO;
    assert_eq!(field(Sandbox::new(c)), "limits.wall_time");

    // Per program: its limits and its file names.
    let bad_limits = Program {
        source: "pass".into(),
        limits: Some(Limits {
            max_processes: 0,
            ..Limits::default()
        }),
        ..Program::default()
    };
    match shared().run_python(&bad_limits) {
        Err(SandboxError::Config { field, .. }) => assert_eq!(field, "limits.max_processes"),
        other => panic!("{other:?}"),
    }
    for name in ["../escape.txt", "/etc/cron.d/x", "", "main.py"] {
        let p = Program {
            source: "pass".into(),
            files: vec![(name.into(), b"x".to_vec())],
            ..Program::default()
        };
        match shared().run_python(&p) {
            Err(SandboxError::Config { field, .. }) => assert_eq!(field, "files"),
            other => panic!("{name:?}: {other:?}"),
        }
    }
    let p = Program {
        source: "pass".into(),
        args: vec!["a\0b".into()],
        ..Program::default()
    };
    assert!(matches!(
        shared().run_python(&p),
        Err(SandboxError::Config { field: "args", .. })
    ));
}

#[test]
fn an_interpreter_the_sandbox_cannot_use_is_reported_with_its_path() {
    let c = SandboxConfig {
        python: Some("/nonexistent/bin/python3".into()),
        ..SandboxConfig::default()
    };
    let e = Sandbox::new(c).unwrap_err();
    assert!(matches!(e, SandboxError::Unavailable { .. }), "{e}");
    assert!(e.to_string().contains("/nonexistent/bin/python3"), "{e}");

    // pyenv's interpreter under /root (mode 0700) runs for root but not for the sandbox's uid.
    let pyenv = Path::new("/root/.pyenv/versions/3.11.7/bin/python3");
    if pyenv.exists() && euid() == 0 {
        let c = SandboxConfig {
            python: Some(pyenv.into()),
            ..SandboxConfig::default()
        };
        let e = Sandbox::new(c).unwrap_err();
        assert!(matches!(e, SandboxError::Unavailable { .. }), "{e}");
        let msg = e.to_string();
        assert!(msg.contains(pyenv.to_str().unwrap()), "{msg}");
        assert!(msg.contains("python = \"/usr/bin/python3\""), "{msg}");
    }
}

fn dumpable() -> i32 {
    // SAFETY: reads this process's flag.
    unsafe { libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0) }
}

fn euid() -> u32 {
    // SAFETY: a plain getter.
    unsafe { libc::geteuid() }
}

#[test]
fn guarantees_describe_this_machine() {
    let g = shared().guarantees();
    assert!(g.landlock_abi >= 1);
    assert_eq!(g.landlock_tcp, g.landlock_abi >= 4);
    assert_eq!(g.landlock_scopes, g.landlock_abi >= 6);
    assert_eq!(g.python, PathBuf::from("/usr/bin/python3"));
    assert!(g.readable.contains(&PathBuf::from("/usr")));
    assert!(
        !g.readable
            .iter()
            .any(|p| p.starts_with("/tmp") || p.starts_with("/root"))
    );
    if euid() == 0 {
        assert!(g.dedicated_uids);
        assert!(g.run_uids.iter().all(|&u| u >= 2_000_000_000));
    }
    let json = serde_json::to_string(g).unwrap();
    assert!(json.contains("landlock_abi"), "{json}");
}

/// The non-root path: as root, this test runs itself again as `nobody` (uid 65534, via
/// `setpriv`), where the sandbox maps the run to the caller's own uid through an unprivileged
/// user namespace; as non-root, it checks that path directly.
#[test]
fn the_non_root_path_isolates_too() {
    if euid() != 0 {
        non_root_checks();
        return;
    }
    if std::env::var_os("RLVR_SANDBOX_NONROOT_CHILD").is_some() {
        return;
    }
    let setpriv = Path::new("/usr/bin/setpriv");
    assert!(
        setpriv.exists(),
        "setpriv (util-linux) is needed to test the non-root path as root"
    );
    // A copy of this binary that `nobody` can execute wherever the target directory is.
    use std::os::unix::fs::PermissionsExt;
    let dir = outside_dir("nonroot-exe");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let exe = dir.join("hostile");
    std::fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = std::process::Command::new(setpriv)
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&exe)
        .current_dir("/")
        .args([
            "--exact",
            "the_non_root_path_isolates_too",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("RLVR_SANDBOX_NONROOT_CHILD", "1")
        .env("TMPDIR", "/tmp")
        .output()
        .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    drop(dir);
    assert!(out.status.success(), "non-root run failed:\n{text}");
    assert!(text.contains("non-root checks passed"), "{text}");
}

fn non_root_checks() {
    let sandbox = Sandbox::new(SandboxConfig {
        concurrency: 1,
        work_root: Some("/tmp".into()),
        ..SandboxConfig::default()
    })
    .unwrap();
    let g = sandbox.guarantees();
    assert!(!g.dedicated_uids);
    assert_eq!(g.run_uids, vec![euid()]);
    let dir = outside_dir("nonroot");
    let secret = dir.join("secret.txt");
    std::fs::write(&secret, "nonroot-secret").unwrap();
    let m = marker("nonroot");
    let src = r#"
import os, socket, sys, time
print("uid", os.getuid())
try:
    print(open(sys.argv[2]).read())
except OSError as e:
    print("read", type(e).__name__)
try:
    socket.create_connection(("127.0.0.1", 22), timeout=1)
except OSError as e:
    print("tcp", type(e).__name__)
os.makedirs("locked/inner")
open("locked/inner/f", "w").write("x")
os.chmod("locked/inner", 0)
os.chmod("locked", 0)
n = 0
try:
    while n < 10:
        if os.fork() == 0:
            time.sleep(1000)
        n += 1
except OSError as e:
    print("forks", n, e.errno)
"#;
    let mut l = limits(3.0, 3.0);
    l.max_processes = 4;
    let program = Program {
        source: src.into(),
        args: vec![m.clone(), secret.to_str().unwrap().into()],
        limits: Some(l),
        ..Program::default()
    };
    let r = sandbox.run_python(&program).unwrap();
    let out = r.stdout_text();
    assert_eq!(r.status, Status::Exited { code: 0 }, "{r:?}");
    assert!(out.contains("uid 1000"), "{out}");
    assert!(out.contains("read PermissionError"), "{out}");
    assert!(out.contains("tcp "), "{out}");
    assert!(!out.contains("nonroot-secret"), "{out}");
    // RLIMIT_NPROC counts per user namespace and uid: the caller's own processes do not.
    assert!(out.contains("forks 3 11"), "{out}");
    assert_clean(&r, &m);
    drop(dir);
    println!("non-root checks passed");
}
