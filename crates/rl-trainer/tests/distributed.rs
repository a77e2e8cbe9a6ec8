//! Data-parallel updates (rl_trainer::distributed): two workers, each holding half of a
//! mini-batch, take the same optimizer steps as one worker holding all of it.
//!
//! Why the two must agree (the derivation the tests check): with token-mean aggregation the
//! loss is Σ_{i,t} m·ℓ / N_tokens over the whole mini-batch. Worker k forms
//! L_k = Σ_{i∈k,t} m·ℓ / N_tokens with the *global* N_tokens (summed over workers first), so
//! L_0 + L_1 = L and ∇L_0 + ∇L_1 = ∇L: summing gradients gives the single-worker gradient, hence
//! the same clipping norm and the same AdamW step. The same holds for seq-mean-token-mean with
//! N_seqs. Averaging per-worker means instead gives ½(S_0/N_0 + S_1/N_1), which differs whenever
//! the workers hold different numbers of tokens (for seq-mean: of sequences; here 3 short vs 1 short
//! and 4 long responses); the
//! `naive` control below shows that difference is far above the tolerance.

mod common;

use std::sync::Mutex;

use burn::backend::Flex;
use common::{B, flat, task_model};
use rl_loss::{Aggregation, LossConfig};
use rl_models::{CausalLm, Checkpointing, MemoryPlan, Tokenizer};
use rl_trainer::distributed::{Worker, WorkerConfig};
use rl_trainer::optim::AdamWOptimizer;
use rl_trainer::policy_update::{TrainSeq, UpdateSettings, policy_update, policy_update_sharded};
use rl_trainer::tasks::ArithmeticTask;
use rl_trainer::{DataParallel, Policy, TrainConfig, Trainer};

/// burn's collective server is one per process and backend: the tests here take turns.
static COLLECTIVE: Mutex<()> = Mutex::new(());

/// Prompt, response, π_old log-probs and advantage of one sequence.
type Seq = (Vec<u32>, Vec<u32>, Vec<f32>, f32);

/// Eight sequences: four short responses first, four long ones after, with mixed advantages;
/// π_old is the model's own log-probs perturbed by a fixed pattern, so that ratios differ from
/// 1 and clipping is exercised from the first step.
fn batch(model: &CausalLm<B>, tok: &Tokenizer) -> Vec<Seq> {
    let items = [
        ("3+4=", "7", 1.0f32),
        ("9-2=", "7", -0.5),
        ("5*5=", "25", 0.8),
        ("8+1=", "9", -1.2),
        ("47+8=", "Answer: 55 = 47 + 8 = 55", 0.6),
        ("12*3=", "Answer: 36 = 12 * 3 = 36", -0.9),
        ("90-45=", "Answer: 45 45 45 45 45 45", 1.5),
        ("7*8=", "Answer: 56 = 7 * 8 = 56 56", -0.3),
    ];
    items
        .iter()
        .enumerate()
        .map(|(i, (p, r, a))| {
            let prompt = tok.encode(p).unwrap();
            let response = tok.encode(r).unwrap();
            let ids = vec![[prompt.as_slice(), &response].concat()];
            let lp = model
                .logprobs_detached(&ids, &[prompt.len() - 1], response.len(), 1.0)
                .unwrap()
                .remove(0);
            let old = lp
                .iter()
                .enumerate()
                .map(|(j, x)| x + 0.15 * (((i * 7 + j * 3) % 5) as f32 - 2.0))
                .collect();
            (prompt, response, old, *a)
        })
        .collect()
}

fn train_seqs(b: &[Seq]) -> Vec<TrainSeq<'_>> {
    b.iter()
        .map(|(p, r, o, a)| TrainSeq {
            prompt: p,
            response: r,
            old_logp: o,
            rollout_logp: &[],
            ref_logp: None,
            advantage: *a,
            token_advantages: None,
            train: true,
            is_weights: None,
            keep: None,
            sampled: None,
        })
        .collect()
}

