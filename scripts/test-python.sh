#!/usr/bin/env bash
# The Python package's tests (crates/rl-py, package `rlvr`), called by scripts/test.sh:
#   1. maturin (PyPI) in a reusable tools venv;
#   2. `maturin build --release` of the abi3 wheel (cp310-abi3: any CPython >= 3.10);
#   3. a fresh venv with numpy and pytest from PyPI, then the wheel installed offline
#      (--no-index --find-links: only what this checkout built);
#   4. pytest on crates/rl-py/tests; any failure, including pytest's exit code 5 ("no tests
#      collected"), fails the run.
# Measured 2026-11-30 on the shared 2-core machine (load average ~4.7): 38 s with a warm build
# cache and pip cache (wheel 8 s, fresh venv + installs ~25 s, 45 tests 4 s); 266 s with a cold
# release build of the extension and its dependencies.
#
#   bash scripts/test-python.sh              # PYTHON=python3.12 to pick the interpreter
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
WORK="${RLVR_PY_WORK:-$PWD/.cache/python}"   # .cache/ is git-ignored
start=$(date +%s)

"$PYTHON" -c 'import sys; assert sys.version_info >= (3, 10), "rlvr needs Python >= 3.10"'

TOOLS="$WORK/tools"
if [ ! -x "$TOOLS/bin/maturin" ]; then
    "$PYTHON" -m venv "$TOOLS"
    "$TOOLS/bin/pip" install --quiet --disable-pip-version-check "maturin>=1.16,<1.17"
fi

rm -rf "$WORK/wheels"
"$TOOLS/bin/maturin" build --release --strip --quiet -m crates/rl-py/Cargo.toml \
    -i "$PYTHON" -o "$WORK/wheels"
echo "wheel: $(ls "$WORK"/wheels/*.whl) ($(( $(date +%s) - start )) s)"

rm -rf "$WORK/venv"
"$PYTHON" -m venv "$WORK/venv"
VPY="$WORK/venv/bin/python"
"$VPY" -m pip install --quiet --disable-pip-version-check numpy pytest
"$VPY" -m pip install --quiet --disable-pip-version-check --no-index --find-links "$WORK/wheels" rlvr
# The tests must run against the installed wheel, not the source tree; its metadata must carry
# the workspace's version, licence, Python requirement and project URLs.
WS_VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
"$VPY" - "$WS_VERSION" <<'PY'
import importlib.metadata as md, rlvr, sys
assert "site-packages" in rlvr.__file__, rlvr.__file__
m = md.metadata("rlvr")
assert rlvr.__version__ == md.version("rlvr") == sys.argv[1], (rlvr.__version__, md.version("rlvr"), sys.argv[1])
assert m["Requires-Python"] == ">=3.10", m["Requires-Python"]
assert "MIT" in (m.get("License-Expression") or m.get("License") or ""), m.items()
urls = m.get_all("Project-URL") or []
assert any(u.startswith("Repository") for u in urls), urls
print(f"rlvr {rlvr.__version__} from {rlvr.__file__}; metadata ok")
PY
# The source distribution builds and holds what a build from it needs.
rm -rf "$WORK/sdist"
"$TOOLS/bin/maturin" sdist -m crates/rl-py/Cargo.toml -o "$WORK/sdist" >/dev/null
"$VPY" - "$WORK"/sdist/rlvr-*.tar.gz <<'PY'
import sys, tarfile
names = tarfile.open(sys.argv[1]).getnames()
for need in ("pyproject.toml", "python/rlvr/__init__.py", "src/lib.rs"):
    assert any(n.endswith(need) for n in names), (need, names[:20])
print(f"sdist {sys.argv[1].rsplit('/', 1)[-1]}: {len(names)} files")
PY

bash scripts/run-pytest.sh "$VPY" crates/rl-py/tests "pytest"
echo "python tests passed ($(( $(date +%s) - start )) s)"
