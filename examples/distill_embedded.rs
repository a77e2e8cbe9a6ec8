//! On-policy distillation against RL on the embedded arithmetic task: does a student distilled
//! from a trained teacher reach the teacher's held-out accuracy in fewer generated responses
//! than RL from the same start?
//!
//! `cargo run --example distill_embedded [-- --seeds 1,2,3 --steps 80]`
//!
//! 1. The embedded run's tokenizer, split and supervised warm-start (as
//!    `cargo run --example da3po_qwen3`), saved to `runs/distill_embedded/warm_start/`.
//! 2. The teacher: DA3PO from the warm start for `--steps` steps with seed 0, saved to
//!    `runs/distill_embedded/teacher/`; its final held-out avg@k is the target.
//! 3. For each seed, from the same warm start: DA3PO (the verifier's reward), and on-policy
//!    distillation (`configs/distill_embedded.toml`: `[distill]` sampled-token reverse KL, no
//!    reward, no dynamic-sampling filter), each evaluated every 10 steps.
//! 4. A table of the generated responses each run needed to reach the teacher's accuracy, and
//!    `runs/distill_embedded/curves.png` (held-out avg@k against generated responses).
//!
//! Reusing a finished run: each run folder with a complete `metrics.jsonl` is read, not
//! trained again (delete the folder to train it again).

use std::path::{Path, PathBuf};
use std::time::Instant;

use burn::backend::{Autodiff, Flex};
use clap::Parser;
use rlvr::demo::{ArithmeticDemo, DemoData};
use rlvr::lab::plot::{Panel, Series, save_png};
use rlvr::models::CausalLm;
use rlvr::trainer::{StepMetrics, TrainConfig, Trainer, TrainerError, read_metrics};

type B = Autodiff<Flex>;

#[derive(Parser, Debug)]
#[command(about = "On-policy distillation vs RL on the embedded task, at equal seeds")]
struct Args {
    /// Seeds of the student runs (the teacher uses seed 0).
    #[arg(long, value_delimiter = ',', default_value = "1,2,3")]
    seeds: Vec<u64>,
    /// Steps of the teacher and of every student run.
    #[arg(long, default_value_t = 80)]
    steps: usize,
    /// The distillation settings (`[distill]` etc.); its `teacher` is replaced by this run's.
    #[arg(long, default_value = "configs/distill_embedded.toml")]
    config: PathBuf,
    /// Folder of every run.
    #[arg(long, default_value = "runs/distill_embedded")]
    out: PathBuf,
}

