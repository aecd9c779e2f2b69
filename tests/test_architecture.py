"""The package's layering, read from the code: no import circle (counting imports inside functions too),
no module importing a layer above its own, one module per name. docs/architecture.md draws the same table.

A failure names the circle or the offending import, so a change that adds one fails CI.
"""
from __future__ import annotations

import ast
import collections
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "legalir"

#: bottom to top: a module may import its own layer and the layers below it, never one above
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundation", ("legalir.errors", "legalir.checks", "legalir.log", "legalir.version", "legalir.atomic", "legalir.jvm",
                    "legalir.numeric", "legalir.models", "legalir._plain")),
    ("formats", ("legalir.trec", "legalir.runformats")),
    ("legal structure", ("legalir.citations", "legalir.filters")),
    ("datasets and collections", ("legalir.datasets", "legalir.collections", "legalir.download",
                                  "legalir.chunking", "legalir.generate")),
    ("index", ("legalir.indexing",)),
    ("search and scoring", ("legalir.search", "legalir.scoring", "legalir.report", "legalir.finetune", "legalir.train_dense",
                            "legalir.qa", "legalir.regress")),
    ("public API", ("legalir.api", "legalir")),
    ("analyses on the public API", ("legalir.analyze",)),
    ("faces", ("legalir.cli", "legalir.commands", "legalir.serve", "legalir.pt", "legalir.irds")),
]


def modules() -> dict[str, Path]:
    """``{module name: file}``, compiled extension modules (``legalir/_plain.c``) included."""
    out = {}
    for p in sorted(PKG.rglob("*.c")):
        out[".".join(p.relative_to(PKG.parent).with_suffix("").parts)] = p
    for p in sorted(PKG.rglob("*.py")):
        parts = list(p.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def graph() -> dict[str, set[str]]:
    """``{module: modules it imports}`` over every import statement, at module top or inside a function."""
    mods = modules()

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = collections.defaultdict(set)
    for m, path in mods.items():
        if path.suffix != ".py":
            continue
        package = m if path.name == "__init__.py" else m.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([base] if base else []))
                # `from legalir.x import y`: the module legalir.x.y when there is one, else legalir.x
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for t in targets:
                r = resolve(t) if t.startswith("legalir") else None
                if r and r != m:
                    edges[m].add(r)
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out = []
    counter = 0
    for root in sorted(set(edges) | {t for ts in edges.values() for t in ts}):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def layer_of(module: str) -> int:
    best, level = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, level = len(p), i
    if level is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS here and to docs/architecture.md")
    return level


def test_no_import_circle():
    found = circles(graph())
    assert not found, "import circles (each a set of modules that import one another):\n" + "\n".join(
        " <-> ".join(c) for c in found)


def test_no_module_imports_a_layer_above_its_own():
    edges = graph()
    wrong = []
    for m, targets in sorted(edges.items()):
        for t in sorted(targets):
            if t == "legalir":
                continue
            if layer_of(t) > layer_of(m):
                wrong.append(f"{m} ({LAYERS[layer_of(m)][0]}) imports {t} ({LAYERS[layer_of(t)][0]})")
    assert not wrong, "imports against the layering:\n" + "\n".join(wrong)


def _imports(only_top: bool):
    """``{module: {imported module}}`` from the statements at module top (``only_top``: what loading the
    module loads), or ``{(module, line): {imported module}}`` of the imports inside functions."""
    mods = modules()

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    out: dict = collections.defaultdict(set)
    for m, path in mods.items():
        if path.suffix != ".py":
            continue
        package = m if path.name == "__init__.py" else m.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        funcs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        inside = {id(x) for f in funcs for x in ast.walk(f) if x is not f}
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)) or (id(node) in inside) == only_top:
                continue
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([base] if base else []))
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            found = {resolve(n) for n in names if n.startswith("legalir")} - {None}
            if found:
                out[m if only_top else (m, node.lineno)] |= found
    return out


def test_lazy_imports_only_where_they_save_start_up():
    """A legalir import inside a function is allowed only where the module does not already load that
    module at import time (then it is lazy for start-up's sake: docs/architecture.md, "Lazy imports");
    one that costs nothing belongs at the module top."""
    top = _imports(True)

    def loaded(m: str) -> set[str]:
        seen, stack = set(), [m]
        while stack:
            v = stack.pop()
            parts = v.split(".")
            for w in list(top.get(v, ())) + [".".join(parts[:i]) for i in range(1, len(parts))]:
                if w not in seen:
                    seen.add(w)
                    stack.append(w)
        return seen

    free = sorted(f"{m}:{line} imports {', '.join(sorted(t))}" for (m, line), t in _imports(False).items()
                  if t <= loaded(m) | {m})
    assert not free, "imports inside functions of modules the module already loads (move them to the top):\n" + \
        "\n".join(free)


def test_one_module_per_name():
    names = collections.Counter(p.stem for p in PKG.rglob("*.py") if p.stem != "__init__")
    assert not [n for n, c in names.items() if c > 1], {n: c for n, c in names.items() if c > 1}


def test_the_checks_have_teeth():
    """The circle finder finds a circle, and the layer check refuses an upward import."""
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert layer_of("legalir.serve.app") > layer_of("legalir.search.searcher") > layer_of("legalir.trec.runs")
    with pytest.raises(AssertionError, match="in no layer"):
        layer_of("elsewhere.module")
