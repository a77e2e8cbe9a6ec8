#!/usr/bin/env python3
"""Reference fixtures for rl-models' GGUF reader (`src/gguf/read.rs`) and dequantization
(`src/gguf/quants.rs`), computed with the `gguf` Python package (llama.cpp's gguf-py).

Written with gguf 0.19.0 and numpy 2.4.6 (CPython 3.11). Run from the repository root:

    python3 -m venv /tmp/gguf-venv && /tmp/gguf-venv/bin/pip install gguf==0.19.0 numpy
    /tmp/gguf-venv/bin/python tools/gguf/gen_gguf_fixtures.py [--smollm2 PATH.gguf] [--dump DIR]

Outputs, in `crates/rl-models/tests/fixtures/gguf/`:

* `ggml_types.json`: the package's ggml type table (`GGMLQuantizationType` name and id,
  `GGML_QUANT_SIZES` block size and type size), and the names of the types whose dequantization
  the package implements.
* `quants.json` + `quant_<TYPE>.bin` + `quant_<TYPE>.f32`, for F32, F16, BF16, Q4_0, Q4_1, Q5_0,
  Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K and Q6_K: `.bin` holds whole blocks of seeded random bytes
  (every f16 scale/min field forced to a finite value: +0, -0, the smallest and largest
  subnormals, the largest normal, +-1, then random finite halves of both signs; one block with
  an all-ones payload and one with an all-zeros payload, so the K-quants' 6-bit scale packings
  hit 0 and 63); `.f32` holds `gguf.quants.dequantize(bytes, type)` as little-endian f32, bit for
  bit. F32/F16/BF16 bytes are fully random (NaN, infinity and subnormal patterns included).
  `quants.json` lists each type's id, element count, block/type size and the two file names.
* `small.gguf`: a GGUF v3 file written by `GGUFWriter`: metadata of every value type (scalars,
  an empty string, arrays of every scalar type and of strings), `general.alignment = 64`, and
  tensors of F32, F16, BF16, Q8_0, Q4_1, Q4_K, Q6_K and IQ2_XXS (1-D, 2-D non-square, 3-D).
* `small.expected.json`: what `GGUFReader` reads back from `small.gguf` (version, alignment,
  data offset, every key with its value type, element type and value, every tensor's name, type,
  dims in ggml order, element count, byte size and absolute data offset) and, for each tensor
  whose type rl-models dequantizes, `gguf.quants.dequantize` of its bytes as f32 bit patterns.
  f32/f64 metadata values are written as their bit patterns (`bits`) besides the value.
* With `--smollm2 PATH`: `smollm2_expected.json` for SmolLM2-135M-Instruct.Q4_1.gguf (see
  shared/reference/realmodel.md): file size and sha256, version, alignment, data offset, key
  count, selected metadata, and per tensor its name, type, dims, offset, byte size, the zlib
  CRC-32 of its dequantized values (little-endian f32 bytes) and its first and last 8 values as
  f32 bit patterns. `--dump DIR` also writes `blk.0.attn_q.weight` and `token_embd.weight`
  dequantized (`DIR/<name>.f32`) for a full comparison outside the committed tests.
"""

import argparse
import hashlib
import json
import os
import re
import sys
import zlib

import numpy as np

import gguf
from gguf import GGMLQuantizationType as T
from gguf import GGUFValueType as V
from gguf.constants import GGML_QUANT_SIZES
from gguf.quants import _type_traits, dequantize, quantize

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "crates", "rl-models", "tests", "fixtures", "gguf")

SEED = 20261203

# Byte offsets of the f16 scale/min fields inside one block of each type (ggml-common.h).
F16_FIELDS = {
    T.Q4_0: [0],
    T.Q4_1: [0, 2],
    T.Q5_0: [0],
    T.Q5_1: [0, 2],
    T.Q8_0: [0],
    T.Q2_K: [80, 82],  # scales[16], qs[64], d, dmin
    T.Q3_K: [108],  # hmask[32], qs[64], scales[12], d
    T.Q4_K: [0, 2],  # d, dmin, scales[12], qs[128]
    T.Q5_K: [0, 2],  # d, dmin, scales[12], qh[32], qs[128]
    T.Q6_K: [208],  # ql[128], qh[64], scales[16], d
}

# Special finite halves: +0, -0, smallest subnormal (+-), largest subnormal, largest normal (+-),
# +-1, smallest normal.
SPECIAL_F16 = [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x7BFF, 0xFBFF, 0x3C00, 0xBC00, 0x0400]

QUANT_TYPES = [T.F32, T.F16, T.BF16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0,
               T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K]


def finite_f16_bits(rng, n):
    """n random finite half-precision bit patterns (both signs, subnormals included)."""
    bits = rng.integers(0, 0x10000, size=n, dtype=np.uint32)
    inf_nan = ((bits >> 10) & 0x1F) == 0x1F
    bits = np.where(inf_nan, bits ^ 0x4000, bits)  # exponent 31 -> 15
    return bits.astype(np.uint16)


