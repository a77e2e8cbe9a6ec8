//! Reading a configuration from TOML: a preset, then the file's keys on top
//! ([`TrainConfig::from_toml_str`], [`TrainConfig::from_toml_file`]).
//!
//! The file is merged into the preset's table before it is typed, so a type error would
//! otherwise know only the merged value. Every error is therefore located in the user's own
//! text: the failing field's dotted path (serde_path_to_error) is looked up in the file parsed
//! with spans, and the error names the file, line, column and field
//! ([`TrainerError::ConfigAt`]).

use std::ops::Range;
use std::path::Path;

use toml::de::{DeTable, DeValue};

use super::merge::merge_toml;
use super::{ALGORITHMS, TrainConfig};
use crate::TrainerError;

impl TrainConfig {
    /// `base` with the preset named by the TOML's `algorithm` key applied (after the file's
    /// `[rollout]` keys, on which presets' length-dependent defaults depend; a file that sets
    /// `[rollout]` without `algorithm` re-applies base's preset), then every key of the TOML on
    /// top. Unknown keys, wrong types and unknown names are errors naming the line, column and
    /// field (`<config>` stands for the file name).
    pub fn from_toml_str(text: &str, base: &TrainConfig) -> Result<Self, TrainerError> {
        load(&Source { text, file: None }, base)
    }

    /// Reads a TOML file (see [`TrainConfig::from_toml_str`]); errors name the file.
    pub fn from_toml_file(path: &Path, base: &TrainConfig) -> Result<Self, TrainerError> {
        let text = std::fs::read_to_string(path).map_err(|e| TrainerError::io(path, e))?;
        load(
            &Source {
                text: &text,
                file: Some(path),
            },
            base,
        )
    }
}

fn load(src: &Source<'_>, base: &TrainConfig) -> Result<TrainConfig, TrainerError> {
    let user: toml::Table = toml::from_str(src.text).map_err(|e| src.syntax(&e))?;
    let mut cfg = base.clone();
    let name = match user.get("algorithm") {
        Some(v) => Some(v.as_str().ok_or_else(|| {
            src.at(
                "algorithm",
                format!("expected a string, one of: {}", ALGORITHMS.join(", ")),
            )
        })?),
        None => user
            .contains_key("rollout")
            .then_some(base.algorithm.as_str()),
    };
    if let Some(name) = name {
        // The file's generation length first: the preset derives DAPO's L_max and Dr. GRPO's
        // constant from it (so a changed max_new_tokens re-applies the preset).
        if let Some(r) = user.get("rollout") {
            let mut only = toml::Table::new();
            only.insert("rollout".into(), r.clone());
            cfg = overlay(src, &cfg, only)?;
        }
        cfg.apply_preset(name).map_err(|e| src.locate(e))?;
    }
    let cfg = overlay(src, &cfg, user)?;
    cfg.validate().map_err(|e| src.locate(e))?;
    Ok(cfg)
}

/// `cfg` with the keys of `over` merged in, typed again.
fn overlay(
    src: &Source<'_>,
    cfg: &TrainConfig,
    over: toml::Table,
) -> Result<TrainConfig, TrainerError> {
    let mut merged = toml::Table::try_from(cfg).map_err(|e| TrainerError::Config {
        field: "<config>".into(),
        message: format!("the configuration does not serialise: {e}"),
    })?;
    merge_toml(&mut merged, over);
    serde_path_to_error::deserialize(toml::Value::Table(merged)).map_err(|e| {
        let path = e.path().to_string();
        let inner: toml::de::Error = e.into_inner();
        src.at(&path, inner.message().trim_end().to_string())
    })
}

/// The text a configuration was read from, for locating errors in it.
struct Source<'a> {
    text: &'a str,
    file: Option<&'a Path>,
}

