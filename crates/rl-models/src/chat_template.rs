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

use std::fmt::Write as _;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use minijinja::value::{Kwargs, ValueKind, from_args};
use minijinja::{AutoEscape, Environment, Error, ErrorKind, Output, State, Value};

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

/// `datetime.strftime(format)` of a naive date-time, with chrono's strftime specifiers.
fn strftime(at: &chrono::NaiveDateTime, format: &str) -> Result<String, Error> {
    use chrono::format::{Item, StrftimeItems};
    let items: Vec<Item<'_>> = StrftimeItems::new(format).collect();
    if items.iter().any(|i| matches!(i, Item::Error)) {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("strftime_now: invalid format {format:?}"),
        ));
    }
    let mut out = String::new();
    write!(out, "{}", at.format_with_items(items.iter())).map_err(|_| {
        Error::new(
            ErrorKind::InvalidOperation,
            format!("strftime_now: format {format:?} needs a time zone"),
        )
    })?;
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Python's str / repr

/// Writes what Python's `str(value)` gives for the Python object the value stands for.
fn write_py_str(out: &mut impl std::fmt::Write, value: &Value) -> std::fmt::Result {
    match value.kind() {
        ValueKind::Undefined => Ok(()),
        ValueKind::String => out.write_str(value.as_str().unwrap_or_default()),
        _ => write_py_repr(out, value),
    }
}

/// Writes Python's `repr(value)` (strings quoted, containers recursively).
fn write_py_repr(out: &mut impl std::fmt::Write, value: &Value) -> std::fmt::Result {
    match value.kind() {
        ValueKind::Undefined => Ok(()),
        ValueKind::None => out.write_str("None"),
        ValueKind::Bool => out.write_str(if value.is_true() { "True" } else { "False" }),
        ValueKind::Number => {
            if value.is_integer() {
                write!(out, "{value}")
            } else {
                match f64::try_from(value.clone()) {
                    Ok(f) => out.write_str(&py_float_repr(f, false)),
                    Err(_) => write!(out, "{value}"),
                }
            }
        }
        ValueKind::String => write_py_str_repr(out, value.as_str().unwrap_or_default()),
        ValueKind::Seq => {
            out.write_char('[')?;
            if let Ok(items) = value.try_iter() {
                for (i, item) in items.enumerate() {
                    if i > 0 {
                        out.write_str(", ")?;
                    }
                    write_py_repr(out, &item)?;
                }
            }
            out.write_char(']')
        }
        ValueKind::Map if value.as_object().is_some() && !value.is_kwargs() => {
            out.write_char('{')?;
            if let Ok(keys) = value.try_iter() {
                for (i, key) in keys.enumerate() {
                    if i > 0 {
                        out.write_str(", ")?;
                    }
                    write_py_repr(out, &key)?;
                    out.write_str(": ")?;
                    write_py_repr(out, &value.get_item(&key).unwrap_or_default())?;
                }
            }
            out.write_char('}')
        }
        _ => write!(out, "{value}"),
    }
}

fn write_py_str_repr(out: &mut impl std::fmt::Write, s: &str) -> std::fmt::Result {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.write_char(quote)?;
    for c in s.chars() {
        match c {
            '\\' => out.write_str("\\\\")?,
            '\n' => out.write_str("\\n")?,
            '\r' => out.write_str("\\r")?,
            '\t' => out.write_str("\\t")?,
            c if c == quote => {
                out.write_char('\\')?;
                out.write_char(c)?;
            }
            c if c.is_control() => {
                let n = c as u32;
                if n <= 0xff {
                    write!(out, "\\x{n:02x}")?;
                } else {
                    write!(out, "\\u{n:04x}")?;
                }
            }
            c => out.write_char(c)?,
        }
    }
    out.write_char(quote)
}

