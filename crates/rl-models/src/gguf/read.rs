//! GGUF reader: header, metadata and tensor infos of a GGUF v2/v3 file, validated against the
//! file's size before anything is allocated, and tensors read one at a time as f32.
//!
//! The layout (little-endian) is `"GGUF"`, `version: u32`, `tensor_count: u64`, `kv_count: u64`,
//! then `kv_count` entries `key: string, type: u32, value`, then `tensor_count` infos `name:
//! string, n_dims: u32, dims: [u64; n_dims] (innermost first), ggml_type: u32, offset: u64`,
//! then padding to `general.alignment` (default 32), then the tensor data; a tensor's offset is
//! relative to the start of the data. A string is `len: u64` and `len` bytes of UTF-8; an array
//! is `elem_type: u32, count: u64` and `count` values.
//!
//! [`GgufFile::open`] reads everything but the tensor data through a buffered reader and
//! refuses, with a [`GgufError`] naming the file and the field, key or tensor: a bad magic, a
//! version other than 2 or 3, any count or length whose smallest encoding does not fit in the
//! bytes left in the file (checked before allocating, so memory stays O(file size)), invalid
//! UTF-8, unknown value types, nested arrays, bools other than 0/1, duplicate keys or tensor
//! names, more than 4 dims, a zero dim, element counts that overflow, rows that are not whole
//! blocks, unknown ggml types, an alignment that is not a non-zero power of two stored as u32,
//! misaligned offsets, tensor data outside the file, and overlapping tensor data.
//! [`GgufFile::read_f32`] then reads one tensor's bytes and dequantizes them with
//! [`super::quants`].

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

/// The four bytes every GGUF file starts with.
pub const GGUF_MAGIC: [u8; 4] = *b"GGUF";
/// Data alignment when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: u64 = 32;
/// Most dimensions a ggml tensor has (`GGML_MAX_DIMS`).
pub const MAX_DIMS: usize = 4;
/// Metadata key of the data alignment.
pub const ALIGNMENT_KEY: &str = "general.alignment";

/// Smallest encoding of a metadata entry: key length, value type and a one-byte value.
const MIN_KV_BYTES: u128 = 8 + 4 + 1;
/// Smallest encoding of a tensor info: name length, n_dims, type and offset.
const MIN_TENSOR_INFO_BYTES: u128 = 8 + 4 + 4 + 8;

mod error;
mod meta;
mod tensor;

pub use error::GgufError;
pub use meta::{MetaArray, MetaType, MetaValue};
pub use tensor::TensorInfo;
use tensor::{RawTensorInfo, dequantize_tensor, read_tensor_bytes, validate_tensor};

/// A parsed GGUF file: metadata and tensor infos. Tensor data stays on disk until read.
#[derive(Clone, Debug)]
pub struct GgufFile {
    path: PathBuf,
    version: u32,
    file_len: u64,
    alignment: u64,
    data_offset: u64,
    metadata: Vec<(String, MetaValue)>,
    meta_index: HashMap<String, usize>,
    tensors: Vec<TensorInfo>,
    tensor_index: HashMap<String, usize>,
}

/// Position-tracking reader over a known number of bytes; every read is checked against the
/// bytes left before it happens.
struct Src<'p, R> {
    r: R,
    pos: u64,
    len: u64,
    path: &'p Path,
}

