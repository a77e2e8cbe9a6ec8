//! The GGUF reader's errors: every variant names the file.

use std::io;
use std::path::PathBuf;

use thiserror::Error;

use super::super::quants::{GgmlType, QuantError};

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
    /// More than `MAX_DIMS` (the reader's bound) dimensions.
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
    /// A known ggml type that [`GgufFile::read_f32`](super::GgufFile::read_f32) cannot dequantize.
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
