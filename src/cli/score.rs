//! `rlvr score`: per-token log-probs of token sequences under a Qwen3 model.
//!
//! Input, one sequence per line: `{"ids": [..]}`. Output, one line per accepted input line:
//! `{"logprobs": [..]}` with `logprobs[t] = log p(ids[t+1] | ids[..=t])` (length `len - 1`;
//! temperature 1, full vocabulary, f32). A bad line (not JSON, no `ids`, an id outside the
//! vocabulary, an empty sequence) is reported on stderr with its line number, nothing is written
//! for it, the run continues, and the exit code is 2.

use std::path::PathBuf;

use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Int, Tensor, TensorData};
use rl_models::{CausalLm, EntropyMode};
use serde_json::{Value, json};

use super::{EXIT_BAD_INPUT, EXIT_FAILURE, Io, LineError, json_lines};
use crate::backend::{BackendJob, BackendKind, run_on};

/// Arguments of `rlvr score`.
#[derive(clap::Args, Debug)]
pub struct ScoreArgs {
    /// The model: an HF folder (config.json + model.safetensors or sharded safetensors) or a GGUF
    /// file.
    #[arg(long)]
    pub model: PathBuf,
    /// Backend to run on.
    #[arg(long, value_enum, default_value_t = BackendKind::Cpu)]
    pub backend: BackendKind,
}

/// An f32 as a JSON number with its shortest decimal form (`-2.3456` rather than the f64
/// expansion of the f32); `None` for NaN/infinity.
pub(crate) fn f32_json(x: f32) -> Option<Value> {
    let shortest: f64 = x.to_string().parse().ok()?;
    serde_json::Number::from_f64(shortest).map(Value::Number)
}

/// Token ids from a JSON array, checked against the vocabulary.
pub(crate) fn parse_ids(
    v: Option<&Value>,
    field: &str,
    vocab: usize,
) -> Result<Vec<u32>, LineError> {
    let arr = v
        .and_then(Value::as_array)
        .ok_or_else(|| LineError::field(field, "expected an array of token ids"))?;
    arr.iter()
        .enumerate()
        .map(|(i, x)| {
            let id = x.as_u64().ok_or_else(|| {
                LineError::field(format!("{field}[{i}]"), "expected a non-negative integer")
            })?;
            if id as usize >= vocab {
                return Err(LineError::field(
                    format!("{field}[{i}]"),
                    format!("{id} is not below the model's vocab_size {vocab}"),
                ));
            }
            Ok(id as u32)
        })
        .collect()
}

fn score_line<B: Backend>(model: &CausalLm<B>, v: &Value) -> Result<Value, LineError> {
    let obj = v
        .as_object()
        .ok_or_else(|| LineError::field("<line>", "expected a JSON object"))?;
    let ids = parse_ids(obj.get("ids"), "ids", model.config().vocab_size)?;
    match ids.len() {
        0 => return Err(LineError::field("ids", "needs at least one token")),
        1 => return Ok(json!({ "logprobs": [] })),
        _ => {}
    }
    let n = ids.len();
    let input = Tensor::<B, 2, Int>::from_data(
        TensorData::new(ids.iter().map(|&x| x as i64).collect(), [1, n]),
        &model.device(),
    );
    let out = model
        .token_logprobs(input, None, EntropyMode::None)
        .map_err(|e| LineError::field("ids", e.to_string()))?;
    let values: Vec<f32> = out
        .logprobs
        .into_data()
        .convert::<f32>()
        .into_vec::<f32>()
        .map_err(|e| LineError::field("ids", format!("reading log-probs: {e:?}")))?;
    let logprobs = values
        .into_iter()
        .map(f32_json)
        .collect::<Option<Vec<Value>>>()
        .ok_or_else(|| LineError::field("ids", "the model produced a non-finite log-prob"))?;
    Ok(json!({ "logprobs": logprobs }))
}

struct ScoreJob<'a, 'b> {
    args: ScoreArgs,
    io: &'a mut Io<'b>,
}

impl BackendJob for ScoreJob<'_, '_> {
    type Output = i32;

    fn run<B: AutodiffBackend>(self, device: B::Device) -> i32 {
        // Scoring needs no gradients: the model lives on the inner backend.
        let model = match CausalLm::<B::InnerBackend>::load(&self.args.model, &device) {
            Ok(m) => m,
            Err(e) => {
                let _ = writeln!(self.io.stderr, "error: loading the model: {e}");
                return EXIT_FAILURE;
            }
        };
        json_lines(self.io, |v| score_line(&model, &v))
    }
}

/// Runs `rlvr score`.
pub fn run(args: ScoreArgs, io: &mut Io<'_>) -> i32 {
    let kind = args.backend;
    match run_on(kind, ScoreJob { args, io: &mut *io }) {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            EXIT_BAD_INPUT
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::Flex;
    use rl_models::ModelConfig;

    /// Saved into a temporary folder, removed when the returned guard drops.
    fn tiny_model_dir(name: &str) -> (tempfile::TempDir, CausalLm<Flex>) {
        let tmpdir = tempfile::Builder::new()
            .prefix(&format!("rlvr-score-{name}-"))
            .tempdir()
            .unwrap();
        let dir = tmpdir.path();
        let model = ModelConfig::tiny(32)
            .init_seeded::<Flex>(3, &Default::default())
            .unwrap();
        model.save(dir).unwrap();
        (tmpdir, model)
    }

    fn run_with(args: ScoreArgs, input: &str) -> (i32, String, String) {
        crate::cli::run_captured(input, |io| run(args, io))
    }

    #[test]
    fn scores_lines_and_reports_bad_ones() {
        let (tmpdir, model) = tiny_model_dir("lines");
        let dir = tmpdir.path();
        let input =
            "{\"ids\": [1, 5, 9, 2]}\nnot json\n{\"ids\": [1, 99]}\n{\"ids\": [7]}\n{\"x\": 1}\n";
        let (code, out, err) = run_with(
            ScoreArgs {
                model: dir.to_path_buf(),
                backend: BackendKind::Cpu,
            },
            input,
        );
        assert_eq!(code, EXIT_BAD_INPUT);
        let lines: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        // the same numbers as the library call on the same model
        let want = model
            .token_logprobs(
                Tensor::from_data(
                    TensorData::new(vec![1i64, 5, 9, 2], [1, 4]),
                    &Default::default(),
                ),
                None,
                EntropyMode::None,
            )
            .unwrap()
            .logprobs
            .into_data()
            .into_vec::<f32>()
            .unwrap();
        let got: Vec<f32> = lines[0]["logprobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect();
        assert_eq!(got, want);
        assert_eq!(lines[1], json!({"logprobs": []}));
        assert!(err.contains("line 2: invalid JSON"), "{err}");
        assert!(
            err.contains("line 3: field `ids[1]`: 99 is not below"),
            "{err}"
        );
        assert!(err.contains("line 5: field `ids`"), "{err}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn missing_model_is_a_failure() {
        let (code, _, err) = run_with(
            ScoreArgs {
                model: PathBuf::from("/nonexistent/model"),
                backend: BackendKind::Cpu,
            },
            "",
        );
        assert_eq!(code, EXIT_FAILURE);
        assert!(err.contains("config.json"), "{err}");
    }
}
