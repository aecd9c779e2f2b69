"""The one table of every code (docs/statutes.md, "Every code the publisher publishes"), from the outputs of
``scripts/measure_statutes.sh``: per state and release, the held-out check's log (``logs/ST.txt``: sections,
skips, checks 3-6, hit@1 with the state and as plain text), the independent reader's report
(``reports/ST-REL.json``, ``scripts/audit_statutes.py``) and citation precision and recall against the code's
links (``cites/ST.json``, ``scripts/citation_groundtruth.py codes``). Where check 4b was run again on the same index
after a fix (``logs/ST-4b-again.txt``: the ``legalir eval`` lines), that figure is taken; check 6 likewise
(``logs/ST-6-again.txt``: both ``--as-of`` runs ``identical``).

    python scripts/statutes_table.py /work/data/measure            # Markdown on standard output

Reads only those files (no legalir); a missing part prints ``?``, never a number it did not read.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

#: the converter's skip reasons, shortened for the table (the full reason is in each collection's manifest)
SHORT = (
    ("<h3> without a section number", "no number"),
    ("a file that is not a title of the code", "constitution"),
    ("a later version of a section", "later version"),
    ("a section number read twice", "read twice"),
    ("a section heading printed as a bold paragraph", "bold heading"),
    ("file without any section", "file without `<h3>`"),
    ("an <h3> outside any section", "`<h3>` outside"),
    ("two section numbers with one citation key", "one key"),
)
NAMES = {"ak": "Alaska", "ar": "Arkansas", "co": "Colorado", "ga": "Georgia", "id": "Idaho", "ky": "Kentucky",
         "ms": "Mississippi", "nc": "North Carolina", "nd": "North Dakota", "ri": "Rhode Island", "tn": "Tennessee",
         "va": "Virginia", "vt": "Vermont", "wy": "Wyoming"}


def short(reason: str) -> str:
    return next((s for long, s in SHORT if reason.startswith(long)), reason[:30])


def read_log(path: Path) -> dict:
    """{release: {...}} and the state's checks 4-6 from one held-out log."""
    rels: dict[str, dict] = {}
    out: dict = {"releases": rels}
    cur = None
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"(PASS|FAIL|SKIP)\s+(\S+) (.*)", line)
        if m is None:
            sk = re.match(r"\s+skipped (\d+): (.*?) \(first:", line)
            if sk and cur is not None:
                rels[cur]["skips"][short(sk.group(2))] = int(sk.group(1))
            h = re.match(r"# .* at (\w+)", line)
            if h and "commit" not in out:
                out["commit"] = h.group(1) + (" +" if "uncommitted" in line else "")
            continue
        verdict, check, rest = m.groups()
        r = re.search(r" r(\d+)\b", rest)
        if check == "1":
            cur = r.group(1)
            rels[cur] = {"skips": {}, "verdicts": {}}
        rel = rels.get(r.group(1)) if r and check in ("1", "2", "3", "3b") else None
        if rel is not None:
            rel["verdicts"][check] = verdict
        if check == "2" and rel is not None:
            n = re.search(r"converter (\d+) vs own reader (\d+)", rest)
            if n:
                rel["converter"], rel["count_sections"] = int(n.group(1)), int(n.group(2))
        elif check == "3" and rel is not None:
            rel["case_note_leaks"] = re.search(r"leaks=(\d+)", rest).group(1)
        elif check in ("4", "4b"):
            n = re.search(r"hit@1 ([\d.?]+) .*MRR ([\d.?]+), (\d+) topics", rest)
            out[check] = (verdict, n.group(1), n.group(2), n.group(3)) if n else (verdict, "?", "?", "?")
        elif check in ("5", "6"):
            out[check] = (verdict, "identical" if verdict == "PASS" else ("one release" if verdict == "SKIP" else
                                                                         "differ"))
    return out


