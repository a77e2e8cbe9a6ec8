//! [`ModelConfig`]: the shape and settings of a decoder-only LM of any supported [`Family`],
//! with HF `config.json` field names, the checks every family shares, and the bounds that keep a
//! hostile file from allocating more than it holds.
//!
//! Reading and writing `config.json` (`ModelConfig::from_file`, `from_json_value`,
//! `to_json_value`) and what differs between the families (their defaults and refusals, their
//! GGUF keys) live in `crate::families`, one file per family.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::family::Family;
use crate::error::ModelError;

/// The shape and settings of a model. Field names are those of HF `config.json`.
///
/// Parsing ([`ModelConfig::from_json_value`], [`ModelConfig::from_file`], serde) reads the
/// family from `model_type` (`qwen3`, `llama`, `qwen2`; a file with neither `model_type` nor
/// `architectures` is read as Qwen3) and applies that family's HF defaults and refusals
/// (`crate::families::{qwen3, llama, qwen2}`). Every size is checked against [`LIMITS`] before
/// anything is allocated.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelConfig {
    /// The architecture: which layers exist (q/k norms, biases) and how files name things.
    pub family: Family,
    /// Rows of the embedding and of the LM head.
    pub vocab_size: usize,
    /// Width `H` of the residual stream.
    pub hidden_size: usize,
    /// Width `I` of the SwiGLU MLP.
    pub intermediate_size: usize,
    /// Number of decoder layers.
    pub num_hidden_layers: usize,
    /// Query heads `nh`.
    pub num_attention_heads: usize,
    /// Key/value heads `nkv` (grouped-query attention; divides `nh`).
    pub num_key_value_heads: usize,
    /// Per-head width `hd` (even; `nh * hd` may differ from `hidden_size`).
    pub head_dim: usize,
    /// Context length the model was trained for (not enforced; the KV cache is sized per call).
    pub max_position_embeddings: usize,
    /// Epsilon of every RMSNorm (including Qwen3's q_norm / k_norm).
    pub rms_norm_eps: f64,
    /// RoPE base θ.
    pub rope_theta: f64,
    /// RoPE frequency scaling (Llama 3.1+'s `llama3` type), or `None` for plain RoPE.
    pub rope_scaling: Option<RopeScaling>,
    /// A bias on the q, k and v projections (Qwen2; Llama with `attention_bias`).
    pub qkv_bias: bool,
    /// A bias on the output projection (Llama with `attention_bias`).
    pub o_bias: bool,
    /// Whether `lm_head` shares the embedding matrix.
    pub tie_word_embeddings: bool,
    /// BOS id (informational).
    pub bos_token_id: Option<u32>,
    /// EOS id(s): HF accepts an integer or a list.
    pub eos_token_id: Vec<u32>,
    /// Checkpoint dtype as written in the file (`torch_dtype` or `dtype`); informational, the
    /// model computes in f32 or bf16 as asked ([`crate::ComputeDtype`]).
    pub torch_dtype: Option<String>,
    /// Std of the normal init used by [`ModelConfig::init_seeded`] (HF: 0.02).
    pub initializer_range: f64,
    /// Sliding-window attention in some layers (Gemma 3's local layers), or `None`: every layer
    /// attends to every earlier position.
    pub sliding_window: Option<SlidingWindow>,
    /// Attention scores are scaled by `query_pre_attn_scalar^(-1/2)` (Gemma 3); `None`:
    /// `head_dim^(-1/2)`.
    pub query_pre_attn_scalar: Option<f64>,
}

/// The local layers of a model with interleaved sliding-window attention (Gemma 3): which
/// layers are local, how far back they see, and their RoPE base.
///
/// A query of a local layer at position `p` attends to the keys at positions `p − size + 1 ..= p`
/// (HF `sliding_window`: `kv_idx > q_idx − sliding_window`; positions count the real tokens of
/// the row, which for left or right padding is HF's index distance). The other layers are
/// global: they see every earlier position and use the config's `rope_theta`.
#[derive(Clone, Debug, PartialEq)]
pub struct SlidingWindow {
    /// Positions a local layer's query sees, itself included (HF `sliding_window`, > 0).
    pub size: usize,
    /// Per decoder layer, whether it is local (HF `layer_types[i] == "sliding_attention"`);
    /// one entry per layer.
    pub local_layers: Vec<bool>,
    /// The RoPE base θ of the local layers (HF `rope_local_base_freq`, or transformers 5's
    /// `rope_parameters.sliding_attention.rope_theta`).
    pub rope_theta: f64,
}

