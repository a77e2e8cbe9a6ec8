//! The CPU backend's threads: the calling thread as a worker of rayon's global pool.
//!
//! burn's CPU backend (burn-flex) and its GEMM kernels split large operations across rayon's
//! global thread pool. Called from a thread outside the pool (a binary's main thread), every
//! such operation hands all of its pieces to the pool's workers, puts the caller to sleep and
//! wakes it when they are done: a context switch per operation, and on a 2-core machine three
//! threads (the caller and two workers) contending for two cores. Once the calling thread is
//! worker 0 of the pool ([`join_compute_pool`]), it runs its operations' pieces itself while
//! the other workers steal the rest, and nothing sleeps between operations. Measured on the
//! embedded Qwen3 shape (docs/performance.md, "The main thread in the compute pool and a
//! vectorised exp"): forward +6 %, decode +10 %, forward + backward +2 %.
//!
//! Binaries opt in first thing in `main` (every binary and example of this workspace does):
//!
//! ```no_run
//! // the first line of `main`, before any tensor operation
//! rl_models::threads::join_compute_pool();
//! ```
//!
//! Other threads (the asynchronous rollout thread, `rlvr train --workers N`'s workers) keep
//! handing their operations to the pool as before; the pool keeps rayon's size
//! (`RAYON_NUM_THREADS`, else one thread per core), the calling thread counted.

/// Builds rayon's global pool with the calling thread as its worker 0. Returns `false` (and
/// changes nothing) when the global pool exists already, e.g. because a parallel operation ran
/// before this call, or when the pool cannot be built; operations then run as without it.
pub fn join_compute_pool() -> bool {
    rayon::ThreadPoolBuilder::new()
        .use_current_thread()
        .thread_name(|i| format!("rayon-compute-{i}"))
        .build_global()
        .is_ok()
}
