//! Data-parallel workers joined by burn's collective operations (`burn-collective` 0.21).
//!
//! N workers each hold a replica of the policy and optimizer and their share of a batch. What a
//! single worker would compute from the whole batch is recovered exactly from sums of numerators
//! and counts ([`Worker::sum`]), never from means of per-worker means:
//!
//! - the loss normalisers (global valid tokens for token-mean, global sequences for the
//!   seq-mean modes) are summed before the loss is formed, so each worker's loss is its share
//!   of the global loss and the gradients add up ([`Worker::all_reduce_grads`]);
//! - clipping then sees the global gradient, and the replicated AdamW states stay identical;
//! - loss diagnostics ([`LossMetrics`]) are sums and counts, summed the same way (maxima are
//!   gathered).
//!
//! Every collective call runs on a helper thread and is bounded by `timeout`: a worker that
//! died or stalls makes the others fail with [`TrainerError::Distributed`] instead of hanging.
//! After a timeout the worker refuses further collective calls.
//!
//! Workers are threads of one process ([`Topology::Local`], one device each; burn's local
//! collective server) or processes on one or several machines ([`Topology::Global`], one
//! worker each, joined by burn's global orchestrator over websockets). See docs/distributed.md.

use std::marker::PhantomData;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::time::Duration;

use burn::module::{AutodiffModule, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::prelude::*;
use burn::tensor::TensorPrimitive;
use burn::tensor::backend::AutodiffBackend;
use burn_collective::{CollectiveConfig, PeerId, ReduceOperation};
use rl_loss::{IsStats, LossMetrics};
use serde::{Deserialize, Serialize};

use crate::TrainerError;

/// How the workers reach each other.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Topology {
    /// `world_size` threads of one process, one device each.
    Local,
    /// One worker per process; processes (on one or several machines) join through burn's
    /// global orchestrator (`rlvr orchestrator --port P`).
    Global {
        /// The orchestrator, `HOST:PORT`.
        orchestrator: String,
        /// This process's address as the other workers reach it, `HOST:PORT`; the port is
        /// where this worker serves tensors to its peers.
        node: String,
    },
}

/// One worker's place in the collective.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerConfig {
    /// Number of workers.
    pub world_size: usize,
    /// This worker's rank, 0..world_size.
    pub rank: usize,
    /// Seconds a collective call may wait for the other workers.
    pub timeout_s: f64,
    /// How the workers are joined.
    pub topology: Topology,
}

impl WorkerConfig {
    /// Worker `rank` of `world_size` threads in this process.
    pub fn local(world_size: usize, rank: usize) -> Self {
        Self {
            world_size,
            rank,
            timeout_s: 300.0,
            topology: Topology::Local,
        }
    }

    /// Checks the ranks, sizes, timeout and addresses; errors name the field.
    pub fn validate(&self) -> Result<(), TrainerError> {
        let bad = |field: &str, message: String| {
            Err(TrainerError::Config {
                field: field.into(),
                message,
            })
        };
        if self.world_size == 0 {
            return bad("world_size", "must be at least 1".into());
        }
        if self.rank >= self.world_size {
            return bad(
                "rank",
                format!(
                    "{} is not a rank of a world of {} (valid: 0..={})",
                    self.rank,
                    self.world_size,
                    self.world_size - 1
                ),
            );
        }
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0) {
            return bad(
                "timeout_s",
                format!("{} is not a positive number of seconds", self.timeout_s),
            );
        }
        if let Topology::Global { orchestrator, node } = &self.topology {
            host_port("orchestrator", orchestrator)?;
            host_port("node", node)?;
        }
        Ok(())
    }

    fn collective_config(&self) -> Result<CollectiveConfig, TrainerError> {
        Ok(match &self.topology {
            Topology::Local => CollectiveConfig::default().with_num_devices(self.world_size),
            Topology::Global { orchestrator, node } => {
                let port = host_port("node", node)?;
                let addr = |field: &str, s: &str| {
                    format!("ws://{s}")
                        .parse::<burn_communication::Address>()
                        .map_err(|message| TrainerError::Config {
                            field: field.into(),
                            message,
                        })
                };
                CollectiveConfig::default()
                    .with_num_devices(1)
                    .with_num_nodes(self.world_size as u32)
                    .with_global_address(addr("orchestrator", orchestrator)?)
                    .with_node_address(addr("node", node)?)
                    .with_data_service_port(port)
            }
        })
    }
}

/// The port of a `HOST:PORT` address, or a config error naming `field`.
fn host_port(field: &str, s: &str) -> Result<u16, TrainerError> {
    s.rsplit_once(':')
        .filter(|(host, _)| !host.is_empty())
        .and_then(|(_, p)| p.parse::<u16>().ok())
        .filter(|&p| p > 0)
        .ok_or_else(|| TrainerError::Config {
            field: field.into(),
            message: format!("`{s}` is not HOST:PORT (e.g. 127.0.0.1:29400)"),
        })
}

