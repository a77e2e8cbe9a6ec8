#!/usr/bin/env bash
# Runs pytest quietly with PYTHON on DIR and fails on any test failure and on pytest's exit code
# 5 ("no tests collected"), naming LABEL. Shared by test-python.sh and test-python-real.sh.
#
#   bash scripts/run-pytest.sh PYTHON DIR LABEL
set -uo pipefail
PYTHON="$1" DIR="$2" LABEL="$3"
"$PYTHON" -m pytest -q -p no:cacheprovider "$DIR"
rc=$?
if [ "$rc" -eq 5 ]; then
    echo "error: pytest collected no tests in $DIR (exit code 5)" >&2
    exit 1
elif [ "$rc" -ne 0 ]; then
    echo "error: $LABEL failed (exit code $rc)" >&2
    exit "$rc"
fi
