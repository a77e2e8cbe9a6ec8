//! Qwen3 on burn against HF transformers.
//!
//! Every reference value comes from `tools/gen_qwen3_fixtures.py` (HF transformers 5.24, torch
//! 2.15, float32, eager attention), committed under `tests/fixtures/`; the real-tokenizer test
//! reads the official Qwen3 `tokenizer.json` installed by `scripts/fetch-qwen3-tokenizer.sh` and
//! checks the ids listed in issue 4 / `docs/models.md`.

use std::path::{Path, PathBuf};

use burn::backend::{Autodiff, Flex};
use burn::module::{AutodiffModule, Module};
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};
use rl_models::{
    AttentionMask, CausalLm, ChatMessage, Checkpointing, ComputeDtype, EntropyMode, FinishReason,
    GenerationConfig, MemoryPlan, ModelConfig, ModelError, SaveDtype, Tokenizer, generate,
    render_chat,
};
use safetensors::{Dtype, SafeTensors};
use serde_json::Value;

type B = Flex;

/// The fixture models: Qwen3 (`tools/gen_qwen3_fixtures.py`), Llama and Qwen2
/// (`tools/gen_llama_fixtures.py`), Gemma 3 (`tools/gen_gemma3_fixtures.py`).
const MODELS: [&str; 9] = [
    "tied_bf16",
    "untied_f16_sharded",
    "wide_f32_hub",
    "llama_tied_gqa",
    "llama_untied_rope3",
    "llama_bias",
    "qwen2_bias",
    "gemma3_mqa",
    "gemma3_gqa_hub",
];
const LOGIT_TOL: f32 = 1e-4;

// The checkout this test runs from (cargo sets CARGO_MANIFEST_DIR when it runs a test); the
// compile-time value can name another checkout when a build cache is shared between clones.
fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

fn fixtures() -> PathBuf {
    manifest_dir().join("tests/fixtures")
}

fn device() -> burn::tensor::Device<B> {
    Default::default()
}

/// `reference.safetensors` + `reference.json` of one fixture model.
struct Reference {
    bytes: Vec<u8>,
    json: Value,
}

impl Reference {
    fn load(model: &str) -> Self {
        Self::load_file(model, "reference.safetensors")
    }

    /// `file` of the fixture (`bf16_reference.safetensors`: tools/gen_bf16_fixture.py) with
    /// the fixture's reference.json.
    fn load_file(model: &str, file: &str) -> Self {
        let dir = fixtures().join(model);
        let bytes = std::fs::read(dir.join(file))
            .expect("fixtures from tools/gen_qwen3_fixtures.py and tools/gen_bf16_fixture.py");
        let json = serde_json::from_str(
            &std::fs::read_to_string(dir.join("reference.json")).expect("reference.json"),
        )
        .expect("reference.json parses");
        Self { bytes, json }
    }

    fn has(&self, name: &str) -> bool {
        SafeTensors::deserialize(&self.bytes)
            .unwrap()
            .tensor(name)
            .is_ok()
    }

    fn f32(&self, name: &str) -> (Vec<usize>, Vec<f32>) {
        let st = SafeTensors::deserialize(&self.bytes).unwrap();
        let t = st.tensor(name).unwrap_or_else(|_| panic!("fixture {name}"));
        assert_eq!(t.dtype(), Dtype::F32);
        let v = t
            .data()
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        (t.shape().to_vec(), v)
    }

    fn i64(&self, name: &str) -> (Vec<usize>, Vec<i64>) {
        let st = SafeTensors::deserialize(&self.bytes).unwrap();
        let t = st.tensor(name).unwrap_or_else(|_| panic!("fixture {name}"));
        assert_eq!(t.dtype(), Dtype::I64);
        let v = t
            .data()
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        (t.shape().to_vec(), v)
    }

    fn num_seqs(&self) -> usize {
        (0..)
            .take_while(|i| self.has(&format!("seq{i}.ids")))
            .count()
    }

    fn ids_list(&self, key: &str) -> Vec<Vec<u32>> {
        self.json[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| {
                row.as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_u64().unwrap() as u32)
                    .collect()
            })
            .collect()
    }
}

