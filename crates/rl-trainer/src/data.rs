//! Prompt sets (JSON lines and Parquet), prompt rendering and the seeded prompt sampler.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use rl_models::{ChatMessage, Tokenizer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::TrainerError;
use crate::config::{DataSection, PromptTemplate};

/// DAPO's prompt template (DAPO-Math-17K and the DAPO README).
pub const DAPO_TEMPLATE: &str = "Solve the following math problem step by step. The last line of your response should be of the form Answer: $Answer (without quotes) where $Answer is the answer to the problem.\n\n{problem}\n\nRemember to put your answer on its own line after \"Answer:\"";

/// What a prompt says: a bare problem, or chat messages as stored in the data set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PromptText {
    /// A problem; the configured template and chat template are applied.
    Text(String),
    /// Ready chat messages (DAPO-Math-17K stores the template-applied problem this way).
    Chat(Vec<ChatMessage>),
}

/// One prompt with its ground truth.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Prompt {
    /// Stable id: the record's 0-based index in its file.
    pub id: u64,
    /// The problem.
    pub text: PromptText,
    /// The ground-truth answer given to the verifier.
    pub answer: String,
    /// Optional difficulty tier (for per-tier metrics).
    pub tier: Option<String>,
}

/// An in-memory prompt set.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Dataset {
    /// The prompts, ids 0..n.
    pub prompts: Vec<Prompt>,
}

impl Dataset {
    /// Number of prompts.
    pub fn len(&self) -> usize {
        self.prompts.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.prompts.is_empty()
    }

    /// Loads `.jsonl`/`.json` (JSON lines) or `.parquet` with the columns of `cfg`. A bad record
    /// is an error naming the file, the record number and the column.
    pub fn load(path: &Path, cfg: &DataSection) -> Result<Self, TrainerError> {
        let mut prompts = Vec::new();
        for rec in records(path)? {
            let (record, value) = rec?;
            let (text, answer, tier) = parse_record(path, record, &value, cfg)?;
            prompts.push(Prompt {
                id: prompts.len() as u64,
                text,
                answer,
                tier,
            });
        }
        non_empty(path, prompts)
    }

    /// [`Dataset::load`] that skips bad records instead of stopping at the first: returns the
    /// good ones, each with its 0-based record index as `id` (stable whatever is skipped), and
    /// one error per skipped record, naming the file, the record number and the column.
    pub fn load_skipping_bad_records(
        path: &Path,
        cfg: &DataSection,
    ) -> Result<(Self, Vec<TrainerError>), TrainerError> {
        let mut prompts = Vec::new();
        let mut skipped = Vec::new();
        for rec in records(path)? {
            let parsed = rec.and_then(|(record, value)| {
                let (text, answer, tier) = parse_record(path, record, &value, cfg)?;
                Ok(Prompt {
                    id: record.saturating_sub(1) as u64,
                    text,
                    answer,
                    tier,
                })
            });
            match parsed {
                Ok(p) => prompts.push(p),
                Err(e @ TrainerError::Data { .. }) => skipped.push(e),
                Err(e) => return Err(e),
            }
        }
        Ok((non_empty(path, prompts)?, skipped))
    }

    /// Distinct tiers in first-appearance order.
    pub fn tiers(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for p in &self.prompts {
            if let Some(t) = &p.tier
                && !out.contains(t)
            {
                out.push(t.clone());
            }
        }
        out
    }
}

/// Follows a dotted path into nested objects.
fn lookup<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .try_fold(v, |cur, key| cur.get(key))
        .filter(|v| !v.is_null())
}

fn jsonl_records(
    path: &Path,
) -> Result<impl Iterator<Item = Result<(usize, Value), TrainerError>>, TrainerError> {
    let file = File::open(path).map_err(|e| TrainerError::io(path, e))?;
    let p = path.display().to_string();
    Ok(BufReader::new(file)
        .lines()
        .enumerate()
        .filter_map(move |(i, line)| {
            let record = i + 1;
            match line {
                Err(e) => Some(Err(TrainerError::Data {
                    path: p.clone(),
                    record,
                    message: format!("unreadable line: {e}"),
                })),
                Ok(l) if l.trim().is_empty() => None,
                Ok(l) => Some(
                    serde_json::from_str::<Value>(&l)
                        .map(|v| (record, v))
                        .map_err(|e| TrainerError::Data {
                            path: p.clone(),
                            record,
                            message: format!("invalid JSON: {e}"),
                        }),
                ),
            }
        }))
}

