//! The training pass with a memory plan: per-token log-probs (and entropies) of a window whose
//! backward recomputes what the forward did not keep.
//!
//! The plain pass ([`CausalLm::token_logprobs_from_tempered`] under autodiff) keeps every chunk's
//! `[vocab, rows]` softmax numerators and every layer's activations until the backward: for 8
//! responses of 1,024 tokens of Qwen3's 151,936-token vocabulary that is 5 GB of logits alone.
//! With a [`MemoryPlan`], the forward computes the values without an autodiff graph above the
//! final hidden states; the loss is formed on them as autodiff leaves, and
//! [`WindowPass::backward`] then (Liger's chunked head and PyTorch's checkpointing, done by hand):
//!
//! 1. back-propagates the loss to the leaves: `g_lp = ∂L/∂log p` and `g_H = ∂L/∂H` per entry
//!    (any loss: token-level, sequence-level as GSPO, with KL or an entropy bonus);
//! 2. for each chunk of `logprob_chunk` window rows, recomputes the final norm, the LM head and
//!    the log-softmax from the stored hidden rows `h` with autodiff and back-propagates the
//!    surrogate `Σ g_lp · log p + g_H · H`, whose gradient with respect to the head's weights and
//!    to `h` is exactly the loss's (the chain rule through the leaves);
//! 3. back-propagates `Σ g_h · h` into the decoder stack: through the graph kept by the forward
//!    ([`Checkpointing::None`]), or layer by layer from each layer's stored input, recomputing
//!    the layer with autodiff and passing its input gradient down ([`Checkpointing::Layers`]),
//!    then into the embedding.
//!
//! Every parameter gradient is the plain pass's up to float summation order; the memory held at
//! once is one chunk's logits (and, with `Layers`, one layer's activations plus the `[B·L, H]`
//! input of each layer). The head runs forward twice and each layer once more with `Layers`.

use burn::module::AutodiffModule;
use burn::optim::{GradientsAccumulator, GradientsParams};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Bool, IndexingUpdateOp, Int, Tensor, TensorData};

use super::CausalLm;
use super::head::{
    LOGPROB_CHUNK_ELEMS, check_temperature, chunk_rows, padding_flags, window_index, zero_padding,
};
use super::mask::AttentionMask;
use super::shared_prompt::PromptGroups;
use crate::error::ModelError;
use crate::logprobs::{EntropyMode, TokenLogProbs};

/// Whether the backward recomputes the decoder layers instead of keeping their activations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Checkpointing {
    /// Every layer's activations are kept for the backward (the plain graph).
    #[default]
    None,
    /// Only each decoder layer's input is kept; the backward recomputes the layer
    /// (HF's `gradient_checkpointing_enable()`, one checkpoint per decoder layer).
    Layers,
}

/// How a training forward and backward are computed: what they trade for memory, and whether
/// shared prompts are computed once. The default is the plain autodiff pass.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryPlan {
    /// Window positions whose logits are computed (and, in the backward, recomputed) at once;
    /// 0: the plain head, whose graph keeps the logits of every position until the backward.
    pub logprob_chunk: usize,
    /// Per-layer activation checkpointing.
    pub checkpointing: Checkpointing,
    /// Sequences with the same prompt share one computation of it ([`CausalLm::train_window`],
    /// `crate::decoder::shared_prompt`): fewer FLOPs and less memory for groups of responses,
    /// the same values up to float summation order. Needs `checkpointing = None` unless
    /// `packing`.
    pub shared_prompts: bool,
    /// Sequences laid end to end in packed rows, without padding between them
    /// ([`CausalLm::train_window`], `crate::decoder::packing`), each prompt once per group with
    /// `shared_prompts`: the same values up to float summation order, no FLOPs on padding.
    pub packing: bool,
}

impl MemoryPlan {
    /// The plain autodiff pass (no chunked backward, no checkpointing, no shared prompts).
    pub fn is_plain(&self) -> bool {
        *self == Self::default()
    }
}

/// The log-probs of one training forward and what its backward needs.
pub struct WindowPass<B: AutodiffBackend> {
    /// What the loss reads: `[batch, width]` log-probs (and entropies), as
    /// [`CausalLm::token_logprobs_from_tempered`] returns them. Under a memory plan they are autodiff
    /// leaves: back-propagate a loss of them with [`WindowPass::backward`], not `loss.backward()`.
    pub out: TokenLogProbs<B>,
    deferred: Option<Deferred<B>>,
}

