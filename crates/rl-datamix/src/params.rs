//! Parameter plumbing for the agent's burn modules: export/import of all float parameters (for
//! checkpoints that load with typed errors instead of panics), Polyak soft updates of target
//! networks, and a checkpointable Adam.
//!
//! Adam (Kingma & Ba 2015, PyTorch semantics, no weight decay), per parameter tensor at update
//! `t`: `m ← β₁m + (1−β₁)g`, `v ← β₂v + (1−β₂)g²`,
//! `θ ← θ − lr · (m/(1−β₁ᵗ)) / (sqrt(v/(1−β₂ᵗ)) + ε)`.
//! burn's own optimizers are not used for the agent because their records cannot be restored
//! from a file without possible panics (malformed parameter ids, bytes); this one keeps its state
//! as plain vectors.

use burn::module::{AutodiffModule, Module, ModuleMapper, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorData};
use serde::{Deserialize, Serialize};

use crate::error::{DatamixError, Result};

/// One parameter tensor as plain data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParamBlob {
    /// Tensor shape.
    pub shape: Vec<usize>,
    /// Values in row-major order.
    pub data: Vec<f32>,
}

/// Reads a float tensor into a `Vec<f32>`.
pub fn tensor_to_vec<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f32> {
    t.into_data()
        .convert::<f32>()
        .into_vec::<f32>()
        .unwrap_or_default()
}

struct Exporter {
    out: Vec<ParamBlob>,
}

impl<B: Backend> ModuleVisitor<B> for Exporter {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let t = param.val();
        let shape = t.dims().to_vec();
        self.out.push(ParamBlob {
            shape,
            data: tensor_to_vec(t),
        });
    }
}

/// All float parameters of `module`, in visiting order.
pub fn export_params<B: Backend, M: Module<B>>(module: &M) -> Vec<ParamBlob> {
    let mut e = Exporter { out: Vec::new() };
    module.visit(&mut e);
    e.out
}

struct ShapeLister {
    shapes: Vec<Vec<usize>>,
}

impl<B: Backend> ModuleVisitor<B> for ShapeLister {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        self.shapes.push(param.val().dims().to_vec());
    }
}

struct Importer<'a, B: Backend> {
    blobs: &'a [ParamBlob],
    next: usize,
    device: B::Device,
}

impl<B: Backend> ModuleMapper<B> for Importer<'_, B> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let (id, old, mapper) = param.consume();
        let blob = &self.blobs[self.next];
        self.next += 1;
        let mut t = Tensor::<B, D>::from_data(
            TensorData::new(blob.data.clone(), blob.shape.clone()),
            &self.device,
        );
        if old.is_require_grad() {
            t = t.require_grad();
        }
        Param::from_mapped_value(id, t, mapper)
    }
}

/// `module` with its float parameters replaced by `blobs` (as written by [`export_params`]).
/// Shapes are checked first; a mismatch is an error and leaves nothing half-loaded.
pub fn import_params<B: Backend, M: Module<B>>(
    module: M,
    blobs: &[ParamBlob],
    device: &B::Device,
    what: &str,
) -> Result<M> {
    let mut lister = ShapeLister { shapes: Vec::new() };
    module.visit(&mut lister);
    if lister.shapes.len() != blobs.len() {
        return Err(DatamixError::Checkpoint(format!(
            "{what}: {} parameter tensors, checkpoint has {}",
            lister.shapes.len(),
            blobs.len()
        )));
    }
    for (i, (s, b)) in lister.shapes.iter().zip(blobs).enumerate() {
        if *s != b.shape || b.data.len() != s.iter().product::<usize>() {
            return Err(DatamixError::Checkpoint(format!(
                "{what}: parameter {i} has shape {s:?}, checkpoint has {:?} with {} values",
                b.shape,
                b.data.len()
            )));
        }
        if b.data.iter().any(|v| !v.is_finite()) {
            return Err(DatamixError::Checkpoint(format!(
                "{what}: parameter {i} has non-finite values"
            )));
        }
    }
    let mut imp = Importer::<B> {
        blobs,
        next: 0,
        device: device.clone(),
    };
    Ok(module.map(&mut imp))
}

struct FlatCollector<B: Backend> {
    out: Vec<Tensor<B, 1>>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for FlatCollector<B::InnerBackend> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let t = param.val().inner();
        let n = t.shape().num_elements();
        self.out.push(t.reshape([n]));
    }
}

struct Polyak<B: Backend> {
    src: Vec<Tensor<B, 1>>,
    next: usize,
    tau: f64,
}

impl<B: Backend> ModuleMapper<B> for Polyak<B> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let (id, old, mapper) = param.consume();
        let shape = old.shape();
        let src = self.src[self.next].clone().reshape(shape);
        self.next += 1;
        let new = src.mul_scalar(self.tau) + old.mul_scalar(1.0 - self.tau);
        Param::from_mapped_value(id, new, mapper)
    }
}