type Job = Box<dyn FnOnce() + Send>;

/// A data-parallel worker on backend `B` (the inner, non-autodiff backend of the trainer: the
/// one gradients live on).
pub struct Worker<B: Backend> {
    cfg: WorkerConfig,
    peer: PeerId,
    device: B::Device,
    jobs: Sender<Job>,
    poisoned: std::cell::Cell<bool>,
    _b: PhantomData<B>,
}

impl<B: Backend> std::fmt::Debug for Worker<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker").field("cfg", &self.cfg).finish()
    }
}

impl<B: Backend> Worker<B> {
    /// Joins the collective: returns once every worker of the world has joined, or fails after
    /// the timeout. Local workers must call this from `world_size` threads of one process.
    pub fn join(cfg: WorkerConfig, device: &B::Device) -> Result<Self, TrainerError> {
        cfg.validate()?;
        let collective = cfg.collective_config()?;
        let (jobs, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name(format!("rlvr-collective-{}", cfg.rank))
            .spawn(move || {
                for job in rx {
                    job();
                }
            })
            .map_err(|e| TrainerError::Distributed {
                rank: cfg.rank,
                message: format!("cannot start the collective thread: {e}"),
            })?;
        let worker = Self {
            peer: PeerId::from(cfg.rank),
            device: device.clone(),
            cfg,
            jobs,
            poisoned: std::cell::Cell::new(false),
            _b: PhantomData,
        };
        let (peer, dev) = (worker.peer, device.clone());
        worker.call("joining", move || {
            burn_collective::register::<B>(peer, dev, collective)
        })?;
        Ok(worker)
    }

    /// This worker's rank.
    pub fn rank(&self) -> usize {
        self.cfg.rank
    }

    /// Number of workers.
    pub fn world_size(&self) -> usize {
        self.cfg.world_size
    }

    /// Rank 0 writes metrics and checkpoints.
    pub fn is_leader(&self) -> bool {
        self.cfg.rank == 0
    }

    fn error(&self, message: String) -> TrainerError {
        TrainerError::Distributed {
            rank: self.cfg.rank,
            message,
        }
    }

    /// Runs one collective operation on the helper thread, bounded by the timeout.
    fn call<T: Send + 'static>(
        &self,
        what: &str,
        op: impl FnOnce() -> Result<T, burn_collective::CollectiveError> + Send + 'static,
    ) -> Result<T, TrainerError> {
        if self.poisoned.get() {
            return Err(self.error(format!(
                "{what}: an earlier collective call timed out; this worker cannot continue"
            )));
        }
        let (tx, rx) = mpsc::channel();
        self.jobs
            .send(Box::new(move || {
                let _ = tx.send(op());
            }))
            .map_err(|_| self.error(format!("{what}: the collective thread has stopped")))?;
        match rx.recv_timeout(Duration::from_secs_f64(self.cfg.timeout_s)) {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(self.error(format!("{what}: {e:?}"))),
            Err(RecvTimeoutError::Timeout) => {
                self.poisoned.set(true);
                Err(self.error(format!(
                    "{what}: no answer from the other {} worker(s) within {} s (timeout_s): \
                     one of them died or stalls",
                    self.cfg.world_size - 1,
                    self.cfg.timeout_s
                )))
            }
            Err(RecvTimeoutError::Disconnected) => {
                Err(self.error(format!("{what}: the collective thread panicked")))
            }
        }
    }

    fn all_reduce_primitive(
        &self,
        what: &str,
        t: B::FloatTensorPrimitive,
    ) -> Result<B::FloatTensorPrimitive, TrainerError> {
        let peer = self.peer;
        self.call(what, move || {
            burn_collective::all_reduce::<B>(peer, t, ReduceOperation::Sum)
        })
    }

    /// Σ over workers of `t` (every worker passes a tensor of the same shape), on every worker.
    pub fn all_reduce_sum<const D: usize>(
        &self,
        what: &str,
        t: Tensor<B, D>,
    ) -> Result<Tensor<B, D>, TrainerError> {
        if self.cfg.world_size == 1 {
            return Ok(t);
        }
        let sum = self.all_reduce_primitive(what, t.into_primitive().tensor())?;
        Ok(Tensor::from_primitive(TensorPrimitive::Float(sum)))
    }

    /// Σ over workers of a host vector of slots (the gathers' transport), checked to come back
    /// as long as it went.
    fn sum_slots(&self, what: &str, slots: Vec<f32>) -> Result<Vec<f32>, TrainerError> {
        let n = slots.len();
        let t = Tensor::<B, 1>::from_data(TensorData::new(slots, [n]), &self.device);
        let flat = self
            .all_reduce_sum(what, t)?
            .into_data()
            .convert::<f32>()
            .into_vec::<f32>()
            .map_err(|e| self.error(format!("{what}: {e:?}")))?;
        if flat.len() != n {
            return Err(self.error(format!(
                "{what}: {} values came back for {n} sent (do all workers pass the same number?)",
                flat.len()
            )));
        }
        Ok(flat)
    }

