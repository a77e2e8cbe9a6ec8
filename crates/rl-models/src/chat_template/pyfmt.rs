//! Python's formatting inside templates: `str()` and `repr()` of values, float `repr`,
//! `json.dumps` (the `tojson` filter) and `strftime`.

use std::fmt::Write as _;

use minijinja::value::{Kwargs, ValueKind, from_args};
use minijinja::{Error, ErrorKind, Value};

/// `datetime.strftime(format)` of a naive date-time, with chrono's strftime specifiers.
pub(super) fn strftime(at: &chrono::NaiveDateTime, format: &str) -> Result<String, Error> {
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
pub(super) fn write_py_str(out: &mut impl std::fmt::Write, value: &Value) -> std::fmt::Result {
    match value.kind() {
        ValueKind::Undefined => Ok(()),
        ValueKind::String => out.write_str(value.as_str().unwrap_or_default()),
        _ => write_py_repr(out, value),
    }
}

/// Writes Python's `repr(value)` (strings quoted, containers recursively).
pub(super) fn write_py_repr(out: &mut impl std::fmt::Write, value: &Value) -> std::fmt::Result {
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

pub(super) fn write_py_str_repr(out: &mut impl std::fmt::Write, s: &str) -> std::fmt::Result {
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
pub(super) fn py_float_repr(f: f64, json: bool) -> String {
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

pub(super) struct JsonStyle {
    ensure_ascii: bool,
    indent: Option<String>,
    item_separator: String,
    key_separator: String,
    sort_keys: bool,
}

/// transformers' `tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)`.
pub(super) fn tojson_filter(value: &Value, args: &[Value]) -> Result<String, Error> {
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

pub(super) fn json_type_error(value: &Value) -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        format!(
            "tojson: object of type {} is not JSON serializable",
            value.kind()
        ),
    )
}

pub(super) fn write_json(
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
pub(super) fn json_key(key: &Value) -> Result<String, Error> {
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

pub(super) fn newline_indent(out: &mut String, style: &JsonStyle, level: usize) {
    if let Some(indent) = &style.indent {
        out.push('\n');
        for _ in 0..level {
            out.push_str(indent);
        }
    }
}

pub(super) fn write_json_str(out: &mut String, s: &str, style: &JsonStyle) {
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
