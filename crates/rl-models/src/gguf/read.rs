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
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use thiserror::Error;

use super::quants::{self, GgmlType, QuantError};

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

/// Errors of the GGUF reader. Every variant names the file.
#[derive(Debug, Error)]
pub enum GgufError {
    /// Reading the file failed.
    #[error("{path}: I/O error reading {what}: {source}", path = path.display())]
    Io {
        /// File.
        path: PathBuf,
        /// What was being read.
        what: String,
        /// The underlying error.
        source: io::Error,
    },
    /// The file does not start with `GGUF`.
    #[error("{path}: bad magic {found:02x?} (expected \"GGUF\")", path = path.display())]
    BadMagic {
        /// File.
        path: PathBuf,
        /// The first four bytes.
        found: [u8; 4],
    },
    /// The version is not 2 or 3.
    #[error("{path}: unsupported GGUF version {version} (supported: 2 and 3, little-endian)", path = path.display())]
    UnsupportedVersion {
        /// File.
        path: PathBuf,
        /// Version found.
        version: u32,
    },
    /// A fixed-size field runs past the end of the file.
    #[error("{path}: {field} at byte {offset} needs {needed} bytes, {remaining} remain", path = path.display())]
    Truncated {
        /// File.
        path: PathBuf,
        /// The field.
        field: String,
        /// Byte offset of the field.
        offset: u64,
        /// Bytes the field takes.
        needed: u64,
        /// Bytes left in the file from `offset`.
        remaining: u64,
    },
    /// A count or length whose smallest encoding does not fit in the rest of the file.
    #[error("{path}: {field} = {count} at byte {offset} needs at least {min_bytes} bytes, {remaining} remain", path = path.display())]
    LengthTooLarge {
        /// File.
        path: PathBuf,
        /// The count or length field.
        field: String,
        /// Byte offset of the field.
        offset: u64,
        /// The value read.
        count: u64,
        /// Bytes that many items take at least.
        min_bytes: u128,
        /// Bytes left in the file after the field.
        remaining: u64,
    },
    /// A string is not valid UTF-8.
    #[error("{path}: {field} at byte {offset} is not valid UTF-8", path = path.display())]
    NotUtf8 {
        /// File.
        path: PathBuf,
        /// The string field.
        field: String,
        /// Byte offset of the string's bytes.
        offset: u64,
    },
    /// A metadata value or array element type id that GGUF does not define.
    #[error("{path}: key `{key}`: unknown value type {type_id} at byte {offset}", path = path.display())]
    UnknownValueType {
        /// File.
        path: PathBuf,
        /// Metadata key.
        key: String,
        /// Byte offset of the type id.
        offset: u64,
        /// The type id.
        type_id: u32,
    },
    /// An array whose elements are arrays (not supported, as in llama.cpp).
    #[error("{path}: key `{key}`: nested array at byte {offset} is not supported", path = path.display())]
    NestedArray {
        /// File.
        path: PathBuf,
        /// Metadata key.
        key: String,
        /// Byte offset of the element type id.
        offset: u64,
    },
    /// A bool that is neither 0 nor 1.
    #[error("{path}: key `{key}`: bool byte {value} at byte {offset} is neither 0 nor 1", path = path.display())]
    InvalidBool {
        /// File.
        path: PathBuf,
        /// Metadata key.
        key: String,
        /// Byte offset of the value.
        offset: u64,
        /// The byte.
        value: u8,
    },
    /// A metadata key appears twice.
    #[error("{path}: duplicate key `{key}` at byte {offset}", path = path.display())]
    DuplicateKey {
        /// File.
        path: PathBuf,
        /// Metadata key.
        key: String,
        /// Byte offset of the second entry.
        offset: u64,
    },
    /// A tensor name appears twice.
    #[error("{path}: duplicate tensor `{tensor}` at byte {offset}", path = path.display())]
    DuplicateTensor {
        /// File.
        path: PathBuf,
        /// Tensor name.
        tensor: String,
        /// Byte offset of the second tensor info.
        offset: u64,
    },
    /// More than [`MAX_DIMS`] dimensions.
    #[error("{path}: tensor `{tensor}` has {n_dims} dims at byte {offset} (at most 4)", path = path.display())]
    TooManyDims {
        /// File.
        path: PathBuf,
        /// Tensor name.
        tensor: String,
        /// Byte offset of n_dims.
        offset: u64,
        /// The dimension count.
        n_dims: u32,
    },
    /// A dimension of size 0.
    #[error("{path}: tensor `{tensor}` has dims {dims:?}: dim {axis} is 0", path = path.display())]
    ZeroDim {
        /// File.
        path: PathBuf,
        /// Tensor name.
        tensor: String,
        /// Dimensions, innermost first.
        dims: Vec<u64>,
        /// Index of the zero dimension (ggml order).
        axis: usize,
    },
    /// The element count or byte size overflows.
    #[error("{path}: tensor `{tensor}` with dims {dims:?}: element count or byte size overflows", path = path.display())]
    DimsOverflow {
        /// File.
        path: PathBuf,
        /// Tensor name.
        tensor: String,
        /// Dimensions, innermost first.
        dims: Vec<u64>,
    },
    /// The innermost dimension is not a whole number of blocks of the tensor's type.
    #[error("{path}: tensor `{tensor}` of type {ggml_type}: ne[0] = {ne0} is not a multiple of the block size {block_size}", path = path.display())]
    PartialBlock {
        /// File.
        path: PathBuf,
        /// Tensor name.
        tensor: String,
        /// Tensor type.
        ggml_type: GgmlType,
        /// Innermost dimension.
        ne0: u64,
        /// Elements per block.
        block_size: usize,
    },
    /// A ggml type id that ggml does not define.
    #[error("{path}: tensor `{tensor}`: unknown ggml type id {type_id} at byte {offset}", path = path.display())]
    UnknownGgmlType {
        /// File.
        path: PathBuf,
        /// Tensor name.
        tensor: String,
        /// Byte offset of the type id.
        offset: u64,
        /// The type id.
        type_id: u32,
    },
    /// A known ggml type that [`GgufFile::read_f32`] cannot dequantize.
    #[error("{path}: tensor `{tensor}`: ggml type {ggml_type} (id {id}) is not supported for dequantization", path = path.display(), id = ggml_type.id())]
    UnsupportedType {
        /// File.
        path: PathBuf,
        /// Tensor name.
        tensor: String,
        /// Tensor type.
        ggml_type: GgmlType,
    },
    /// `general.alignment` is 0 or not a power of two.
    #[error("{path}: general.alignment = {alignment} is not a non-zero power of two", path = path.display())]
    InvalidAlignment {
        /// File.
        path: PathBuf,
        /// The value.
        alignment: u32,
    },
    /// A tensor's data offset is not a multiple of the alignment.
    #[error("{path}: tensor `{tensor}`: data offset {offset} is not a multiple of the alignment {alignment}", path = path.display())]
    MisalignedOffset {
        /// File.
        path: PathBuf,
        /// Tensor name.
        tensor: String,
        /// Offset relative to the start of the data.
        offset: u64,
        /// The alignment.
        alignment: u64,
    },
    /// A tensor's data does not lie inside the file.
    #[error("{path}: tensor `{tensor}`: data at bytes {start}..{end} lies outside the file ({file_len} bytes)", path = path.display())]
    TensorOutOfFile {
        /// File.
        path: PathBuf,
        /// Tensor name.
        tensor: String,
        /// Absolute start (data offset + tensor offset).
        start: u128,
        /// Absolute end (exclusive).
        end: u128,
        /// File size.
        file_len: u64,
    },
    /// Two tensors share bytes.
    #[error("{path}: tensors `{first}` (bytes {first_start}..{first_end}) and `{second}` (from byte {second_start}) overlap", path = path.display())]
    OverlappingTensors {
        /// File.
        path: PathBuf,
        /// The tensor that starts first.
        first: String,
        /// Its absolute start.
        first_start: u64,
        /// Its absolute end (exclusive).
        first_end: u64,
        /// The tensor that starts inside `first`.
        second: String,
        /// Its absolute start.
        second_start: u64,
    },
    /// A metadata value of another type than asked for (or out of the asked type's range).
    #[error("{path}: key `{key}`: expected {expected}, found {found}", path = path.display())]
    WrongType {
        /// File.
        path: PathBuf,
        /// Metadata key.
        key: String,
        /// What was asked for.
        expected: &'static str,
        /// What the file holds.
        found: String,
    },
    /// No tensor of that name.
    #[error("{path}: no tensor `{tensor}`", path = path.display())]
    TensorNotFound {
        /// File.
        path: PathBuf,
        /// Tensor name asked for.
        tensor: String,
    },
    /// Dequantization refused the tensor's bytes.
    #[error("{path}: tensor `{tensor}`: {source}", path = path.display())]
    Dequantize {
        /// File.
        path: PathBuf,
        /// Tensor name.
        tensor: String,
        /// The error.
        source: QuantError,
    },
}

