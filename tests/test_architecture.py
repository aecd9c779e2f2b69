"""The package's layering, read from the code: no import circle (counting imports inside functions too),
no module importing a layer above its own, one module per name. docs/architecture.md draws the same table.

A failure names the circle or the offending import, so a change that adds one fails CI.
"""
from __future__ import annotations

import ast
import collections
import textwrap
from pathlib import Path

import pytest
from helpers import parsed, walked

PKG = Path(__file__).resolve().parent.parent / "legalir"

#: bottom to top: a module may import its own layer and the layers below it, never one above
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundation", ("legalir.errors", "legalir.version", "legalir._plain", "legalir.base")),
    ("formats", ("legalir.trec",)),
    ("legal structure", ("legalir.legal",)),
    ("datasets and collections", ("legalir.datasets", "legalir.collections")),
    ("index", ("legalir.indexing",)),
    ("search and scoring", ("legalir.search", "legalir.scoring", "legalir.report")),
    ("public API", ("legalir.api", "legalir")),
    ("analyses on the public API", ("legalir.analyze",)),
    ("faces", ("legalir.cli", "legalir.commands", "legalir.serve", "legalir.pt", "legalir.irds")),
]

#: the top level of legalir/ (docs/architecture.md, "The top level"): the package's entry points (the API, the
#: command line, the PyTerrier and ir_datasets faces, each imported by that name), the one error type every
#: layer raises, the version, and the compiled helper; every other module lives in the package of its layer
TOP_LEVEL = {"__init__", "api", "cli", "errors", "version", "pt", "irds", "_plain"}


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
        for node in walked(parsed(path)):
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
        tree = parsed(path)
        funcs = [n for n in walked(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        inside = {id(x) for f in funcs for x in walked(f) if x is not f}
        for node in walked(tree):
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


# ------------------------------------------------------------------ one of each (issue 38): read from the AST
def _trees() -> dict[str, ast.Module]:
    return {m: parsed(p) for m, p in modules().items() if p.suffix == ".py"}


def _functions(tree: ast.AST):
    return [n for n in walked(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _called(node: ast.Call) -> str:
    """The name a call calls: ``f`` for ``f(...)``, ``m.f(...)``, ``a.b.f(...)``."""
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in walked(node) if isinstance(n, ast.Name)} | \
        {n.attr for n in walked(node) if isinstance(n, ast.Attribute)}


def routers(trees: dict[str, ast.Module]) -> list[str]:
    """Where topics are routed to partitions: a class named ``*Partitioned*`` or ``*Router*``, or a loop that
    keys topics by :func:`legalir.legal.filters.partition_key` into groups (``setdefault``)."""
    found = []
    for m, tree in trees.items():
        for n in walked(tree):
            if isinstance(n, ast.ClassDef) and ("Partitioned" in n.name or "Router" in n.name):
                found.append(f"{m}.{n.name}")
            elif isinstance(n, ast.For) and "partition_key" in _names(n) and "setdefault" in _names(n):
                found.append(f"{m}:{n.lineno}")
    return found


def rrf_sums(trees: dict[str, ast.Module]) -> list[str]:
    """Where a reciprocal rank is computed: ``x / (k + rank)`` (a division by a sum of a rank and a constant
    that is a name, not a literal: ``p * m / (rank + 1)`` is Benjamini-Hochberg's step, not RRF)."""
    return [f"{m}:{n.lineno}" for m, tree in trees.items() for n in walked(tree)
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div) and isinstance(n.right, ast.BinOp)
            and isinstance(n.right.op, ast.Add) and any("rank" in x for x in _names(n.right))
            and not any(isinstance(side, ast.Constant) for side in (n.right.left, n.right.right))]


def hybrid_rules(trees: dict[str, ast.Module]) -> list[str]:
    """Where a hybrid search is put together: a call of ``fusion.hybrid`` / ``hybrid_depth``, a read of
    ``HYBRID_DEPTH``, and any parameter ``rrf_k`` or ``depth`` of a function named ``*hybrid*`` with a number
    of its own as default (RRF's k and a leg depth come from :mod:`legalir.search.fusion`)."""
    found = []
    for m, tree in trees.items():
        for n in walked(tree):
            if isinstance(n, ast.Call) and _called(n) in ("hybrid_depth",) or (
                    isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "hybrid"
                    and isinstance(n.func.value, ast.Name) and n.func.value.id == "fusion"):
                found.append(f"{m}:{n.lineno} calls {_called(n)}")
            elif isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, ast.Load) and \
                    (n.id if isinstance(n, ast.Name) else n.attr) == "HYBRID_DEPTH":
                found.append(f"{m}:{n.lineno} reads HYBRID_DEPTH")
        for f in _functions(tree):
            args = f.args.args + f.args.kwonlyargs
            defaults = dict(zip([a.arg for a in f.args.args][::-1], f.args.defaults[::-1]))
            defaults.update({a.arg: d for a, d in zip(f.args.kwonlyargs, f.args.kw_defaults) if d is not None})
            for a in args:
                d = defaults.get(a.arg)
                if a.arg in ("rrf_k", "depth") and "hybrid" in f.name.lower() and isinstance(d, ast.Constant) \
                        and isinstance(d.value, (int, float)) and not isinstance(d.value, bool):
                    found.append(f"{m}.{f.name}: {a.arg}={d.value!r}")
    return found


def depth_checks(trees: dict[str, ast.Module]) -> list[str]:
    """Where a search depth ``k`` is checked: a function named ``check_k``/``_check_k``/``check_depth`` outside
    the run writers' depth (:func:`legalir.trec.runs.check_depth`: None for all), a call of
    ``checks.integer``/``integer_or_text`` on a value named ``k``, or a comparison ``k < 1`` (``int(k) < 1``)."""
    found = []
    for m, tree in trees.items():
        # the one check's own body; a function of another name that only calls it is a use, not a copy
        inside = {id(x) for f in _functions(tree) if f.name == "check_k" for x in walked(f)}
        for n in walked(tree):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in ("check_k", "_check_k", "check_depth") \
                    and m != "legalir.trec.runs" and (n.name == "check_k" or "check_k" not in _names(n)):
                found.append(f"{m}.{n.name}")
            elif id(n) in inside:
                continue
            elif isinstance(n, ast.Call) and _called(n) in ("integer", "integer_or_text") and len(n.args) >= 2 \
                    and isinstance(n.args[1], ast.Name) and n.args[1].id == "k":
                found.append(f"{m}:{n.lineno} {_called(n)}(..., k)")
            elif isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], ast.Lt) \
                    and isinstance(n.comparators[0], ast.Constant) and n.comparators[0].value == 1 \
                    and "k" in {x.id for x in walked(n.left) if isinstance(x, ast.Name)}:
                found.append(f"{m}:{n.lineno} k < 1")
    return found


