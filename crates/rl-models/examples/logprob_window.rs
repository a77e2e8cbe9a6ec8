//! Time of next-token log-probs over every position (`CausalLm::token_logprobs`) against only the
//! response window (`CausalLm::token_logprobs_from`), as a trainer needs them: prompts of `P`
//! tokens followed by responses of `R` tokens, the loss reading only the response.
//!
//! ```text
//! cargo run --release -p rl-models --example logprob_window -- \
//!     [--vocab 151936] [--batch 8] [--prompt 300] [--response 8] [--repeats 5]
//! ```
//!
//! (Without `--release` the dependencies, burn's kernels included, still build at opt-level 3.)
//! Model: `ModelConfig::tiny(vocab)` (hidden 64, 2 layers, tied), random (seed 0), CPU backend
//! (burn `flex`). Cases, each the median of `repeats` runs after one warm-up:
//! `old` = forward only on the inner backend (old-policy log-probs, read back to the host);
//! `train` = forward + backward of `Σ log p` over the response tokens under autodiff.

use std::time::Instant;

use burn::backend::{Autodiff, Flex};
use burn::module::AutodiffModule;
use burn::tensor::{Int, Tensor, TensorData};
use rl_models::{CausalLm, EntropyMode, ModelConfig};

type AD = Autodiff<Flex>;

fn arg(name: &str, default: usize) -> usize {
    let argv: Vec<String> = std::env::args().collect();
    argv.iter()
        .position(|a| a == name)
        .and_then(|i| argv.get(i + 1))
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name} takes a number"))
        })
        .unwrap_or(default)
}

fn median_secs(repeats: usize, mut f: impl FnMut()) -> f64 {
    f(); // warm-up
    let mut v: Vec<f64> = (0..repeats)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[global_allocator]
static ALLOC: rl_models::allocator::MiMalloc = rl_models::allocator::MiMalloc;

fn main() {
    rl_models::allocator::tune_for_tensors();
    rl_models::threads::join_compute_pool();
    let vocab = arg("--vocab", 151_936);
    let (b, p, r) = (
        arg("--batch", 8),
        arg("--prompt", 300),
        arg("--response", 8),
    );
    let repeats = arg("--repeats", 5);
    let l = p + r;
    let device = Default::default();
    let data: Vec<i64> = (0..b * l)
        .map(|i| ((i * 7919 + 13) % vocab) as i64)
        .collect();
    let ids = || Tensor::<AD, 2, Int>::from_data(TensorData::new(data.clone(), [b, l]), &device);
    let starts = vec![p - 1; b];
    let model: CausalLm<AD> = ModelConfig::tiny(vocab).init_seeded(0, &device).unwrap();
    let inner = model.valid();

    // Old-policy log-probs of the responses, forward only, read back.
    let seqs: Vec<Vec<u32>> = data
        .chunks(l)
        .map(|s| s.iter().map(|&x| x as u32).collect())
        .collect();
    let old_full = median_secs(repeats, || {
        let x = Tensor::<Flex, 2, Int>::from_data(TensorData::new(data.clone(), [b, l]), &device);
        let lp = inner.token_logprobs(x, None, EntropyMode::None).unwrap();
        let _ = lp.logprobs.slice([0..b, p - 1..l - 1]).into_data();
    });
    let old_window = median_secs(repeats, || {
        let _ = inner.token_logprobs_from_host(&seqs, &starts).unwrap();
    });

    // Forward + backward of Σ log p over the response tokens.
    let train_full = median_secs(repeats, || {
        let lp = model
            .token_logprobs(ids(), None, EntropyMode::None)
            .unwrap();
        let loss = lp.logprobs.slice([0..b, p - 1..l - 1]).sum();
        let g = model
            .embed_tokens
            .weight
            .val()
            .grad(&loss.backward())
            .unwrap();
        let _ = g.slice([0..1, 0..1]).into_data();
    });
    let train_window = median_secs(repeats, || {
        let lp = model
            .token_logprobs_from(ids(), None, &starts, r, EntropyMode::None)
            .unwrap();
        let loss = lp.logprobs.sum();
        let g = model
            .embed_tokens
            .weight
            .val()
            .grad(&loss.backward())
            .unwrap();
        let _ = g.slice([0..1, 0..1]).into_data();
    });
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    println!(
        "tiny({vocab}), batch {b}, prompt {p}, response {r}, {threads} threads, median of {repeats}:"
    );
    println!("case   full (s)  window (s)  speed-up");
    for (case, full, window) in [
        ("old", old_full, old_window),
        ("train", train_full, train_window),
    ] {
        println!(
            "{case:<6} {full:>8.3}  {window:>10.3}  {:>7.1}x",
            full / window
        );
    }
}