/// The stored state of a pass under a memory plan.
struct Deferred<B: AutodiffBackend> {
    model: CausalLm<B>,
    /// Entries whose token or next token is padding (their gradient is 0, as in the plain pass).
    padding: Option<Tensor<B::InnerBackend, 2, Bool>>,
    /// The window entries the head computes (those not padding, in row-major order), when some
    /// are padding: the head's rows are these entries of the `[n = b · width]` window.
    computed: Option<Tensor<B::InnerBackend, 1, Int>>,
    /// The final hidden states before the final norm of the computed entries, `[m, H]`, and
    /// their targets.
    rows: Tensor<B::InnerBackend, 2>,
    targets: Tensor<B::InnerBackend, 1, Int>,
    /// Window rows per head chunk.
    chunk: usize,
    temperature: f32,
    trunk: Trunk<B>,
}

/// How the gradient of the window's hidden rows reaches the decoder stack.
enum Trunk<B: AutodiffBackend> {
    /// The window rows with the forward's autodiff graph below them.
    Graph(Tensor<B, 2>),
    /// Each layer's input, the ids and mask to rebuild the attention step, and where the window
    /// rows sit among the `[b · l, H]` positions.
    Layers {
        ids: Tensor<B, 2, Int>,
        mask: Option<AttentionMask>,
        inputs: Vec<Tensor<B::InnerBackend, 2>>,
        rows: Tensor<B::InnerBackend, 1, Int>,
        shape: [usize; 2],
    },
}

impl<B: AutodiffBackend> From<TokenLogProbs<B>> for WindowPass<B> {
    /// The plain pass: `out` carries its whole autodiff graph.
    fn from(out: TokenLogProbs<B>) -> Self {
        Self {
            out,
            deferred: None,
        }
    }
}

impl<B: AutodiffBackend> CausalLm<B> {
    /// The training pass of host sequences under `plan`: [`Self::window_pass`] of their
    /// [`Self::window_batch`], or, with `plan.shared_prompts` and at least two sequences with
    /// the same prefix `seq[..starts[r]]`, the shared-prompt pass (each distinct prefix computed
    /// once, `crate::decoder::shared_prompt`), whose values and gradients are the same up to
    /// float summation order. The window may reach past a sequence's end, as in
    /// [`Self::window_batch`]; those entries are 0.
    ///
    /// With `plan.packing`, the sequences go in packed rows instead (`crate::decoder::packing`,
    /// with shared prompts or without), with the same values and gradients up to float
    /// summation order and any checkpointing.
    ///
    /// Errors ([`ModelError::InvalidInput`]): as [`Self::window_pass`], and shared prompts with
    /// `checkpointing = Layers` without packing (per-layer recomputation of a prefix shared
    /// through the KV cache is not implemented).
    #[allow(clippy::too_many_arguments)]
    pub fn train_window(
        &self,
        seqs: &[Vec<u32>],
        starts: &[usize],
        width: usize,
        entropy: EntropyMode,
        temperature: f32,
        plan: MemoryPlan,
    ) -> Result<WindowPass<B>, ModelError> {
        if plan.packing {
            return self.packed_pass(seqs, starts, width, entropy, temperature, plan);
        }
        let groups = (plan.shared_prompts
            && seqs.len() == starts.len()
            && seqs.iter().zip(starts).all(|(q, &s)| s <= q.len()))
        .then(|| PromptGroups::of(seqs, starts))
        .filter(PromptGroups::shares);
        let Some(groups) = groups else {
            let (ids, mask) = self.window_batch(seqs, starts, width)?;
            return self.window_pass(ids, Some(&mask), starts, width, entropy, temperature, plan);
        };
        check_temperature(temperature)?;
        if plan.checkpointing != Checkpointing::None {
            return Err(ModelError::InvalidInput(
                "shared prompts are computed with checkpointing = none: per-layer \
                 recomputation of a shared prompt is not implemented"
                    .to_string(),
            ));
        }
        let rows = self.shared_window_rows(seqs, starts, width, &groups)?;
        let b = seqs.len();
        let mask = Some(&rows.suffix_mask);
        if plan.logprob_chunk == 0 {
            let (lp, ent) = self.head_logprobs(
                rows.hidden,
                rows.targets,
                entropy,
                LOGPROB_CHUNK_ELEMS,
                temperature,
            );
            return Ok(WindowPass::from(zero_padding(
                lp,
                ent,
                b,
                width,
                mask,
                |_| 0,
            )));
        }
        let padding = padding_flags(b, width, mask, |_| 0);
        Ok(self.deferred_pass(
            rows.hidden.clone().inner(),
            Trunk::Graph(rows.hidden),
            rows.targets.inner(),
            padding,
            [b, width],
            entropy,
            temperature,
            plan.logprob_chunk,
        ))
    }

