"""Typed metadata filters (legalir/legal/filters.py, docs/legal-structure.md) against a brute-force filter in Python.

Collections of generated documents (keyword, integer, float and date fields, each missing from some documents,
numbers written as JSON numbers and as strings) are indexed once per test module; hypothesis then generates
many filter expressions per collection (values, lists of values, open and closed ranges, repeated fields, as a
string, a list of strings or a dict) and the documents the real Lucene index returns must be exactly those a
plain Python filter over the documents keeps. Through the API on every example; through the CLI (`legalir
search --filter`) and a real `legalir serve` (GET /search?filter=) on a few. Errors (an unknown field, a range
over a keyword field, a value not of its field's type) are checked on all three faces. Real JVM, real Lucene.

`make test` tries 60 expressions per collection through the API; LEGALIR_HYPOTHESIS_PROFILE=deep (with
LEGALIR_HYPOTHESIS_EXAMPLES) tries more.
"""
from __future__ import annotations

import json
import os
import random
import re
import urllib.parse
from datetime import date, timedelta
from decimal import Decimal

import pytest
from click.testing import CliRunner
from conftest import DEEP, examples
from hypothesis import given, settings
from hypothesis import strategies as st

import legalir
from legalir.cli import main
from legalir.legal import filters

#: expressions per collection (tests/conftest.py's profile: 60 under ci, a tenth of LEGALIR_HYPOTHESIS_EXAMPLES
#: under deep); FEW for the properties that run a CLI command per example
EXAMPLES = examples(60, deep=0.1)
FEW = max(4, EXAMPLES // 20) if DEEP else 4
SEEDS = (0, 1)
TYPES = {"state": "keyword", "code": "keyword", "year": "integer", "amount": "float", "day": "date"}


# ------------------------------------------------------------------ generated documents
def _value(rng: random.Random, field: str):
    if field == "state":
        return rng.choice(["ohio", "Ohio", "utah", "New York", "new-york", "texas"])
    if field == "code":  # numbers, mostly, and one word: a keyword field
        return rng.choice(["007", "7", "12", "120", "x1", "-3"])
    if field == "year":
        y = rng.choice([999, 1000, 2000, 2001, 2005, 2010, 10000, -44, 0, 10 ** 15, -(10 ** 15),
                        rng.randint(-3000, 12000)])
        return str(y) if rng.random() < 0.2 else y  # an integer written as a string is an integer
    if field == "amount":
        x = rng.choice([0.5, -0.5, 2.5, 1e-7, -1e300, 1e300, 3, 0, 2.25, 1234.5678,
                        round(rng.uniform(-1000, 1000), rng.randint(0, 4))])
        return x
    d = date(1900, 1, 1) + timedelta(days=rng.randint(0, 365 * 200))
    return rng.choice([d, date(1, 1, 1), date(9999, 12, 31), date(2000, 2, 29)]).isoformat()


def documents(seed: int, n: int = 60) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        doc = {"id": f"d{i:03d}", "contents": f"common clause {rng.choice(['lease', 'rent', 'notice'])}"}
        for field in TYPES:
            if rng.random() < 0.8:  # missing otherwise
                doc[field] = _value(rng, field)
        out.append(doc)
    out[0]["amount"] = 3.0  # a float field whose values include integers stays a float field
    return out


@pytest.fixture(scope="module")
def collections_(tmp_path_factory):
    """``{seed: (documents, index folder)}``: one index per generated collection, built once."""
    out = {}
    for seed in SEEDS:
        docs = documents(seed)
        folder = tmp_path_factory.mktemp(f"filters-{seed}") / "idx"
        legalir.index(docs, folder, threads=1).close()
        out[seed] = (docs, folder)
    return out


# ------------------------------------------------------------------ the reference: a filter in plain Python
def _norm(v) -> str:
    return re.sub(r"[^a-z0-9]+", "_", str(v).strip().lower()).strip("_")


def _typed(kind: str, v):
    if kind == "date":
        return date.fromisoformat(str(v))
    return Decimal(repr(v) if isinstance(v, float) else str(v).strip())


def _one(kind: str, value, alt: str) -> bool:
    if kind == "keyword":
        return _norm(value) == _norm(alt)
    x = _typed(kind, value)
    if ".." in alt:
        lo, hi = alt.split("..", 1)
        return (not lo or _typed(kind, lo) <= x) and (not hi or x <= _typed(kind, hi))
    return x == _typed(kind, alt)


def brute_force(docs: list[dict], clauses: list[tuple[str, list[str]]]) -> list[str]:
    """The ids of the documents every clause matches (a clause: one of its values; no field: no match)."""
    return sorted(d["id"] for d in docs
                  if all(f in d and any(_one(TYPES[f], d[f], a) for a in alts) for f, alts in clauses))


# ------------------------------------------------------------------ generated filter expressions
def _literal(draw, docs, field: str) -> str:
    kind = TYPES[field]
    seen = [d[field] for d in docs if field in d]
    if draw(st.booleans()) and seen:  # a value some document has, written as a filter writes it
        v = draw(st.sampled_from(seen))
        if kind == "keyword":
            return str(v)
        if kind == "float" and isinstance(v, float):
            return draw(st.sampled_from([repr(v), f"{Decimal(repr(v)):f}", f"{v:e}" if v else "0.0"]))
        return str(v).strip()
    if kind == "keyword":
        return draw(st.sampled_from(["ohio", "UTAH", "new york", "7", "007", "x1", "nowhere"]))
    if kind == "integer":
        return str(draw(st.one_of(st.integers(-3000, 12000), st.integers(-(10 ** 16), 10 ** 16))))
    if kind == "float":
        x = draw(st.floats(allow_nan=False, allow_infinity=False, width=64))
        return draw(st.sampled_from([repr(x), f"{x:.3e}"]))
    return draw(st.dates(date(1, 1, 1), date(9999, 12, 31))).isoformat()


@st.composite
def expressions(draw, docs):
    """``(spec as given to the API, the clauses it means)``: a string, a list of strings or a dict."""
    clauses = []
    for _ in range(draw(st.integers(1, 3))):
        field = draw(st.sampled_from(sorted(TYPES)))
        alts = []
        for _ in range(draw(st.integers(1, 3))):
            if TYPES[field] != "keyword" and draw(st.booleans()):
                lo = _literal(draw, docs, field) if draw(st.integers(0, 3)) else ""
                hi = _literal(draw, docs, field) if (draw(st.integers(0, 3)) or not lo) else ""
                alts.append(f"{lo}..{hi}")
            else:
                alts.append(_literal(draw, docs, field))
        clauses.append((field, alts))
    form = draw(st.sampled_from(["string", "list", "dict"]))
    if form == "dict" and len({f for f, _ in clauses}) == len(clauses):
        spec = {f: alts for f, alts in clauses}
    elif form == "list":
        spec = [f"{f}={','.join(alts)}" for f, alts in clauses]
    else:
        spec = ";".join(f"{f}={','.join(alts)}" for f, alts in clauses)
    return spec, clauses


def _as_string(clauses) -> str:
    return ";".join(f"{f}={','.join(alts)}" for f, alts in clauses)


# ------------------------------------------------------------------ the properties
def test_inferred_types_are_recorded_in_the_index(collections_):
    from legalir.indexing import sparse

    for docs, folder in collections_.values():
        assert sparse.index_meta(folder)[filters.TYPES_KEY] == dict(sorted(TYPES.items()))


@pytest.mark.parametrize("seed", SEEDS)
def test_api_filter_equals_a_brute_force_filter(collections_, seed):
    docs, folder = collections_[seed]
    with legalir.Searcher(folder) as s:
        @settings(max_examples=EXAMPLES)
        @given(expr=expressions(docs))
        def check(expr):
            spec, clauses = expr
            got = sorted(h.docid for h in s.search("common", k=1000, filter=spec, citations=False))
            assert got == brute_force(docs, clauses), spec

        check()


def test_cli_filter_equals_a_brute_force_filter(collections_, tmp_path):
    docs, folder = collections_[SEEDS[0]]
    topics = tmp_path / "topics.jsonl"
    topics.write_text(json.dumps({"qid": "q", "text": "common"}) + "\n")

    @settings(max_examples=FEW)
    @given(expr=expressions(docs))
    def check(expr):
        _, clauses = expr
        run = tmp_path / "run.trec"
        args = [a for f, alts in clauses for a in ("--filter", f"{f}={','.join(alts)}")]  # repeated --filter
        run.unlink(missing_ok=True)
        r = CliRunner().invoke(main, ["search", str(folder), str(topics), str(run), "-k", "1000", *args])
        want = brute_force(docs, clauses)
        if not want:  # the CLI writes no empty run
            assert r.exit_code == 2 and "no document for any topic" in r.output and not run.exists(), r.output
            return
        assert r.exit_code == 0, r.output
        assert sorted({line.split()[2] for line in run.read_text().splitlines()}) == want, args

    check()


@pytest.fixture(scope="module")
def server(collections_, years, tmp_path_factory):
    """A real `legalir serve` over a generated collection (``f``) and the years index (``y``)."""
    from serve_helpers import start_server, stop_server

    root = tmp_path_factory.mktemp("filter-serve")
    s = start_server(root, ["--index", f"f={collections_[SEEDS[1]][1]}", "--index", f"y={years}"], keys=False)
    yield s
    stop_server(s)


def _get(server, **params) -> tuple[int, dict]:
    import http.client

    c = http.client.HTTPConnection("127.0.0.1", server["port"], timeout=60)
    try:
        c.request("GET", "/search?" + urllib.parse.urlencode(params))
        r = c.getresponse()
        return r.status, json.loads(r.read())
    finally:
        c.close()


def test_serve_filter_equals_a_brute_force_filter(collections_, server):
    docs, _ = collections_[SEEDS[1]]

    @settings(max_examples=FEW)
    @given(expr=expressions(docs))
    def check(expr):
        _, clauses = expr
        status, body = _get(server, index="f", q="common", k=1000, filter=_as_string(clauses), citations="off")
        assert status == 200, body
        assert sorted(h["id"] for h in body["hits"]) == brute_force(docs, clauses), clauses

    check()


# ------------------------------------------------------------------ the cases, and the errors on every face
YEARS = [999, 2000, 2005, 2010, 10000]


@pytest.fixture(scope="module")
def years(tmp_path_factory):
    folder = tmp_path_factory.mktemp("years") / "idx"
    docs = [{"id": f"y{y}", "contents": "lease", "year": y, "state": s}
            for y, s in zip(YEARS, ["ohio", "utah", "ohio", "utah", "ohio"])]
    legalir.index(docs, folder, threads=1).close()
    return folder


@pytest.mark.parametrize("spec,want", [
    ("year=2010..", ["y10000", "y2010"]),  # strings compared: 999 in, 10000 out
    ("year=..2005", ["y2000", "y2005", "y999"]),
    ("year=999..2001", ["y2000", "y999"]),
    ("year=2000..10000", ["y10000", "y2000", "y2005", "y2010"]),
    ("year=2000..", ["y10000", "y2000", "y2005", "y2010"]),
    ("state=ohio;state=utah", []),  # a repeated field is AND-ed
    ("state=ohio,utah;year=..2000", ["y2000", "y999"]),
    ("year=2010..2000", []),  # LOW above HIGH: nothing
])
def test_numbers_compare_as_numbers(years, spec, want):
    with legalir.Searcher(years) as s:
        assert sorted(h.docid for h in s.search("lease", k=100, filter=spec)) == want


BAD = [("stat=ohio", "unknown field 'stat'"), ("state=a..b", "'state' is a keyword field"),
       ("year=20x", "'20x' is not an integer"), ("year=1.5..", "'1.5' is not an integer")]
LISTED = "filterable fields: state (keyword), year (integer)"


@pytest.mark.parametrize("spec,message", BAD)
def test_bad_filters_are_located_errors_on_every_face(years, tmp_path, spec, message):
    with legalir.Searcher(years) as s, pytest.raises(filters.FilterError) as e:
        s.search("lease", filter=spec)
    assert message in str(e.value) and spec in str(e.value)
    if "unknown" in message or "keyword" in message:
        assert LISTED in str(e.value)
    topics = tmp_path / "t.jsonl"
    topics.write_text(json.dumps({"qid": "q", "text": "lease"}) + "\n")
    r = CliRunner().invoke(main, ["search", str(years), str(topics), str(tmp_path / "r.trec"), "--filter", spec])
    assert r.exit_code == 2 and message in r.output and not (tmp_path / "r.trec").exists(), r.output


def test_bad_filters_are_400_in_serve(server):
    for spec, message in BAD:
        status, body = _get(server, index="y", q="lease", filter=spec)
        assert status == 400 and message in body["error"], body
    status, body = _get(server, index="y", q="lease", filter="stat=ohio")
    assert LISTED in body["error"]
    status, body = _get(server, index="y", q="lease", filter="year=..2005;state=ohio")
    assert status == 200 and sorted(h["id"] for h in body["hits"]) == ["y2005", "y999"]


# ------------------------------------------------------------------ declared types, updates
def _dataset(docs, types, tmp):
    from legalir.datasets.dataset import Dataset, Document

    class Declared(Dataset):
        name = "declared-filters"
        filter_types = types

        def documents(self):
            for d in docs:
                yield Document(d["id"], d["contents"], {k: v for k, v in d.items() if k not in ("id", "contents")})

        def topic_sets(self):
            return {}

        def qrels_sets(self):
            return {}

    return Declared(tmp)


def test_declared_types_win_over_inference_and_are_checked(tmp_path):
    from legalir import collections
    from legalir.indexing import sparse

    docs = [{"id": f"d{i}", "contents": "lease", "zip": z, "n": n} for i, (z, n) in
            enumerate([("02139", "1"), ("2139", "2"), ("10001", "3")])]
    collections.write(_dataset(docs, {"zip": "keyword", "n": "float"}, tmp_path), tmp_path / "c", quiet=True)
    sparse.build(tmp_path / "c", tmp_path / "i", threads=1, quiet=True)
    assert sparse.index_meta(tmp_path / "i")[filters.TYPES_KEY] == {"n": "float", "zip": "keyword"}
    recs = list(collections.iter_documents(tmp_path / "c"))
    assert recs[0]["filters"] == f"zip_02139 n__{filters.encode('float', '1')}"  # declared: one token each
    with legalir.Searcher(tmp_path / "i") as s:
        assert [h.docid for h in s.search("lease", filter="zip=02139")] == ["d0"]  # a keyword: 02139 != 2139
        assert sorted(h.docid for h in s.search("lease", filter="n=1.5..")) == ["d1", "d2"]
        with pytest.raises(filters.FilterError, match="'zip' is a keyword field"):
            s.search("lease", filter="zip=0..3000")
    bad = [*docs, {"id": "d9", "contents": "lease", "n": "many"}]
    with pytest.raises(legalir.errors.LegalirError, match="document 'd9': n='many' is not a float"):
        collections.write(_dataset(bad, {"n": "float"}, tmp_path), tmp_path / "c2", quiet=True)


def test_update_keeps_types_refuses_a_value_of_another_type_and_types_a_new_field(years, tmp_path):
    import shutil

    from legalir.base import atomic
    from legalir.indexing import sparse

    shutil.copytree(atomic.current(years), tmp_path / "idx.v1")
    os.symlink("idx.v1", tmp_path / "idx")
    idx = tmp_path / "idx"
    (tmp_path / "bad.jsonl").write_text('{"id": "n1", "contents": "lease", "year": "MMXX"}\n')
    r = CliRunner().invoke(main, ["index", "update", str(idx), "--add", str(tmp_path / "bad.jsonl")])
    assert r.exit_code == 2 and "bad.jsonl:1: document 'n1': year='MMXX' is not an integer" in r.output, r.output
    assert atomic.current(idx).name == "idx.v1"
    (tmp_path / "ok.jsonl").write_text('{"id": "n2", "contents": "lease", "year": "1500", "signed": "2020-05-01"}\n')
    r = CliRunner().invoke(main, ["index", "update", str(idx), "--add", str(tmp_path / "ok.jsonl"), "--quiet"])
    assert r.exit_code == 0, r.output
    assert sparse.index_meta(idx)[filters.TYPES_KEY] == {"signed": "date", "state": "keyword", "year": "integer"}
    with legalir.Searcher(idx) as s:
        assert sorted(h.docid for h in s.search("lease", k=100, filter="year=1000..2000")) == ["n2", "y2000"]
        assert [h.docid for h in s.search("lease", k=100, filter="signed=2020-01-01..")] == ["n2"]


def test_partition_and_filter_on_a_pooled_index_mean_both(cq):
    with legalir.Searcher(cq / "pooled") as s:
        assert s.search("rent tenant premises", k=50, partition="California", filter="state=massachusetts") == []
        both = s.search("rent tenant premises", k=50, partition="California", filter="state=california,nevada")
        alone = s.search("rent tenant premises", k=50, partition="California")
        assert both and [(h.docid, h.score) for h in both] == [(h.docid, h.score) for h in alone]
        assert {h.fields["state"] for h in both} == {"california"}