/// GGUF metadata value type ids (`gguf_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetaType {
    /// 0.
    U8,
    /// 1.
    I8,
    /// 2.
    U16,
    /// 3.
    I16,
    /// 4.
    U32,
    /// 5.
    I32,
    /// 6.
    F32,
    /// 7.
    Bool,
    /// 8.
    String,
    /// 9.
    Array,
    /// 10.
    U64,
    /// 11.
    I64,
    /// 12.
    F64,
}

impl MetaType {
    /// The type with GGUF id `id`.
    pub fn from_id(id: u32) -> Option<MetaType> {
        Some(match id {
            0 => MetaType::U8,
            1 => MetaType::I8,
            2 => MetaType::U16,
            3 => MetaType::I16,
            4 => MetaType::U32,
            5 => MetaType::I32,
            6 => MetaType::F32,
            7 => MetaType::Bool,
            8 => MetaType::String,
            9 => MetaType::Array,
            10 => MetaType::U64,
            11 => MetaType::I64,
            12 => MetaType::F64,
            _ => return None,
        })
    }

    /// Lower-case name (`u8`, …, `string`, `array`).
    pub fn name(self) -> &'static str {
        match self {
            MetaType::U8 => "u8",
            MetaType::I8 => "i8",
            MetaType::U16 => "u16",
            MetaType::I16 => "i16",
            MetaType::U32 => "u32",
            MetaType::I32 => "i32",
            MetaType::F32 => "f32",
            MetaType::Bool => "bool",
            MetaType::String => "string",
            MetaType::Array => "array",
            MetaType::U64 => "u64",
            MetaType::I64 => "i64",
            MetaType::F64 => "f64",
        }
    }

    /// Bytes of one value, or `None` for strings and arrays.
    fn fixed_size(self) -> Option<u64> {
        match self {
            MetaType::U8 | MetaType::I8 | MetaType::Bool => Some(1),
            MetaType::U16 | MetaType::I16 => Some(2),
            MetaType::U32 | MetaType::I32 | MetaType::F32 => Some(4),
            MetaType::U64 | MetaType::I64 | MetaType::F64 => Some(8),
            MetaType::String | MetaType::Array => None,
        }
    }
}

/// A metadata value.
#[derive(Clone, Debug, PartialEq)]
pub enum MetaValue {
    /// u8.
    U8(u8),
    /// i8.
    I8(i8),
    /// u16.
    U16(u16),
    /// i16.
    I16(i16),
    /// u32.
    U32(u32),
    /// i32.
    I32(i32),
    /// f32.
    F32(f32),
    /// bool.
    Bool(bool),
    /// UTF-8 string.
    String(String),
    /// Array of one scalar or string type.
    Array(MetaArray),
    /// u64.
    U64(u64),
    /// i64.
    I64(i64),
    /// f64.
    F64(f64),
}

/// A metadata array: the elements of one type.
#[derive(Clone, Debug, PartialEq)]
pub enum MetaArray {
    /// u8 elements.
    U8(Vec<u8>),
    /// i8 elements.
    I8(Vec<i8>),
    /// u16 elements.
    U16(Vec<u16>),
    /// i16 elements.
    I16(Vec<i16>),
    /// u32 elements.
    U32(Vec<u32>),
    /// i32 elements.
    I32(Vec<i32>),
    /// f32 elements.
    F32(Vec<f32>),
    /// bool elements.
    Bool(Vec<bool>),
    /// String elements.
    String(Vec<String>),
    /// u64 elements.
    U64(Vec<u64>),
    /// i64 elements.
    I64(Vec<i64>),
    /// f64 elements.
    F64(Vec<f64>),
}

impl MetaArray {
    /// Element type.
    pub fn elem_type(&self) -> MetaType {
        match self {
            MetaArray::U8(_) => MetaType::U8,
            MetaArray::I8(_) => MetaType::I8,
            MetaArray::U16(_) => MetaType::U16,
            MetaArray::I16(_) => MetaType::I16,
            MetaArray::U32(_) => MetaType::U32,
            MetaArray::I32(_) => MetaType::I32,
            MetaArray::F32(_) => MetaType::F32,
            MetaArray::Bool(_) => MetaType::Bool,
            MetaArray::String(_) => MetaType::String,
            MetaArray::U64(_) => MetaType::U64,
            MetaArray::I64(_) => MetaType::I64,
            MetaArray::F64(_) => MetaType::F64,
        }
    }

    /// Element count.
    pub fn len(&self) -> usize {
        match self {
            MetaArray::U8(v) => v.len(),
            MetaArray::I8(v) => v.len(),
            MetaArray::U16(v) => v.len(),
            MetaArray::I16(v) => v.len(),
            MetaArray::U32(v) => v.len(),
            MetaArray::I32(v) => v.len(),
            MetaArray::F32(v) => v.len(),
            MetaArray::Bool(v) => v.len(),
            MetaArray::String(v) => v.len(),
            MetaArray::U64(v) => v.len(),
            MetaArray::I64(v) => v.len(),
            MetaArray::F64(v) => v.len(),
        }
    }

    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements as i128 when the element type is an integer type.
    fn integers(&self) -> Option<Vec<i128>> {
        Some(match self {
            MetaArray::U8(v) => v.iter().map(|&x| x as i128).collect(),
            MetaArray::I8(v) => v.iter().map(|&x| x as i128).collect(),
            MetaArray::U16(v) => v.iter().map(|&x| x as i128).collect(),
            MetaArray::I16(v) => v.iter().map(|&x| x as i128).collect(),
            MetaArray::U32(v) => v.iter().map(|&x| x as i128).collect(),
            MetaArray::I32(v) => v.iter().map(|&x| x as i128).collect(),
            MetaArray::U64(v) => v.iter().map(|&x| x as i128).collect(),
            MetaArray::I64(v) => v.iter().map(|&x| x as i128).collect(),
            _ => return None,
        })
    }
}

