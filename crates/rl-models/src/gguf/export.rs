//! GGUF export of a checkpoint (Qwen3, Llama, Qwen2, Gemma 3), for llama.cpp (`llama-server`) as a
//! rollout engine.
//!
//! The file is GGUF version 3: header, key/value metadata, tensor infos, then the tensor data,
//! each tensor aligned to 32 bytes. What llama.cpp's loader reads:
//! - architecture `qwen3`, `llama` or `qwen2` with `{arch}.{context_length, embedding_length, block_count,
//!   feed_forward_length, attention.head_count, attention.head_count_kv, attention.key_length,
//!   attention.value_length, attention.layer_norm_rms_epsilon, rope.freq_base}`;
//! - the tokenizer of `tokenizer.json` as llama.cpp's `gpt2` BPE model with the pre-tokenizer
//!   its `pre_tokenizer` is (`qwen2`, `llama-bpe` or `smollm`, [`super::vocab::pre_of_tokenizer_json`];
//!   others refused), bos added when its post-processor adds one: every id below the model's vocab size gets a token (ids the tokenizer does
//!   not define become `[PAD<id>]`, type unused), added special tokens are type control, other
//!   added tokens user-defined, merges as "a b" strings, eos / padding ids from `config.json`,
//!   and the chat template of `tokenizer_config.json` when there is one;
//! - tensors under llama.cpp's names (`token_embd`, `blk.N.attn_q`, …, `output_norm`, `output`;
//!   `output` is omitted for tied embeddings, which llama.cpp then reuses). A PyTorch `[out, in]`
//!   matrix is written with ggml dims `[in, out]` and the same bytes. Qwen's rotary embedding is
//!   the NeoX (rotate-half) kind in both; for Llama, llama.cpp expects the rows of `attn_q` and
//!   `attn_k` in its interleaved order (`families::llama::rows_to_gguf`).
//!
//! Checked end to end by `crates/rl-trainer/tests/llama_cpp.rs`: greedy continuations and
//! per-token log-probs of llama-server on the exported file against `rl-models`.

use std::io::{BufWriter, Write};
use std::path::Path;

use serde_json::Value;

use super::names::gguf_name;
use crate::ModelError;
use crate::decoder::{ModelConfig, expected_tensors};
use crate::families::{Family, llama};
use crate::safetensors_io::WeightFiles;

/// Tensor element type of the export.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GgufDtype {
    /// 32-bit float (exact).
    F32,
    /// IEEE half (norm weights stay f32, as llama.cpp's converter does).
    F16,
    /// bfloat16 (norm weights stay f32).
    Bf16,
}

rl_core::registry! {
    /// Valid values of [`GgufDtype`] (`--dtype` of `rlvr export-gguf`).
    pub const GGUF_DTYPE_NAMES;
    /// `f32`, `f16` or `bf16`.
    fn GgufDtype::from_name -> ModelError, kind "GGUF dtype" {
        "f32" => GgufDtype::F32,
        "f16" => GgufDtype::F16,
        "bf16" => GgufDtype::Bf16,
    }
}

impl GgufDtype {
    /// ggml type id.
    fn ggml_type(self) -> u32 {
        match self {
            GgufDtype::F32 => 0,
            GgufDtype::F16 => 1,
            GgufDtype::Bf16 => 30,
        }
    }

    /// `general.file_type` (llama_ftype).
    fn file_type(self) -> u32 {
        match self {
            GgufDtype::F32 => 0,
            GgufDtype::F16 => 1,
            GgufDtype::Bf16 => 32,
        }
    }
}

const ALIGNMENT: u64 = 32;

/// A metadata value.
#[derive(Debug)]
enum Kv {
    U32(u32),
    F32(f32),
    Bool(bool),
    Str(String),
    Strs(Vec<String>),
    I32s(Vec<i32>),
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend((s.len() as u64).to_le_bytes());
    out.extend(s.as_bytes());
}

impl Kv {
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Kv::U32(v) => {
                out.extend(4u32.to_le_bytes());
                out.extend(v.to_le_bytes());
            }
            Kv::F32(v) => {
                out.extend(6u32.to_le_bytes());
                out.extend(v.to_le_bytes());
            }
            Kv::Bool(v) => {
                out.extend(7u32.to_le_bytes());
                out.push(*v as u8);
            }
            Kv::Str(s) => {
                out.extend(8u32.to_le_bytes());
                put_str(out, s);
            }
            Kv::Strs(v) => {
                out.extend(9u32.to_le_bytes());
                out.extend(8u32.to_le_bytes());
                out.extend((v.len() as u64).to_le_bytes());
                for s in v {
                    put_str(out, s);
                }
            }
            Kv::I32s(v) => {
                out.extend(9u32.to_le_bytes());
                out.extend(5u32.to_le_bytes());
                out.extend((v.len() as u64).to_le_bytes());
                for x in v {
                    out.extend(x.to_le_bytes());
                }
            }
        }
    }
}

