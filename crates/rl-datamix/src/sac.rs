//! A generic continuous-action Soft Actor-Critic whose action is a point on the probability
//! simplex, on any burn autodiff backend.
//!
//! * **Policy**: an MLP maps the state to `μ, log σ ∈ R^{K−1}` (`log σ` squashed into
//!   `[log_std_min, log_std_max]` by tanh); `z = μ + σ ⊙ ε`, `ε ~ N(0, I)`; action
//!   `a = softmax([z, 0])` with the exact simplex log-density
//!   `log π(a|s) = Σ_j log N(z_j; μ_j, σ_j) − Σ_{i=1}^{K} log a_i` (see [`crate::simplex`]).
//! * **Critics**: twin MLPs `Q_1, Q_2 : (s, a) ↦ R^{d_r}` (`d_r = 1` for the scalar critic, `K` for
//!   a per-domain critic) with target copies `Q'_k` updated by `θ' ← τθ + (1 − τ)θ'`.
//! * **Critic loss**: `Σ_k mean (Q_k(s, a) − y)²` with
//!   `y = r + γ (min(Q'_1, Q'_2)(s', a') − α log π(a'|s'))`, `a' ~ π(·|s')` (a continuing task:
//!   no terminal mask).
//! * **Actor loss**: `mean_{batch} [α log π(ã|s) − mean_{d_r} min(Q_1, Q_2)(s, ã)]`, `ã`
//!   reparameterised.
//! * **Temperature**: `α = exp(log α)`, loss `−log α · mean(log π(ã|s) + H̄)` with target entropy
//!   `H̄ = −(K − 1)` by default.
//!
//! Every random draw (network initialisation, noise, replay sampling) comes from one seeded
//! ChaCha8 stream that is part of the checkpoint.

use burn::module::{Module, Param};
use burn::nn::Linear;
use burn::optim::GradientsParams;
use burn::tensor::activation::{log_softmax, relu};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorData};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::error::{DatamixError, Result};
use crate::params::{
    Adam, AdamState, ParamBlob, ScalarAdam, export_params, import_params, soft_update,
    tensor_to_vec,
};
use crate::stats::standard_normal;

/// A ReLU multi-layer perceptron.
#[derive(Module, Debug)]
pub struct Mlp<B: Backend> {
    layers: Vec<Linear<B>>,
}

/// A `Linear` initialised like PyTorch's default: weight and bias `U(−1/√d_in, 1/√d_in)`,
/// drawn from `rng` (weight stored `[d_in, d_out]`, burn's layout).
pub fn init_linear<B: Backend>(
    d_in: usize,
    d_out: usize,
    rng: &mut ChaCha8Rng,
    device: &B::Device,
) -> Linear<B> {
    let bound = 1.0 / (d_in as f32).sqrt();
    let w: Vec<f32> = (0..d_in * d_out)
        .map(|_| rng.random_range(-bound..bound))
        .collect();
    let b: Vec<f32> = (0..d_out)
        .map(|_| rng.random_range(-bound..bound))
        .collect();
    Linear {
        weight: Param::from_tensor(Tensor::from_data(TensorData::new(w, [d_in, d_out]), device)),
        bias: Some(Param::from_tensor(Tensor::from_data(
            TensorData::new(b, [d_out]),
            device,
        ))),
    }
}

impl<B: Backend> Mlp<B> {
    /// An MLP with layer widths `dims` (input, hidden…, output).
    pub fn new(dims: &[usize], rng: &mut ChaCha8Rng, device: &B::Device) -> Self {
        Self {
            layers: dims
                .windows(2)
                .map(|w| init_linear(w[0], w[1], rng, device))
                .collect(),
        }
    }

    /// `[b, d_in] → [b, d_out]`, ReLU between layers.
    pub fn forward(&self, mut x: Tensor<B, 2>) -> Tensor<B, 2> {
        let n = self.layers.len();
        for (i, l) in self.layers.iter().enumerate() {
            x = l.forward(x);
            if i + 1 < n {
                x = relu(x);
            }
        }
        x
    }
}

/// Twin Q networks.
#[derive(Module, Debug)]
pub struct TwinCritic<B: Backend> {
    q1: Mlp<B>,
    q2: Mlp<B>,
}

