// The rl-loss suite, included once per backend by `tests/loss.rs` (which defines `B`, `dev()`
// and `TOL` in each backend's module).
//
// Expected values are derived by hand next to each test (algorithms.md §10.2 lists the same
// scalar checks), gradients are checked against central finite differences, and the
// accumulation/padding properties against the un-split, un-padded computation.

use burn::prelude::*;
use rl_loss::{
    Aggregation, GlobalCounts, KlConfig, KlEstimator, LossConfig, LossError, LossInput, PolicyLoss,
    aggregate, bradley_terry, compute_loss, generalized_jsd, kl_per_token, mask_from_lengths,
    value_loss,
};

fn t2(v: &[f32], shape: [usize; 2]) -> Tensor<B, 2> {
    Tensor::from_data(TensorData::new(v.to_vec(), shape), &dev())
}

fn vec2(t: Tensor<<B as burn::tensor::backend::AutodiffBackend>::InnerBackend, 2>) -> Vec<f32> {
    t.into_data().convert::<f32>().into_vec().unwrap()
}

fn scalar(t: Tensor<B, 1>) -> f32 {
    t.into_data().convert::<f32>().into_vec::<f32>().unwrap()[0]
}

fn cfg(policy: PolicyLoss, aggregation: Aggregation) -> LossConfig {
    LossConfig {
        policy,
        aggregation,
        kl: None,
        entropy_coef: 0.0,
        is_correction: Default::default(),
    }
}

fn ppo(lo: f64, hi: f64, dual: Option<f64>) -> PolicyLoss {
    PolicyLoss::Ppo {
        clip_low: lo,
        clip_high: hi,
        dual_clip: dual,
    }
}

/// One token with log-ratio ln(r) and advantage `a`; returns (loss, d loss / d logp).
fn one_token(policy: PolicyLoss, r: f32, a: f32) -> (f32, f32, rl_loss::LossMetrics) {
    let logp = t2(&[r.ln()], [1, 1]).require_grad();
    let input = LossInput {
        logp: logp.clone(),
        old_logp: t2(&[0.0], [1, 1]),
        advantages: t2(&[a], [1, 1]),
        mask: mask_from_lengths::<B>(&[1], 1, &dev()),
        ref_logp: None,
        entropy: None,
        is_weights: None,
    };
    let out = compute_loss(
        &cfg(policy, Aggregation::TokenMean),
        input,
        GlobalCounts::from_lengths(&[1]),
    )
    .unwrap();
    let m = out.metrics;
    let loss = scalar(out.loss.clone());
    let grads = out.loss.backward();
    (loss, vec2(logp.grad(&grads).unwrap())[0], m)
}

/// A = 1, r = 1.25. With ε_high = 0.28, 1.25 < 1.28 is inside the trust region: loss −r·A =
/// −1.25 and d/d logp (−A·e^{logp−old}) = −A·r = −1.25. With ε_high = 0.2 the ratio is clipped
/// to 1.2: loss −1.2, gradient 0.
#[test]
fn clip_higher_positive_advantage() {
    let (l, g, m) = one_token(ppo(0.2, 0.28, None), 1.25, 1.0);
    assert!(
        (l + 1.25).abs() < TOL.value && (g + 1.25).abs() < TOL.sum,
        "{l} {g}"
    );
    assert_eq!(m.clipped_upper, 0);
    let (l, g, m) = one_token(ppo(0.2, 0.2, None), 1.25, 1.0);
    assert!((l + 1.2).abs() < TOL.value && g == 0.0, "{l} {g}");
    assert_eq!(m.clipped_upper, 1);
    assert!((m.ratio_mean() - 1.25).abs() < TOL.value as f64);
}

/// A = −1, r = 0.75, ε_low = 0.2: objective min(0.75·A, 0.8·A) = 0.8·A = −0.8, so the loss is
/// +0.8, taken from the clipped branch: gradient 0.
#[test]
fn negative_advantage_lower_clip() {
    let (l, g, m) = one_token(ppo(0.2, 0.28, None), 0.75, -1.0);
    assert!((l - 0.8).abs() < TOL.value && g == 0.0, "{l} {g}");
    assert_eq!(m.clipped_lower, 1);
}

/// Dual-clip c = 3, A = −1, r = 5: PPO gives max(−A·5, −A·1.28) = 5; the cap −c·A = 3 wins:
/// loss 3 (objective 3A), constant, gradient 0. Without dual-clip the loss is 5 with gradient
/// −A·r = 5.
#[test]
fn dual_clip_caps_negative_advantages() {
    let (l, g, m) = one_token(ppo(0.2, 0.28, Some(3.0)), 5.0, -1.0);
    assert!((l - 3.0).abs() < TOL.sum && g == 0.0, "{l} {g}");
    assert_eq!(m.dual_clipped, 1);
    let (l, g, _) = one_token(ppo(0.2, 0.28, None), 5.0, -1.0);
    assert!((l - 5.0).abs() < TOL.sum && (g - 5.0).abs() < 10.0 * TOL.sum, "{l} {g}");
    // Dual-clip never touches positive advantages: A = 1, r = 5 → clipped at 1.28.
    let (l, _, _) = one_token(ppo(0.2, 0.28, Some(3.0)), 5.0, 1.0);
    assert!((l + 1.28).abs() < TOL.value);
}

