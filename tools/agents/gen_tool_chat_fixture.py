"""Qwen3's chat template with tools, rendered by HF transformers (the reference for rlvr's tool
prompts and observation tokens).

Writes crates/rl-trainer/tests/data/qwen3_tool_chat.json: for a few conversations, the text
and ids `tokenizer.apply_chat_template(...)` gives with the official Qwen3 tokenizer and chat
template (scripts/fetch-qwen3-tokenizer.sh installs both in .cache/qwen3-tokenizer/).

    python3 -m venv /tmp/hf && /tmp/hf/bin/pip install "transformers>=5,<6" jinja2
    /tmp/hf/bin/python tools/agents/gen_tool_chat_fixture.py

Run 2026-12-02 with transformers 5.24.0, jinja2 3.1.6 (no torch needed).

The tool definitions are rlvr's two built-in tools (crates/rl-env/src/tools/), written here as
the dicts a user would pass (the usual key order: type, function; name, description,
parameters; type, properties, required). They are input data: the test checks that rlvr renders
the same prompt ids for them.
"""

import json
from pathlib import Path

from transformers import PreTrainedTokenizerFast

ROOT = Path(__file__).resolve().parents[2]
TOK = ROOT / ".cache/qwen3-tokenizer"

CALCULATOR = {
    "type": "function",
    "function": {
        "name": "calculator",
        "description": "Evaluates an arithmetic expression exactly (+, -, *, /, //, %, ** and "
        "parentheses) and returns an integer or a reduced fraction.",
        "parameters": {
            "type": "object",
            "properties": {
                "expression": {"type": "string", "description": "The expression, e.g. 347*58"}
            },
            "required": ["expression"],
        },
    },
}
PYTHON = {
    "type": "function",
    "function": {
        "name": "python",
        "description": "Runs a Python 3 program in a sandbox without network access and returns "
        "what it printed.",
        "parameters": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "The program; print the values you need."}
            },
            "required": ["code"],
        },
    },
}


def call(name, arguments):
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def main():
    config = json.loads((TOK / "tokenizer_config.json").read_text())
    tok = PreTrainedTokenizerFast(tokenizer_file=str(TOK / "tokenizer.json"))
    tok.chat_template = config["chat_template"]
    user = {"role": "user", "content": "What is 347*58?"}
    cases = {
        "prompt_with_tools": dict(messages=[user], tools=[CALCULATOR, PYTHON]),
        "system_and_tools": dict(
            messages=[{"role": "system", "content": "You are a careful assistant."}, user],
            tools=[CALCULATOR],
        ),
        "one_call": dict(
            messages=[
                user,
                {"role": "assistant", "content": "", "tool_calls": [call("calculator", {"expression": "347*58"})]},
                {"role": "tool", "content": "20126"},
            ],
            tools=[CALCULATOR],
        ),
        "two_calls": dict(
            messages=[
                user,
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        call("calculator", {"expression": "347*58"}),
                        call("python", {"code": "print(347*58)"}),
                    ],
                },
                {"role": "tool", "content": "20126"},
                {"role": "tool", "content": "20126\n"},
            ],
            tools=[CALCULATOR, PYTHON],
        ),
        "prompt_no_thinking": dict(messages=[user], tools=[CALCULATOR], enable_thinking=False),
        "one_call_no_thinking": dict(
            messages=[
                user,
                {"role": "assistant", "content": "", "tool_calls": [call("calculator", {"expression": "2*3"})]},
                {"role": "tool", "content": "6"},
            ],
            tools=[CALCULATOR],
            enable_thinking=False,
        ),
    }
    out = {"transformers": __import__("transformers").__version__, "cases": {}}
    for name, kw in cases.items():
        messages = kw.pop("messages")
        text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, **kw)
        ids = tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=True, **kw)
        if isinstance(ids, dict) or hasattr(ids, "keys"):
            ids = ids["input_ids"]
        out["cases"][name] = {"text": text, "ids": list(ids)}
    dest = ROOT / "crates/rl-trainer/tests/data/qwen3_tool_chat.json"
    dest.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {dest}")


if __name__ == "__main__":
    main()
