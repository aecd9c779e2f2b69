"""The suite's own rules (docs/testing.md), checked on the syntax tree of the tests and the package, so a second
copy of a helper, a skip that would pass CI quietly, a second Hypothesis profile or a wall-clock ceiling fails
here, and the skip rule itself is run: a test that needs something missing skips locally and fails in CI."""
from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import REPO, WAIT_S
from helpers import parsed, walked

TESTS = REPO / "tests"
#: the one module that defines the shared helpers (tests/conftest.py holds fixtures, the skip rule, the profile)
HELPERS = {"cli", "invoke", "cli_ok", "request", "wait_for"}


def _trees(folder: Path):
    for path in sorted(folder.rglob("*.py")):
        if "fixtures" in path.parts:
            continue
        yield path, parsed(path)


def _calls(tree, attr: str):
    for node in walked(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Attribute) and f.attr == attr) or (isinstance(f, ast.Name) and f.id == attr):
                yield node


def test_no_skip_that_ci_would_pass_quietly():
    """No ``pytest.importorskip`` and no ``skipif`` but the deep profile's own: a missing package or file goes
    through conftest's ``requires``/``needs``/``missing_reference``, which fail under LEGALIR_REQUIRE_REFERENCES."""
    found = []
    for path, tree in _trees(TESTS):
        for call in _calls(tree, "importorskip"):
            found.append(f"{path.name}:{call.lineno}: importorskip")
        for call in _calls(tree, "skipif"):
            names = {n.id for n in walked(call.args[0]) if isinstance(n, ast.Name)} if call.args else set()
            if names != {"DEEP"}:  # `skipif(not DEEP, ...)`: a test of the deep profile only, listed by -rs
                found.append(f"{path.name}:{call.lineno}: skipif")
    assert not found, found


def test_one_hypothesis_profile():
    """Profiles are registered and loaded in tests/conftest.py only; tests size themselves with ``examples()``."""
    found = [f"{path.name}:{call.lineno}" for path, tree in _trees(TESTS) if path.name != "conftest.py"
             for attr in ("register_profile", "load_profile", "get_profile") for call in _calls(tree, attr)]
    assert not found, found
    reads = [f"{path.name}:{node.lineno}" for path, tree in _trees(TESTS) if path.name not in ("conftest.py", Path(__file__).name)
             for node in walked(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
             and node.value.startswith("LEGALIR_HYPOTHESIS_")]  # the environment is read by conftest only
    assert not reads, reads


def test_shared_helpers_are_written_once():
    """``cli``, ``request`` and ``wait_for`` are defined in tests/helpers.py and nowhere else in the tests."""
    found = [f"{path.name}:{node.lineno}: def {node.name}" for path, tree in _trees(TESTS) if path.name != "helpers.py"
             for node in walked(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
             and node.name in HELPERS]
    assert not found, found


def _is_clock(node) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("time", "monotonic", "perf_counter"))


def test_no_wall_clock_ceiling():
    """No assertion on elapsed time (``time.monotonic() - t0 < N``): a loaded machine fails it though nothing is
    wrong. Waits are bounded by WAIT_S (a hang) and work by counts; timings belong in scripts/."""
    found = []
    for path, tree in _trees(TESTS):
        for node in walked(tree):
            if isinstance(node, ast.Assert):
                for sub in walked(node.test):
                    if isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Sub) and _is_clock(sub.left):
                        found.append(f"{path.name}:{node.lineno}")
    assert not found, found


def test_every_pragma_no_cover_says_why():
    """A line left out of coverage carries its reason (``# pragma: no cover - why``)."""
    bare = [f"{p.relative_to(REPO)}:{i}" for folder in ("legalir", "scripts") for p in sorted((REPO / folder).rglob("*.py"))
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if re.search(r"pragma: no cover(?!\s+-\s+\S)", line)]
    assert not bare, bare


@pytest.mark.parametrize("require", ["", "1"])
def test_a_missing_need_skips_locally_and_fails_in_ci(tmp_path, require):
    """conftest's rule run on a test file of its own: ``requires`` (a package), ``needs`` (a mark) and
    ``missing_reference`` skip with their reason, and fail instead with LEGALIR_REQUIRE_REFERENCES=1."""
    (tmp_path / "test_needs.py").write_text(textwrap.dedent("""
        from conftest import needs, requires

        def test_missing_package(monkeypatch):
            import conftest
            monkeypatch.setitem(conftest.TEST_EXTRA, "no_such_module_here", "a package that is not installed")
            requires("no_such_module_here")

        @needs(False, "a thing that is not here")
        def test_mark():
            pass

        @needs(True, "a thing that is here")
        def test_present():
            pass
    """))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(REPO), os.environ.get("PYTHONPATH", "")]),
           "LEGALIR_REQUIRE_REFERENCES": require}
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-q", "-rs",
                        "-p", "no:xdist", "-c", os.devnull, "--rootdir", str(tmp_path), str(tmp_path / "test_needs.py")],
                       capture_output=True, text=True, env=env, timeout=WAIT_S, cwd=tmp_path)
    out = r.stdout + r.stderr
    if require:
        assert r.returncode == 1 and "1 failed, 1 passed" in out and "1 error" in out, out  # (the mark: at setup)
        assert "a thing that is not here (LEGALIR_REQUIRE_REFERENCES is set" in out, out
        assert "a package that is not installed is missing" in out, out
    else:
        assert r.returncode == 0 and "1 passed, 2 skipped" in out, out
        assert "SKIPPED [1]" in out and "a thing that is not here" in out and "no_such_module_here" in out, out


def test_the_files_handed_out_first_exist():
    """conftest's HANDED_OUT_FIRST names test files that exist: a renamed file would quietly go back to the end."""
    from conftest import HANDED_OUT_FIRST, REPO

    missing = [name for name in HANDED_OUT_FIRST if not (REPO / name).is_file()]
    assert HANDED_OUT_FIRST and not missing, missing