fn int_tensor<Bk: Backend>(ids: &[i64], shape: [usize; 2], dev: &Bk::Device) -> Tensor<Bk, 2, Int> {
    Tensor::from_data(TensorData::new(ids.to_vec(), shape), dev)
}

fn to_vec<Bk: Backend, const D: usize>(t: Tensor<Bk, D>) -> Vec<f32> {
    t.into_data().convert::<f32>().into_vec::<f32>().unwrap()
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

fn load(model: &str) -> CausalLm<B> {
    CausalLm::<B>::load(fixtures().join(model), &device()).unwrap()
}

/// The backend-generic tests (`suite/qwen3.rs`), instantiated per backend (as in `rl-loss`):
/// always on the CPU (`flex`), and on wgpu / CUDA with `--features wgpu` / `--features cuda`.
macro_rules! backend_suite {
    ($name:ident, $backend:ty, $device:expr, tol: $tol:expr, grad_tol: $grad_tol:expr, exact: $exact:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            type AD = $backend;
            type B = <AD as burn::tensor::backend::AutodiffBackend>::InnerBackend;
            fn dev() -> burn::tensor::Device<AD> {
                $device
            }
            const TOL: f32 = $tol;
            const GRAD_TOL: f32 = $grad_tol;
            fn exact() -> bool {
                $exact
            }
            include!("suite/qwen3.rs");
        }
    };
}

/// Bit-exact batch composition on the CPU only where gemm takes one kernel for every product:
/// with AVX-512, products with fewer than 16 rows take the AVX2 kernels (third_party/PATCHED.md).
fn cpu_kernels_batch_invariant() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        !std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        true
    }
}

backend_suite!(
    cpu,
    Autodiff<Flex>,
    Default::default(),
    tol: LOGIT_TOL,
    grad_tol: 2e-5,
    exact: super::cpu_kernels_batch_invariant()
);
#[cfg(feature = "wgpu")]
backend_suite!(
    wgpu,
    Autodiff<burn::backend::Wgpu>,
    burn::backend::wgpu::WgpuDevice::DefaultDevice,
    tol: 2e-4,
    grad_tol: 1e-3,
    exact: false
);
#[cfg(feature = "cuda")]
backend_suite!(
    cuda,
    Autodiff<burn::backend::Cuda>,
    burn::backend::cuda::CudaDevice::new(0),
    tol: 2e-4,
    grad_tol: 1e-3,
    exact: false
);

