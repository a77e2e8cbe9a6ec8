//! ggml tensor types and their dequantization to f32.
//!
//! [`GgmlType`] lists every type of ggml's `enum ggml_type` that the `gguf` Python package
//! (llama.cpp's gguf-py) knows, with its numeric id, name, block size and block byte size.
//! [`dequantize`] turns whole blocks of F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K,
//! Q4_K, Q5_K or Q6_K data into f32 values. Each type follows `gguf.quants.dequantize` (NumPy,
//! float32 arithmetic) operation for operation: the f16 scales are widened exactly to f32, a
//! sub-block scale is the product `d * sc` rounded to f32 before it multiplies the quant, and a
//! minimum is added (`d * q + m`) or subtracted (`d * sc * q - dmin * m`) as a separate rounding
//! step, so the results are equal to the package's bit for bit (NaN payloads of F16 and BF16
//! data included). Values come out in storage order: within a row the innermost dimension runs
//! fastest.

use std::fmt;

use thiserror::Error;

/// Number of weights in a K-quant super-block.
pub const QK_K: usize = 256;

/// Errors of [`dequantize`].
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum QuantError {
    /// The element count is not a whole number of blocks of the type.
    #[error("{ty}: {n_elements} elements are not a whole number of {block_size}-element blocks")]
    PartialBlock {
        /// Tensor type.
        ty: GgmlType,
        /// Element count asked for.
        n_elements: usize,
        /// Elements per block of `ty`.
        block_size: usize,
    },
    /// The byte length does not match the element count.
    #[error("{ty}: {n_elements} elements take {expected} bytes, got {got}")]
    ByteLength {
        /// Tensor type.
        ty: GgmlType,
        /// Element count asked for.
        n_elements: usize,
        /// Bytes that `n_elements` elements of `ty` occupy.
        expected: usize,
        /// Bytes given.
        got: usize,
    },
    /// The output length does not match the element count.
    #[error("{ty}: output holds {got} values for {n_elements} elements")]
    OutputLength {
        /// Tensor type.
        ty: GgmlType,
        /// Element count of the input.
        n_elements: usize,
        /// Length of the output slice.
        got: usize,
    },
    /// The type is known but has no dequantization here.
    #[error("dequantization of ggml type {ty} (id {id}) is not supported", id = ty.id())]
    Unsupported {
        /// Tensor type.
        ty: GgmlType,
    },
}

