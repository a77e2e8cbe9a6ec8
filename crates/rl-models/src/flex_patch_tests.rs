//! Tests of the paths the patched burn-flex (third_party/burn-flex, PATCHED.md) changed, on the
//! CPU backend, against index arithmetic written here: copies of permuted and sliced views,
//! element-wise ops of permuted and broadcast operands of rank 2-4, slice assignment with a
//! second holder of the buffer, freshly allocated zeros; and the vectorised f32 `exp` (`exp`,
//! `sigmoid`, softmax, attention) against f64.

use burn::backend::Flex;
use burn::tensor::{Tensor, TensorData};

type B = Flex;

/// `0, 1, 2, ...` (as f32, plus `bias`) in `shape`.
fn iota<const D: usize>(shape: [usize; D], bias: f32) -> Tensor<B, D> {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|i| i as f32 + bias).collect();
    Tensor::from_data(TensorData::new(v, shape), &Default::default())
}

fn values<const D: usize>(t: Tensor<B, D>) -> Vec<f32> {
    t.into_data().to_vec().unwrap()
}

/// Row-major strides of `shape`.
fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

/// The multi-index of flat position `i` in `shape`.
fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        idx[d] = i % shape[d];
        i /= shape[d];
    }
    idx
}

/// The value `iota(src_shape, bias)` holds at `idx`.
fn at(idx: &[usize], src_shape: &[usize], bias: f32) -> f32 {
    let s = strides(src_shape);
    idx.iter().zip(&s).map(|(i, s)| i * s).sum::<usize>() as f32 + bias
}

#[test]
fn permuted_and_sliced_views_copy_to_their_logical_order() {
    // the head split: [b, L, h, d] -> [b, h, L, d] (4-D, inner unit stride: row copies)
    let src = [2, 3, 4, 5];
    let got = values(iota(src, 0.0).swap_dims(1, 2).reshape([2 * 4 * 3 * 5]));
    for (i, g) in got.iter().enumerate() {
        let o = unravel(i, &[2, 4, 3, 5]);
        assert_eq!(*g, at(&[o[0], o[2], o[1], o[3]], &src, 0.0), "position {i}");
    }
    // inner dims swapped too (3-D blocks with a non-unit inner stride: tiled copies)
    let got = values(iota(src, 0.0).permute([1, 0, 3, 2]).reshape([120]));
    for (i, g) in got.iter().enumerate() {
        let o = unravel(i, &[3, 2, 5, 4]);
        assert_eq!(*g, at(&[o[1], o[0], o[3], o[2]], &src, 0.0), "position {i}");
    }
    // a slice of the last dim (2-D rows of unit stride, one apart by the full row)
    let got = values(iota([6, 7], 0.0).slice([0..6, 2..5]).reshape([18]));
    for (i, g) in got.iter().enumerate() {
        let o = unravel(i, &[6, 3]);
        assert_eq!(*g, at(&[o[0], o[1] + 2], &[6, 7], 0.0), "position {i}");
    }
    // the same slice at rank 3, after a permutation
    let got = values(
        iota([2, 6, 7], 0.0)
            .slice([0..2, 1..6, 2..5])
            .swap_dims(0, 1)
            .reshape([30]),
    );
    for (i, g) in got.iter().enumerate() {
        let o = unravel(i, &[5, 2, 3]);
        assert_eq!(
            *g,
            at(&[o[1], o[0] + 1, o[2] + 2], &[2, 6, 7], 0.0),
            "position {i}"
        );
    }
}

/// (name, the op on rank-`D` tensors, the same op on one element)
type Case<const D: usize> = (
    &'static str,
    fn(Tensor<B, D>, Tensor<B, D>) -> Tensor<B, D>,
    fn(f32, f32) -> f32,
);

