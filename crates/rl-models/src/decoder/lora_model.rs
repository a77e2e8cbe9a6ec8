//! LoRA adapters on a model's linear layers (the adapter itself: `lora.rs`), read and written in
//! PEFT's format. [`CausalLm::with_lora`] freezes every base parameter
//! (embedding, norms, linears: no gradient, so no optimizer state) and adds fresh adapters with
//! PEFT's default init (A Kaiming-uniform with a = √5, i.e. U(−1/√in, 1/√in); B zeros, so the
//! model starts as the base). [`CausalLm::save_adapter`] / [`CausalLm::load_adapter`] write and read
//! PEFT's `adapter_config.json` + `adapter_model.safetensors` (keys
//! `base_model.model.model.layers.N.self_attn.q_proj.lora_A.weight`, …), so HF `peft` loads our
//! adapters and we load its. [`CausalLm::hf_tensors`] (and so [`CausalLm::save`], GGUF export and the
//! engines' weight sync) gives the merged weights `W + s · B A`.

use std::path::Path;

use burn::module::{Module, Param};
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use super::layers::Linear;
use super::lora::{ADAPTER_CONFIG, ADAPTER_WEIGHTS, LoraAdapter, LoraConfig};
use super::weights::host_f32;
use super::{CausalLm, HfTensor};
use crate::error::ModelError;
use crate::safetensors_io::{SaveDtype, WeightFiles, write_file};

impl<B: Backend> Linear<B> {
    /// The weight the layer computes with: the base weight, plus `s · B A` with an adapter.
    pub fn effective_weight(&self) -> Tensor<B, 2> {
        match &self.lora {
            Some(l) => self.weight.val() + l.merged_delta(),
            None => self.weight.val(),
        }
    }
}

fn tensor2<B: Backend>(values: Vec<f32>, shape: [usize; 2], device: &B::Device) -> Tensor<B, 2> {
    Tensor::from_data(TensorData::new(values, shape), device)
}

impl<B: Backend> CausalLm<B> {
    /// The LoRA settings of the adapters this model carries, if any.
    pub fn lora_config(&self) -> Option<&LoraConfig> {
        self.lora.as_ref()
    }

    /// Every linear layer with its HF module path (`model.layers.N.self_attn.q_proj`) and its
    /// LoRA target name, in checkpoint order.
    fn named_linears(&mut self) -> Vec<(String, &'static str, &mut Linear<B>)> {
        let mut out = Vec::new();
        for (n, layer) in self.layers.iter_mut().enumerate() {
            let p = format!("model.layers.{n}");
            let a = &mut layer.self_attn;
            let m = &mut layer.mlp;
            for (name, group, l) in [
                ("q_proj", "self_attn", &mut a.q_proj),
                ("k_proj", "self_attn", &mut a.k_proj),
                ("v_proj", "self_attn", &mut a.v_proj),
                ("o_proj", "self_attn", &mut a.o_proj),
                ("gate_proj", "mlp", &mut m.gate_proj),
                ("up_proj", "mlp", &mut m.up_proj),
                ("down_proj", "mlp", &mut m.down_proj),
            ] {
                out.push((format!("{p}.{group}.{name}"), name, l));
            }
        }
        out
    }

    /// This model with every base parameter frozen and fresh LoRA adapters on `config`'s target
    /// modules, initialised as PEFT does (A ~ U(−1/√in, 1/√in), B = 0) from
    /// `ChaCha8Rng::seed_from_u64(seed)`, layer by layer in checkpoint order. Errors if the
    /// config is invalid or the model already has adapters.
    pub fn with_lora(self, config: &LoraConfig, seed: u64) -> Result<Self, ModelError> {
        config.validate()?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        self.attach(config, |_, [out, inp], device| {
            let bound = 1.0 / (inp as f64).sqrt();
            let a: Vec<f32> = (0..config.r * inp)
                .map(|_| ((rng.random::<f64>() * 2.0 - 1.0) * bound) as f32)
                .collect();
            Ok((
                tensor2(a, [config.r, inp], device),
                Tensor::zeros([out, config.r], device),
            ))
        })
    }