impl<R: Read> Src<'_, R> {
    fn remaining(&self) -> u64 {
        self.len - self.pos
    }

    fn truncated(&self, field: &dyn Fn() -> String, needed: u64) -> GgufError {
        GgufError::Truncated {
            path: self.path.to_path_buf(),
            field: field(),
            offset: self.pos,
            needed,
            remaining: self.remaining(),
        }
    }

    fn fill(&mut self, buf: &mut [u8], field: &dyn Fn() -> String) -> Result<(), GgufError> {
        if buf.len() as u64 > self.remaining() {
            return Err(self.truncated(field, buf.len() as u64));
        }
        self.r.read_exact(buf).map_err(|source| GgufError::Io {
            path: self.path.to_path_buf(),
            what: format!("{} at byte {}", field(), self.pos),
            source,
        })?;
        self.pos += buf.len() as u64;
        Ok(())
    }

    fn array<const N: usize>(&mut self, field: &dyn Fn() -> String) -> Result<[u8; N], GgufError> {
        let mut b = [0u8; N];
        self.fill(&mut b, field)?;
        Ok(b)
    }

    fn u32(&mut self, field: &dyn Fn() -> String) -> Result<u32, GgufError> {
        Ok(u32::from_le_bytes(self.array(field)?))
    }

    fn u64(&mut self, field: &dyn Fn() -> String) -> Result<u64, GgufError> {
        Ok(u64::from_le_bytes(self.array(field)?))
    }

    /// Reads a count field and checks that `count * min_item` bytes remain after it.
    fn count(&mut self, field: &dyn Fn() -> String, min_item: u128) -> Result<u64, GgufError> {
        let offset = self.pos;
        let count = self.u64(field)?;
        let min_bytes = count as u128 * min_item;
        if min_bytes > self.remaining() as u128 {
            return Err(GgufError::LengthTooLarge {
                path: self.path.to_path_buf(),
                field: field(),
                offset,
                count,
                min_bytes,
                remaining: self.remaining(),
            });
        }
        Ok(count)
    }

    /// Reads `n` bytes, `n` already checked against the bytes left.
    fn bytes(&mut self, n: u64, field: &dyn Fn() -> String) -> Result<Vec<u8>, GgufError> {
        if n > self.remaining() {
            return Err(self.truncated(field, n));
        }
        let mut v = vec![0u8; n as usize];
        self.fill(&mut v, field)?;
        Ok(v)
    }

    fn string(&mut self, field: &dyn Fn() -> String) -> Result<String, GgufError> {
        let len = self.count(&|| format!("{} length", field()), 1)?;
        let offset = self.pos;
        let bytes = self.bytes(len, field)?;
        String::from_utf8(bytes).map_err(|_| GgufError::NotUtf8 {
            path: self.path.to_path_buf(),
            field: field(),
            offset,
        })
    }
}

fn type_id_error(path: &Path, key: &str, offset: u64, type_id: u32) -> GgufError {
    if type_id == 9 {
        GgufError::NestedArray {
            path: path.to_path_buf(),
            key: key.to_string(),
            offset,
        }
    } else {
        GgufError::UnknownValueType {
            path: path.to_path_buf(),
            key: key.to_string(),
            offset,
            type_id,
        }
    }
}

fn read_value<R: Read>(src: &mut Src<'_, R>, key: &str) -> Result<MetaValue, GgufError> {
    let type_offset = src.pos;
    let what = || format!("value type of key `{key}`");
    let type_id = src.u32(&what)?;
    let ty = MetaType::from_id(type_id).ok_or_else(|| GgufError::UnknownValueType {
        path: src.path.to_path_buf(),
        key: key.to_string(),
        offset: type_offset,
        type_id,
    })?;
    let field = || format!("value of key `{key}`");
    Ok(match ty {
        MetaType::U8 => MetaValue::U8(u8::from_le_bytes(src.array(&field)?)),
        MetaType::I8 => MetaValue::I8(i8::from_le_bytes(src.array(&field)?)),
        MetaType::U16 => MetaValue::U16(u16::from_le_bytes(src.array(&field)?)),
        MetaType::I16 => MetaValue::I16(i16::from_le_bytes(src.array(&field)?)),
        MetaType::U32 => MetaValue::U32(u32::from_le_bytes(src.array(&field)?)),
        MetaType::I32 => MetaValue::I32(i32::from_le_bytes(src.array(&field)?)),
        MetaType::F32 => MetaValue::F32(f32::from_le_bytes(src.array(&field)?)),
        MetaType::U64 => MetaValue::U64(u64::from_le_bytes(src.array(&field)?)),
        MetaType::I64 => MetaValue::I64(i64::from_le_bytes(src.array(&field)?)),
        MetaType::F64 => MetaValue::F64(f64::from_le_bytes(src.array(&field)?)),
        MetaType::Bool => {
            let offset = src.pos;
            let [b] = src.array::<1>(&field)?;
            MetaValue::Bool(check_bool(src.path, key, offset, b)?)
        }
        MetaType::String => MetaValue::String(src.string(&field)?),
        MetaType::Array => MetaValue::Array(read_array(src, key)?),
    })
}

