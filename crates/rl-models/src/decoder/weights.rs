//! Building a model's parameters: from an HF checkpoint (checked tensor by tensor) or from a seeded
//! HF-style random init; and writing them back as HF tensors / safetensors.

use std::path::{Path, PathBuf};

use burn::module::Param;
use burn::nn::Embedding;
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::checkpoint_layout::{expected_tensors, tensors_per_layer};
use super::dtype::ComputeDtype;
use super::layers::{Attention, DecoderLayer, Linear, Mlp, RmsNorm};
use super::{CausalLm, ModelConfig};
use crate::error::ModelError;
use crate::safetensors_io::{SaveDtype, WeightFiles, write_checkpoint};

/// An HF tensor: name, shape, row-major f32 values.
pub type HfTensor = (String, Vec<usize>, Vec<f32>);

/// Where the parameter values come from when building a model.
pub(crate) trait WeightSource {
    /// Values of HF tensor `name` (HF layout, row-major) with the given shape.
    fn take(&mut self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError>;

    /// Where the values of `name` come from, for error messages: its file.
    fn origin(&self, name: &str) -> PathBuf;
}

pub(crate) struct FileSource<'a>(pub(crate) &'a WeightFiles);

impl WeightSource for FileSource<'_> {
    fn take(&mut self, name: &str, _shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        self.0.read_f32(name)
    }

    fn origin(&self, name: &str) -> PathBuf {
        self.0
            .file_of(name)
            .map_or_else(|| PathBuf::from(self.0.describe()), Path::to_path_buf)
    }
}

/// HF init: normal(0, initializer_range) for linears and the embedding, ones for norms (zeros for
/// Gemma's, which scale by `1 + w`); drawn on
/// the host from ChaCha8 so that the same seed gives the same model on every backend.
///
/// Every value is the next normal of one ChaCha8 stream (Box-Muller on two `f64`s, i.e. two
/// `u64`s, i.e. four 32-bit words of the stream), in checkpoint order. ChaCha is seekable, so a
/// large tensor is drawn in slices on several threads, each from its own copy of the generator
/// set to the slice's word position ([`draw_normals`]): the values are bit for bit those of one
/// thread drawing them in order, and the stream continues where that thread would have left it.
struct RandomSource {
    rng: ChaCha8Rng,
    std: f64,
    /// Every norm weight's value: 1, or 0 where the norm scales by `1 + w` (Gemma).
    norm_init: f32,
    /// Threads a large tensor is drawn on (1: all on the calling thread).
    threads: usize,
}

/// 32-bit words of the ChaCha8 stream one normal value consumes (two `u64` draws).
const WORDS_PER_NORMAL: u128 = 4;

/// Tensors below this many values (and slices below it) are drawn on the calling thread.
const PARALLEL_MIN_VALUES: usize = 1 << 16;

/// One standard normal value: Box-Muller, u1 in (0, 1].
fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// Fills `out` with the next `out.len()` normals of `rng`, times `std`, as f32.
pub(crate) fn fill_normals(rng: &mut ChaCha8Rng, std: f64, out: &mut [f32]) {
    for v in out {
        *v = (normal(rng) * std) as f32;
    }
}

/// `rng` moved to `values` normals past the word position `start`.
fn seek(rng: &ChaCha8Rng, start: u128, values: usize) -> ChaCha8Rng {
    let mut r = rng.clone();
    r.set_word_pos(start + values as u128 * WORDS_PER_NORMAL);
    r
}

