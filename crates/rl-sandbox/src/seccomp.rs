//! A minimal seccomp filter for the one gap Landlock (through ABI 7) and the namespaces leave:
//! connecting to a *pathname* Unix socket of the host. Such a connect is not a Landlock file
//! access and is not stopped by the network namespace, so a world-writable socket (D-Bus's
//! system bus, `/dev/log`, X11, a service's socket in `/tmp`) would be reachable.
//!
//! The filter (x86_64 and aarch64):
//! * `socket(AF_UNIX, …)` fails with `EACCES`;
//! * `socketpair(AF_UNIX, …)` works for `SOCK_STREAM` (asyncio's and multiprocessing's
//!   self-pipes; a connected stream socket cannot be re-connected) and fails with `EACCES` for
//!   datagram and seqpacket pairs (a datagram socket can `sendto` any path);
//! * `io_uring_setup` fails with `ENOSYS` (io_uring operations bypass seccomp);
//! * x32 system calls fail with `ENOSYS`, and a foreign architecture (i386 `int 0x80`) kills the
//!   process.
//!
//! Everything else is allowed: this is not a system-call allow-list.

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod imp {
    use libc::sock_filter;

    #[cfg(target_arch = "x86_64")]
    const AUDIT_ARCH: u32 = 0xC000_003E;
    #[cfg(target_arch = "aarch64")]
    const AUDIT_ARCH: u32 = 0xC000_00B7;

    const LD_W_ABS: u16 = 0x20;
    const JEQ_K: u16 = 0x15;
    const JGE_K: u16 = 0x35;
    const AND_K: u16 = 0x54;
    const RET_K: u16 = 0x06;

    const RET_ALLOW: u32 = 0x7fff_0000;
    const RET_ERRNO: u32 = 0x0005_0000;
    const RET_KILL_PROCESS: u32 = 0x8000_0000;

    /// Offsets in `struct seccomp_data` (little-endian: an argument's low half first).
    const OFF_NR: u32 = 0;
    const OFF_ARCH: u32 = 4;
    const OFF_ARG0: u32 = 16;
    const OFF_ARG1: u32 = 24;

    const X32_BIT: u32 = 0x4000_0000;
    const SOCK_TYPE_MASK: u32 = 0xf;

    const fn ins(code: u16, jt: u8, jf: u8, k: u32) -> sock_filter {
        sock_filter { code, jt, jf, k }
    }

    /// Number of instructions.
    pub(crate) const LEN: usize = 18;

    /// The filter (jump offsets count instructions skipped; targets in the comments).
    pub(crate) fn filter() -> [sock_filter; LEN] {
        [
            /* 0 */ ins(LD_W_ABS, 0, 0, OFF_ARCH),
            /* 1 */ ins(JEQ_K, 0, 15, AUDIT_ARCH), // else 17: kill
            /* 2 */ ins(LD_W_ABS, 0, 0, OFF_NR),
            /* 3 */ ins(JGE_K, 12, 0, X32_BIT), // 16: ENOSYS
            /* 4 */ ins(JEQ_K, 2, 0, libc::SYS_socket as u32), // 7
            /* 5 */ ins(JEQ_K, 3, 0, libc::SYS_socketpair as u32), // 9
            /* 6 */ ins(JEQ_K, 9, 7, libc::SYS_io_uring_setup as u32), // 16 : 14
            /* 7 */ ins(LD_W_ABS, 0, 0, OFF_ARG0),
            /* 8 */ ins(JEQ_K, 6, 5, libc::AF_UNIX as u32), // 15: EACCES : 14: allow
            /* 9 */ ins(LD_W_ABS, 0, 0, OFF_ARG0),
            /* 10 */ ins(JEQ_K, 0, 3, libc::AF_UNIX as u32), // 11 : 14
            /* 11 */ ins(LD_W_ABS, 0, 0, OFF_ARG1),
            /* 12 */ ins(AND_K, 0, 0, SOCK_TYPE_MASK),
            /* 13 */ ins(JEQ_K, 0, 1, libc::SOCK_STREAM as u32), // 14 : 15
            /* 14 */ ins(RET_K, 0, 0, RET_ALLOW),
            /* 15 */ ins(RET_K, 0, 0, RET_ERRNO | libc::EACCES as u32),
            /* 16 */ ins(RET_K, 0, 0, RET_ERRNO | libc::ENOSYS as u32),
            /* 17 */ ins(RET_K, 0, 0, RET_KILL_PROCESS),
        ]
    }

    /// Whether this build installs the filter.
    pub(crate) const AVAILABLE: bool = true;

    #[cfg(test)]
    mod tests {
        use super::*;

        /// Every jump lands inside the program, and the last instructions are returns.
        #[test]
        fn jumps_stay_inside_the_filter() {
            let f = filter();
            for (i, ins) in f.iter().enumerate() {
                if ins.code == JEQ_K || ins.code == JGE_K {
                    assert!(i + 1 + (ins.jt as usize) < LEN, "{i}");
                    assert!(i + 1 + (ins.jf as usize) < LEN, "{i}");
                }
            }
            assert!(f[14..].iter().all(|i| i.code == RET_K));
        }
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod imp {
    /// No filter on other architectures (their system-call tables are not encoded here).
    pub(crate) const LEN: usize = 0;
    pub(crate) fn filter() -> [libc::sock_filter; LEN] {
        []
    }
    pub(crate) const AVAILABLE: bool = false;
}

pub(crate) use imp::{AVAILABLE, LEN, filter};
