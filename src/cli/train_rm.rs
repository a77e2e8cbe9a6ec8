//! `rlvr train-rm`: a reward model trained on preference pairs as TRL's `RewardTrainer` trains
//! one ([`rl_trainer::reward_model`]), from a causal LM (a new one-label `score` head, seeded)
//! or an HF `*ForSequenceClassification` folder, with held-out pair accuracy before and after.
//!
//! Writes `OUT/model/` (the family's `*ForSequenceClassification`, which transformers'
//! `AutoModelForSequenceClassification` loads), `OUT/metrics.jsonl` (one line per update) and
//! `OUT/report.json` (pairs read and dropped, held-out accuracy with its 95 % Wilson interval).
//! Progress goes to stderr.

use std::io::Write;
use std::path::{Path, PathBuf};

use burn::tensor::backend::AutodiffBackend;
use rl_models::{CausalLm, ScoreKind, ScoreModel, Tokenizer};
use rl_trainer::TrainerError;
use rl_trainer::config::OptimSection;
use rl_trainer::reward_model::{
    PairAccuracy, PreferenceTokens, Preferences, RewardModelConfig, held_out_accuracy,
    read_preferences, train_reward_model,
};

use super::Io;
use crate::backend::{BackendJob, BackendKind, run_on};

/// Arguments of `rlvr train-rm`.
#[derive(clap::Args, Debug, Clone)]
pub struct TrainRmArgs {
    /// The starting model: a causal LM (HF folder or GGUF; gets a new head) or an HF
    /// `*ForSequenceClassification` folder with one label.
    #[arg(long)]
    pub model: PathBuf,
    /// `tokenizer.json` (default: the model's: its folder, or the GGUF's vocabulary).
    #[arg(long)]
    pub tokenizer: Option<PathBuf>,
    /// Training pairs: JSON lines with `chosen`, `rejected`, optional `prompt` and `margin`
    /// (text, or lists of chat messages rendered with the tokenizer's chat template).
    #[arg(long)]
    pub data: PathBuf,
    /// Held-out pairs, same format (accuracy before and after training).
    #[arg(long)]
    pub eval: Option<PathBuf>,
    /// Output folder.
    #[arg(long)]
    pub out: PathBuf,
    /// Passes over the training pairs.
    #[arg(long, default_value_t = 1)]
    pub epochs: usize,
    /// Pairs per optimizer update.
    #[arg(long, default_value_t = 16)]
    pub batch_size: usize,
    /// Pairs per forward/backward.
    #[arg(long, default_value_t = 16)]
    pub micro_batch: usize,
    /// Learning rate (TRL's `RewardConfig` default).
    #[arg(long, default_value_t = 1e-4)]
    pub lr: f64,
    /// Linear warm-up updates.
    #[arg(long, default_value_t = 0)]
    pub warmup_steps: usize,
    /// AdamW weight decay.
    #[arg(long, default_value_t = 0.0)]
    pub weight_decay: f64,
    /// Global gradient-norm clip (0: none).
    #[arg(long, default_value_t = 1.0)]
    pub grad_clip: f64,
    /// TRL's `center_rewards_coefficient` (absent: no centring term).
    #[arg(long)]
    pub center_rewards_coefficient: Option<f64>,
    /// Pairs with a side longer than this many tokens are dropped (TRL's `max_length`).
    #[arg(long, default_value_t = 1024)]
    pub max_length: usize,
    /// Seed of the new head and of the pair order.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Backend.
    #[arg(long, value_enum, default_value_t = BackendKind::Cpu)]
    pub backend: BackendKind,
}

struct Job<'a> {
    args: TrainRmArgs,
    log: &'a mut dyn Write,
}

