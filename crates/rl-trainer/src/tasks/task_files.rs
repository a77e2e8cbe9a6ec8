//! The prompt sets a generated task writes for `rlvr train`, `rlvr eval` and TRL: `train.jsonl`
//! and `eval.jsonl`, one object per line with `prompt`, `answer` and `tier`.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::TrainerError;
use crate::data::{Dataset, PromptText};

/// Where a task wrote its prompt sets (JSON lines: `prompt`, `answer`, `tier`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskFiles {
    /// Training prompts.
    pub train: PathBuf,
    /// Held-out prompts.
    pub eval: PathBuf,
}

impl TaskFiles {
    /// Writes `train.jsonl` and `eval.jsonl` into `dir` (created if needed).
    pub(crate) fn write(dir: &Path, train: &Dataset, eval: &Dataset) -> Result<Self, TrainerError> {
        std::fs::create_dir_all(dir).map_err(|e| TrainerError::io(dir, e))?;
        let files = TaskFiles {
            train: dir.join("train.jsonl"),
            eval: dir.join("eval.jsonl"),
        };
        write_jsonl(train, &files.train)?;
        write_jsonl(eval, &files.eval)?;
        Ok(files)
    }
}

fn write_jsonl(data: &Dataset, path: &Path) -> Result<(), TrainerError> {
    let mut out = Vec::new();
    for (i, p) in data.prompts.iter().enumerate() {
        let prompt = match &p.text {
            PromptText::Text(t) => serde_json::Value::from(t.as_str()),
            PromptText::Chat(m) => serde_json::to_value(m).map_err(|e| TrainerError::Data {
                path: path.display().to_string(),
                record: i + 1,
                message: e.to_string(),
            })?,
        };
        let record = serde_json::json!({"prompt": prompt, "answer": p.answer, "tier": p.tier});
        writeln!(out, "{record}").map_err(|e| TrainerError::io(path, e))?;
    }
    std::fs::write(path, out).map_err(|e| TrainerError::io(path, e))
}