impl SlidingWindow {
    /// Gemma 3's layout: every `pattern`-th layer (1-based) global, the others local (HF
    /// `sliding_window_pattern`, llama.cpp's `n_swa_pattern`).
    pub fn every(pattern: usize, layers: usize, size: usize, rope_theta: f64) -> Self {
        Self {
            size,
            local_layers: (0..layers)
                .map(|i| pattern == 0 || !(i + 1).is_multiple_of(pattern))
                .collect(),
            rope_theta,
        }
    }

    /// Whether layer `i` is local.
    pub fn is_local(&self, i: usize) -> bool {
        self.local_layers.get(i).copied().unwrap_or(false)
    }
}

/// RoPE frequency scaling of type `llama3` (HF `rope_scaling` / `rope_parameters` with
/// `rope_type = "llama3"`, Llama 3.1 and 3.2): with wavelength `λ_i = 2π / ω_i`,
/// `λ_low = L / low_freq_factor`, `λ_high = L / high_freq_factor` (`L` =
/// `original_max_position_embeddings`), frequencies with `λ_i > λ_low` are divided by `factor`,
/// those with `λ_i < λ_high` kept, and those between interpolated:
/// `ω_i ← (1 − s) ω_i / factor + s ω_i` with `s = (L / λ_i − low_freq_factor) /
/// (high_freq_factor − low_freq_factor)` (HF `_compute_llama3_parameters`, in f32).
#[derive(Clone, Debug, PartialEq)]
pub struct RopeScaling {
    /// `factor` (> 0).
    pub factor: f64,
    /// `low_freq_factor` (> 0).
    pub low_freq_factor: f64,
    /// `high_freq_factor` (> `low_freq_factor`).
    pub high_freq_factor: f64,
    /// `original_max_position_embeddings` (> 0).
    pub original_max_position_embeddings: usize,
}

/// Upper bounds on a config's sizes. Each is far above every released model of these
/// families (Llama 3.1 405B: hidden 16,384, 126 layers, MLP 53,248, 128 heads, vocabulary
/// 128,256); a config beyond one is refused by name before anything is allocated, so that a
/// crafted `config.json` (say `num_hidden_layers = 10⁹`) cannot make the loader allocate
/// memory the checkpoint does not hold.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// `vocab_size`.
    pub vocab_size: usize,
    /// `hidden_size`.
    pub hidden_size: usize,
    /// `intermediate_size`.
    pub intermediate_size: usize,
    /// `num_hidden_layers`.
    pub num_hidden_layers: usize,
    /// `num_attention_heads` (and so `num_key_value_heads`).
    pub num_attention_heads: usize,
    /// `head_dim`.
    pub head_dim: usize,
    /// `max_position_embeddings`.
    pub max_position_embeddings: usize,
    /// The parameter count the config implies.
    pub parameters: u64,
}

/// The bounds [`ModelConfig::validate`] applies.
pub const LIMITS: Limits = Limits {
    vocab_size: 1 << 22,
    hidden_size: 1 << 16,
    intermediate_size: 1 << 18,
    num_hidden_layers: 1 << 10,
    num_attention_heads: 1 << 10,
    head_dim: 1 << 12,
    max_position_embeddings: 1 << 24,
    parameters: 1 << 40,
};

/// An [`ModelError::InvalidConfig`] without a file (the file is added by the caller that read
/// one).
pub(crate) fn invalid(field: &'static str, value: &Value, expected: &str) -> ModelError {
    ModelError::InvalidConfig {
        file: None,
        line: None,
        field,
        value: value.to_string(),
        expected: expected.to_string(),
    }
}

/// The line of the first `"field"` key in a JSON text, for error messages.
pub(crate) fn line_of(text: &str, field: &str) -> Option<usize> {
    let key = format!("\"{field}\"");
    let at = text.find(&key)?;
    Some(text[..at].matches('\n').count() + 1)
}

/// A missing required field.
pub(crate) fn missing(field: &'static str) -> ModelError {
    ModelError::InvalidConfig {
        file: None,
        line: None,
        field,
        value: "(missing)".to_string(),
        expected: "a positive integer (required)".to_string(),
    }
}

