"""Issue 40's table, generated from run files: every code, both variants, every system, against BM25.

    python scripts/links_table.py OUT --codes "ak82 ar78 ..." --systems "bm25-on bm25-off minilm dense hybrid ..." \
        [--collections DIR] [--trained "ga86 nc81 ..."] [--leave-one-out] [--out OUT/table]

Reads OUT/runs/<code>/<system>.<set>.trec for set in test (the citing paragraphs as written: "xref") and
test.masked (their citations masked: "xref.masked"), the qrels DIR/<code>/qrels/test.txt (DIR: OUT/collections, or
--collections), and runs `legalir compare` on each (code, set): hit@1 (success.1), MRR@10 (recip_rank_cut.10) and
R@100 (recall.100), a paired two-sided t-test of every system against the first of --systems (the baseline), Holm's
correction over the systems, * where p < 0.05. Prints a Markdown table (and writes it to --out.md with the JSON of
every comparison, the commands and the run files' digests in --out.json): one row per (code, set, system), then
the mean over the codes of each (set, system) present for every code, and the goal of issue 40 per code (masked
hit@1 of the best trained system against twice the baseline's, its R@100 against 0.95, and the as-written hit@1
against 0.9). A run missing is a dash and a note, never a number; a code without its qrels stops with a message.
--leave-one-out: OUT is a leave-one-state-out folder (OUT/runs/<held-out code>/...) and the caption says so.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import shlex
import subprocess
import sys
from pathlib import Path

MEASURES = (("success_1", "success.1", "hit@1"), ("recip_rank_cut_10", "recip_rank_cut.10", "MRR@10"),
            ("recall_100", "recall.100", "R@100"))
SETS = (("test", "xref"), ("test.masked", "xref.masked"))
LABELS = {"bm25-on": "BM25, citations on", "bm25-off": "BM25, citations off", "minilm": "MiniLM (contents)",
          "dense": "trained dense", "hybrid": "hybrid: BM25 (citations on) + trained dense",
          "bm25-on-ce": "BM25 (on) then trained cross-encoder", "bm25-off-ce": "BM25 (off) then trained cross-encoder",
          "hybrid-ce": "hybrid then trained cross-encoder",
          "hybrid-tuned": "hybrid, fusion tuned on a training code's valid topics",
          "anchors-on": "BM25 over anchor-expanded sections, citations on",
          "anchors-w25": "BM25 over anchor-expanded sections (window 25), citations on",
          "anchors-hybrid": "hybrid: BM25 over anchor-expanded sections + trained dense"}
#: the systems that use no trained model (every other one does)
UNTRAINED = ("bm25-on", "bm25-off", "minilm", "anchors-on", "anchors-w25")
ALPHA = 0.05


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def compare(qrels: Path, runs: list[Path]) -> tuple[list[dict], str]:
    """`legalir compare --json` of ``runs`` (the first the baseline) on ``qrels``; its comparisons and command."""
    cmd = [sys.executable, "-m", "legalir.cli", "compare", str(qrels), *map(str, runs),
           *[a for _, m, _ in MEASURES for a in ("-m", m)], "--bootstrap", "0", "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{shlex.join(cmd)}: exit {done.returncode}\n{done.stderr.strip()}")
    shown = "legalir " + shlex.join(cmd[3:])
    return json.loads(done.stdout), shown


def table(out: Path, codes: list[str], systems: list[str], collections: Path) -> dict:
    result: dict = {"baseline": systems[0], "systems": systems, "codes": {}, "missing": [], "commands": [],
                    "runs": {}}
    for code in codes:
        qrels = collections / code / "qrels" / "test.txt"
        if not qrels.is_file():
            raise SystemExit(f"{qrels}: not found: the test qrels of {code} (make links-collections)")
        for tset, variant in SETS:
            present = [s for s in systems if (out / "runs" / code / f"{s}.{tset}.trec").is_file()]
            result["missing"] += [f"{code}/{s}.{tset}.trec" for s in systems if s not in present]
            if systems[0] not in present or len(present) < 2:
                continue
            runs = [out / "runs" / code / f"{s}.{tset}.trec" for s in present]
            comps, cmd = compare(qrels, runs)
            result["commands"].append(cmd)
            result["runs"].update({str(r): _sha(r) for r in runs})
            rows: dict[str, dict] = {s: {} for s in present}
            topics = None
            for comp in comps:
                key = next(k for k, _, _ in MEASURES if k == comp["measure"])
                topics = comp["topics"]
                for s, r in zip(present, comp["runs"]):
                    rows[s][key] = {"mean": r["mean"], "p": r["p"]}
            result["codes"].setdefault(code, {})[variant] = {"topics": topics, "systems": rows}
    return result


def _cell(v: dict | None, baseline: bool) -> str:
    if v is None:
        return "-"
    star = "*" if not baseline and v["p"] is not None and v["p"] < ALPHA else ""
    return f"{v['mean']:.3f}{star}"


def markdown(res: dict, caption: str) -> str:
    systems, base = res["systems"], res["baseline"]
    lines = [caption, "", "| code | variant | topics | system | hit@1 | MRR@10 | R@100 |", "|---|---|---:|---|---:|---:|---:|"]
    for code, variants in res["codes"].items():
        for variant, block in variants.items():
            for i, s in enumerate(systems):
                row = block["systems"].get(s)
                cells = [_cell(row.get(k) if row else None, s == base) for k, _, _ in MEASURES]
                lines.append(f"| {code if i == 0 and variant == 'xref' else ''} | {variant if i == 0 else ''} | "
                             f"{block['topics'] if i == 0 else ''} | {LABELS.get(s, s)} | " + " | ".join(cells) + " |")
    # the mean over the codes that have every system's run of a variant (no mean over different code sets)
    head = ["", "Mean over the codes (each code one weight; only codes with the run of every system):", "",
            "| variant | codes | system | hit@1 | MRR@10 | R@100 |", "|---|---:|---|---:|---:|---:|"]
    res["means"] = {}
    for _, variant in SETS:
        full = [c for c, v in res["codes"].items() if variant in v and all(s in v[variant]["systems"] for s in systems)]
        if not full:
            continue
        lines += head
        head = []
        for i, s in enumerate(systems):
            means = {k: sum(res["codes"][c][variant]["systems"][s][k]["mean"] for c in full) / len(full)
                     for k, _, _ in MEASURES}
            res["means"].setdefault(variant, {})[s] = means
            lines.append(f"| {variant if i == 0 else ''} | {len(full) if i == 0 else ''} | {LABELS.get(s, s)} | "
                         + " | ".join(f"{means[k]:.3f}" for k, _, _ in MEASURES) + " |")
    # issue 40's goal, per code
    lines += ["", f"Goal (issue 40): masked hit@1 >= 2 x {LABELS.get(base, base)}'s and R@100 >= 0.95 with a trained "
              f"system; as written, hit@1 >= 0.9.", "",
              "| code | best trained (masked) | hit@1 | 2 x baseline | R@100 | as written hit@1 | reached |",
              "|---|---|---:|---:|---:|---:|---|"]
    for code, variants in res["codes"].items():
        masked, written = variants.get("xref.masked"), variants.get("xref")
        trained = [s for s in res["systems"] if s not in UNTRAINED and masked and s in masked["systems"]]
        if not masked or not trained:
            continue
        best = max(trained, key=lambda s: masked["systems"][s]["success_1"]["mean"])
        h = masked["systems"][best]["success_1"]["mean"]
        b = masked["systems"][base]["success_1"]["mean"]
        r = masked["systems"][best]["recall_100"]["mean"]
        w = written["systems"].get(best, {}).get("success_1", {}).get("mean") if written else None
        ok = h >= 2 * b and r >= 0.95 and w is not None and w >= 0.9
        lines.append(f"| {code} | {LABELS.get(best, best)} | {h:.3f} | {2 * b:.3f} | {r:.3f} | "
                     f"{'-' if w is None else f'{w:.3f}'} | {'yes' if ok else 'no'} |")
    if res["missing"]:
        lines += ["", f"Runs not found (dashes above): {', '.join(res['missing'])}."]
    lines += ["", f"(* p < {ALPHA} against {LABELS.get(base, base)}: paired two-sided t-test, Holm's correction over the "
              f"systems, `legalir compare`; the commands are in the JSON beside this table.)"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, help="LINKS_OUT (or LINKS_OUT/loso with --leave-one-out)")
    ap.add_argument("--codes", required=True, help="code names, space-separated (ar78 ...)")
    ap.add_argument("--systems", required=True, help="systems, space-separated; the first is the baseline")
    ap.add_argument("--collections", type=Path, help="the collections' folder [default: OUT/collections]")
    ap.add_argument("--trained", default="", help="the codes trained on (for the caption)")
    ap.add_argument("--leave-one-out", action="store_true")
    ap.add_argument("--out", dest="dest", type=Path, help="write DEST.md and DEST.json too")
    a = ap.parse_args(argv)
    codes, systems = a.codes.split(), a.systems.split()
    if not codes or not systems:
        raise SystemExit("--codes and --systems name at least one each")
    res = table(a.out, codes, systems, a.collections or a.out / "collections")
    if a.leave_one_out:
        caption = ("Leave-one-state-out: each code's test topics, searched with a dense model trained on the other "
                   "training codes only.")
    else:
        caption = (f"Codes unseen in training (trained on {a.trained or 'the training codes'} only): their test "
                   f"topics.")
    text = markdown(res, caption)
    print(text, end="")
    if a.dest:
        a.dest.parent.mkdir(parents=True, exist_ok=True)
        Path(f"{a.dest}.md").write_text(text, encoding="utf-8")
        res["command"] = shlex.join([Path(sys.argv[0]).as_posix(), *(argv if argv is not None else sys.argv[1:])])
        Path(f"{a.dest}.json").write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