/// GSPO: token log-ratios [0.1, −0.1, 0.3] → mean 0.1 → s = e^0.1 = 1.105171. With the paper's
/// ε_high = 4e-4 and A = 1 the sequence is clipped to 1.0004: loss −1.0004, no gradient. With a
/// wide range (ε = 0.5) it is unclipped: loss −s, and d/d logp_t of −A·exp(mean) = −A·s/3.
#[test]
fn gspo_sequence_ratio() {
    for policy in [
        PolicyLoss::Gspo {
            clip_low: 3e-4,
            clip_high: 4e-4,
        },
        PolicyLoss::GspoToken {
            clip_low: 3e-4,
            clip_high: 4e-4,
        },
    ] {
        let run = |policy: PolicyLoss| {
            let logp = t2(&[0.1, -0.1, 0.3], [1, 3]).require_grad();
            let input = LossInput {
                logp: logp.clone(),
                old_logp: t2(&[0.0; 3], [1, 3]),
                advantages: t2(&[1.0; 3], [1, 3]),
                mask: mask_from_lengths::<B>(&[3], 3, &dev()),
                ref_logp: None,
                entropy: None,
                is_weights: None,
            };
            let out = compute_loss(
                &cfg(policy, Aggregation::SeqMeanTokenMean),
                input,
                GlobalCounts::from_lengths(&[3]),
            )
            .unwrap();
            let l = scalar(out.loss.clone());
            let g = vec2(logp.grad(&out.loss.backward()).unwrap());
            (l, g, out.metrics)
        };
        let (l, g, m) = run(policy);
        assert!((l + 1.0004).abs() < TOL.value, "{l}");
        assert!(g.iter().all(|&x| x == 0.0), "{g:?}");
        assert!((m.ratio_mean() - 0.1f64.exp()).abs() < TOL.sum as f64);
        assert_eq!(m.clipped_upper, 3);
        let wide = match policy {
            PolicyLoss::Gspo { .. } => PolicyLoss::Gspo {
                clip_low: 0.5,
                clip_high: 0.5,
            },
            _ => PolicyLoss::GspoToken {
                clip_low: 0.5,
                clip_high: 0.5,
            },
        };
        let (l, g, _) = run(wide);
        let s = 0.1f32.exp();
        assert!((l + s).abs() < TOL.sum, "{l}");
        for x in g {
            assert!((x + s / 3.0).abs() < TOL.sum, "{x}");
        }
    }
}

/// Deterministic pseudo-random numbers in [lo, hi).
fn rand_vec(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407)
        | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            lo + (hi - lo) * ((x >> 11) as f32 / (1u64 << 53) as f32)
        })
        .collect()
}

struct Data {
    n: usize,
    t: usize,
    lengths: Vec<usize>,
    logp: Vec<f32>,
    old: Vec<f32>,
    adv: Vec<f32>,
    refp: Vec<f32>,
    ent: Vec<f32>,
}

fn data(seed: u64) -> Data {
    let (n, t) = (6, 7);
    let lengths = vec![7, 3, 5, 1, 6, 4];
    let old = rand_vec(n * t, seed, -3.0, -0.1);
    let noise = rand_vec(n * t, seed + 1, -0.15, 0.15);
    let logp: Vec<f32> = old.iter().zip(&noise).map(|(o, e)| o + e).collect();
    let seq_adv = rand_vec(n, seed + 2, -1.5, 1.5);
    let adv: Vec<f32> = (0..n * t).map(|k| seq_adv[k / t]).collect();
    let refp: Vec<f32> = old
        .iter()
        .zip(rand_vec(n * t, seed + 3, -0.3, 0.3))
        .map(|(o, e)| o + e)
        .collect();
    let ent = rand_vec(n * t, seed + 4, 0.0, 2.0);
    Data {
        n,
        t,
        lengths,
        logp,
        old,
        adv,
        refp,
        ent,
    }
}

fn all_configs() -> Vec<LossConfig> {
    let kl = Some(KlConfig {
        estimator: KlEstimator::K3,
        coef: 0.04,
        straight_through: false,
    });
    let mut v = vec![];
    for agg in [
        Aggregation::TokenMean,
        Aggregation::SeqMeanTokenMean,
        Aggregation::SeqMeanTokenSum,
        Aggregation::SeqMeanTokenSumNorm { constant: 16.0 },
    ] {
        v.push(LossConfig {
            policy: ppo(0.2, 0.28, Some(3.0)),
            aggregation: agg,
            kl,
            entropy_coef: 0.01,
            is_correction: Default::default(),
        });
        v.push(cfg(PolicyLoss::Reinforce, agg));
        v.push(cfg(
            PolicyLoss::Cispo {
                clip_low: 0.2,
                clip_high: 0.28,
            },
            agg,
        ));
    }
    v.push(cfg(
        PolicyLoss::Gspo {
            clip_low: 0.2,
            clip_high: 0.2,
        },
        Aggregation::SeqMeanTokenMean,
    ));
    v.push(LossConfig {
        policy: PolicyLoss::GspoToken {
            clip_low: 0.2,
            clip_high: 0.2,
        },
        aggregation: Aggregation::SeqMeanTokenMean,
        kl: Some(KlConfig {
            estimator: KlEstimator::K2,
            coef: 0.1,
            straight_through: true,
        }),
        entropy_coef: 0.0,
        is_correction: Default::default(),
    });
    v
}

