//! System calls as single instructions, and `clone` onto a new stack, for the sandbox's own
//! processes. They share the caller's memory (`CLONE_VM`, see `spawn.rs`), including the
//! thread-local storage of the caller's thread, so they must not go through libc: a failing
//! libc wrapper writes `errno` into the caller's thread. These return `-errno` instead.

use std::ffi::c_void;

/// Architectures with these system-call stubs (the sandbox is unavailable elsewhere).
pub(crate) const SUPPORTED: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

/// A system call with six arguments; returns the kernel's result (`-errno` on failure).
///
/// # Safety
/// As the system call itself.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn call(
    n: libc::c_long,
    a: usize,
    b: usize,
    c: usize,
    d: usize,
    e: usize,
    f: usize,
) -> isize {
    let ret: isize;
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") n as isize => ret,
            in("rdi") a,
            in("rsi") b,
            in("rdx") c,
            in("r10") d,
            in("r8") e,
            in("r9") f,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    #[cfg(target_arch = "aarch64")]
    unsafe {
        std::arch::asm!(
            "svc 0",
            in("x8") n as usize,
            inlateout("x0") a => ret,
            in("x1") b,
            in("x2") c,
            in("x3") d,
            in("x4") e,
            in("x5") f,
            options(nostack),
        );
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = (n, a, b, c, d, e, f);
        ret = -(libc::ENOSYS as isize);
    }
    ret
}

/// Shorthands by argument count.
#[inline(always)]
pub(crate) unsafe fn call1(n: libc::c_long, a: usize) -> isize {
    unsafe { call(n, a, 0, 0, 0, 0, 0) }
}
#[inline(always)]
pub(crate) unsafe fn call2(n: libc::c_long, a: usize, b: usize) -> isize {
    unsafe { call(n, a, b, 0, 0, 0, 0) }
}
#[inline(always)]
pub(crate) unsafe fn call3(n: libc::c_long, a: usize, b: usize, c: usize) -> isize {
    unsafe { call(n, a, b, c, 0, 0, 0) }
}
#[inline(always)]
pub(crate) unsafe fn call4(n: libc::c_long, a: usize, b: usize, c: usize, d: usize) -> isize {
    unsafe { call(n, a, b, c, d, 0, 0) }
}

/// Ends the calling process.
#[inline(always)]
pub(crate) unsafe fn exit(code: i32) -> ! {
    unsafe {
        call1(libc::SYS_exit_group, code as usize);
        call1(libc::SYS_exit, code as usize);
    }
    #[allow(clippy::empty_loop)]
    loop {}
}

/// The entry of a cloned process: gets `arg`, must end with [`exit`].
pub(crate) type Entry = extern "C" fn(*mut c_void) -> i32;

/// `clone(flags)` with the child running `entry(arg)` on the stack whose top is `stack_top`
/// (16-byte aligned down here); the child exits with `entry`'s result if it returns. Returns
/// the child's pid, or `-errno`.
///
/// # Safety
/// `stack_top` must be the top of writable memory that outlives the child's use of it, and
/// `entry` must be safe to run in the child (with `CLONE_VM`: raw system calls only).
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
pub(crate) unsafe extern "C" fn clone(
    flags: usize,
    stack_top: *mut u8,
    entry: Entry,
    arg: *mut c_void,
) -> isize {
    // rdi = flags, rsi = stack, rdx = entry, rcx = arg.
    std::arch::naked_asm!(
        "and rsi, -16",
        "sub rsi, 16",
        "mov [rsi], rdx",
        "mov [rsi + 8], rcx",
        // clone(flags, newsp, parent_tid = 0, child_tid = 0, tls = 0)
        "xor edx, edx",
        "xor r10d, r10d",
        "xor r8d, r8d",
        "mov eax, 56",
        "syscall",
        "test rax, rax",
        "jnz 2f",
        // Child: on the new stack, aligned to 16 after the two pops.
        "xor ebp, ebp",
        "pop rax",
        "pop rdi",
        "call rax",
        "mov edi, eax",
        "mov eax, 231",
        "syscall",
        "ud2",
        "2:",
        "ret",
    )
}

/// See the x86_64 version.
///
/// # Safety
/// As there.
#[cfg(target_arch = "aarch64")]
#[unsafe(naked)]
pub(crate) unsafe extern "C" fn clone(
    flags: usize,
    stack_top: *mut u8,
    entry: Entry,
    arg: *mut c_void,
) -> isize {
    // x0 = flags, x1 = stack, x2 = entry, x3 = arg.
    std::arch::naked_asm!(
        "and x1, x1, #-16",
        "stp x2, x3, [x1, #-16]!",
        // clone(flags, newsp, parent_tid = 0, tls = 0, child_tid = 0)
        "mov x2, xzr",
        "mov x3, xzr",
        "mov x4, xzr",
        "mov x8, #220",
        "svc #0",
        "cbnz x0, 2f",
        // Child: sp is the new stack holding (entry, arg).
        "ldp x1, x0, [sp], #16",
        "mov x29, xzr",
        "mov x30, xzr",
        "blr x1",
        "mov x8, #94",
        "svc #0",
        "brk #0",
        "2:",
        "ret",
    )
}

/// No clone stub elsewhere (the sandbox reports itself unavailable there).
///
/// # Safety
/// Never runs anything.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(crate) unsafe extern "C" fn clone(
    _flags: usize,
    _stack_top: *mut u8,
    _entry: Entry,
    _arg: *mut c_void,
) -> isize {
    -(libc::ENOSYS as isize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicI32, Ordering};

    #[test]
    fn raw_calls_return_results_and_negative_errnos() {
        let pid = unsafe { call1(libc::SYS_getpid, 0) };
        assert_eq!(pid, std::process::id() as isize);
        let r = unsafe { call1(libc::SYS_close, 100_000) };
        assert_eq!(r, -(libc::EBADF as isize));
    }

    static SEEN: AtomicI32 = AtomicI32::new(0);

    extern "C" fn child(arg: *mut c_void) -> i32 {
        // Shares our memory: the store is visible to the parent.
        SEEN.store(arg as usize as i32, Ordering::SeqCst);
        unsafe { exit(7) }
    }

    #[test]
    fn clone_runs_the_entry_on_its_stack_in_shared_memory() {
        let mut stack = vec![0u8; 64 * 1024];
        let top = unsafe { stack.as_mut_ptr().add(stack.len()) };
        let pid = unsafe {
            clone(
                (libc::CLONE_VM | libc::SIGCHLD) as usize,
                top,
                child,
                42usize as *mut c_void,
            )
        };
        assert!(pid > 0, "{pid}");
        let mut status = 0;
        assert_eq!(
            unsafe { libc::waitpid(pid as i32, &mut status, 0) },
            pid as i32
        );
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 7,
            "{status:#x}"
        );
        assert_eq!(SEEN.load(Ordering::SeqCst), 42);
        drop(stack);
    }
}
