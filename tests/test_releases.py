"""Releases in time (legalir.search.releases): each release's date as the publisher prints it, ``as_of=`` a date on
every face, and a section's history across the releases an index keeps, with the page's timeline and diff.

The indexes are the ones `legalir index update --to` makes from the statute fixture (tests/fixtures/statutes, cut
from ../shared/data/statutes with the publisher's README): Georgia 85 (dated 2022.07) then 86 (2022.11), one
section amended; North Carolina 80 (2022.04) then 81 (2022.06), G.S. 41-1 read only in 81.
"""
from __future__ import annotations

import datetime
import hashlib
import importlib.util
import json
import re
import shutil
import urllib.parse
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import WAIT_S, examples, needs, requires
from helpers import invoke
from hypothesis import given, settings
from hypothesis import strategies as st
from test_statutes import FIXTURES, SHARED, convert, docs

import legalir
from legalir import collections
from legalir.base import atomic
from legalir.cli import main
from legalir.datasets.statutes import readme_release_dates
from legalir.search import releases


# ------------------------------------------------------------------ the README's release lines
@pytest.mark.parametrize("line, release, date", [
    ("* Release 85 dated 2022.07.", "85", "2022-07"),           # Georgia, Vermont: month, a closing period
    (" * Release 78 dated 2020.08.01.", "78", "2020-08-01"),    # Kentucky, Colorado: the day
    (" * Release 81 dated 2022.06", "81", "2022-06"),           # North Carolina: no period
    ("* Release 72 dated 2018.12.13", "72", "2018-12-13"),      # Mississippi
    (" * Release 70 dated 2020", "70", "2020"),                 # Idaho: the year alone
    (" * Release 79 dated 2020.11.019.", "79", None),           # Kentucky's misprint: no date of the calendar
    ("* Release 9 dated 2021.02.30.", "9", None),               # no such day
])
def test_readme_release_lines_give_dates_at_their_precision(line, release, date):
    text = f"# cic-code-xx\n\nFollowing releases are included:\n\n{line}\n\nCode which generates these files ...\n"
    got = readme_release_dates(text)
    assert list(got) == [release] and got[release][0] == date and got[release][1] == 5
    assert got[release][2] == line.split()[-1]


def test_only_release_lines_are_read():
    text = ("Following releases are included:\n * Release notes follow\nRelease 86 dated soon\n"
            "The Release 12 dated 2020.01 line\n* Release 86 dated 2022.11.\n")
    assert readme_release_dates(text) == {"86": ("2022-11", 5, "2022.11.")}


@settings(max_examples=examples(200, deep=0.25))
@given(st.dates(min_value=datetime.date(1990, 1, 1), max_value=datetime.date(2099, 12, 31)),
       st.sampled_from(["day", "month", "year"]), st.booleans(), st.integers(1, 999))
def test_every_printed_date_reads_back(day, precision, period, release):
    printed = {"day": f"{day:%Y.%m.%d}", "month": f"{day:%Y.%m}", "year": f"{day:%Y}"}[precision]
    iso = {"day": day.isoformat(), "month": f"{day:%Y-%m}", "year": f"{day:%Y}"}[precision]
    got = readme_release_dates(f" * Release {release} dated {printed}{'.' if period else ''}\n")
    assert got == {str(release): (iso, 1, printed + ("." if period else ""))}


# ------------------------------------------------------------------ convert records the date
def test_convert_records_each_release_date_and_where_it_read_it(tmp_path_factory):
    for state, release, date, line in (("ga", "85", "2022-07", 23), ("ga", "86", "2022-11", 24),
                                       ("nc", "80", "2022-04", 12), ("nc", "81", "2022-06", 13)):
        m = collections.read_manifest(convert(tmp_path_factory, state, release))
        assert m["options"]["date"] == date and m["reader"]["date"] == date
        assert m["reader"]["date_from"].endswith(f"cic-code-{state}/README.md:{line}"), m["reader"]
        assert collections.release_marker(m) == {"release": release, "date": date}


def _fixture_without_readme(tmp_path: Path, state: str = "ga") -> Path:
    data = tmp_path / "data"
    shutil.copytree(FIXTURES / "statutes" / f"cic-code-{state}", data / "statutes" / f"cic-code-{state}")
    (data / "statutes" / f"cic-code-{state}" / "README.md").unlink()
    return data


