//! Reading and writing HF safetensors checkpoints (single file or sharded with
//! `model.safetensors.index.json`) with the `safetensors` crate, converting bf16/f16/f32 to f32.
//!
//! Files are not read whole: the header is parsed first (with `safetensors::tensor::Metadata`,
//! which validates the offsets), every tensor is checked against the file length, and each tensor
//! is then read on its own, so peak host memory is one tensor beyond the model.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use safetensors::Dtype;
use safetensors::tensor::{Metadata, TensorView};

use crate::error::ModelError;

/// Largest header accepted (the format's own limit is 100 MB).
const MAX_HEADER: u64 = 100_000_000;

/// File name of a single-file checkpoint.
pub const SINGLE_FILE: &str = "model.safetensors";
/// File name of the shard index of a sharded checkpoint.
pub const INDEX_FILE: &str = "model.safetensors.index.json";

/// Where one tensor lives.
#[derive(Clone, Debug)]
pub(crate) struct TensorEntry {
    /// Index into [`WeightFiles::files`].
    pub file: usize,
    pub dtype: Dtype,
    pub shape: Vec<usize>,
    /// Absolute byte offset of the tensor's data in the file.
    pub offset: u64,
    /// Byte length of the data.
    pub len: u64,
}

/// The tensors of a checkpoint, across its files, by HF name.
#[derive(Debug)]
pub(crate) struct WeightFiles {
    pub files: Vec<PathBuf>,
    pub entries: BTreeMap<String, TensorEntry>,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ModelError + '_ {
    move |source| ModelError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Parses the header of one safetensors file and checks every tensor against the file length.
fn read_header(path: &Path) -> Result<(u64, Metadata), ModelError> {
    let mut f = File::open(path).map_err(io_err(path))?;
    let file_len = f.metadata().map_err(io_err(path))?.len();
    let invalid = |message: String| ModelError::InvalidSafetensors {
        file: path.to_path_buf(),
        message,
    };
    if file_len < 8 {
        return Err(invalid(format!(
            "{file_len} bytes, shorter than the 8-byte header length"
        )));
    }
    let mut len_bytes = [0u8; 8];
    f.read_exact(&mut len_bytes).map_err(io_err(path))?;
    let n = u64::from_le_bytes(len_bytes);
    if n > MAX_HEADER {
        return Err(invalid(format!("header length {n} exceeds {MAX_HEADER}")));
    }
    if 8 + n > file_len {
        return Err(invalid(format!(
            "header length {n} exceeds the file ({file_len} bytes): truncated header"
        )));
    }
    let mut header = vec![0u8; n as usize];
    f.read_exact(&mut header).map_err(io_err(path))?;
    let metadata: Metadata = serde_json::from_slice(&header).map_err(|e| invalid(e.to_string()))?;
    let data_start = 8 + n;
    let available = file_len - data_start;
    let declared = metadata.data_len() as u64;
    if declared > available {
        // Name the first tensor (by offset) that does not fit.
        let mut infos: Vec<_> = metadata.tensors().into_iter().collect();
        infos.sort_by_key(|(_, info)| info.data_offsets);
        let (tensor, needed) = infos
            .into_iter()
            .find(|(_, info)| info.data_offsets.1 as u64 > available)
            .map(|(name, info)| (name, info.data_offsets.1 as u64))
            .unwrap_or_else(|| ("<unnamed>".to_string(), declared));
        return Err(ModelError::Truncated {
            file: path.to_path_buf(),
            tensor,
            needed,
            available,
        });
    }
    if declared < available {
        return Err(ModelError::TrailingBytes {
            file: path.to_path_buf(),
            extra: available - declared,
        });
    }
    Ok((data_start, metadata))
}

#[derive(serde::Deserialize)]
struct ShardIndex {
    weight_map: BTreeMap<String, String>,
}

impl WeightFiles {
    /// Opens the weights at `path`: a `.safetensors` file, a `model.safetensors.index.json`, or a
    /// directory holding either.
    pub fn open(path: &Path) -> Result<Self, ModelError> {
        let (files, index) = if path.is_dir() {
            let single = path.join(SINGLE_FILE);
            let index = path.join(INDEX_FILE);
            if single.is_file() {
                (vec![single], None)
            } else if index.is_file() {
                Self::shards_of(&index)?
            } else {
                return Err(ModelError::NoWeights {
                    dir: path.to_path_buf(),
                });
            }
        } else if path.file_name().and_then(|n| n.to_str()) == Some(INDEX_FILE)
            || path.extension().and_then(|e| e.to_str()) == Some("json")
        {
            Self::shards_of(path)?
        } else {
            (vec![path.to_path_buf()], None)
        };

        let mut entries: BTreeMap<String, TensorEntry> = BTreeMap::new();
        for (file_idx, file) in files.iter().enumerate() {
            let (data_start, metadata) = read_header(file)?;
            for (name, info) in metadata.tensors() {
                if let Some(prev) = entries.get(&name) {
                    return Err(ModelError::ShardMismatch {
                        tensor: name,
                        message: format!(
                            "stored in both {} and {}",
                            files[prev.file].display(),
                            file.display()
                        ),
                    });
                }
                if let Some(index) = &index
                    && index.get(&name).map(|f| file.ends_with(f)) != Some(true)
                {
                    return Err(ModelError::ShardMismatch {
                        tensor: name.clone(),
                        message: format!(
                            "found in {} but the index maps it to {}",
                            file.display(),
                            index
                                .get(&name)
                                .map(String::as_str)
                                .unwrap_or("no file (not in weight_map)")
                        ),
                    });
                }
                let (s, e) = info.data_offsets;
                entries.insert(
                    name,
                    TensorEntry {
                        file: file_idx,
                        dtype: info.dtype,
                        shape: info.shape.clone(),
                        offset: data_start + s as u64,
                        len: (e - s) as u64,
                    },
                );
            }
        }
        if let Some(index) = &index {
            for (name, file) in index {
                if !entries.contains_key(name) {
                    return Err(ModelError::ShardMismatch {
                        tensor: name.clone(),
                        message: format!("the index maps it to {file}, which does not hold it"),
                    });
                }
            }
        }
        Ok(Self { files, entries })
    }