/// The tokenizer metadata from `tokenizer.json` (and `tokenizer_config.json`'s chat template).
fn tokenizer_kvs(dir: &Path, config: &ModelConfig) -> Result<Vec<(String, Kv)>, ModelError> {
    let read_json = |name: &str| -> Result<Option<Value>, ModelError> {
        let path = dir.join(name);
        if !path.exists() {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&path).map_err(|source| ModelError::Io {
            path: path.clone(),
            source,
        })?;
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| ModelError::InvalidInput(format!("{}: {e}", path.display())))
    };
    let tok = read_json("tokenizer.json")?.ok_or_else(|| {
        ModelError::InvalidInput(format!(
            "{}: no tokenizer.json (GGUF export needs the model's tokenizer)",
            dir.display()
        ))
    })?;
    let bad = |m: &str| ModelError::InvalidInput(format!("tokenizer.json: {m}"));
    let model = &tok["model"];
    if model["type"].as_str() != Some("BPE") {
        return Err(bad(
            "only byte-level BPE tokenizers (Qwen's) can be exported",
        ));
    }
    let n = config.vocab_size;
    let mut tokens: Vec<Option<String>> = vec![None; n];
    let mut types = vec![5i32; n]; // unused
    let vocab = model["vocab"]
        .as_object()
        .ok_or_else(|| bad("model.vocab is not a map"))?;
    for (t, id) in vocab {
        let id = id
            .as_u64()
            .ok_or_else(|| bad("a vocab id is not an integer"))? as usize;
        if id < n {
            tokens[id] = Some(t.clone());
            types[id] = 1; // normal
        }
    }
    for a in tok["added_tokens"].as_array().into_iter().flatten() {
        let (Some(id), Some(content)) = (a["id"].as_u64(), a["content"].as_str()) else {
            return Err(bad("an added token without id or content"));
        };
        let id = id as usize;
        if id < n {
            tokens[id] = Some(content.to_string());
            types[id] = if a["special"].as_bool().unwrap_or(false) {
                3
            } else {
                4
            };
        }
    }
    let tokens: Vec<String> = tokens
        .into_iter()
        .enumerate()
        .map(|(i, t)| t.unwrap_or_else(|| format!("[PAD{i}]")))
        .collect();
    let merges: Vec<String> = model["merges"]
        .as_array()
        .ok_or_else(|| bad("model.merges is missing"))?
        .iter()
        .map(|m| match m {
            Value::String(s) => Ok(s.clone()),
            Value::Array(p) if p.len() == 2 => match (p[0].as_str(), p[1].as_str()) {
                (Some(a), Some(b)) => Ok(format!("{a} {b}")),
                _ => Err(bad("a merge pair is not two strings")),
            },
            _ => Err(bad("a merge is neither \"a b\" nor [a, b]")),
        })
        .collect::<Result<_, _>>()?;
    let pre = super::vocab::pre_of_tokenizer_json(&tok).ok_or_else(|| {
        bad(&format!(
            "pre_tokenizer {} is none of llama.cpp's qwen2, llama-bpe or smollm",
            tok["pre_tokenizer"]
        ))
    })?;
    let mut kvs = vec![
        ("tokenizer.ggml.model", Kv::Str("gpt2".into())),
        ("tokenizer.ggml.pre", Kv::Str(pre.into())),
        ("tokenizer.ggml.tokens", Kv::Strs(tokens)),
        ("tokenizer.ggml.token_type", Kv::I32s(types)),
        ("tokenizer.ggml.merges", Kv::Strs(merges)),
        ("tokenizer.ggml.add_bos_token", Kv::Bool(adds_bos(&tok))),
    ];
    if let Some(&eos) = config.eos_token_id.first() {
        kvs.push(("tokenizer.ggml.eos_token_id", Kv::U32(eos)));
    }
    // Qwen pads with <|endoftext|>.
    let pad = vocab
        .get("<|endoftext|>")
        .and_then(Value::as_u64)
        .or_else(|| {
            tok["added_tokens"]
                .as_array()?
                .iter()
                .find(|a| a["content"].as_str() == Some("<|endoftext|>"))?["id"]
                .as_u64()
        });
    if let Some(p) = pad {
        kvs.push(("tokenizer.ggml.padding_token_id", Kv::U32(p as u32)));
    }
    if let Some(b) = config.bos_token_id {
        kvs.push(("tokenizer.ggml.bos_token_id", Kv::U32(b)));
    }
    let mut kvs: Vec<(String, Kv)> = kvs.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    if let Some(c) = read_json("tokenizer_config.json")? {
        let templates = chat_template_kvs(&c["chat_template"]).map_err(|m| {
            ModelError::InvalidInput(format!(
                "{}: {m}",
                dir.join("tokenizer_config.json").display()
            ))
        })?;
        kvs.extend(templates);
    }
    Ok(kvs)
}