/// Loss and d loss / d logp for rows `rows` of `d`, padded to `t_pad` with `pad` in every float
/// input, normalised by `counts`.
fn eval(
    c: &LossConfig,
    d: &Data,
    rows: &[usize],
    t_pad: usize,
    pad: f32,
    counts: GlobalCounts,
    logp_override: Option<&[f32]>,
) -> (f32, Vec<f32>) {
    let take = |src: &[f32]| -> Vec<f32> {
        let mut out = Vec::new();
        for &i in rows {
            for k in 0..t_pad {
                out.push(if k < d.lengths[i] {
                    src[i * d.t + k]
                } else {
                    pad
                });
            }
        }
        out
    };
    let shape = [rows.len(), t_pad];
    let logp_src = logp_override.unwrap_or(&d.logp);
    let logp = t2(&take(logp_src), shape).require_grad();
    let lengths: Vec<usize> = rows.iter().map(|&i| d.lengths[i]).collect();
    let input = LossInput {
        logp: logp.clone(),
        old_logp: t2(&take(&d.old), shape),
        advantages: t2(&take(&d.adv), shape),
        mask: mask_from_lengths::<B>(&lengths, t_pad, &dev()),
        ref_logp: Some(t2(&take(&d.refp), shape)),
        entropy: Some(t2(&take(&d.ent), shape)),
        is_weights: None,
    };
    let out = compute_loss(c, input, counts).unwrap();
    let l = scalar(out.loss.clone());
    let g = vec2(logp.grad(&out.loss.backward()).unwrap());
    // Back to the [n, t] layout of the data, valid positions only.
    let mut full = vec![0.0; d.n * d.t];
    for (r, &i) in rows.iter().enumerate() {
        for k in 0..d.lengths[i] {
            full[i * d.t + k] = g[r * t_pad + k];
        }
    }
    (l, full)
}

fn close(a: f32, b: f32, tol: f32) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

#[test]
fn micro_batches_accumulate_to_the_full_batch() {
    let d = data(11);
    let counts = GlobalCounts::from_lengths(&d.lengths);
    let all: Vec<usize> = (0..d.n).collect();
    for c in all_configs() {
        let (l_full, g_full) = eval(&c, &d, &all, d.t, 0.0, counts, None);
        let mut l_sum = 0.0;
        let mut g_sum = vec![0.0; d.n * d.t];
        for chunk in [vec![0, 1], vec![2, 3, 4], vec![5]] {
            let (l, g) = eval(&c, &d, &chunk, d.t, 0.0, counts, None);
            l_sum += l;
            for (s, x) in g_sum.iter_mut().zip(g) {
                *s += x;
            }
        }
        assert!(close(l_full, l_sum, TOL.sum), "{c:?}: {l_full} vs {l_sum}");
        for (a, b) in g_full.iter().zip(&g_sum) {
            assert!(close(*a, *b, TOL.sum), "{c:?}: {a} vs {b}");
        }
    }
}

#[test]
fn invariant_to_padding_length_and_pad_value() {
    let d = data(5);
    let counts = GlobalCounts::from_lengths(&d.lengths);
    let all: Vec<usize> = (0..d.n).collect();
    for c in all_configs() {
        let (l0, g0) = eval(&c, &d, &all, d.t, 0.0, counts, None);
        for (t_pad, pad) in [
            (7, f32::NAN),
            (12, 1e30),
            (12, -1e30),
            (9, f32::INFINITY),
            (20, -7.0),
        ] {
            let (l, g) = eval(&c, &d, &all, t_pad, pad, counts, None);
            assert!(close(l0, l, TOL.value), "{c:?} pad {t_pad}/{pad}: {l0} vs {l}");
            for (a, b) in g0.iter().zip(&g) {
                assert!(
                    a.is_finite() && close(*a, *b, TOL.value),
                    "{c:?} pad {t_pad}/{pad}: {a} vs {b}"
                );
            }
        }
    }
}

/// Central finite differences on logp with h = 1e-2 against autodiff. Ratios stay within
/// e^{±0.15} of 1 and ε = 0.2, so no clip boundary lies within h of any token; k3 and the
/// entropy term are smooth. Tolerance reflects f32 arithmetic (loss ~1, h = 1e-2).
#[test]
fn gradients_match_finite_differences() {
    let d = data(3);
    let counts = GlobalCounts::from_lengths(&d.lengths);
    let all: Vec<usize> = (0..d.n).collect();
    for c in all_configs() {
        if matches!(c.policy, PolicyLoss::Cispo { .. }) {
            // CISPO's weight is detached: its gradient is by design not the derivative of its
            // value (`cispo_matches_verl` compares it with verl's autodiff instead).
            continue;
        }
        let (_, g) = eval(&c, &d, &all, d.t, 0.0, counts, None);
        let h = 1e-2f32;
        for i in 0..d.n {
            for k in 0..d.lengths[i] {
                let idx = i * d.t + k;
                let mut plus = d.logp.clone();
                plus[idx] += h;
                let mut minus = d.logp.clone();
                minus[idx] -= h;
                let (lp, _) = eval(&c, &d, &all, d.t, 0.0, counts, Some(&plus));
                let (lm, _) = eval(&c, &d, &all, d.t, 0.0, counts, Some(&minus));
                let fd = (lp - lm) / (2.0 * h);
                assert!(
                    (fd - g[idx]).abs() < TOL.fd,
                    "{c:?} [{i},{k}]: fd {fd} vs autodiff {}",
                    g[idx]
                );
            }
        }
    }
}

