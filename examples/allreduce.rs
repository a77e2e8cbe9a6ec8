//! All-reduce cost of a data-parallel update: every parameter-shaped gradient of a Qwen3 model
//! summed over 2+ workers with burn-collective, as `rl_trainer::distributed::Worker` does after
//! each mini-batch.
//!
//! ```text
//! cargo run --example allreduce -- --threads 2             # workers = threads of one process
//! cargo run --example allreduce -- --processes 2           # workers = processes + orchestrator
//! cargo run --example allreduce -- --processes 2 --model tiny
//! ```
//!
//! With `--processes N` this program starts burn's global orchestrator on `--port` in a thread,
//! then N copies of itself as workers (`--rank r`, node port `--port + 1 + r`), and prints one
//! line per worker. Each worker builds the model (`--model qwen3-0.6b` by default: 596 M
//! parameters, 2.4 GB of f32 gradients), then all-reduces tensors of every parameter's shape
//! `--repeats` times; the first repeat includes connection set-up and is reported apart. The sum
//! is checked: each worker contributes its parameters × (rank + 1), so the result must be the
//! parameters × N(N+1)/2.

use std::process::{Command, Stdio};
use std::time::Instant;

use burn::backend::Flex;
use burn::module::{Module, ModuleVisitor, Param};
use burn::prelude::*;
use clap::Parser;
use rl_models::{CausalLm, ModelConfig};
use rl_trainer::distributed::{Topology, Worker, WorkerConfig, run_orchestrator};

type Bk = Flex;

#[derive(Parser, Clone)]
#[command(about = "time burn-collective all-reduces of Qwen3-shaped gradients")]
struct Args {
    /// Workers as threads of this process.
    #[arg(long)]
    threads: Option<usize>,
    /// Workers as processes joined by an orchestrator this program starts.
    #[arg(long)]
    processes: Option<usize>,
    /// `qwen3-0.6b` or `tiny`.
    #[arg(long, default_value = "qwen3-0.6b")]
    model: String,
    /// All-reduces of the whole gradient set per worker.
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    /// Orchestrator port; workers use the next ports.
    #[arg(long, default_value_t = 29400)]
    port: u16,
    /// (internal) this worker's rank, with `--world`.
    #[arg(long)]
    rank: Option<usize>,
    /// (internal) number of worker processes.
    #[arg(long)]
    world: Option<usize>,
}

struct Collect(Vec<Tensor<Bk, 1>>);

impl ModuleVisitor<Bk> for Collect {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<Bk, D>>) {
        self.0.push(param.val().flatten(0, D - 1));
    }
}

fn tensors(model: &str) -> Vec<Tensor<Bk, 1>> {
    let cfg = match model {
        "tiny" => ModelConfig::tiny(1000),
        "qwen3-0.6b" => ModelConfig::qwen3_0_6b(),
        other => {
            eprintln!("--model: unknown `{other}` (valid: qwen3-0.6b, tiny)");
            std::process::exit(2);
        }
    };
    let m: CausalLm<Bk> = cfg.init_seeded(0, &Default::default()).expect("model");
    let mut c = Collect(Vec::new());
    m.visit(&mut c);
    c.0
}

/// One worker: returns (parameters, seconds of the first repeat, mean seconds of the others).
fn worker(cfg: WorkerConfig, model: &str, repeats: usize) -> (usize, f64, f64) {
    let (rank, world) = (cfg.rank, cfg.world_size);
    let grads = tensors(model);
    let n: usize = grads.iter().map(|t| t.dims()[0]).sum();
    let w = Worker::<Bk>::join(cfg, &Default::default()).expect("join");
    let mut times = Vec::new();
    for _ in 0..repeats.max(1) {
        let t0 = Instant::now();
        let mut check = 0f64;
        let mut expect = 0f64;
        for g in &grads {
            let mine = g.clone().mul_scalar((rank + 1) as f32);
            let sum = w.all_reduce_sum("gradient", mine).expect("all-reduce");
            // Checked on the first element only (reading all back would time the host copy).
            check += sum.slice(0..1).into_scalar().elem::<f64>();
            expect += g.clone().slice(0..1).into_scalar().elem::<f64>()
                * (world * (world + 1) / 2) as f64;
        }
        times.push(t0.elapsed().as_secs_f64());
        assert!(
            (check - expect).abs() <= 1e-4 * expect.abs().max(1.0),
            "wrong sum: {check} vs {expect}"
        );
    }
    w.leave().expect("leave");
    let rest = if times.len() > 1 {
        times[1..].iter().sum::<f64>() / (times.len() - 1) as f64
    } else {
        f64::NAN
    };
    (n, times[0], rest)
}

fn report(rank: usize, world: usize, how: &str, (n, first, rest): (usize, f64, f64)) {
    println!(
        "{{\"workers\": {world}, \"how\": \"{how}\", \"rank\": {rank}, \"params\": {n}, \
         \"bytes_per_worker\": {}, \"first_s\": {first:.3}, \"steady_s\": {rest:.3}}}",
        n * 4
    );
}

fn main() {
    let a = Args::parse();
    if let (Some(rank), Some(world)) = (a.rank, a.world) {
        let cfg = WorkerConfig {
            timeout_s: 900.0,
            topology: Topology::Global {
                orchestrator: format!("127.0.0.1:{}", a.port),
                node: format!("127.0.0.1:{}", a.port + 1 + rank as u16),
            },
            ..WorkerConfig::local(world, rank)
        };
        report(rank, world, "processes", worker(cfg, &a.model, a.repeats));
    } else if let Some(n) = a.processes {
        let port = a.port;
        std::thread::spawn(move || run_orchestrator(port));
        std::thread::sleep(std::time::Duration::from_millis(500));
        let exe = std::env::current_exe().expect("own path");
        let children: Vec<_> = (0..n)
            .map(|r| {
                Command::new(&exe)
                    .args(["--model", &a.model, "--repeats", &a.repeats.to_string()])
                    .args(["--port", &port.to_string(), "--rank", &r.to_string()])
                    .args(["--world", &n.to_string()])
                    .stdout(Stdio::inherit())
                    .spawn()
                    .expect("start a worker")
            })
            .collect();
        for mut c in children {
            let s = c.wait().expect("worker");
            if !s.success() {
                eprintln!("a worker failed: {s}");
                std::process::exit(1);
            }
        }
    } else {
        let n = a.threads.unwrap_or(2);
        std::thread::scope(|s| {
            for r in 0..n {
                let model = a.model.clone();
                s.spawn(move || {
                    report(
                        r,
                        n,
                        "threads",
                        worker(WorkerConfig::local(n, r), &model, a.repeats),
                    )
                });
            }
        });
    }
}