/// Polyak update of a target network: `θ' ← τθ + (1 − τ)θ'` for every parameter. `online` and
/// `target` must have the same architecture.
pub fn soft_update<B: AutodiffBackend, M: AutodiffModule<B>>(
    online: &M,
    target: M::InnerModule,
    tau: f64,
) -> M::InnerModule {
    let mut c = FlatCollector::<B::InnerBackend> { out: Vec::new() };
    online.visit(&mut c);
    let mut p = Polyak {
        src: c.out,
        next: 0,
        tau,
    };
    target.map(&mut p)
}

/// Adam's serialisable state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AdamState {
    /// Number of updates done.
    pub t: u64,
    /// First moments, one flattened vector per parameter (empty before the first update).
    pub m: Vec<Vec<f32>>,
    /// Second moments.
    pub v: Vec<Vec<f32>>,
}

/// Adam for a burn module on an autodiff backend (state on the inner backend).
#[derive(Clone, Debug)]
pub struct Adam<B: Backend> {
    /// Learning rate.
    pub lr: f64,
    /// β₁.
    pub beta1: f64,
    /// β₂.
    pub beta2: f64,
    /// ε.
    pub eps: f64,
    t: u64,
    m: Vec<Tensor<B, 1>>,
    v: Vec<Tensor<B, 1>>,
}

struct AdamMapper<'a, B: Backend> {
    adam: &'a mut Adam<B>,
    grads: &'a mut GradientsParams,
    index: usize,
}

impl<AB: AutodiffBackend> ModuleMapper<AB> for AdamMapper<'_, AB::InnerBackend> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<AB, D>>) -> Param<Tensor<AB, D>> {
        let i = self.index;
        self.index += 1;
        let (id, value, mapper) = param.consume();
        let Some(grad) = self.grads.remove::<AB::InnerBackend, D>(id) else {
            return Param::from_mapped_value(id, value, mapper);
        };
        let a = &mut *self.adam;
        let inner = value.inner();
        let shape = inner.shape();
        let n = shape.num_elements();
        let g = grad.reshape([n]);
        a.m[i] = a.m[i].clone().mul_scalar(a.beta1) + g.clone().mul_scalar(1.0 - a.beta1);
        a.v[i] = a.v[i].clone().mul_scalar(a.beta2) + g.square().mul_scalar(1.0 - a.beta2);
        let bc1 = 1.0 - a.beta1.powi(a.t as i32);
        let bc2 = 1.0 - a.beta2.powi(a.t as i32);
        let step = a.m[i]
            .clone()
            .div_scalar(bc1)
            .div(a.v[i].clone().div_scalar(bc2).sqrt().add_scalar(a.eps))
            .mul_scalar(a.lr)
            .reshape(shape);
        let updated = Tensor::<AB, D>::from_inner(inner - step).require_grad();
        Param::from_mapped_value(id, updated, mapper)
    }
}

impl<B: Backend> Adam<B> {
    /// Adam with learning rate `lr` and PyTorch's defaults β = (0.9, 0.999), ε = 1e-8, for a
    /// module whose parameters have `sizes` elements (in visiting order).
    pub fn new(lr: f64, sizes: &[usize], device: &B::Device) -> Self {
        Self {
            lr,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            t: 0,
            m: sizes.iter().map(|&n| Tensor::zeros([n], device)).collect(),
            v: sizes.iter().map(|&n| Tensor::zeros([n], device)).collect(),
        }
    }

    /// Adam for the parameters of `module`.
    pub fn for_module<AB, M>(lr: f64, module: &M, device: &B::Device) -> Self
    where
        AB: AutodiffBackend<InnerBackend = B>,
        M: AutodiffModule<AB>,
    {
        let sizes: Vec<usize> = export_params::<AB, M>(module)
            .iter()
            .map(|b| b.data.len())
            .collect();
        Self::new(lr, &sizes, device)
    }

    /// One update of `module` with `grads`; parameters without a gradient are left alone.
    pub fn step<AB, M>(&mut self, module: M, mut grads: GradientsParams) -> M
    where
        AB: AutodiffBackend<InnerBackend = B>,
        M: AutodiffModule<AB>,
    {
        self.t += 1;
        let mut mapper = AdamMapper {
            adam: self,
            grads: &mut grads,
            index: 0,
        };
        module.map(&mut mapper)
    }

    /// The state as plain vectors.
    pub fn state(&self) -> AdamState {
        AdamState {
            t: self.t,
            m: self.m.iter().map(|x| tensor_to_vec(x.clone())).collect(),
            v: self.v.iter().map(|x| tensor_to_vec(x.clone())).collect(),
        }
    }

