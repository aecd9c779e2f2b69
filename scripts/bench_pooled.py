#!/usr/bin/env python3
"""Housing at scale: one index per jurisdiction vs one pooled index searched with a filter, side by side.

    python scripts/bench_pooled.py --scale 1.0 --work /tmp/legalir-pooled --questions 1000 --citation-queries 1000
    python scripts/bench_pooled.py --scale 1.0 --work DIR --reuse --questions 0 --citation-queries 0 \
        --no-reference --rounds 2 --before OLD_CHECKOUT      # the search ratio only, before and after a change

On the synthetic Housing release (scripts/synth_housing.py; generation is not timed) it times, each
as its own process, with peak RSS of the process tree (scripts/bench_scale.py's `measure`):

* `legalir convert housing_qa` (once; it also extracts every statute's citations);
* `legalir index` (51 per-jurisdiction indexes, Housing's layout) and `legalir index --pooled`
  (one index whose segments each hold one jurisdiction, the `state` filter field indexed), with
  their size on disk;
* the reference: Anserini's IndexCollection (`java -cp <fat jar>`, one JVM) on the same input as
  the pooled index, with the same flags: one index over everything, merged as Lucene likes;
* `legalir search` at depth 1000 for the questions (all, or a fixed sample: every k-th question in
  qid order), per-jurisdiction (each question routed to its state's index, batch of 2 threads),
  pooled (each question filtered to its state: a Lucene FILTER clause over that state's segments;
  the filtered queries of a batch searched together over Java threads, as the plain ones are), and
  over the reference index with the same filter (`--filter-by state`: the statistics of all 51
  jurisdictions); `--rounds N` searches per-jurisdiction and pooled N times each, alternately, and
  keeps each one's fastest; `--before DIR` also times the pooled search with the code of the
  checkout DIR (`PYTHONPATH=DIR`, e.g. `git archive COMMIT | tar -x -C DIR`) in the same rounds;
* the citation queries: questions naming one statute by its citation in the surface forms people
  use (`Alabama Code § 3-5-120`, `Ala. Code § 3-5-120`, `AL Code §3-5-120`, `Alabama Code section
  3-5-120`, `Ala. Code Ann. § 3-5-120`), over a fixed sample of statutes, searched with and
  without `--citations` (hit@1 = success.1, MRR@10 = recip_rank_cut.10).

It prints the pooled search's wall time as a ratio of the per-jurisdiction one (issue 39's target:
at most 1.1x) and whether the two run files are byte-identical; it exits with status 1 when they
are not (the speed is reported, never asserted). `--reuse` keeps what the work folder already
holds (collection, indexes) and builds only what is missing.

Then it compares the runs with the per-jurisdiction one: identical (topic, docid, score) triples,
identical docid rankings, overlap of the top 10, and the Housing measures of each (R@10 any/all,
MRR@10). A per-jurisdiction index scores with its own N, document frequencies and average
length; so does the pooled index filtered to a state (it reads that state's segments only); the
reference index with a filter scores with those of all 51 jurisdictions (a filter never changes
statistics).

Results: a table on stdout and JSON in --out. The machine is shared: the load average is printed.
"""
from __future__ import annotations

import argparse
import filecmp
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import BIN, REPO, du_mb, measure

sys.path.insert(0, str(REPO))
MEASURES = ["success.1", "success.10", "recall_all.10", "recip_rank_cut.10", "success.1000"]


def sample_topics(src: Path, out: Path, n: int) -> int:
    """Every k-th topic of ``src`` in qid order (all when ``n`` is 0 or at least their number)."""
    rows = [json.loads(line) for line in open(src, encoding="utf-8") if line.strip()]
    rows.sort(key=lambda r: int(r["qid"]) if str(r["qid"]).isdigit() else r["qid"])
    if n and n < len(rows):
        step = len(rows) / n
        rows = [rows[int(i * step)] for i in range(n)]
    out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return len(rows)