/// What a run of optimizer steps produced: loss and gradient norm per step, final parameters.
struct Run {
    losses: Vec<f64>,
    norms: Vec<f64>,
    params: Vec<f32>,
}

const STEPS: usize = 3;
/// Worker 0 holds the first three (short) sequences, worker 1 the other five: unequal token
/// *and* sequence counts, so that averaging per-worker means is wrong for token-mean and for
/// seq-mean-token-mean alike.
const SPLIT: usize = 3;
const LR: f64 = 1e-3;

/// lr `LR`, micro-batches of 3, T = 1.
fn settings(loss: &LossConfig) -> UpdateSettings<'_> {
    settings_with(loss, (3, 0), MemoryPlan::default())
}

/// lr `LR`, micro-batches of at most `seqs` sequences and `tokens` padded tokens, T = 1.
fn settings_with(
    loss: &LossConfig,
    (seqs, tokens): (usize, usize),
    memory: MemoryPlan,
) -> UpdateSettings<'_> {
    UpdateSettings {
        lr: LR,
        loss,
        micro_batch: seqs,
        micro_batch_tokens: tokens,
        memory,
        temperature: 1.0,
        old: rl_trainer::policy_update::OldLogprobs::Given,
    }
}

fn loss_config(aggregation: Aggregation) -> (TrainConfig, LossConfig) {
    let mut c = TrainConfig::default();
    c.apply_preset("dapo").unwrap();
    c.optim.grad_clip = 1.0;
    let loss = LossConfig {
        aggregation,
        ..c.loss
    };
    (c, loss)
}

/// `STEPS` optimizer updates on `b` (this worker's share when `worker` is given, else the
/// whole mini-batch).
fn run(
    model: CausalLm<B>,
    b: &[Seq],
    aggregation: Aggregation,
    worker: Option<&DataParallel<Flex>>,
) -> Run {
    run_micro(model, b, aggregation, worker, (3, 0))
}

/// [`run`] with micro-batches of at most `micro.0` sequences and `micro.1` padded tokens.
fn run_micro(
    model: CausalLm<B>,
    b: &[Seq],
    aggregation: Aggregation,
    worker: Option<&DataParallel<Flex>>,
    micro: (usize, usize),
) -> Run {
    let (_, loss) = loss_config(aggregation);
    run_with(model, b, &loss, worker, micro, MemoryPlan::default())
}

/// [`STEPS`] updates with `loss`, `micro`-batches and the memory plan `memory`.
fn run_with(
    model: CausalLm<B>,
    b: &[Seq],
    loss: &LossConfig,
    worker: Option<&DataParallel<Flex>>,
    micro: (usize, usize),
    memory: MemoryPlan,
) -> Run {
    let (c, _) = loss_config(loss.aggregation);
    let mut optim = AdamWOptimizer::<B, CausalLm<B>>::new(&c.optim);
    let seqs = train_seqs(b);
    let (mut policy, mut losses, mut norms) = (model, vec![], vec![]);
    let single = DataParallel::single();
    for _ in 0..STEPS {
        let out = policy_update_sharded(
            policy,
            &mut optim,
            settings_with(loss, micro, memory),
            &seqs,
            &Default::default(),
            worker.unwrap_or(&single),
        )
        .unwrap();
        assert!(out.applied);
        losses.push(out.metrics.loss);
        norms.push(out.grad_norm);
        policy = out.policy;
    }
    Run {
        losses,
        norms,
        params: flat(&policy),
    }
}