/// The `tokenizer.chat_template*` keys of a `tokenizer_config.json`'s `chat_template`, as
/// llama.cpp's gguf-py (`GGUFWriter.add_chat_template`) writes them: a string as
/// `tokenizer.chat_template`; from a list of `{name, template}`, each named template but
/// `default` as `tokenizer.chat_template.<name>` (characters of the name other than ASCII
/// letters and digits written `_`; an entry without a name or a template is skipped), their
/// names as the array `tokenizer.chat_templates`, and `default`'s as `tokenizer.chat_template`.
/// A name given twice, an entry that is not an object and any other type are errors.
fn chat_template_kvs(value: &Value) -> Result<Vec<(String, Kv)>, String> {
    let list = match value {
        Value::Null => return Ok(Vec::new()),
        Value::String(s) => {
            return Ok(vec![("tokenizer.chat_template".into(), Kv::Str(s.clone()))]);
        }
        Value::Array(list) => list,
        _ => {
            return Err(
                "`chat_template` is neither a string nor a list of {name, template}".into(),
            );
        }
    };
    let (mut kvs, mut names, mut default) = (Vec::new(), Vec::<String>::new(), None);
    for (i, choice) in list.iter().enumerate() {
        let Some(entry) = choice.as_object() else {
            return Err(format!(
                "`chat_template[{i}]` is not an object {{name, template}}"
            ));
        };
        let name: String = entry
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let template = match entry.get("template") {
            None | Some(Value::Null) => continue,
            Some(Value::String(t)) => t.clone(),
            Some(_) => return Err(format!("`chat_template[{i}].template` is not a string")),
        };
        if name.is_empty() {
            continue;
        }
        if names.contains(&name) || (name == "default" && default.is_some()) {
            return Err(format!("`chat_template` names the template `{name}` twice"));
        }
        if name == "default" {
            default = Some(template);
        } else {
            kvs.push((format!("tokenizer.chat_template.{name}"), Kv::Str(template)));
            names.push(name);
        }
    }
    if !names.is_empty() {
        kvs.push(("tokenizer.chat_templates".into(), Kv::Strs(names)));
    }
    if let Some(d) = default {
        kvs.push(("tokenizer.chat_template".into(), Kv::Str(d)));
    }
    Ok(kvs)
}

/// Whether the tokenizer puts a token before every text: its post-processor is a template
/// whose single-sequence form starts with a special token (Llama 3's `<|begin_of_text|>`).
fn adds_bos(tok: &Value) -> bool {
    let post = &tok["post_processor"];
    let templates = match post["type"].as_str() {
        Some("Sequence") => post["processors"].as_array().cloned().unwrap_or_default(),
        _ => vec![post.clone()],
    };
    templates.iter().any(|p| {
        p["type"].as_str() == Some("TemplateProcessing")
            && p["single"][0].get("SpecialToken").is_some()
    })
}

