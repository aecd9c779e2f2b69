"""Housing Statute QA (Zheng et al. 2025, "A Reasoning-Focused Legal Retrieval Benchmark", CS&Law '25).

Published layout (``$DATA_DIR/housing_qa``, Hub dataset ``reglab/housing_qa``)::

    data/statutes.tsv.zip       statutes.tsv: idx, state (lower case), citation, path, text   ~1.84M rows
    data/questions.json.zip     questions.json: a JSON list, 6,853 questions with statute labels
        idx, state (capitalised), question, answer, question_group,
        statutes [{statute_idx, citation, excerpt}], original_question, caveats
    data/questions_aux.json.zip questions_aux.json: 9,297 questions without labels (QA only)

Each statute belongs to one jurisdiction, and a question is searched only
among its own jurisdiction's statutes: ``partition_field = "state"``, so the
collection holds one corpus folder per jurisdiction and ``legalir index``
builds one Lucene index per jurisdiction. Question states are matched to
statute states case-insensitively (:func:`legalir.legal.filters.partition_key`).

Options (``legalir convert housing_qa --option KEY=VALUE``):

* ``text``: what is indexed, ``+``-joined from ``citation``, ``path``
  (the heading path) and ``text``; default ``citation+path+text`` (see
  ``TEXT_DEFAULT`` for why).
* ``dangling``: ``error`` (default) or ``warn``: what to do when a labelled
  ``statute_idx`` is not in ``statutes.tsv`` or belongs to another
  jurisdiction than its question (it could never be retrieved).

``questions_aux`` is loadable (:meth:`HousingQA.questions_aux`) for QA but is
not a topic set: it has no statute labels.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
from legalir.datasets.tabular import first_existing, read_json, read_rows
from legalir.legal.filters import partition_key

_log = _logging.get(__name__)

STATUTE_COLUMNS = ("idx", "state", "citation", "path", "text")
TEXT_PARTS = ("citation", "path", "text")
#: Measured with BM25 on tests/fixtures/housing_qa (13 questions, 38 statutes; R@k any / all, MRR@10):
#:   text                 R@1 84.6  R@10 100  R@10(all) 92.3  MRR@10 89.4
#:   citation+text        R@1 84.6  R@10 100  R@10(all) 92.3  MRR@10 89.4
#:   path+text            R@1 84.6  R@10 100  R@10(all) 92.3  MRR@10 90.0
#:   citation+path+text   R@1 84.6  R@10 100  R@10(all) 92.3  MRR@10 90.0
#: The heading path (chapter subjects such as "Security Deposits", "Retaliation") helps a question
#: worded by subject; the citation neither helps nor hurts. The default indexes the whole published
#: record. A 13-question fixture cannot settle it for the real corpus: compare on real data with
#: `make run-housing HOUSING_TEXT=text` (after removing collections/housing_qa).
TEXT_DEFAULT = "citation+path+text"
PAPER = "Zheng et al. 2025, A Reasoning-Focused Legal Retrieval Benchmark (CS&Law '25)"


def _id(value: Any, where: str, what: str = "statute_idx") -> str:
    """An id as the TSV writes it: ints (and integral floats) to their digits."""
    if isinstance(value, bool) or value is None:
        raise DatasetError(f"{where}: {what} {value!r} is not an id")
    if isinstance(value, float):
        if not value.is_integer():
            raise DatasetError(f"{where}: {what} {value!r} is not an integer id")
        value = int(value)
    text = str(value).strip()
    if not text or any(c.isspace() for c in text):
        raise DatasetError(f"{where}: {what} {value!r} is empty or holds whitespace")
    return text


def parse_text_option(value: str) -> tuple[str, ...]:
    parts = tuple(p.strip().lower() for p in str(value).split("+") if p.strip())
    bad = [p for p in parts if p not in TEXT_PARTS]
    if not parts or bad or len(set(parts)) != len(parts):
        raise DatasetError(f"housing_qa: option text={value!r}: expected '+'-joined parts, each once, from "
                           f"{', '.join(TEXT_PARTS)} (e.g. {TEXT_DEFAULT})")
    return parts


@register
class HousingQA(Dataset):
    name = "housing_qa"
    required_files = ("data/statutes.tsv.zip", "data/questions.json.zip")
    hub_repo = "reglab/housing_qa"
    hub_files = ("data/statutes.tsv.zip", "data/questions.json.zip", "data/questions_aux.json.zip")
    partition_field = "state"
    citation_field = "citation"
    jurisdiction_field = "state"
    filter_fields = ("state",)

    measures = ("success.1", "success.10", "success.100", "success.1000",
                "recall_all.10", "recall_all.100", "recall_all.1000", "recip_rank_cut.10")
    judged_only = False
    references = (
        Reference("BM25", PAPER + ", upper bound", {"success_1": 14.72, "success_10": 40.81, "recip_rank_cut_10": 21.99,
                                                    "success_100": 62.41, "success_1000": 76.19}),
        Reference("E5-large-v2", PAPER + ", upper bound", {"success_1": 16.08, "success_10": 50.58,
                                                           "recip_rank_cut_10": 26.02, "success_100": 78.83,
                                                           "success_1000": 87.73}),
        Reference("E5-mistral-7b", PAPER + ", upper bound", {"success_1": 25.36, "success_10": 65.31,
                                                             "recip_rank_cut_10": 37.70, "success_100": 84.31,
                                                             "success_1000": 88.87}),
        # The paper prints an MRR@10 of 10.35 in its lower-bound table; MRR@10 has one definition
        # (first relevant statute), so it is not a column of its own here.
        Reference("BM25", PAPER + ", lower bound", {"recall_all_10": 18.31, "recall_all_100": 39.89,
                                                    "recall_all_1000": 59.68}),
    )

    options_spec = {
        "text": Option(f"what is indexed of each statute: '+'-joined parts of {', '.join(TEXT_PARTS)}",
                       TEXT_DEFAULT, check=lambda v: parse_text_option(v)),
        "dangling": Option("a question citing a statute that is not in the corpus: error, or warn and skip it",
                           "error", choices=("error", "warn")),
    }
    pipeline = Pipeline(short="housing", dense=True, sources=("data/*.zip", "data/*.tsv", "data/*.json"),
                        title="Housing Statute QA, per-jurisdiction search; R@k (any) = upper bound, "
                              "R@k (all) = lower bound")

    def __init__(self, root, **options):
        super().__init__(root, **options)
        self._questions: list[dict] | None = None
        self.text_parts = parse_text_option(options.get("text", TEXT_DEFAULT))
        self.options["text"] = "+".join(self.text_parts)  # recorded in the collection's manifest
        self.dangling = str(options.get("dangling", "error")).lower()

    # ------------------------------------------------------------ files
    def _file(self, stem: str) -> Path | None:
        return first_existing(self.root, (f"data/{stem}.zip", f"data/{stem}"))

    def check_files(self) -> None:
        missing = [f for f in self.required_files
                   if not (self.root / f).exists() and not (self.root / f[: -len(".zip")]).exists()]
        if missing:
            raise DatasetError(
                f"{self.name}: missing published file(s) under {self.root}: {', '.join(missing)}. "
                f"Run `legalir download {self.name}` when online (Hub: {self.hub_repo}), "
                f"or place the files there in the published layout.")

    # ------------------------------------------------------------ questions
    def _questions_file(self, stem: str) -> tuple[list[dict], str]:
        path = self._file(stem)
        if path is None:
            raise DatasetError(f"{self.name}: missing data/{stem}.zip under {self.root}")
        data, label = read_json(path, ".json")
        if not isinstance(data, list):
            raise DatasetError(f"{label}: expected a JSON list of questions, found {type(data).__name__}")
        return data, label

    def questions(self) -> list[dict]:
        """The labelled questions, validated; each gets ``qid``, ``gold`` (statute ids) and ``where``."""
        self.check_files()
        if self._questions is not None:
            return self._questions
        data, label = self._questions_file("questions.json")
        out, seen = [], {}
        empty = []
        for n, rec in enumerate(data, 1):
            where = f"{label}: question #{n}"
            if not isinstance(rec, dict):
                raise DatasetError(f"{where}: expected an object, found {type(rec).__name__}")
            missing = [k for k in ("idx", "state", "question", "statutes") if k not in rec]
            if missing:
                raise DatasetError(f"{where}: missing field(s) {', '.join(missing)}")
            qid = _id(rec["idx"], where, "idx")
            where = f"{where} (idx {qid})"
            if qid in seen:
                raise DatasetError(f"{where}: idx repeats question #{seen[qid]}")
            seen[qid] = n
            state = str(rec["state"] or "").strip()
            if not state:
                raise DatasetError(f"{where}: empty state")
            if not str(rec["question"] or "").strip():
                raise DatasetError(f"{where}: empty question")
            statutes = rec["statutes"]
            if not isinstance(statutes, list):
                raise DatasetError(f"{where}: 'statutes' must be a list of {{statute_idx, ...}} objects")
            gold = []
            for s in statutes:
                if not isinstance(s, dict) or "statute_idx" not in s:
                    raise DatasetError(f"{where}: a 'statutes' entry has no statute_idx: {s!r}"[:300])
                sid = _id(s["statute_idx"], where)
                if sid not in gold:
                    gold.append(sid)
            if not gold:
                empty.append(qid)
            out.append({**rec, "qid": qid, "state": state, "gold": gold, "where": where})
        if empty:
            _log.info(f"{self.name}: {len(empty)} question(s) without any labelled statute (kept as topics, "
                      f"no qrels; trec_eval skips them unless -c): {', '.join(empty[:10])}"
                      + (" ..." if len(empty) > 10 else ""))
        self._questions = out
        return out

    def questions_aux(self) -> list[dict]:
        """``questions_aux.json``: questions without statute labels, for QA only (no topics, no qrels)."""
        data, _ = self._questions_file("questions_aux.json")
        return data

    # ------------------------------------------------------------ corpus
    def documents(self) -> Iterator[Document]:
        self.check_files()
        questions = self.questions()
        wanted: dict[str, list[dict]] = {}
        for q in questions:
            for sid in q["gold"]:
                wanted.setdefault(sid, []).append(q)
        gold_state: dict[str, str] = {}
        states: set[str] = set()
        path = self._file("statutes.tsv")
        for line, row in read_rows(path, delimiter="\t", required=STATUTE_COLUMNS, suffix=".tsv"):
            sid = row["idx"].strip()
            if not sid or any(c.isspace() for c in sid):
                raise DatasetError(f"{path}:{line}: statute idx {row['idx']!r} is empty or holds whitespace")
            state = row["state"].strip()
            if not state:
                raise DatasetError(f"{path}:{line}: statute {sid} has an empty state")
            key = partition_key(state)
            states.add(key)
            if sid in wanted:
                gold_state[sid] = key
            contents = "\n".join(row[p].strip() for p in self.text_parts if row[p].strip())
            yield Document(sid, contents, {"state": state, "citation": row["citation"].strip()})
        self._check_golds(questions, gold_state, states, path)

    def _check_golds(self, questions: list[dict], gold_state: dict[str, str], states: set[str], path) -> None:
        unknown = [q for q in questions if partition_key(q["state"]) not in states]
        if unknown:
            q = unknown[0]
            raise DatasetError(f"{q['where']}: no statute of jurisdiction {q['state']!r} in {path}"
                               + (f" ({len(unknown)} questions in all)" if len(unknown) > 1 else "")
                               + f"; known: {', '.join(sorted(states))}")
        problems = []
        for q in questions:
            key = partition_key(q["state"])
            for sid in q["gold"]:
                if sid not in gold_state:
                    problems.append(f"{q['where']}: statute_idx {sid} is not in {path}")
                elif gold_state[sid] != key:
                    problems.append(f"{q['where']}: statute_idx {sid} is a statute of {gold_state[sid]!r}, not of "
                                    f"{key!r}: it can never be retrieved from that jurisdiction's index")
        if problems:
            msg = problems[0] + (f" ({len(problems) - 1} more such label(s))" if len(problems) > 1 else "")
            if self.dangling == "error":
                raise DatasetError(msg + "; pass --option dangling=warn to keep them as unretrievable labels")
            _log.warning(f"{self.name}: {len(problems)} unretrievable label(s), kept in the qrels:")
            for p in problems[:10]:
                _log.info(f"  {p}")

    # ------------------------------------------------------------ topics, qrels
    def topic_sets(self) -> dict[str, list[Topic]]:
        topics = []
        for q in self.questions():
            fields = {"state": q["state"]}
            for k in ("answer", "question_group"):
                if k in q and q[k] is not None:
                    fields[k] = q[k]
            topics.append(Topic(q["qid"], str(q["question"]).strip(), fields))
        return {"test": topics}

    def qrels_sets(self) -> dict[str, list[Judgement]]:
        return {"test": [Judgement(q["qid"], sid, 1) for q in self.questions() for sid in q["gold"]]}
