use super::*;
use std::io::Cursor;

use crate::gguf::quants::GgmlType;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use serde_json::Value;

fn fixtures() -> PathBuf {
    crate::crate_dir().join("tests/fixtures/gguf")
}

fn load_json(name: &str) -> Value {
    let path = fixtures().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
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
