//! HF chat templates (the Jinja `chat_template` of a `tokenizer_config.json` or a GGUF's
//! `tokenizer.chat_template`) rendered with [minijinja] the way transformers'
//! `tokenizer.apply_chat_template(messages, tools=..., add_generation_prompt=..., tokenize=False,
//! **kwargs)` renders them (transformers 5.x, `utils/chat_template_utils.py`).
//!
//! What transformers does and this module reproduces:
//!
//! - The Jinja environment: `trim_blocks` and `lstrip_blocks` on, a single trailing newline of
//!   the source dropped (`keep_trailing_newline` off), no auto-escaping, `break`/`continue`.
//! - The template context: the tokenizer's special tokens (here `bos_token` and `eos_token`;
//!   others, such as `pad_token`, can be given in `extra`), then the keyword arguments (`extra`,
//!   e.g. `enable_thinking`, `date_string`, `tools_in_user_message`), which override them, then
//!   `messages`, `tools` (`none` when no tools are given), `documents` (`none` unless `extra`
//!   holds it) and `add_generation_prompt`.
//! - Messages: keys whose value is `null` are dropped (a missing key and a `None` value read
//!   differently in templates); a message with reasoning under `reasoning_content`, `thinking`
//!   or `reasoning` gets it under both `reasoning_content` and `thinking` (`thinking` first,
//!   as `{"thinking": r, **message, "reasoning_content": r}` orders them).
//! - Globals and filters: `raise_exception(message)` ends the rendering with
//!   [`ChatTemplateError::Raised`]; `strftime_now(format)` formats the current local time
//!   (`datetime.now().strftime(format)`, with chrono's strftime); `tojson` is Python's
//!   `json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)` with
//!   those arguments, by position or keyword (keys in the order the object holds them,
//!   `", "`/`": "` separators on one line, `","`/`": "` with an indent, floats as Python's
//!   `repr`, non-ASCII text unescaped).
//! - Python's string and dict methods (`.strip()`, `.split()`, `.startswith()`, `.items()`,
//!   ...) through minijinja-contrib's `pycompat`.
//! - `{{ value }}` prints what Python's `str(value)` prints: `None`, `True`/`False`, floats as
//!   `repr`, lists and dicts as Python's repr of them; undefined values print nothing. The
//!   `string` filter does the same.
//! - `{% generation %}…{% endgeneration %}` (transformers' assistant-mask extension, used by
//!   training templates) renders its body.
//!
//! Key order: objects keep the order of the input. A `serde_json::Value` built without
//! serde_json's `preserve_order` feature (the case in this workspace) holds its keys sorted, so
//! [`ChatTemplate::render`] sees them sorted, as transformers would given dicts with sorted keys.
//! [`ChatTemplate::render_json`] reads JSON text and keeps the order it is written in.
//!
//! Known differences from Jinja2: the `~` operator and the `join` filter write `true`/`none`
//! for booleans and `None` (Python writes `True`/`None`); `strftime_now` formats a naive local
//! time like Python, but `%z`/`%Z` (empty in Python) are errors.
//!
//! Limits: template sources come with model files and are untrusted. Every rendering runs with
//! a budget of minijinja instructions ([`RenderLimits::fuel`]), a recursion limit and a cap on
//! the output's size; exceeding one ends it with [`ChatTemplateError::Limit`]. Memory is not
//! bounded otherwise (a template that keeps doubling a string can still exhaust it, as it can
//! in Jinja2's sandbox).

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use minijinja::value::ValueKind;
use minijinja::{AutoEscape, Environment, Error, ErrorKind, Output, State, Value};

mod pyfmt;
use pyfmt::{strftime, tojson_filter, write_py_str};

/// Name the template is registered under (it appears in error messages).
const TEMPLATE_NAME: &str = "chat_template";

