//! Malformed and hostile model files, loaded through the public API.
//!
//! A table of cases, each made at run time in a temporary directory by corrupting a valid input
//! at offsets this file computes itself from the formats' specs (safetensors: `u64` header length,
//! JSON header, data; GGUF: magic, version, counts, key/values, tensor infos, aligned data):
//! the Qwen3 HF folder `fixtures/tied_bf16`, a GGUF exported with [`export_gguf`] from the Llama
//! folder `fixtures/llama_tied_gqa` (with a tiny byte-level BPE `tokenizer.json` written here),
//! the committed `fixtures/gguf/small.gguf`, and `tokenizer.json` files.
//!
//! For every case: no panic, the expected typed error, its `Display` naming the file and the
//! field, tensor or key at fault, a run time under [`CASE_TIME_LIMIT_S`], and memory under
//! [`PEAK_BOUND_MIB`] measured two ways: the process's peak RSS growth (VmHWM after a reset
//! through `/proc/self/clear_refs`), and the peak of the bytes held through the global allocator
//! (a counting wrapper of the system allocator in this test binary), which also sees an
//! allocation whose pages are never touched (a `vec![0; n]` the kernel maps lazily), invisible
//! to RSS. A case marked `bug` documents a defect of the loader: the test
//! passes while the defect shows and fails once it is fixed (so the note gets removed), like a
//! strict expected failure.
//!
//! Then a seeded proptest: random byte edits and truncations of the valid GGUF and of the valid
//! safetensors file must give `Ok` or a typed error, never a panic, within the same memory bound.
//!
//! All tests here take one lock, so that they run one after the other and no other thread of
//! this test binary moves the process's peak RSS while a case is measured.
//!
//! `cargo test -p rl-models --test hostile_files -- --nocapture` prints the table.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::RefCell;
use std::fmt;
use std::fs;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use burn::backend::Flex;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use rl_models::gguf::{GgufError, GgufFile, GgufVocabError};
use rl_models::{CausalLm, GgufDtype, ModelError, Tokenizer, TokenizerError, export_gguf};

/// Peak RSS growth, and peak growth of the bytes held through the allocator, allowed for one
/// case over their values just before it.
///
/// Measured on the 2-core dev machine (2026-12-04): the refused cases peak at ≤ 0.1 MiB in both
/// meters; an input that loads the whole fixture model allocates ≤ 0.41 MiB; the fuzz cases
/// peak at ≤ 1.9 MiB (RSS with the first load of the process); the 32 MiB calibration
/// allocation reads 31.9–32.0 MiB. The inputs are files of ≤ 230 KB, so a correct loader needs
/// a few MiB at most: 16 MiB is eight times the largest peak measured, and still far below any allocation
/// sized by a hostile count (the `num_hidden_layers = 10⁹` config that once allocated 14 GB, a
/// 2⁴⁰-element array, a 2⁶² tensor count).
const PEAK_BOUND_MIB: f64 = 16.0;

/// Wall time allowed for one case (making the file is not counted).
const CASE_TIME_LIMIT_S: f64 = 1.0;

/// Serialises the tests of this binary (see the module docs).
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The system allocator, counting the bytes it holds and their peak.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static HELD_PEAK: AtomicUsize = AtomicUsize::new(0);

fn held_add(n: usize) {
    let now = HELD.fetch_add(n, Ordering::Relaxed) + n;
    HELD_PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is forwarded to `System` with the caller's arguments; the counters do not
// touch the memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            held_add(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            held_add(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                held_add(new_size - layout.size());
            } else {
                HELD.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

// ------------------------------------------------------------------------------------------------
// Peak RSS (Linux: /proc/self/clear_refs and VmHWM)

/// A `/proc/self/status` field in KiB.
fn status_kib(field: &str) -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|l| {
        l.strip_prefix(field)?
            .strip_prefix(':')?
            .trim()
            .strip_suffix("kB")?
            .trim()
            .parse()
            .ok()
    })
}

/// Resets the peak RSS (VmHWM) to the current RSS (writing 5 to clear_refs) and returns the
/// current RSS in KiB; `None` where the kernel does not offer either.
fn reset_peak() -> Option<u64> {
    fs::write("/proc/self/clear_refs", "5").ok()?;
    status_kib("VmRSS")
}

/// What a measured closure gave, its peak RSS growth, its peak growth of the bytes held
/// through the allocator, and its wall time.
struct Measured<T> {
    value: std::thread::Result<T>,
    peak_mib: Option<f64>,
    alloc_mib: f64,
    ms: f64,
}

impl<T> Measured<T> {
    /// Whichever of the two memory peaks is the larger.
    fn worst_mib(&self) -> f64 {
        self.peak_mib.unwrap_or(0.0).max(self.alloc_mib)
    }
}

/// Runs `f` under `catch_unwind`, measuring the peak RSS growth, the peak growth of the bytes
/// held through the allocator and the time.
fn measure<T>(f: impl FnOnce() -> T) -> Measured<T> {
    let base = reset_peak();
    let held = HELD.load(Ordering::Relaxed);
    HELD_PEAK.store(held, Ordering::Relaxed);
    let t0 = Instant::now();
    let value = catch_unwind(AssertUnwindSafe(f));
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    let alloc_mib = HELD_PEAK.load(Ordering::Relaxed).saturating_sub(held) as f64 / 1048576.0;
    let peak_mib = base
        .zip(status_kib("VmHWM"))
        .map(|(base, hwm)| hwm.saturating_sub(base) as f64 / 1024.0);
    Measured {
        value,
        peak_mib,
        alloc_mib,
        ms,
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(non-string panic payload)".to_string())
}

// ------------------------------------------------------------------------------------------------
// GGUF, parsed and written from the spec

fn rd_u32(b: &[u8], p: usize) -> u32 {
    u32::from_le_bytes(b[p..p + 4].try_into().unwrap())
}

fn rd_u64(b: &[u8], p: usize) -> u64 {
    u64::from_le_bytes(b[p..p + 8].try_into().unwrap())
}

fn patch_u32(b: &mut [u8], p: usize, v: u32) {
    b[p..p + 4].copy_from_slice(&v.to_le_bytes());
}

fn patch_u64(b: &mut [u8], p: usize, v: u64) {
    b[p..p + 8].copy_from_slice(&v.to_le_bytes());
}

fn rd_str(b: &[u8], p: &mut usize) -> String {
    let n = rd_u64(b, *p) as usize;
    *p += 8;
    let s = String::from_utf8(b[*p..*p + n].to_vec()).unwrap();
    *p += n;
    s
}

/// Bytes of a value of GGUF type `ty` at `p`.
fn value_len(b: &[u8], p: usize, ty: u32) -> usize {
    match ty {
        0 | 1 | 7 => 1,
        2 | 3 => 2,
        4..=6 => 4,
        10..=12 => 8,
        8 => 8 + rd_u64(b, p) as usize,
        9 => {
            let elem = rd_u32(b, p);
            let n = rd_u64(b, p + 4);
            let mut q = p + 12;
            for _ in 0..n {
                q += value_len(b, q, elem);
            }
            q - p
        }
        other => panic!("value type {other} in the base file"),
    }
}

fn enc_str(s: &str) -> Vec<u8> {
    let mut out = (s.len() as u64).to_le_bytes().to_vec();
    out.extend(s.as_bytes());
    out
}

/// The value bytes (after the type id) of an array of strings.
fn enc_str_array(v: &[String]) -> Vec<u8> {
    let mut out = 8u32.to_le_bytes().to_vec();
    out.extend((v.len() as u64).to_le_bytes());
    for s in v {
        out.extend(enc_str(s));
    }
    out
}

/// The value bytes (after the type id) of an array of i32.
fn enc_i32_array(v: &[i32]) -> Vec<u8> {
    let mut out = 5u32.to_le_bytes().to_vec();
    out.extend((v.len() as u64).to_le_bytes());
    for x in v {
        out.extend(x.to_le_bytes());
    }
    out
}

fn dec_i32_array(raw: &[u8]) -> Vec<i32> {
    assert_eq!(rd_u32(raw, 0), 5, "an i32 array");
    let n = rd_u64(raw, 4) as usize;
    (0..n)
        .map(|i| i32::from_le_bytes(raw[12 + 4 * i..16 + 4 * i].try_into().unwrap()))
        .collect()
}

/// One key/value entry, with where its parts lie in the parsed file.
#[derive(Clone, Debug)]
struct KvEntry {
    key: String,
    ty: u32,
    /// The value's bytes (after the type id).
    raw: Vec<u8>,
    /// Offset of the value's type id (the value follows it).
    type_at: usize,
}

/// One tensor info, with where its fields lie in the parsed file.
#[derive(Clone, Debug)]
struct InfoEntry {
    name: String,
    dims: Vec<u64>,
    ty: u32,
    /// Offset relative to the data section.
    offset: u64,
    name_at: usize,
    n_dims_at: usize,
    dims_at: usize,
    type_at: usize,
    offset_at: usize,
}

/// A GGUF file as its parts.
#[derive(Clone, Debug)]
struct GgufDoc {
    version: u32,
    kvs: Vec<KvEntry>,
    infos: Vec<InfoEntry>,
    alignment: u64,
    data_offset: usize,
    /// Everything from the data offset on.
    data: Vec<u8>,
}

impl GgufDoc {
    fn parse(b: &[u8]) -> Self {
        assert_eq!(&b[..4], b"GGUF");
        let version = rd_u32(b, 4);
        let n_tensors = rd_u64(b, 8);
        let n_kv = rd_u64(b, 16);
        let mut p = 24;
        let mut kvs = Vec::new();
        for _ in 0..n_kv {
            let key = rd_str(b, &mut p);
            let type_at = p;
            let ty = rd_u32(b, p);
            p += 4;
            let len = value_len(b, p, ty);
            kvs.push(KvEntry {
                key,
                ty,
                raw: b[p..p + len].to_vec(),
                type_at,
            });
            p += len;
        }
        let mut infos = Vec::new();
        for _ in 0..n_tensors {
            let name_at = p;
            let name = rd_str(b, &mut p);
            let n_dims_at = p;
            let n_dims = rd_u32(b, p) as usize;
            p += 4;
            let dims_at = p;
            let dims = (0..n_dims).map(|i| rd_u64(b, p + 8 * i)).collect();
            p += 8 * n_dims;
            let type_at = p;
            let ty = rd_u32(b, p);
            let offset_at = p + 4;
            let offset = rd_u64(b, offset_at);
            p += 12;
            infos.push(InfoEntry {
                name,
                dims,
                ty,
                offset,
                name_at,
                n_dims_at,
                dims_at,
                type_at,
                offset_at,
            });
        }
        let alignment = kvs
            .iter()
            .find(|kv| kv.key == "general.alignment")
            .map_or(32, |kv| rd_u32(&kv.raw, 0) as u64);
        let data_offset = (p as u64).div_ceil(alignment) * alignment;
        Self {
            version,
            kvs,
            infos,
            alignment,
            data_offset: data_offset as usize,
            data: b[data_offset as usize..].to_vec(),
        }
    }

    fn to_bytes(&self) -> Vec<u8> {
        let mut out = b"GGUF".to_vec();
        out.extend(self.version.to_le_bytes());
        out.extend((self.infos.len() as u64).to_le_bytes());
        out.extend((self.kvs.len() as u64).to_le_bytes());
        for kv in &self.kvs {
            out.extend(enc_str(&kv.key));
            out.extend(kv.ty.to_le_bytes());
            out.extend(&kv.raw);
        }
        for t in &self.infos {
            out.extend(enc_str(&t.name));
            out.extend((t.dims.len() as u32).to_le_bytes());
            for d in &t.dims {
                out.extend(d.to_le_bytes());
            }
            out.extend(t.ty.to_le_bytes());
            out.extend(t.offset.to_le_bytes());
        }
        let padded = (out.len() as u64).div_ceil(self.alignment) * self.alignment;
        out.resize(padded as usize, 0);
        out.extend(&self.data);
        out
    }

    fn kv(&self, key: &str) -> &KvEntry {
        self.kvs
            .iter()
            .find(|kv| kv.key == key)
            .unwrap_or_else(|| panic!("no key {key} in the base GGUF"))
    }

    fn kv_mut(&mut self, key: &str) -> &mut KvEntry {
        self.kvs
            .iter_mut()
            .find(|kv| kv.key == key)
            .unwrap_or_else(|| panic!("no key {key} in the base GGUF"))
    }

    fn info(&self, name: &str) -> &InfoEntry {
        self.infos
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("no tensor {name} in the base GGUF"))
    }
}

