//! `rlvr generate`: continue one prompt with a Qwen3 model.
//!
//! The prompt is either text (`--prompt`, encoded with `--tokenizer`, optionally wrapped in the
//! Qwen chat template with `--chat`) or token ids (`--ids 1,2,3`). Prints one JSON object:
//! `{"new_ids": [..], "logprobs": [..], "finish_reason": "eos"|"stop"|"length", "text": ".."}`
//! (`text` only with a tokenizer; `logprobs` are the model's temperature-1 log-probs of the new
//! tokens). `--temperature 0` (the default) is greedy decoding; sampling is seeded by `--seed`.

use std::path::PathBuf;

use burn::tensor::backend::AutodiffBackend;
use rl_models::{CausalLm, ChatMessage, GenerationConfig, Tokenizer, generate};
use serde_json::{Map, Value, json};

use super::score::f32_json;
use super::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, Io};
use crate::backend::{BackendJob, BackendKind, run_on};

/// Arguments of `rlvr generate`.
#[derive(clap::Args, Debug, Clone)]
pub struct GenerateArgs {
    /// The model: an HF folder (config.json + model.safetensors or sharded safetensors) or a GGUF
    /// file.
    #[arg(long)]
    pub model: PathBuf,
    /// `tokenizer.json` for `--prompt` and for the `text` output (default with a GGUF model: its
    /// vocabulary).
    #[arg(long)]
    pub tokenizer: Option<PathBuf>,
    /// Prompt text (needs a tokenizer).
    #[arg(long, conflicts_with = "ids", required_unless_present = "ids")]
    pub prompt: Option<String>,
    /// Prompt token ids, comma separated.
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    pub ids: Option<Vec<u32>>,
    /// Wrap `--prompt` in the Qwen chat template as one user turn, with the generation prompt.
    #[arg(long, requires = "prompt")]
    pub chat: bool,
    /// With `--chat`: append the empty think block (Qwen3 `enable_thinking=False`).
    #[arg(long, requires = "chat")]
    pub no_think: bool,
    /// Most new tokens.
    #[arg(long, default_value_t = 64)]
    pub max_new_tokens: usize,
    /// Sampling temperature; 0 = greedy.
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f32,
    /// Nucleus sampling threshold in (0, 1]; 1 = off.
    #[arg(long, default_value_t = 1.0)]
    pub top_p: f32,
    /// Keep only the k most likely tokens; 0 = off.
    #[arg(long, default_value_t = 0)]
    pub top_k: usize,
    /// Sampling seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// End-of-sequence ids (default: the model config's `eos_token_id`).
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    pub eos_ids: Option<Vec<u32>>,
    /// Extra stop ids (finish reason `stop`).
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    pub stop_ids: Option<Vec<u32>>,
    /// Backend to run on.
    #[arg(long, value_enum, default_value_t = BackendKind::Cpu)]
    pub backend: BackendKind,
}

/// Everything prepared before the backend is chosen.
struct Prepared {
    args: GenerateArgs,
    tokenizer: Option<Tokenizer>,
    prompt: Vec<u32>,
}

/// A user error (exit 2) or a runtime failure (exit 1).
enum Failure {
    BadInput(String),
    Runtime(String),
}

fn prepare(args: GenerateArgs) -> Result<Prepared, Failure> {
    let tokenizer = match &args.tokenizer {
        Some(p) => Some(Tokenizer::from_file(p).map_err(|e| Failure::BadInput(e.to_string()))?),
        None if rl_models::gguf::is_gguf(&args.model) => Some(
            Tokenizer::for_model(&args.model, None)
                .map_err(|e| Failure::BadInput(e.to_string()))?,
        ),
        None => None,
    };
    let prompt = match (&args.prompt, &args.ids) {
        (Some(text), None) => {
            let tok = tokenizer.as_ref().ok_or_else(|| {
                Failure::BadInput("--prompt needs --tokenizer (or a GGUF --model)".to_string())
            })?;
            let res = if args.chat {
                tok.apply_chat_template(&[ChatMessage::user(text.as_str())], true, !args.no_think)
            } else {
                tok.encode(text)
            };
            res.map_err(|e| Failure::BadInput(format!("--prompt: {e}")))?
        }
        (None, Some(ids)) => ids.clone(),
        _ => {
            return Err(Failure::BadInput(
                "give exactly one of --prompt and --ids".to_string(),
            ));
        }
    };
    if prompt.is_empty() {
        return Err(Failure::BadInput("the prompt has no tokens".to_string()));
    }
    Ok(Prepared {
        args,
        tokenizer,
        prompt,
    })
}