/// Writes `model_dir` (HF `config.json`, `*.safetensors`, `tokenizer.json`) as a GGUF file.
pub fn export_gguf(model_dir: &Path, out: &Path, dtype: GgufDtype) -> Result<(), ModelError> {
    let config = ModelConfig::from_file(model_dir.join("config.json"))?;
    let files = WeightFiles::open(model_dir)?;
    let u = |x: usize| Kv::U32(x as u32);
    let arch = config.family.gguf_architecture();
    let key = |k: &str| format!("{arch}.{k}");
    let mut kvs: Vec<(String, Kv)> = vec![
        ("general.architecture".into(), Kv::Str(arch.into())),
        ("general.name".into(), Kv::Str("rlvr export".into())),
        ("general.file_type".into(), Kv::U32(dtype.file_type())),
        ("general.alignment".into(), Kv::U32(ALIGNMENT as u32)),
        (key("context_length"), u(config.max_position_embeddings)),
        (key("embedding_length"), u(config.hidden_size)),
        (key("block_count"), u(config.num_hidden_layers)),
        (key("feed_forward_length"), u(config.intermediate_size)),
        (key("attention.head_count"), u(config.num_attention_heads)),
        (
            key("attention.head_count_kv"),
            u(config.num_key_value_heads),
        ),
        (key("attention.key_length"), u(config.head_dim)),
        (key("attention.value_length"), u(config.head_dim)),
        (key("rope.dimension_count"), u(config.head_dim)),
        (
            key("attention.layer_norm_rms_epsilon"),
            Kv::F32(config.rms_norm_eps as f32),
        ),
        (key("rope.freq_base"), Kv::F32(config.rope_theta as f32)),
    ];
    if config.family == Family::Gemma3 {
        kvs.push((
            key("attention.sliding_window"),
            u(gemma3_layout_for_llama_cpp(&config, model_dir)?),
        ));
    }
    if config.rope_scaling.is_some() {
        return Err(ModelError::InvalidInput(format!(
            "{}: GGUF export of llama3 rope scaling (llama.cpp's rope_freqs tensor) is not supported",
            model_dir.display()
        )));
    }
    kvs.extend(tokenizer_kvs(model_dir, &config)?);

    // Tensor infos and payloads, in HF order.
    let tensors = expected_tensors(&config);
    let mut infos = Vec::new();
    let mut offset = 0u64;
    let mut plan = Vec::with_capacity(tensors.len());
    for (hf, shape) in &tensors {
        let name = gguf_name(config.family, hf)
            .ok_or_else(|| ModelError::InvalidInput(format!("no GGUF name for `{hf}`")))?;
        // Norm weights (1-D) stay f32, as llama.cpp's converter keeps them.
        let ty = if shape.len() == 1 {
            GgufDtype::F32
        } else {
            dtype
        };
        let elems: usize = shape.iter().product();
        let bytes = (elems * if ty == GgufDtype::F32 { 4 } else { 2 }) as u64;
        put_str(&mut infos, &name);
        infos.extend((shape.len() as u32).to_le_bytes());
        for d in shape.iter().rev() {
            infos.extend((*d as u64).to_le_bytes());
        }
        infos.extend(ty.ggml_type().to_le_bytes());
        infos.extend(offset.to_le_bytes());
        plan.push((hf.clone(), ty, offset));
        offset = (offset + bytes).div_ceil(ALIGNMENT) * ALIGNMENT;
    }

    let mut head = Vec::new();
    head.extend(b"GGUF");
    head.extend(3u32.to_le_bytes());
    head.extend((tensors.len() as u64).to_le_bytes());
    head.extend((kvs.len() as u64).to_le_bytes());
    for (k, v) in &kvs {
        put_str(&mut head, k);
        v.write(&mut head);
    }
    head.extend(infos);
    let pad_to = |len: u64| (len.div_ceil(ALIGNMENT) * ALIGNMENT - len) as usize;
    head.extend(vec![0u8; pad_to(head.len() as u64)]);

    let io = |source| ModelError::Io {
        path: out.to_path_buf(),
        source,
    };
    let tmp = out.with_extension("gguf.tmp");
    let file = std::fs::File::create(&tmp).map_err(io)?;
    let mut w = BufWriter::new(file);
    w.write_all(&head).map_err(io)?;
    let mut written = 0u64;
    for (hf, ty, off) in plan {
        w.write_all(&vec![0u8; (off - written) as usize])
            .map_err(io)?;
        let data = files.read_f32(&hf)?;
        let data = match (config.family, qk_heads(&config, &hf)) {
            (Family::Llama, Some(heads)) => {
                let cols = if hf.ends_with(".bias") {
                    1
                } else {
                    config.hidden_size
                };
                llama::rows_to_gguf(&data, heads, cols)
            }
            // llama.cpp's converter stores Gemma's norm scales as `1 + w`.
            (Family::Gemma3, _) if hf.ends_with("norm.weight") => {
                data.iter().map(|w| w + 1.0).collect()
            }
            _ => data,
        };
        let mut buf = Vec::with_capacity(data.len() * 4);
        match ty {
            GgufDtype::F32 => data.iter().for_each(|x| buf.extend(x.to_le_bytes())),
            GgufDtype::F16 => data
                .iter()
                .for_each(|x| buf.extend(half::f16::from_f32(*x).to_le_bytes())),
            GgufDtype::Bf16 => data
                .iter()
                .for_each(|x| buf.extend(half::bf16::from_f32(*x).to_le_bytes())),
        }
        w.write_all(&buf).map_err(io)?;
        written = off + buf.len() as u64;
    }
    w.flush().map_err(io)?;
    drop(w);
    std::fs::rename(&tmp, out).map_err(io)
}