// ------------------------------------------------------------------------------------------------
// safetensors, parsed and written from the spec

/// One tensor of a safetensors file.
#[derive(Clone, Debug)]
struct StTensor {
    name: String,
    dtype: String,
    shape: Vec<u64>,
    bytes: Vec<u8>,
}

/// A header entry as JSON text parts (so that a case can write what serde would refuse to).
#[derive(Clone, Debug)]
struct StEntry {
    name: String,
    dtype: String,
    /// The shape as JSON text.
    shape: String,
    start: u64,
    end: u64,
}

impl StEntry {
    fn json(&self) -> String {
        format!(
            "{}:{{\"dtype\":\"{}\",\"shape\":{},\"data_offsets\":[{},{}]}}",
            serde_json::to_string(&self.name).unwrap(),
            self.dtype,
            self.shape,
            self.start,
            self.end
        )
    }
}

/// Header length and the tensors (in offset order) of a safetensors file.
fn parse_st(b: &[u8]) -> (usize, Vec<StTensor>) {
    let n = rd_u64(b, 0) as usize;
    let header: serde_json::Value = serde_json::from_slice(&b[8..8 + n]).unwrap();
    let mut out: Vec<(u64, StTensor)> = header
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| *k != "__metadata__")
        .map(|(name, v)| {
            let offs: Vec<u64> = v["data_offsets"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap())
                .collect();
            let tensor = StTensor {
                name: name.clone(),
                dtype: v["dtype"].as_str().unwrap().to_string(),
                shape: v["shape"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_u64().unwrap())
                    .collect(),
                bytes: b[8 + n + offs[0] as usize..8 + n + offs[1] as usize].to_vec(),
            };
            (offs[0], tensor)
        })
        .collect();
    out.sort_by_key(|(start, _)| *start);
    (n, out.into_iter().map(|(_, t)| t).collect())
}

fn shape_json(shape: &[u64]) -> String {
    serde_json::to_string(shape).unwrap()
}

/// Contiguous header entries and data for `tensors`, in order.
fn st_layout(tensors: &[StTensor]) -> (Vec<StEntry>, Vec<u8>) {
    let mut data = Vec::new();
    let entries = tensors
        .iter()
        .map(|t| {
            let start = data.len() as u64;
            data.extend(&t.bytes);
            StEntry {
                name: t.name.clone(),
                dtype: t.dtype.clone(),
                shape: shape_json(&t.shape),
                start,
                end: data.len() as u64,
            }
        })
        .collect();
    (entries, data)
}

/// A safetensors file with this header text and data.
fn st_file(header: &str, data: &[u8]) -> Vec<u8> {
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend(header.as_bytes());
    out.extend(data);
    out
}

fn st_header(entries: &[StEntry]) -> String {
    let body: Vec<String> = entries.iter().map(StEntry::json).collect();
    format!(
        "{{\"__metadata__\":{{\"format\":\"pt\"}},{}}}",
        body.join(",")
    )
}

fn st_bytes(entries: &[StEntry], data: &[u8]) -> Vec<u8> {
    st_file(&st_header(entries), data)
}

/// The first tensor (in offset order) whose data ends past `available` bytes of data.
fn first_cut_tensor(tensors: &[StTensor], available: usize) -> String {
    let mut end = 0;
    for t in tensors {
        end += t.bytes.len();
        if end > available {
            return t.name.clone();
        }
    }
    panic!("nothing is cut at {available}")
}

// ------------------------------------------------------------------------------------------------
// config.json edits

/// `text` with the value of the line holding `"field":` replaced by `value` (the line and its
/// trailing comma kept) and that line's number (1-based).
fn set_field(text: &str, field: &str, value: &str) -> (String, usize) {
    let key = format!("\"{field}\":");
    let mut line = 0;
    let lines: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if line == 0 && l.trim_start().starts_with(&key) {
                line = i + 1;
                let indent = &l[..l.len() - l.trim_start().len()];
                let comma = if l.trim_end().ends_with(',') { "," } else { "" };
                format!("{indent}{key} {value}{comma}")
            } else {
                l.to_string()
            }
        })
        .collect();
    assert!(line > 0, "no field {field} in the config");
    (lines.join("\n") + "\n", line)
}

/// `text` with line `line` (1-based) replaced by `with`.
fn replace_line(text: &str, line: usize, with: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .enumerate()
        .map(|(i, l)| if i + 1 == line { with } else { l })
        .collect();
    lines.join("\n") + "\n"
}

// ------------------------------------------------------------------------------------------------
// The valid inputs the cases corrupt

/// A tiny byte-level BPE `tokenizer.json` for the Llama fixture (vocabulary `a b ab c`, merge
/// `a b`); the export fills ids 4..128 with `[PAD<id>]`.
const TOKENIZER_JSON: &str = r#"{
  "version": "1.0",
  "truncation": null,
  "padding": null,
  "added_tokens": [],
  "normalizer": null,
  "pre_tokenizer": null,
  "post_processor": null,
  "decoder": null,
  "model": {
    "type": "BPE",
    "dropout": null,
    "unk_token": null,
    "continuing_subword_prefix": null,
    "end_of_word_suffix": null,
    "fuse_unk": false,
    "byte_fallback": false,
    "ignore_merges": false,
    "vocab": { "a": 0, "b": 1, "ab": 2, "c": 3 },
    "merges": [["a", "b"]]
  }
}
"#;

struct Bases {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    /// `tied_bf16/config.json` (Qwen3).
    qwen_config: String,
    /// `tied_bf16/model.safetensors`.
    qwen_st: Vec<u8>,
    qwen_header_len: usize,
    qwen_tensors: Vec<StTensor>,
    /// The Llama fixture exported as GGUF (F16 matrices, F32 norms).
    gguf: Vec<u8>,
    doc: GgufDoc,
}

impl Bases {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        let qwen = fixtures().join("tied_bf16");
        let qwen_config = fs::read_to_string(qwen.join("config.json")).unwrap();
        let qwen_st = fs::read(qwen.join("model.safetensors")).unwrap();
        let (qwen_header_len, qwen_tensors) = parse_st(&qwen_st);

        let src = root.join("llama_src");
        fs::create_dir_all(&src).unwrap();
        for f in ["config.json", "model.safetensors"] {
            fs::copy(fixtures().join("llama_tied_gqa").join(f), src.join(f)).unwrap();
        }
        fs::write(src.join("tokenizer.json"), TOKENIZER_JSON).unwrap();
        let gguf_path = root.join("base.gguf");
        export_gguf(&src, &gguf_path, GgufDtype::F16).unwrap();
        let gguf = fs::read(&gguf_path).unwrap();
        let doc = GgufDoc::parse(&gguf);
        Self {
            _tmp: tmp,
            root,
            qwen_config,
            qwen_st,
            qwen_header_len,
            qwen_tensors,
            gguf,
            doc,
        }
    }

    /// A fresh directory for one case.
    fn case_dir(&self, name: &str) -> PathBuf {
        let dir = self.root.join("cases").join(name);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn qwen_tensor(&self, name: &str) -> usize {
        self.qwen_tensors
            .iter()
            .position(|t| t.name == name)
            .unwrap_or_else(|| panic!("no tensor {name} in tied_bf16"))
    }

    /// Each base loads: the checks that a case's error comes from its edit alone (and the
    /// first model load, which warms up the backend outside any measured case).
    fn check(&self) {
        let load = |p: &Path| CausalLm::<Flex>::load(p, &Default::default()).map(drop);
        load(&fixtures().join("tied_bf16")).unwrap();
        // this file's safetensors writer gives a file that loads
        let dir = self.case_dir("_base_qwen_rewritten");
        let (entries, data) = st_layout(&self.qwen_tensors);
        qwen_folder(&dir, &self.qwen_config, &st_bytes(&entries, &data));
        load(&dir).unwrap();
        // the exported GGUF loads, with its tokenizer, and this file's GGUF writer gives back
        // the same bytes
        let gguf = self.root.join("base.gguf");
        load(&gguf).unwrap();
        Tokenizer::for_model(&gguf, None).unwrap();
        assert_eq!(
            self.doc.to_bytes(),
            self.gguf,
            "GGUF parse/write round trip"
        );
        assert!(Tokenizer::from_file(self.root.join("llama_src/tokenizer.json")).is_ok());
    }
}

