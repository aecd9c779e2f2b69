"""Citations and metadata filters (docs/legal-structure.md), on the real eyecite, JVM and Lucene.

The citation query set (tests/fixtures/citation_queries/housing_qa: 39 statutes of five jurisdictions
with decoys, 46 questions naming one statute each) is converted once and indexed twice: one index per
jurisdiction (Housing's layout) and one pooled index searched with a filter on ``state``.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import legalir
from legalir import trec
from legalir.cli import main
from legalir.legal import citations, filters

FIXTURES = Path(__file__).resolve().parent / "fixtures"


# ------------------------------------------------------------------ extraction and normalisation
@pytest.mark.parametrize("text, hint, key", [
    ("Cal. Civ. Code § 1942", None, "ca_civ_1942"),
    ("CAL. CIV. CODE § 1942 (2021)", None, "ca_civ_1942"),
    ("CA Civ Code § 1942 (2021)", None, "ca_civ_1942"),  # as the Housing release writes citations
    ("California Civil Code section 1942", None, "ca_civ_1942"),
    ("Civil Code section 1942", "California", "ca_civ_1942"),
    ("CC §1942", None, "ca_civ_1942"),
    ("section 1942 of the Civil Code", "california", "ca_civ_1942"),
    ("42 U.S.C. § 1983", None, "us_usc_42_1983"),
    ("Mass. Gen. Laws ch. 186, § 14", None, "ma_code_186_14"),
    ("M.G.L. c. 186, § 14", None, "ma_code_186_14"),
    ("MA Gen L ch 186 § 14 (2021)", None, "ma_code_186_14"),
    ("AK Stat § 34.03.070 (2021)", None, "ak_code_34_03_070"),
    ("Alaska Statutes section 34.03.070", None, "ak_code_34_03_070"),
    ("NY Real Prop L § 238-A(1)(a) (2021)", None, "ny_real_prop_238_a_1_a"),
    ("RPAPL 711", None, "ny_real_prop_acts_711"),
    ("Tex. Prop. Code Ann. § 92.0081", None, "tx_prop_92_0081"),
    ("NRS 118A.290", None, "nv_code_118a_290"),
    ("Ala. Code § 35-9A-201", None, "al_code_35_9a_201"),  # eyecite alone keeps only "35"
    ("347 U.S. 483", None, "case_347_u_s_483"),  # a case citation: eyecite
])
def test_surface_forms_normalise_to_one_key(text, hint, key):
    assert citations.keys(text, jurisdiction_hint=hint) == [key]


def test_what_is_not_a_citation_and_what_eyecite_loses():
    assert citations.keys("as provided in Civil Code section 1942") == []  # which state's Civil Code?
    assert citations.keys("enacted in 1942 by the legislature", jurisdiction_hint="ca") == []
    assert citations.keys("in 2019, Alaska Law 5 days") == []
    assert citations.keys("as provided in Section 1942 of the Civil Code", jurisdiction_hint="in") == []
    from eyecite import get_citations

    # eyecite's own normalisation drops the code's subject: why legalir re-reads its groups
    assert get_citations("Cal. Civ. Code § 1942")[0].corrected_citation() == "Cal. Code § 1942"


def test_ranges_lists_and_hyphenated_sections():
    assert citations.keys("Cal. Civ. Code §§ 1941-1943") == ["ca_civ_1941", "ca_civ_1942", "ca_civ_1943"]
    assert citations.keys("Tex Prop Code §§ 92.103-92.104") == ["tx_prop_92_103", "tx_prop_92_104"]
    assert citations.keys("SECTIONS 5-1401 AND 5-1402 OF THE NEW YORK GENERAL OBLIGATIONS LAW") == [
        "ny_gen_oblig_5_1401", "ny_gen_oblig_5_1402"]
    assert citations.keys("NY Gen Oblig L § 7-108") == ["ny_gen_oblig_7_108"]


def test_document_field_roles():
    own = "CA Civ Code § 1947.12 (2021)"
    field = citations.document_field(own, own + "\nrepairs made as provided in Section 1942 are not an increase; "
                                     "see Code of Civil Procedure section 1161", jurisdiction_hint="california")
    assert citations.parse_field(field) == {"is": ["ca_civ_1947_12"], "in": [],
                                            "cites": ["ca_civ_1942", "ca_civ_proc_1161"]}
    sub = citations.parse_field(citations.document_field("NY Real Prop L § 238-A(1)(a) (2021)", ""))
    assert sub == {"is": ["ny_real_prop_238_a_1_a"], "in": ["ny_real_prop_238_a"], "cites": []}


def test_filter_specs():
    assert filters.parse(["state=california,New York", "type=statute"]) == [
        ("state", ("california", "New York")), ("type", ("statute",))]
    assert filters.parse({"state": "texas"}) == [("state", ("texas",))]
    assert filters.parse("state=ohio;state=utah") == [("state", ("ohio",)), ("state", ("utah",))]  # AND-ed
    assert filters.parse(filters.parse("year=..2005")) == [("year", ("..2005",))]  # a parsed filter as it is
    schema = {"state": "keyword", "year": "integer"}
    year = [filters.encode("integer", y) for y in (2000, 2010)]
    assert filters.clauses(filters.parse({"state": ["New York"], "year": ["2000..2010", "..2000"]}), schema) == [
        [("term", "state_new_york")],
        [("range", f"year__{year[0]}", f"year__{year[1]}"), ("range", "year__", f"year__{year[0]}")]]
    for bad in ("state", "state=", "year=20..30..40", "year=.."):
        with pytest.raises(filters.FilterError, match="FIELD=VALUE|no value|range"):
            filters.parse(bad)


# ------------------------------------------------------------------ the citation query set, real Lucene
def _search(cq, index, out, *args):
    result = CliRunner().invoke(main, ["search", str(cq / index), str(cq / "coll/topics/test.jsonl"), str(out),
                                       "-k", "10", *args])
    assert result.exit_code == 0, result.output
    return trec.read_run(out)


def test_convert_writes_citations_and_filters(cq):
    manifest = json.loads((cq / "coll/manifest.json").read_text())
    assert manifest["fields"] == {"citations": {"documents": 39}, "filters": {"state": "keyword"}}
    recs = {json.loads(line)["id"]: json.loads(line) for line in open(cq / "coll/corpus/california/docs.jsonl")}
    assert recs["110"]["citations"] == "is_ca_civ_1947_12 cites_ca_civ_1942"
    assert recs["110"]["filters"] == "state_california"


@pytest.mark.parametrize("index", ["states", "pooled"])
def test_citation_query_ranks_the_cited_statute_first(cq, tmp_path, index):
    qrels = trec.read_qrels(cq / "coll/qrels/test.txt")
    on = _search(cq, index, tmp_path / "on.trec")  # default: on, the index has the field
    off = _search(cq, index, tmp_path / "off.trec", "--citations", "off")
    hit_on = legalir.evaluate(qrels, on, ["success.1", "recip_rank_cut.10"])
    hit_off = legalir.evaluate(qrels, off, ["success.1", "recip_rank_cut.10"])
    assert hit_on == {"success.1": 1.0, "recip_rank_cut.10": 1.0}
    assert hit_off["success.1"] < 0.8  # BM25 alone: decoys sharing the numbers win (0.76 / 0.74)
    # "What does Cal. Civ. Code § 1942 allow": the statute, then the one citing it, then BM25 order
    assert trec.ranking(on["0"])[0][0] == "102" and trec.ranking(on["0"])[1][0] == "110"


def test_queries_without_citations_are_unchanged(tmp_path):
    """The Housing fixture's questions name no statute: the run is the same, triple for triple."""
    from legalir import collections, datasets
    from legalir.indexing import sparse

    collections.write(datasets.get("housing_qa", FIXTURES), tmp_path / "coll", quiet=True)
    sparse.build(tmp_path / "coll", tmp_path / "idx", threads=1, quiet=True)
    args = [str(tmp_path / "idx"), str(tmp_path / "coll/topics/test.jsonl")]
    for name, extra in (("on", []), ("off", ["--citations", "off"])):
        assert CliRunner().invoke(main, ["search", *args, str(tmp_path / f"{name}.trec"), *extra]).exit_code == 0
    assert (tmp_path / "on.trec").read_text() == (tmp_path / "off.trec").read_text()