def _convert(data: Path, out: Path, *options: str):
    return CliRunner().invoke(main, ["convert", "statutes", "--data-dir", str(data), "--option", "state=ga",
                                     *[a for o in options for a in ("--option", o)], "--out", str(out), "--quiet"])


def test_without_a_readme_no_date_is_invented_and_the_option_gives_one(tmp_path):
    data = _fixture_without_readme(tmp_path)
    r = _convert(data, tmp_path / "bare", "release=85")
    assert r.exit_code == 0, r.output
    m = collections.read_manifest(tmp_path / "bare")
    assert "date" not in m["options"] and "date" not in m["reader"]
    assert collections.release_marker(m) == {"release": "85"}
    r = _convert(data, tmp_path / "dated", "release=85", "date=2022-07")
    assert r.exit_code == 0, r.output
    m = collections.read_manifest(tmp_path / "dated")
    assert m["options"]["date"] == "2022-07" and m["reader"]["date_from"] == "--option date"
    for bad in ("2022-7", "2022-13", "July 2022", "2022.07"):
        r = _convert(data, tmp_path / "bad", "release=85", f"date={bad}")
        assert r.exit_code == 2 and "option date=" in r.output and "YYYY-MM" in r.output, (bad, r.output)
    assert not (tmp_path / "bad").exists()


def test_an_option_date_against_the_readme_is_refused_naming_both(tmp_path):
    r = _convert(FIXTURES, tmp_path / "out", "release=85", "date=2022-08")
    assert r.exit_code == 2 and "--option date=2022-08" in r.output and "README.md:23" in r.output \
        and "'2022.07.'" in r.output, r.output
    assert not (tmp_path / "out").exists()
    r = _convert(FIXTURES, tmp_path / "same", "release=85", "date=2022-07")  # the same date: fine
    assert r.exit_code == 0, r.output


@needs((SHARED / "cic-code-nc-r80-r81-ch39-47.tar.xz").exists(), f"the shared archives are not in {SHARED}")
def test_the_shared_archive_s_readme_dates_its_release(tmp_path_factory):
    """The archives in ../shared/data/statutes hold the repository README: read from inside the .tar.xz."""
    m = collections.read_manifest(convert(tmp_path_factory, "nc", "81", data_dir=SHARED))
    assert m["options"]["date"] == "2022-06"
    assert m["reader"]["date_from"].endswith("cic-code-nc-r80-r81-ch39-47.tar.xz!cic-code-nc/README.md:13")


# ------------------------------------------------------------------ indexes of two releases
@pytest.fixture(scope="module")
def two(tmp_path_factory):
    """``{state: (index of the older release updated --to the newer, older collection, newer collection)}``."""
    out = {}
    for state, old, new in (("ga", "85", "86"), ("nc", "80", "81")):
        c_old, c_new = convert(tmp_path_factory, state, old), convert(tmp_path_factory, state, new)
        idx = tmp_path_factory.mktemp(f"releases-{state}") / state
        legalir.index(c_old, idx).close()
        legalir.update(idx, to=c_new)
        out[state] = (idx, c_old, c_new)
    return out


def amended(two) -> str:
    _, c85, c86 = two["ga"]
    old, new = docs(c85), docs(c86)
    found = [d for d in sorted(old) if d in new and old[d]["contents"] != new[d]["contents"]]
    assert found
    return found[0]


def test_each_version_s_marker_carries_its_release_date(two):
    idx = two["ga"][0]
    assert [{k: (atomic.read_marker(v) or {}).get(k) for k in ("release", "date")} for v in atomic.versions(idx)] == \
        [{"release": "85", "date": "2022-07"}, {"release": "86", "date": "2022-11"}]
    # a change within release 86 keeps its date
    legalir.update(idx, add=[{"id": "ga_extra", "contents": "x", "state": "ga", "release": "86", "status": "in force"}])
    legalir.update(idx, delete=["ga_extra"])
    assert (atomic.read_marker(atomic.current(idx)) or {}).get("date") == "2022-11"
    with legalir.Searcher(idx) as s:
        assert s.release_dates == {"85": "2022-07", "86": "2022-11"} and s.release == "86"
        assert s.release_date == "2022-11" and s.at("85").release_date == "2022-07"
    with legalir.Searcher(two["nc"][0]) as s:
        assert s.release_dates == {"80": "2022-04", "81": "2022-06"}