/// Extra keyword names that are arguments of `apply_chat_template` itself, not template
/// variables, or that this module sets: rejected in `extra`.
const RESERVED_EXTRA: &[&str] = &[
    "messages",
    "tools",
    "add_generation_prompt",
    "continue_final_message",
    "chat_template",
    "tokenize",
    "return_dict",
    "return_assistant_tokens_mask",
];

/// The message keys transformers reads reasoning from, the first one present winning.
const REASONING_FIELDS: [&str; 3] = ["reasoning_content", "thinking", "reasoning"];

/// Errors of compiling or rendering a chat template.
#[derive(Debug, thiserror::Error)]
pub enum ChatTemplateError {
    /// The source is not a valid template (syntax error, unknown tag, ...).
    #[error("chat template does not compile{}: {message}", fmt_line(*line))]
    Compile {
        /// 1-based line of the source, when minijinja reports it.
        line: Option<usize>,
        /// minijinja's description.
        message: String,
    },
    /// The template called `raise_exception(message)`.
    #[error("chat template raised an exception: {message}")]
    Raised {
        /// The argument of `raise_exception`, as Python's `str` writes it.
        message: String,
    },
    /// The rendering stopped at a [`RenderLimits`] bound.
    #[error("chat template exceeded its {limit} limit")]
    Limit {
        /// Which bound.
        limit: LimitKind,
    },
    /// Evaluating the template failed (an undefined value used in an operation, a failed filter
    /// or method, ...).
    #[error("chat template rendering failed{}: {message}", fmt_line(*line))]
    Render {
        /// 1-based line of the source, when minijinja reports it.
        line: Option<usize>,
        /// minijinja's description.
        message: String,
    },
    /// The inputs are not what a chat template takes (a message that is not an object, a
    /// reserved name in `extra`, JSON text that does not parse).
    #[error("invalid chat template input: {0}")]
    InvalidInput(String),
}

fn fmt_line(line: Option<usize>) -> String {
    line.map(|l| format!(" (line {l})")).unwrap_or_default()
}

/// Which [`RenderLimits`] bound a rendering exceeded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitKind {
    /// [`RenderLimits::fuel`].
    Fuel,
    /// [`RenderLimits::recursion`].
    Recursion,
    /// [`RenderLimits::max_output_bytes`].
    Output,
}

impl std::fmt::Display for LimitKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LimitKind::Fuel => "fuel (instruction)",
            LimitKind::Recursion => "recursion",
            LimitKind::Output => "output size",
        })
    }
}

/// Bounds on one rendering of an untrusted template.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenderLimits {
    /// minijinja instructions one rendering may run (`None`: unbounded). Qwen3's template
    /// spends 50–80 per message plus about 40 (577 for a 7-message conversation with two tool
    /// definitions); the default allows tens of thousands of messages and stops a nested
    /// `range(100000)` loop after ~0.15 s.
    pub fuel: Option<u64>,
    /// Nesting depth of macro calls, recursive loops and includes (at most 500, minijinja's
    /// ceiling).
    pub recursion: usize,
    /// Bytes of output one rendering may write.
    pub max_output_bytes: usize,
}

impl Default for RenderLimits {
    /// 5 million instructions, depth 100, 64 MiB of output.
    fn default() -> Self {
        Self {
            fuel: Some(5_000_000),
            recursion: 100,
            max_output_bytes: 64 << 20,
        }
    }
}

