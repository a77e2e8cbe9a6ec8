//! AdamW with PyTorch-style settings, linear warm-up, global-norm gradient clipping, and an
//! optimizer state that survives a save/load of the model.

use std::collections::HashMap;
use std::path::Path;

use burn::module::{AutodiffModule, ModuleVisitor, Param, ParamId};
use burn::optim::adaptor::OptimizerAdaptor;
use burn::optim::{AdamW, AdamWConfig, GradientsParams, Optimizer};
use burn::prelude::*;
use burn::record::{BinFileRecorder, FullPrecisionSettings, Recorder};
use burn::tensor::backend::AutodiffBackend;

use crate::TrainerError;
use crate::config::OptimSection;

/// Learning rate at (0-based) step `step`: linear warm-up from lr/warmup to lr over `warmup`
/// steps, then constant (DAPO: constant 1e-6 after a 10–20 step warm-up).
pub fn lr_at(cfg: &OptimSection, step: usize) -> f64 {
    if cfg.warmup_steps > 0 && step < cfg.warmup_steps {
        cfg.lr * (step + 1) as f64 / cfg.warmup_steps as f64
    } else {
        cfg.lr
    }
}

/// Parameter paths (`layers.0.self_attn.q_proj.weight`, ...) with their current ids.
struct Paths {
    stack: Vec<String>,
    out: Vec<(String, ParamId)>,
}

impl<B: Backend> ModuleVisitor<B> for Paths {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.stack.push(name.to_string());
    }
    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.stack.pop();
    }
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        self.out.push((self.stack.join("."), param.id));
    }
}

/// Every float parameter's structural path and id.
pub fn param_paths<B: Backend, M: Module<B>>(model: &M) -> Vec<(String, ParamId)> {
    let mut v = Paths {
        stack: Vec::new(),
        out: Vec::new(),
    };
    model.visit(&mut v);
    v.out
}

/// Finds the first float parameter holding a NaN or an infinity.
struct NonFinite {
    stack: Vec<String>,
    found: Option<String>,
}

impl<B: Backend> ModuleVisitor<B> for NonFinite {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.stack.push(name.to_string());
    }
    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.stack.pop();
    }
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        if self.found.is_none() && !param.val().is_finite().all().into_scalar().elem::<bool>() {
            self.found = Some(self.stack.join("."));
        }
    }
}

/// The structural path of the first parameter of `model` that holds a NaN or an infinity, if
/// any (checked before a checkpoint is written).
pub fn first_non_finite_param<B: Backend, M: Module<B>>(model: &M) -> Option<String> {
    let mut v = NonFinite {
        stack: Vec::new(),
        found: None,
    };
    model.visit(&mut v);
    v.found
}

struct SquaredNorm<'a, B: AutodiffBackend> {
    grads: &'a GradientsParams,
    total: Option<Tensor<B::InnerBackend, 1>>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for SquaredNorm<'_, B> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        if let Some(g) = self.grads.get::<B::InnerBackend, D>(param.id) {
            let s = g.square().sum();
            self.total = Some(match self.total.take() {
                Some(t) => t + s,
                None => s,
            });
        }
    }
}

struct Scale<'a, B: AutodiffBackend> {
    grads: &'a mut GradientsParams,
    factor: f64,
    _b: std::marker::PhantomData<B>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Scale<'_, B> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        if let Some(g) = self.grads.remove::<B::InnerBackend, D>(param.id) {
            self.grads.register(param.id, g.mul_scalar(self.factor));
        }
    }
}

/// The global L2 norm of all gradients; when `max_norm > 0` and the norm exceeds it, every
/// gradient is scaled by max_norm/(norm + 1e-6) (torch.nn.utils.clip_grad_norm_). Returns the
/// norm before clipping.
pub fn clip_grad_norm<B: AutodiffBackend, M: AutodiffModule<B>>(
    model: &M,
    grads: &mut GradientsParams,
    max_norm: f64,
) -> f64 {
    let mut v = SquaredNorm::<B> { grads, total: None };
    model.visit(&mut v);
    let norm = v
        .total
        .map(|t| (t.into_scalar().elem::<f64>()).sqrt())
        .unwrap_or(0.0);
    if max_norm > 0.0 && norm > max_norm && norm.is_finite() {
        let mut s = Scale::<B> {
            grads,
            factor: max_norm / (norm + 1e-6),
            _b: std::marker::PhantomData,
        };
        model.visit(&mut s);
    }
    norm
}