/// With A constant over each sequence, GSPO and GSPO-token agree in value and gradient
/// (GSPO paper §4.3; the stop-gradient construction gives d s_{i,t} = s_i · d logp_t).
#[test]
fn gspo_and_gspo_token_agree() {
    let d = data(21);
    let counts = GlobalCounts::from_lengths(&d.lengths);
    let all: Vec<usize> = (0..d.n).collect();
    for eps in [0.01, 0.2] {
        let a = cfg(
            PolicyLoss::Gspo {
                clip_low: eps,
                clip_high: eps,
            },
            Aggregation::SeqMeanTokenMean,
        );
        let b = cfg(
            PolicyLoss::GspoToken {
                clip_low: eps,
                clip_high: eps,
            },
            Aggregation::SeqMeanTokenMean,
        );
        let (la, ga) = eval(&a, &d, &all, d.t, 0.0, counts, None);
        let (lb, gb) = eval(&b, &d, &all, d.t, 0.0, counts, None);
        assert!(close(la, lb, TOL.value), "{la} vs {lb}");
        for (x, y) in ga.iter().zip(&gb) {
            assert!(close(*x, *y, TOL.sum), "{x} vs {y}");
        }
    }
}

/// On a categorical distribution π over 5 tokens, E_{x~π}[k1] and E_{x~π}[k3] equal the exact
/// KL(π‖ref): E[x] = Σ π log(π/ref) and E[e^{−x}] = Σ π·ref/π = 1, so E[k3] = 1 + E[x] − 1.
/// Straight-through keeps k3's value and takes k2's gradient d(x²/2)/dx = x.
#[test]
fn kl_estimators_are_unbiased_where_theory_says() {
    let pi = [0.4f32, 0.3, 0.15, 0.1, 0.05];
    let rf = [0.2f32, 0.2, 0.2, 0.2, 0.2];
    let exact: f32 = pi.iter().zip(&rf).map(|(p, r)| p * (p / r).ln()).sum();
    let lp: Vec<f32> = pi.iter().map(|p| p.ln()).collect();
    let lr: Vec<f32> = rf.iter().map(|r| r.ln()).collect();
    for est in [KlEstimator::K1, KlEstimator::K3] {
        let k = kl_per_token(t2(&lp, [1, 5]), t2(&lr, [1, 5]), est, false);
        let kv: Vec<f32> = k.into_data().convert::<f32>().into_vec().unwrap();
        let expectation: f32 = pi.iter().zip(&kv).map(|(p, k)| p * k).sum();
        assert!(
            (expectation - exact).abs() < TOL.value,
            "{est:?}: {expectation} vs {exact}"
        );
    }
    let x = t2(&lp, [1, 5]).require_grad();
    let k = kl_per_token(x.clone(), t2(&lr, [1, 5]), KlEstimator::K3, true);
    let val: Vec<f32> = k.clone().into_data().convert::<f32>().into_vec().unwrap();
    let g = vec2(x.grad(&k.sum().backward()).unwrap());
    for i in 0..5 {
        let xi = lp[i] - lr[i];
        assert!((val[i] - ((-xi).exp() + xi - 1.0)).abs() < TOL.value);
        assert!((g[i] - xi).abs() < TOL.value);
    }
}

#[test]
fn errors_name_the_problem() {
    let msg = PolicyLoss::from_name("trpo").unwrap_err().to_string();
    assert!(
        msg.contains("ppo") && msg.contains("gspo_token") && msg.contains("reinforce"),
        "{msg}"
    );
    let msg = Aggregation::from_name("mean", None)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("token_mean") && msg.contains("seq_mean_token_sum_norm"),
        "{msg}"
    );
    assert!(matches!(
        Aggregation::from_name("seq_mean_token_sum_norm", None),
        Err(LossError::InvalidConfig(rl_loss::InvalidValue {
            field: "constant",
            ..
        }))
    ));
    assert!(KlEstimator::from_name("k4").is_err());
    let bad = cfg(
        PolicyLoss::Gspo {
            clip_low: 3e-4,
            clip_high: 4e-4,
        },
        Aggregation::TokenMean,
    );
    assert!(matches!(
        bad.validate(),
        Err(LossError::InvalidConfig(rl_loss::InvalidValue {
            field: "aggregation",
            ..
        }))
    ));
    let bad = cfg(ppo(0.2, 0.28, Some(1.0)), Aggregation::TokenMean);
    assert!(matches!(
        bad.validate(),
        Err(LossError::InvalidConfig(rl_loss::InvalidValue {
            field: "dual_clip",
            ..
        }))
    ));

    let d = data(1);
    let mk = |refp: bool, adv_cols: usize| LossInput {
        logp: t2(&d.logp[..6], [1, 6]),
        old_logp: t2(&d.old[..6], [1, 6]),
        advantages: t2(&d.adv[..adv_cols], [1, adv_cols]),
        mask: mask_from_lengths::<B>(&[6], 6, &dev()),
        ref_logp: refp.then(|| t2(&d.refp[..6], [1, 6])),
        entropy: None,
        is_weights: None,
    };
    let counts = GlobalCounts::from_lengths(&[6]);
    let with_kl = LossConfig {
        kl: Some(KlConfig {
            estimator: KlEstimator::K3,
            coef: 0.1,
            straight_through: false,
        }),
        ..cfg(ppo(0.2, 0.2, None), Aggregation::TokenMean)
    };
    assert!(matches!(
        compute_loss(&with_kl, mk(false, 6), counts),
        Err(LossError::MissingInput("ref_logp"))
    ));
    assert!(matches!(
        compute_loss(&with_kl, mk(true, 5), counts),
        Err(LossError::Shape {
            name: "advantages",
            ..
        })
    ));
    let plain = cfg(ppo(0.2, 0.2, None), Aggregation::TokenMean);
    assert!(matches!(
        compute_loss(
            &plain,
            mk(true, 6),
            GlobalCounts {
                tokens: 3,
                sequences: 1
            }
        ),
        Err(LossError::Counts {
            local_tokens: 6,
            ..
        })
    ));
    let toml_cfg: LossConfig = toml::from_str(
        "entropy_coef = 0.0\naggregation = \"token_mean\"\n[policy]\nname = \"ppo\"\nclip_low = 0.2\nclip_high = 0.28\n",
    )
    .unwrap();
    assert_eq!(toml_cfg.policy, ppo(0.2, 0.28, None));
    assert!(
        toml::from_str::<LossConfig>(
            "aggregation = \"token_mean\"\nbogus = 1\n[policy]\nname = \"reinforce\"\n"
        )
        .is_err()
    );
}

