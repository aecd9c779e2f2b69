"""ACORD: Atticus Clause Retrieval Dataset (Wang et al., "ACORD: An
Expert-Annotated Retrieval Dataset for Legal Contract Drafting", ACL 2025).

Published layout (``$DATA_DIR/acord``)::

    corpus.jsonl          {"_id", "text"}                       3,931 clauses
    queries.jsonl         {"_id", "text", "metadata": {category, type, split, ...}}
    qrels/{train,valid,test}.tsv   header row, CSV quoting, scores 0-4 (stars - 1)
    query_formats.tsv     short / medium / long wording of each query (CRLF)

Query ids are free text with spaces and quotes, which a TREC file cannot
hold, so each topic gets a slug id (``"as is" clause`` -> ``as-is-clause``);
the original id is kept in the topic's ``query_id`` field.

The release ships inside legalir (``legalir/resources/acord``: the same files
compressed with xz, with the licence, README and citation): when ``--data-dir``
holds no ACORD file (``$DATA_DIR/acord/corpus.jsonl`` ...), that embedded copy
is read, so ``legalir convert acord`` needs no download. A copy under
``--data-dir`` always wins.

Clauses absent from a query's qrels are *unjudged*: ACORD is evaluated
judged-only (``legalir eval -J``). Relevance 0 is an explicit "irrelevant".
"""
from __future__ import annotations

import atexit
import csv
import lzma
import re
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from legalir.base import log
from legalir.datasets.beir import BeirDataset
from legalir.datasets.dataset import DatasetError, Pipeline, Reference, Topic, register

_log = log.get(__name__)

SPLITS = ("train", "valid", "test")
#: the release, compressed, inside the package
EMBEDDED = Path(__file__).resolve().parent.parent / "resources" / "acord"

_scratch: dict[Path, Path] = {}
_scratch_lock = threading.Lock()


