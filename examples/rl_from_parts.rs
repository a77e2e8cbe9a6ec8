//! One DA3PO loop written out by hand from the crates' public APIs — for people who bring their
//! own trainer and want our pieces, not our loop.
//!
//! `cargo run --release --example rl_from_parts [-- --steps 20]`
//!
//! The pieces, each from its crate:
//! - **engine** (`rl-rollout`'s `RolloutEngine`; here `rl-trainer`'s in-process `LocalEngine`,
//!   an HTTP engine would do the same): token ids in, sampled ids, log-probs and the weight
//!   version out; `update_weights` after every update;
//! - **verifier** (`rl-verifier`): decoded response + ground truth → outcome → reward;
//! - **batcher** (`rl-sampler`): DAPO's dynamic sampling, rounds until N groups have a spread;
//! - **estimator** (`rl-advantage`): DA3PO's group advantages (DAPO + DAA: λ = 2 on correct
//!   responses of groups with p̂ < τ = 0.5);
//! - **loss** (`rl-loss`): clip-higher PPO with token-mean aggregation and global counts;
//! - **optimizer** (`burn`'s AdamW).
//!
//! The task, the tiny Qwen3 and its supervised warm-start come from `rl-trainer`'s embedded run
//! (`rl_trainer::tasks::ArithmeticDemo`), the same as `cargo run --example da3po_qwen3` uses;
//! the model is driven through the `Policy` trait (any model implementing it would do), and
//! responses end by the trainer's rule (`rl_trainer::scoring::strip_end_tokens`). Only library
//! crates are used, not the `rlvr` umbrella. Every step prints one line; the loop is the `train`
//! function, top to bottom.

use std::error::Error;

use burn::backend::{Autodiff, Flex};
use burn::optim::{AdamWConfig, GradientsParams, Optimizer};
use burn::prelude::*;
use rand::seq::SliceRandom;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rl_advantage::{EstimatorConfig, GroupId, Sample, compute_batch};
use rl_loss::{GlobalCounts, LossConfig, LossInput, PolicyLoss, compute_loss, mask_from_lengths};
use rl_models::{CausalLm, EntropyMode};
use rl_rollout::{Completion, GenerateRequest, RolloutEngine, SamplingParams, WeightsRef};
use rl_sampler::{
    BatcherConfig, DynamicBatcher, FilterConfig, FilterMetric, OnExhausted, RolloutGroup, Scored,
};
use rl_trainer::data::PromptRenderer;
use rl_trainer::scoring::strip_end_tokens;
use rl_trainer::tasks::ArithmeticDemo;
use rl_trainer::{LocalEngine, Policy};

type B = Autodiff<Flex>;

/// Sizes of a run.
#[derive(Clone, Debug)]
struct Options {
    steps: usize,
    /// N: groups per update.
    groups: usize,
    /// G: responses per prompt.
    group_size: usize,
    /// Prompts per generation round.
    prompts_per_round: usize,
    max_new_tokens: usize,
    lr: f64,
    seed: u64,
    /// Overrides of the embedded run (model size, warm-start) as TOML.
    demo: String,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            steps: 20,
            groups: 16,
            group_size: 8,
            prompts_per_round: 32,
            max_new_tokens: 8,
            lr: 1e-5,
            seed: 0,
            demo: String::new(),
        }
    }
}

/// What a step did.
#[derive(Clone, Debug)]
struct StepLog {
    step: usize,
    acc: f64,
    rounds: usize,
    kept: usize,
    seen: usize,
    amplified: usize,
    loss: f64,
}

/// One sampled response and its score: the batcher reads the score ([`Scored`]), the update
/// the prompt and the tokens.
#[derive(Clone, Debug)]
struct Rollout {
    prompt: usize,
    completion: Completion,
    reward: f64,
    correct: bool,
}

impl Scored for Rollout {
    fn reward(&self) -> f64 {
        self.reward
    }

    fn correct(&self) -> bool {
        self.correct
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut o = Options::default();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == "--steps") {
        o.steps = args.get(i + 1).ok_or("--steps needs a number")?.parse()?;
    }
    let logs = train(&o)?;
    let first = logs.first().map_or(0.0, |l| l.acc);
    let last = logs.last().map_or(0.0, |l| l.acc);
    println!(
        "rollout accuracy: step 1 {first:.3} -> step {} {last:.3}",
        logs.len()
    );
    Ok(())
}