/// The next `n` normals of `rng` (times `std`, as f32) on up to `threads` threads, in slices of
/// at least `min_slice` values; afterwards `rng` stands where drawing them in order leaves it.
/// Equal, bit for bit, to [`fill_normals`] on one thread. A slice whose thread cannot be
/// started is drawn on the calling thread.
fn draw_normals(
    rng: &mut ChaCha8Rng,
    std: f64,
    n: usize,
    threads: usize,
    min_slice: usize,
) -> Vec<f32> {
    let mut out = vec![0.0f32; n];
    let parts = threads.min(n / min_slice.max(1)).max(1);
    if parts == 1 {
        fill_normals(rng, std, &mut out);
        return out;
    }
    let start = rng.get_word_pos();
    let slice = n.div_ceil(parts);
    let mut not_started = Vec::new();
    std::thread::scope(|s| {
        let mut slices = out.chunks_mut(slice).enumerate();
        let first = slices.next();
        for (i, part) in slices {
            let mut local = seek(rng, start, i * slice);
            let job = move || fill_normals(&mut local, std, part);
            if std::thread::Builder::new().spawn_scoped(s, job).is_err() {
                not_started.push(i);
            }
        }
        if let Some((_, part)) = first {
            fill_normals(&mut seek(rng, start, 0), std, part);
        }
    });
    for i in not_started {
        let part = &mut out[i * slice..n.min((i + 1) * slice)];
        fill_normals(&mut seek(rng, start, i * slice), std, part);
    }
    *rng = seek(rng, start, n);
    out
}

impl WeightSource for RandomSource {
    fn take(&mut self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        let n: usize = shape.iter().product();
        if name.ends_with("norm.weight") {
            return Ok(vec![self.norm_init; n]);
        }
        if name.ends_with(".bias") {
            // HF initialises biases to zero; nothing is drawn for them, so a config without
            // biases draws the same weights as before biases existed.
            return Ok(vec![0.0; n]);
        }
        Ok(draw_normals(
            &mut self.rng,
            self.std,
            n,
            self.threads,
            PARALLEL_MIN_VALUES,
        ))
    }

    fn origin(&self, _name: &str) -> PathBuf {
        PathBuf::from("<random init>")
    }
}

impl ModelConfig {
    /// A randomly initialised model with seed 0; see [`ModelConfig::init_seeded`].
    pub fn init<B: Backend>(&self, device: &B::Device) -> Result<CausalLm<B>, ModelError> {
        self.init_seeded(0, device)
    }

