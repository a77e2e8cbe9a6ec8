//! Experiments: methods × seeds on the LM environment, metric rows with fixed names, and the
//! summary (mean ± std over seeds, steps to reach the best baseline, per-domain losses, overhead).
//!
//! Metric names: per step `train/loss`, `train/loss/<domain>`, `mix/<domain>`, `time/lm_ms`,
//! `time/stats_ms`, `time/agent_ms` and the scheduler's diagnostics (`reward/*`, `sac/*`,
//! `odm/*`); per evaluation `val/target_loss` (mean over the target domains) and
//! `val/loss/<domain>`.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use burn::tensor::backend::AutodiffBackend;
use serde::{Deserialize, Serialize};

use crate::data::{Corpus, DataConfig};
use crate::env::{LmEnv, LmTrainConfig};
use crate::error::{DatamixError, Result};
use crate::lm::LmConfig;
use crate::scheduler::SchedulerConfig;
use crate::stats::mean_population_std;

/// A method: a name and its scheduler (by default the scheduler of that name).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MethodConfig {
    /// Label in metrics and plots.
    pub name: String,
    /// Scheduler; when absent, [`SchedulerConfig::from_name`] of `name`.
    #[serde(default)]
    pub scheduler: Option<SchedulerConfig>,
}

impl MethodConfig {
    /// The method `name` with the default scheduler of that name.
    pub fn named(name: &str) -> Self {
        Self {
            name: name.into(),
            scheduler: None,
        }
    }

    /// The scheduler configuration.
    pub fn resolve(&self) -> Result<SchedulerConfig> {
        match &self.scheduler {
            Some(s) => Ok(s.clone()),
            None => SchedulerConfig::from_name(&self.name),
        }
    }
}

/// A whole experiment; round-trips through TOML (`rlvr mix --config FILE`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExperimentConfig {
    /// LM steps per run.
    pub steps: usize,
    /// Evaluate every this many steps (and at the end).
    pub eval_every: usize,
    /// Write a train metric row every this many steps.
    pub log_every: usize,
    /// Seeds; each seeds the model, the batches and the agent.
    pub seeds: Vec<u64>,
    /// Seed of the synthetic data (the same for every run).
    pub data_seed: u64,
    /// Methods compared.
    pub methods: Vec<MethodConfig>,
    /// Names of the methods counted as baselines for "steps to reach the best baseline".
    pub baselines: Vec<String>,
    /// Model size.
    pub model: LmConfig,
    /// LM training.
    pub train: LmTrainConfig,
    /// Domains.
    pub data: DataConfig,
}

impl Default for ExperimentConfig {
    fn default() -> Self {
        Self {
            steps: 1000,
            eval_every: 50,
            log_every: 10,
            seeds: vec![0, 1, 2],
            data_seed: 0,
            methods: [
                "uniform",
                "odm",
                "odm_group",
                "hds",
                "hds_align",
                "hds_quality",
                "hds_stability",
            ]
            .iter()
            .map(|n| MethodConfig::named(n))
            .collect(),
            baselines: vec!["uniform".into(), "odm".into(), "odm_group".into()],
            model: LmConfig::default(),
            train: LmTrainConfig::default(),
            data: DataConfig::default(),
        }
    }
}

impl ExperimentConfig {
    /// A configuration that runs in seconds, for smoke tests: 6 steps of a 2-layer, width-16
    /// model on short synthetic streams, seeds 0 and 1, methods uniform, odm and hds.
    pub fn tiny() -> Self {
        Self {
            steps: 6,
            eval_every: 3,
            log_every: 2,
            seeds: vec![0, 1],
            methods: ["uniform", "odm", "hds"]
                .iter()
                .map(|n| MethodConfig::named(n))
                .collect(),
            baselines: vec!["uniform".into(), "odm".into()],
            model: LmConfig {
                d_model: 16,
                n_layers: 2,
                n_heads: 2,
                d_ff: 32,
                seq_len: 16,
            },
            train: LmTrainConfig {
                micro_batches: 8,
                ..LmTrainConfig::default()
            },
            data: DataConfig {
                train_chars: 4000,
                val_sequences: 4,
                ..DataConfig::default()
            },
            ..Self::default()
        }
    }

