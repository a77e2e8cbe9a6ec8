//! Reading and writing HF safetensors checkpoints (single file or sharded with
//! `model.safetensors.index.json`) with the `safetensors` crate, converting bf16/f16/f32 to f32.
//!
//! Files are not read whole: the header is parsed and checked first (entry by entry, naming the
//! tensor at fault: dtype, shape, offsets, sizes, repeated names; then again with
//! `safetensors::tensor::Metadata`), every tensor is checked against the file length, and each
//! tensor is then read on its own, so peak host memory is one tensor beyond the model.

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

/// One tensor of a safetensors header, checked.
#[derive(Debug)]
struct HeaderTensor {
    name: String,
    dtype: Dtype,
    shape: Vec<usize>,
    /// Data offsets relative to the start of the data section.
    start: u64,
    end: u64,
}

/// The entries of a JSON object in file order, repeated keys included (serde's maps keep the last
/// of a repeated key, which would hide it).
struct RawEntries(Vec<(String, serde_json::Value)>);

impl<'de> serde::Deserialize<'de> for RawEntries {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = RawEntries;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object of tensor name -> {dtype, shape, data_offsets}")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<RawEntries, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry::<String, serde_json::Value>()? {
                    entries.push(entry);
                }
                Ok(RawEntries(entries))
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

/// A JSON value as a `u64`, or a description of why it is not one.
fn json_u64(v: &serde_json::Value) -> Result<u64, String> {
    v.as_u64()
        .ok_or_else(|| format!("{v} is not a non-negative integer below 2^64"))
}

/// One header entry checked on its own: a known dtype, a shape of non-negative integers, ordered
/// data offsets, and a byte length equal to the shape's element count times the dtype's size.
fn check_entry(name: &str, value: &serde_json::Value) -> Result<HeaderTensor, String> {
    let fail = |what: String| format!("tensor `{name}`: {what}");
    let obj = value
        .as_object()
        .ok_or_else(|| fail(format!("entry {value} is not a JSON object")))?;
    let field = |key: &str| {
        obj.get(key)
            .ok_or_else(|| fail(format!("no `{key}` field")))
    };
    let dtype = match field("dtype")? {
        serde_json::Value::String(s) => serde_json::from_value::<Dtype>(s.as_str().into())
            .map_err(|e| fail(format!("dtype `{s}` is not a safetensors dtype ({e})")))?,
        other => return Err(fail(format!("dtype {other} is not a string"))),
    };
    let shape: Vec<usize> = field("shape")?
        .as_array()
        .ok_or_else(|| fail("`shape` is not an array".to_string()))?
        .iter()
        .enumerate()
        .map(|(i, d)| {
            json_u64(d)
                .and_then(|d| usize::try_from(d).map_err(|_| format!("{d} exceeds usize")))
                .map_err(|e| fail(format!("shape[{i}]: {e}")))
        })
        .collect::<Result<_, _>>()?;
    let offsets = field("data_offsets")?
        .as_array()
        .filter(|a| a.len() == 2)
        .ok_or_else(|| fail("`data_offsets` is not an array of two integers".to_string()))?;
    let start = json_u64(&offsets[0]).map_err(|e| fail(format!("data_offsets[0]: {e}")))?;
    let end = json_u64(&offsets[1]).map_err(|e| fail(format!("data_offsets[1]: {e}")))?;
    if end < start {
        return Err(fail(format!(
            "data_offsets [{start}, {end}] end before they start"
        )));
    }
    let bits = shape
        .iter()
        .try_fold(1u128, |n, &d| n.checked_mul(d as u128))
        .and_then(|n| n.checked_mul(dtype.bitsize() as u128))
        .filter(|b| *b <= u64::MAX as u128 * 8)
        .ok_or_else(|| fail(format!("shape {shape:?} of {dtype} exceeds 2^64 bytes")))?;
    if bits % 8 != 0 || (bits / 8) as u64 != end - start {
        return Err(fail(format!(
            "shape {shape:?} of {dtype} is {bits} bits, but data_offsets [{start}, {end}] span {} bytes",
            end - start
        )));
    }
    Ok(HeaderTensor {
        name: name.to_string(),
        dtype,
        shape,
        start,
        end,
    })
}

