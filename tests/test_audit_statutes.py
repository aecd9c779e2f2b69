"""scripts/audit_statutes.py: the independent reader of the publisher's codes, against a real conversion.

The shared North Carolina archive (release 81, chapters 39-47) is extracted, converted with
`legalir convert statutes`, and read by the script (which imports nothing of legalir). The figures it
reads must be those of a sound conversion of a code legalir was tuned on: every section found, no
annotation in `contents`, the statutory text in it, the case notes in `case_notes`.
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys
import tarfile
from pathlib import Path

from click.testing import CliRunner
from conftest import needs

from legalir.cli import main

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "audit_statutes.py"
ARCHIVE = "cic-code-nc-r80-r81-ch39-47.tar.xz"


def shared_archive() -> Path | None:
    """../shared/data/statutes/ARCHIVE from the checkout (or from the main checkout above a worktree)."""
    for up in (ROOT.parent, ROOT.parent.parent):
        p = up / "shared" / "data" / "statutes" / ARCHIVE
        if p.exists():
            return p
    return None


def test_the_script_shares_no_code_with_legalir():
    tree = ast.parse(SCRIPT.read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "legalir" not in imported and imported <= {"__future__", "argparse", "glob", "json", "os", "random", "re",
                                                      "sys", "collections", "dataclasses", "lxml"}


def test_heading_numbers():
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import audit_statutes as a
    finally:
        sys.path.pop(0)
    assert a.parse_heading("§ 102a. Facsimile signature of Secretary of State.") == (["102a"], "one")
    assert a.parse_heading("Sec. 01.05.006. Adoption of Alaska Statutes") == (["01.05.006"], "one")
    assert a.parse_heading("§§ 32-34. Repealed. 1967, No. 377") == (["32", "34"], "range")
    assert a.parse_heading("2-10-1 through 2-10-39. [Reserved]") == (["2-10-1", "2-10-39"], "range")
    assert a.parse_heading("Secs. 02.10.020 , 02.10.030. Investigations") == (["02.10.020", "02.10.030"], "list")
    assert a.parse_heading("Subchapter 1 — General Provisions") is None
    assert a.expand(["32", "34"], "range") == ["32", "33", "34"]
    assert a.expand(["26-4-101", "26-4-1408"], "range") == ["26-4-101"]  # parts, not every integer
    assert a.classify_label("A.C.R.C. Notes") == "notes" and a.classify_label("HISTORY:") == "history"
    assert a.classify_label("Opinions of Attorney General.") == "case_notes"
    assert a._paragraph_label("A.C.R.C. Notes. Former § 1-4-101, which", None) == "A.C.R.C. Notes"


@needs(shared_archive() is not None, "the shared North Carolina statute archive (../shared/data/statutes) is absent")
def test_audit_of_the_shared_north_carolina_release(tmp_path):
    data = tmp_path / "data"
    with tarfile.open(shared_archive()) as tf:
        tf.extractall(data, filter="data")
    out = tmp_path / "nc-81"
    result = CliRunner().invoke(main, ["convert", "statutes", "--data-dir", str(data), "--option", "state=nc",
                                       "--option", "release=81", "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    report = tmp_path / "report.json"
    links = tmp_path / "links.tsv"
    eyeball = tmp_path / "eyeball.md"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--data-dir", str(data), "--state", "nc", "--release", "81",
                           "--collection", str(out), "--json", str(report), "--links-tsv", str(links),
                           "--eyeball", str(eyeball)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(report.read_text())
    s, f, lk = r["sections"], r["fields"], r["links"]
    assert r["files_read"] == 21 and not r["title_qualified_keys"]
    assert s["reader_headings"] == 1025
    # every section found, under its number; "§§ 45-1 through 45-3.1" counts 45-2 and 45-3, which the
    # collection does not enumerate (a range member, listed with its reason)
    assert s["missing_in_collection"] == s["extra_in_collection"] == s["section_number_mismatch"] == 0
    assert s["collection_documents"] == s["matched"] == 1232
    assert s["range_members_missing"] == 2 and s["reader_sections"] == 1234
    assert {d["key"] for d in s["differences"]} == {"45-2", "45-3"}
    assert r["reader"]["numbers_printed_without_chapter"] == 1        # "§ 1." under Chapter 41 is G.S. 41-1
    assert f["compared_sections"] == 1232
    # no case notes in contents; this archive's history in parentheses "(1949, c. 720, s. 1; ...)" run into the
    # text's last item (31 sections, every one of the history leaks is such a line) and one "Legal Periodicals. -"
    # note are in contents with the converter of 2026-11-28: at most that many
    assert f["leaks"]["case_notes_in_contents"] == 0
    assert f["leaks"]["history_in_contents"] <= 31 and f["leaks"]["notes_in_contents"] <= 1
    assert all(e["sentence"].startswith("(") for e in f["leak_examples"]["history"])
    assert {e["id"] for e in f["leak_examples"]["notes"]} <= {"nc_code_45_21_27", "nc_code_45_21_34", "nc_code_45_36_19"}
    assert f["text_missing_from_contents"] == 0
    # North Carolina's case-notes outline ("Analysis / I. In General / II. Decisions under Prior Law" and the
    # editor's note on the cases under it) is case notes: the regression this audit found (45 sections in notes,
    # 2026-11-28) is fixed (the block's kind decides, `codes` 9d52b48); at most 1, as before it
    assert f["case_notes_filed_under_notes"] <= 1
    # every annotation kind is read, and lands in its own field (history: or in contents, above)
    landed = f["blocks_landed"]
    assert landed["case_notes"]["case_notes"] > 0.99 * sum(landed["case_notes"].values())   # 5,413 of 5,414
    assert landed["notes"]["notes"] > 0.99 * sum(landed["notes"].values())                  # 2,714 of 2,715
    assert landed["history"]["history"] + landed["history"].get("contents", 0) > 0.9 * sum(landed["history"].values())
    assert landed["text"]["contents"] > 0.99 * sum(landed["text"].values())
    # the code's own links: written out, resolved, and carried by `citations` where they are in text or notes
    rows = links.read_text().splitlines()
    assert rows[0].split("\t")[:4] == ["citing", "citing_anchor", "kind", "cited"]
    assert len(rows) - 1 == lk["links"] > 1000
    assert lk["pairs_recall"] >= 0.95
    assert eyeball.read_text().count("\n## ") == 20