def citation_topics(collection: Path, out_topics: Path, out_qrels: Path, n: int, seed: int = 0) -> int:
    """``n`` questions naming one statute each (sampled with ``seed``) by its citation, in varied forms."""
    from legalir.legal import citations

    manifest = json.loads((collection / "manifest.json").read_text())
    parts = manifest["partitions"]
    total = sum(parts.values())
    rng = random.Random(seed)
    chosen = sorted(rng.sample(range(total), min(n, total)))
    picked, pos, i = [], 0, 0
    for key in sorted(parts):
        end = pos + parts[key]
        want = []
        while i < len(chosen) and chosen[i] < end:
            want.append(chosen[i] - pos)
            i += 1
        if want:
            wanted = set(want)
            with open(collection / "corpus" / key / "docs.jsonl", encoding="utf-8") as f:
                for line_no, line in enumerate(f):
                    if line_no in wanted:
                        picked.append(json.loads(line))
        pos = end
    topics, qrels = [], []
    for q, rec in enumerate(picked):
        name = str(rec["state"]).title()
        cite = rec.get("citation", "")
        sec = cite.split("§", 1)[1].split("(")[0].strip() if "§" in cite else ""
        postal = citations.jurisdiction(name) or ""
        abbr = citations.JURISDICTIONS.get(postal, (name, (name,)))[1][0]
        forms = [f"{name} Code § {sec}", f"{abbr} Code § {sec}", f"{postal.upper()} Code §{sec}",
                 f"{name} Code section {sec}", f"{abbr} Code Ann. § {sec}"]
        words = rec["contents"].split("\n")[-1].split()
        subject = " ".join(rng.sample(words, min(2, len(words)))) if q % 2 else "a landlord"
        text = f"What does {forms[q % len(forms)]} require of {subject}?"
        topics.append({"qid": f"c{q}", "text": text, "state": name})
        qrels.append(f"c{q} 0 {rec['id']} 1\n")
    out_topics.write_text("".join(json.dumps(t) + "\n" for t in topics), encoding="utf-8")
    out_qrels.write_text("".join(qrels), encoding="utf-8")
    return len(topics)


def reference_index(collection: Path, out: Path, log: Path, threads: int, fields: list[str]) -> dict:
    """Anserini's IndexCollection (its fat jar, one JVM) over the pooled input, legalir's flags."""
    from legalir.base import jvm

    java = Path(jvm.java_home()) / "bin" / "java"
    cmd = [str(java), "-cp", jvm.anserini_jar(), "--sun-misc-unsafe-memory-access=allow",
           "io.anserini.index.IndexCollection", "-collection", "JsonCollection", "-generator",
           "DefaultLuceneDocumentGenerator", "-input", str(collection / "corpus"), "-index", str(out),
           "-threads", str(threads), "-storePositions", "-storeDocvectors", "-storeRaw", "-quiet"]
    if fields:
        cmd += ["-fields", *fields]
    return measure(cmd, log)


def compare_runs(a_path: Path, b_path: Path) -> dict:
    """How far two runs of the same topics agree."""
    from legalir import trec

    a, b = trec.read_run(a_path), trec.read_run(b_path)
    same_triples = same_order = 0
    overlap10 = []
    for q in a:
        ra, rb = trec.ranking(a[q]), trec.ranking(b.get(q, {}))
        same_triples += [(d, round(s, 4)) for d, s in ra] == [(d, round(s, 4)) for d, s in rb]
        same_order += [d for d, _ in ra] == [d for d, _ in rb]
        top_a, top_b = {d for d, _ in ra[:10]}, {d for d, _ in rb[:10]}
        overlap10.append(len(top_a & top_b) / max(1, len(top_a)))
    return {"topics": len(a), "identical_triples": same_triples, "identical_rankings": same_order,
            "mean_overlap_at_10": round(sum(overlap10) / max(1, len(overlap10)), 4)}


