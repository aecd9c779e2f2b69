"""SCALR: Supreme Court Assessment of Legal Reasoning (Surani & Iyer), as LegalBench's task ``scalr``.

Each question presented to the Supreme Court comes with five "holding"
statements; one is the holding of the case. As retrieval, each question's
five choices are its candidate pool, ranked by a pool ranker
(:mod:`legalir.search.pool`), and accuracy is top-1 correctness: ``P.1`` (=
``success.1``, one relevant document per topic); ``recip_rank`` also applies.

Published layout (``$DATA_DIR/scalr``), as LegalBench ships it: the Hub
repository ``nguha/legalbench`` holds ``data.tar.gz`` whose ``data/scalr/``
has ``train.tsv`` (empty) and ``test.tsv`` (571 questions); newer revisions
of the repository hold the same rows as Parquet (``scalr/test-*.parquet``).
Accepted, first found per split::

    data/scalr/<split>.tsv   tasks/scalr/<split>.tsv   scalr/<split>.tsv   <split>.tsv
    scalr/<split>-*.parquet  data/scalr/<split>-*.parquet

Columns: ``question``, ``choice_0``..``choice_4``, the correct choice's
number 0-4 in ``answer`` (LegalBench) or ``correct_choice_index`` (the SCALR
release), and an id: ``index`` (LegalBench's row number, made unique across
splits: ``test-12``) or ``docket_number`` (the SCALR release).

Document ids are ``<qid>-c<k>``: one per question and choice (the same
holding text appears as a choice of several questions; each copy is its own
candidate). Each topic lists its candidates in the ``candidates`` field.
"""
from __future__ import annotations

import glob
from collections.abc import Iterator
from pathlib import Path

from legalir.datasets.dataset import (
    Dataset,
    DatasetError,
    Document,
    Judgement,
    Pipeline,
    Reference,
    Topic,
    register,
)
from legalir.datasets.tabular import read_rows

SPLITS = ("train", "test")
N_CHOICES = 5
CHOICES = tuple(f"choice_{k}" for k in range(N_CHOICES))
TSV_LOCATIONS = ("data/scalr/{s}.tsv", "tasks/scalr/{s}.tsv", "scalr/{s}.tsv", "{s}.tsv")
PARQUET_LOCATIONS = ("scalr/{s}-*.parquet", "data/scalr/{s}-*.parquet")
SOURCE = "SCALR (Surani & Iyer 2023) README / LegalBench task scalr, results table (172-question test split)"


def docid(qid: str, choice: int) -> str:
    return f"{qid}-c{choice}"


