"""The demo: `make demo` runs BM25 on the real ACORD test split shipped inside legalir, and prints
exactly the block README.md shows (docs/figures/demo.json, rendered there by scripts/figures.py). The
embedded release is the published one, byte for byte."""
from __future__ import annotations

import hashlib
import json
import lzma
import os
import re
import shutil
import subprocess
import sys

from conftest import REPO, WAIT_S, needs

from legalir.datasets.acord import EMBEDDED


def _readme_demo_block() -> str:
    """The demo's output as README.md shows it: its results file, docs/figures/demo.json, which `make
    docs-figures` writes from `make demo` and tests/test_figures.py holds README.md's block to."""
    data = json.loads((REPO / "docs" / "figures" / "demo.json").read_text(encoding="utf-8"))
    assert data["kind"] == "text" and data["command"] == "make demo"
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert "<!-- figures: demo block -->\n```\n" + data["text"] + "```\n<!-- /figures -->" in text
    return data["text"]


@needs(shutil.which("make") is not None, "GNU make is not on PATH")
def test_make_demo_prints_the_readme_block(tmp_path):
    """The Makefile's own demo target, run with this checkout's CLI and no DATA_DIR copy of ACORD."""
    (tmp_path / "pyproject.toml").write_text("")  # the setup stamp's prerequisite, older than the stamp
    os.utime(tmp_path / "pyproject.toml", (0, 0))
    stamp = tmp_path / "stamp"
    stamp.write_text("")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run(["make", "-s", "--no-print-directory", "-f", str(REPO / "Makefile"), "demo",
                        f"LEGALIR={sys.executable} -m legalir.cli", f"STAMP={stamp}", "DATA_DIR=no-such-dir"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=WAIT_S)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout == _readme_demo_block()
    assert "3931 documents" in p.stderr  # the whole release, read from the embedded copy
    manifest = (tmp_path / "collections" / "acord" / "manifest.json").read_text()
    assert str(EMBEDDED) in manifest


def test_embedded_release_is_the_published_files():
    """Each .xz file decompresses to the sha256 that its README lists (the release as published)."""
    readme = (EMBEDDED / "README.md").read_text(encoding="utf-8")
    listed = dict(re.findall(r"\| `([\w/.]+\.xz)`[^|]*\| `([0-9a-f]{64})` \|", readme))
    files = sorted(str(p.relative_to(EMBEDDED)) for p in EMBEDDED.rglob("*.xz"))
    assert sorted(listed) == files and len(files) == 6
    for rel, digest in listed.items():
        with lzma.open(EMBEDDED / rel) as f:
            assert hashlib.sha256(f.read()).hexdigest() == digest, rel
    assert (EMBEDDED / "LICENSE").exists() and "CC BY 4.0" in readme and "@inproceedings" in readme