/// The fields of a config object, and the readers every family uses.
pub(crate) struct Fields<'a>(pub(crate) &'a Map<String, Value>);

impl<'a> Fields<'a> {
    /// `Some(v)` when present and not null.
    pub(crate) fn get(&self, field: &str) -> Option<&'a Value> {
        self.0.get(field).filter(|v| !v.is_null())
    }

    /// A required positive integer.
    pub(crate) fn required(&self, field: &'static str) -> Result<usize, ModelError> {
        positive(field, self.get(field).ok_or_else(|| missing(field))?)
    }

    /// A positive integer, or `default` when absent or null.
    pub(crate) fn positive_or(
        &self,
        field: &'static str,
        default: usize,
    ) -> Result<usize, ModelError> {
        self.get(field).map_or(Ok(default), |v| positive(field, v))
    }

    /// A positive finite number, or `default` when absent or null.
    pub(crate) fn number_or(&self, field: &'static str, default: f64) -> Result<f64, ModelError> {
        self.get(field)
            .map_or(Ok(default), |v| positive_f64(field, v))
    }

    /// A boolean, or `default` when absent or null.
    pub(crate) fn bool_or(&self, field: &'static str, default: bool) -> Result<bool, ModelError> {
        match self.get(field) {
            None => Ok(default),
            Some(v) => v
                .as_bool()
                .ok_or_else(|| invalid(field, v, "true or false")),
        }
    }

    /// Errors unless `field` is absent, null or equal to `want` (a setting that is not
    /// implemented), naming it with `why`.
    pub(crate) fn only(
        &self,
        field: &'static str,
        want: &Value,
        why: &str,
    ) -> Result<(), ModelError> {
        match self.get(field) {
            Some(v)
                if v != want
                    && !(v.is_number() && want.is_number() && v.as_f64() == want.as_f64()) =>
            {
                Err(invalid(field, v, why))
            }
            _ => Ok(()),
        }
    }

    /// `num_key_value_heads`: `default` when absent, `num_attention_heads` when null (HF).
    pub(crate) fn kv_heads(&self, default: usize, heads: usize) -> Result<usize, ModelError> {
        match self.0.get("num_key_value_heads") {
            None => Ok(default),
            Some(Value::Null) => Ok(heads),
            Some(v) => positive("num_key_value_heads", v),
        }
    }

    /// RoPE base and scaling from either spelling: transformers 4's top-level `rope_theta` +
    /// `rope_scaling`, or transformers 5's `rope_parameters: {rope_theta, rope_type, …}`.
    /// `scaling_allowed` says whether the family computes `llama3` scaling; any other type
    /// (linear, dynamic, yarn, longrope …) is refused by name.
    /// A `llama3` scaling without `original_max_position_embeddings` takes
    /// `max_positions` (as HF does, with a warning).
    pub(crate) fn rope(
        &self,
        default_theta: f64,
        scaling_allowed: bool,
        max_positions: usize,
    ) -> Result<(f64, Option<RopeScaling>), ModelError> {
        let mut theta = self.number_or("rope_theta", default_theta)?;
        let mut scaling = None;
        for field in ["rope_scaling", "rope_parameters"] {
            let Some(v) = self.get(field) else { continue };
            let obj = v
                .as_object()
                .ok_or_else(|| invalid(field, v, "null or an object with a rope_type"))?;
            if field == "rope_parameters"
                && let Some(t) = obj.get("rope_theta").filter(|t| !t.is_null())
            {
                theta = positive_f64("rope_parameters", t)?;
            }
            let ty = obj.get("rope_type").or_else(|| obj.get("type"));
            match ty.and_then(Value::as_str) {
                None if ty.is_none_or(Value::is_null) => {}
                Some("default") => {}
                Some("llama3") if scaling_allowed => {
                    scaling = Some(RopeScaling::from_object(field, v, obj, max_positions)?);
                }
                _ => {
                    let supported = if scaling_allowed {
                        "rope_type \"default\" or \"llama3\" (linear, dynamic, yarn, longrope … are not supported)"
                    } else {
                        "rope_type \"default\" (linear, dynamic, yarn, llama3 … rope scaling is not supported for this family)"
                    };
                    return Err(invalid(field, v, supported));
                }
            }
        }
        Ok((theta, scaling))
    }

    /// `eos_token_id`: an integer, a list of them, `default` when absent, none when null.
    pub(crate) fn eos_or(&self, default: Option<u32>) -> Result<Vec<u32>, ModelError> {
        if !self.0.contains_key("eos_token_id") {
            return Ok(default.into_iter().collect());
        }
        self.eos()
    }

    /// `bos_token_id`: `default` when absent, none when null.
    pub(crate) fn bos_or(&self, default: Option<u32>) -> Result<Option<u32>, ModelError> {
        if !self.0.contains_key("bos_token_id") {
            return Ok(default);
        }
        self.bos()
    }

    /// `eos_token_id`: an integer, a list of them, or absent.
    pub(crate) fn eos(&self) -> Result<Vec<u32>, ModelError> {
        match self.get("eos_token_id") {
            None => Ok(Vec::new()),
            Some(Value::Array(a)) => a.iter().map(|v| token_id("eos_token_id", v)).collect(),
            Some(v) => Ok(vec![token_id("eos_token_id", v)?]),
        }
    }

    /// `bos_token_id`, if present.
    pub(crate) fn bos(&self) -> Result<Option<u32>, ModelError> {
        self.get("bos_token_id")
            .map(|v| token_id("bos_token_id", v))
            .transpose()
    }

    /// `torch_dtype` or `dtype`, if present.
    pub(crate) fn dtype(&self) -> Result<Option<String>, ModelError> {
        self.get("torch_dtype")
            .or_else(|| self.get("dtype"))
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| invalid("torch_dtype", v, "a dtype name such as \"bfloat16\""))
            })
            .transpose()
    }
}

