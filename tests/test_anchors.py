"""`legalir anchors` (issue 40): each section expanded with the text of the links to it, never from a held-out topic.

A small statutes collection made here checks each rule of the leak test (a held-out paragraph's text, the same
text under another label, a short paragraph: none gives an anchor) and that an anchor is what a real Lucene index
finds a masked question by. The shared North Carolina release, converted for real, is the test over the actual
inputs: no run of words of any of its valid or test topics, as written or masked, is in any written document's
anchors, recomputed from the files written.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import needs
from hypothesis import given, settings
from hypothesis import strategies as st

from legalir import collections, trec
from legalir.cli import main
from legalir.collections import anchors as A

ROOT = Path(__file__).resolve().parent.parent
ARCHIVE = next((p / "shared" / "data" / "statutes" / "cic-code-nc-r80-r81-ch39-47.tar.xz" for p in ROOT.parents
                if (p / "shared" / "data" / "statutes" / "cic-code-nc-r80-r81-ch39-47.tar.xz").exists()), None)


def _cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def _write_jsonl(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


SECTIONS = {
    "zz_code_1_1": ("1-1", "Every landlord shall return the tenant's deposit within thirty days."),
    "zz_code_1_2": ("1-2", "A lease may be renewed by written notice."),
    "zz_code_1_3": ("1-3", "Pets may be kept with the landlord's consent."),
    "zz_code_2_1": ("2-1", "Eviction requires a court order."),
    "zz_code_2_2": ("2-2", "Rent increases need sixty days notice."),
}
#: (qid, split, as written, gold): train paragraphs that give anchors and those the leak rule drops
PARAGRAPHS = [
    # kept: an ordinary train paragraph, linking to 1-1 in words nothing held out shares
    ("zz_code_1_2.t1", "train", "The escrow account for security money held under § 1-1 must bear interest "
                                "at the bank rate paid on savings", ["zz_code_1_1"]),
    # kept, its window around 2-2 only; its own section (1-3) linked too is no anchor of itself
    ("zz_code_1_3.t1", "train", "Notwithstanding § 1-3 a periodic tenancy converts on notice of a change in "
                                "the monthly charge under § 2-2 as the statute allows", ["zz_code_2_2", "zz_code_1_3"]),
    # dropped: the text of a test topic
    ("zz_code_1_2.n1", "train", "Cross references: deposits held in trust for tenants, see § 1-1 of this code.",
     ["zz_code_1_1"]),
    # dropped: a test topic's words under another label
    ("zz_code_1_3.n1", "train", "Editor's note. Cross references: deposits held in trust for tenants, see § 1-1 of "
                                "this code.", ["zz_code_1_1"]),
    # dropped: too short to check
    ("zz_code_1_1.n1", "train", "See § 2-1.", ["zz_code_2_1"]),
    # held out: test and valid
    ("zz_code_2_1.n1", "test", "Cross references: deposits held in trust for tenants, see § 1-1 of this code.",
     ["zz_code_1_1"]),
    ("zz_code_2_2.t1", "test", "A tenant asking where the escrow account interest rule is, reads § 1-1.",
     ["zz_code_1_1"]),
    ("zz_code_2_1.t1", "valid", "Landlords of mobile homes follow § 1-2 for renewals of every lot lease.",
     ["zz_code_1_2"]),
]


def make_collection(root: Path) -> Path:
    _write_jsonl(root / "corpus" / "docs.jsonl", [
        {"id": k, "contents": text, "section": num, "state": "zz", "release": "1", "citations": f"is_{k}"}
        for k, (num, text) in SECTIONS.items()])
    for split in ("train", "valid", "test"):
        rows = [p for p in PARAGRAPHS if p[1] == split]
        _write_jsonl(root / "topics" / f"{split}.jsonl", [
            {"qid": q, "text": t, "source": q.split(".")[0]} for q, _, t, _ in rows])
        _write_jsonl(root / "topics" / f"{split}.masked.jsonl", [
            {"qid": q, "text": _mask(t), "source": q.split(".")[0]} for q, _, t, _ in rows])
        (root / "qrels").mkdir(exist_ok=True)
        (root / "qrels" / f"{split}.txt").write_text(
            "".join(f"{q} 0 {g} 1\n" for q, _, _, gold in rows for g in gold), encoding="utf-8")
    manifest = {"dataset": "statutes", "documents": {"read": 5, "written": 5}, "options": {"state": "zz",
                "release": "1"}, "partition_field": None, "partitions": None,
                "fields": {"citations": {"documents": 5}, "filters": {"state": "keyword"}}}
    (root / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return root


def _mask(text: str) -> str:
    for num, _ in SECTIONS.values():
        text = text.replace(f"§ {num}", "§ [CITATION]")
    return text


@pytest.fixture
def zz(tmp_path):
    return make_collection(tmp_path / "zz")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aZé§ß_-.,()[] \n\t0915½ΣİK")), max_size=60))
def test_words_is_the_regular_expression_it_stands_for(text):
    """words() against the regular expression it replaces (runs of \\w but the underscore, casefolded, those
    holding a digit dropped), on generated text: the same words; and every word's offset is where it stands."""
    want = [w.casefold() for w in re.findall(r"[^\W_]+", text) if not any(c.isdigit() for c in w)]
    assert A.words(text) == want
    for w, at in A._words_at(text):
        assert text[at:at + len(w)].casefold() == w or text[at:].casefold().startswith(w)


