//! The supported architectures by name.

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
}

/// Every family, in the order error messages list them.
pub const FAMILIES: [Family; 3] = [Family::Qwen3, Family::Llama, Family::Qwen2];

impl Family {
    /// HF `model_type` (also the GGUF `general.architecture`).
    pub fn model_type(self) -> &'static str {
        match self {
            Family::Qwen3 => "qwen3",
            Family::Llama => "llama",
            Family::Qwen2 => "qwen2",
        }
    }

    /// HF `architectures[0]`.
    pub fn architecture(self) -> &'static str {
        match self {
            Family::Qwen3 => "Qwen3ForCausalLM",
            Family::Llama => "LlamaForCausalLM",
            Family::Qwen2 => "Qwen2ForCausalLM",
        }
    }

    /// Whether the attention normalises each q and k head (Qwen3's `q_norm` / `k_norm`).
    pub fn qk_norm(self) -> bool {
        self == Family::Qwen3
    }

    /// The family of an HF `model_type` or `architectures` entry.
    pub fn from_hf_name(name: &str) -> Option<Self> {
        FAMILIES
            .into_iter()
            .find(|f| f.model_type() == name || f.architecture() == name)
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