/// Writes `config.json` and `model.safetensors` into `dir`; returns the safetensors path.
fn qwen_folder(dir: &Path, config: &str, st: &[u8]) -> PathBuf {
    fs::write(dir.join("config.json"), config).unwrap();
    let p = dir.join("model.safetensors");
    fs::write(&p, st).unwrap();
    p
}

fn write_gguf(dir: &Path, bytes: &[u8]) -> PathBuf {
    let p = dir.join("model.gguf");
    fs::write(&p, bytes).unwrap();
    p
}

// ------------------------------------------------------------------------------------------------
// The table

/// What a case loads.
enum Load {
    /// `CausalLm::<Flex>::load(path)`.
    Model(PathBuf),
    /// `Tokenizer::for_model(path, None)`.
    TokenizerFor(PathBuf),
    /// `Tokenizer::from_file(path)`.
    TokenizerFile(PathBuf),
    /// `GgufFile::open(path)?.read_f32(tensor)`.
    GgufTensor(PathBuf, &'static str),
}

/// The error a load gave.
enum Failure {
    Model(ModelError),
    Tokenizer(TokenizerError),
    Gguf(GgufError),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Model(e) => e.fmt(f),
            Failure::Tokenizer(e) => e.fmt(f),
            Failure::Gguf(e) => e.fmt(f),
        }
    }
}

fn run(load: &Load) -> Result<(), Failure> {
    match load {
        Load::Model(p) => CausalLm::<Flex>::load(p, &Default::default())
            .map(drop)
            .map_err(Failure::Model),
        Load::TokenizerFor(p) => Tokenizer::for_model(p, None)
            .map(drop)
            .map_err(Failure::Model),
        Load::TokenizerFile(p) => Tokenizer::from_file(p)
            .map(drop)
            .map_err(Failure::Tokenizer),
        Load::GgufTensor(p, name) => GgufFile::open(p)
            .and_then(|f| f.read_f32(name))
            .map(drop)
            .map_err(Failure::Gguf),
    }
}

/// A case's input, made in its directory.
struct Made {
    load: Load,
    /// What the Display must contain to name the file (a path, or `path:line`); `|` separates
    /// alternatives.
    blame: String,
    /// What else it must contain (tensor, key, field); `|` separates alternatives.
    names: Vec<String>,
}

fn made(load: Load, blame: &Path, names: &[&str]) -> Made {
    Made {
        load,
        blame: blame.display().to_string(),
        names: names.iter().map(|s| s.to_string()).collect(),
    }
}

type Check = Box<dyn Fn(&Failure) -> bool>;
type Make = Box<dyn Fn(&Path, &Bases) -> Made>;

struct Case {
    name: String,
    /// How the input is made.
    how: &'static str,
    /// The expected error, for messages.
    expect: &'static str,
    check: Check,
    /// A known defect this case shows (see the module docs).
    bug: Option<&'static str>,
    make: Make,
}

impl Case {
    #[allow(dead_code, reason = "used while a case documents a known defect")]
    fn bug(mut self, note: &'static str) -> Self {
        self.bug = Some(note);
        self
    }
}

fn case(
    name: impl Into<String>,
    how: &'static str,
    expect: &'static str,
    check: impl Fn(&Failure) -> bool + 'static,
    make: impl Fn(&Path, &Bases) -> Made + 'static,
) -> Case {
    Case {
        name: name.into(),
        how,
        expect,
        check: Box::new(check),
        bug: None,
        make: Box::new(make),
    }
}

macro_rules! model {
    ($p:pat) => {
        |f: &Failure| matches!(f, Failure::Model($p))
    };
}

macro_rules! gguf {
    ($p:pat) => {
        |f: &Failure| match f {
            Failure::Model(ModelError::Gguf(e)) => matches!(e.as_ref(), $p),
            Failure::Gguf(e) => matches!(e, $p),
            _ => false,
        }
    };
}

macro_rules! vocab {
    ($p:pat) => {
        |f: &Failure| matches!(f, Failure::Model(ModelError::GgufVocab { source: $p, .. }))
    };
}

