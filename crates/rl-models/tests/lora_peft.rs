//! LoRA against HF PEFT: logits, merged logits and adapter gradients of a PEFT adapter loaded
//! from PEFT's own files, our saved adapter against PEFT's file, and the typed errors of bad
//! adapters. Every reference value comes from `tools/gen_lora_fixture.py` (transformers 5.24,
//! peft 0.21.2, torch 2.15, float32), committed under `tests/fixtures/lora_peft/`.

use std::path::{Path, PathBuf};

use burn::backend::{Autodiff, Flex};
use burn::module::{AutodiffModule, Module, Param};
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};
use rl_models::decoder::{ADAPTER_CONFIG, ADAPTER_WEIGHTS};
use rl_models::{AttentionMask, CausalLm, EntropyMode, LoraConfig, ModelError};
use safetensors::{Dtype, SafeTensors};
use serde_json::Value;

type B = Flex;
type AD = Autodiff<Flex>;

/// The Qwen3 fixture (every test) and the Llama one (logits, merge and gradients).
const FIXTURES: [&str; 2] = ["lora_peft", "lora_peft_llama"];

fn fixture() -> PathBuf {
    fixture_named(FIXTURES[0])
}

fn fixture_named(name: &str) -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
        .join("tests/fixtures")
        .join(name)
}

/// A fresh scratch folder, removed when dropped.
fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("rl-models-lora-{name}-"))
        .tempdir()
        .unwrap()
}

struct Reference(Vec<u8>);

impl Reference {
    fn load() -> Self {
        Self::load_from(&fixture())
    }
    fn load_from(dir: &Path) -> Self {
        Self(std::fs::read(dir.join("reference.safetensors")).expect("fixture"))
    }
    fn f32(&self, name: &str) -> (Vec<usize>, Vec<f32>) {
        let st = SafeTensors::deserialize(&self.0).unwrap();
        let t = st.tensor(name).unwrap_or_else(|_| panic!("fixture {name}"));
        assert_eq!(t.dtype(), Dtype::F32);
        let v = t
            .data()
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        (t.shape().to_vec(), v)
    }
    fn i64(&self, name: &str) -> Vec<i64> {
        let st = SafeTensors::deserialize(&self.0).unwrap();
        let t = st.tensor(name).unwrap();
        t.data()
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }
    fn names(&self) -> Vec<String> {
        let st = SafeTensors::deserialize(&self.0).unwrap();
        st.names().into_iter().map(str::to_string).collect()
    }
}

fn to_vec<Bk: Backend, const D: usize>(t: Tensor<Bk, D>) -> Vec<f32> {
    t.into_data().convert::<f32>().into_vec::<f32>().unwrap()
}

/// The fixture batch: ids `[2, 11]` and its mask (row 1 right-padded to 7 tokens).
fn batch<Bk: Backend>(r: &Reference) -> (Tensor<Bk, 2, Int>, AttentionMask) {
    let ids = r.i64("ids");
    let mask: Vec<bool> = r.i64("mask").iter().map(|&m| m == 1).collect();
    let t = Tensor::from_data(TensorData::new(ids, [2, 11]), &Default::default());
    (t, AttentionMask::new(2, 11, mask).unwrap())
}

fn peft_model<Bk: Backend>(dir: &Path) -> CausalLm<Bk> {
    CausalLm::<Bk>::load(dir.join("base"), &Default::default())
        .unwrap()
        .load_adapter(dir.join("adapter"))
        .unwrap()
}

/// Largest |Δ| over the valid positions of `[2, 11, vocab]` logits.
fn logit_gap(ours: &[f32], theirs: &[f32], mask: &AttentionMask, vocab: usize) -> f32 {
    let mut worst = 0.0f32;
    for row in 0..2 {
        for t in 0..11 {
            if mask.is_valid(row, t) {
                let k = (row * 11 + t) * vocab;
                for v in k..k + vocab {
                    worst = worst.max((ours[v] - theirs[v]).abs());
                }
            }
        }
    }
    worst
}

