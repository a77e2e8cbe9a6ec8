//! `rlvr export-gguf`: a Qwen3 checkpoint (HF layout with `tokenizer.json`) as a GGUF file for
//! llama.cpp, e.g. to serve rollouts with `llama-server` (docs/rollout.md).

use std::path::PathBuf;

use rl_models::{GgufDtype, export_gguf};

use super::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, Io};

/// Arguments of `rlvr export-gguf`.
#[derive(clap::Args, Debug)]
pub struct ExportGgufArgs {
    /// Model directory: config.json, model.safetensors (or shards), tokenizer.json.
    #[arg(long)]
    pub model: PathBuf,
    /// Output file (.gguf).
    #[arg(long)]
    pub out: PathBuf,
    /// Tensor type: f32, f16 or bf16 (norm weights stay f32).
    #[arg(long, default_value = "f32")]
    pub dtype: String,
}

/// Runs `rlvr export-gguf`.
pub fn run(args: ExportGgufArgs, io: &mut Io<'_>) -> i32 {
    let dtype = match GgufDtype::from_name(&args.dtype) {
        Ok(d) => d,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: --dtype: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    match export_gguf(&args.model, &args.out, dtype) {
        Ok(()) => {
            let size = std::fs::metadata(&args.out).map(|m| m.len()).unwrap_or(0);
            let _ = writeln!(
                io.stderr,
                "wrote {} ({:.1} MB, {})",
                args.out.display(),
                size as f64 / 1e6,
                args.dtype
            );
            EXIT_OK
        }
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            EXIT_FAILURE
        }
    }
}