    /// [`Self::token_logprobs_from_tempered`] for training under `plan`: the same values (within
    /// float summation order), with the backward of [`WindowPass::backward`]. The plain plan
    /// is exactly [`Self::token_logprobs_from_tempered`]. A tensor batch has no host sequences to
    /// share prompts or pack: `plan.shared_prompts` and `plan.packing` are read by
    /// [`Self::train_window`] and ignored here.
    #[allow(clippy::too_many_arguments)]
    pub fn window_pass(
        &self,
        input_ids: Tensor<B, 2, Int>,
        mask: Option<&AttentionMask>,
        starts: &[usize],
        width: usize,
        entropy: EntropyMode,
        temperature: f32,
        plan: MemoryPlan,
    ) -> Result<WindowPass<B>, ModelError> {
        let plan = MemoryPlan {
            shared_prompts: false,
            packing: false,
            ..plan
        };
        if plan.is_plain() {
            return self
                .token_logprobs_from_tempered(input_ids, mask, starts, width, entropy, temperature)
                .map(WindowPass::from);
        }
        check_temperature(temperature)?;
        let [b, l] = input_ids.dims();
        let (rows, next) = window_index(b, l, starts, width)?;
        let next = Tensor::<B::InnerBackend, 1, Int>::from_data(
            TensorData::new(next, [b * width]),
            &self.device(),
        );
        let targets = input_ids.clone().inner().reshape([b * l]).select(0, next);
        let padding = padding_flags(b, width, mask, |r| starts[r]);
        self.trunk_pass(
            input_ids,
            mask,
            rows,
            targets,
            padding,
            [b, width],
            entropy,
            temperature,
            plan,
        )
    }

    /// The pass under a memory plan of the `[b, width]` window whose entries are the positions
    /// `rows` (row-major indices into `input_ids`' `[batch · seq]` positions) with their
    /// `targets`: the decoder stack as `plan.checkpointing` keeps it, then [`Self::deferred_pass`].
    #[allow(clippy::too_many_arguments)]
    pub(super) fn trunk_pass(
        &self,
        input_ids: Tensor<B, 2, Int>,
        mask: Option<&AttentionMask>,
        rows: Vec<i64>,
        targets: Tensor<B::InnerBackend, 1, Int>,
        padding: Option<Vec<bool>>,
        [b, width]: [usize; 2],
        entropy: EntropyMode,
        temperature: f32,
        plan: MemoryPlan,
    ) -> Result<WindowPass<B>, ModelError> {
        let [batch, l] = input_ids.dims();
        let hidden = self.config.hidden_size;
        let inner = self.valid();
        let rows = Tensor::<B::InnerBackend, 1, Int>::from_data(
            TensorData::new(rows, [b * width]),
            &self.device(),
        );
        let ids_inner = input_ids.clone().inner();
        let (h_rows, trunk) = match plan.checkpointing {
            Checkpointing::None => {
                let h = self.hidden_states(input_ids, mask, None)?;
                let h = h
                    .reshape([batch * l, hidden])
                    .select(0, Tensor::from_inner(rows));
                (h.clone().inner(), Trunk::Graph(h))
            }
            Checkpointing::Layers => {
                let mut inputs = Vec::with_capacity(self.layers.len());
                let h = inner.hidden_states_keeping(ids_inner, mask, None, Some(&mut inputs))?;
                let h = h.reshape([batch * l, hidden]).select(0, rows.clone());
                let trunk = Trunk::Layers {
                    ids: input_ids,
                    mask: mask.cloned(),
                    inputs,
                    rows,
                    shape: [batch, l],
                };
                (h, trunk)
            }
        };
        Ok(self.deferred_pass(
            h_rows,
            trunk,
            targets,
            padding,
            [b, width],
            entropy,
            temperature,
            plan.logprob_chunk,
        ))
    }

