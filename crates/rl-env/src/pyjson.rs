//! JSON as Python's `json.dumps(x, ensure_ascii=False)` writes it, which is what HF chat
//! templates' `tojson` filter produces: `", "` between items, `": "` after keys, non-ASCII
//! characters kept, the same string escapes as `serde_json`. Object keys come in the map's
//! order (`serde_json::Map` is sorted by key here, where Python keeps insertion order), and
//! floats are written by `serde_json` (`1e20`, where Python writes `1e+20`): build values with
//! sorted keys and integers where byte equality with Python matters.

use serde_json::Value;

/// `value` in Python's `json.dumps` layout.
pub fn dumps(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out, &[]);
    out
}

/// Key order of tool definitions as they are usually written (OpenAI's and transformers'
/// `get_json_schema` layout): these keys first, in this order, then the rest sorted.
pub const TOOL_KEY_ORDER: [&str; 7] = [
    "type",
    "function",
    "name",
    "description",
    "parameters",
    "properties",
    "required",
];

/// [`dumps`] with the keys of every object ordered by `first` (listed keys first, in that
/// order, then the others sorted), e.g. [`TOOL_KEY_ORDER`] for a tool definition.
pub fn dumps_ordered(value: &Value, first: &[&str]) -> String {
    let mut out = String::new();
    write(value, &mut out, first);
    out
}

fn write(value: &Value, out: &mut String, first: &[&str]) {
    match value {
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write(v, out, first);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by_key(|(k, _)| {
                let rank = first.iter().position(|f| f == k).unwrap_or(first.len());
                (rank, k.as_str())
            });
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push_str(": ");
                write(v, out, first);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::{TOOL_KEY_ORDER, dumps, dumps_ordered};

    /// Python 3.11: `json.dumps({"a": [1, "é\n"], "b": {"c": None, "d": True}}, ensure_ascii=False)`
    /// prints `{"a": [1, "é\n"], "b": {"c": null, "d": true}}` (the `\n` as two characters).
    #[test]
    fn python_layout() {
        let v = serde_json::json!({"a": [1, "é\n"], "b": {"c": null, "d": true}});
        assert_eq!(
            dumps(&v),
            "{\"a\": [1, \"é\\n\"], \"b\": {\"c\": null, \"d\": true}}"
        );
        assert_eq!(dumps(&serde_json::json!([])), "[]");
        assert_eq!(dumps(&serde_json::json!({})), "{}");
        let tool = serde_json::json!({"function": {"name": "f", "parameters": {"type": "object", "a": 1}}, "type": "function"});
        assert_eq!(
            dumps_ordered(&tool, &TOOL_KEY_ORDER),
            "{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"type\": \"object\", \"a\": 1}}}"
        );
    }
}
