"""Issue 40's measured ceiling on the unseen codes' masked cross-reference topics: what limits hit@1, in figures.

    python scripts/links_ceiling.py OUT --code ar78=COLLECTION:RUNS [--code ak82=...] \
        [--index ar78=BM25_INDEX ...] [--systems "bm25-on anchors-on dense hybrid-tuned"] [--topics test.masked]

For each code, COLLECTION is its converted statutes collection (`legalir convert statutes`) and RUNS a folder of
runs of its ``--topics`` set, ``<system>.<topics>.trec`` (made at depth 1000 for R@1000: `legalir search ... -k 1000`).
Nothing is trained or tuned here; every figure is computed from the collection's files and the runs, so the same
inputs print the same table (no randomness is drawn).

(a) The candidate ceiling: for each run, hit@1, MRR@10, R@10/100/1000 (trec_eval's recall) and success@10/100/1000
    (the share of topics with a gold section in the top k: the hit@1 a perfect reranker of that run's top k reaches),
    and the same success@k for the union of the runs' top k (any fusion or reranker of those candidates).
(b) The information ceiling, read from the text alone:
    * text twins: sections whose words (``legalir.base.words``: casefolded, numbers dropped) of their heading and
      contents are the same (repealed/reserved stubs, repeated boilerplate). A ranker that reads only that text ties
      a gold section with its twins: the best hit@1 it can reach on a topic is max over twin classes C holding a gold
      section of |C & gold| / |C|; the mean over topics is the "twin ceiling";
    * topics whose masked words share no term with any gold section's heading and contents, as the BM25 index's own
      analyzer makes terms (``LuceneIndex.terms``: stop words dropped, Porter stems; "[CITATION]" and numbers left
      out): no lexical ranker can see them;
    * where gold lies against the topic's own section (``source``, a field of every topic): the same section, the
      same chapter (the anchor's ``t..c..`` part), the same title, and the distance in the code's order;
    * gold that is repealed or reserved (a stub).
(c) Leak-free methods the structure suggests, written to OUT/runs/<code>/ and compared with the first of --systems
    (`legalir compare`, paired t-test, Holm): ``structure`` (no words: the sections of the topic's own chapter,
    nearest in the code's order first, then the rest of the code by distance; the topic's own section left out),
    ``bm25-nosource`` (the first of --systems with the topic's own section removed), and ``<system>+structure`` (RRF,
    k=60, no weight to tune, of a run and ``structure``: `legalir fuse`) for the first of --systems, bm25-nosource
    and every other run present. Which of them to report is chosen on the training codes' valid topics (run this
    with ``--topics valid.masked`` on them), never on the unseen codes' test topics.

Writes OUT/ceiling.md (the tables and the commands) and OUT/ceiling.json, and prints the Markdown.
"""
from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from links_table import compare

from legalir import collections, trec
from legalir.base.words import words

CUTS = (10, 100, 1000)
MEASURES = ["success.1,10,100,1000", "recip_rank_cut.10", "recall.10,100,1000"]
LABELS = {"bm25-on": "BM25, citations on", "anchors-on": "BM25 over anchor-expanded sections",
          "anchors-w10": "BM25 over anchor-expanded sections",
          "dense": "trained dense (GA r86 + NC r81)", "hybrid-tuned": "hybrid BM25 + trained dense (fusion tuned on GA valid)",
          "structure": "structure prior (own chapter, nearest first; no words)",
          "bm25-nosource": "BM25 without the topic's own section",
          "own-dense": "DIAGNOSTIC, breaks the protocol: dense trained on this code's own train split"}
#: terms that carry nothing of the gold section: the placeholder's stem (the analyzer's own form of it is added)
PLACEHOLDER = "[CITATION]"


def chapter_of(doc: dict) -> str:
    """The chapter key of a section: its file and the anchor's part before the section, its ``t`` left out (``01c05`` of
    ``gov.ak.code.title.01.html#t01c05s01.05.006``; one heading for several sections: the first one's anchor)."""
    file, _, anchor = doc["source"].partition("#")
    anchor = anchor.lstrip("#").removeprefix("t")  # Idaho prints a few as "#64c07s64-701" beside "t64c07s64-706"
    cut = anchor.find("s", max(anchor.find("c"), 0))
    if cut <= 0:
        raise SystemExit(f"{doc['id']}: source anchor {anchor!r} is not [t<title>][c<chapter>]s<section>: no chapter key")
    return f"{file}#{anchor[:cut]}"


