"""Reproducible expectations (Pyserini's "two-click reproductions"): `legalir regress DATASET`.

A data file per dataset, ``legalir/resources/regressions/<dataset>.toml``, lists shared ``steps`` and
``pipelines``; each pipeline has its own steps (legalir commands, as typed after ``legalir``), the run they
produce, the qrels, its ``expected`` scores and optionally the ``paper``'s. Steps run in order, in process,
under ``root`` (paths are the Makefile's, so `make` and `regress` share outputs); a step is skipped when
the file it ``creates`` exists (``touch = true``: create that file after the step). Every expected number is
then checked against the run's score with the dataset's protocol:

* ``OK``: within ``tolerance`` (absolute);
* ``off by +d``: beyond the tolerance but within ``off_by``: reported, not a failure;
* ``FAIL``: beyond ``off_by`` (or the measure is missing).

Pipelines have a tier: ``ci`` (fast: run by default and in the test suite) or ``slow`` (only with ``--all``).
"""
from __future__ import annotations

import math
import os
import shlex
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from legalir.errors import LegalirError

REGRESSIONS_DIR = Path(__file__).resolve().parent.parent / "resources" / "regressions"
TIERS = ("ci", "slow")


class RegressionError(LegalirError, ValueError):
    pass


@dataclass
class Step:
    args: str
    creates: str | None = None
    touch: bool = False


@dataclass
class Pipeline:
    name: str
    tier: str
    run: str
    qrels: str
    steps: list[Step]
    expected: dict[str, float]
    paper: dict[str, float] = field(default_factory=dict)
    tolerance: float = 0.0005


@dataclass
class Spec:
    dataset: str
    path: Path
    steps: list[Step]
    pipelines: list[Pipeline]
    off_by: float = 0.01


def available() -> list[str]:
    return sorted(p.stem for p in REGRESSIONS_DIR.glob("*.toml"))


def _steps(raw, where: str) -> list[Step]:
    if not isinstance(raw, list):
        raise RegressionError(f"{where}: 'steps' must be a list of {{args, creates}} tables")
    out = []
    for s in raw:
        if not isinstance(s, dict) or not isinstance(s.get("args"), str):
            raise RegressionError(f"{where}: a step needs 'args' (a legalir command line): {s!r}")
        out.append(Step(s["args"], s.get("creates"), bool(s.get("touch", False))))
    return out


def load(name_or_path: str | os.PathLike) -> Spec:
    p = Path(name_or_path)
    if not p.suffix:
        p = REGRESSIONS_DIR / f"{name_or_path}.toml"
        if not p.exists():
            raise RegressionError(f"no regressions for {str(name_or_path)!r}; known: {', '.join(available())}")
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RegressionError(f"{p}: file not found") from None
    except tomllib.TOMLDecodeError as e:
        raise RegressionError(f"{p}: not valid TOML: {e}") from None
    tol = float(data.get("tolerance", 0.0005))
    pipes = []
    for i, raw in enumerate(data.get("pipelines", []), 1):
        where = f"{p}: pipeline {i}"
        missing = [k for k in ("name", "run", "qrels", "expected") if k not in raw]
        if missing:
            raise RegressionError(f"{where}: missing {', '.join(missing)}")
        tier = raw.get("tier", "ci")
        if tier not in TIERS:
            raise RegressionError(f"{where}: tier {tier!r}; known: {', '.join(TIERS)}")
        pipes.append(Pipeline(raw["name"], tier, raw["run"], raw["qrels"], _steps(raw.get("steps", []), where),
                              {k: float(v) for k, v in raw["expected"].items()},
                              {k: float(v) for k, v in raw.get("paper", {}).items()},
                              float(raw.get("tolerance", tol))))
    if not pipes:
        raise RegressionError(f"{p}: no [[pipelines]]")
    return Spec(str(data.get("dataset", p.stem)), p, _steps(data.get("steps", []), str(p)), pipes,
                float(data.get("off_by", 0.01)))


def verdict(got: float | None, expected: float, tolerance: float, off_by: float) -> str:
    if got is None or (isinstance(got, float) and math.isnan(got)):
        return "FAIL (missing)"
    d = got - expected
    if abs(d) <= tolerance + 1e-12:
        return "OK"
    if abs(d) <= off_by:
        return f"off by {d:+.4f}"
    return f"FAIL ({d:+.4f})"


def run_steps(steps: Sequence[Step], root: Path, values: Mapping[str, str],
              invoke: Callable[[list[str]], None], log=print) -> int:
    """Run the steps whose output is absent; returns how many ran."""
    ran = 0
    for s in steps:
        if s.creates and (root / s.creates).exists():
            continue
        args = shlex.split(s.args.format(**values))
        log(f"$ legalir {' '.join(shlex.quote(a) for a in args)}")
        invoke(args)
        if s.touch and s.creates:
            (root / s.creates).parent.mkdir(parents=True, exist_ok=True)
            (root / s.creates).touch()
        ran += 1
    return ran


def regress(spec: Spec, *, root: str | os.PathLike = ".", data_dir: str = "data", all_tiers: bool = False,
            invoke: Callable[[list[str]], None], log=print) -> tuple[list[dict], bool]:
    """Run the pipelines (``ci`` tier, or all), check every number; returns (rows, all passed)."""
    from legalir import datasets
    from legalir.base.models import bundled_minilm
    from legalir.report import score_run

    root = Path(root)
    try:
        minilm = str(bundled_minilm())
    except Exception:  # the encoder is only needed by dense pipelines
        minilm = "minilm"
    values = {"data_dir": data_dir, "minilm": minilm}
    cls = type(datasets.get(spec.dataset, "."))
    pipes = [p for p in spec.pipelines if all_tiers or p.tier == "ci"]
    skipped = [p.name for p in spec.pipelines if p not in pipes]
    cwd = os.getcwd()
    os.chdir(root)
    try:
        run_steps(spec.steps, Path("."), values, invoke, log)
        rows, ok = [], True
        for p in pipes:
            run_steps(p.steps, Path("."), values, invoke, log)
            got = score_run(cls, p.qrels, p.run)["all"]
            for m, exp in p.expected.items():
                v = verdict(got.get(m), exp, p.tolerance, spec.off_by)
                ok &= not v.startswith("FAIL")
                rows.append({"pipeline": p.name, "measure": m, "expected": exp, "got": got.get(m), "verdict": v,
                             "paper": p.paper.get(m), "tolerance": p.tolerance})
    finally:
        os.chdir(cwd)
    if skipped:
        log(f"(slow tier not run: {', '.join(skipped)}; use --all)")
    return rows, ok


def format_rows(rows: Sequence[dict]) -> str:
    out, last = [], None
    for r in rows:
        if r["pipeline"] != last:
            out.append(f"{r['pipeline']}:")
            last = r["pipeline"]
        got = "missing" if r["got"] is None else f"{r['got']:.4f}"
        paper = f"  (paper {r['paper']:.3f})" if r["paper"] is not None else ""
        out.append(f"  {r['measure']:<14} expected {r['expected']:.4f} ±{r['tolerance']:g}  got {got}  "
                   f"[{r['verdict']}]{paper}")
    return "\n".join(out)