    /// Freezes the base and attaches adapters made by `make(module path, [out, in], device)`.
    fn attach(
        self,
        config: &LoraConfig,
        mut make: impl FnMut(
            &str,
            [usize; 2],
            &B::Device,
        ) -> Result<(Tensor<B, 2>, Tensor<B, 2>), ModelError>,
    ) -> Result<Self, ModelError> {
        if self.lora.is_some() {
            return Err(ModelError::InvalidInput(
                "the model already carries LoRA adapters; merge them first (CausalLm::merged)"
                    .into(),
            ));
        }
        let device = self.device();
        let mut model = self.no_grad();
        let scaling = config.scaling();
        for (path, name, linear) in model.named_linears() {
            if !config.targets(name) {
                continue;
            }
            let [out, inp] = linear.weight.val().dims();
            let (a, b) = make(&path, [out, inp], &device)?;
            linear.lora = Some(LoraAdapter {
                a: Param::from_tensor(a),
                b: Param::from_tensor(b),
                scaling,
            });
        }
        model.lora = Some(config.clone());
        Ok(model)
    }

    /// The frozen base: this model with its adapters removed, unmerged.
    pub fn without_adapters(&self) -> Self {
        let mut model = self.clone();
        for (_, _, linear) in model.named_linears() {
            linear.lora = None;
        }
        model.lora = None;
        model
    }

    /// The model with every adapter merged into its base weight (`W + s · B A`) and no
    /// adapters: the plain Qwen3 that computes the same function (engines, GGUF, HF).
    pub fn merged(&self) -> Self {
        let mut model = self.clone();
        for (_, _, linear) in model.named_linears() {
            if linear.lora.is_some() {
                let w = linear.effective_weight();
                linear.weight = Param::from_tensor(w);
                linear.lora = None;
            }
        }
        model.lora = None;
        model
    }

    /// The adapters as PEFT names them (`base_model.model.<module>.lora_A.weight` `[r, in]` and
    /// `…lora_B.weight` `[out, r]`), in checkpoint order; empty without adapters.
    pub fn adapter_tensors(&self) -> Result<Vec<HfTensor>, ModelError> {
        let read = |t: Tensor<B, 2>| -> Result<(Vec<usize>, Vec<f32>), ModelError> {
            Ok((t.dims().to_vec(), host_f32(t)?))
        };
        let mut model = self.clone();
        let mut out = Vec::new();
        for (path, _, linear) in model.named_linears() {
            if let Some(l) = &linear.lora {
                let (sa, a) = read(l.a.val())?;
                let (sb, b) = read(l.b.val())?;
                out.push((format!("base_model.model.{path}.lora_A.weight"), sa, a));
                out.push((format!("base_model.model.{path}.lora_B.weight"), sb, b));
            }
        }
        Ok(out)
    }

