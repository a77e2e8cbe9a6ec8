#!/usr/bin/env python3
"""File-level import circles in the workspace's library sources.

    python3 tools/import_cycles.py [CRATE_SRC_DIR ...]   (default: every crates/*/src and src/)

For each source file (tests excluded: `tests.rs`, `*/tests/*` and inline `#[cfg(test)] mod`
blocks), the modules it names through
`crate::a::b`, `super::a` or child-relative `a::b` paths (in `use` declarations and in code,
comments stripped) are
resolved to the files that define them (the longest module prefix that is a file); `use
super::*` names the parent file. An edge F -> G means F uses something G defines. Declaring a
child (`mod x;`) is not an edge. Every strongly connected component with more than one file is
printed, with the edges inside it; the exit status is the number of components (0: no circle).
"""
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def module_files(src: Path) -> dict[tuple, Path]:
    """Module path (tuple of names, () for the crate root) -> file."""
    out = {}
    for f in src.rglob("*.rs"):
        rel = f.relative_to(src)
        if f.name == "tests.rs" or "tests" in rel.parts[:-1]:
            continue
        parts = list(rel.with_suffix("").parts)
        if parts == ["main"] and (src / "lib.rs").exists():
            continue  # the binary is another crate: its `crate::` is not the library's
        if parts[-1] in ("lib", "main") and len(parts) == 1:
            parts = []
        elif parts[-1] == "mod":
            parts = parts[:-1]
        out[tuple(parts)] = f
    return out


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = "\n".join(l.split("//")[0] if "\"" not in l else l for l in text.splitlines())
    return strip_test_modules(text)


def strip_test_modules(text: str) -> str:
    """Drops inline `#[cfg(test)] mod name { ... }` blocks: test code, like `tests.rs` files."""
    while (m := re.search(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text)) is not None:
        depth, end = 0, len(text)
        for i in range(m.end() - 1, len(text)):
            depth += text[i] == "{"
            depth -= text[i] == "}"
            if depth == 0:
                end = i + 1
                break
        text = text[:m.start()] + text[end:]
    return text


def expand_use(text: str) -> list[str]:
    """Paths named by `use` trees, brace groups expanded one level at a time."""
    paths = []
    for m in re.finditer(r"\buse\s+([^;]+);", text):
        stack = [m.group(1).replace("\n", " ").replace(" ", "")]
        while stack:
            p = stack.pop()
            b = p.find("{")
            if b < 0:
                paths.append(p)
                continue
            depth, end = 0, None
            for i in range(b, len(p)):
                depth += p[i] == "{"
                depth -= p[i] == "}"
                if depth == 0:
                    end = i
                    break
            if end is None:  # not a use tree (e.g. the word `use` in a string)
                continue
            inner, rest = p[b + 1:end], p[end + 1:]
            items, depth, cur = [], 0, ""
            for ch in inner:
                if ch == "," and depth == 0:
                    items.append(cur)
                    cur = ""
                    continue
                depth += ch == "{"
                depth -= ch == "}"
                cur += ch
            items.append(cur)
            for it in items:
                if it:
                    stack.append(p[:b] + it + rest)
    return paths


REEXPORTS: dict = {}


def reexports(mod: tuple, text: str) -> dict[str, str]:
    """Names a module re-exports (`pub use path::{a, b as c}`) -> the path they come from."""
    out = {}
    for m in re.finditer(r"\bpub(?:\([a-z]+\))?\s+use\s+([^;]+);", text):
        for p in expand_use("use " + m.group(1) + ";"):
            name = p.split("::")[-1]
            if " as " in name or "as" in p.split("::")[-1:]:
                continue
            if name != "*":
                out[name] = p
    return out


def resolve(mod: tuple, path: str, files: dict, depth: int = 0) -> tuple | None:
    segs = [s for s in path.split("::") if s]
    if not segs:
        return None
    if segs[0] == "crate":
        base, segs = [], segs[1:]
    elif segs[0] in ("super", "self"):
        base = list(mod)
        while segs and segs[0] in ("super", "self"):
            if segs[0] == "super":
                base = base[:-1]
            segs = segs[1:]
    elif tuple(mod) + (segs[0],) in files:  # a child module, named relative to this one
        base = list(mod)
    else:
        return None
    full = base + [s.split(" as ")[0] for s in segs if s != "*"]
    for n in range(len(full), -1, -1):
        if tuple(full[:n]) in files:
            found = tuple(full[:n])
            # `crate::Name` where the module only re-exports Name: the file that defines it
            if n < len(full) and depth < 8:
                via = REEXPORTS.get(found, {}).get(full[n])
                if via is not None:
                    deeper = resolve(found, via, files, depth + 1)
                    if deeper is not None:
                        return deeper
            return found
    return None


def edges_of(src: Path) -> tuple[dict, dict]:
    files = module_files(src)
    REEXPORTS.clear()
    for mod, f in files.items():
        REEXPORTS[mod] = reexports(mod, strip_comments(f.read_text()))
    edges = {m: set() for m in files}
    for mod, f in files.items():
        text = strip_comments(f.read_text())
        named = expand_use(text)
        # Paths in code; a prefix followed by `::{` is a use tree, which expand_use has read.
        named += re.findall(r"\b((?:crate|super)(?:::[A-Za-z_][A-Za-z0-9_]*)+)(?![\w:])", text)
        named += re.findall(
            r"(?<![:\w])([a-z_][a-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)+)(?![\w:])", text)
        for p in named:
            # `mod.rs` / `lib.rs` files are their module; a file `a/b.rs` is module (a, b)
            target = resolve(mod, p, files)
            if target is not None and target != mod:
                edges[mod].add(target)
    return files, edges


def sccs(edges: dict) -> list[list]:
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in edges:
        if v not in index:
            visit(v)
    return [c for c in out if len(c) > 1]


def main() -> int:
    dirs = [Path(a).resolve() for a in sys.argv[1:]] or sorted(REPO.glob("crates/*/src")) + [REPO / "src"]
    found = 0
    for src in dirs:
        files, edges = edges_of(src)
        for comp in sccs(edges):
            found += 1
            names = sorted(str(files[m].relative_to(REPO)) for m in comp)
            print(f"circle ({len(comp)} files): " + ", ".join(names))
            for m in sorted(comp):
                for t in sorted(edges[m] & set(comp)):
                    print(f"    {files[m].relative_to(REPO)} -> {files[t].relative_to(REPO)}")
    print(f"{found} circle(s)")
    return min(found, 100)


if __name__ == "__main__":
    sys.exit(main())
