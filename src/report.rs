//! What a training run shows: progress while it trains, then held-out accuracy by tier before →
//! after ([`report`]) and the learning-curve plot of its metrics ([`plot_run`]);
//! [`train_and_report`] does all three, for `rlvr train` and the examples.

use std::collections::BTreeMap;
use std::path::Path;

use burn::tensor::backend::AutodiffBackend;
use rl_trainer::{EvalReport, Run, StepMetrics, TrainConfig, TrainerError, read_metrics};

use rl_lab::plot::{Panel, PlotError, Series, save_png};

/// Held-out avg@k per tier, training accuracy/reward, and dynamic-sampling statistics vs step.
pub fn plot_run(metrics: &[StepMetrics], title: &str, path: &Path) -> Result<(), PlotError> {
    let mut tiers: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut overall = Vec::new();
    for m in metrics {
        if let Some(e) = &m.eval {
            overall.push((m.step as f64, e.overall.avg_at_k));
            for (t, v) in &e.tiers {
                tiers
                    .entry(t.clone())
                    .or_default()
                    .push((m.step as f64, v.avg_at_k));
            }
        }
    }
    let mut eval =
        Panel::new(format!("{title}: held-out avg@k"), "step", "accuracy").with_y_range(0.0, 1.0);
    for (t, pts) in tiers {
        eval = eval.with_series(Series::new(t, pts));
    }
    eval = eval.with_series(Series::new("overall", overall));
    let train: Vec<&StepMetrics> = metrics.iter().filter(|m| m.step > 0).collect();
    let pts = |f: &dyn Fn(&StepMetrics) -> f64| -> Vec<(f64, f64)> {
        train.iter().map(|m| (m.step as f64, f(m))).collect()
    };
    // The share of generated responses in which the verifier found an answer to compare.
    let well_formed: Vec<(f64, f64)> = train
        .iter()
        .filter_map(|m| {
            let total: u64 = m.outcomes.values().sum();
            let unparseable = m.outcomes.get("unparseable_response").copied().unwrap_or(0);
            (total > 0).then(|| (m.step as f64, 1.0 - unparseable as f64 / total as f64))
        })
        .collect();
    let rollout = Panel::new("rollouts (all generated responses)", "step", "")
        .with_series(Series::new("accuracy", pts(&|m| m.acc)))
        .with_series(Series::new(
            "frac. groups all-wrong",
            pts(&|m| m.frac_all_wrong),
        ))
        .with_series(Series::new(
            "frac. groups all-correct",
            pts(&|m| m.frac_all_correct),
        ))
        .with_series(Series::new(
            "frac. responses amplified (DAA)",
            pts(&|m| m.frac_amplified),
        ))
        .with_series(Series::new("well-formed (an answer found)", well_formed))
        .with_series(Series::new(
            "truncated (max_new_tokens)",
            pts(&|m| m.truncation_rate),
        ));
    let sampling = Panel::new("dynamic sampling", "step", "")
        .with_series(Series::new(
            "generation rounds",
            pts(&|m| m.gen_rounds as f64),
        ))
        .with_series(Series::new(
            "kept / seen groups",
            pts(&|m| m.groups_kept as f64 / m.groups_seen.max(1) as f64),
        ));
    // Steps that kept no group train nothing: no length, entropy or gradient to show.
    let trained: Vec<&&StepMetrics> = train.iter().filter(|m| m.updates > 0).collect();
    let tpts = |f: &dyn Fn(&StepMetrics) -> f64| -> Vec<(f64, f64)> {
        trained.iter().map(|m| (m.step as f64, f(m))).collect()
    };
    let lengths = Panel::new("trained responses", "step", "tokens")
        .with_series(Series::new("mean length", tpts(&|m| m.response_len_mean)))
        .with_series(Series::new("longest", tpts(&|m| m.response_len_max as f64)));
    let loss = Panel::new("policy", "step", "")
        .with_series(Series::new("entropy (nats/token)", tpts(&|m| m.entropy)))
        .with_series(Series::new(
            "clip frac (upper)",
            tpts(&|m| m.clip_frac_upper),
        ));
    let grad = Panel::new("update", "step", "").with_series(Series::new(
        "grad norm (before clipping)",
        tpts(&|m| m.grad_norm),
    ));
    // Multi-turn runs: how often the model calls a tool, in rollouts and on held-out prompts.
    let tool_steps: Vec<(f64, f64)> = train
        .iter()
        .filter_map(|m| {
            m.episodes
                .as_ref()
                .map(|e| (m.step as f64, e.tool_call_rate))
        })
        .collect();
    let tool_eval: Vec<(f64, f64)> = metrics
        .iter()
        .filter_map(|m| {
            m.eval
                .as_ref()
                .and_then(|e| e.tool_call_rate)
                .map(|r| (m.step as f64, r))
        })
        .collect();
    let tools = Panel::new("tool use (episodes with a tool call)", "step", "rate")
        .with_y_range(0.0, 1.0)
        .with_series(Series::new("rollouts", tool_steps))
        .with_series(Series::new("held-out", tool_eval));
    let panels: Vec<Panel> = [eval, tools, rollout, sampling, lengths, loss, grad]
        .into_iter()
        .filter(|p| {
            p.series
                .iter()
                .any(|s| s.points.iter().any(|(x, y)| x.is_finite() && y.is_finite()))
        })
        .collect();
    if panels.is_empty() {
        return Err(PlotError::Empty(title.to_string()));
    }
    let cols = panels.len().min(2);
    save_png(path, &panels, cols)
}

