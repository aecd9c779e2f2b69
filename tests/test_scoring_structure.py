"""Structural checks of the scoring layer's "one place" rules, on the code's syntax trees (not on text).

Each rule has one home; each check walks every module of ``legalir/`` (or ``legalir/scoring/``) and
fails on a second copy, and each is shown failing on a snippet that writes one:

* the judged-only rule (a grade >= 0 is judged) is written in ``scoring/judged.py`` only;
* judged-only, ``-M`` and the ranking are applied in ``scoring/prepare.py`` only (elsewhere the flags
  are only passed on, as call arguments);
* one way into pytrec_eval: ``scoring/pytrec.py`` imports it, builds its evaluator once, never with
  its own ``-J``, and ``pytrec.compute`` has one caller;
* one evaluate path: ``legalir.evaluate`` -> ``core.score`` -> ``evaluate_batches`` -> ``_values``;
* families are found, not named: no code compares a measure's name with a literal to choose what to do.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
from helpers import parsed, walked

ROOT = Path(__file__).resolve().parents[1]
LEGALIR = ROOT / "legalir"
SCORING = LEGALIR / "scoring"


def _modules(folder: Path) -> list[tuple[str, ast.Module]]:
    return [(str(p.relative_to(ROOT)), parsed(p)) for p in sorted(folder.rglob("*.py"))]


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in walked(tree) for child in ast.iter_child_nodes(node)}


# ---------------------------------------------------------------- the judged-only rule

def _is_minus_one(node: ast.AST) -> bool:
    return (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant)
            and node.operand.value == 1)


def _grade_lookup(node: ast.AST) -> bool:
    """``j.get(d, -1)``, ``j.get(d)`` or ``j[d]``: a document's grade read from a topic's judgements."""
    if isinstance(node, ast.Subscript):
        return True
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"


def judged_rules(tree: ast.AST) -> list[int]:
    """Lines that decide judged-ness: a grade lookup compared with 0 (``>= 0``, ``< 0``) or -1 (``> -1``)."""
    lines = []
    for node in walked(tree):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and _grade_lookup(node.left):
            op, right = node.ops[0], node.comparators[0]
            zero = isinstance(right, ast.Constant) and right.value == 0 and isinstance(op, (ast.GtE, ast.Lt))
            minus = _is_minus_one(right) and isinstance(op, (ast.Gt, ast.LtE))
            if zero or minus:
                lines.append(node.lineno)
    return lines


def test_judged_rule_is_written_once():
    """Only legalir/scoring/judged.py decides what is judged (grade >= 0); serve's engine once counted a
    negative grade as judged."""
    from legalir.scoring.judged import drop_unjudged, is_judged

    assert not is_judged("a", {"a": -1}) and is_judged("a", {"a": 0}) and not is_judged("b", {"a": 2})
    assert drop_unjudged({"a": 1.0, "b": 2.0, "c": 0.5}, {"a": 0, "b": -1}) == {"a": 1.0}
    copies = [f"{path}:{n}" for path, tree in _modules(LEGALIR) if not path.endswith("scoring/judged.py")
              for n in judged_rules(tree)]
    assert not copies, f"a second judged-only rule (use legalir.scoring.judged.is_judged): {copies}"
    for second in ("kept = [d for d in docs if j.get(d, -1) >= 0]", "ok = judgements[d] > -1",
                   "if qrels[q].get(d) < 0: continue"):
        assert judged_rules(ast.parse(second)), second


# ---------------------------------------------------------------- -M, judged-only and ranking: one pass

FLAGS = ("judged_only", "max_docs", "judged")


def flag_uses(tree: ast.AST) -> list[str]:
    """Reads of -J/-M flags that do more than pass them on as a call argument."""
    parents = _parents(tree)
    out = []
    for node in walked(tree):
        if isinstance(node, ast.Name) and node.id in FLAGS and isinstance(node.ctx, ast.Load):
            parent = parents[node]
            if isinstance(parent, ast.keyword) or (isinstance(parent, ast.Call) and node in parent.args):
                continue
            out.append(f"{node.lineno}: {ast.unparse(parent)[:80]}")
    return out


def _calls(tree: ast.AST, name: str) -> list[ast.Call]:
    return [n for n in walked(tree) if isinstance(n, ast.Call) and (
        isinstance(n.func, ast.Name) and n.func.id == name
        or isinstance(n.func, ast.Attribute) and n.func.attr == name)]


def run_orderings(tree: ast.AST) -> list[int]:
    """Lines that rank documents: trec.ranking, or a sort by descending key (reverse=True or a negated key)."""
    lines = [c.lineno for c in _calls(tree, "ranking")]
    for call in _calls(tree, "sorted") + _calls(tree, "sort"):
        reverse = any(k.arg == "reverse" and not (isinstance(k.value, ast.Constant) and k.value.value is False)
                      for k in call.keywords)
        negated = any(k.arg == "key" and any(isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub)
                                             for n in walked(k.value)) for k in call.keywords)
        if reverse or negated:
            lines.append(call.lineno)
    return lines


#: the ideal ranking of ir_measures' Compat orders the qrels' relevant documents (grade, then run score),
#: not the run: its family's own definition
IDEAL_RANKING = "legalir/scoring/measures/ir_compat.py"


def test_judged_only_max_docs_and_ranking_are_applied_in_one_place():
    """-M, judged-only and the ranking are applied by legalir/scoring/prepare.py (trec_eval's form_res_rels,
    once); every other scoring module only passes the flags on, and no other module ranks a run."""
    others = [(path, tree) for path, tree in _modules(SCORING) if not path.endswith("scoring/prepare.py")]
    applied = [f"{path}:{use}" for path, tree in others for use in flag_uses(tree)]
    assert not applied, f"-J/-M applied outside legalir/scoring/prepare.py: {applied}"
    dropped = [f"{path}:{c.lineno}" for path, tree in others if not path.endswith("scoring/judged.py")
               for name in ("drop_unjudged", "is_judged") for c in _calls(tree, name)]
    assert not dropped, f"unjudged documents dropped outside legalir/scoring/prepare.py: {dropped}"
    ranked = [f"{path}:{n}" for path, tree in others if path != IDEAL_RANKING for n in run_orderings(tree)]
    assert not ranked, f"a run ranked outside legalir/scoring/prepare.py: {ranked}"
    topics = dict(_modules(SCORING))["legalir/scoring/prepare.py"]
    assert flag_uses(topics) and run_orderings(topics) and _calls(topics, "drop_unjudged")  # found where they are
    for second in ("def f(run, max_docs):\n    return {t: d[:max_docs] for t, d in run.items()}",
                   "def f(docs, judged_only):\n    if judged_only:\n        docs = {}",
                   "ranked = sorted(docs.items(), key=lambda x: (-x[1], x[0]))",
                   "order = sorted(zip(docs.values(), docs), reverse=True)"):
        tree = ast.parse(second)
        assert flag_uses(tree) or run_orderings(tree), second


# ---------------------------------------------------------------- one way into pytrec_eval

def _imports(tree: ast.AST) -> set[str]:
    out = set()
    for node in walked(tree):
        if isinstance(node, ast.Import):
            out.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module.split(".")[0])
    return out


def test_one_way_into_pytrec_eval():
    importers = [path for path, tree in _modules(LEGALIR) if _imports(tree) & {"pytrec_eval", "pytrec_eval_ext"}]
    assert importers == ["legalir/scoring/pytrec.py"], importers
    pytrec = dict(_modules(SCORING))["legalir/scoring/pytrec.py"]
    (evaluator,) = _calls(pytrec, "RelevanceEvaluator")
    flag = {k.arg: k.value for k in evaluator.keywords}["judged_docs_only_flag"]
    assert isinstance(flag, ast.Constant) and flag.value is False, "pytrec_eval's own -J: prepare.py applies it"
    callers = [f"{path}:{c.lineno}" for path, tree in _modules(LEGALIR) for c in _calls(tree, "compute")
               if isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name) and c.func.value.id == "pytrec"]
    assert callers == ["legalir/scoring/evaluator.py:" + callers[0].rpartition(":")[2]] and len(callers) == 1, callers


def test_one_evaluate_path():
    """legalir.evaluate -> core.score -> evaluate_batches (a run file: files.evaluate_files first) -> its
    _Scorer.score -> _values, the one caller of pytrec_eval and of the families' compute."""
    mods = dict(_modules(LEGALIR))
    api = next(n for n in walked(mods["legalir/api.py"]) if isinstance(n, ast.FunctionDef) and n.name == "evaluate")
    assert [ast.unparse(c.func) for c in _calls(api, "score")] == ["core.score"]
    core = mods["legalir/scoring/core.py"]
    assert not [n for n in core.body if isinstance(n, ast.FunctionDef) and n.name == "evaluate"], \
        "a second evaluate wrapper in scoring/core.py"
    score = next(n for n in core.body if isinstance(n, ast.FunctionDef) and n.name == "score")
    assert {ast.unparse(c.func) for c in walked(score) if isinstance(c, ast.Call)} >= {"evaluate_batches",
                                                                                     "evaluate_files"}
    # every function and method of the package (a method as Class.name) that calls _values
    functions = [(path, f"{cls.name}." if cls else "", fn) for path, tree in mods.items()
                 if path.startswith("legalir/scoring/") for node in tree.body
                 for cls, fn in ([(None, node)] if isinstance(node, ast.FunctionDef) else
                                 [(node, m) for m in node.body if isinstance(m, ast.FunctionDef)]
                                 if isinstance(node, ast.ClassDef) else [])]
    values_callers = [f"{path}:{owner}{fn.name}" for path, owner, fn in functions for c in walked(fn)
                      if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == "_values"]
    assert values_callers == ["legalir/scoring/evaluator.py:_Scorer.score"], values_callers
    batches = next(fn for path, owner, fn in functions
                   if path == "legalir/scoring/evaluator.py" and not owner and fn.name == "evaluate_batches")
    assert "_Scorer" in {ast.unparse(c.func) for c in walked(batches) if isinstance(c, ast.Call)}
    init = mods["legalir/scoring/__init__.py"]
    assert not [n for n in init.body if isinstance(n, ast.FunctionDef)], "functions defined in scoring/__init__.py"