fn safetensors_cases() -> Vec<Case> {
    let st = |dir: &Path, b: &Bases, bytes: &[u8]| -> PathBuf {
        qwen_folder(dir, &b.qwen_config, bytes)
    };
    let with_entries = |b: &Bases, edit: &dyn Fn(&mut Vec<StEntry>, &mut Vec<u8>)| -> Vec<u8> {
        let (mut entries, mut data) = st_layout(&b.qwen_tensors);
        edit(&mut entries, &mut data);
        st_bytes(&entries, &data)
    };
    vec![
        case(
            "st_cut_inside_length",
            "model.safetensors cut to 5 bytes, inside the u64 header length",
            "InvalidSafetensors",
            model!(ModelError::InvalidSafetensors { .. }),
            move |dir, b| {
                let p = st(dir, b, &b.qwen_st[..5]);
                made(Load::Model(dir.into()), &p, &["8-byte header length"])
            },
        ),
        case(
            "st_cut_inside_header",
            "cut halfway through the header JSON",
            "InvalidSafetensors",
            model!(ModelError::InvalidSafetensors { .. }),
            move |dir, b| {
                let p = st(dir, b, &b.qwen_st[..8 + b.qwen_header_len / 2]);
                made(Load::Model(dir.into()), &p, &["header length"])
            },
        ),
        case(
            "st_cut_inside_first_tensor",
            "cut 100 bytes into the data section",
            "Truncated naming the first tensor",
            model!(ModelError::Truncated { .. }),
            move |dir, b| {
                let p = st(dir, b, &b.qwen_st[..8 + b.qwen_header_len + 100]);
                let t = first_cut_tensor(&b.qwen_tensors, 100);
                made(Load::Model(dir.into()), &p, &[&format!("`{t}`")])
            },
        ),
        case(
            "st_cut_inside_data_end",
            "last 1000 bytes cut off",
            "Truncated naming the first tensor cut",
            model!(ModelError::Truncated { .. }),
            move |dir, b| {
                let cut = b.qwen_st.len() - 1000;
                let p = st(dir, b, &b.qwen_st[..cut]);
                let t = first_cut_tensor(&b.qwen_tensors, cut - 8 - b.qwen_header_len);
                made(Load::Model(dir.into()), &p, &[&format!("`{t}`")])
            },
        ),
        case(
            "st_header_len_2^63",
            "header length field = 2^63",
            "InvalidSafetensors",
            model!(ModelError::InvalidSafetensors { .. }),
            move |dir, b| {
                let mut bytes = b.qwen_st.clone();
                patch_u64(&mut bytes, 0, 1 << 63);
                let p = st(dir, b, &bytes);
                made(
                    Load::Model(dir.into()),
                    &p,
                    &["header length 9223372036854775808"],
                )
            },
        ),
        case(
            "st_header_len_u64_max",
            "header length field = 2^64 - 1",
            "InvalidSafetensors",
            model!(ModelError::InvalidSafetensors { .. }),
            move |dir, b| {
                let mut bytes = b.qwen_st.clone();
                patch_u64(&mut bytes, 0, u64::MAX);
                let p = st(dir, b, &bytes);
                made(Load::Model(dir.into()), &p, &["header length"])
            },
        ),
        case(
            "st_header_len_past_eof",
            "header length field = the file size",
            "InvalidSafetensors",
            model!(ModelError::InvalidSafetensors { .. }),
            move |dir, b| {
                let mut bytes = b.qwen_st.clone();
                let len = bytes.len() as u64;
                patch_u64(&mut bytes, 0, len);
                let p = st(dir, b, &bytes);
                made(
                    Load::Model(dir.into()),
                    &p,
                    &["header length", "exceeds the file"],
                )
            },
        ),
        case(
            "st_header_not_json",
            "header bytes overwritten with '#'",
            "InvalidSafetensors",
            model!(ModelError::InvalidSafetensors { .. }),
            move |dir, b| {
                let mut bytes = b.qwen_st.clone();
                bytes[8..8 + b.qwen_header_len].fill(b'#');
                let p = st(dir, b, &bytes);
                made(Load::Model(dir.into()), &p, &["header", "line 1"])
            },
        ),
        case(
            "st_header_json_array",
            "header is the JSON `[1, 2]` padded with spaces",
            "InvalidSafetensors",
            model!(ModelError::InvalidSafetensors { .. }),
            move |dir, b| {
                let mut bytes = b.qwen_st.clone();
                bytes[8..8 + b.qwen_header_len].fill(b' ');
                bytes[8..14].copy_from_slice(b"[1, 2]");
                let p = st(dir, b, &bytes);
                made(Load::Model(dir.into()), &p, &["header"])
            },
        ),
        case(
            "st_dtype_unknown",
            "dtype of the first tensor = \"Q7_Z\"",
            "InvalidSafetensors naming the tensor",
            model!(ModelError::InvalidSafetensors { .. }),
            move |dir, b| {
                let bytes = with_entries(b, &|e, _| e[0].dtype = "Q7_Z".into());
                let p = st(dir, b, &bytes);
                let t = &b.qwen_tensors[0].name;
                made(Load::Model(dir.into()), &p, &["Q7_Z", t])
            },
        ),
        case(
            "st_dtype_known_unsupported",
            "model.norm.weight stored as I16 (same byte size as BF16)",
            "UnsupportedDtype",
            model!(ModelError::UnsupportedDtype { .. }),
            move |dir, b| {
                let i = b.qwen_tensor("model.norm.weight");
                let bytes = with_entries(b, &|e, _| e[i].dtype = "I16".into());
                let p = st(dir, b, &bytes);
                made(Load::Model(dir.into()), &p, &["model.norm.weight", "I16"])
            },
        ),
        case(
            "st_shape_product_overflow",
            "shape of the first tensor = [2^32, 2^32, 2^32], offsets unchanged",
            "InvalidSafetensors naming the tensor",
            model!(ModelError::InvalidSafetensors { .. }),
            move |dir, b| {
                let bytes = with_entries(b, &|e, _| {
                    e[0].shape = shape_json(&[1 << 32, 1 << 32, 1 << 32])
                });
                let p = st(dir, b, &bytes);
                made(Load::Model(dir.into()), &p, &[&b.qwen_tensors[0].name])
            },
        ),
        case(
            "st_dim_beyond_u64",
            "shape of the first tensor = [18446744073709551616] (2^64)",
            "InvalidSafetensors naming the tensor",
            model!(ModelError::InvalidSafetensors { .. }),
            move |dir, b| {
                let bytes =
                    with_entries(b, &|e, _| e[0].shape = "[18446744073709551616]".to_string());
                let p = st(dir, b, &bytes);
                made(Load::Model(dir.into()), &p, &[&b.qwen_tensors[0].name])
            },
        ),
        case(
            "st_offsets_out_of_file",
            "data_offsets of the last tensor = [start, start + 2^40], shape unchanged",
            "InvalidSafetensors or Truncated naming the tensor",
            model!(ModelError::InvalidSafetensors { .. } | ModelError::Truncated { .. }),
            move |dir, b| {
                let bytes = with_entries(b, &|e, _| {
                    let last = e.last_mut().unwrap();
                    last.end = last.start + (1 << 40);
                });
                let p = st(dir, b, &bytes);
                made(
                    Load::Model(dir.into()),
                    &p,
                    &[&b.qwen_tensors.last().unwrap().name],
                )
            },
        ),
        case(
            "st_tensor_past_eof",
            "an extra header entry [2048] BF16 whose data lies past the end of the file",
            "Truncated naming it",
            model!(ModelError::Truncated { .. }),
            move |dir, b| {
                let bytes = with_entries(b, &|e, _| {
                    let end = e.last().unwrap().end;
                    e.push(StEntry {
                        name: "model.layers.0.mlp.ghost.weight".into(),
                        dtype: "BF16".into(),
                        shape: "[2048]".into(),
                        start: end,
                        end: end + 4096,
                    });
                });
                let p = st(dir, b, &bytes);
                made(
                    Load::Model(dir.into()),
                    &p,
                    &["model.layers.0.mlp.ghost.weight"],
                )
            },
        ),
        case(
            "st_overlapping_offsets",
            "layer 0 k_norm's data_offsets moved 16 bytes back, into post_attention_layernorm",
            "InvalidSafetensors naming one of the two",
            model!(ModelError::InvalidSafetensors { .. }),
            move |dir, b| {
                let k = b.qwen_tensor("model.layers.0.self_attn.k_norm.weight");
                let post = b.qwen_tensor("model.layers.0.post_attention_layernorm.weight");
                assert_eq!(
                    k,
                    post + 1,
                    "k_norm follows post_attention_layernorm in the file"
                );
                let bytes = with_entries(b, &|e, _| {
                    e[k].start -= 16;
                    e[k].end -= 16;
                });
                let p = st(dir, b, &bytes);
                made(
                    Load::Model(dir.into()),
                    &p,
                    &[
                        "model.layers.0.self_attn.k_norm.weight|model.layers.0.post_attention_layernorm.weight",
                    ],
                )
            },
        ),
        case(
            "st_shared_offsets",
            "layer 0 k_norm given the data_offsets of layer 0 q_norm (same size), leaving a gap",
            "InvalidSafetensors naming one of the two",
            model!(ModelError::InvalidSafetensors { .. }),
            move |dir, b| {
                let q = b.qwen_tensor("model.layers.0.self_attn.q_norm.weight");
                let k = b.qwen_tensor("model.layers.0.self_attn.k_norm.weight");
                let bytes = with_entries(b, &|e, _| {
                    e[k].start = e[q].start;
                    e[k].end = e[q].end;
                });
                let p = st(dir, b, &bytes);
                made(
                    Load::Model(dir.into()),
                    &p,
                    &[
                        "model.layers.0.self_attn.q_norm.weight|model.layers.0.self_attn.k_norm.weight",
                    ],
                )
            },
        ),
        case(
            "st_offsets_vs_shape",
            "shape of model.norm.weight = [63], offsets still span 64 BF16 values",
            "InvalidSafetensors naming the tensor",
            model!(ModelError::InvalidSafetensors { .. }),
            move |dir, b| {
                let i = b.qwen_tensor("model.norm.weight");
                let bytes = with_entries(b, &|e, _| e[i].shape = "[63]".into());
                let p = st(dir, b, &bytes);
                made(Load::Model(dir.into()), &p, &["model.norm.weight"])
            },
        ),
        case(
            "st_duplicate_name_same_entry",
            "the header JSON text holds the model.norm.weight entry twice, verbatim",
            "InvalidSafetensors naming the duplicate",
            model!(ModelError::InvalidSafetensors { .. }),
            move |dir, b| {
                let (entries, data) = st_layout(&b.qwen_tensors);
                let i = b.qwen_tensor("model.norm.weight");
                let mut twice = entries.clone();
                twice.push(entries[i].clone());
                let p = st(dir, b, &st_bytes(&twice, &data));
                made(Load::Model(dir.into()), &p, &["model.norm.weight"])
            },
        ),
        case(
            "st_duplicate_name_conflicting",
            "the header JSON text repeats the first tensor's key with a copy of its data appended at the end",
            "InvalidSafetensors naming the duplicate",
            model!(ModelError::InvalidSafetensors { .. }),
            move |dir, b| {
                let (mut entries, mut data) = st_layout(&b.qwen_tensors);
                let first = entries[0].clone();
                let start = data.len() as u64;
                data.extend(&b.qwen_tensors[0].bytes);
                entries.push(StEntry {
                    start,
                    end: data.len() as u64,
                    ..first
                });
                let p = st(dir, b, &st_bytes(&entries, &data));
                made(Load::Model(dir.into()), &p, &[&b.qwen_tensors[0].name])
            },
        ),
        case(
            "st_missing_tensor",
            "model.layers.1.mlp.down_proj.weight left out (header and data)",
            "MissingTensor",
            model!(ModelError::MissingTensor { .. }),
            move |dir, b| {
                let name = "model.layers.1.mlp.down_proj.weight";
                let kept: Vec<StTensor> = b
                    .qwen_tensors
                    .iter()
                    .filter(|t| t.name != name)
                    .cloned()
                    .collect();
                let (entries, data) = st_layout(&kept);
                let p = st(dir, b, &st_bytes(&entries, &data));
                made(Load::Model(dir.into()), &p, &[name])
            },
        ),
        case(
            "st_wrong_shape",
            "model.layers.0.mlp.up_proj.weight shape [160, 64] written as [64, 160]",
            "ShapeMismatch",
            model!(ModelError::ShapeMismatch { .. }),
            move |dir, b| {
                let i = b.qwen_tensor("model.layers.0.mlp.up_proj.weight");
                let mut ts = b.qwen_tensors.clone();
                ts[i].shape.reverse();
                assert_ne!(ts[i].shape, b.qwen_tensors[i].shape);
                let (entries, data) = st_layout(&ts);
                let p = st(dir, b, &st_bytes(&entries, &data));
                made(
                    Load::Model(dir.into()),
                    &p,
                    &["model.layers.0.mlp.up_proj.weight"],
                )
            },
        ),
        case(
            "st_extra_tensor",
            "an extra tensor model.layers.0.mlp.extra.weight [4] BF16",
            "UnexpectedTensor",
            model!(ModelError::UnexpectedTensor { .. }),
            move |dir, b| {
                let mut ts = b.qwen_tensors.clone();
                ts.push(StTensor {
                    name: "model.layers.0.mlp.extra.weight".into(),
                    dtype: "BF16".into(),
                    shape: vec![4],
                    bytes: vec![0; 8],
                });
                let (entries, data) = st_layout(&ts);
                let p = st(dir, b, &st_bytes(&entries, &data));
                made(
                    Load::Model(dir.into()),
                    &p,
                    &["model.layers.0.mlp.extra.weight"],
                )
            },
        ),
        case(
            "st_trailing_bytes",
            "16 bytes appended",
            "TrailingBytes",
            model!(ModelError::TrailingBytes { extra: 16, .. }),
            move |dir, b| {
                let mut bytes = b.qwen_st.clone();
                bytes.extend([0u8; 16]);
                let p = st(dir, b, &bytes);
                made(Load::Model(dir.into()), &p, &["16 trailing bytes"])
            },
        ),
        case(
            "st_nan_weight",
            "model.norm.weight[0] = NaN (BF16 0x7fc0)",
            "NonFiniteWeight",
            model!(ModelError::NonFiniteWeight { .. }),
            move |dir, b| {
                let i = b.qwen_tensor("model.norm.weight");
                let mut ts = b.qwen_tensors.clone();
                ts[i].bytes[..2].copy_from_slice(&0x7fc0u16.to_le_bytes());
                let (entries, data) = st_layout(&ts);
                let p = st(dir, b, &st_bytes(&entries, &data));
                made(Load::Model(dir.into()), &p, &["model.norm.weight"])
            },
        ),
        case(
            "st_index_missing_shard",
            "model.safetensors.index.json mapping every tensor to a shard file that does not exist",
            "Io naming the shard",
            model!(ModelError::Io { .. }),
            move |dir, b| {
                fs::write(dir.join("config.json"), &b.qwen_config).unwrap();
                let map: serde_json::Map<String, serde_json::Value> = b
                    .qwen_tensors
                    .iter()
                    .map(|t| (t.name.clone(), "model-00001-of-00002.safetensors".into()))
                    .collect();
                let index = serde_json::json!({ "metadata": {}, "weight_map": map });
                fs::write(dir.join("model.safetensors.index.json"), index.to_string()).unwrap();
                made(
                    Load::Model(dir.into()),
                    &dir.join("model-00001-of-00002.safetensors"),
                    &[],
                )
            },
        ),
        case(
            "st_index_not_json",
            "model.safetensors.index.json holding `{\"weight_map\": ` and nothing more",
            "Json naming the index",
            model!(ModelError::Json { .. }),
            move |dir, b| {
                fs::write(dir.join("config.json"), &b.qwen_config).unwrap();
                let p = dir.join("model.safetensors.index.json");
                fs::write(&p, "{\"weight_map\": ").unwrap();
                made(Load::Model(dir.into()), &p, &["line 1"])
            },
        ),
    ]
}