def test_as_of_a_date_is_the_newest_release_dated_on_or_before_it(two):
    with legalir.Searcher(two["ga"][0]) as s:
        @settings(max_examples=examples(150, deep=0.25))
        @given(st.dates(min_value=datetime.date(2022, 7, 1), max_value=datetime.date(2030, 1, 1)))
        def check(day):
            want = "86" if day.isoformat() >= "2022-11-01" else "85"
            assert s.at(day.isoformat()).release == want and s.at(day).release == want
        check()


def test_as_of_rule_against_a_brute_force_reading(two):
    """release_for_date over generated release tables, against the plain reading: sort by (date padded to its
    first day, release), keep those on or before the day, take the last."""
    @settings(max_examples=examples(300, deep=0.25))
    @given(st.dictionaries(st.integers(1, 200).map(str),
                           st.dates(min_value=datetime.date(2000, 1, 1), max_value=datetime.date(2030, 12, 31))
                           .flatmap(lambda d: st.sampled_from([d.isoformat(), f"{d:%Y-%m}", f"{d:%Y}"])),
                           min_size=1, max_size=8),
           st.dates(min_value=datetime.date(1999, 1, 1), max_value=datetime.date(2031, 12, 31)))
    def check(dates, day):
        padded = {r: (d + "-01-01")[:10] if len(d) == 4 else (d + "-01")[:10] for r, d in dates.items()}
        on_or_before = sorted((padded[r], int(r)) for r in dates if padded[r] <= day.isoformat())
        if not on_or_before:
            with pytest.raises(releases.NoReleaseThen, match=r"before the oldest release this index keeps: release"):
                releases.release_for_date(day.isoformat(), dates)
        else:
            assert releases.release_for_date(day.isoformat(), dates) == str(on_or_before[-1][1])
    check()


def test_as_of_a_date_searches_that_release_and_a_date_before_the_oldest_names_it(two):
    idx, c85, _ = two["ga"]
    q = "toilets shower heads water"
    with legalir.Searcher(idx) as s:
        assert s.search(q, k=5, as_of="2022-09-01") == s.search(q, k=5, as_of="85")
        assert s.search(q, k=5, as_of=datetime.date(2022, 11, 1)) == s.search(q, k=5)
        docid = amended(two)
        assert s.doc(docid, as_of="2022-10-31")["contents"] == docs(c85)[docid]["contents"]
        with pytest.raises(releases.NoReleaseThen) as e:
            s.search(q, as_of="2021-09-01")
        assert "release 85, dated 2022-07" in str(e.value) and e.value.status == 404
        assert isinstance(e.value, legalir.ApiError)
        for bad in ("2022-02-30", "2022-9-1", "20220901-"):
            with pytest.raises(releases.ReleaseError, match=r"YYYY-MM-DD"):
                s.search(q, as_of=bad)
        with pytest.raises(legalir.ApiError, match=r"releases: 85, 86"):
            s.search(q, as_of="70")  # a release number as before


def test_a_release_without_a_date_is_named_when_a_date_is_asked(tmp_path):
    data = _fixture_without_readme(tmp_path)
    assert _convert(data, tmp_path / "c85", "release=85").exit_code == 0
    assert _convert(data, tmp_path / "c86", "release=86", "date=2022-11").exit_code == 0
    idx = tmp_path / "idx"
    legalir.index(tmp_path / "c85", idx).close()
    legalir.update(idx, to=tmp_path / "c86")
    with legalir.Searcher(idx) as s:
        assert s.release_dates == {"85": None, "86": "2022-11"}
        with pytest.raises(releases.ReleaseError, match=r"release 85 of this index has no date recorded") as e:
            s.search("water", as_of="2023-01-01")
        assert e.value.status == 400 and "--option date=YYYY-MM" in str(e.value)
        assert s.search("water", k=3, as_of="85")  # a release number needs no date
        assert [h["release"] for h in s.history("O.C.G.A. § 8-2-1")] == ["85", "86"]