/// Two workers (threads) joined by burn-collective, worker 0 holding the first `SPLIT`
/// sequences and worker 1 the rest.
fn sharded(model: CausalLm<B>, b: &[Seq], aggregation: Aggregation) -> [Run; 2] {
    let shards = [&b[..SPLIT], &b[SPLIT..]];
    let runs = std::thread::scope(|s| {
        let handles: Vec<_> = shards
            .iter()
            .enumerate()
            .map(|(rank, shard)| {
                let model = model.clone();
                s.spawn(move || {
                    let worker =
                        Worker::<Flex>::join(WorkerConfig::local(2, rank), &Default::default())
                            .unwrap();
                    let worker = DataParallel::new(Box::new(worker));
                    let out = run(model, shard, aggregation, Some(&worker));
                    worker.leave().unwrap();
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    let mut it = runs.into_iter();
    [it.next().unwrap(), it.next().unwrap()]
}

/// The largest element-wise gap between `params` and `reference`, and the largest magnitude of
/// `reference` (the scale the gap is compared to).
fn param_gap(params: &[f32], reference: &[f32]) -> (f64, f64) {
    let scale = reference.iter().fold(0f32, |m, x| m.max(x.abs())) as f64;
    let worst = params
        .iter()
        .zip(reference)
        .map(|(a, b)| (*a as f64 - *b as f64).abs())
        .fold(0f64, f64::max);
    (worst, scale)
}

/// ‖a − b‖₂.
fn l2_gap(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| ((x - y) as f64).powi(2))
        .sum::<f64>()
        .sqrt()
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(1e-12)
}

/// The loss of one worker's shard with its own (local) normaliser, as a naive data-parallel
/// trainer would form it before averaging over workers.
fn local_loss(model: &CausalLm<B>, shard: &[Seq], aggregation: Aggregation) -> f64 {
    let (c, loss) = loss_config(aggregation);
    let mut optim = AdamWOptimizer::<B, CausalLm<B>>::new(&c.optim);
    let out = policy_update(
        model.clone(),
        &mut optim,
        settings(&loss),
        &train_seqs(shard),
        &Default::default(),
    )
    .unwrap();
    out.metrics.loss
}

fn check_equivalence(aggregation: Aggregation) {
    let _turn = COLLECTIVE.lock().unwrap_or_else(|e| e.into_inner());
    let (model, tok) = task_model(11, None);
    let b = batch(&model, &tok);
    let lens: Vec<usize> = b.iter().map(|s| s.1.len()).collect();
    let (short, long): (usize, usize) = (lens[..SPLIT].iter().sum(), lens[SPLIT..].iter().sum());
    assert!(
        long >= 3 * short,
        "shards must differ in tokens: {short} vs {long}"
    );

    let one = run(model.clone(), &b, aggregation, None);
    let two = sharded(model.clone(), &b, aggregation);
    const TOL: f64 = 1e-5;
    for (k, w) in two.iter().enumerate() {
        for s in 0..STEPS {
            let (l, n) = (
                rel(w.losses[s], one.losses[s]),
                rel(w.norms[s], one.norms[s]),
            );
            assert!(
                l < TOL && n < TOL,
                "{aggregation:?} worker {k} step {s}: loss {} vs {} (rel {l:e}), grad norm {} vs \
                 {} (rel {n:e})",
                w.losses[s],
                one.losses[s],
                w.norms[s],
                one.norms[s]
            );
        }
        // Parameters: every element within 1e-5 of the single worker's, relative to the
        // largest parameter magnitude of the model.
        let (worst, scale) = param_gap(&w.params, &one.params);
        eprintln!(
            "{aggregation:?} worker {k}: losses {:?} vs {:?}, grad norms {:?} vs {:?}, \
             worst parameter gap {worst:e} (scale {scale})",
            w.losses, one.losses, w.norms, one.norms
        );
        assert!(
            worst / scale < TOL,
            "{aggregation:?} worker {k}: parameters differ by {worst:e} (scale {scale})"
        );
    }
    // The two replicas are bit-identical: the same summed gradients, the same AdamW step.
    assert_eq!(two[0].params, two[1].params);
    assert_eq!(two[0].losses, two[1].losses);

    // Control: averaging the workers' own means misses the global loss by far more than TOL.
    let naive = 0.5
        * (local_loss(&model, &b[..SPLIT], aggregation)
            + local_loss(&model, &b[SPLIT..], aggregation));
    assert!(
        rel(naive, one.losses[0]) > 1e3 * TOL,
        "{aggregation:?}: the per-worker-mean loss {naive} is too close to the global loss {} \
         for this test to tell them apart",
        one.losses[0]
    );
}

#[test]
fn two_workers_equal_one_with_token_mean() {
    check_equivalence(Aggregation::TokenMean);
}

#[test]
fn two_workers_equal_one_with_seq_mean_token_mean() {
    check_equivalence(Aggregation::SeqMeanTokenMean);
}

/// Two trainers on one worker each, data set and seed alike, with one generation chunk per
/// prompt (`generation_batch` = G: a prompt's samples depend only on its seed and the weights,
/// not on which worker batches them).
fn chunked_trainer(out: &std::path::Path, model: CausalLm<B>) -> Trainer<B, CausalLm<B>> {
    let tok = ArithmeticTask::tokenizer().unwrap();
    let (train, _) = ArithmeticTask::default().split(3, 20, 4).unwrap();
    // DAPO without the filter: a random model is rarely right, but the soft overlong penalty
    // (L_max = 6, L_cache = 1) gives responses of one group different rewards, so the
    // advantages are not all zero.
    let mut c = common::grpo_one_update(out, 2);
    c.apply_preset("dapo").unwrap();
    c.filter = rl_sampler::FilterConfig::None;
    c.rollout.generation_batch = c.rollout.group_size;
    Trainer::new(c, model, tok, train, None, Default::default()).unwrap()
}

/// What a loop over the trainer's steps produced: per step the mean loss, the mean gradient
/// norm, the responses generated and the advantages; the final parameters.
type LoopRun = (Vec<(f64, f64, usize, Vec<f64>)>, Vec<f32>);

/// A data-parallel loop written by hand from the trainer's public phases — collect a batch,
/// advantages, behaviour log-probs, update, finish the step — on 2 workers (threads) takes the
/// same steps as `Trainer::step` on one: the workers exchange scored rounds, so each sees the
/// whole batch and its advantages, and their gradient sums equal the one worker's gradient
/// (the derivation at the top of this file), so losses and gradient norms agree to rounding.
///
/// The parameters are compared through the update they received: ‖θ₂ − θ₁‖ / ‖θ₁ − θ₀‖ (two
/// workers vs one, over the one worker's change). Element-wise they may differ by up to ~lr:
/// AdamW moves a parameter by ≈ lr·g/(|g| + ε), and for a gradient near ε = 1e-8 the f32
/// rounding of a sum taken in another order (~1e-7 relative of terms ~1e-2) changes that step
/// by a fraction of lr. Such parameters are few, so the gap in norm stays a small fraction of
/// the update (here ~3e-6; the bound is 1e-4), while a wrong normaliser or a missing share would change the update
/// itself (the `naive` control above: by far more than 1e-2).
#[test]
fn a_hand_written_two_worker_loop_trains_as_trainer_step_does() {
    let _turn = COLLECTIVE.lock().unwrap_or_else(|e| e.into_inner());
    let (model, _) = task_model(11, None);
    let start = flat(&model);
    let dir = common::tmp("distributed", "hand-loop");
    let one: LoopRun = {
        let mut t = chunked_trainer(&dir.join("one"), model.clone());
        let steps = (0..2)
            .map(|_| {
                let m = t.step().unwrap();
                (m.loss, m.grad_norm, m.responses_generated, Vec::new())
            })
            .collect();
        (steps, flat(t.policy()))
    };
    let two: Vec<LoopRun> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|rank| {
                let (model, out) = (model.clone(), dir.join(format!("rank{rank}")));
                s.spawn(move || {
                    let w = Worker::<Flex>::join(WorkerConfig::local(2, rank), &Default::default())
                        .unwrap();
                    let mut t = chunked_trainer(&out, model)
                        .with_collective(Box::new(w))
                        .unwrap();
                    let mut steps = Vec::new();
                    for _ in 0..2 {
                        let h = common::hand_step(&mut t, |t, groups| t.behaviour(groups));
                        let n = h.update.applied.max(1) as f64;
                        steps.push((
                            h.update.loss.loss / n,
                            h.update.grad_norm_sum / n,
                            h.generated,
                            h.advantages,
                        ));
                    }
                    let params = flat(t.policy());
                    t.take_parallel().leave().unwrap();
                    (steps, params)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let update = l2_gap(&one.1, &start);
    for (rank, (steps, params)) in two.iter().enumerate() {
        for (s, ((loss, gn, generated, adv), (loss1, gn1, generated1, _))) in
            steps.iter().zip(&one.0).enumerate()
        {
            assert_eq!(generated, generated1, "rank {rank} step {s}: responses");
            assert!(
                rel(*loss, *loss1) < 1e-4 && rel(*gn, *gn1) < 1e-4,
                "rank {rank} step {s}: loss {loss} vs {loss1}, grad norm {gn} vs {gn1} (1 worker)"
            );
            assert_eq!(adv, &two[0].0[s].3, "rank {rank} step {s}: advantages");
        }
        let gap = l2_gap(params, &one.1) / update;
        eprintln!("rank {rank}: update {update:e}, gap/update {gap:e}");
        assert!(
            gap < 1e-4,
            "rank {rank}: parameters differ by {gap:e} of the update"
        );
    }
    assert_eq!(two[0].1, two[1].1, "the replicas are identical");
    assert!(
        two[0].0.iter().any(|s| s.3.iter().any(|a| a.abs() > 0.1)) && update > 0.0,
        "nothing was trained: {:?}",
        two[0].0
    );
}

/// Token-budget micro-batches (`optim.micro_batch_tokens`) train exactly as sequence-count ones:
/// the losses are sums over the mini-batch's global counts, so the partition changes only the
/// float summation order. The batch's sequences are 5–6 prompt tokens plus 1–26 response
/// tokens; a budget of 40 padded tokens gives micro-batches of 1 to 4 sequences, regrouped by
/// length (the partition is checked to differ from one micro-batch of 8), against one
/// micro-batch of all 8. Three
/// steps agree in loss, gradient norm and every parameter within 1e-5, for both aggregations.
#[test]
fn token_budget_micro_batches_train_as_one_micro_batch() {
    let (model, tok) = task_model(11, None);
    let b = batch(&model, &tok);
    let lengths: Vec<usize> = b.iter().map(|s| s.0.len() + s.1.len()).collect();
    let parts = rl_trainer::policy_update::micro_batch_plan(&lengths, 8, 40);
    assert!(parts.len() >= 3, "{lengths:?} → {parts:?}");
    for aggregation in [Aggregation::TokenMean, Aggregation::SeqMeanTokenMean] {
        let whole = run_micro(model.clone(), &b, aggregation, None, (8, 0));
        let budget = run_micro(model.clone(), &b, aggregation, None, (8, 40));
        for s in 0..STEPS {
            assert!(
                rel(budget.losses[s], whole.losses[s]) < 1e-5,
                "{aggregation:?} step {s}"
            );
            assert!(
                rel(budget.norms[s], whole.norms[s]) < 1e-5,
                "{aggregation:?} step {s}"
            );
        }
        let (worst, scale) = param_gap(&budget.params, &whole.params);
        assert!(
            worst / scale < 1e-5,
            "{aggregation:?}: parameters differ by {worst:e}"
        );
    }
}

/// The update's memory plans (`model.logprob_chunk`, `model.checkpointing`) train as the plain
/// pass: their backward recomputes the LM head chunk by chunk and, with `layers`, each decoder
/// layer from its stored input, which is the same chain rule in another order. Three steps of
/// micro-batches of 3 agree in loss and gradient norm within 1e-5, for the token-level DAPO loss
/// with an entropy bonus (the entropy's own gradient path) and for GSPO's sequence-level ratio
/// (a loss that is not a sum over tokens, so `∂L/∂log p` of one token depends on the others of
/// its sequence). The parameters are compared through the update they received, ‖θ_plan −
/// θ_plain‖ / ‖θ_plain − θ₀‖ < 1e-4, for the reason derived at
/// `a_hand_written_two_worker_loop_trains_as_trainer_step_does`: AdamW moves a parameter whose
/// gradient is near ε by a fraction of lr that depends on the gradient's last bits, so an
/// element-wise bound depends on the CPU's kernels (on an AVX2-only EPYC, GSPO with
/// checkpointed layers differed by 1.2e-5 of the largest parameter, against 1e-5), while a
/// wrong recomputation would change the update itself.
#[test]
fn memory_plans_train_as_the_plain_pass() {
    let (model, tok) = task_model(11, None);
    let b = batch(&model, &tok);
    let plans = [
        (2, Checkpointing::None),
        (0, Checkpointing::Layers),
        (5, Checkpointing::Layers),
    ]
    .map(|(logprob_chunk, checkpointing)| MemoryPlan {
        logprob_chunk,
        checkpointing,
        ..MemoryPlan::default()
    });
    trains_as_the_plain_pass(&model, &b, &plans);
}

/// [`memory_plans_train_as_the_plain_pass`] for shared prompts (`MemoryPlan::shared_prompts`,
/// plain head and chunks of 2 positions): the batch's eight sequences take three prompts (rows
/// 0, 3, 6 / 1, 4, 7 / 2, 5), so with micro-batches of 3 sequences each micro-batch is one
/// prompt group (`shared_micro_batch_plan`) computing its prompt once.
#[test]
fn shared_prompts_train_as_the_plain_pass() {
    let (model, tok) = task_model(11, None);
    let mut b = batch(&model, &tok);
    for i in 3..b.len() {
        b[i].0 = b[i % 3].0.clone();
    }
    let plans = [0, 2].map(|logprob_chunk| MemoryPlan {
        logprob_chunk,
        shared_prompts: true,
        ..MemoryPlan::default()
    });
    trains_as_the_plain_pass(&model, &b, &plans);
}

/// Three updates of DAPO with an entropy bonus and of GSPO on `b` under each plan against the
/// plain pass: losses and gradient norms within 1e-5, parameters within 1e-4 of the update.
fn trains_as_the_plain_pass(model: &CausalLm<B>, b: &[Seq], plans: &[MemoryPlan]) {
    let (_, dapo) = loss_config(Aggregation::TokenMean);
    let mut gspo = TrainConfig::default();
    gspo.apply_preset("gspo").unwrap();
    let losses = [
        (
            "dapo + entropy bonus",
            LossConfig {
                entropy_coef: 0.01,
                ..dapo
            },
        ),
        ("gspo", gspo.loss),
    ];
    let start = flat(model);
    for (name, loss) in &losses {
        let plain = run_with(model.clone(), b, loss, None, (3, 0), MemoryPlan::default());
        let update = l2_gap(&plain.params, &start);
        for &plan in plans {
            let got = run_with(model.clone(), b, loss, None, (3, 0), plan);
            for s in 0..STEPS {
                assert!(
                    rel(got.losses[s], plain.losses[s]) < 1e-5,
                    "{name} {plan:?} step {s}: loss {} vs {}",
                    got.losses[s],
                    plain.losses[s]
                );
                assert!(
                    rel(got.norms[s], plain.norms[s]) < 1e-5,
                    "{name} {plan:?} step {s}: grad norm {} vs {}",
                    got.norms[s],
                    plain.norms[s]
                );
            }
            let gap = l2_gap(&got.params, &plain.params) / update;
            eprintln!("{name} {plan:?}: update {update:e}, gap/update {gap:e}");
            assert!(
                update > 0.0 && gap < 1e-4,
                "{name} {plan:?}: parameters differ by {gap:e} of the update {update:e}"
            );
        }
    }
}