fn mask_from(r: &Reference, side: &str) -> (Vec<usize>, Vec<i64>, AttentionMask) {
    let (shape, ids) = r.i64(&format!("{side}.ids"));
    let (_, m) = r.i64(&format!("{side}.mask"));
    let mask = AttentionMask::new(shape[0], shape[1], m.iter().map(|&x| x == 1).collect()).unwrap();
    (shape, ids, mask)
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rl-models-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn params_bits<Bk: Backend>(m: &CausalLm<Bk>) -> Vec<(String, Vec<usize>, Vec<u32>)> {
    m.hf_tensors()
        .unwrap()
        .into_iter()
        .map(|(n, s, v)| (n, s, v.iter().map(|x| x.to_bits()).collect()))
        .collect()
}

#[test]
fn save_load_round_trip_is_bit_exact() {
    for model in MODELS {
        let m = load(model);
        let dir = temp_dir(&format!("roundtrip-{model}"));
        m.save(&dir).unwrap();
        let back = CausalLm::<B>::load(&dir, &device()).unwrap();
        assert_eq!(back.config(), &m.config().clone().with_dtype("float32"));
        assert_eq!(params_bits(&back), params_bits(&m), "{model} f32");
        // bf16, sharded: the fixtures hold bf16/f16 values, so bf16 is exact for tied_bf16
        let dir2 = temp_dir(&format!("roundtrip-bf16-{model}"));
        m.save_with(&dir2, SaveDtype::Bf16, Some(40_000)).unwrap();
        assert!(dir2.join("model.safetensors.index.json").is_file());
        let back2 = CausalLm::<B>::load(&dir2, &device()).unwrap();
        if model == "tied_bf16" {
            assert_eq!(params_bits(&back2), params_bits(&m));
        } else {
            for ((_, _, a), (_, _, b)) in back2
                .hf_tensors()
                .unwrap()
                .into_iter()
                .zip(m.hf_tensors().unwrap())
            {
                assert!(
                    max_abs_diff(&a, &b) <= b.iter().fold(0.0f32, |x, y| x.max(y.abs())) / 128.0
                );
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&dir2);
    }
}

trait WithDtype {
    fn with_dtype(self, d: &str) -> Self;
}

impl WithDtype for ModelConfig {
    fn with_dtype(mut self, d: &str) -> Self {
        self.torch_dtype = Some(d.to_string());
        self
    }
}

/// The RoPE frequencies each fixture model computes with equal HF's `inv_freq` (stored by
/// `tools/gen_llama_fixtures.py`; `llama_untied_rope3` has `llama3` scaling with all three of
/// its bands in use), within one f32 ulp (`powf` against PyTorch's `pow`).
#[test]
fn rope_frequencies_match_hf() {
    for model in MODELS {
        let r = Reference::load(model);
        if !r.has("rope.inv_freq") {
            continue;
        }
        let (_, want) = r.f32("rope.inv_freq");
        let got = load(model).config().rope_frequencies();
        assert_eq!(got.len(), want.len(), "{model}");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let ulps = (g.to_bits() as i64 - w.to_bits() as i64).abs();
            assert!(ulps <= 1, "{model} inv_freq[{i}]: {g} vs HF {w}");
        }
    }
}

/// Partial Llama and Qwen2 `config.json` files resolve to what transformers' `LlamaConfig` /
/// `Qwen2Config` make of them (`config_cases_llama.json`): the defaults, the bias flags HF
/// builds, both rope spellings, HF's inverse frequencies; the cases HF builds although the
/// model is invalid (`valid: false`, KV heads not dividing the heads) are refused.
#[test]
fn llama_and_qwen2_configs_follow_hf_defaults() {
    let cases: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("config_cases_llama.json")).unwrap(),
    )
    .unwrap();
    for case in cases["cases"].as_array().unwrap() {
        let mut input = case["input"].clone();
        input["model_type"] = case["family"].clone();
        let parsed = ModelConfig::from_json_value(&input);
        if !case["valid"].as_bool().unwrap() {
            assert!(parsed.is_err(), "{input} should be refused");
            continue;
        }
        let cfg = parsed.unwrap_or_else(|e| panic!("{input}: {e}"));
        let res = &case["resolved"];
        let got = cfg.to_json_value();
        for field in [
            "vocab_size",
            "hidden_size",
            "intermediate_size",
            "num_hidden_layers",
            "num_attention_heads",
            "num_key_value_heads",
            "head_dim",
            "max_position_embeddings",
            "tie_word_embeddings",
            "rms_norm_eps",
            "bos_token_id",
        ] {
            assert_eq!(got[field], res[field], "{field} of {input}");
        }
        let eos: Vec<u32> = res["eos_token_id"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect();
        assert_eq!(cfg.eos_token_id, eos, "eos of {input}");
        assert_eq!(cfg.qkv_bias, res["q_bias"].as_bool().unwrap(), "{input}");
        assert_eq!(cfg.o_bias, res["o_bias"].as_bool().unwrap(), "{input}");
        assert_eq!(
            cfg.rope_scaling.is_some(),
            res["rope_type"] == "llama3",
            "{input}"
        );
        let want: Vec<f32> = res["inv_freq"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect();
        let got = cfg.rope_frequencies();
        for (g, w) in got.iter().zip(&want) {
            let ulps = (g.to_bits() as i64 - w.to_bits() as i64).abs();
            assert!(ulps <= 1, "{input}: inv_freq {g} vs HF {w}");
        }
        assert_eq!(got.len(), want.len());
        // the config written back reads the same
        assert_eq!(
            ModelConfig::from_json_value(&cfg.to_json_value()).unwrap(),
            cfg
        );
    }
}

#[test]
fn parameter_counts_match_hf() {
    for model in MODELS {
        let m = load(model);
        let r = Reference::load(model);
        let want = r.json["num_parameters"].as_u64().unwrap() as usize;
        assert_eq!(m.num_params(), want, "{model}");
        assert_eq!(m.config().num_parameters(), want, "{model}");
    }
    let presets: Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("presets.json")).unwrap())
            .unwrap();
    for (name, cfg) in [
        ("qwen3_0_6b", ModelConfig::qwen3_0_6b()),
        ("qwen3_1_7b", ModelConfig::qwen3_1_7b()),
        ("qwen3_4b", ModelConfig::qwen3_4b()),
        ("qwen3_8b", ModelConfig::qwen3_8b()),
    ] {
        let p = &presets[name];
        assert_eq!(
            cfg.num_parameters() as u64,
            p["num_parameters"].as_u64().unwrap(),
            "{name}"
        );
        for field in [
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "num_key_value_heads",
            "head_dim",
            "intermediate_size",
        ] {
            assert_eq!(cfg.to_json_value()[field], p[field], "{name}.{field}");
        }
        assert_eq!(
            cfg.tie_word_embeddings,
            p["tie_word_embeddings"].as_bool().unwrap()
        );
    }
}