impl MetaValue {
    /// Value type.
    pub fn meta_type(&self) -> MetaType {
        match self {
            MetaValue::U8(_) => MetaType::U8,
            MetaValue::I8(_) => MetaType::I8,
            MetaValue::U16(_) => MetaType::U16,
            MetaValue::I16(_) => MetaType::I16,
            MetaValue::U32(_) => MetaType::U32,
            MetaValue::I32(_) => MetaType::I32,
            MetaValue::F32(_) => MetaType::F32,
            MetaValue::Bool(_) => MetaType::Bool,
            MetaValue::String(_) => MetaType::String,
            MetaValue::Array(_) => MetaType::Array,
            MetaValue::U64(_) => MetaType::U64,
            MetaValue::I64(_) => MetaType::I64,
            MetaValue::F64(_) => MetaType::F64,
        }
    }

    /// Type description for error messages: `u32`, `array of string`, ….
    pub fn type_description(&self) -> String {
        match self {
            MetaValue::Array(a) => format!("array of {}", a.elem_type().name()),
            v => v.meta_type().name().to_string(),
        }
    }

    /// The value as i128 when it is an integer.
    pub fn as_integer(&self) -> Option<i128> {
        Some(match *self {
            MetaValue::U8(x) => x as i128,
            MetaValue::I8(x) => x as i128,
            MetaValue::U16(x) => x as i128,
            MetaValue::I16(x) => x as i128,
            MetaValue::U32(x) => x as i128,
            MetaValue::I32(x) => x as i128,
            MetaValue::U64(x) => x as i128,
            MetaValue::I64(x) => x as i128,
            _ => return None,
        })
    }
}

/// One tensor's info, validated against the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorInfo {
    /// Tensor name.
    pub name: String,
    /// Dimensions in ggml order (innermost first); empty for a scalar.
    pub dims: Vec<u64>,
    /// Element type.
    pub ggml_type: GgmlType,
    /// Absolute byte offset of the data in the file.
    pub offset: u64,
    /// Byte length of the data.
    pub n_bytes: u64,
    /// Element count (product of `dims`).
    pub n_elements: u64,
}

impl TensorInfo {
    /// Dimensions outermost first (the PyTorch shape: `dims` reversed).
    pub fn shape(&self) -> Vec<usize> {
        self.dims.iter().rev().map(|&d| d as usize).collect()
    }
}

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

/// A tensor info as read, before the checks that need the alignment and data offset.
struct RawTensorInfo {
    name: String,
    info_offset: u64,
    type_offset: u64,
    dims: Vec<u64>,
    type_id: u32,
    offset: u64,
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

/// Checks one tensor info against the type table, the alignment and the file size.
fn validate_tensor(
    path: &Path,
    raw: RawTensorInfo,
    alignment: u64,
    data_offset: u64,
    file_len: u64,
) -> Result<TensorInfo, GgufError> {
    let RawTensorInfo {
        name,
        type_offset,
        dims,
        type_id,
        offset,
        ..
    } = raw;
    let ggml_type = GgmlType::from_id(type_id).ok_or_else(|| GgufError::UnknownGgmlType {
        path: path.to_path_buf(),
        tensor: name.clone(),
        offset: type_offset,
        type_id,
    })?;
    if let Some(axis) = dims.iter().position(|&d| d == 0) {
        return Err(GgufError::ZeroDim {
            path: path.to_path_buf(),
            tensor: name,
            dims,
            axis,
        });
    }
    let overflow = || GgufError::DimsOverflow {
        path: path.to_path_buf(),
        tensor: name.clone(),
        dims: dims.clone(),
    };
    let n_elements = dims
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .filter(|&n| n <= i64::MAX as u64 && usize::try_from(n).is_ok())
        .ok_or_else(overflow)?;
    let ne0 = dims.first().copied().unwrap_or(1);
    let block_size = ggml_type.block_size();
    if !ne0.is_multiple_of(block_size as u64) {
        return Err(GgufError::PartialBlock {
            path: path.to_path_buf(),
            tensor: name,
            ggml_type,
            ne0,
            block_size,
        });
    }
    let n_bytes = ggml_type.byte_len(n_elements).ok_or_else(overflow)?;
    if !offset.is_multiple_of(alignment) {
        return Err(GgufError::MisalignedOffset {
            path: path.to_path_buf(),
            tensor: name,
            offset,
            alignment,
        });
    }
    let start = data_offset as u128 + offset as u128;
    let end = start + n_bytes as u128;
    if end > file_len as u128 {
        return Err(GgufError::TensorOutOfFile {
            path: path.to_path_buf(),
            tensor: name,
            start,
            end,
            file_len,
        });
    }
    Ok(TensorInfo {
        name,
        dims,
        ggml_type,
        offset: start as u64,
        n_bytes,
        n_elements,
    })
}

/// Reads a tensor's bytes from a seekable source (the file, or a buffer in tests).
fn read_tensor_bytes<R: Read + Seek>(
    path: &Path,
    r: &mut R,
    info: &TensorInfo,
) -> Result<Vec<u8>, GgufError> {
    let io_err = |source| GgufError::Io {
        path: path.to_path_buf(),
        what: format!(
            "data of tensor `{}` (bytes {}..{})",
            info.name,
            info.offset,
            info.offset + info.n_bytes
        ),
        source,
    };
    // `n_bytes` lies inside the file (checked at open), so the buffer is at most the file size.
    let n = usize::try_from(info.n_bytes).map_err(|_| {
        io_err(io::Error::new(
            io::ErrorKind::InvalidData,
            "tensor larger than the address space",
        ))
    })?;
    r.seek(SeekFrom::Start(info.offset)).map_err(io_err)?;
    let mut bytes = vec![0u8; n];
    r.read_exact(&mut bytes).map_err(io_err)?;
    Ok(bytes)
}

fn dequantize_tensor(path: &Path, info: &TensorInfo, bytes: &[u8]) -> Result<Vec<f32>, GgufError> {
    let to_err = |source| GgufError::Dequantize {
        path: path.to_path_buf(),
        tensor: info.name.clone(),
        source,
    };
    let n = usize::try_from(info.n_elements).map_err(|_| {
        to_err(QuantError::ByteLength {
            ty: info.ggml_type,
            n_elements: usize::MAX,
            expected: usize::MAX,
            got: bytes.len(),
        })
    })?;
    quants::dequantize(info.ggml_type, bytes, n).map_err(to_err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;
    use std::time::{Duration, Instant};

    use proptest::prelude::*;
    use serde_json::Value;

    fn fixtures() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gguf")
    }

    fn load_json(name: &str) -> Value {
        let path = fixtures().join(name);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn small_bytes() -> Vec<u8> {
        std::fs::read(fixtures().join("small.gguf")).unwrap()
    }

    /// Parses an in-memory file.
    fn parse(bytes: &[u8]) -> Result<GgufFile, GgufError> {
        GgufFile::parse(
            Path::new("mem.gguf"),
            Cursor::new(bytes),
            bytes.len() as u64,
        )
    }

    /// Reads and dequantizes every supported tensor of an in-memory file.
    fn read_all(file: &GgufFile, bytes: &[u8]) -> Result<Vec<Vec<f32>>, GgufError> {
        let mut cur = Cursor::new(bytes);
        let mut out = Vec::new();
        for t in file.tensors() {
            let raw = read_tensor_bytes(file.path(), &mut cur, t)?;
            if t.ggml_type.can_dequantize() {
                out.push(dequantize_tensor(file.path(), t, &raw)?);
            }
        }
        Ok(out)
    }

    fn bits(v: &Value) -> Vec<u32> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|b| b.as_u64().unwrap() as u32)
            .collect()
    }

