//! Full-vocabulary distillation divergence: the generalized Jensen–Shannon divergence of GKD
//! (Agarwal et al. 2024, "On-Policy Distillation of Language Models", arXiv 2306.13649, Eq. 1),
//! as TRL's `GKDTrainer.generalized_jsd_loss` computes it.
//!
//! With p_S = softmax(z_S / T) (student), p_T = softmax(z_T / T) (teacher) and the mixture
//! m = (1 − β)·p_S + β·p_T, per position:
//!
//! * β = 0: KL(p_T ‖ p_S) = Σ_v p_T (log p_T − log p_S) (forward KL, supervised-KD-like);
//! * β = 1: KL(p_S ‖ p_T) = Σ_v p_S (log p_S − log p_T) (reverse KL, the on-policy
//!   distillation signal);
//! * otherwise: JSD_β = β·KL(p_T ‖ m) + (1 − β)·KL(p_S ‖ m).
//!
//! The teacher's logits are detached. The log-normalisers are computed first over the whole
//! row; the divergence is then summed over vocabulary chunks of `vocab_chunk` columns, so the
//! element-wise temporaries (probabilities, the mixture) are `[rows, vocab_chunk]` at a time.
//! The gradient with respect to the student's logits z = T·s is the closed form
//! ∂D/∂z = p_S ⊙ (u − Σ_v p_S u) / T with u = ∂D/∂p_S: (1 − β)·log(p_S/m) for 0 < β < 1,
//! log p_S − log p_T for β = 1 (its +1 cancels); for β = 0 it is (p_S − p_T) / T. The backward keeps no
//! graph over the chunks, only one `[rows, vocab]` gradient, and gives exactly 0 (not a rounding
//! residue) where student and teacher logits are equal and β ∈ {0, 1}.
//! Aggregate the per-position values with [`crate::aggregate`] (TRL divides the sum by the
//! number of completion tokens: `token_mean`).

use burn::prelude::*;

use crate::LossError;

