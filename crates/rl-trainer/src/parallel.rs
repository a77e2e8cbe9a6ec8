//! Data parallelism behind one interface: every phase of the trainer calls it unconditionally,
//! and a single process is the world of one worker ([`SingleProcess`]), where every operation
//! returns its input unchanged.
//!
//! N workers each hold a replica of the policy and optimizer and their share of a batch. What a
//! single worker would compute from the whole batch is recovered exactly from sums of numerators
//! and counts ([`DataParallel::sum`]), never from means of per-worker means:
//!
//! - the loss normalisers (global valid tokens for token-mean, global sequences for the
//!   seq-mean modes) are summed before the loss is formed, so each worker's loss is its share
//!   of the global loss and the gradients add up ([`DataParallel::all_reduce_grads`]);
//! - clipping then sees the global gradient, and the replicated AdamW states stay identical;
//! - loss diagnostics ([`LossMetrics`]) and importance-sampling statistics are sums and counts,
//!   summed the same way (maxima are gathered).
//!
//! Ownership is one rule ([`DataParallel::owns`]): item i of a round's prompts or of a batch's
//! groups belongs to worker i mod N. Each worker generates and scores its prompts, the scored
//! groups are exchanged ([`DataParallel::exchange_round`]) so that dynamic sampling, advantages
//! and metrics are computed on the whole round by every worker alike, and each worker trains on
//! its groups of every mini-batch.
//!
//! The transport is a [`Collective`]: [`SingleProcess`] here, burn-collective's workers in
//! [`crate::distributed`] (cargo feature `distributed`, on by default; a library user who trains
//! in one process can leave it off and compile neither burn-collective nor tokio).

use burn::module::{AutodiffModule, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::prelude::*;
use burn::tensor::TensorPrimitive;
use burn::tensor::backend::AutodiffBackend;
use rl_loss::{GlobalCounts, IsStats, LossMetrics};
use rl_rollout::GenerateRequest;
use rl_sampler::RolloutGroup;
use rl_verifier::OutcomeCounts;
use serde::{Deserialize, Serialize};

use crate::TrainerError;
use crate::scoring::ScoredResponse;

/// How data-parallel workers exchange values: the transport under [`DataParallel`]. Every
/// worker makes the same calls in the same order; a call that cannot complete (a worker died
/// or stalls) is an error, never a hang.
pub trait Collective<B: Backend>: Send {
    /// This worker's rank, 0..world_size.
    fn rank(&self) -> usize;

    /// Number of workers.
    fn world_size(&self) -> usize;

    /// Every worker's `values` (all workers pass the same number), indexed by rank, exact in
    /// f64.
    fn all_gather(&self, what: &str, values: &[f64]) -> Result<Vec<Vec<f64>>, TrainerError>;

    /// Every worker's `bytes` (of any length), indexed by rank.
    fn all_gather_bytes(&self, what: &str, bytes: &[u8]) -> Result<Vec<Vec<u8>>, TrainerError>;

    /// Σ over workers of a tensor of the same shape on every worker, on every worker.
    fn all_reduce_sum_primitive(
        &self,
        what: &str,
        tensor: B::FloatTensorPrimitive,
    ) -> Result<B::FloatTensorPrimitive, TrainerError>;

    /// Leaves the collective (every worker calls it at the end).
    fn leave(self: Box<Self>) -> Result<(), TrainerError>;
}

/// The world of one worker: every collective operation returns its input.
#[derive(Clone, Copy, Debug, Default)]
pub struct SingleProcess;

impl<B: Backend> Collective<B> for SingleProcess {
    fn rank(&self) -> usize {
        0
    }

    fn world_size(&self) -> usize {
        1
    }

    fn all_gather(&self, _what: &str, values: &[f64]) -> Result<Vec<Vec<f64>>, TrainerError> {
        Ok(vec![values.to_vec()])
    }

    fn all_gather_bytes(&self, _what: &str, bytes: &[u8]) -> Result<Vec<Vec<u8>>, TrainerError> {
        Ok(vec![bytes.to_vec()])
    }

    fn all_reduce_sum_primitive(
        &self,
        _what: &str,
        tensor: B::FloatTensorPrimitive,
    ) -> Result<B::FloatTensorPrimitive, TrainerError> {
        Ok(tensor)
    }

    fn leave(self: Box<Self>) -> Result<(), TrainerError> {
        Ok(())
    }
}

/// A worker's handle on the data-parallel world (on backend `B`: the trainer's inner,
/// non-autodiff backend, the one gradients live on). With one worker every method returns its
/// input unchanged, so the single-process trainer is the N = 1 case of the same code.
pub struct DataParallel<B: Backend> {
    collective: Box<dyn Collective<B>>,
}

impl<B: Backend> std::fmt::Debug for DataParallel<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataParallel")
            .field("rank", &self.rank())
            .field("world_size", &self.world_size())
            .finish()
    }
}

