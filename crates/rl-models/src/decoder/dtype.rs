//! The compute dtype of the forward pass: f32, or bf16 with f32 master weights.
//!
//! With [`ComputeDtype::Bf16`] the parameters stay f32 (so the gradients and the optimizer state
//! do too) and every layer casts its weights to bf16 where it uses them: autodiff's `cast`
//! backward returns an f32 gradient to the f32 parameter. Activations are bf16 between layers,
//! as in HF transformers with `torch_dtype=torch.bfloat16`, and the statistics that need range
//! stay f32, as HF computes them:
//! - RMSNorm's mean of squares and its reciprocal square root (HF `Qwen3RMSNorm` upcasts);
//! - attention scores after `q kᵀ`: scaled, biased and softmaxed in f32, the probabilities cast
//!   back to bf16 for the product with `v` (HF eager: `softmax(..., dtype=torch.float32)`);
//! - the logits: the LM head's product is bf16, then cast to f32 for the log-softmax, the
//!   log-probs and entropies, the loss and the sampler.
//!
//! Whether a backend can run bf16 is its own answer (`Backend::supports_dtype`): burn-flex (CPU)
//! stores bf16 and computes each kernel in f32 before rounding; CUDA computes bf16 natively (f32
//! accumulation in matmuls and sums); burn's wgpu compiles WGSL, which has no bf16, so
//! `CausalLm::with_compute_dtype` refuses it there (docs/models.md, "bf16").

use burn::tensor::backend::Backend;
use burn::tensor::{DType, FloatDType};

/// The floating-point type of the forward pass (config `model.dtype`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ComputeDtype {
    /// Everything f32 (the default).
    #[default]
    F32,
    /// bf16 weights (cast from f32 masters at use) and activations; f32 statistics and
    /// log-probs.
    Bf16,
}

impl ComputeDtype {
    /// burn's float dtype.
    pub fn float(self) -> FloatDType {
        match self {
            Self::F32 => FloatDType::F32,
            Self::Bf16 => FloatDType::BF16,
        }
    }

    /// The config name: `f32` or `bf16`.
    pub fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::Bf16 => "bf16",
        }
    }
}

impl std::fmt::Display for ComputeDtype {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ComputeDtype {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "f32" => Ok(Self::F32),
            "bf16" => Ok(Self::Bf16),
            _ => Err(format!("dtype `{s}`: expected f32 or bf16")),
        }
    }
}

/// Whether the backend of `device` stores and computes `dtype`.
pub fn backend_supports<B: Backend>(dtype: ComputeDtype, device: &B::Device) -> bool {
    B::supports_dtype(device, DType::from(dtype.float()))
}