impl BackendJob for Prepared {
    type Output = Result<Value, Failure>;

    fn run<B: AutodiffBackend>(self, device: B::Device) -> Result<Value, Failure> {
        let args = &self.args;
        let model = CausalLm::<B::InnerBackend>::load(&args.model, &device)
            .map_err(|e| Failure::Runtime(format!("loading the model: {e}")))?;
        let vocab = model.config().vocab_size;
        let allowed = self
            .tokenizer
            .as_ref()
            .map(|t| t.num_defined_ids().min(vocab));
        let cfg = GenerationConfig {
            max_new_tokens: args.max_new_tokens,
            temperature: args.temperature,
            top_p: args.top_p,
            top_k: args.top_k,
            seed: args.seed,
            eos_token_ids: args
                .eos_ids
                .clone()
                .unwrap_or_else(|| model.config().eos_token_id.clone()),
            stop_token_ids: args.stop_ids.clone().unwrap_or_default(),
            allowed_vocab_size: allowed,
            ..GenerationConfig::default()
        };
        let out = generate(&model, std::slice::from_ref(&self.prompt), &cfg)
            .map_err(|e| Failure::BadInput(e.to_string()))?;
        let g = &out[0];
        let mut obj = Map::new();
        obj.insert("new_ids".into(), json!(g.tokens));
        obj.insert(
            "logprobs".into(),
            Value::Array(
                g.logprobs
                    .iter()
                    .map(|&x| f32_json(x).unwrap_or(Value::Null))
                    .collect(),
            ),
        );
        obj.insert("finish_reason".into(), json!(g.finish_reason));
        if let Some(tok) = &self.tokenizer {
            let text = tok
                .decode(&g.tokens, false)
                .map_err(|e| Failure::Runtime(format!("decoding: {e}")))?;
            obj.insert("text".into(), Value::String(text));
        }
        Ok(Value::Object(obj))
    }
}