impl<B: Backend> TwinCritic<B> {
    /// `(min(Q_1, Q_2)(s, a), Q_1, Q_2)`, each `[b, d_r]`.
    pub fn forward(
        &self,
        s: Tensor<B, 2>,
        a: Tensor<B, 2>,
    ) -> (Tensor<B, 2>, Tensor<B, 2>, Tensor<B, 2>) {
        let x = Tensor::cat(vec![s, a], 1);
        let q1 = self.q1.forward(x.clone());
        let q2 = self.q2.forward(x);
        (q1.clone().min_pair(q2.clone()), q1, q2)
    }
}

/// SAC hyper-parameters. Defaults are the small-scale settings of hds.md §12.4.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SacConfig {
    /// Hidden width of actor and critics (64).
    pub hidden: usize,
    /// Number of hidden layers (2).
    pub hidden_layers: usize,
    /// Discount γ (0.95).
    pub gamma: f32,
    /// Polyak rate τ of the target critics (0.005).
    pub tau: f32,
    /// Adam learning rate of actor, critics and temperature (3e-4).
    pub lr: f32,
    /// Transitions per update (32).
    pub batch_size: usize,
    /// Replay capacity, FIFO (10 000).
    pub buffer_capacity: usize,
    /// Gradient updates per environment step (1).
    pub updates_per_step: usize,
    /// Initial temperature α (0.2).
    pub init_alpha: f32,
    /// Learn α towards the target entropy (true).
    pub learn_alpha: bool,
    /// Target entropy; `None` means `−(K − 1)`.
    pub target_entropy: Option<f32>,
    /// Lower bound of `log σ` (−5).
    pub log_std_min: f32,
    /// Upper bound of `log σ` (2).
    pub log_std_max: f32,
}

impl Default for SacConfig {
    fn default() -> Self {
        Self {
            hidden: 64,
            hidden_layers: 2,
            gamma: 0.95,
            tau: 0.005,
            lr: 3e-4,
            batch_size: 32,
            buffer_capacity: 10_000,
            updates_per_step: 1,
            init_alpha: 0.2,
            learn_alpha: true,
            target_entropy: None,
            log_std_min: -5.0,
            log_std_max: 2.0,
        }
    }
}

impl SacConfig {
    /// Checks ranges; `prefix` is the config path for messages.
    pub fn validate(&self, prefix: &str) -> Result<()> {
        let err = |f: &str, m: &str| Err(DatamixError::config(format!("{prefix}.{f}"), m));
        if self.hidden == 0 || self.hidden_layers == 0 {
            return err("hidden", "hidden width and hidden_layers must be >= 1");
        }
        if !(0.0..1.0).contains(&self.gamma) {
            return err("gamma", "must be in [0, 1)");
        }
        if !(self.tau > 0.0 && self.tau <= 1.0) {
            return err("tau", "must be in (0, 1]");
        }
        if !(self.lr > 0.0 && self.lr.is_finite()) {
            return err("lr", "must be a finite number > 0");
        }
        if self.batch_size == 0 || self.buffer_capacity < self.batch_size {
            return err("batch_size", "must be >= 1 and at most buffer_capacity");
        }
        if !(self.init_alpha > 0.0 && self.init_alpha.is_finite()) {
            return err("init_alpha", "must be a finite number > 0");
        }
        if self.log_std_min.is_nan()
            || self.log_std_max.is_nan()
            || self.log_std_min >= self.log_std_max
        {
            return err("log_std_min", "must be below log_std_max");
        }
        Ok(())
    }
}

/// One stored transition `(s, a, r, s')`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Transition {
    /// State the action was chosen in.
    pub state: Vec<f32>,
    /// The action (a mixture).
    pub action: Vec<f32>,
    /// Reward (length `d_r`).
    pub reward: Vec<f32>,
    /// Next state.
    pub next_state: Vec<f32>,
}

/// FIFO replay buffer with uniform sampling.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplayBuffer {
    capacity: usize,
    items: Vec<Transition>,
    next: usize,
}

