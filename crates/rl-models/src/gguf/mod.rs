//! GGUF, llama.cpp's model file format: reading ([`read`]: header, metadata and tensor infos,
//! every count and offset checked against the file; [`quants`]: dequantization bit for bit as
//! the `gguf` Python package computes it), a file as a model source ([`model`]) with its
//! tokenizer ([`vocab`]), a file as an HF folder ([`export_hf`]), export of a checkpoint for
//! llama-server ([`export_gguf`]) and the tensor names both formats use ([`names`]).

mod export;
pub mod model;
pub mod names;
pub mod quants;
pub mod read;
mod to_hf;
pub mod vocab;

pub use export::{GGUF_DTYPE_NAMES, GgufDtype, export_gguf};
pub use model::{GgufModel, is_gguf};
pub use read::{GgufError, GgufFile};
pub use to_hf::export_hf;
pub use vocab::{GgufVocab, GgufVocabError};