impl<B: Backend> Default for DataParallel<B> {
    fn default() -> Self {
        Self::single()
    }
}

impl<B: Backend> DataParallel<B> {
    /// One worker in one process.
    pub fn single() -> Self {
        Self::new(Box::new(SingleProcess))
    }

    /// A worker of the world `collective` joined.
    pub fn new(collective: Box<dyn Collective<B>>) -> Self {
        Self { collective }
    }

    /// This worker's rank.
    pub fn rank(&self) -> usize {
        self.collective.rank()
    }

    /// Number of workers.
    pub fn world_size(&self) -> usize {
        self.collective.world_size()
    }

    /// Rank 0 writes metrics and checkpoints.
    pub fn is_leader(&self) -> bool {
        self.rank() == 0
    }

    /// Whether item `i` of a round's prompts or of a batch's groups is this worker's share.
    pub fn owns(&self, i: usize) -> bool {
        i % self.world_size() == self.rank()
    }

    /// The positions among `n` items that this worker owns, in order.
    pub fn owned(&self, n: usize) -> Vec<usize> {
        (0..n).filter(|&i| self.owns(i)).collect()
    }

    /// Leaves the world (every worker calls it at the end).
    pub fn leave(self) -> Result<(), TrainerError> {
        self.collective.leave()
    }

    /// Every worker's `values`, indexed by rank.
    pub fn all_gather(&self, what: &str, values: &[f64]) -> Result<Vec<Vec<f64>>, TrainerError> {
        self.collective.all_gather(what, values)
    }

    /// Σ over workers of each value, added in rank order in f64 (the same result on every
    /// worker; the values themselves with one worker).
    pub fn sum(&self, what: &str, values: &[f64]) -> Result<Vec<f64>, TrainerError> {
        if self.world_size() == 1 {
            return Ok(values.to_vec());
        }
        Ok(sum_by_rank(&self.all_gather(what, values)?, values.len()))
    }

    /// The global token and sequence counts of a mini-batch split over the workers.
    pub fn sum_counts(&self, local: GlobalCounts) -> Result<GlobalCounts, TrainerError> {
        if self.world_size() == 1 {
            return Ok(local);
        }
        let sum = self.sum(
            "summing token and sequence counts",
            &[local.tokens as f64, local.sequences as f64],
        )?;
        Ok(GlobalCounts {
            tokens: sum[0] as usize,
            sequences: sum[1] as usize,
        })
    }

    /// The global sums (and maxima) of every worker's loss diagnostics.
    pub fn sum_loss_metrics(&self, m: &LossMetrics) -> Result<LossMetrics, TrainerError> {
        if self.world_size() == 1 {
            return Ok(*m);
        }
        let all = self.all_gather(
            "summing loss metrics",
            &[
                m.tokens as f64,
                m.sequences as f64,
                m.ratio_sum,
                m.ratio_max,
                m.clipped_upper as f64,
                m.clipped_lower as f64,
                m.dual_clipped as f64,
                m.approx_kl_sum,
                m.entropy_sum,
                m.kl_sum,
                m.policy_loss,
                m.kl_loss,
                m.entropy_loss,
                m.loss,
            ],
        )?;
        let mut out = LossMetrics::default();
        for v in &all {
            out.merge(&LossMetrics {
                tokens: v[0] as usize,
                sequences: v[1] as usize,
                ratio_sum: v[2],
                ratio_max: v[3],
                clipped_upper: v[4] as usize,
                clipped_lower: v[5] as usize,
                dual_clipped: v[6] as usize,
                approx_kl_sum: v[7],
                entropy_sum: v[8],
                kl_sum: v[9],
                policy_loss: v[10],
                kl_loss: v[11],
                entropy_loss: v[12],
                loss: v[13],
            });
        }
        Ok(out)
    }

