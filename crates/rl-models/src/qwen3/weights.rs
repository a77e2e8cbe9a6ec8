//! Building a model's parameters: from an HF checkpoint (checked tensor by tensor) or from a seeded
//! HF-style random init; and writing them back as HF tensors / safetensors.

use std::path::Path;

use burn::module::Param;
use burn::nn::Embedding;
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::layers::{Qwen3Attention, Qwen3DecoderLayer, Qwen3Linear, Qwen3Mlp, Qwen3RmsNorm};
use super::{Qwen3, Qwen3Config};
use crate::error::ModelError;
use crate::safetensors_io::{SaveDtype, WeightFiles, write_checkpoint};

/// An HF tensor: name, shape, row-major f32 values.
pub type HfTensor = (String, Vec<usize>, Vec<f32>);

/// HF tensor names and shapes (`[out, in]` for linears) of a config, in checkpoint order.
pub(crate) fn expected_tensors(config: &Qwen3Config) -> Vec<(String, Vec<usize>)> {
    let h = config.hidden_size;
    let q = config.num_attention_heads * config.head_dim;
    let kv = config.num_key_value_heads * config.head_dim;
    let hd = config.head_dim;
    let i = config.intermediate_size;
    let mut out = vec![(
        "model.embed_tokens.weight".to_string(),
        vec![config.vocab_size, h],
    )];
    for n in 0..config.num_hidden_layers {
        let p = format!("model.layers.{n}");
        out.extend([
            (format!("{p}.input_layernorm.weight"), vec![h]),
            (format!("{p}.self_attn.q_proj.weight"), vec![q, h]),
            (format!("{p}.self_attn.k_proj.weight"), vec![kv, h]),
            (format!("{p}.self_attn.v_proj.weight"), vec![kv, h]),
            (format!("{p}.self_attn.o_proj.weight"), vec![h, q]),
            (format!("{p}.self_attn.q_norm.weight"), vec![hd]),
            (format!("{p}.self_attn.k_norm.weight"), vec![hd]),
            (format!("{p}.post_attention_layernorm.weight"), vec![h]),
            (format!("{p}.mlp.gate_proj.weight"), vec![i, h]),
            (format!("{p}.mlp.up_proj.weight"), vec![i, h]),
            (format!("{p}.mlp.down_proj.weight"), vec![h, i]),
        ]);
    }
    out.push(("model.norm.weight".to_string(), vec![h]));
    if !config.tie_word_embeddings {
        out.push(("lm_head.weight".to_string(), vec![config.vocab_size, h]));
    }
    out
}

/// Where the parameter values come from when building a model.
trait WeightSource {
    /// Values of HF tensor `name` (HF layout, row-major) with the given shape.
    fn take(&mut self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError>;
}

struct FileSource<'a>(&'a WeightFiles);

impl WeightSource for FileSource<'_> {
    fn take(&mut self, name: &str, _shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        self.0.read_f32(name)
    }
}

/// HF init: normal(0, initializer_range) for linears and the embedding, ones for norms; drawn on
/// the host from ChaCha8 so that the same seed gives the same model on every backend.
struct RandomSource {
    rng: ChaCha8Rng,
    std: f64,
}