fn print_eval(label: &str, e: &EvalReport) {
    println!(
        "{label:<24} overall avg@{k} {:.3} pass@{k} {:.3}",
        e.overall.avg_at_k,
        e.overall.pass_at_k,
        k = e.overall.k
    );
    for (t, v) in &e.tiers {
        println!(
            "{:<24}   {t:<7} avg@{k} {:.3} pass@{k} {:.3}",
            "",
            v.avg_at_k,
            v.pass_at_k,
            k = v.k
        );
    }
}

/// Summarises a finished run from its metrics file and draws `learning_curve.png`.
/// After a run: the held-out avg@k by tier at the first and last evaluation, the learning curve
/// (`out_dir/learning_curve.png`) and the run folder; returns the run's metrics.
pub fn report(config: &TrainConfig) -> Result<Vec<StepMetrics>, TrainerError> {
    let out = &config.out_dir;
    let metrics = read_metrics(&out.join("metrics.jsonl"))?;
    let evals: Vec<_> = metrics
        .iter()
        .filter_map(|m| m.eval.as_ref().map(|e| (m.step, e)))
        .collect();
    if let (Some((s0, first)), Some((s1, last))) = (evals.first(), evals.last()) {
        print_eval(&format!("held-out, step {s0}:"), first);
        print_eval(&format!("held-out, step {s1}:"), last);
        println!(
            "held-out avg@k, step {s0} -> step {s1} (± half-width of the 95 % interval, 1.96 standard errors over prompts):"
        );
        let line = |name: &str, a: &rl_trainer::TierEval, b: &rl_trainer::TierEval| {
            println!(
                "{name:<8} avg@{}: {:.3} ± {:.3} -> {:.3} ± {:.3} ({:+.3})",
                b.k,
                a.avg_at_k,
                1.96 * a.avg_std_error,
                b.avg_at_k,
                1.96 * b.avg_std_error,
                b.avg_at_k - a.avg_at_k
            )
        };
        for (tier, a) in &first.tiers {
            if let Some(b) = last.tiers.get(tier) {
                line(tier, a, b);
            }
        }
        if first.tiers.len() > 1 {
            line("overall", &first.overall, &last.overall);
        }
    }
    let png = out.join("learning_curve.png");
    plot_run(&metrics, &config.algorithm, &png).map_err(|e| TrainerError::Metrics {
        path: png.display().to_string(),
        message: format!("drawing the learning curve: {e}"),
    })?;
    println!(
        "run folder: {} (config.toml, metrics.jsonl, checkpoints/, learning_curve.png)",
        out.display()
    );
    Ok(metrics)
}

/// Trains `run` with progress on the terminal, then (leading process) the report of
/// [`report`]: held-out accuracy before → after and the learning curve.
pub fn train_and_report<B: AutodiffBackend>(
    run: Run,
    device: B::Device,
) -> Result<(), TrainerError> {
    let (config, leads) = (run.config.clone(), run.leads());
    let mut progress = crate::progress::Progress::new(leads);
    run.execute::<B>(device, |e| progress.on_event(e))?;
    if leads {
        report(&config)?;
    }
    Ok(())
}