def title_of(doc: dict) -> str:
    return doc["source"].partition("#")[0]


def structure_run(topics: dict[str, trec.Topic], docs: list[dict], depth: int) -> dict[str, dict[str, float]]:
    """The structure prior: for each topic, the sections of its source's chapter by distance in the code's order
    (the nearer first, the earlier on a tie), then every other section by distance; the source left out."""
    pos = {d["id"]: i for i, d in enumerate(docs)}
    chap = [chapter_of(d) for d in docs]
    by_chapter: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(chap):
        by_chapter[c].append(i)
    run: dict[str, dict[str, float]] = {}
    for qid, t in topics.items():
        src = t.fields.get("source")
        if src not in pos:
            raise SystemExit(f"topic {qid}: source {src!r} is not a document of the collection")
        i = pos[src]
        same = sorted((j for j in by_chapter[chap[i]] if j != i), key=lambda j: (abs(j - i), j))
        ranked = same[:depth]
        if len(ranked) < depth:  # the rest of the code, outward from the source
            lo, hi, seen = i - 1, i + 1, set(same) | {i}
            while len(ranked) < depth and (lo >= 0 or hi < len(docs)):
                for j in (lo, hi):
                    if 0 <= j < len(docs) and j not in seen and len(ranked) < depth:
                        ranked.append(j)
                lo, hi = lo - 1, hi + 1
        run[qid] = {docs[j]["id"]: float(depth - r) for r, j in enumerate(ranked)}
    return run


def without_source(run: dict[str, dict[str, float]], topics: dict[str, trec.Topic]) -> dict[str, dict[str, float]]:
    return {q: {d: s for d, s in r.items() if d != topics[q].fields.get("source")} for q, r in run.items()}


def write_run(run: dict[str, dict[str, float]], path: Path, tag: str) -> None:
    """``run`` by the one run writer (:func:`legalir.trec.write_run`: trec_eval's order, atomic, legalir's output
    rule), into a folder made for it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    trec.write_run(path, run, tag=tag)


def top(run: dict[str, float], k: int) -> list[str]:
    """The first ``k`` documents of a topic's run in trec_eval's order (the one ranking rule: ties by docid
    descending), so that a hit@1 counted here is trec_eval's success@1."""
    return [d for d, _ in trec.ranking(run, k)]


def information(docs: list[dict], topics: dict[str, trec.Topic], qrels: dict, index: str | None) -> dict:
    """(b): text twins, lexical overlap (with ``index``'s analyzer), structure of gold against the source."""
    byid = {d["id"]: d for d in docs}
    pos = {d["id"]: i for i, d in enumerate(docs)}
    key = {d["id"]: tuple(words(f"{d.get('title') or ''}\n{d['contents']}")) for d in docs}
    classes: dict[tuple, list[str]] = defaultdict(list)
    for d, k in key.items():
        classes[k].append(d)
    n = len(topics)
    twin_best, no_overlap, stub, same_sec, same_chap, same_title, dist = [], 0, 0, 0, 0, 0, []
    overlap_sizes = []
    terms_of = None
    lx = None
    if index:
        from legalir.indexing.lucene import LuceneIndex
        lx = LuceneIndex(index)
        drop = set(lx.terms(PLACEHOLDER))
        cache: dict[str, set[str]] = {}

        def terms_of(text: str, memo: str | None = None) -> set[str]:
            if memo is not None and memo in cache:
                return cache[memo]
            got = {t for t in lx.terms(text) if t not in drop and not any(c.isdigit() for c in t)}
            if memo is not None:
                cache[memo] = got
            return got
    try:
        for qid, t in topics.items():
            gold = {d for d, g in qrels.get(qid, {}).items() if int(g) > 0 and d in byid}
            if not gold:
                raise SystemExit(f"topic {qid}: no gold section of the collection in the qrels")
            twin_best.append(max(len(set(classes[key[g]]) & gold) / len(classes[key[g]]) for g in gold))
            src = t.fields["source"]
            stub += all(byid[g]["status"] != "in force" for g in gold)
            same_sec += src in gold
            same_chap += any(chapter_of(byid[g]) == chapter_of(byid[src]) for g in gold if g != src)
            same_title += any(title_of(byid[g]) == title_of(byid[src]) for g in gold if g != src)
            others = [abs(pos[g] - pos[src]) for g in gold if g != src]
            if others:
                dist.append(min(others))
            if terms_of is not None:
                q = terms_of(t.text)
                g_terms = set().union(*(terms_of(f"{byid[g].get('title') or ''}\n{byid[g]['contents']}", g)
                                        for g in gold))
                shared = len(q & g_terms)
                overlap_sizes.append(shared)
                no_overlap += shared == 0
    finally:
        if lx is not None:
            lx.close()
    out = {"topics": n,
           "twin_ceiling_hit1": sum(twin_best) / n,
           "topics_every_gold_has_a_text_twin": sum(b < 1 for b in twin_best) / n,
           "topics_gold_all_repealed_or_reserved": stub / n,
           "topics_gold_is_own_section": same_sec / n,
           "topics_gold_in_own_chapter": same_chap / n,
           "topics_gold_in_own_title_file": same_title / n,
           "median_distance_to_nearest_other_gold": statistics.median(dist) if dist else None,
           "sections_in_a_twin_class": sum(len(c) for c in classes.values() if len(c) > 1) / len(docs)}
    if overlap_sizes:
        out["topics_no_term_shared_with_gold"] = no_overlap / n
        out["median_terms_shared_with_gold"] = statistics.median(overlap_sizes)
    return out