#[test]
fn peft_adapters_compute_peft_logits_and_merge_to_the_same_function() {
    for name in FIXTURES {
        peft_logits_and_merge(&fixture_named(name));
    }
}

fn peft_logits_and_merge(dir: &Path) {
    let r = Reference::load_from(dir);
    let model = peft_model::<B>(dir);
    assert_eq!(model.lora_config().map(|c| (c.r, c.alpha)), Some((4, 8.0)));
    let vocab = model.config().vocab_size;
    let (ids, mask) = batch::<B>(&r);
    let logits = to_vec(model.forward(ids.clone(), Some(&mask), None).unwrap());
    let (_, want) = r.f32("logits");
    let d = logit_gap(&logits, &want, &mask, vocab);
    assert!(d < 1e-4, "LoRA logits vs PEFT: max |Δ| = {d}");
    // The adapter matters: the base alone is far from PEFT's logits.
    let base = CausalLm::<B>::load(dir.join("base"), &Default::default()).unwrap();
    let plain = to_vec(base.forward(ids.clone(), Some(&mask), None).unwrap());
    assert!(logit_gap(&plain, &want, &mask, vocab) > 0.1);
    // merge_and_unload(): ours merged, and ours saved as an HF checkpoint and reloaded plain.
    let (_, want_merged) = r.f32("merged_logits");
    let merged = model.merged();
    assert!(merged.lora_config().is_none());
    let m = to_vec(merged.forward(ids.clone(), Some(&mask), None).unwrap());
    let d = logit_gap(&m, &want_merged, &mask, vocab);
    assert!(
        d < 1e-4,
        "merged logits vs PEFT's merge_and_unload: max |Δ| = {d}"
    );
    let tmpdir = scratch("merged");
    let dir = tmpdir.path();
    model.save(dir).unwrap();
    let reloaded = CausalLm::<B>::load(dir, &Default::default()).unwrap();
    let m = to_vec(reloaded.forward(ids, Some(&mask), None).unwrap());
    let d = logit_gap(&m, &want_merged, &mask, vocab);
    assert!(d < 1e-4, "saved (merged) checkpoint vs PEFT: max |Δ| = {d}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn adapter_gradients_match_peft_and_the_base_is_frozen() {
    for name in FIXTURES {
        adapter_gradients(&fixture_named(name));
    }
}

fn adapter_gradients(dir: &Path) {
    let r = Reference::load_from(dir);
    let model = peft_model::<AD>(dir);
    let (ids, mask) = batch::<AD>(&r);
    let out = model
        .token_logprobs(ids, Some(&mask), EntropyMode::None)
        .unwrap();
    let valid: Vec<f32> = (0..2)
        .flat_map(|row| (0..10).map(move |t| (row, t)))
        .map(|(row, t)| (mask.is_valid(row, t) && mask.is_valid(row, t + 1)) as u8 as f32)
        .collect();
    let valid = Tensor::<AD, 2>::from_data(TensorData::new(valid, [2, 10]), &Default::default());
    let loss = (out.logprobs * valid).sum();
    let (_, want_loss) = r.f32("loss");
    let got_loss = to_vec(loss.clone())[0];
    assert!((got_loss - want_loss[0]).abs() < 1e-4 * want_loss[0].abs());
    let grads = loss.backward();
    let mut checked = 0;
    for (n, layer) in model.layers.iter().enumerate() {
        let a = &layer.self_attn;
        let m = &layer.mlp;
        for (path, lin) in [
            ("self_attn.q_proj", &a.q_proj),
            ("self_attn.k_proj", &a.k_proj),
            ("self_attn.v_proj", &a.v_proj),
            ("self_attn.o_proj", &a.o_proj),
            ("mlp.gate_proj", &m.gate_proj),
            ("mlp.up_proj", &m.up_proj),
            ("mlp.down_proj", &m.down_proj),
        ] {
            assert!(
                lin.weight.val().grad(&grads).is_none(),
                "{n}.{path}: base trained"
            );
            let lora = lin.lora.as_ref().expect("adapter");
            for (which, p) in [("lora_A", &lora.a), ("lora_B", &lora.b)] {
                let key = format!("grad.base_model.model.model.layers.{n}.{path}.{which}.weight");
                let (_, want) = r.f32(&key);
                let got = to_vec(p.val().grad(&grads).expect("adapter gradient"));
                let scale = want.iter().fold(0f32, |s, x| s.max(x.abs())).max(1e-3);
                let d = got
                    .iter()
                    .zip(&want)
                    .fold(0f32, |s, (x, y)| s.max((x - y).abs()));
                assert!(
                    d <= 2e-5 * scale.max(1.0),
                    "{key}: max |Δ| = {d} (max |g| {scale})"
                );
                checked += 1;
            }
        }
    }
    assert_eq!(
        checked,
        r.names().iter().filter(|n| n.starts_with("grad.")).count()
    );
    for w in [
        &model.embed_tokens.weight,
        &model.lm_head.as_ref().unwrap().weight,
    ] {
        assert!(
            w.val().grad(&grads).is_none(),
            "a frozen 2-D parameter has a gradient"
        );
    }
    assert!(model.norm.weight.val().grad(&grads).is_none());
}

/// Tensors of a safetensors file by name: (dtype, shape, bytes).
fn file_tensors(path: &Path) -> Vec<(String, Dtype, Vec<usize>, Vec<u8>)> {
    let bytes = std::fs::read(path).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let mut out: Vec<_> = st
        .tensors()
        .into_iter()
        .map(|(n, t)| (n, t.dtype(), t.shape().to_vec(), t.data().to_vec()))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn saved_adapters_are_peft_files() {
    let model = peft_model::<B>(&fixture());
    let tmpdir = scratch("saved");
    let dir = tmpdir.path();
    model.save_adapter(dir, Some("base")).unwrap();
    // For `python tools/gen_lora_fixture.py --check DIR` (PEFT loading our files).
    if let Some(keep) = std::env::var_os("RLVR_LORA_SAVE_TO") {
        model.save_adapter(keep, Some("base")).unwrap();
    }
    // The same tensors, names, shapes and bytes as the file PEFT wrote.
    assert_eq!(
        file_tensors(&dir.join(ADAPTER_WEIGHTS)),
        file_tensors(&fixture().join("adapter").join(ADAPTER_WEIGHTS))
    );
    // The configuration fields that define the computation agree with PEFT's.
    let read = |p: PathBuf| -> Value {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let ours = read(dir.join(ADAPTER_CONFIG));
    let theirs = read(fixture().join("adapter").join(ADAPTER_CONFIG));
    for key in [
        "peft_type",
        "task_type",
        "r",
        "lora_alpha",
        "lora_dropout",
        "bias",
        "fan_in_fan_out",
        "use_rslora",
        "use_dora",
        "modules_to_save",
        "layers_to_transform",
    ] {
        let same = match (ours[key].as_f64(), theirs[key].as_f64()) {
            (Some(a), Some(b)) => a == b,
            _ => ours[key] == theirs[key],
        };
        assert!(same, "{key}: ours {} vs PEFT's {}", ours[key], theirs[key]);
    }
    let set = |v: &Value| {
        let mut t: Vec<String> = v["target_modules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect();
        t.sort();
        t
    };
    assert_eq!(set(&ours), set(&theirs));
    // And it loads back to the same model.
    let again = CausalLm::<B>::load(fixture().join("base"), &Default::default())
        .unwrap()
        .load_adapter(dir)
        .unwrap();
    assert_eq!(
        again.adapter_tensors().unwrap(),
        model.adapter_tensors().unwrap()
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn fresh_adapters_start_as_the_base_and_train_only_themselves() {
    let base = CausalLm::<AD>::load(fixture().join("base"), &Default::default()).unwrap();
    let config = LoraConfig {
        target_modules: vec!["q_proj".into(), "down_proj".into()],
        ..LoraConfig::new(2, 4.0)
    };
    let model = base.clone().with_lora(&config, 5).unwrap();
    // PEFT's init: B = 0, so the function is the base's; A ~ U(−1/√in, 1/√in), not all zero.
    let r = Reference::load();
    let (ids, mask) = batch::<AD>(&r);
    let a = to_vec(
        base.valid()
            .forward(ids.clone().inner(), Some(&mask), None)
            .unwrap(),
    );
    let b = to_vec(
        model
            .valid()
            .forward(ids.inner(), Some(&mask), None)
            .unwrap(),
    );
    assert_eq!(a, b);
    let q = model.layers[0].self_attn.q_proj.lora.as_ref().unwrap();
    let a0 = to_vec(q.a.val());
    let bound = 1.0 / (32f32).sqrt();
    assert!(a0.iter().all(|x| x.abs() <= bound) && a0.iter().any(|x| x.abs() > bound / 2.0));
    assert!(to_vec(q.b.val()).iter().all(|&x| x == 0.0));
    assert!(model.layers[0].self_attn.k_proj.lora.is_none());
    // Trainable parameters: exactly the 2 layers × 2 modules × (A, B) adapters.
    struct Count(usize, usize);
    impl burn::module::ModuleVisitor<AD> for Count {
        fn visit_float<const D: usize>(&mut self, p: &Param<Tensor<AD, D>>) {
            if p.is_require_grad() {
                self.0 += 1;
            } else {
                self.1 += 1;
            }
        }
    }
    let mut c = Count(0, 0);
    model.visit(&mut c);
    let mut b = Count(0, 0);
    base.visit(&mut b);
    assert_eq!((c.0, c.1), (8, b.0), "trainable / frozen parameter tensors");
    // Twice is an error; so are bad configs.
    assert!(matches!(
        model.with_lora(&config, 5),
        Err(ModelError::InvalidInput(_))
    ));
    for bad in [
        LoraConfig::new(0, 1.0),
        LoraConfig::new(2, f64::NAN),
        LoraConfig {
            target_modules: vec!["lm_head".into()],
            ..LoraConfig::new(2, 1.0)
        },
        LoraConfig {
            target_modules: vec![],
            ..LoraConfig::new(2, 1.0)
        },
        LoraConfig {
            target_modules: vec!["q_proj".into(), "q_proj".into()],
            ..LoraConfig::new(2, 1.0)
        },
    ] {
        assert!(bad.validate().is_err(), "{bad:?}");
    }
}

#[test]
fn bad_adapters_are_typed_errors_naming_the_problem() {
    let base = || CausalLm::<B>::load(fixture().join("base"), &Default::default()).unwrap();
    let src = fixture().join("adapter");
    let config: Value =
        serde_json::from_str(&std::fs::read_to_string(src.join(ADAPTER_CONFIG)).unwrap()).unwrap();
    let with = |name: &str, edit: &dyn Fn(&mut Value)| -> String {
        let tmpdir = scratch(name);
        let dir = tmpdir.path();
        let mut c = config.clone();
        edit(&mut c);
        std::fs::write(dir.join(ADAPTER_CONFIG), c.to_string()).unwrap();
        std::fs::copy(src.join(ADAPTER_WEIGHTS), dir.join(ADAPTER_WEIGHTS)).unwrap();
        base().load_adapter(dir).expect_err("an error").to_string()
    };
    assert!(with("dora", &|c| c["use_dora"] = true.into()).contains("use_dora"));
    assert!(with("bias", &|c| c["bias"] = "all".into()).contains("bias"));
    assert!(with("regex", &|c| c["target_modules"] = ".*proj".into()).contains("target_modules"));
    assert!(with("rank", &|c| c["r"] = 8.into()).contains("lora_A"));
    // Fewer targets than the file holds: the first tensor left over is named.
    let e = with("fewer", &|c| {
        c["target_modules"] = serde_json::json!(["q_proj"])
    });
    assert!(
        e.contains("layers.0.mlp.down_proj.lora_A") && e.contains("not an adapter"),
        "{e}"
    );
    let empty = scratch("empty");
    let missing = base().load_adapter(empty.path());
    assert!(matches!(missing, Err(ModelError::Io { .. })), "{missing:?}");
}
