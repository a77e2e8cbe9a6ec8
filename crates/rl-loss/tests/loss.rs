//! rl-loss numeric tests, instantiated for every compiled backend (candle's `test_device!`
//! idea): `cpu::*` always, `wgpu::*` with `--features wgpu`, `cuda::*` with `--features cuda`.
//! The suite itself is `tests/suite/loss.rs`.
//!
//! Tolerances (`Tol`): on the CPU backend single values agree to 1e-6, differently ordered sums
//! to 1e-5 relative, and finite differences (h = 1e-2, f32) to 2e-3. GPU backends may reorder
//! reductions and fuse kernels: 1e-4 and 5e-3.

/// What a backend may differ by.
#[derive(Clone, Copy, Debug)]
pub struct Tol {
    /// Single values that agree exactly in real numbers (hand-derived scalars, padding).
    pub value: f32,
    /// Sums whose order of accumulation differs (micro-batch accumulation, GSPO forms).
    pub sum: f32,
    /// Absolute tolerance of central finite differences (h = 1e-2).
    pub fd: f32,
}

macro_rules! backend_suite {
    ($name:ident, $backend:ty, $device:expr, $tol:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::Tol;
            type B = $backend;
            fn dev() -> burn::tensor::Device<B> {
                $device
            }
            const TOL: Tol = $tol;
            include!("suite/loss.rs");
        }
    };
}

backend_suite!(
    cpu,
    burn::backend::Autodiff<burn::backend::Flex>,
    Default::default(),
    Tol {
        value: 1e-6,
        sum: 1e-5,
        fd: 2e-3
    }
);
#[cfg(feature = "wgpu")]
backend_suite!(
    wgpu,
    burn::backend::Autodiff<burn::backend::Wgpu>,
    burn::backend::wgpu::WgpuDevice::DefaultDevice,
    Tol {
        value: 1e-4,
        sum: 1e-4,
        fd: 5e-3
    }
);
#[cfg(feature = "cuda")]
backend_suite!(
    cuda,
    burn::backend::Autodiff<burn::backend::Cuda>,
    burn::backend::cuda::CudaDevice::new(0),
    Tol {
        value: 1e-4,
        sum: 1e-4,
        fd: 5e-3
    }
);