@pytest.mark.parametrize("citations_flag", ["on", "off"])
def test_pooled_index_with_state_filter_gives_the_per_state_run(cq, tmp_path, citations_flag):
    """Same (topic, docid, score) triples, byte for byte: each state's segments, its own BM25 statistics."""
    state_of = {json.loads(line)["id"]: json.loads(line)["state"]
                for p in (cq / "coll/corpus").glob("*/docs.jsonl") for line in open(p)}
    topics = trec.read_topics(cq / "coll/topics/test.jsonl")
    pooled = _search(cq, "pooled", tmp_path / "p.trec", "--citations", citations_flag, "-k", "100")
    _search(cq, "states", tmp_path / "s.trec", "--citations", citations_flag, "-k", "100")
    assert (tmp_path / "p.trec").read_text() == (tmp_path / "s.trec").read_text()
    for q, docs in pooled.items():
        assert {state_of[d] for d in docs} == {topics[q].fields["state"].lower()}
    meta = json.loads((cq / "pooled" / "legalir-index.json").read_text())
    assert meta["pooled"] and sorted(meta["segments"]) == ["california", "massachusetts", "nevada", "new_york",
                                                             "texas"]
    everywhere = _search(cq, "pooled", tmp_path / "all.trec", "--citations", "off", "-k", "100",
                         "--filter-by", "none")  # the whole index: all states, pooled statistics
    assert len({state_of[d] for d in everywhere["0"]}) > 1
    assert everywhere["0"]["102"] != pytest.approx(pooled["0"]["102"])
    nevada = _search(cq, "pooled", tmp_path / "nv.trec", "--citations", citations_flag, "--filter-by", "none",
                     "--filter", "state=Nevada")  # every question, among Nevada's statutes only
    assert len(nevada) > 10 and {state_of[d] for docs in nevada.values() for d in docs} == {"nevada"}