    /// A randomly initialised model as HF initialises one: every linear weight and the embedding
    /// drawn from normal(0, `initializer_range`), every norm weight 1. Values are drawn on the host
    /// from `ChaCha8Rng::seed_from_u64(seed)`, tensor by tensor in checkpoint order, so a seed
    /// gives the same model on every backend (burn's backend RNG is not used). Tensors of 65,536
    /// values or more are drawn on all available cores, each core taking a slice of the same
    /// stream, with the same values as one core drawing them in order.
    pub fn init_seeded<B: Backend>(
        &self,
        seed: u64,
        device: &B::Device,
    ) -> Result<CausalLm<B>, ModelError> {
        self.validate()?;
        let mut source = RandomSource {
            rng: ChaCha8Rng::seed_from_u64(seed),
            std: self.initializer_range,
            norm_init: if self.family.norm_unit_offset() {
                0.0
            } else {
                1.0
            },
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        CausalLm::build(self.clone(), &mut source, device)
    }
}

/// Builds parameters from a [`WeightSource`], converting HF layouts to burn's.
struct Builder<'a, B: Backend> {
    source: &'a mut dyn WeightSource,
    shapes: std::collections::HashMap<String, Vec<usize>>,
    device: &'a B::Device,
    eps: f64,
    unit_offset: bool,
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
                file: self.source.origin(name),
                config: None,
                tensor: name.to_string(),
                expected: shape,
                found: vec![values.len()],
            });
        }
        Ok((values, shape))
    }

    /// A linear layer `prefix.weight` (`[out, in]` as in the checkpoint), with `prefix.bias`
    /// when `bias`.
    fn linear(&mut self, prefix: &str, bias: bool) -> Result<Linear<B>, ModelError> {
        let (values, shape) = self.raw(&format!("{prefix}.weight"))?;
        let t =
            Tensor::<B, 2>::from_data(TensorData::new(values, [shape[0], shape[1]]), self.device);
        let bias = if bias {
            let (values, shape) = self.raw(&format!("{prefix}.bias"))?;
            Some(Param::from_tensor(Tensor::from_data(
                TensorData::new(values, [shape[0]]),
                self.device,
            )))
        } else {
            None
        };
        Ok(Linear {
            weight: Param::from_tensor(t),
            bias,
            lora: None,
        })
    }

    fn norm(&mut self, name: &str) -> Result<RmsNorm<B>, ModelError> {
        let (values, shape) = self.raw(name)?;
        Ok(RmsNorm {
            weight: Param::from_tensor(Tensor::from_data(
                TensorData::new(values, [shape[0]]),
                self.device,
            )),
            eps: self.eps,
            unit_offset: self.unit_offset,
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

/// The files of a decoder body (`model.*`, as the config's family lays it out) with the heads
/// `required` (e.g. an untied `lm_head.weight`, a reward model's `score.weight`) and `optional`
/// (read if stored, e.g. a tied model's `lm_head.weight`). The tensor count the config implies is
/// compared with the files' first, so a config that claims more layers than the files hold fails
/// without allocating for them.
pub(crate) fn check_body_and_heads(
    config: &ModelConfig,
    config_path: &Path,
    files: &WeightFiles,
    required: &[(String, Vec<usize>)],
    optional: &[(String, Vec<usize>)],
) -> Result<(), ModelError> {
    let needed = config
        .num_hidden_layers
        .checked_mul(tensors_per_layer(config))
        .and_then(|n| n.checked_add(2 + required.len()));
    // A whole layer or more short: the config and the checkpoint disagree on the model's size,
    // which one missing tensor name would hide.
    let short_by_a_layer = |n: usize| n >= files.entries.len() + tensors_per_layer(config);
    if needed.is_none_or(short_by_a_layer) {
        return Err(ModelError::ConfigMismatch {
            config: config_path.to_path_buf(),
            field: "num_hidden_layers",
            message: format!(
                "{} layers of the {} family need {} tensors; the checkpoint ({}) holds {}",
                config.num_hidden_layers,
                config.family,
                needed.map_or("more than 2^64".to_string(), |n| n.to_string()),
                files.describe(),
                files.entries.len()
            ),
        });
    }
    let mut expected: Vec<(String, Vec<usize>)> = expected_tensors(config)
        .into_iter()
        .filter(|(name, _)| name != "lm_head.weight")
        .collect();
    expected.extend(required.iter().cloned());
    expected.extend(optional.iter().cloned());
    check_files(files, config_path, &expected, optional)
}

/// Every tensor of `files` against `expected` (name, shape): an unknown name, another shape or a
/// dtype other than f32/bf16/f16 is an error naming the tensor and its file, and so is a missing
/// tensor unless it is listed in `optional`.
pub(crate) fn check_files(
    files: &WeightFiles,
    config_path: &Path,
    expected: &[(String, Vec<usize>)],
    optional: &[(String, Vec<usize>)],
) -> Result<(), ModelError> {
    let allowed: std::collections::HashMap<&str, &[usize]> = expected
        .iter()
        .map(|(n, s)| (n.as_str(), s.as_slice()))
        .collect();
    for (name, entry) in &files.entries {
        let Some(shape) = allowed.get(name.as_str()) else {
            return Err(ModelError::UnexpectedTensor {
                file: files.files[entry.file].clone(),
                tensor: name.clone(),
            });
        };
        if entry.shape.as_slice() != *shape {
            return Err(ModelError::ShapeMismatch {
                file: files.files[entry.file].clone(),
                config: Some(config_path.to_path_buf()),
                tensor: name.clone(),
                expected: shape.to_vec(),
                found: entry.shape.clone(),
            });
        }
        use safetensors::Dtype;
        if !matches!(entry.dtype, Dtype::F32 | Dtype::BF16 | Dtype::F16) {
            return Err(ModelError::UnsupportedDtype {
                file: files.files[entry.file].clone(),
                tensor: name.clone(),
                dtype: format!("{:?}", entry.dtype),
            });
        }
    }
    for (name, _) in expected {
        if !files.entries.contains_key(name) && !optional.iter().any(|(o, _)| o == name) {
            return Err(ModelError::MissingTensor {
                tensor: name.clone(),
                searched: files.describe(),
            });
        }
    }
    Ok(())
}

impl WeightSource for crate::gguf::GgufModel {
    fn take(&mut self, name: &str, _shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        self.read_hf(name)
    }

    fn origin(&self, _name: &str) -> PathBuf {
        self.path().to_path_buf()
    }
}

impl<B: Backend> CausalLm<B> {
    pub(crate) fn build(
        config: ModelConfig,
        source: &mut dyn WeightSource,
        device: &B::Device,
    ) -> Result<Self, ModelError> {
        let mut bld = Builder::<B> {
            source,
            shapes: expected_tensors(&config).into_iter().collect(),
            device,
            eps: config.rms_norm_eps,
            unit_offset: config.family.norm_unit_offset(),
        };
        let sandwich = config.family.sandwich_norms();
        let scale = 1.0
            / config
                .query_pre_attn_scalar
                .unwrap_or(config.head_dim as f64)
                .sqrt();
        let embed_tokens = bld.embedding("model.embed_tokens.weight")?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        let (qkv_bias, o_bias) = (config.qkv_bias, config.o_bias);
        for n in 0..config.num_hidden_layers {
            let p = format!("model.layers.{n}");
            let input_layernorm = bld.norm(&format!("{p}.input_layernorm.weight"))?;
            let q_proj = bld.linear(&format!("{p}.self_attn.q_proj"), qkv_bias)?;
            let k_proj = bld.linear(&format!("{p}.self_attn.k_proj"), qkv_bias)?;
            let v_proj = bld.linear(&format!("{p}.self_attn.v_proj"), qkv_bias)?;
            let o_proj = bld.linear(&format!("{p}.self_attn.o_proj"), o_bias)?;
            let (q_norm, k_norm) = if config.qk_norm() {
                (
                    Some(bld.norm(&format!("{p}.self_attn.q_norm.weight"))?),
                    Some(bld.norm(&format!("{p}.self_attn.k_norm.weight"))?),
                )
            } else {
                (None, None)
            };
            let post_attention_layernorm =
                bld.norm(&format!("{p}.post_attention_layernorm.weight"))?;
            let (pre_feedforward_layernorm, post_feedforward_layernorm) = if sandwich {
                (
                    Some(bld.norm(&format!("{p}.pre_feedforward_layernorm.weight"))?),
                    Some(bld.norm(&format!("{p}.post_feedforward_layernorm.weight"))?),
                )
            } else {
                (None, None)
            };
            layers.push(DecoderLayer {
                input_layernorm,
                self_attn: Attention {
                    q_proj,
                    k_proj,
                    v_proj,
                    o_proj,
                    q_norm,
                    k_norm,
                    num_heads: config.num_attention_heads,
                    num_kv_heads: config.num_key_value_heads,
                    head_dim: config.head_dim,
                    scale,
                    local: config
                        .sliding_window
                        .as_ref()
                        .is_some_and(|w| w.is_local(n)),
                },
                post_attention_layernorm,
                pre_feedforward_layernorm,
                post_feedforward_layernorm,
                mlp: Mlp {
                    gate_proj: bld.linear(&format!("{p}.mlp.gate_proj"), false)?,
                    up_proj: bld.linear(&format!("{p}.mlp.up_proj"), false)?,
                    down_proj: bld.linear(&format!("{p}.mlp.down_proj"), false)?,
                    activation: config.family.activation(),
                },
            });
        }
        let norm = bld.norm("model.norm.weight")?;
        let lm_head = if config.tie_word_embeddings {
            None
        } else {
            Some(bld.linear("lm_head", false)?)
        };
        Ok(Self {
            embed_tokens,
            layers,
            norm,
            lm_head,
            config,
            lora: None,
            dtype: ComputeDtype::F32,
        })
    }

    /// Loads an HF checkpoint. `path` is a model directory (with `config.json` and
    /// `model.safetensors` or `model.safetensors.index.json` + shards), a `.safetensors` file or
    /// an index file (with `config.json` next to it). Tensors may be bf16, f16 or f32; they are
    /// converted to f32. When the embeddings are tied a stored `lm_head.weight` is accepted (its
    /// shape and dtype are checked) and ignored, as HF does.
    ///
    /// `path` may also be a GGUF file (`*.gguf`, see [`crate::gguf::model`]): its metadata gives
    /// the config and its tensors are dequantized to f32.
    ///
    /// Every mismatch is a typed error naming the tensor: missing, unexpected, wrong shape,
    /// unsupported dtype, truncated file, inconsistent shard index.
    pub fn load(path: impl AsRef<Path>, device: &B::Device) -> Result<Self, ModelError> {
        let path = path.as_ref();
        if crate::gguf::is_gguf(path) {
            let mut gguf = crate::gguf::GgufModel::open(path)?;
            let config = gguf.config().clone();
            return Self::build(config, &mut gguf, device);
        }
        let config_path = if path.is_dir() {
            path.join("config.json")
        } else {
            path.parent().unwrap_or(Path::new(".")).join("config.json")
        };
        let config = ModelConfig::from_file(&config_path)?;
        let files = WeightFiles::open(path)?;
        Self::check_tensors(&config, &config_path, &files)?;
        Self::build(config, &mut FileSource(&files), device)
    }

    /// Every tensor of the files against the config: names, shapes and dtypes (a stored
    /// `lm_head.weight` of a tied model is accepted, checked and ignored, as HF does).
    fn check_tensors(
        config: &ModelConfig,
        config_path: &Path,
        files: &WeightFiles,
    ) -> Result<(), ModelError> {
        let head = (
            "lm_head.weight".to_string(),
            vec![config.vocab_size, config.hidden_size],
        );
        let (required, optional) = if config.tie_word_embeddings {
            (Vec::new(), vec![head])
        } else {
            (vec![head], Vec::new())
        };
        check_body_and_heads(config, config_path, files, &required, &optional)
    }

    /// The parameters as HF tensors: `(name, shape, row-major f32 values)` in checkpoint order
    /// (linear weights transposed back to `[out, in]`; no `lm_head.weight` when tied; LoRA
    /// adapters merged into their base weights, see [`CausalLm::merged`]).
    pub fn hf_tensors(&self) -> Result<Vec<HfTensor>, ModelError> {
        let lin =
            |out: &mut Vec<HfTensor>, prefix: String, l: &Linear<B>| push_linear(out, &prefix, l);
        let norm =
            |out: &mut Vec<HfTensor>, name: String, w: &RmsNorm<B>| -> Result<(), ModelError> {
                let v = host_f32(w.weight.val())?;
                out.push((name, vec![v.len()], v));
                Ok(())
            };
        let mut out = Vec::new();
        let [vocab, h] = self.embed_tokens.weight.val().dims();
        out.push((
            "model.embed_tokens.weight".to_string(),
            vec![vocab, h],
            host_f32(self.embed_tokens.weight.val())?,
        ));
        for (n, layer) in self.layers.iter().enumerate() {
            let p = format!("model.layers.{n}");
            let a = &layer.self_attn;
            norm(
                &mut out,
                format!("{p}.input_layernorm.weight"),
                &layer.input_layernorm,
            )?;
            lin(&mut out, format!("{p}.self_attn.q_proj"), &a.q_proj)?;
            lin(&mut out, format!("{p}.self_attn.k_proj"), &a.k_proj)?;
            lin(&mut out, format!("{p}.self_attn.v_proj"), &a.v_proj)?;
            lin(&mut out, format!("{p}.self_attn.o_proj"), &a.o_proj)?;
            if let (Some(qn), Some(kn)) = (&a.q_norm, &a.k_norm) {
                norm(&mut out, format!("{p}.self_attn.q_norm.weight"), qn)?;
                norm(&mut out, format!("{p}.self_attn.k_norm.weight"), kn)?;
            }
            norm(
                &mut out,
                format!("{p}.post_attention_layernorm.weight"),
                &layer.post_attention_layernorm,
            )?;
            if let (Some(pre), Some(post)) = (
                &layer.pre_feedforward_layernorm,
                &layer.post_feedforward_layernorm,
            ) {
                norm(
                    &mut out,
                    format!("{p}.pre_feedforward_layernorm.weight"),
                    pre,
                )?;
                norm(
                    &mut out,
                    format!("{p}.post_feedforward_layernorm.weight"),
                    post,
                )?;
            }
            lin(&mut out, format!("{p}.mlp.gate_proj"), &layer.mlp.gate_proj)?;
            lin(&mut out, format!("{p}.mlp.up_proj"), &layer.mlp.up_proj)?;
            lin(&mut out, format!("{p}.mlp.down_proj"), &layer.mlp.down_proj)?;
        }
        norm(&mut out, "model.norm.weight".to_string(), &self.norm)?;
        if let Some(head) = &self.lm_head {
            lin(&mut out, "lm_head".to_string(), head)?;
        }
        Ok(out)
    }

    /// Saves `config.json` + `model.safetensors` (f32) in HF layout into `dir` (created if
    /// needed); `lm_head.weight` is omitted when tied, as transformers 5 does. Loading the result
    /// gives back the same parameters bit for bit.
    pub fn save(&self, dir: impl AsRef<Path>) -> Result<(), ModelError> {
        self.save_with(dir, SaveDtype::F32, None)
    }

    /// [`CausalLm::save`] with a choice of on-disk dtype and optional sharding into files of at most
    /// `max_shard_bytes` (with `model.safetensors.index.json`).
    pub fn save_with(
        &self,
        dir: impl AsRef<Path>,
        dtype: SaveDtype,
        max_shard_bytes: Option<u64>,
    ) -> Result<(), ModelError> {
        let config = self.hf_config(dtype);
        write_hf_folder(
            dir.as_ref(),
            &config,
            self.hf_tensors()?,
            dtype,
            max_shard_bytes,
        )
    }

    /// The config as HF `config.json` with `dtype` as the checkpoint's dtype.
    pub(crate) fn hf_config(&self, dtype: SaveDtype) -> serde_json::Value {
        let mut config = self.config.clone();
        config.torch_dtype = Some(dtype.hf_name().to_string());
        config.to_json_value()
    }
}

/// A tensor's values on the host, row-major f32.
pub(crate) fn host_f32<B: Backend, const D: usize>(
    t: Tensor<B, D>,
) -> Result<Vec<f32>, ModelError> {
    t.into_data()
        .convert::<f32>()
        .into_vec::<f32>()
        .map_err(|e| ModelError::Data(format!("{e:?}")))
}

/// `prefix.weight` (`[out, in]`; with a LoRA adapter the merged W + s·B·A, so the checkpoint
/// computes what the model computes) and `prefix.bias` when the layer has one.
pub(crate) fn push_linear<B: Backend>(
    out: &mut Vec<HfTensor>,
    prefix: &str,
    l: &Linear<B>,
) -> Result<(), ModelError> {
    let w = l.effective_weight();
    let shape = w.dims().to_vec();
    out.push((format!("{prefix}.weight"), shape, host_f32(w)?));
    if let Some(b) = &l.bias {
        let v = host_f32(b.val())?;
        out.push((format!("{prefix}.bias"), vec![v.len()], v));
    }
    Ok(())
}

/// An HF checkpoint folder: `dir` (created if needed) with `config.json` and the tensors in
/// `dtype`, sharded into files of at most `max_shard_bytes` when given.
pub(crate) fn write_hf_folder(
    dir: &Path,
    config: &serde_json::Value,
    tensors: Vec<HfTensor>,
    dtype: SaveDtype,
    max_shard_bytes: Option<u64>,
) -> Result<(), ModelError> {
    std::fs::create_dir_all(dir).map_err(|source| ModelError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    crate::json_file::write_pretty(&dir.join("config.json"), config)?;
    write_checkpoint(dir, tensors, dtype, max_shard_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::Flex;

    /// FNV-1a over the names, shapes and f32 bit patterns of every HF tensor.
    fn fingerprint(tensors: &[HfTensor]) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |bytes: &[u8]| {
            for b in bytes {
                h ^= u64::from(*b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        };
        for (name, shape, values) in tensors {
            eat(name.as_bytes());
            for d in shape {
                eat(&(*d as u64).to_le_bytes());
            }
            for v in values {
                eat(&v.to_bits().to_le_bytes());
            }
        }
        h
    }

    /// The values a seed gives are pinned (fingerprints of the sequential draw this crate used
    /// before large tensors were drawn in parallel): the main example, the tests and the
    /// benchmarks depend on them. Vocabularies of 4096 and 20,000 give embeddings of 262,144
    /// and 1,280,000 values, drawn in parallel slices where the machine has several cores.
    #[test]
    fn seeded_init_values_are_pinned() {
        for (vocab, seed, want) in [
            (32usize, 3u64, 0xb124_43da_f355_b6a2u64),
            (4096, 0, 0x49b6_5693_0a59_f8f4),
            (20_000, 7, 0x14b2_56bc_2df5_04d4),
        ] {
            let model: CausalLm<Flex> = ModelConfig::tiny(vocab)
                .init_seeded(seed, &Default::default())
                .unwrap();
            let got = fingerprint(&model.hf_tensors().unwrap());
            assert_eq!(got, want, "vocab {vocab} seed {seed}: {got:#018x}");
        }
    }

    /// The full Qwen3-0.6B shape (596M values, 2.4 GB twice over), pinned like the tiny ones:
    /// `cargo test -p rl-models --lib pinned_at_0_6b -- --ignored --nocapture` (prints the time).
    #[test]
    #[ignore]
    fn seeded_init_values_are_pinned_at_0_6b() {
        let t0 = std::time::Instant::now();
        let model: CausalLm<Flex> = ModelConfig::qwen3_0_6b()
            .init_seeded(0, &Default::default())
            .unwrap();
        let secs = t0.elapsed().as_secs_f64();
        let got = fingerprint(&model.hf_tensors().unwrap());
        eprintln!("0.6b seed 0: {got:#018x}, init {secs:.1} s");
        assert_eq!(got, 0x0656_5a20_c209_528a);
    }

    /// Slices on several threads (forced here with small slices, whatever the core count) give
    /// the sequential stream's values and leave the generator where the sequential draw does,
    /// including slice boundaries that are not multiples of the ChaCha block.
    #[test]
    fn parallel_draw_equals_sequential_stream() {
        for (n, threads, min_slice) in [(1000usize, 3usize, 10usize), (4099, 7, 1), (64, 4, 16)] {
            let mut seq = ChaCha8Rng::seed_from_u64(11);
            let _ = normal(&mut seq); // start off a block boundary
            let mut par = seq.clone();
            let mut want = vec![0.0f32; n];
            fill_normals(&mut seq, 0.02, &mut want);
            let got = draw_normals(&mut par, 0.02, n, threads, min_slice);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "n {n}, {threads} threads");
            assert_eq!(par.get_word_pos(), seq.get_word_pos());
            assert_eq!(normal(&mut par).to_bits(), normal(&mut seq).to_bits());
        }
    }
}
