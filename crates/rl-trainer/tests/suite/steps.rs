// Included once per backend by `tests/steps.rs` (which defines `B` and `dev()`).

use rl_models::{CausalLm, ModelConfig};
use rl_trainer::config::PromptTemplate;
use rl_trainer::tasks::ArithmeticTask;
use rl_trainer::{StepMetrics, TrainConfig, Trainer};

/// A trainer on the arithmetic task with a random tiny Qwen3 (seed `seed`): groups of 4, 3
/// prompts and 3 groups per step, no filter, `algo`'s preset, then `adjust`.
fn tiny_trainer(
    algo: &str,
    seed: u64,
    adjust: impl FnOnce(&mut TrainConfig),
) -> Trainer<B, CausalLm<B>> {
    let tok = ArithmeticTask::tokenizer().unwrap();
    let (train, _) = ArithmeticTask::default().split(3, 20, 4).unwrap();
    let mut mc = ModelConfig::tiny(tok.num_defined_ids());
    mc.eos_token_id = rl_trainer::end_token_ids(&tok);
    let model: CausalLm<B> = mc.init_seeded(seed, &dev()).unwrap();
    let mut c = TrainConfig::default();
    c.apply_preset(algo).unwrap();
    c.data.template = PromptTemplate::Custom("{problem}=".into());
    c.data.chat_template = false;
    c.rollout.group_size = 4;
    c.rollout.prompts_per_round = 3;
    c.rollout.max_new_tokens = 6;
    c.batch.groups_per_step = 3;
    c.filter = rl_sampler::FilterConfig::None;
    c.optim.lr = 1e-3;
    c.optim.micro_batch = 5;
    c.optim.mini_batches = 3;
    adjust(&mut c);
    Trainer::new(c, model, tok, train, None, dev()).unwrap()
}

fn run_steps(algo: &str, steps: usize) -> Vec<StepMetrics> {
    let mut t = tiny_trainer(algo, 5, |_| {});
    (0..steps).map(|_| t.step().unwrap()).collect()
}

/// GRPO (PPO clip, k3 KL to a frozen reference) and DA3PO (clip-higher, dual-clip, token-mean,
/// overlong shaping): every step generates, scores, trains three mini-batches with gradient
/// accumulation and reports finite diagnostics.
#[test]
fn trainer_steps_run_and_report_finite_metrics() {
    for algo in ["grpo", "da3po", "gspo"] {
        let ms = run_steps(algo, 2);
        for m in &ms {
            assert_eq!(m.updates, 3, "{algo}");
            assert_eq!(m.responses_generated, 12, "{algo}");
            for (name, v) in [
                ("loss", m.loss),
                ("entropy", m.entropy),
                ("ratio_mean", m.ratio_mean),
                ("grad_norm", m.grad_norm),
                ("approx_kl", m.approx_kl),
                ("logprob_mismatch", m.logprob_mismatch),
            ] {
                assert!(v.is_finite(), "{algo}: {name} = {v}");
            }
            assert!(m.entropy > 0.0, "{algo}");
            // A random model answers nothing: rewards are equal, advantages zero; only GRPO's
            // KL term to the (moving-away) reference has a gradient.
            assert!(
                m.grad_norm >= 0.0 && (algo != "grpo" || m.step == 1 || m.grad_norm > 0.0),
                "{algo}"
            );
            // Sampler and trainer compute the same log-probs (KV-cache decoding vs full forward).
            assert!(
                m.logprob_mismatch < 1e-3,
                "{algo}: mismatch {}",
                m.logprob_mismatch
            );
        }
    }
}

/// The update path's alignment: before the first optimizer update of a step, π_θ equals π_old
/// token by token, so every importance ratio is 1 up to float rounding between the detached
/// forward that computes π_old and the autodiff forward (1e-4 leaves room for GPU kernels that
/// differ between the two; `trainer_steps_run_and_report_finite_metrics` allows 1e-3 between
/// sampler and trainer), nothing is clipped and the approximate KL is 0. One mini-batch and one
/// epoch make the step's only update its first. An off-by-one between the positions where the
/// trainer takes π_old (`response_logprobs`) and where the update reads π_θ (`update::align`)
/// compares log-probs of different tokens: ratios then range over orders of magnitude on a
/// random model (|log-prob| ≈ ln 23 ± a few).
#[test]
fn first_update_of_a_step_has_ratio_one_and_no_clipping() {
    for algo in ["da3po", "grpo"] {
        let mut t = tiny_trainer(algo, 11, |c| {
            c.rollout.prompts_per_round = 4;
            c.batch.groups_per_step = 4;
            c.optim.mini_batches = 1;
            c.optim.epochs = 1;
            // 16 sequences in micro-batches of 5: uneven chunks, padding differs between them.
        });
        let m = t.step().unwrap();
        assert_eq!(m.updates, 1, "{algo}");
        assert!(
            (m.ratio_mean - 1.0).abs() < 1e-4,
            "{algo}: ratio mean {}",
            m.ratio_mean
        );
        assert!(
            (m.ratio_max - 1.0).abs() < 1e-4,
            "{algo}: ratio max {}",
            m.ratio_max
        );
        assert!(
            m.approx_kl.abs() < 1e-5,
            "{algo}: approx KL {}",
            m.approx_kl
        );
        assert_eq!(m.clip_frac_upper, 0.0, "{algo}");
        assert_eq!(m.clip_frac_lower, 0.0, "{algo}");
        assert_eq!(m.dual_clip_frac, 0.0, "{algo}");
    }
}