/// Python's `repr(float)`; with `json`, `json.dumps`'s spelling of the non-finite values.
fn py_float_repr(f: f64, json: bool) -> String {
    if f.is_nan() {
        return if json { "NaN" } else { "nan" }.into();
    }
    if f.is_infinite() {
        return match (f > 0.0, json) {
            (true, true) => "Infinity".into(),
            (false, true) => "-Infinity".into(),
            (true, false) => "inf".into(),
            (false, false) => "-inf".into(),
        };
    }
    // Shortest round-trip digits and the decimal exponent, laid out as Python's `repr`: fixed
    // notation for exponents -4..16, scientific otherwise.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let n = digits.len() as i32;
    let mut out = String::from(sign);
    if (-4..16).contains(&exp) {
        if exp >= 0 {
            let int_len = (exp + 1) as usize;
            if n <= exp + 1 {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', int_len - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        } else {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        if n > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    }
    out
}

// ---------------------------------------------------------------------------------------------
// tojson: Python's json.dumps

struct JsonStyle {
    ensure_ascii: bool,
    indent: Option<String>,
    item_separator: String,
    key_separator: String,
    sort_keys: bool,
}

/// transformers' `tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)`.
fn tojson_filter(value: &Value, args: &[Value]) -> Result<String, Error> {
    let (ensure_ascii, indent, separators, sort_keys, kwargs): (
        Option<Value>,
        Option<Value>,
        Option<Value>,
        Option<Value>,
        Kwargs,
    ) = from_args(args)?;
    let ensure_ascii = kwargs
        .get::<Option<Value>>("ensure_ascii")?
        .or(ensure_ascii);
    let indent = kwargs.get::<Option<Value>>("indent")?.or(indent);
    let separators = kwargs.get::<Option<Value>>("separators")?.or(separators);
    let sort_keys = kwargs.get::<Option<Value>>("sort_keys")?.or(sort_keys);
    kwargs.assert_all_used()?;

    let indent = match indent {
        None => None,
        Some(v) if v.kind() == ValueKind::String => Some(v.as_str().unwrap_or_default().into()),
        Some(v) if v.kind() == ValueKind::Bool => Some(if v.is_true() { " " } else { "" }.into()),
        Some(v) => {
            let n = i64::try_from(v.clone()).map_err(|_| {
                Error::new(
                    ErrorKind::InvalidOperation,
                    format!(
                        "tojson: indent must be an integer or a string, not {}",
                        v.kind()
                    ),
                )
            })?;
            Some(" ".repeat(n.clamp(0, 64) as usize))
        }
    };
    let (item_separator, key_separator) = match separators {
        Some(seps) => {
            let parts: Vec<Value> = seps.try_iter()?.collect();
            match parts.as_slice() {
                [a, b] if a.as_str().is_some() && b.as_str().is_some() => (
                    a.as_str().unwrap_or_default().to_string(),
                    b.as_str().unwrap_or_default().to_string(),
                ),
                _ => {
                    return Err(Error::new(
                        ErrorKind::InvalidOperation,
                        "tojson: separators must be a pair of strings",
                    ));
                }
            }
        }
        None if indent.is_some() => (",".into(), ": ".into()),
        None => (", ".into(), ": ".into()),
    };
    let style = JsonStyle {
        ensure_ascii: ensure_ascii.is_some_and(|v| v.is_true()),
        indent,
        item_separator,
        key_separator,
        sort_keys: sort_keys.is_some_and(|v| v.is_true()),
    };
    let mut out = String::new();
    write_json(&mut out, value, &style, 0, 0)?;
    Ok(out)
}

fn json_type_error(value: &Value) -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        format!(
            "tojson: object of type {} is not JSON serializable",
            value.kind()
        ),
    )
}

fn write_json(
    out: &mut String,
    value: &Value,
    style: &JsonStyle,
    level: usize,
    depth: usize,
) -> Result<(), Error> {
    if depth > 512 {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            "tojson: value nested too deeply",
        ));
    }
    match value.kind() {
        ValueKind::None => out.push_str("null"),
        ValueKind::Bool => out.push_str(if value.is_true() { "true" } else { "false" }),
        ValueKind::Number => {
            if value.is_integer() {
                let _ = write!(out, "{value}");
            } else {
                let f = f64::try_from(value.clone()).map_err(|_| json_type_error(value))?;
                out.push_str(&py_float_repr(f, true));
            }
        }
        ValueKind::String => write_json_str(out, value.as_str().unwrap_or_default(), style),
        ValueKind::Seq | ValueKind::Iterable => {
            let items: Vec<Value> = value.try_iter()?.collect();
            if items.is_empty() {
                out.push_str("[]");
                return Ok(());
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(&style.item_separator);
                }
                newline_indent(out, style, level + 1);
                write_json(out, item, style, level + 1, depth + 1)?;
            }
            newline_indent(out, style, level);
            out.push(']');
        }
        ValueKind::Map if !value.is_kwargs() => {
            let mut entries = Vec::new();
            for key in value.try_iter()? {
                let item = value.get_item(&key)?;
                entries.push((json_key(&key)?, item));
            }
            if style.sort_keys {
                entries.sort_by(|a, b| a.0.cmp(&b.0));
            }
            if entries.is_empty() {
                out.push_str("{}");
                return Ok(());
            }
            out.push('{');
            for (i, (key, item)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push_str(&style.item_separator);
                }
                newline_indent(out, style, level + 1);
                write_json_str(out, key, style);
                out.push_str(&style.key_separator);
                write_json(out, item, style, level + 1, depth + 1)?;
            }
            newline_indent(out, style, level);
            out.push('}');
        }
        _ => return Err(json_type_error(value)),
    }
    Ok(())
}

