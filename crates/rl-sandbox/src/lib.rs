#![doc = include_str!("../README.md")]
//!
//! ## In detail
//!
//! A subprocess runner for untrusted programs (Python 3 first): the code verifier
//! (`rl-verifier`'s `code`) and the `python` tool of `rl-env` run model output only through it.
//! Burn-free and tensor-free: a trainer on any stack can depend on this crate alone.
//!
//! Each run gets a private working directory, its own user, network, PID, IPC and UTS
//! namespaces, Landlock filesystem (and, with a recent kernel, TCP and signal) isolation, a
//! seccomp filter against the host's Unix sockets, and wall-clock, CPU, memory, process,
//! file-size, fd and output limits; when [`Sandbox::run_python`] returns, no process and no file
//! of the run is left. [`Sandbox::new`] fails with [`SandboxError::Unavailable`] rather than run
//! anything with less; [`Sandbox::guarantees`] says what this machine gives.
//!
//! The public types below are the contract that `rl-verifier` and `rl-env` are written
//! against; `docs/sandbox.md` says what is guaranteed (and which test checks it), what is not,
//! and what a run costs. Linux on x86_64 and aarch64 only: elsewhere the crate compiles and
//! `Sandbox::new` returns `Unavailable`.

#![deny(missing_docs)]

mod config;
mod error;
mod program;
mod sandbox;
mod validate;

#[cfg(target_os = "linux")]
mod fds;
#[cfg(target_os = "linux")]
mod interp;
#[cfg(target_os = "linux")]
mod landlock;
#[cfg(target_os = "linux")]
mod report;
#[cfg(target_os = "linux")]
mod seccomp;
#[cfg(target_os = "linux")]
mod slots;
#[cfg(target_os = "linux")]
mod spawn;
#[cfg(target_os = "linux")]
mod supervise;
#[cfg(target_os = "linux")]
mod sys;
#[cfg(target_os = "linux")]
mod workdir;

pub use config::{Limits, SandboxConfig};
pub use error::SandboxError;
#[cfg(target_os = "linux")]
pub(crate) use error::io_err;
pub use program::{Program, Run, Status};
pub use sandbox::{Guarantees, Sandbox};