fn positive(field: &'static str, v: &Value) -> Result<usize, ModelError> {
    v.as_u64()
        .filter(|&n| n > 0)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| invalid(field, v, "a positive integer"))
}

fn positive_f64(field: &'static str, v: &Value) -> Result<f64, ModelError> {
    v.as_f64()
        .filter(|x| x.is_finite() && *x > 0.0)
        .ok_or_else(|| invalid(field, v, "a positive finite number"))
}

fn token_id(field: &'static str, v: &Value) -> Result<u32, ModelError> {
    v.as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| {
            invalid(
                field,
                v,
                "a token id (non-negative integer), a list of them, or null",
            )
        })
}

impl RopeScaling {
    fn from_object(
        field: &'static str,
        whole: &Value,
        obj: &Map<String, Value>,
        max_positions: usize,
    ) -> Result<Self, ModelError> {
        let num = |key: &str| -> Result<f64, ModelError> {
            obj.get(key)
                .and_then(Value::as_f64)
                .filter(|x| x.is_finite() && *x > 0.0)
                .ok_or_else(|| {
                    invalid(
                        field,
                        whole,
                        &format!("llama3 rope scaling with `{key}` a positive finite number"),
                    )
                })
        };
        let original = match obj.get("original_max_position_embeddings") {
            None | Some(Value::Null) => Some(max_positions),
            Some(v) => v.as_u64().and_then(|n| usize::try_from(n).ok()),
        };
        let original = original.filter(|&n| n > 0).ok_or_else(|| {
            invalid(
                field,
                whole,
                "llama3 rope scaling with `original_max_position_embeddings` a positive integer",
            )
        })?;
        let scaling = Self {
            factor: num("factor")?,
            low_freq_factor: num("low_freq_factor")?,
            high_freq_factor: num("high_freq_factor")?,
            original_max_position_embeddings: original,
        };
        if scaling.high_freq_factor <= scaling.low_freq_factor {
            return Err(invalid(
                field,
                whole,
                "llama3 rope scaling with high_freq_factor > low_freq_factor",
            ));
        }
        Ok(scaling)
    }

    /// The HF `rope_parameters` / `rope_scaling` object (without `rope_theta`).
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "rope_type": "llama3",
            "factor": self.factor,
            "low_freq_factor": self.low_freq_factor,
            "high_freq_factor": self.high_freq_factor,
            "original_max_position_embeddings": self.original_max_position_embeddings,
        })
    }
}

