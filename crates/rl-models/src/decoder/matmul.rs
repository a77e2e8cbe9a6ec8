//! The GEMM orientation rule of every linear product: [`matmul_hf`] computes `x Wᵀ` for an
//! HF-layout weight in whichever orientation burn-flex runs faster at that shape.

use burn::tensor::Tensor;
use burn::tensor::backend::Backend;

/// `x W^T` for `x: [m, in]` and an HF-layout weight `W: [out, in]`, as one 2-D GEMM.
///
/// burn-flex's GEMM runs the same product at very different speeds depending on which side is
/// long, so the orientation is chosen by shape ([`transposed_product`]): either `x W^T` directly,
/// or `(W x^T)^T` with the long `out` side as the GEMM's `m` dimension.
pub(super) fn matmul_hf<B: Backend>(x: Tensor<B, 2>, w: Tensor<B, 2>) -> Tensor<B, 2> {
    let m = x.dims()[0];
    let out = w.dims()[0];
    if transposed_product(m, out, w.is_require_grad()) {
        w.matmul(x.transpose()).transpose()
    } else {
        x.matmul(w.transpose())
    }
}

/// Whether [`matmul_hf`] computes `x W^T` as `(W x^T)^T` for `m` rows and `out` output features;
/// `tracked` = the weight is tracked by autodiff (training: the choice also fixes the shapes of
/// the two backward GEMMs).
///
/// Measured with burn-flex 0.21 on the 2-core AVX-512 EPYC build machine
/// (`examples/matmul_probe.rs`, table in docs/performance.md). Without autodiff, `(W x^T)^T` is
/// 1.4-2.6x faster at 8-32 rows (and at 64 rows of a 3072 → 1024 layer) and 1.1-2.8x slower from
/// 128 rows on, where its transposed result costs a strided copy. With autodiff, forward + both
/// backward GEMMs of a layer-sized weight are 1.2-2.9x faster as `(W x^T)^T` at 64-256 rows (the
/// weight gradient `dy^T x` comes out in the weight's own layout) and 5-15 % slower at 1024.
fn transposed_product(m: usize, out: usize, tracked: bool) -> bool {
    const LAYER_SIZED: usize = 16_384;
    if tracked && out <= LAYER_SIZED {
        m <= 512
    } else {
        m <= 32 || (m <= 64 && out <= LAYER_SIZED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::{Autodiff, Flex};
    use burn::tensor::TensorData;

    /// `x Wᵀ` in f64 by the definition, for `x: [m, k]`, `W: [out, k]` (row-major).
    fn plain_product(x: &[f32], w: &[f32], m: usize, k: usize, out: usize) -> Vec<f64> {
        let mut y = vec![0.0f64; m * out];
        for i in 0..m {
            for j in 0..out {
                y[i * out + j] = (0..k)
                    .map(|t| f64::from(x[i * k + t]) * f64::from(w[j * k + t]))
                    .sum();
            }
        }
        y
    }

    fn check_matmul_hf<B: Backend>(m: usize, k: usize, out: usize, tracked: bool) {
        let device = Default::default();
        let x: Vec<f32> = (0..m * k)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0)
            .collect();
        let w: Vec<f32> = (0..out * k)
            .map(|i| ((i * 53 % 89) as f32 - 44.0) / 44.0)
            .collect();
        let xt = Tensor::<B, 2>::from_data(TensorData::new(x.clone(), [m, k]), &device);
        let mut wt = Tensor::<B, 2>::from_data(TensorData::new(w.clone(), [out, k]), &device);
        if tracked {
            wt = wt.require_grad();
        }
        let got: Vec<f32> = matmul_hf(xt, wt).into_data().to_vec().unwrap();
        assert_eq!(got.len(), m * out);
        for (g, r) in got.iter().zip(plain_product(&x, &w, m, k, out)) {
            assert!(
                (f64::from(*g) - r).abs() <= 1e-4 * (1.0 + r.abs()),
                "m {m}, out {out}, tracked {tracked}: {g} vs {r}"
            );
        }
    }

    #[test]
    fn both_gemm_orientations_compute_x_w_transposed() {
        // Each (rows, out, tracked) below takes the branch named beside it.
        let cases = [
            (8, 24, false, true),
            (100, 24, false, false),
            (40, 20_000, false, false),
            (16, 20_000, false, true),
            (100, 24, true, true),
            (600, 24, true, false),
            (100, 20_000, true, false),
        ];
        for (m, out, tracked, transposed) in cases {
            assert_eq!(
                transposed_product(m, out, tracked),
                transposed,
                "{m} {out} {tracked}"
            );
            if tracked {
                check_matmul_hf::<Autodiff<Flex>>(m, 3, out, true);
            } else {
                check_matmul_hf::<Flex>(m, 3, out, false);
            }
        }
    }

    /// On a CPU with AVX-512, the patched gemm-common (third_party/PATCHED.md) takes its AVX2
    /// kernels for products with fewer than 16 output columns and its AVX-512 kernels from 16 on
    /// (either way on other CPUs): products on both sides of the boundary, in both orientations,
    /// against the f64 definition.
    #[test]
    fn products_on_both_sides_of_the_avx512_kernel_boundary() {
        for out in [1, 15, 16, 17, 40] {
            for m in [1, 15, 16, 33] {
                check_matmul_hf::<Flex>(m, 37, out, false);
                let x = Tensor::<Flex, 2>::ones([m, 37], &Default::default()).mul_scalar(0.5);
                let w = Tensor::<Flex, 2>::ones([out, 37], &Default::default());
                // (W xᵀ)ᵀ directly, the other orientation of the same shape: every entry is
                // Σ over 37 inputs of 0.5 · 1 = 18.5
                let y: Vec<f32> = w
                    .matmul(x.transpose())
                    .transpose()
                    .into_data()
                    .to_vec()
                    .unwrap();
                assert!(
                    y.iter().all(|v| (v - 18.5).abs() < 1e-4),
                    "m {m}, out {out}"
                );
            }
        }
    }
}