/// Importance-sampling weights scale each token's policy loss and its gradient, and a padded
/// position's weight (NaN here) changes nothing. Two valid tokens with r = 1 (logp = old = 0),
/// A = 1, weights w = (2, 0.5), token-mean over 2 tokens: ℓ_t = −A·r·w_t, so the loss is
/// −(2 + 0.5)/2 = −1.25 and d loss / d logp_t = −A·r·w_t / 2 = (−1, −0.25).
#[test]
fn is_weights_scale_the_per_token_policy_loss() {
    let logp = t2(&[0.0, 0.0, 0.0], [1, 3]).require_grad();
    let input = LossInput {
        logp: logp.clone(),
        old_logp: t2(&[0.0, 0.0, 0.0], [1, 3]),
        advantages: t2(&[1.0, 1.0, 1.0], [1, 3]),
        mask: mask_from_lengths::<B>(&[2], 3, &dev()),
        ref_logp: None,
        entropy: None,
        is_weights: Some(t2(&[2.0, 0.5, f32::NAN], [1, 3])),
    };
    let out = compute_loss(
        &cfg(ppo(0.2, 0.28, None), Aggregation::TokenMean),
        input,
        GlobalCounts::from_lengths(&[2]),
    )
    .unwrap();
    let loss = scalar(out.loss.clone());
    assert!((loss + 1.25).abs() < TOL.value, "{loss}");
    let g = vec2(logp.grad(&out.loss.backward()).unwrap());
    assert!((g[0] + 1.0).abs() < TOL.sum && (g[1] + 0.25).abs() < TOL.sum, "{g:?}");
    assert_eq!(g[2], 0.0);
}

/// CISPO by hand, one token, token-mean over 1 (ℓ = −sg(clip(r, 1−ε_low, 1+ε_high))·A·logp):
/// * A = 1, r = 1.5, ε_high = 0.2: weight 1.2; loss −1.2·ln 1.5 = −0.486558; gradient −1.2 (PPO
///   would give 0 here: the token is outside the trust region).
/// * A = −1, r = 0.5, ε_low = 0.2: weight 0.8; loss −0.8·(−1)·ln 0.5 = −0.554518; gradient +0.8.
/// * The same with ε_low = 10 (no floor): weight 0.5; loss −0.346574; gradient +0.5.
/// * r = 1.1 inside the bounds: weight 1.1; A = 2: loss −2.2·ln 1.1 = −0.209683; gradient −2.2.
#[test]
fn cispo_keeps_a_weighted_reinforce_gradient() {
    let cispo = |lo: f64, hi: f64| PolicyLoss::Cispo {
        clip_low: lo,
        clip_high: hi,
    };
    let cases: [(PolicyLoss, f32, f32, f32, f32, usize, usize); 4] = [
        (cispo(0.2, 0.2), 1.5, 1.0, -0.486558, -1.2, 1, 0),
        (cispo(0.2, 0.2), 0.5, -1.0, -0.554518, 0.8, 0, 1),
        (cispo(10.0, 0.2), 0.5, -1.0, -0.346574, 0.5, 0, 0),
        (cispo(0.2, 0.2), 1.1, 2.0, -0.209683, -2.2, 0, 0),
    ];
    for (p, r, a, loss, grad, upper, lower) in cases {
        let (l, g, m) = one_token(p, r, a);
        assert!((l - loss).abs() < TOL.sum, "{p:?} r={r}: loss {l} vs {loss}");
        assert!((g - grad).abs() < TOL.sum, "{p:?} r={r}: grad {g} vs {grad}");
        assert_eq!((m.clipped_upper, m.clipped_lower), (upper, lower), "{p:?} r={r}");
        assert!((m.ratio_mean() - r as f64).abs() < TOL.sum as f64);
    }
    assert_eq!(
        PolicyLoss::from_name("cispo").unwrap(),
        PolicyLoss::Cispo {
            clip_low: 10.0,
            clip_high: 0.2
        }
    );
    assert!(rl_loss::POLICY_LOSS_NAMES.contains(&"cispo"));
    for (lo, hi, field) in [
        (-0.1, 0.2, "clip_low"),
        (f64::NAN, 0.2, "clip_low"),
        (10.0, -0.1, "clip_high"),
        (10.0, f64::INFINITY, "clip_high"),
    ] {
        match cispo(lo, hi).validate() {
            Err(LossError::InvalidConfig(rl_loss::InvalidValue { field: f, .. })) => assert_eq!(f, field),
            other => panic!("{lo}/{hi}: {other:?}"),
        }
    }
    let c: LossConfig = toml::from_str(
        "aggregation = \"token_mean\"\n[policy]\nname = \"cispo\"\nclip_low = 10.0\nclip_high = 0.2\n",
    )
    .unwrap();
    assert_eq!(c.policy, PolicyLoss::from_name("cispo").unwrap());
}

