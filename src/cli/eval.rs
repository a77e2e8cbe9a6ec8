//! `rlvr eval --model DIR --data FILE`: k samples per prompt through any rollout engine, each
//! verified; avg@n, unbiased pass@k and maj@k with standard errors and bootstrap intervals,
//! overall and by the tier column ([`rl_trainer::eval::BenchmarkRun`]).
//!
//! `--config` is a training config (TOML, every field optional): its `[data]` section names the
//! columns, template and chat template, `reward.verifier` the verifier, `[rollout.engine]` the
//! engine (in process by default; llama-server, vLLM or SGLang as in training), and `[eval]` the
//! sampling defaults. Writes `OUT/samples.jsonl` (one verified sample per line), `OUT/summary.json`
//! and prints a markdown table. Re-running with the same `--out` skips prompts whose samples are
//! all in the file, and gives what an uninterrupted run would have given.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use burn::tensor::backend::AutodiffBackend;
use indicatif::{ProgressBar, ProgressStyle};
use rl_trainer::eval::benchmark::{BenchmarkSummary, markdown_table};
use rl_trainer::eval::presets::{BENCHMARK_PRESETS, apply_benchmark_preset, default_ks, ks_fit};
use rl_trainer::eval::{BenchmarkEvent, BenchmarkRun, PreparedBenchmark};
use rl_trainer::{TrainConfig, TrainerError};

use super::{EXIT_BAD_INPUT, EXIT_FAILURE, Io};
use crate::backend::{BackendJob, BackendKind, run_on};

/// Arguments of `rlvr eval`.
#[derive(clap::Args, Debug, Clone)]
pub struct EvalArgs {
    /// The model: an HF folder (config.json + safetensors) or a GGUF file.
    #[arg(long)]
    pub model: PathBuf,
    /// `tokenizer.json` (default: the GGUF's vocabulary or the folder's `tokenizer.json`).
    #[arg(long)]
    pub tokenizer: Option<PathBuf>,
    /// Prompts: JSON lines or Parquet, columns as in the config's `[data]` section.
    #[arg(long)]
    pub data: PathBuf,
    /// A training config (TOML) for `[data]`, `reward.verifier`, `[rollout.engine]`, `[eval]`;
    /// applied over `--preset`.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Column names and answer format of a benchmark's usual layout: `aime` (problem, answer),
    /// `math500` (problem, the boxed answer of solution, tier = level), `gsm8k` (question, the
    /// answer after ####), `dapo17k` (prompt, reward_model.ground_truth).
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(BENCHMARK_PRESETS))]
    pub preset: Option<String>,
    /// The problem column (overrides the preset and the config).
    #[arg(long)]
    pub prompt_field: Option<String>,
    /// The ground-truth column (overrides the preset and the config).
    #[arg(long)]
    pub answer_field: Option<String>,
    /// Samples per prompt (default: the config's `eval.k`).
    #[arg(long)]
    pub k: Option<usize>,
    /// pass@k and maj@k for these k (default: 1, the powers of 2 below k, and k).
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    pub pass_k: Option<Vec<usize>>,
    /// Sampling temperature (default: `eval.temperature`).
    #[arg(long)]
    pub temperature: Option<f32>,
    /// Nucleus sampling (default: `eval.top_p`).
    #[arg(long)]
    pub top_p: Option<f32>,
    /// Most new tokens (default: `rollout.max_new_tokens`).
    #[arg(long)]
    pub max_new_tokens: Option<usize>,
    /// Seed (default: the config's `seed`, as the trainer's evaluation); prompt i's request is
    /// seeded `seed ^ 0xE7A1 << 48 ^ i << 20`.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Evaluate the first N prompts (default: the config's `eval.max_prompts`; 0: all).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Prompts per engine call (each call's samples are written before the next).
    #[arg(long, default_value_t = 16)]
    pub prompts_per_call: usize,
    /// Bootstrap resamples of the prompts for the 95 % intervals.
    #[arg(long, default_value_t = 1000)]
    pub bootstrap: usize,
    /// Output folder.
    #[arg(long, default_value = "runs/eval")]
    pub out: PathBuf,
    /// Backend.
    #[arg(long, value_enum, default_value_t = BackendKind::Cpu)]
    pub backend: BackendKind,
}