    /// Writes the adapters in PEFT's layout into `dir` (created if needed):
    /// `adapter_config.json` (`peft_type = "LORA"`, `task_type = "CAUSAL_LM"`, r, `lora_alpha`,
    /// `target_modules`, `use_rslora`, no dropout, no bias) and `adapter_model.safetensors` (f32).
    /// `base_model` is recorded as `base_model_name_or_path`. Errors without adapters.
    pub fn save_adapter(
        &self,
        dir: impl AsRef<Path>,
        base_model: Option<&str>,
    ) -> Result<(), ModelError> {
        let dir = dir.as_ref();
        let Some(config) = &self.lora else {
            return Err(ModelError::InvalidInput(
                "the model carries no LoRA adapters to save".into(),
            ));
        };
        std::fs::create_dir_all(dir).map_err(|source| ModelError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let cfg = json!({
            "peft_type": "LORA",
            "task_type": "CAUSAL_LM",
            "base_model_name_or_path": base_model,
            "r": config.r,
            "lora_alpha": config.alpha,
            "target_modules": config.target_modules,
            "use_rslora": config.use_rslora,
            "lora_dropout": 0.0,
            "bias": "none",
            "fan_in_fan_out": false,
            "use_dora": false,
            "inference_mode": true,
            "init_lora_weights": true,
            "modules_to_save": null,
            "layers_to_transform": null,
            "rank_pattern": {},
            "alpha_pattern": {},
        });
        crate::json_file::write_pretty(&dir.join(ADAPTER_CONFIG), &cfg)?;
        write_file(
            &dir.join(ADAPTER_WEIGHTS),
            self.adapter_tensors()?,
            SaveDtype::F32,
        )
    }

    /// This model with the PEFT LoRA adapter in `dir` attached and the base frozen (see
    /// [`CausalLm::save_adapter`] for the files). Every adapted module's `lora_A` / `lora_B` must be
    /// present with shapes `[r, in]` / `[out, r]`, and nothing else may be: a missing, extra or
    /// misshapen tensor is an error naming it. PEFT options that change the computation in ways
    /// not implemented here (DoRA, bias training, `fan_in_fan_out`, per-layer ranks, layer
    /// subsets, `modules_to_save`) are errors naming the field.
    pub fn load_adapter(self, dir: impl AsRef<Path>) -> Result<Self, ModelError> {
        let dir = dir.as_ref();
        let config_path = dir.join(ADAPTER_CONFIG);
        let config = read_peft_config(&config_path)?;
        let files = WeightFiles::open(&dir.join(ADAPTER_WEIGHTS))?;
        let mut expected: std::collections::BTreeSet<String> =
            files.entries.keys().cloned().collect();
        let file_name = dir.join(ADAPTER_WEIGHTS).display().to_string();
        let model = self.attach(&config, |path, [out, inp], device| {
            let mut take = |which: &str, shape: [usize; 2]| -> Result<Tensor<B, 2>, ModelError> {
                let name = format!("base_model.model.{path}.{which}.weight");
                if !expected.remove(&name) {
                    return Err(ModelError::MissingTensor {
                        tensor: name,
                        searched: file_name.clone(),
                    });
                }
                let found = files
                    .entries
                    .get(&name)
                    .map(|e| e.shape.clone())
                    .unwrap_or_default();
                if found != shape {
                    return Err(ModelError::ShapeMismatch {
                        file: dir.join(ADAPTER_WEIGHTS),
                        config: Some(config_path.clone()),
                        tensor: name,
                        expected: shape.to_vec(),
                        found,
                    });
                }
                Ok(tensor2(files.read_f32(&name)?, shape, device))
            };
            let a = take("lora_A", [config.r, inp])?;
            let b = take("lora_B", [out, config.r])?;
            Ok((a, b))
        })?;
        if let Some(extra) = expected.into_iter().next() {
            return Err(ModelError::InvalidInput(format!(
                "{}: tensor `{extra}` is not an adapter of a targeted module",
                dir.join(ADAPTER_WEIGHTS).display()
            )));
        }
        Ok(model)
    }
}

/// Reads PEFT's `adapter_config.json`, rejecting options this implementation does not compute.
fn read_peft_config(path: &Path) -> Result<LoraConfig, ModelError> {
    let (_, v) = crate::json_file::read(path)?;
    let bad = |field: &str, message: String| {
        ModelError::InvalidInput(format!("{}: `{field}`: {message}", path.display()))
    };
    let peft_type = v.get("peft_type").and_then(Value::as_str).unwrap_or("");
    if peft_type != "LORA" {
        return Err(bad(
            "peft_type",
            format!("`{peft_type}`; only LORA is supported"),
        ));
    }
    let r = v
        .get("r")
        .and_then(Value::as_u64)
        .ok_or_else(|| bad("r", "missing or not a positive integer".into()))? as usize;
    let alpha = v
        .get("lora_alpha")
        .and_then(Value::as_f64)
        .ok_or_else(|| bad("lora_alpha", "missing or not a number".into()))?;
    let target_modules = match v.get("target_modules") {
        Some(Value::Array(a)) => a
            .iter()
            .map(|t| {
                t.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| bad("target_modules", format!("{t} is not a string")))
            })
            .collect::<Result<Vec<_>, _>>()?,
        other => {
            return Err(bad(
                "target_modules",
                format!("{other:?}: expected a list of module names (a regex is not supported)"),
            ));
        }
    };
    let flag = |name: &str| v.get(name).and_then(Value::as_bool).unwrap_or(false);
    for name in ["use_dora", "fan_in_fan_out"] {
        if flag(name) {
            return Err(bad(name, "true is not supported".into()));
        }
    }
    let bias = v.get("bias").and_then(Value::as_str).unwrap_or("none");
    if bias != "none" {
        return Err(bad("bias", format!("`{bias}`; only \"none\" is supported")));
    }
    for name in ["rank_pattern", "alpha_pattern"] {
        if v.get(name)
            .and_then(Value::as_object)
            .is_some_and(|m| !m.is_empty())
        {
            return Err(bad(name, "per-module ranks are not supported".into()));
        }
    }
    if flag("lora_bias") {
        return Err(bad("lora_bias", "true is not supported".into()));
    }
    for name in [
        "layers_to_transform",
        "modules_to_save",
        "exclude_modules",
        "layer_replication",
        "target_parameters",
        "trainable_token_indices",
    ] {
        if v.get(name).is_some_and(|x| !x.is_null()) {
            return Err(bad(name, "must be null".into()));
        }
    }
    let config = LoraConfig {
        r,
        alpha,
        target_modules,
        use_rslora: flag("use_rslora"),
    };
    config
        .validate()
        .map_err(|e| bad("target_modules / r / lora_alpha", e.to_string()))?;
    Ok(config)
}