#[test]
fn element_wise_ops_of_permuted_and_broadcast_operands() {
    let ops: [Case<4>; 4] = [
        ("add", |a, b| a + b, |a, b| a + b),
        ("sub", |a, b| a - b, |a, b| a - b),
        ("mul", |a, b| a * b, |a, b| a * b),
        ("div", |a, b| a / b, |a, b| a / b),
    ];
    let out = [2, 4, 3, 5];
    // Every output position `o` (its multi-index in `out`) against `want(o)`.
    let check = |got: Tensor<B, 4>, want: &dyn Fn(&[usize]) -> f32, what: &str| {
        for (i, g) in values(got).iter().enumerate() {
            assert_eq!(*g, want(&unravel(i, &out)), "{what} at {i}");
        }
    };
    for (name, op, f) in ops {
        // permuted lhs, rhs broadcast over dims 0 and 2 (rows of unit stride on both sides)
        check(
            op(
                iota([2, 3, 4, 5], 1.0).swap_dims(1, 2),
                iota([1, 4, 1, 5], 0.5),
            ),
            &|o| {
                let a = at(&[o[0], o[2], o[1], o[3]], &[2, 3, 4, 5], 1.0);
                f(a, at(&[0, o[1], 0, o[3]], &[1, 4, 1, 5], 0.5))
            },
            name,
        );
        // rhs broadcast along the last dim and over dim 1 (a stride-0 row: one scalar per row)
        check(
            op(
                iota([2, 3, 4, 5], 2.0).swap_dims(1, 2),
                iota([2, 1, 3, 1], 1.0),
            ),
            &|o| {
                let a = at(&[o[0], o[2], o[1], o[3]], &[2, 3, 4, 5], 2.0);
                f(a, at(&[o[0], 0, o[2], 0], &[2, 1, 3, 1], 1.0))
            },
            &format!("{name} (row scalar)"),
        );
        // the broadcast operand on the left, the permuted one on the right
        check(
            op(
                iota([2, 1, 3, 1], 3.0),
                iota([2, 3, 4, 5], 1.0).swap_dims(1, 2),
            ),
            &|o| {
                let a = at(&[o[0], 0, o[2], 0], &[2, 1, 3, 1], 3.0);
                f(a, at(&[o[0], o[2], o[1], o[3]], &[2, 3, 4, 5], 1.0))
            },
            &format!("{name} (broadcast lhs)"),
        );
        // both sides with non-unit inner strides (transposed inner dims)
        check(
            op(
                iota([2, 4, 5, 3], 1.0).swap_dims(2, 3),
                iota([2, 4, 5, 3], 7.0).swap_dims(2, 3),
            ),
            &|o| {
                let src = [o[0], o[1], o[3], o[2]];
                f(at(&src, &[2, 4, 5, 3], 1.0), at(&src, &[2, 4, 5, 3], 7.0))
            },
            &format!("{name} (strided inner)"),
        );
    }
}

#[test]
fn slice_assign_writes_the_region_and_leaves_other_holders_unchanged() {
    let base = iota([2, 3, 4], 0.0);
    let kept = base.clone(); // a second holder of the same buffer
    let patch = iota([2, 2, 2], 100.0);
    let written = base.slice_assign([0..2, 1..3, 1..3], patch);
    let got = values(written);
    for (i, g) in got.iter().enumerate() {
        let o = unravel(i, &[2, 3, 4]);
        let inside = (1..3).contains(&o[1]) && (1..3).contains(&o[2]);
        let want = if inside {
            at(&[o[0], o[1] - 1, o[2] - 1], &[2, 2, 2], 100.0)
        } else {
            at(&o, &[2, 3, 4], 0.0)
        };
        assert_eq!(*g, want, "position {i}");
    }
    assert_eq!(values(kept), values(iota([2, 3, 4], 0.0)));
    // a uniquely held buffer, written twice in a row (the KV cache's tail)
    let mut tail = Tensor::<B, 3>::zeros([1, 4, 2], &Default::default());
    for at_pos in 0..4 {
        tail = tail.slice_assign(
            [0..1, at_pos..at_pos + 1, 0..2],
            iota([1, 1, 2], at_pos as f32),
        );
    }
    assert_eq!(values(tail), vec![0., 1., 1., 2., 2., 3., 3., 4.]);
}

#[test]
fn fresh_zeros_are_zero_for_every_width() {
    use burn::tensor::{DType, FloatDType};
    for dtype in [
        FloatDType::F32,
        FloatDType::F64,
        FloatDType::BF16,
        FloatDType::F16,
    ] {
        let dtype = DType::from(dtype);
        let t = Tensor::<B, 2>::zeros([3, 5], (&Default::default(), dtype));
        assert_eq!(t.dtype(), dtype);
        let v: Vec<f32> = t.cast(FloatDType::F32).into_data().to_vec().unwrap();
        assert_eq!(v, vec![0.0; 15]);
    }
}