    /// The shard files named by an index, in first-use order.
    #[allow(clippy::type_complexity)]
    fn shards_of(
        index_path: &Path,
    ) -> Result<(Vec<PathBuf>, Option<BTreeMap<String, String>>), ModelError> {
        let text = std::fs::read(index_path).map_err(io_err(index_path))?;
        let index: ShardIndex =
            serde_json::from_slice(&text).map_err(|source| ModelError::Json {
                path: index_path.to_path_buf(),
                source,
            })?;
        let dir = index_path.parent().unwrap_or(Path::new("."));
        let mut files: Vec<PathBuf> = Vec::new();
        for shard in index.weight_map.values() {
            let p = dir.join(shard);
            if !files.contains(&p) {
                files.push(p);
            }
        }
        files.sort();
        Ok((files, Some(index.weight_map)))
    }

    /// A description of the files, for error messages.
    pub fn describe(&self) -> String {
        self.files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Reads tensor `name` as f32 values in row-major order (its on-disk layout).
    pub fn read_f32(&self, name: &str) -> Result<Vec<f32>, ModelError> {
        let entry = self
            .entries
            .get(name)
            .ok_or_else(|| ModelError::MissingTensor {
                tensor: name.to_string(),
                searched: self.describe(),
            })?;
        let path = &self.files[entry.file];
        let mut f = File::open(path).map_err(io_err(path))?;
        f.seek(SeekFrom::Start(entry.offset))
            .map_err(io_err(path))?;
        let mut bytes = vec![0u8; entry.len as usize];
        f.read_exact(&mut bytes).map_err(io_err(path))?;
        let values: Vec<f32> = match entry.dtype {
            Dtype::F32 => bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
            Dtype::BF16 => bytes
                .chunks_exact(2)
                .map(|c| half::bf16::from_bits(u16::from_le_bytes([c[0], c[1]])).to_f32())
                .collect(),
            Dtype::F16 => bytes
                .chunks_exact(2)
                .map(|c| half::f16::from_bits(u16::from_le_bytes([c[0], c[1]])).to_f32())
                .collect(),
            other => {
                return Err(ModelError::UnsupportedDtype {
                    tensor: name.to_string(),
                    dtype: format!("{other:?}"),
                });
            }
        };
        if values.iter().any(|v| !v.is_finite()) {
            return Err(ModelError::NonFiniteWeight {
                tensor: name.to_string(),
            });
        }
        Ok(values)
    }
}

/// The on-disk dtype of a saved checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SaveDtype {
    /// float32: bit-exact round trip.
    #[default]
    F32,
    /// bfloat16 (round to nearest even), half the size; what the released Qwen3 checkpoints use.
    Bf16,
}

impl SaveDtype {
    /// The HF name (`torch_dtype` / `dtype` field of config.json).
    pub fn hf_name(self) -> &'static str {
        match self {
            SaveDtype::F32 => "float32",
            SaveDtype::Bf16 => "bfloat16",
        }
    }

