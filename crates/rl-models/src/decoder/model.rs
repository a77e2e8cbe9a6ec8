//! The [`CausalLm`] model: embedding, decoder stack with masks, positions and KV cache, final hidden
//! states and logits.

use burn::module::{Module, ModuleMapper, Param};
use burn::nn::Embedding;
use burn::tensor::backend::Backend;
use burn::tensor::{FloatDType, Int, Tensor, TensorData};

use super::ModelConfig;
use super::dtype::{ComputeDtype, backend_supports};
use super::kv_cache::KvCache;
use super::layers::{DecoderLayer, Linear, RmsNorm, Step, Tables};
use super::lora::LoraConfig;
use super::mask::{AttentionMask, MASK_BIAS};
use super::rope::{Rope, frequencies, local_frequencies};
use crate::error::ModelError;

/// The Qwen3 causal LM (`Qwen3ForCausalLM`).
#[derive(Module, Debug)]
pub struct CausalLm<B: Backend> {
    /// Token embedding `[vocab, H]` (HF `model.embed_tokens.weight`).
    pub embed_tokens: Embedding<B>,
    /// Decoder layers (HF `model.layers.N`).
    pub layers: Vec<DecoderLayer<B>>,
    /// Final norm (HF `model.norm`).
    pub norm: RmsNorm<B>,
    /// `[vocab, H]` when untied; `None` when tied (the embedding is the head's weight).
    pub lm_head: Option<Linear<B>>,
    #[module(skip)]
    pub(super) config: ModelConfig,
    /// The settings of the LoRA adapters on the linear layers, if any (`CausalLm::with_lora`).
    #[module(skip)]
    pub(super) lora: Option<LoraConfig>,
    /// The dtype of the forward pass ([`CausalLm::with_compute_dtype`]).
    #[module(skip)]
    pub(super) dtype: ComputeDtype,
}

impl<B: Backend> CausalLm<B> {
    /// The configuration.
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// The device holding the parameters.
    pub fn device(&self) -> B::Device {
        self.embed_tokens.weight.val().device()
    }

    /// A KV cache for `batch` rows and at most `capacity` positions.
    pub fn new_cache(&self, batch: usize, capacity: usize) -> KvCache<B> {
        KvCache::new(&self.config, batch, capacity)
    }

    /// Logits for every position: `[batch, seq, vocab]`.
    ///
    /// `mask` marks real tokens (HF `attention_mask`); `None` means no padding. With a `cache`,
    /// `input_ids` are the tokens that follow those already cached (their keys/values are
    /// appended); `mask` then covers the new tokens only.
    ///
    /// Token ids must be below `vocab_size` (use [`CausalLm::check_ids`] on untrusted input).
    pub fn forward(
        &self,
        input_ids: Tensor<B, 2, Int>,
        mask: Option<&AttentionMask>,
        cache: Option<&mut KvCache<B>>,
    ) -> Result<Tensor<B, 3>, ModelError> {
        let [b, l] = input_ids.dims();
        let h = self.hidden_states(input_ids, mask, cache)?;
        let logits = self.lm_head_2d(h.reshape([b * l, self.config.hidden_size]));
        Ok(logits.reshape([b, l, self.config.vocab_size]))
    }

    /// Checks that every id is a valid row of the embedding.
    pub fn check_ids(&self, ids: &[u32]) -> Result<(), ModelError> {
        match ids
            .iter()
            .position(|&id| id as usize >= self.config.vocab_size)
        {
            Some(i) => Err(ModelError::InvalidInput(format!(
                "token id {} at index {i} is not below vocab_size {}",
                ids[i], self.config.vocab_size
            ))),
            None => Ok(()),
        }
    }

    /// Final-layer hidden states before the final norm, `[batch, seq, H]`.
    pub(crate) fn hidden_states(
        &self,
        input_ids: Tensor<B, 2, Int>,
        mask: Option<&AttentionMask>,
        cache: Option<&mut KvCache<B>>,
    ) -> Result<Tensor<B, 3>, ModelError> {
        self.hidden_states_keeping(input_ids, mask, cache, None)
    }