#[test]
fn element_wise_ops_split_across_threads_compute_every_element() {
    // 300 K elements: above the patched parallel threshold (64 K), with a last chunk that is
    // not a whole chunk; each op is checked on the in-place path (a uniquely held operand) and
    // on the allocating path (a second holder keeps the buffer shared).
    let n = 300_007usize;
    let host_a: Vec<f32> = (0..n)
        .map(|i| ((i % 1000) as f32 - 500.0) / 100.0)
        .collect();
    let host_b: Vec<f32> = (0..n)
        .map(|i| ((i * 7 % 911) as f32 + 1.0) / 50.0)
        .collect();
    let t = |v: &Vec<f32>| {
        Tensor::<B, 1>::from_data(TensorData::new(v.clone(), [n]), &Default::default())
    };
    let check = |got: Tensor<B, 1>, want: &dyn Fn(usize) -> f32, what: &str| {
        let got = values(got);
        assert_eq!(got.len(), n);
        for (i, g) in got.iter().enumerate() {
            assert_eq!(*g, want(i), "{what} at {i}");
        }
    };
    let ops: [Case<1>; 7] = [
        ("mul", |a, b| a * b, |a, b| a * b),
        ("sub", |a, b| a - b, |a, b| a - b),
        ("mul_scalar", |a, _| a.mul_scalar(0.5), |a, _| a * 0.5),
        ("add_scalar", |a, _| a.add_scalar(3.0), |a, _| a + 3.0),
        ("div", |a, b| a / b, |a, b| a / b),
        ("sqrt", |_, b| b.sqrt(), |_, b| b.sqrt()),
        ("abs", |a, _| a.abs(), |a, _| a.abs()),
    ];
    for shared in [false, true] {
        for (what, op, want) in ops {
            // Fresh operands per op: uniquely held ones take the in-place path.
            let (a, b) = (t(&host_a), t(&host_b));
            let keep = shared.then(|| (a.clone(), b.clone()));
            check(op(a, b), &|i| want(host_a[i], host_b[i]), what);
            drop(keep);
        }
    }
}

/// The error of `got` against the exact value `want`, in units in the last place of `want`
/// rounded to f32 (the spacing of f32s just above its magnitude; 2^-149 for subnormals).
fn ulps(got: f32, want: f64) -> f64 {
    let w = (want as f32).abs();
    let ulp = f64::from(f32::from_bits(w.to_bits() + 1) - w);
    (f64::from(got) - want).abs() / ulp
}

/// `n` points evenly spread over `[lo, hi]`.
fn sweep(n: usize, lo: f64, hi: f64) -> Vec<f32> {
    (0..n)
        .map(|i| (lo + (hi - lo) * i as f64 / (n - 1) as f64) as f32)
        .collect()
}

#[test]
fn vectorised_exp_and_sigmoid_are_within_their_error_bounds_of_f64() {
    // The patch computes e^x with Cephes' expf algorithm (third_party/burn-flex/src/ops/vexp.rs)
    // instead of the C library's expf (error < 1 ulp). Cephes documents a peak relative error of
    // 1.7e-7 for its expf, which is 1.43 ulp at the top of a binade and 2.85 at its bottom: the
    // bound checked is 3 ulp against f64's exp. Sigmoid 1/(1 + e) (x >= 0) or e/(1 + e) (x < 0)
    // with e = e^-|x| < 1 adds two roundings (+1 ulp) to e's relative error, which the quotient
    // passes on at most once: 4 ulp. Measured: see the assertion messages.
    // 400 K points over [-110, 95] (every underflow, subnormal, normal and overflow range), so
    // the parallel path runs; each op on a uniquely held tensor (in place), a shared one
    // (allocating) and an offset view (copied).
    let n = 400_003;
    let xs = sweep(n, -110.0, 95.0);
    let dev = Default::default();
    // (name, the op, its f64 reference, the bound in ulp)
    type Unary = (
        &'static str,
        fn(Tensor<B, 1>) -> Tensor<B, 1>,
        fn(f32) -> f64,
        f64,
    );
    let cases: [Unary; 2] = [
        ("exp", |t| t.exp(), |x| f64::from(x).exp(), 3.0),
        (
            "sigmoid",
            burn::tensor::activation::sigmoid,
            |x| 1.0 / (1.0 + (-f64::from(x)).exp()),
            4.0,
        ),
    ];
    for (what, op, reference, bound) in cases {
        for path in ["in place", "shared", "view"] {
            let got = match path {
                "in place" => values(op(Tensor::from_data(
                    TensorData::new(xs.clone(), [n]),
                    &dev,
                ))),
                "shared" => {
                    let t = Tensor::<B, 1>::from_data(TensorData::new(xs.clone(), [n]), &dev);
                    let keep = t.clone();
                    let got = values(op(t));
                    assert_eq!(values(keep), xs, "{what}: the shared input changed");
                    got
                }
                _ => {
                    let mut padded = vec![7.0f32];
                    padded.extend(&xs);
                    let t = Tensor::<B, 1>::from_data(TensorData::new(padded, [n + 1]), &dev);
                    values(op(t.narrow(0, 1, n)))
                }
            };
            let mut worst = (0.0f64, 0.0f32);
            for (&x, &g) in xs.iter().zip(&got) {
                let want = reference(x);
                if want > f64::from(f32::MAX) {
                    assert_eq!(g, f32::INFINITY, "{what}({x}) overflows");
                    continue;
                }
                let e = ulps(g, want);
                if e > worst.0 {
                    worst = (e, x);
                }
            }
            assert!(
                worst.0 <= bound,
                "{what} ({path}): {:.3} ulp at x = {} (bound {bound})",
                worst.0,
                worst.1
            );
            eprintln!(
                "{what} ({path}): worst {:.3} ulp at x = {}",
                worst.0, worst.1
            );
        }
    }
    // Special values, as the C library gives them.
    let special = [
        f32::NEG_INFINITY,
        f32::INFINITY,
        f32::NAN,
        0.0,
        -0.0,
        89.0,
        -200.0,
    ];
    let t = || Tensor::<B, 1>::from_data(TensorData::new(special.to_vec(), [7]), &dev);
    let e = values(t().exp());
    assert_eq!(&e[..2], &[0.0, f32::INFINITY]);
    assert!(e[2].is_nan());
    assert_eq!(&e[3..], &[1.0, 1.0, f32::INFINITY, 0.0]);
    let s = values(burn::tensor::activation::sigmoid(t()));
    assert_eq!(&s[..2], &[0.0, 1.0]);
    assert!(s[2].is_nan());
    assert_eq!(&s[3..], &[0.5, 0.5, 1.0, 0.0]);
}