def test_words_drop_numbers_and_case():
    assert A.words("Under § 25-16-403(a)(1) of The Code, 2019") == ["under", "a", "of", "the", "code"]
    assert A.words("") == [] and A.words("§§ 1-2, 1-3") == []


def test_each_leak_rule_and_the_window(zz):
    a = A.read_anchors(zz, window=6, shingle=4)
    assert a.read_from == ("train",) and a.held_out == ("test", "test.masked", "valid", "valid.masked")
    c = a.counts
    assert (c["paragraphs"], c["kept"], c["dropped_same_text"], c["dropped_shared_words"], c["dropped_short"]) == \
        (5, 2, 1, 1, 1)
    assert c["links_own_section"] == 1
    assert a.sources == {"zz_code_1_1": ["zz_code_1_2.t1"], "zz_code_2_2": ["zz_code_1_3.t1"]}
    # six words each side of the cited number, numbers and case gone
    assert a.texts["zz_code_1_1"] == ["account for security money held under must bear interest at the bank"]
    assert a.texts["zz_code_2_2"] == ["change in the monthly charge under as the statute allows"]
    whole = A.read_anchors(zz, window=None, shingle=4)
    assert whole.texts["zz_code_1_1"] == [" ".join(A.words(PARAGRAPHS[0][2]))]
    # with the test set as a source, the valid set alone is held out: the test paragraphs give anchors now
    both = A.read_anchors(zz, sources=("train", "test"), shingle=4)
    assert both.held_out == ("valid", "valid.masked") and "zz_code_2_2.t1" in both.sources["zz_code_1_1"]


def test_the_leak_check_refuses_a_held_out_topics_words(zz):
    A.check_no_leak(zz, {"zz_code_1_1": ["escrow account for security money"]}, ["test", "test.masked"], 4)
    with pytest.raises(A.AnchorError, match=r"held-out topic test/zz_code_2_1.n1: a leak"):
        A.check_no_leak(zz, {"zz_code_1_1": ["x deposits held in trust for y"]}, ["test"], 4)


def test_bad_settings_are_located_errors(zz, tmp_path):
    with pytest.raises(A.AnchorError, match="no such topic set"):
        A.read_anchors(zz, sources=("dev",))
    with pytest.raises(A.AnchorError, match="leave no topic set held out"):
        A.read_anchors(zz, sources=("train", "valid", "test"))
    (zz / "qrels" / "train.txt").unlink()
    r = _cli("anchors", zz, tmp_path / "out")
    assert r.exit_code == 2 and "no qrels for topic set 'train'" in r.output and not (tmp_path / "out").exists()


def test_the_expanded_collection_is_indexed_and_a_masked_question_finds_its_section(zz, tmp_path):
    out = tmp_path / "zz-anchors"
    r = _cli("anchors", zz, out, "--window", 6, "--shingle", 4, "--quiet")
    assert r.exit_code == 0, r.output
    assert "2 anchors on 2 of 5 documents, from 2 of 5 paragraphs of train" in r.output
    m = collections.read_manifest(out)
    assert m["options"]["anchors_held_out"] == "test,test.masked,valid,valid.masked"
    assert m["reader"]["anchors"]["kept"] == 2 and m["fields"]["filters"] == {"state": "keyword"}
    docs = {d["id"]: d for d in collections.iter_documents(out)}
    src = {d["id"]: d for d in collections.iter_documents(zz)}
    for k, d in docs.items():
        assert d["contents"].startswith(src[k]["contents"])
        assert {f: v for f, v in d.items() if f not in ("contents", "filters")} == \
            {f: v for f, v in src[k].items() if f != "contents"}
    assert docs["zz_code_1_1"]["contents"] == SECTIONS["zz_code_1_1"][1] + A.SEPARATOR + \
        "account for security money held under must bear interest at the bank"
    assert docs["zz_code_1_2"]["contents"] == SECTIONS["zz_code_1_2"][1]
    for sub in ("topics/test.jsonl", "topics/test.masked.jsonl", "topics/train.jsonl"):
        assert [t.text for t in trec.read_topics(out / sub).values()] == \
            [t.text for t in trec.read_topics(zz / sub).values()]
    assert (out / "qrels" / "test.txt").read_text() == (zz / "qrels" / "test.txt").read_text()
    # a real Lucene index of each: the masked test question about the escrow account's interest finds 1-1 first
    # only through its anchor (the section's own text says nothing of escrow or interest)
    plain, expanded = tmp_path / "plain-idx", tmp_path / "anchors-idx"
    assert _cli("index", zz, plain, "--threads", 1).exit_code == 0
    assert _cli("index", out, expanded, "--threads", 1).exit_code == 0
    topics = tmp_path / "q.tsv"
    topics.write_text("q1\tWhat interest must the escrow account of a lease bear?\n", encoding="utf-8")
    for idx, want in ((plain, False), (expanded, True)):
        run = tmp_path / f"{idx.name}.trec"
        r = _cli("search", idx, topics, run, "-k", 5, "--citations", "off")
        assert r.exit_code == 0, r.output
        lines = run.read_text().splitlines()
        assert (lines[0].split()[2] == "zz_code_1_1") is want