impl Source<'_> {
    fn file(&self) -> String {
        self.file
            .map_or_else(|| "<config>".to_string(), |p| p.display().to_string())
    }

    /// 1-based line and column (in characters) of byte `offset`.
    fn position(&self, offset: usize) -> (usize, usize) {
        let before = &self.text[..offset.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let start = before.rfind('\n').map_or(0, |i| i + 1);
        (line, before[start..].chars().count() + 1)
    }

    /// A TOML syntax error, at the position the parser gives.
    fn syntax(&self, e: &toml::de::Error) -> TrainerError {
        let (line, column) = self.position(e.span().map_or(0, |s| s.start));
        TrainerError::ConfigAt {
            file: self.file(),
            line,
            column,
            field: "(syntax)".into(),
            message: e.message().trim_end().to_string(),
        }
    }

    /// An error about `path` (serde's dotted path, `?` or empty when unknown): located in the
    /// text when the field is there — for an unknown key or enum name, the key or value the
    /// message quotes — else [`TrainerError::Config`] naming the path.
    fn at(&self, path: &str, message: String) -> TrainerError {
        let quoted = message
            .split('`')
            .nth(1)
            .filter(|_| message.starts_with("unknown"))
            .map(str::to_string);
        let keys: Vec<&str> = path
            .split('.')
            .map(|k| k.split('[').next().unwrap_or(k))
            .filter(|k| !k.is_empty() && *k != "?")
            .collect();
        match DeTable::parse(self.text)
            .ok()
            .and_then(|t| find(t.get_ref(), &keys, quoted.as_deref()))
        {
            Some((field, span)) => {
                let (line, column) = self.position(span.start);
                TrainerError::ConfigAt {
                    file: self.file(),
                    line,
                    column,
                    field,
                    message,
                }
            }
            None => TrainerError::Config {
                field: if keys.is_empty() {
                    "<config>".into()
                } else {
                    keys.join(".")
                },
                message,
            },
        }
    }

    /// A config error located in the text when its field is there (unchanged otherwise).
    fn locate(&self, e: TrainerError) -> TrainerError {
        match e {
            TrainerError::Config { field, message } => match self.at(&field, message) {
                TrainerError::Config { message, .. } => TrainerError::Config { field, message },
                located => located,
            },
            other => other,
        }
    }
}

/// The dotted field and span of the deepest key of `keys` present in `table`; then, inside it,
/// the key `quoted` (an unknown field) or the string value `quoted` (an unknown name).
fn find(
    table: &DeTable<'_>,
    keys: &[&str],
    quoted: Option<&str>,
) -> Option<(String, Range<usize>)> {
    let mut path: Vec<String> = Vec::new();
    let mut span = None;
    let mut here = Some(table);
    for key in keys {
        let Some((k, v)) = here.and_then(|t| t.iter().find(|(k, _)| k.get_ref().as_ref() == *key))
        else {
            break;
        };
        path.push(key.to_string());
        span = Some(k.span());
        here = match v.get_ref() {
            DeValue::Table(t) => Some(t),
            // An unknown name at the field itself: point at the value.
            DeValue::String(s) if Some(s.as_ref()) == quoted => {
                span = Some(v.span());
                None
            }
            _ => None,
        };
    }
    if let (Some(q), Some(t)) = (quoted, here) {
        for (k, v) in t.iter() {
            let is_value = matches!(v.get_ref(), DeValue::String(s) if s.as_ref() == q);
            if k.get_ref().as_ref() == q || is_value {
                path.push(k.get_ref().to_string());
                span = Some(if is_value { v.span() } else { k.span() });
                break;
            }
        }
    }
    span.map(|s| (path.join("."), s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn located(text: &str) -> (usize, usize, String, String) {
        match TrainConfig::from_toml_str(text, &TrainConfig::default()).unwrap_err() {
            TrainerError::ConfigAt {
                file,
                line,
                column,
                field,
                message,
            } => {
                assert_eq!(file, "<config>");
                (line, column, field, message)
            }
            other => panic!("not located: {other}"),
        }
    }

    /// A wrong type: `group_size` is on line 3, its key at column 1.
    #[test]
    fn a_wrong_type_names_line_column_and_field() {
        let (line, column, field, message) =
            located("steps = 3\n[rollout]\ngroup_size = \"eight\"\n");
        assert_eq!((line, column, field.as_str()), (3, 1, "rollout.group_size"));
        assert!(message.contains("invalid type"), "{message}");
    }

    /// An unknown key: `learning_rate` (the field is `lr`) on line 2, after two spaces.
    #[test]
    fn an_unknown_key_names_line_column_and_field() {
        let (line, column, field, message) = located("[optim]\n  learning_rate = 1.0\n");
        assert_eq!(
            (line, column, field.as_str()),
            (2, 3, "optim.learning_rate")
        );
        assert!(
            message.contains("unknown field `learning_rate`"),
            "{message}"
        );
    }

    /// An unknown enum value: the estimator name `grpox` is the value at line 3, column 8.
    #[test]
    fn an_unknown_enum_value_names_line_column_and_field() {
        let (line, column, field, message) = located("steps = 1\n[advantage]\nname = \"grpox\"\n");
        assert_eq!((line, column, field.as_str()), (3, 8, "advantage.name"));
        assert!(message.contains("grpox"), "{message}");
    }

    /// A cross-field check (validate) is located at its field; a syntax error at the parser's
    /// position.
    #[test]
    fn checks_and_syntax_errors_are_located() {
        let (line, column, field, _) = located("[rollout]\n\ngroup_size = 1\n");
        assert_eq!((line, column, field.as_str()), (3, 1, "rollout.group_size"));
        let (line, _, field, _) = located("steps = 1\nsteps = = 2\n");
        assert_eq!((line, field.as_str()), (2, "(syntax)"));
    }
}