/// A compiled chat template with the special tokens its tokenizer passes to it.
pub struct ChatTemplate {
    env: Environment<'static>,
    bos_token: Option<String>,
    eos_token: Option<String>,
    limits: RenderLimits,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("bos_token", &self.bos_token)
            .field("eos_token", &self.eos_token)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// The error `raise_exception` returns, found again in the error chain of the rendering.
#[derive(Debug)]
struct RaisedByTemplate(String);

impl std::fmt::Display for RaisedByTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RaisedByTemplate {}

impl ChatTemplate {
    /// Compiles `source` with transformers' environment; `bos_token` / `eos_token` are the
    /// tokenizer's (transformers leaves a token that the tokenizer does not define out of the
    /// context: pass `None`). Renders with [`RenderLimits::default`].
    pub fn new(
        source: &str,
        bos_token: Option<String>,
        eos_token: Option<String>,
    ) -> Result<Self, ChatTemplateError> {
        let limits = RenderLimits::default();
        let mut env = Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_keep_trailing_newline(false);
        env.set_auto_escape_callback(|_| AutoEscape::None);
        env.set_debug(false);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.set_formatter(|out: &mut Output, _state: &State, value: &Value| {
            write_py_str(out, value).map_err(Error::from)
        });
        env.add_filter("tojson", tojson_filter);
        env.add_filter("string", |value: &Value| -> Result<String, Error> {
            let mut s = String::new();
            write_py_str(&mut s, value).map_err(Error::from)?;
            Ok(s)
        });
        env.add_function(
            "raise_exception",
            |message: Value| -> Result<Value, Error> {
                let mut text = String::new();
                write_py_str(&mut text, &message).map_err(Error::from)?;
                Err(Error::new(ErrorKind::InvalidOperation, text.clone())
                    .with_source(RaisedByTemplate(text)))
            },
        );
        env.add_function("strftime_now", |format: &str| -> Result<String, Error> {
            strftime(&chrono::Local::now().naive_local(), format)
        });
        apply_limits(&mut env, &limits);
        env.add_template_owned(TEMPLATE_NAME, replace_generation_tags(source))
            .map_err(|e| ChatTemplateError::Compile {
                line: e.line(),
                message: e.to_string(),
            })?;
        Ok(Self {
            env,
            bos_token,
            eos_token,
            limits,
        })
    }

    /// The same template with other [`RenderLimits`].
    pub fn with_limits(mut self, limits: RenderLimits) -> Self {
        apply_limits(&mut self.env, &limits);
        self.limits = limits;
        self
    }

    /// The bounds each rendering runs under.
    pub fn limits(&self) -> RenderLimits {
        self.limits
    }