#[test]
fn config_parsing_follows_hf_defaults_and_both_styles() {
    let cases: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("config_cases.json")).unwrap(),
    )
    .unwrap();
    for case in cases["cases"].as_array().unwrap() {
        let cfg = ModelConfig::from_json_value(&case["input"]).unwrap();
        let res = &case["resolved"];
        let got = cfg.to_json_value();
        for field in [
            "vocab_size",
            "hidden_size",
            "intermediate_size",
            "num_hidden_layers",
            "num_attention_heads",
            "num_key_value_heads",
            "head_dim",
            "max_position_embeddings",
            "tie_word_embeddings",
        ] {
            assert_eq!(got[field], res[field], "{field} of {}", case["input"]);
        }
        assert_eq!(cfg.rope_theta, res["rope_theta"].as_f64().unwrap());
        assert_eq!(cfg.rms_norm_eps, res["rms_norm_eps"].as_f64().unwrap());
        let eos: Vec<u32> = res["eos_token_id"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect();
        assert_eq!(cfg.eos_token_id, eos);
        // serde goes through the same parser, and to_json_value round-trips
        let via_serde: ModelConfig = serde_json::from_value(case["input"].clone()).unwrap();
        assert_eq!(via_serde, cfg);
        assert_eq!(
            ModelConfig::from_json_value(&cfg.to_json_value()).unwrap(),
            cfg
        );
    }
    // The Hub-style (transformers 4.51) and the transformers-5 fixture configs.
    let hub = ModelConfig::from_file(fixtures().join("wide_f32_hub")).unwrap();
    assert_eq!(hub.rope_theta, 1_000_000.0);
    assert_eq!(hub.torch_dtype.as_deref(), Some("float32"));
    let new = ModelConfig::from_file(fixtures().join("tied_bf16/config.json")).unwrap();
    assert_eq!(new.rope_theta, 10_000.0);
    assert_eq!(new.torch_dtype.as_deref(), Some("bfloat16"));
}

fn base_config() -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("tied_bf16/config.json")).unwrap(),
    )
    .unwrap()
}

fn config_error(v: Value) -> (&'static str, String) {
    match ModelConfig::from_json_value(&v) {
        Err(ModelError::InvalidConfig {
            field, expected, ..
        }) => (field, expected),
        other => panic!("expected InvalidConfig, got {other:?}"),
    }
}