# ------------------------------------------------------------------ history
def test_history_gives_each_release_its_date_status_and_text_hash(two):
    idx, c85, c86 = two["ga"]
    docid = amended(two)
    old, new = docs(c85), docs(c86)
    with legalir.Searcher(idx) as s:
        h = s.history(docid)
        assert [(e["release"], e["date"], e["current"], e["present"], e["id"]) for e in h] == \
            [("85", "2022-07", False, True, docid), ("86", "2022-11", True, True, docid)]
        assert [e["sha256"] for e in h] == [hashlib.sha256(d[docid]["contents"].encode()).hexdigest() for d in (old, new)]
        assert [e["changed"] for e in h] == [None, True]
        assert [e["status"] for e in h] == [old[docid]["status"], new[docid]["status"]]
        # by citation, as a lawyer writes it: the same entries; a section the releases print alike is unchanged
        cite = new[docid]["citation"]
        assert s.history(cite) == h
        same = s.history("O.C.G.A. § 8-2-1")
        assert [e["changed"] for e in same] == [None, False] and same[0]["sha256"] == same[1]["sha256"]
        with pytest.raises(releases.NotInAnyRelease, match=r"releases: 85 \(2022-07\), 86 \(2022-11\)") as e:
            s.history("O.C.G.A. § 99-99-99")
        assert e.value.status == 404
    with legalir.Searcher(two["nc"][0]) as s:  # G.S. 41-1: an <h3> in 81 only
        h = s.history("nc_code_41_1")
        assert [(e["release"], e["present"], e["status"], e["sha256"] is None, e["changed"]) for e in h] == \
            [("80", False, "absent", True, None), ("81", True, "in force", False, True)]


def test_history_of_an_index_of_no_release_is_its_one_version(sample_index):
    with legalir.Searcher(sample_index) as s:
        docid = s.search("governing law", k=1)[0].docid
        h = s.history(docid)
    assert len(h) == 1 and h[0]["release"] is None and h[0]["date"] is None and h[0]["current"] is True
    assert h[0]["present"] and h[0]["id"] == docid and h[0]["changed"] is None