impl ReplayBuffer {
    /// An empty buffer holding at most `capacity` transitions.
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            items: Vec::new(),
            next: 0,
        }
    }

    /// Stores `t`, overwriting the oldest transition when full.
    pub fn push(&mut self, t: Transition) {
        if self.items.len() < self.capacity {
            self.items.push(t);
        } else {
            self.items[self.next] = t;
        }
        self.next = (self.next + 1) % self.capacity;
    }

    /// Number of stored transitions.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// `n` transitions drawn uniformly with replacement.
    pub fn sample<'a>(&'a self, n: usize, rng: &mut ChaCha8Rng) -> Vec<&'a Transition> {
        (0..n)
            .map(|_| &self.items[rng.random_range(0..self.items.len())])
            .collect()
    }
}

/// Losses and temperature of one update.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SacLosses {
    /// Critic loss (sum of both MSEs).
    pub critic: f32,
    /// Actor loss.
    pub actor: f32,
    /// Temperature α after the update.
    pub alpha: f32,
    /// Mean `log π` of the reparameterised batch actions.
    pub log_prob: f32,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct SacState {
    actor: Vec<ParamBlob>,
    critic: Vec<ParamBlob>,
    target: Vec<ParamBlob>,
    actor_opt: AdamState,
    critic_opt: AdamState,
    log_alpha: f64,
    alpha_opt: ScalarAdam,
    buffer: ReplayBuffer,
    rng: ChaCha8Rng,
    updates: u64,
}

/// The SAC agent.
pub struct Sac<B: AutodiffBackend> {
    cfg: SacConfig,
    state_dim: usize,
    k: usize,
    reward_dim: usize,
    actor: Mlp<B>,
    critic: TwinCritic<B>,
    target: TwinCritic<B::InnerBackend>,
    actor_opt: Adam<B::InnerBackend>,
    critic_opt: Adam<B::InnerBackend>,
    log_alpha: f64,
    alpha_opt: ScalarAdam,
    buffer: ReplayBuffer,
    rng: ChaCha8Rng,
    updates: u64,
    device: B::Device,
}

/// `(a, log π(a|s))` for a batch: `a = softmax([μ + σ ⊙ ε, 0])`, shapes `[b, K]` and `[b]`.
fn sample_actions<B: Backend>(
    actor: &Mlp<B>,
    states: Tensor<B, 2>,
    noise: Tensor<B, 2>,
    cfg: &SacConfig,
) -> (Tensor<B, 2>, Tensor<B, 1>) {
    let out = actor.forward(states);
    let [b, two_k1] = out.dims();
    let k1 = two_k1 / 2;
    let mu = out.clone().narrow(1, 0, k1);
    let raw = out.narrow(1, k1, k1);
    let (lo, hi) = (cfg.log_std_min as f64, cfg.log_std_max as f64);
    let log_std = raw
        .tanh()
        .add_scalar(1.0)
        .mul_scalar(0.5 * (hi - lo))
        .add_scalar(lo);
    let z = mu + log_std.clone().exp() * noise.clone();
    let device = z.device();
    let zfull = Tensor::cat(vec![z, Tensor::zeros([b, 1], &device)], 1);
    let log_a = log_softmax(zfull, 1);
    let half_ln_2pi = 0.5 * (2.0 * std::f64::consts::PI).ln();
    let gauss = (noise.square().mul_scalar(-0.5) - log_std).sub_scalar(half_ln_2pi);
    let log_prob = gauss.sum_dim(1) - log_a.clone().sum_dim(1);
    (log_a.exp(), log_prob.reshape([b]))
}

