//! The measurements behind `transposed_product` in `src/qwen3.rs`: how fast burn-flex computes
//! a linear layer `x Wᵀ` (`x: [m, in]`, HF-layout `W: [out, in]`) as `x Wᵀ` or as `(W xᵀ)ᵀ`, for
//! Qwen3-0.6B's layer and LM-head shapes and a range of row counts `m`.
//!
//! ```text
//! cargo run --release -p rl-models --example matmul_probe
//! ```
//!
//! `inference`: the product plus one element-wise op on the result (what the next layer does
//! with it; a transposed result is read through a strided view). `training` (autodiff): forward,
//! backward, and one element-wise op on each of the weight's and the input's gradients (what an
//! optimizer step does). Median of 7 runs after a warm-up, in GFLOP/s of the GEMM work (2·m·in·out
//! forward, 3× that with the backward pass). Results: docs/performance.md.

use std::time::Instant;

use burn::backend::{Autodiff, Flex};
use burn::module::Param;
use burn::tensor::{Distribution, Tensor};

#[global_allocator]
static ALLOC: rl_models::allocator::MiMalloc = rl_models::allocator::MiMalloc;

type AD = Autodiff<Flex>;

fn median_secs(mut f: impl FnMut()) -> f64 {
    f();
    let mut v: Vec<f64> = (0..7)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[3]
}

fn inference(m: usize, inp: usize, out: usize, transposed: bool) -> f64 {
    let d = Default::default();
    let x = Tensor::<Flex, 2>::random([m, inp], Distribution::Default, &d);
    let w = Tensor::<Flex, 2>::random([out, inp], Distribution::Default, &d);
    let secs = median_secs(|| {
        let y = if transposed {
            w.clone().matmul(x.clone().transpose()).transpose()
        } else {
            x.clone().matmul(w.clone().transpose())
        };
        let _ = (y + 1.0).slice([0..1, 0..1]).into_data();
    });
    2.0 * (m * inp * out) as f64 / secs / 1e9
}

fn training(m: usize, inp: usize, out: usize, transposed: bool) -> f64 {
    let d = Default::default();
    let w = Param::from_tensor(Tensor::<AD, 2>::random(
        [out, inp],
        Distribution::Default,
        &d,
    ));
    let x0 = Tensor::<Flex, 2>::random([m, inp], Distribution::Default, &d);
    let secs = median_secs(|| {
        let x = Tensor::<AD, 2>::from_inner(x0.clone()).require_grad();
        let y = if transposed {
            w.val().matmul(x.clone().transpose()).transpose()
        } else {
            x.clone().matmul(w.val().transpose())
        };
        let grads = (y * 0.5).sum().backward();
        let gw = w.val().grad(&grads).expect("weight gradient");
        let gx = x.grad(&grads).expect("input gradient");
        let _ = (gw * 2.0).slice([0..1, 0..1]).into_data();
        let _ = (gx * 2.0).slice([0..1, 0..1]).into_data();
    });
    6.0 * (m * inp * out) as f64 / secs / 1e9
}

fn main() {
    rl_models::allocator::tune_for_tensors();
    rl_models::threads::join_compute_pool();
    println!("| mode | in → out | m | x Wᵀ GFLOP/s | (W xᵀ)ᵀ GFLOP/s |");
    println!("|---|---|---|---|---|");
    let shapes = [(1024, 3072), (3072, 1024), (1024, 151_936)];
    for (inp, out) in shapes {
        for m in [1, 8, 32, 64, 128, 256, 512] {
            let a = inference(m, inp, out, false);
            let b = inference(m, inp, out, true);
            println!("| inference | {inp} → {out} | {m} | {a:.1} | {b:.1} |");
        }
    }
    for (inp, out) in shapes {
        for m in [64, 256, 1024] {
            if out > 16_384 && m > 256 {
                continue; // 622 MB weight gradients: minutes per point on 2 cores
            }
            let a = training(m, inp, out, false);
            let b = training(m, inp, out, true);
            println!("| training | {inp} → {out} | {m} | {a:.1} | {b:.1} |");
        }
    }
}