fn check_bool(path: &Path, key: &str, offset: u64, b: u8) -> Result<bool, GgufError> {
    match b {
        0 => Ok(false),
        1 => Ok(true),
        value => Err(GgufError::InvalidBool {
            path: path.to_path_buf(),
            key: key.to_string(),
            offset,
            value,
        }),
    }
}

fn read_array<R: Read>(src: &mut Src<'_, R>, key: &str) -> Result<MetaArray, GgufError> {
    let elem_offset = src.pos;
    let elem_id = src.u32(&|| format!("array element type of key `{key}`"))?;
    let elem = MetaType::from_id(elem_id)
        .filter(|t| *t != MetaType::Array)
        .ok_or_else(|| type_id_error(src.path, key, elem_offset, elem_id))?;
    let len_field = || format!("array length of key `{key}`");
    if elem == MetaType::String {
        // Each string takes at least its 8-byte length.
        let n = src.count(&len_field, 8)?;
        let mut v = Vec::with_capacity(n as usize);
        for i in 0..n {
            v.push(src.string(&|| format!("element {i} of key `{key}`"))?);
        }
        return Ok(MetaArray::String(v));
    }
    let size = elem.fixed_size().unwrap_or(1);
    let n = src.count(&len_field, size as u128)?;
    let data_offset = src.pos;
    let raw = src.bytes(n * size, &|| format!("array data of key `{key}`"))?;
    macro_rules! collect {
        ($t:ty, $n:literal) => {
            raw.chunks_exact($n)
                .map(|c| <$t>::from_le_bytes(c.try_into().unwrap_or([0; $n])))
                .collect()
        };
    }
    Ok(match elem {
        MetaType::U8 => MetaArray::U8(raw),
        MetaType::I8 => MetaArray::I8(raw.iter().map(|&b| b as i8).collect()),
        MetaType::U16 => MetaArray::U16(collect!(u16, 2)),
        MetaType::I16 => MetaArray::I16(collect!(i16, 2)),
        MetaType::U32 => MetaArray::U32(collect!(u32, 4)),
        MetaType::I32 => MetaArray::I32(collect!(i32, 4)),
        MetaType::F32 => MetaArray::F32(collect!(f32, 4)),
        MetaType::U64 => MetaArray::U64(collect!(u64, 8)),
        MetaType::I64 => MetaArray::I64(collect!(i64, 8)),
        MetaType::F64 => MetaArray::F64(collect!(f64, 8)),
        MetaType::Bool => MetaArray::Bool(
            raw.iter()
                .enumerate()
                .map(|(i, &b)| check_bool(src.path, key, data_offset + i as u64, b))
                .collect::<Result<_, _>>()?,
        ),
        // Strings return above and arrays are refused with the element type.
        MetaType::String | MetaType::Array => {
            return Err(type_id_error(src.path, key, elem_offset, elem_id));
        }
    })
}

fn read_tensor_info<R: Read>(src: &mut Src<'_, R>, i: u64) -> Result<RawTensorInfo, GgufError> {
    let info_offset = src.pos;
    let name = src.string(&|| format!("name of tensor #{i}"))?;
    let dims_offset = src.pos;
    let n_dims = src.u32(&|| format!("n_dims of tensor `{name}`"))?;
    if n_dims as usize > MAX_DIMS {
        return Err(GgufError::TooManyDims {
            path: src.path.to_path_buf(),
            tensor: name,
            offset: dims_offset,
            n_dims,
        });
    }
    let mut dims = Vec::with_capacity(n_dims as usize);
    for d in 0..n_dims {
        dims.push(src.u64(&|| format!("dim {d} of tensor `{name}`"))?);
    }
    let type_offset = src.pos;
    let type_id = src.u32(&|| format!("ggml type of tensor `{name}`"))?;
    let offset = src.u64(&|| format!("data offset of tensor `{name}`"))?;
    Ok(RawTensorInfo {
        name,
        info_offset,
        type_offset,
        dims,
        type_id,
        offset,
    })
}

impl GgufFile {
    /// Opens `path`, reads and validates the header, all metadata and all tensor infos (not
    /// the tensor data).
    pub fn open(path: impl AsRef<Path>) -> Result<GgufFile, GgufError> {
        let path = path.as_ref();
        let io_err = |what: &str| {
            let path = path.to_path_buf();
            let what = what.to_string();
            move |source| GgufError::Io { path, what, source }
        };
        let file = File::open(path).map_err(io_err("the file (open)"))?;
        let len = file.metadata().map_err(io_err("the file size"))?.len();
        Self::parse(path, BufReader::with_capacity(1 << 16, file), len)
    }