    /// The values of a pass under a memory plan from the window's hidden rows `h_rows` (`[n =
    /// b · width, H]`, no graph) and their targets, with what its backward needs: the head in
    /// chunks of `logprob_chunk` rows (0: one chunk), the log-probs (and a differentiable
    /// entropy) as autodiff leaves. The head computes only the entries that are not `padding`
    /// (row-major `[n]` flags): a padding entry's log-prob is 0 and its gradient 0 whatever its
    /// row holds, so the rows of responses shorter than the window cost no head FLOPs — in a
    /// batch of replies of very different lengths, most of the window.
    #[allow(clippy::too_many_arguments)]
    fn deferred_pass(
        &self,
        h_rows: Tensor<B::InnerBackend, 2>,
        trunk: Trunk<B>,
        targets: Tensor<B::InnerBackend, 1, Int>,
        padding: Option<Vec<bool>>,
        [b, width]: [usize; 2],
        entropy: EntropyMode,
        temperature: f32,
        logprob_chunk: usize,
    ) -> WindowPass<B> {
        let n = b * width;
        let vocab = self.config.vocab_size;
        let device = h_rows.device();
        let computed = padding.as_ref().and_then(|p| {
            let keep: Vec<i64> = (0..n as i64).filter(|&i| !p[i as usize]).collect();
            let m = keep.len();
            (m > 0).then(|| {
                Tensor::<B::InnerBackend, 1, Int>::from_data(TensorData::new(keep, [m]), &device)
            })
        });
        let (h_rows, targets) = match &computed {
            Some(c) => (h_rows.select(0, c.clone()), targets.select(0, c.clone())),
            None => (h_rows, targets),
        };
        let m = h_rows.dims()[0];
        let chunk = if logprob_chunk == 0 {
            m
        } else {
            chunk_rows(m, vocab, logprob_chunk.saturating_mul(vocab))
        };
        let values_mode = match entropy {
            EntropyMode::None => EntropyMode::None,
            _ => EntropyMode::Detached,
        };
        let (lp, ent) = self.valid().head_logprobs(
            h_rows.clone(),
            targets.clone(),
            values_mode,
            chunk.saturating_mul(vocab),
            temperature,
        );
        let padding = padding.map(|p| Tensor::from_data(TensorData::new(p, [b, width]), &device));
        let zeroed = |t: Tensor<B::InnerBackend, 1>| {
            let t = match &computed {
                Some(c) => Tensor::zeros([n], (&device, t.dtype())).select_assign(
                    0,
                    c.clone(),
                    t,
                    IndexingUpdateOp::Add,
                ),
                None => t,
            };
            let t = t.reshape([b, width]);
            match &padding {
                Some(p) => t.mask_fill(p.clone(), 0.0),
                None => t,
            }
        };
        let logprobs = Tensor::from_inner(zeroed(lp)).require_grad();
        let entropy = ent.map(|e| {
            let e = Tensor::from_inner(zeroed(e));
            if entropy == EntropyMode::Differentiable {
                e.require_grad()
            } else {
                e
            }
        });
        WindowPass {
            out: TokenLogProbs { logprobs, entropy },
            deferred: Some(Deferred {
                model: self.clone(),
                padding,
                computed,
                rows: h_rows,
                targets,
                chunk,
                temperature,
                trunk,
            }),
        }
    }
}

impl<B: AutodiffBackend> WindowPass<B> {
    /// The parameter gradients of `loss` (a scalar computed from [`Self::out`]) for `module`,
    /// the module whose parameters the model's are (the model itself, or a policy holding it).
    pub fn backward<M: AutodiffModule<B>>(self, loss: Tensor<B, 1>, module: &M) -> GradientsParams {
        let mut acc = GradientsAccumulator::<M>::new();
        self.backward_into(loss, module, &mut acc);
        acc.grads()
    }

