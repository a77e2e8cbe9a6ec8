//! [`EngineThread`] drives any [`RolloutEngine`] on its own thread (asynchronous rollouts), and
//! [`EngineHandle`] is the trainer's engine, inline or on such a thread.

use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;

use rl_rollout::{
    Completion, EngineError, GenerateRequest, RolloutEngine, WeightVersion, WeightsKind, WeightsRef,
};

enum Job {
    Generate(
        Vec<GenerateRequest>,
        Sender<Result<Vec<Vec<Completion>>, EngineError>>,
    ),
    Update(
        WeightsRef,
        WeightVersion,
        Sender<Result<WeightVersion, EngineError>>,
    ),
}

/// A [`RolloutEngine`] on its own thread: jobs run one at a time in submission order, so a
/// weight update sent after a generation applies after it. Dropping the worker stops the thread.
pub struct EngineThread {
    name: String,
    kind: WeightsKind,
    jobs: Option<Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

/// A generation submitted to an [`EngineThread`] or run inline.
pub enum Pending {
    /// Finished (inline engines, or results restored from a checkpoint).
    Ready(Result<Vec<Vec<Completion>>, EngineError>),
    /// Running on the worker.
    Waiting(String, Receiver<Result<Vec<Vec<Completion>>, EngineError>>),
}

impl Pending {
    /// Waits for the completions.
    pub fn wait(self) -> Result<Vec<Vec<Completion>>, EngineError> {
        match self {
            Pending::Ready(r) => r,
            Pending::Waiting(name, rx) => rx.recv().unwrap_or_else(|_| {
                Err(EngineError::Stopped {
                    engine: name,
                    message: "the rollout thread ended before answering (it panicked?)".into(),
                })
            }),
        }
    }
}

impl EngineThread {
    /// Moves `engine` onto a new thread.
    pub fn spawn(mut engine: Box<dyn RolloutEngine>) -> Result<Self, EngineError> {
        let name = engine.name();
        let kind = engine.weights_kind();
        let (tx, rx) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("rlvr-rollouts".into())
            .spawn(move || {
                for job in rx {
                    // A dropped receiver means the trainer no longer waits: nothing to report.
                    match job {
                        Job::Generate(reqs, reply) => {
                            let _ = reply.send(engine.generate(&reqs));
                        }
                        Job::Update(w, v, reply) => {
                            let _ = reply.send(engine.update_weights(w, v));
                        }
                    }
                }
            })
            .map_err(|e| EngineError::Stopped {
                engine: name.clone(),
                message: format!("cannot start the rollout thread: {e}"),
            })?;
        Ok(Self {
            name,
            kind,
            jobs: Some(tx),
            thread: Some(thread),
        })
    }

    fn send(&self, job: Job) -> Result<(), EngineError> {
        self.jobs
            .as_ref()
            .and_then(|tx| tx.send(job).ok())
            .ok_or_else(|| EngineError::Stopped {
                engine: self.name.clone(),
                message: "the rollout thread is gone".into(),
            })
    }

    /// Queues a generation.
    pub fn submit(&self, requests: Vec<GenerateRequest>) -> Result<Pending, EngineError> {
        let (tx, rx) = mpsc::channel();
        self.send(Job::Generate(requests, tx))?;
        Ok(Pending::Waiting(self.name.clone(), rx))
    }

    /// Queues a weight update (after every queued generation) and waits for it.
    pub fn update_weights(
        &self,
        weights: WeightsRef,
        version: WeightVersion,
    ) -> Result<WeightVersion, EngineError> {
        let (tx, rx) = mpsc::channel();
        self.send(Job::Update(weights, version, tx))?;
        rx.recv().unwrap_or_else(|_| {
            Err(EngineError::Stopped {
                engine: self.name.clone(),
                message: "the rollout thread ended during a weight update".into(),
            })
        })
    }

    /// The engine's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The kind of weights the engine takes.
    pub fn weights_kind(&self) -> WeightsKind {
        self.kind
    }
}

impl Drop for EngineThread {
    fn drop(&mut self) {
        self.jobs.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// How the trainer drives its engine: on the training thread (synchronous rollouts), or on an
/// [`EngineThread`] so that generation overlaps the update (asynchronous rollouts).
pub enum EngineHandle {
    /// Calls run on the caller's thread.
    Inline(Box<dyn RolloutEngine>),
    /// Calls run on a background thread, in order.
    Background(EngineThread),
}

impl EngineHandle {
    /// `engine` inline, or on its own thread when `background`.
    pub fn new(engine: Box<dyn RolloutEngine>, background: bool) -> Result<Self, EngineError> {
        Ok(if background {
            EngineHandle::Background(EngineThread::spawn(engine)?)
        } else {
            EngineHandle::Inline(engine)
        })
    }

    /// Starts a generation (inline: runs it now).
    pub fn submit(&mut self, requests: Vec<GenerateRequest>) -> Result<Pending, EngineError> {
        match self {
            EngineHandle::Inline(e) => Ok(Pending::Ready(e.generate(&requests))),
            EngineHandle::Background(w) => w.submit(requests),
        }
    }

    /// Loads weights as `version` after every submitted generation; checks the engine's answer.
    pub fn update_weights(
        &mut self,
        weights: WeightsRef,
        version: WeightVersion,
    ) -> Result<WeightVersion, EngineError> {
        let got = match self {
            EngineHandle::Inline(e) => e.update_weights(weights, version)?,
            EngineHandle::Background(w) => w.update_weights(weights, version)?,
        };
        if got != version {
            return Err(EngineError::VersionNotAdvanced {
                engine: self.name(),
                expected: version,
                got,
            });
        }
        Ok(got)
    }

    /// The engine's name.
    pub fn name(&self) -> String {
        match self {
            EngineHandle::Inline(e) => e.name(),
            EngineHandle::Background(w) => w.name().to_string(),
        }
    }

    /// The kind of weights the engine takes.
    pub fn weights_kind(&self) -> WeightsKind {
        match self {
            EngineHandle::Inline(e) => e.weights_kind(),
            EngineHandle::Background(w) => w.weights_kind(),
        }
    }
}
