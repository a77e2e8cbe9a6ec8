// Included once per backend by `tests/steps.rs` (which defines `B` and `dev()`).

use rl_models::{Qwen3, Qwen3Config};
use rl_trainer::config::PromptTemplate;
use rl_trainer::tasks::ArithmeticTask;
use rl_trainer::{StepMetrics, TrainConfig, Trainer};

fn run_steps(algo: &str, steps: usize) -> Vec<StepMetrics> {
    let tok = ArithmeticTask::tokenizer().unwrap();
    let (train, _) = ArithmeticTask::default().split(3, 20, 4).unwrap();
    let mut mc = Qwen3Config::tiny(tok.num_defined_ids());
    mc.eos_token_id = rl_trainer::end_token_ids(&tok);
    let model: Qwen3<B> = mc.init_seeded(5, &dev()).unwrap();
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
    let mut t = Trainer::new(c, model, tok, train, None, dev()).unwrap();
    t.set_quiet(true);
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
            assert!(m.grad_norm >= 0.0 && (algo != "grpo" || m.step == 1 || m.grad_norm > 0.0), "{algo}");
            // Sampler and trainer compute the same log-probs (KV-cache decoding vs full forward).
            assert!(m.logprob_mismatch < 1e-3, "{algo}: mismatch {}", m.logprob_mismatch);
        }
    }
}
