//! GGUF metadata values: the value type ids and the typed values and arrays they decode to.

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
    pub(super) fn fixed_size(self) -> Option<u64> {
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
    pub(super) fn integers(&self) -> Option<Vec<i128>> {
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