#[test]
fn bad_config_fields_are_named() {
    let with = |k: &str, v: Value| {
        let mut c = base_config();
        c[k] = v;
        c
    };
    let cases = [
        (
            with("use_sliding_window", Value::Bool(true)),
            "use_sliding_window",
        ),
        (
            with("hidden_size", Value::String("64".into())),
            "hidden_size",
        ),
        (
            with(
                "rope_scaling",
                serde_json::json!({"rope_type": "yarn", "factor": 4.0}),
            ),
            "rope_scaling",
        ),
        (
            with(
                "rope_parameters",
                serde_json::json!({"rope_type": "linear", "rope_theta": 1e4}),
            ),
            "rope_parameters",
        ),
        (
            with("num_key_value_heads", Value::from(3)),
            "num_key_value_heads",
        ),
        (with("head_dim", Value::from(15)), "head_dim"),
        (
            with("hidden_act", Value::String("gelu".into())),
            "hidden_act",
        ),
        (with("attention_bias", Value::Bool(true)), "attention_bias"),
        (
            with(
                "layer_types",
                serde_json::json!(["sliding_attention", "full_attention"]),
            ),
            "layer_types",
        ),
        (
            with("model_type", Value::String("mistral".into())),
            "model_type",
        ),
        (with("rms_norm_eps", Value::from(-1.0)), "rms_norm_eps"),
        (with("eos_token_id", Value::from(-3)), "eos_token_id"),
    ];
    for (cfg, field) in cases {
        let (got, expected) = config_error(cfg);
        assert_eq!(got, field);
        assert!(!expected.is_empty());
    }
    let mut c = base_config();
    c.as_object_mut().unwrap().remove("vocab_size");
    assert_eq!(config_error(c).0, "vocab_size");
    assert!(matches!(
        ModelConfig::from_json_str("{not json"),
        Err(ModelError::Json { .. })
    ));
}

/// Writes `tensors` (HF names, f32 unless another dtype is given) as one safetensors file.
fn write_file(path: &Path, tensors: &[(String, Dtype, Vec<usize>, Vec<u8>)]) {
    let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = tensors
        .iter()
        .map(|(n, d, s, b)| {
            (
                n.clone(),
                safetensors::tensor::TensorView::new(*d, s.clone(), b).unwrap(),
            )
        })
        .collect();
    safetensors::serialize_to_file(views, None, path).unwrap();
}

fn f32_tensors(m: &CausalLm<B>) -> Vec<(String, Dtype, Vec<usize>, Vec<u8>)> {
    m.hf_tensors()
        .unwrap()
        .into_iter()
        .map(|(n, s, v)| {
            (
                n,
                Dtype::F32,
                s,
                v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            )
        })
        .collect()
}

/// A model dir with the tied fixture's config and the given tensors.
fn broken_model(name: &str, tensors: &[(String, Dtype, Vec<usize>, Vec<u8>)]) -> PathBuf {
    let dir = temp_dir(name);
    std::fs::copy(
        fixtures().join("tied_bf16/config.json"),
        dir.join("config.json"),
    )
    .unwrap();
    write_file(&dir.join("model.safetensors"), tensors);
    dir
}

