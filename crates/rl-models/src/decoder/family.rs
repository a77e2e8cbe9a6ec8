//! The supported architectures by name, and what each one's decoder computes differently.
//!
//! This file is the registry of families: a family is one variant here, its names and the
//! switches of its layers ([`Family::qk_norm`] …), which the decoder reads; how its HF
//! `config.json` is spelled (defaults, refusals, writing it back) lives in its own file under
//! `crate::families`, which depends on the decoder and never the other way round.

/// A supported architecture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// `Qwen3ForCausalLM`: per-head q/k RMSNorm, no biases.
    Qwen3,
    /// `LlamaForCausalLM` (Llama 2/3, SmolLM, TinyLlama …).
    Llama,
    /// `Qwen2ForCausalLM` (Qwen2, Qwen2.5): Llama with q/k/v biases.
    Qwen2,
    /// `Gemma3ForCausalLM` (the text model of Gemma 3): per-head q/k RMSNorm, norms computing
    /// `x̂ · (1 + w)`, a norm after attention and after the MLP as well as before each, the
    /// tanh-GELU gated MLP, the embedding scaled by √hidden, and local layers with sliding-window
    /// attention and their own RoPE base ([`crate::decoder::SlidingWindow`]).
    Gemma3,
}

/// Every family, in the order error messages list them.
pub const FAMILIES: [Family; 4] = [Family::Qwen3, Family::Llama, Family::Qwen2, Family::Gemma3];

/// The activation of the gated MLP `down(act(gate(x)) · up(x))`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    /// SiLU (`x · σ(x)`, HF `silu`): SwiGLU.
    Silu,
    /// GELU's tanh approximation (HF `gelu_pytorch_tanh`): GeGLU.
    GeluTanh,
}

impl Activation {
    /// HF's name of the activation (`hidden_act` / `hidden_activation`).
    pub fn hf_name(self) -> &'static str {
        match self {
            Activation::Silu => "silu",
            Activation::GeluTanh => "gelu_pytorch_tanh",
        }
    }
}

impl Family {
    /// HF `model_type`.
    pub fn model_type(self) -> &'static str {
        match self {
            Family::Qwen3 => "qwen3",
            Family::Llama => "llama",
            Family::Qwen2 => "qwen2",
            Family::Gemma3 => "gemma3_text",
        }
    }

    /// HF `architectures[0]`.
    pub fn architecture(self) -> &'static str {
        match self {
            Family::Qwen3 => "Qwen3ForCausalLM",
            Family::Llama => "LlamaForCausalLM",
            Family::Qwen2 => "Qwen2ForCausalLM",
            Family::Gemma3 => "Gemma3ForCausalLM",
        }
    }

    /// The prefix of the family's HF classifier classes (`<prefix>ForSequenceClassification`,
    /// `<prefix>ForTokenClassification`).
    pub fn classifier_prefix(self) -> &'static str {
        match self {
            Family::Qwen3 => "Qwen3",
            Family::Llama => "Llama",
            Family::Qwen2 => "Qwen2",
            Family::Gemma3 => "Gemma3Text",
        }
    }

    /// llama.cpp's `general.architecture` of a GGUF file.
    pub fn gguf_architecture(self) -> &'static str {
        match self {
            Family::Gemma3 => "gemma3",
            other => other.model_type(),
        }
    }

    /// Whether the attention normalises each q and k head (Qwen3's and Gemma 3's `q_norm` /
    /// `k_norm`).
    pub fn qk_norm(self) -> bool {
        matches!(self, Family::Qwen3 | Family::Gemma3)
    }

    /// Whether every RMSNorm computes `x̂ · (1 + w)` in f32 (Gemma), not `x̂ · w`: its weights
    /// are stored as offsets from 1 (and initialised to 0).
    pub fn norm_unit_offset(self) -> bool {
        self == Family::Gemma3
    }

    /// Whether each decoder layer normalises the attention's and the MLP's outputs too
    /// (`post_attention_layernorm` after attention, `pre_feedforward_layernorm` before the MLP,
    /// `post_feedforward_layernorm` after it), as Gemma does. Otherwise the layer is pre-norm
    /// only and `post_attention_layernorm` is the norm before the MLP (Llama's naming).
    pub fn sandwich_norms(self) -> bool {
        self == Family::Gemma3
    }

    /// Whether the embedding's output is multiplied by √hidden (in the compute dtype), as Gemma's
    /// `Gemma3TextScaledWordEmbedding` does.
    pub fn scales_embedding(self) -> bool {
        self == Family::Gemma3
    }

    /// The MLP's activation.
    pub fn activation(self) -> Activation {
        match self {
            Family::Gemma3 => Activation::GeluTanh,
            _ => Activation::Silu,
        }
    }

    /// The family of an HF `model_type` or `architectures` entry, or of a GGUF
    /// `general.architecture`.
    pub fn from_hf_name(name: &str) -> Option<Self> {
        FAMILIES.into_iter().find(|f| {
            f.model_type() == name || f.architecture() == name || f.gguf_architecture() == name
        })
    }

    pub(crate) fn names() -> String {
        FAMILIES
            .iter()
            .map(|f| format!("\"{}\"", f.model_type()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl std::fmt::Display for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.model_type())
    }
}