impl<B: AutodiffBackend> Sac<B> {
    /// A fresh agent for `state_dim`-dimensional states, actions on the `k`-simplex and
    /// `reward_dim`-dimensional rewards (1 or `k`).
    pub fn new(
        cfg: SacConfig,
        state_dim: usize,
        k: usize,
        reward_dim: usize,
        seed: u64,
        device: B::Device,
    ) -> Result<Self> {
        cfg.validate("sac")?;
        if k < 2 || state_dim == 0 || reward_dim == 0 {
            return Err(DatamixError::config(
                "sac",
                format!(
                    "need k >= 2, state_dim >= 1, reward_dim >= 1 (got {k}, {state_dim}, {reward_dim})"
                ),
            ));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let h = cfg.hidden;
        let dims = |i: usize, o: usize| {
            let mut d = vec![i];
            d.extend(std::iter::repeat_n(h, cfg.hidden_layers));
            d.push(o);
            d
        };
        let actor = Mlp::new(&dims(state_dim, 2 * (k - 1)), &mut rng, &device);
        let critic = TwinCritic {
            q1: Mlp::new(&dims(state_dim + k, reward_dim), &mut rng, &device),
            q2: Mlp::new(&dims(state_dim + k, reward_dim), &mut rng, &device),
        };
        let target = burn::module::AutodiffModule::valid(&critic);
        let lr = cfg.lr as f64;
        let actor_opt = Adam::for_module::<B, _>(lr, &actor, &device);
        let critic_opt = Adam::for_module::<B, _>(lr, &critic, &device);
        Ok(Self {
            log_alpha: (cfg.init_alpha as f64).ln(),
            buffer: ReplayBuffer::new(cfg.buffer_capacity),
            cfg,
            state_dim,
            k,
            reward_dim,
            actor,
            critic,
            target,
            actor_opt,
            critic_opt,
            alpha_opt: ScalarAdam::default(),
            rng,
            updates: 0,
            device,
        })
    }

    /// Current temperature α.
    pub fn alpha(&self) -> f64 {
        self.log_alpha.exp()
    }

    /// Number of gradient updates done.
    pub fn updates(&self) -> u64 {
        self.updates
    }

    /// The replay buffer.
    pub fn buffer(&self) -> &ReplayBuffer {
        &self.buffer
    }

    /// The configuration.
    pub fn config(&self) -> &SacConfig {
        &self.cfg
    }

    fn target_entropy(&self) -> f64 {
        self.cfg
            .target_entropy
            .map(|v| v as f64)
            .unwrap_or(-((self.k - 1) as f64))
    }

    fn check_state(&self, s: &[f32]) -> Result<()> {
        if s.len() != self.state_dim || s.iter().any(|v| !v.is_finite()) {
            return Err(DatamixError::Stats(format!(
                "agent state must have {} finite values, got {}",
                self.state_dim,
                s.len()
            )));
        }
        Ok(())
    }

    fn noise(&mut self, rows: usize) -> Vec<f32> {
        (0..rows * (self.k - 1))
            .map(|_| standard_normal(&mut self.rng) as f32)
            .collect()
    }

    fn matrix<BB: Backend<Device = B::Device>>(
        &self,
        rows: usize,
        cols: usize,
        data: Vec<f32>,
    ) -> Tensor<BB, 2> {
        Tensor::from_data(TensorData::new(data, [rows, cols]), &self.device)
    }

    /// A mixture sampled from `π(·|state)` (uses the agent's random stream).
    pub fn act(&mut self, state: &[f32]) -> Result<Vec<f32>> {
        self.check_state(state)?;
        let noise = self.noise(1);
        let actor = burn::module::AutodiffModule::valid(&self.actor);
        let s = self.matrix::<B::InnerBackend>(1, self.state_dim, state.to_vec());
        let e = self.matrix::<B::InnerBackend>(1, self.k - 1, noise);
        let (a, _) = sample_actions(&actor, s, e, &self.cfg);
        Ok(tensor_to_vec(a))
    }

    /// The policy's mean-logit mixture `softmax([μ(s), 0])` (no randomness).
    pub fn act_deterministic(&self, state: &[f32]) -> Result<Vec<f32>> {
        self.check_state(state)?;
        let actor = burn::module::AutodiffModule::valid(&self.actor);
        let s = self.matrix::<B::InnerBackend>(1, self.state_dim, state.to_vec());
        let zeros = Tensor::zeros([1, self.k - 1], &s.device());
        // With zero noise, z = μ.
        let (a, _) = sample_actions(&actor, s, zeros, &self.cfg);
        Ok(tensor_to_vec(a))
    }

    /// `log π(a|s)` of a mixture under the current policy (exact simplex density).
    pub fn log_prob(&self, state: &[f32], action: &[f32]) -> Result<f64> {
        self.check_state(state)?;
        let actor = burn::module::AutodiffModule::valid(&self.actor);
        let s = self.matrix::<B::InnerBackend>(1, self.state_dim, state.to_vec());
        let out = tensor_to_vec(actor.forward(s));
        let k1 = self.k - 1;
        let (lo, hi) = (self.cfg.log_std_min as f64, self.cfg.log_std_max as f64);
        let mu: Vec<f64> = out[..k1].iter().map(|&v| v as f64).collect();
        let ls: Vec<f64> = out[k1..]
            .iter()
            .map(|&v| lo + 0.5 * (hi - lo) * ((v as f64).tanh() + 1.0))
            .collect();
        let a: Vec<f64> = action.iter().map(|&v| v as f64).collect();
        Ok(crate::simplex::alr_log_density(&a, &mu, &ls))
    }

    /// Stores a transition (checked for shapes and finite values).
    pub fn push(&mut self, t: Transition) -> Result<()> {
        self.check_state(&t.state)?;
        self.check_state(&t.next_state)?;
        if t.action.len() != self.k || t.reward.len() != self.reward_dim {
            return Err(DatamixError::Stats(format!(
                "transition needs a {}-action and a {}-reward, got {} and {}",
                self.k,
                self.reward_dim,
                t.action.len(),
                t.reward.len()
            )));
        }
        if t.reward.iter().chain(&t.action).any(|v| !v.is_finite()) {
            return Err(DatamixError::Stats("non-finite reward or action".into()));
        }
        self.buffer.push(t);
        Ok(())
    }

    /// One SAC gradient update (critics, actor, temperature, targets); `None` while the buffer
    /// holds fewer than `batch_size` transitions.
    pub fn update(&mut self) -> Option<SacLosses> {
        let bs = self.cfg.batch_size;
        if self.buffer.len() < bs {
            return None;
        }
        let (sd, k, rd) = (self.state_dim, self.k, self.reward_dim);
        let (mut s, mut a, mut r, mut s2) = (
            Vec::with_capacity(bs * sd),
            Vec::with_capacity(bs * k),
            Vec::with_capacity(bs * rd),
            Vec::with_capacity(bs * sd),
        );
        for t in self.buffer.sample(bs, &mut self.rng) {
            s.extend_from_slice(&t.state);
            a.extend_from_slice(&t.action);
            r.extend_from_slice(&t.reward);
            s2.extend_from_slice(&t.next_state);
        }
        let noise_next = self.noise(bs);
        let noise_now = self.noise(bs);
        let alpha = self.alpha();
        let gamma = self.cfg.gamma as f64;

        // Critic target on the inner backend (no gradients).
        let y = {
            let actor = burn::module::AutodiffModule::valid(&self.actor);
            let s2 = self.matrix::<B::InnerBackend>(bs, sd, s2);
            let e = self.matrix::<B::InnerBackend>(bs, k - 1, noise_next);
            let (a2, logp2) = sample_actions(&actor, s2.clone(), e, &self.cfg);
            let (qmin, _, _) = self.target.forward(s2, a2);
            let soft = qmin - logp2.unsqueeze_dim::<2>(1).mul_scalar(alpha);
            self.matrix::<B::InnerBackend>(bs, rd, r) + soft.mul_scalar(gamma)
        };
        let s = self.matrix::<B>(bs, sd, s);
        let a = self.matrix::<B>(bs, k, a);
        let (_, q1, q2) = self.critic.forward(s.clone(), a);
        let y = Tensor::<B, 2>::from_inner(y);
        let critic_loss = (q1 - y.clone()).square().mean() + (q2 - y).square().mean();
        let grads = GradientsParams::from_grads(critic_loss.backward(), &self.critic);
        self.critic = self.critic_opt.step(self.critic.clone(), grads);

        // Actor.
        let e = self.matrix::<B>(bs, k - 1, noise_now);
        let (a_new, logp) = sample_actions(&self.actor, s.clone(), e, &self.cfg);
        let (qmin, _, _) = self.critic.forward(s, a_new);
        let actor_loss = (logp.clone().mul_scalar(alpha) - qmin.mean_dim(1).reshape([bs])).mean();
        let grads = GradientsParams::from_grads(actor_loss.backward(), &self.actor);
        self.actor = self.actor_opt.step(self.actor.clone(), grads);

        // Temperature: d/d(log α) of −log α · mean(log π + H̄) is −mean(log π + H̄).
        let mean_logp = tensor_to_vec(logp.inner().mean())[0] as f64;
        if self.cfg.learn_alpha {
            let g = -(mean_logp + self.target_entropy());
            self.log_alpha = self.alpha_opt.step(self.log_alpha, g, self.cfg.lr as f64);
        }

        self.target = soft_update::<B, _>(&self.critic, self.target.clone(), self.cfg.tau as f64);
        self.updates += 1;
        Some(SacLosses {
            critic: tensor_to_vec(critic_loss.inner())[0],
            actor: tensor_to_vec(actor_loss.inner())[0],
            alpha: self.alpha() as f32,
            log_prob: mean_logp as f32,
        })
    }

    /// The full agent state as JSON-serialisable data.
    pub fn checkpoint(&self) -> Result<serde_json::Value> {
        let st = SacState {
            actor: export_params::<B, _>(&self.actor),
            critic: export_params::<B, _>(&self.critic),
            target: export_params::<B::InnerBackend, _>(&self.target),
            actor_opt: self.actor_opt.state(),
            critic_opt: self.critic_opt.state(),
            log_alpha: self.log_alpha,
            alpha_opt: self.alpha_opt.clone(),
            buffer: self.buffer.clone(),
            rng: self.rng.clone(),
            updates: self.updates,
        };
        serde_json::to_value(st).map_err(|e| DatamixError::Checkpoint(e.to_string()))
    }

    /// Restores [`Sac::checkpoint`] into an agent built with the same configuration.
    pub fn restore(&mut self, value: &serde_json::Value) -> Result<()> {
        let st: SacState = serde_json::from_value(value.clone())
            .map_err(|e| DatamixError::Checkpoint(format!("SAC state: {e}")))?;
        let dev = self.device.clone();
        let actor = import_params::<B, _>(self.actor.clone(), &st.actor, &dev, "actor")?;
        let critic = import_params::<B, _>(self.critic.clone(), &st.critic, &dev, "critic")?;
        let target =
            import_params::<B::InnerBackend, _>(self.target.clone(), &st.target, &dev, "target")?;
        let mut actor_opt = self.actor_opt.clone();
        actor_opt.load_state(&st.actor_opt, &dev, "actor optimizer")?;
        let mut critic_opt = self.critic_opt.clone();
        critic_opt.load_state(&st.critic_opt, &dev, "critic optimizer")?;
        let bad = st.buffer.items.iter().any(|t| {
            t.state.len() != self.state_dim
                || t.next_state.len() != self.state_dim
                || t.action.len() != self.k
                || t.reward.len() != self.reward_dim
        });
        if bad
            || st.buffer.items.len() > st.buffer.capacity
            || st.buffer.capacity != self.cfg.buffer_capacity
            || st.buffer.next >= st.buffer.capacity.max(1)
        {
            return Err(DatamixError::Checkpoint(
                "replay buffer does not match the agent's dimensions or capacity".into(),
            ));
        }
        if !st.log_alpha.is_finite() {
            return Err(DatamixError::Checkpoint("log_alpha is not finite".into()));
        }
        self.actor = actor;
        self.critic = critic;
        self.target = target;
        self.actor_opt = actor_opt;
        self.critic_opt = critic_opt;
        self.log_alpha = st.log_alpha;
        self.alpha_opt = st.alpha_opt;
        self.buffer = st.buffer;
        self.rng = st.rng;
        self.updates = st.updates;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::{Autodiff, Flex};

    type AB = Autodiff<Flex>;

    /// The batch log-density computed with tensors equals the closed form of
    /// `simplex::alr_log_density` for the same μ, σ and sampled action.
    #[test]
    fn tensor_log_prob_matches_closed_form() {
        let dev = Default::default();
        let mut sac = Sac::<AB>::new(SacConfig::default(), 3, 4, 1, 3, dev).unwrap();
        let s = [0.3f32, -1.0, 2.0];
        let noise = sac.noise(1);
        let actor = burn::module::AutodiffModule::valid(&sac.actor);
        let st = sac.matrix::<Flex>(1, 3, s.to_vec());
        let e = sac.matrix::<Flex>(1, 3, noise);
        let (a, lp) = sample_actions(&actor, st, e, &sac.cfg);
        let a = tensor_to_vec(a);
        let lp = tensor_to_vec(lp)[0] as f64;
        assert!((a.iter().sum::<f32>() - 1.0).abs() < 1e-5);
        let closed = sac.log_prob(&s, &a).unwrap();
        assert!(
            (lp - closed).abs() < 1e-3 * closed.abs().max(1.0),
            "{lp} vs {closed}"
        );
    }

    /// Trains SAC on a 3-domain continuous simplex bandit (γ = 0, constant state) with reward
    /// `−10 ‖a − a*‖²`, a* = (0.6, 0.3, 0.1); returns (initial mean-logit mixture, Monte-Carlo
    /// mean action after training, mean log π of the last update).
    fn train_bandit(learn_alpha: bool, init_alpha: f32) -> (Vec<f32>, [f32; 3], f32) {
        let dev = Default::default();
        let cfg = SacConfig {
            gamma: 0.0,
            lr: 3e-3,
            batch_size: 64,
            learn_alpha,
            init_alpha,
            ..SacConfig::default()
        };
        let target = [0.6f32, 0.3, 0.1];
        let mut sac = Sac::<AB>::new(cfg, 1, 3, 1, 11, dev).unwrap();
        let s = vec![1.0f32];
        let start = sac.act_deterministic(&s).unwrap();
        let mut last = SacLosses::default();
        for _ in 0..1500 {
            let a = sac.act(&s).unwrap();
            let r: f32 = -10.0
                * a.iter()
                    .zip(target)
                    .map(|(x, y)| (x - y).powi(2))
                    .sum::<f32>();
            sac.push(Transition {
                state: s.clone(),
                action: a,
                reward: vec![r],
                next_state: s.clone(),
            })
            .unwrap();
            last = sac.update().unwrap_or(last);
        }
        let mut mean = [0.0f32; 3];
        for _ in 0..2000 {
            let a = sac.act(&s).unwrap();
            mean.iter_mut().zip(a).for_each(|(e, v)| *e += v / 2000.0);
        }
        (start, mean, last.log_prob)
    }

    /// `E r = −10(‖E a − a*‖² + tr Cov a)` is maximised by policies whose mean action is a*; with
    /// a small fixed temperature (α = 0.01, entropy bonus negligible against the reward) the
    /// Monte-Carlo mean of SAC's actions must end up at a*.
    #[test]
    fn sac_learns_the_optimum_of_a_simplex_bandit() {
        let target = [0.6f32, 0.3, 0.1];
        let dist = |m: &[f32]| {
            m.iter()
                .zip(target)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, f32::max)
        };
        let (start, end, _) = train_bandit(false, 0.01);
        assert!(
            dist(&start) > 0.15,
            "start {start:?} already at the optimum"
        );
        assert!(dist(&end) < 0.04, "start {start:?} end {end:?}");
    }

    /// With the learned temperature, α moves until the policy's entropy meets the target
    /// `H̄ = −(K − 1) = −2`, i.e. the mean log π of the batch actions approaches 2.
    #[test]
    fn learned_temperature_reaches_the_target_entropy() {
        let (_, _, log_prob) = train_bandit(true, 0.2);
        assert!((log_prob - 2.0).abs() < 0.3, "mean log pi {log_prob}");
    }

    #[test]
    fn checkpoint_restores_identical_actions() {
        let dev = Default::default();
        let cfg = SacConfig {
            batch_size: 4,
            ..SacConfig::default()
        };
        let mut sac = Sac::<AB>::new(cfg.clone(), 2, 3, 3, 5, dev).unwrap();
        for i in 0..10 {
            let s = vec![i as f32 * 0.1, 1.0];
            let a = sac.act(&s).unwrap();
            sac.push(Transition {
                state: s.clone(),
                action: a,
                reward: vec![1.0, 0.0, -1.0],
                next_state: s,
            })
            .unwrap();
            sac.update();
        }
        let text = serde_json::to_string(&sac.checkpoint().unwrap()).unwrap();
        let mut other = Sac::<AB>::new(cfg, 2, 3, 3, 99, dev).unwrap();
        other
            .restore(&serde_json::from_str(&text).unwrap())
            .unwrap();
        for _ in 0..3 {
            assert_eq!(sac.update(), other.update());
            let s = [0.5f32, -0.5];
            assert_eq!(sac.act(&s).unwrap(), other.act(&s).unwrap());
        }
        let mut wrong = Sac::<AB>::new(SacConfig::default(), 2, 4, 1, 0, dev).unwrap();
        assert!(
            wrong
                .restore(&serde_json::from_str(&text).unwrap())
                .is_err()
        );
        assert!(sac.act(&[1.0]).is_err());
    }
}