def random_blocks(qtype, n_blocks, rng, shift=0):
    """n_blocks blocks of random bytes with every f16 field finite (see the module docstring)."""
    block_size, type_size = GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint8)
    fields = F16_FIELDS[qtype]
    f16_bytes = set()
    for k, off in enumerate(fields):
        vals = finite_f16_bits(rng, n_blocks)
        # Special values first, rotated per field so that d and dmin differ.
        for b in range(min(n_blocks, len(SPECIAL_F16))):
            vals[b] = SPECIAL_F16[(b + k * 3 + shift) % len(SPECIAL_F16)]
        raw[:, off:off + 2] = vals.view(np.uint8).reshape(n_blocks, 2)
        f16_bytes.update((off, off + 1))
    payload = [i for i in range(type_size) if i not in f16_bytes]
    # Blocks 1 and 2: all-ones and all-zeros payloads (d fields stay finite).
    if n_blocks >= 3:
        raw[1, payload] = 0xFF
        raw[2, payload] = 0x00
    return raw


def gen_quants():
    entries = []
    for qtype in QUANT_TYPES:
        rng = np.random.default_rng(SEED + int(qtype))
        block_size, type_size = GGML_QUANT_SIZES[qtype]
        if qtype in (T.F32, T.F16, T.BF16):
            n_elements = 1024
            raw = rng.integers(0, 256, size=n_elements * type_size, dtype=np.uint8)
            # A few explicit patterns on top of the random ones.
            if qtype == T.F16:
                specials = np.array([0x7C00, 0xFC00, 0x7C01, 0xFC01, 0x7E00, 0x7DFF, 0x0001,
                                     0x8001, 0x03FF, 0x0000, 0x8000], dtype=np.uint16)
                raw[:specials.nbytes] = specials.view(np.uint8)
            if qtype == T.BF16:
                specials = np.array([0x7F80, 0xFF80, 0x7F81, 0xFFC0, 0x0001, 0x8001, 0x0000,
                                     0x8000], dtype=np.uint16)
                raw[:specials.nbytes] = specials.view(np.uint8)
            if qtype == T.F32:
                specials = np.array([0x7F800001, 0xFFC00001, 0x00000001, 0x80000000],
                                    dtype=np.uint32)
                raw[:specials.nbytes] = specials.view(np.uint8)
        else:
            n_blocks = 16 if block_size == 256 else 64
            n_elements = n_blocks * block_size
            raw = random_blocks(qtype, n_blocks, rng).reshape(-1)
        out = np.asarray(dequantize(raw, qtype), dtype=np.float32).reshape(-1)
        assert out.size == n_elements, (qtype.name, out.size, n_elements)
        name = qtype.name
        with open(os.path.join(OUT, f"quant_{name}.bin"), "wb") as f:
            f.write(raw.tobytes())
        with open(os.path.join(OUT, f"quant_{name}.f32"), "wb") as f:
            f.write(out.astype("<f4").tobytes())
        entries.append({
            "type": name, "id": int(qtype), "n_elements": n_elements,
            "block_size": block_size, "type_size": type_size,
            "raw": f"quant_{name}.bin", "expected": f"quant_{name}.f32",
        })
    write_json({"generator": "tools/gguf/gen_gguf_fixtures.py", "gguf": pkg_version(),
                "numpy": np.__version__, "types": entries}, "quants.json")


def write_json(obj, name):
    """Indented JSON with lists of numbers kept on one line."""
    text = json.dumps(obj, indent=1, ensure_ascii=False)
    text = re.sub(r"\[\s+([-+\deE.,\s]+?)\s+\]",
                  lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text)
    with open(os.path.join(OUT, name), "w") as f:
        f.write(text + "\n")


def pkg_version():
    try:
        from importlib.metadata import version
        return version("gguf")
    except Exception:  # pragma: no cover
        return "unknown"


def gen_type_table():
    dequant = {"F32", "F16"} | {t.name for t in _type_traits}
    table = [{"name": t.name, "id": int(t), "block_size": GGML_QUANT_SIZES[t][0],
              "type_size": GGML_QUANT_SIZES[t][1], "package_dequantizes": t.name in dequant}
             for t in T]
    write_json({"generator": "tools/gguf/gen_gguf_fixtures.py", "gguf": pkg_version(),
                "types": table}, "ggml_types.json")


def f32_bits(x):
    return int(np.array([x], dtype=np.float32).view(np.uint32)[0])


def f64_bits(x):
    return int(np.array([x], dtype=np.float64).view(np.uint64)[0])