    /// Compares one metadata value with GGUFReader's `contents()` (and bit patterns for floats).
    fn assert_meta_eq(key: &str, got: &MetaValue, exp: &Value) {
        let ty = exp["type"].as_str().unwrap();
        let want_type = match ty {
            "UINT8" => MetaType::U8,
            "INT8" => MetaType::I8,
            "UINT16" => MetaType::U16,
            "INT16" => MetaType::I16,
            "UINT32" => MetaType::U32,
            "INT32" => MetaType::I32,
            "FLOAT32" => MetaType::F32,
            "BOOL" => MetaType::Bool,
            "STRING" => MetaType::String,
            "ARRAY" => MetaType::Array,
            "UINT64" => MetaType::U64,
            "INT64" => MetaType::I64,
            "FLOAT64" => MetaType::F64,
            other => panic!("{key}: type {other}"),
        };
        assert_eq!(got.meta_type(), want_type, "{key}");
        let value = &exp["value"];
        let int_of = |v: &Value| -> i128 {
            v.as_u64()
                .map(|x| x as i128)
                .or_else(|| v.as_i64().map(|x| x as i128))
                .unwrap_or_else(|| panic!("{key}: {v} is not an integer"))
        };
        match got {
            MetaValue::F32(x) => assert_eq!(x.to_bits() as u64, exp["bits"].as_u64().unwrap()),
            MetaValue::F64(x) => assert_eq!(x.to_bits(), exp["bits"].as_u64().unwrap()),
            MetaValue::Bool(b) => assert_eq!(Some(*b), value.as_bool(), "{key}"),
            MetaValue::String(s) => assert_eq!(Some(s.as_str()), value.as_str(), "{key}"),
            MetaValue::Array(a) => {
                let elems = value.as_array().unwrap();
                assert_eq!(a.len(), elems.len(), "{key}");
                let elem = exp["elem"].as_str().unwrap();
                match a {
                    MetaArray::F32(v) => {
                        assert_eq!(elem, "FLOAT32");
                        let got: Vec<u32> = v.iter().map(|x| x.to_bits()).collect();
                        assert_eq!(got, bits(&exp["bits"]), "{key}");
                    }
                    MetaArray::F64(v) => {
                        assert_eq!(elem, "FLOAT64");
                        let want: Vec<u64> = exp["bits"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|b| b.as_u64().unwrap())
                            .collect();
                        let got: Vec<u64> = v.iter().map(|x| x.to_bits()).collect();
                        assert_eq!(got, want, "{key}");
                    }
                    MetaArray::Bool(v) => {
                        assert_eq!(elem, "BOOL");
                        let want: Vec<bool> = elems.iter().map(|b| b.as_bool().unwrap()).collect();
                        assert_eq!(*v, want, "{key}");
                    }
                    MetaArray::String(v) => {
                        assert_eq!(elem, "STRING");
                        let want: Vec<&str> = elems.iter().map(|s| s.as_str().unwrap()).collect();
                        assert_eq!(*v, want, "{key}");
                    }
                    ints => {
                        let names = [
                            (MetaType::U8, "UINT8"),
                            (MetaType::I8, "INT8"),
                            (MetaType::U16, "UINT16"),
                            (MetaType::I16, "INT16"),
                            (MetaType::U32, "UINT32"),
                            (MetaType::I32, "INT32"),
                            (MetaType::U64, "UINT64"),
                            (MetaType::I64, "INT64"),
                        ];
                        let name = names
                            .iter()
                            .find(|(t, _)| *t == ints.elem_type())
                            .unwrap()
                            .1;
                        assert_eq!(elem, name, "{key}");
                        let want: Vec<i128> = elems.iter().map(int_of).collect();
                        assert_eq!(ints.integers().unwrap(), want, "{key}");
                    }
                }
            }
            scalar => assert_eq!(scalar.as_integer(), Some(int_of(value)), "{key}"),
        }
    }

    /// The parsed small file equals what gguf-py's GGUFReader reads back, and every supported
    /// tensor dequantizes to the package's values bit for bit.
    #[test]
    fn small_file_matches_gguf_reader() {
        let exp = load_json("small.expected.json");
        let path = fixtures().join("small.gguf");
        let f = GgufFile::open(&path).unwrap();
        assert_eq!(f.path(), path.as_path());
        assert_eq!(f.file_len(), exp["file_size"].as_u64().unwrap());
        assert_eq!(f.version() as u64, exp["version"].as_u64().unwrap());
        assert_eq!(f.alignment(), exp["alignment"].as_u64().unwrap());
        assert_eq!(f.data_offset(), exp["data_offset"].as_u64().unwrap());

        let metas = exp["metadata"].as_array().unwrap();
        assert_eq!(f.metadata().len(), metas.len());
        for ((key, got), e) in f.metadata().zip(metas) {
            assert_eq!(key, e["key"].as_str().unwrap());
            assert_meta_eq(key, got, e);
            assert_eq!(f.get(key), Some(got));
        }

        let tensors = exp["tensors"].as_array().unwrap();
        assert_eq!(f.tensors().len(), tensors.len());
        let mut n_compared = 0;
        for (t, e) in f.tensors().iter().zip(tensors) {
            let name = e["name"].as_str().unwrap();
            assert_eq!(t.name, name);
            assert_eq!(f.tensor(name), Some(t));
            assert_eq!(t.ggml_type.name(), e["type"].as_str().unwrap());
            assert_eq!(t.ggml_type.id() as u64, e["type_id"].as_u64().unwrap());
            let dims: Vec<u64> = e["dims"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_u64().unwrap())
                .collect();
            assert_eq!(t.dims, dims, "{name}");
            assert_eq!(t.n_elements, e["n_elements"].as_u64().unwrap(), "{name}");
            assert_eq!(t.n_bytes, e["n_bytes"].as_u64().unwrap(), "{name}");
            assert_eq!(t.offset, e["offset"].as_u64().unwrap(), "{name}");
            let shape: Vec<usize> = dims.iter().rev().map(|&d| d as usize).collect();
            assert_eq!(t.shape(), shape);
            assert_eq!(f.read_raw(name).unwrap().len() as u64, t.n_bytes);
            if let Some(want) = e.get("f32_bits") {
                let (values, got_dims) = f.read_f32(name).unwrap();
                assert_eq!(
                    got_dims,
                    dims.iter().map(|&d| d as usize).collect::<Vec<_>>()
                );
                let got: Vec<u32> = values.iter().map(|x| x.to_bits()).collect();
                assert_eq!(got, bits(want), "{name}");
                n_compared += 1;
            } else {
                match f.read_f32(name) {
                    Err(GgufError::UnsupportedType {
                        tensor, ggml_type, ..
                    }) => {
                        assert_eq!(tensor, name);
                        assert_eq!(ggml_type.name(), e["type"].as_str().unwrap());
                    }
                    other => panic!("{name}: expected UnsupportedType, got {other:?}"),
                }
            }
        }
        assert!(n_compared >= 8, "only {n_compared} tensors compared");
        // The fixture holds 2-D non-square and 3-D tensors.
        assert!(f.tensors().iter().any(|t| t.dims.len() == 3));
        assert!(
            f.tensors()
                .iter()
                .any(|t| t.dims.len() == 2 && t.dims[0] != t.dims[1])
        );
    }