macro_rules! ggml_types {
    ($( $(#[$doc:meta])* $variant:ident = $id:literal, $name:literal, $block:literal, $size:literal; )*) => {
        /// A ggml tensor type (`GGML_TYPE_*`), with ggml's numeric id as discriminant.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[allow(non_camel_case_types)]
        pub enum GgmlType {
            $( $(#[$doc])* $variant = $id, )*
        }

        impl GgmlType {
            /// Every type, in id order.
            pub const ALL: &'static [GgmlType] = &[ $( GgmlType::$variant, )* ];

            /// The type with ggml id `id`, or `None` for ids ggml does not define (including the
            /// ids of removed types such as 4 and 5).
            pub fn from_id(id: u32) -> Option<GgmlType> {
                match id {
                    $( $id => Some(GgmlType::$variant), )*
                    _ => None,
                }
            }

            /// ggml's name of the type, as in `GGML_TYPE_<name>` (e.g. `Q4_K`).
            pub fn name(self) -> &'static str {
                match self {
                    $( GgmlType::$variant => $name, )*
                }
            }

            /// Elements per block (1 for the plain float and integer types).
            pub fn block_size(self) -> usize {
                match self {
                    $( GgmlType::$variant => $block, )*
                }
            }

            /// Bytes per block.
            pub fn type_size(self) -> usize {
                match self {
                    $( GgmlType::$variant => $size, )*
                }
            }
        }
    };
}

ggml_types! {
    /// 32-bit IEEE float.
    F32 = 0, "F32", 1, 4;
    /// 16-bit IEEE half.
    F16 = 1, "F16", 1, 2;
    /// 4-bit quants with an f16 scale, 32 per block.
    Q4_0 = 2, "Q4_0", 32, 18;
    /// 4-bit quants with an f16 scale and minimum, 32 per block.
    Q4_1 = 3, "Q4_1", 32, 20;
    /// 5-bit quants with an f16 scale, 32 per block.
    Q5_0 = 6, "Q5_0", 32, 22;
    /// 5-bit quants with an f16 scale and minimum, 32 per block.
    Q5_1 = 7, "Q5_1", 32, 24;
    /// 8-bit quants with an f16 scale, 32 per block.
    Q8_0 = 8, "Q8_0", 32, 34;
    /// 8-bit quants with f32 scale and sum, 32 per block.
    Q8_1 = 9, "Q8_1", 32, 40;
    /// 2-bit K-quants, 256 per super-block.
    Q2_K = 10, "Q2_K", 256, 84;
    /// 3-bit K-quants, 256 per super-block.
    Q3_K = 11, "Q3_K", 256, 110;
    /// 4-bit K-quants, 256 per super-block.
    Q4_K = 12, "Q4_K", 256, 144;
    /// 5-bit K-quants, 256 per super-block.
    Q5_K = 13, "Q5_K", 256, 176;
    /// 6-bit K-quants, 256 per super-block.
    Q6_K = 14, "Q6_K", 256, 210;
    /// 8-bit K-quants (intermediate type of ggml's dot products).
    Q8_K = 15, "Q8_K", 256, 292;
    /// Importance-matrix 2-bit quants.
    IQ2_XXS = 16, "IQ2_XXS", 256, 66;
    /// Importance-matrix 2-bit quants.
    IQ2_XS = 17, "IQ2_XS", 256, 74;
    /// Importance-matrix 3-bit quants.
    IQ3_XXS = 18, "IQ3_XXS", 256, 98;
    /// Importance-matrix 1-bit quants.
    IQ1_S = 19, "IQ1_S", 256, 50;
    /// Non-linear 4-bit quants, 32 per block.
    IQ4_NL = 20, "IQ4_NL", 32, 18;
    /// Importance-matrix 3-bit quants.
    IQ3_S = 21, "IQ3_S", 256, 110;
    /// Importance-matrix 2-bit quants.
    IQ2_S = 22, "IQ2_S", 256, 82;
    /// Non-linear 4-bit quants, 256 per super-block.
    IQ4_XS = 23, "IQ4_XS", 256, 136;
    /// 8-bit integer.
    I8 = 24, "I8", 1, 1;
    /// 16-bit integer.
    I16 = 25, "I16", 1, 2;
    /// 32-bit integer.
    I32 = 26, "I32", 1, 4;
    /// 64-bit integer.
    I64 = 27, "I64", 1, 8;
    /// 64-bit IEEE float.
    F64 = 28, "F64", 1, 8;
    /// Importance-matrix 1-bit quants.
    IQ1_M = 29, "IQ1_M", 256, 56;
    /// bfloat16.
    BF16 = 30, "BF16", 1, 2;
    /// Ternary quants.
    TQ1_0 = 34, "TQ1_0", 256, 54;
    /// Ternary quants.
    TQ2_0 = 35, "TQ2_0", 256, 66;
    /// Microscaling FP4, 32 per block.
    MXFP4 = 39, "MXFP4", 32, 17;
    /// NVIDIA FP4, 64 per block.
    NVFP4 = 40, "NVFP4", 64, 36;
    /// 1-bit quants, 128 per block.
    Q1_0 = 41, "Q1_0", 128, 18;
}

impl GgmlType {
    /// ggml's numeric id of the type.
    pub fn id(self) -> u32 {
        self as u32
    }

    /// Whether [`dequantize`] supports the type.
    pub fn can_dequantize(self) -> bool {
        matches!(
            self,
            GgmlType::F32
                | GgmlType::F16
                | GgmlType::BF16
                | GgmlType::Q4_0
                | GgmlType::Q4_1
                | GgmlType::Q5_0
                | GgmlType::Q5_1
                | GgmlType::Q8_0
                | GgmlType::Q2_K
                | GgmlType::Q3_K
                | GgmlType::Q4_K
                | GgmlType::Q5_K
                | GgmlType::Q6_K
        )
    }

    /// Bytes that `n_elements` elements occupy, or `None` when `n_elements` is not a whole
    /// number of blocks or the size overflows `u64`.
    pub fn byte_len(self, n_elements: u64) -> Option<u64> {
        let block = self.block_size() as u64;
        if !n_elements.is_multiple_of(block) {
            return None;
        }
        (n_elements / block).checked_mul(self.type_size() as u64)
    }
}

impl fmt::Display for GgmlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Widens IEEE half bits to f32 exactly, as NumPy's `float16.astype(float32)` does: subnormal
/// halves become normal floats, and NaN payloads (signalling ones included) are shifted into
/// the f32 mantissa unchanged.
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h as u32) & 0x8000) << 16;
    let exp = (h >> 10) & 0x1F;
    let man = (h & 0x03FF) as u32;
    let bits = match exp {
        0 if man == 0 => sign,
        0 => {
            // man * 2^-24 with the top set bit of man at position p (0..=9).
            let p = 31 - man.leading_zeros();
            let f_exp = p + 103;
            let f_man = (man << (23 - p)) & 0x007F_FFFF;
            sign | (f_exp << 23) | f_man
        }
        0x1F => sign | 0x7F80_0000 | (man << 13),
        _ => sign | ((exp as u32 + 112) << 23) | (man << 13),
    };
    f32::from_bits(bits)
}