#[derive(serde::Deserialize)]
struct CispoFixture {
    source: String,
    cases: Vec<CispoCase>,
}

#[derive(serde::Deserialize)]
struct CispoCase {
    name: String,
    clip_low: f64,
    clip_high: f64,
    aggregation: String,
    lengths: Vec<usize>,
    global_tokens: usize,
    global_sequences: usize,
    logp: Vec<Vec<f32>>,
    old_logp: Vec<Vec<f32>>,
    advantages: Vec<Vec<f32>>,
    is_weights: Option<Vec<Vec<f32>>>,
    loss: f32,
    grad_logp: Vec<Vec<f32>>,
    pg_clipfrac: f64,
}

/// CISPO against verl 0.9.1's `compute_policy_loss_cispo` (tests/data/cispo_verl.json, written
/// by `tools/verl/gen_verl_fixtures.py` in float64, gradients by torch autograd): the loss and
/// d loss / d logp at every valid token, on 6 cases — verl's example bounds (ε_low = 10,
/// ε_high = 0.2), both bounds active (0.2/0.28), nothing clipped, rollout IS weights (composed
/// as for PPO: [`LossInput::is_weights`] multiplies the per-token loss), a micro-batch of 3 of
/// the 6 sequences normalised by the whole batch's token count, and seq-mean-token-mean.
/// Tolerance: `TOL.sum` relative (1e-5 on the CPU, f32 against float64); the clip fraction
/// exactly (a count).
#[test]
fn cispo_matches_verl() {
    let f: CispoFixture = serde_json::from_str(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/cispo_verl.json"
    )))
    .unwrap();
    assert!(f.source.contains("verl 0.9.1"), "{}", f.source);
    assert_eq!(f.cases.len(), 6);
    for case in &f.cases {
        let n = case.lengths.len();
        let t = case.logp[0].len();
        let flat = |v: &Vec<Vec<f32>>| -> Vec<f32> { v.iter().flatten().copied().collect() };
        let logp = t2(&flat(&case.logp), [n, t]).require_grad();
        let input = LossInput {
            logp: logp.clone(),
            old_logp: t2(&flat(&case.old_logp), [n, t]),
            advantages: t2(&flat(&case.advantages), [n, t]),
            mask: mask_from_lengths::<B>(&case.lengths, t, &dev()),
            ref_logp: None,
            entropy: None,
            is_weights: case.is_weights.as_ref().map(|w| t2(&flat(w), [n, t])),
        };
        let aggregation = match case.aggregation.as_str() {
            "token-mean" => Aggregation::TokenMean,
            "seq-mean-token-mean" => Aggregation::SeqMeanTokenMean,
            other => panic!("{other}"),
        };
        let c = cfg(
            PolicyLoss::Cispo {
                clip_low: case.clip_low,
                clip_high: case.clip_high,
            },
            aggregation,
        );
        let counts = GlobalCounts {
            tokens: case.global_tokens,
            sequences: case.global_sequences,
        };
        let out = compute_loss(&c, input, counts).unwrap();
        let m = out.metrics;
        let l = scalar(out.loss.clone());
        let g = vec2(logp.grad(&out.loss.backward()).unwrap());
        assert!(close(l, case.loss, TOL.sum), "{}: loss {l} vs verl {}", case.name, case.loss);
        for (k, (a, b)) in g.iter().zip(flat(&case.grad_logp)).enumerate() {
            assert!(
                close(*a, b, TOL.sum),
                "{} [{}, {}]: grad {a} vs verl {b}",
                case.name,
                k / t,
                k % t
            );
        }
        let clipped = (m.clipped_upper + m.clipped_lower) as f64;
        assert!(
            (clipped / m.tokens as f64 - case.pg_clipfrac).abs() < 1e-6,
            "{}: {clipped}/{} vs verl {}",
            case.name,
            m.tokens,
            case.pg_clipfrac
        );
    }
}

#[derive(serde::Deserialize)]
struct GkdFixture {
    source: String,
    cases: Vec<GkdCase>,
}

#[derive(serde::Deserialize)]
struct GkdCase {
    name: String,
    beta: f64,
    temperature: f64,
    rows: usize,
    vocab: usize,
    student: Vec<f32>,
    teacher: Vec<f32>,
    mask: Vec<bool>,
    loss: f32,
    grad: Vec<f32>,
}

/// The generalized JSD, token-mean over the completion tokens, equals TRL's
/// `generalized_jsd_loss` (fixtures: tools/trl/gen_gkd_fixtures.py) in value and in its gradient
/// with respect to the student's logits, whatever the vocabulary chunk.
#[test]
fn generalized_jsd_matches_trl() {
    let f: GkdFixture = serde_json::from_str(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/gkd_trl.json"
    )))
    .unwrap();
    assert!(f.source.contains("TRL"), "{}", f.source);
    assert_eq!(f.cases.len(), 7);
    for case in &f.cases {
        let (n, v) = (case.rows, case.vocab);
        for chunk in [1, 7, v, 4 * v] {
            let z = t2(&case.student, [n, v]).require_grad();
            let jsd = generalized_jsd(
                z.clone(),
                t2(&case.teacher, [n, v]),
                case.beta,
                case.temperature,
                chunk,
            )
            .unwrap();
            let mask: Tensor<B, 2, Bool> =
                Tensor::from_data(TensorData::new(case.mask.clone(), [1, n]), &dev());
            let tokens = case.mask.iter().filter(|&&m| m).count();
            let counts = GlobalCounts {
                tokens,
                sequences: 1,
            };
            let loss = aggregate(jsd.reshape([1, n]), mask, Aggregation::TokenMean, counts);
            let l = scalar(loss.clone());
            assert!(
                close(l, case.loss, TOL.sum),
                "{} (chunk {chunk}): loss {l} vs TRL {}",
                case.name,
                case.loss
            );
            let g = vec2(z.grad(&loss.backward()).unwrap());
            for (k, (a, b)) in g.iter().zip(&case.grad).enumerate() {
                assert!(
                    (a - b).abs() <= TOL.sum,
                    "{} (chunk {chunk}) [{}, {}]: grad {a} vs TRL {b}",
                    case.name,
                    k / v,
                    k % v
                );
            }
        }
    }
}

