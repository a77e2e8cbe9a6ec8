//! One DA3PO update at a real model shape, for its peak memory and time (docs/performance.md,
//! "Memory at real size"): the π_old forward of every sequence, then the policy update
//! (`rl_trainer::policy_update::policy_update`: π_θ forward + backward per micro-batch, AdamW step),
//! with the memory plan and micro-batching given on the command line.
//!
//! ```text
//! cargo run --release -p rl-trainer --example update_memory -- --shape 0.6b \
//!     --seqs 8 --prompt 256 --response 1024 [--micro 8] [--micro-tokens 0] \
//!     [--logprob-chunk 0] [--checkpointing none|layers] [--seed 0] \
//!     [--backend cpu|cuda] [--repeats 1] [--lora-r 0] [--dtype f32|bf16]
//! ```
//!
//! The model is random (`ModelConfig::qwen3_0_6b()` / `qwen3_1_7b()` / `tiny`, seed `--seed`,
//! f32) and so are the token ids (uniform over the vocabulary); advantages are +1 for the first
//! half of the sequences and −1 for the rest, as in a kept group; the loss is DA3PO's preset
//! (DAPO's token-mean clipped objective, no KL). `--lora-r R` freezes the base and trains
//! PEFT-initialised LoRA adapters of rank R with alpha = 2R on all seven target modules (as
//! `torch_update.py --lora-r R` does through peft). `--dtype bf16` computes in bf16 with f32
//! master weights (`model.dtype`); it first scores the same sequences in f32 and reports the
//! largest and mean |Δ log-prob| of bf16 against f32 (`logprob_gap_vs_f32`). Peak resident memory is read per phase from
//! `/proc/self/status` (`rl_trainer::memory`), so run each configuration in its own process;
//! the last line printed is one JSON object with the settings, seconds and peaks.
//!
//! `--backend cuda` (build with `--features cuda`) runs the same update on the first CUDA
//! device, f32 (`Autodiff<Cuda>`; there is no bf16 training with f32 master weights yet). The
//! peaks are then the host's resident memory only; device memory is not visible from here
//! (burn 0.21 exposes no device memory statistics), `scripts/gpu-check.sh` samples it with
//! `nvidia-smi`. `--repeats N` runs π_old + update N times in the process, each from the policy
//! the previous one produced: on a GPU the first holds the kernel compilations and autotuning,
//! the later ones are the steady state. The JSON's top-level seconds and peaks are the last
//! repeat's, `runs` lists every repeat.

use std::time::Instant;

use burn::backend::{Autodiff, Flex};
use burn::tensor::backend::{AutodiffBackend, Backend};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rl_models::{CausalLm, Checkpointing, ComputeDtype, LoraConfig, MemoryPlan, ModelConfig};
use rl_trainer::TrainConfig;
use rl_trainer::memory::PhasePeak;
use rl_trainer::optim::AdamWOptimizer;
use rl_trainer::policy::Policy;
use rl_trainer::policy_update::{OldLogprobs, TrainSeq, UpdateSettings, policy_update};

#[global_allocator]
static ALLOC: rl_models::allocator::MiMalloc = rl_models::allocator::MiMalloc;

struct Args {
    shape: String,
    seqs: usize,
    prompt: usize,
    response: usize,
    micro: usize,
    micro_tokens: usize,
    plan: MemoryPlan,
    seed: u64,
    backend: String,
    repeats: usize,
    lora_r: usize,
    dtype: ComputeDtype,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        shape: "0.6b".into(),
        seqs: 8,
        prompt: 256,
        response: 1024,
        micro: 0,
        micro_tokens: 0,
        plan: MemoryPlan::default(),
        seed: 0,
        backend: "cpu".into(),
        repeats: 1,
        lora_r: 0,
        dtype: ComputeDtype::F32,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let num = |v: &str| {
            v.parse::<usize>()
                .map_err(|e| format!("{flag} {v}: expected a whole number ({e})"))
        };
        match flag.as_str() {
            "--shape" => a.shape = value,
            "--seqs" => a.seqs = num(&value)?,
            "--prompt" => a.prompt = num(&value)?,
            "--response" => a.response = num(&value)?,
            "--micro" => a.micro = num(&value)?,
            "--micro-tokens" => a.micro_tokens = num(&value)?,
            "--logprob-chunk" => a.plan.logprob_chunk = num(&value)?,
            "--seed" => a.seed = num(&value)? as u64,
            "--backend" => a.backend = value,
            "--repeats" => a.repeats = num(&value)?,
            "--lora-r" => a.lora_r = num(&value)?,
            "--dtype" => a.dtype = value.parse().map_err(|e| format!("--dtype: {e}"))?,
            "--checkpointing" => {
                a.plan.checkpointing = match value.as_str() {
                    "none" => Checkpointing::None,
                    "layers" => Checkpointing::Layers,
                    v => return Err(format!("--checkpointing {v}: expected none or layers")),
                }
            }
            f => return Err(format!("unknown flag {f}")),
        }
    }
    if a.seqs == 0 || a.prompt == 0 || a.response == 0 || a.repeats == 0 {
        return Err("--seqs, --prompt, --response and --repeats must be at least 1".into());
    }
    if a.micro == 0 {
        a.micro = a.seqs;
    }
    Ok(a)
}