fn config_cases() -> Vec<Case> {
    /// The Qwen3 folder with `config.json` = `text`; returns the config path.
    fn folder(dir: &Path, b: &Bases, text: &str) -> PathBuf {
        qwen_folder(dir, text, &b.qwen_st);
        dir.join("config.json")
    }
    /// `field` set to `value`: the folder, with the expected blame `config.json:line`.
    fn with(dir: &Path, b: &Bases, field: &str, value: &str, names: &[&str]) -> Made {
        let (text, line) = set_field(&b.qwen_config, field, value);
        let cfg = folder(dir, b, &text);
        Made {
            load: Load::Model(dir.into()),
            blame: format!("{}:{line}", cfg.display()),
            names: names.iter().map(|s| s.to_string()).collect(),
        }
    }
    vec![
        case(
            "cfg_layers_1e9",
            "num_hidden_layers = 1000000000 beside the two-layer checkpoint",
            "InvalidConfig { field: num_hidden_layers }",
            model!(ModelError::InvalidConfig {
                field: "num_hidden_layers",
                ..
            }),
            |dir, b| {
                with(
                    dir,
                    b,
                    "num_hidden_layers",
                    "1000000000",
                    &["num_hidden_layers"],
                )
            },
        ),
        case(
            "cfg_layers_1000",
            "num_hidden_layers = 1000 (within LIMITS) beside the two-layer checkpoint",
            "ConfigMismatch { field: num_hidden_layers }",
            model!(ModelError::ConfigMismatch {
                field: "num_hidden_layers",
                ..
            }),
            |dir, b| {
                let (text, _) = set_field(&b.qwen_config, "num_hidden_layers", "1000");
                let cfg = folder(dir, b, &text);
                made(Load::Model(dir.into()), &cfg, &["num_hidden_layers"])
            },
        ),
        case(
            "cfg_hidden_size_128",
            "hidden_size = 128 beside a checkpoint of hidden size 64",
            "ConfigMismatch or ShapeMismatch naming a file and hidden_size or the tensor",
            model!(ModelError::ConfigMismatch { .. } | ModelError::ShapeMismatch { .. }),
            |dir, b| {
                let (text, _) = set_field(&b.qwen_config, "hidden_size", "128");
                let cfg = folder(dir, b, &text);
                Made {
                    load: Load::Model(dir.into()),
                    blame: format!(
                        "{}|{}",
                        cfg.display(),
                        dir.join("model.safetensors").display()
                    ),
                    names: vec!["hidden_size|model.embed_tokens.weight".into()],
                }
            },
        ),
        case(
            "cfg_heads_zero",
            "num_attention_heads = 0",
            "InvalidConfig { field: num_attention_heads }",
            model!(ModelError::InvalidConfig {
                field: "num_attention_heads",
                ..
            }),
            |dir, b| with(dir, b, "num_attention_heads", "0", &["num_attention_heads"]),
        ),
        case(
            "cfg_hidden_negative",
            "hidden_size = -64",
            "InvalidConfig { field: hidden_size }",
            model!(ModelError::InvalidConfig {
                field: "hidden_size",
                ..
            }),
            |dir, b| with(dir, b, "hidden_size", "-64", &["hidden_size", "-64"]),
        ),
        case(
            "cfg_eps_nan_string",
            "rms_norm_eps = \"NaN\" (a string)",
            "InvalidConfig { field: rms_norm_eps }",
            model!(ModelError::InvalidConfig {
                field: "rms_norm_eps",
                ..
            }),
            |dir, b| with(dir, b, "rms_norm_eps", "\"NaN\"", &["rms_norm_eps"]),
        ),
        case(
            "cfg_eps_1e400",
            "rms_norm_eps = 1e400 (out of f64 range: a JSON parse error)",
            "Json with the line",
            model!(ModelError::Json { .. }),
            |dir, b| {
                let (text, line) = set_field(&b.qwen_config, "rms_norm_eps", "1e400");
                let cfg = folder(dir, b, &text);
                made(Load::Model(dir.into()), &cfg, &[&format!("line {line}")])
            },
        ),
        case(
            "cfg_head_dim_huge",
            "head_dim = 2^40",
            "InvalidConfig { field: head_dim }",
            model!(ModelError::InvalidConfig {
                field: "head_dim",
                ..
            }),
            |dir, b| with(dir, b, "head_dim", "1099511627776", &["head_dim"]),
        ),
        case(
            "cfg_kv_heads_not_divisor",
            "num_key_value_heads = 3 with 4 query heads",
            "InvalidConfig { field: num_key_value_heads }",
            model!(ModelError::InvalidConfig {
                field: "num_key_value_heads",
                ..
            }),
            |dir, b| with(dir, b, "num_key_value_heads", "3", &["num_key_value_heads"]),
        ),
        case(
            "cfg_not_json",
            "the hidden_size line written without quotes around the key",
            "Json with the line",
            model!(ModelError::Json { .. }),
            |dir, b| {
                let (_, line) = set_field(&b.qwen_config, "hidden_size", "64");
                let text = replace_line(&b.qwen_config, line, "  hidden_size: 64,");
                let cfg = folder(dir, b, &text);
                made(Load::Model(dir.into()), &cfg, &[&format!("line {line}")])
            },
        ),
        case(
            "cfg_missing",
            "no config.json beside model.safetensors",
            "Io naming config.json",
            model!(ModelError::Io { .. }),
            |dir, b| {
                fs::write(dir.join("model.safetensors"), &b.qwen_st).unwrap();
                made(Load::Model(dir.into()), &dir.join("config.json"), &[])
            },
        ),
    ]
}

/// Gemma 3 configs that do not fit their checkpoint or that ask for what Gemma 3 does not
/// compute: the `gemma3_mqa` fixture (4 layers, window 4, head_dim 32) with one field edited
/// through its JSON (the fields are arrays and objects over several lines).
fn gemma3_config_cases() -> Vec<Case> {
    /// The fixture folder with `edit` applied to its config.json; the blame is the config's
    /// line of `field`.
    fn with(dir: &Path, field: &str, edit: impl Fn(&mut serde_json::Value)) -> Made {
        let src = fixtures().join("gemma3_mqa");
        let mut v: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(src.join("config.json")).unwrap()).unwrap();
        edit(&mut v);
        let text = serde_json::to_string_pretty(&v).unwrap();
        let line = text
            .lines()
            .position(|l| l.trim_start().starts_with(&format!("\"{field}\":")))
            .map(|i| i + 1)
            .unwrap_or_else(|| panic!("no field {field}"));
        let cfg = dir.join("config.json");
        fs::write(&cfg, text).unwrap();
        fs::copy(src.join("model.safetensors"), dir.join("model.safetensors")).unwrap();
        Made {
            load: Load::Model(dir.into()),
            blame: format!("{}:{line}", cfg.display()),
            names: vec![field.to_string()],
        }
    }
    let field = |name: &'static str| move |f: &Failure| matches!(f, Failure::Model(ModelError::InvalidConfig { field, .. }) if *field == name);
    vec![
        case(
            "gemma3_window_0",
            "sliding_window = 0",
            "InvalidConfig { field: sliding_window }",
            field("sliding_window"),
            |dir, _| with(dir, "sliding_window", |v| v["sliding_window"] = 0.into()),
        ),
        case(
            "gemma3_window_null",
            "sliding_window = null with sliding_attention layers",
            "InvalidConfig { field: sliding_window }",
            field("sliding_window"),
            |dir, _| {
                with(dir, "sliding_window", |v| {
                    v["sliding_window"] = serde_json::Value::Null
                })
            },
        ),
        case(
            "gemma3_layer_types_short",
            "layer_types of 3 entries for 4 layers",
            "InvalidConfig { field: layer_types }",
            field("layer_types"),
            |dir, _| {
                with(dir, "layer_types", |v| {
                    v["layer_types"].as_array_mut().unwrap().pop();
                })
            },
        ),
        case(
            "gemma3_layer_types_unknown",
            "a layer type chunked_attention",
            "InvalidConfig { field: layer_types }",
            field("layer_types"),
            |dir, _| {
                with(dir, "layer_types", |v| {
                    v["layer_types"][1] = "chunked_attention".into()
                })
            },
        ),
        case(
            "gemma3_local_rope_negative",
            "rope_parameters.sliding_attention.rope_theta = -100",
            "InvalidConfig { field: rope_parameters }",
            field("rope_parameters"),
            |dir, _| {
                with(dir, "rope_parameters", |v| {
                    v["rope_parameters"]["sliding_attention"]["rope_theta"] = (-100.0).into()
                })
            },
        ),
        case(
            "gemma3_rope_linear",
            "rope_parameters.full_attention of type linear (Gemma 3 4B's scaling)",
            "InvalidConfig { field: rope_parameters }",
            field("rope_parameters"),
            |dir, _| {
                with(dir, "rope_parameters", |v| {
                    v["rope_parameters"]["full_attention"]["rope_type"] = "linear".into()
                })
            },
        ),
        case(
            "gemma3_softcapping",
            "final_logit_softcapping = 30 (Gemma 2's)",
            "InvalidConfig { field: final_logit_softcapping }",
            field("final_logit_softcapping"),
            |dir, _| {
                with(dir, "final_logit_softcapping", |v| {
                    v["final_logit_softcapping"] = 30.0.into()
                })
            },
        ),
        case(
            "gemma3_scalar_0",
            "query_pre_attn_scalar = 0",
            "InvalidConfig { field: query_pre_attn_scalar }",
            field("query_pre_attn_scalar"),
            |dir, _| {
                with(dir, "query_pre_attn_scalar", |v| {
                    v["query_pre_attn_scalar"] = 0.into()
                })
            },
        ),
        case(
            "gemma3_head_dim_16",
            "head_dim = 16 beside a checkpoint of head_dim 32",
            "ShapeMismatch naming a q/k/v/o projection or norm",
            model!(ModelError::ShapeMismatch { .. }),
            |dir, _| {
                let mut m = with(dir, "head_dim", |v| v["head_dim"] = 16.into());
                m.blame = dir.join("model.safetensors").display().to_string();
                m.names = vec!["self_attn".to_string()];
                m
            },
        ),
    ]
}

