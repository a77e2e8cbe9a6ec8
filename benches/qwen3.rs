//! Criterion benches of the Qwen3 model on the CPU backend (burn `flex`), tiny config
//! (`ModelConfig::tiny(4096)`): forward, forward+backward of the per-token log-prob loss, and
//! greedy KV-cache decoding at batch 1 and 8 with 64 and 512 new tokens. Throughput is reported in
//! tokens (forward/train: batch x seq; decode: batch x new tokens).
//!
//! `cargo bench --bench qwen3` (a few minutes). The Qwen3-0.6B shapes and the side-by-side
//! comparison with PyTorch are in `tools/bench_qwen3.py`, which drives
//! `crates/rl-models/examples/qwen3_bench.rs`; results in `docs/performance.md`.

use std::hint::black_box;
use std::time::Duration;

use burn::backend::{Autodiff, Flex};
use burn::tensor::{Int, Tensor, TensorData};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rl_models::{CausalLm, EntropyMode, GenerationConfig, ModelConfig, generate};

type B = Flex;
type AD = Autodiff<Flex>;

const VOCAB: usize = 4096;

fn ids(n: usize, salt: usize) -> Vec<i64> {
    (0..n)
        .map(|i| ((i * 7919 + salt * 104_729 + 13) % VOCAB) as i64)
        .collect()
}

fn forward_and_train(c: &mut Criterion) {
    let cfg = ModelConfig::tiny(VOCAB);
    let dev = Default::default();
    let (batch, seq) = (8, 128);
    let mut g = c.benchmark_group("qwen3_tiny");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(5))
        .throughput(Throughput::Elements((batch * seq) as u64));

    let model: CausalLm<B> = cfg.init_seeded(0, &dev).unwrap();
    let data = ids(batch * seq, 1);
    g.bench_function("forward_b8_t128", |b| {
        b.iter(|| {
            let x =
                Tensor::<B, 2, Int>::from_data(TensorData::new(data.clone(), [batch, seq]), &dev);
            black_box(model.forward(x, None, None).unwrap().into_data())
        })
    });

    let model: CausalLm<AD> = cfg.init_seeded(0, &dev).unwrap();
    g.bench_function("forward_backward_b8_t128", |b| {
        b.iter(|| {
            let x =
                Tensor::<AD, 2, Int>::from_data(TensorData::new(data.clone(), [batch, seq]), &dev);
            let lp = model.token_logprobs(x, None, EntropyMode::None).unwrap();
            let grads = lp.logprobs.sum().neg().backward();
            black_box(model.embed_tokens.weight.val().grad(&grads))
        })
    });
    g.finish();
}

fn decode(c: &mut Criterion) {
    let cfg = ModelConfig::tiny(VOCAB);
    let dev = Default::default();
    let model: CausalLm<B> = cfg.init_seeded(0, &dev).unwrap();
    let mut g = c.benchmark_group("qwen3_tiny_decode");
    g.sample_size(10).measurement_time(Duration::from_secs(5));
    for batch in [1usize, 8] {
        for new in [64usize, 512] {
            let prompts: Vec<Vec<u32>> = (0..batch)
                .map(|b| ids(16, 10 + b).into_iter().map(|x| x as u32).collect())
                .collect();
            let gen_cfg = GenerationConfig::greedy(new);
            g.throughput(Throughput::Elements((batch * new) as u64));
            g.bench_function(format!("greedy_b{batch}_p16_n{new}"), |b| {
                b.iter(|| black_box(generate(&model, &prompts, &gen_cfg).unwrap()))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, forward_and_train, decode);
criterion_main!(benches);