#[test]
fn softmax_and_attention_with_the_vectorised_exp_match_f64() {
    // Rows of 12 (the embedded job's attention), 22 (its vocabulary) and 1000 logits; softmax by
    // f64 arithmetic on the same inputs. Each probability is a product of one exp (3 ulp, see
    // above) and the reciprocal of a sum of non-negative terms (relative error at most the row
    // length's worth of roundings, 1000 · 2^-24 = 6e-5 in the worst case): bound 1e-4 relative.
    let dev = Default::default();
    for len in [12usize, 22, 1000] {
        let rows = 64;
        let xs: Vec<f32> = (0..rows * len)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.37)
            .collect();
        let t = Tensor::<B, 2>::from_data(TensorData::new(xs.clone(), [rows, len]), &dev);
        let got = values(burn::tensor::activation::softmax(t, 1));
        for r in 0..rows {
            let row = &xs[r * len..(r + 1) * len];
            let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let ex: Vec<f64> = row.iter().map(|&x| f64::from(x - max).exp()).collect();
            let sum: f64 = ex.iter().sum();
            for (j, e) in ex.iter().enumerate() {
                let want = e / sum;
                let g = f64::from(got[r * len + j]);
                assert!(
                    (g - want).abs() <= 1e-4 * want + 1e-30,
                    "softmax row {r} (len {len}) [{j}]: {g} vs {want}"
                );
            }
        }
    }
    // burn's fused attention (the rollout's path) on one head: softmax(q kᵀ / √d + bias) v with
    // a causal bias of -inf above the diagonal, against f64 arithmetic.
    let (l, d) = (12usize, 32usize);
    let q: Vec<f32> = (0..l * d)
        .map(|i| ((i * 13 % 29) as f32 - 14.0) / 9.0)
        .collect();
    let k: Vec<f32> = (0..l * d)
        .map(|i| ((i * 7 % 31) as f32 - 15.0) / 11.0)
        .collect();
    let v: Vec<f32> = (0..l * d)
        .map(|i| ((i * 5 % 23) as f32 - 11.0) / 7.0)
        .collect();
    let bias: Vec<f32> = (0..l * l)
        .map(|i| {
            if i % l > i / l {
                f32::NEG_INFINITY
            } else {
                0.0
            }
        })
        .collect();
    let t4 = |v: &Vec<f32>, s: [usize; 4]| {
        Tensor::<B, 4>::from_data(TensorData::new(v.clone(), s), &dev)
    };
    let out = burn::tensor::module::attention(
        t4(&q, [1, 1, l, d]),
        t4(&k, [1, 1, l, d]),
        t4(&v, [1, 1, l, d]),
        None,
        Some(t4(&bias, [1, 1, l, l])),
        burn::tensor::ops::AttentionModuleOptions {
            scale: Some(1.0 / (d as f64).sqrt()),
            softcap: None,
            is_causal: false,
        },
    );
    let got = values(out);
    for i in 0..l {
        let s: Vec<f64> = (0..=i)
            .map(|j| {
                (0..d)
                    .map(|c| f64::from(q[i * d + c]) * f64::from(k[j * d + c]))
                    .sum::<f64>()
                    / (d as f64).sqrt()
            })
            .collect();
        let m = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = s.iter().map(|x| (x - m).exp()).collect();
        let z: f64 = e.iter().sum();
        for c in 0..d {
            let want: f64 = (0..=i).map(|j| e[j] / z * f64::from(v[j * d + c])).sum();
            let g = f64::from(got[i * d + c]);
            assert!(
                (g - want).abs() <= 1e-5,
                "attention [{i}, {c}]: {g} vs {want}"
            );
        }
    }
}