def _held_out_shingles(coll: Path, n: int) -> dict[tuple[str, ...], str]:
    """Every run of ``n`` words of every valid and test topic of ``coll``, read from its files here."""
    out: dict[tuple[str, ...], str] = {}
    for p in sorted((coll / "topics").glob("*.jsonl")):
        if p.name.split(".")[0] in ("valid", "test"):
            for line in p.read_text(encoding="utf-8").splitlines():
                t = json.loads(line)
                ws = A.words(t["text"])
                for i in range(len(ws) - n + 1):
                    out.setdefault(tuple(ws[i:i + n]), t["qid"])
    return out


@needs(ARCHIVE is not None, "the shared North Carolina statute archive (../shared/data/statutes) is absent")
def test_no_held_out_topic_gives_an_anchor_on_the_shared_north_carolina_release(tmp_path):
    """The leak test over actual inputs: North Carolina r81 (chapters 39-47 as published) converted, expanded, and
    every written document's anchor part (what follows its original text) searched for every run of 8 words of
    every valid and test topic, as written and masked: none is there; every anchor's paragraph is a train topic;
    no train paragraph whose words are a held-out topic's gave one."""
    data = tmp_path / "data"
    with tarfile.open(ARCHIVE) as tf:
        tf.extractall(data, filter="data")
    coll, out = tmp_path / "nc-81", tmp_path / "nc-81-anchors"
    r = _cli("convert", "statutes", "--data-dir", data, "--option", "state=nc", "--option", "release=81", "--out",
             coll, "--quiet")
    assert r.exit_code == 0, r.output
    r = _cli("anchors", coll, out, "--quiet")
    assert r.exit_code == 0, r.output
    counts = collections.read_manifest(out)["reader"]["anchors"]
    assert counts["anchors"] > 100 and counts["dropped_same_text"] + counts["dropped_shared_words"] > 0
    held = _held_out_shingles(coll, A.DEFAULT_SHINGLE)
    assert len(held) > 1000
    src = {d["id"]: d["contents"] for d in collections.iter_documents(coll)}
    expanded = 0
    for d in collections.iter_documents(out):
        tail = d["contents"][len(src[d["id"]]):]
        assert d["contents"].startswith(src[d["id"]])
        if not tail:
            continue
        expanded += 1
        for anchor in tail.split(A.SEPARATOR)[1:]:
            ws = anchor.split()
            for i in range(len(ws) - A.DEFAULT_SHINGLE + 1):
                assert tuple(ws[i:i + A.DEFAULT_SHINGLE]) not in held, (d["id"], held[tuple(ws[i:i + 8])])
    assert expanded == counts["documents_with_anchors"]
    # provenance: every anchor was cut from a train paragraph, none of whose words is a held-out topic's
    a = A.read_anchors(coll)
    train = {json.loads(x)["qid"]: json.loads(x)["text"]
             for x in (coll / "topics" / "train.jsonl").read_text(encoding="utf-8").splitlines()}
    held_texts = {tuple(A.words(json.loads(x)["text"])) for s in ("valid", "test", "valid.masked", "test.masked")
                  for x in (coll / "topics" / f"{s}.jsonl").read_text(encoding="utf-8").splitlines()}
    used = {q for qs in a.sources.values() for q in qs}
    assert used and used <= set(train)
    assert not any(tuple(A.words(train[q])) in held_texts for q in used)


@needs(shutil.which("make") is not None, "GNU make is not on PATH")
def test_make_links_anchors_reads_the_unseen_codes_train_paragraphs_only(tmp_path):
    """`make links-anchors`, dry: one `legalir anchors` per unseen code, with the default sources (train; no
    --from naming a held-out set), its index, and the runs of the test topics searched over it."""
    done = subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), "-n", "-B", f"VENV={sys.prefix}",
                           f"LINKS_OUT={tmp_path}", "LINKS_TRAIN=aa:1", "LINKS_UNSEEN=cc:1 dd:2", "links-anchors"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.replace("\\\n", " ").splitlines()
    made = [c for c in lines if " anchors " in c and "legalir" in c]
    assert len(made) == 2 and all("--from" not in c for c in made)
    assert any(f"anchors {tmp_path}/collections/cc1 {tmp_path}/anchors/cc1 " in c for c in made)
    searches = [c for c in lines if " search " in c]
    topics = sorted(w.rsplit("/", 1)[-1] for c in searches for w in c.split() if w.endswith(".jsonl"))
    assert topics == ["test.jsonl", "test.jsonl", "test.masked.jsonl", "test.masked.jsonl"]
    assert all(f"{tmp_path}/indexes/" in c and "/anchors " in c for c in searches)
    assert not any("aa1" in c for c in lines)
