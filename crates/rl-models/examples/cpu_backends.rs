//! Which CPU backend should be the default? burn `flex` against burn `ndarray`, same machine,
//! same shapes, one run (the numbers in docs/performance.md come from this program).
//!
//! ```text
//! cargo run --release -p rl-models --features ndarray --example cpu_backends
//! ```
//!
//! Workloads, each timed as the median of 5 runs after one warm-up:
//! * `demo train`: forward + backward of the embedded demo's model (hidden 256, 2 layers) on 256
//!   sequences of 12 tokens — one RL micro-batch of `cargo run --example da3po_qwen3`;
//! * `demo generate`: 256 sampled continuations of 6 tokens after a 7-token prompt (KV cache);
//! * `0.6B layer train`: forward + backward of one Qwen3-0.6B-shaped decoder layer (hidden 1024,
//!   16/8 heads of 128, MLP 3072) on 1 × 256 tokens, vocabulary cut to 1024 so that the layer
//!   dominates.

use std::time::Instant;

use burn::backend::{Autodiff, Flex, NdArray};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Int, Tensor, TensorData};
use rl_models::{CausalLm, EntropyMode, GenerationConfig, ModelConfig, generate};

fn median_ms(mut f: impl FnMut()) -> f64 {
    f();
    let mut t: Vec<f64> = (0..5)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    t.sort_by(|a, b| a.partial_cmp(b).unwrap());
    t[2]
}

fn train_ms<B: AutodiffBackend>(cfg: &ModelConfig, batch: usize, len: usize) -> f64 {
    let dev = Default::default();
    let model: CausalLm<B> = cfg.init_seeded(0, &dev).unwrap();
    let ids: Vec<i64> = (0..batch * len)
        .map(|i| (i * 7 % cfg.vocab_size) as i64)
        .collect();
    median_ms(|| {
        let x = Tensor::<B, 2, Int>::from_data(TensorData::new(ids.clone(), [batch, len]), &dev);
        let lp = model.token_logprobs(x, None, EntropyMode::None).unwrap();
        let grads = lp.logprobs.sum().neg().backward();
        std::hint::black_box(grads);
    })
}

fn generate_ms<B: AutodiffBackend>(cfg: &ModelConfig) -> f64 {
    let dev = Default::default();
    let model: CausalLm<B> = cfg.init_seeded(0, &dev).unwrap();
    let inner = burn::module::AutodiffModule::valid(&model);
    let prompts: Vec<Vec<u32>> = (0..256)
        .map(|i| (0..7).map(|t| ((i + t) % 16) as u32).collect())
        .collect();
    let g = GenerationConfig {
        max_new_tokens: 6,
        ..GenerationConfig::default()
    };
    median_ms(|| {
        std::hint::black_box(generate(&inner, &prompts, &g).unwrap());
    })
}

fn report<B: AutodiffBackend>(name: &str) {
    let mut demo = ModelConfig::tiny(24);
    demo.hidden_size = 256;
    demo.num_hidden_layers = 2;
    demo.num_attention_heads = 8;
    demo.num_key_value_heads = 4;
    demo.head_dim = 32;
    demo.intermediate_size = 512;
    let mut layer = ModelConfig::qwen3_0_6b();
    layer.num_hidden_layers = 1;
    layer.vocab_size = 1024;
    let a = train_ms::<B>(&demo, 256, 12);
    let b = generate_ms::<B>(&demo);
    let c = train_ms::<B>(&layer, 1, 256);
    println!("| {name} | {a:.1} | {b:.1} | {c:.1} |");
}

#[global_allocator]
static ALLOC: rl_models::allocator::MiMalloc = rl_models::allocator::MiMalloc;

fn main() {
    rl_models::allocator::tune_for_tensors();
    rl_models::threads::join_compute_pool();
    println!(
        "threads: {} (rayon)\n\n| backend | demo train (ms) | demo generate (ms) | 0.6B layer train (ms) |\n|---|---|---|---|",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );
    report::<Autodiff<Flex>>("flex");
    report::<Autodiff<NdArray>>("ndarray");
}