    /// Restores [`Adam::state`]; sizes must match.
    pub fn load_state(&mut self, s: &AdamState, device: &B::Device, what: &str) -> Result<()> {
        let sizes: Vec<usize> = self.m.iter().map(|x| x.shape().num_elements()).collect();
        let ok = |vs: &[Vec<f32>]| {
            vs.len() == sizes.len() && vs.iter().zip(&sizes).all(|(v, &n)| v.len() == n)
        };
        if !ok(&s.m) || !ok(&s.v) {
            return Err(DatamixError::Checkpoint(format!(
                "{what}: Adam moments do not match the parameter sizes {sizes:?}"
            )));
        }
        let load = |vs: &[Vec<f32>]| {
            vs.iter()
                .map(|v| Tensor::<B, 1>::from_data(TensorData::new(v.clone(), [v.len()]), device))
                .collect()
        };
        self.t = s.t;
        self.m = load(&s.m);
        self.v = load(&s.v);
        Ok(())
    }
}

/// Adam on one scalar (the SAC temperature's `log α`), same update rule.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScalarAdam {
    /// Updates done.
    pub t: u64,
    /// First moment.
    pub m: f64,
    /// Second moment.
    pub v: f64,
}

impl ScalarAdam {
    /// Returns `x` after one Adam step with gradient `g` and learning rate `lr`.
    pub fn step(&mut self, x: f64, g: f64, lr: f64) -> f64 {
        let (b1, b2, eps) = (0.9, 0.999, 1e-8);
        self.t += 1;
        self.m = b1 * self.m + (1.0 - b1) * g;
        self.v = b2 * self.v + (1.0 - b2) * g * g;
        let mh = self.m / (1.0 - b1.powi(self.t as i32));
        let vh = self.v / (1.0 - b2.powi(self.t as i32));
        x - lr * mh / (vh.sqrt() + eps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_refs::{ADAM_GRADS, ADAM_P0, ADAM_TRAJ};
    use burn::backend::{Autodiff, Flex};

    type AB = Autodiff<Flex>;

    #[derive(Module, Debug)]
    struct One<B: Backend> {
        w: Param<Tensor<B, 1>>,
    }

    /// Adam against torch.optim.Adam (tools/datamix/reference.py). The loss `Σ g_i w_i` has
    /// gradient `g`, so feeding the reference gradients through burn's autodiff reproduces them.
    #[test]
    fn adam_matches_torch() {
        let dev = Default::default();
        let mut m = One::<AB> {
            w: Param::from_tensor(Tensor::from_floats(ADAM_P0, &dev).require_grad()),
        };
        let mut adam = Adam::<Flex>::for_module::<AB, _>(0.01, &m, &dev);
        let mut scalar = ScalarAdam::default();
        let mut x0 = ADAM_P0[0] as f64;
        for (g, expect) in ADAM_GRADS.iter().zip(ADAM_TRAJ) {
            let loss = (m.w.val() * Tensor::<AB, 1>::from_floats(*g, &dev)).sum();
            let grads = GradientsParams::from_grads(loss.backward(), &m);
            m = adam.step(m, grads);
            let got = tensor_to_vec(m.w.val());
            for (x, y) in got.iter().zip(expect) {
                assert!((*x as f64 - y).abs() < 2e-6, "{got:?} vs {expect:?}");
            }
            x0 = scalar.step(x0, g[0] as f64, 0.01);
            assert!((x0 - expect[0]).abs() < 1e-9);
        }
        // State round trip.
        let s = adam.state();
        assert_eq!(s.t, ADAM_GRADS.len() as u64);
        let mut other = Adam::<Flex>::for_module::<AB, _>(0.01, &m, &dev);
        other.load_state(&s, &dev, "adam").unwrap();
        assert_eq!(other.state(), s);
        let bad = AdamState {
            t: 1,
            m: vec![vec![0.0; 2]],
            v: vec![vec![0.0; 2]],
        };
        assert!(other.load_state(&bad, &dev, "adam").is_err());
    }

    #[test]
    fn export_import_and_soft_update() {
        let dev = Default::default();
        let a = One::<AB> {
            w: Param::from_tensor(Tensor::from_floats([1.0, 2.0], &dev).require_grad()),
        };
        let b = One::<Flex> {
            w: Param::from_tensor(Tensor::from_floats([3.0, -2.0], &dev)),
        };
        let t = soft_update::<AB, _>(&a, b, 0.25);
        // 0.25·a + 0.75·b.
        assert_eq!(tensor_to_vec(t.w.val()), vec![2.5, -1.0]);
        let blobs = export_params::<AB, _>(&a);
        assert_eq!(blobs[0].shape, vec![2]);
        let c = One::<AB> {
            w: Param::from_tensor(Tensor::zeros([2], &dev).require_grad()),
        };
        let c = import_params::<AB, _>(c, &blobs, &dev, "c").unwrap();
        assert_eq!(tensor_to_vec(c.w.val()), vec![1.0, 2.0]);
        assert!(c.w.val().is_require_grad());
        let bad = vec![ParamBlob {
            shape: vec![3],
            data: vec![0.0; 3],
        }];
        let e = import_params::<AB, _>(c, &bad, &dev, "c")
            .unwrap_err()
            .to_string();
        assert!(e.contains("shape"), "{e}");
    }
}