/// The evaluation, its progress lines (the command's standard error) and the bar.
struct Job<'a> {
    log: &'a mut dyn Write,
    benchmark: PreparedBenchmark,
}

/// The run `args` ask for: the preset, the config file over it and the flags over both; its
/// tokenizer and prompts read.
fn prepare(args: EvalArgs, log: &mut dyn Write) -> Result<Job<'_>, TrainerError> {
    let mut base = TrainConfig::default();
    if let Some(p) = &args.preset {
        apply_benchmark_preset(&mut base.data, p)?;
    }
    let mut config = match &args.config {
        Some(path) => TrainConfig::from_toml_file(path, &base)?,
        None => base,
    };
    if let Some(f) = &args.prompt_field {
        config.data.prompt_key = f.clone();
    }
    if let Some(f) = &args.answer_field {
        config.data.answer_key = f.clone();
    }
    if let Some(t) = args.temperature {
        config.eval.temperature = t;
    }
    if let Some(p) = args.top_p {
        config.eval.top_p = p;
    }
    if let Some(m) = args.max_new_tokens {
        config.rollout.max_new_tokens = m;
    }
    if let Some(l) = args.limit {
        config.eval.max_prompts = l;
    }
    let k = args.k.unwrap_or(config.eval.k);
    let ks = args.pass_k.clone().unwrap_or_else(|| default_ks(k));
    if !ks_fit(k, &ks) {
        return Err(TrainerError::Config {
            field: "--pass-k".into(),
            message: format!("{ks:?} with --k {k} (each k must be in 1..={k})"),
        });
    }
    let benchmark = BenchmarkRun {
        seed: args.seed.unwrap_or(config.seed),
        config,
        model: args.model,
        tokenizer: args.tokenizer,
        data: args.data,
        out: args.out,
        k,
        ks,
        prompts_per_call: args.prompts_per_call,
        bootstrap: args.bootstrap,
    }
    .prepare()?;
    for s in &benchmark.skipped {
        let _ = writeln!(log, "skipped: {s}");
    }
    Ok(Job { log, benchmark })
}

impl BackendJob for Job<'_> {
    type Output = Result<String, TrainerError>;

    fn run<B: AutodiffBackend>(self, device: B::Device) -> Result<String, TrainerError> {
        let Job { log, benchmark } = self;
        let ks = benchmark.ks().to_vec();
        let mut bar: Option<Bar> = None;
        let summary = benchmark.run::<B>(&device, &mut |event| match event {
            BenchmarkEvent::Start {
                prompts,
                done,
                k,
                engine,
                seed,
                samples,
            } => {
                let _ = writeln!(
                    log,
                    "eval: {prompts} prompts × {k} samples through {engine}, seed {seed} ({done} already in {})",
                    samples.display()
                );
                bar = Some(Bar::new(prompts - done, k));
            }
            BenchmarkEvent::Sampled {
                prompts, seconds, ..
            } => {
                if let Some(b) = &mut bar {
                    b.update(prompts, seconds, &mut *log);
                }
            }
        })?;
        if let Some(b) = &bar {
            b.finish();
        }
        Ok(markdown_table(&summary, &ks) + &noise_note(&summary))
    }
}

struct Bar {
    bar: Option<ProgressBar>,
    todo: usize,
    k: usize,
}

impl Bar {
    fn new(todo: usize, k: usize) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = ProgressBar::new(todo as u64);
            b.set_style(
                ProgressStyle::with_template(
                    "[{elapsed_precise}] {bar:30} {pos}/{len} prompts {msg} (eta {eta})",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            b
        });
        Self { bar, todo, k }
    }

    fn update(&mut self, sampled: usize, secs: f64, log: &mut dyn Write) {
        let rate = (sampled * self.k) as f64 / secs.max(1e-9);
        match &self.bar {
            Some(b) => {
                b.set_position(sampled as u64);
                b.set_message(format!("{rate:.1} samples/s"));
            }
            None => {
                let left = (self.todo - sampled.min(self.todo)) * self.k;
                let _ = writeln!(
                    log,
                    "eval: {sampled}/{} prompts, {rate:.1} samples/s, {:.0} s left",
                    self.todo,
                    left as f64 / rate.max(1e-9)
                );
            }
        }
    }

    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// What the overall avg@n's standard error is made of and what more samples per prompt would
