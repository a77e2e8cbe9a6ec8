//! What a project that depends on rl-models and rl-trainer gets, built outside the rlvr
//! workspace (scripts/outside-crate.sh builds and runs it, with or without rlvr's patch section):
//!
//! 1. which of rlvr's patched crates the build has (`rl_models::patches`), checked against
//!    `--expect patched|unpatched`;
//! 2. cross-process workers: refused with the fix named when the collective crates are the
//!    published ones, accepted with the patched copies;
//! 3. a short DA3PO run of the embedded arithmetic task (`--size tiny`: a one-layer model for a
//!    smoke test; `--size default`: the main example's model, for timing), with the run's note
//!    about missing patches checked, and the median seconds per step of steps 2.. printed.
//!
//! `rlvr-outside-crate --expect unpatched [--size tiny|default] [--steps N] [--out DIR]`

use std::path::PathBuf;
use std::process::ExitCode;

use burn::backend::{Autodiff, Flex};
use rl_trainer::distributed::{Topology, WorkerConfig};
use rl_trainer::tasks::ArithmeticDemo;
use rl_trainer::{Run, RunEvent};

/// A one-layer model and a few prompts: seconds even in an unoptimised build.
const TINY: &str = "train_per_tier = 40\neval_per_tier = 4\nhidden_size = 32\n\
                    num_hidden_layers = 1\nnum_attention_heads = 2\nintermediate_size = 64\n\
                    [sft]\nsteps = 4\nbatch_size = 16\n";

struct Args {
    patched: bool,
    tiny: bool,
    steps: usize,
    out: PathBuf,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        patched: false,
        tiny: true,
        steps: 2,
        out: std::env::temp_dir().join(format!("rlvr-outside-crate-{}", std::process::id())),
    };
    let mut expect = None;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--expect" => expect = Some(value()?),
            "--size" => {
                args.tiny = match value()?.as_str() {
                    "tiny" => true,
                    "default" => false,
                    v => return Err(format!("--size {v}: expected tiny or default")),
                }
            }
            "--steps" => {
                let v = value()?;
                args.steps = v
                    .parse()
                    .map_err(|_| format!("--steps {v}: expected a number"))?;
            }
            "--out" => args.out = PathBuf::from(value()?),
            f => return Err(format!("unknown argument {f}")),
        }
    }
    args.patched = match expect.as_deref() {
        Some("patched") => true,
        Some("unpatched") => false,
        Some(v) => return Err(format!("--expect {v}: expected patched or unpatched")),
        None => return Err("--expect patched|unpatched is required".into()),
    };
    Ok(args)
}

/// 1. The build's patches, as rl-models reports them, against what was expected.
fn check_patches(patched: bool) -> Result<(), String> {
    for p in rl_models::patches::cpu_backend() {
        println!(
            "{:<20} {}",
            p.krate,
            if p.applied {
                "rlvr's patched copy"
            } else {
                "as published"
            }
        );
        if p.applied != patched {
            return Err(format!(
                "{} is {} in this build, expected {}",
                p.krate,
                if p.applied { "patched" } else { "published" },
                if patched { "patched" } else { "published" }
            ));
        }
    }
    println!(
        "{:<20} {}",
        "burn-collective",
        if rl_trainer::distributed::patched_collective() {
            "rlvr's patched copy (with burn-communication)"
        } else {
            "as published"
        }
    );
    if rl_trainer::distributed::patched_collective() != patched {
        return Err("burn-collective / burn-communication are not as expected".into());
    }
    Ok(())
}

/// 2. A cross-process world: refused, naming the fix, without the patched collective crates.
fn check_processes(patched: bool) -> Result<(), String> {
    let worker = WorkerConfig {
        topology: Topology::Global {
            orchestrator: "127.0.0.1:29400".into(),
            node: "127.0.0.1:29401".into(),
        },
        ..WorkerConfig::local(2, 0)
    };
    match (worker.validate(), patched) {
        (Ok(()), true) => println!("cross-process workers: accepted"),
        (Err(e), false) if e.to_string().contains("[patch.crates-io]") => {
            println!("cross-process workers: refused, as they must be:\n  {e}")
        }
        (r, _) => return Err(format!("cross-process workers: unexpected {r:?}")),
    }
    Ok(())
}

/// 3. A short run; returns the median seconds per step of steps 2.. (all steps if fewer).
fn train(args: &Args) -> Result<f64, String> {
    let demo = if args.tiny {
        ArithmeticDemo::from_toml_str(TINY)
    } else {
        Ok(ArithmeticDemo::default())
    }
    .map_err(|e| e.to_string())?;
    let mut config = demo
        .train_config("da3po", 0, &args.out)
        .map_err(|e| e.to_string())?;
    config.steps = args.steps;
    if args.tiny {
        config.rollout.prompts_per_round = 4;
        config.rollout.group_size = 4;
        config.batch.groups_per_step = 2;
    } else {
        // As `cargo run --example da3po_qwen3` trains.
        config.optim.micro_batch_tokens = 1024;
    }
    let mut times = Vec::new();
    let mut notes = Vec::new();
    let run = Run::embedded(demo, config).map_err(|e| e.to_string())?;
    run.execute::<Autodiff<Flex>>(Default::default(), |event| match event {
        RunEvent::Step { metrics, .. } if metrics.step > 0 => {
            println!(
                "step {:>3}  reward {:+.3}  {:.3} s",
                metrics.step, metrics.reward_mean, metrics.time_step_s
            );
            times.push(metrics.time_step_s);
        }
        RunEvent::Note(n) => notes.push(n.to_string()),
        _ => {}
    })
    .map_err(|e| e.to_string())?;
    std::fs::remove_dir_all(&args.out).ok();
    if times.len() != args.steps {
        return Err(format!(
            "{} steps reported, {} asked for",
            times.len(),
            args.steps
        ));
    }
    let warned = notes.iter().any(|n| n.contains("as published"));
    if warned == args.patched {
        return Err(format!(
            "the run's note about missing patches was {} (notes: {notes:?})",
            if warned { "written" } else { "not written" }
        ));
    }
    let mut tail = if times.len() > 1 {
        times[1..].to_vec()
    } else {
        times
    };
    tail.sort_by(f64::total_cmp);
    Ok(tail[tail.len() / 2])
}

fn main() -> ExitCode {
    let result = parse_args().and_then(|args| {
        check_patches(args.patched)?;
        check_processes(args.patched)?;
        let median = train(&args)?;
        println!(
            "{{\"patched\": {}, \"size\": \"{}\", \"steps\": {}, \"median_step_s\": {median:.4}}}",
            args.patched,
            if args.tiny { "tiny" } else { "default" },
            args.steps
        );
        Ok(())
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rlvr-outside-crate: error: {e}");
            ExitCode::FAILURE
        }
    }
}