#[inline]
fn half(b: &[u8], at: usize) -> f32 {
    f16_to_f32(u16::from_le_bytes([b[at], b[at + 1]]))
}

/// Dequantizes `n_elements` values of type `ty` from `bytes` (whole blocks, exactly
/// `ty.byte_len(n_elements)` bytes) into a new vector.
pub fn dequantize(ty: GgmlType, bytes: &[u8], n_elements: usize) -> Result<Vec<f32>, QuantError> {
    check_lengths(ty, bytes, n_elements)?;
    let mut out = vec![0f32; n_elements];
    dequantize_checked(ty, bytes, &mut out);
    Ok(out)
}

/// Dequantizes `bytes` of type `ty` into `out`, whose length is the element count.
pub fn dequantize_into(ty: GgmlType, bytes: &[u8], out: &mut [f32]) -> Result<(), QuantError> {
    check_lengths(ty, bytes, out.len())?;
    dequantize_checked(ty, bytes, out);
    Ok(())
}

fn check_lengths(ty: GgmlType, bytes: &[u8], n_elements: usize) -> Result<(), QuantError> {
    if !ty.can_dequantize() {
        return Err(QuantError::Unsupported { ty });
    }
    let block_size = ty.block_size();
    if !n_elements.is_multiple_of(block_size) {
        return Err(QuantError::PartialBlock {
            ty,
            n_elements,
            block_size,
        });
    }
    let expected = (n_elements / block_size)
        .checked_mul(ty.type_size())
        .ok_or(QuantError::ByteLength {
            ty,
            n_elements,
            expected: usize::MAX,
            got: bytes.len(),
        })?;
    if expected != bytes.len() {
        return Err(QuantError::ByteLength {
            ty,
            n_elements,
            expected,
            got: bytes.len(),
        });
    }
    Ok(())
}