    /// Parses TOML; unknown keys and bad values are errors naming the key.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self> {
        let cfg: Self = toml::from_str(text).map_err(|e| DatamixError::ConfigParse {
            origin: origin.to_string(),
            message: e.to_string(),
        })?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// This configuration as TOML.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// Checks every part.
    pub fn validate(&self) -> Result<()> {
        if self.steps == 0 || self.eval_every == 0 || self.log_every == 0 {
            return Err(DatamixError::config(
                "steps",
                "steps, eval_every and log_every must be >= 1",
            ));
        }
        if self.seeds.is_empty() || self.methods.is_empty() {
            return Err(DatamixError::config(
                "methods",
                "need at least one method and one seed",
            ));
        }
        self.model.validate("model")?;
        self.data.validate("data")?;
        let k = self.data.domains.len();
        self.train.validate(k, self.model.n_layers, "train")?;
        let mut names = std::collections::BTreeSet::new();
        for (i, m) in self.methods.iter().enumerate() {
            if !names.insert(m.name.as_str()) {
                return Err(DatamixError::config(
                    format!("methods[{i}].name"),
                    format!("duplicate method `{}`", m.name),
                ));
            }
            m.resolve()?
                .validate(k, &format!("methods[{i}].scheduler"))?;
        }
        for b in &self.baselines {
            if !names.contains(b.as_str()) {
                return Err(DatamixError::config(
                    "baselines",
                    format!(
                        "`{b}` is not one of the methods ({})",
                        names.iter().copied().collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Builds the corpus (relative file paths against `base_dir`).
    pub fn corpus(&self, base_dir: &Path) -> Result<Arc<Corpus>> {
        Ok(Arc::new(self.data.build(
            self.model.seq_len,
            self.data_seed,
            base_dir,
        )?))
    }
}

/// One row of metrics.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricRow {
    /// Method name.
    pub method: String,
    /// Seed.
    pub seed: u64,
    /// Step (number of LM steps done).
    pub step: usize,
    /// `(name, value)` pairs.
    pub values: Vec<(String, f64)>,
}

impl MetricRow {
    /// One flat JSON object: `{"method", "seed", "step", <name>: <value>, …}`.
    pub fn to_json(&self) -> String {
        let mut m = serde_json::Map::new();
        m.insert("method".into(), self.method.clone().into());
        m.insert("seed".into(), self.seed.into());
        m.insert("step".into(), self.step.into());
        for (k, v) in &self.values {
            m.insert(
                k.clone(),
                serde_json::Number::from_f64(*v)
                    .map(serde_json::Value::Number)
                    .unwrap_or(serde_json::Value::Null),
            );
        }
        serde_json::Value::Object(m).to_string()
    }
}

/// One evaluation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvalPoint {
    /// LM steps done.
    pub step: usize,
    /// Mean validation loss over the target domains.
    pub target_loss: f32,
    /// Validation loss of every domain.
    pub domain_loss: Vec<f32>,
}

/// Mean wall-clock per step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunTiming {
    /// LM forward/backward/update (ms).
    pub lm_ms: f64,
    /// Extra environment statistics the scheduler asked for (ms).
    pub stats_ms: f64,
    /// Scheduler `observe` + `mixture` (ms).
    pub agent_ms: f64,
    /// Whole run (s), evaluations included.
    pub total_s: f64,
}

/// Result of one (method, seed) run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunOutput {
    /// Method name.
    pub method: String,
    /// Seed.
    pub seed: u64,
    /// Evaluations, including step 0 and the last step.
    pub evals: Vec<EvalPoint>,
    /// Mixture used at every step.
    pub mixtures: Vec<Vec<f32>>,
    /// Mean timings.
    pub timing: RunTiming,
}

fn target_loss(corpus: &Corpus, losses: &[f32]) -> f32 {
    let t: Vec<f32> = corpus
        .domains
        .iter()
        .zip(losses)
        .filter(|(d, _)| d.target)
        .map(|(_, l)| *l)
        .collect();
    t.iter().sum::<f32>() / t.len().max(1) as f32
}

/// Runs `method` with `seed`; every metric row goes to `sink`.
pub fn run_method<B: AutodiffBackend>(
    cfg: &ExperimentConfig,
    corpus: Arc<Corpus>,
    method: &MethodConfig,
    seed: u64,
    device: &B::Device,
    sink: &mut dyn FnMut(&MetricRow),
) -> Result<RunOutput> {
    let start = Instant::now();
    let k = corpus.domains.len();
    let names: Vec<String> = corpus.domains.iter().map(|d| d.name.clone()).collect();
    let mut sched =
        method
            .resolve()?
            .build::<B>(k, cfg.steps, seed.wrapping_add(0x5eed), device)?;
    let mut env = LmEnv::<B>::new(
        &cfg.model,
        cfg.train.clone(),
        corpus.clone(),
        cfg.steps,
        seed,
        device.clone(),
    )?;
    let mut evals = Vec::new();
    let mut mixtures = Vec::with_capacity(cfg.steps);
    let mut timing = RunTiming::default();
    let evaluate = |env: &LmEnv<B>, step: usize, sink: &mut dyn FnMut(&MetricRow)| {
        let losses = env.evaluate();
        let tl = target_loss(&corpus, &losses);
        let mut values = vec![("val/target_loss".to_string(), tl as f64)];
        values.extend(
            names
                .iter()
                .zip(&losses)
                .map(|(n, l)| (format!("val/loss/{n}"), *l as f64)),
        );
        sink(&MetricRow {
            method: method.name.clone(),
            seed,
            step,
            values,
        });
        EvalPoint {
            step,
            target_loss: tl,
            domain_loss: losses,
        }
    };
    evals.push(evaluate(&env, 0, sink));
    for t in 0..cfg.steps {
        let ta = Instant::now();
        let mixture = sched.mixture();
        let mut agent_ms = ta.elapsed().as_secs_f64() * 1e3;
        let stats = env.step(&mixture, sched.requirements())?;
        let ta = Instant::now();
        sched.observe(&stats)?;
        agent_ms += ta.elapsed().as_secs_f64() * 1e3;
        let et = env.timing();
        timing.lm_ms += et.lm_ms;
        timing.stats_ms += et.stats_ms;
        timing.agent_ms += agent_ms;
        if (t + 1) % cfg.log_every == 0 || t + 1 == cfg.steps {
            let n = stats.domain_counts.iter().sum::<f32>().max(1.0);
            let mean_loss = stats
                .domain_loss
                .iter()
                .zip(&stats.domain_counts)
                .map(|(l, c)| l * c)
                .sum::<f32>()
                / n;
            let mut values = vec![("train/loss".to_string(), mean_loss as f64)];
            for (i, name) in names.iter().enumerate() {
                values.push((format!("train/loss/{name}"), stats.domain_loss[i] as f64));
            }
            for (i, name) in names.iter().enumerate() {
                values.push((format!("mix/{name}"), mixture[i] as f64));
            }
            values.extend([
                ("time/lm_ms".to_string(), et.lm_ms),
                ("time/stats_ms".to_string(), et.stats_ms),
                ("time/agent_ms".to_string(), agent_ms),
            ]);
            values.extend(
                sched
                    .diagnostics()
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v)),
            );
            sink(&MetricRow {
                method: method.name.clone(),
                seed,
                step: t + 1,
                values,
            });
        }
        mixtures.push(mixture);
        if (t + 1) % cfg.eval_every == 0 || t + 1 == cfg.steps {
            evals.push(evaluate(&env, t + 1, sink));
        }
    }
    let n = cfg.steps as f64;
    timing.lm_ms /= n;
    timing.stats_ms /= n;
    timing.agent_ms /= n;
    timing.total_s = start.elapsed().as_secs_f64();
    Ok(RunOutput {
        method: method.name.clone(),
        seed,
        evals,
        mixtures,
        timing,
    })
}

