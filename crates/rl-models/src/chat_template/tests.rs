use super::*;
use serde_json::json;

/// The fixture file, read with its objects' key order kept.
fn fixtures() -> Value {
    let text =
        std::fs::read_to_string(crate::crate_dir().join("tests/fixtures/chat_templates.json"))
            .expect("read chat_templates.json");
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
            let to_serde =
                |v: &Value| -> serde_json::Value { serde_json::from_str(&json_text(v)).unwrap() };
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
            let got = template.render(&messages, tools.as_deref(), c.add_generation_prompt, &extra);
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
            let got =
                render_chat_with_tools(&messages, tools, c.add_generation_prompt, enable_thinking)
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