    /// The global sums (and maximum) of every worker's importance-sampling statistics.
    pub fn sum_is_stats(&self, st: &IsStats) -> Result<IsStats, TrainerError> {
        if self.world_size() == 1 {
            return Ok(*st);
        }
        let all = self.all_gather(
            "summing importance-sampling statistics",
            &[
                st.tokens as f64,
                st.abs_diff_sum,
                st.abs_diff_max,
                st.truncated as f64,
                st.masked as f64,
            ],
        )?;
        let mut out = IsStats::default();
        for v in all {
            out.merge(&IsStats {
                tokens: v[0] as usize,
                abs_diff_sum: v[1],
                abs_diff_max: v[2],
                truncated: v[3] as usize,
                masked: v[4] as usize,
            });
        }
        Ok(out)
    }

    /// Σ over workers of `t`, on every worker.
    pub fn all_reduce_sum<const D: usize>(
        &self,
        what: &str,
        t: Tensor<B, D>,
    ) -> Result<Tensor<B, D>, TrainerError> {
        if self.world_size() == 1 {
            return Ok(t);
        }
        let sum = self
            .collective
            .all_reduce_sum_primitive(what, t.into_primitive().tensor())?;
        Ok(Tensor::from_primitive(TensorPrimitive::Float(sum)))
    }

    /// Sums every parameter's gradient over the workers, in the model's structural order (not
    /// by parameter id: replicas loaded separately have different ids). A parameter without a
    /// gradient on this worker contributes zeros, so every worker makes the same calls.
    pub fn all_reduce_grads<AB, M>(
        &self,
        model: &M,
        grads: GradientsParams,
    ) -> Result<GradientsParams, TrainerError>
    where
        AB: AutodiffBackend<InnerBackend = B>,
        M: AutodiffModule<AB>,
    {
        if self.world_size() == 1 {
            return Ok(grads);
        }
        let mut v = ReduceGrads::<AB> {
            parallel: self,
            grads,
            error: None,
        };
        model.visit(&mut v);
        match v.error {
            Some(e) => Err(e),
            None => Ok(v.grads),
        }
    }

    /// Every worker's share of a round merged, groups in round order: the same on every
    /// worker (this worker's share itself with one worker).
    pub fn exchange_round(&self, share: RoundShare) -> Result<RoundShare, TrainerError> {
        if self.world_size() == 1 {
            return Ok(share);
        }
        let rank = self.rank();
        let bytes = serde_json::to_vec(&share).map_err(|e| TrainerError::Distributed {
            rank,
            message: format!("encoding scored rollouts: {e}"),
        })?;
        let mut all = RoundShare::default();
        for (from, b) in self
            .collective
            .all_gather_bytes("exchanging scored rollouts", &bytes)?
            .into_iter()
            .enumerate()
        {
            let s: RoundShare =
                serde_json::from_slice(&b).map_err(|e| TrainerError::Distributed {
                    rank,
                    message: format!("scored rollouts from worker {from}: {e}"),
                })?;
            all.groups.extend(s.groups);
            all.outcomes.merge(&s.outcomes);
            all.dropped.add(s.dropped);
        }
        all.groups.sort_by_key(|(pos, _)| *pos);
        Ok(all)
    }
}

struct ReduceGrads<'a, AB: AutodiffBackend> {
    parallel: &'a DataParallel<AB::InnerBackend>,
    grads: GradientsParams,
    error: Option<TrainerError>,
}

impl<AB: AutodiffBackend> ModuleVisitor<AB> for ReduceGrads<'_, AB> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<AB, D>>) {
        if self.error.is_some() {
            return;
        }
        let g = self
            .grads
            .remove::<AB::InnerBackend, D>(param.id)
            .unwrap_or_else(|| param.val().inner().zeros_like());
        match self.parallel.all_reduce_sum("summing gradients", g) {
            Ok(sum) => self.grads.register(param.id, sum),
            Err(e) => self.error = Some(e),
        }
    }
}

/// Groups of a round that may not be trained on: a completion staler than
/// `rollout.max_staleness`, or aborted by the engine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DroppedGroups {
    /// Groups dropped.
    pub groups: usize,
    /// Their responses.
    pub responses: usize,
}