def _decompressed(xz: Path, rel: str) -> Path:
    """A decompressed copy of the embedded file ``xz`` in a scratch folder removed at exit."""
    with _scratch_lock:
        if xz not in _scratch:
            root = _scratch.get(Path("/"))
            if root is None:
                root = Path(tempfile.mkdtemp(prefix="legalir-acord-"))
                atexit.register(shutil.rmtree, root, True)
                _scratch[Path("/")] = root
            out = root / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            with lzma.open(xz, "rb") as src, open(out, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            _scratch[xz] = out
        return _scratch[xz]
FORMATS = ("medium", "long")


def refuse_unreadable(root: Path, name: str, required: tuple[str, ...], xz: bool = True) -> None:
    """Stop (:class:`DatasetError`) when ``root`` holds files but none legalir reads as ``name``'s release.

    The copy shipped inside legalir is read only when the user gave nothing: no ``root`` folder, or an
    empty one. Files there that legalir cannot read (``corpus.jsonl.gz``, a renamed file) are never
    silently replaced by the built-in copy.
    """
    try:
        found = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    except OSError:
        return
    if found:
        shown = ", ".join(found[:5]) + (" ..." if len(found) > 5 else "")
        raise DatasetError(f"{root}: holds {shown} but none of the files legalir reads as {name}'s release "
                           f"({', '.join(required)}{', each possibly as .xz' if xz else ''}); decompress or rename them to these "
                           f"names, or remove {root} to use the copy shipped inside legalir")


def slug(text: str) -> str:
    """A TREC-safe topic id: lower case, runs of other characters become '-'."""
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    if not s:
        raise DatasetError(f"query id {text!r} has no letters or digits")
    return s


def _match_key(text: str) -> str:
    """Loose key to match query wordings across files: case, punctuation and plural -s ignored."""
    words = re.sub(r"[^a-z0-9]+", " ", text.lower()).split()
    return " ".join(w[:-1] if len(w) > 3 and w.endswith("s") else w for w in words)


@register
class Acord(BeirDataset):
    name = "acord"
    required_files = ("corpus.jsonl", "queries.jsonl", "qrels/train.tsv", "qrels/valid.tsv", "qrels/test.tsv")
    hub_repo = "theatticusproject/acord"
    qrels_splits = SPLITS
    #: BM25 k1/b chosen on train+valid (`make tune-acord`), never on test
    pipeline = Pipeline(topics=("test", "test.medium", "test.long"), tune=("train", "valid"),
                        bm25={"k1": 1.0, "b": 0.5}, dense=True,
                        sources=("*.jsonl", "*.tsv", "qrels/*.tsv"), title="ACORD test, judged-only")
    #: the copy read when ``root`` holds no published file (None: no fallback)
    embedded: ClassVar[Path | None] = EMBEDDED

    def __init__(self, root, **options):
        root = Path(root)
        if self.embedded is not None and not any(self._exists(root, f) for f in self.required_files):
            refuse_unreadable(root, self.name, self.required_files)
            root = self.embedded
        super().__init__(root, **options)

    @staticmethod
    def _exists(root: Path, rel: str) -> bool:
        return (root / rel).exists() or (root / f"{rel}.xz").exists()

    def file(self, rel: str) -> Path | None:
        """The published file ``rel`` (decompressed when only ``rel.xz`` is there), or None."""
        p = self.root / rel
        if p.exists():
            return p
        xz = self.root / f"{rel}.xz"
        return _decompressed(xz, rel) if xz.exists() else None

    def check_files(self) -> None:
        missing = [f for f in self.required_files if not self._exists(self.root, f)]
        if missing:
            super().check_files()  # the shared message naming what is missing

    #: measures reported by `make eval-acord`, judged-only, test split. K-star precision
    #: twice: starK_P as the benchmark documents it (hits / min(5, K-star clauses)),
    #: starK_rawP as the paper's tables compute it (hits / 5); the published rows are
    #: reproduced by the latter (MiniLM: 49.8 / 35.8 / 7.6 exactly), so they sit there.
    measures = ("ndcg_cut.5", "ndcg_cut.10", "star3_rawP.5", "star4_rawP.5", "star5_rawP.5",
                "star3_P.5", "star4_P.5", "star5_P.5")
    judged_only = True
    headline = "ndcg_cut_10"
    #: qrels grades are stars - 1 (the release's 1-5 star ratings)
    grade_names = {0: "1★", 1: "2★", 2: "3★", 3: "4★", 4: "5★"}
    references = (
        Reference("BM25", "Wang et al. 2025 (ACORD), Table 3",
                  {"ndcg_cut_5": 52.5, "ndcg_cut_10": 54.0, "star3_rawP_5": 50.9, "star4_rawP_5": 38.9, "star5_rawP_5": 9.0}),
        Reference("MiniLM bi-encoder", "Wang et al. 2025 (ACORD), Table 3",
                  {"ndcg_cut_5": 57.1, "ndcg_cut_10": 57.2, "star3_rawP_5": 49.8, "star4_rawP_5": 35.8, "star5_rawP_5": 7.6}),
        Reference("BM25 + fine-tuned cross-encoder", "Wang et al. 2025 (ACORD), Table 3",
                  {"ndcg_cut_5": 61.3, "ndcg_cut_10": 66.3, "star3_rawP_5": 59.4, "star4_rawP_5": 43.3, "star5_rawP_5": 11.3}),
        Reference("bi-encoder + fine-tuned cross-encoder", "Wang et al. 2025 (ACORD), Table 3",
                  {"ndcg_cut_5": 64.7, "ndcg_cut_10": 68.1, "star3_rawP_5": 61.6, "star4_rawP_5": 44.9, "star5_rawP_5": 12.2}),
    )

    # ------------------------------------------------------------ topics
    def queries(self) -> list[dict]:
        """The published query records, in file order, each with its slug ``qid``."""
        out, seen = [], {}
        path = self.file(self.queries_file)
        for n, rec in self.query_records():
            meta = rec.get("metadata") or {}
            split = meta.get("split")
            if split not in SPLITS:
                raise DatasetError(f"{path}:{n}: metadata.split {split!r} is not one of {SPLITS}")
            qid = slug(str(rec["_id"]))
            if qid in seen:
                raise DatasetError(
                    f"{path}:{n}: query {rec['_id']!r} and {seen[qid]!r} map to the same id {qid!r}")
            seen[qid] = rec["_id"]
            out.append({"qid": qid, "query_id": str(rec["_id"]), "text": str(rec["text"]), "split": split,
                        "category": meta.get("category", ""), "type": meta.get("type", "")})
        return out

    def query_formats(self) -> tuple[dict[str, dict[str, str]], list[str]]:
        """Medium and long wordings by qid, and the short wordings that matched no query.

        Short wordings are matched to query ids exactly, then by a loose key
        (case, punctuation and plural -s ignored) when that key is unique.
        """
        path = self.file("query_formats.tsv")
        if path is None:
            return {}, []
        queries = self.queries()
        exact = {q["query_id"]: q["qid"] for q in queries}
        loose: dict[str, list[str]] = {}
        for q in queries:
            loose.setdefault(_match_key(q["query_id"]), []).append(q["qid"])
        formats: dict[str, dict[str, str]] = {}
        unmatched: list[str] = []
        try:
            with open(path, encoding="utf-8", newline="") as f:
                rows = list(csv.reader(f, delimiter="\t"))
        except csv.Error as e:
            raise DatasetError(f"{path}: malformed CSV ({e}); check the quoting") from None
        except UnicodeDecodeError as e:
            raise DatasetError(f"{path}: not UTF-8 text (byte {e.start}: {e.reason}); save it as UTF-8") from None
        if not rows or len(rows[0]) < 3:
            raise DatasetError(f"{path}:1: expected a header with short, medium and long columns")
        for n, row in enumerate(rows[1:], 2):
            if not any(c.strip() for c in row):
                continue
            if len(row) < 3:
                raise DatasetError(f"{path}:{n}: expected 3 columns (short, medium, long), found {len(row)}")
            short, medium, long_ = (c.strip() for c in row[:3])
            qid = exact.get(short)
            if qid is None:
                candidates = loose.get(_match_key(short), [])
                qid = candidates[0] if len(candidates) == 1 else None
            if qid is None or qid in formats:
                unmatched.append(short)
                continue
            formats[qid] = {"medium": medium, "long": long_}
        return formats, unmatched

    def topic_sets(self) -> dict[str, list[Topic]]:
        queries = self.queries()
        sets: dict[str, list[Topic]] = {s: [] for s in SPLITS}
        for q in queries:
            fields = {k: q[k] for k in ("query_id", "split", "category", "type")}
            sets[q["split"]].append(Topic(q["qid"], q["text"], fields))
        formats, unmatched = self.query_formats()
        if unmatched:
            _log.warning(f"acord: {len(unmatched)} wording(s) in query_formats.tsv matched no query: "
                         + "; ".join(repr(u) for u in unmatched))
        if formats:
            for fmt in FORMATS:
                for s in SPLITS:
                    sets[f"{s}.{fmt}"] = [
                        Topic(q["qid"], formats[q["qid"]][fmt],
                              {"query_id": q["query_id"], "split": s, "category": q["category"], "format": fmt})
                        for q in queries if q["split"] == s and q["qid"] in formats and formats[q["qid"]][fmt]
                    ]
        return sets

    # ------------------------------------------------------------ qrels
    def qid_of(self) -> Callable[[str], str | None]:
        """Published query ids (free text) -> slug topic ids."""
        return {q["query_id"]: q["qid"] for q in self.queries()}.get