def bm25_defaults(trees: dict[str, ast.Module]) -> list[str]:
    """Where Pyserini's BM25 defaults are written as numbers: 0.9 for k1 or 0.4 for b as a parameter's
    default, a keyword argument, a dict's value, ``.get("k1", 0.9)``, or an assignment to a name of k1/b."""
    def bm25_name(name: str, value: float) -> bool:
        low = name.lower()
        return (value == 0.9 and "k1" in low) or (value == 0.4 and (low == "b" or low.endswith("_b")
                                                                    or low.startswith("b_") or low == "default_b"))

    found = []
    for m, tree in trees.items():
        for n in walked(tree):
            pairs: list[tuple[str, ast.AST]] = []
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                pos = n.args.posonlyargs + n.args.args
                pairs += list(zip([a.arg for a in pos][::-1], n.args.defaults[::-1]))
                pairs += [(a.arg, d) for a, d in zip(n.args.kwonlyargs, n.args.kw_defaults) if d is not None]
            elif isinstance(n, ast.Call):
                pairs += [(kw.arg or "", kw.value) for kw in n.keywords]
                if _called(n) == "get" and len(n.args) == 2 and isinstance(n.args[0], ast.Constant):
                    pairs.append((str(n.args[0].value), n.args[1]))
            elif isinstance(n, ast.Dict):
                pairs += [(str(k.value), v) for k, v in zip(n.keys, n.values) if isinstance(k, ast.Constant)]
            elif isinstance(n, (ast.Assign, ast.AnnAssign)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                pairs += [(t.id, n.value) for t in targets if isinstance(t, ast.Name) and n.value is not None]
            for name, value in pairs:
                if isinstance(value, ast.Constant) and isinstance(value.value, float) and bm25_name(name, value.value):
                    found.append(f"{m}:{value.lineno} {name}={value.value}")
    return found


def partition_key_homes(trees: dict[str, ast.Module]) -> list[str]:
    """Where ``partition_key`` is defined, or reached through a module other than :mod:`legalir.legal.filters`."""
    found = []
    for m, tree in trees.items():
        for n in walked(tree):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "partition_key":
                found.append(f"{m}.partition_key")
            elif isinstance(n, ast.ImportFrom) and any(a.name == "partition_key" for a in n.names) \
                    and n.module != "legalir.legal.filters":
                found.append(f"{m}:{n.lineno} imports it from {n.module}")
            elif isinstance(n, ast.Attribute) and n.attr == "partition_key" and \
                    not (isinstance(n.value, ast.Name) and n.value.id == "filters"):
                found.append(f"{m}:{n.lineno} {ast.unparse(n)}")
            elif isinstance(n, ast.Assign) and isinstance(n.value, ast.Name) and n.value.id == "partition_key":
                found.append(f"{m}:{n.lineno} an alias")
    return found


def test_one_router_one_hybrid_one_depth_check_one_bm25_default_one_partition_key():
    """Each rule docs/architecture.md says lives in one place, found where it is written (not a grep for one
    literal): a second router, hybrid or RRF, depth check, statement of 0.9/0.4 or home of partition_key fails."""
    trees = _trees()
    found = routers(trees)
    assert [r.split(":")[0] for r in found] == ["legalir.search.routing.Router", "legalir.search.routing"], found
    rrf = rrf_sums(trees)
    assert [r.split(":")[0] for r in rrf] == ["legalir.search.fusion"], rrf
    hybrid = hybrid_rules(trees)
    assert [h.split(":")[0] for h in hybrid] == ["legalir.search.fusion", "legalir.search.searcher",
                                                 "legalir.search.searcher"], hybrid
    assert depth_checks(trees) == ["legalir.search.arguments.check_k"]
    assert bm25_defaults(trees) == [] or all(h.startswith("legalir.datasets.dataset:") for h in bm25_defaults(trees))
    assert len(bm25_defaults(trees)) == 2, bm25_defaults(trees)
    assert partition_key_homes(trees) == ["legalir.legal.filters.partition_key"]


def test_the_one_of_each_checks_have_teeth():
    """Each finder finds the second copy the issue found (a router, a hybrid with its own depth and k, an
    inline depth check without the bool guard, the restated defaults, a second home of partition_key)."""
    second = ast.parse('''
class Partitioned:
    def route(self, topics):
        groups = {}
        for q, t in topics.items():
            groups.setdefault(partition_key(t.fields["state"]), {})[q] = t
        return groups

def hybrid(*legs, rrf_k=60, depth=1000):
    return sum(1.0 / (rrf_k + rank) for rank in range(depth))

def search(k):
    if k is None or int(k) < 1:
        raise ValueError(k)
    return checks.integer("k", k, 1, 1000)

def lucene(k1: float = 0.9, b: float = 0.4):
    p = {}
    return p.get("k1", 0.9), p.get("b", 0.4)

from legalir.collections import partition_key
''')
    trees = {"second": second}
    assert sorted(routers(trees)) == ["second.Partitioned", "second:5"]
    assert rrf_sums(trees) == ["second:10"]
    assert sorted(hybrid_rules(trees)) == ["second.hybrid: depth=1000", "second.hybrid: rrf_k=60"]
    assert sorted(depth_checks(trees)) == ["second:13 k < 1", "second:15 integer(..., k)"]
    assert sorted(bm25_defaults(trees)) == ["second:17 b=0.4", "second:17 k1=0.9", "second:19 b=0.4", "second:19 k1=0.9"]
    assert partition_key_homes(trees) == ["second:21 imports it from legalir.collections"]


def test_the_top_level_holds_only_what_docs_architecture_names():
    files = {p.stem.split(".")[0] for p in PKG.iterdir() if p.is_file() and p.suffix in (".py", ".c")}
    assert files == TOP_LEVEL, f"top-level modules not in TOP_LEVEL (move them into their layer's package): " \
                               f"{sorted(files - TOP_LEVEL)}; gone: {sorted(TOP_LEVEL - files)}"
    packages = {p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    layered = {prefix.split(".")[1] for _, prefixes in LAYERS for prefix in prefixes if prefix.count(".") == 1}
    assert packages <= layered, f"packages in no layer: {sorted(packages - layered)}"
    text = (PKG.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert all(f"`{name}`" in text or f"`{name}/`" in text for name in (TOP_LEVEL - {"__init__"}) | packages)


def test_no_import_alias_takes_another_modules_name():
    """``from legalir.search import vector as dense`` reads as the index module; an alias may shorten a name
    (``citations as cite``), never rename a module as another of legalir's."""
    names = {m.rpartition(".")[2] for m in modules()}
    wrong = []
    for m, path in modules().items():
        if path.suffix != ".py":
            continue
        for node in walked(parsed(path)):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and (getattr(node, "module", None) or "legalir").startswith("legalir"):
                for a in node.names:
                    if a.asname and a.asname != a.name.rpartition(".")[2] and a.asname in names:
                        wrong.append(f"{path.relative_to(PKG.parent)}:{node.lineno}: {a.name} as {a.asname}")
    assert not wrong, "imports that rename a module as another module of legalir:\n" + "\n".join(wrong)


# ---------------------------------------------------------------- size: short functions, modules of one job
#: the most lines a function or method of legalir/ may have, from its ``def`` (decorators not counted) to its last
#: line, docstring and comments included: a longer one does several jobs (issue 38 split `collections._write`,
#: `scoring.evaluator.evaluate_batches` and the statutes reader's `read_sections` to get under it)
FUNCTION_LINES = 120
#: the functions still longer, each with its ceiling: it may shrink, never grow; an entry that no longer needs
#: its place fails the test, so the list only shrinks. None: no ceiling while a change under way splits it.
LONG_FUNCTIONS: dict[str, int | None] = {
    # the MCP server: each of its 6 tools is a decorated closure over the engine, registered in it
    "legalir.serve.mcpserver.create": 224,
    # applying a version's changes to a built index; its release handling is being changed now: split after
    "legalir.indexing.update.update": None,
    # the HTML report, one section of the page after the other
    "legalir.report.html.write_report": 156,
    # the bi-encoder's training: argument checks, data, the loop's set-up, selection, the model card
    "legalir.search.train_dense.train": 141,
}
#: the most lines a module of legalir/ may have (the largest, legal/citations.py, 1,086 lines, holds one job:
#: the citation rule table and the extractor that reads it)
MODULE_LINES = 1200


def function_lengths(trees: dict[str, ast.AST]) -> dict[str, int]:
    """``{module.Class.function: lines}`` of every function and method, nested ones included."""
    out: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}.{child.name}"
                out[name] = max(out.get(name, 0), child.end_lineno - child.lineno + 1)
                visit(child, name)
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}.{child.name}")
            else:
                visit(child, prefix)

    for m, tree in trees.items():
        visit(tree, m)
    return out


def too_long(lengths: dict[str, int], bound: int, allowed: dict[str, int | None]) -> list[str]:
    """Functions over ``bound`` not allowed, allowed ones over their ceiling, and allowed ones that are gone or
    no longer over ``bound`` (their entry to remove)."""
    out = [f"{f}: {n} lines > {bound}" for f, n in sorted(lengths.items()) if n > bound and f not in allowed]
    out += [f"{f}: {lengths[f]} lines, more than its ceiling {c}" for f, c in allowed.items()
            if f in lengths and c is not None and lengths[f] > c]
    out += [f"{f}: {lengths.get(f, 'no such function')} lines: remove it from the allowed list"
            for f in allowed if lengths.get(f, 0) <= bound]
    return out


def test_no_function_longer_than_its_bound():
    trees = {m: parsed(p) for m, p in modules().items() if p.suffix == ".py"}
    wrong = too_long(function_lengths(trees), FUNCTION_LINES, LONG_FUNCTIONS)
    assert not wrong, f"functions longer than {FUNCTION_LINES} lines (split them by job):\n" + "\n".join(wrong)


def test_no_module_longer_than_its_bound():
    lengths = {m: len(p.read_text(encoding="utf-8").splitlines()) for m, p in modules().items() if p.suffix == ".py"}
    wrong = [f"{m}: {n} lines" for m, n in sorted(lengths.items()) if n > MODULE_LINES]
    assert not wrong, f"modules longer than {MODULE_LINES} lines (split them by job):\n" + "\n".join(wrong)


def test_the_size_checks_have_teeth():
    """A long function, method or nested function is found; a ceiling binds; a stale entry is named."""
    six = "".join(f"x{i} = {i}\n" for i in range(6))
    tree = ast.parse(f"def f():\n{textwrap.indent(six, '    ')}\n"
                     f"class C:\n    def g(self):\n        def h():\n{textwrap.indent(six, ' ' * 12)}        return h\n\n"
                     f"def short():\n    return 1\n")
    lengths = function_lengths({"m": tree})
    assert lengths == {"m.f": 7, "m.C.g": 9, "m.C.g.h": 7, "m.short": 2}
    assert too_long(lengths, 6, {}) == ["m.C.g: 9 lines > 6", "m.C.g.h: 7 lines > 6", "m.f: 7 lines > 6"]
    assert too_long(lengths, 6, {"m.f": None, "m.C.g": 8, "m.C.g.h": 7, "m.short": 2, "m.gone": 9}) == [
        "m.C.g: 9 lines, more than its ceiling 8", "m.short: 2 lines: remove it from the allowed list",
        "m.gone: no such function lines: remove it from the allowed list"]
