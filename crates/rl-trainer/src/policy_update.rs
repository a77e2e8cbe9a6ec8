//! Turning scored sequences into loss tensors and gradient updates.

use burn::optim::{GradientsAccumulator, GradientsParams};
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use rl_loss::{
    Aggregation, GlobalCounts, IsCorrection, IsStats, LossConfig, LossInput, LossMetrics,
    SequenceWeights, aggregate, compute_loss, generalized_jsd, sequence_weights,
};
use rl_models::{EntropyMode, MemoryPlan};

mod micro_batches;

pub use micro_batches::{
    micro_batch_plan, micro_batches, packed_micro_batch_plan, shared_micro_batch_plan,
};

use crate::TrainerError;
use crate::optim::AdamWOptimizer;
use crate::parallel::DataParallel;
use crate::policy::Policy;

/// One sequence of a training batch (host data).
#[derive(Clone, Debug)]
pub struct TrainSeq<'a> {
    /// Prompt ids.
    pub prompt: &'a [u32],
    /// Response ids (trained tokens).
    pub response: &'a [u32],
    /// π_old log-prob of each response token (empty, and not read, when the update takes π_old
    /// from its own forward pass: [`OldLogprobs::ThisForward`]).
    pub old_logp: &'a [f32],
    /// The engine's log-prob of each response token (π_rollout): read only with
    /// [`OldLogprobs::ThisForward`], for the importance weights.
    pub rollout_logp: &'a [f32],
    /// Reference log-prob of each response token (KL only).
    pub ref_logp: Option<&'a [f32]>,
    /// The sequence's advantage.
    pub advantage: f32,
    /// One advantage per response token, replacing `advantage` where given (on-policy
    /// distillation's per-token signal; `None`: `advantage` for every token).
    pub token_advantages: Option<&'a [f32]>,
    /// False: masked out of the loss (overlong filtering).
    pub train: bool,
    /// Importance-sampling weight of each response token (`None` = 1).
    pub is_weights: Option<&'a [f32]>,
    /// False where the importance-sampling correction masks a token (`None` = all kept).
    pub keep: Option<&'a [bool]>,
    /// False on observation tokens of a multi-turn episode, which are context, not actions:
    /// never in the loss, the token counts or the importance weights (`None` = every response
    /// token was sampled).
    pub sampled: Option<&'a [bool]>,
}

impl TrainSeq<'_> {
    /// Whether response token j was sampled (not an observation).
    fn is_sampled(&self, j: usize) -> bool {
        self.sampled
            .is_none_or(|m| m.get(j).copied().unwrap_or(false))
    }

    /// Whether response token j is in the loss.
    fn trains(&self, j: usize) -> bool {
        self.train
            && self.is_sampled(j)
            && self.keep.is_none_or(|k| k.get(j).copied().unwrap_or(false))
    }
}

