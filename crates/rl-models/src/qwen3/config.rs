//! [`Qwen3Config`]: the fields of HF `config.json`, with HF's names and defaults.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::error::ModelError;

/// Qwen3 dense causal-LM configuration. Field names are those of HF `config.json`.
///
/// Parsing ([`Qwen3Config::from_json_str`], [`Qwen3Config::from_file`], serde) accepts both the
/// Hub (transformers 4.51) style, with top-level `rope_theta`, `rope_scaling: null` and
/// `torch_dtype`, and the transformers 5 style, with
/// `rope_parameters: {rope_theta, rope_type: "default"}`, `dtype` and `layer_types`.
/// Defaults are those of transformers' `Qwen3Config` class:
///
/// | field | when absent |
/// |---|---|
/// | `head_dim` | 128 |
/// | `num_key_value_heads` | 32 (`null` means `num_attention_heads`) |
/// | `rope_theta` | 10000 |
/// | `rms_norm_eps` | 1e-6 |
/// | `max_position_embeddings` | 32768 |
/// | `tie_word_embeddings` | false |
///
/// `vocab_size`, `hidden_size`, `intermediate_size`, `num_hidden_layers` and
/// `num_attention_heads` are required. Unsupported variants are rejected with
/// [`ModelError::InvalidConfig`] naming the field: `use_sliding_window: true`, `layer_types`
/// other than `full_attention`, rope scaling other than `default`, `hidden_act` other than
/// `silu`, `attention_bias: true`, a non-zero `attention_dropout`, a `model_type` other than
/// `qwen3`. Fields this implementation does not use (`use_cache`, `max_window_layers`, ...) are
/// ignored.
#[derive(Clone, Debug, PartialEq)]
pub struct Qwen3Config {
    /// Rows of the embedding and of the LM head (151,936 for the released models).
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
    /// Epsilon of every RMSNorm (including q_norm / k_norm).
    pub rms_norm_eps: f64,
    /// RoPE base.
    pub rope_theta: f64,
    /// Whether `lm_head` shares the embedding matrix.
    pub tie_word_embeddings: bool,
    /// BOS id (Qwen3 adds none; informational).
    pub bos_token_id: Option<u32>,
    /// EOS id(s): HF accepts an integer or a list.
    pub eos_token_id: Vec<u32>,
    /// Checkpoint dtype as written in the file (`torch_dtype` or `dtype`); informational, the
    /// model always computes in f32.
    pub torch_dtype: Option<String>,
    /// Std of the normal init used by [`Qwen3Config::init_seeded`] (HF: 0.02).
    pub initializer_range: f64,
}

fn invalid(field: &'static str, value: &Value, expected: &str) -> ModelError {
    ModelError::InvalidConfig {
        field,
        value: value.to_string(),
        expected: expected.to_string(),
    }
}

fn missing(field: &'static str) -> ModelError {
    ModelError::InvalidConfig {
        field,
        value: "(missing)".to_string(),
        expected: "a positive integer (required)".to_string(),
    }
}

/// `Some(v)` when present and not null.
fn get<'a>(map: &'a Map<String, Value>, field: &str) -> Option<&'a Value> {
    map.get(field).filter(|v| !v.is_null())
}

fn as_positive(field: &'static str, v: &Value) -> Result<usize, ModelError> {
    v.as_u64()
        .filter(|&n| n > 0)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| invalid(field, v, "a positive integer"))
}

fn required(map: &Map<String, Value>, field: &'static str) -> Result<usize, ModelError> {
    as_positive(field, get(map, field).ok_or_else(|| missing(field))?)
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

/// Accepts `"default"` (or an absent type) for a rope-scaling / rope-parameters object.
fn check_rope_type(field: &'static str, v: &Value) -> Result<(), ModelError> {
    let obj = v
        .as_object()
        .ok_or_else(|| invalid(field, v, "null or an object with rope_type \"default\""))?;
    let ty = obj.get("rope_type").or_else(|| obj.get("type"));
    match ty {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(s)) if s == "default" => Ok(()),
        Some(_) => Err(invalid(
            field,
            v,
            "rope_type \"default\" (linear, dynamic, yarn, llama3 ... rope scaling is not supported)",
        )),
    }
}