    /// [`Self::hidden_states`], pushing every decoder layer's input (`[batch * seq, H]`, layer 0
    /// first) onto `inputs` when given: what a per-layer recomputation of the backward needs.
    pub(super) fn hidden_states_keeping(
        &self,
        input_ids: Tensor<B, 2, Int>,
        mask: Option<&AttentionMask>,
        mut cache: Option<&mut KvCache<B>>,
        mut inputs: Option<&mut Vec<Tensor<B, 2>>>,
    ) -> Result<Tensor<B, 3>, ModelError> {
        let [b, l] = input_ids.dims();
        if b == 0 || l == 0 {
            return Err(ModelError::InvalidInput(format!(
                "input_ids has shape [{b}, {l}]; both dimensions must be positive"
            )));
        }
        if let Some(m) = mask
            && (m.batch != b || m.seq_len != l)
        {
            return Err(ModelError::InvalidInput(format!(
                "attention mask is [{}, {}], input_ids is [{b}, {l}]",
                m.batch, m.seq_len
            )));
        }
        if let Some(c) = cache.as_deref() {
            if mask.is_some_and(AttentionMask::is_packed) {
                return Err(ModelError::InvalidInput(
                    "a packed attention mask is for a pass without a KV cache".to_string(),
                ));
            }
            if c.batch != b {
                return Err(ModelError::InvalidInput(format!(
                    "KV cache has {} rows, input_ids has {b}",
                    c.batch
                )));
            }
            if c.len + l > c.capacity {
                return Err(ModelError::CacheOverflow {
                    capacity: c.capacity,
                    needed: c.len + l,
                });
            }
        }
        let device = input_ids.device();
        let step = self.prepare_step(b, l, mask, cache.as_deref(), &device);

        let mut h = self.embed(input_ids.reshape([b * l]));
        for (i, layer) in self.layers.iter().enumerate() {
            let slot = cache.as_deref_mut().map(|c| &mut c.layers[i]);
            if let Some(kept) = inputs.as_deref_mut() {
                kept.push(h.clone());
            }
            h = layer.forward(h, b, l, &step, slot);
        }
        if let Some(c) = cache {
            for row in 0..b {
                for t in 0..l {
                    let valid = mask.is_none_or(|m| m.is_valid(row, t));
                    c.key_valid[row * c.capacity + c.len + t] = valid;
                    c.valid_count[row] += usize::from(valid);
                }
            }
            let (_, body_len, tail_len) = c.plan(l);
            c.body_len = body_len;
            c.tail_len = tail_len;
            c.len += l;
        }
        Ok(h.reshape([b, l, self.config.hidden_size]))
    }

    /// The embedding rows of `ids` (`[n]`), in the compute dtype: `[n, H]`; times √hidden
    /// where the family scales its embedding (Gemma: the scale rounded to the compute dtype,
    /// as HF's `embed_scale.to(weight.dtype)`, and one rounded product).
    pub(super) fn embed(&self, ids: Tensor<B, 1, Int>) -> Tensor<B, 2> {
        let rows = self
            .embed_tokens
            .weight
            .val()
            .select(0, ids)
            .cast(self.dtype.float());
        if !self.config.family.scales_embedding() {
            return rows;
        }
        let scale = (self.config.hidden_size as f64).sqrt() as f32;
        let scale = match self.dtype {
            ComputeDtype::F32 => scale,
            ComputeDtype::Bf16 => half::bf16::from_f32(scale).to_f32(),
        };
        rows.mul_scalar(scale)
    }