/// buy (`rl_verifier::Noise`), as lines under the table.
fn noise_note(summary: &BenchmarkSummary) -> String {
    let s = &summary.overall;
    let Some(n) = s.noise else {
        return String::new();
    };
    let (p, k) = (s.avg.prompts, s.samples);
    let spread = n.between / (n.between + n.within / k as f64).max(1e-300);
    let mut out = format!(
        "\navg@{k} ± {:.4} (standard error over {p} prompts): {:.0} % of its variance is the \
         spread of the prompts' success rates, {:.0} % the sampling of {k} per prompt.\n",
        s.avg.std_error,
        100.0 * spread,
        100.0 * (1.0 - spread)
    );
    for m in [2, 4] {
        out.push_str(&format!(
            "With {} samples per prompt: ± {:.4}.",
            m * k,
            n.std_error(p, m * k)
        ));
        out.push(' ');
    }
    out.push_str(&format!(
        "No number of samples gets below ± {:.4} with these {p} prompts.\n",
        n.std_error(p, usize::MAX)
    ));
    out
}

/// Runs `rlvr eval`.
pub fn run(args: EvalArgs, io: &mut Io<'_>) -> i32 {
    let kind = args.backend;
    let job = match prepare(args, &mut *io.stderr) {
        Ok(j) => j,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let result = run_on(kind, job);
    if let Ok(Ok(table)) = &result
        && write!(io.stdout, "{table}").is_err()
    {
        return EXIT_FAILURE;
    }
    super::job_exit(result.map(|r| r.map(|_| ())), io)
}

#[cfg(test)]
mod tests {
    use super::run as run_eval;
    use super::*;
    use crate::cli::EXIT_OK;
    use burn::backend::Flex;
    use rl_models::{CausalLm, ModelConfig};
    use rl_trainer::end_token_ids;
    use rl_trainer::tasks::ArithmeticTask;
    use std::collections::BTreeSet;

    /// A tiny random Qwen3 with the arithmetic task's tokenizer, a data file of `rows` (raw JSON
    /// lines) and a config for them: `{problem}=` without the chat template, answers in `answer`.
    /// The folder is removed when the returned guard drops.
    fn setup(name: &str, rows: &[String]) -> (tempfile::TempDir, EvalArgs) {
        let tmpdir = tempfile::Builder::new()
            .prefix(&format!("rlvr-eval-{name}-"))
            .tempdir()
            .unwrap();
        let dir = tmpdir.path();
        let tok = ArithmeticTask::tokenizer().unwrap();
        let mut mc = ModelConfig::tiny(tok.num_defined_ids());
        mc.eos_token_id = end_token_ids(&tok);
        let model: CausalLm<Flex> = mc.init_seeded(3, &Default::default()).unwrap();
        let model_dir = dir.join("model");
        model.save(&model_dir).unwrap();
        tok.save(model_dir.join("tokenizer.json")).unwrap();
        std::fs::write(dir.join("data.jsonl"), rows.join("\n") + "\n").unwrap();
        std::fs::write(
            dir.join("eval.toml"),
            "[data]\nanswer_key = \"answer\"\ntier_key = \"level\"\nchat_template = false\n\
             template = { custom = \"{problem}=\" }\n[rollout]\nmax_new_tokens = 6\n",
        )
        .unwrap();
        let args = EvalArgs {
            model: model_dir,
            tokenizer: None,
            data: dir.join("data.jsonl"),
            config: Some(dir.join("eval.toml")),
            preset: None,
            prompt_field: None,
            answer_field: None,
            k: Some(4),
            pass_k: None,
            temperature: Some(1.0),
            top_p: Some(1.0),
            max_new_tokens: None,
            seed: Some(7),
            limit: None,
            prompts_per_call: 2,
            bootstrap: 100,
            out: dir.join("out"),
            backend: BackendKind::Cpu,
        };
        (tmpdir, args)
    }

    fn rows(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| {
                let level = if i % 2 == 0 { "easy" } else { "hard" };
                format!(
                    r#"{{"prompt": "{i}+{i}", "answer": "{}", "level": "{level}"}}"#,
                    2 * i
                )
            })
            .collect()
    }

    fn lines(path: &std::path::Path) -> Vec<String> {
        let mut l: Vec<String> = std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        l.sort();
        l
    }

    /// 6 prompts × 4 samples: every sample is a verified line; the summary has avg@4,
    /// pass@{1,2,4} and maj@{1,2,4} overall and per level; the table names them. Cut the file
    /// mid-prompt (10 lines: two whole prompts and half of a third) and re-run: the two whole
    /// prompts are kept, the rest re-sampled, and the samples and summary equal the first run's
    /// (each prompt's samples depend only on the seed, the weights and the prompt).
    #[test]
    fn samples_scores_and_resumes_to_the_uninterrupted_result() {
        let (_dir, args) = setup("resume", &rows(6));
        let (code, table, err) = crate::cli::run_captured("", |io| run(args.clone(), io));
        assert_eq!(code, EXIT_OK, "{err}");
        assert!(
            table.contains("pass@4") && table.contains("maj@2") && table.contains("hard"),
            "{table}"
        );
        let samples = args.out.join("samples.jsonl");
        let first = lines(&samples);
        assert_eq!(first.len(), 24);
        let summary = std::fs::read_to_string(args.out.join("summary.json")).unwrap();
        let s: serde_json::Value = serde_json::from_str(&summary).unwrap();
        assert_eq!(s["overall"]["samples"], 4);
        assert_eq!(s["overall"]["avg"]["prompts"], 6);
        assert_eq!(s["groups"]["easy"]["avg"]["prompts"], 3);
        assert!(s["overall"]["pass_at"]["2"]["mean"].is_number());
        let all = std::fs::read_to_string(&samples).unwrap();
        let cut: Vec<&str> = all.lines().take(10).collect();
        std::fs::write(&samples, cut.join("\n") + "\n").unwrap();
        let (code, _, err) = crate::cli::run_captured("", |io| run(args.clone(), io));
        assert_eq!(code, EXIT_OK, "{err}");
        assert!(err.contains("2 already in"), "{err}");
        assert_eq!(lines(&samples), first);
        assert_eq!(
            std::fs::read_to_string(args.out.join("summary.json")).unwrap(),
            summary
        );
    }

    /// A bad row is reported by file and record number and skipped, and the other prompts are
    /// evaluated (with their record index as id); an unreachable engine names its URL; a pass@k
    /// beyond k is refused.
    #[test]
    fn bad_rows_engines_and_ks_are_clear_errors() {
        let mut r = rows(3);
        r[1] = r#"{"prompt": "1+1"}"#.into();
        let (_dir, args) = setup("bad-row", &r);
        let (code, _, err) = crate::cli::run_captured("", |io| run(args.clone(), io));
        assert_eq!(code, EXIT_OK, "{err}");
        assert!(
            err.contains("skipped: ") && err.contains("data.jsonl: record 2"),
            "{err}"
        );
        let s: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(args.out.join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(s["overall"]["avg"]["prompts"], 2);
        assert_eq!(s["skipped_records"].as_array().unwrap().len(), 1);
        let ids: BTreeSet<u64> =
            rl_trainer::eval::benchmark::read_samples(&args.out.join("samples.jsonl"), 4)
                .unwrap()
                .iter()
                .map(|r| r.prompt)
                .collect();
        assert_eq!(ids, BTreeSet::from([0, 2]));

        let (tmpdir, args) = setup("bad-engine", &rows(2));

        let dir = tmpdir.path();
        let cfg = std::fs::read_to_string(dir.join("eval.toml")).unwrap()
            + "[rollout.engine]\nkind = \"sglang\"\nurl = \"http://127.0.0.1:9\"\ntimeout_s = 2.0\nmax_retries = 0\n";
        std::fs::write(dir.join("eval.toml"), cfg).unwrap();
        let (code, _, err) = crate::cli::run_captured("", |io| run(args, io));
        assert_eq!(code, EXIT_FAILURE);
        assert!(err.contains("127.0.0.1:9"), "{err}");

        let (_dir, mut args) = setup("bad-k", &rows(2));
        args.pass_k = Some(vec![1, 8]);
        let (code, _, err) = crate::cli::run_captured("", |io| run(args, io));
        assert_eq!(code, EXIT_BAD_INPUT);
        assert!(err.contains("--pass-k"), "{err}");
    }

    /// The trainer's periodic evaluation (one step of training on the data, evaluating it after
    /// the step) and `rlvr eval` on the checkpoint it saved, with the run's resolved config and
    /// no other flag, give the same samples line for line (same seeds, same weights, same
    /// sampling) and the same avg@4.
    #[test]
    fn rlvr_eval_on_a_checkpoint_reproduces_the_trainers_evaluation() {
        let (tmpdir, mut args) = setup("parity", &rows(6));
        let dir = tmpdir.path();
        let run = dir.join("run");
        let data = dir.join("data.jsonl");
        std::fs::write(
            dir.join("train.toml"),
            format!(
                "seed = 11\nsteps = 1\nout_dir = \"{}\"\n[model]\npath = \"{}\"\n\
                 [data]\ntrain = \"{}\"\neval = \"{}\"\nanswer_key = \"answer\"\n\
                 tier_key = \"level\"\nchat_template = false\n\
                 template = {{ custom = \"{{problem}}=\" }}\n\
                 [rollout]\nmax_new_tokens = 6\ngroup_size = 2\nprompts_per_round = 2\n\
                 [batch]\ngroups_per_step = 1\non_exhausted = \"train_on_kept\"\n\
                 [filter]\nname = \"none\"\n[eval]\nk = 4\ntemperature = 1.0\n",
                run.display(),
                args.model.display(),
                data.display(),
                data.display()
            ),
        )
        .unwrap();
        let config =
            TrainConfig::from_toml_file(&dir.join("train.toml"), &TrainConfig::default()).unwrap();
        rl_trainer::Run::checkpoint(config)
            .unwrap()
            .execute::<burn::backend::Autodiff<Flex>>(Default::default(), |_| {})
            .unwrap();
        args.tokenizer = Some(args.model.join("tokenizer.json"));
        args.model = run.join("checkpoints/step-000001/model");
        args.config = Some(run.join("config.toml"));
        (args.k, args.seed, args.temperature, args.top_p) = (None, None, None, None);
        let (code, _, err) = crate::cli::run_captured("", |io| run_eval(args.clone(), io));
        assert_eq!(code, EXIT_OK, "{err}");
        let trainer = std::fs::read_to_string(run.join("eval/step-000001.jsonl")).unwrap();
        let cli = std::fs::read_to_string(args.out.join("samples.jsonl")).unwrap();
        assert_eq!(trainer.lines().count(), 24);
        assert_eq!(cli, trainer);
        let metrics = std::fs::read_to_string(run.join("metrics.jsonl")).unwrap();
        let last: serde_json::Value =
            serde_json::from_str(metrics.lines().last().unwrap()).unwrap();
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(args.out.join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(
            last["eval"]["overall"]["avg_at_k"],
            summary["overall"]["avg"]["mean"]
        );
    }

    /// A config with the template only, so that the preset names the columns.
    fn template_only(dir: &std::path::Path) {
        std::fs::write(
            dir.join("eval.toml"),
            "[data]\nchat_template = false\ntemplate = { custom = \"{problem}=\" }\n",
        )
        .unwrap();
    }

    /// `--preset gsm8k` reads `question` and the answer after `####`; `--preset math500` the
    /// boxed answer of `solution` with `level` as the group.
    #[test]
    fn presets_map_benchmark_columns() {
        let gsm = vec![
            serde_json::json!({"question": "1+1", "answer": "so 2\n#### 2"}).to_string(),
            serde_json::json!({"question": "2+3", "answer": "#### 5"}).to_string(),
        ];
        let (tmpdir, mut args) = setup("gsm8k", &gsm);
        let dir = tmpdir.path();
        template_only(dir);
        args.preset = Some("gsm8k".into());
        args.k = Some(2);
        let (code, table, err) = crate::cli::run_captured("", |io| run(args.clone(), io));
        assert_eq!(code, EXIT_OK, "{err}");
        assert!(table.contains("| overall | 2 |"), "{table}");
        let math = vec![
            serde_json::json!({
                "problem": "1+2",
                "solution": "hence $\\boxed{\\frac{1}{2}}$",
                "level": "Level 5"
            })
            .to_string(),
        ];
        let (tmpdir, mut args) = setup("math500", &math);
        let dir = tmpdir.path();
        template_only(dir);
        args.preset = Some("math500".into());
        args.k = Some(2);
        let (code, table, err) = crate::cli::run_captured("", |io| run(args.clone(), io));
        assert_eq!(code, EXIT_OK, "{err}");
        assert!(table.contains("| Level 5 | 1 |"), "{table}");
    }
}
