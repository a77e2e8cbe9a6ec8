"""Writes small prompt-set fixtures in the DAPO-Math-17K layout for rl-trainer's data tests.

DAPO-Math-17K (BytedTsinghua-SIA/DAPO-Math-17k) stores one row per problem with
  prompt: list<struct<content: string, role: string>>   (the DAPO template already applied)
  reward_model: struct<ground_truth: string, style: string>
  data_source, ability, extra_info: struct<index: string>
This script writes 3 rows with that schema as Parquet (snappy and zstd, as pyarrow writes HF
datasets) and as JSON lines, so the Rust loader is tested on the real layout without the
dataset itself. Run: python3 tools/trainer/gen_dapo_fixture.py
"""
import json
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq

TEMPLATE = (
    "Solve the following math problem step by step. The last line of your response should be of the form "
    "Answer: $Answer (without quotes) where $Answer is the answer to the problem.\n\n{problem}\n\n"
    'Remember to put your answer on its own line after "Answer:"'
)
ROWS = [
    ("What is $1+1$?", "2"),
    ("Compute $\\frac{12}{4}$.", "3"),
    ("How many primes are below 10?", "4"),
]

out = pathlib.Path(__file__).resolve().parents[2] / "crates/rl-trainer/tests/data"
out.mkdir(parents=True, exist_ok=True)
records = [
    {
        "data_source": "math_dapo",
        "prompt": [{"content": TEMPLATE.format(problem=p), "role": "user"}],
        "ability": "MATH",
        "reward_model": {"ground_truth": a, "style": "rule-lighteval/MATH_v2"},
        "extra_info": {"index": f"id-{i}"},
    }
    for i, (p, a) in enumerate(ROWS)
]
table = pa.Table.from_pylist(records)
pq.write_table(table, out / "dapo_sample.snappy.parquet", compression="snappy")
pq.write_table(table, out / "dapo_sample.zstd.parquet", compression="zstd")
with open(out / "dapo_sample.jsonl", "w") as f:
    for r in records:
        f.write(json.dumps(r) + "\n")
print("wrote", sorted(p.name for p in out.iterdir()))
