//! A few trainer steps on every compiled backend (`cpu::*` always, `wgpu::*` / `cuda::*` with the
//! crate features of the same names); the suite is `tests/suite/steps.rs`.

macro_rules! backend_suite {
    ($name:ident, $backend:ty, $device:expr) => {
        mod $name {
            type B = $backend;
            fn dev() -> burn::tensor::Device<B> {
                $device
            }
            include!("suite/steps.rs");
        }
    };
}

backend_suite!(
    cpu,
    burn::backend::Autodiff<burn::backend::Flex>,
    Default::default()
);
#[cfg(feature = "wgpu")]
backend_suite!(
    wgpu,
    burn::backend::Autodiff<burn::backend::Wgpu>,
    burn::backend::wgpu::WgpuDevice::DefaultDevice
);
#[cfg(feature = "cuda")]
backend_suite!(
    cuda,
    burn::backend::Autodiff<burn::backend::Cuda>,
    burn::backend::cuda::CudaDevice::new(0)
);