impl RandomSource {
    fn normal(&mut self) -> f64 {
        // Box-Muller; u1 in (0, 1].
        let u1: f64 = 1.0 - self.rng.random::<f64>();
        let u2: f64 = self.rng.random::<f64>();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

impl WeightSource for RandomSource {
    fn take(&mut self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        let n: usize = shape.iter().product();
        if name.ends_with("norm.weight") {
            return Ok(vec![1.0; n]);
        }
        Ok((0..n).map(|_| (self.normal() * self.std) as f32).collect())
    }
}

impl Qwen3Config {
    /// A randomly initialised model with seed 0; see [`Qwen3Config::init_seeded`].
    pub fn init<B: Backend>(&self, device: &B::Device) -> Result<Qwen3<B>, ModelError> {
        self.init_seeded(0, device)
    }

    /// A randomly initialised model as HF initialises one: every linear weight and the embedding
    /// drawn from normal(0, `initializer_range`), every norm weight 1. Values are drawn on the host
    /// from `ChaCha8Rng::seed_from_u64(seed)`, tensor by tensor in checkpoint order, so a seed
    /// gives the same model on every backend (burn's backend RNG is not used).
    pub fn init_seeded<B: Backend>(
        &self,
        seed: u64,
        device: &B::Device,
    ) -> Result<Qwen3<B>, ModelError> {
        self.validate()?;
        let mut source = RandomSource {
            rng: ChaCha8Rng::seed_from_u64(seed),
            std: self.initializer_range,
        };
        Qwen3::build(self.clone(), &mut source, device)
    }
}

/// Builds parameters from a [`WeightSource`], converting HF layouts to burn's.
struct Builder<'a, B: Backend> {
    source: &'a mut dyn WeightSource,
    shapes: std::collections::HashMap<String, Vec<usize>>,
    device: &'a B::Device,
    eps: f64,
}

impl<B: Backend> Builder<'_, B> {
    fn raw(&mut self, name: &str) -> Result<(Vec<f32>, Vec<usize>), ModelError> {
        let shape = self
            .shapes
            .get(name)
            .cloned()
            .ok_or_else(|| ModelError::MissingTensor {
                tensor: name.to_string(),
                searched: "the config's tensor list".to_string(),
            })?;
        let values = self.source.take(name, &shape)?;
        let n: usize = shape.iter().product();
        if values.len() != n {
            return Err(ModelError::ShapeMismatch {
                tensor: name.to_string(),
                expected: shape,
                found: vec![values.len()],
            });
        }
        Ok((values, shape))
    }

    /// A linear layer, weight `[out, in]` as in the checkpoint.
    fn linear(&mut self, name: &str) -> Result<Qwen3Linear<B>, ModelError> {
        let (values, shape) = self.raw(name)?;
        let t =
            Tensor::<B, 2>::from_data(TensorData::new(values, [shape[0], shape[1]]), self.device);
        Ok(Qwen3Linear {
            weight: Param::from_tensor(t),
            lora: None,
        })
    }

    fn norm(&mut self, name: &str) -> Result<Qwen3RmsNorm<B>, ModelError> {
        let (values, shape) = self.raw(name)?;
        Ok(Qwen3RmsNorm {
            weight: Param::from_tensor(Tensor::from_data(
                TensorData::new(values, [shape[0]]),
                self.device,
            )),
            eps: self.eps,
        })
    }

    fn embedding(&mut self, name: &str) -> Result<Embedding<B>, ModelError> {
        let (values, shape) = self.raw(name)?;
        Ok(Embedding {
            weight: Param::from_tensor(Tensor::from_data(
                TensorData::new(values, [shape[0], shape[1]]),
                self.device,
            )),
        })
    }
}

impl<B: Backend> Qwen3<B> {
    fn build(
        config: Qwen3Config,
        source: &mut dyn WeightSource,
        device: &B::Device,
    ) -> Result<Self, ModelError> {
        let mut bld = Builder::<B> {
            source,
            shapes: expected_tensors(&config).into_iter().collect(),
            device,
            eps: config.rms_norm_eps,
        };
        let embed_tokens = bld.embedding("model.embed_tokens.weight")?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for n in 0..config.num_hidden_layers {
            let p = format!("model.layers.{n}");
            layers.push(Qwen3DecoderLayer {
                input_layernorm: bld.norm(&format!("{p}.input_layernorm.weight"))?,
                self_attn: Qwen3Attention {
                    q_proj: bld.linear(&format!("{p}.self_attn.q_proj.weight"))?,
                    k_proj: bld.linear(&format!("{p}.self_attn.k_proj.weight"))?,
                    v_proj: bld.linear(&format!("{p}.self_attn.v_proj.weight"))?,
                    o_proj: bld.linear(&format!("{p}.self_attn.o_proj.weight"))?,
                    q_norm: bld.norm(&format!("{p}.self_attn.q_norm.weight"))?,
                    k_norm: bld.norm(&format!("{p}.self_attn.k_norm.weight"))?,
                    num_heads: config.num_attention_heads,
                    num_kv_heads: config.num_key_value_heads,
                    head_dim: config.head_dim,
                },
                post_attention_layernorm: bld
                    .norm(&format!("{p}.post_attention_layernorm.weight"))?,
                mlp: Qwen3Mlp {
                    gate_proj: bld.linear(&format!("{p}.mlp.gate_proj.weight"))?,
                    up_proj: bld.linear(&format!("{p}.mlp.up_proj.weight"))?,
                    down_proj: bld.linear(&format!("{p}.mlp.down_proj.weight"))?,
                },
            });
        }
        let norm = bld.norm("model.norm.weight")?;
        let lm_head = if config.tie_word_embeddings {
            None
        } else {
            Some(bld.linear("lm_head.weight")?)
        };
        Ok(Self {
            embed_tokens,
            layers,
            norm,
            lm_head,
            config,
            lora: None,
        })
    }

