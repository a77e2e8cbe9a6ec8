#!/usr/bin/env python3
"""Fixture: the GGUF keys llama.cpp's gguf-py writes for an HF `chat_template`, string or list.

    python tools/gguf/gen_chat_template_kvs.py crates/rl-models/tests/fixtures/gguf/chat_template_kvs.json

For each case, `gguf.GGUFWriter.add_chat_template(value)` (what convert_hf_to_gguf.py calls with
tokenizer_config.json's `chat_template`) writes a GGUF file; `gguf.GGUFReader` reads it back and
the string and string-array keys under `tokenizer.chat_template*` are recorded in file order.
rl-models' `export_gguf` must write the same keys and values (gguf-py keeps the names of the
non-default templates in a Python set, so its array order is not fixed: the cases name at most
one non-default template).
"""
import json
import sys
import tempfile
from pathlib import Path

import gguf
from importlib.metadata import version

CASES = {
    "string": "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}",
    "list_default_and_tool_use": [
        {"name": "default", "template": "D{{ messages[0]['content'] }}"},
        {"name": "tool_use", "template": "T{{ tools | tojson }}"},
    ],
    "list_name_with_symbols": [
        {"name": "rag-v1.2", "template": "R"},
        {"name": "default", "template": "D"},
    ],
    "list_without_default": [{"name": "tool_use", "template": "T"}],
    "list_entries_skipped": [
        {"name": "", "template": "no name"},
        {"name": "x"},
        {"name": "default", "template": "D"},
    ],
}


def keys_of(value) -> list:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.gguf"
        w = gguf.GGUFWriter(str(path), "llama")
        w.add_chat_template(value)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        r = gguf.GGUFReader(str(path))
        out = []
        for f in r.fields.values():
            if not f.name.startswith("tokenizer.chat_template"):
                continue
            if f.types[0] == gguf.GGUFValueType.STRING:
                out.append([f.name, bytes(f.parts[f.data[0]]).decode()])
            else:
                out.append([f.name, [bytes(f.parts[i]).decode() for i in f.data]])
        return out


def main():
    cases = [{"name": n, "chat_template": v, "keys": keys_of(v)} for n, v in CASES.items()]
    Path(sys.argv[1]).write_text(json.dumps({"gguf_version": version("gguf"), "cases": cases}, indent=1) + "\n")


if __name__ == "__main__":
    main()
