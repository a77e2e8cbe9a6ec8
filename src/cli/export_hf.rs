//! `rlvr export-hf`: a GGUF model file as an HF folder (safetensors, `config.json`,
//! `tokenizer.json`, `tokenizer_config.json`) for transformers, PEFT or vLLM.

use std::path::PathBuf;

use rl_models::SaveDtype;

use super::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, Io};

/// Arguments of `rlvr export-hf`.
#[derive(clap::Args, Debug)]
pub struct ExportHfArgs {
    /// The GGUF model file.
    #[arg(long)]
    pub model: PathBuf,
    /// Output folder (created if needed).
    #[arg(long)]
    pub out: PathBuf,
    /// Weight dtype on disk: f32 or bf16 (the GGUF's tensors are dequantized to f32 first).
    #[arg(long, default_value = "f32")]
    pub dtype: String,
}

/// Runs `rlvr export-hf`.
pub fn run(args: ExportHfArgs, io: &mut Io<'_>) -> i32 {
    let dtype = match args.dtype.as_str() {
        "f32" => SaveDtype::F32,
        "bf16" => SaveDtype::Bf16,
        other => {
            let _ = writeln!(io.stderr, "error: --dtype {other:?}: expected f32 or bf16");
            return EXIT_BAD_INPUT;
        }
    };
    let device = Default::default();
    match rl_models::gguf::export_hf::<burn::backend::Flex>(&args.model, &args.out, dtype, &device)
    {
        Ok(()) => {
            let _ = writeln!(io.stderr, "wrote {}", args.out.display());
            EXIT_OK
        }
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            EXIT_FAILURE
        }
    }
}
