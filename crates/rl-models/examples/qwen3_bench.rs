//! Throughput of the Qwen3 implementation, for the side-by-side comparison with PyTorch +
//! transformers in `tools/bench_qwen3.py` (which runs this binary on the CPU backend, burn
//! `flex`) and for `scripts/gpu-check.sh` (CUDA, f32 and bf16).
//!
//! ```text
//! cargo run --release -p rl-models --example qwen3_bench -- --config tiny|embedded|0.6b \
//!     --case forward|train|decode|init --batch B [--seq T] [--prompt P --new-tokens N] \
//!     [--repeats R] [--backend cpu|wgpu|cuda] [--dtype f32|bf16]
//! ```
//!
//! `--backend wgpu` / `cuda` need `--features wgpu` / `cuda`; `--dtype bf16` (weights and
//! activations in bf16, softmax and norm statistics still in f32) is offered on CUDA.
//!
//! Prints one JSON line per case: the median wall time of `repeats` runs after one warm-up and
//! the tokens/s it implies (`forward`: B·T tokens through the model, logits for every position;
//! `train`: B·T tokens, `-Σ log p` of every next token, forward + backward; `decode`: B·N new
//! tokens after a P-token prompt, greedy, KV cache). The model is random (seed 0). Beside the
//! median: `init_s`, the seeded initialisation (drawn on the host, uploaded, device synced), and
//! `first_s`, the warm-up run — on a GPU backend it holds the kernel compilations and autotuning
//! of the case, so `first_s` against `seconds` is the one-off cost a process pays (and what a
//! persistent compilation / autotune cache saves). `--case init` times the initialisation alone.

use std::time::Instant;

use burn::backend::{Autodiff, Flex};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Int, Tensor, TensorData};
use rl_models::{CausalLm, EntropyMode, GenerationConfig, ModelConfig, generate};

struct Args {
    config: String,
    case: String,
    batch: usize,
    seq: usize,
    prompt: usize,
    new_tokens: usize,
    repeats: usize,
    backend: String,
    dtype: String,
    /// Write the random model (seed 0) to this folder instead of benchmarking (e.g. to export it
    /// as GGUF for the llama-server comparison, tools/bench_llama_server.py).
    save: Option<String>,
}

