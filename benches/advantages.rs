//! Advantages over a DAPO-sized batch: 512 prompts × 16 responses, for every estimator.
//!
//! `cargo bench --bench advantages`. Rewards are ±1 with a seeded random pass rate per prompt
//! (so some groups are uniform, as in real batches); the batch is interleaved by group to
//! exercise the explicit-group-id path.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rl_advantage::{ESTIMATOR_NAMES, EstimatorConfig, GroupId, Sample, compute_batch};

const PROMPTS: usize = 512;
const G: usize = 16;

fn batch() -> Vec<Sample> {
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let rates: Vec<f64> = (0..PROMPTS).map(|_| rng.random::<f64>()).collect();
    let mut out = Vec::with_capacity(PROMPTS * G);
    // Interleaved layout: one response of every prompt, then the next one of every prompt.
    for _ in 0..G {
        for (p, &rate) in rates.iter().enumerate() {
            let c = rng.random::<f64>() < rate;
            out.push(Sample::new(
                GroupId(p as u64),
                if c { 1.0 } else { -1.0 },
                c,
            ));
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let samples = batch();
    let mut group = c.benchmark_group("advantages_512x16");
    group.throughput(Throughput::Elements(samples.len() as u64));
    for name in ESTIMATOR_NAMES {
        let est = EstimatorConfig::from_name(name).unwrap().build(G).unwrap();
        group.bench_function(name, |b| {
            b.iter(|| compute_batch(&est, std::hint::black_box(&samples), None).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