def test_filter_returns_k_hits_when_k_match(cq):
    with legalir.Searcher(cq / "pooled") as s:
        query = "rent premises tenant landlord"
        unfiltered = [h.fields["state"] for h in s.search(query, k=5, citations=False)]
        assert "nevada" not in unfiltered  # post-filtering these would leave no Nevada hit
        hits = s.search(query, k=4, filter={"state": ["nevada"]})
        assert len(hits) == 4 and {h.fields["state"] for h in hits} == {"nevada"}
        assert [h.docid for h in s.search(query, k=4, partition="Nevada")] == [h.docid for h in hits]
        two = s.search(query, k=20, filter="state=nevada,massachusetts")
        assert {h.fields["state"] for h in two} == {"nevada", "massachusetts"}
        cited = s.search("What does NRS 118A.290 require?", k=2, filter={"state": ["nevada"]})
        assert [h.docid for h in cited] == ["500", "504"]  # the statute, then the one citing it
        with pytest.raises(legalir.errors.LegalirError, match="FIELD=VALUE"):
            s.search(query, filter="state")


def test_filter_ranges_on_documents_given_as_dicts(tmp_path):
    docs = [{"id": f"d{y}", "contents": f"lease renewal notice rule {y % 3}", "year": y, "type": "statute"}
            for y in range(1995, 2015)]
    s = legalir.index(docs, tmp_path / "idx")
    with s:
        got = s.batch_search({"q": "lease renewal notice"}, k=100, filter={"year": ["2000..2004"]})["q"]
        assert sorted(got) == [f"d{y}" for y in range(2000, 2005)]
        assert len(s.search("lease", k=100, filter="year=2010..;type=statute")) == 5
        assert s.search("lease", k=100, filter={"type": "regulation"}) == []


def test_filter_needs_the_field_and_refuses_rm3(cq, tmp_path):
    s = legalir.index([{"id": "d1", "contents": "rent is due"}], tmp_path / "plain")
    with s, pytest.raises(legalir.errors.LegalirError, match="no 'filters' field"):
        s.search("rent", filter={"state": "texas"})
    result = CliRunner().invoke(main, ["search", str(cq / "pooled"), str(cq / "coll/topics/test.jsonl"),
                                       str(tmp_path / "r.trec"), "--rm3"])
    assert result.exit_code == 2 and "RM3 cannot be combined" in result.output


def test_serve_search_takes_filter_and_citations(cq):
    from legalir.serve import config, engine

    eng = engine.Engine(config.from_options(config.Config(), indexes=[f"cq={cq / 'pooled'}"]), quiet=True)
    try:
        got = eng.search("cq", "What does NRS 118A.290 require?", k=3, filter="state=nevada")
        assert [h["id"] for h in got["hits"]][:2] == ["500", "504"] and got["filter"] == "state=nevada"
        assert {h["state"] for h in got["hits"]} == {"nevada"}
        off = eng.search("cq", "What does NRS 118A.290 require?", k=3, filter="state=nevada", citations="off")
        assert off["hits"][0]["score"] < got["hits"][0]["score"]
        with pytest.raises(legalir.errors.LegalirError, match="FIELD=VALUE"):
            eng.search("cq", "rent", filter="nevada")
    finally:
        eng.close()


def test_analyze_citations(cq, tmp_path):
    _search(cq, "states", tmp_path / "on.trec")
    _search(cq, "states", tmp_path / "off.trec", "--citations", "off")
    result = CliRunner().invoke(main, ["analyze", "citations", str(cq / "coll"), "--run", f"on={tmp_path / 'on.trec'}",
                                       "--run", f"off={tmp_path / 'off.trec'}", "--measure", "success.1"])
    assert result.exit_code == 0, result.output
    assert "topics citing an authority:        46 of 46 (100.0%)" in result.output
    assert "documents with citations:          39 of 39 (100.0%)" in result.output
    rows = {line.split()[0]: line.split() for line in result.output.splitlines()[-2:]}
    assert rows["on"][1] == "1.0000" and float(rows["off"][1]) < 0.8