/// The sliding window of a Gemma 3 config, after checking that llama.cpp's gemma3 loader
/// computes the same model: it takes every sixth layer as global, the local layers' RoPE base as
/// 10000 and the attention scale as `1/√head_dim` (for a model that is not the 27B's 62 blocks),
/// none of which the file can say otherwise.
fn gemma3_layout_for_llama_cpp(config: &ModelConfig, dir: &Path) -> Result<usize, ModelError> {
    let refuse = |what: String| {
        Err(ModelError::InvalidInput(format!(
            "{}: llama.cpp's gemma3 loader cannot compute this model ({what})",
            dir.display()
        )))
    };
    let Some(w) = &config.sliding_window else {
        return refuse("no sliding-window layers; llama.cpp makes every sixth layer global".into());
    };
    let six = crate::decoder::SlidingWindow::every(6, config.num_hidden_layers, w.size, 10_000.0);
    if w.local_layers != six.local_layers {
        return refuse("its global layers are not every sixth one".into());
    }
    if w.rope_theta != 10_000.0 {
        return refuse(format!("local RoPE base {} instead of 10000", w.rope_theta));
    }
    let scalar = config
        .query_pre_attn_scalar
        .unwrap_or(config.head_dim as f64);
    let llama_cpp = if config.num_hidden_layers == 62 {
        config.hidden_size as f64 / config.num_attention_heads as f64
    } else {
        config.head_dim as f64
    };
    if scalar != llama_cpp {
        return refuse(format!(
            "query_pre_attn_scalar {scalar} instead of the {llama_cpp} llama.cpp assumes"
        ));
    }
    Ok(w.size)
}

/// The head count of a q or k projection tensor (weight or bias), `None` for other tensors.
fn qk_heads(config: &ModelConfig, hf: &str) -> Option<usize> {
    if hf.contains(".self_attn.q_proj.") {
        Some(config.num_attention_heads)
    } else if hf.contains(".self_attn.k_proj.") {
        Some(config.num_key_value_heads)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtype_names_are_checked() {
        assert!(GgufDtype::from_name("q4").is_err());
        assert_eq!(GgufDtype::from_name("bf16").unwrap(), GgufDtype::Bf16);
    }

    /// The keys and values llama.cpp's gguf-py writes for each `chat_template` of the fixture
    /// (`tools/gguf/gen_chat_template_kvs.py`: `GGUFWriter.add_chat_template`, read back with
    /// `GGUFReader`), in its order.
    #[test]
    fn chat_templates_are_written_as_gguf_py_writes_them() {
        let text = std::fs::read_to_string(
            crate::crate_dir().join("tests/fixtures/gguf/chat_template_kvs.json"),
        )
        .unwrap();
        let fixture: Value = serde_json::from_str(&text).unwrap();
        let cases = fixture["cases"].as_array().unwrap();
        assert_eq!(cases.len(), 5);
        for case in cases {
            let got: Vec<(String, Value)> = chat_template_kvs(&case["chat_template"])
                .unwrap()
                .into_iter()
                .map(|(k, v)| match v {
                    Kv::Str(s) => (k, Value::from(s)),
                    Kv::Strs(s) => (k, Value::from(s)),
                    _ => panic!("{k}: not a string or a string array"),
                })
                .collect();
            let want: Vec<(String, Value)> = case["keys"]
                .as_array()
                .unwrap()
                .iter()
                .map(|kv| (kv[0].as_str().unwrap().to_string(), kv[1].clone()))
                .collect();
            assert_eq!(got, want, "{}", case["name"]);
        }
    }

    #[test]
    fn malformed_chat_templates_are_refused_by_name() {
        let err = |v: Value| chat_template_kvs(&v).unwrap_err();
        assert!(err(serde_json::json!(3)).contains("neither a string nor a list"));
        assert!(err(serde_json::json!(["x"])).contains("`chat_template[0]` is not an object"));
        assert!(
            err(serde_json::json!([{"name": "a", "template": 1}]))
                .contains("`chat_template[0].template` is not a string")
        );
        let twice = serde_json::json!([
            {"name": "tool use", "template": "A"},
            {"name": "tool_use", "template": "B"}
        ]);
        assert!(err(twice).contains("`tool_use` twice"));
        assert!(chat_template_kvs(&Value::Null).unwrap().is_empty());
    }
}