/// The whole run.
fn train(o: &Options) -> Result<Vec<StepLog>, Box<dyn Error>> {
    // --- Task, tokenizer, a warm-started tiny Qwen3 (from the embedded run) ---------------
    let demo = ArithmeticDemo::from_toml_str(&o.demo)?;
    let data = demo.data()?;
    let device = Default::default();
    let mut model: CausalLm<B> = demo.warm_start(&data, o.seed, &device, |_, _| {})?;
    let tok = &data.tokenizer;
    let end_ids = rl_trainer::end_token_ids(tok);
    let renderer = PromptRenderer::new(&demo.train.data);
    let prompts: Vec<Vec<u32>> = data
        .train
        .prompts
        .iter()
        .map(|p| renderer.render(p, tok))
        .collect::<Result<_, _>>()?;

    // --- The pieces ---------------------------------------------------------------------
    let mut engine = LocalEngine::new(model.inference(), 0, 0, Some(tok.num_defined_ids()));
    let verifier = demo.train.reward.verifier.build()?;
    let rewards = demo.train.reward_map();
    let mut batcher = DynamicBatcher::new(
        BatcherConfig {
            groups_per_step: o.groups,
            max_gen_rounds: 8,
            on_exhausted: OnExhausted::TrainOnKept,
            round_sizing: Default::default(),
        },
        FilterConfig::DynamicSampling {
            metric: FilterMetric::Correct,
            reward_tol: 0.0,
        }
        .build()?,
    )?;
    let estimator = EstimatorConfig::from_name("da3po")?.build(o.group_size)?;
    let loss_cfg = LossConfig {
        policy: PolicyLoss::Ppo {
            clip_low: 0.2,
            clip_high: 0.28,
            dual_clip: None,
        },
        aggregation: rl_loss::Aggregation::TokenMean,
        kl: None,
        entropy_coef: 0.0,
        is_correction: rl_loss::IsCorrection::None,
    };
    let mut optim = AdamWConfig::new()
        .with_weight_decay(0.0)
        .init::<B, CausalLm<B>>();
    let mut rng = ChaCha8Rng::seed_from_u64(o.seed);
    let mut order: Vec<usize> = (0..prompts.len()).collect();
    order.shuffle(&mut rng);
    let mut cursor = 0;
    let mut next_group = 0u64;

    let mut logs = Vec::new();
    for step in 1..=o.steps {
        // --- generate → score → filter, in rounds until the batcher has N groups ---------
        let (mut generated, mut correct) = (0usize, 0usize);
        let batch = loop {
            let round: Vec<usize> = (0..o.prompts_per_round)
                .map(|_| {
                    cursor = (cursor + 1) % order.len();
                    order[cursor]
                })
                .collect();
            let requests: Vec<GenerateRequest> = round
                .iter()
                .map(|&i| GenerateRequest {
                    prompt_ids: prompts[i].clone(),
                    n: o.group_size,
                    params: SamplingParams {
                        temperature: 1.0,
                        max_new_tokens: o.max_new_tokens,
                        stop_ids: end_ids.clone(),
                        seed: rng.next_u64(),
                        ..SamplingParams::default()
                    },
                })
                .collect();
            let completions = engine.generate(&requests)?;
            let mut groups = Vec::new();
            for (&i, samples) in round.iter().zip(completions) {
                let mut items = Vec::new();
                for completion in samples {
                    let text = tok.decode(strip_end_tokens(&completion.tokens, &end_ids), false)?;
                    let outcome = verifier
                        .verify(&text, &data.train.prompts[i].answer)
                        .outcome;
                    items.push(Rollout {
                        prompt: i,
                        completion,
                        reward: rewards.reward(&outcome),
                        correct: outcome.is_correct(),
                    });
                }
                let group = RolloutGroup {
                    group: GroupId(next_group),
                    prompt: i as u64,
                    items,
                };
                generated += group.items.len();
                correct += group.correct_count();
                groups.push(group);
                next_group += 1;
            }
            if let Some(batch) = batcher.push_round(groups)? {
                break batch;
            }
        };

        // --- advantages (explicit group ids; DAA amplifies correct answers on hard groups) --
        let samples: Vec<Sample> = batch
            .groups
            .iter()
            .flat_map(|g| {
                g.items
                    .iter()
                    .map(|r| Sample::new(g.group, r.reward, r.correct))
            })
            .collect();
        let adv = compute_batch(&estimator, &samples, None)?;
        let items: Vec<&Rollout> = batch.groups.iter().flat_map(|g| g.items.iter()).collect();

        // --- π_old: the engine's weights are the policy's (synchronous), so its log-probs
        //     are π_old up to rounding; an off-policy engine would need the trainer's here ----
        let seqs: Vec<Vec<u32>> = items
            .iter()
            .map(|r| [prompts[r.prompt].as_slice(), &r.completion.tokens].concat())
            .collect();
        let starts: Vec<usize> = items.iter().map(|r| prompts[r.prompt].len() - 1).collect();
        let lengths: Vec<usize> = items.iter().map(|r| r.completion.tokens.len()).collect();
        let width = lengths.iter().copied().max().unwrap_or(1).max(1);
        let old = model.logprobs_detached(&seqs, &starts, width, 1.0)?;

        // --- one update over the whole batch: log-probs of the response window, the loss
        //     with the batch's global token count, AdamW -------------------------------------
        let logp = model
            .logprobs(&seqs, &starts, width, EntropyMode::None, 1.0)?
            .logprobs;
        let pad = |rows: Vec<Vec<f32>>| -> Tensor<B, 2> {
            let mut flat = Vec::with_capacity(rows.len() * width);
            for r in rows {
                let n = r.len();
                flat.extend(r);
                flat.extend(std::iter::repeat_n(0.0, width - n));
            }
            Tensor::from_data(TensorData::new(flat, [items.len(), width]), &device)
        };
        let advantages: Vec<Vec<f32>> = lengths
            .iter()
            .zip(&adv.advantages)
            .map(|(&l, &a)| vec![a as f32; l])
            .collect();
        let input = LossInput {
            logp,
            old_logp: pad(old),
            advantages: pad(advantages),
            mask: mask_from_lengths::<B>(&lengths, width, &device),
            ref_logp: None,
            entropy: None,
            is_weights: None,
        };
        let out = compute_loss(&loss_cfg, input, GlobalCounts::from_lengths(&lengths))?;
        let loss = out.metrics.loss;
        let grads = GradientsParams::from_grads(out.loss.backward(), &model);
        model = optim.step(o.lr, model, grads);

        // --- sync the new weights to the engine as version `step` ---------------------------
        engine.update_weights(
            WeightsRef::InProcess(Box::new(model.inference())),
            step as u64,
        )?;

        let log = StepLog {
            step,
            acc: correct as f64 / generated.max(1) as f64,
            rounds: batch.report.rounds,
            kept: batch.report.groups_kept,
            seen: batch.report.groups_seen,
            amplified: adv.stats.amplified,
            loss,
        };
        println!(
            "step {:>3} acc {:.3} rounds {} kept {}/{} amplified {} loss {:+.4}",
            log.step, log.acc, log.rounds, log.kept, log.seen, log.amplified, log.loss
        );
        logs.push(log);
    }
    Ok(logs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The loop at a tiny size: 2 steps of 4 groups × 4 responses on a small warm-started model;
    /// each step fills its batch, amplifies nothing it should not, and has a finite loss.
    #[test]
    fn runs_at_a_tiny_size() {
        let o = Options {
            steps: 2,
            groups: 4,
            group_size: 4,
            prompts_per_round: 16,
            max_new_tokens: 6,
            lr: 1e-4,
            seed: 1,
            demo: "hidden_size = 64\nintermediate_size = 128\nnum_attention_heads = 4\n\
                   train_per_tier = 40\n[sft]\nsteps = 60\nbatch_size = 32\n[sft.optim]\nmicro_batch = 32\n"
                .into(),
        };
        let logs = train(&o).unwrap();
        assert_eq!(logs.len(), 2);
        for l in &logs {
            assert!(l.loss.is_finite(), "{l:?}");
            assert!(l.kept >= 1 && l.kept <= l.seen && l.rounds >= 1, "{l:?}");
            assert!(l.amplified <= l.kept * 4, "{l:?}");
        }
    }
}