fn gguf_cases() -> Vec<Case> {
    /// The base GGUF with `edit` applied to its bytes, as a model to load.
    fn bytes_case(
        dir: &Path,
        b: &Bases,
        edit: impl Fn(&mut Vec<u8>, &GgufDoc),
        names: &[&str],
    ) -> Made {
        let mut bytes = b.gguf.clone();
        edit(&mut bytes, &b.doc);
        let p = write_gguf(dir, &bytes);
        made(Load::Model(p.clone()), &p, names)
    }
    /// The base GGUF re-written from its parts after `edit`.
    fn doc_case(
        dir: &Path,
        b: &Bases,
        load: fn(PathBuf) -> Load,
        edit: impl Fn(&mut GgufDoc),
        names: &[&str],
    ) -> Made {
        let mut doc = b.doc.clone();
        edit(&mut doc);
        let p = write_gguf(dir, &doc.to_bytes());
        made(load(p.clone()), &p, names)
    }
    let mut cases = vec![
        case(
            "gguf_bad_magic",
            "magic `GGUF` overwritten with `GGML`",
            "BadMagic",
            gguf!(GgufError::BadMagic { .. }),
            |dir, b| bytes_case(dir, b, |x, _| x[..4].copy_from_slice(b"GGML"), &["magic"]),
        ),
        case(
            "gguf_version_4",
            "version = 4",
            "UnsupportedVersion",
            gguf!(GgufError::UnsupportedVersion { version: 4, .. }),
            |dir, b| bytes_case(dir, b, |x, _| patch_u32(x, 4, 4), &["version 4"]),
        ),
    ];
    for k in 1..8 {
        cases.push(case(
            format!("gguf_cut_header_{k}/8"),
            "the file cut at k/8 of the header (the bytes before the data section)",
            "Truncated or LengthTooLarge",
            gguf!(GgufError::Truncated { .. } | GgufError::LengthTooLarge { .. }),
            move |dir, b| {
                let cut = b.doc.data_offset * k / 8;
                let p = write_gguf(dir, &b.gguf[..cut]);
                made(Load::Model(p.clone()), &p, &["at byte"])
            },
        ));
    }
    cases.extend([
        case(
            "gguf_tensor_count_2^62",
            "tensor_count = 2^62",
            "LengthTooLarge { field: tensor_count }",
            gguf!(GgufError::LengthTooLarge { .. }),
            |dir, b| bytes_case(dir, b, |x, _| patch_u64(x, 8, 1 << 62), &["tensor_count"]),
        ),
        case(
            "gguf_kv_count_2^62",
            "kv_count = 2^62",
            "LengthTooLarge { field: kv_count }",
            gguf!(GgufError::LengthTooLarge { .. }),
            |dir, b| bytes_case(dir, b, |x, _| patch_u64(x, 16, 1 << 62), &["kv_count"]),
        ),
        case(
            "gguf_string_len_2^40",
            "length of the general.name string value = 2^40",
            "LengthTooLarge naming the key",
            gguf!(GgufError::LengthTooLarge { .. }),
            |dir, b| {
                bytes_case(
                    dir,
                    b,
                    |x, d| patch_u64(x, d.kv("general.name").type_at + 4, 1 << 40),
                    &["general.name"],
                )
            },
        ),
        case(
            "gguf_array_len_2^40",
            "element count of the tokenizer.ggml.tokens array = 2^40",
            "LengthTooLarge naming the key",
            gguf!(GgufError::LengthTooLarge { .. }),
            |dir, b| {
                bytes_case(
                    dir,
                    b,
                    |x, d| patch_u64(x, d.kv("tokenizer.ggml.tokens").type_at + 8, 1 << 40),
                    &["tokenizer.ggml.tokens"],
                )
            },
        ),
        case(
            "gguf_string_not_utf8",
            "first byte of the general.name value = 0xff",
            "NotUtf8 naming the key",
            gguf!(GgufError::NotUtf8 { .. }),
            |dir, b| {
                bytes_case(
                    dir,
                    b,
                    |x, d| x[d.kv("general.name").type_at + 12] = 0xff,
                    &["general.name"],
                )
            },
        ),
        case(
            "gguf_bool_2",
            "tokenizer.ggml.add_bos_token bool byte = 2",
            "InvalidBool naming the key",
            gguf!(GgufError::InvalidBool { value: 2, .. }),
            |dir, b| {
                bytes_case(
                    dir,
                    b,
                    |x, d| x[d.kv("tokenizer.ggml.add_bos_token").type_at + 4] = 2,
                    &["tokenizer.ggml.add_bos_token"],
                )
            },
        ),
        case(
            "gguf_value_type_13",
            "value type id of general.file_type = 13",
            "UnknownValueType naming the key",
            gguf!(GgufError::UnknownValueType { type_id: 13, .. }),
            |dir, b| {
                bytes_case(
                    dir,
                    b,
                    |x, d| patch_u32(x, d.kv("general.file_type").type_at, 13),
                    &["general.file_type"],
                )
            },
        ),
        case(
            "gguf_alignment_0",
            "general.alignment = 0",
            "InvalidAlignment",
            gguf!(GgufError::InvalidAlignment { alignment: 0, .. }),
            |dir, b| {
                bytes_case(
                    dir,
                    b,
                    |x, d| patch_u32(x, d.kv("general.alignment").type_at + 4, 0),
                    &["general.alignment"],
                )
            },
        ),
        case(
            "gguf_dims_overflow",
            "dims of token_embd.weight = [2^32, 2^32] (product 2^64)",
            "DimsOverflow naming the tensor",
            gguf!(GgufError::DimsOverflow { .. }),
            |dir, b| {
                bytes_case(
                    dir,
                    b,
                    |x, d| {
                        let t = d.info("token_embd.weight");
                        patch_u64(x, t.dims_at, 1 << 32);
                        patch_u64(x, t.dims_at + 8, 1 << 32);
                    },
                    &["token_embd.weight"],
                )
            },
        ),
        case(
            "gguf_dims_huge",
            "dims of token_embd.weight = [2^31, 2^31] (2^62 F16 values, no overflow)",
            "TensorOutOfFile naming the tensor",
            gguf!(GgufError::TensorOutOfFile { .. }),
            |dir, b| {
                bytes_case(
                    dir,
                    b,
                    |x, d| {
                        let t = d.info("token_embd.weight");
                        patch_u64(x, t.dims_at, 1 << 31);
                        patch_u64(x, t.dims_at + 8, 1 << 31);
                    },
                    &["token_embd.weight"],
                )
            },
        ),
        case(
            "gguf_dim_zero",
            "first dim of token_embd.weight = 0",
            "ZeroDim naming the tensor",
            gguf!(GgufError::ZeroDim { .. }),
            |dir, b| {
                bytes_case(
                    dir,
                    b,
                    |x, d| patch_u64(x, d.info("token_embd.weight").dims_at, 0),
                    &["token_embd.weight"],
                )
            },
        ),
        case(
            "gguf_n_dims_100",
            "n_dims of blk.0.attn_norm.weight = 100",
            "TooManyDims naming the tensor",
            gguf!(GgufError::TooManyDims { n_dims: 100, .. }),
            |dir, b| {
                bytes_case(
                    dir,
                    b,
                    |x, d| patch_u32(x, d.info("blk.0.attn_norm.weight").n_dims_at, 100),
                    &["blk.0.attn_norm.weight"],
                )
            },
        ),
        case(
            "gguf_offset_out_of_file",
            "data offset of output_norm.weight = 2^40",
            "TensorOutOfFile naming the tensor",
            gguf!(GgufError::TensorOutOfFile { .. }),
            |dir, b| {
                bytes_case(
                    dir,
                    b,
                    |x, d| patch_u64(x, d.info("output_norm.weight").offset_at, 1 << 40),
                    &["output_norm.weight"],
                )
            },
        ),
        case(
            "gguf_overlapping_data",
            "data offset of blk.0.attn_k.weight = that of blk.0.attn_q.weight",
            "OverlappingTensors naming both",
            gguf!(GgufError::OverlappingTensors { .. }),
            |dir, b| {
                bytes_case(
                    dir,
                    b,
                    |x, d| {
                        let q = d.info("blk.0.attn_q.weight").offset;
                        patch_u64(x, d.info("blk.0.attn_k.weight").offset_at, q);
                    },
                    &["blk.0.attn_q.weight", "blk.0.attn_k.weight"],
                )
            },
        ),
        case(
            "gguf_misaligned_offset",
            "data offset of blk.0.attn_q.weight + 2 (alignment 32)",
            "MisalignedOffset naming the tensor",
            gguf!(GgufError::MisalignedOffset { .. }),
            |dir, b| {
                bytes_case(
                    dir,
                    b,
                    |x, d| {
                        let t = d.info("blk.0.attn_q.weight");
                        patch_u64(x, t.offset_at, t.offset + 2);
                    },
                    &["blk.0.attn_q.weight", "alignment"],
                )
            },
        ),
        case(
            "gguf_type_999",
            "ggml type of blk.0.attn_q.weight = 999",
            "UnknownGgmlType naming the tensor",
            gguf!(GgufError::UnknownGgmlType { type_id: 999, .. }),
            |dir, b| {
                bytes_case(
                    dir,
                    b,
                    |x, d| patch_u32(x, d.info("blk.0.attn_q.weight").type_at, 999),
                    &["blk.0.attn_q.weight", "999"],
                )
            },
        ),
        case(
            "gguf_iq2_xxs_in_model",
            "ggml type of token_embd.weight = 16 (IQ2_XXS, blocks of 256; ne0 is 48)",
            "PartialBlock naming the tensor and the type",
            gguf!(GgufError::PartialBlock { .. }),
            |dir, b| {
                bytes_case(
                    dir,
                    b,
                    |x, d| patch_u32(x, d.info("token_embd.weight").type_at, 16),
                    &["token_embd.weight", "IQ2_XXS"],
                )
            },
        ),
        case(
            "gguf_i32_in_model",
            "ggml type of blk.0.attn_norm.weight (F32) = 26 (I32, same byte size)",
            "UnsupportedType naming the tensor and the type",
            gguf!(GgufError::UnsupportedType { .. }),
            |dir, b| {
                bytes_case(
                    dir,
                    b,
                    |x, d| patch_u32(x, d.info("blk.0.attn_norm.weight").type_at, 26),
                    &["blk.0.attn_norm.weight", "I32"],
                )
            },
        ),
        case(
            "gguf_iq2_xxs_read",
            "fixtures/gguf/small.gguf, tensor t.iq2_xxs read as f32",
            "UnsupportedType naming the tensor and the type",
            gguf!(GgufError::UnsupportedType { .. }),
            |_, _| {
                let p = fixtures().join("gguf/small.gguf");
                made(
                    Load::GgufTensor(p.clone(), "t.iq2_xxs"),
                    &p,
                    &["t.iq2_xxs", "IQ2_XXS"],
                )
            },
        ),
        case(
            "gguf_missing_tensor",
            "tensor info of blk.1.ffn_down.weight left out",
            "MissingTensor",
            model!(ModelError::MissingTensor { .. }),
            |dir, b| {
                doc_case(
                    dir,
                    b,
                    Load::Model,
                    |d| d.infos.retain(|t| t.name != "blk.1.ffn_down.weight"),
                    &["blk.1.ffn_down.weight"],
                )
            },
        ),
        case(
            "gguf_wrong_shape",
            "dims of blk.0.ffn_up.weight swapped",
            "ShapeMismatch",
            model!(ModelError::ShapeMismatch { .. }),
            |dir, b| {
                bytes_case(
                    dir,
                    b,
                    |x, d| {
                        let t = d.info("blk.0.ffn_up.weight");
                        assert_ne!(t.dims[0], t.dims[1]);
                        patch_u64(x, t.dims_at, t.dims[1]);
                        patch_u64(x, t.dims_at + 8, t.dims[0]);
                    },
                    &["blk.0.ffn_up.weight"],
                )
            },
        ),
        case(
            "gguf_duplicate_tensor",
            "blk.0.attn_k.weight renamed blk.0.attn_q.weight (same length, in place)",
            "DuplicateTensor",
            gguf!(GgufError::DuplicateTensor { .. }),
            |dir, b| {
                bytes_case(
                    dir,
                    b,
                    |x, d| {
                        let at = d.info("blk.0.attn_k.weight").name_at + 8;
                        x[at..at + 19].copy_from_slice(b"blk.0.attn_q.weight");
                    },
                    &["blk.0.attn_q.weight"],
                )
            },
        ),
        case(
            "gguf_duplicate_key",
            "a second general.name entry appended to the metadata",
            "DuplicateKey",
            gguf!(GgufError::DuplicateKey { .. }),
            |dir, b| {
                doc_case(
                    dir,
                    b,
                    Load::Model,
                    |d| {
                        let kv = d.kv("general.name").clone();
                        d.kvs.push(kv);
                    },
                    &["general.name"],
                )
            },
        ),
        case(
            "gguf_arch_mamba",
            "general.architecture = \"mamba\" (in place of \"llama\")",
            "GgufModel { field: general.architecture }",
            model!(ModelError::GgufModel { .. }),
            |dir, b| {
                bytes_case(
                    dir,
                    b,
                    |x, d| {
                        let at = d.kv("general.architecture").type_at + 12;
                        assert_eq!(&x[at..at + 5], b"llama");
                        x[at..at + 5].copy_from_slice(b"mamba");
                    },
                    &["general.architecture", "mamba"],
                )
            },
        ),
        case(
            "gguf_block_count_1e9",
            "llama.block_count = 1000000000",
            "InvalidConfig naming llama.block_count",
            model!(ModelError::InvalidConfig {
                field: "num_hidden_layers",
                ..
            }),
            |dir, b| {
                bytes_case(
                    dir,
                    b,
                    |x, d| patch_u32(x, d.kv("llama.block_count").type_at + 4, 1_000_000_000),
                    &["block_count"],
                )
            },
        ),
        case(
            "gguf_block_count_1000",
            "llama.block_count = 1000 (within LIMITS) beside two blocks of tensors",
            "ConfigMismatch or GgufModel naming llama.block_count",
            model!(
                ModelError::ConfigMismatch { .. }
                    | ModelError::GgufModel { .. }
                    | ModelError::MissingTensor { .. }
            ),
            |dir, b| {
                bytes_case(
                    dir,
                    b,
                    |x, d| patch_u32(x, d.kv("llama.block_count").type_at + 4, 1000),
                    &["block_count"],
                )
            },
        ),
        case(
            "gguf_nan_weight",
            "output_norm.weight[0] (F32) = NaN",
            "GgufModel naming the tensor",
            model!(ModelError::GgufModel { .. }),
            |dir, b| {
                bytes_case(
                    dir,
                    b,
                    |x, d| {
                        let at = d.data_offset + d.info("output_norm.weight").offset as usize;
                        x[at..at + 4].copy_from_slice(&f32::NAN.to_le_bytes());
                    },
                    &["output_norm.weight"],
                )
            },
        ),
        case(
            "gguf_vocab_token_type_count",
            "tokenizer.ggml.token_type one entry short",
            "GgufVocab TokenTypeCount",
            vocab!(GgufVocabError::TokenTypeCount { .. }),
            |dir, b| {
                doc_case(
                    dir,
                    b,
                    Load::TokenizerFor,
                    |d| {
                        let kv = d.kv_mut("tokenizer.ggml.token_type");
                        let mut v = dec_i32_array(&kv.raw);
                        v.pop();
                        kv.raw = enc_i32_array(&v);
                    },
                    &["tokenizer.ggml.token_type"],
                )
            },
        ),
        case(
            "gguf_vocab_pre_falcon",
            "tokenizer.ggml.pre = \"falcon\"",
            "GgufVocab UnsupportedPre",
            vocab!(GgufVocabError::UnsupportedPre { .. }),
            |dir, b| {
                doc_case(
                    dir,
                    b,
                    Load::TokenizerFor,
                    |d| d.kv_mut("tokenizer.ggml.pre").raw = enc_str("falcon"),
                    &["tokenizer.ggml.pre", "falcon"],
                )
            },
        ),
        case(
            "gguf_vocab_merge_unknown",
            "tokenizer.ggml.merges = [\"a zz\"] (zz is not a token)",
            "GgufVocab InvalidMerge",
            vocab!(GgufVocabError::InvalidMerge { index: 0, .. }),
            |dir, b| {
                doc_case(
                    dir,
                    b,
                    Load::TokenizerFor,
                    |d| {
                        d.kv_mut("tokenizer.ggml.merges").raw = enc_str_array(&["a zz".to_string()])
                    },
                    &["tokenizer.ggml.merges[0]", "zz"],
                )
            },
        ),
        case(
            "gguf_vocab_eos_out_of_range",
            "tokenizer.ggml.eos_token_id = 1000 (128 tokens)",
            "GgufVocab SpecialIdOutOfRange",
            vocab!(GgufVocabError::SpecialIdOutOfRange { .. }),
            |dir, b| {
                doc_case(
                    dir,
                    b,
                    Load::TokenizerFor,
                    |d| {
                        d.kv_mut("tokenizer.ggml.eos_token_id").raw = 1000u32.to_le_bytes().to_vec()
                    },
                    &["tokenizer.ggml.eos_token_id"],
                )
            },
        ),
    ]);
    cases
}