    #[test]
    fn typed_getters() {
        let f = GgufFile::open(fixtures().join("small.gguf")).unwrap();
        // Values as written by tools/gguf/gen_gguf_fixtures.py.
        assert_eq!(f.get_str("general.architecture").unwrap(), Some("llama"));
        assert_eq!(f.get_u32("llama.block_count").unwrap(), Some(2));
        assert_eq!(f.get_u32("test.u8").unwrap(), Some(200));
        assert_eq!(f.get_u32("test.i32_pos").unwrap(), Some(123456));
        assert_eq!(f.get_i64("test.i64").unwrap(), Some(-(1 << 62) - 7));
        assert_eq!(f.get_u64("test.u64").unwrap(), Some((1 << 63) + 5));
        assert_eq!(f.get_usize("test.u16").unwrap(), Some(60000));
        assert_eq!(f.get_f32("test.f32").unwrap(), Some(1.2345f32));
        assert_eq!(f.get_f64("test.f32").unwrap(), Some(1.2345f32 as f64));
        assert_eq!(f.get_f64("test.f64").unwrap(), Some(1.0 / 3.0));
        assert_eq!(f.get_bool("test.bool_true").unwrap(), Some(true));
        assert_eq!(f.get_bool("test.bool_false").unwrap(), Some(false));
        assert_eq!(f.get_str("test.empty_string").unwrap(), Some(""));
        assert_eq!(
            f.get_str_array("tokenizer.ggml.tokens")
                .unwrap()
                .unwrap()
                .len(),
            300
        );
        assert_eq!(
            f.get_i32_array("test.arr_i8").unwrap(),
            Some(vec![-128, 0, 127])
        );
        assert_eq!(
            f.get_u32_array("test.arr_u16").unwrap(),
            Some(vec![0, 65535])
        );
        assert_eq!(
            f.get_f32_array("test.arr_f32").unwrap(),
            Some(&[0.5f32, -1.25, 1e-3][..])
        );
        assert_eq!(f.get_array("test.arr_u8").unwrap().unwrap().len(), 3);
        // Absent keys are Ok(None); wrong types name key, expected and found.
        assert_eq!(f.get_u32("no.such.key").unwrap(), None);
        assert_eq!(f.get_str_array("no.such.key").unwrap(), None);
        let wrong = |r: Result<(), GgufError>, want_key: &str, want_found: &str| match r {
            Err(GgufError::WrongType {
                key, found, path, ..
            }) => {
                assert_eq!(key, want_key);
                assert!(found.contains(want_found), "{found}");
                assert!(path.ends_with("small.gguf"));
            }
            other => panic!("{want_key}: expected WrongType, got {other:?}"),
        };
        wrong(f.get_str("test.u32").map(drop), "test.u32", "u32");
        wrong(
            f.get_u32("test.i32").map(drop),
            "test.i32",
            "i32 -2000000000",
        );
        wrong(
            f.get_i32("test.u32").map(drop),
            "test.u32",
            "u32 4000000000",
        );
        wrong(f.get_u32("test.string").map(drop), "test.string", "string");
        wrong(f.get_f32("test.f64").map(drop), "test.f64", "f64");
        wrong(f.get_bool("test.u8").map(drop), "test.u8", "u8");
        wrong(
            f.get_str_array("test.arr_i32").map(drop),
            "test.arr_i32",
            "array of i32",
        );
        wrong(
            f.get_u32_array("test.arr_i32").map(drop),
            "test.arr_i32",
            "element 0 = -5",
        );
        wrong(
            f.get_i32_array("test.arr_f32").map(drop),
            "test.arr_f32",
            "array of f32",
        );
        wrong(f.get_array("test.u8").map(drop), "test.u8", "u8");
        match f.read_f32("no.such.tensor") {
            Err(GgufError::TensorNotFound { tensor, .. }) => assert_eq!(tensor, "no.such.tensor"),
            other => panic!("expected TensorNotFound, got {other:?}"),
        }
    }

    // ---- Hand-built files -------------------------------------------------------------------

    fn put_str(b: &mut Vec<u8>, s: &[u8]) {
        b.extend_from_slice(&(s.len() as u64).to_le_bytes());
        b.extend_from_slice(s);
    }

    /// A metadata entry: key, value type id, encoded value.
    fn kv(key: &[u8], type_id: u32, value: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        put_str(&mut b, key);
        b.extend_from_slice(&type_id.to_le_bytes());
        b.extend_from_slice(value);
        b
    }

    fn kv_u32(key: &str, v: u32) -> Vec<u8> {
        kv(key.as_bytes(), 4, &v.to_le_bytes())
    }

    fn kv_str(key: &str, v: &[u8]) -> Vec<u8> {
        let mut s = Vec::new();
        put_str(&mut s, v);
        kv(key.as_bytes(), 8, &s)
    }

    /// An array value: element type, count, encoded elements.
    fn arr(elem: u32, count: u64, elems: &[u8]) -> Vec<u8> {
        let mut b = elem.to_le_bytes().to_vec();
        b.extend_from_slice(&count.to_le_bytes());
        b.extend_from_slice(elems);
        b
    }

    /// A tensor info.
    fn ti(name: &[u8], dims: &[u64], type_id: u32, offset: u64) -> Vec<u8> {
        let mut b = Vec::new();
        put_str(&mut b, name);
        b.extend_from_slice(&(dims.len() as u32).to_le_bytes());
        for d in dims {
            b.extend_from_slice(&d.to_le_bytes());
        }
        b.extend_from_slice(&type_id.to_le_bytes());
        b.extend_from_slice(&offset.to_le_bytes());
        b
    }

    /// Header (counts from the slices), metadata, tensor infos, zero padding to `align`, data.
    fn build(version: u32, kvs: &[Vec<u8>], tis: &[Vec<u8>], align: usize, data: &[u8]) -> Vec<u8> {
        let mut b = b"GGUF".to_vec();
        b.extend_from_slice(&version.to_le_bytes());
        b.extend_from_slice(&(tis.len() as u64).to_le_bytes());
        b.extend_from_slice(&(kvs.len() as u64).to_le_bytes());
        kvs.iter().for_each(|k| b.extend_from_slice(k));
        tis.iter().for_each(|t| b.extend_from_slice(t));
        while !b.len().is_multiple_of(align) {
            b.push(0);
        }
        b.extend_from_slice(data);
        b
    }

    /// 32 bytes of F32 [4, 2] (`a`), then 34 bytes of Q8_0 [32] (`b`) at offset 32.
    fn base_data() -> Vec<u8> {
        let mut data = Vec::new();
        for i in 0..8 {
            data.extend_from_slice(&(i as f32 * 0.5 - 1.0).to_le_bytes());
        }
        data.extend_from_slice(&0x3800u16.to_le_bytes()); // d = 0.5
        data.extend((0..32).map(|i| (i as i8 - 16) as u8));
        data
    }

    fn base_tis() -> Vec<Vec<u8>> {
        vec![ti(b"a", &[4, 2], 0, 0), ti(b"b", &[32], 8, 32)]
    }

    fn base_kvs() -> Vec<Vec<u8>> {
        vec![kv_str("general.architecture", b"llama")]
    }

    fn base() -> Vec<u8> {
        build(3, &base_kvs(), &base_tis(), 32, &base_data())
    }