/// Whether `path` is an HF folder of a sequence classifier (its `config.json` names one).
fn is_sequence_classifier(path: &Path) -> bool {
    std::fs::read_to_string(path.join("config.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v.get("architectures")?.as_array().cloned())
        .is_some_and(|a| {
            a.iter().any(|x| {
                x.as_str()
                    .is_some_and(|s| s.ends_with("ForSequenceClassification"))
            })
        })
}

fn accuracy_line(name: &str, a: &PairAccuracy) -> String {
    let (lo, hi) = a.interval();
    format!(
        "{name}: {}/{} pairs ranked right = {:.3} (95 % interval {lo:.3}–{hi:.3}), {} ties",
        a.correct,
        a.pairs,
        a.accuracy(),
        a.ties
    )
}

impl BackendJob for Job<'_> {
    type Output = Result<(), TrainerError>;

    fn run<B: AutodiffBackend>(self, device: B::Device) -> Result<(), TrainerError> {
        let Job { args, log } = self;
        // The end-of-sequence id ends text pairs (TRL appends the EOS token) and is the saved
        // model's pad id (TRL pads with it when the tokenizer has no pad token).
        let (model, eos) = if is_sequence_classifier(&args.model) {
            let m = ScoreModel::<B>::load(&args.model, &device)?;
            let eos = m.body.config().eos_token_id.first().copied();
            (m, eos)
        } else {
            let lm = CausalLm::<B>::load(&args.model, &device)?;
            let eos = lm.config().eos_token_id.first().copied();
            let m = ScoreModel::from_causal_lm(lm, ScoreKind::Sequence, 1, eos, args.seed)?;
            (m, eos)
        };
        let tokenizer = Tokenizer::for_model(&args.model, args.tokenizer.as_deref())?;
        let tokens = PreferenceTokens {
            tokenizer: &tokenizer,
            eos,
            max_length: args.max_length,
        };
        let train = read_preferences(&args.data, tokens)?;
        let eval = args
            .eval
            .as_deref()
            .map(|p| read_preferences(p, tokens))
            .transpose()?;
        let dropped = |name: &str, p: &Preferences| {
            if p.too_long.is_empty() {
                String::new()
            } else {
                format!(
                    "; {} {name} pairs over {} tokens dropped (lines {:?})",
                    p.too_long.len(),
                    args.max_length,
                    &p.too_long[..p.too_long.len().min(10)]
                )
            }
        };
        let _ = writeln!(
            log,
            "train-rm: {} training pairs{}{}",
            train.pairs.len(),
            eval.as_ref()
                .map(|e| format!(", {} held-out pairs", e.pairs.len()))
                .unwrap_or_default(),
            dropped("training", &train)
        );
        std::fs::create_dir_all(&args.out).map_err(|e| TrainerError::io(&args.out, e))?;
        let before = eval
            .as_ref()
            .map(|e| held_out_accuracy(&model, &e.pairs, args.micro_batch))
            .transpose()?;
        if let Some(b) = &before {
            let _ = writeln!(log, "{}", accuracy_line("held-out before", b));
        }
        let cfg = RewardModelConfig {
            epochs: args.epochs,
            batch_size: args.batch_size,
            micro_batch: args.micro_batch,
            seed: args.seed,
            center_rewards_coefficient: args.center_rewards_coefficient,
            optim: OptimSection {
                lr: args.lr,
                warmup_steps: args.warmup_steps,
                weight_decay: args.weight_decay,
                grad_clip: args.grad_clip,
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-8,
                epochs: 1,
                mini_batches: 1,
                micro_batch: args.micro_batch,
                micro_batch_tokens: 0,
                max_consecutive_skips: 1,
            },
        };
        let metrics_path = args.out.join("metrics.jsonl");
        let mut metrics = String::new();
        let t0 = std::time::Instant::now();
        let model = train_reward_model(model, &train.pairs, &cfg, |s| {
            metrics.push_str(&serde_json::to_string(s).unwrap_or_default());
            metrics.push('\n');
            let every = (s.total / 20).max(1);
            if s.step % every == 0 || s.step == s.total {
                let _ = writeln!(
                    log,
                    "step {:>5}/{} loss {:.4} acc {:.3} margin {:+.3} lr {:.2e} {:.0}s",
                    s.step,
                    s.total,
                    s.loss,
                    s.accuracy,
                    s.margin,
                    s.lr,
                    t0.elapsed().as_secs_f64()
                );
            }
        })?;
        std::fs::write(&metrics_path, metrics).map_err(|e| TrainerError::io(&metrics_path, e))?;
        let after = eval
            .as_ref()
            .map(|e| held_out_accuracy(&model, &e.pairs, args.micro_batch))
            .transpose()?;
        if let Some(a) = &after {
            let _ = writeln!(log, "{}", accuracy_line("held-out after", a));
        }
        let model_dir = args.out.join("model");
        model.save(&model_dir)?;
        tokenizer.save(model_dir.join("tokenizer.json"))?;
        let report = serde_json::json!({
            "train_pairs": train.pairs.len(),
            "train_dropped_too_long": train.too_long.len(),
            "heldout_pairs": eval.as_ref().map(|e| e.pairs.len()),
            "heldout_dropped_too_long": eval.as_ref().map(|e| e.too_long.len()),
            "heldout_before": before.map(|a| accuracy_json(&a)),
            "heldout_after": after.map(|a| accuracy_json(&a)),
            "config": cfg,
            "seconds": t0.elapsed().as_secs_f64(),
        });
        let path = args.out.join("report.json");
        std::fs::write(&path, report.to_string()).map_err(|e| TrainerError::io(&path, e))?;
        let _ = writeln!(log, "wrote {}", args.out.display());
        Ok(())
    }
}

fn accuracy_json(a: &PairAccuracy) -> serde_json::Value {
    let (lo, hi) = a.interval();
    serde_json::json!({
        "pairs": a.pairs, "correct": a.correct, "ties": a.ties,
        "accuracy": a.accuracy(), "interval95": [lo, hi],
    })
}

/// Runs `rlvr train-rm`.
pub fn run(args: TrainRmArgs, io: &mut Io<'_>) -> i32 {
    let kind = args.backend;
    let result = run_on(
        kind,
        Job {
            args,
            log: &mut *io.stderr,
        },
    );
    super::job_exit(result, io)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::EXIT_OK;
    use crate::cli::export_demo::{ExportDemoArgs, run as export_demo};

    /// The embedded job's preference files (a tiny demo, 4 warm-start updates) train a reward
    /// model end to end: both held-out accuracies are reported over every held-out pair, one
    /// metrics line per update, and the output folder loads back as a one-label sequence
    /// classifier whose held-out accuracy is the reported one.
    #[test]
    fn trains_a_reward_model_on_the_embedded_preferences() {
        let tmpdir = tempfile::Builder::new()
            .prefix("rlvr-train-rm-")
            .tempdir()
            .unwrap();
        let dir = tmpdir.path();
        let demo_toml = dir.join("demo.toml");
        std::fs::write(
            &demo_toml,
            "train_per_tier = 8\neval_per_tier = 4\nhidden_size = 16\nnum_hidden_layers = 1\n\
             num_attention_heads = 2\nintermediate_size = 32\n[sft]\nsteps = 4\nbatch_size = 4\n",
        )
        .unwrap();
        let export = ExportDemoArgs {
            out: dir.join("demo"),
            demo: Some(demo_toml),
            seed: 1,
            backend: BackendKind::Cpu,
        };
        let (code, _, err) = crate::cli::run_captured("", |io| export_demo(export, io));
        assert_eq!(code, EXIT_OK, "{err}");
        let args = TrainRmArgs {
            model: dir.join("demo/model"),
            tokenizer: None,
            data: dir.join("demo/preferences_train.jsonl"),
            eval: Some(dir.join("demo/preferences_heldout.jsonl")),
            out: dir.join("rm"),
            epochs: 2,
            batch_size: 8,
            micro_batch: 3,
            lr: 1e-3,
            warmup_steps: 0,
            weight_decay: 0.0,
            grad_clip: 1.0,
            center_rewards_coefficient: Some(0.01),
            max_length: 1024,
            seed: 0,
            backend: BackendKind::Cpu,
        };
        let (code, _, err) = crate::cli::run_captured("", |io| run(args.clone(), io));
        assert_eq!(code, EXIT_OK, "{err}");
        assert!(
            err.contains("held-out before") && err.contains("held-out after"),
            "{err}"
        );
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("rm/report.json")).unwrap())
                .unwrap();
        let heldout = std::fs::read_to_string(dir.join("demo/preferences_heldout.jsonl"))
            .unwrap()
            .lines()
            .count();
        assert_eq!(report["heldout_pairs"], heldout);
        let train = report["train_pairs"].as_u64().unwrap() as usize;
        let lines = std::fs::read_to_string(dir.join("rm/metrics.jsonl"))
            .unwrap()
            .lines()
            .count();
        assert_eq!(lines, 2 * train.div_ceil(8));
        let m = ScoreModel::<burn::backend::Flex>::load(dir.join("rm/model"), &Default::default())
            .unwrap();
        assert_eq!((m.kind(), m.num_labels()), (ScoreKind::Sequence, 1));
        let tok = Tokenizer::from_file(dir.join("rm/model/tokenizer.json")).unwrap();
        let eos = m.body.config().eos_token_id.first().copied();
        let pairs = read_preferences(
            &dir.join("demo/preferences_heldout.jsonl"),
            PreferenceTokens {
                tokenizer: &tok,
                eos,
                max_length: 1024,
            },
        )
        .unwrap();
        let acc = rl_trainer::reward_model::pair_accuracy(&m, &pairs.pairs, 5).unwrap();
        assert_eq!(
            acc.correct as u64,
            report["heldout_after"]["correct"].as_u64().unwrap()
        );
    }
}