    fn encode(self, values: &[f32]) -> (Dtype, Vec<u8>) {
        match self {
            SaveDtype::F32 => (
                Dtype::F32,
                values.iter().flat_map(|v| v.to_le_bytes()).collect(),
            ),
            SaveDtype::Bf16 => (
                Dtype::BF16,
                values
                    .iter()
                    .flat_map(|v| half::bf16::from_f32(*v).to_bits().to_le_bytes())
                    .collect(),
            ),
        }
    }
}

/// A tensor encoded for a safetensors file: name, shape, dtype, little-endian bytes.
type Encoded = (String, Vec<usize>, Dtype, Vec<u8>);

/// Writes the `members` of `encoded` as one safetensors file at `path` (PyTorch's `format: pt`
/// metadata, as transformers and PEFT write it).
fn write_encoded(path: &Path, encoded: &[Encoded], members: &[usize]) -> Result<(), ModelError> {
    let metadata: HashMap<String, String> = [("format".to_string(), "pt".to_string())].into();
    let views: Vec<(String, TensorView<'_>)> = members
        .iter()
        .map(|&i| {
            let (name, shape, dt, bytes) = &encoded[i];
            let view = TensorView::new(*dt, shape.clone(), bytes).map_err(|e| {
                ModelError::InvalidInput(format!("tensor `{name}` cannot be saved: {e}"))
            })?;
            Ok((name.clone(), view))
        })
        .collect::<Result<_, ModelError>>()?;
    let bytes = safetensors::serialize(views, Some(metadata)).map_err(|e| {
        ModelError::InvalidSafetensors {
            file: path.to_path_buf(),
            message: e.to_string(),
        }
    })?;
    let f = File::create(path).map_err(io_err(path))?;
    let mut w = BufWriter::new(f);
    w.write_all(&bytes).map_err(io_err(path))?;
    w.flush().map_err(io_err(path))
}

/// Named f32 tensors encoded in `dtype`.
fn encode(tensors: Vec<(String, Vec<usize>, Vec<f32>)>, dtype: SaveDtype) -> Vec<Encoded> {
    tensors
        .into_iter()
        .map(|(name, shape, values)| {
            let (dt, bytes) = dtype.encode(&values);
            (name, shape, dt, bytes)
        })
        .collect()
}

/// Writes named f32 tensors (HF layout) as the single safetensors file `path`, in `dtype`.
pub(crate) fn write_file(
    path: &Path,
    tensors: Vec<(String, Vec<usize>, Vec<f32>)>,
    dtype: SaveDtype,
) -> Result<(), ModelError> {
    let encoded = encode(tensors, dtype);
    let all: Vec<usize> = (0..encoded.len()).collect();
    write_encoded(path, &encoded, &all)
}

/// Writes named f32 tensors (HF layout) as one safetensors file, or as shards of at most
/// `max_shard_bytes` each plus `model.safetensors.index.json` (file names as transformers writes
/// them: `model-0000k-of-0000n.safetensors`).
pub(crate) fn write_checkpoint(
    dir: &Path,
    tensors: Vec<(String, Vec<usize>, Vec<f32>)>,
    dtype: SaveDtype,
    max_shard_bytes: Option<u64>,
) -> Result<(), ModelError> {
    let encoded = encode(tensors, dtype);
    // Group into shards in order.
    let mut shards: Vec<Vec<usize>> = vec![Vec::new()];
    let mut current = 0u64;
    for (i, (_, _, _, bytes)) in encoded.iter().enumerate() {
        let len = bytes.len() as u64;
        if let Some(max) = max_shard_bytes
            && current > 0
            && current + len > max
        {
            shards.push(Vec::new());
            current = 0;
        }
        if let Some(last) = shards.last_mut() {
            last.push(i);
        }
        current += len;
    }
    let write = |path: &Path, members: &[usize]| write_encoded(path, &encoded, members);
    if shards.len() == 1 {
        return write(&dir.join(SINGLE_FILE), &shards[0]);
    }
    let n = shards.len();
    let mut weight_map = BTreeMap::new();
    let mut total = 0u64;
    for (k, members) in shards.iter().enumerate() {
        let name = format!("model-{:05}-of-{:05}.safetensors", k + 1, n);
        write(&dir.join(&name), members)?;
        for &i in members {
            weight_map.insert(encoded[i].0.clone(), name.clone());
            total += encoded[i].3.len() as u64;
        }
    }
    let index = serde_json::json!({
        "metadata": { "total_size": total },
        "weight_map": weight_map,
    });
    let path = dir.join(INDEX_FILE);
    let text = serde_json::to_string_pretty(&index).map_err(|source| ModelError::Json {
        path: path.clone(),
        source,
    })?;
    std::fs::write(&path, text).map_err(io_err(&path))
}