    /// The hand-built base file is valid, and its values follow from the bytes written above:
    /// `a[i] = 0.5 i - 1` and `b[i] = 0.5 (i - 16)`.
    #[test]
    fn hand_built_base_is_valid() {
        for version in [2, 3] {
            let bytes = build(version, &base_kvs(), &base_tis(), 32, &base_data());
            let f = parse(&bytes).unwrap();
            assert_eq!(f.version(), version);
            assert_eq!(f.alignment(), DEFAULT_ALIGNMENT);
            let vals = read_all(&f, &bytes).unwrap();
            let a: Vec<f32> = (0..8).map(|i| i as f32 * 0.5 - 1.0).collect();
            let b: Vec<f32> = (0..32).map(|i| (i as f32 - 16.0) * 0.5).collect();
            assert_eq!(vals, vec![a, b]);
        }
        // A 0-dim tensor is a scalar with one element; an empty array is allowed.
        let kvs = vec![kv(b"empty", 9, &arr(4, 0, &[]))];
        let bytes = build(3, &kvs, &[ti(b"s", &[], 0, 0)], 32, &1.5f32.to_le_bytes());
        let f = parse(&bytes).unwrap();
        assert_eq!(f.tensors()[0].n_elements, 1);
        assert_eq!(read_all(&f, &bytes).unwrap(), vec![vec![1.5f32]]);
        assert_eq!(f.get_u32_array("empty").unwrap(), Some(vec![]));
        // No tensors: the data section may be absent.
        let bytes = build(3, &base_kvs(), &[], 1, &[]);
        assert_eq!(parse(&bytes).unwrap().tensors().len(), 0);
    }

    fn with_u64_at(mut bytes: Vec<u8>, at: usize, v: u64) -> Vec<u8> {
        bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
        bytes
    }

    fn with_u32_at(mut bytes: Vec<u8>, at: usize, v: u32) -> Vec<u8> {
        bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
        bytes
    }

