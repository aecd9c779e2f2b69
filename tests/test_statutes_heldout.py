"""The publisher's layouts of states the project was not built on (Tennessee, Kentucky, Colorado): what the
held-out check (scripts/heldout_statutes.sh, docs/statutes.md "A code we were never given") found, cut to
small hand-written pages in the publisher's markup (CI has no copy of those repositories)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from legalir import collections, datasets

ROOT = Path(__file__).resolve().parent.parent


def page(body: str, title: str) -> str:
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body><main>'
            f'<h1 class="title" id="{title}"><b>TITLE</b></h1>{body}</main></body></html>')


def write(tmp_path: Path, state: str, code: str, files: dict[str, str]) -> Path:
    folder = tmp_path / f"cic-code-{state}" / "transforms" / state / code / "r76"
    folder.mkdir(parents=True)
    for name, html in files.items():
        (folder / name).write_text(html, encoding="utf-8")
    return tmp_path


def convert(data: Path, state: str, out: Path) -> tuple[dict[str, dict], dict]:
    collections.write(datasets.get("statutes", data, state=state, release="76"), out, quiet=True)
    return ({d["id"]: d for d in collections.iter_documents(out)}, collections.read_manifest(out)["reader"])


TN = page(
    '<div><h3 id="t21c01s21-1-203"><span class="boldspan">21-1-203. Personal service dispensed with.</span></h3>'
    '<ol class="alpha"><li id="t21c01s21-1-203ol1a">Personal service is dispensed with when:'
    '<ol><li>The defendant is a nonresident of this state, see § <cite class="octn"><a href="#t21c01s21-1-204">'
    '21-1-204</a></cite>;</li>'
    '<li>Evidence of the publication may be by affidavit.'
    # the publisher's unclosed <li>: history, notes and case notes inside the last item
    '<p>Code, 1858, §§ 4352, 4353; Shan., § 6173.</p>'
    '<p>Textbooks. Gibson\'s Suits in Chancery (7th ed., Inman), §§ 52, 116.</p>'
    '<p>Cited: Finch v. Frymire, 36 S.W. 883, 1896 Tenn. Ch. App. LEXIS 13 (1896).</p>'
    '</li></ol></li></ol></div>'
    '<div><h3 id="t21c01s21-1-204"><span class="boldspan">21-1-204. Order of publication.</span></h3>'
    '<p>The order shall be published in a newspaper.</p>'
    '<p>Acts 1988, ch. 1016, § 1; 2012, ch. 837, § 1.</p>'
    '<p>Cross-References. Income tax, distribution of revenue, § <cite class="octn"><a href="#t21c01s21-1-203">'
    '21-1-203</a></cite>.</p>'
    '<p>Attorney General Opinions. Effective date of the order, OAG 04-037 (3/12/04).</p>'
    '<p>Collateral References. Process 61 C.J.S.</p>'
    '<div><h4 id="t21c01s21-1-204-NOTESTODECISIONS"><span class="boldspan">NOTES TO DECISIONS</span></h4>'
    '<p>Publication alone does not give jurisdiction. Smith v. Jones, 1 S.W. 2 (1900).</p></div>'
    '<div><h4 id="t21c01s21-1-204-x"><span class="boldspan">2 RESTATED COMMENTS TO OFFICIAL TEXT</span></h4>'
    '<p>The restated comment.</p></div></div>'
    '<div><h3 id="t21c01s21-1-205"><span class="boldspan">21-1-205. Notice. [Effective until July 1, 2021.]'
    '</span></h3><p>The old notice.</p></div>'
    '<div><h3 id="t21c01s21-1-205.1"><span class="boldspan">21-1-205. Notice. [Effective on July 1, 2021. See the '
    'version effective until July 1, 2021.]</span></h3><p>The new notice.</p></div>', "t21")


def test_tennessee_annotations_without_headings_or_inside_a_list(tmp_path):
    docs, report = convert(write(tmp_path, "tn", "octn", {"gov.tn.tca.title.21.html": TN}), "tn", tmp_path / "c")
    d = docs["tn_code_21_1_203"]
    assert d["contents"].endswith("(2) Evidence of the publication may be by affidavit.")
    assert d["history"] == "Code, 1858, §§ 4352, 4353; Shan., § 6173."
    assert d["notes"].startswith("Textbooks. Gibson's Suits")
    assert d["case_notes"].startswith("Cited: Finch v. Frymire")
    e = docs["tn_code_21_1_204"]
    assert e["contents"] == "The order shall be published in a newspaper."
    assert e["history"] == "Acts 1988, ch. 1016, § 1; 2012, ch. 837, § 1."
    assert "Cross-References. Income tax" in e["notes"] and "Collateral References." in e["notes"]
    assert "The restated comment." in e["notes"]
    assert e["case_notes"].startswith("Attorney General Opinions. Effective date of the order, OAG 04-037")
    assert "Publication alone does not give jurisdiction." in e["case_notes"]
    for doc in docs.values():
        for word in ("Textbooks", "Cited", "OAG", "Acts 1988", "Code, 1858", "RESTATED", "Publication alone"):
            assert word not in doc["contents"], (doc["id"], word)
    # a later version printed after the heading ("... [Effective on July 1, 2021 ...]"): the one in force kept
    assert docs["tn_code_21_1_205"]["contents"] == "The old notice."
    assert report["skipped"] == {"a later version of a section already read (delayed effective date): the version "
                                 "in force kept": 1}


KY = page(
    '<div><h3 id="tXXXVIIIc421s421.010"><b>421.010. Fees of witnesses generally. [Repealed.]</b></h3>'
    '<div><h4 id="tXXXVIIIc421s421.010-compilersnotes"><b>Compiler’s Notes.</b></h4>'
    '<p>This section (1733) was repealed by Acts 1976, ch. 14, § 491.</p></div></div>'
    '<div><h3 id="tXXXVIIIc421s421.015"><b>421.015. Mileage allowance.</b></h3>'
    '<p>A witness shall be allowed mileage under KRS <cite class="ocky"><a href="#tXXXVIIIc421s421.010">421.010'
    '</a></cite>.</p><p><b>History.</b> Enact. Acts 1966, ch. 255, § 283.</p>'
    '<div><h4 id="tXXXVIIIc421s421.015-notestodecisions"><b>Notes to Decisions</b></h4>'
    '<p>Mileage is owed. Doe v. Roe, 1 S.W.3d 2 (Ky. 1999).</p></div>'
    '<div><h4 id="tXXXVIIIc421s421.015-notestounpublisheddecisions"><b>Notes to Unpublished Decisions</b></h4>'
    '<p>Unpublished decision: no mileage. Poe v. Coe, 2006 Ky. App. Unpub. LEXIS 1.</p></div></div>'
    # an interstate compact: its History line first, its text after it, under <h4> articles
    '<div><h3 id="tXXXVIIIc421s421.950"><b>421.950. Witness Compact.</b></h3>'
    '<p><b>History.</b> Enact. Acts 1998, ch. 117, § 1.</p><p><b>Witness Compact</b></p>'
    '<div><h4 id="tXXXVIIIc421s421.950-I"><b>Article I. Purpose.</b></h4><p>This compact is made.</p></div></div>',
    "tXXXVIII")


def test_kentucky_status_in_the_heading_and_unpublished_decisions(tmp_path):
    docs, _ = convert(write(tmp_path, "ky", "ocky", {"gov.ky.krs.title.38.html": KY}), "ky", tmp_path / "c")
    assert docs["ky_code_421_010"]["status"] == "repealed"
    d = docs["ky_code_421_015"]
    assert d["status"] == "in force" and d["contents"] == "A witness shall be allowed mileage under KRS 421.010."
    assert "Unpublished decision: no mileage." in d["case_notes"] and "Unpublished" not in d["notes"]
    c = docs["ky_code_421_950"]
    assert c["history"] == "Enact. Acts 1998, ch. 117, § 1."
    assert "This compact is made." in c["contents"] and "Witness Compact" in c["contents"]


CO = page(
    '<div><h3 id="t01a01p01s1-1-103"><b>1-1-103. Election code liberally construed.</b></h3>'
    '<ol><li id="t01a01p01s1-1-103ol11">This code shall be liberally construed.\n'
    '<p id="t01a01p01s1-1-103ol11-1.1">(1.1) "Address" means the residence.</p></li></ol>'
    '<p><b>Source:</b> <b>L. 92:</b> Entire article R&amp;RE, p. 624, § 1.</p>'
    '<p><b>Editor\'s note:</b> This section is similar to former § 1-1-103.</p>'
    '<p><b>Cross references:</b> For elections, see article 2.</p>'
    '<div><h4 id="t01a01p01s1-1-103-annotation">ANNOTATION</h4>'
    '<p>Substantial compliance does not apply to signatures. Griswold v. Ferrigno Warren, 2020 CO 34.</p></div></div>',
    "t01")
CO_26 = page('<div><h3 id="t26a05.3p01s26-5.3-101"><b>26-5.3-101. Short title.</b></h3><p>Title 26.</p></div>', "t26")
CO_265 = page('<div><h3 id="t26.5a03p01s26.5-3-101"><b>26.5-3-101. Short title.</b></h3><p>Title 26.5.</p></div>',
              "t26.5")
CONSTITUTION = page('<div><h3 id="tconstitutionar0I-s01">§ 1. Vestment of legislative power.</h3><p>All powers.</p>'
                    '</div>', "tconstitution")


def test_colorado_source_notes_annotation_constitution_and_one_key_for_two_numbers(tmp_path):
    data = write(tmp_path, "co", "occo", {"gov.co.crs.title.01.html": CO, "gov.co.crs.title.26.html": CO_26,
                                          "gov.co.crs.title.26.5.html": CO_265,
                                          "gov.co.crs.constitution.us.html": CONSTITUTION})
    docs, report = convert(data, "co", tmp_path / "c")
    d = docs["co_code_1_1_103"]
    assert d["contents"] == ('(1) This code shall be liberally construed. (1.1) "Address" means the residence.')
    assert d["history"] == "L. 92: Entire article R&RE, p. 624, § 1."
    assert d["notes"].startswith("Editor's note: This section is similar") and "Cross references:" in d["notes"]
    assert d["case_notes"].startswith("ANNOTATION\nSubstantial compliance")
    # the constitution is not the code; two numbers legalir.legal.citations writes alike are two documents
    assert set(docs) == {"co_code_1_1_103", "co_code_26_5_3_101", "co_code_26_5d3_101"}
    assert docs["co_code_26_5_3_101"]["section"] == "26.5-3-101"  # title 26.5's file is read first
    assert docs["co_code_26_5d3_101"]["section"] == "26-5.3-101"
    skipped = report["skipped"]
    assert skipped == {"a file that is not a title of the code (the publisher's copy of a constitution): not read, "
                       "its <h3>s not counted": 1}
    assert report["notes"]["two section numbers with one citation key (legalir.legal.citations writes them alike): the "
                           "later one's id writes its dots as 'd'"] == 1
    assert report["sections_read"] == 3 and report["documents_written"] == 3
    # the held-out check's own reader agrees: 3 printed numbers, the constitution's <h3> apart
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "count_sections.py"), str(data), "co", "76"],
                         capture_output=True, text=True, check=True).stdout
    assert out.split() == ["sections=3", "headings=3", "not_sections=0", "files=4", "other_files_h3=1"]


XREF = page(
    '<div><h3 id="t12c06s12-6-101"><span class="boldspan">12-6-101. Distribution of acts.</span></h3>'
    '<p>Acts are distributed to the clerks.</p></div>'
    + "".join(f'<div><h3 id="t12c06s12-6-10{n}"><span class="boldspan">12-6-10{n}. Part {n}.</span></h3>'
              f'<p>Copies of the acts, number {n}.</p></div>' for n in range(2, 6))
    + '<div><h3 id="t12c06s12-6-106"><span class="boldspan">12-6-106. Sale of acts.</span></h3>'
    '<p>Surplus copies of the acts distributed under §§ 12-6-101, 12-6-102, 12-6-103, 12-6-104 and 12-6-105 are '
    'sold.</p>'
    '<p>Cross-References. Distribution of acts, §§ <cite class="octn"><a href="#t12c06s12-6-101">12-6-101</a></cite>'
    ' — <cite class="octn"><a href="#t12c06s12-6-105">12-6-105</a></cite>.</p>'
    '<p>Sales, this section and § <cite class="octn"><a href="#t12c06s12-6-106">12-6-106</a></cite> and § '
    '<cite class="octn"><a href="#t12c06s12-6-101">12-6-101</a></cite>.</p>'
    '<p>Only this section, § <cite class="octn"><a href="#t12c06s12-6-106">12-6-106</a></cite>.</p>'
    '<p>Former part, §§ <cite class="octn"><a href="#t12c06s12-6-102">12-6-102</a></cite>—12-6-104 (Acts 1975, '
    'ch. 313, §§ 1-10), was repealed.</p></div>', "t12")


def test_a_linked_range_makes_its_sections_relevant_and_an_own_link_counts_beside_another(tmp_path):
    coll = tmp_path / "c"
    collections.write(datasets.get("statutes", write(tmp_path, "tn", "octn", {"gov.tn.tca.title.12.html": XREF}),
                                   state="tn", release="76"), coll, quiet=True)
    qrels: dict[str, list[str]] = {}
    for f in sorted((coll / "qrels").glob("*.txt")):
        for line in f.read_text().splitlines():
            qid, _, doc, _ = line.split()
            qrels.setdefault(qid, []).append(doc)
    # the publisher links the range's two ends; the paragraph cites the five sections
    assert sorted(qrels["tn_code_12_6_106.n1"]) == [f"tn_code_12_6_10{n}" for n in range(1, 6)]
    # "this section and § 12-6-106 and § 12-6-101": both linked sections
    assert sorted(qrels["tn_code_12_6_106.n2"]) == ["tn_code_12_6_101", "tn_code_12_6_106"]
    assert "tn_code_12_6_106.n3" not in qrels  # a link to its own section only: no question
    # a range whose last end the publisher printed without a link
    assert sorted(qrels["tn_code_12_6_106.n4"]) == ["tn_code_12_6_102", "tn_code_12_6_103", "tn_code_12_6_104"]


def test_a_document_citing_many_of_the_querys_sections_does_not_outrank_a_cited_section(tmp_path):
    """The citation tiers are not summed (legalir.indexing.lucene, one DisjunctionMaxQuery): a section whose
    text cites the five sections a question cites (tier 1 five times) stays below the cited ones (tier 3)."""
    import legalir

    coll = tmp_path / "c"
    collections.write(datasets.get("statutes", write(tmp_path, "tn", "octn", {"gov.tn.tca.title.12.html": XREF}),
                                   state="tn", release="76"), coll, quiet=True)
    legalir.index(coll, tmp_path / "i").close()
    with legalir.Searcher(tmp_path / "i") as s:
        hits = s.search("Sale of acts: see Tenn. Code Ann. §§ 12-6-101, 12-6-102, 12-6-103, 12-6-104 and 12-6-105.",
                        k=10, citations=True)
    ids = [h.docid for h in hits]
    assert set(ids[:5]) == {f"tn_code_12_6_10{n}" for n in range(1, 6)}, ids
    assert ids.index("tn_code_12_6_106") == 5, ids


def test_georgia_before_release_83_history_in_parentheses_and_reserved_in_the_text(tmp_path):
    """Georgia r70-r82 print the history as a parenthesised paragraph and the notes as a bold lead in their
    paragraph; r70-r84 print a repealed section's status as its first paragraph. None of it is statutory text."""
    ga = page(
        '<div><h3 id="t08c02s8-2-1"><b>8-2-1. Legislative findings and intent.</b></h3>'
        '<p>The General Assembly finds that clean drinking water is a precious resource.</p>'
        '<p>(Code 1981, § <cite class="ocga"><a href="#t08c02s8-2-1">8-2-1</a></cite>, enacted by Ga. L. 1990, '
        'p. 1212, § 1.)</p>'
        '<p><b>Editor\'s notes.</b> - Ga. L. 1990, p. 1212, § 1, designated the former provisions.</p></div>'
        '<div><h3 id="t08c02s8-2-2"><b>8-2-2. Purpose of part.</b></h3>'
        '<p>The purposes of this part are as follows.</p>'
        '<p>(Orig. Code 1863, § 2; Code 1868, § 3; Ga. L. 1990, p. 1212, § 1.)</p></div>'
        '<div><h3 id="t08c02s8-2-3"><b>8-2-3. Definitions.</b></h3><p>As used in this part:</p>'
        '<ol><li>"Faucet" means a valve (not a bath valve).</li><li>"Fixture" means a toilet. (Code 1981, § '
        '<cite class="ocga"><a href="#t08c02s8-2-3">8-2-3</a></cite>, enacted by Ga. L. 1990, p. 1212, § 1; '
        'Ga. L. 2008, p. 1148, § 2 (as amended).)</li></ol></div>'
        '<div><h3 id="t08c02s8-2-4"><b>8-2-4. Certification.</b></h3><ol><li>A level II certification. (Code 1981, '
        '§ 8-2-4, enacted by Ga. L. 2000, p. 452, § 3.)</li></ol>'
        '<p><b>The 2020 amendment,</b> effective July 29, 2020, substituted "one" for "two".</p>'
        '<p><b>Code Commission notes.</b> - Pursuant to Code Section 28-9-5.</p></div>'
        '<div><h3 id="t08c02s8-2-7"><b>8-2-7. Notes and catchlines.</b></h3>'
        '<p>Reserved. Repealed by Ga. L. 2021, p. 916, § 2/SB 238, effective July 1, 2021.</p></div>', "t08")
    got, _ = convert(write(tmp_path, "ga", "ocga", {"gov.ga.ocga.title.08.html": ga}), "ga", tmp_path / "c")
    one, two, seven = got["ga_code_8_2_1"], got["ga_code_8_2_2"], got["ga_code_8_2_7"]
    assert one["contents"] == "The General Assembly finds that clean drinking water is a precious resource."
    assert one["history"].startswith("(Code 1981, § 8-2-1, enacted by Ga. L. 1990")
    assert one["notes"].startswith("Editor's notes.") and one["status"] == "in force"
    assert two["contents"] == "The purposes of this part are as follows." and two["history"].startswith("(Orig. Code")
    assert seven["status"] == "reserved"
    three = got["ga_code_8_2_3"]  # the history run into the last list item's text
    assert three["contents"].endswith('"Fixture" means a toilet.') and "(not a bath valve)" in three["contents"]
    four = got["ga_code_8_2_4"]  # history then a note, both run into the last item
    assert four["contents"] == "(1) A level II certification." and four["history"].startswith("(Code 1981, § 8-2-4")
    assert four["notes"].startswith("The 2020 amendment, effective July 29, 2020") and "Code Commission" in four["notes"]
    assert three["history"] == "(Code 1981, § 8-2-3, enacted by Ga. L. 1990, p. 1212, § 1; Ga. L. 2008, p. 1148, " \
                               "§ 2 (as amended).)"