/// Runs `rlvr generate`.
pub fn run(args: GenerateArgs, io: &mut Io<'_>) -> i32 {
    let kind = args.backend;
    let result = prepare(args)
        .and_then(|p| run_on(kind, p).map_err(|e| Failure::BadInput(e.to_string()))?);
    match result {
        Ok(v) => {
            if writeln!(io.stdout, "{v}").is_err() {
                return EXIT_FAILURE;
            }
            EXIT_OK
        }
        Err(Failure::BadInput(m)) => {
            let _ = writeln!(io.stderr, "error: {m}");
            EXIT_BAD_INPUT
        }
        Err(Failure::Runtime(m)) => {
            let _ = writeln!(io.stderr, "error: {m}");
            EXIT_FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::Flex;
    use rl_models::ModelConfig;

    const ALPHABET: &str = "0123456789+= ";

    /// A tiny random model with a char-level tokenizer (14 + 2 specials + unk = 16 ids).
    /// Saved into a temporary folder, removed when the returned guard drops.
    fn tiny(name: &str) -> (tempfile::TempDir, CausalLm<Flex>, Tokenizer) {
        let tmpdir = tempfile::Builder::new()
            .prefix(&format!("rlvr-generate-{name}-"))
            .tempdir()
            .unwrap();
        let dir = tmpdir.path();
        let tok = Tokenizer::char_level(ALPHABET, &["<|endoftext|>", "<|im_end|>"]).unwrap();
        let model = ModelConfig::tiny(tok.num_defined_ids() + 4)
            .init_seeded::<Flex>(11, &Default::default())
            .unwrap();
        model.save(dir).unwrap();
        tok.save(dir.join("tokenizer.json")).unwrap();
        (tmpdir, model, tok)
    }

    fn args(dir: &std::path::Path) -> GenerateArgs {
        GenerateArgs {
            model: dir.to_path_buf(),
            tokenizer: None,
            prompt: None,
            ids: None,
            chat: false,
            no_think: false,
            max_new_tokens: 6,
            temperature: 0.0,
            top_p: 1.0,
            top_k: 0,
            seed: 0,
            eos_ids: None,
            stop_ids: None,
            backend: BackendKind::Cpu,
        }
    }

    fn run_with(a: GenerateArgs) -> (i32, String, String) {
        crate::cli::run_captured("", |io| run(a, io))
    }

    #[test]
    fn greedy_ids_and_text_match_the_library() {
        let (tmpdir, model, tok) = tiny("greedy");
        let dir = tmpdir.path();
        let prompt = tok.encode("12+3=").unwrap();
        let want = generate(
            &model,
            std::slice::from_ref(&prompt),
            &GenerationConfig {
                allowed_vocab_size: Some(tok.num_defined_ids()),
                ..GenerationConfig::greedy(6)
            },
        )
        .unwrap();
        let (code, out, err) = run_with(GenerateArgs {
            tokenizer: Some(dir.join("tokenizer.json")),
            prompt: Some("12+3=".into()),
            ..args(dir)
        });
        assert_eq!(code, EXIT_OK, "{err}");
        let v: Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(v["new_ids"], json!(want[0].tokens));
        assert_eq!(v["finish_reason"], json!(want[0].finish_reason));
        assert_eq!(
            v["text"],
            json!(tok.decode(&want[0].tokens, false).unwrap())
        );
        // the same prompt as ids, without a tokenizer: no text, ids over the full vocabulary
        let (code, out, _) = run_with(GenerateArgs {
            ids: Some(prompt.clone()),
            ..args(dir)
        });
        assert_eq!(code, EXIT_OK);
        let v: Value = serde_json::from_str(out.trim()).unwrap();
        let full = generate(&model, &[prompt], &GenerationConfig::greedy(6)).unwrap();
        assert_eq!(v["new_ids"], json!(full[0].tokens));
        assert!(v.get("text").is_none());
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn sampling_is_seeded_and_stop_ids_end_the_sample() {
        let (tmpdir, _, _) = tiny("sample");
        let dir = tmpdir.path();
        let sample = |seed| {
            let (code, out, _) = run_with(GenerateArgs {
                ids: Some(vec![1, 2, 3]),
                temperature: 1.0,
                top_p: 0.9,
                seed,
                max_new_tokens: 12,
                ..args(dir)
            });
            assert_eq!(code, EXIT_OK);
            serde_json::from_str::<Value>(out.trim()).unwrap()
        };
        assert_eq!(sample(5), sample(5));
        let first = sample(5)["new_ids"][0].as_u64().unwrap() as u32;
        let (_, out, _) = run_with(GenerateArgs {
            ids: Some(vec![1, 2, 3]),
            temperature: 1.0,
            top_p: 0.9,
            seed: 5,
            stop_ids: Some(vec![first]),
            ..args(dir)
        });
        let v: Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(v["new_ids"], json!([first]));
        assert_eq!(v["finish_reason"], json!("stop"));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn bad_arguments_exit_2() {
        let (tmpdir, _, _) = tiny("bad");
        let dir = tmpdir.path();
        let (code, _, err) = run_with(GenerateArgs {
            prompt: Some("1+1".into()),
            ..args(dir)
        });
        assert_eq!(code, EXIT_BAD_INPUT);
        assert!(err.contains("--tokenizer"), "{err}");
        let (code, _, err) = run_with(GenerateArgs {
            ids: Some(vec![1, 999]),
            ..args(dir)
        });
        assert_eq!(code, EXIT_BAD_INPUT);
        assert!(err.contains("999"), "{err}");
        let (code, _, err) = run_with(GenerateArgs {
            ids: Some(vec![1]),
            top_p: 0.0,
            ..args(dir)
        });
        assert_eq!(code, EXIT_BAD_INPUT);
        assert!(err.contains("top_p"), "{err}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