def state_log(root: Path, st: str) -> dict:
    """:func:`read_log` of ``logs/ST.txt``, check 4b taken from ``logs/ST-4b-again.txt`` where it was run again on
    the same index after a fix (its ``legalir eval`` lines)."""
    lg = read_log(root / "logs" / f"{st}.txt")
    again = root / "logs" / f"{st}-4b-again.txt"
    if again.exists():
        ev = dict(re.findall(r"^(success_1|recip_rank)\s+all\s+([\d.]+)", again.read_text(encoding="utf-8"), re.M))
        if "success_1" in ev and "4b" in lg:
            lg["4b"] = ("PASS" if float(ev["success_1"]) >= 0.9 else "FAIL", ev["success_1"], ev["recip_rank"], lg["4b"][3])
            lg["4b again"] = True
    six = root / "logs" / f"{st}-6-again.txt"  # check 6 run again by hand (its cmp lines)
    if six.exists() and six.read_text(encoding="utf-8").count(" identical") >= 2:
        lg["6"] = ("PASS", "identical")
    return lg


def fmt(x) -> str:
    try:
        return f"{float(x):.3f}"
    except (TypeError, ValueError):
        return "?"


def rows(root: Path) -> list[str]:
    head = ["| code | release (date) | sections: converter / count_sections / independent reader (missing, extra; range members missing, extra) "
            "| skipped, by reason | leaks (independent reader): history / notes / case notes in contents; "
            "text not in contents; case notes under notes | hit@1 / MRR, with state | hit@1 / MRR, plain TSV "
            "| test topics | update = fresh; as-of = fresh | citations: document P / R; plain P / R |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    out = []
    for log in sorted((root / "logs").glob("??.txt")):
        st = log.stem
        lg = state_log(root, st)
        cites = {}
        cp = root / "cites" / f"{st}.json"
        if cp.exists():
            cites = {c["release"]: c for c in json.loads(cp.read_text(encoding="utf-8"))}
        rels = sorted(lg["releases"], key=int)
        for rel in rels:
            r = lg["releases"][rel]
            rp = root / "reports" / f"{st}-{rel}.json"
            date, indep, leaks = "?", "?", "?"
            if rp.exists():
                a = json.loads(rp.read_text(encoding="utf-8"))
                s, f = a.get("sections") or {}, a.get("fields") or {}
                date = a.get("release_date") or "?"
                if s:
                    indep = (f"{s['reader_sections']:,} ({s['missing_in_collection']:,}, {s['extra_in_collection']:,}; "
                             f"{s.get('range_members_missing', 0):,}, {s.get('range_members_extra', 0):,})")
                if f:
                    lk = f["leaks"]
                    leaks = (f"{lk['history_in_contents']}/{lk['notes_in_contents']}/{lk['case_notes_in_contents']}; "
                             f"{f['text_missing_from_contents']}; {f['case_notes_filed_under_notes']} "
                             f"({f.get('decisions_filed_under_notes', 0)})")
            skips = ", ".join(f"{k} {v:,}" for k, v in sorted(r["skips"].items(), key=lambda kv: -kv[1])) or "0"
            newest = rel == rels[-1]
            h, p = (lg.get("4"), lg.get("4b")) if newest else (None, None)
            hit = f"{fmt(h[1])} / {fmt(h[2])}" if h else ""
            plain = f"{fmt(p[1])} / {fmt(p[2])}" if p else ""
            topics = f"{int(h[3]):,}" if h and h[3].isdigit() else ""
            upd = f"{lg['5'][1]}; {lg['6'][1]}" if newest and "5" in lg else ""
            c = cites.get(rel, {}).get("systems", {})
            cit = "; ".join(f"{fmt(c[k]['precision'])} / {fmt(c[k]['recall'])}" for k in ("document", "plain")
                            if k in c) or "?"
            conv = r.get("converter")
            out.append(f"| {NAMES.get(st, st)} | {rel} ({date}) | {conv if conv is None else f'{conv:,}'} / "
                       f"{r.get('count_sections', '?'):,} / {indep} | {skips} | {leaks} | {hit} | {plain} | {topics} "
                       f"| {upd} | {cit} |")
    return head + out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    print("\n".join(rows(Path(argv[0]))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
