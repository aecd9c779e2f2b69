"""The BEIR layout, read and validated once for every dataset published in it (ACORD, the sample).

::

    corpus.jsonl          {"_id", "text", ...}    one document per line
    queries.jsonl         {"_id", "text", ...}    one query per line
    qrels/<split>.tsv     header query-id<TAB>corpus-id<TAB>score, CSV quoting, integer scores

Every problem is reported with its file and line: a record without ``_id``
or ``text``, an ``_id`` that is neither a string nor an integer (an integer
is read as its digits, losslessly), a ``text`` that is not a string (a list
or object is refused, never stringified), a line that is not JSON or not UTF-8, a qrels file with another
header, a wrong number of columns, a score that is not an integer, a query
that is not in ``queries.jsonl``, broken CSV quoting.
"""
from __future__ import annotations

import csv
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ClassVar

from legalir.datasets.dataset import Dataset, DatasetError, Document, Judgement
from legalir.trec import iter_jsonl, json_type

QRELS_HEADER = ["query-id", "corpus-id", "score"]


def read_records(path: Path) -> Iterator[tuple[int, dict]]:
    """Numbered records holding '_id' (a string, or an integer read as its digits) and 'text' (a string),
    BEIR's corpus and queries layout; any other type is a located error."""
    for n, rec in iter_jsonl(path):
        if "_id" not in rec or "text" not in rec:
            raise DatasetError(f"{path}:{n}: expected an object with '_id' and 'text'")
        if not isinstance(rec["_id"], (str, int)) or isinstance(rec["_id"], bool) or str(rec["_id"]) == "":
            raise DatasetError(f"{path}:{n}: '_id' must be a non-empty string or number, found {rec['_id']!r} "
                               f"({json_type(rec['_id'])}); give a string or an integer")
        if not isinstance(rec["text"], str):
            raise DatasetError(f"{path}:{n}: field 'text' is {json_type(rec['text'])}; expected a string")
        yield n, rec


def read_qrels(path: Path, qid_of: Callable[[str], str | None], queries_file: str = "queries.jsonl") -> list[Judgement]:
    """Judgements of one BEIR qrels file; ``qid_of`` maps a published query id to ours (``None``: unknown)."""
    judgements: list[Judgement] = []
    try:
        with open(path, encoding="utf-8", newline="") as f:
            reader = csv.reader(f, delimiter="\t")
            header = next(reader, None)
            if header is None or [h.strip().lstrip("\ufeff") for h in header[:3]] != QRELS_HEADER:
                raise DatasetError(f"{path}:1: expected header 'query-id<TAB>corpus-id<TAB>score', found {header!r}")
            for row in reader:
                n = reader.line_num
                if not row:
                    continue
                if len(row) != 3:
                    raise DatasetError(f"{path}:{n}: expected 3 columns, found {len(row)}")
                query_id, docid, score = row
                qid = qid_of(query_id)
                if qid is None:
                    raise DatasetError(f"{path}:{n}: query {query_id!r} is not in {queries_file}")
                try:
                    rel = int(score)
                except ValueError:
                    raise DatasetError(f"{path}:{n}: score {score!r} is not an integer") from None
                judgements.append(Judgement(qid, docid, rel, str(path), n))
    except csv.Error as e:
        raise DatasetError(f"{path}:{reader.line_num}: malformed CSV ({e}); check the quoting") from None
    except UnicodeDecodeError as e:
        raise DatasetError(f"{path}: not UTF-8 text (byte {e.start}: {e.reason}); save it as UTF-8") from None
    return judgements


class BeirDataset(Dataset):
    """A dataset published in the BEIR layout: documents and qrels read here, topics by the subclass."""

    corpus_file: ClassVar[str] = "corpus.jsonl"
    queries_file: ClassVar[str] = "queries.jsonl"
    #: qrels/<split>.tsv files read, in order
    qrels_splits: ClassVar[tuple[str, ...]] = ("test",)

    def file(self, rel: str) -> Path:
        """The published file ``rel`` (a subclass may read it from elsewhere, e.g. a packaged copy)."""
        return self.root / rel

    def documents(self) -> Iterator[Document]:
        self.check_files()
        path = self.file(self.corpus_file)
        for n, rec in read_records(path):
            fields = {k: v for k, v in rec.items() if k not in ("_id", "text")}
            meta = fields.pop("metadata", None)
            if isinstance(meta, dict):
                fields.update(meta)
            yield Document(str(rec["_id"]), rec["text"], fields, str(path), n)

    def query_records(self) -> Iterator[tuple[int, dict]]:
        """Numbered, validated records of the queries file."""
        self.check_files()
        return read_records(self.file(self.queries_file))

    def qid_of(self) -> Callable[[str], str | None]:
        """Published query id -> topic id (identity by default)."""
        known = {str(rec["_id"]) for _, rec in self.query_records()}
        return lambda q: q if q in known else None

    def qrels_sets(self) -> dict[str, list[Judgement]]:
        self.check_files()
        qid_of = self.qid_of()
        return {split: read_qrels(self.file(f"qrels/{split}.tsv"), qid_of, self.queries_file)
                for split in self.qrels_splits}