impl ModelConfig {
    /// Checks the invariants the model relies on and the [`LIMITS`] (for configs built in code;
    /// parsing checks them too).
    pub fn validate(&self) -> Result<(), ModelError> {
        let bounded = |field: &'static str, v: usize, max: usize| {
            if v == 0 {
                Err(invalid(field, &json!(v), "a positive integer"))
            } else if v > max {
                Err(invalid(
                    field,
                    &json!(v),
                    &format!("at most {max} (larger than any model this crate can hold)"),
                ))
            } else {
                Ok(())
            }
        };
        let l = LIMITS;
        bounded("vocab_size", self.vocab_size, l.vocab_size)?;
        bounded("hidden_size", self.hidden_size, l.hidden_size)?;
        bounded(
            "intermediate_size",
            self.intermediate_size,
            l.intermediate_size,
        )?;
        bounded(
            "num_hidden_layers",
            self.num_hidden_layers,
            l.num_hidden_layers,
        )?;
        bounded(
            "num_attention_heads",
            self.num_attention_heads,
            l.num_attention_heads,
        )?;
        bounded(
            "num_key_value_heads",
            self.num_key_value_heads,
            l.num_attention_heads,
        )?;
        bounded("head_dim", self.head_dim, l.head_dim)?;
        bounded(
            "max_position_embeddings",
            self.max_position_embeddings,
            l.max_position_embeddings,
        )?;
        if !self
            .num_attention_heads
            .is_multiple_of(self.num_key_value_heads)
        {
            return Err(invalid(
                "num_key_value_heads",
                &json!(self.num_key_value_heads),
                &format!(
                    "a divisor of num_attention_heads = {}",
                    self.num_attention_heads
                ),
            ));
        }
        if !self.head_dim.is_multiple_of(2) {
            return Err(invalid(
                "head_dim",
                &json!(self.head_dim),
                "an even number (RoPE rotates pairs (i, i + head_dim/2))",
            ));
        }
        let positive_finite = |field: &'static str, x: f64| {
            if x.is_finite() && x > 0.0 {
                Ok(())
            } else {
                Err(invalid(field, &json!(x), "a positive finite number"))
            }
        };
        positive_finite("rms_norm_eps", self.rms_norm_eps)?;
        positive_finite("rope_theta", self.rope_theta)?;
        positive_finite("initializer_range", self.initializer_range)?;
        if let Some(s) = &self.rope_scaling {
            if self.family != Family::Llama {
                return Err(invalid(
                    "rope_scaling",
                    &s.to_json(),
                    "null (llama3 rope scaling is a Llama setting)",
                ));
            }
            for x in [s.factor, s.low_freq_factor, s.high_freq_factor] {
                positive_finite("rope_scaling", x)?;
            }
            if s.high_freq_factor <= s.low_freq_factor || s.original_max_position_embeddings == 0 {
                return Err(invalid(
                    "rope_scaling",
                    &s.to_json(),
                    "high_freq_factor > low_freq_factor and original_max_position_embeddings > 0",
                ));
            }
        }
        if let Some(w) = &self.sliding_window {
            if self.family != Family::Gemma3 {
                return Err(invalid(
                    "sliding_window",
                    &json!(w.size),
                    &format!(
                        "null (sliding-window attention is not supported for {})",
                        self.family
                    ),
                ));
            }
            if w.size == 0 {
                return Err(invalid(
                    "sliding_window",
                    &json!(w.size),
                    "a positive integer",
                ));
            }
            if w.local_layers.len() != self.num_hidden_layers {
                return Err(invalid(
                    "layer_types",
                    &json!(w.local_layers.len()),
                    &format!(
                        "one entry per layer: num_hidden_layers = {}",
                        self.num_hidden_layers
                    ),
                ));
            }
            positive_finite("rope_local_base_freq", w.rope_theta)?;
        }
        if let Some(s) = self.query_pre_attn_scalar {
            positive_finite("query_pre_attn_scalar", s)?;
        }
        if self.family == Family::Qwen3 && (self.qkv_bias || self.o_bias) {
            return Err(invalid(
                "attention_bias",
                &json!(true),
                "false (Qwen3 projections have no bias)",
            ));
        }
        let params = self.parameter_count_checked();
        if params.is_none_or(|p| p > l.parameters) {
            return Err(invalid(
                "num_hidden_layers",
                &json!(self.num_hidden_layers),
                &format!(
                    "sizes whose parameter count is at most {} (these give {})",
                    l.parameters,
                    params.map_or("more than 2^64".to_string(), |p| p.to_string())
                ),
            ));
        }
        Ok(())
    }

    /// `nh / nkv`: query heads per key/value head.
    pub fn num_key_value_groups(&self) -> usize {
        self.num_attention_heads / self.num_key_value_heads
    }

    /// Whether the attention has per-head RMSNorms on q and k (Qwen3).
    pub fn qk_norm(&self) -> bool {
        self.family.qk_norm()
    }

    /// Number of parameters (the tied LM head counted once, as `model.num_params()` and HF's
    /// `model.parameters()` count them).
    pub fn num_parameters(&self) -> usize {
        self.parameter_count_checked()
            .and_then(|p| usize::try_from(p).ok())
            .unwrap_or(usize::MAX)
    }

    /// [`Self::num_parameters`] in checked u64 arithmetic (`None` on overflow).
    fn parameter_count_checked(&self) -> Option<u64> {
        let u = |x: usize| x as u64;
        let h = u(self.hidden_size);
        let hd = u(self.head_dim);
        let q = u(self.num_attention_heads).checked_mul(hd)?;
        let kv = u(self.num_key_value_heads).checked_mul(hd)?;
        let i = u(self.intermediate_size);
        let mut layer = h
            .checked_mul(q)?
            .checked_add(h.checked_mul(kv)?.checked_mul(2)?)?
            .checked_add(q.checked_mul(h)?)?
            .checked_add(h.checked_mul(i)?.checked_mul(3)?)?
            .checked_add(h.checked_mul(2)?)?;
        if self.family.sandwich_norms() {
            layer = layer.checked_add(h.checked_mul(2)?)?;
        }
        if self.qk_norm() {
            layer = layer.checked_add(hd.checked_mul(2)?)?;
        }
        if self.qkv_bias {
            layer = layer.checked_add(q.checked_add(kv.checked_mul(2)?)?)?;
        }
        if self.o_bias {
            layer = layer.checked_add(h)?;
        }
        let embed = u(self.vocab_size).checked_mul(h)?;
        let head = if self.tie_word_embeddings { 0 } else { embed };
        embed
            .checked_add(u(self.num_hidden_layers).checked_mul(layer)?)?
            .checked_add(h)?
            .checked_add(head)
    }

    fn released_qwen3(
        hidden_size: usize,
        num_hidden_layers: usize,
        num_attention_heads: usize,
        intermediate_size: usize,
        tie_word_embeddings: bool,
    ) -> Self {
        Self {
            family: Family::Qwen3,
            vocab_size: 151_936,
            hidden_size,
            intermediate_size,
            num_hidden_layers,
            num_attention_heads,
            num_key_value_heads: 8,
            head_dim: 128,
            max_position_embeddings: 40_960,
            rms_norm_eps: 1e-6,
            rope_theta: 1_000_000.0,
            rope_scaling: None,
            qkv_bias: false,
            o_bias: false,
            tie_word_embeddings,
            bos_token_id: Some(151_643),
            eos_token_id: vec![151_645],
            torch_dtype: Some("bfloat16".to_string()),
            initializer_range: 0.02,
            sliding_window: None,
            query_pre_attn_scalar: None,
        }
    }

    /// Qwen3-0.6B shapes (hidden 1024, 28 layers, 16/8 heads of 128, MLP 3072, tied).
    pub fn qwen3_0_6b() -> Self {
        Self::released_qwen3(1024, 28, 16, 3072, true)
    }

    /// Qwen3-1.7B shapes (hidden 2048, 28 layers, 16/8 heads of 128, MLP 6144, tied).
    pub fn qwen3_1_7b() -> Self {
        Self::released_qwen3(2048, 28, 16, 6144, true)
    }

    /// Qwen3-4B shapes (hidden 2560, 36 layers, 32/8 heads of 128, MLP 9728, tied).
    pub fn qwen3_4b() -> Self {
        Self::released_qwen3(2560, 36, 32, 9728, true)
    }

    /// Qwen3-8B shapes (hidden 4096, 36 layers, 32/8 heads of 128, MLP 12288, untied).
    pub fn qwen3_8b() -> Self {
        Self::released_qwen3(4096, 36, 32, 12288, false)
    }

    /// SmolLM2-135M shapes (Llama: hidden 576, 30 layers, 9/3 heads of 64, MLP 1536, vocabulary
    /// 49,152, RoPE base 1e5, RMS ε 1e-5, tied).
    pub fn smollm2_135m() -> Self {
        Self {
            family: Family::Llama,
            vocab_size: 49_152,
            hidden_size: 576,
            intermediate_size: 1536,
            num_hidden_layers: 30,
            num_attention_heads: 9,
            num_key_value_heads: 3,
            head_dim: 64,
            max_position_embeddings: 8192,
            rms_norm_eps: 1e-5,
            rope_theta: 100_000.0,
            rope_scaling: None,
            qkv_bias: false,
            o_bias: false,
            tie_word_embeddings: true,
            bos_token_id: Some(1),
            eos_token_id: vec![2],
            torch_dtype: Some("bfloat16".to_string()),
            initializer_range: 0.041_666_666_666_666_664,
            sliding_window: None,
            query_pre_attn_scalar: None,
        }
    }

    /// Gemma-3-270M shapes (Gemma 3: hidden 640, 18 layers of which every sixth global, 4 query
    /// heads and 1 key/value head of 256, MLP 2048, vocabulary 262,144, sliding window 512,
    /// RoPE bases 1e6 global and 1e4 local, tied), as its GGUF describes them.
    pub fn gemma3_270m() -> Self {
        Self {
            family: Family::Gemma3,
            vocab_size: 262_144,
            hidden_size: 640,
            intermediate_size: 2048,
            num_hidden_layers: 18,
            num_attention_heads: 4,
            num_key_value_heads: 1,
            head_dim: 256,
            max_position_embeddings: 32_768,
            rms_norm_eps: 1e-6,
            rope_theta: 1_000_000.0,
            rope_scaling: None,
            qkv_bias: false,
            o_bias: false,
            tie_word_embeddings: true,
            bos_token_id: Some(2),
            eos_token_id: vec![1],
            torch_dtype: Some("bfloat16".to_string()),
            initializer_range: 0.02,
            sliding_window: Some(SlidingWindow::every(6, 18, 512, 10_000.0)),
            query_pre_attn_scalar: Some(256.0),
        }
    }

    /// A tiny Qwen3-architecture config for tests and demos: hidden 64, 2 layers, 4 query heads
    /// and 2 key/value heads of 16, MLP 128, tied embeddings, RoPE base 1e6, 1024 positions.
    pub fn tiny(vocab_size: usize) -> Self {
        Self {
            family: Family::Qwen3,
            vocab_size,
            hidden_size: 64,
            intermediate_size: 128,
            num_hidden_layers: 2,
            num_attention_heads: 4,
            num_key_value_heads: 2,
            head_dim: 16,
            max_position_embeddings: 1024,
            rms_norm_eps: 1e-6,
            rope_theta: 1_000_000.0,
            rope_scaling: None,
            qkv_bias: false,
            o_bias: false,
            tie_word_embeddings: true,
            bos_token_id: None,
            eos_token_id: Vec::new(),
            torch_dtype: Some("float32".to_string()),
            initializer_range: 0.02,
            sliding_window: None,
            query_pre_attn_scalar: None,
        }
    }
}

