//! Backend selection, done once, in `main`.
//!
//! Library code in this workspace is generic over `B: Backend` / `B: AutodiffBackend`. A binary
//! picks the concrete backend here: the CPU backend (burn's pure-Rust `flex`) is always compiled,
//! `wgpu` and `cuda` are added by the Cargo features of the same names. A command implements
//! [`BackendJob`] and [`run_on`] instantiates it for the requested backend.

use std::fmt;

use burn::backend::Autodiff;
use burn::tensor::backend::AutodiffBackend;
use serde::{Deserialize, Serialize};

/// burn's pure-Rust CPU backend (SIMD + rayon), f32.
pub type CpuBackend = burn::backend::Flex;
/// burn's wgpu backend (Vulkan / Metal / DX12, or Mesa lavapipe on a CPU-only machine), f32.
#[cfg(feature = "wgpu")]
pub type WgpuBackend = burn::backend::Wgpu;
/// burn's CUDA backend, f32.
#[cfg(feature = "cuda")]
pub type CudaBackend = burn::backend::Cuda;

/// A backend the user can ask for with `--backend`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// burn `flex` on the CPU (always available).
    Cpu,
    /// burn `wgpu` (needs the `wgpu` feature and a Vulkan/Metal/DX12 driver).
    Wgpu,
    /// burn `cuda` (needs the `cuda` feature and an NVIDIA driver).
    Cuda,
}

impl BackendKind {
    /// Name as accepted by `--backend`.
    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Cpu => "cpu",
            BackendKind::Wgpu => "wgpu",
            BackendKind::Cuda => "cuda",
        }
    }

    /// Whether this binary was built with the backend.
    pub fn is_compiled(self) -> bool {
        match self {
            BackendKind::Cpu => true,
            BackendKind::Wgpu => cfg!(feature = "wgpu"),
            BackendKind::Cuda => cfg!(feature = "cuda"),
        }
    }

    /// Backends compiled into this binary.
    pub fn compiled() -> Vec<BackendKind> {
        [BackendKind::Cpu, BackendKind::Wgpu, BackendKind::Cuda]
            .into_iter()
            .filter(|b| b.is_compiled())
            .collect()
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Asking for a backend this binary does not contain.
#[derive(Debug, thiserror::Error)]
#[error(
    "backend `{requested}` is not compiled into this binary (compiled: {compiled}); rebuild with `--features {requested}`"
)]
pub struct BackendNotCompiled {
    /// What was asked for.
    pub requested: BackendKind,
    /// What this binary has, comma separated.
    pub compiled: String,
}

/// A unit of work generic over the backend, run by [`run_on`].
pub trait BackendJob {
    /// What the job returns.
    type Output;
    /// Runs the job on backend `B` (with autodiff) and `device`.
    fn run<B: AutodiffBackend>(self, device: B::Device) -> Self::Output;
}

/// A data-mixing experiment of the lab, run on the chosen backend (`rlvr mix`, the example).
#[cfg(feature = "cli")]
impl BackendJob for rl_lab::mixing::MixingJob<'_> {
    type Output = Result<rl_datamix::experiment::Summary, rl_lab::mixing::MixingError>;
    fn run<B: AutodiffBackend>(self, device: B::Device) -> Self::Output {
        rl_lab::mixing::MixingJob::run::<B>(self, device)
    }
}

/// Runs `job` on the backend `kind`; the only place where a concrete backend type is named.
pub fn run_on<J: BackendJob>(kind: BackendKind, job: J) -> Result<J::Output, BackendNotCompiled> {
    match kind {
        BackendKind::Cpu => Ok(job.run::<Autodiff<CpuBackend>>(Default::default())),
        #[cfg(feature = "wgpu")]
        BackendKind::Wgpu => {
            Ok(job.run::<Autodiff<WgpuBackend>>(burn::backend::wgpu::WgpuDevice::DefaultDevice))
        }
        #[cfg(feature = "cuda")]
        BackendKind::Cuda => {
            Ok(job.run::<Autodiff<CudaBackend>>(burn::backend::cuda::CudaDevice::new(0)))
        }
        #[allow(unreachable_patterns)]
        other => Err(BackendNotCompiled {
            requested: other,
            compiled: BackendKind::compiled()
                .iter()
                .map(|b| b.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// [`run_on`] for a program's `main`: the job's value, or its error (exit code 1) or an
/// uncompiled backend (exit code 2) printed as `error: …` and the process ended.
pub fn run_or_exit<T, E: std::fmt::Display, J: BackendJob<Output = Result<T, E>>>(
    kind: BackendKind,
    job: J,
) -> T {
    match run_on(kind, job) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    }
}