    /// Every worker's `values` (all workers must pass the same number), indexed by rank.
    ///
    /// Exact in f64: each value travels as an f32 pair (v ≈ hi + lo) in its rank's slot of a
    /// zero vector, and a sum over workers of a slot that only one worker fills adds exact
    /// zeros.
    pub fn all_gather(&self, what: &str, values: &[f64]) -> Result<Vec<Vec<f64>>, TrainerError> {
        let (n, w) = (values.len(), self.cfg.world_size);
        if w == 1 {
            return Ok(vec![values.to_vec()]);
        }
        let mut slots = vec![0f32; w * n * 2];
        for (i, &v) in values.iter().enumerate() {
            let hi = v as f32;
            let lo = (v - hi as f64) as f32;
            let k = (self.cfg.rank * n + i) * 2;
            slots[k] = hi;
            slots[k + 1] = lo;
        }
        let flat = self.sum_slots(what, slots)?;
        Ok((0..w)
            .map(|r| {
                (0..n)
                    .map(|i| {
                        let k = (r * n + i) * 2;
                        flat[k] as f64 + flat[k + 1] as f64
                    })
                    .collect()
            })
            .collect())
    }

    /// Every worker's `bytes` (of any length), indexed by rank: the lengths are gathered
    /// first, then the bytes travel three per f32 (integers below 2^24, exact) in the sender's
    /// slot of a zero vector.
    pub fn all_gather_bytes(&self, what: &str, bytes: &[u8]) -> Result<Vec<Vec<u8>>, TrainerError> {
        let w = self.cfg.world_size;
        if w == 1 {
            return Ok(vec![bytes.to_vec()]);
        }
        let lens: Vec<usize> = self
            .all_gather(what, &[bytes.len() as f64])?
            .into_iter()
            .map(|v| v[0] as usize)
            .collect();
        let width = lens.iter().max().copied().unwrap_or(0).div_ceil(3).max(1);
        let mut slots = vec![0f32; w * width];
        for (i, c) in bytes.chunks(3).enumerate() {
            let v = c.iter().rev().fold(0u32, |acc, &b| (acc << 8) | b as u32);
            slots[self.cfg.rank * width + i] = v as f32;
        }
        let flat = self.sum_slots(what, slots)?;
        Ok(lens
            .iter()
            .enumerate()
            .map(|(r, &len)| {
                flat[r * width..(r + 1) * width]
                    .iter()
                    .flat_map(|&v| {
                        let v = v as u32;
                        [v as u8, (v >> 8) as u8, (v >> 16) as u8]
                    })
                    .take(len)
                    .collect()
            })
            .collect())
    }

    /// Σ over workers of each value, added in rank order in f64 (the same result on every
    /// worker).
    pub fn sum(&self, what: &str, values: &[f64]) -> Result<Vec<f64>, TrainerError> {
        let all = self.all_gather(what, values)?;
        Ok((0..values.len())
            .map(|i| all.iter().map(|v| v[i]).sum())
            .collect())
    }

    /// The global sums (and maxima) of every worker's loss diagnostics.
    pub fn sum_loss_metrics(&self, m: &LossMetrics) -> Result<LossMetrics, TrainerError> {
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
        if self.cfg.world_size == 1 {
            return Ok(grads);
        }
        let mut v = ReduceGrads::<AB> {
            worker: self,
            grads,
            error: None,
        };
        model.visit(&mut v);
        match v.error {
            Some(e) => Err(e),
            None => Ok(v.grads),
        }
    }

    /// Leaves the collective (every worker calls it at the end).
    pub fn leave(self) -> Result<(), TrainerError> {
        let peer = self.peer;
        self.call("leaving", move || {
            burn_collective::finish_collective::<B>(peer)
        })
    }
}

struct ReduceGrads<'a, AB: AutodiffBackend> {
    worker: &'a Worker<AB::InnerBackend>,
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
        match self.worker.all_reduce_sum("summing gradients", g) {
            Ok(sum) => self.grads.register(param.id, sum),
            Err(e) => self.error = Some(e),
        }
    }
}

/// Runs burn's global orchestrator on `port` (all interfaces: burn 0.21's websocket server
/// binds 0.0.0.0) until the process is interrupted. Start one per training job before the
/// workers; each worker's `Topology::Global::orchestrator` points at it.
pub fn run_orchestrator(port: u16) -> Result<(), TrainerError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| TrainerError::Distributed {
            rank: 0,
            message: format!("cannot start the orchestrator's runtime: {e}"),
        })?;
    rt.block_on(burn_collective::start_global_orchestrator(port));
    Ok(())
}