    /// Malformed files: each case names the error variant and the offending field it expects.
    #[test]
    fn hostile_inputs_give_typed_errors() {
        type Check = Box<dyn Fn(&GgufError) -> bool>;
        let small = small_bytes();
        let data = base_data();
        let mut cases: Vec<(&str, Vec<u8>, Check)> = Vec::new();
        macro_rules! case {
            ($name:expr, $bytes:expr, $pat:pat $(if $guard:expr)?) => {
                cases.push(($name, $bytes, Box::new(|e: &GgufError| matches!(e, $pat $(if $guard)?))))
            };
        }
        let mut b = small.clone();
        b[3] = b'X';
        case!("bad magic", b, GgufError::BadMagic { found, .. } if found == b"GGUX");
        case!("empty file", vec![], GgufError::Truncated { field, offset: 0, .. } if field == "magic");
        case!(
            "version 1",
            with_u32_at(small.clone(), 4, 1),
            GgufError::UnsupportedVersion { version: 1, .. }
        );
        case!(
            "version 99",
            with_u32_at(small.clone(), 4, 99),
            GgufError::UnsupportedVersion { version: 99, .. }
        );
        case!(
            "big-endian version",
            with_u32_at(small.clone(), 4, 3u32.swap_bytes()),
            GgufError::UnsupportedVersion {
                version: 0x0300_0000,
                ..
            }
        );
        case!("tensor count 2^62", with_u64_at(small.clone(), 8, 1 << 62),
            GgufError::LengthTooLarge { field, count, offset: 8, .. }
                if field == "tensor_count" && *count == 1 << 62);
        case!("kv count 2^62", with_u64_at(small.clone(), 16, 1 << 62),
            GgufError::LengthTooLarge { field, count, offset: 16, .. }
                if field == "kv_count" && *count == 1 << 62);
        case!("kv count u64::MAX", with_u64_at(small.clone(), 16, u64::MAX),
            GgufError::LengthTooLarge { field, .. } if field == "kv_count");
        // Largest tensor count whose infos fit in the bytes after the header, plus a kv count
        // that fits alone but not beside it.
        let rest = base().len() as u64 - 24;
        let (t, k) = (rest / 24, (rest % 24) / 13 + 1);
        assert!(k * 13 <= rest && t * 24 + k * 13 > rest);
        case!("counts fit alone, not together",
            with_u64_at(with_u64_at(base(), 8, t), 16, k),
            GgufError::LengthTooLarge { field, .. } if field.contains("together"));
        case!("key length 2^40", with_u64_at(small.clone(), 24, 1 << 40),
            GgufError::LengthTooLarge { field, offset: 24, .. } if field == "key #0 length");
        let mut long = kv_str("general.name", b"x");
        long[8 + 12 + 4..8 + 12 + 4 + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
        case!("string length 2^40", build(3, &[long], &[], 32, &[]),
            GgufError::LengthTooLarge { field, count, .. }
                if field.contains("general.name") && *count == 1 << 40);
        case!("array length 2^60",
            build(3, &[kv(b"big", 9, &arr(5, 1 << 60, &[0; 8]))], &[], 32, &[]),
            GgufError::LengthTooLarge { field, .. } if field.contains("`big`"));
        case!("string array length 2^60",
            build(3, &[kv(b"toks", 9, &arr(8, 1 << 60, &[0; 8]))], &[], 32, &[]),
            GgufError::LengthTooLarge { field, .. } if field.contains("`toks`"));
        case!("string array element length 2^40",
            build(3, &[kv(b"toks", 9, &arr(8, 1, &(1u64 << 40).to_le_bytes()))], &[], 32, &[]),
            GgufError::LengthTooLarge { field, .. } if field.contains("element 0 of key `toks`"));
        case!("nested arrays",
            build(3, &[kv(b"nest", 9, &arr(9, 1, &arr(4, 1, &[0; 4])))], &[], 32, &[]),
            GgufError::NestedArray { key, .. } if key == "nest");
        case!("unknown value type",
            build(3, &[kv(b"weird", 13, &[0; 8])], &[], 32, &[]),
            GgufError::UnknownValueType { key, type_id: 13, .. } if key == "weird");
        case!("unknown array element type",
            build(3, &[kv(b"weird", 9, &arr(200, 1, &[0; 8]))], &[], 32, &[]),
            GgufError::UnknownValueType { key, type_id: 200, .. } if key == "weird");
        case!("bool 2", build(3, &[kv(b"flag", 7, &[2])], &[], 32, &[]),
            GgufError::InvalidBool { key, value: 2, .. } if key == "flag");
        case!("bool array element 7",
            build(3, &[kv(b"flags", 9, &arr(7, 3, &[1, 0, 7]))], &[], 32, &[]),
            GgufError::InvalidBool { key, value: 7, .. } if key == "flags");
        case!("non-UTF-8 key",
            build(3, &[kv_u32("ok", 1), kv(b"bad\xff\xfe", 4, &[0; 4])], &[], 32, &[]),
            GgufError::NotUtf8 { field, .. } if field == "key #1");
        case!("non-UTF-8 string value",
            build(3, &[kv_str("general.name", b"\xc3\x28")], &[], 32, &[]),
            GgufError::NotUtf8 { field, .. } if field.contains("general.name"));
        case!("non-UTF-8 tensor name",
            build(3, &base_kvs(), &[ti(b"\x80t", &[4, 2], 0, 0)], 32, &data),
            GgufError::NotUtf8 { field, .. } if field == "name of tensor #0");
        case!("duplicate key",
            build(3, &[kv_u32("k", 1), kv_u32("j", 2), kv_u32("k", 3)], &[], 32, &[]),
            GgufError::DuplicateKey { key, .. } if key == "k");
        case!("duplicate tensor name",
            build(3, &base_kvs(), &[ti(b"a", &[4, 2], 0, 0), ti(b"a", &[8], 0, 32)], 32, &data),
            GgufError::DuplicateTensor { tensor, .. } if tensor == "a");
        case!("n_dims 5",
            build(3, &base_kvs(), &[ti(b"t5", &[1, 1, 1, 1, 1], 0, 0)], 32, &data),
            GgufError::TooManyDims { tensor, n_dims: 5, .. } if tensor == "t5");
        case!("n_dims u32::MAX",
            build(3, &base_kvs(), &[with_u32_at(ti(b"tm", &[], 0, 0), 10, u32::MAX)], 32, &data),
            GgufError::TooManyDims { tensor, n_dims: u32::MAX, .. } if tensor == "tm");
        case!("a dim of 0",
            build(3, &base_kvs(), &[ti(b"z", &[4, 0], 0, 0)], 32, &data),
            GgufError::ZeroDim { tensor, axis: 1, .. } if tensor == "z");
        case!("dims product overflows u64",
            build(3, &base_kvs(), &[ti(b"huge", &[1 << 32, 1 << 32, 2], 0, 0)], 32, &data),
            GgufError::DimsOverflow { tensor, .. } if tensor == "huge");
        case!("byte size overflows u64",
            build(3, &base_kvs(), &[ti(b"huge", &[1 << 62], 0, 0)], 32, &data),
            GgufError::DimsOverflow { tensor, .. } if tensor == "huge");
        case!("row not whole blocks",
            build(3, &base_kvs(), &[ti(b"q", &[48, 2], 2, 0)], 32, &data),
            GgufError::PartialBlock { tensor, ne0: 48, block_size: 32, ggml_type: GgmlType::Q4_0, .. }
                if tensor == "q");
        case!("unknown ggml type 99",
            build(3, &base_kvs(), &[ti(b"a", &[4, 2], 0, 0), ti(b"u", &[8], 99, 32)], 32, &data),
            GgufError::UnknownGgmlType { tensor, type_id: 99, .. } if tensor == "u");
        case!("removed ggml type 4",
            build(3, &base_kvs(), &[ti(b"r", &[32], 4, 0)], 32, &data),
            GgufError::UnknownGgmlType { tensor, type_id: 4, .. } if tensor == "r");
        case!("offset out of file",
            build(3, &base_kvs(), &[ti(b"a", &[4, 2], 0, 1024)], 32, &data),
            GgufError::TensorOutOfFile { tensor, .. } if tensor == "a");
        case!("offset near u64::MAX",
            build(3, &base_kvs(), &[ti(b"a", &[4, 2], 0, u64::MAX - 31)], 32, &data),
            GgufError::TensorOutOfFile { tensor, .. } if tensor == "a");
        case!("size larger than the file",
            build(3, &base_kvs(), &[ti(b"big", &[1 << 40], 0, 0)], 32, &data),
            GgufError::TensorOutOfFile { tensor, .. } if tensor == "big");
        let header_only = build(3, &base_kvs(), &base_tis(), 32, &[]);
        case!(
            "data cut off",
            header_only,
            GgufError::TensorOutOfFile { .. }
        );
        case!("overlapping tensors",
            build(3, &base_kvs(), &[ti(b"a", &[4, 2], 0, 0), ti(b"b", &[32], 8, 0)], 32, &data),
            GgufError::OverlappingTensors { first, second, .. } if first == "a" && second == "b");
        case!("misaligned offset",
            build(3, &base_kvs(), &[ti(b"a", &[4, 2], 0, 0), ti(b"b", &[32], 8, 16)], 32, &data),
            GgufError::MisalignedOffset { tensor, offset: 16, alignment: 32, .. } if tensor == "b");
        case!("misaligned under a custom alignment",
            build(3, &[kv_u32(ALIGNMENT_KEY, 64)], &base_tis(), 64, &data),
            GgufError::MisalignedOffset { tensor, offset: 32, alignment: 64, .. } if tensor == "b");
        case!(
            "alignment 0",
            build(3, &[kv_u32(ALIGNMENT_KEY, 0)], &base_tis(), 32, &data),
            GgufError::InvalidAlignment { alignment: 0, .. }
        );
        case!(
            "alignment 3",
            build(3, &[kv_u32(ALIGNMENT_KEY, 3)], &base_tis(), 32, &data),
            GgufError::InvalidAlignment { alignment: 3, .. }
        );
        case!("alignment stored as u64",
            build(3, &[kv(ALIGNMENT_KEY.as_bytes(), 10, &32u64.to_le_bytes())], &base_tis(), 32, &data),
            GgufError::WrongType { key, expected: "u32", found, .. }
                if key == ALIGNMENT_KEY && found == "u64");
        case!("truncated inside a tensor info",
            base()[..base().len() - data.len() - 20].to_vec(),
            GgufError::Truncated { field, .. } if field.contains("tensor `b`"));
        let mut extra = build(3, &base_kvs(), &base_tis(), 1, &[]);
        extra.extend_from_slice(&[0; 8]);
        case!("more tensors than infos", with_u64_at(extra, 8, 3),
            GgufError::Truncated { field, .. } if field == "n_dims of tensor ``");

        assert!(cases.len() >= 40, "{} cases", cases.len());
        for (name, bytes, check) in &cases {
            let t = Instant::now();
            match parse(bytes) {
                Ok(_) => panic!("{name}: parsed"),
                Err(e) => {
                    assert!(check(&e), "{name}: unexpected error {e:?}");
                    let msg = e.to_string();
                    assert!(msg.starts_with("mem.gguf: "), "{name}: {msg}");
                }
            }
            assert!(
                t.elapsed() < Duration::from_millis(500),
                "{name}: {:?}",
                t.elapsed()
            );
        }
    }

    /// Typed errors of a real file on disk: the path is named, an unsupported type is named
    /// when read, and a file that shrank after `open` gives an I/O error naming the tensor.
    #[test]
    fn errors_name_the_file_and_tensor() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("hostile.gguf");
        std::fs::write(&path, with_u64_at(small_bytes(), 8, 1 << 62)).unwrap();
        let err = GgufFile::open(&path).unwrap_err();
        assert!(matches!(&err, GgufError::LengthTooLarge { path: p, .. } if p == &path));
        assert!(err.to_string().contains("hostile.gguf"), "{err}");

        let bytes = build(3, &base_kvs(), &[ti(b"iq", &[256], 16, 0)], 32, &[0; 66]);
        std::fs::write(&path, &bytes).unwrap();
        let f = GgufFile::open(&path).unwrap();
        match f.read_f32("iq") {
            Err(e @ GgufError::UnsupportedType { .. }) => {
                let msg = e.to_string();
                assert!(msg.contains("`iq`") && msg.contains("IQ2_XXS"), "{msg}");
            }
            other => panic!("expected UnsupportedType, got {other:?}"),
        }

        std::fs::write(&path, base()).unwrap();
        let f = GgufFile::open(&path).unwrap();
        std::fs::write(&path, &base()[..base().len() - 10]).unwrap();
        match f.read_f32("b") {
            Err(GgufError::Io { what, .. }) => assert!(what.contains("`b`"), "{what}"),
            other => panic!("expected Io, got {other:?}"),
        }
        assert!(matches!(
            GgufFile::open(dir.path().join("missing.gguf")),
            Err(GgufError::Io { .. })
        ));
    }