fn parquet_records(path: &Path) -> Result<Vec<(usize, Value)>, TrainerError> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let file = File::open(path).map_err(|e| TrainerError::io(path, e))?;
    let data_err = |record: usize, e: parquet::errors::ParquetError| TrainerError::Data {
        path: path.display().to_string(),
        record,
        message: format!("parquet: {e}"),
    };
    let reader = SerializedFileReader::new(file).map_err(|e| data_err(0, e))?;
    let rows = reader.get_row_iter(None).map_err(|e| data_err(0, e))?;
    let mut out = Vec::new();
    for (i, row) in rows.enumerate() {
        let row = row.map_err(|e| data_err(i + 1, e))?;
        out.push((i + 1, row.to_json_value()));
    }
    Ok(out)
}

/// A data file's records: (1-based record number, value), or the error of an unreadable one.
type Records<'a> = Box<dyn Iterator<Item = Result<(usize, Value), TrainerError>> + 'a>;

/// The records of a data file, by extension.
fn records(path: &Path) -> Result<Records<'_>, TrainerError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    Ok(match ext.as_str() {
        "jsonl" | "json" | "ndjson" => Box::new(jsonl_records(path)?),
        "parquet" => Box::new(parquet_records(path)?.into_iter().map(Ok)),
        other => {
            return Err(TrainerError::Config {
                field: "data.train/eval".into(),
                message: format!(
                    "{}: unknown extension `{other}`; valid: jsonl, json, ndjson, parquet",
                    path.display()
                ),
            });
        }
    })
}

/// A file without a single prompt is an error.
fn non_empty(path: &Path, prompts: Vec<Prompt>) -> Result<Dataset, TrainerError> {
    if prompts.is_empty() {
        return Err(TrainerError::Data {
            path: path.display().to_string(),
            record: 0,
            message: "no prompts".into(),
        });
    }
    Ok(Dataset { prompts })
}

/// The problem, answer and tier of one record.
fn parse_record(
    path: &Path,
    record: usize,
    value: &Value,
    cfg: &DataSection,
) -> Result<(PromptText, String, Option<String>), TrainerError> {
    let err = |message: String| TrainerError::Data {
        path: path.display().to_string(),
        record,
        message,
    };
    let text = match lookup(value, &cfg.prompt_key) {
        Some(Value::String(s)) => PromptText::Text(s.clone()),
        Some(v @ Value::Array(_)) => {
            PromptText::Chat(serde_json::from_value(v.clone()).map_err(|e| {
                err(format!(
                    "column `{}`: expected chat messages [{{role, content}}]: {e}",
                    cfg.prompt_key
                ))
            })?)
        }
        Some(_) => {
            return Err(err(format!(
                "column `{}`: expected a string or a list of chat messages",
                cfg.prompt_key
            )));
        }
        None => return Err(err(format!("column `{}` is missing", cfg.prompt_key))),
    };
    let answer = match lookup(value, &cfg.answer_key) {
        Some(Value::String(s)) => s.clone(),
        Some(v @ Value::Number(_)) => v.to_string(),
        // Structured ground truths (the `code` verifier's test cases, e.g. `{"inputs": [...],
        // "outputs": [...]}`) are given to the verifier as their JSON text.
        Some(v @ (Value::Object(_) | Value::Array(_))) => v.to_string(),
        Some(_) => {
            return Err(err(format!(
                "column `{}`: expected a string, a number, or a JSON object or array (test cases)",
                cfg.answer_key
            )));
        }
        None => return Err(err(format!("column `{}` is missing", cfg.answer_key))),
    };
    let Some(answer) = cfg.answer_format.extract(&answer) else {
        return Err(err(format!(
            "column `{}`: no answer in it as data.answer_format = {:?} reads it",
            cfg.answer_key, cfg.answer_format
        )));
    };
    let tier = match &cfg.tier_key {
        None => None,
        Some(k) => match lookup(value, k) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(v @ Value::Number(_)) => Some(v.to_string()),
            Some(_) => {
                return Err(err(format!("column `{k}`: expected a string or a number")));
            }
            None => return Err(err(format!("column `{k}` is missing"))),
        },
    };
    Ok((text, answer, tier))
}

