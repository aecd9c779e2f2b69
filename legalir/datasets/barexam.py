"""Bar Exam QA (Zheng et al. 2025, "A Reasoning-Focused Legal Retrieval Benchmark", CS&Law '25).

Published layout (``$DATA_DIR/barexam_qa``, Hub dataset ``reglab/barexam_qa``)::

    data/qa/{train,validation,test}.csv        954 / 124 / 117 questions
        idx, dataset, example_id, prompt_id, source, subject, question_number,
        prompt, question, choice_a..choice_d, answer, gold_passage, gold_idx
    data/passages/{train,validation,test}.tsv  the passage pool (~857K passages in all)
        idx, text, (source, faiss_id, ...)

Each file may also be its ``.zip`` (``test.tsv.zip``), read in place.

* Query = ``prompt`` + newline + ``question``; ``prompt`` is the fact pattern
  shared by several questions and may be empty (NaN in pandas).
* One relevant passage per question: ``gold_idx`` (relevance 1).
* The corpus is the union of the passage files (the paper's full pool);
  option ``pool=test`` (or any comma list of splits) restricts it to those
  files, and then only those splits' topics are written.
* ``source``, ``dataset``, ``subject`` and the other question columns are
  kept as topic metadata; a passage keeps its ``source``.

Every ``gold_idx`` must be in the pool: conversion fails, naming the CSV file
and line, when one is not (option ``dangling=warn`` keeps such labels in the
qrels, reported, as golds that can never be retrieved).
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from legalir.base import log as _logging
from legalir.datasets.dataset import (
    Dataset,
    DatasetError,
    Document,
    Judgement,
    Option,
    Pipeline,
    Reference,
    Topic,
    register,
)
from legalir.datasets.tabular import first_existing, read_rows

_log = _logging.get(__name__)

SPLITS = ("train", "validation", "test")
QA_REQUIRED = ("idx", "prompt", "question", "gold_idx")
QA_METADATA = ("dataset", "source", "subject", "example_id", "prompt_id", "question_number", "answer")
PASSAGE_REQUIRED = ("idx", "text")
_TREC_ID = re.compile(r"^\S+$")

PAPER = "Zheng et al. 2025, A Reasoning-Focused Legal Retrieval Benchmark (CS&Law '25)"


def query_text(prompt: str | None, question: str) -> str:
    """The retrieval query: the fact pattern (if any) then the question."""
    prompt = (prompt or "").strip()
    if prompt.lower() == "nan":
        prompt = ""
    question = question.strip()
    return f"{prompt}\n{question}" if prompt else question


@register
class BarExamQA(Dataset):
    name = "barexam_qa"
    required_files = ("data/qa/test.csv", "data/passages/test.tsv")
    hub_repo = "reglab/barexam_qa"
    #: what `legalir download` fetches (glob patterns in the Hub repository)
    hub_files = ("data/qa/train.csv", "data/qa/validation.csv", "data/qa/test.csv",
                 "data/passages/train.tsv", "data/passages/validation.tsv", "data/passages/test.tsv")

    measures = ("recall.1", "recall.10", "recall.100", "recall.1000", "recip_rank_cut.10")
    judged_only = False
    references = (
        Reference("BM25", PAPER, {"recall_1": 1.83, "recall_10": 5.03, "recip_rank_cut_10": 2.68,
                                  "recall_100": 9.99, "recall_1000": 20.52}),
        Reference("E5-large-v2", PAPER, {"recall_1": 3.13, "recall_10": 7.00, "recip_rank_cut_10": 4.25,
                                         "recall_100": 15.35, "recall_1000": 27.00}),
        Reference("E5-mistral-7b", PAPER, {"recall_1": 5.71, "recall_10": 15.25, "recip_rank_cut_10": 8.19,
                                           "recall_100": 34.10, "recall_1000": 56.28}),
        Reference("BM25 + structured-reasoning query expansion", PAPER, {"recall_10": 11.31, "recall_100": 26.39}),
    )

    options_spec = {
        "pool": Option("passage files making up the corpus: all, or a comma list of the splits "
                       "(train, validation, test)", "all"),
        "dangling": Option("a question whose gold passage is not in the pool: error, or warn and skip it",
                           "error", choices=("error", "warn")),
    }
    pipeline = Pipeline(short="barexam", dense=True, tune=("train", "validation"),
                        sources=("data/qa/*.csv*", "data/passages/*.tsv*"),
                        title="Bar Exam QA test, full passage pool")

    def __init__(self, root, **options):
        super().__init__(root, **options)
        self.dangling = str(options.get("dangling", "error")).lower()
        self._questions: dict[str, list[dict]] | None = None

    # ------------------------------------------------------------ files
    def _file(self, kind: str, split: str) -> Path | None:
        ext = "csv" if kind == "qa" else "tsv"
        return first_existing(self.root, (f"data/{kind}/{split}.{ext}", f"data/{kind}/{split}.{ext}.zip"))

    def check_files(self) -> None:
        missing = [f for f in self.required_files
                   if not (self.root / f).exists() and not (self.root / (f + ".zip")).exists()]
        if missing:
            raise DatasetError(
                f"{self.name}: missing published file(s) under {self.root}: {', '.join(missing)}. "
                f"Run `legalir download {self.name}` when online (Hub: {self.hub_repo}), "
                f"or place the files there in the published layout.")

    def pool_splits(self) -> list[str]:
        """Passage files making up the corpus, by split name."""
        self.check_files()
        option = str(self.options.get("pool", "all")).strip().lower()
        if option == "all":
            return [s for s in SPLITS if self._file("passages", s)]
        wanted = [s.strip() for s in option.split(",") if s.strip()]
        bad = [s for s in wanted if s not in SPLITS]
        if bad or not wanted:
            raise DatasetError(f"{self.name}: option pool={option!r}: expected 'all' or a comma list of "
                               f"{', '.join(SPLITS)}")
        absent = [s for s in wanted if not self._file("passages", s)]
        if absent:
            raise DatasetError(f"{self.name}: option pool={option!r}: no data/passages/{absent[0]}.tsv "
                               f"under {self.root}")
        return wanted

    def topic_splits(self) -> list[str]:
        """QA splits written as topic sets: every split present, or only the pool's splits."""
        self.check_files()
        option = str(self.options.get("pool", "all")).strip().lower()
        splits = [s for s in SPLITS if self._file("qa", s)]
        if option != "all":
            splits = [s for s in splits if s in self.pool_splits()]
        return splits

    # ------------------------------------------------------------ questions
    def questions(self, split: str) -> list[dict]:
        """The published question rows of ``split``, each with its ``line`` and ``file``."""
        path = self._file("qa", split)
        if path is None:
            raise DatasetError(f"{self.name}: no data/qa/{split}.csv under {self.root}")
        out, seen = [], {}
        for line, row in read_rows(path, delimiter=",", required=QA_REQUIRED):
            qid = row["idx"].strip()
            where = f"{path}:{line}"
            if not qid or not _TREC_ID.match(qid):
                raise DatasetError(f"{where}: idx {row['idx']!r} is empty or holds whitespace")
            if qid in seen:
                raise DatasetError(f"{where}: idx {qid!r} repeats line {seen[qid]}")
            seen[qid] = line
            if not row["question"].strip():
                raise DatasetError(f"{where}: empty question for {qid!r}")
            gold = row["gold_idx"].strip()
            if not gold or not _TREC_ID.match(gold):
                raise DatasetError(f"{where}: gold_idx {row['gold_idx']!r} of {qid!r} is empty or holds whitespace")
            out.append({**row, "idx": qid, "gold_idx": gold, "line": line, "file": str(path), "split": split})
        return out

    def _all_questions(self) -> dict[str, list[dict]]:
        if self._questions is not None:
            return self._questions
        qs = {s: self.questions(s) for s in self.topic_splits()}
        where: dict[str, str] = {}
        for s, rows in qs.items():
            for r in rows:
                if r["idx"] in where:
                    raise DatasetError(f"{r['file']}:{r['line']}: idx {r['idx']!r} is also in {where[r['idx']]}")
                where[r["idx"]] = f"{r['file']}:{r['line']}"
        self._questions = qs
        return qs

    # ------------------------------------------------------------ corpus
    def documents(self) -> Iterator[Document]:
        pool = self.pool_splits()
        golds = {r["gold_idx"]: r for rows in self._all_questions().values() for r in rows}
        if len(pool) < len(SPLITS):
            _log.info(f"{self.name}: passage pool = {', '.join(f'{s}.tsv' for s in pool)} "
                      f"({len(pool)} of the {len(SPLITS)} published passage files; the paper searches their union)")
        found: set[str] = set()
        for split in pool:
            path = self._file("passages", split)
            for line, row in read_rows(path, delimiter="\t", required=PASSAGE_REQUIRED, suffix=".tsv"):
                pid = row["idx"].strip()
                if not pid or not _TREC_ID.match(pid):
                    raise DatasetError(f"{path}:{line}: passage idx {row['idx']!r} is empty or holds whitespace")
                if pid in golds:
                    found.add(pid)
                fields = {"source": row["source"]} if "source" in row else {}
                yield Document(pid, row["text"], fields)
        dangling = [r for g, r in golds.items() if g not in found]
        if dangling:
            first = dangling[0]
            msg = (f"{first['file']}:{first['line']}: gold_idx {first['gold_idx']!r} of question {first['idx']!r} "
                   f"is not in the passage pool ({', '.join(f'data/passages/{s}.tsv' for s in pool)})"
                   + (f"; {len(dangling) - 1} more gold passage(s) missing" if len(dangling) > 1 else ""))
            if self.dangling == "error":
                raise DatasetError(msg + "; pass --option dangling=warn to keep them as unretrievable labels")
            _log.warning(f"{self.name}: {msg} (kept in the qrels)")

    # ------------------------------------------------------------ topics, qrels
    def topic_sets(self) -> dict[str, list[Topic]]:
        sets = {}
        for split, rows in self._all_questions().items():
            sets[split] = [
                Topic(r["idx"], query_text(r["prompt"], r["question"]),
                      {"split": split, **{k: r[k] for k in QA_METADATA if k in r}})
                for r in rows]
        return sets

    def qrels_sets(self) -> dict[str, list[Judgement]]:
        return {split: [Judgement(r["idx"], r["gold_idx"], 1) for r in rows]
                for split, rows in self._all_questions().items()}
