"""The README's two quick starts run as written, in a fresh folder, and print what the README says."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

from conftest import REPO, WAIT_S

README = (REPO / "README.md").read_text(encoding="utf-8")


def _block(heading: str, lang: str, nth: int = 0) -> str:
    """The ``nth`` fenced ``lang`` block after ``heading`` (before the next heading of its level)."""
    start = README.index(heading)
    end = README.find("\n## ", start + len(heading))
    section = README[start:end if end > 0 else None]
    blocks, current, kind = [], None, None
    for line in section.splitlines(keepends=True):
        if current is None and line.startswith("```"):
            current, kind = [], line[3:].strip()
        elif current is not None and line.rstrip("\n") == "```":
            if kind == lang:
                blocks.append("".join(current))
            current = None
        elif current is not None:
            current.append(line)
    assert len(blocks) > nth, f"README.md: no ```{lang} block #{nth} under {heading!r}"
    return blocks[nth]


def _env(tmp_path):
    # the checkout's legalir, whatever is installed; a collections folder of this test's own
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "LEGALIR_COLLECTIONS": "collections"}


def test_cli_quick_start_runs_as_written(tmp_path, monkeypatch):
    """Each line of the block, word for word, through the `legalir` command group (``legalir.cli:main``, what the
    `legalir` script runs), in a fresh folder. In this process: one JVM start for the seven commands, not seven
    (`make demo`, tests/test_demo.py, runs the first ones as processes of their own, through the Makefile)."""
    from click.testing import CliRunner

    from legalir.cli import main

    monkeypatch.chdir(tmp_path)
    for name, value in _env(tmp_path).items():
        if name != "PYTHONPATH":
            monkeypatch.setenv(name, value)
    outputs = []
    for line in _block("## Quick start: command line", "bash").splitlines():
        words = shlex.split(line, comments=True)
        if not words or words[:2] == ["legalir", "serve"]:
            continue  # `serve` runs until stopped: tests/test_serve.py serves the same index
        assert words[0] == "legalir", line
        r = CliRunner().invoke(main, words[1:], catch_exceptions=False)
        assert r.exit_code == 0, f"{line}\n{r.output[-3000:]}"
        outputs.append((words[1], r.stdout))
    by = dict(outputs)
    # what the README says the commands print
    for claim in ("`nDCG@10 all 0.5020`", "`P@5 all 0.6632`", "0.5020 → 0.5954", "p = 0.0194"):
        assert claim in README
    assert re.search(r"^nDCG@10\s+all\s+0\.5020$", by["eval"], re.M) and re.search(r"^P@5\s+all\s+0\.6632$",
                                                                                        by["eval"], re.M)
    assert re.search(r"bm25\.test\.long\.trec\s+0\.5954 .* 0\.0194 \*", by["compare"])
    assert re.search(r"^bm25\.test\.long \(legalir\)\s+57\s+57\.1\s+59\.5", by["report"], re.M)


def test_python_quick_start_runs_as_written(tmp_path):
    code = _block("## Quick start: Python", "python")
    (tmp_path / "quickstart.py").write_text(code, encoding="utf-8")
    p = subprocess.run([sys.executable, "quickstart.py"], cwd=tmp_path, env=_env(tmp_path), capture_output=True,
                       text=True, timeout=WAIT_S)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout == _block("## Quick start: Python", "", 0)
    assert (tmp_path / "collections" / "acord" / "manifest.json").exists()  # converted once, where make puts it