    /// Loads an HF checkpoint. `path` is a model directory (with `config.json` and
    /// `model.safetensors` or `model.safetensors.index.json` + shards), a `.safetensors` file or
    /// an index file (with `config.json` next to it). Tensors may be bf16, f16 or f32; they are
    /// converted to f32. When the embeddings are tied a stored `lm_head.weight` is accepted (its
    /// shape and dtype are checked) and ignored, as HF does.
    ///
    /// Every mismatch is a typed error naming the tensor: missing, unexpected, wrong shape,
    /// unsupported dtype, truncated file, inconsistent shard index.
    pub fn load(path: impl AsRef<Path>, device: &B::Device) -> Result<Self, ModelError> {
        let path = path.as_ref();
        let config_path = if path.is_dir() {
            path.join("config.json")
        } else {
            path.parent().unwrap_or(Path::new(".")).join("config.json")
        };
        let config = Qwen3Config::from_file(&config_path)?;
        let files = WeightFiles::open(path)?;
        Self::check_tensors(&config, &files)?;
        Self::build(config, &mut FileSource(&files), device)
    }

    fn check_tensors(config: &Qwen3Config, files: &WeightFiles) -> Result<(), ModelError> {
        let expected = expected_tensors(config);
        let mut allowed: std::collections::HashMap<&str, &[usize]> = expected
            .iter()
            .map(|(n, s)| (n.as_str(), s.as_slice()))
            .collect();
        let tied_head = [config.vocab_size, config.hidden_size];
        if config.tie_word_embeddings {
            allowed.insert("lm_head.weight", &tied_head);
        }
        for (name, entry) in &files.entries {
            let Some(shape) = allowed.get(name.as_str()) else {
                return Err(ModelError::UnexpectedTensor {
                    file: files.files[entry.file].clone(),
                    tensor: name.clone(),
                });
            };
            if entry.shape.as_slice() != *shape {
                return Err(ModelError::ShapeMismatch {
                    tensor: name.clone(),
                    expected: shape.to_vec(),
                    found: entry.shape.clone(),
                });
            }
            use safetensors::Dtype;
            if !matches!(entry.dtype, Dtype::F32 | Dtype::BF16 | Dtype::F16) {
                return Err(ModelError::UnsupportedDtype {
                    tensor: name.clone(),
                    dtype: format!("{:?}", entry.dtype),
                });
            }
        }
        for (name, _) in &expected {
            if !files.entries.contains_key(name) {
                return Err(ModelError::MissingTensor {
                    tensor: name.clone(),
                    searched: files.describe(),
                });
            }
        }
        Ok(())
    }