/// The generalized JSD (see the module documentation) of each row: `[rows]` from student and
/// teacher logits `[rows, vocab]`. Differentiable with respect to the student's logits.
///
/// Errors: shapes that differ, β outside [0, 1], a temperature that is not finite and > 0, or
/// a chunk of 0 columns.
pub fn generalized_jsd<B: Backend>(
    student_logits: Tensor<B, 2>,
    teacher_logits: Tensor<B, 2>,
    beta: f64,
    temperature: f64,
    vocab_chunk: usize,
) -> Result<Tensor<B, 1>, LossError> {
    let [rows, vocab] = student_logits.dims();
    let teacher_dims = teacher_logits.dims();
    if teacher_dims != [rows, vocab] {
        return Err(LossError::Shape {
            name: "teacher_logits",
            got: teacher_dims.to_vec(),
            expected: vec![rows, vocab],
        });
    }
    if !(0.0..=1.0).contains(&beta) {
        return Err(LossError::InvalidConfig(rl_core::InvalidValue {
            field: "beta",
            value: beta.to_string(),
            expected: "a number in [0, 1] (0: forward KL, 1: reverse KL)",
        }));
    }
    if !(temperature.is_finite() && temperature > 0.0) {
        return Err(LossError::InvalidConfig(rl_core::InvalidValue {
            field: "temperature",
            value: temperature.to_string(),
            expected: "a finite number > 0",
        }));
    }
    if vocab_chunk == 0 {
        return Err(LossError::InvalidConfig(rl_core::InvalidValue {
            field: "vocab_chunk",
            value: "0".into(),
            expected: "at least 1 column",
        }));
    }
    let z = student_logits;
    let student = z.clone().detach().div_scalar(temperature);
    let teacher = teacher_logits.detach().div_scalar(temperature);
    let lse_s = log_normaliser(student.clone(), vocab_chunk);
    let lse_t = log_normaliser(teacher.clone(), vocab_chunk);
    let device = student.device();
    // Chunk [v0, v0 + len): log p_S, log p_T, p_S and u = ∂JSD/∂p_S up to a constant.
    let chunk = |v0: usize, len: usize| -> Chunk<B> {
        let ls = student.clone().narrow(1, v0, len).sub(lse_s.clone());
        let lt = teacher.clone().narrow(1, v0, len).sub(lse_t.clone());
        let ps = ls.clone().exp();
        if beta == 0.0 {
            // ∂D/∂z = (p_S − p_T)/T directly (u = −p_T/p_S would divide by underflowing p_S);
            // `u` carries −p_T and pass 1's Σ_v p_S·u is not used.
            let pt = lt.clone().exp();
            Chunk {
                value: pt.clone().mul(lt.sub(ls)),
                u: pt.neg(),
                ps,
            }
        } else if beta == 1.0 {
            let d = ls.sub(lt);
            Chunk {
                value: ps.clone().mul(d.clone()),
                u: d,
                ps,
            }
        } else {
            let a = ls.clone().add_scalar((1.0 - beta).ln());
            let b = lt.clone().add_scalar(beta.ln());
            let top = a.clone().max_pair(b.clone());
            let lm = top
                .clone()
                .add(a.sub(top.clone()).exp().add(b.sub(top).exp()).log());
            let kl_t = lt.clone().exp().mul(lt.sub(lm.clone()));
            let kl_s = ps.clone().mul(ls.clone().sub(lm.clone()));
            Chunk {
                value: kl_t.mul_scalar(beta).add(kl_s.mul_scalar(1.0 - beta)),
                u: ls.sub(lm).mul_scalar(1.0 - beta),
                ps,
            }
        }
    };
    let spans: Vec<(usize, usize)> = (0..vocab)
        .step_by(vocab_chunk)
        .map(|v0| (v0, vocab_chunk.min(vocab - v0)))
        .collect();
    // Pass 1: the divergence and Σ_v p_S·u of each row.
    let mut value = Tensor::<B, 2>::zeros([rows, 1], &device);
    let mut mean_u = Tensor::<B, 2>::zeros([rows, 1], &device);
    for &(v0, len) in &spans {
        let c = chunk(v0, len);
        value = value.add(c.value.sum_dim(1));
        mean_u = mean_u.add(c.ps.mul(c.u).sum_dim(1));
    }
    // Pass 2: the gradient with respect to the student's logits, in closed form,
    // g = p_S ⊙ (u − Σ_v p_S·u) / T, carried by the zero-valued surrogate Σ_v sg(g)·z − sg(·).
    let mut surrogate = Tensor::<B, 2>::zeros([rows, 1], &device);
    for &(v0, len) in &spans {
        let c = chunk(v0, len);
        let g = if beta == 0.0 {
            c.ps.add(c.u)
        } else {
            c.ps.mul(c.u.sub(mean_u.clone()))
        }
        .div_scalar(temperature);
        surrogate = surrogate.add(z.clone().narrow(1, v0, len).mul(g).sum_dim(1));
    }
    let out = value.add(surrogate.clone()).sub(surrogate.detach());
    Ok(out.reshape([rows]))
}

/// One vocabulary chunk's per-entry divergence, student probabilities and ∂JSD/∂p_S (up to a
/// per-row constant, which the softmax's Jacobian removes; for β = 0, −p_T).
struct Chunk<B: Backend> {
    value: Tensor<B, 2>,
    ps: Tensor<B, 2>,
    u: Tensor<B, 2>,
}

/// log Σ_v exp(x_v) of each row, `[rows, 1]`: the row maximum (detached; the result does not
/// depend on it) plus the log of the chunked sum of exp(x − max).
fn log_normaliser<B: Backend>(x: Tensor<B, 2>, vocab_chunk: usize) -> Tensor<B, 2> {
    let [rows, vocab] = x.dims();
    let max = x.clone().detach().max_dim(1);
    let mut sum = Tensor::<B, 2>::zeros([rows, 1], &x.device());
    let mut v0 = 0;
    while v0 < vocab {
        let len = vocab_chunk.min(vocab - v0);
        sum = sum.add(
            x.clone()
                .narrow(1, v0, len)
                .sub(max.clone())
                .exp()
                .sum_dim(1),
        );
        v0 += len;
    }
    max.add(sum.log())
}