fn tokenizer_cases() -> Vec<Case> {
    let file = |dir: &Path, text: &str| -> Made {
        let p = dir.join("tokenizer.json");
        fs::write(&p, text).unwrap();
        made(Load::TokenizerFile(p.clone()), &p, &[])
    };
    vec![
        case(
            "tok_truncated",
            "the tokenizer.json of the GGUF export cut in half",
            "TokenizerError::Tokenizers naming the path",
            |f: &Failure| matches!(f, Failure::Tokenizer(TokenizerError::Tokenizers { .. })),
            move |dir, _| file(dir, &TOKENIZER_JSON[..TOKENIZER_JSON.len() / 2]),
        ),
        case(
            "tok_not_json",
            "tokenizer.json = `not json at all`",
            "TokenizerError::Tokenizers naming the path",
            |f: &Failure| matches!(f, Failure::Tokenizer(TokenizerError::Tokenizers { .. })),
            move |dir, _| file(dir, "not json at all"),
        ),
        case(
            "tok_wrong_structure",
            "tokenizer.json = `{\"model\": 3}`",
            "TokenizerError::Tokenizers naming the path",
            |f: &Failure| matches!(f, Failure::Tokenizer(TokenizerError::Tokenizers { .. })),
            move |dir, _| file(dir, "{\"model\": 3}"),
        ),
        case(
            "tok_missing_in_folder",
            "Tokenizer::for_model on a folder without tokenizer.json",
            "ModelError::Tokenizer(Io) naming the path",
            model!(ModelError::Tokenizer(TokenizerError::Io { .. })),
            move |dir, _| {
                made(
                    Load::TokenizerFor(dir.into()),
                    &dir.join("tokenizer.json"),
                    &[],
                )
            },
        ),
    ]
}

/// One case's result.
struct Row {
    name: String,
    display: String,
    peak_mib: Option<f64>,
    alloc_mib: f64,
    ms: f64,
    /// What the case expected and did not get (empty: as expected).
    problems: Vec<String>,
}

fn has(display: &str, need: &str) -> bool {
    need.split('|').any(|n| display.contains(n))
}

