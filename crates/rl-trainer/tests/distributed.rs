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
//!
//! **How two ways of computing an update are compared.** Workers, micro-batch partitions and
//! memory plans compute the same gradient in another float summation order. They are compared
//! by their gradients at the same parameters ([`policy_gradients`], before any optimizer step),
//! at each of [`STEPS`] points of the reference's own AdamW trajectory, per parameter tensor:
//! ‖g_T − g_T^ref‖ / ‖g_T^ref‖ < [`GRAD_TOL`]. Parameters after AdamW steps are not a fair
//! yardstick: AdamW's first step moves an element by lr·g/(|g| + ε), so an element whose gradient
//! is within a few ε = 1e-8 of zero moves by a fraction of lr that depends on the gradient's last
//! bits. Measured on the shared-prompt batch (2026-12-07, Xeon with AVX-512): two of 75,520
//! gradient entries, 2.19e-8 against 2.79e-8 and 4.71e-9 against 5.94e-9 (each a cancellation,
//! their difference ~1e-6 of the largest entry), carried the whole parameter gap of 6.8e-5 after
//! one step, 2.5e-4 of the update, while the two gradients agreed within 7e-7 per tensor.

mod common;

use std::sync::Mutex;

use burn::backend::Flex;
use burn::module::Module;
use burn::optim::GradientsParams;
use common::{B, flat, task_model};
use rl_loss::{Aggregation, LossConfig};
use rl_models::{CausalLm, Checkpointing, MemoryPlan, Tokenizer};
use rl_trainer::distributed::{Worker, WorkerConfig};
use rl_trainer::optim::AdamWOptimizer;
use rl_trainer::policy_update::{TrainSeq, UpdateSettings, policy_gradients, policy_update};
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

/// The bound on the per-tensor gap between two computations of one gradient at the same
/// parameters ([`grad_gap`]).
///
/// Measured on 2026-12-07 (Intel Xeon with AVX-512 and AMX, burn-flex's SIMD kernels at their
/// AVX-512 level and, with `RLVR_NO_AVX512=1`, at the AVX2 level of CPUs without it): at each
/// of the three trajectory points of both batches and both losses here, every memory plan,
/// shared-prompt plan and token-budget partition agreed with the plain pass within 9.2e-7 per
/// tensor on both paths; the plain pass's own reorderings (one micro-batch of 8, or 8 of one)
/// within 6.8e-7; the plain pass on one SIMD path against the other within 4.2e-7 (of the
/// largest entry). A tensor's f32 gradient is a sum over tokens and layers of ~2⁻²⁴-rounded terms,
/// so a few times 1e-7 is the expected size of a reordering. The bound is 10× the largest of
/// these; one sequence's advantage off by 0.1 % is ~18× the bound
/// ([`the_gradient_bound_sees_one_sequence_weighted_one_permille_wrong`]).
const GRAD_TOL: f64 = 1e-5;

/// The loss of a mini-batch and its gradient at some parameters ([`gradient_at`]).
struct Gradient {
    loss: f64,
    /// One `(name, values)` per parameter tensor ([`common::flat_grads`]).
    tensors: Vec<(String, Vec<f32>)>,
    grads: GradientsParams,
}

/// The loss and gradient of `b` at `policy` with micro-batches of at most `micro.0` sequences
/// and `micro.1` padded tokens and the memory plan `memory`; `b` is this worker's share of the
/// mini-batch under `worker` (the gradient and loss summed over the workers).
fn gradient_at(
    policy: &CausalLm<B>,
    b: &[Seq],
    loss: &LossConfig,
    micro: (usize, usize),
    memory: MemoryPlan,
    worker: &DataParallel<Flex>,
) -> Gradient {
    let seqs = train_seqs(b);
    let g = policy_gradients(
        policy,
        settings_with(loss, micro, memory),
        &seqs,
        &Default::default(),
        worker,
        None,
    )
    .unwrap();
    let grads = g.grads.expect("a finite loss");
    Gradient {
        loss: g.metrics.loss,
        tensors: common::flat_grads(policy, &grads),
        grads,
    }
}

/// The largest per-tensor gap ‖g_T − r_T‖₂ / ‖r_T‖₂ of `got` against `reference` (0 where both
/// are zero, infinite where only the reference is), and that tensor's name.
fn grad_gap(got: &[(String, Vec<f32>)], reference: &[(String, Vec<f32>)]) -> (f64, String) {
    assert_eq!(got.len(), reference.len());
    let mut worst = (0.0, String::new());
    for ((name, g), (_, r)) in got.iter().zip(reference) {
        let gap = l2_gap(g, r);
        let norm = r.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
        let t = match (gap, norm) {
            (0.0, _) => 0.0,
            (_, 0.0) => f64::INFINITY,
            _ => gap / norm,
        };
        if t > worst.0 {
            worst = (t, name.clone());
        }
    }
    worst
}