    /// Renders `messages` (JSON objects: `role`, `content`, optionally `reasoning_content`,
    /// `tool_calls`, `tool_call_id`, ...) with the tool definitions `tools` (JSON schemas as
    /// transformers takes them; `None`: the template sees `tools` as `none`), as
    /// `apply_chat_template(messages, tools=tools, add_generation_prompt=...,
    /// tokenize=False, **extra)` does. Objects are seen with the key order `serde_json::Value`
    /// holds (sorted in this workspace); [`render_json`](Self::render_json) keeps the written
    /// order.
    pub fn render(
        &self,
        messages: &[serde_json::Value],
        tools: Option<&[serde_json::Value]>,
        add_generation_prompt: bool,
        extra: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<String, ChatTemplateError> {
        let messages = messages.iter().map(Value::from_serialize).collect();
        let tools = tools.map(|t| t.iter().map(Value::from_serialize).collect());
        let extra = extra
            .iter()
            .map(|(k, v)| (k.clone(), Value::from_serialize(v)))
            .collect();
        self.render_values(messages, tools, add_generation_prompt, extra)
    }

    /// [`render`](Self::render) of JSON text: `messages` a JSON array of message objects,
    /// `tools` a JSON array of tool definitions, `extra` a JSON object of keyword arguments.
    /// Objects keep the key order of the text (what `tojson` writes).
    pub fn render_json(
        &self,
        messages: &str,
        tools: Option<&str>,
        add_generation_prompt: bool,
        extra: Option<&str>,
    ) -> Result<String, ChatTemplateError> {
        let messages = parse_json_array(messages, "messages")?;
        let tools = tools.map(|t| parse_json_array(t, "tools")).transpose()?;
        let extra = match extra {
            None => Vec::new(),
            Some(text) => {
                let value = parse_json(text, "extra")?;
                if value.kind() != ValueKind::Map {
                    return Err(ChatTemplateError::InvalidInput(
                        "extra must be a JSON object".into(),
                    ));
                }
                map_entries(&value)?
                    .into_iter()
                    .map(|(k, v)| match k.as_str() {
                        Some(k) => Ok((k.to_string(), v)),
                        None => Err(ChatTemplateError::InvalidInput(format!(
                            "extra key {k} is not a string"
                        ))),
                    })
                    .collect::<Result<_, _>>()?
            }
        };
        self.render_values(messages, tools, add_generation_prompt, extra)
    }

    fn render_values(
        &self,
        messages: Vec<Value>,
        tools: Option<Vec<Value>>,
        add_generation_prompt: bool,
        extra: Vec<(String, Value)>,
    ) -> Result<String, ChatTemplateError> {
        let messages = messages
            .into_iter()
            .enumerate()
            .map(|(i, m)| prepare_message(i, &m))
            .collect::<Result<Vec<_>, _>>()?;
        let mut context: Vec<(String, Value)> = Vec::with_capacity(extra.len() + 6);
        if let Some(bos) = &self.bos_token {
            context.push(("bos_token".into(), Value::from(bos.as_str())));
        }
        if let Some(eos) = &self.eos_token {
            context.push(("eos_token".into(), Value::from(eos.as_str())));
        }
        let mut documents = Value::from(());
        for (key, value) in extra {
            if RESERVED_EXTRA.contains(&key.as_str()) {
                return Err(ChatTemplateError::InvalidInput(format!(
                    "`{key}` is an argument of the rendering, not an extra template variable"
                )));
            }
            if key == "documents" {
                documents = value;
            } else {
                context.push((key, value));
            }
        }
        context.push(("messages".into(), Value::from(messages)));
        context.push((
            "tools".into(),
            tools.map(Value::from).unwrap_or(Value::from(())),
        ));
        context.push(("documents".into(), documents));
        context.push((
            "add_generation_prompt".into(),
            Value::from(add_generation_prompt),
        ));
        let context: Value = context.into_iter().collect();

        let template = self
            .env
            .get_template(TEMPLATE_NAME)
            .map_err(|e| render_error(e, false))?;
        let overflow = Arc::new(AtomicBool::new(false));
        let mut out = CappedWriter {
            buf: Vec::new(),
            cap: self.limits.max_output_bytes,
            overflow: overflow.clone(),
        };
        template
            .render_captured_to(context, &mut out)
            .map_err(|e| render_error(e, overflow.load(Ordering::Relaxed)))?;
        String::from_utf8(out.buf).map_err(|e| ChatTemplateError::Render {
            line: None,
            message: format!("output is not UTF-8: {e}"),
        })
    }
}

fn apply_limits(env: &mut Environment<'static>, limits: &RenderLimits) {
    env.set_fuel(limits.fuel);
    env.set_recursion_limit(limits.recursion);
}

/// An output buffer that fails once `cap` bytes would be exceeded.
struct CappedWriter {
    buf: Vec<u8>,
    cap: usize,
    overflow: Arc<AtomicBool>,
}

impl io::Write for CappedWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.buf.len() + data.len() > self.cap {
            self.overflow.store(true, Ordering::Relaxed);
            return Err(io::Error::other(
                "chat template output exceeds its size limit",
            ));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn render_error(err: Error, output_overflow: bool) -> ChatTemplateError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&err);
    while let Some(e) = source {
        if let Some(raised) = e.downcast_ref::<RaisedByTemplate>() {
            return ChatTemplateError::Raised {
                message: raised.0.clone(),
            };
        }
        source = e.source();
    }
    match err.kind() {
        ErrorKind::OutOfFuel => ChatTemplateError::Limit {
            limit: LimitKind::Fuel,
        },
        ErrorKind::WriteFailure if output_overflow => ChatTemplateError::Limit {
            limit: LimitKind::Output,
        },
        ErrorKind::InvalidOperation if err.detail() == Some("recursion limit exceeded") => {
            ChatTemplateError::Limit {
                limit: LimitKind::Recursion,
            }
        }
        _ => ChatTemplateError::Render {
            line: err.line(),
            message: err.to_string(),
        },
    }
}

fn parse_json(text: &str, what: &str) -> Result<Value, ChatTemplateError> {
    serde_json::from_str::<Value>(text)
        .map_err(|e| ChatTemplateError::InvalidInput(format!("{what} is not valid JSON: {e}")))
}

fn parse_json_array(text: &str, what: &str) -> Result<Vec<Value>, ChatTemplateError> {
    let value = parse_json(text, what)?;
    if value.kind() != ValueKind::Seq {
        return Err(ChatTemplateError::InvalidInput(format!(
            "{what} must be a JSON array"
        )));
    }
    let items = value
        .try_iter()
        .map_err(|e| ChatTemplateError::InvalidInput(format!("{what}: {e}")))?;
    Ok(items.collect())
}

/// The `(key, value)` pairs of a map value, in its order.
fn map_entries(map: &Value) -> Result<Vec<(Value, Value)>, ChatTemplateError> {
    let keys = map
        .try_iter()
        .map_err(|e| ChatTemplateError::InvalidInput(e.to_string()))?;
    keys.map(|k| {
        map.get_item(&k)
            .map(|v| (k, v))
            .map_err(|e| ChatTemplateError::InvalidInput(e.to_string()))
    })
    .collect()
}

/// A message as transformers hands it to the template: `null` values dropped, reasoning
/// aliased under `thinking` and `reasoning_content`.
fn prepare_message(index: usize, message: &Value) -> Result<Value, ChatTemplateError> {
    if message.kind() != ValueKind::Map {
        return Err(ChatTemplateError::InvalidInput(format!(
            "message {index} is a {}, not an object",
            message.kind()
        )));
    }
    let entries: Vec<(Value, Value)> = map_entries(message)?
        .into_iter()
        .filter(|(_, v)| !v.is_none())
        .collect();
    let lookup = |name: &str| {
        entries
            .iter()
            .find(|(k, _)| k.as_str() == Some(name))
            .map(|(_, v)| v.clone())
    };
    let Some(reasoning) = REASONING_FIELDS.iter().find_map(|f| lookup(f)) else {
        return Ok(entries.into_iter().collect());
    };
    // {"thinking": r, **message, "reasoning_content": r}: later keys overwrite values in place.
    let mut aliased: Vec<(Value, Value)> = Vec::with_capacity(entries.len() + 2);
    aliased.push((Value::from("thinking"), reasoning.clone()));
    aliased.extend(entries);
    aliased.push((Value::from("reasoning_content"), reasoning));
    Ok(aliased.into_iter().collect())
}

/// Replaces `{% generation %}` / `{% endgeneration %}` (whitespace control kept) by
/// `{% if true %}` / `{% endif %}`, outside `{% raw %}` blocks. Line numbers do not move.
fn replace_generation_tags(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    let mut in_raw = false;
    while let Some(start) = rest.find("{%") {
        out.push_str(&rest[..start]);
        let tag = &rest[start..];
        let Some(end) = tag.find("%}") else {
            out.push_str(tag);
            return out;
        };
        let full = &tag[..end + 2];
        let inner = &tag[2..end];
        let body = inner.strip_prefix(['-', '+']).unwrap_or(inner);
        let body = body.strip_suffix(['-', '+']).unwrap_or(body);
        let word = body.trim();
        let replacement = match (in_raw, word) {
            (false, "raw") => {
                in_raw = true;
                None
            }
            (true, "endraw") => {
                in_raw = false;
                None
            }
            (false, "generation") => Some("if true"),
            (false, "endgeneration") => Some("endif"),
            _ => None,
        };
        match replacement {
            Some(new) => {
                let at = full.find(word).unwrap_or(2);
                out.push_str(&full[..at]);
                out.push_str(new);
                out.push_str(&full[at + word.len()..]);
            }
            None => out.push_str(full),
        }
        rest = &tag[end + 2..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests;