    /// [`Self::backward`], adding each part of the gradient to `acc` as it is produced (the
    /// trainer's accumulator over micro-batches): no second full set of gradients exists beside
    /// the accumulated one, as PyTorch's `.grad` accumulation. The sum is the same up to float
    /// summation order.
    pub fn backward_into<M: AutodiffModule<B>>(
        self,
        loss: Tensor<B, 1>,
        module: &M,
        acc: &mut GradientsAccumulator<M>,
    ) {
        let grads = loss.backward();
        let Some(d) = self.deferred else {
            acc.accumulate(module, GradientsParams::from_grads(grads, module));
            return;
        };
        let mut add =
            |g: B::Gradients| acc.accumulate(module, GradientsParams::from_grads(g, module));
        let [b, w] = self.out.logprobs.dims();
        let zeros = || Tensor::<B::InnerBackend, 2>::zeros([b, w], &d.rows.device());
        let of_leaf = |leaf: &Tensor<B, 2>| {
            let g = leaf.grad(&grads).unwrap_or_else(zeros);
            let g = match &d.padding {
                Some(p) => g.mask_fill(p.clone(), 0.0),
                None => g,
            };
            let g = g.reshape([b * w]);
            match &d.computed {
                Some(c) => g.select(0, c.clone()),
                None => g,
            }
        };
        let d_lp = of_leaf(&self.out.logprobs);
        let d_ent = self
            .out
            .entropy
            .as_ref()
            .filter(|e| e.is_require_grad())
            .map(of_leaf);
        let [n, hidden] = d.rows.dims();
        let mode = if d_ent.is_some() {
            EntropyMode::Differentiable
        } else {
            EntropyMode::None
        };

        // The head, chunk by chunk, from the stored hidden rows.
        let mut d_rows = Vec::with_capacity(n.div_ceil(d.chunk));
        let mut r0 = 0;
        while r0 < n {
            let r1 = (r0 + d.chunk).min(n);
            let h = Tensor::<B, 2>::from_inner(d.rows.clone().slice([r0..r1, 0..hidden]))
                .require_grad();
            let (lp, ent) = d.model.head_logprobs(
                h.clone(),
                Tensor::from_inner(d.targets.clone().narrow(0, r0, r1 - r0)),
                mode,
                usize::MAX,
                d.temperature,
            );
            let mut surrogate =
                (lp * Tensor::from_inner(d_lp.clone().narrow(0, r0, r1 - r0))).sum();
            if let (Some(e), Some(de)) = (ent, &d_ent) {
                surrogate =
                    surrogate + (e * Tensor::from_inner(de.clone().narrow(0, r0, r1 - r0))).sum();
            }
            let g = surrogate.backward();
            d_rows.push(h.grad(&g).unwrap_or_else(|| {
                Tensor::zeros([r1 - r0, hidden], (&d.rows.device(), d.rows.dtype()))
            }));
            add(g);
            r0 = r1;
        }
        let d_rows = Tensor::cat(d_rows, 0);
        // Back to the whole window's rows: 0 on the entries the head did not compute.
        let d_rows = match &d.computed {
            Some(c) => Tensor::<B::InnerBackend, 2>::zeros(
                [b * w, hidden],
                (&d.rows.device(), d.rows.dtype()),
            )
            .select_assign(0, c.clone(), d_rows, IndexingUpdateOp::Add),
            None => d_rows,
        };

        // The decoder stack and the embedding.
        match d.trunk {
            Trunk::Graph(rows) => add((rows * Tensor::from_inner(d_rows)).sum().backward()),
            Trunk::Layers {
                ids,
                mask,
                inputs,
                rows,
                shape: [b, l],
            } => {
                let device = d.rows.device();
                let dtype = d.rows.dtype();
                let mut g = Tensor::<B::InnerBackend, 2>::zeros([b * l, hidden], (&device, dtype))
                    .select_assign(0, rows, d_rows, IndexingUpdateOp::Add);
                let step = d.model.prepare_step(b, l, mask.as_ref(), None, &device);
                for (layer, x) in d.model.layers.iter().zip(inputs).rev() {
                    let x = Tensor::<B, 2>::from_inner(x).require_grad();
                    let y = layer.forward(x.clone(), b, l, &step, None);
                    let grads = (y * Tensor::from_inner(g)).sum().backward();
                    g = x
                        .grad(&grads)
                        .unwrap_or_else(|| Tensor::zeros([b * l, hidden], (&device, dtype)));
                    add(grads);
                }
                let embedded = d.model.embed(ids.reshape([b * l]));
                add((embedded * Tensor::from_inner(g)).sum().backward());
            }
        }
    }
}