# ------------------------------------------------------------------ parity: API, CLI, HTTP, MCP, PyTerrier
def test_history_and_as_of_a_date_agree_on_every_face(two, tmp_path):
    from serve_helpers import start_server, stop_server

    ga, c85, c86 = two["ga"]
    nc = two["nc"][0]
    docid = amended(two)
    old, new = docs(c85), docs(c86)
    q = old[docid]["title"] or old[docid]["contents"][:60]
    refs = {"ga": [docid, "O.C.G.A. § 8-2-1"], "nc": ["nc_code_41_1", "G.S. 42-25.6"]}
    api_history = {}
    with legalir.Searcher(ga) as s, legalir.Searcher(nc) as n:
        for name, searcher in (("ga", s), ("nc", n)):
            for ref in refs[name]:
                api_history[name, ref] = searcher.history(ref)
        want = [(h.docid, h.score) for h in s.search(q, k=5, as_of="85")]
        assert [(h.docid, h.score) for h in s.search(q, k=5, as_of="2022-09-01")] == want
        assert s.batch_search({"q": q}, k=5, as_of="2022-09-01") == s.batch_search({"q": q}, k=5, as_of="85")
    ids = [d for d, _ in want]

    # CLI: legalir history --json; legalir search --as-of DATE writes the run --as-of 85 writes
    for (name, ref), entries in api_history.items():
        p = invoke("history", two[name][0], ref, "--json")
        assert p.exit_code == 0, p.stderr
        assert json.loads(p.stdout) == entries, ref
    p = invoke("history", ga, "O.C.G.A. § 99-99-99")
    assert p.exit_code == 2 and "no version of this index holds it" in p.stderr, p.stderr
    topics = tmp_path / "q.tsv"
    topics.write_text(f"q1\t{q}\n", encoding="utf-8")
    runs = []
    for as_of in ("85", "2022-09-01"):
        run = tmp_path / f"asof-{as_of}.trec"
        p = invoke("search", ga, topics, run, "-k", "5", "--as-of", as_of)
        assert p.exit_code == 0, p.stderr
        runs.append(run.read_bytes())
    assert runs[0] == runs[1] and [line.split()[2] for line in runs[0].decode().splitlines()] == ids
    p = invoke("search", ga, topics, tmp_path / "x.trec", "--as-of", "2021-09-01")
    assert p.exit_code == 2 and "release 85, dated 2022-07" in p.stderr, p.stderr

    # PyTerrier: the same core
    if importlib.util.find_spec("pyterrier") is not None:
        import pandas as pd

        from legalir import pt as lpt

        got = lpt.searcher(ga, k=5, as_of="2022-09-01").transform(pd.DataFrame({"qid": ["q"], "query": [q]}))
        assert list(got.sort_values("rank")["docno"]) == ids

    # MCP (in process, the SDK's own client): history, search and get_document as of a date
    requires("mcp")
    import asyncio

    from mcp import Client

    from legalir.serve import app, config, mcpserver
    from legalir.serve import engine as engine_mod

    eng = engine_mod.build(config.gather(indexes=[f"ga={ga}", f"nc={nc}"]), quiet=True)
    pool = app.Workers(1)
    try:
        async def mcp_calls():
            async with Client(mcpserver.create(eng, pool)) as client:
                for (name, ref), entries in api_history.items():
                    got = await client.call_tool("history", {"id": ref, "index": name})
                    assert not got.is_error, got.content[0].text
                    assert json.loads(got.content[0].text)["releases"] == entries
                bad = await client.call_tool("history", {"id": "O.C.G.A. § 99-99-99", "index": "ga"})
                assert bad.is_error and "no version of this index holds it" in bad.content[0].text
                got = await client.call_tool("search", {"query": q, "k": 5, "index": "ga", "as_of": "2022-09-01"})
                body = json.loads(got.content[0].text)
                assert [h["id"] for h in body["hits"]] == ids and body["release"] == "85" \
                    and body["release_date"] == "2022-07", body
                doc = await client.call_tool("get_document", {"id": docid, "collection": "ga", "as_of": "2022-09-01"})
                assert json.loads(doc.content[0].text)["contents"] == old[docid]["contents"]
                bad = await client.call_tool("search", {"query": q, "index": "ga", "as_of": "2021-09-01"})
                assert bad.is_error and "release 85, dated 2022-07" in bad.content[0].text

        asyncio.run(mcp_calls())
    finally:
        pool.shutdown()
        eng.close()

    # HTTP: GET /history, /search, /doc and POST /search/batch as of a date
    import http.client

    server = start_server(tmp_path, ["--index", f"ga={ga}", "--index", f"nc={nc}"], keys=False, workers=1)
    try:
        def call(method, path, body=None):
            c = http.client.HTTPConnection("127.0.0.1", server["port"], timeout=WAIT_S)
            c.request(method, path, body=json.dumps(body) if body is not None else None,
                      headers={"Content-Type": "application/json"})
            r = c.getresponse()
            out = json.loads(r.read() or b"null")
            c.close()
            return r.status, out

        for (name, ref), entries in api_history.items():
            st_, res = call("GET", "/history?" + urllib.parse.urlencode({"id": ref, "index": name}))
            assert st_ == 200 and res["releases"] == entries and res["index"] == name, res
        st_, err = call("GET", "/history?" + urllib.parse.urlencode({"id": "O.C.G.A. § 99-99-99", "index": "ga"}))
        assert st_ == 404 and "no version of this index holds it" in json.dumps(err, ensure_ascii=False), err
        st_, res = call("GET", "/search?" + urllib.parse.urlencode({"q": q, "k": 5, "index": "ga",
                                                                    "as_of": "2022-09-01"}))
        assert st_ == 200 and [h["id"] for h in res["hits"]] == ids and res["release"] == "85" \
            and res["release_date"] == "2022-07", res
        st_, res = call("POST", "/search/batch", {"queries": [{"q": q}], "k": 5, "index": "ga", "as_of": "2022-09-01"})
        assert st_ == 200 and [h["id"] for h in res["results"][0]["hits"]] == ids, res
        st_, listing = call("GET", "/indexes")
        entry = next(i for i in (listing if isinstance(listing, list) else listing["indexes"]) if i["name"] == "ga")
        assert entry["release_dates"] == {"85": "2022-07", "86": "2022-11"}, entry
        coll = urllib.parse.quote(entry["collection"])
        for day, want_doc in (("2022-09-01", old), ("2022-11-01", new)):
            st_, d = call("GET", f"/doc/{coll}/{docid}?as_of={day}")
            assert st_ == 200 and d["contents"] == want_doc[docid]["contents"] and d["as_of"] == day, d
        assert call("GET", f"/doc/{coll}/{docid}?as_of=2022-09-01")[1]["release"] == "85"
        st_, err = call("GET", "/search?" + urllib.parse.urlencode({"q": q, "index": "ga", "as_of": "2021-09-01"}))
        assert st_ == 404 and "release 85, dated 2022-07" in json.dumps(err), err
        st_, err = call("GET", "/search?" + urllib.parse.urlencode({"q": q, "index": "ga", "as_of": "2022-02-30"}))
        assert st_ == 400 and "YYYY-MM-DD" in json.dumps(err), err
    finally:
        stop_server(server)


