//! The GRPO / DAPO / DA3PO comparison of `rlvr compare`: the DA3PO paper's experiment at small
//! scale. Every algorithm starts from the same warm-started model per seed, trains on the
//! embedded arithmetic task with an equal budget of generated responses, and is evaluated on the
//! same held-out prompts. [`run_all`] trains (reusing finished runs whose resolved configuration
//! is unchanged); [`report`] reads the runs' metrics and builds a markdown section and a plot;
//! [`write_section`] replaces that section of a document (docs/results.md) between markers.

use std::path::Path;
use std::time::Instant;

use burn::tensor::backend::AutodiffBackend;
use rl_models::CausalLm;
use rl_trainer::{RunEvent, TrainConfig, Trainer, TrainerError};

use rl_trainer::tasks::demo::ArithmeticDemo;

mod report;
mod spec;

pub use report::{CompareReport, report};
pub(crate) use report::{evals, hard_mixed_fraction};
pub(crate) use spec::scale_line;
use spec::{BEGIN, END};
pub use spec::{BudgetArm, CompareSpec, Variant, budget, run_dir};

/// Marker file written into a run folder when its run has finished: the run's resolved config.
pub const COMPLETE: &str = "COMPLETE";

/// The resolved configuration of one run: the demo's config with `algo`'s preset, the shared
/// budget of generated responses, and generation rounds sized to the run's observed keep rate
/// (at most 2N prompts a round), so that dynamic sampling pays for the groups it filters out
/// but little for kept groups that are dropped because the batch is already full.
pub fn run_config(
    spec: &CompareSpec,
    demo: &ArithmeticDemo,
    algo: &str,
    seed: u64,
) -> Result<TrainConfig, TrainerError> {
    let variant = Variant::parse(algo)?;
    let mut cfg = demo.train_config(&variant.preset, seed, &run_dir(spec, seed, algo))?;
    variant.apply(&mut cfg, &spec.probe)?;
    cfg.batch.round_sizing = rl_sampler::RoundSizing::Adaptive;
    cfg.rollout.prompts_per_round = 2 * cfg.batch.groups_per_step;
    match spec.steps {
        Some(steps) => {
            cfg.steps = steps;
            cfg.rollout_budget = 0;
        }
        None => {
            cfg.rollout_budget = budget(spec, demo);
            cfg.steps = cfg.rollout_budget; // never the binding limit
        }
    }
    cfg.eval.every = spec.eval_every;
    cfg.checkpoint.every = 0;
    cfg.validate()?;
    Ok(cfg)
}

/// Trains every (seed, algorithm) run of `spec` that has not finished with its current
/// configuration. `log` receives one line per decision, `on_event` every run's events.
pub fn run_all<B: AutodiffBackend>(
    spec: &CompareSpec,
    demo: &ArithmeticDemo,
    device: &B::Device,
    log: &mut dyn FnMut(String),
    on_event: &mut dyn FnMut(RunEvent<'_>),
) -> Result<(), TrainerError> {
    let data = demo.data()?;
    let budget = match spec.steps {
        Some(s) => format!("{s} optimizer steps"),
        None => format!("a budget of {} responses", budget(spec, demo)),
    };
    let late = || spec.deadline.is_some_and(|d| Instant::now() >= d);
    for &seed in &spec.seeds {
        let ws = spec.out.join(format!("seed-{seed}")).join("warm_start");
        let todo: Vec<&String> = spec
            .algorithms
            .iter()
            .filter(|a| !is_complete(spec, demo, a, seed))
            .collect();
        if todo.is_empty() {
            log(format!("seed {seed}: all runs already complete"));
            continue;
        }
        if late() {
            log(format!(
                "seed {seed}: not started, the time limit has passed ({} runs left)",
                todo.len()
            ));
            continue;
        }
        let model: CausalLm<B> = if ws.join("config.json").exists() {
            log(format!("seed {seed}: reusing {}", ws.display()));
            CausalLm::load(&ws, device)?
        } else {
            log(format!(
                "seed {seed}: supervised warm-start ({} updates)",
                demo.sft.steps
            ));
            let m = demo.warm_start::<B>(&data, seed, device, |_, _| {})?;
            m.save(&ws)?;
            m
        };
        for algo in todo {
            if late() {
                log(format!(
                    "seed {seed}: {algo} not started, the time limit has passed"
                ));
                continue;
            }
            let cfg = run_config(spec, demo, algo, seed)?;
            let out = cfg.out_dir.clone();
            let resolved = cfg.to_toml();
            let marker = out.join(COMPLETE);
            log(format!("seed {seed}: {algo} with {budget}"));
            // What an interrupted or differently configured run left is not resumed: the
            // comparison's runs are short, and a clean folder keeps one metrics line per step.
            if out.exists() {
                std::fs::remove_dir_all(&out).map_err(|e| TrainerError::io(&out, e))?;
            }
            let mut t = Trainer::<B, CausalLm<B>>::new(
                cfg,
                model.clone(),
                data.tokenizer.clone(),
                data.train.clone(),
                Some(data.eval.clone()),
                device.clone(),
            )?;
            t.run(&mut *on_event)?;
            std::fs::write(&marker, resolved).map_err(|e| TrainerError::io(&marker, e))?;
        }
    }
    Ok(())
}

/// Whether the run of (`algo`, `seed`) finished with exactly the configuration it would get
/// now (an interrupted comparison resumes run by run; any other run in the folder is redone).
///
/// The marker holds the resolved config as it was written. A config key added to rlvr later
/// (with the default that keeps the old behaviour) is missing from older markers, so the marker
/// is also read back as a [`TrainConfig`] — the missing keys take their defaults — and compared
/// after writing it out again: the committed study runs stay complete when the config grows.
pub fn is_complete(spec: &CompareSpec, demo: &ArithmeticDemo, algo: &str, seed: u64) -> bool {
    let Ok(cfg) = run_config(spec, demo, algo, seed) else {
        return false;
    };
    let now = cfg.to_toml();
    std::fs::read_to_string(cfg.out_dir.join(COMPLETE)).is_ok_and(|done| {
        done == now || toml::from_str::<TrainConfig>(&done).is_ok_and(|c| c.to_toml() == now)
    })
}

/// Replaces the text between the markers in `path` (or appends it), keeping the rest.
pub fn write_section(path: &Path, section: &str) -> Result<(), TrainerError> {
    write_between(path, BEGIN, END, section)
}

/// Replaces the text from `begin` to `end` in `path` with `section` (which carries the markers),
/// or appends `section`, keeping the rest of the file.
pub fn write_between(
    path: &Path,
    begin: &str,
    end: &str,
    section: &str,
) -> Result<(), TrainerError> {
    let old = std::fs::read_to_string(path).unwrap_or_default();
    let new = match (old.find(begin), old.find(end)) {
        (Some(a), Some(b)) if a < b => format!(
            "{}{}{}",
            &old[..a],
            section.trim_end(),
            &old[b + end.len()..]
        ),
        _ if old.is_empty() => format!("# Results\n\n{section}"),
        _ => format!("{}\n\n{section}", old.trim_end()),
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| TrainerError::io(dir, e))?;
    }
    std::fs::write(path, new).map_err(|e| TrainerError::io(path, e))
}