#[test]
fn loader_errors_name_the_tensor() {
    let m = load("tied_bf16");
    let good = f32_tensors(&m);
    let dev = device();
    let load_err = |dir: &Path| CausalLm::<B>::load(dir, &dev).unwrap_err();

    // missing
    let t: Vec<_> = good
        .iter()
        .filter(|t| t.0 != "model.norm.weight")
        .cloned()
        .collect();
    let dir = broken_model("missing", &t);
    assert!(
        matches!(load_err(&dir), ModelError::MissingTensor { tensor, .. } if tensor == "model.norm.weight")
    );

    // extra
    let mut t = good.clone();
    t.push((
        "model.layers.0.self_attn.q_proj.bias".into(),
        Dtype::F32,
        vec![64],
        vec![0; 256],
    ));
    let dir = broken_model("extra", &t);
    assert!(
        matches!(load_err(&dir), ModelError::UnexpectedTensor { tensor, .. } if tensor == "model.layers.0.self_attn.q_proj.bias")
    );

    // wrong shape
    let mut t = good.clone();
    let k = t
        .iter()
        .position(|t| t.0 == "model.layers.1.self_attn.k_norm.weight")
        .unwrap();
    t[k].2 = vec![8, 2];
    let dir = broken_model("shape", &t);
    assert!(
        matches!(load_err(&dir), ModelError::ShapeMismatch { tensor, expected, found, .. }
        if tensor == "model.layers.1.self_attn.k_norm.weight" && expected == vec![16] && found == vec![8, 2])
    );

    // wrong dtype (same byte size)
    let mut t = good.clone();
    t[k].1 = Dtype::I32;
    let dir = broken_model("dtype", &t);
    assert!(
        matches!(load_err(&dir), ModelError::UnsupportedDtype { tensor, .. } if tensor == "model.layers.1.self_attn.k_norm.weight")
    );

    // a tied model may carry lm_head.weight, but with the embedding's shape
    let mut t = good.clone();
    t.push((
        "lm_head.weight".into(),
        Dtype::F32,
        vec![128, 63],
        vec![0; 128 * 63 * 4],
    ));
    let dir = broken_model("tied-head", &t);
    assert!(
        matches!(load_err(&dir), ModelError::ShapeMismatch { tensor, .. } if tensor == "lm_head.weight")
    );

    // non-finite value
    let mut t = good.clone();
    t[k].3[0..4].copy_from_slice(&f32::NAN.to_le_bytes());
    let dir = broken_model("nan", &t);
    assert!(
        matches!(load_err(&dir), ModelError::NonFiniteWeight { tensor, .. } if tensor == "model.layers.1.self_attn.k_norm.weight")
    );

    // truncated: the error names the last tensor in the file (by offset)
    let dir = broken_model("truncated", &good);
    let file = dir.join("model.safetensors");
    let bytes = std::fs::read(&file).unwrap();
    let (_, meta) = SafeTensors::read_metadata(&bytes).unwrap();
    let last = meta.offset_keys().last().unwrap().clone();
    std::fs::write(&file, &bytes[..bytes.len() - 10]).unwrap();
    assert!(
        matches!(load_err(&dir), ModelError::Truncated { tensor, needed, available, .. }
        if tensor == last && needed == available + 10)
    );
    // truncated inside the header, and trailing garbage
    std::fs::write(&file, &bytes[..20]).unwrap();
    assert!(matches!(
        load_err(&dir),
        ModelError::InvalidSafetensors { .. }
    ));
    let mut longer = bytes.clone();
    longer.extend_from_slice(&[0; 3]);
    std::fs::write(&file, &longer).unwrap();
    assert!(matches!(
        load_err(&dir),
        ModelError::TrailingBytes { extra: 3, .. }
    ));

    // bad config
    std::fs::write(&file, &bytes).unwrap();
    let mut c = base_config();
    c["use_sliding_window"] = Value::Bool(true);
    std::fs::write(dir.join("config.json"), c.to_string()).unwrap();
    assert!(matches!(
        load_err(&dir),
        ModelError::InvalidConfig {
            field: "use_sliding_window",
            ..
        }
    ));

    // no weights
    let empty = temp_dir("empty");
    std::fs::copy(
        fixtures().join("tied_bf16/config.json"),
        empty.join("config.json"),
    )
    .unwrap();
    assert!(matches!(load_err(&empty), ModelError::NoWeights { .. }));

    // shard index that disagrees with the shards
    let sharded = temp_dir("bad-index");
    for f in std::fs::read_dir(fixtures().join("untied_f16_sharded")).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, sharded.join(f.file_name().unwrap())).unwrap();
    }
    let idx_path = sharded.join("model.safetensors.index.json");
    let mut idx: Value =
        serde_json::from_str(&std::fs::read_to_string(&idx_path).unwrap()).unwrap();
    let map = idx["weight_map"].as_object_mut().unwrap();
    let (name, file) = map
        .iter()
        .next()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
        .unwrap();
    let other = map
        .values()
        .map(|v| v.as_str().unwrap().to_string())
        .find(|v| *v != file)
        .unwrap();
    map.insert(name.clone(), Value::String(other));
    std::fs::write(&idx_path, idx.to_string()).unwrap();
    assert!(
        matches!(load_err(&sharded), ModelError::ShardMismatch { tensor, .. } if tensor == name)
    );

    for d in [
        "missing",
        "extra",
        "shape",
        "dtype",
        "tied-head",
        "nan",
        "truncated",
        "empty",
        "bad-index",
    ] {
        let _ = std::fs::remove_dir_all(
            std::env::temp_dir().join(format!("rl-models-{}-{d}", std::process::id())),
        );
    }
}

