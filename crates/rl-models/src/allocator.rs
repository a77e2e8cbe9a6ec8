//! The memory allocator for binaries that run models on the CPU backend.
//!
//! A forward + backward pass of Qwen3-0.6B allocates and frees gigabytes of tensors per step,
//! many of them above glibc's 32 MiB `mmap` threshold (a 622 MB `[vocab, hidden]` weight
//! gradient, the logits block). glibc hands those back to the kernel on every free, so each
//! step page-faults all of them in again: 7.6 M minor faults and a quarter of the time in the
//! kernel on one training benchmark. mimalloc with purging off keeps freed memory mapped for
//! reuse, and transparent huge pages cut TLB misses in the GEMMs: the same benchmark runs
//! 1.5-1.6x faster (docs/performance.md).
//!
//! A library cannot choose the process's allocator, so this is opt-in for binaries (every
//! binary and example of this workspace does it):
//!
//! ```no_run
//! #[global_allocator]
//! static ALLOC: rl_models::allocator::MiMalloc = rl_models::allocator::MiMalloc;
//!
//! fn main() {
//!     rl_models::allocator::tune_for_tensors();
//!     // ...
//! }
//! ```
//!
//! The cost: freed memory is not returned to the OS, so the resident size stays at the peak of
//! the process (which a training loop reaches again every step anyway).

pub use mimalloc::MiMalloc;

/// `mi_option_allow_large_os_pages` in mimalloc 2.x's `mi_option_e` (`mimalloc.h`).
const OPTION_ALLOW_LARGE_OS_PAGES: libmimalloc_sys::mi_option_t = 6;
/// `mi_option_purge_delay` in mimalloc 2.x's `mi_option_e` (`mimalloc.h`).
const OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Sets mimalloc's options for tensor workloads: never purge freed memory back to the OS
/// (`purge_delay = -1`) and allow large (transparent huge) OS pages. Call it first thing in
/// `main`; it only affects a process whose `#[global_allocator]` is [`MiMalloc`], and its
/// values take precedence over the `MIMALLOC_*` environment variables.
pub fn tune_for_tensors() {
    // SAFETY: `mi_option_set` only stores an option value; valid at any time, from any thread.
    unsafe {
        libmimalloc_sys::mi_option_set(OPTION_PURGE_DELAY, -1);
        libmimalloc_sys::mi_option_set(OPTION_ALLOW_LARGE_OS_PAGES, 1);
    }
}