/// `(mean, std)` over seeds.
pub type MeanStd = (f64, f64);

/// Summary of one method over seeds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MethodSummary {
    /// Method name.
    pub method: String,
    /// Number of seeds.
    pub seeds: usize,
    /// `(step, mean, std)` of the target validation loss at every evaluation.
    pub curve: Vec<(usize, f64, f64)>,
    /// Final target validation loss.
    pub final_target: MeanStd,
    /// Final validation loss per domain.
    pub final_domain: Vec<MeanStd>,
    /// First evaluation step at which the seed-mean curve reaches the best baseline's final
    /// target loss (`None` if it never does).
    pub steps_to_best_baseline: Option<usize>,
    /// Per seed: first evaluation step reaching that loss (`None` if never).
    pub steps_to_best_baseline_per_seed: Vec<Option<usize>>,
    /// Mean mixture over the second half of the run (mean over seeds).
    pub late_mixture: Vec<f64>,
    /// Per-step timings, mean over seeds.
    pub timing: RunTiming,
}

/// Summary of an experiment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Domain names.
    pub domains: Vec<String>,
    /// Which domains are in the target.
    pub target: Vec<bool>,
    /// Steps per run.
    pub steps: usize,
    /// The baseline with the lowest final mean target loss and that loss.
    pub best_baseline: Option<(String, f64)>,
    /// One entry per method, in config order.
    pub methods: Vec<MethodSummary>,
}