/// The tensors of a header JSON, each checked ([`check_entry`]), no name twice, the optional
/// `__metadata__` a map of strings, and the data offsets tiling `0..end` without gap or overlap
/// (as the format requires); sorted by offset. Every error names the tensor(s) at fault.
fn check_header(header: &[u8]) -> Result<Vec<HeaderTensor>, String> {
    let RawEntries(entries) = serde_json::from_slice(header).map_err(|e| e.to_string())?;
    let mut seen = std::collections::HashSet::new();
    let mut tensors = Vec::with_capacity(entries.len());
    for (name, value) in &entries {
        if !seen.insert(name.as_str()) {
            return Err(format!("key `{name}` appears more than once"));
        }
        if name == "__metadata__" {
            let strings = value
                .as_object()
                .is_some_and(|m| m.values().all(serde_json::Value::is_string));
            if !strings {
                return Err(format!(
                    "`__metadata__` must be a map of strings to strings, found {value}"
                ));
            }
            continue;
        }
        tensors.push(check_entry(name, value)?);
    }
    tensors.sort_by(|a, b| (a.start, a.end, &a.name).cmp(&(b.start, b.end, &b.name)));
    // Overlaps first: two tensors sharing bytes also leave a gap where one of them should have
    // been, and the overlap is the error that names both.
    for pair in tensors.windows(2) {
        let (p, t) = (&pair[0], &pair[1]);
        if t.start < p.end {
            return Err(format!(
                "tensors `{}` and `{}` overlap: data_offsets [{}, {}] and [{}, {}]",
                p.name, t.name, p.start, p.end, t.start, t.end
            ));
        }
    }
    let mut prev: Option<&HeaderTensor> = None;
    for t in &tensors {
        let prev_end = prev.map_or(0, |p| p.end);
        if t.start > prev_end {
            return Err(match prev {
                Some(p) => format!(
                    "{} unused bytes between tensor `{}` (ends at {prev_end}) and tensor `{}` (starts at {})",
                    t.start - prev_end,
                    p.name,
                    t.name,
                    t.start
                ),
                None => format!(
                    "tensor `{}` starts at {}: the first tensor's data must start at 0",
                    t.name, t.start
                ),
            });
        }
        prev = Some(t);
    }
    Ok(tensors)
}

/// Parses the header of one safetensors file and checks every tensor against the file length.
///
/// The header JSON is checked here entry by entry ([`check_header`]), so that every error names
/// the tensor at fault, then parsed again with `safetensors::tensor::Metadata` as a second check.
fn read_header(path: &Path) -> Result<(u64, Vec<HeaderTensor>), ModelError> {
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
    let tensors = check_header(&header).map_err(invalid)?;
    serde_json::from_slice::<Metadata>(&header).map_err(|e| invalid(e.to_string()))?;
    let data_start = 8 + n;
    let available = file_len - data_start;
    let declared = tensors.last().map_or(0, |t| t.end);
    // The first tensor (by offset) that does not fit.
    if let Some(cut) = tensors.iter().find(|t| t.end > available) {
        return Err(ModelError::Truncated {
            file: path.to_path_buf(),
            tensor: cut.name.clone(),
            needed: cut.end,
            available,
        });
    }
    if declared < available {
        return Err(ModelError::TrailingBytes {
            file: path.to_path_buf(),
            extra: available - declared,
        });
    }
    Ok((data_start, tensors))
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
            let (data_start, tensors) = read_header(file)?;
            for HeaderTensor {
                name,
                dtype,
                shape,
                start,
                end,
            } in tensors
            {
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
                entries.insert(
                    name,
                    TensorEntry {
                        file: file_idx,
                        dtype,
                        shape,
                        offset: data_start + start,
                        len: end - start,
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

    /// The file holding tensor `name`, if any does.
    pub fn file_of(&self, name: &str) -> Option<&Path> {
        self.entries.get(name).map(|e| self.files[e.file].as_path())
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
                    file: path.clone(),
                    tensor: name.to_string(),
                    dtype: format!("{other:?}"),
                });
            }
        };
        if values.iter().any(|v| !v.is_finite()) {
            return Err(ModelError::NonFiniteWeight {
                file: path.clone(),
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
