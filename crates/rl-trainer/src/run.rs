//! A training run from a config: the library entry point behind `rlvr train` and the examples.
//!
//! A [`Run`] names what is trained ([`Source`]: a checkpoint in `model.path`, or the embedded
//! arithmetic task asked for by name), whether it continues from the run folder's latest
//! checkpoint, and its data-parallel workers. [`Run::execute`] has one phase per function:
//! [`load_checkpoint_source`] or [`load_embedded_source`] (tokenizer, prompts, model), the
//! trainer (new, or resumed), joining the workers, training; every [`RunEvent`] of the leading
//! worker goes to the caller, setup lines included ([`RunEvent::Note`]). What a run leaves is in
//! `config.out_dir` (`metrics.jsonl`, `checkpoints/`, `eval/`).
//!
//! ```no_run
//! # fn main() -> Result<(), rl_trainer::TrainerError> {
//! use burn::backend::{Autodiff, Flex};
//! use rl_trainer::{Run, TrainConfig};
//!
//! let config = TrainConfig::from_toml_file("train.toml".as_ref(), &TrainConfig::default())?;
//! Run::from_config(config)?.execute::<Autodiff<Flex>>(Default::default(), |event| {
//!     println!("{event:?}")
//! })?;
//! # Ok(())
//! # }
//! ```

use std::path::PathBuf;
use std::time::Instant;

use burn::tensor::backend::AutodiffBackend;
use rl_models::{CausalLm, Tokenizer};

use crate::data::Dataset;
#[cfg(feature = "distributed")]
use crate::distributed::{Worker, WorkerConfig};
use crate::tasks::demo::ArithmeticDemo;
use crate::{RunEvent, TrainConfig, Trainer, TrainerError, latest_checkpoint};

/// What a run trains.
#[derive(Clone, Debug)]
pub enum Source {
    /// The checkpoint in `model.path` (an HF folder or a GGUF file; tokenizer from
    /// `model.tokenizer`, else the GGUF's vocabulary or `<path>/tokenizer.json`) on the prompts
    /// of `data.train` and `data.eval`.
    Checkpoint,
    /// The embedded arithmetic task: its character tokenizer, prompts and seeded tiny Qwen3,
    /// warm-started by supervised updates, or started from the saved model `init`.
    Embedded {
        /// The task, model size and warm-start.
        demo: Box<ArithmeticDemo>,
        /// A saved model to start RL from instead of the warm-start.
        init: Option<PathBuf>,
    },
}

/// One training run: config, source, resume, workers.
#[derive(Clone, Debug)]
pub struct Run {
    /// The resolved training config (`out_dir` is the run folder).
    pub config: TrainConfig,
    /// What is trained.
    pub source: Source,
    /// Continue from `out_dir/checkpoints/latest` when there is one.
    pub resume: bool,
    /// Data-parallel workers this process runs: none (a world of one), N local threads, or one
    /// process of a multi-process world.
    #[cfg(feature = "distributed")]
    pub workers: Vec<WorkerConfig>,
}

impl Run {
    /// The run a config asks for: its checkpoint when it names `model.path`; the embedded
    /// arithmetic task (default settings) when it names no model and no prompt files; prompt
    /// files without a model are an error naming `model.path`.
    pub fn from_config(config: TrainConfig) -> Result<Self, TrainerError> {
        match config.model.path {
            Some(_) => Self::checkpoint(config),
            None => Self::embedded(ArithmeticDemo::default(), config),
        }
    }

    /// Trains the checkpoint of `model.path`, which must be set.
    pub fn checkpoint(config: TrainConfig) -> Result<Self, TrainerError> {
        if config.model.path.is_none() {
            return Err(TrainerError::Config {
                field: "model.path".into(),
                message: "missing: a checkpoint run needs an HF folder or a GGUF file".into(),
            });
        }
        Ok(Self::new(config, Source::Checkpoint))
    }

    /// Trains the embedded arithmetic task of `demo` with `config`, which must name neither a
    /// model nor prompt files (the task has its own; they would be silently ignored).
    pub fn embedded(demo: ArithmeticDemo, config: TrainConfig) -> Result<Self, TrainerError> {
        let given = [
            ("model.path", &config.model.path),
            ("data.train", &config.data.train),
            ("data.eval", &config.data.eval),
        ];
        if let Some((field, path)) = given.iter().find_map(|(f, p)| p.as_ref().map(|p| (f, p))) {
            return Err(TrainerError::Config {
                field: "model.path".into(),
                message: format!(
                    "missing, but {field} = {:?} is set: prompt files need a model to train (an \
                     HF folder or a GGUF file in model.path); the embedded arithmetic run (no \
                     model.path) trains on its own prompts, so remove data.train and data.eval \
                     to run it",
                    path.display().to_string()
                ),
            });
        }
        Ok(Self::new(
            config,
            Source::Embedded {
                demo: Box::new(demo),
                init: None,
            },
        ))
    }

    fn new(config: TrainConfig, source: Source) -> Self {
        Self {
            config,
            source,
            resume: false,
            #[cfg(feature = "distributed")]
            workers: Vec::new(),
        }
    }