def gen_small():
    rng = np.random.default_rng(SEED)
    path = os.path.join(OUT, "small.gguf")
    w = gguf.GGUFWriter(path, arch="llama")
    w.add_custom_alignment(64)
    w.add_uint32("llama.block_count", 2)
    w.add_uint8("test.u8", 200)
    w.add_int8("test.i8", -100)
    w.add_uint16("test.u16", 60000)
    w.add_int16("test.i16", -30000)
    w.add_uint32("test.u32", 4_000_000_000)
    w.add_int32("test.i32", -2_000_000_000)
    w.add_int32("test.i32_pos", 123456)
    w.add_float32("test.f32", 1.2345)
    w.add_bool("test.bool_true", True)
    w.add_bool("test.bool_false", False)
    w.add_string("test.string", "h\u00e9llo \u2713 w\u00f6rld \U0001F600")
    w.add_key_value("test.empty_string", "", V.STRING)
    w.add_uint64("test.u64", 2**63 + 5)
    w.add_int64("test.i64", -(2**62) - 7)
    w.add_float64("test.f64", 1.0 / 3.0)
    w.add_key_value("test.arr_u8", [0, 1, 255], V.ARRAY, sub_type=V.UINT8)
    w.add_key_value("test.arr_i8", [-128, 0, 127], V.ARRAY, sub_type=V.INT8)
    w.add_key_value("test.arr_u16", [0, 65535], V.ARRAY, sub_type=V.UINT16)
    w.add_key_value("test.arr_i16", [-32768, 32767], V.ARRAY, sub_type=V.INT16)
    w.add_key_value("test.arr_u32", [0, 4_294_967_295], V.ARRAY, sub_type=V.UINT32)
    w.add_key_value("test.arr_i32", [-5, 0, 7, 2_147_483_647], V.ARRAY, sub_type=V.INT32)
    w.add_key_value("test.arr_f32", [0.5, -1.25, 1e-3], V.ARRAY, sub_type=V.FLOAT32)
    w.add_key_value("test.arr_bool", [True, False, True], V.ARRAY, sub_type=V.BOOL)
    w.add_key_value("test.arr_u64", [0, 2**64 - 1], V.ARRAY, sub_type=V.UINT64)
    w.add_key_value("test.arr_i64", [-(2**63), 2**63 - 1], V.ARRAY, sub_type=V.INT64)
    w.add_key_value("test.arr_f64", [0.1, -2.5e300], V.ARRAY, sub_type=V.FLOAT64)
    w.add_key_value("test.arr_str", ["a", "", "\u00fcn\u00efc\u00f6de", "tab\tnew\nline"],
                    V.ARRAY, sub_type=V.STRING)
    tokens = [f"tok{i}" for i in range(300)]
    w.add_token_list(tokens)
    w.add_token_scores([float(-i) * 0.25 for i in range(300)])
    w.add_token_types([(i % 6) + 1 for i in range(300)])

    def rand_blocks(qtype, n_rows, row_elems):
        block_size, type_size = GGML_QUANT_SIZES[qtype]
        n_blocks = n_rows * row_elems // block_size
        raw = random_blocks(qtype, n_blocks, rng, shift=1)
        return raw.reshape(n_rows, row_elems // block_size * type_size)

    # numpy shapes (outermost first); the file stores them innermost first.
    w.add_tensor("t.f32", rng.standard_normal((3, 5)).astype(np.float32))
    w.add_tensor("t.vec", rng.standard_normal(7).astype(np.float32))
    w.add_tensor("t.f16", rng.standard_normal((2, 3, 4)).astype(np.float16))
    bf16 = rng.integers(0, 0x10000, size=(4, 6), dtype=np.uint16).view(np.uint8).reshape(4, 12)
    w.add_tensor("t.bf16", bf16, raw_dtype=T.BF16)
    w.add_tensor("t.q8_0", quantize(rng.standard_normal((4, 64)).astype(np.float32), T.Q8_0),
                 raw_dtype=T.Q8_0)
    w.add_tensor("t.q4_1", rand_blocks(T.Q4_1, 5, 64), raw_dtype=T.Q4_1)
    q4k = rand_blocks(T.Q4_K, 6, 256).reshape(2, 3, 144)
    w.add_tensor("t.q4_k", q4k, raw_dtype=T.Q4_K)
    w.add_tensor("t.q6_k", rand_blocks(T.Q6_K, 2, 768), raw_dtype=T.Q6_K)
    iq = rng.integers(0, 256, size=(1, GGML_QUANT_SIZES[T.IQ2_XXS][1]), dtype=np.uint8)
    w.add_tensor("t.iq2_xxs", iq, raw_dtype=T.IQ2_XXS)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    r = gguf.GGUFReader(path)
    kvs = []
    for name, field in r.fields.items():
        if name.startswith("GGUF."):
            continue
        entry = {"key": name, "type": field.types[0].name}
        if field.types[0] == V.ARRAY:
            entry["elem"] = field.types[-1].name
        value = field.contents()
        entry["value"] = value
        elem = field.types[-1]
        if elem == V.FLOAT32:
            entry["bits"] = [f32_bits(v) for v in value] if isinstance(value, list) else f32_bits(value)
        if elem == V.FLOAT64:
            entry["bits"] = [f64_bits(v) for v in value] if isinstance(value, list) else f64_bits(value)
        kvs.append(entry)
    supported = {"F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K",
                  "Q4_K", "Q5_K", "Q6_K"}
    tensors = []
    for t in r.tensors:
        entry = {"name": t.name, "type": t.tensor_type.name, "type_id": int(t.tensor_type),
                 "dims": [int(d) for d in t.shape], "n_elements": int(t.n_elements),
                 "n_bytes": int(t.n_bytes), "offset": int(t.data_offset)}
        if t.tensor_type.name in supported:
            vals = np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32).reshape(-1)
            entry["f32_bits"] = [int(b) for b in vals.view(np.uint32)]
        tensors.append(entry)
    expected = {
        "generator": "tools/gguf/gen_gguf_fixtures.py", "gguf": pkg_version(),
        "file_size": os.path.getsize(path), "version": int(r.fields["GGUF.version"].contents()),
        "alignment": int(r.alignment), "data_offset": int(r.data_offset),
        "kv_count": len(kvs), "metadata": kvs, "tensors": tensors,
    }
    write_json(expected, "small.expected.json")