    /// The parameters as HF tensors: `(name, shape, row-major f32 values)` in checkpoint order
    /// (linear weights transposed back to `[out, in]`; no `lm_head.weight` when tied; LoRA
    /// adapters merged into their base weights, see [`Qwen3::merged`]).
    pub fn hf_tensors(&self) -> Result<Vec<HfTensor>, ModelError> {
        let read = |t: Tensor<B, 2>| -> Result<Vec<f32>, ModelError> {
            t.into_data()
                .convert::<f32>()
                .into_vec::<f32>()
                .map_err(|e| ModelError::Data(format!("{e:?}")))
        };
        let read1 = |t: Tensor<B, 1>| -> Result<Vec<f32>, ModelError> {
            t.into_data()
                .convert::<f32>()
                .into_vec::<f32>()
                .map_err(|e| ModelError::Data(format!("{e:?}")))
        };
        // With LoRA adapters, the merged weight W + s·B·A: the checkpoint computes what the
        // model computes.
        let lin = |name: String, l: &Qwen3Linear<B>| -> Result<HfTensor, ModelError> {
            let w = l.effective_weight();
            let shape = w.dims().to_vec();
            Ok((name, shape, read(w)?))
        };
        let mut out = Vec::new();
        let [vocab, h] = self.embed_tokens.weight.val().dims();
        out.push((
            "model.embed_tokens.weight".to_string(),
            vec![vocab, h],
            read(self.embed_tokens.weight.val())?,
        ));
        for (n, layer) in self.layers.iter().enumerate() {
            let p = format!("model.layers.{n}");
            let norm = |name: String, w: &Qwen3RmsNorm<B>| -> Result<_, ModelError> {
                let v = read1(w.weight.val())?;
                Ok((name, vec![v.len()], v))
            };
            let a = &layer.self_attn;
            out.push(norm(
                format!("{p}.input_layernorm.weight"),
                &layer.input_layernorm,
            )?);
            out.push(lin(format!("{p}.self_attn.q_proj.weight"), &a.q_proj)?);
            out.push(lin(format!("{p}.self_attn.k_proj.weight"), &a.k_proj)?);
            out.push(lin(format!("{p}.self_attn.v_proj.weight"), &a.v_proj)?);
            out.push(lin(format!("{p}.self_attn.o_proj.weight"), &a.o_proj)?);
            out.push(norm(format!("{p}.self_attn.q_norm.weight"), &a.q_norm)?);
            out.push(norm(format!("{p}.self_attn.k_norm.weight"), &a.k_norm)?);
            out.push(norm(
                format!("{p}.post_attention_layernorm.weight"),
                &layer.post_attention_layernorm,
            )?);
            out.push(lin(
                format!("{p}.mlp.gate_proj.weight"),
                &layer.mlp.gate_proj,
            )?);
            out.push(lin(format!("{p}.mlp.up_proj.weight"), &layer.mlp.up_proj)?);
            out.push(lin(
                format!("{p}.mlp.down_proj.weight"),
                &layer.mlp.down_proj,
            )?);
        }
        let v = read1(self.norm.weight.val())?;
        out.push(("model.norm.weight".to_string(), vec![v.len()], v));
        if let Some(head) = &self.lm_head {
            out.push(lin("lm_head.weight".to_string(), head)?);
        }
        Ok(out)
    }

    /// Saves `config.json` + `model.safetensors` (f32) in HF layout into `dir` (created if
    /// needed); `lm_head.weight` is omitted when tied, as transformers 5 does. Loading the result
    /// gives back the same parameters bit for bit.
    pub fn save(&self, dir: impl AsRef<Path>) -> Result<(), ModelError> {
        self.save_with(dir, SaveDtype::F32, None)
    }

    /// [`Qwen3::save`] with a choice of on-disk dtype and optional sharding into files of at most
    /// `max_shard_bytes` (with `model.safetensors.index.json`).
    pub fn save_with(
        &self,
        dir: impl AsRef<Path>,
        dtype: SaveDtype,
        max_shard_bytes: Option<u64>,
    ) -> Result<(), ModelError> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir).map_err(|source| ModelError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let mut config = self.config.clone();
        config.torch_dtype = Some(dtype.hf_name().to_string());
        let config_path = dir.join("config.json");
        let text = serde_json::to_string_pretty(&config.to_json_value()).map_err(|source| {
            ModelError::Json {
                path: config_path.clone(),
                source,
            }
        })?;
        std::fs::write(&config_path, text).map_err(|source| ModelError::Io {
            path: config_path.clone(),
            source,
        })?;
        write_checkpoint(dir, self.hf_tensors()?, dtype, max_shard_bytes)
    }
}