    /// Continue from the run folder's latest checkpoint (a fresh start when there is none).
    pub fn resume(mut self, resume: bool) -> Self {
        self.resume = resume;
        self
    }

    /// Starts the embedded task's RL phase from the saved model `init` instead of the
    /// warm-start; a checkpoint run ignores it.
    pub fn init(mut self, dir: Option<PathBuf>) -> Self {
        if let Source::Embedded { init, .. } = &mut self.source {
            *init = dir;
        }
        self
    }

    /// Runs as these data-parallel workers (each validated).
    #[cfg(feature = "distributed")]
    pub fn workers(mut self, workers: Vec<WorkerConfig>) -> Result<Self, TrainerError> {
        for w in &workers {
            w.validate()?;
        }
        self.workers = workers;
        Ok(self)
    }

    /// Whether this process leads the run (rank 0 is among its workers): it prints, saves and
    /// reports.
    pub fn leads(&self) -> bool {
        #[cfg(feature = "distributed")]
        if !self.workers.is_empty() {
            return self.workers.iter().any(|w| w.rank == 0);
        }
        true
    }

    /// Trains: loads the source, builds the trainer (new or resumed), joins the workers, runs
    /// every step. The leading worker's events go to `on_event`; with local workers (threads)
    /// the first error by rank is the run's.
    pub fn execute<B: AutodiffBackend>(
        self,
        device: B::Device,
        mut on_event: impl FnMut(RunEvent<'_>) + Send,
    ) -> Result<(), TrainerError> {
        #[cfg(feature = "distributed")]
        if self.workers.len() > 1 {
            return std::thread::scope(|s| {
                let mut on_event = Some(&mut on_event as &mut (dyn FnMut(RunEvent<'_>) + Send));
                let handles: Vec<_> = self
                    .workers
                    .iter()
                    .map(|w| {
                        let (w, device, run) = (w.clone(), device.clone(), &self);
                        let mut events = on_event.take_if(|_| w.rank == 0);
                        s.spawn(move || {
                            let mut quiet = |_: RunEvent<'_>| {};
                            let sink: &mut dyn FnMut(RunEvent<'_>) = match events.as_mut() {
                                Some(f) => f,
                                None => &mut quiet,
                            };
                            run.worker::<B>(Some(w), device, sink)
                        })
                    })
                    .collect();
                let mut first = Ok(());
                for (rank, h) in handles.into_iter().enumerate() {
                    let r = h.join().unwrap_or_else(|_| {
                        Err(TrainerError::Distributed {
                            rank,
                            message: "the worker thread panicked".into(),
                        })
                    });
                    if first.is_ok() {
                        first = r;
                    }
                }
                first
            });
        }
        #[cfg(feature = "distributed")]
        let worker = self.workers.first().cloned();
        #[cfg(not(feature = "distributed"))]
        let worker = None;
        self.worker::<B>(worker, device, &mut on_event)
    }

    /// One worker of the run (`worker` None: the whole run in this thread).
    fn worker<B: AutodiffBackend>(
        &self,
        worker: Option<WorkerHandle>,
        device: B::Device,
        on_event: &mut dyn FnMut(RunEvent<'_>),
    ) -> Result<(), TrainerError> {
        if leads(&worker)
            && B::name(&device).contains("flex")
            && let Some(note) = rl_models::patches::missing_note()
        {
            on_event(RunEvent::Note(&note));
        }
        let trainer = match &self.source {
            Source::Checkpoint => {
                load_checkpoint_source::<B>(&self.config, self.resume, device.clone(), on_event)?
            }
            Source::Embedded { demo, init } => load_embedded_source::<B>(
                demo,
                &self.config,
                self.resume,
                init.as_deref(),
                leads(&worker),
                device.clone(),
                on_event,
            )?,
        };
        let mut trainer = join(trainer, worker, &device)?;
        let t0 = Instant::now();
        trainer.run(&mut *on_event)?;
        if matches!(self.source, Source::Embedded { .. }) {
            on_event(RunEvent::Note(&format!(
                "RL done in {:.0}s",
                t0.elapsed().as_secs_f64()
            )));
        }
        trainer.take_parallel().leave()
    }
}

/// Whether `worker` is the leading one (rank 0, or the only process).
fn leads(worker: &Option<WorkerHandle>) -> bool {
    #[cfg(feature = "distributed")]
    return worker.as_ref().is_none_or(|w| w.rank == 0);
    #[cfg(not(feature = "distributed"))]
    return worker.is_none();
}

#[cfg(feature = "distributed")]
type WorkerHandle = WorkerConfig;
#[cfg(not(feature = "distributed"))]
type WorkerHandle = std::convert::Infallible;

/// A checkpoint's trainer: the tokenizer, `data.train` and `data.eval`, and the model of
/// `model.path` (new) or the run folder's latest checkpoint (`resume`).
pub fn load_checkpoint_source<B: AutodiffBackend>(
    config: &TrainConfig,
    resume: bool,
    device: B::Device,
    on_event: &mut dyn FnMut(RunEvent<'_>),
) -> Result<Trainer<B, CausalLm<B>>, TrainerError> {
    let dir = config
        .model
        .path
        .clone()
        .ok_or_else(|| TrainerError::Config {
            field: "model.path".into(),
            message: "missing: a checkpoint run needs an HF folder or a GGUF file".into(),
        })?;
    let tokenizer = Tokenizer::for_model(&dir, config.model.tokenizer.as_deref())?;
    let train_path = config
        .data
        .train
        .clone()
        .ok_or_else(|| TrainerError::Config {
            field: "data.train".into(),
            message: "required with model.path: a .jsonl or .parquet prompt set".into(),
        })?;
    let train = Dataset::load(&train_path, &config.data)?;
    let eval = match &config.data.eval {
        Some(p) => Some(Dataset::load(p, &config.data)?),
        None => None,
    };
    on_event(RunEvent::Note(&format!(
        "resolved config:\n{}",
        config.to_toml()
    )));
    on_event(RunEvent::Note(&format!(
        "{} training prompts{}",
        train.len(),
        eval.as_ref()
            .map(|e| format!(", {} held-out", e.len()))
            .unwrap_or_default()
    )));
    let config = config.clone();
    match (resume, latest_checkpoint(&config.out_dir)) {
        (true, Some(ckpt)) => {
            Trainer::<B, CausalLm<B>>::resume(config, &ckpt, tokenizer, train, eval, device)
        }
        _ => {
            let model = CausalLm::<B>::load(&dir, &device)?;
            Trainer::new(config, model, tokenizer, train, eval, device)
        }
    }
}

/// The embedded task's trainer: its tokenizer and split, and the model resumed from the run
/// folder's latest checkpoint (`resume`), loaded from `init`, or seeded and warm-started by
/// supervised updates (saved to `out_dir/warm_start` by the leading worker, `leads`).
pub fn load_embedded_source<B: AutodiffBackend>(
    demo: &ArithmeticDemo,
    config: &TrainConfig,
    resume: bool,
    init: Option<&std::path::Path>,
    leads: bool,
    device: B::Device,
    on_event: &mut dyn FnMut(RunEvent<'_>),
) -> Result<Trainer<B, CausalLm<B>>, TrainerError> {
    let data = demo.data()?;
    on_event(RunEvent::Note(&format!(
        "embedded run: {} tiers x {} train / {} held-out prompts; tiny Qwen3 (hidden {}, {} layers, vocab {}); {} for {} steps",
        demo.task.tiers.len(),
        demo.train_per_tier,
        demo.eval_per_tier,
        demo.hidden_size,
        demo.num_hidden_layers,
        data.model.vocab_size,
        config.algorithm,
        config.steps
    )));
    on_event(RunEvent::Note(&format!(
        "resolved config:\n{}",
        config.to_toml()
    )));
    let t0 = Instant::now();
    let config = config.clone();
    if let (true, Some(ckpt)) = (resume, latest_checkpoint(&config.out_dir)) {
        on_event(RunEvent::Note(&format!("resuming from {}", ckpt.display())));
        return Trainer::<B, CausalLm<B>>::resume(
            config,
            &ckpt,
            data.tokenizer.clone(),
            data.train.clone(),
            Some(data.eval.clone()),
            device,
        );
    }
    let model = match init {
        Some(dir) => {
            on_event(RunEvent::Note(&format!("starting from {}", dir.display())));
            CausalLm::<B>::load(dir, &device)?
        }
        None => {
            on_event(RunEvent::Note(&format!(
                "supervised warm-start: {} updates of {} examples (reference responses of all tiers; short, so the hard tier is left with a small pass rate)",
                demo.sft.steps, demo.sft.batch_size
            )));
            let steps = demo.sft.steps;
            let model = demo.warm_start::<B>(&data, config.seed, &device, |s, loss| {
                if s % 50 == 0 || s == steps {
                    on_event(RunEvent::Note(&format!("  sft step {s:>4} loss {loss:.4}")));
                }
            })?;
            let dir = config.out_dir.join("warm_start");
            if leads {
                model.save(&dir)?;
            }
            on_event(RunEvent::Note(&format!(
                "warm-start done in {:.0}s (saved to {})",
                t0.elapsed().as_secs_f64(),
                dir.display()
            )));
            model
        }
    };
    Trainer::new(
        config,
        model,
        data.tokenizer.clone(),
        data.train.clone(),
        Some(data.eval.clone()),
        device,
    )
}

/// Joins the data-parallel workers, when there are any.
fn join<B: AutodiffBackend>(
    trainer: Trainer<B, CausalLm<B>>,
    worker: Option<WorkerHandle>,
    device: &B::Device,
) -> Result<Trainer<B, CausalLm<B>>, TrainerError> {
    match worker {
        #[cfg(feature = "distributed")]
        Some(cfg) => {
            let w = Worker::<B::InnerBackend>::join(cfg, device)?;
            trainer.with_collective(Box::new(w))
        }
        #[cfg(not(feature = "distributed"))]
        Some(never) => match never {},
        None => {
            let _ = device;
            Ok(trainer)
        }
    }
}
