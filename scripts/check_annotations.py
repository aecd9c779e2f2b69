#!/usr/bin/env python3
"""Annotations in the wrong field: the held-out check of ``legalir convert statutes`` by the field each
paragraph lands in (docs/statutes.md, "Every code the publisher publishes").

``check_annotations.py COLLECTION [-v]`` reads the collection's documents (``corpus/*.jsonl``) and counts, by
rules of its own (standard library only, no legalir), the documents with

* ``history in contents``: a line of ``contents`` that opens as a section's history does in any of the
  publisher's codes (``History.``, ``HISTORY:``, ``History of Section.``, ``Source:``, ``Derivation:``,
  Alaska's ``(§ 2 ch 59 SLA 1989)``, Tennessee's ``Acts 1988, ch. 1016, § 1``);
* ``notes in contents``: a line that is, or opens with, an editors' note heading of any of the codes
  (``Editor's notes. —``, ``Cross references.``, ``Effect of amendments. —``, ``Compiler's Notes.``,
  ``Michie's Jurisprudence.`` ...);
* ``case-note headings in contents``: a line that is a case-note heading (``NOTES TO DECISIONS``, ``CASE NOTES``,
  ``ANNOTATIONS``, ``Notes to Opinions``, ``OPINIONS OF THE ATTORNEY GENERAL``, ``Cited in`` ...);
* ``decisions cited in contents``: a line that cites a decision as case notes do (``Smith v. Jones, 806 P.2d
  281``, ``1907 Vt. LEXIS 135``, ``OAG 04-037``): a case note, or a statute naming a case (read the examples);
* ``decisions in notes``: a line of ``notes`` that cites a decision so (a case note filed as an editors'
  note), or is a case-note heading;
* ``history in notes``/``case_notes``: a line that is a history (``History.``, ``HISTORY:``, ``History of
  Section.``) outside ``history``.

Prints one line ``FIELD=N`` per count (documents), then with ``-v`` up to 5 examples each
(``id: the line``). Exit status 1 when a history, note or case-note heading is in ``contents``.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HISTORY = re.compile(
    r"^(?:History(?: of Section)?\s*[.:]|HISTORY:|Source:|Derivation:|\(§ [\d.]+ ch \d+ (?:[A-Z]+ )?SLA \d{4}"
    r"|Acts \d{4}, (?:ch\.|No\.) \d+, § \d|Laws,? \d{4}, ch\. \d+, § \d)")
NOTE_HEADS = (
    "editor's notes?", "editor's and revisor's notes", "revisor's notes?", "cross[- ]references?",
    "effect of amendments", "collateral references", "compiler's notes?", "administrative code",
    "legislative history reports", "annotator's notes?", "effective dates?", "law reviews?",
    "am\\. jur\\. 2d, alr and c\\.j\\.s\\. references", "research references", "michie's jurisprudence",
    "official comment", "comparative legislation", "amendment notes", "joint legislative committee note",
    "publisher's notes", "a\\.c\\.r\\.c\\. notes", "reenactments", "repealed sections",
    "meaning of “this act\\.”", "revision note", "prior law", "code commission notes", "the \\d{4} amendments?",
    "federal aspects", "library references", "severability", "applicability", "conflicting legislation",
)
NOTES = re.compile(r"^(?:" + "|".join(NOTE_HEADS) + r")\s*(?:[.:,]\s*)?(?:—|-|$)", re.I)
#: the note headings the publisher prints in capitals (a line in capitals otherwise is a statute's own heading,
#: ``EFFECTIVE DATE`` in a statutory form)
CAPS_NOTES = ("CROSS REFERENCES", "RESEARCH REFERENCES", "OFFICIAL COMMENT", "STATUTORY NOTES", "VIRGINIA COMMENT",
              "COMMENT TO OFFICIAL TEXT", "COMMISSIONER'S COMMENT", "PREFATORY NOTE", "EDITOR'S NOTES")
CASE_HEAD = re.compile(
    r"^(?:case notes|notes to decisions|notes to unpublished decisions|judicial decisions|decisions under prior law|"
    r"opinions of (?:the )?attorney general|attorney general opinions|annotations?|notes to opinions|"
    r"circuit court opinions|cited(?: in)?|quoted in|applied in|stated in)\s*[.:—-]*\s*$", re.I)
#: a decision cited as case notes cite it: "Smith v. Jones, 806 P.2d 281", "1907 Vt. LEXIS 135", "2014 WY 142"
DECISION = re.compile(r"\bv\. [^;]{1,120}?\d+ (?:[A-Z][A-Za-z.]*\s?){1,4}(?:\dd|\d[a-z]{2})? \d+"
                      r"|\b\d{4} [A-Z][A-Za-z.]*\.? (?:App\. )?LEXIS \d+|\b(?:OAG|Op\. Att'y Gen\.) \d")
HISTORY_WORD = re.compile(r"^(?:History(?: of Section)?\s*[.:]|HISTORY:)")
FIELDS = ("history in contents", "notes in contents", "case-note headings in contents", "decisions cited in contents",
          "decisions in notes", "history in notes", "history in case_notes")


def _norm(line: str) -> str:
    return line.replace("’", "'").strip()


def main(argv: list[str]) -> int:
    verbose = "-v" in argv
    args = [a for a in argv if a != "-v"]
    if len(args) != 1:
        print("usage: check_annotations.py COLLECTION [-v]", file=sys.stderr)
        return 2
    files = sorted(Path(args[0]).glob("corpus/*.jsonl"))
    if not files:
        print(f"no corpus/*.jsonl under {args[0]}", file=sys.stderr)
        return 2
    found: dict[str, list[tuple[str, str]]] = {f: [] for f in FIELDS}
    n = 0
    for f in files:
        for raw in f.open(encoding="utf-8"):
            if not raw.strip():
                continue
            d = json.loads(raw)
            n += 1
            hits: dict[str, str] = {}
            for line in map(_norm, d.get("contents", "").split("\n")):
                if HISTORY.match(line):
                    hits.setdefault("history in contents", line)
                elif NOTES.match(line) and (not line.isupper() or line.rstrip(".:— ") in CAPS_NOTES):
                    hits.setdefault("notes in contents", line)
                elif CASE_HEAD.match(line):
                    hits.setdefault("case-note headings in contents", line)
                elif DECISION.search(line):
                    hits.setdefault("decisions cited in contents", line)
            for line in map(_norm, d.get("notes", "").split("\n")):
                if CASE_HEAD.match(line) or DECISION.search(line):
                    hits.setdefault("decisions in notes", line)
                if HISTORY_WORD.match(line):
                    hits.setdefault("history in notes", line)
            for line in map(_norm, d.get("case_notes", "").split("\n")):
                if HISTORY_WORD.match(line):
                    hits.setdefault("history in case_notes", line)
            for k, line in hits.items():
                found[k].append((d["id"], line))
    print(f"documents={n} " + " ".join(f"{k.replace(' ', '_')}={len(v)}" for k, v in found.items()))
    if verbose:
        for k, v in found.items():
            for doc_id, line in v[:5]:
                print(f"  {k}: {doc_id}: {line[:140]!r}")
    return 1 if any(found[k] for k in FIELDS[:3]) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