/// Equal student and teacher logits: the divergence is 0 and so is its gradient, exactly (no
/// rounding residue that Adam would turn into a step) for β ∈ {0, 1}, and below 1e-6 between.
#[test]
fn generalized_jsd_of_equal_logits_is_zero() {
    let logits: Vec<f32> = (0..3 * 11).map(|i| ((i * 7919) % 23) as f32 * 0.37 - 4.0).collect();
    for (beta, exact) in [(0.0, true), (1.0, true), (0.5, false), (0.2, false)] {
        let z = t2(&logits, [3, 11]).require_grad();
        let jsd = generalized_jsd(z.clone(), t2(&logits, [3, 11]), beta, 1.3, 4).unwrap();
        let g = vec2(z.grad(&jsd.clone().sum().backward()).unwrap());
        let worst = g.iter().fold(0f32, |m, x| m.max(x.abs()));
        let value = scalar(jsd.sum());
        if exact {
            assert_eq!((value, worst), (0.0, 0.0), "β = {beta}");
        } else {
            assert!(value.abs() < 1e-6 && worst < 1e-6, "β = {beta}: {value}, {worst}");
        }
    }
}

#[test]
fn generalized_jsd_rejects_bad_settings() {
    let a = || t2(&[0.0; 6], [2, 3]);
    assert!(generalized_jsd(a(), t2(&[0.0; 4], [2, 2]), 1.0, 1.0, 2).is_err());
    assert!(generalized_jsd(a(), a(), 1.5, 1.0, 2).is_err());
    assert!(generalized_jsd(a(), a(), 0.5, 0.0, 2).is_err());
    assert!(generalized_jsd(a(), a(), 0.5, f64::NAN, 2).is_err());
    assert!(generalized_jsd(a(), a(), 0.5, 1.0, 0).is_err());
}

#[derive(serde::Deserialize)]
struct ValueFixture {
    source: String,
    cases: Vec<ValueCase>,
}

#[derive(serde::Deserialize)]
struct ValueCase {
    name: String,
    cliprange_value: f64,
    aggregation: String,
    lengths: Vec<usize>,
    global_tokens: usize,
    global_sequences: usize,
    vpreds: Vec<Vec<f32>>,
    old_values: Vec<Vec<f32>>,
    returns: Vec<Vec<f32>>,
    loss: f32,
    grad_vpreds: Vec<Vec<f32>>,
    clipfrac: f64,
}

/// PPO's clipped value loss equals verl 0.9.1's `compute_value_loss` (fixtures:
/// `tools/verl/gen_verl_fixtures.py`, float64) in value, gradient with respect to the predictions
/// (torch autograd) and clip fraction: verl's default clip range 0.5 with predictions moved up to
/// ±1.2, predictions inside the range (the plain ½(v − R)²), a tight range 0.05, a micro-batch of
/// 3 of 6 sequences normalised by the whole batch's token count, and seq-mean-token-mean.
/// Tolerance: `TOL.sum` relative (f32 against float64); the clip fraction exactly (a count).
#[test]
fn value_loss_matches_verl() {
    let f: ValueFixture = serde_json::from_str(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/value_loss_verl.json"
    )))
    .unwrap();
    assert!(f.source.contains("compute_value_loss"), "{}", f.source);
    assert_eq!(f.cases.len(), 5);
    let mut clipped_somewhere = false;
    for case in &f.cases {
        let n = case.lengths.len();
        let t = case.vpreds[0].len();
        let flat = |v: &Vec<Vec<f32>>| -> Vec<f32> { v.iter().flatten().copied().collect() };
        let values = t2(&flat(&case.vpreds), [n, t]).require_grad();
        let aggregation = match case.aggregation.as_str() {
            "token-mean" => Aggregation::TokenMean,
            "seq-mean-token-mean" => Aggregation::SeqMeanTokenMean,
            other => panic!("{other}"),
        };
        let out = value_loss(
            values.clone(),
            t2(&flat(&case.old_values), [n, t]),
            t2(&flat(&case.returns), [n, t]),
            mask_from_lengths::<B>(&case.lengths, t, &dev()),
            case.cliprange_value,
            aggregation,
            GlobalCounts {
                tokens: case.global_tokens,
                sequences: case.global_sequences,
            },
        )
        .unwrap();
        let l = scalar(out.loss.clone());
        let g = vec2(values.grad(&out.loss.backward()).unwrap());
        assert!(close(l, case.loss, TOL.sum), "{}: loss {l} vs verl {}", case.name, case.loss);
        for (k, (a, b)) in g.iter().zip(flat(&case.grad_vpreds)).enumerate() {
            assert!(
                close(*a, b, TOL.sum),
                "{} [{}, {}]: grad {a} vs verl {b}",
                case.name,
                k / t,
                k % t
            );
        }
        let frac = out.clipped as f64 / out.tokens as f64;
        assert!(
            (frac - case.clipfrac).abs() < 1e-6,
            "{}: {}/{} vs verl {}",
            case.name,
            out.clipped,
            out.tokens,
            case.clipfrac
        );
        clipped_somewhere |= out.clipped > 0;
    }
    assert!(clipped_somewhere, "no case exercises the clip");
}