impl DroppedGroups {
    /// Adds `o`'s counts.
    pub fn add(&mut self, o: DroppedGroups) {
        self.groups += o.groups;
        self.responses += o.responses;
    }
}

/// One worker's scored groups of a round (with their positions in the round) and the counts
/// that go with them, as exchanged between data-parallel workers.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct RoundShare {
    /// (position in the round, scored group).
    pub groups: Vec<(usize, RolloutGroup<ScoredResponse>)>,
    /// Verifier outcomes of the share's responses.
    pub outcomes: OutcomeCounts,
    /// Groups the share dropped before scoring.
    pub dropped: DroppedGroups,
}

/// Σ over ranks of each of `n` gathered values, added in rank order in f64 (the same result on
/// every worker).
pub fn sum_by_rank(all: &[Vec<f64>], n: usize) -> Vec<f64> {
    (0..n).map(|i| all.iter().map(|v| v[i]).sum()).collect()
}

/// `len` empty entries, with `values[k]` placed at `at[k]` (a worker's share of a batch, laid
/// out at its rollouts' places).
pub fn scatter<T: Clone>(at: &[usize], len: usize, values: Vec<Vec<T>>) -> Vec<Vec<T>> {
    let mut out = vec![Vec::new(); len];
    for (&k, v) in at.iter().zip(values) {
        out[k] = v;
    }
    out
}

/// The requests of a round for the prompts at positions `mine` (each request holds samples of
/// one prompt; `sizes[i]` samples of prompt i, in prompt order).
pub fn own_requests(
    requests: Vec<GenerateRequest>,
    mine: &[usize],
    sizes: &[usize],
) -> Vec<GenerateRequest> {
    // The prompt of a request is the one whose rows contain its first row.
    let mut ends = Vec::with_capacity(sizes.len());
    let mut end = 0;
    for &n in sizes {
        end += n;
        ends.push(end);
    }
    let mut row = 0;
    requests
        .into_iter()
        .filter(|r| {
            let pos = ends.partition_point(|&e| e <= row);
            row += r.n;
            mine.binary_search(&pos).is_ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::Flex;

    /// One worker: sums, counts, metrics and rounds come back unchanged (the single-process
    /// trainer is this case).
    #[test]
    fn one_worker_returns_its_inputs() {
        let p = DataParallel::<Flex>::single();
        assert_eq!(p.sum("x", &[1.5, -0.0]).unwrap(), vec![1.5, -0.0]);
        assert!(p.owns(0) && p.owns(7) && p.is_leader());
        assert_eq!(p.owned(3), vec![0, 1, 2]);
        let c = GlobalCounts {
            tokens: 5,
            sequences: 2,
        };
        assert_eq!(p.sum_counts(c).unwrap(), c);
    }

    /// `own_requests` keeps the requests of the owned prompts: 3 prompts × G = 2, the second
    /// prompt split over two requests by a chunk boundary.
    #[test]
    fn own_requests_follow_prompt_positions() {
        let req = |n| GenerateRequest {
            prompt_ids: vec![1],
            n,
            params: rl_rollout::SamplingParams {
                temperature: 1.0,
                top_p: 1.0,
                top_k: 0,
                max_new_tokens: 1,
                ..Default::default()
            },
        };
        let r = vec![req(2), req(1), req(1), req(2)];
        let mine = own_requests(r, &[1], &[2, 2, 2]);
        assert_eq!(mine.iter().map(|r| r.n).collect::<Vec<_>>(), vec![1, 1]);
        // Sizes 3, 1, 2 in requests of 2, 1, 1, 2: rows 0-1 and 2 are prompt 0, row 3 is prompt
        // 1, rows 4-5 prompt 2.
        let r = vec![req(2), req(1), req(1), req(2)];
        let mine = own_requests(r.clone(), &[1], &[3, 1, 2]);
        assert_eq!(mine.iter().map(|r| r.n).collect::<Vec<_>>(), vec![1]);
        let mine = own_requests(r, &[0, 2], &[3, 1, 2]);
        assert_eq!(mine.iter().map(|r| r.n).collect::<Vec<_>>(), vec![2, 1, 2]);
        assert_eq!(
            scatter(&[0, 2], 3, vec![vec![1], vec![2]]),
            vec![vec![1], vec![], vec![2]]
        );
    }
}
