//! Tool calls in Qwen3's chat format (the "hermes" format Qwen's template documents and vLLM's
//! `hermes` parser reads): each call is a JSON object `{"name": ..., "arguments": {...}}`
//! between `<tool_call>` and `</tool_call>`, several calls per assistant turn allowed.

use serde_json::{Map, Value};

/// Opens a call.
pub const TOOL_CALL_OPEN: &str = "<tool_call>";
/// Closes a call.
pub const TOOL_CALL_CLOSE: &str = "</tool_call>";

/// One well-formed call.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    /// The tool's name.
    pub name: String,
    /// Its arguments (an empty object when the call gave none).
    pub arguments: Map<String, Value>,
}

/// A `<tool_call>` block as parsed: a call, or why it is not one (which the model is told).
#[derive(Clone, Debug, PartialEq)]
pub enum ParsedCall {
    /// A call.
    Call(ToolCall),
    /// Not a usable call.
    Malformed {
        /// Why, in words for the model.
        reason: String,
    },
}

/// Every `<tool_call>` block of an assistant turn's text, in order. A block without a closing
/// tag runs to the end of the text (and is malformed unless its JSON is complete). Text
/// outside the blocks is ignored. Never panics; the work is linear in the text.
///
/// A block's content (trimmed) must be a JSON object with a string `name` and an `arguments`
/// object; `arguments` may also be a string holding a JSON object (some models emit it that
/// way; OpenAI's wire format does) or be absent (no arguments).
pub fn parse_tool_calls(text: &str) -> Vec<ParsedCall> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find(TOOL_CALL_OPEN) {
        let body_start = open + TOOL_CALL_OPEN.len();
        let (body, next, closed) = match rest[body_start..].find(TOOL_CALL_CLOSE) {
            Some(close) => (
                &rest[body_start..body_start + close],
                body_start + close + TOOL_CALL_CLOSE.len(),
                true,
            ),
            None => (&rest[body_start..], rest.len(), false),
        };
        out.push(match parse_body(body.trim()) {
            Ok(call) if closed => ParsedCall::Call(call),
            Ok(_) => ParsedCall::Malformed {
                reason: format!("no {TOOL_CALL_CLOSE} after the call"),
            },
            Err(reason) => ParsedCall::Malformed { reason },
        });
        rest = &rest[next..];
    }
    out
}

/// True when the text contains a `<tool_call>` tag at all.
pub fn has_tool_call(text: &str) -> bool {
    text.contains(TOOL_CALL_OPEN)
}

fn parse_body(body: &str) -> Result<ToolCall, String> {
    let value: Value = serde_json::from_str(body).map_err(|e| {
        format!(
            "the call is not valid JSON ({e}); expected {{\"name\": ..., \"arguments\": {{...}}}}"
        )
    })?;
    let Value::Object(mut obj) = value else {
        return Err("the call is not a JSON object".into());
    };
    let name = match obj.remove("name") {
        Some(Value::String(s)) if !s.is_empty() => s,
        Some(_) => return Err("`name` is not a non-empty string".into()),
        None => return Err("the call has no `name`".into()),
    };
    let arguments = match obj.remove("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m,
        Some(Value::String(s)) => match serde_json::from_str::<Value>(&s) {
            Ok(Value::Object(m)) => m,
            _ => return Err("`arguments` is a string that is not a JSON object".into()),
        },
        Some(_) => return Err("`arguments` is not an object".into()),
    };
    if let Some(extra) = obj.keys().next() {
        return Err(format!(
            "unexpected field `{extra}` (a call has `name` and `arguments`)"
        ));
    }
    Ok(ToolCall { name, arguments })
}

/// The call as Qwen3's chat template renders an assistant's `tool_calls` entry:
/// `<tool_call>\n{"name": "NAME", "arguments": ARGS}\n</tool_call>` with the arguments as
/// Python's `json.dumps` writes them (`", "` and `": "` separators, non-ASCII kept). Used to
/// write demonstrations (the warm-start of the tool-use example) in the exact format.
pub fn render_tool_call(name: &str, arguments: &Map<String, Value>) -> String {
    format!(
        "{TOOL_CALL_OPEN}\n{{\"name\": \"{name}\", \"arguments\": {}}}\n{TOOL_CALL_CLOSE}",
        crate::pyjson::dumps(&Value::Object(arguments.clone()))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: Value) -> ParsedCall {
        ParsedCall::Call(ToolCall {
            name: name.into(),
            arguments: args.as_object().unwrap().clone(),
        })
    }

    #[test]
    fn calls_in_qwen3_format() {
        let text = "Let me compute.\n<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"347*58\"}}\n</tool_call>";
        assert_eq!(
            parse_tool_calls(text),
            vec![call(
                "calculator",
                serde_json::json!({"expression": "347*58"})
            )]
        );
        let two = "<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call>x<tool_call>\n{\"name\": \"b\", \"arguments\": \"{\\\"k\\\": 1}\"}\n</tool_call>";
        assert_eq!(
            parse_tool_calls(two),
            vec![
                call("a", serde_json::json!({})),
                call("b", serde_json::json!({"k": 1}))
            ]
        );
        assert!(parse_tool_calls("no calls here").is_empty());
        assert_eq!(
            parse_tool_calls("<tool_call>{\"name\": \"n\"}</tool_call>"),
            vec![call("n", serde_json::json!({}))]
        );
    }

    #[test]
    fn malformed_calls_say_why() {
        let reason = |t: &str| match &parse_tool_calls(t)[..] {
            [ParsedCall::Malformed { reason }] => reason.clone(),
            other => panic!("{other:?}"),
        };
        assert!(reason("<tool_call>{\"name\": </tool_call>").contains("not valid JSON"));
        assert!(reason("<tool_call>[1]</tool_call>").contains("not a JSON object"));
        assert!(reason("<tool_call>{\"arguments\": {}}</tool_call>").contains("no `name`"));
        assert!(reason("<tool_call>{\"name\": 3}</tool_call>").contains("`name`"));
        assert!(
            reason("<tool_call>{\"name\": \"a\", \"arguments\": 3}</tool_call>")
                .contains("not an object")
        );
        assert!(reason("<tool_call>{\"name\": \"a\", \"x\": 1}</tool_call>").contains("`x`"));
        assert!(
            reason("<tool_call>{\"name\": \"a\", \"arguments\": {}}").contains("no </tool_call>")
        );
        assert!(
            reason("<tool_call>{\"name\": \"a\", \"arguments\": \"[1]\"}</tool_call>")
                .contains("string")
        );
    }

    #[test]
    fn rendering_matches_the_chat_template() {
        // Qwen3's template: '<tool_call>\n{"name": "' + name + '", "arguments": ' +
        // (arguments | tojson) + '}\n</tool_call>', tojson = json.dumps with default separators.
        let args = serde_json::json!({"expression": "2*3"});
        assert_eq!(
            render_tool_call("calculator", args.as_object().unwrap()),
            "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"2*3\"}}\n</tool_call>"
        );
        let text = render_tool_call("calculator", args.as_object().unwrap());
        assert_eq!(parse_tool_calls(&text), vec![call("calculator", args)]);
    }
}