# ------------------------------------------------------------------ the page: timeline and diff, in Chromium
def _tokens(s: str) -> list[str]:
    return re.findall(r"\s+|\S+", s)


def _lcs(a: list[str], b: list[str]) -> int:
    row = [0] * (len(b) + 1)
    for x in a:
        prev, row = row, [0]
        for j, y in enumerate(b):
            row.append(prev[j] + 1 if x == y else max(prev[j + 1], row[j]))
    return row[-1]


def _sides(parts: list) -> tuple[str, str]:
    return ("".join(t for op, t in parts if op != "+"), "".join(t for op, t in parts if op != "-"))


def test_page_shows_a_section_s_history_and_the_diff_of_two_releases(two, tmp_path):
    requires("websockets")
    from browser import Chromium
    from serve_helpers import start_server, stop_server
    from test_serve import _click, _select, _type, _wait

    ga, c85, c86 = two["ga"]
    docid = amended(two)
    old, new = docs(c85), docs(c86)
    server = start_server(tmp_path, ["--index", f"ga={ga}"], keys=False, workers=1)
    try:
        with Chromium() as b:
            page = b.load(server["base"] + "/")
            _wait(page, "document.body.dataset.ready === '1'")
            assert page.evaluate("[...document.querySelectorAll('#release option')].map(o => o.textContent)") == \
                ["86 · 2022-11 (current)", "85 · 2022-07"]
            _type(page, "#q", new[docid]["title"] or new[docid]["contents"][:60])
            _click(page, "#search-btn")
            _wait(page, f"!!document.querySelector('#results .card[data-id=\"{docid}\"]')")
            page.evaluate(f"document.querySelector('#results .card[data-id=\"{docid}\"]').click()")
            _wait(page, "document.querySelector('#doc-history').dataset.ready === '1' && "
                        "document.querySelector('#doc-diff') && document.querySelector('#doc-diff').dataset.ready === '1'")
            timeline = page.evaluate("[...document.querySelectorAll('#doc-history .timeline li')].map(li => "
                                     "[li.dataset.release, li.className, li.textContent])")
            assert [t[0] for t in timeline] == ["85", "86"]
            assert "2022-07" in timeline[0][2] and "2022-11" in timeline[1][2] and "text changed" in timeline[1][2]
            assert "changed" in timeline[1][1].split() and "changed" not in timeline[0][1].split()
            assert "shown" in timeline[1][1].split()  # the release the document was opened as
            # the diff between 85 and 86: its sides are the two texts, exactly
            parts = page.evaluate("[...document.querySelector('#doc-diff .diff-text').childNodes].map(n => "
                                  "[n.nodeName === 'DEL' ? '-' : n.nodeName === 'INS' ? '+' : '=', n.textContent])")
            assert _sides(parts) == (old[docid]["contents"], new[docid]["contents"])
            assert any(op != "=" for op, _ in parts)
            # the same release on both sides: nothing marked
            _select(page, "#diff-a", "86")
            _wait(page, "document.querySelector('#doc-diff').dataset.ready === '1' && "
                        "document.querySelector('#doc-diff').dataset.a === '86'")
            assert page.evaluate("document.querySelectorAll('#doc-diff del, #doc-diff ins').length") == 0
            assert page.evaluate("document.querySelector('#doc-diff .diff-text').textContent") == new[docid]["contents"]
            assert not page.errors, page.errors

            # the page's word diff on generated texts: its two sides are the texts, and what it keeps is a longest
            # common subsequence of their words (the shortest edit script)
            @settings(max_examples=examples(150, deep=0.25))
            @given(st.lists(st.sampled_from(["a", "b", "c", "§", "(1)", "tenant", "\n", "  "]), max_size=30),
                   st.lists(st.sampled_from(["a", "b", "c", "§", "(1)", "tenant", "\n", "  "]), max_size=30))
            def check(xs, ys):
                a, b = " ".join(xs), " ".join(ys)
                got = page.evaluate(f"diffText({json.dumps(a)}, {json.dumps(b)})")
                assert _sides(got) == (a, b)
                kept = sum(len(_tokens(t)) for op, t in got if op == "=")
                assert kept == _lcs(_tokens(a), _tokens(b)), (a, b, got)
            check()
    finally:
        stop_server(server)
