"""Reading published tables (CSV, TSV, JSON), optionally inside a ``.zip``, with clear errors.

Shared by the dataset modules whose releases are spreadsheets: every problem
is a :class:`DatasetError` naming the file (``archive.zip!member`` for a file
inside a zip) and the line where the record starts. Rows are streamed: a
table is never held in memory.
"""
from __future__ import annotations

import contextlib
import csv
import io
import json
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from legalir.datasets.dataset import DatasetError

#: Legal texts hold single fields of several MB; csv's default limit is 128 KiB.
FIELD_LIMIT = 2**31 - 1
csv.field_size_limit(FIELD_LIMIT)


def first_existing(root: Path, candidates: Sequence[str]) -> Path | None:
    """The first of ``candidates`` (paths relative to ``root``) that exists."""
    for c in candidates:
        if (root / c).exists():
            return root / c
    return None


@contextlib.contextmanager
def open_text(path: str | Path, suffix: str = "") -> Iterator[tuple[TextIO, str]]:
    """Open a UTF-8 text file, or the one member ending in ``suffix`` of a ``.zip``.

    Yields ``(file, label)`` where ``label`` names the file in messages.
    """
    p = Path(path)
    if not p.exists():
        raise DatasetError(f"{p}: file not found")
    if p.is_dir():
        raise DatasetError(f"{p}: is a directory, expected a file")
    if p.suffix.lower() != ".zip":
        with open(p, encoding="utf-8", newline="") as f:
            yield f, str(p)
        return
    try:
        zf = zipfile.ZipFile(p)
    except zipfile.BadZipFile:
        raise DatasetError(f"{p}: not a valid zip archive") from None
    with zf:
        names = [n for n in zf.namelist()
                 if not n.endswith("/") and not n.startswith("__MACOSX/") and not Path(n).name.startswith("._")]
        wanted = Path(p.stem).name  # statutes.tsv.zip -> statutes.tsv
        exact = [n for n in names if Path(n).name == wanted]
        matching = exact or [n for n in names if n.lower().endswith(suffix.lower())]
        if len(matching) != 1:
            raise DatasetError(f"{p}: expected one member named {wanted!r} in the archive, found: "
                               f"{', '.join(names) or 'none'}")
        member = matching[0]
        with zf.open(member) as raw:
            yield io.TextIOWrapper(raw, encoding="utf-8", newline=""), f"{p}!{member}"


def read_rows(path: str | Path, *, delimiter: str, required: Sequence[str],
              suffix: str = "") -> Iterator[tuple[int, dict[str, str]]]:
    """Stream a CSV/TSV with a header row as ``(line, {column: value})``.

    ``line`` is the line where the record starts (a quoted field may span
    lines). The header must hold every ``required`` column; every record must
    have as many fields as the header.
    """
    with open_text(path, suffix) as (f, label):
        reader = csv.reader(f, delimiter=delimiter, quotechar='"', doublequote=True, strict=False)
        try:
            header = next(reader, None)
        except (csv.Error, UnicodeDecodeError) as e:
            raise DatasetError(f"{label}:1: cannot read the header: {e}") from None
        if not header:
            raise DatasetError(f"{label}: file is empty, expected a header row")
        header = [h.strip().lstrip("\ufeff") for h in header]
        missing = [c for c in required if c not in header]
        if missing:
            raise DatasetError(f"{label}:1: missing column(s) {', '.join(missing)}; "
                               f"the header has: {', '.join(header)}")
        n = len(header)
        while True:
            start = reader.line_num + 1
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as e:
                raise DatasetError(f"{label}:{start}: malformed record: {e}") from None
            except UnicodeDecodeError as e:
                raise DatasetError(f"{label}: near line {start}: not UTF-8 text ({e.reason})") from None
            if not row:
                continue
            if len(row) != n:
                raise DatasetError(f"{label}:{start}: expected {n} fields as in the header, found {len(row)} "
                                   f"(an unquoted tab, comma or newline inside a field?)")
            yield start, dict(zip(header, row))


def read_json(path: str | Path, suffix: str = ".json") -> Any:
    """Load a JSON document (optionally the one member of a ``.zip``)."""
    with open_text(path, suffix) as (f, label):
        try:
            return json.load(f), label
        except json.JSONDecodeError as e:
            raise DatasetError(f"{label}:{e.lineno}: invalid JSON: {e.msg}") from None
        except UnicodeDecodeError as e:
            raise DatasetError(f"{label}: not UTF-8 text ({e.reason})") from None