/// Bad settings and shapes are errors that name the input; padding may hold NaN.
#[test]
fn value_loss_rejects_bad_inputs_and_ignores_padding() {
    let mask = mask_from_lengths::<B>(&[2, 1], 3, &dev());
    let counts = GlobalCounts::from_lengths(&[2, 1]);
    let nan = f32::NAN;
    let v = t2(&[0.5, 1.0, nan, -0.25, nan, nan], [2, 3]);
    let old = t2(&[0.5, 0.0, nan, 0.0, nan, nan], [2, 3]);
    let ret = t2(&[1.5, 1.0, nan, 0.25, nan, nan], [2, 3]);
    // ½·max((v − R)², (clip − R)²) by hand: token 1 has clip(1.0, −0.5, 0.5) = 0.5, so
    // max(0, 0.25) = 0.25; tokens 0 and 2 are inside the range: 1.0 and 0.25.
    // Token-mean: ½·(1.0 + 0.25 + 0.25)/3 = 0.25.
    let out = value_loss(
        v.clone(),
        old.clone(),
        ret.clone(),
        mask.clone(),
        0.5,
        Aggregation::TokenMean,
        counts,
    )
    .unwrap();
    assert!(close(scalar(out.loss), 0.25, TOL.value));
    assert_eq!((out.clipped, out.tokens), (1, 3));
    let e = value_loss(v.clone(), old.clone(), ret.clone(), mask.clone(), 0.0, Aggregation::TokenMean, counts)
        .unwrap_err();
    assert!(e.to_string().contains("cliprange_value"), "{e}");
    let e = value_loss(t2(&[0.0; 4], [2, 2]), old.clone(), ret.clone(), mask.clone(), 0.5, Aggregation::TokenMean, counts)
        .unwrap_err();
    assert!(e.to_string().contains("`values`"), "{e}");
    let e = value_loss(v, old, ret, mask, 0.5, Aggregation::TokenMean, GlobalCounts { tokens: 2, sequences: 2 })
        .unwrap_err();
    assert!(matches!(e, LossError::Counts { .. }), "{e}");
}

#[derive(serde::Deserialize)]
struct PairFixture {
    source: String,
    cases: Vec<PairCase>,
}

#[derive(serde::Deserialize)]
struct PairCase {
    name: String,
    chosen: Vec<f32>,
    rejected: Vec<f32>,
    margin: Option<Vec<f32>>,
    center_coefficient: Option<f64>,
    loss: f32,
    grad_chosen: Vec<f32>,
    grad_rejected: Vec<f32>,
    accuracy: f64,
    mean_margin: f64,
}

/// The Bradley–Terry loss equals TRL 1.16's `RewardTrainer.compute_loss` (fixtures:
/// `tools/trl/gen_reward_loss_fixtures.py`, float64) in value, in its gradient with respect to
/// both scores and in TRL's logged accuracy and mean margin: plain pairs, per-pair margins,
/// centring (0.01), both, ties (gradient −½ per pair through log σ(0)) and gaps of ±80 (the stable
/// branch of log σ). Tolerance: `TOL.sum` relative (f32 against float64).
#[test]
fn bradley_terry_matches_trl() {
    let f: PairFixture = serde_json::from_str(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/bradley_terry_trl.json"
    )))
    .unwrap();
    assert!(f.source.contains("RewardTrainer.compute_loss"), "{}", f.source);
    assert_eq!(f.cases.len(), 6);
    let t1 = |v: &[f32]| Tensor::<B, 1>::from_data(TensorData::new(v.to_vec(), [v.len()]), &dev());
    for case in &f.cases {
        let chosen = t1(&case.chosen).require_grad();
        let rejected = t1(&case.rejected).require_grad();
        let out = bradley_terry(
            chosen.clone(),
            rejected.clone(),
            case.margin.as_deref().map(t1),
            case.center_coefficient,
        )
        .unwrap();
        let l = scalar(out.loss.clone());
        assert!(close(l, case.loss, TOL.sum), "{}: loss {l} vs TRL {}", case.name, case.loss);
        let grads = out.loss.backward();
        for (what, t, want) in [
            ("chosen", &chosen, &case.grad_chosen),
            ("rejected", &rejected, &case.grad_rejected),
        ] {
            let g: Vec<f32> = t.grad(&grads).unwrap().into_data().convert::<f32>().into_vec().unwrap();
            for (k, (a, b)) in g.iter().zip(want).enumerate() {
                assert!(close(*a, *b, TOL.sum), "{} d/d{what}[{k}]: {a} vs TRL {b}", case.name);
            }
        }
        assert!((out.accuracy - case.accuracy).abs() < 1e-6, "{}", case.name);
        assert!((out.mean_margin - case.mean_margin).abs() < 1e-5, "{}", case.name);
    }
    let e = bradley_terry(t1(&[1.0, 2.0]), t1(&[1.0]), None, None).unwrap_err();
    assert!(e.to_string().contains("`rejected`"), "{e}");
    let e = bradley_terry(t1(&[1.0]), t1(&[1.0]), None, Some(-1.0)).unwrap_err();
    assert!(e.to_string().contains("center_rewards_coefficient"), "{e}");
}