def gen_smollm2(path, dump_dir):
    r = gguf.GGUFReader(path)
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    meta = {}
    for key in ["general.architecture", "llama.block_count", "llama.embedding_length",
                "llama.feed_forward_length", "llama.attention.head_count",
                "llama.attention.head_count_kv", "llama.rope.dimension_count",
                "llama.context_length", "llama.vocab_size", "tokenizer.ggml.model",
                "tokenizer.ggml.pre", "tokenizer.ggml.bos_token_id",
                "tokenizer.ggml.eos_token_id", "tokenizer.ggml.add_bos_token"]:
        field = r.fields.get(key)
        if field is not None:
            meta[key] = {"type": field.types[0].name, "value": field.contents()}
    for key in ["llama.rope.freq_base", "llama.attention.layer_norm_rms_epsilon"]:
        field = r.fields.get(key)
        if field is not None:
            meta[key] = {"type": field.types[0].name, "value": field.contents(),
                         "bits": f32_bits(field.contents())}
    toks = r.fields["tokenizer.ggml.tokens"]
    merges = r.fields["tokenizer.ggml.merges"]
    lists = {
        "tokenizer.ggml.tokens": {"len": len(toks.data), "first": toks.contents(0),
                                  "last": toks.contents(len(toks.data) - 1)},
        "tokenizer.ggml.merges": {"len": len(merges.data), "first": merges.contents(0),
                                  "last": merges.contents(len(merges.data) - 1)},
    }
    tensors = []
    for t in r.tensors:
        vals = np.ascontiguousarray(np.asarray(dequantize(t.data, t.tensor_type),
                                               dtype=np.float32).reshape(-1))
        bits = vals.view(np.uint32)
        tensors.append({
            "name": t.name, "type": t.tensor_type.name, "dims": [int(d) for d in t.shape],
            "offset": int(t.data_offset), "n_bytes": int(t.n_bytes),
            "crc32": zlib.crc32(vals.astype("<f4").tobytes()) & 0xFFFFFFFF,
            "first_bits": [int(b) for b in bits[:8]], "last_bits": [int(b) for b in bits[-8:]],
        })
        if dump_dir and t.name in ("blk.0.attn_q.weight", "token_embd.weight"):
            os.makedirs(dump_dir, exist_ok=True)
            vals.astype("<f4").tofile(os.path.join(dump_dir, t.name + ".f32"))
    out = {
        "generator": "tools/gguf/gen_gguf_fixtures.py", "gguf": pkg_version(),
        "file": os.path.basename(path), "file_size": os.path.getsize(path),
        "sha256": h.hexdigest(), "version": int(r.fields["GGUF.version"].contents()),
        "alignment": int(r.alignment), "data_offset": int(r.data_offset),
        "kv_count": len([k for k in r.fields if not k.startswith("GGUF.")]),
        "metadata": meta, "string_arrays": lists, "tensors": tensors,
    }
    write_json(out, "smollm2_expected.json")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smollm2", help="path to SmolLM2-135M-Instruct.Q4_1.gguf")
    ap.add_argument("--dump", help="folder for full dequantized dumps of two SmolLM2 tensors")
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    gen_type_table()
    gen_quants()
    gen_small()
    if args.smollm2:
        gen_smollm2(args.smollm2, args.dump)
    total = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
    print(f"wrote {OUT} ({total} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
