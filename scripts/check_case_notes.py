#!/usr/bin/env python3
"""No case-note text in ``contents``: the held-out check of ``legalir convert statutes`` (docs/statutes.md).

``check_case_notes.py COLLECTION`` reads the collection's documents (``corpus/*.jsonl``) and counts the
documents whose ``contents``

* holds a sentence (40 characters or more) of any document's ``case_notes`` (unless every case-note
  paragraph holding it names the document's own section or is one of its own case notes: a decision quoting
  the statute), or
* holds a line that is a case-note heading: CASE NOTES, NOTES TO DECISIONS, NOTES TO UNPUBLISHED
  DECISIONS, JUDICIAL DECISIONS, DECISIONS UNDER PRIOR LAW, OPINIONS OF THE ATTORNEY GENERAL, ANNOTATION
  (Colorado), or a paragraph opening "Attorney General Opinions." / "Cited:" (Tennessee), or
* holds, anywhere, one of these headings as the publisher prints it (``NOTES TO DECISIONS``, ``CASE NOTES``,
  ``JUDICIAL DECISIONS``, ``OPINIONS OF THE ATTORNEY GENERAL``, ``Notes to Unpublished Decisions``), or a
  paragraph of case notes run into the text (``Cited: Finch v. Frymire ...``, ``Attorney General Opinions.
  ... OAG 03-162``).

Prints ``leaks=N documents=M case_note_sentences=S`` and the first leaks; exit status 1 when N > 0.
Standard library only.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HEADINGS = re.compile(r"^(?:case notes|notes to decisions|notes to unpublished decisions|judicial decisions|"
                      r"decisions under prior law|opinions of (?:the )?attorney general|attorney general opinions|"
                      r"annotation)\s*[.:]?\s*$|^(?:attorney general opinions|opinions of (?:the )?attorney general)"
                      r"\s*[.:]\s|^cited:\s", re.I)
ANYWHERE = re.compile(r"\b(?:NOTES TO DECISIONS|CASE NOTES|JUDICIAL DECISIONS|OPINIONS OF THE ATTORNEY GENERAL|"
                      r"Notes to Unpublished Decisions|NOTES TO UNPUBLISHED DECISIONS)\b|"
                      r"\bCited: [A-Z]|\bAttorney General Opinions\. [A-Z]|\bOAG \d{2}-\d{2,4}\b")
SPLIT = re.compile(r"(?<=[.;:?!])\s+|\n")


def sentences(text: str) -> set[str]:
    return {s.strip() for s in SPLIT.split(text) if len(s.strip()) >= 40}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: check_case_notes.py COLLECTION", file=sys.stderr)
        return 2
    files = sorted(Path(argv[0]).glob("corpus/*.jsonl"))
    if not files:
        print(f"no corpus/*.jsonl under {argv[0]}", file=sys.stderr)
        return 2
    docs = [json.loads(line) for f in files for line in f.open(encoding="utf-8") if line.strip()]
    case: dict[str, list[str]] = {}  # sentence -> the case-note paragraphs holding it
    for d in docs:
        for para in d["case_notes"].split("\n"):
            for sent in sentences(para):
                case.setdefault(sent, []).append(para)
    leaks = []
    for d in docs:
        heads = [ln for ln in d["contents"].split("\n") if HEADINGS.match(ln.strip())]
        heads += [m.group(0) for m in ANYWHERE.finditer(d["contents"])][:1]
        own = re.compile(rf"(?<![\w.-]){re.escape(d['section'])}(?![\w-]|\.\d)") if d.get("section") else None
        # a decision quoting the statute ("O.C.G.A. § 23-1-15 states that ... The rule is otherwise ..."):
        # the case note's paragraph names the document's own section; not a leak
        # (or the document's own case notes hold it: "subdivision (a)(2) of this section provides that ...")
        mine = set(d["case_notes"].split("\n"))
        shared = sorted(x for x in sentences(d["contents"]) if x in case
                        and not (own and all(own.search(p) or p in mine for p in case[x])))
        if heads or shared:
            leaks.append((d["id"], (heads + shared)[0][:120]))
    print(f"leaks={len(leaks)} documents={len(docs)} case_note_sentences={len(case)}")
    for doc_id, what in leaks[:10]:
        print(f"  {doc_id}: {what!r}")
    return 1 if leaks else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