fn tiny_policy(seed: u64) -> (CausalLm<B>, rl_models::Tokenizer) {
    let tok = ArithmeticTask::tokenizer().unwrap();
    let mut mc = ModelConfig::tiny(tok.num_defined_ids());
    mc.eos_token_id = rl_trainer::end_token_ids(&tok);
    (mc.init_seeded(seed, &dev()).unwrap(), tok)
}

/// Sum of the response's log-probs, read from a full-sequence forward independently of the
/// trainer's alignment: position t of `token_logprobs` predicts token t + 1, so response token
/// j (at sequence position p + j for a p-token prompt) sits at position p − 1 + j.
fn response_logprob_sum(model: &CausalLm<B>, prompt: &[u32], response: &[u32]) -> f64 {
    let ids: Vec<i64> = prompt.iter().chain(response).map(|&t| t as i64).collect();
    let n = ids.len();
    let t = burn::tensor::Tensor::<B, 2, burn::tensor::Int>::from_data(
        burn::tensor::TensorData::new(ids, [1, n]),
        &dev(),
    );
    let lp = model
        .token_logprobs(t, None, rl_models::EntropyMode::None)
        .unwrap()
        .logprobs
        .into_data()
        .convert::<f32>()
        .into_vec::<f32>()
        .unwrap();
    let p = prompt.len();
    (0..response.len()).map(|j| lp[p - 1 + j] as f64).sum()
}

/// lr 1e-4, micro-batches of 4, T = 1.
fn settings(c: &TrainConfig) -> rl_trainer::policy_update::UpdateSettings<'_> {
    rl_trainer::policy_update::UpdateSettings {
        lr: 1e-4,
        loss: &c.loss,
        micro_batch: 4,
        micro_batch_tokens: 0,
        memory: Default::default(),
        temperature: 1.0,
        old: rl_trainer::policy_update::OldLogprobs::Given,
    }
}

/// One DAPO update on a single response: with advantage +1 its log-probability rises, with −1
/// it falls. At the first update ratio = 1, so the clipped objective's gradient is −Â·∇log π
/// per token; AdamW's first step moves each weight by ≈ −lr·sign(g), which changes Σ log π by
/// ≈ +lr·Â·Σ|∂ log π/∂θ| — the sign of Â (to first order in lr = 1e-4).
#[test]
fn one_update_moves_the_response_log_prob_with_the_advantage_sign() {
    use rl_trainer::optim::AdamWOptimizer;
    use rl_trainer::policy_update::{TrainSeq, policy_update};
    let (model, tok) = tiny_policy(3);
    let prompt = tok.encode("47+8=").unwrap();
    let response = tok.encode("Answer: 55").unwrap();
    let mut c = TrainConfig::default();
    c.apply_preset("dapo").unwrap();
    let ids = vec![[prompt.as_slice(), &response].concat()];
    let old = <CausalLm<B> as rl_trainer::Policy<B>>::logprobs_detached(
        &model,
        &ids,
        &[prompt.len() - 1],
        response.len(),
        1.0,
    )
    .unwrap()
    .remove(0);
    assert_eq!(old.len(), response.len());
    let before = response_logprob_sum(&model, &prompt, &response);
    let old_sum: f64 = old.iter().map(|&x| x as f64).sum();
    assert!((before - old_sum).abs() < 1e-4, "{before} vs {old_sum}");
    for adv in [1.0f32, -1.0] {
        let mut optim = AdamWOptimizer::<B, CausalLm<B>>::new(&c.optim);
        let seq = TrainSeq {
            prompt: &prompt,
            response: &response,
            old_logp: &old,
            rollout_logp: &[],
            ref_logp: None,
            advantage: adv,
            token_advantages: None,
            train: true,
            is_weights: None,
            keep: None,
            sampled: None,
        };
        let out = policy_update(model.clone(), &mut optim, settings(&c), &[seq], &dev()).unwrap();
        assert!(out.applied);
        let after = response_logprob_sum(&out.policy, &prompt, &response);
        assert!(
            (after - before) * adv as f64 > 0.0,
            "advantage {adv}: Σ log π {before} → {after}"
        );
    }
}

/// π_old (or reference) log-probs of the wrong length are an error on the RL path, never a
/// silent zero fill.
#[test]
fn old_log_probs_of_the_wrong_length_are_an_error() {
    use rl_trainer::TrainerError;
    use rl_trainer::optim::AdamWOptimizer;
    use rl_trainer::policy_update::{TrainSeq, policy_update};
    let (model, tok) = tiny_policy(3);
    let prompt = tok.encode("1+2=").unwrap();
    let response = tok.encode("Answer: 3").unwrap();
    let mut c = TrainConfig::default();
    c.apply_preset("grpo").unwrap();
    let short = vec![-1.0f32; response.len() - 1];
    let full = vec![-1.0f32; response.len()];
    let cases = [
        (&short[..], Some(&full[..]), "π_old"),
        (&full[..], Some(&short[..]), "reference"),
    ];
    for (old, reference, what) in cases {
        let mut optim = AdamWOptimizer::<B, CausalLm<B>>::new(&c.optim);
        let seq = TrainSeq {
            prompt: &prompt,
            response: &response,
            old_logp: old,
            rollout_logp: &[],
            ref_logp: reference,
            advantage: 1.0,
            token_advantages: None,
            train: true,
            is_weights: None,
            keep: None,
            sampled: None,
        };
        let e = policy_update(model.clone(), &mut optim, settings(&c), &[seq], &dev())
            .err()
            .unwrap();
        assert!(
            matches!(&e, TrainerError::Batch { sequence: 0, message } if message.contains(what)),
            "{e}"
        );
    }
}
