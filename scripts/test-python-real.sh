#!/usr/bin/env bash
# The Python package against the real clients (crates/rl-py/tests_real): DA3PO inside TRL's
# GRPOTrainer, on the CPU with a tiny random Qwen3, and DA3PO through verl's own estimator
# registry, and rlvr.openrlhf through OpenRLHF's own reward-file loader. Needs a venv with torch, transformers, TRL and datasets from PyPI, and verl 0.9.1
# installed with --no-deps plus the packages its estimator module imports (verl pins an older
# transformers than TRL needs; its estimators do not use it) (torch with its CUDA libraries is ~6 GB and takes ~8 min to install on
# the 2-core machine, so it is not part of CI's run):
#
#   bash scripts/test-python-real.sh --install   # creates $RLVR_REAL_VENV, then tests
#   bash scripts/test-python-real.sh             # tests; skips (exit 0, says so) without the venv
#
# scripts/test.sh calls it without --install. The rlvr wheel comes from scripts/test-python.sh's
# build (.cache/python/wheels) and is installed offline into the venv before the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${RLVR_REAL_VENV:-$HOME/.cache/rlvr-trl/venv}"
WHEELS="${RLVR_PY_WORK:-$PWD/.cache/python}/wheels"
start=$(date +%s)

if [ "${1:-}" = "--install" ] && [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check \
        torch transformers trl datasets accelerate pytest matplotlib
    "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps verl==0.9.1
    "$VENV/bin/pip" install --quiet --disable-pip-version-check \
        'tensordict<=0.10.0,>=0.8.0' hydra-core codetiming pylatexenc dill pandas ray
    # OpenRLHF's reward-function loader only (its trainer needs deepspeed, ray and vLLM).
    "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps openrlhf==0.11.2
    "$VENV/bin/pip" install --quiet --disable-pip-version-check aiohttp
fi
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import torch, trl, datasets' 2>/dev/null; then
    echo "real-client tests skipped: no venv with torch, trl and datasets at $VENV" \
         "(bash scripts/test-python-real.sh --install creates it)"
    exit 0
fi
if ! ls "$WHEELS"/rlvr-*.whl >/dev/null 2>&1; then
    echo "error: no rlvr wheel in $WHEELS (run bash scripts/test-python.sh first)" >&2
    exit 1
fi
"$VENV/bin/pip" install --quiet --disable-pip-version-check pytest
"$VENV/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps \
    --no-index --find-links "$WHEELS" rlvr
"$VENV/bin/python" -c 'import torch, transformers, trl; print(f"torch {torch.__version__}, transformers {transformers.__version__}, trl {trl.__version__}")'
bash scripts/run-pytest.sh "$VENV/bin/python" crates/rl-py/tests_real "real-client tests"
echo "real-client tests passed ($(( $(date +%s) - start )) s)"