    /// Position ids, RoPE tables and the attention bias of one call.
    pub(super) fn prepare_step(
        &self,
        b: usize,
        l: usize,
        mask: Option<&AttentionMask>,
        cache: Option<&KvCache<B>>,
        device: &B::Device,
    ) -> Step<B> {
        let valid = |row: usize, t: usize| mask.is_none_or(|m| m.is_valid(row, t));
        let start = cache.map(|c| c.len).unwrap_or(0);
        let k_len = start + l;
        // Packed rows (no cache): a key is seen only from its own segment and the segments that
        // continue it.
        let segments = mask.and_then(|m| m.segments.as_ref());
        let same_sequence = |row: usize, t: usize, j: usize| {
            segments.is_none_or(|s| s.sees(s.of(row * l + t), s.of(row * l + j)))
        };

        // position = (real tokens before, including this one) - 1, clamped at 0 for padding;
        // in packed rows, counted within the sequence (`Segments::positions`).
        let positions: Vec<f32> = match segments {
            Some(s) => s.positions().into_iter().map(|p| p as f32).collect(),
            None => {
                let mut positions = Vec::with_capacity(b * l);
                for row in 0..b {
                    let mut count = cache.map(|c| c.valid_count[row]).unwrap_or(0);
                    for t in 0..l {
                        count += usize::from(valid(row, t));
                        positions.push(count.saturating_sub(1) as f32);
                    }
                }
                positions
            }
        };
        // Key j of row `row` is attendable from new token t iff it is a real token and j <= start + t;
        // in a local layer also iff the query's position is less than `window` past the key's.
        let key_valid = |row: usize, j: usize| -> bool {
            if j < start {
                cache.is_some_and(|c| c.key_valid[row * c.capacity + j])
            } else if j < start + l {
                valid(row, j - start)
            } else {
                false
            }
        };
        let all_valid = mask.is_none_or(|m| m.segments.is_none() && m.valid.iter().all(|&v| v))
            && cache.is_none_or(|c| {
                (0..c.batch).all(|row| {
                    c.key_valid[row * c.capacity..row * c.capacity + start]
                        .iter()
                        .all(|&v| v)
                })
            });
        let rows = if all_valid { 1 } else { b };
        let bias = |window: Option<usize>| {
            let mut bias = vec![0.0f32; rows * l * k_len];
            for row in 0..rows {
                // The position of key j: the real keys up to and including it, minus one (in
                // packed rows, which have no cache: the position of token j).
                let mut key_pos = Vec::with_capacity(k_len);
                let mut count = 0usize;
                for j in 0..k_len {
                    count += usize::from(key_valid(row, j));
                    key_pos.push(match segments {
                        Some(_) => positions[row * l + j] as usize,
                        None => count.saturating_sub(1),
                    });
                }
                for t in 0..l {
                    let base = (row * l + t) * k_len;
                    let q_pos = positions[row * l + t] as usize;
                    for j in 0..k_len {
                        let outside = window.is_some_and(|w| q_pos >= key_pos[j] + w);
                        if j > start + t
                            || !key_valid(row, j)
                            || outside
                            || !same_sequence(row, t, j)
                        {
                            bias[base + j] = MASK_BIAS;
                        }
                    }
                }
            }
            let n_rep = self.config.num_key_value_groups();
            let bias =
                Tensor::<B, 4>::from_data(TensorData::new(bias, [rows, 1, l, k_len]), device);
            if n_rep > 1 {
                bias.repeat_dim(2, n_rep)
            } else {
                bias
            }
        };
        let tables = |freqs: Vec<f32>, window: Option<usize>| Tables {
            rope: Rope::new(&positions, b, l, freqs, &self.config, self.dtype, device),
            bias: bias(window),
        };
        let local = self
            .config
            .sliding_window
            .as_ref()
            .map(|w| tables(local_frequencies(&self.config, w), Some(w.size)));
        Step {
            global: tables(frequencies(&self.config), None),
            local,
            write: cache.map(|c| c.plan(l).0),
        }
    }
}

/// Casts every float parameter to one dtype, keeping its id.
struct CastParams(FloatDType);

impl<B: Backend> ModuleMapper<B> for CastParams {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let (id, tensor, mapper) = param.consume();
        Param::from_mapped_value(id, tensor.cast(self.0), mapper)
    }
}

impl<B: Backend> CausalLm<B> {
    /// The dtype of the forward pass.
    pub fn compute_dtype(&self) -> ComputeDtype {
        self.dtype
    }

    /// This model computing in `dtype`; the parameters are unchanged (f32 masters). Errors with
    /// the backend's name when its device cannot compute in `dtype`.
    pub fn with_compute_dtype(mut self, dtype: ComputeDtype) -> Result<Self, ModelError> {
        if !backend_supports::<B>(dtype, &self.device()) {
            return Err(ModelError::InvalidInput(format!(
                "the backend {} cannot compute in {dtype} on this device (supports_dtype is \
                 false; burn's wgpu compiles WGSL, which has no bf16); use dtype = \"f32\"",
                B::name(&self.device())
            )));
        }
        self.dtype = dtype;
        Ok(self)
    }

    /// This model with its parameters stored in the compute dtype: for copies that only run
    /// forward (generation, scoring), so that no step re-casts the weights. Do not train or save
    /// such a copy: its parameters have lost the f32 masters' precision.
    pub fn with_weights_in_compute_dtype(self) -> Self {
        if self.dtype == ComputeDtype::F32 {
            return self;
        }
        let dtype = self.dtype.float();
        self.map(&mut CastParams(dtype))
    }
}