def scores(qrels: Path, run: Path, measures: list[str]) -> dict:
    from legalir import api

    q = api.as_qrels(qrels)
    r = api.as_run(run)
    q = {k: v for k, v in q.items() if k in r}
    return {m: round(v, 4) for m, v in api.evaluate(q, r, measures).items()}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=0.1, help="fraction of the real size [0.1]")
    ap.add_argument("--work", type=Path, default=Path("/tmp/legalir-pooled"))
    ap.add_argument("--questions", type=int, default=1000, help="fixed sample of questions (0: all) [1000]")
    ap.add_argument("--citation-queries", type=int, default=1000, help="citation questions [1000]")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-reference", dest="reference", action="store_false",
                    help="skip Anserini's IndexCollection")
    ap.add_argument("--keep", action="store_true", help="keep the data, collections and indexes")
    ap.add_argument("--reuse", action="store_true",
                    help="use the collection and indexes the work folder holds (build only what is missing); "
                         "implies --keep")
    ap.add_argument("--rounds", type=int, default=1,
                    help="search per-jurisdiction and pooled this many times each, alternately; keep the fastest [1]")
    ap.add_argument("--before", type=Path, default=None,
                    help="a checkout of the code before a change: its pooled search is timed in the same rounds")
    ap.add_argument("--out", type=Path, default=REPO / "results" / "bench_pooled.json")
    args = ap.parse_args(argv)
    args.keep = args.keep or args.reuse

    d = args.work / f"s{args.scale:g}"
    d.mkdir(parents=True, exist_ok=True)
    log = d / "bench.log"
    legalir, py = str(BIN / "legalir"), sys.executable
    res: dict = {"scale": args.scale, "threads": args.threads, "loadavg_start": os.getloadavg()}

    def step(name):
        print(f"[{time.strftime('%H:%M:%S')}] {name} ...", file=sys.stderr, flush=True)

    if not (d / "data/housing_qa/data/statutes.tsv.zip").exists():
        step("generate")
        subprocess.run([py, str(REPO / "scripts/synth_housing.py"), str(d / "data"), "--scale", str(args.scale)],
                       check=True)
    coll = d / "coll"
    if not (args.reuse and (coll / "manifest.json").exists()):
        step("convert")
        shutil.rmtree(coll, ignore_errors=True)
        res["convert"] = measure([legalir, "convert", "housing_qa", "--data-dir", str(d / "data"), "--out",
                                  str(coll), "--quiet"], log)
    manifest = json.loads((coll / "manifest.json").read_text())
    res["statutes"] = manifest["documents"]["written"]
    res["statutes_with_citations"] = manifest["fields"]["citations"]["documents"]
    res["questions_all"] = manifest["topics"]["test"]
    fields = sorted(manifest["fields"])

    for name, extra in (("states", []), ("pooled", ["--pooled"])):
        if args.reuse and (d / name).exists():
            continue
        step(f"index {name}")
        shutil.rmtree(d / name, ignore_errors=True)
        res[f"index_{name}"] = measure([legalir, "index", str(coll), str(d / name), "--threads", str(args.threads),
                                        *extra], log)
        res[f"index_{name}"]["disk_mb"] = du_mb(Path(os.path.realpath(d / name)))
    if args.reference and not (args.reuse and (d / "anserini").exists()):
        step("index: Anserini IndexCollection (reference)")
        shutil.rmtree(d / "anserini", ignore_errors=True)
        res["index_anserini"] = reference_index(coll, d / "anserini", log, args.threads, fields)
        res["index_anserini"]["disk_mb"] = du_mb(d / "anserini")

    topics = d / "questions.jsonl"
    res["questions"] = sample_topics(coll / "topics/test.jsonl", topics, args.questions)
    qrels = coll / "qrels/test.txt"
    # this checkout's code (PYTHONPATH), whatever the environment holds
    layouts = [("states", "states", str(REPO)), ("pooled", "pooled", str(REPO))]
    if args.before:
        layouts.append(("pooled_before", "pooled", str(args.before.resolve())))
    for r in range(max(1, args.rounds)):
        for name, index, code in layouts:
            step(f"search {name} ({res['questions']} questions, depth 1000, round {r + 1})")
            m = measure([legalir, "search", str(d / index), str(topics), str(d / f"{name}.trec"), "-k", "1000",
                         "--threads", str(args.threads), "--force"], log, env={"PYTHONPATH": code})
            res.setdefault(f"rounds_{name}", []).append(m)
            if f"search_{name}" not in res or m["seconds"] < res[f"search_{name}"]["seconds"]:
                res[f"search_{name}"] = m
    for name, _, _ in layouts:
        res[f"search_{name}"]["measures"] = scores(qrels, d / f"{name}.trec", MEASURES + ["recall_all.1000"])
    res["agreement"] = compare_runs(d / "states.trec", d / "pooled.trec")
    res["identical_run_files"] = filecmp.cmp(d / "states.trec", d / "pooled.trec", shallow=False)
    res["pooled_time_ratio"] = round(res["search_pooled"]["seconds"] / res["search_states"]["seconds"], 3)
    if args.before:
        res["identical_run_files_before"] = filecmp.cmp(d / "states.trec", d / "pooled_before.trec", shallow=False)
        res["pooled_before_time_ratio"] = round(res["search_pooled_before"]["seconds"]
                                                / res["search_states"]["seconds"], 3)
    if args.reference:
        # the reference index, searched by legalir with the same filter: what legalir-index.json records
        (d / "anserini" / "legalir-index.json").write_text(json.dumps(
            {"input": str(coll / "corpus"), "documents": res["statutes"], "fields": fields}))
        step("search the reference index + state filter (pooled statistics)")
        res["search_reference"] = measure([legalir, "search", str(d / "anserini"), str(topics),
                                           str(d / "reference.trec"), "-k", "1000", "--threads", str(args.threads),
                                           "--filter-by", "state"], log)
        res["search_reference"]["measures"] = scores(qrels, d / "reference.trec", MEASURES + ["recall_all.1000"])
        res["agreement_reference"] = compare_runs(d / "states.trec", d / "reference.trec")

    ctopics, cqrels = d / "citations.jsonl", d / "citations.qrels"
    res["citation_queries"] = citation_topics(coll, ctopics, cqrels, args.citation_queries) if args.citation_queries else 0
    cited = [("citations_on", "states", [], str(REPO)), ("citations_off", "states", ["--citations", "off"], str(REPO)),
             ("citations_on_pooled", "pooled", [], str(REPO))]
    if args.before:
        cited += [("citations_on_before", "states", [], str(args.before.resolve())),
                  ("citations_on_pooled_before", "pooled", [], str(args.before.resolve()))]
    for name, index, extra, code in cited if args.citation_queries else ():
        step(f"search {name}")
        res[f"search_{name}"] = measure([legalir, "search", str(d / index), str(ctopics), str(d / f"{name}.trec"),
                                         "-k", "10", "--threads", str(args.threads), "--force", *extra], log,
                                        env={"PYTHONPATH": code})
        res[f"search_{name}"]["measures"] = scores(cqrels, d / f"{name}.trec", ["success.1", "recip_rank_cut.10"])
    if args.citation_queries and args.before:
        res["citations_identical_before"] = all(filecmp.cmp(d / f"{n}.trec", d / f"{n}_before.trec", shallow=False)
                                                for n in ("citations_on", "citations_on_pooled"))
    res["loadavg_end"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1) + "\n")
    print(table(res))
    print(f"\npooled + state filter: {res['pooled_time_ratio']:.2f}x the per-jurisdiction wall time "
          f"({res['search_pooled']['seconds']:.1f} s vs {res['search_states']['seconds']:.1f} s, best of "
          f"{max(1, args.rounds)}; target <= 1.1x); run files byte-identical: "
          f"{'yes' if res['identical_run_files'] else 'NO'}")
    if args.before:
        print(f"before ({args.before}): {res['pooled_before_time_ratio']:.2f}x "
              f"({res['search_pooled_before']['seconds']:.1f} s); run files byte-identical: "
              f"{'yes' if res['identical_run_files_before'] else 'NO'}")
    if "citations_identical_before" in res:
        print(f"citation runs with and without the change byte-identical: "
              f"{'yes' if res['citations_identical_before'] else 'NO'}")
    print(f"command: python scripts/bench_pooled.py {' '.join(argv if argv is not None else sys.argv[1:])}")
    print(f"\n(load average {', '.join(f'{x:.1f}' for x in res['loadavg_start'])} at the start, "
          f"{', '.join(f'{x:.1f}' for x in res['loadavg_end'])} at the end, on {os.cpu_count()} cores; JSON: {args.out})")
    if not args.keep:
        shutil.rmtree(d, ignore_errors=True)
    if not res["identical_run_files"]:
        raise SystemExit("the pooled run differs from the per-jurisdiction run")