fn main() {
    if let Err(e) = run(Args::parse()) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> Result<(), TrainerError> {
    let t0 = Instant::now();
    let demo = ArithmeticDemo::default();
    let data = demo.data()?;
    let warm = warm_start(&demo, &data, &args.out.join("warm_start"))?;

    let teacher_dir = args.out.join("teacher");
    let teacher_cfg = rl_config(&demo, "da3po", 0, &teacher_dir, args.steps)?;
    let teacher = train(&data, &warm, teacher_cfg, "teacher (DA3PO, seed 0)")?;
    let model_dir = teacher_dir.join("model");
    if !model_dir.join("config.json").is_file() {
        return Err(TrainerError::Config {
            field: "teacher".into(),
            message: format!("{} holds no model", model_dir.display()),
        });
    }
    let target = final_accuracy(&teacher)?;
    println!("teacher's held-out avg@k: {target:.3} (the target)");

    let mut rows = Vec::new();
    let mut curves = Vec::new();
    let mut panel = Panel::new(
        "held-out avg@k vs generated responses",
        "generated responses",
        "held-out avg@k",
    );
    for &seed in &args.seeds {
        let rl_cfg = rl_config(
            &demo,
            "da3po",
            seed,
            &args.out.join(format!("rl-s{seed}")),
            args.steps,
        )?;
        let rl = train(&data, &warm, rl_cfg, &format!("RL (DA3PO), seed {seed}"))?;
        let mut dcfg = rl_config(
            &demo,
            "da3po",
            seed,
            &args.out.join(format!("distill-s{seed}")),
            args.steps,
        )?;
        dcfg = TrainConfig::from_toml_file(&args.config, &dcfg)?;
        if let Some(d) = &mut dcfg.distill {
            d.teacher = Some(model_dir.clone());
        }
        let distill = train(&data, &warm, dcfg, &format!("distillation, seed {seed}"))?;
        curves.push(curve(&rl));
        curves.push(curve(&distill));
        rows.push((
            seed,
            reached(&rl, target),
            reached(&distill, target),
            final_accuracy(&rl)?,
            final_accuracy(&distill)?,
        ));
        panel = panel
            .with_series(Series::new(format!("RL s{seed}"), curve(&rl)))
            .with_series(Series::new(format!("distill s{seed}"), curve(&distill)));
    }
    println!(
        "\n| seed | RL: responses to reach {target:.3} | distillation: responses | RL final | distillation final |"
    );
    println!("|---|---|---|---|---|");
    let show = |r: Option<u64>| r.map_or("not reached".to_string(), |n| n.to_string());
    for (seed, r, d, fr, fd) in &rows {
        println!(
            "| {seed} | {} | {} | {fr:.3} | {fd:.3} |",
            show(*r),
            show(*d)
        );
    }
    let points: Vec<(f64, f64)> = panel_points(&curves);
    let x_max = points.iter().map(|p| p.0).fold(0.0, f64::max);
    let lo = points.iter().map(|p| p.1).fold(target, f64::min);
    let hi = points.iter().map(|p| p.1).fold(target, f64::max);
    let panel = panel
        .with_series(Series::new("teacher", vec![(0.0, target), (x_max, target)]))
        .with_y_range((lo - 0.02).max(0.0), (hi + 0.02).min(1.0));
    let png = args.out.join("curves.png");
    save_png(&png, &[panel], 1).map_err(|e| TrainerError::Config {
        field: "plot".into(),
        message: e.to_string(),
    })?;
    println!(
        "\nplot: {}; total {:.0}s",
        png.display(),
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The embedded run's warm start, read from `dir` when it is there.
fn warm_start(
    demo: &ArithmeticDemo,
    data: &DemoData,
    dir: &Path,
) -> Result<CausalLm<B>, TrainerError> {
    let device = Default::default();
    if dir.join("config.json").is_file() {
        println!("warm start: {}", dir.display());
        return Ok(CausalLm::<B>::load(dir, &device)?);
    }
    println!("supervised warm start ({} updates)", demo.sft.steps);
    let model = demo.warm_start::<B>(data, 0, &device, |_, _| {})?;
    model.save(dir)?;
    Ok(model)
}

/// The embedded run's config for `algorithm` at `seed`: `steps` steps into `out`, evaluated
/// every 10 steps, micro-batches of 1024 padded tokens (as `da3po_qwen3`).
fn rl_config(
    demo: &ArithmeticDemo,
    algorithm: &str,
    seed: u64,
    out: &Path,
    steps: usize,
) -> Result<TrainConfig, TrainerError> {
    let mut c = demo.train_config(algorithm, seed, out)?;
    c.steps = steps;
    c.eval.every = 10;
    c.optim.micro_batch_tokens = 1024;
    Ok(c)
}

/// Trains `config` from `warm` (or reads its finished metrics) and returns its metrics.
fn train(
    data: &DemoData,
    warm: &CausalLm<B>,
    config: TrainConfig,
    label: &str,
) -> Result<Vec<StepMetrics>, TrainerError> {
    let metrics_path = config.out_dir.join("metrics.jsonl");
    if let Ok(m) = read_metrics(&metrics_path)
        && m.last()
            .is_some_and(|l| l.step == config.steps && l.eval.is_some())
    {
        println!("{label}: read {}", metrics_path.display());
        return Ok(m);
    }
    let _ = std::fs::remove_dir_all(&config.out_dir);
    let out = config.out_dir.clone();
    let t = Instant::now();
    let mut trainer = Trainer::<B, CausalLm<B>>::new(
        config,
        warm.clone(),
        data.tokenizer.clone(),
        data.train.clone(),
        Some(data.eval.clone()),
        Default::default(),
    )?;
    trainer.run(|_| {})?;
    trainer.policy().save(out.join("model"))?;
    let m = read_metrics(&metrics_path)?;
    println!(
        "{label}: {:.0}s, held-out avg@k {:.3} → {:.3}",
        t.elapsed().as_secs_f64(),
        m.first()
            .and_then(|s| s.eval.as_ref())
            .map_or(f64::NAN, |e| e.overall.avg_at_k),
        final_accuracy(&m)?
    );
    Ok(m)
}

fn final_accuracy(m: &[StepMetrics]) -> Result<f64, TrainerError> {
    m.iter()
        .rev()
        .find_map(|s| s.eval.as_ref().map(|e| e.overall.avg_at_k))
        .ok_or_else(|| TrainerError::Config {
            field: "eval".into(),
            message: "the run has no evaluation".into(),
        })
}

/// (generated responses, held-out avg@k) at every evaluation.
fn curve(m: &[StepMetrics]) -> Vec<(f64, f64)> {
    m.iter()
        .filter_map(|s| {
            s.eval
                .as_ref()
                .map(|e| (s.rollouts_total as f64, e.overall.avg_at_k))
        })
        .collect()
}

fn panel_points(curves: &[Vec<(f64, f64)>]) -> Vec<(f64, f64)> {
    curves.iter().flatten().copied().collect()
}

/// The generated responses at the first evaluation that reaches `target`.
fn reached(m: &[StepMetrics], target: f64) -> Option<u64> {
    m.iter()
        .find(|s| {
            s.eval
                .as_ref()
                .is_some_and(|e| e.overall.avg_at_k >= target)
        })
        .map(|s| s.rollouts_total)
}
