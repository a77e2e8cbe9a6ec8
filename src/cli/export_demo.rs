//! `rlvr export-demo --out DIR`: the embedded arithmetic job in formats other trainers read, so
//! that another trainer (TRL, tools/trl_side_by_side) starts from the same weights, tokenizer and
//! prompts as `rlvr train`:
//!
//! * `DIR/model/`: the supervised warm-start as an HF Qwen3 folder (`config.json`,
//!   `model.safetensors`) with the character tokenizer as `tokenizer.json` (`Answer:` marked as
//!   text, not a special token) and a `tokenizer_config.json` naming its end and padding tokens,
//!   which `transformers` loads;
//! * `DIR/train.jsonl`, `DIR/heldout.jsonl`: one prompt per line, `prompt` (the text the model
//!   sees, template applied), `solution` (the answer, TRL's column name), `tier` and `problem`;
//! * `DIR/preferences_train.jsonl`, `DIR/preferences_heldout.jsonl`: one preference pair per
//!   prompt for `rlvr train-rm` (TRL's `prompt`/`chosen`/`rejected` text columns): the right
//!   `Answer: n` preferred to a wrong one, n + d with d drawn (seeded) from ±1…±11.
//!
//! A `rlvr train` config that reads these uses `data.template = "raw"` and `data.answer_key =
//! "solution"`; the model then sees exactly the embedded run's prompts.

use std::io::Write;
use std::path::{Path, PathBuf};

use burn::tensor::backend::AutodiffBackend;
use rl_trainer::TrainerError;
use rl_trainer::data::{Dataset, PromptRenderer, PromptText};
use rl_trainer::tasks::ArithmeticDemo;

use super::{EXIT_BAD_INPUT, Io};
use crate::backend::{BackendJob, BackendKind, run_on};

/// Arguments of `rlvr export-demo`.
#[derive(clap::Args, Debug, Clone)]
pub struct ExportDemoArgs {
    /// Output folder.
    #[arg(long)]
    pub out: PathBuf,
    /// Overrides of the embedded run (task, model size, warm-start) as TOML, as for `rlvr train`.
    #[arg(long)]
    pub demo: Option<PathBuf>,
    /// Seed of the model's initialisation and warm-start.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Backend of the warm-start.
    #[arg(long, value_enum, default_value_t = BackendKind::Cpu)]
    pub backend: BackendKind,
}

struct Job<'a> {
    demo: ArithmeticDemo,
    args: ExportDemoArgs,
    log: &'a mut dyn Write,
}

/// Writes `data` as JSON lines of `prompt` (rendered by `renderer`), `solution`, `tier` and
/// `problem`.
fn write_prompts(
    path: &Path,
    data: &Dataset,
    renderer: &PromptRenderer,
) -> Result<(), TrainerError> {
    let mut out = String::new();
    for p in &data.prompts {
        let PromptText::Text(problem) = &p.text else {
            return Err(TrainerError::Config {
                field: "task".into(),
                message: "the embedded task has text prompts only".into(),
            });
        };
        let line = serde_json::json!({
            "prompt": renderer.user_text(problem),
            "solution": p.answer,
            "tier": p.tier,
            "problem": problem,
        });
        out.push_str(&line.to_string());
        out.push('\n');
    }
    std::fs::write(path, out).map_err(|e| TrainerError::io(path, e))
}

/// Writes one preference pair per prompt of `data`: `prompt` (rendered by `renderer`),
/// `chosen` = `Answer: <answer>`, `rejected` = `Answer: <answer + d>` with d uniform over
/// ±1…±11 (seeded by `seed`), and `tier`. Answers that are not integers are an error.
fn write_preferences(
    path: &Path,
    data: &Dataset,
    renderer: &PromptRenderer,
    seed: u64,
) -> Result<(), TrainerError> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut out = String::new();
    for p in &data.prompts {
        let PromptText::Text(problem) = &p.text else {
            return Err(TrainerError::Config {
                field: "task".into(),
                message: "the embedded task has text prompts only".into(),
            });
        };
        let answer: i64 = p.answer.parse().map_err(|_| TrainerError::Config {
            field: "task".into(),
            message: format!("answer {:?} is not an integer", p.answer),
        })?;
        let d = rng.random_range(1..=11i64) * if rng.random_bool(0.5) { 1 } else { -1 };
        let line = serde_json::json!({
            "prompt": renderer.user_text(problem),
            "chosen": format!("Answer: {answer}"),
            "rejected": format!("Answer: {}", answer + d),
            "tier": p.tier,
        });
        out.push_str(&line.to_string());
        out.push('\n');
    }
    std::fs::write(path, out).map_err(|e| TrainerError::io(path, e))
}

/// Marks the added tokens that are text (the task's `Answer:`) as not special in the saved
/// `tokenizer.json`: ids and encoding are unchanged, but a trainer that decodes with
/// `skip_special_tokens=True` (TRL) then keeps `Answer:` in the text its reward function reads,
/// as `rlvr train` does (it removes only the end tokens). Qwen's `<|…|>` tokens stay special.
fn mark_content_tokens(path: &Path) -> Result<(), TrainerError> {
    let bad = |e: String| TrainerError::io(path, std::io::Error::other(e));
    let text = std::fs::read_to_string(path).map_err(|e| TrainerError::io(path, e))?;
    let mut json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    if let Some(added) = json["added_tokens"].as_array_mut() {
        for t in added {
            let control = t["content"].as_str().is_some_and(|c| c.starts_with("<|"));
            t["special"] = serde_json::Value::Bool(control);
        }
    }
    std::fs::write(path, json.to_string()).map_err(|e| TrainerError::io(path, e))
}