/// Runs case number `index` in its own directory (named by the number, so that the path in a
/// Display cannot supply a name the case looks for).
fn run_case(index: usize, c: &Case, b: &Bases) -> Row {
    let dir = b.case_dir(&format!("{index:03}"));
    let m = (c.make)(&dir, b);
    let measured = measure(|| run(&m.load));
    let (peak_mib, alloc_mib, ms) = (measured.peak_mib, measured.alloc_mib, measured.ms);
    let mut problems = Vec::new();
    let display = match measured.value {
        Err(p) => {
            let msg = panic_message(p.as_ref());
            problems.push(format!("panicked: {msg}"));
            format!("PANIC: {msg}")
        }
        Ok(Ok(())) => {
            problems.push(format!("loaded without error (expected {})", c.expect));
            "(loaded without error)".to_string()
        }
        Ok(Err(e)) => {
            let d = e.to_string();
            if !(c.check)(&e) {
                problems.push(format!("wrong error (expected {}): {d}", c.expect));
            }
            for need in std::iter::once(&m.blame).chain(&m.names) {
                if !has(&d, need) {
                    problems.push(format!("Display does not name `{need}`"));
                }
            }
            d
        }
    };
    if let Some(peak) = peak_mib
        && peak > PEAK_BOUND_MIB
    {
        problems.push(format!(
            "peak RSS growth {peak:.1} MiB > {PEAK_BOUND_MIB} MiB"
        ));
    }
    if alloc_mib > PEAK_BOUND_MIB {
        problems.push(format!(
            "peak allocation growth {alloc_mib:.1} MiB > {PEAK_BOUND_MIB} MiB"
        ));
    }
    if ms > CASE_TIME_LIMIT_S * 1e3 {
        problems.push(format!("took {ms:.0} ms"));
    }
    Row {
        name: c.name.clone(),
        display,
        peak_mib,
        alloc_mib,
        ms,
        problems,
    }
}

/// The meters work: a 32 MiB allocation, touched and freed, shows as a peak of about 32 MiB in
/// both (RSS: `None` where the kernel has no clear_refs), and a 256 MiB `vec![0; n]` that is never
/// touched shows in the allocation meter alone.
fn calibrate() -> (Option<f64>, f64) {
    let m = measure(|| {
        let v = vec![1u8; 32 << 20];
        std::hint::black_box(&v);
        v.iter().step_by(4096).map(|&x| x as u64).sum::<u64>()
    });
    assert!(
        (31.9..32.1).contains(&m.alloc_mib),
        "a 32 MiB allocation measured as {:.1} MiB by the allocation meter",
        m.alloc_mib
    );
    if let Some(peak) = m.peak_mib {
        assert!(
            (30.0..48.0).contains(&peak),
            "a 32 MiB allocation measured as {peak:.1} MiB: the peak RSS meter does not work here"
        );
    }
    let untouched = measure(|| std::hint::black_box(vec![0u8; 256 << 20]).len());
    assert!(
        untouched.alloc_mib >= 256.0,
        "an untouched 256 MiB allocation measured as {:.1} MiB by the allocation meter",
        untouched.alloc_mib
    );
    (m.peak_mib, m.alloc_mib)
}

#[test]
fn hostile_files_give_typed_errors_naming_the_culprit_within_bounded_memory() {
    let _guard = serial();
    let b = Bases::new();
    b.check();
    let (calibration_rss, calibration_alloc) = calibrate();

    let cases: Vec<Case> = [
        safetensors_cases(),
        config_cases(),
        gemma3_config_cases(),
        gguf_cases(),
        tokenizer_cases(),
    ]
    .into_iter()
    .flatten()
    .collect();
    assert!(cases.len() >= 30, "{} cases", cases.len());
    let mut names = std::collections::HashSet::new();
    for c in &cases {
        assert!(names.insert(c.name.clone()), "case name {} twice", c.name);
    }

    let root = b.root.display().to_string();
    eprintln!(
        "\n{:<30} {:<6} {:>7} {:>9} {:>6}  error Display (first 100 chars; $TMP = the temp dir)",
        "case", "result", "RSS MiB", "alloc MiB", "ms"
    );
    let mut failures = Vec::new();
    let mut known = Vec::new();
    let (mut max_rss, mut max_alloc, mut max_ms): (f64, f64, f64) = (0.0, 0.0, 0.0);
    for (i, c) in cases.iter().enumerate() {
        let row = run_case(i, c, &b);
        max_rss = max_rss.max(row.peak_mib.unwrap_or(0.0));
        max_alloc = max_alloc.max(row.alloc_mib);
        max_ms = max_ms.max(row.ms);
        let verdict = match (c.bug, row.problems.is_empty()) {
            (None, true) => "ok",
            (None, false) => {
                failures.push(format!("{}: {}", row.name, row.problems.join("; ")));
                "FAIL"
            }
            (Some(note), false) => {
                known.push(
                    format!(
                        "{}: {note}\n      input: {}\n      [{}]\n      Display: {}",
                        row.name,
                        c.how,
                        row.problems.join("; "),
                        row.display
                    )
                    .replace(&root, "$TMP"),
                );
                "BUG"
            }
            (Some(note), true) => {
                failures.push(format!(
                    "{}: marked as a known bug ({note}) but behaves as expected now: remove the note",
                    row.name
                ));
                "FIXED"
            }
        };
        let shown: String = row
            .display
            .replace(&root, "$TMP")
            .chars()
            .take(100)
            .collect();
        let peak = row
            .peak_mib
            .map_or("n/a".to_string(), |p| format!("{p:.2}"));
        eprintln!(
            "{:<30} {:<6} {:>7} {:>9.2} {:>6.1}  {}",
            row.name, verdict, peak, row.alloc_mib, row.ms, shown
        );
    }
    eprintln!(
        "\n{} cases; largest peak RSS growth {max_rss:.2} MiB, largest peak allocation growth \
         {max_alloc:.2} MiB (bound {PEAK_BOUND_MIB} MiB each), slowest {max_ms:.1} ms; \
         calibration: 32 MiB measured as {} (RSS) and {calibration_alloc:.2} MiB (allocation)",
        cases.len(),
        calibration_rss.map_or("n/a (no /proc/self/clear_refs)".to_string(), |c| format!(
            "{c:.2} MiB"
        ))
    );
    if !known.is_empty() {
        eprintln!("known bugs ({}):", known.len());
        for k in &known {
            eprintln!("  {k}");
        }
    }
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

// ------------------------------------------------------------------------------------------------
// Fuzz

/// A random corruption: 1–8 bytes overwritten or bit-flipped, or a truncation. Each position is
/// drawn in the header (`true`) or anywhere in the file (`false`).
#[derive(Clone, Debug)]
enum Edit {
    /// `(in header, position, value, flip one bit (value & 7) instead of overwriting)`.
    Bytes(Vec<(bool, Index, u8, bool)>),
    /// The file cut at a position.
    Truncate(bool, Index),
}

fn edit_strategy() -> impl Strategy<Value = Edit> {
    prop_oneof![
        3 => prop::collection::vec((any::<bool>(), any::<Index>(), any::<u8>(), any::<bool>()), 1..=8)
            .prop_map(Edit::Bytes),
        1 => (any::<bool>(), any::<Index>()).prop_map(|(h, i)| Edit::Truncate(h, i)),
    ]
}

fn apply(base: &[u8], header_len: usize, edit: &Edit) -> Vec<u8> {
    let pick =
        |in_header: bool, i: &Index| i.index(if in_header { header_len } else { base.len() });
    match edit {
        Edit::Bytes(v) => {
            let mut out = base.to_vec();
            for (h, i, x, flip) in v {
                let p = pick(*h, i);
                if *flip {
                    out[p] ^= 1 << (x & 7);
                } else {
                    out[p] = *x;
                }
            }
            out
        }
        Edit::Truncate(h, i) => base[..pick(*h, i)].to_vec(),
    }
}

/// 256 seeded random corruptions of `base` written to `path`; `load` must give `Ok` or a typed
/// error, without panicking, within the memory and time bounds. Prints the counts.
fn fuzz(
    label: &str,
    base: &[u8],
    header_len: usize,
    path: &Path,
    load: &dyn Fn() -> Result<(), String>,
) {
    let config = Config {
        cases: 256,
        failure_persistence: None,
        max_shrink_iters: 256,
        ..Config::default()
    };
    let seed: [u8; 32] = *b"rl-models hostile_files fuzz 001";
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed));
    // loaded, typed errors, largest peak (RSS or allocation), slowest
    let stats = RefCell::new((0usize, 0usize, 0.0f64, 0.0f64));
    let t0 = Instant::now();
    let result = runner.run(&edit_strategy(), |edit| {
        fs::write(path, apply(base, header_len, &edit)).unwrap();
        let m = measure(load);
        let (worst, ms) = (m.worst_mib(), m.ms);
        let mut s = stats.borrow_mut();
        s.2 = s.2.max(worst);
        s.3 = s.3.max(ms);
        match m.value {
            Err(p) => {
                return Err(TestCaseError::fail(format!(
                    "panicked: {}",
                    panic_message(p.as_ref())
                )));
            }
            Ok(Ok(())) => s.0 += 1,
            Ok(Err(_)) => s.1 += 1,
        }
        prop_assert!(worst <= PEAK_BOUND_MIB, "peak memory growth {worst:.1} MiB");
        prop_assert!(ms <= CASE_TIME_LIMIT_S * 1e3, "took {ms:.0} ms");
        Ok(())
    });
    let (ok, err, peak, ms) = *stats.borrow();
    eprintln!(
        "fuzz {label}: {ok} loaded, {err} typed errors, 0 panics; largest peak (RSS or allocation) {peak:.2} MiB, \
         slowest {ms:.1} ms, {:.2} s in all",
        t0.elapsed().as_secs_f64()
    );
    if let Err(e) = result {
        panic!("fuzz {label}: {e}");
    }
}

#[test]
fn fuzzed_gguf_gives_ok_or_a_typed_error() {
    let _guard = serial();
    let b = Bases::new();
    let dir = b.case_dir("fuzz_gguf");
    let path = dir.join("model.gguf");
    let load = || -> Result<(), String> {
        let model = CausalLm::<Flex>::load(&path, &Default::default()).map(drop);
        let tok = Tokenizer::for_model(&path, None).map(drop);
        // Only the absence of a panic is asserted: each result is Ok or a ModelError.
        model.and(tok).map_err(|e| e.to_string())
    };
    fuzz("gguf", &b.gguf, b.doc.data_offset, &path, &load);
}

#[test]
fn fuzzed_safetensors_gives_ok_or_a_typed_error() {
    let _guard = serial();
    let b = Bases::new();
    let dir = b.case_dir("fuzz_safetensors");
    fs::write(dir.join("config.json"), &b.qwen_config).unwrap();
    let path = dir.join("model.safetensors");
    let load = || -> Result<(), String> {
        CausalLm::<Flex>::load(&dir, &Default::default())
            .map(drop)
            .map_err(|e| e.to_string())
    };
    fuzz(
        "safetensors",
        &b.qwen_st,
        8 + b.qwen_header_len,
        &path,
        &load,
    );
}