fn first_reaching(curve: impl Iterator<Item = (usize, f64)>, level: f64) -> Option<usize> {
    curve
        .into_iter()
        .find(|&(_, v)| v <= level + 1e-12)
        .map(|(s, _)| s)
}

/// Aggregates runs by method (mean ± population std over seeds).
pub fn summarize(cfg: &ExperimentConfig, corpus: &Corpus, runs: &[RunOutput]) -> Summary {
    let k = corpus.domains.len();
    let mut methods: Vec<MethodSummary> = Vec::new();
    for m in &cfg.methods {
        let rs: Vec<&RunOutput> = runs.iter().filter(|r| r.method == m.name).collect();
        if rs.is_empty() {
            continue;
        }
        let n_eval = rs.iter().map(|r| r.evals.len()).min().unwrap_or(0);
        let curve: Vec<(usize, f64, f64)> = (0..n_eval)
            .map(|e| {
                let v: Vec<f64> = rs.iter().map(|r| r.evals[e].target_loss as f64).collect();
                let (mu, sd) = mean_population_std(&v);
                (rs[0].evals[e].step, mu, sd)
            })
            .collect();
        let last = |r: &RunOutput| r.evals[n_eval - 1].clone();
        let final_target = mean_population_std(
            &rs.iter()
                .map(|r| last(r).target_loss as f64)
                .collect::<Vec<_>>(),
        );
        let final_domain = (0..k)
            .map(|i| {
                mean_population_std(
                    &rs.iter()
                        .map(|r| last(r).domain_loss[i] as f64)
                        .collect::<Vec<_>>(),
                )
            })
            .collect();
        let half = cfg.steps / 2;
        let late_mixture = (0..k)
            .map(|i| {
                rs.iter()
                    .map(|r| {
                        let tail = &r.mixtures[half.min(r.mixtures.len())..];
                        tail.iter().map(|x| x[i] as f64).sum::<f64>() / tail.len().max(1) as f64
                    })
                    .sum::<f64>()
                    / rs.len() as f64
            })
            .collect();
        let avg = |f: fn(&RunTiming) -> f64| {
            rs.iter().map(|r| f(&r.timing)).sum::<f64>() / rs.len() as f64
        };
        methods.push(MethodSummary {
            method: m.name.clone(),
            seeds: rs.len(),
            curve,
            final_target,
            final_domain,
            steps_to_best_baseline: None,
            steps_to_best_baseline_per_seed: Vec::new(),
            late_mixture,
            timing: RunTiming {
                lm_ms: avg(|t| t.lm_ms),
                stats_ms: avg(|t| t.stats_ms),
                agent_ms: avg(|t| t.agent_ms),
                total_s: avg(|t| t.total_s),
            },
        });
    }
    let best_baseline = methods
        .iter()
        .filter(|m| cfg.baselines.contains(&m.method))
        .min_by(|a, b| a.final_target.0.total_cmp(&b.final_target.0))
        .map(|m| (m.method.clone(), m.final_target.0));
    if let Some((_, level)) = &best_baseline {
        for m in methods.iter_mut() {
            m.steps_to_best_baseline = first_reaching(m.curve.iter().map(|c| (c.0, c.1)), *level);
            m.steps_to_best_baseline_per_seed = runs
                .iter()
                .filter(|r| r.method == m.method)
                .map(|r| {
                    first_reaching(
                        r.evals.iter().map(|e| (e.step, e.target_loss as f64)),
                        *level,
                    )
                })
                .collect();
        }
    }
    Summary {
        domains: corpus.domains.iter().map(|d| d.name.clone()).collect(),
        target: corpus.domains.iter().map(|d| d.target).collect(),
        steps: cfg.steps,
        best_baseline,
        methods,
    }
}