    /// Parses a GGUF header of `len` bytes from `r`; `path` names the source in errors.
    fn parse<R: Read>(path: &Path, r: R, len: u64) -> Result<GgufFile, GgufError> {
        let mut src = Src {
            r,
            pos: 0,
            len,
            path,
        };
        let magic: [u8; 4] = src.array(&|| "magic".to_string())?;
        if magic != GGUF_MAGIC {
            return Err(GgufError::BadMagic {
                path: path.to_path_buf(),
                found: magic,
            });
        }
        let version = src.u32(&|| "version".to_string())?;
        if version != 2 && version != 3 {
            return Err(GgufError::UnsupportedVersion {
                path: path.to_path_buf(),
                version,
            });
        }
        let tensor_count = src.count(&|| "tensor_count".to_string(), MIN_TENSOR_INFO_BYTES)?;
        let kv_count = src.count(&|| "kv_count".to_string(), MIN_KV_BYTES)?;
        if tensor_count as u128 * MIN_TENSOR_INFO_BYTES + kv_count as u128 * MIN_KV_BYTES
            > src.remaining() as u128
        {
            return Err(GgufError::LengthTooLarge {
                path: path.to_path_buf(),
                field: "tensor_count and kv_count together".to_string(),
                offset: 8,
                count: tensor_count.saturating_add(kv_count),
                min_bytes: tensor_count as u128 * MIN_TENSOR_INFO_BYTES
                    + kv_count as u128 * MIN_KV_BYTES,
                remaining: src.remaining(),
            });
        }

        let mut metadata = Vec::with_capacity(kv_count as usize);
        let mut meta_index = HashMap::with_capacity(kv_count as usize);
        for i in 0..kv_count {
            let kv_offset = src.pos;
            let key = src.string(&|| format!("key #{i}"))?;
            let value = read_value(&mut src, &key)?;
            if meta_index.contains_key(&key) {
                return Err(GgufError::DuplicateKey {
                    path: path.to_path_buf(),
                    key,
                    offset: kv_offset,
                });
            }
            meta_index.insert(key.clone(), metadata.len());
            metadata.push((key, value));
        }

        let mut raw_infos = Vec::with_capacity(tensor_count as usize);
        for i in 0..tensor_count {
            raw_infos.push(read_tensor_info(&mut src, i)?);
        }

        let alignment = match meta_index.get(ALIGNMENT_KEY).map(|&i| &metadata[i].1) {
            None => DEFAULT_ALIGNMENT,
            Some(MetaValue::U32(a)) if a.is_power_of_two() => *a as u64,
            Some(MetaValue::U32(a)) => {
                return Err(GgufError::InvalidAlignment {
                    path: path.to_path_buf(),
                    alignment: *a,
                });
            }
            Some(other) => {
                return Err(GgufError::WrongType {
                    path: path.to_path_buf(),
                    key: ALIGNMENT_KEY.to_string(),
                    expected: "u32",
                    found: other.type_description(),
                });
            }
        };
        // `src.pos <= len < 2^64` and `alignment <= 2^31`: no overflow.
        let data_offset = src.pos.div_ceil(alignment) * alignment;

        let mut tensors = Vec::with_capacity(raw_infos.len());
        let mut tensor_index = HashMap::with_capacity(raw_infos.len());
        for raw in raw_infos {
            let info_offset = raw.info_offset;
            let info = validate_tensor(path, raw, alignment, data_offset, len)?;
            if tensor_index.contains_key(&info.name) {
                return Err(GgufError::DuplicateTensor {
                    path: path.to_path_buf(),
                    tensor: info.name,
                    offset: info_offset,
                });
            }
            tensor_index.insert(info.name.clone(), tensors.len());
            tensors.push(info);
        }

        let mut order: Vec<usize> = (0..tensors.len()).collect();
        order.sort_by_key(|&i| (tensors[i].offset, tensors[i].n_bytes));
        for pair in order.windows(2) {
            let (a, b) = (&tensors[pair[0]], &tensors[pair[1]]);
            let a_end = a.offset + a.n_bytes;
            if b.offset < a_end {
                return Err(GgufError::OverlappingTensors {
                    path: path.to_path_buf(),
                    first: a.name.clone(),
                    first_start: a.offset,
                    first_end: a_end,
                    second: b.name.clone(),
                    second_start: b.offset,
                });
            }
        }

        Ok(GgufFile {
            path: path.to_path_buf(),
            version,
            file_len: len,
            alignment,
            data_offset,
            metadata,
            meta_index,
            tensors,
            tensor_index,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// GGUF version (2 or 3).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// File size in bytes.
    pub fn file_len(&self) -> u64 {
        self.file_len
    }

    /// Data alignment (`general.alignment`, default 32).
    pub fn alignment(&self) -> u64 {
        self.alignment
    }

    /// Absolute offset of the tensor data section.
    pub fn data_offset(&self) -> u64 {
        self.data_offset
    }

    /// Metadata entries in file order.
    pub fn metadata(&self) -> impl ExactSizeIterator<Item = (&str, &MetaValue)> {
        self.metadata.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&MetaValue> {
        self.meta_index.get(key).map(|&i| &self.metadata[i].1)
    }

    fn wrong_type(&self, key: &str, expected: &'static str, found: String) -> GgufError {
        GgufError::WrongType {
            path: self.path.clone(),
            key: key.to_string(),
            expected,
            found,
        }
    }

    /// An integer of any GGUF integer type, converted to `T` when it fits.
    fn get_int<T: TryFrom<i128>>(
        &self,
        key: &str,
        expected: &'static str,
    ) -> Result<Option<T>, GgufError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let Some(x) = v.as_integer() else {
            return Err(self.wrong_type(key, expected, v.type_description()));
        };
        T::try_from(x)
            .map(Some)
            .map_err(|_| self.wrong_type(key, expected, format!("{} {x}", v.type_description())))
    }

    /// `key` as u32: any integer type whose value fits. `Ok(None)` when absent.
    pub fn get_u32(&self, key: &str) -> Result<Option<u32>, GgufError> {
        self.get_int(key, "an integer that fits in u32")
    }

    /// `key` as i32: any integer type whose value fits.
    pub fn get_i32(&self, key: &str) -> Result<Option<i32>, GgufError> {
        self.get_int(key, "an integer that fits in i32")
    }

    /// `key` as u64: any integer type whose value fits.
    pub fn get_u64(&self, key: &str) -> Result<Option<u64>, GgufError> {
        self.get_int(key, "an integer that fits in u64")
    }

    /// `key` as i64: any integer type whose value fits.
    pub fn get_i64(&self, key: &str) -> Result<Option<i64>, GgufError> {
        self.get_int(key, "an integer that fits in i64")
    }

    /// `key` as usize: any integer type whose value fits.
    pub fn get_usize(&self, key: &str) -> Result<Option<usize>, GgufError> {
        self.get_int(key, "an integer that fits in usize")
    }

    /// `key` as f32: an f32 value.
    pub fn get_f32(&self, key: &str) -> Result<Option<f32>, GgufError> {
        match self.get(key) {
            None => Ok(None),
            Some(MetaValue::F32(x)) => Ok(Some(*x)),
            Some(v) => Err(self.wrong_type(key, "f32", v.type_description())),
        }
    }

    /// `key` as f64: an f32 (widened exactly) or f64 value.
    pub fn get_f64(&self, key: &str) -> Result<Option<f64>, GgufError> {
        match self.get(key) {
            None => Ok(None),
            Some(MetaValue::F32(x)) => Ok(Some(*x as f64)),
            Some(MetaValue::F64(x)) => Ok(Some(*x)),
            Some(v) => Err(self.wrong_type(key, "f32 or f64", v.type_description())),
        }
    }

    /// `key` as bool.
    pub fn get_bool(&self, key: &str) -> Result<Option<bool>, GgufError> {
        match self.get(key) {
            None => Ok(None),
            Some(MetaValue::Bool(x)) => Ok(Some(*x)),
            Some(v) => Err(self.wrong_type(key, "bool", v.type_description())),
        }
    }

    /// `key` as a string.
    pub fn get_str(&self, key: &str) -> Result<Option<&str>, GgufError> {
        match self.get(key) {
            None => Ok(None),
            Some(MetaValue::String(s)) => Ok(Some(s)),
            Some(v) => Err(self.wrong_type(key, "string", v.type_description())),
        }
    }

    /// `key` as an array of any type.
    pub fn get_array(&self, key: &str) -> Result<Option<&MetaArray>, GgufError> {
        match self.get(key) {
            None => Ok(None),
            Some(MetaValue::Array(a)) => Ok(Some(a)),
            Some(v) => Err(self.wrong_type(key, "array", v.type_description())),
        }
    }

    /// `key` as an array of strings.
    pub fn get_str_array(&self, key: &str) -> Result<Option<&[String]>, GgufError> {
        match self.get(key) {
            None => Ok(None),
            Some(MetaValue::Array(MetaArray::String(v))) => Ok(Some(v)),
            Some(v) => Err(self.wrong_type(key, "array of string", v.type_description())),
        }
    }

    /// `key` as an array of f32.
    pub fn get_f32_array(&self, key: &str) -> Result<Option<&[f32]>, GgufError> {
        match self.get(key) {
            None => Ok(None),
            Some(MetaValue::Array(MetaArray::F32(v))) => Ok(Some(v)),
            Some(v) => Err(self.wrong_type(key, "array of f32", v.type_description())),
        }
    }

    fn get_int_array<T: TryFrom<i128>>(
        &self,
        key: &str,
        expected: &'static str,
    ) -> Result<Option<Vec<T>>, GgufError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let ints = match v {
            MetaValue::Array(a) => a.integers(),
            _ => None,
        };
        let Some(ints) = ints else {
            return Err(self.wrong_type(key, expected, v.type_description()));
        };
        ints.into_iter()
            .enumerate()
            .map(|(i, x)| {
                T::try_from(x).map_err(|_| {
                    self.wrong_type(
                        key,
                        expected,
                        format!("{} with element {i} = {x}", v.type_description()),
                    )
                })
            })
            .collect::<Result<Vec<T>, _>>()
            .map(Some)
    }

    /// `key` as an array of i32: any integer array whose elements fit.
    pub fn get_i32_array(&self, key: &str) -> Result<Option<Vec<i32>>, GgufError> {
        self.get_int_array(key, "an integer array whose elements fit in i32")
    }

    /// `key` as an array of u32: any integer array whose elements fit.
    pub fn get_u32_array(&self, key: &str) -> Result<Option<Vec<u32>>, GgufError> {
        self.get_int_array(key, "an integer array whose elements fit in u32")
    }

    /// Tensor infos in file order.
    pub fn tensors(&self) -> &[TensorInfo] {
        &self.tensors
    }

    /// The info of tensor `name`, if present.
    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensor_index.get(name).map(|&i| &self.tensors[i])
    }

    fn tensor_or_err(&self, name: &str) -> Result<&TensorInfo, GgufError> {
        self.tensor(name).ok_or_else(|| GgufError::TensorNotFound {
            path: self.path.clone(),
            tensor: name.to_string(),
        })
    }

    /// The stored bytes of tensor `name`.
    pub fn read_raw(&self, name: &str) -> Result<Vec<u8>, GgufError> {
        let info = self.tensor_or_err(name)?;
        let mut file = File::open(&self.path).map_err(|source| GgufError::Io {
            path: self.path.clone(),
            what: format!("the file (open) for tensor `{name}`"),
            source,
        })?;
        read_tensor_bytes(&self.path, &mut file, info)
    }

    /// Tensor `name` dequantized to f32, with its dims in ggml order (innermost first). The
    /// values are row-major with the innermost dimension fastest: the PyTorch layout of the
    /// reversed dims ([`TensorInfo::shape`]).
    pub fn read_f32(&self, name: &str) -> Result<(Vec<f32>, Vec<usize>), GgufError> {
        let info = self.tensor_or_err(name)?;
        if !info.ggml_type.can_dequantize() {
            return Err(GgufError::UnsupportedType {
                path: self.path.clone(),
                tensor: info.name.clone(),
                ggml_type: info.ggml_type,
            });
        }
        let bytes = self.read_raw(name)?;
        let values = dequantize_tensor(&self.path, info, &bytes)?;
        Ok((values, info.dims.iter().map(|&d| d as usize).collect()))
    }
}

#[cfg(test)]
mod tests;