# ---------------------------------------------------------------- families are found, not named

def name_chains(tree: ast.AST) -> list[str]:
    """``m.name == "relstring"``, ``fam.name in ("rbp", ...)``, ``m.name.startswith("unj")``: code that
    picks what to do by a family's name."""
    out = []
    for node in walked(tree):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute) and node.left.attr == "name":
            if any(isinstance(n, ast.Constant) and isinstance(n.value, str) for c in node.comparators
                   for n in walked(c)):
                out.append(f"{node.lineno}: {ast.unparse(node)[:80]}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "startswith", "endswith") and isinstance(node.func.value, ast.Attribute) \
                and node.func.value.attr == "name":
            out.append(f"{node.lineno}: {ast.unparse(node)[:80]}")
    return out


def test_measure_families_are_found_not_named():
    chains = [f"{path}:{c}" for path, tree in _modules(SCORING) for c in name_chains(tree)]
    assert not chains, f"a family chosen by its name (declare it in its module instead): {chains}"
    assert name_chains(ast.parse('if m.name == "relstring": pass')) and \
        name_chains(ast.parse('x = fam.name.startswith("rbp")'))
    from legalir.scoring import measures

    modules = {p.stem for p in (SCORING / "measures").glob("*.py")} - {"__init__", "base"}
    found = {f.compute.__module__.rsplit(".", 1)[-1] for f in measures.FAMILIES.values() if f.compute}
    declaring = {m for m in modules if hasattr(__import__(f"legalir.scoring.measures.{m}", fromlist=["x"]),
                                                  "FAMILIES") or hasattr(__import__(
        f"legalir.scoring.measures.{m}", fromlist=["x"]), "IR_FAMILIES")}
    assert declaring == modules, modules - declaring  # every module of the package declares families
    assert {"trec10", "relstring", "recall_all", "recip_rank_cut"} <= found
    assert measures.family("star3_P") is not None and "Compat" in measures.IR_FAMILIES


@pytest.mark.parametrize("module", ["trec_eval", "ir_measures"])
def test_a_family_declared_twice_stops_the_import(module, monkeypatch):
    from legalir.scoring import measures

    real = measures._modules()
    twice = [m for m in real if m.__name__.endswith("." + module)] * 2 + real
    monkeypatch.setattr(measures, "_modules", lambda: twice)
    with pytest.raises(RuntimeError, match="declared twice"):
        measures._discover()