/// Renders prompts into token ids.
#[derive(Clone, Debug)]
pub struct PromptRenderer {
    template: PromptTemplate,
    chat_template: bool,
    disable_thinking: bool,
    tools: Vec<String>,
}

impl PromptRenderer {
    /// From the data section.
    pub fn new(cfg: &DataSection) -> Self {
        Self {
            template: cfg.template.clone(),
            chat_template: cfg.chat_template,
            disable_thinking: cfg.disable_thinking,
            tools: Vec::new(),
        }
    }

    /// The same renderer with tool definitions in the chat template's system turn (as
    /// `tools=[...]` renders them; JSON text per tool, see `rl_env::ToolRegistry::definitions_json`).
    pub fn with_tools(mut self, tools: Vec<String>) -> Self {
        self.tools = tools;
        self
    }

    /// Qwen3's `enable_thinking` of the chat template (not `data.disable_thinking`).
    pub fn enable_thinking(&self) -> bool {
        !self.disable_thinking
    }

    /// The user message for a bare problem.
    pub fn user_text(&self, problem: &str) -> String {
        match &self.template {
            PromptTemplate::Raw => problem.to_string(),
            PromptTemplate::Dapo => DAPO_TEMPLATE.replace("{problem}", problem),
            PromptTemplate::Custom(t) => t.replace("{problem}", problem),
        }
    }

    /// Token ids of a prompt, ending where the model's answer begins: through the chat template,
    /// or the text with the tokens the tokenizer adds around a text (a base model's BOS,
    /// [`Tokenizer::encode_prompt`]).
    pub fn render(&self, prompt: &Prompt, tokenizer: &Tokenizer) -> Result<Vec<u32>, TrainerError> {
        let messages = match &prompt.text {
            PromptText::Text(p) => vec![ChatMessage::user(self.user_text(p))],
            PromptText::Chat(m) => m.clone(),
        };
        if self.chat_template {
            Ok(tokenizer.apply_chat_template_with_tools(
                &messages,
                &self.tools,
                true,
                !self.disable_thinking,
            )?)
        } else {
            let text: Vec<&str> = messages.iter().map(|m| m.content.as_str()).collect();
            Ok(tokenizer.encode_prompt(&text.join("\n"))?)
        }
    }
}

/// Position of the prompt sampler, saved in checkpoints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SamplerState {
    /// Completed passes over the data.
    pub epoch: u64,
    /// Next position in this epoch's order.
    pub cursor: usize,
}

/// Seeded without-replacement prompt order, reshuffled every epoch; fully determined by
/// (seed, epoch, cursor), so a checkpoint needs only [`SamplerState`].
#[derive(Clone, Debug)]
pub struct PromptSampler {
    seed: u64,
    n: usize,
    order: Vec<usize>,
    state: SamplerState,
}

impl PromptSampler {
    /// A sampler over `n` prompts.
    pub fn new(n: usize, seed: u64) -> Self {
        Self::restore(n, seed, SamplerState::default())
    }

    /// A sampler at a saved position.
    pub fn restore(n: usize, seed: u64, state: SamplerState) -> Self {
        let mut s = Self {
            seed,
            n,
            order: Vec::new(),
            state,
        };
        s.shuffle();
        s
    }

    fn shuffle(&mut self) {
        self.order = (0..self.n).collect();
        let mut rng = ChaCha8Rng::seed_from_u64(
            self.seed ^ self.state.epoch.wrapping_mul(0x9E37_79B9_7F4A_7C15),
        );
        self.order.shuffle(&mut rng);
    }

    /// The next `k` prompt indices (crossing epoch boundaries as needed).
    pub fn next(&mut self, k: usize) -> Vec<usize> {
        let mut out = Vec::with_capacity(k);
        while out.len() < k && self.n > 0 {
            if self.state.cursor >= self.n {
                self.state.epoch += 1;
                self.state.cursor = 0;
                self.shuffle();
            }
            out.push(self.order[self.state.cursor]);
            self.state.cursor += 1;
        }
        out
    }

    /// The current position.
    pub fn state(&self) -> SamplerState {
        self.state
    }
}