    /// Every proper prefix of the small file that cuts into the header or the tensor data is
    /// refused with a truncation error (never a panic); longer prefixes only lose padding.
    #[test]
    fn every_prefix_is_an_error() {
        let bytes = small_bytes();
        let full = parse(&bytes).unwrap();
        let data_end = full
            .tensors()
            .iter()
            .map(|t| t.offset + t.n_bytes)
            .max()
            .unwrap();
        for len in 0..bytes.len() {
            match parse(&bytes[..len]) {
                Err(
                    GgufError::Truncated { .. }
                    | GgufError::LengthTooLarge { .. }
                    | GgufError::TensorOutOfFile { .. },
                ) => assert!((len as u64) < data_end),
                Err(e) => panic!("prefix {len}: unexpected error {e:?}"),
                Ok(_) => assert!(len as u64 >= data_end, "prefix {len} parsed"),
            }
        }
    }

    fn fuzz_target(bytes: &[u8]) -> Duration {
        let t = Instant::now();
        if let Ok(f) = parse(bytes) {
            let _ = read_all(&f, bytes);
            for (k, _) in f.metadata() {
                let _ = (f.get_u32(k), f.get_str(k), f.get_i32_array(k), f.get_f64(k));
            }
        }
        t.elapsed()
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 6000,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        /// Random byte and word mutations and truncations of the small and hand-built files:
        /// parsing never panics and each case takes well under two seconds.
        #[test]
        fn fuzz_mutations_never_panic(
            use_small in any::<bool>(),
            bytes_at in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..8),
            words_at in proptest::collection::vec((any::<usize>(), prop_oneof![
                Just(0u64), Just(1), Just(u32::MAX as u64), Just(1 << 40), Just(1 << 62),
                Just(u64::MAX), any::<u64>(), 0u64..64,
            ]), 0..3),
            truncate in proptest::option::of(any::<usize>()),
            header_only in any::<bool>(),
        ) {
            let mut bytes = if use_small { small_bytes() } else { base() };
            // Mostly aim at the header (everything before the tensor data).
            let header_len = if use_small { 8192 } else { bytes.len() - base_data().len() };
            let span = if header_only { header_len } else { bytes.len() };
            for (at, v) in bytes_at {
                bytes[at % span] = v;
            }
            for (at, v) in words_at {
                let at = at % (span - 8);
                bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
            }
            if let Some(n) = truncate {
                bytes.truncate(n % (bytes.len() + 1));
            }
            let took = fuzz_target(&bytes);
            prop_assert!(took < Duration::from_secs(2), "took {:?}", took);
        }
    }

    // ---- The real SmolLM2 file ----------------------------------------------------------------

    /// CRC-32 (IEEE, reflected, as zlib.crc32) of the little-endian bytes of `values`.
    fn crc32_f32(values: &[f32]) -> u32 {
        let mut table = [0u32; 256];
        for (i, t) in table.iter_mut().enumerate() {
            let mut c = i as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            *t = c;
        }
        let mut crc = !0u32;
        for v in values {
            for b in v.to_le_bytes() {
                crc = table[((crc ^ b as u32) & 0xFF) as usize] ^ (crc >> 8);
            }
        }
        !crc
    }

    #[test]
    fn crc32_matches_zlib() {
        // zlib.crc32(b"1234") == 0x9BE3E0A3; the f32 below has exactly those four bytes.
        assert_eq!(crc32_f32(&[f32::from_le_bytes(*b"1234")]), 0x9BE3_E0A3);
    }

    /// SmolLM2-135M-Instruct.Q4_1.gguf (path in `RLVR_SMOLLM2_GGUF`) parses to what GGUFReader
    /// reads, and all 272 tensors dequantize to the package's values (CRC-32 of the f32 bytes,
    /// first and last 8 values bit for bit; `smollm2_expected.json`).
    #[test]
    fn smollm2_file_matches_gguf_package() {
        let Some(path) = std::env::var_os("RLVR_SMOLLM2_GGUF") else {
            eprintln!(
                "skipped: RLVR_SMOLLM2_GGUF is not set (path of SmolLM2-135M-Instruct.Q4_1.gguf)"
            );
            return;
        };
        let exp = load_json("smollm2_expected.json");
        let t = Instant::now();
        let f = GgufFile::open(&path).unwrap();
        eprintln!("open: {:?}", t.elapsed());
        assert_eq!(f.file_len(), exp["file_size"].as_u64().unwrap());
        assert_eq!(f.version() as u64, exp["version"].as_u64().unwrap());
        assert_eq!(f.alignment(), exp["alignment"].as_u64().unwrap());
        assert_eq!(f.data_offset(), exp["data_offset"].as_u64().unwrap());
        assert_eq!(f.metadata().len() as u64, exp["kv_count"].as_u64().unwrap());
        for (key, e) in exp["metadata"].as_object().unwrap() {
            let got = f.get(key).unwrap_or_else(|| panic!("{key} missing"));
            assert_meta_eq(key, got, e);
        }
        for (key, e) in exp["string_arrays"].as_object().unwrap() {
            let v = f.get_str_array(key).unwrap().unwrap();
            assert_eq!(v.len() as u64, e["len"].as_u64().unwrap(), "{key}");
            assert_eq!(Some(v[0].as_str()), e["first"].as_str(), "{key}");
            assert_eq!(Some(v[v.len() - 1].as_str()), e["last"].as_str(), "{key}");
        }
        // realmodel.md (read with GGUFReader): 272 tensors, 210 Q4_1, 61 F32, token_embd Q8_0.
        let tensors = exp["tensors"].as_array().unwrap();
        assert_eq!(f.tensors().len(), tensors.len());
        assert_eq!(f.tensors().len(), 272);
        let count = |ty| f.tensors().iter().filter(|t| t.ggml_type == ty).count();
        assert_eq!((count(GgmlType::Q4_1), count(GgmlType::F32)), (210, 61));
        assert_eq!(
            f.tensor("token_embd.weight").unwrap().ggml_type,
            GgmlType::Q8_0
        );
        assert_eq!(f.get_str("general.architecture").unwrap(), Some("llama"));
        assert_eq!(f.get_u32("llama.block_count").unwrap(), Some(30));
        let t = Instant::now();
        for (info, e) in f.tensors().iter().zip(tensors) {
            let name = e["name"].as_str().unwrap();
            assert_eq!(info.name, name);
            assert_eq!(info.ggml_type.name(), e["type"].as_str().unwrap(), "{name}");
            let dims: Vec<u64> = e["dims"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_u64().unwrap())
                .collect();
            assert_eq!(info.dims, dims, "{name}");
            assert_eq!(info.offset, e["offset"].as_u64().unwrap(), "{name}");
            assert_eq!(info.n_bytes, e["n_bytes"].as_u64().unwrap(), "{name}");
            let (values, _) = f.read_f32(name).unwrap();
            assert_eq!(
                crc32_f32(&values) as u64,
                e["crc32"].as_u64().unwrap(),
                "{name}"
            );
            let first: Vec<u32> = values[..8].iter().map(|x| x.to_bits()).collect();
            let last: Vec<u32> = values[values.len() - 8..]
                .iter()
                .map(|x| x.to_bits())
                .collect();
            assert_eq!(first, bits(&e["first_bits"]), "{name}");
            assert_eq!(last, bits(&e["last_bits"]), "{name}");
        }
        eprintln!("read_f32 of all tensors: {:?}", t.elapsed());
    }
}
