//! Typed errors. Nothing in this crate panics on user input, files or model output: every failure
//! is one of these variants, naming the file, tensor, config field or input row at fault.

use std::path::PathBuf;

/// An error from loading, saving or running a model.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating-system error.
        #[source]
        source: std::io::Error,
    },
    /// A JSON file (config.json, model.safetensors.index.json) is not valid JSON or has a field of
    /// the wrong type.
    #[error("{path}: invalid JSON: {source}")]
    Json {
        /// The file (`<string>` when parsed from memory).
        path: PathBuf,
        /// The parser's error (it names the line and column).
        #[source]
        source: serde_json::Error,
    },
    /// A config field has a value this implementation does not support.
    #[error("{}config field `{field}` = {value}: {expected}", location(file.as_deref(), *line))]
    InvalidConfig {
        /// The config file, when the config was read from one.
        file: Option<PathBuf>,
        /// The line of the field in that file, when it is there.
        line: Option<usize>,
        /// The HF `config.json` field name.
        field: &'static str,
        /// The value found, as JSON.
        value: String,
        /// The accepted values.
        expected: String,
    },
    /// A config disagrees with the checkpoint it came with (say, more layers than the files
    /// hold).
    #[error("{config}: config field `{field}` does not match the checkpoint: {message}")]
    ConfigMismatch {
        /// The config file.
        config: PathBuf,
        /// The field at fault.
        field: &'static str,
        /// What the config implies and what the files hold.
        message: String,
    },
    /// A GGUF file is malformed or hostile (its header, metadata or tensor infos).
    #[error(transparent)]
    Gguf(Box<crate::gguf::GgufError>),
    /// A model's chat template (in `tokenizer_config.json` or a GGUF file) cannot be read or
    /// does not compile.
    #[error("{file}: chat template: {message}")]
    ChatTemplate {
        /// The file holding the template.
        file: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A GGUF file's `tokenizer.ggml.*` metadata does not make a tokenizer this crate builds.
    #[error("{file}: {source}")]
    GgufVocab {
        /// The GGUF file.
        file: PathBuf,
        /// What is wrong with its `tokenizer.ggml.*` metadata.
        #[source]
        source: crate::gguf::GgufVocabError,
    },
    /// A GGUF file's metadata does not describe a model this crate builds.
    #[error("{file}: `{field}`: {message}")]
    GgufModel {
        /// The file.
        file: PathBuf,
        /// The metadata key or tensor at fault.
        field: String,
        /// What is wrong, with the supported values.
        message: String,
    },
    /// No weights were found in a model directory.
    #[error("{dir}: no model.safetensors or model.safetensors.index.json")]
    NoWeights {
        /// The directory searched.
        dir: PathBuf,
    },
    /// The safetensors header of a file is invalid (too short, bad length, bad JSON, inconsistent
    /// offsets).
    #[error("{file}: invalid safetensors header: {message}")]
    InvalidSafetensors {
        /// The file.
        file: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A file ends before the data of a tensor its header declares.
    #[error(
        "{file}: truncated: tensor `{tensor}` needs bytes up to {needed} of the data section, the file holds {available}"
    )]
    Truncated {
        /// The file.
        file: PathBuf,
        /// The first tensor whose data is cut off.
        tensor: String,
        /// End offset (in the data section) the header declares for it.
        needed: u64,
        /// Bytes the data section actually holds.
        available: u64,
    },
    /// A file is longer than its header declares.
    #[error("{file}: {extra} trailing bytes after the last tensor")]
    TrailingBytes {
        /// The file.
        file: PathBuf,
        /// Number of unexpected bytes.
        extra: u64,
    },
    /// A tensor the model needs is in none of the files.
    #[error("missing tensor `{tensor}` (searched {searched})")]
    MissingTensor {
        /// The HF tensor name.
        tensor: String,
        /// The file(s) searched.
        searched: String,
    },
    /// A file holds a tensor the model does not have.
    #[error("{file}: unexpected tensor `{tensor}` (not part of this model config)")]
    UnexpectedTensor {
        /// The file.
        file: PathBuf,
        /// The HF tensor name.
        tensor: String,
    },
    /// Two shards both hold a tensor, or the index names a tensor its shard lacks.
    #[error("tensor `{tensor}`: {message}")]
    ShardMismatch {
        /// The HF tensor name.
        tensor: String,
        /// What is inconsistent.
        message: String,
    },
    /// A tensor has a shape other than the config implies.
    #[error(
        "{file}: tensor `{tensor}`: shape {found:?}, expected {expected:?}{}",
        implied_by(config.as_deref())
    )]
    ShapeMismatch {
        /// The file holding the tensor.
        file: PathBuf,
        /// The config file the expected shape comes from, when the config is a file of its own
        /// (`config.json`, `adapter_config.json`); `None` when it is the tensor's own file (GGUF).
        config: Option<PathBuf>,
        /// The tensor name (HF, or the file's own name for GGUF).
        tensor: String,
        /// Shape implied by the config.
        expected: Vec<usize>,
        /// Shape in the file.
        found: Vec<usize>,
    },
    /// A tensor has a dtype other than bf16, f16 or f32.
    #[error(
        "{file}: tensor `{tensor}`: dtype {dtype} is not supported (expected BF16, F16 or F32)"
    )]
    UnsupportedDtype {
        /// The file holding the tensor.
        file: PathBuf,
        /// The HF tensor name.
        tensor: String,
        /// The dtype in the file.
        dtype: String,
    },
    /// A parameter holds NaN or infinity after loading.
    #[error("{file}: tensor `{tensor}`: holds a non-finite value")]
    NonFiniteWeight {
        /// The file holding the tensor.
        file: PathBuf,
        /// The HF tensor name.
        tensor: String,
    },
    /// Bad input to a model function (empty prompt, id out of range, inconsistent shapes).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// A name no registry entry has (`GGUF dtype`, …).
    #[error(transparent)]
    UnknownName(#[from] rl_core::UnknownName),
    /// Loading a model's tokenizer failed.
    #[error(transparent)]
    Tokenizer(#[from] TokenizerError),
    /// A generation setting is out of range.
    #[error("generation config field `{field}` = {value}: {expected}")]
    InvalidGenerationConfig {
        /// The field of [`crate::GenerationConfig`].
        field: &'static str,
        /// The value found.
        value: String,
        /// The accepted values.
        expected: String,
    },
    /// A KV cache is too small for the tokens appended to it.
    #[error("KV cache holds {capacity} positions, {needed} needed")]
    CacheOverflow {
        /// Positions the cache was allocated for.
        capacity: usize,
        /// Positions the call needs.
        needed: usize,
    },
    /// The model produced NaN or infinite logits (diverged weights).
    #[error("non-finite logits for sample {row} at generation step {step}")]
    NonFiniteLogits {
        /// The sample (index into the prompts).
        row: usize,
        /// The generation step.
        step: usize,
    },
    /// Reading a tensor back from the device failed.
    #[error("reading tensor data from the device failed: {0}")]
    Data(String),
}

/// `file:line: ` (or `file: `, or nothing) before a message.
fn location(file: Option<&std::path::Path>, line: Option<usize>) -> String {
    match (file, line) {
        (Some(f), Some(l)) => format!("{}:{l}: ", f.display()),
        (Some(f), None) => format!("{}: ", f.display()),
        _ => String::new(),
    }
}

/// ` as <config> implies` (or nothing) after the expected shape of a tensor.
fn implied_by(config: Option<&std::path::Path>) -> String {
    config.map_or_else(String::new, |c| format!(" as {} implies", c.display()))
}

/// An error from the tokenizer wrapper.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    /// Reading the tokenizer file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating-system error.
        #[source]
        source: std::io::Error,
    },
    /// The `tokenizers` crate rejected the file or failed on an input.
    #[error("{context}: {message}")]
    Tokenizers {
        /// What was being done.
        context: String,
        /// The `tokenizers` error.
        message: String,
    },
    /// A char-level tokenizer was asked for an invalid alphabet or special token.
    #[error("invalid char-level tokenizer: {0}")]
    InvalidCharLevel(String),
    /// The text holds characters the tokenizer cannot represent (it produced the unknown token).
    #[error("text holds characters outside the tokenizer's vocabulary: {fragment:?}")]
    UnknownText {
        /// The first fragment that became the unknown token.
        fragment: String,
    },
    /// An id is not defined by the tokenizer.
    #[error("token id {id} is not defined by the tokenizer ({defined} ids defined)")]
    UnknownId {
        /// The id.
        id: u32,
        /// Number of ids the tokenizer defines.
        defined: usize,
    },
    /// A chat template special token is not in the vocabulary.
    #[error("the tokenizer has no `{0}` token, which the Qwen chat template needs")]
    MissingSpecialToken(String),
    /// The model's chat template failed on these messages (or a tool definition is not JSON).
    #[error("chat template: {0}")]
    ChatTemplate(String),
    /// A chat message has a role the template does not know.
    #[error("chat message {index}: role `{role}` (expected system, user, assistant or tool)")]
    InvalidRole {
        /// Index of the message.
        index: usize,
        /// The role found.
        role: String,
    },
}