def table(r: dict) -> str:
    def row(label, m, ref=None):
        ratio = (f" | {m['seconds'] / ref['seconds']:.2f}x | {m['peak_rss_mb'] / ref['peak_rss_mb']:.2f}x"
                 if ref else " | | ")
        disk = f"{m['disk_mb']:,.0f}" if "disk_mb" in m else ""
        return f"| {label} | {m['seconds']:,.1f} | {m['cpu_seconds']:,.1f} | {m['peak_rss_mb']:,.0f} | {disk}{ratio} |"

    lines = [f"Scale {r['scale']:g}: {r['statutes']:,} statutes ({r['statutes_with_citations']:,} with a citation "
             f"extracted), {r['questions']:,} of {r['questions_all']:,} questions, depth 1000",
             "", "| step | wall s | CPU s | peak RSS MB | disk MB | time ratio | memory ratio |",
             "|---|---|---|---|---|---|---|"]
    if "convert" in r:
        lines.append(row("convert (with citations)", r["convert"]))
    ref = r.get("index_anserini")
    for key, label in (("index_states", "index, one per jurisdiction"), ("index_pooled", "index --pooled")):
        if key in r:
            lines.append(row(label, r[key], ref))
    if ref:
        lines.append(row("Anserini IndexCollection (pooled input; reference)", ref))
    lines.append(row("search, per jurisdiction", r["search_states"]))
    lines.append(row("search, pooled + state filter", r["search_pooled"], r["search_states"]))
    if "search_pooled_before" in r:
        lines.append(row("search, pooled + state filter (--before code)", r["search_pooled_before"],
                         r["search_states"]))
    if "search_reference" in r:
        lines.append(row("search, reference index + state filter", r["search_reference"], r["search_states"]))
    lines.append("")
    for label, key in (("pooled", "agreement"), ("reference + filter", "agreement_reference")):
        if key in r:
            a = r[key]
            lines.append(f"Per-jurisdiction vs {label}: {a['identical_triples']} of {a['topics']} topics with identical "
                         f"(docid, score) triples, {a['identical_rankings']} with identical docid rankings, mean "
                         f"overlap of the top 10 {a['mean_overlap_at_10']:.3f}")
    lines += ["", "| layout | " + " | ".join(MEASURES + ["recall_all.1000"]) + " |",
              "|---" * (len(MEASURES) + 2) + "|"]
    for name in ("states", "pooled", "pooled_before", "reference"):
        if f"search_{name}" not in r:
            continue
        m = r[f"search_{name}"]["measures"]
        lines.append(f"| {name} | " + " | ".join(f"{m[k]:.4f}" for k in MEASURES + ["recall_all.1000"]) + " |")
    if not r["citation_queries"]:
        return "\n".join(lines)
    lines += ["", f"Citation queries ({r['citation_queries']}): | run | hit@1 | MRR@10 | wall s |", "|---|---|---|---|"]
    for name in ("citations_off", "citations_on", "citations_on_pooled", "citations_on_before",
                 "citations_on_pooled_before"):
        if f"search_{name}" not in r:
            continue
        m = r[f"search_{name}"]
        lines.append(f"| {name} | {m['measures']['success.1']:.4f} | {m['measures']['recip_rank_cut.10']:.4f} "
                     f"| {m['seconds']:.1f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