impl Summary {
    /// Markdown tables: final losses, steps to the best baseline, late mixtures, timings.
    pub fn to_markdown(&self) -> String {
        let mut s = String::new();
        let pm = |m: &MeanStd| format!("{:.4} ± {:.4}", m.0, m.1);
        if let Some((b, l)) = &self.best_baseline {
            s.push_str(&format!(
                "Best baseline: `{b}`, final target validation loss {l:.4}.\n\n"
            ));
        }
        s.push_str("| method | seeds | final target val loss | steps to best baseline (mean curve) | per seed | fewer steps |\n|---|---|---|---|---|---|\n");
        for m in &self.methods {
            let reach = m
                .steps_to_best_baseline
                .map(|v| v.to_string())
                .unwrap_or_else(|| "never".into());
            let per: Vec<String> = m
                .steps_to_best_baseline_per_seed
                .iter()
                .map(|v| v.map(|x| x.to_string()).unwrap_or_else(|| "—".into()))
                .collect();
            let fewer = m
                .steps_to_best_baseline
                .map(|v| format!("{:.0} %", 100.0 * (1.0 - v as f64 / self.steps as f64)))
                .unwrap_or_else(|| "—".into());
            s.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                m.method,
                m.seeds,
                pm(&m.final_target),
                reach,
                per.join(", "),
                fewer
            ));
        }
        s.push_str("\nFinal validation loss per domain (nats/char, mean ± std over seeds; `*` = not in the target):\n\n| method |");
        for (d, t) in self.domains.iter().zip(&self.target) {
            s.push_str(&format!(" {d}{} |", if *t { "" } else { "*" }));
        }
        s.push_str("\n|---|");
        s.push_str(&"---|".repeat(self.domains.len()));
        s.push('\n');
        for m in &self.methods {
            s.push_str(&format!("| {} |", m.method));
            for d in &m.final_domain {
                s.push_str(&format!(" {:.3} ± {:.3} |", d.0, d.1));
            }
            s.push('\n');
        }
        s.push_str("\nMean mixture over the second half of training:\n\n| method |");
        for d in &self.domains {
            s.push_str(&format!(" {d} |"));
        }
        s.push_str("\n|---|");
        s.push_str(&"---|".repeat(self.domains.len()));
        s.push('\n');
        for m in &self.methods {
            s.push_str(&format!("| {} |", m.method));
            for w in &m.late_mixture {
                s.push_str(&format!(" {w:.3} |"));
            }
            s.push('\n');
        }
        s.push_str("\nWall-clock per LM step (ms, mean over seeds):\n\n| method | LM step | extra env stats | scheduler | overhead | run (s) |\n|---|---|---|---|---|---|\n");
        for m in &self.methods {
            let t = &m.timing;
            s.push_str(&format!(
                "| {} | {:.1} | {:.1} | {:.2} | {:.0} % | {:.0} |\n",
                m.method,
                t.lm_ms,
                t.stats_ms,
                t.agent_ms,
                100.0 * (t.stats_ms + t.agent_ms) / t.lm_ms.max(1e-9),
                t.total_s
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_round_trips_through_toml() {
        let c = ExperimentConfig::default();
        let t = c.to_toml();
        assert_eq!(ExperimentConfig::from_toml(&t, "t").unwrap(), c);
    }

    #[test]
    fn config_errors_name_key_and_valid_values() {
        let e = ExperimentConfig::from_toml("stepz = 3\n", "f.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("f.toml") && e.contains("stepz"), "{e}");
        let e = ExperimentConfig::from_toml("[[methods]]\nname = \"doremi\"\n", "f.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("doremi") && e.contains("odm_group"), "{e}");
        let e = ExperimentConfig::from_toml(
            "baselines = [\"x\"]\n[[methods]]\nname = \"uniform\"\n",
            "f",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("baselines") && e.contains("uniform"), "{e}");
        let e = ExperimentConfig::from_toml(
            "[[methods]]\nname = \"a\"\nscheduler = { kind = \"odm\", alpha = 2.0 }\n",
            "f",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("methods[0].scheduler.alpha"), "{e}");
    }

    fn fake(method: &str, seed: u64, curve: &[f32]) -> RunOutput {
        RunOutput {
            method: method.into(),
            seed,
            evals: curve
                .iter()
                .enumerate()
                .map(|(i, &v)| EvalPoint {
                    step: i * 10,
                    target_loss: v,
                    domain_loss: vec![v, 2.0 * v],
                })
                .collect(),
            mixtures: vec![vec![0.5, 0.5]; 20],
            timing: RunTiming::default(),
        }
    }

    #[test]
    fn summary_statistics_by_hand() {
        let cfg = ExperimentConfig {
            steps: 20,
            methods: vec![MethodConfig::named("uniform"), MethodConfig::named("hds")],
            baselines: vec!["uniform".into()],
            ..ExperimentConfig::default()
        };
        let corpus = Corpus {
            vocab: crate::data::Vocab::build(["ab"].into_iter(), 4),
            domains: vec![
                crate::data::DomainData {
                    name: "a".into(),
                    train: vec![],
                    val: vec![],
                    target: true,
                },
                crate::data::DomainData {
                    name: "b".into(),
                    train: vec![],
                    val: vec![],
                    target: false,
                },
            ],
            seq_len: 4,
        };
        let runs = vec![
            fake("uniform", 0, &[4.0, 3.0, 2.0]),
            fake("uniform", 1, &[4.0, 3.0, 2.4]),
            fake("hds", 0, &[4.0, 2.0, 1.5]),
            fake("hds", 1, &[4.0, 2.4, 1.9]),
        ];
        let s = summarize(&cfg, &corpus, &runs);
        // Uniform final: mean 2.2, population std 0.2.
        let u = &s.methods[0];
        assert!((u.final_target.0 - 2.2).abs() < 1e-6 && (u.final_target.1 - 0.2).abs() < 1e-6);
        assert_eq!(s.best_baseline.as_ref().unwrap().0, "uniform");
        // HDS mean curve (4.0, 2.2, 1.7) first reaches 2.2 at step 10; per seed 10 and step 20.
        let h = &s.methods[1];
        assert_eq!(h.steps_to_best_baseline, Some(10));
        assert_eq!(h.steps_to_best_baseline_per_seed, vec![Some(10), Some(20)]);
        assert_eq!(u.steps_to_best_baseline, Some(20));
        assert!((h.final_domain[1].0 - 3.4).abs() < 1e-6);
        let md = s.to_markdown();
        assert!(
            md.contains("| hds | 2 | 1.7000 ± 0.2000 | 10 | 10, 20 | 50 % |"),
            "{md}"
        );
    }
}