impl ModelError {
    /// This error with the config file (and the line of its field) added, when it is an
    /// [`ModelError::InvalidConfig`] without one.
    pub(crate) fn in_file(self, path: &Path, line: impl Fn(&str) -> Option<usize>) -> Self {
        match self {
            ModelError::InvalidConfig {
                file: None,
                line: None,
                field,
                value,
                expected,
            } => ModelError::InvalidConfig {
                file: Some(PathBuf::from(path)),
                line: line(field),
                field,
                value,
                expected,
            },
            other => other,
        }
    }
}

impl Serialize for ModelConfig {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json_value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ModelConfig {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::from_json_value(&value).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absurd_sizes_are_refused_before_allocation() {
        let mut c = ModelConfig::tiny(32);
        c.num_hidden_layers = 1_000_000_000;
        let e = c.validate().unwrap_err();
        assert!(
            matches!(
                e,
                ModelError::InvalidConfig {
                    field: "num_hidden_layers",
                    ..
                }
            ),
            "{e}"
        );
        // each size within its own bound, the product beyond the parameter bound
        let mut c = ModelConfig::tiny(LIMITS.vocab_size);
        c.hidden_size = LIMITS.hidden_size;
        c.intermediate_size = LIMITS.intermediate_size;
        c.num_hidden_layers = LIMITS.num_hidden_layers;
        let e = c.validate().unwrap_err();
        assert!(e.to_string().contains("parameter count"), "{e}");
    }
}