/// Dispatch after the lengths are checked: `bytes` holds exactly `out.len()` elements.
fn dequantize_checked(ty: GgmlType, bytes: &[u8], out: &mut [f32]) {
    let blocks = bytes.chunks_exact(ty.type_size());
    let outs = out.chunks_exact_mut(ty.block_size());
    match ty {
        GgmlType::F32 => blocks.zip(outs).for_each(|(b, o)| {
            o[0] = f32::from_bits(u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        }),
        GgmlType::F16 => blocks.zip(outs).for_each(|(b, o)| o[0] = half(b, 0)),
        GgmlType::BF16 => blocks.zip(outs).for_each(|(b, o)| {
            o[0] = f32::from_bits((u16::from_le_bytes([b[0], b[1]]) as u32) << 16);
        }),
        GgmlType::Q4_0 => blocks.zip(outs).for_each(|(b, o)| q4_0(b, o)),
        GgmlType::Q4_1 => blocks.zip(outs).for_each(|(b, o)| q4_1(b, o)),
        GgmlType::Q5_0 => blocks.zip(outs).for_each(|(b, o)| q5_0(b, o)),
        GgmlType::Q5_1 => blocks.zip(outs).for_each(|(b, o)| q5_1(b, o)),
        GgmlType::Q8_0 => blocks.zip(outs).for_each(|(b, o)| q8_0(b, o)),
        GgmlType::Q2_K => blocks.zip(outs).for_each(|(b, o)| q2_k(b, o)),
        GgmlType::Q3_K => blocks.zip(outs).for_each(|(b, o)| q3_k(b, o)),
        GgmlType::Q4_K => blocks.zip(outs).for_each(|(b, o)| q4_k(b, o)),
        GgmlType::Q5_K => blocks.zip(outs).for_each(|(b, o)| q5_k(b, o)),
        GgmlType::Q6_K => blocks.zip(outs).for_each(|(b, o)| q6_k(b, o)),
        // `check_lengths` refuses every other type.
        _ => {}
    }
}

/// Q4_0: `d: f16, qs: [u8; 16]`; element j (< 16) is the low nibble of qs[j], element j + 16 the
/// high nibble; value `d * (q - 8)`.
fn q4_0(b: &[u8], o: &mut [f32]) {
    let d = half(b, 0);
    let qs = &b[2..18];
    for j in 0..16 {
        o[j] = d * ((qs[j] & 0x0F) as i32 - 8) as f32;
        o[j + 16] = d * ((qs[j] >> 4) as i32 - 8) as f32;
    }
}

/// Q4_1: `d: f16, m: f16, qs: [u8; 16]`; value `d * q + m`.
fn q4_1(b: &[u8], o: &mut [f32]) {
    let d = half(b, 0);
    let m = half(b, 2);
    let qs = &b[4..20];
    for j in 0..16 {
        o[j] = d * (qs[j] & 0x0F) as f32 + m;
        o[j + 16] = d * (qs[j] >> 4) as f32 + m;
    }
}

/// Q5_0: `d: f16, qh: u32, qs: [u8; 16]`; bit j of qh is the fifth bit of element j; value
/// `d * (q - 16)`.
fn q5_0(b: &[u8], o: &mut [f32]) {
    let d = half(b, 0);
    let qh = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
    let qs = &b[6..22];
    for j in 0..16 {
        let lo = (qs[j] & 0x0F) as u32 | (((qh >> j) & 1) << 4);
        let hi = (qs[j] >> 4) as u32 | (((qh >> (j + 16)) & 1) << 4);
        o[j] = d * (lo as i32 - 16) as f32;
        o[j + 16] = d * (hi as i32 - 16) as f32;
    }
}

/// Q5_1: `d: f16, m: f16, qh: u32, qs: [u8; 16]`; value `d * q + m`.
fn q5_1(b: &[u8], o: &mut [f32]) {
    let d = half(b, 0);
    let m = half(b, 2);
    let qh = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
    let qs = &b[8..24];
    for j in 0..16 {
        let lo = (qs[j] & 0x0F) as u32 | (((qh >> j) & 1) << 4);
        let hi = (qs[j] >> 4) as u32 | (((qh >> (j + 16)) & 1) << 4);
        o[j] = d * lo as f32 + m;
        o[j + 16] = d * hi as f32 + m;
    }
}

/// Q8_0: `d: f16, qs: [i8; 32]`; value `q * d`.
fn q8_0(b: &[u8], o: &mut [f32]) {
    let d = half(b, 0);
    for (x, &q) in o.iter_mut().zip(&b[2..34]) {
        *x = (q as i8) as f32 * d;
    }
}

/// Q2_K: `scales: [u8; 16], qs: [u8; 64], d: f16, dmin: f16`. Element `h*128 + s*32 + l` is
/// bits `2s..2s+2` of `qs[h*32 + l]`; sub-block `e / 16` has scale `d * (sc & 15)` and minimum
/// `dmin * (sc >> 4)`; value `dl * q - ml`.
fn q2_k(b: &[u8], o: &mut [f32]) {
    let scales = &b[0..16];
    let qs = &b[16..80];
    let d = half(b, 80);
    let dmin = half(b, 82);
    for (e, x) in o.iter_mut().enumerate() {
        let sc = scales[e / 16];
        let dl = d * (sc & 0x0F) as f32;
        let ml = dmin * (sc >> 4) as f32;
        let (h, s, l) = (e / 128, (e / 32) % 4, e % 32);
        let q = (qs[h * 32 + l] >> (2 * s)) & 3;
        *x = dl * q as f32 - ml;
    }
}

/// Q3_K: `hmask: [u8; 32], qs: [u8; 64], scales: [u8; 12], d: f16`. The 16 six-bit scales are
/// the nibbles of bytes 0..8 (low nibbles first) with two high bits from bytes 8..12; element
/// `h*128 + s*32 + l` takes bits `2s..2s+2` of `qs[h*32 + l]`, minus 4 when bit `e / 32` of
/// `hmask[l]` is clear; value `(d * (scale - 32)) * q`.
fn q3_k(b: &[u8], o: &mut [f32]) {
    let hmask = &b[0..32];
    let qs = &b[32..96];
    let sc = &b[96..108];
    let d = half(b, 108);
    let mut dl = [0f32; 16];
    for (i, v) in dl.iter_mut().enumerate() {
        let low = if i < 8 { sc[i] & 0x0F } else { sc[i - 8] >> 4 };
        let high = (sc[8 + i % 4] >> (2 * (i / 4))) & 3;
        let scale = ((low | (high << 4)) as i32 - 32) as f32;
        *v = d * scale;
    }
    for (e, x) in o.iter_mut().enumerate() {
        let (h, s, l) = (e / 128, (e / 32) % 4, e % 32);
        let ql = ((qs[h * 32 + l] >> (2 * s)) & 3) as i32;
        let hbit = ((hmask[l] >> (e / 32)) & 1) ^ 1;
        let q = ql - ((hbit as i32) << 2);
        *x = dl[e / 16] * q as f32;
    }
}

/// The eight six-bit (scale, min) pairs of Q4_K and Q5_K from their 12 packed bytes.
fn k_scale_min(s: &[u8]) -> ([u8; 8], [u8; 8]) {
    let mut sc = [0u8; 8];
    let mut mn = [0u8; 8];
    for j in 0..4 {
        sc[j] = s[j] & 0x3F;
        mn[j] = s[j + 4] & 0x3F;
        sc[j + 4] = (s[j + 8] & 0x0F) | ((s[j] >> 2) & 0x30);
        mn[j + 4] = (s[j + 8] >> 4) | ((s[j + 4] >> 2) & 0x30);
    }
    (sc, mn)
}

/// Q4_K: `d: f16, dmin: f16, scales: [u8; 12], qs: [u8; 128]`. Element `c*64 + h*32 + l` is
/// nibble h of `qs[c*32 + l]`; sub-block `e / 32` has scale `d * sc` and minimum `dmin * m`;
/// value `(d * sc) * q - dmin * m`.
fn q4_k(b: &[u8], o: &mut [f32]) {
    let d = half(b, 0);
    let dmin = half(b, 2);
    let (sc, mn) = k_scale_min(&b[4..16]);
    let qs = &b[16..144];
    for j in 0..8 {
        let dl = d * sc[j] as f32;
        let ml = dmin * mn[j] as f32;
        let (c, h) = (j / 2, j % 2);
        for l in 0..32 {
            let q = (qs[c * 32 + l] >> (4 * h)) & 0x0F;
            o[j * 32 + l] = dl * q as f32 - ml;
        }
    }
}

/// Q5_K: `d: f16, dmin: f16, scales: [u8; 12], qh: [u8; 32], qs: [u8; 128]`; as Q4_K with a
/// fifth bit, bit `e / 32` of `qh[l]`.
fn q5_k(b: &[u8], o: &mut [f32]) {
    let d = half(b, 0);
    let dmin = half(b, 2);
    let (sc, mn) = k_scale_min(&b[4..16]);
    let qh = &b[16..48];
    let qs = &b[48..176];
    for j in 0..8 {
        let dl = d * sc[j] as f32;
        let ml = dmin * mn[j] as f32;
        let (c, h) = (j / 2, j % 2);
        for l in 0..32 {
            let lo = (qs[c * 32 + l] >> (4 * h)) & 0x0F;
            let hi = (qh[l] >> j) & 1;
            o[j * 32 + l] = dl * (lo | (hi << 4)) as f32 - ml;
        }
    }
}

/// Q6_K: `ql: [u8; 128], qh: [u8; 64], scales: [i8; 16], d: f16`. Element `h*128 + n*64 + l`
/// (l < 64) has low nibble n of `ql[h*64 + l]`; element `h*128 + s*32 + l` (l < 32) has high
/// bits `2s..2s+2` of `qh[h*32 + l]`; value `(d * scale[e / 16]) * (q - 32)`.
fn q6_k(b: &[u8], o: &mut [f32]) {
    let ql = &b[0..128];
    let qh = &b[128..192];
    let scales = &b[192..208];
    let d = half(b, 208);
    let mut dl = [0f32; 16];
    for (v, &s) in dl.iter_mut().zip(scales) {
        *v = d * (s as i8) as f32;
    }
    for (e, x) in o.iter_mut().enumerate() {
        let h = e / 128;
        let r = e % 128;
        let lo = (ql[h * 64 + r % 64] >> (4 * (r / 64))) & 0x0F;
        let hi = (qh[h * 32 + r % 32] >> (2 * (r / 32))) & 3;
        let q = (lo | (hi << 4)) as i32 - 32;
        *x = dl[e / 16] * q as f32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn fixtures() -> PathBuf {
        crate::crate_dir().join("tests/fixtures/gguf")
    }

    fn load_json(name: &str) -> serde_json::Value {
        let path = fixtures().join(name);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// The type table equals the package's `GGMLQuantizationType` and `GGML_QUANT_SIZES`.
    #[test]
    fn type_table_matches_package() {
        let table = load_json("ggml_types.json");
        let types = table["types"].as_array().unwrap();
        assert_eq!(types.len(), GgmlType::ALL.len());
        for t in types {
            let id = t["id"].as_u64().unwrap() as u32;
            let ty = GgmlType::from_id(id).unwrap_or_else(|| panic!("id {id} missing"));
            assert_eq!(ty.name(), t["name"].as_str().unwrap());
            assert_eq!(ty.id(), id);
            assert_eq!(
                ty.block_size() as u64,
                t["block_size"].as_u64().unwrap(),
                "{ty}"
            );
            assert_eq!(
                ty.type_size() as u64,
                t["type_size"].as_u64().unwrap(),
                "{ty}"
            );
            if ty.can_dequantize() {
                assert!(t["package_dequantizes"].as_bool().unwrap(), "{ty}");
            }
        }
        for id in [4, 5, 31, 32, 33, 36, 37, 38, 42, 99, u32::MAX] {
            assert_eq!(GgmlType::from_id(id), None, "id {id}");
        }
    }

    /// Every supported type equals `gguf.quants.dequantize` bit for bit on the fixture blocks.
    #[test]
    fn dequantize_matches_package_bit_for_bit() {
        let manifest = load_json("quants.json");
        let mut seen = Vec::new();
        for entry in manifest["types"].as_array().unwrap() {
            let name = entry["type"].as_str().unwrap();
            let ty = GgmlType::from_id(entry["id"].as_u64().unwrap() as u32).unwrap();
            assert_eq!(ty.name(), name);
            let n = entry["n_elements"].as_u64().unwrap() as usize;
            let raw = std::fs::read(fixtures().join(entry["raw"].as_str().unwrap())).unwrap();
            let exp = std::fs::read(fixtures().join(entry["expected"].as_str().unwrap())).unwrap();
            assert_eq!(exp.len(), 4 * n, "{name}");
            let got = dequantize(ty, &raw, n).unwrap();
            let mut mismatches = 0;
            for (i, (g, e)) in got.iter().zip(exp.chunks_exact(4)).enumerate() {
                let e = u32::from_le_bytes([e[0], e[1], e[2], e[3]]);
                if g.to_bits() != e {
                    if mismatches < 5 {
                        eprintln!("{name}[{i}]: got {:#010x}, package {e:#010x}", g.to_bits());
                    }
                    mismatches += 1;
                }
            }
            assert_eq!(mismatches, 0, "{name}: {mismatches} of {n} values differ");
            seen.push(ty);
        }
        for ty in GgmlType::ALL.iter().filter(|t| t.can_dequantize()) {
            assert!(seen.contains(ty), "no fixture for {ty}");
        }
    }

    /// The f16 widening agrees with the `half` crate on every non-NaN pattern, and keeps NaN
    /// payloads (quiet or signalling) as NumPy does: payload shifted left by 13.
    #[test]
    fn f16_widening_all_patterns() {
        for h in 0..=u16::MAX {
            let got = f16_to_f32(h);
            let reference = half::f16::from_bits(h);
            if reference.is_nan() {
                let sign = ((h as u32) & 0x8000) << 16;
                assert_eq!(
                    got.to_bits(),
                    sign | 0x7F80_0000 | (((h & 0x3FF) as u32) << 13)
                );
            } else {
                assert_eq!(got.to_bits(), reference.to_f32().to_bits(), "{h:#06x}");
            }
        }
    }

    #[test]
    fn length_checks() {
        let ty = GgmlType::Q4_0;
        assert_eq!(
            dequantize(ty, &[0; 18], 16),
            Err(QuantError::PartialBlock {
                ty,
                n_elements: 16,
                block_size: 32
            })
        );
        assert_eq!(
            dequantize(ty, &[0; 17], 32),
            Err(QuantError::ByteLength {
                ty,
                n_elements: 32,
                expected: 18,
                got: 17
            })
        );
        assert_eq!(
            dequantize(GgmlType::IQ2_XXS, &[0; 66], 256),
            Err(QuantError::Unsupported {
                ty: GgmlType::IQ2_XXS
            })
        );
        let mut out = [0f32; 31];
        assert!(matches!(
            dequantize_into(ty, &[0; 18], &mut out),
            Err(QuantError::PartialBlock { .. })
        ));
        assert_eq!(dequantize(GgmlType::Q6_K, &[], 0), Ok(vec![]));
        assert_eq!(GgmlType::Q4_K.byte_len(512), Some(288));
        assert_eq!(GgmlType::Q4_K.byte_len(100), None);
        assert_eq!(GgmlType::F32.byte_len(u64::MAX), None);
    }
}