/// A dict key as `json.dumps` writes it (str as is; int, float, bool and None converted).
fn json_key(key: &Value) -> Result<String, Error> {
    match key.kind() {
        ValueKind::String => Ok(key.as_str().unwrap_or_default().to_string()),
        ValueKind::None => Ok("null".into()),
        ValueKind::Bool => Ok(if key.is_true() { "true" } else { "false" }.into()),
        ValueKind::Number if key.is_integer() => Ok(key.to_string()),
        ValueKind::Number => f64::try_from(key.clone())
            .map(|f| py_float_repr(f, true))
            .map_err(|_| json_type_error(key)),
        kind => Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("tojson: keys must be str, int, float, bool or None, not {kind}"),
        )),
    }
}

fn newline_indent(out: &mut String, style: &JsonStyle, level: usize) {
    if let Some(indent) = &style.indent {
        out.push('\n');
        for _ in 0..level {
            out.push_str(indent);
        }
    }
}

fn write_json_str(out: &mut String, s: &str, style: &JsonStyle) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if style.ensure_ascii && !(' '..='~').contains(&c) => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const FIXTURES: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/chat_templates.json"
    );

    /// The fixture file, read with its objects' key order kept.
    fn fixtures() -> Value {
        let text = std::fs::read_to_string(FIXTURES).expect("read chat_templates.json");
        serde_json::from_str(&text).expect("parse chat_templates.json")
    }

    fn get(v: &Value, key: &str) -> Value {
        v.get_attr(key).expect("fixture field")
    }

    fn opt_str(v: &Value) -> Option<String> {
        v.as_str().map(str::to_string)
    }

    /// JSON text of a fixture value (key order kept).
    fn json_text(v: &Value) -> String {
        serde_json::to_string(v).expect("serialize")
    }

    struct Case {
        template: String,
        name: String,
        messages: Value,
        tools: Value,
        add_generation_prompt: bool,
        extra: Value,
        expected: Option<String>,
        expected_sorted_keys: Option<String>,
        expected_error: Option<String>,
    }

    /// Each template compiled with its tokenizer's bos/eos, its other special tokens (which
    /// transformers also puts into the context) as extra variables, and its cases.
    struct Fixture {
        template: ChatTemplate,
        /// The special tokens other than bos/eos, passed as extra variables.
        others: Vec<(String, Value)>,
        cases: Vec<Case>,
    }

    fn templates() -> Vec<Fixture> {
        let fx = fixtures();
        let mut out = Vec::new();
        for t in get(&fx, "templates").try_iter().unwrap() {
            let name = opt_str(&get(&t, "name")).unwrap();
            let special = get(&t, "special_tokens");
            let bos = opt_str(&special.get_attr("bos_token").unwrap());
            let eos = opt_str(&special.get_attr("eos_token").unwrap());
            let others: Vec<(String, Value)> = map_entries(&special)
                .unwrap()
                .into_iter()
                .map(|(k, v)| (k.as_str().unwrap().to_string(), v))
                .filter(|(k, _)| k != "bos_token" && k != "eos_token")
                .collect();
            let source = opt_str(&get(&t, "source")).unwrap();
            let template =
                ChatTemplate::new(&source, bos, eos).unwrap_or_else(|e| panic!("{name}: {e}"));
            let cases = get(&t, "cases")
                .try_iter()
                .unwrap()
                .map(|c| Case {
                    template: name.clone(),
                    name: opt_str(&get(&c, "name")).unwrap(),
                    messages: get(&c, "messages"),
                    tools: get(&c, "tools"),
                    add_generation_prompt: get(&c, "add_generation_prompt").is_true(),
                    extra: get(&c, "extra"),
                    expected: opt_str(&get(&c, "expected")),
                    expected_sorted_keys: opt_str(&get(&c, "expected_sorted_keys")),
                    expected_error: opt_str(&get(&c, "expected_error")),
                })
                .collect();
            out.push(Fixture {
                template,
                others,
                cases,
            });
        }
        out
    }

    /// `extra` of a case as JSON text, the tokenizer's other special tokens first.
    fn extra_text(others: &[(String, Value)], extra: &Value) -> String {
        let mut entries = others.to_vec();
        for (k, v) in map_entries(extra).unwrap() {
            entries.push((k.as_str().unwrap().to_string(), v));
        }
        let map: Value = entries.into_iter().collect();
        json_text(&map)
    }

    #[test]
    fn chat_template_fixtures_render_byte_equal() {
        let mut checked = 0;
        for Fixture {
            template,
            others,
            cases,
        } in templates()
        {
            for c in cases {
                let tools = (!c.tools.is_none()).then(|| json_text(&c.tools));
                let got = template.render_json(
                    &json_text(&c.messages),
                    tools.as_deref(),
                    c.add_generation_prompt,
                    Some(&extra_text(&others, &c.extra)),
                );
                let label = format!("{}/{}", c.template, c.name);
                match (&c.expected, &c.expected_error) {
                    (Some(expected), _) => {
                        let got = got.unwrap_or_else(|e| panic!("{label}: {e}"));
                        assert_eq!(&got, expected, "{label}");
                    }
                    (None, Some(message)) => match got {
                        Err(ChatTemplateError::Raised { message: m }) => {
                            assert_eq!(&m, message, "{label}")
                        }
                        other => panic!("{label}: expected raise_exception, got {other:?}"),
                    },
                    (None, None) => panic!("{label}: fixture case without an expectation"),
                }
                checked += 1;
            }
        }
        assert!(checked >= 30, "only {checked} cases");
    }

    /// [`ChatTemplate::render`] takes `serde_json::Value`s, whose objects hold sorted keys: it
    /// must give what transformers gives for the same inputs with sorted keys.
    #[test]
    fn chat_template_serde_json_inputs_render_as_sorted_keys() {
        for Fixture {
            template,
            others,
            cases,
        } in templates()
        {
            for c in cases {
                let to_serde = |v: &Value| -> serde_json::Value {
                    serde_json::from_str(&json_text(v)).unwrap()
                };
                let messages: Vec<serde_json::Value> = match to_serde(&c.messages) {
                    serde_json::Value::Array(a) => a,
                    _ => unreachable!(),
                };
                let tools: Option<Vec<serde_json::Value>> = match to_serde(&c.tools) {
                    serde_json::Value::Array(a) => Some(a),
                    _ => None,
                };
                let extra: serde_json::Map<String, serde_json::Value> =
                    serde_json::from_str(&extra_text(&others, &c.extra)).unwrap();
                let got =
                    template.render(&messages, tools.as_deref(), c.add_generation_prompt, &extra);
                let label = format!("{}/{}", c.template, c.name);
                match c.expected_sorted_keys.as_ref().or(c.expected.as_ref()) {
                    Some(expected) => {
                        assert_eq!(
                            &got.unwrap_or_else(|e| panic!("{label}: {e}")),
                            expected,
                            "{label}"
                        )
                    }
                    None => assert!(
                        matches!(got, Err(ChatTemplateError::Raised { .. })),
                        "{label}: {got:?}"
                    ),
                }
            }
        }
    }

    /// The hand-written Qwen3 renderer against transformers on the Qwen3 cases it can express
    /// (messages with only `role` and `content`).
    #[test]
    fn chat_template_hand_written_qwen3_renderer_agrees() {
        use crate::tokenizer::{ChatMessage, render_chat_with_tools};
        let fx = fixtures();
        let tools_tojson: Vec<String> = get(&fx, "tools_tojson")
            .try_iter()
            .unwrap()
            .map(|v| opt_str(&v).unwrap())
            .collect();
        let mut compared = 0;
        for Fixture { cases, .. } in templates() {
            for c in cases.iter().filter(|c| c.template == "qwen3") {
                let Some(expected) = &c.expected else {
                    continue;
                };
                let mut messages = Vec::new();
                let mut expressible = true;
                for m in c.messages.try_iter().unwrap() {
                    let keys: Vec<String> = m
                        .try_iter()
                        .unwrap()
                        .map(|k| k.as_str().unwrap().to_string())
                        .collect();
                    if keys.iter().any(|k| k != "role" && k != "content") {
                        expressible = false;
                        break;
                    }
                    messages.push(ChatMessage::new(
                        opt_str(&get(&m, "role")).unwrap(),
                        opt_str(&get(&m, "content")).unwrap(),
                    ));
                }
                if !expressible {
                    continue;
                }
                let tools: &[String] = if c.tools.is_none() {
                    &[]
                } else {
                    &tools_tojson
                };
                let enable_thinking = !matches!(
                    c.extra.get_attr("enable_thinking").ok(),
                    Some(v) if v.kind() == ValueKind::Bool && !v.is_true()
                );
                let got = render_chat_with_tools(
                    &messages,
                    tools,
                    c.add_generation_prompt,
                    enable_thinking,
                )
                .unwrap();
                assert_eq!(&got, expected, "qwen3/{}", c.name);
                compared += 1;
            }
        }
        assert!(compared >= 8, "only {compared} cases compared");
    }

    #[test]
    fn chat_template_strftime_matches_python() {
        let fx = fixtures();
        for c in get(&fx, "strftime").try_iter().unwrap() {
            let at = chrono::NaiveDateTime::parse_from_str(
                &opt_str(&get(&c, "datetime")).unwrap(),
                "%Y-%m-%dT%H:%M:%S",
            )
            .unwrap();
            let format = opt_str(&get(&c, "format")).unwrap();
            let expected = opt_str(&get(&c, "expected")).unwrap();
            assert_eq!(strftime(&at, &format).unwrap(), expected, "{format}");
        }
    }

    #[test]
    fn chat_template_strftime_now_renders_a_date() {
        let t = ChatTemplate::new("{{ strftime_now('%Y') }}", None, None).unwrap();
        let year = t.render(&[], None, false, &serde_json::Map::new()).unwrap();
        assert_eq!(year.len(), 4, "{year}");
        assert!(year.chars().all(|c| c.is_ascii_digit()), "{year}");
        let t = ChatTemplate::new("{{ strftime_now('%Q') }}", None, None).unwrap();
        assert!(matches!(
            t.render(&[], None, false, &serde_json::Map::new()),
            Err(ChatTemplateError::Render { .. })
        ));
    }

    #[test]
    fn chat_template_compile_error_is_typed_with_line() {
        let err = ChatTemplate::new("line one\n{% if messages %}\n{{ messages[0] \n", None, None)
            .unwrap_err();
        match err {
            ChatTemplateError::Compile { line, message } => {
                assert!(line.is_some_and(|l| l >= 3), "{line:?} {message}");
            }
            other => panic!("{other:?}"),
        }
        let err = ChatTemplate::new("{% frobnicate %}", None, None).unwrap_err();
        assert!(
            matches!(err, ChatTemplateError::Compile { line: Some(1), .. }),
            "{err:?}"
        );
    }

    #[test]
    fn chat_template_raise_exception_is_typed() {
        let t = ChatTemplate::new(
            "{% for m in messages %}{% if m.role == 'tool' %}\
             {{ raise_exception('no tools: ' + m.content) }}{% endif %}{% endfor %}",
            None,
            None,
        )
        .unwrap();
        let messages = [json!({"role": "tool", "content": "x"})];
        match t.render(&messages, None, false, &serde_json::Map::new()) {
            Err(ChatTemplateError::Raised { message }) => assert_eq!(message, "no tools: x"),
            other => panic!("{other:?}"),
        }
        // raised inside a macro
        let t = ChatTemplate::new(
            "{% macro f() %}{{ raise_exception('in macro') }}{% endmacro %}{{ f() }}",
            None,
            None,
        )
        .unwrap();
        assert!(matches!(
            t.render(&[], None, false, &serde_json::Map::new()),
            Err(ChatTemplateError::Raised { message }) if message == "in macro"
        ));
    }

    #[test]
    fn chat_template_limits_stop_hostile_templates() {
        let empty = serde_json::Map::new();
        let t = ChatTemplate::new(
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
            None,
            None,
        )
        .unwrap();
        let start = std::time::Instant::now();
        let err = t.render(&[], None, false, &empty).unwrap_err();
        assert!(
            matches!(
                err,
                ChatTemplateError::Limit {
                    limit: LimitKind::Fuel
                }
            ),
            "{err:?}"
        );
        assert!(start.elapsed().as_secs_f64() < 5.0, "{:?}", start.elapsed());

        let t = ChatTemplate::new(
            "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
            None,
            None,
        )
        .unwrap();
        let err = t.render(&[], None, false, &empty).unwrap_err();
        assert!(
            matches!(
                err,
                ChatTemplateError::Limit {
                    limit: LimitKind::Recursion
                }
            ),
            "{err:?}"
        );

        let t = ChatTemplate::new(
            "{% for i in range(1000) %}{{ 'x' * 1000000 }}{% endfor %}",
            None,
            None,
        )
        .unwrap()
        .with_limits(RenderLimits {
            max_output_bytes: 10 << 20,
            ..RenderLimits::default()
        });
        let err = t.render(&[], None, false, &empty).unwrap_err();
        assert!(
            matches!(
                err,
                ChatTemplateError::Limit {
                    limit: LimitKind::Output
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn chat_template_rejects_bad_inputs() {
        let t = ChatTemplate::new("{{ messages }}", None, None).unwrap();
        let empty = serde_json::Map::new();
        assert!(matches!(
            t.render(&[json!("not an object")], None, false, &empty),
            Err(ChatTemplateError::InvalidInput(_))
        ));
        let mut extra = serde_json::Map::new();
        extra.insert("messages".into(), json!([]));
        assert!(matches!(
            t.render(&[], None, false, &extra),
            Err(ChatTemplateError::InvalidInput(_))
        ));
        assert!(matches!(
            t.render_json("[", None, false, None),
            Err(ChatTemplateError::InvalidInput(_))
        ));
    }
}