impl BackendJob for Job<'_> {
    type Output = Result<(), TrainerError>;

    fn run<B: AutodiffBackend>(self, device: B::Device) -> Result<(), TrainerError> {
        let Job { demo, args, log } = self;
        let data = demo.data()?;
        let out = &args.out;
        let model_dir = out.join("model");
        std::fs::create_dir_all(&model_dir).map_err(|e| TrainerError::io(&model_dir, e))?;
        let renderer = PromptRenderer::new(&demo.train.data);
        write_prompts(&out.join("train.jsonl"), &data.train, &renderer)?;
        write_prompts(&out.join("heldout.jsonl"), &data.eval, &renderer)?;
        write_preferences(
            &out.join("preferences_train.jsonl"),
            &data.train,
            &renderer,
            args.seed,
        )?;
        write_preferences(
            &out.join("preferences_heldout.jsonl"),
            &data.eval,
            &renderer,
            args.seed ^ 0x5eed,
        )?;
        let _ = writeln!(
            log,
            "export-demo: {} training and {} held-out prompts; warm-start ({} updates, seed {})",
            data.train.len(),
            data.eval.len(),
            demo.sft.steps,
            args.seed
        );
        let model = demo.warm_start::<B>(&data, args.seed, &device, |_, _| {})?;
        model.save(&model_dir)?;
        let tok_path = model_dir.join("tokenizer.json");
        data.tokenizer.save(&tok_path)?;
        mark_content_tokens(&tok_path)?;
        let end = rl_trainer::end_token_ids(&data.tokenizer);
        let end_token = data
            .tokenizer
            .id_to_token(end[0])
            .unwrap_or_else(|| "<|im_end|>".into());
        let config = serde_json::json!({
            "tokenizer_class": "PreTrainedTokenizerFast",
            "eos_token": end_token,
            "pad_token": end_token,
            "clean_up_tokenization_spaces": false,
            "model_max_length": data.model.max_position_embeddings,
        });
        let path = model_dir.join("tokenizer_config.json");
        std::fs::write(&path, config.to_string()).map_err(|e| TrainerError::io(&path, e))?;
        let _ = writeln!(log, "wrote {}", out.display());
        Ok(())
    }
}

/// Runs `rlvr export-demo`.
pub fn run(args: ExportDemoArgs, io: &mut Io<'_>) -> i32 {
    let demo = match ArithmeticDemo::load(args.demo.as_deref()) {
        Ok(d) => d,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let kind = args.backend;
    let job = Job {
        demo,
        args,
        log: &mut *io.stderr,
    };
    let result = run_on(kind, job);
    super::job_exit(result, io)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::EXIT_OK;
    use rl_models::Tokenizer;
    use rl_trainer::TrainConfig;

    /// A small demo (1 layer, 4 warm-start updates): the exported files read back as the
    /// embedded run's job. The prompt files, loaded with `template = "raw"` and `answer_key =
    /// "solution"`, render to the ids the embedded run renders; the saved tokenizer encodes alike
    /// with `Answer:` no longer special; the model folder loads.
    #[test]
    fn exported_files_are_the_embedded_job() {
        let tmpdir = tempfile::Builder::new()
            .prefix("rlvr-export-demo-")
            .tempdir()
            .unwrap();
        let dir = tmpdir.path();
        let demo_toml = dir.join("demo.toml");
        std::fs::write(
            &demo_toml,
            "train_per_tier = 5\neval_per_tier = 2\nhidden_size = 16\nnum_hidden_layers = 1\n\
             num_attention_heads = 2\nintermediate_size = 32\n[sft]\nsteps = 4\nbatch_size = 4\n",
        )
        .unwrap();
        let args = ExportDemoArgs {
            out: dir.join("out"),
            demo: Some(demo_toml.clone()),
            seed: 3,
            backend: BackendKind::Cpu,
        };
        let (code, _, err) = crate::cli::run_captured("", |io| run(args.clone(), io));
        assert_eq!(code, EXIT_OK, "{err}");
        let demo = ArithmeticDemo::load(Some(&demo_toml)).unwrap();
        let data = demo.data().unwrap();
        let tok = Tokenizer::from_file(dir.join("out/model/tokenizer.json")).unwrap();
        let saved: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join("out/model/tokenizer.json")).unwrap(),
        )
        .unwrap();
        let special: Vec<(String, bool)> = saved["added_tokens"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (t["content"].as_str().unwrap().into(), t["special"] == true))
            .collect();
        assert!(special.contains(&("Answer:".into(), false)));
        assert!(special.contains(&("<|im_end|>".into(), true)));
        let mut cfg = TrainConfig::default().data;
        cfg.prompt_key = "prompt".into();
        cfg.answer_key = "solution".into();
        cfg.tier_key = Some("tier".into());
        cfg.chat_template = false;
        cfg.template = rl_trainer::config::PromptTemplate::Raw;
        let ours = PromptRenderer::new(&demo.train.data);
        let theirs = PromptRenderer::new(&cfg);
        for (file, set) in [("train.jsonl", &data.train), ("heldout.jsonl", &data.eval)] {
            let read = Dataset::load(&dir.join("out").join(file), &cfg).unwrap();
            assert_eq!(read.len(), set.len());
            for (a, b) in read.prompts.iter().zip(&set.prompts) {
                assert_eq!(
                    theirs.render(a, &tok).unwrap(),
                    ours.render(b, &data.tokenizer).unwrap()
                );
                assert_eq!((&a.answer, &a.tier), (&b.answer, &b.tier));
            }
        }
        let m: rl_models::CausalLm<burn::backend::Flex> =
            rl_models::CausalLm::load(dir.join("out/model"), &Default::default()).unwrap();
        assert_eq!(m.config().vocab_size, data.model.vocab_size);
    }
}
