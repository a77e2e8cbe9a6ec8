//! One tensor: its info validated against the file, its bytes read, dequantized to f32.

use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use super::error::GgufError;
use crate::gguf::quants::{self, GgmlType, QuantError};

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

/// A tensor info as read, before the checks that need the alignment and data offset.
pub(super) struct RawTensorInfo {
    pub(super) name: String,
    pub(super) info_offset: u64,
    pub(super) type_offset: u64,
    pub(super) dims: Vec<u64>,
    pub(super) type_id: u32,
    pub(super) offset: u64,
}

/// Checks one tensor info against the type table, the alignment and the file size.
pub(super) fn validate_tensor(
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
pub(super) fn read_tensor_bytes<R: Read + Seek>(
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

pub(super) fn dequantize_tensor(
    path: &Path,
    info: &TensorInfo,
    bytes: &[u8],
) -> Result<Vec<f32>, GgufError> {
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
