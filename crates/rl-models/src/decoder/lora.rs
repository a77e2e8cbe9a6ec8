//! A LoRA adapter and its settings: `y = x Wᵀ + s · (x Aᵀ) Bᵀ` with the base weight `W`
//! (`[out, in]`) frozen, `A` `[r, in]`, `B` `[out, r]` and `s = alpha / r` (`alpha / √r` with
//! rsLoRA), exactly as PEFT's `lora.Linear` without dropout. Adding adapters to a model, merging
//! them and PEFT's files: `lora_model.rs`.

use burn::module::{Module, Param};
use burn::tensor::Tensor;
use burn::tensor::backend::Backend;

use super::matmul::matmul_hf;
use crate::error::ModelError;

/// PEFT's adapter configuration file.
pub const ADAPTER_CONFIG: &str = "adapter_config.json";
/// PEFT's adapter weights file.
pub const ADAPTER_WEIGHTS: &str = "adapter_model.safetensors";

/// The module names LoRA can target (HF / PEFT `target_modules`).
pub const LORA_TARGETS: [&str; 7] = [
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "gate_proj",
    "up_proj",
    "down_proj",
];

/// LoRA's settings: PEFT's `LoraConfig` fields that change the computation.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoraConfig {
    /// Rank r.
    pub r: usize,
    /// `lora_alpha`: the update is scaled by alpha / r.
    pub alpha: f64,
    /// Module names adapted, from [`LORA_TARGETS`] (default: all seven).
    #[serde(default = "LoraConfig::all_targets")]
    pub target_modules: Vec<String>,
    /// rsLoRA's scaling alpha / √r instead of alpha / r.
    #[serde(default)]
    pub use_rslora: bool,
}

impl LoraConfig {
    /// Rank `r`, `alpha`, every target module, alpha / r scaling.
    pub fn new(r: usize, alpha: f64) -> Self {
        Self {
            r,
            alpha,
            target_modules: Self::all_targets(),
            use_rslora: false,
        }
    }

    /// [`LORA_TARGETS`] as owned names.
    pub fn all_targets() -> Vec<String> {
        LORA_TARGETS.iter().map(|s| s.to_string()).collect()
    }

    /// The factor s of the update `s · B A`.
    pub fn scaling(&self) -> f64 {
        if self.use_rslora {
            self.alpha / (self.r as f64).sqrt()
        } else {
            self.alpha / self.r as f64
        }
    }

    /// r ≥ 1, a finite alpha, and at least one target, each from [`LORA_TARGETS`], none twice.
    pub fn validate(&self) -> Result<(), ModelError> {
        let bad = |m: String| Err(ModelError::InvalidInput(format!("LoRA config: {m}")));
        if self.r == 0 {
            return bad("r must be at least 1".into());
        }
        if !self.alpha.is_finite() {
            return bad(format!("alpha {} is not finite", self.alpha));
        }
        if self.target_modules.is_empty() {
            return bad(format!(
                "target_modules is empty; valid names: {}",
                LORA_TARGETS.join(", ")
            ));
        }
        for (i, t) in self.target_modules.iter().enumerate() {
            if !LORA_TARGETS.contains(&t.as_str()) {
                return bad(format!(
                    "target module `{t}` is not one of {}",
                    LORA_TARGETS.join(", ")
                ));
            }
            if self.target_modules[..i].contains(t) {
                return bad(format!("target module `{t}` is listed twice"));
            }
        }
        Ok(())
    }

    pub(super) fn targets(&self, name: &str) -> bool {
        self.target_modules.iter().any(|t| t == name)
    }
}

/// The low-rank update of one linear layer.
#[derive(Module, Debug)]
pub struct LoraAdapter<B: Backend> {
    /// PEFT `lora_A.weight`, `[r, in]`.
    pub a: Param<Tensor<B, 2>>,
    /// PEFT `lora_B.weight`, `[out, r]`.
    pub b: Param<Tensor<B, 2>>,
    /// The scale s of `s · B A`.
    pub scaling: f64,
}

impl<B: Backend> LoraAdapter<B> {
    /// `s · (x Aᵀ) Bᵀ` for `x: [m, in]`.
    pub(super) fn delta(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        let dtype = x.dtype();
        matmul_hf(
            matmul_hf(x, self.a.val().cast(dtype)),
            self.b.val().cast(dtype),
        )
        .mul_scalar(self.scaling)
    }

    /// `s · B A`, `[out, in]`: what merging adds to the base weight.
    pub fn merged_delta(&self) -> Tensor<B, 2> {
        self.b.val().matmul(self.a.val()).mul_scalar(self.scaling)
    }
}
