//! Data-parallel workers joined by burn's collective operations (`burn-collective` 0.21): the
//! [`Collective`] transport of [`crate::parallel::DataParallel`] across threads, processes and
//! machines (cargo feature `distributed`). What is exchanged, and why the sums are exact, is
//! documented in [`crate::parallel`].
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

use burn::prelude::*;
use burn::tensor::TensorPrimitive;
use burn_collective::{CollectiveConfig, PeerId, ReduceOperation};
use serde::{Deserialize, Serialize};

use crate::TrainerError;
use crate::parallel::{Collective, sum_by_rank};

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
            if !patched_collective() {
                return bad("topology", UNPATCHED_COLLECTIVE.into());
            }
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

/// Whether this build's burn-collective and burn-communication are rlvr's patched copies (their
/// `links` markers, read by the build script; third_party/PATCHED.md).
pub fn patched_collective() -> bool {
    cfg!(rlvr_patched_collective)
}

/// Why a cross-process world is refused without them.
const UNPATCHED_COLLECTIVE: &str = "workers in separate processes need rlvr's patched \
    burn-collective and burn-communication 0.21.0; this build has the published crates, whose \
    cross-process all-reduce stalls after one or two rounds (a lost wake-up and a sync barrier \
    that completes once). Add to your workspace's Cargo.toml:\n\
    [patch.crates-io]\n\
    burn-collective = { git = \"https://github.com/rlvr-rs/rlvr\" }\n\
    burn-communication = { git = \"https://github.com/rlvr-rs/rlvr\" }\n\
    (docs/crates-io.md), or run the workers as threads of one process (Topology::Local)";

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
        Ok(sum_by_rank(&self.all_gather(what, values)?, values.len()))
    }

    /// Leaves the collective (every worker calls it at the end).
    pub fn leave(self) -> Result<(), TrainerError> {
        let peer = self.peer;
        self.call("leaving", move || {
            burn_collective::finish_collective::<B>(peer)
        })
    }
}

impl<B: Backend> Collective<B> for Worker<B> {
    fn rank(&self) -> usize {
        Worker::rank(self)
    }

    fn world_size(&self) -> usize {
        Worker::world_size(self)
    }

    fn all_gather(&self, what: &str, values: &[f64]) -> Result<Vec<Vec<f64>>, TrainerError> {
        Worker::all_gather(self, what, values)
    }

    fn all_gather_bytes(&self, what: &str, bytes: &[u8]) -> Result<Vec<Vec<u8>>, TrainerError> {
        Worker::all_gather_bytes(self, what, bytes)
    }

    fn all_reduce_sum_primitive(
        &self,
        what: &str,
        tensor: B::FloatTensorPrimitive,
    ) -> Result<B::FloatTensorPrimitive, TrainerError> {
        if self.cfg.world_size == 1 {
            return Ok(tensor);
        }
        self.all_reduce_primitive(what, tensor)
    }

    fn leave(self: Box<Self>) -> Result<(), TrainerError> {
        Worker::leave(*self)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// This workspace builds with its patch section, so both markers must arrive and a
    /// cross-process world must be accepted; a marker that stopped reaching the build script
    /// would refuse every multi-process run. (The refusal itself is exercised by a crate built
    /// without the patch section: scripts/outside-crate.sh.)
    #[test]
    fn the_workspace_build_has_the_patched_collective_and_accepts_processes() {
        assert!(patched_collective());
        let cfg = WorkerConfig {
            topology: Topology::Global {
                orchestrator: "127.0.0.1:29400".into(),
                node: "127.0.0.1:29401".into(),
            },
            ..WorkerConfig::local(2, 1)
        };
        cfg.validate().unwrap();
    }
}