fn qwen3_tokenizer() -> Tokenizer {
    let path = std::env::var_os("RLVR_QWEN3_TOKENIZER")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest_dir().join("../../.cache/qwen3-tokenizer/tokenizer.json"));
    if !path.is_file() {
        panic!(
            "the real Qwen3 tokenizer is missing at {}: run scripts/fetch-qwen3-tokenizer.sh \
             (or set RLVR_QWEN3_TOKENIZER to its tokenizer.json)",
            path.display()
        );
    }
    Tokenizer::from_file(&path).unwrap()
}

#[test]
fn real_qwen3_tokenizer_ids() {
    let tok = qwen3_tokenizer();
    let cases: [(&str, &[u32]); 4] = [
        (
            "What is 1+1? Answer: 2",
            &[3838, 374, 220, 16, 10, 16, 30, 21806, 25, 220, 17],
        ),
        ("Hello, world!", &[9707, 11, 1879, 0]),
        (
            " 12345 héllo 你好",
            &[220, 16, 17, 18, 19, 20, 305, 18503, 385, 220, 108386],
        ),
        (
            "<|im_start|>user\nWhat is 1+1?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n2<|im_end|>",
            &[
                151644, 872, 198, 3838, 374, 220, 16, 10, 16, 30, 151645, 198, 151644, 77091, 198,
                151667, 271, 151668, 271, 17, 151645,
            ],
        ),
    ];
    for (text, ids) in cases {
        assert_eq!(tok.encode(text).unwrap(), ids, "{text:?}");
        assert_eq!(tok.decode(ids, false).unwrap(), text);
    }
    for (t, id) in [
        ("<|endoftext|>", 151643),
        ("<|im_start|>", 151644),
        ("<|im_end|>", 151645),
        ("<think>", 151667),
        ("</think>", 151668),
    ] {
        assert_eq!(tok.token_to_id(t), Some(id), "{t}");
        assert_eq!(tok.id_to_token(id).as_deref(), Some(t));
    }
    assert_eq!(tok.num_defined_ids(), 151_669);
    assert!(matches!(
        tok.decode(&[151_700], false),
        Err(rl_models::TokenizerError::UnknownId { id: 151_700, .. })
    ));
    // skip_special_tokens drops <|im_start|>/<|im_end|> but keeps <think> (not special)
    assert_eq!(
        tok.decode(&[151644, 872, 198, 151667, 151645], true)
            .unwrap(),
        "user\n<think>"
    );

    let user = [ChatMessage::user("What is 1+1?")];
    assert_eq!(
        tok.apply_chat_template(&user, true, true).unwrap(),
        [
            151644, 872, 198, 3838, 374, 220, 16, 10, 16, 30, 151645, 198, 151644, 77091, 198
        ]
    );
    assert_eq!(
        tok.apply_chat_template(&user, true, false).unwrap(),
        [
            151644, 872, 198, 3838, 374, 220, 16, 10, 16, 30, 151645, 198, 151644, 77091, 198,
            151667, 271, 151668, 271
        ]
    );

    // transformers' apply_chat_template renderings (tools/gen_qwen3_fixtures.py)
    let cases: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("qwen3_chat_cases.json")).unwrap(),
    )
    .unwrap();
    for case in cases["cases"].as_array().unwrap() {
        let messages: Vec<ChatMessage> = serde_json::from_value(case["messages"].clone()).unwrap();
        let add_gen = case["add_generation_prompt"].as_bool().unwrap();
        let think = case["enable_thinking"].as_bool().unwrap();
        let text = render_chat(&messages, add_gen, think).unwrap();
        assert_eq!(text, case["text"].as_str().unwrap());
        let ids: Vec<u32> = case["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect();
        assert_eq!(
            tok.apply_chat_template(&messages, add_gen, think).unwrap(),
            ids
        );
    }

    // tokenizer.json text round trip through the wrapper
    let again = Tokenizer::from_bytes(tok.to_json(false).unwrap().as_bytes()).unwrap();
    assert_eq!(
        again.encode(cases_text()).unwrap(),
        tok.encode(cases_text()).unwrap()
    );
}

fn cases_text() -> &'static str {
    "Compute 12*12. <|im_end|> 你好 <think>x</think>"
}