/// A way of computing an update: its name, micro-batch limits (sequences, padded tokens) and
/// memory plan.
type Way = (&'static str, (usize, usize), MemoryPlan);

/// [`STEPS`] AdamW steps of the `reference` way from `model` on `b`; at each step's parameters
/// every one of `ways` gives the reference's loss (1e-5 relative) and gradient ([`GRAD_TOL`] per
/// tensor). At each step the reference's own reordering noise (micro-batches of one sequence) is
/// checked to stay below GRAD_TOL / 5 (measured ≤ 6.8e-7), so that the bound still separates a
/// wrong computation from rounding.
fn computes_the_reference_gradient(
    model: &CausalLm<B>,
    b: &[Seq],
    loss: &LossConfig,
    reference: Way,
    ways: &[Way],
) {
    let single = DataParallel::single();
    let (c, _) = loss_config(loss.aggregation);
    let mut optim = AdamWOptimizer::<B, CausalLm<B>>::new(&c.optim);
    let mut policy = model.clone();
    for s in 0..STEPS {
        let r = gradient_at(&policy, b, loss, reference.1, reference.2, &single);
        let one = gradient_at(&policy, b, loss, (1, 0), reference.2, &single);
        let (floor, at) = grad_gap(&one.tensors, &r.tensors);
        assert!(
            floor < GRAD_TOL / 5.0,
            "step {s}: the reference's own reordering noise {floor:e} (tensor {at}) is too close \
             to the bound {GRAD_TOL:e}"
        );
        for (name, micro, memory) in ways {
            let g = gradient_at(&policy, b, loss, *micro, *memory, &single);
            let (gap, at) = grad_gap(&g.tensors, &r.tensors);
            eprintln!(
                "{name} step {s}: loss rel {:e}, gradient gap {gap:e} (tensor {at}; reference \
                 noise {floor:e})",
                rel(g.loss, r.loss)
            );
            assert!(
                rel(g.loss, r.loss) < 1e-5,
                "{name} step {s}: loss {} vs {} ({})",
                g.loss,
                r.loss,
                reference.0
            );
            assert!(
                gap < GRAD_TOL,
                "{name} step {s}: gradient differs from {}'s by {gap:e} in tensor {at}",
                reference.0
            );
        }
        policy = optim.step(LR, policy, r.grads).model;
    }
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

/// What one of two workers saw at each of its [`STEPS`] AdamW steps: the parameters it stood at,
/// and the loss and gradient summed over both workers there.
type WorkerSteps = Vec<(CausalLm<B>, f64, Vec<(String, Vec<f32>)>)>;

/// Two workers (threads) joined by burn-collective, worker 0 holding the first `SPLIT`
/// sequences and worker 1 the rest, each taking [`STEPS`] AdamW steps on the summed gradients.
fn sharded_steps(model: &CausalLm<B>, b: &[Seq], loss: &LossConfig) -> [WorkerSteps; 2] {
    let (c, _) = loss_config(loss.aggregation);
    let shards = [&b[..SPLIT], &b[SPLIT..]];
    let runs = std::thread::scope(|s| {
        let handles: Vec<_> = shards
            .iter()
            .enumerate()
            .map(|(rank, shard)| {
                // Each thread its own autodiff leaves (`policy_gradients`' docs).
                let mut policy = model.clone().fork(&Default::default());
                s.spawn(move || {
                    let worker =
                        Worker::<Flex>::join(WorkerConfig::local(2, rank), &Default::default())
                            .unwrap();
                    let worker = DataParallel::new(Box::new(worker));
                    let mut optim = AdamWOptimizer::<B, CausalLm<B>>::new(&c.optim);
                    let mut steps = Vec::new();
                    for _ in 0..STEPS {
                        let g =
                            gradient_at(&policy, shard, loss, (3, 0), Default::default(), &worker);
                        let next = optim.step(LR, policy.clone(), g.grads).model;
                        steps.push((policy, g.loss, g.tensors));
                        policy = next;
                    }
                    worker.leave().unwrap();
                    steps
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

/// At each of the two workers' steps, their summed loss and gradient equal one worker's on the
/// whole mini-batch at the same parameters (1e-5 relative; [`GRAD_TOL`] per tensor), and the
/// two replicas stand at bit-identical parameters.
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
    let (_, loss) = loss_config(aggregation);
    let two = sharded_steps(&model, &b, &loss);
    let single = DataParallel::single();
    for (s, (w0, w1)) in two[0].iter().zip(&two[1]).enumerate() {
        // The two replicas are bit-identical: the same summed gradients, the same AdamW step.
        assert_eq!(
            flat(&w0.0),
            flat(&w1.0),
            "{aggregation:?} step {s}: replicas"
        );
        assert_eq!(
            (w0.1, &w0.2),
            (w1.1, &w1.2),
            "{aggregation:?} step {s}: replicas"
        );
        let one = gradient_at(&w0.0, &b, &loss, (3, 0), Default::default(), &single);
        let (gap, at) = grad_gap(&w0.2, &one.tensors);
        eprintln!(
            "{aggregation:?} step {s}: loss {} vs {} (1 worker), gradient gap {gap:e} ({at})",
            w0.1, one.loss
        );
        assert!(
            rel(w0.1, one.loss) < 1e-5,
            "{aggregation:?} step {s}: loss {} vs {} (1 worker)",
            w0.1,
            one.loss
        );
        assert!(
            gap < GRAD_TOL,
            "{aggregation:?} step {s}: the summed gradient differs from one worker's by {gap:e} \
             in tensor {at}"
        );
    }

    // Control: averaging the workers' own means misses the global loss by far more than the
    // 1e-5 above.
    let global = two[0][0].1;
    let naive = 0.5
        * (local_loss(&model, &b[..SPLIT], aggregation)
            + local_loss(&model, &b[SPLIT..], aggregation));
    assert!(
        rel(naive, global) > 1e-2,
        "{aggregation:?}: the per-worker-mean loss {naive} is too close to the global loss \
         {global} for this test to tell them apart"
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
/// workers vs one, over the one worker's change) over all but the 0.1 % of elements that moved
/// apart most ([`common::trimmed_update_gap`], which says why), < 1e-5. Measured 1.0e-6–1.1e-6
/// on both SIMD paths of an AVX-512 Xeon (2026-12-07; over all elements 2.6e-6–3.7e-6): a factor
/// 9; a wrong normaliser or a missing share would change the update itself (the `naive` control
/// of [`check_equivalence`]: by far more than 1e-2).
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
        let gap = common::trimmed_update_gap(params, &one.1, &start);
        eprintln!("rank {rank}: parameters {gap:e} of the update apart");
        assert!(
            gap < 1e-5,
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
/// micro-batch of all 8: the same loss and gradient at each of three steps
/// ([`computes_the_reference_gradient`]), for both aggregations.
#[test]
fn token_budget_micro_batches_train_as_one_micro_batch() {
    let (model, tok) = task_model(11, None);
    let b = batch(&model, &tok);
    let lengths: Vec<usize> = b.iter().map(|s| s.0.len() + s.1.len()).collect();
    let parts = rl_trainer::policy_update::micro_batch_plan(&lengths, 8, 40);
    assert!(parts.len() >= 3, "{lengths:?} → {parts:?}");
    for aggregation in [Aggregation::TokenMean, Aggregation::SeqMeanTokenMean] {
        let (_, loss) = loss_config(aggregation);
        computes_the_reference_gradient(
            &model,
            &b,
            &loss,
            ("one micro-batch of 8", (8, 0), MemoryPlan::default()),
            &[("a budget of 40 tokens", (8, 40), MemoryPlan::default())],
        );
    }
}

/// The update's memory plans (`model.logprob_chunk`, `model.checkpointing`) train as the plain
/// pass: their backward recomputes the LM head chunk by chunk and, with `layers`, each decoder
/// layer from its stored input, which is the same chain rule in another order. With
/// micro-batches of 3, the loss and gradient of each plan equal the plain pass's at each of
/// three steps ([`computes_the_reference_gradient`]), for the token-level DAPO loss with an
/// entropy bonus (the entropy's own gradient path) and for GSPO's sequence-level ratio (a loss
/// that is not a sum over tokens, so `∂L/∂log p` of one token depends on the others of its
/// sequence).
#[test]
fn memory_plans_train_as_the_plain_pass() {
    let (model, tok) = task_model(11, None);
    let b = batch(&model, &tok);
    let plan = |logprob_chunk, checkpointing| MemoryPlan {
        logprob_chunk,
        checkpointing,
        ..MemoryPlan::default()
    };
    trains_as_the_plain_pass(
        &model,
        &b,
        &[
            ("chunks of 2", (3, 0), plan(2, Checkpointing::None)),
            (
                "checkpointed layers",
                (3, 0),
                plan(0, Checkpointing::Layers),
            ),
            (
                "chunks of 5, checkpointed",
                (3, 0),
                plan(5, Checkpointing::Layers),
            ),
        ],
    );
}

/// [`memory_plans_train_as_the_plain_pass`] for shared prompts (`MemoryPlan::shared_prompts`,
/// plain head and chunks of 2 positions): the batch's eight sequences take three prompts (rows
/// 0, 3, 6 / 1, 4, 7 / 2, 5), so with micro-batches of 3 sequences each micro-batch is one
/// prompt group (`shared_micro_batch_plan`) computing its prompt once. And for packed rows
/// (`MemoryPlan::packing`, `packed_micro_batch_plan`): with shared prompts, without, and with
/// shared prompts and per-layer recomputation, in micro-batches of 3 sequences or of a 40-token
/// budget.
#[test]
fn shared_prompts_and_packing_train_as_the_plain_pass() {
    let (model, tok) = task_model(11, None);
    let b = shared_prompt_batch(&model, &tok);
    let plan = |logprob_chunk, shared_prompts, packing, checkpointing| MemoryPlan {
        logprob_chunk,
        shared_prompts,
        packing,
        checkpointing,
    };
    let none = Checkpointing::None;
    trains_as_the_plain_pass(
        &model,
        &b,
        &[
            ("shared prompts", (3, 0), plan(0, true, false, none)),
            (
                "shared prompts, chunks of 2",
                (3, 0),
                plan(2, true, false, none),
            ),
            ("packed, shared prompts", (3, 0), plan(0, true, true, none)),
            ("packed", (8, 40), plan(2, false, true, none)),
            (
                "packed, shared prompts, checkpointed layers",
                (8, 40),
                plan(2, true, true, Checkpointing::Layers),
            ),
        ],
    );
}

/// [`batch`] with the eight sequences on three prompts: sequence i takes the prompt of i mod 3.
fn shared_prompt_batch(model: &CausalLm<B>, tok: &Tokenizer) -> Vec<Seq> {
    let mut b = batch(model, tok);
    for i in 3..b.len() {
        b[i].0 = b[i % 3].0.clone();
    }
    b
}

/// The two losses of the memory-plan tests: DAPO with an entropy bonus, and GSPO.
fn plan_losses() -> [(&'static str, LossConfig); 2] {
    let (_, dapo) = loss_config(Aggregation::TokenMean);
    let mut gspo = TrainConfig::default();
    gspo.apply_preset("gspo").unwrap();
    [
        (
            "dapo + entropy bonus",
            LossConfig {
                entropy_coef: 0.01,
                ..dapo
            },
        ),
        ("gspo", gspo.loss),
    ]
}

/// Each of `ways` computes the plain pass's loss and gradient (micro-batches of 3) along three
/// AdamW steps of DAPO with an entropy bonus and of GSPO on `b`.
fn trains_as_the_plain_pass(model: &CausalLm<B>, b: &[Seq], ways: &[Way]) {
    for (name, loss) in &plan_losses() {
        eprintln!("{name}:");
        computes_the_reference_gradient(
            model,
            b,
            loss,
            ("the plain pass", (3, 0), MemoryPlan::default()),
            ways,
        );
    }
}

/// The control of [`GRAD_TOL`]: a computation that weights one of the eight sequences 0.1 % off
/// (its advantage × 1.001, as a normaliser or a mask slightly wrong would) differs from the
/// plain pass by ≥ 10× the bound in some tensor, for both losses of the memory-plan tests,
/// while the plain pass's own reorderings stay below it.
#[test]
fn the_gradient_bound_sees_one_sequence_weighted_one_permille_wrong() {
    let (model, tok) = task_model(11, None);
    let b = shared_prompt_batch(&model, &tok);
    let mut wrong = b.clone();
    wrong[4].3 *= 1.001;
    let single = DataParallel::single();
    for (name, loss) in &plan_losses() {
        let plain = gradient_at(&model, &b, loss, (3, 0), MemoryPlan::default(), &single);
        let off = gradient_at(&model, &wrong, loss, (3, 0), MemoryPlan::default(), &single);
        let (gap, at) = grad_gap(&off.tensors, &plain.tensors);
        eprintln!("{name}: one sequence 0.1 % off moves the gradient by {gap:e} ({at})");
        assert!(
            gap > 10.0 * GRAD_TOL,
            "{name}: a 0.1 % error in one sequence moves the gradient by only {gap:e}"
        );
    }
}