fn parse() -> Args {
    let mut a = Args {
        config: "tiny".into(),
        case: "forward".into(),
        batch: 1,
        seq: 128,
        prompt: 16,
        new_tokens: 64,
        repeats: 3,
        backend: "cpu".into(),
        dtype: "f32".into(),
        save: None,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < argv.len() {
        let v = argv.get(i + 1).cloned().unwrap_or_default();
        match argv[i].as_str() {
            "--config" => a.config = v,
            "--case" => a.case = v,
            "--batch" => a.batch = v.parse().expect("--batch"),
            "--seq" => a.seq = v.parse().expect("--seq"),
            "--prompt" => a.prompt = v.parse().expect("--prompt"),
            "--new-tokens" => a.new_tokens = v.parse().expect("--new-tokens"),
            "--repeats" => a.repeats = v.parse().expect("--repeats"),
            "--backend" => a.backend = v,
            "--dtype" => a.dtype = v,
            "--save" => a.save = Some(v),
            other => panic!("unknown argument {other}"),
        }
        i += 2;
    }
    a
}

/// The configs compared: `tiny` (the tiny preset with a 4096-token vocabulary), `embedded` (the
/// shape of the embedded task's model, the one `tools/trl_side_by_side` trains: hidden 256, 2
/// layers, 8/4 heads of 32, MLP 512, a 22-token vocabulary) and Qwen3-0.6B shapes.
fn config(name: &str) -> ModelConfig {
    match name {
        "tiny" => ModelConfig::tiny(4096),
        "embedded" => ModelConfig {
            hidden_size: 256,
            intermediate_size: 512,
            num_attention_heads: 8,
            num_key_value_heads: 4,
            head_dim: 32,
            ..ModelConfig::tiny(22)
        },
        "0.6b" => ModelConfig::qwen3_0_6b(),
        "smollm2" => ModelConfig::smollm2_135m(),
        "gemma3_270m" => ModelConfig::gemma3_270m(),
        other => panic!("unknown config {other} (tiny, embedded, 0.6b, smollm2 or gemma3_270m)"),
    }
}

/// Deterministic pseudo-random ids in the vocabulary.
fn ids(n: usize, vocab: usize, salt: usize) -> Vec<i64> {
    (0..n)
        .map(|i| ((i * 7919 + salt * 104_729 + 13) % vocab) as i64)
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Seconds of the warm-up run and the median of `repeats` runs after it.
fn time<F: FnMut()>(repeats: usize, mut f: F) -> (f64, f64) {
    let t = Instant::now();
    f(); // warm-up
    let first = t.elapsed().as_secs_f64();
    eprintln!("warm-up {first:.1}s");
    let runs = (0..repeats.max(1))
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect();
    (first, median(runs))
}

/// What a case measured.
struct Measured {
    /// Median seconds of one repeat.
    secs: f64,
    /// Tokens one repeat processes.
    tokens: usize,
    /// Seconds of the seeded initialisation, device synced.
    init: f64,
    /// Seconds of the warm-up run (compilation and autotuning on GPU backends).
    first: f64,
}

#[global_allocator]
static ALLOC: rl_models::allocator::MiMalloc = rl_models::allocator::MiMalloc;

fn main() {
    rl_models::allocator::tune_for_tensors();
    rl_models::threads::join_compute_pool();
    let a = parse();
    if let Some(dir) = &a.save {
        let model: CausalLm<Flex> = config(&a.config)
            .init_seeded(0, &Default::default())
            .expect("model");
        model.save(dir).expect("save");
        return;
    }
    let m = match (a.backend.as_str(), a.dtype.as_str()) {
        ("cpu", "f32") => bench::<Autodiff<Flex>>(&a, Default::default()),
        #[cfg(feature = "wgpu")]
        ("wgpu", "f32") => bench::<Autodiff<burn::backend::Wgpu>>(&a, Default::default()),
        #[cfg(feature = "cuda")]
        ("cuda", "f32") => bench::<Autodiff<burn::backend::Cuda>>(&a, Default::default()),
        #[cfg(feature = "cuda")]
        ("cuda", "bf16") => {
            bench::<Autodiff<burn::backend::Cuda<burn::tensor::bf16>>>(&a, Default::default())
        }
        (b, d) => panic!(
            "backend {b} with dtype {d} is not available in this build \
             (cpu/f32 always; wgpu/f32 with --features wgpu; cuda/f32, cuda/bf16 with --features cuda)"
        ),
    };
    println!(
        "{}",
        serde_json::json!({
            "impl": format!("burn-{}", a.backend),
            "dtype": a.dtype,
            "config": a.config,
            "case": a.case,
            "batch": a.batch,
            "seq": a.seq,
            "prompt": a.prompt,
            "new_tokens": a.new_tokens,
            "seconds": m.secs,
            "tokens_per_s": m.tokens as f64 / m.secs,
            "init_s": m.init,
            "first_s": m.first,
            "threads": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        })
    );
}

/// Seconds since `t0` once every queued operation on `dev` has finished.
fn synced<Bk: burn::tensor::backend::Backend>(t0: Instant, dev: &Bk::Device) -> f64 {
    Bk::sync(dev).expect("device sync");
    let s = t0.elapsed().as_secs_f64();
    eprintln!("init {s:.1}s");
    s
}

/// One case on backend `AD` (and its inner `B`): median seconds, tokens, init and warm-up.
fn bench<AD: AutodiffBackend>(a: &Args, dev: AD::Device) -> Measured {
    type B<AD> = <AD as AutodiffBackend>::InnerBackend;
    let cfg = config(&a.config);
    let vocab = cfg.vocab_size;
    let t0 = Instant::now();
    match a.case.as_str() {
        "init" => {
            let model = cfg.init_seeded::<B<AD>>(0, &dev).unwrap();
            let init = synced::<B<AD>>(t0, &dev);
            let w = model.embed_tokens.weight.val();
            let _ = w.slice([0..1, 0..1]).into_scalar();
            Measured {
                secs: init,
                tokens: 0,
                init,
                first: 0.0,
            }
        }
        "forward" => {
            let model = cfg.init_seeded::<B<AD>>(0, &dev).unwrap();
            let init = synced::<B<AD>>(t0, &dev);
            let data = ids(a.batch * a.seq, vocab, 1);
            let (first, secs) = time(a.repeats, || {
                let x = Tensor::<B<AD>, 2, Int>::from_data(
                    TensorData::new(data.clone(), [a.batch, a.seq]),
                    &dev,
                );
                let logits = model.forward(x, None, None).unwrap();
                // read back one value: forces the computation on lazy backends
                let _ = logits.slice([0..1, 0..1, 0..1]).into_scalar();
            });
            Measured {
                secs,
                tokens: a.batch * a.seq,
                init,
                first,
            }
        }
        "train" => {
            let model = cfg.init_seeded::<AD>(0, &dev).unwrap();
            let init = synced::<AD>(t0, &dev);
            let data = ids(a.batch * a.seq, vocab, 2);
            let (first, secs) = time(a.repeats, || {
                let x = Tensor::<AD, 2, Int>::from_data(
                    TensorData::new(data.clone(), [a.batch, a.seq]),
                    &dev,
                );
                let lp = model.token_logprobs(x, None, EntropyMode::None).unwrap();
                let loss = lp.logprobs.sum().neg();
                let grads = loss.backward();
                let g = model
                    .embed_tokens
                    .weight
                    .val()
                    .grad(&grads)
                    .expect("gradient");
                let _ = g.slice([0..1, 0..1]).into_scalar();
            });
            Measured {
                secs,
                tokens: a.batch * a.seq,
                init,
                first,
            }
        }
        "decode" => {
            let model: CausalLm<B<AD>> = cfg.init_seeded::<B<AD>>(0, &dev).unwrap();
            let init = synced::<B<AD>>(t0, &dev);
            let prompts: Vec<Vec<u32>> = (0..a.batch)
                .map(|b| {
                    ids(a.prompt, vocab, 10 + b)
                        .into_iter()
                        .map(|x| x as u32)
                        .collect()
                })
                .collect();
            let gen_cfg = GenerationConfig::greedy(a.new_tokens);
            let (first, secs) = time(a.repeats, || {
                let out = generate(&model, &prompts, &gen_cfg).unwrap();
                assert!(out.iter().all(|g| g.tokens.len() == a.new_tokens));
            });
            Measured {
                secs,
                tokens: a.batch * a.new_tokens,
                init,
                first,
            }
        }
        other => panic!("unknown case {other} (forward, train, decode or init)"),
    }
}
