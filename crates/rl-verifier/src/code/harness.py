# The code verifier's harness (rl-verifier, src/code/harness.py), run as main.py in the sandbox
# for the syntax check, call-based tests and assert tests. Stdin/stdout tests do not use it: the
# solution itself is main.py there.
#
# Everything arrives as one JSON document on stdin, which is read to the end before the solution
# runs (the solution then sees an empty stdin). The result is one line on file descriptor 1:
# a per-run random token followed by JSON. The token is not in any file, so a solution that exits
# early (sys.exit, os._exit) or prints a fake result cannot produce it; a solution that inspects
# this interpreter (frames, sys.modules) could, which is documented as a limit in
# docs/verifier.md. The solution's own output goes nowhere.
import io
import json
import os
import reprlib
import sys

_write = os.write
_exit = os._exit
_dumps = json.dumps
_type = type
_len = len
_isinstance = isinstance
_abs = abs
_max = max
_BOOL, _INT, _FLOAT, _STR, _LIST, _TUPLE, _DICT = bool, int, float, str, list, tuple, dict


class _NullBytes(io.RawIOBase):
    def write(self, b):
        return _len(b)

    def writable(self):
        return True


class _Null(io.TextIOBase):
    buffer = _NullBytes()

    def write(self, s):
        return _len(s)

    def writable(self):
        return True


def _report(token, result):
    _write(1, (token + _dumps(result) + "\n").encode("utf-8", "replace"))
    _exit(0)


def _eq(a, b, tol):
    """Exact built-in types only (a subclass with its own __eq__ never matches); tuples as
    lists; ints exactly; a float within tol * max(1, |expected|); dict keys as strings."""
    ta, tb = _type(a), _type(b)
    if ta is _TUPLE:
        a, ta = _LIST(a), _LIST
    if ta is _BOOL or tb is _BOOL or a is None or b is None:
        return ta is tb and a == b
    if ta in (_INT, _FLOAT) and tb in (_INT, _FLOAT):
        if ta is _INT and tb is _INT:
            return a == b
        try:
            return a == b or _abs(a - b) <= tol * _max(1.0, _abs(b))
        except (OverflowError, TypeError, ValueError):
            return False
    if ta is _STR and tb is _STR:
        return a == b
    if ta is _LIST and tb is _LIST:
        return _len(a) == _len(b) and all(_eq(x, y, tol) for x, y in zip(a, b))
    if ta is _DICT and tb is _DICT:
        if _len(a) != _len(b):
            return False
        a = {_STR(k) if _type(k) in (_INT, _FLOAT, _BOOL) else k: v for k, v in a.items()}
        return all(_type(k) is _STR and k in b and _eq(v, b[k], tol) for k, v in a.items())
    return False


def _main():
    case = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    sys.stdin = io.StringIO("")
    token = case["token"]
    mode = case["mode"]
    try:
        code = compile(case["solution"], "solution.py", "exec")
    except MemoryError:
        raise
    except Exception as e:  # SyntaxError, ValueError (null bytes), RecursionError
        _report(token, {"ok": False, "error": f"{_type(e).__name__}: {e}"})
    if mode == "compile":
        _report(token, {"ok": True})
    ns = {"__name__": "__rlvr_solution__", "__builtins__": __builtins__}
    sys.stdout = _Null()
    exec(code, ns)
    if mode == "assert":
        test = compile(case["test"], "test.py", "exec")
        try:
            exec(test, ns)
        except AssertionError as e:
            _report(token, {"ok": False, "error": f"AssertionError: {e}".rstrip(": ")})
        _report(token, {"ok": True})
    # mode == "call"
    name, args, expected, tol = case["fn_name"], case["args"], case["expected"], case["tol"]
    del case
    fn = ns.get(name)
    if fn is None and _isinstance(ns.get("Solution"), _type):
        fn = getattr(ns["Solution"](), name, None)
    if not callable(fn):
        raise NameError(f"the solution defines no function or Solution method `{name}`")
    got = fn(*args)
    ok = _eq(got, expected, tol) or (
        _type(expected) is _LIST and _len(expected) == 1 and _eq(got, expected[0], tol)
    )
    _report(token, {"ok": ok, "got": reprlib.repr(got)})


_main()