impl Qwen3Config {
    /// Parses an HF `config.json` object (either style, see the type docs).
    pub fn from_json_value(value: &Value) -> Result<Self, ModelError> {
        let map = value
            .as_object()
            .ok_or_else(|| invalid("(root)", value, "a JSON object"))?;

        if let Some(v) = get(map, "model_type")
            && v.as_str() != Some("qwen3")
        {
            return Err(invalid("model_type", v, "\"qwen3\""));
        }
        if let Some(v) = get(map, "hidden_act")
            && v.as_str() != Some("silu")
        {
            return Err(invalid("hidden_act", v, "\"silu\""));
        }
        if let Some(v) = get(map, "attention_bias")
            && v.as_bool() != Some(false)
        {
            return Err(invalid(
                "attention_bias",
                v,
                "false (Qwen3 projections have no bias)",
            ));
        }
        if let Some(v) = get(map, "attention_dropout")
            && v.as_f64() != Some(0.0)
        {
            return Err(invalid(
                "attention_dropout",
                v,
                "0.0 (attention dropout is not implemented)",
            ));
        }
        if let Some(v) = get(map, "use_sliding_window")
            && v.as_bool() != Some(false)
        {
            return Err(invalid(
                "use_sliding_window",
                v,
                "false (sliding-window attention is not supported)",
            ));
        }
        if let Some(v) = get(map, "layer_types") {
            let ok = v
                .as_array()
                .is_some_and(|a| a.iter().all(|t| t.as_str() == Some("full_attention")));
            if !ok {
                return Err(invalid(
                    "layer_types",
                    v,
                    "a list of \"full_attention\" (sliding-window layers are not supported)",
                ));
            }
        }
        if let Some(v) = get(map, "rope_scaling") {
            check_rope_type("rope_scaling", v)?;
        }

        let vocab_size = required(map, "vocab_size")?;
        let hidden_size = required(map, "hidden_size")?;
        let intermediate_size = required(map, "intermediate_size")?;
        let num_hidden_layers = required(map, "num_hidden_layers")?;
        let num_attention_heads = required(map, "num_attention_heads")?;
        let num_key_value_heads = match map.get("num_key_value_heads") {
            None => 32,
            Some(Value::Null) => num_attention_heads,
            Some(v) => as_positive("num_key_value_heads", v)?,
        };
        let head_dim = match map.get("head_dim") {
            None => 128,
            Some(v) => as_positive("head_dim", v)?,
        };
        let max_position_embeddings = match get(map, "max_position_embeddings") {
            None => 32768,
            Some(v) => as_positive("max_position_embeddings", v)?,
        };
        let rms_norm_eps = match get(map, "rms_norm_eps") {
            None => 1e-6,
            Some(v) => positive_f64("rms_norm_eps", v)?,
        };
        let mut rope_theta = match get(map, "rope_theta") {
            None => 10000.0,
            Some(v) => positive_f64("rope_theta", v)?,
        };
        if let Some(v) = get(map, "rope_parameters") {
            check_rope_type("rope_parameters", v)?;
            if let Some(t) = v.get("rope_theta").filter(|t| !t.is_null()) {
                rope_theta = positive_f64("rope_parameters", t)?;
            }
        }
        let tie_word_embeddings = match get(map, "tie_word_embeddings") {
            None => false,
            Some(v) => v
                .as_bool()
                .ok_or_else(|| invalid("tie_word_embeddings", v, "true or false"))?,
        };
        let bos_token_id = get(map, "bos_token_id")
            .map(|v| token_id("bos_token_id", v))
            .transpose()?;
        let eos_token_id = match get(map, "eos_token_id") {
            None => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| token_id("eos_token_id", v))
                .collect::<Result<_, _>>()?,
            Some(v) => vec![token_id("eos_token_id", v)?],
        };
        let torch_dtype = get(map, "torch_dtype")
            .or_else(|| get(map, "dtype"))
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| invalid("torch_dtype", v, "a dtype name such as \"bfloat16\""))
            })
            .transpose()?;
        let initializer_range = match get(map, "initializer_range") {
            None => 0.02,
            Some(v) => positive_f64("initializer_range", v)?,
        };
        let config = Self {
            vocab_size,
            hidden_size,
            intermediate_size,
            num_hidden_layers,
            num_attention_heads,
            num_key_value_heads,
            head_dim,
            max_position_embeddings,
            rms_norm_eps,
            rope_theta,
            tie_word_embeddings,
            bos_token_id,
            eos_token_id,
            torch_dtype,
            initializer_range,
        };
        config.validate()?;
        Ok(config)
    }

    /// Parses `config.json` text.
    pub fn from_json_str(text: &str) -> Result<Self, ModelError> {
        let value: Value = serde_json::from_str(text).map_err(|source| ModelError::Json {
            path: "<string>".into(),
            source,
        })?;
        Self::from_json_value(&value)
    }

    /// Reads `config.json` (a file, or a directory holding one).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ModelError> {
        let path = path.as_ref();
        let path = if path.is_dir() {
            path.join("config.json")
        } else {
            path.to_path_buf()
        };
        let text = std::fs::read_to_string(&path).map_err(|source| ModelError::Io {
            path: path.clone(),
            source,
        })?;
        let value: Value = serde_json::from_str(&text).map_err(|source| ModelError::Json {
            path: path.clone(),
            source,
        })?;
        Self::from_json_value(&value)
    }

    /// Checks the invariants the model relies on (for configs built in code; parsing checks them
    /// too).
    pub fn validate(&self) -> Result<(), ModelError> {
        let pos = |field: &'static str, v: usize| {
            if v == 0 {
                Err(invalid(field, &json!(v), "a positive integer"))
            } else {
                Ok(())
            }
        };
        pos("vocab_size", self.vocab_size)?;
        pos("hidden_size", self.hidden_size)?;
        pos("intermediate_size", self.intermediate_size)?;
        pos("num_hidden_layers", self.num_hidden_layers)?;
        pos("num_attention_heads", self.num_attention_heads)?;
        pos("num_key_value_heads", self.num_key_value_heads)?;
        pos("head_dim", self.head_dim)?;
        pos("max_position_embeddings", self.max_position_embeddings)?;
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
        if !(self.rms_norm_eps.is_finite() && self.rms_norm_eps > 0.0) {
            return Err(invalid(
                "rms_norm_eps",
                &json!(self.rms_norm_eps),
                "a positive finite number",
            ));
        }
        if !(self.rope_theta.is_finite() && self.rope_theta > 0.0) {
            return Err(invalid(
                "rope_theta",
                &json!(self.rope_theta),
                "a positive finite number",
            ));
        }
        if !(self.initializer_range.is_finite() && self.initializer_range > 0.0) {
            return Err(invalid(
                "initializer_range",
                &json!(self.initializer_range),
                "a positive finite number",
            ));
        }
        Ok(())
    }

    /// The config as HF `config.json`. Both rope spellings are written (`rope_theta` +
    /// `rope_scaling: null` for transformers 4.x, `rope_parameters` for 5.x) and both dtype
    /// spellings, so that either transformers generation reads it.
    pub fn to_json_value(&self) -> Value {
        let eos = match self.eos_token_id.as_slice() {
            [] => Value::Null,
            [one] => json!(one),
            many => json!(many),
        };
        json!({
            "architectures": ["Qwen3ForCausalLM"],
            "model_type": "qwen3",
            "attention_bias": false,
            "attention_dropout": 0.0,
            "bos_token_id": self.bos_token_id,
            "eos_token_id": eos,
            "head_dim": self.head_dim,
            "hidden_act": "silu",
            "hidden_size": self.hidden_size,
            "initializer_range": self.initializer_range,
            "intermediate_size": self.intermediate_size,
            "max_position_embeddings": self.max_position_embeddings,
            "max_window_layers": self.num_hidden_layers,
            "num_attention_heads": self.num_attention_heads,
            "num_hidden_layers": self.num_hidden_layers,
            "num_key_value_heads": self.num_key_value_heads,
            "rms_norm_eps": self.rms_norm_eps,
            "rope_theta": self.rope_theta,
            "rope_scaling": null,
            "rope_parameters": { "rope_theta": self.rope_theta, "rope_type": "default" },
            "sliding_window": null,
            "use_sliding_window": false,
            "tie_word_embeddings": self.tie_word_embeddings,
            "torch_dtype": self.torch_dtype,
            "dtype": self.torch_dtype,
            "use_cache": true,
            "vocab_size": self.vocab_size,
        })
    }

    /// `nh / nkv`: query heads per key/value head.
    pub fn num_key_value_groups(&self) -> usize {
        self.num_attention_heads / self.num_key_value_heads
    }

    /// Number of parameters (the tied LM head counted once, as `model.num_params()` and HF's
    /// `model.parameters()` count them).
    pub fn num_parameters(&self) -> usize {
        let h = self.hidden_size;
        let q = self.num_attention_heads * self.head_dim;
        let kv = self.num_key_value_heads * self.head_dim;
        let layer =
            h * q + 2 * h * kv + q * h + 2 * self.head_dim + 2 * h + 3 * h * self.intermediate_size;
        let head = if self.tie_word_embeddings {
            0
        } else {
            self.vocab_size * h
        };
        self.vocab_size * h + self.num_hidden_layers * layer + h + head
    }

    fn released(
        hidden_size: usize,
        num_hidden_layers: usize,
        num_attention_heads: usize,
        intermediate_size: usize,
        tie_word_embeddings: bool,
    ) -> Self {
        Self {
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
            tie_word_embeddings,
            bos_token_id: Some(151_643),
            eos_token_id: vec![151_645],
            torch_dtype: Some("bfloat16".to_string()),
            initializer_range: 0.02,
        }
    }

    /// Qwen3-0.6B shapes (hidden 1024, 28 layers, 16/8 heads of 128, MLP 3072, tied).
    pub fn qwen3_0_6b() -> Self {
        Self::released(1024, 28, 16, 3072, true)
    }

    /// Qwen3-1.7B shapes (hidden 2048, 28 layers, 16/8 heads of 128, MLP 6144, tied).
    pub fn qwen3_1_7b() -> Self {
        Self::released(2048, 28, 16, 6144, true)
    }

    /// Qwen3-4B shapes (hidden 2560, 36 layers, 32/8 heads of 128, MLP 9728, tied).
    pub fn qwen3_4b() -> Self {
        Self::released(2560, 36, 32, 9728, true)
    }

    /// Qwen3-8B shapes (hidden 4096, 36 layers, 32/8 heads of 128, MLP 12288, untied).
    pub fn qwen3_8b() -> Self {
        Self::released(4096, 36, 32, 12288, false)
    }

    /// A tiny Qwen3-architecture config for tests and demos: hidden 64, 2 layers, 4 query heads
    /// and 2 key/value heads of 16, MLP 128, tied embeddings, RoPE base 1e6, 1024 positions.
    pub fn tiny(vocab_size: usize) -> Self {
        Self {
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
            tie_word_embeddings: true,
            bos_token_id: None,
            eos_token_id: Vec::new(),
            torch_dtype: Some("float32".to_string()),
            initializer_range: 0.02,
        }
    }
}

impl Serialize for Qwen3Config {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json_value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Qwen3Config {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::from_json_value(&value).map_err(serde::de::Error::custom)
    }
}