@register
class Scalr(Dataset):
    name = "scalr"
    required_files = ("data/scalr/test.tsv",)
    hub_repo = "nguha/legalbench"
    #: only the scalr files of LegalBench: Parquet/TSV under scalr/ if the repository has them,
    #: else the data/scalr/ members of data.tar.gz (see legalir.datasets.download)
    hub_files = ("scalr/*", "data/scalr/*")
    hub_archive = ("data.tar.gz", "data/scalr/")

    measures = ("P.1", "recip_rank")
    judged_only = False
    references = (
        Reference("TF-IDF bag of words", SOURCE, {"P_1": 27.9}),
        Reference("all-mpnet-base-v2 (embedding dot product)", SOURCE, {"P_1": 46.5}),
        Reference("gpt-4-0314 (one-shot, not retrieval)", SOURCE, {"P_1": 81.4}),
    )

    pipeline = Pipeline(kind="pool", sources=("data/scalr/*", "scalr/*", "*.tsv"),
                        title="SCALR (LegalBench test, all questions): P@1 = accuracy")

    def __init__(self, root, **options):
        super().__init__(root, **options)
        self._questions: dict[str, list[dict]] | None = None

    # ------------------------------------------------------------ files
    def split_files(self, split: str) -> list[Path]:
        for pattern in TSV_LOCATIONS:
            p = self.root / pattern.format(s=split)
            if p.exists():
                return [p]
        for pattern in PARQUET_LOCATIONS:
            found = sorted(glob.glob(str(self.root / pattern.format(s=split))))
            if found:
                return [Path(f) for f in found]
        return []

    def check_files(self) -> None:
        if not self.split_files("test"):
            raise DatasetError(
                f"{self.name}: missing published file under {self.root}: data/scalr/test.tsv (LegalBench's "
                f"scalr test split; scalr/test-*.parquet also accepted). Run `legalir download {self.name}` "
                f"when online (Hub: {self.hub_repo}), or place the file there.")

    def _rows(self, path: Path) -> Iterator[tuple[str, dict]]:
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq

            try:
                table = pq.read_table(path)
            except Exception as e:  # pyarrow raises several types for a bad file
                raise DatasetError(f"{path}: cannot read Parquet: {e}") from None
            cols = table.column_names
            self._check_columns(path, cols, "the file")
            for n, rec in enumerate(table.to_pylist(), 1):
                yield f"{path}: row {n}", {k: ("" if v is None else str(v)) for k, v in rec.items()}
        else:
            for line, row in read_rows(path, delimiter="\t", required=("question", *CHOICES)):
                yield f"{path}:{line}", row

    @staticmethod
    def _check_columns(path: Path, cols: list[str], what: str) -> None:
        missing = [c for c in ("question", *CHOICES) if c not in cols]
        if not {"answer", "correct_choice_index"} & set(cols):
            missing.append("answer (or correct_choice_index)")
        if not {"index", "docket_number"} & set(cols):
            missing.append("index (or docket_number)")
        if missing:
            raise DatasetError(f"{path}:1: missing column(s) {', '.join(missing)}; {what} has: {', '.join(cols)}")

    def questions(self) -> dict[str, list[dict]]:
        """Validated questions by split: ``qid``, ``question``, ``choices`` (5 texts), ``answer`` (0-4)."""
        if self._questions is not None:
            return self._questions
        self.check_files()
        out: dict[str, list[dict]] = {}
        seen: dict[str, str] = {}
        for split in SPLITS:
            rows = []
            for path in self.split_files(split):
                first = True
                for where, row in self._rows(path):
                    if first and path.suffix != ".parquet":
                        self._check_columns(path, list(row), "the header")
                    first = False
                    if "docket_number" in row and row["docket_number"].strip():
                        qid = row["docket_number"].strip()
                    elif "index" in row and row["index"].strip():
                        qid = f"{split}-{row['index'].strip()}"
                    else:
                        raise DatasetError(f"{where}: empty id (index / docket_number)")
                    if any(c.isspace() for c in qid):
                        raise DatasetError(f"{where}: id {qid!r} holds whitespace")
                    if qid in seen:
                        raise DatasetError(f"{where}: question id {qid!r} repeats {seen[qid]}")
                    seen[qid] = where
                    raw = (row.get("answer") if "answer" in row else row.get("correct_choice_index", "")).strip()
                    try:
                        value = float(raw)
                    except ValueError:
                        value = -1.0
                    answer = int(value) if value.is_integer() else -1
                    if answer not in range(N_CHOICES):
                        raise DatasetError(f"{where}: correct choice {raw!r} is not a number from 0 to {N_CHOICES - 1}")
                    question = row["question"].strip()
                    if not question:
                        raise DatasetError(f"{where}: empty question")
                    choices = [row[c] for c in CHOICES]
                    blank = [c for c, t in zip(CHOICES, choices) if not t.strip()]
                    if blank:
                        raise DatasetError(f"{where}: empty {', '.join(blank)}")
                    extra = {"docket_number": row["docket_number"]} if "docket_number" in row else {}
                    rows.append({"qid": qid, "question": question, "choices": choices, "answer": answer,
                                 "split": split, "where": where, **extra})
            if rows:
                out[split] = rows
        if "test" not in out:
            raise DatasetError(f"{self.name}: {self.split_files('test')[0]}: no questions in the test split")
        self._questions = out
        return out

    # ------------------------------------------------------------ corpus, topics, qrels
    def documents(self) -> Iterator[Document]:
        for split, rows in self.questions().items():
            for q in rows:
                for k, text in enumerate(q["choices"]):
                    yield Document(docid(q["qid"], k), text, {"question_id": q["qid"], "choice": k})

    def topic_sets(self) -> dict[str, list[Topic]]:
        return {split: [Topic(q["qid"], q["question"],
                              {"split": split, "candidates": [docid(q["qid"], k) for k in range(N_CHOICES)],
                               **({"docket_number": q["docket_number"]} if "docket_number" in q else {})})
                        for q in rows]
                for split, rows in self.questions().items()}

    def qrels_sets(self) -> dict[str, list[Judgement]]:
        """The correct choice is relevant (1); the four others are judged irrelevant (0)."""
        return {split: [Judgement(q["qid"], docid(q["qid"], k), int(k == q["answer"]))
                        for q in rows for k in range(N_CHOICES)]
                for split, rows in self.questions().items()}