/// What [`AdamWOptimizer::step`] did.
#[derive(Debug)]
pub struct StepOutcome<M> {
    /// The model after the step (unchanged when skipped).
    pub model: M,
    /// The global gradient norm before clipping.
    pub grad_norm: f64,
    /// False when the norm was not finite and the update was skipped.
    pub applied: bool,
}

/// AdamW configured from [`OptimSection`] (β1, β2, ε and decoupled weight decay set explicitly:
/// burn's defaults differ from PyTorch's) and updated with a per-step learning rate.
pub struct AdamWOptimizer<B: AutodiffBackend, M: AutodiffModule<B>> {
    inner: OptimizerAdaptor<AdamW, M, B>,
    cfg: OptimSection,
}

impl<B: AutodiffBackend, M: AutodiffModule<B>> AdamWOptimizer<B, M> {
    /// A fresh optimizer.
    pub fn new(cfg: &OptimSection) -> Self {
        let inner = AdamWConfig::new()
            .with_beta_1(cfg.beta1 as f32)
            .with_beta_2(cfg.beta2 as f32)
            .with_epsilon(cfg.eps as f32)
            .with_weight_decay(cfg.weight_decay as f32)
            .init::<B, M>();
        Self { inner, cfg: *cfg }
    }

    /// Clips the global gradient norm (if configured) and applies one update at learning rate
    /// `lr`. A non-finite gradient norm (a NaN or infinite gradient anywhere) skips the update:
    /// the weights and the AdamW moments stay exactly as they were, and the outcome says so.
    pub fn step(&mut self, lr: f64, model: M, mut grads: GradientsParams) -> StepOutcome<M> {
        let grad_norm = clip_grad_norm(&model, &mut grads, self.cfg.grad_clip);
        if !grad_norm.is_finite() {
            return StepOutcome {
                model,
                grad_norm,
                applied: false,
            };
        }
        StepOutcome {
            model: self.inner.step(lr, model, grads),
            grad_norm,
            applied: true,
        }
    }

    /// Writes the optimizer state to `dir/optimizer.bin` and the parameter paths of its keys to
    /// `dir/optimizer_params.json`, so that it can be re-attached to a reloaded model whose
    /// parameters have new ids.
    pub fn save(&self, model: &M, dir: &Path) -> Result<(), TrainerError> {
        let paths: Vec<(String, u64)> = param_paths(model)
            .into_iter()
            .map(|(p, id)| (p, id.val()))
            .collect();
        let json = serde_json::to_string(&paths).map_err(|e| TrainerError::Checkpoint {
            path: dir.display().to_string(),
            message: e.to_string(),
        })?;
        let p = dir.join("optimizer_params.json");
        std::fs::write(&p, json).map_err(|e| TrainerError::io(&p, e))?;
        BinFileRecorder::<FullPrecisionSettings>::new()
            .record(self.inner.to_record(), dir.join("optimizer"))
            .map_err(|e| TrainerError::Checkpoint {
                path: dir.display().to_string(),
                message: format!("writing optimizer state: {e}"),
            })
    }

    /// Loads the state written by [`AdamWOptimizer::save`] for `model` (matched by path).
    pub fn load(mut self, model: &M, dir: &Path, device: &B::Device) -> Result<Self, TrainerError> {
        let err = |message: String| TrainerError::Checkpoint {
            path: dir.display().to_string(),
            message,
        };
        let p = dir.join("optimizer_params.json");
        let text = std::fs::read_to_string(&p).map_err(|e| TrainerError::io(&p, e))?;
        let saved: Vec<(String, u64)> =
            serde_json::from_str(&text).map_err(|e| err(format!("optimizer_params.json: {e}")))?;
        let now: HashMap<String, ParamId> = param_paths(model).into_iter().collect();
        let mut rekey: HashMap<u64, ParamId> = HashMap::new();
        for (path, old) in saved {
            let new = now
                .get(&path)
                .ok_or_else(|| err(format!("optimizer state for unknown parameter `{path}`")))?;
            rekey.insert(old, *new);
        }
        let mut record: <OptimizerAdaptor<AdamW, M, B> as Optimizer<M, B>>::Record =
            BinFileRecorder::<FullPrecisionSettings>::new()
                .load(dir.join("optimizer"), device)
                .map_err(|e| err(format!("reading optimizer state: {e}")))?;
        let entries: Vec<_> = record.drain().collect();
        for (id, state) in entries {
            let new = rekey.get(&id.val()).ok_or_else(|| {
                err(format!(
                    "optimizer state for parameter id {} has no path",
                    id.val()
                ))
            })?;
            record.insert(*new, state);
        }
        self.inner = self.inner.load_record(record);
        Ok(self)
    }
}
