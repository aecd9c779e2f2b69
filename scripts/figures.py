#!/usr/bin/env python3
"""Documented figures, regenerated, not typed.

A figure in README.md or docs/*.md that a script measures sits between two marker comments::

    <!-- figures: NAME VIEW -->
    ...written by this script, never by hand...
    <!-- /figures -->

``NAME`` is a results file ``docs/figures/NAME.json`` (several, comma-separated, for one table of several
results), written by the benchmark that measured it, with the command that ran and the raw values;
``VIEW`` says how those values are shown (a table's rows, one cell inline). The block's text is rendered
from the file: ``write`` rewrites every block, ``check`` names every block that differs (a hand edit, or a
results file rewritten by a new run and the docs not written). ``make docs-figures`` reruns the
benchmarks (``make demo``, ``scripts/bench_statutes.sh`` with ``FIGURES=``) and then ``write``s.

    python scripts/figures.py write                 # rewrite every marked block from docs/figures/*.json
    python scripts/figures.py check                 # exit 1, naming each stale block
    python scripts/figures.py text NAME --from FILE --command CMD      # a program's output as a figure
    python scripts/figures.py statutes RUNS --state nc --release 81 --topics 212 --systems "bm25-citoff ..."
        [--out docs/figures/statutes-nc81.json --command CMD]   # print bench_statutes.sh's table, save results

tests/test_figures.py checks that every block is its results file rendered, and reruns the benchmarks it
can (the ACORD demo, North Carolina r81 BM25) against the results files.
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIGURES = REPO / "docs" / "figures"
OPEN, CLOSE = "<!-- figures: ", "<!-- /figures -->"

#: trec_eval measures the statute benchmark scores, in the tables' order
MEASURES = ("success_1", "recip_rank", "recall_10", "recall_100", "ndcg_cut_10")
#: bench_statutes.sh's systems, as the tables name them (full name, then short name in later rows)
SYSTEMS = {"bm25-citoff": ("BM25, citations off", "BM25, citations off"),
           "bm25-citon": ("BM25, citations on", "BM25, citations on"),
           "minilm": ("MiniLM (bundled, 256 tokens)", "MiniLM"),
           "hybrid": ("BM25 + MiniLM, linear fusion tuned on train+valid ({fusion})", "BM25 + MiniLM ({weights})")}
VARIANTS = {"test": "xref", "test.masked": "xref.masked"}


class FigureError(Exception):
    """A marker that cannot be read, or a results file or view that does not exist."""


# ---------------------------------------------------------------- results files

def load(name: str) -> dict:
    path = FIGURES / f"{name}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FigureError(f"{path}: no such results file (its benchmark writes it: see its 'command')") from None
    except json.JSONDecodeError as e:
        raise FigureError(f"{path}:{e.lineno}: not JSON ({e.msg})") from None


def save(path: str | Path, data: dict) -> None:
    from legalir.base import atomic

    atomic.write_json(path, data)


def stamp(command: str) -> dict:
    return {"command": command, "measured": datetime.date.today().isoformat()}


# ---------------------------------------------------------------- views: results -> markdown

def _f3(x: float) -> str:
    return f"{x:.3f}"


def _best(results: dict, systems: list[str]) -> set[str]:
    """The systems of the highest hit@1 (then MRR) in one variant: shown in bold."""
    top = max((results[s]["success_1"], results[s]["recip_rank"]) for s in systems)
    return {s for s in systems if (results[s]["success_1"], results[s]["recip_rank"]) == top}


def _code(data: dict) -> str:
    return f"{data['code']} r{data['release']}"


def _statutes_summary(datas: list[dict]) -> str:
    """README's table: one row per code and variant, hit@1 / MRR of each system."""
    systems = list(SYSTEMS)
    lines = ["| code | variant | BM25, citations off | BM25, citations on | MiniLM | BM25 (off) + MiniLM |",
             "|---|---|---|---|---|---|"]
    for data in datas:
        for set_, variant in VARIANTS.items():
            res = data["results"][set_]
            best = _best(res, [s for s in systems if s in res])
            cells = []
            for s in systems:
                if s not in res:
                    cells.append("–")
                    continue
                cell = f"{_f3(res[s]['success_1'])} / {_f3(res[s]['recip_rank'])}"
                cells.append(f"**{cell}**" if s in best else cell)
            lines.append(f"| {_code(data)} ({data['topics'][set_]} topics) | {variant} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _statutes_table(datas: list[dict]) -> str:
    """docs/statutes.md's table: every system of every variant, all five measures."""
    lines = ["| code | variant | system | topics | hit@1 | MRR | R@10 | R@100 | nDCG@10 |",
             "|---|---|---|---|---|---|---|---|---|"]
    for data in datas:
        first, named = True, set()
        fusion = data.get("fusion", {})
        for set_, variant in VARIANTS.items():
            res = data["results"][set_]
            best = _best(res, list(res))
            for s in SYSTEMS:
                if s not in res:
                    continue
                long, short = SYSTEMS[s]
                name = short if s in named else long
                if s == "hybrid":  # its tuned settings, read (never made up) from the results file
                    name = name.format(fusion=fusion["text"], weights=fusion["weights"])
                named.add(s)
                v = [_f3(res[s][m]) for m in MEASURES]
                if s in best:
                    v[0], v[1] = f"**{v[0]}**", f"**{v[1]}**"
                code = f"| {_code(data)} |" if first else "| |"
                first = False
                lines.append(f"{code} {variant} | {name} | {data['topics'][set_]} | " + " | ".join(v) + " |")
    return "\n".join(lines) + "\n"


def _statutes_cell(system: str, set_: str, measure: str):
    def view(datas: list[dict]) -> str:
        (data,) = datas
        return _f3(data["results"][set_][system][measure])
    return view


def _statutes_boost(datas: list[dict]) -> str:
    """Inline: hit@1 without -> with the citation boost, as written."""
    (data,) = datas
    res = data["results"]["test"]
    return f"{_f3(res['bm25-citoff']['success_1'])} -> {_f3(res['bm25-citon']['success_1'])}"


def _text_block(datas: list[dict]) -> str:
    (data,) = datas
    return "```\n" + data["text"] + "```\n"


#: kind -> view -> (renderer, block?): a block view's text sits on lines of its own between the markers
VIEWS = {
    "text": {"block": (_text_block, True)},
    "statutes": {"summary": (_statutes_summary, True), "table": (_statutes_table, True),
                 "boost": (_statutes_boost, False),
                 "hit1-on": (_statutes_cell("bm25-citon", "test", "success_1"), False),
                 "mrr-on": (_statutes_cell("bm25-citon", "test", "recip_rank"), False)},
}


def render(spec: str) -> str:
    """The text of the block whose opening marker holds ``spec`` (``NAME[,NAME...] VIEW``)."""
    parts = spec.split()
    if len(parts) != 2:
        raise FigureError(f"a marker names its results file(s) and a view: '<!-- figures: NAME VIEW -->', got {spec!r}")
    names, view = parts[0].split(","), parts[1]
    datas = [load(n) for n in names]
    kinds = {d.get("kind") for d in datas}
    if len(kinds) != 1 or (kind := kinds.pop()) not in VIEWS:
        raise FigureError(f"{spec!r}: results of kind(s) {sorted(map(str, kinds))}; known: {sorted(VIEWS)}")
    if view not in VIEWS[kind]:
        raise FigureError(f"{spec!r}: no view {view!r} of {kind} results; known: {sorted(VIEWS[kind])}")
    fn, block = VIEWS[kind][view]
    try:
        text = fn(datas)
    except KeyError as e:  # a results file without a value the view shows: never a default
        raise FigureError(f"{spec!r}: no {e} in {', '.join(str(FIGURES / f'{n}.json') for n in names)} "
                          f"(rerun the benchmark of its 'command')") from None
    return "\n" + text if block else text


# ---------------------------------------------------------------- the markdown files

def documents() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def blocks(text: str, where: str = "") -> list[tuple[int, int, str, int]]:
    """Each marked block of ``text``: (start, end) of the text between its markers, its spec, its line."""
    found, pos = [], 0
    while (i := text.find(OPEN, pos)) >= 0:
        line = text.count("\n", 0, i) + 1
        j = text.find("-->", i + len(OPEN))
        if j < 0:
            raise FigureError(f"{where}:{line}: a figures marker is not closed with '-->'")
        spec, start = text[i + len(OPEN):j].strip(), j + 3
        end = text.find(CLOSE, start)
        if end < 0:
            raise FigureError(f"{where}:{line}: no '{CLOSE}' after this block")
        nested = text.find(OPEN, start, end)
        if nested >= 0:
            raise FigureError(f"{where}:{line}: a block opens before '{CLOSE}' closes this one")
        found.append((start, end, spec, line))
        pos = end + len(CLOSE)
    return found


def regenerate(path: Path) -> tuple[str, list[str]]:
    """``path``'s text with every block rendered afresh, and the blocks that changed (``file:line: spec``)."""
    text = path.read_text(encoding="utf-8")
    out, last, stale = [], 0, []
    for start, end, spec, line in blocks(text, str(path)):
        try:
            new = render(spec)
        except FigureError as e:
            raise FigureError(f"{path}:{line}: {e}") from None
        if text[start:end] != new:
            shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path
            stale.append(f"{shown}:{line}: {spec}")
        out += [text[last:start], new]
        last = end
    out.append(text[last:])
    return "".join(out), stale


def check() -> list[str]:
    return [s for p in documents() for s in regenerate(p)[1]]


def write() -> list[str]:
    from legalir.base import atomic

    done = [(p, *regenerate(p)) for p in documents()]  # every block rendered before any file is written
    for p, text, stale in done:
        if stale:
            atomic.write_text(p, text)
    return [s for *_, stale in done for s in stale]


# ---------------------------------------------------------------- writers the benchmarks call

def statutes(runs: Path, state: str, release: str, topics: int, systems: list[str]) -> dict:
    """bench_statutes.sh's results: ``runs/eval.SYSTEM.SET.json`` (``legalir eval --json``) of each system on
    the test topics as written and masked, and the fusion's tuned settings (``runs/hybrid.tuning.json``)."""
    from legalir.datasets.statutes import STATES

    results: dict = {}
    for set_ in VARIANTS:
        for s in systems:
            path = runs / f"eval.{s}.{set_}.json"
            values = json.loads(path.read_text(encoding="utf-8"))["all"]
            missing = [m for m in MEASURES if m not in values]
            if missing:
                raise FigureError(f"{path}: no {', '.join(missing)} in its 'all' row")
            results.setdefault(set_, {})[s] = {m: values[m] for m in MEASURES}
    data = {"kind": "statutes", "state": state, "release": str(release), "code": STATES[state].name,
            "topics": {set_: topics for set_ in VARIANTS}, "results": results}
    tuning = runs / "hybrid.tuning.json"
    if "hybrid" in systems:
        data["fusion"] = _fusion(json.loads(tuning.read_text(encoding="utf-8")), tuning)
    return data


def _fusion(tuning: dict, path: Path) -> dict:
    """The tuned fusion as the table writes it: ``0.7/0.3, min-max``."""
    best = tuning.get("best")
    if not isinstance(best, dict) or "weights" not in best:
        raise FigureError(f"{path}: no 'best' settings with 'weights' (a `legalir tune-fusion` result?)")
    weights = "/".join(f"{w:g}" for w in best["weights"])
    norm = {"minmax": "min-max", "zscore": "z-score"}.get(best.get("norm"), str(best.get("norm")))
    method = best.get("method", "linear")
    return {"weights": weights, "text": f"{weights}, {norm}" if method == "linear" else f"{method}, {weights}",
            "best": best}


def _statutes_rows(data: dict) -> str:
    """The rows bench_statutes.sh has always printed."""
    lines = [f"| {data['state']} r{data['release']} | system | topics | hit@1 | MRR | R@10 | R@100 | nDCG@10 |"]
    for set_, res in data["results"].items():
        for s, v in res.items():
            lines.append(f"| {set_} | {s} | {data['topics'][set_]} | " + " | ".join(_f3(v[m]) for m in MEASURES) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("write", help="rewrite every marked block from docs/figures/*.json")
    sub.add_parser("check", help="exit 1 naming each block that differs from its results file")
    t = sub.add_parser("text", help="save a program's output (a file) as the results file NAME")
    t.add_argument("name")
    t.add_argument("--from", dest="source", required=True, type=Path)
    t.add_argument("--command", required=True)
    s = sub.add_parser("statutes", help="bench_statutes.sh's table from its eval files; --out saves the results")
    s.add_argument("runs", type=Path)
    s.add_argument("--state", required=True)
    s.add_argument("--release", required=True)
    s.add_argument("--topics", required=True, type=int)
    s.add_argument("--systems", required=True, help="space-separated, as bench_statutes.sh names them")
    s.add_argument("--out", type=Path, default=None)
    s.add_argument("--command", default="")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "check":
            stale = check()
            for line in stale:
                print(f"{line}: differs from its results file (python scripts/figures.py write)", file=sys.stderr)
            return 1 if stale else 0
        if a.cmd == "write":
            for line in write():
                print(f"{line}: rewritten", file=sys.stderr)
            return 0
        if a.cmd == "text":
            save(FIGURES / f"{a.name}.json", {"kind": "text", **stamp(a.command),
                                              "text": a.source.read_text(encoding="utf-8")})
            return 0
        data = statutes(a.runs, a.state, a.release, a.topics, a.systems.split())
        print(_statutes_rows(data))
        if a.out:
            save(a.out, {**data, **stamp(a.command)})
        return 0
    except (FigureError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
