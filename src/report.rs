//! Learning-curve plots of a training run's metrics.

use std::collections::BTreeMap;
use std::path::Path;

use rl_trainer::StepMetrics;

use crate::plot::{Panel, PlotError, Series, save_png};

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
    let loss = Panel::new("policy", "step", "")
        .with_series(Series::new("entropy", pts(&|m| m.entropy)))
        .with_series(Series::new(
            "clip frac (upper)",
            pts(&|m| m.clip_frac_upper),
        ))
        .with_series(Series::new("grad norm", pts(&|m| m.grad_norm)));
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
    let panels: Vec<Panel> = [eval, tools, rollout, sampling, loss]
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