fn main() {
    rl_models::allocator::tune_for_tensors();
    rl_models::threads::join_compute_pool();
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let result = match args.backend.as_str() {
        "cpu" => run::<Autodiff<Flex>>(&args, Default::default()),
        #[cfg(feature = "cuda")]
        "cuda" => {
            run::<Autodiff<burn::backend::Cuda>>(&args, burn::backend::cuda::CudaDevice::new(0))
        }
        b => Err(format!(
            "--backend {b}: not available in this build (cpu; cuda with --features cuda)"
        )
        .into()),
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

/// π_old: detached log-probs of every sequence's response, in micro-batches as the trainer
/// computes them.
fn old_logprobs<B: AutodiffBackend>(
    model: &CausalLm<B>,
    seqs: &[(Vec<u32>, Vec<u32>)],
    a: &Args,
) -> Result<Vec<Vec<f32>>, Box<dyn std::error::Error>> {
    let mut old: Vec<Vec<f32>> = Vec::with_capacity(seqs.len());
    for chunk in seqs.chunks(a.micro) {
        let ids: Vec<Vec<u32>> = chunk
            .iter()
            .map(|(p, r)| [p.clone(), r.clone()].concat())
            .collect();
        let starts = vec![a.prompt - 1; chunk.len()];
        old.extend(model.logprobs_detached(&ids, &starts, a.response, 1.0)?);
    }
    Ok(old)
}

/// A peak for the progress lines: "1234 MiB", or "not reported".
fn mib(peak: Option<f64>) -> String {
    peak.map_or_else(|| "not reported".into(), |p| format!("{p:.0} MiB"))
}

/// Waits for every queued operation on `device` (GPU backends run asynchronously).
fn sync<B: Backend>(device: &B::Device) -> Result<(), Box<dyn std::error::Error>> {
    B::sync(device).map_err(|e| format!("device sync: {e:?}").into())
}

fn run<B: AutodiffBackend>(a: &Args, device: B::Device) -> Result<(), Box<dyn std::error::Error>> {
    let config = match a.shape.as_str() {
        "0.6b" => ModelConfig::qwen3_0_6b(),
        "1.7b" => ModelConfig::qwen3_1_7b(),
        "tiny" => ModelConfig::tiny(256),
        s => return Err(format!("--shape {s}: expected 0.6b, 1.7b or tiny").into()),
    };
    let t = Instant::now();
    let mut model: CausalLm<B> = config.init_seeded(a.seed, &device)?;
    if a.lora_r > 0 {
        model = model.with_lora(&LoraConfig::new(a.lora_r, 2.0 * a.lora_r as f64), a.seed)?;
    }
    sync::<B>(&device)?;
    let init_s = t.elapsed().as_secs_f64();
    eprintln!(
        "random Qwen3 ({} parameters) on {} in {init_s:.1} s",
        config.num_parameters(),
        a.backend
    );

    let mut rng = ChaCha8Rng::seed_from_u64(a.seed);
    let vocab = config.vocab_size as u32;
    let mut draw = |n: usize| -> Vec<u32> { (0..n).map(|_| rng.random_range(0..vocab)).collect() };
    let seqs: Vec<(Vec<u32>, Vec<u32>)> = (0..a.seqs)
        .map(|_| (draw(a.prompt), draw(a.response)))
        .collect();

    // bf16 against f32 on the same sequences, before the run (the f32 pass is not timed)
    let mut gap = serde_json::Value::Null;
    if a.dtype != ComputeDtype::F32 {
        let f32_lp = old_logprobs(&model, &seqs, a)?;
        model = model.with_compute_dtype(a.dtype)?;
        let lp = old_logprobs(&model, &seqs, a)?;
        let d: Vec<f64> = f32_lp
            .iter()
            .flatten()
            .zip(lp.iter().flatten())
            .map(|(x, y)| f64::from((x - y).abs()))
            .collect();
        let max = d.iter().cloned().fold(0.0, f64::max);
        let mean = d.iter().sum::<f64>() / d.len().max(1) as f64;
        eprintln!(
            "{} log-probs against f32: max |Δ| {max:.4}, mean |Δ| {mean:.5} over {} tokens",
            a.dtype,
            d.len()
        );
        gap = serde_json::json!({ "max": max, "mean": mean, "tokens": d.len() });
    }

    let mut c = TrainConfig::default();
    c.apply_preset("da3po")?;
    let mut optim = AdamWOptimizer::<B, CausalLm<B>>::new(&c.optim);

    let mut runs = Vec::with_capacity(a.repeats);
    for r in 1..=a.repeats {
        // π_old: detached log-probs of the response tokens, in micro-batches as the trainer
        // runs it.
        let peak = PhasePeak::start();
        let t = Instant::now();
        let old = old_logprobs(&model, &seqs, a)?;
        let old_s = t.elapsed().as_secs_f64();
        let old_peak = peak.peak_mb();
        eprintln!(
            "[{r}/{}] π_old forward: {old_s:.1} s, peak RSS {}",
            a.repeats,
            mib(old_peak)
        );

        let train: Vec<TrainSeq<'_>> = seqs
            .iter()
            .zip(&old)
            .enumerate()
            .map(|(i, ((p, r), o))| TrainSeq {
                prompt: p,
                response: r,
                old_logp: o,
                rollout_logp: &[],
                ref_logp: None,
                advantage: if i < a.seqs / 2 { 1.0 } else { -1.0 },
                token_advantages: None,
                train: true,
                is_weights: None,
                keep: None,
                sampled: None,
            })
            .collect();
        let settings = UpdateSettings {
            lr: 1e-6,
            loss: &c.loss,
            micro_batch: a.micro,
            micro_batch_tokens: a.micro_tokens,
            memory: a.plan,
            temperature: 1.0,
            old: OldLogprobs::Given,
        };
        let peak = PhasePeak::start();
        let t = Instant::now();
        let out = policy_update(model, &mut optim, settings, &train, &device)?;
        sync::<B>(&device)?;
        let update_s = t.elapsed().as_secs_f64();
        let update_peak = peak.peak_mb();
        eprintln!(
            "[{r}/{}] update: {update_s:.1} s, peak RSS {}",
            a.repeats,
            mib(update_peak)
        );
        model = out.policy;
        runs.push(serde_json::json!({
            "old_logprobs_s": old_s,
            "update_s": update_s,
            "peak_rss_old_logprobs_mb": old_peak,
            "peak_rss_update_mb": update_peak,
            "per_phase_peaks": peak.is_per_phase(),
            "loss": out.metrics.loss,
            "grad_norm": out.grad_norm,
            "applied": out.applied,
        }));
    }
    let mut report = serde_json::json!({
        "backend": a.backend,
        "shape": a.shape,
        "parameters": config.num_parameters(),
        "seqs": a.seqs,
        "prompt": a.prompt,
        "response": a.response,
        "micro_batch": a.micro,
        "micro_batch_tokens": a.micro_tokens,
        "logprob_chunk": a.plan.logprob_chunk,
        "checkpointing": a.plan.checkpointing,
        "lora_r": a.lora_r,
        "dtype": a.dtype,
        "logprob_gap_vs_f32": gap,
        "init_s": init_s,
        "repeats": a.repeats,
    });
    // the last repeat's seconds and peaks at the top level (the only one by default)
    if let (Some(top), Some(serde_json::Value::Object(last))) =
        (report.as_object_mut(), runs.last())
    {
        top.extend(last.clone());
    }
    report["runs"] = serde_json::Value::Array(runs);
    println!("{report}");
    Ok(())
}
