"""Shared fixtures of the rlvr Python tests (run by scripts/test-python.sh against the wheel)."""

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
DATA = REPO / "crates" / "rl-verifier" / "tests" / "data"


def load_jsonl(name):
    path = DATA / name
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="session")
def dapo_rows():
    """verl's math_dapo run on 653 cases (tools/verifier/gen_dapo_parity.py)."""
    return load_jsonl("dapo_parity.jsonl")


@pytest.fixture(scope="session")
def math_rows():
    """The labelled math corpus (each case with its justification and math-verify's verdict)."""
    return load_jsonl("math_corpus.jsonl")


@pytest.fixture(scope="session")
def corpus_pairs(dapo_rows, math_rows):
    """(answer, response, verifier) triples over both corpora, for the concurrency tests."""
    pairs = [(r["gold"], r["response"], "math") for r in math_rows]
    pairs += [(r["gt"], r["solution"], "dapo") for r in dapo_rows if r["kind"] == "score"]
    return pairs