def candidates(runs: dict[str, dict], qrels: dict, topics: dict) -> dict:
    """success@k of the union of the runs' top k: the most any reranker or fusion of them reaches."""
    out = {}
    for k in CUTS:
        hit = 0
        for q in topics:
            gold = {d for d, g in qrels.get(q, {}).items() if int(g) > 0}
            pool = set().union(*(top(r.get(q, {}), k) for r in runs.values()))
            hit += bool(pool & gold)
        out[f"union_success_{k}"] = hit / len(topics)
    return out


def fuse(a: Path, b: Path, out: Path, tag: str) -> str:
    cmd = [sys.executable, "-m", "legalir.cli", "fuse", str(a), str(b), "-o", str(out), "--method", "rrf",
           "-k", "1000", "--tag", tag, "--force"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{shlex.join(cmd)}: exit {done.returncode}\n{done.stderr.strip()}")
    return "legalir " + shlex.join(cmd[3:])


def measure(qrels: dict, run: dict) -> dict:
    from legalir import scoring

    res = scoring.evaluate(qrels, run, MEASURES, complete=True)  # a topic the run lacks counts 0 (trec_eval -c)
    return {k: float(v) for k, v in res["all"].items() if k.startswith(("success", "recip", "recall"))}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--code", action="append", required=True, help="CODE=COLLECTION:RUNS")
    ap.add_argument("--index", action="append", default=[], help="CODE=BM25_INDEX (its analyzer: the overlap rows)")
    ap.add_argument("--systems", default="bm25-on anchors-on dense hybrid-tuned")
    ap.add_argument("--topics", default="test.masked")
    a = ap.parse_args(argv)
    systems = a.systems.split()
    indexes = dict(x.split("=", 1) for x in a.index)
    result: dict = {"topics": a.topics, "systems": systems, "codes": {}, "commands": []}
    for spec in a.code:
        code, _, rest = spec.partition("=")
        coll, _, runs_dir = rest.partition(":")
        coll_p, runs_p = Path(coll), Path(runs_dir)
        docs = list(collections.iter_documents(coll_p))
        topics = trec.read_topics(collections.topics_path(coll_p, a.topics))
        qrels_path = collections.qrels_path(coll_p, collections.base_set(a.topics))
        qrels = {q: j for q, j in trec.read_qrels(qrels_path).items() if q in topics}
        runs = {s: trec.read_run(runs_p / f"{s}.{a.topics}.trec") for s in systems
                if (runs_p / f"{s}.{a.topics}.trec").is_file()}
        if systems[0] not in runs:
            raise SystemExit(f"{runs_p / f'{systems[0]}.{a.topics}.trec'}: not found: the baseline's run")
        own = a.out / "runs" / code
        derived = {"structure": structure_run(topics, docs, 1000),
                   "bm25-nosource": without_source(runs[systems[0]], topics)}
        for s, r in derived.items():
            write_run(r, own / f"{s}.{a.topics}.trec", s)
        where = {**{s: runs_p / f"{s}.{a.topics}.trec" for s in runs},
                 **{s: own / f"{s}.{a.topics}.trec" for s in derived}}
        for s in [systems[0], "bm25-nosource", *[x for x in systems[1:] if x in runs]]:
            name = f"{s}+structure"
            result["commands"].append(fuse(where[s], where["structure"], own / f"{name}.{a.topics}.trec", name))
            where[name] = own / f"{name}.{a.topics}.trec"
            derived[name] = trec.read_run(where[name])
        allruns = {**runs, **derived}
        block = {"systems": {s: measure(qrels, r) for s, r in allruns.items()},
                 "union_of": sorted(runs), **candidates(runs, qrels, topics),
                 "information": information(docs, topics, qrels, indexes.get(code))}
        top1 = runs[systems[0]]
        block["baseline_top1_is_own_section"] = sum(
            bool(top(top1.get(q, {}), 1)) and top(top1[q], 1)[0] == t.fields["source"] for q, t in topics.items()) \
            / len(topics)
        names = list(allruns)
        comps, cmd = compare(qrels_path, [where[s] for s in names])
        result["commands"].append(cmd)
        block["p_vs_baseline"] = {c["measure"]: dict(zip(names, (r["p"] for r in c["runs"]))) for c in comps}
        result["codes"][code] = block
    md = markdown(result)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "ceiling.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    (a.out / "ceiling.md").write_text(md, encoding="utf-8")
    print(md)
    return result


def label(s: str) -> str:
    if s.endswith("+structure"):
        return f"RRF of ({label(s[:-len('+structure')])}) and the structure prior"
    return LABELS.get(s, s)


def _p(block: dict, s: str, m: str) -> str:
    p = block["p_vs_baseline"].get(m, {}).get(s)
    return "*" if p is not None and p < 0.05 else ""


def markdown(res: dict) -> str:
    base = res["systems"][0]
    L = [f"Topics: {res['topics']} of each code. (a) The candidate ceiling: hit@1, MRR@10, R@k (recall), S@k (a gold "
         f"section in the top k: what a perfect reranker of the top k reaches). * p < 0.05 against "
         f"{LABELS.get(base, base)} (`legalir compare`, paired t-test, Holm).", "",
         "| code | system | hit@1 | MRR@10 | R@10 | R@100 | R@1000 | S@10 | S@100 | S@1000 |",
         "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for code, b in res["codes"].items():
        for i, (s, m) in enumerate(b["systems"].items()):
            L.append(f"| {code if i == 0 else ''} | {label(s)} | {m['success_1']:.3f}{_p(b, s, 'success_1')} | "
                     f"{m['recip_rank_cut_10']:.3f}{_p(b, s, 'recip_rank_cut_10')} | " +
                     " | ".join(f"{m[f'recall_{k}']:.3f}" for k in CUTS) + " | " +
                     " | ".join(f"{m[f'success_{k}']:.3f}" for k in CUTS) + " |")
        L.append(f"|  | union of {', '.join(b['union_of'])} | | | | | | " +
                 " | ".join(f"{b[f'union_success_{k}']:.3f}" for k in CUTS) + " |")
    L += ["", "(b) The information ceiling (shares of topics, except where named):", "",
          "| code | topics | twin ceiling (hit@1) | every gold has a text twin | gold all repealed/reserved | "
          "no term shared with gold | median terms shared | BM25's top 1 is the topic's own section | "
          "gold is own section | a gold in own chapter | in own title | median distance (sections) |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for code, b in res["codes"].items():
        x = b["information"]
        L.append(f"| {code} | {x['topics']} | {x['twin_ceiling_hit1']:.3f} | {x['topics_every_gold_has_a_text_twin']:.3f} | "
                 f"{x['topics_gold_all_repealed_or_reserved']:.3f} | "
                 f"{x.get('topics_no_term_shared_with_gold', float('nan')):.3f} | {x.get('median_terms_shared_with_gold', '-')} | "
                 f"{b['baseline_top1_is_own_section']:.3f} | {x['topics_gold_is_own_section']:.3f} | "
                 f"{x['topics_gold_in_own_chapter']:.3f} | {x['topics_gold_in_own_title_file']:.3f} | "
                 f"{x['median_distance_to_nearest_other_gold']} |")
    L += ["", "Commands:", ""] + [f"    {c}" for c in res["commands"]]
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    main()