/// Valid (trained) tokens and non-empty sequences of `seqs`: the global counts of a mini-batch.
pub fn counts(seqs: &[TrainSeq<'_>]) -> GlobalCounts {
    GlobalCounts::from_lengths(
        &seqs
            .iter()
            .map(|s| (0..s.response.len()).filter(|&j| s.trains(j)).count())
            .collect::<Vec<_>>(),
    )
}

/// Host-side tensors aligned with `Policy::logprobs` over the response positions: row i holds
/// sequence i's response tokens j = 0..len(response) at columns j (width W = the longest
/// response); `starts[i]` = prompt length − 1 is the position whose next-token distribution
/// predicts response token 0.
struct Aligned {
    ids: Vec<Vec<u32>>,
    starts: Vec<usize>,
    width: usize,
    mask: Vec<bool>,
    old: Vec<f32>,
    reference: Vec<f32>,
    adv: Vec<f32>,
    is_weights: Option<Vec<f32>>,
}

fn align(seqs: &[TrainSeq<'_>]) -> Aligned {
    let ids: Vec<Vec<u32>> = seqs
        .iter()
        .map(|s| [s.prompt, s.response].concat())
        .collect();
    let starts = seqs
        .iter()
        .map(|s| s.prompt.len().saturating_sub(1))
        .collect();
    let width = seqs
        .iter()
        .map(|s| s.response.len())
        .max()
        .unwrap_or(1)
        .max(1);
    let n = seqs.len() * width;
    let (mut mask, mut old, mut reference, mut adv) =
        (vec![false; n], vec![0f32; n], vec![0f32; n], vec![0f32; n]);
    let mut is_weights = seqs
        .iter()
        .any(|s| s.is_weights.is_some())
        .then(|| vec![1f32; n]);
    for (i, s) in seqs.iter().enumerate() {
        for j in 0..s.response.len() {
            let k = i * width + j;
            mask[k] = s.trains(j);
            if let (Some(w), Some(sw)) = (is_weights.as_mut(), s.is_weights) {
                w[k] = sw.get(j).copied().unwrap_or(1.0);
            }
            // Lengths are checked by `check_lengths` on the RL path; the supervised path has no
            // old or reference log-probs and reads neither.
            old[k] = s.old_logp.get(j).copied().unwrap_or(0.0);
            reference[k] = s.ref_logp.and_then(|r| r.get(j).copied()).unwrap_or(0.0);
            adv[k] = s
                .token_advantages
                .and_then(|t| t.get(j).copied())
                .unwrap_or(s.advantage);
        }
    }
    Aligned {
        ids,
        starts,
        width,
        mask,
        old,
        reference,
        adv,
        is_weights,
    }
}

/// Every sequence of an RL mini-batch has a non-empty prompt and one π_old (and, with KL, one
/// reference) log-prob per response token.
fn check_lengths(
    seqs: &[TrainSeq<'_>],
    with_ref: bool,
    old: OldLogprobs,
) -> Result<(), TrainerError> {
    for (i, s) in seqs.iter().enumerate() {
        let bad = |message: String| {
            Err(TrainerError::Batch {
                sequence: i,
                message,
            })
        };
        if s.prompt.is_empty() {
            return bad("empty prompt: the first response token has no context".into());
        }
        let (name, given) = match old {
            OldLogprobs::Given => ("π_old", s.old_logp),
            OldLogprobs::ThisForward(_) => ("engine", s.rollout_logp),
        };
        if given.len() != s.response.len() {
            return bad(format!(
                "{} {name} log-probs for a {}-token response",
                given.len(),
                s.response.len()
            ));
        }
        if let Some(w) = s.is_weights
            && w.len() != s.response.len()
        {
            return bad(format!(
                "{} importance weights for a {}-token response",
                w.len(),
                s.response.len()
            ));
        }
        if let Some(t) = s.token_advantages
            && t.len() != s.response.len()
        {
            return bad(format!(
                "{} token advantages for a {}-token response",
                t.len(),
                s.response.len()
            ));
        }
        if let Some(m) = s.sampled
            && m.len() != s.response.len()
        {
            return bad(format!(
                "{} sampled-token mask entries for a {}-token response",
                m.len(),
                s.response.len()
            ));
        }
        if let Some(k) = s.keep
            && k.len() != s.response.len()
        {
            return bad(format!(
                "{} importance-sampling mask entries for a {}-token response",
                k.len(),
                s.response.len()
            ));
        }
        if with_ref {
            match s.ref_logp {
                Some(r) if r.len() == s.response.len() => {}
                Some(r) => {
                    return bad(format!(
                        "{} reference log-probs for a {}-token response",
                        r.len(),
                        s.response.len()
                    ));
                }
                None => return bad("the KL term needs reference log-probs".into()),
            }
        }
    }
    Ok(())
}

fn tensor<B: Backend>(v: Vec<f32>, shape: [usize; 2], device: &B::Device) -> Tensor<B, 2> {
    Tensor::from_data(TensorData::new(v, shape), device)
}

/// What one [`policy_update`] did.
#[derive(Debug)]
pub struct UpdateOutcome<P> {
    /// The policy after the update (unchanged when skipped).
    pub policy: P,
    /// Loss terms and diagnostics, merged over the micro-batches.
    pub metrics: LossMetrics,
    /// The global gradient norm before clipping (NaN when the loss was not finite and no
    /// gradient was used).
    pub grad_norm: f64,
    /// False when the loss or the gradient norm was not finite: the update was skipped, the
    /// weights and optimizer moments are untouched.
    pub applied: bool,
    /// With [`OldLogprobs::ThisForward`]: the importance-sampling statistics of the trained
    /// sequences (|log π_old − log π_rollout|, truncations), summed over the workers.
    pub is_stats: Option<IsStats>,
    /// With full-vocabulary distillation: the divergence summed over the trained tokens and
    /// their count, summed over the workers.
    pub divergence: Option<(f64, usize)>,
}

/// The settings one optimizer update runs with.
#[derive(Clone, Copy, Debug)]
pub struct UpdateSettings<'a> {
    /// Learning rate of this update.
    pub lr: f64,
    /// The policy loss, its aggregation and KL.
    pub loss: &'a LossConfig,
    /// Sequences forwarded and back-propagated at a time, at most (`optim.micro_batch`).
    pub micro_batch: usize,
    /// Padded tokens (rows × the longest prompt + response) per micro-batch, at most; 0: no
    /// token budget (`optim.micro_batch_tokens`, [`micro_batches`]).
    pub micro_batch_tokens: usize,
    /// How each micro-batch's forward and backward trade compute for memory
    /// (`model.logprob_chunk`, `model.checkpointing`).
    pub memory: MemoryPlan,
    /// Log-probs are of softmax(logits / `temperature`): the sampling temperature.
    pub temperature: f32,
    /// Where π_old and the importance weights come from.
    pub old: OldLogprobs,
}

/// Where an update's π_old (and so its importance weights) comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OldLogprobs {
    /// Computed before the update (the behaviour phase): [`TrainSeq::old_logp`],
    /// [`TrainSeq::is_weights`] and [`TrainSeq::keep`].
    Given,
    /// The batch gets exactly this one update, so π_old is the policy being updated: its
    /// detached log-probs from this update's own forward pass, which are the values a separate
    /// π_old pass would compute (same weights, same micro-batches, same padding). The ratio
    /// π_θ/π_old is then exactly 1 with gradient ∇log π_θ, as in TRL's single-update GRPO. The
    /// importance weights of the (resolved) correction are computed from these values and each
    /// sequence's [`TrainSeq::rollout_logp`]; only corrections that mask nothing
    /// (`none`, `token_tis`) may be used, since masks change the global token counts that every
    /// micro-batch's loss needs before the first forward.
    ThisForward(IsCorrection),
}

impl OldLogprobs {
    /// [`OldLogprobs::ThisForward`] can serve an update under `correction`.
    pub fn this_forward_allows(correction: &IsCorrection) -> bool {
        matches!(
            correction,
            IsCorrection::None | IsCorrection::Auto | IsCorrection::TokenTis { .. }
        )
    }
}

/// One optimizer update over a mini-batch: micro-batches of `settings.micro_batch` sequences
/// are forwarded and back-propagated one at a time with the mini-batch's global counts, their
/// gradients accumulated, then clipped and applied. A non-finite loss or gradient norm skips
/// the update (see [`UpdateOutcome::applied`]); a sequence whose old or reference log-probs do
/// not match its response length is an error.
pub fn policy_update<B: AutodiffBackend, P: Policy<B>>(
    policy: P,
    optim: &mut AdamWOptimizer<B, P>,
    settings: UpdateSettings<'_>,
    seqs: &[TrainSeq<'_>],
    device: &B::Device,
) -> Result<UpdateOutcome<P>, TrainerError> {
    policy_update_sharded(
        policy,
        optim,
        settings,
        seqs,
        device,
        &DataParallel::single(),
    )
}

/// [`policy_update`] where `seqs` is this worker's share of a mini-batch split over the
/// data-parallel workers of `parallel` (one worker: the whole mini-batch). The token and
/// sequence counts are summed over the workers before any loss is formed, so each worker's loss
/// is its share of the global loss; the gradients are then summed over the workers before
/// clipping, and the loss metrics summed before they are returned. Every worker gets the same
/// gradient norm and takes the same optimizer step as one worker holding the whole mini-batch.
pub fn policy_update_sharded<B: AutodiffBackend, P: Policy<B>>(
    policy: P,
    optim: &mut AdamWOptimizer<B, P>,
    settings: UpdateSettings<'_>,
    seqs: &[TrainSeq<'_>],
    device: &B::Device,
    parallel: &DataParallel<B::InnerBackend>,
) -> Result<UpdateOutcome<P>, TrainerError> {
    policy_update_with_teacher(policy, optim, settings, seqs, device, parallel, None)
}

/// The full-vocabulary distillation term of an update ([`policy_update_with_teacher`]).
#[derive(Clone, Copy)]
pub struct FullDistill<'a, P> {
    /// The frozen teacher.
    pub teacher: &'a P,
    /// c: the term's weight in the loss.
    pub coef: f64,
    /// β of the generalized JSD (1: reverse KL).
    pub beta: f64,
    /// Vocabulary columns per chunk of the divergence.
    pub vocab_chunk: usize,
}

/// [`policy_update_sharded`] with, when `distill` is given, GKD's full-vocabulary term added to
/// the policy loss: c · token-mean over the trained tokens (global count) of the generalized
/// JSD between the student's and the teacher's next-token distributions at each response
/// token, at the log-prob temperature ([`rl_loss::generalized_jsd`]). The term has its own
/// forward pass over the micro-batch (the window rows' logits: `[rows × width, vocab]` for the
/// student with gradient and for the teacher, whose parameters track none), whose gradient is
/// accumulated with the policy loss's; it does not use the memory plan's chunked head or
/// checkpointing.
pub fn policy_update_with_teacher<B: AutodiffBackend, P: Policy<B>>(
    policy: P,
    optim: &mut AdamWOptimizer<B, P>,
    settings: UpdateSettings<'_>,
    seqs: &[TrainSeq<'_>],
    device: &B::Device,
    parallel: &DataParallel<B::InnerBackend>,
    distill: Option<FullDistill<'_, P>>,
) -> Result<UpdateOutcome<P>, TrainerError> {
    let PolicyGradients {
        grads,
        metrics,
        is_stats,
        divergence,
    } = policy_gradients(&policy, settings, seqs, device, parallel, distill)?;
    let Some(grads) = grads else {
        return Ok(UpdateOutcome {
            policy,
            metrics,
            grad_norm: f64::NAN,
            applied: false,
            is_stats,
            divergence,
        });
    };
    let step = optim.step(settings.lr, policy, grads);
    Ok(UpdateOutcome {
        policy: step.model,
        metrics,
        grad_norm: step.grad_norm,
        applied: step.applied,
        is_stats,
        divergence,
    })
}

/// What [`policy_gradients`] computed over a mini-batch.
#[derive(Debug)]
pub struct PolicyGradients {
    /// The gradient of the mini-batch's loss (summed over the data-parallel workers), before
    /// clipping; `None` when the loss or the distillation divergence was not finite (no
    /// gradient is then exchanged or used).
    pub grads: Option<GradientsParams>,
    /// Loss terms and diagnostics, merged over the micro-batches and summed over the workers.
    pub metrics: LossMetrics,
    /// As [`UpdateOutcome::is_stats`].
    pub is_stats: Option<IsStats>,
    /// As [`UpdateOutcome::divergence`].
    pub divergence: Option<(f64, usize)>,
}

/// The gradient phase of [`policy_update_with_teacher`]: the mini-batch's micro-batches
/// forwarded and back-propagated one at a time with the global counts, their gradients
/// accumulated and summed over the workers. The policy is read, not changed; `settings.lr` is
/// not used. Tests compare two ways of computing one update through this phase, before an
/// optimizer turns rounding differences into different steps.
///
/// Workers that are threads of one process each need a policy with its own autodiff leaves
/// (a loaded copy, or a clone passed through [`burn::module::Module::fork`]): burn's autodiff
/// graph is shared by a process's threads, and concurrent backward passes through the same
/// leaves corrupt each other's gradients ([`crate::Trainer::with_collective`] forks its policy).
pub fn policy_gradients<B: AutodiffBackend, P: Policy<B>>(
    policy: &P,
    settings: UpdateSettings<'_>,
    seqs: &[TrainSeq<'_>],
    device: &B::Device,
    parallel: &DataParallel<B::InnerBackend>,
    distill: Option<FullDistill<'_, P>>,
) -> Result<PolicyGradients, TrainerError> {
    let UpdateSettings {
        lr: _,
        loss: loss_cfg,
        micro_batch: micro,
        micro_batch_tokens: budget,
        memory,
        temperature,
        old: old_source,
    } = settings;
    if let OldLogprobs::ThisForward(c) = old_source
        && !OldLogprobs::this_forward_allows(&c)
    {
        return Err(TrainerError::Batch {
            sequence: 0,
            message: format!(
                "π_old from the update's own forward needs a correction that masks nothing, \
                 not {c:?}"
            ),
        });
    }
    let global = parallel.sum_counts(counts(seqs))?;
    // A KL term with β = 0 needs no reference model (the trainer loads none): drop it.
    let loss_cfg = &LossConfig {
        kl: loss_cfg.kl.filter(|k| k.coef > 0.0),
        ..*loss_cfg
    };
    check_lengths(seqs, loss_cfg.kl.is_some(), old_source)?;
    let mut acc = GradientsAccumulator::<P>::new();
    let mut metrics = LossMetrics::default();
    let mut is_stats = IsStats::default();
    let mut divergence = (0.0f64, 0usize);
    let entropy = if loss_cfg.entropy_coef != 0.0 {
        EntropyMode::Differentiable
    } else {
        EntropyMode::Detached
    };
    let lengths: Vec<usize> = seqs
        .iter()
        .map(|s| s.prompt.len() + s.response.len())
        .collect();
    let plan = if memory.packing || memory.shared_prompts {
        let prompts: Vec<&[u32]> = seqs.iter().map(|s| s.prompt).collect();
        let responses: Vec<usize> = seqs.iter().map(|s| s.response.len()).collect();
        if memory.packing {
            packed_micro_batch_plan(&prompts, &responses, memory.shared_prompts, micro, budget)
        } else {
            shared_micro_batch_plan(&prompts, &responses, micro, budget)
        }
    } else {
        micro_batch_plan(&lengths, micro, budget)
    };
    for part in plan {
        let chunk: Vec<TrainSeq<'_>> = part.iter().map(|&i| seqs[i].clone()).collect();
        let chunk = chunk.as_slice();
        let a = align(chunk);
        let shape = [chunk.len(), a.width];
        let train_mask = distill.is_some().then(|| a.mask.clone());
        let pass =
            policy.train_logprobs(&a.ids, &a.starts, a.width, entropy, temperature, memory)?;
        let lp = pass.out.clone();
        let (old_logp, is_weights) = match old_source {
            OldLogprobs::Given => (
                tensor::<B>(a.old, shape, device),
                a.is_weights.map(|w| tensor::<B>(w, shape, device)),
            ),
            OldLogprobs::ThisForward(correction) => {
                let old = lp.logprobs.clone().detach();
                let host = old
                    .to_data()
                    .into_vec::<f32>()
                    .map_err(|e| TrainerError::Batch {
                        sequence: 0,
                        message: format!("reading this update's log-probs: {e:?}"),
                    })?;
                let w =
                    this_forward_weights(chunk, &part, &host, a.width, &correction, &mut is_stats)?;
                (
                    old,
                    correction
                        .reweights()
                        .then(|| tensor::<B>(w, shape, device)),
                )
            }
        };
        let input = LossInput {
            logp: lp.logprobs,
            old_logp,
            advantages: tensor::<B>(a.adv, shape, device),
            mask: Tensor::from_data(TensorData::new(a.mask, shape), device),
            ref_logp: loss_cfg.kl.map(|_| tensor::<B>(a.reference, shape, device)),
            entropy: lp.entropy,
            is_weights,
        };
        let out = compute_loss(loss_cfg, input, global)?;
        metrics.merge(&out.metrics);
        pass.backward_into(out.loss, policy, &mut acc);
        if let (Some(d), Some(m)) = (&distill, train_mask) {
            let mask = Tensor::<B, 2, Bool>::from_data(TensorData::new(m, shape), device);
            let (term, sum) = distill_term(
                policy,
                d,
                &a.ids,
                &a.starts,
                a.width,
                mask,
                global,
                temperature,
            )?;
            divergence.0 += sum;
            divergence.1 += counts(chunk).tokens;
            acc.accumulate(policy, GradientsParams::from_grads(term.backward(), policy));
        }
    }
    let metrics = parallel.sum_loss_metrics(&metrics)?;
    let is_stats = match old_source {
        OldLogprobs::Given => None,
        OldLogprobs::ThisForward(_) => Some(parallel.sum_is_stats(&is_stats)?),
    };
    let divergence = match distill {
        Some(_) => {
            let s = parallel.sum(
                "summing the distillation divergence",
                &[divergence.0, divergence.1 as f64],
            )?;
            Some((s[0], s[1] as usize))
        }
        None => None,
    };
    let grads = if !metrics.loss.is_finite() || divergence.is_some_and(|d| !d.0.is_finite()) {
        None
    } else {
        Some(parallel.all_reduce_grads(policy, acc.grads())?)
    };
    Ok(PolicyGradients {
        grads,
        metrics,
        is_stats,
        divergence,
    })
}

/// The full-vocabulary distillation term of one micro-batch: c · token-mean (global count) of
/// the generalized JSD at the trained tokens (`mask`), and the plain sum of the divergence over
/// them (for the metrics).
#[allow(clippy::too_many_arguments)]
fn distill_term<B: AutodiffBackend, P: Policy<B>>(
    policy: &P,
    d: &FullDistill<'_, P>,
    ids: &[Vec<u32>],
    starts: &[usize],
    width: usize,
    mask: Tensor<B, 2, Bool>,
    global: GlobalCounts,
    temperature: f32,
) -> Result<(Tensor<B, 1>, f64), TrainerError> {
    let rows = ids.len();
    let student = policy.window_logits(ids, starts, width)?;
    // The teacher's parameters track no gradient (`load_teacher`), so its forward records no
    // graph; it runs the student's operations in the same order, so equal weights give
    // bit-equal logits (the inference model's forward rounds differently).
    let teacher = d.teacher.window_logits(ids, starts, width)?.detach();
    let jsd = generalized_jsd(
        student,
        teacher,
        d.beta,
        f64::from(temperature),
        d.vocab_chunk,
    )?
    .reshape([rows, width]);
    let sum = jsd
        .clone()
        .detach()
        .mask_fill(mask.clone().bool_not(), 0.0)
        .sum()
        .into_scalar()
        .elem::<f64>();
    let term = aggregate(jsd, mask, Aggregation::TokenMean, global).mul_scalar(d.coef);
    Ok((term, sum))
}

/// The importance weights of a micro-batch whose π_old is this update's forward (`old`, row
/// i's response tokens at columns 0..len of a row of `width`), laid out like `old`; the trained
/// sequences' statistics are added to `stats`. Row i is sequence `index[i]` of the mini-batch
/// (errors name it). A row with a non-finite log-prob keeps weights 1 and adds nothing: the
/// update it belongs to is skipped for its non-finite loss.
fn this_forward_weights(
    chunk: &[TrainSeq<'_>],
    index: &[usize],
    old: &[f32],
    width: usize,
    correction: &IsCorrection,
    stats: &mut IsStats,
) -> Result<Vec<f32>, TrainerError> {
    let mut weights = vec![1f32; chunk.len() * width];
    for (i, s) in chunk.iter().enumerate() {
        let row = i * width..i * width + s.response.len();
        if old[row.clone()].iter().any(|x| !x.is_finite()) {
            // This forward overflowed: its loss is not finite either, so the update is skipped
            // (`UpdateOutcome::applied`) whatever the weights; the row adds no statistics.
            continue;
        }
        let w = importance_of(
            correction,
            index[i],
            &old[row.clone()],
            s.rollout_logp,
            s.sampled,
        )?;
        if s.train {
            stats.merge(&w.stats);
        }
        weights[row].copy_from_slice(&w.weights);
    }
    Ok(weights)
}

/// The importance weights, masks and statistics of sequence `sequence` of a batch from its π_old
/// and π_rollout log-probs; a mismatch is an error naming the sequence. With a `sampled` mask
/// (a multi-turn episode) the correction sees the sampled tokens only — as if the observation
/// tokens were not there, which is what sequence-level corrections need (their products and
/// means run over actions) — and the observation tokens get weight 1, kept (they are outside
/// the loss anyway). A sampled token whose π_rollout log-prob the engine did not report (NaN,
/// `rl_rollout::Completion::logprobs`) is left out the same way: weight 1, kept, no statistics.
pub(crate) fn importance_of(
    correction: &IsCorrection,
    sequence: usize,
    old: &[f32],
    rollout: &[f32],
    sampled: Option<&[bool]>,
) -> Result<SequenceWeights, TrainerError> {
    let err = |message: String| TrainerError::Batch {
        sequence,
        message: format!("importance weights: {message}"),
    };
    let reported: Vec<bool>;
    let sampled = if rollout.iter().any(|x| x.is_nan())
        && rollout.len() == old.len()
        && sampled.is_none_or(|m| m.len() == rollout.len())
    {
        reported = (0..rollout.len())
            .map(|j| !rollout[j].is_nan() && sampled.is_none_or(|m| m[j]))
            .collect();
        Some(reported.as_slice())
    } else {
        sampled
    };
    let Some(mask) = sampled.filter(|m| !m.iter().all(|&s| s)) else {
        return sequence_weights(correction, old, rollout).map_err(|e| err(e.to_string()));
    };
    if mask.len() != old.len() || mask.len() != rollout.len() {
        return Err(err(format!(
            "{} mask entries, {} π_old and {} π_rollout log-probs",
            mask.len(),
            old.len(),
            rollout.len()
        )));
    }
    let pick = |v: &[f32]| -> Vec<f32> {
        v.iter()
            .zip(mask)
            .filter(|(_, s)| **s)
            .map(|(x, _)| *x)
            .collect()
    };
    let inner =
        sequence_weights(correction, &pick(old), &pick(rollout)).map_err(|e| err(e.to_string()))?;
    let mut weights = vec![1f32; mask.len()];
    let mut keep = vec![true; mask.len()];
    let positions = mask.iter().enumerate().filter(|(_, s)| **s).map(|(j, _)| j);
    for (k, j) in positions.enumerate() {
        weights[j] = inner.weights[k];
        keep[j] = inner.keep[k];
    }
    Ok(SequenceWeights {
        weights,
        keep,
        stats: inner.stats,
    })
}

/// One supervised example for [`sft_update`]: prompt ids, response ids, and the response
/// tokens in the loss (`None`: all).
pub type SftRow<'a> = (&'a [u32], &'a [u32], Option<&'a [bool]>);

/// One supervised update: token-mean negative log-likelihood of the responses given the prompts
/// (the warm-start objective) over the response tokens where the optional mask is true (all
/// without one), in micro-batches ([`micro_batch_plan`]) of at most `micro` sequences and `micro_tokens` padded
/// tokens (0: no token budget). Returns the new policy and the loss.
pub fn sft_update<B: AutodiffBackend, P: Policy<B>>(
    policy: P,
    optim: &mut AdamWOptimizer<B, P>,
    lr: f64,
    pairs: &[SftRow<'_>],
    (micro, micro_tokens): (usize, usize),
    device: &B::Device,
) -> Result<(P, f64), TrainerError> {
    let seqs: Vec<TrainSeq<'_>> = pairs
        .iter()
        .map(|&(p, r, mask)| TrainSeq {
            prompt: p,
            response: r,
            old_logp: &[],
            rollout_logp: &[],
            ref_logp: None,
            advantage: 0.0,
            token_advantages: None,
            train: true,
            is_weights: None,
            keep: None,
            sampled: mask,
        })
        .collect();
    if let Some(i) = seqs
        .iter()
        .position(|s| s.sampled.is_some_and(|m| m.len() != s.response.len()))
    {
        return Err(TrainerError::Batch {
            sequence: i,
            message: "the loss mask and the response differ in length".into(),
        });
    }
    let global = counts(&seqs);
    let mut acc = GradientsAccumulator::<P>::new();
    let mut total = 0.0;
    let lengths: Vec<usize> = seqs
        .iter()
        .map(|s| s.prompt.len() + s.response.len())
        .collect();
    for part in micro_batch_plan(&lengths, micro, micro_tokens) {
        let chunk: Vec<TrainSeq<'_>> = part.iter().map(|&i| seqs[i].clone()).collect();
        let a = align(&chunk);
        let shape = [chunk.len(), a.width];
        let lp = policy.logprobs(&a.ids, &a.starts, a.width, EntropyMode::None, 1.0)?;
        let mask: Tensor<B, 2, Bool> = Tensor::from_data(TensorData::new(a.mask, shape), device);
        let loss = aggregate(lp.logprobs.neg(), mask, Aggregation::TokenMean, global);
        total += loss.clone().into_scalar().elem::<f64>();
        acc.accumulate(
            &policy,
            GradientsParams::from_grads(loss.backward(), &policy),
        );
    }
    if !total.is_finite() {
        return Err(TrainerError::Diverged {
            step: 0,
            message: format!("non-finite supervised loss {total}"),
        });
    }
    let step = optim.step(lr, policy, acc.grads());
    if !step.applied {
        return Err(TrainerError::Diverged {
            step: 0,
            message: format!("non-finite supervised gradient norm {}", step.grad_norm),
        });
    }
    Ok((step.model, total))
}

#[cfg(test)]
mod tests;
