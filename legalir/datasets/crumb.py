"""CRUMB: Complex Retrieval Unified Multi-task Benchmark (Killingback & Zamani 2025,
"Benchmarking Information Retrieval Models on Complex Retrieval Tasks", arXiv:2509.07253).

Source: ``$DATA_DIR/crumb`` is a local snapshot of the Hub dataset
``jfkback/crumb``: a ``README.md`` whose YAML header declares four configs,
each with one split per task (what ``datasets.load_dataset(<folder>, <config>,
split=<task>)`` reads):

=====================  ===================================================
``evaluation_queries``  ``query_id``, ``query_content``, ``instruction``,
``validation_queries``  ``passage_qrels``, ``passage_binary_qrels``,
                        ``full_document_qrels`` (lists of ``{id, label}``,
                        float labels), ``use_max_p``, ``metadata`` (JSON string)
``passage_corpus``      ``document_id`` (``<document id>:<chunk>``),
``full_document_corpus``  ``document_content`` (markdown), ``parent_id``,
                        ``metadata`` (JSON string)
=====================  ===================================================

On the Hub's main branch the files are JSON lines (``legal_qa/eval/query_labels.jsonl``
...); the Hub's parquet conversion (``<config>/<task>/0000.parquet``, no YAML
configs) is read too. The files of the one split needed are resolved from
the YAML header and streamed (JSON lines, JSON arrays, parquet; ``.gz``,
``.bz2``, ``.xz``, ``.zst`` compressed), so errors name the file and line, and
converting one task neither reads nor caches the other seven (which
``datasets.load_dataset`` would: it prepares every split of a config).

One dataset instance is one task and one corpus kind::

    legalir convert crumb --option task=legal_qa --option corpus=passage --out collections/crumb/legal_qa/passage

Topic sets: ``test`` (evaluation queries) and ``valid`` (validation queries);
each topic keeps ``instruction``, ``use_max_p`` and ``metadata`` (parsed).

Qrels sets (labels cast to int, as CRUMB's evaluator does; ``valid.*`` alike):

* ``test``: what the benchmark scores this collection's runs against:
  ``passage_qrels``, or ``full_document_qrels`` for the full-document corpus and,
  on the passage corpus, for the MaxP tasks (``clinical_trial``,
  ``tip_of_the_tongue``, ``set_operation_entity_retrieval``), whose passage runs
  are scored after MaxP (``legalir maxp``);
* ``test.binary``: ``passage_binary_qrels`` where published (only
  ``paper_retrieval``): CRUMB's Recall@k uses these;
* ``test.passage`` / ``test.full_document``: the other published qrels, when
  not already ``test``.

Ids holding whitespace or ``%`` (which a TREC file cannot hold) are stored
percent-encoded (:func:`legalir.trec.runformats.trec_id`); ``legalir convert-run
--to crumb`` writes the original ids back.
"""
from __future__ import annotations

import json
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
from legalir.trec.runformats import trec_id

_log = _logging.get(__name__)

TASKS = (
    "clinical_trial",
    "code_retrieval",
    "legal_qa",
    "paper_retrieval",
    "set_operation_entity_retrieval",
    "stack_exchange",
    "theorem_retrieval",
    "tip_of_the_tongue",
)
#: tasks scored with MaxP on the passage corpus, against full_document_qrels (CRUMB's USE_MAX_P)
MAXP_TASKS = ("clinical_trial", "set_operation_entity_retrieval", "tip_of_the_tongue")
#: tasks whose full-document corpus differs from the passage corpus (CRUMB's FULL_DOC_TASKS)
FULL_DOC_TASKS = ("clinical_trial", "legal_qa", "set_operation_entity_retrieval", "stack_exchange",
                  "tip_of_the_tongue")
#: tasks that publish passage_binary_qrels, used for Recall@k (CRUMB's HAS_BINARY_QRELS)
BINARY_QRELS_TASKS = ("paper_retrieval",)
#: task folders on the Hub's main branch (for downloads of one task)
HUB_FOLDERS = {t: ("scientific_paper" if t == "paper_retrieval" else t) for t in TASKS}

CORPORA = {"passage": "passage_corpus", "full_document": "full_document_corpus"}
TOPIC_SETS = {"test": "evaluation_queries", "valid": "validation_queries"}
QUERY_COLUMNS = ("query_id", "query_content", "instruction", "passage_qrels", "passage_binary_qrels",
                 "full_document_qrels", "use_max_p", "metadata")
CORPUS_COLUMNS = ("document_id", "document_content", "parent_id", "metadata")
#: depth of the runs the paper scores (passages, before MaxP)
RUN_DEPTH = 2000

_PAPER = "Killingback & Zamani 2025 (CRUMB), passage collection"


def _note(msg: str) -> None:
    _log.info(f"crumb: {msg}")


_SUFFIXES = (".jsonl", ".json", ".parquet")


def _readable(path: Path) -> bool:
    name = path.name
    for comp in (".gz", ".bz2", ".xz", ".zst"):
        name = name.removesuffix(comp)
    return name.endswith(_SUFFIXES)


def _open_text(path: Path):
    name = path.name
    if name.endswith(".gz"):
        import gzip
        return gzip.open(path, "rt", encoding="utf-8")
    if name.endswith(".bz2"):
        import bz2
        return bz2.open(path, "rt", encoding="utf-8")
    if name.endswith(".xz"):
        import lzma
        return lzma.open(path, "rt", encoding="utf-8")
    if name.endswith(".zst"):
        try:
            import zstandard
        except ImportError:
            raise DatasetError(f"{path}: zstd-compressed; pip install zstandard to read it") from None
        import io
        return io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(open(path, "rb")), encoding="utf-8")
    return open(path, encoding="utf-8")


def _read_rows(path: Path) -> Iterator[tuple[str, dict]]:
    """Records of one data file (JSON lines, a JSON array, or parquet), each with ``file:line`` for errors."""
    name = path.name
    for comp in (".gz", ".bz2", ".xz", ".zst"):
        name = name.removesuffix(comp)
    if name.endswith(".parquet"):
        import pyarrow.parquet as pq

        try:
            pf = pq.ParquetFile(path)
        except Exception as e:
            raise DatasetError(f"{path}: not a readable parquet file ({e})") from None
        n = 0
        for batch in pf.iter_batches(batch_size=2048):
            for rec in batch.to_pylist():
                yield f"{path} row {n}", rec
                n += 1
        return
    if not name.endswith((".jsonl", ".json")):
        raise DatasetError(f"{path}: unsupported data file type (expected .jsonl, .json or .parquet)")
    with _open_text(path) as f:
        n = 0
        first = True
        try:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                if first and line.lstrip().startswith("["):  # one JSON array, not JSON lines
                    yield from _json_array(path, line + f.read(), n)
                    return
                first = False
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as e:
                    raise DatasetError(f"{path}:{n}: invalid JSON: {e.msg}") from None
                if not isinstance(rec, dict):
                    raise DatasetError(f"{path}:{n}: expected a JSON object per line")
                yield f"{path}:{n}", rec
        except UnicodeDecodeError as e:
            raise DatasetError(f"{path}:{n + 1}: not UTF-8 text ({e.reason})") from None


def _json_array(path: Path, text: str, start: int) -> Iterator[tuple[str, dict]]:
    try:
        records = json.loads(text)
    except json.JSONDecodeError as e:
        raise DatasetError(f"{path}:{start + e.lineno - 1}: invalid JSON: {e.msg}") from None
    if not isinstance(records, list):
        raise DatasetError(f"{path}: expected JSON lines or one JSON array of objects")
    for k, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise DatasetError(f"{path}: array element {k} is not an object")
        yield f"{path} element {k}", rec


@register
class Crumb(Dataset):
    name = "crumb"
    hub_repo = "jfkback/crumb"
    required_files = ("README.md",)
    #: what `legalir download crumb` fetches: the card (its YAML names every file) and the data files
    hub_files = ("README.md", "*.jsonl", "*.jsonl.gz", "*.json", "*.parquet")

    options_spec = {
        "task": Option("the task converted (one collection per task)", choices=TASKS),
        "corpus": Option("passage (chunks, scored after MaxP where the task uses it) or full_document",
                         "passage", choices=tuple(CORPORA)),
    }
    pipeline = Pipeline(kind="passages", part_option="task", parts=TASKS, convert_options=("corpus=passage",),
                        title="CRUMB passage collection, evaluation queries: BM25, MaxP where the task uses it")

    @classmethod
    def part_sources(cls, part: str) -> tuple[str, ...]:
        """Published files of one task (relative to $DATA_DIR/crumb): its Hub folder and parquet configs."""
        folder = HUB_FOLDERS.get(part, part)
        return (f"{folder}/*", f"{folder}/*/*",
                *(f"{config}/{part}/*" for config in (*TOPIC_SETS.values(), *CORPORA.values())))

    @classmethod
    def part_qrels(cls, part: str) -> tuple[str, ...]:
        """Qrels sets a task's runs are scored on: ``test``, and ``test.binary`` where CRUMB publishes binary
        qrels (its Recall@k)."""
        return ("test", "test.binary") if part in BINARY_QRELS_TASKS else ("test",)

    #: CRUMB's headline measures; Recall@k on ``test.binary`` where the task has it
    measures = ("ndcg_cut.10", "recall.100,1000")
    judged_only = False
    report_scale = 1  # the paper prints fractions
    references = (
        Reference("BM25, average of 8 tasks", _PAPER,
                  {"ndcg_cut_10": 0.128, "recall_100": 0.235, "recall_1000": 0.447}),
        Reference("GTE-Qwen2-7B, average of 8 tasks", _PAPER,
                  {"ndcg_cut_10": 0.346, "recall_100": 0.587, "recall_1000": 0.809}),
        Reference("BM25, Legal QA", _PAPER,
                  {"ndcg_cut_10": 0.064, "recall_100": 0.257, "recall_1000": 0.520}),
        Reference("GTE-Qwen2-7B, Legal QA", _PAPER,
                  {"ndcg_cut_10": 0.428, "recall_100": 0.821, "recall_1000": 0.863}),
    )

    # ------------------------------------------------------------ options
    @property
    def task(self) -> str:
        task = self.options.get("task")
        if task is None:
            raise DatasetError(f"crumb: choose a task with --option task=<task>; tasks: {', '.join(TASKS)}")
        if task not in TASKS:
            raise DatasetError(f"crumb: unknown task {task!r}; tasks: {', '.join(TASKS)}")
        return task

    @property
    def corpus(self) -> str:
        corpus = self.options.get("corpus", "passage")
        if corpus not in CORPORA:
            raise DatasetError(f"crumb: unknown corpus {corpus!r}; choose one of: {', '.join(CORPORA)}")
        return corpus

    @property
    def full_documents(self) -> bool:
        """Scored as a full-document collection (CRUMB treats other tasks' full-document corpus as passages)."""
        return self.corpus == "full_document" and self.task in FULL_DOC_TASKS

    @property
    def uses_maxp(self) -> bool:
        """Passage runs of this task are scored after MaxP, against full_document_qrels."""
        return self.corpus == "passage" and self.task in MAXP_TASKS

    # ------------------------------------------------------------ loading
    def check_files(self) -> None:
        if not self.root.is_dir() or not ((self.root / "README.md").is_file() or any(
                (self.root / c).is_dir() for c in (*TOPIC_SETS.values(), *CORPORA.values()))):
            raise DatasetError(
                f"crumb: no snapshot of the Hub dataset {self.hub_repo} under {self.root} (expected README.md "
                f"with its configs). Run `legalir download crumb` when online, or place a snapshot there.")

    def _readme_configs(self) -> dict[str, dict[str, list[str]]] | None:
        """Config name -> {split: [path patterns]} from README.md's YAML header (None without one)."""
        path = self.root / "README.md"
        if not path.is_file():
            return None
        text = path.read_text(encoding="utf-8")
        if not text.startswith("---"):
            return None
        end = text.find("\n---", 3)
        if end < 0:
            raise DatasetError(f"{path}:1: YAML header opened with '---' but never closed")
        import yaml

        try:
            meta = yaml.safe_load(text[3:end]) or {}
        except yaml.YAMLError as e:
            line = getattr(getattr(e, "problem_mark", None), "line", None)
            raise DatasetError(f"{path}:{(line or 0) + 2}: invalid YAML header: {e}") from None
        configs = meta.get("configs") if isinstance(meta, dict) else None
        if not isinstance(configs, list):
            return None

        def patterns(value) -> list[str]:
            return [value] if isinstance(value, str) else [str(v) for v in value or []]

        out: dict[str, dict[str, list[str]]] = {}
        for c in configs:
            if not isinstance(c, dict) or "config_name" not in c:
                continue
            files = c.get("data_files")
            splits: dict[str, list[str]] = {}
            if isinstance(files, list) and files and isinstance(files[0], dict):
                for f in files:
                    splits.setdefault(str(f.get("split", "train")), []).extend(patterns(f.get("path")))
            elif isinstance(files, dict):
                splits = {str(k): patterns(v) for k, v in files.items()}
            elif files:
                splits = {"train": patterns(files)}
            out[str(c["config_name"])] = splits
        return out

    def data_files(self, config: str, task: str | None = None) -> list[Path]:
        """The files of one config's split: as README.md's ``configs`` declare them, else the Hub's
        parquet conversion layout (``<config>/<task>/*.parquet``)."""
        task = task or self.task
        self.check_files()
        configs = self._readme_configs()
        if configs is not None and config in configs:
            splits = configs[config]
            if task not in splits:
                raise DatasetError(f"crumb: {self.root / 'README.md'}: config {config!r} has no split {task!r}; "
                                   f"splits: {', '.join(splits) or 'none'}")
            files: list[Path] = []
            for pattern in splits[task]:
                matched = sorted(p for p in self.root.glob(pattern) if p.is_file())
                if not matched:
                    raise DatasetError(f"crumb: {self.root / pattern}: not found (declared in README.md for "
                                       f"config {config!r}, split {task!r})")
                files.extend(matched)
            return files
        folder = self.root / config
        if folder.is_dir():
            files = sorted(p for p in (folder / task).glob("*") if p.is_file() and _readable(p)) or sorted(
                p for p in folder.glob(f"{task}-*") if p.is_file() and _readable(p))
            if files:
                return files
            found = sorted({p.name.split("-")[0].split(".")[0] for p in folder.iterdir()})
            raise DatasetError(f"crumb: {folder}: no files for split {task!r}; found: {', '.join(found) or 'none'}")
        known = sorted(configs) if configs else sorted(
            p.name for p in self.root.iterdir() if p.is_dir() and not p.name.startswith("."))
        raise DatasetError(f"crumb: {self.root}: no config {config!r} (neither in README.md's configs nor a "
                           f"{config}/ folder); found: {', '.join(known) or 'none'}")

    def has_config(self, config: str) -> bool:
        configs = self._readme_configs() or {}
        return config in configs or (self.root / config).is_dir()

    def rows(self, config: str, task: str | None = None, columns: tuple[str, ...] = ()) -> Iterator[tuple[str, dict]]:
        """``(where, record)`` for every row of one config's split, streamed from its files.

        ``where`` is ``file:line`` (JSON lines) or ``file row n`` (parquet), for error messages.
        Every row must hold ``columns``.
        """
        for path in self.data_files(config, task):
            for where, rec in _read_rows(path):
                if columns:
                    missing = [c for c in columns if c not in rec]
                    if missing:
                        raise DatasetError(f"crumb: {where}: missing column(s) {', '.join(missing)} "
                                           f"(config {config!r}); found: {', '.join(rec) or 'none'}")
                yield where, rec

    def _metadata(self, value: Any, where: str) -> Any:
        if value is None or value == "":
            return {}
        if not isinstance(value, str):
            return value
        try:
            return json.loads(value)
        except json.JSONDecodeError as e:
            raise DatasetError(f"crumb: {where}: metadata is not valid JSON ({e.msg})") from None

    # ------------------------------------------------------------ corpus
    def documents(self) -> Iterator[Document]:
        task, corpus = self.task, self.corpus
        config = CORPORA[corpus]
        if corpus == "full_document" and task not in FULL_DOC_TASKS:
            _note(f"{task} has one collection (its full documents are its passages); "
                  f"it is scored with passage qrels, as CRUMB's evaluator does")
        encoded = 0
        for where, row in self.rows(config, task, CORPUS_COLUMNS):
            raw_id = row["document_id"]
            if raw_id in (None, ""):
                raise DatasetError(f"crumb: {where}: empty document_id")
            docid = trec_id(str(raw_id))
            encoded += docid != str(raw_id)
            fields: dict[str, Any] = {}
            if row["parent_id"] not in (None, ""):
                fields["parent_id"] = trec_id(str(row["parent_id"]))
            meta = row["metadata"]
            if meta not in (None, ""):
                self._metadata(meta, where)  # validated, kept as published
                fields["metadata"] = meta if isinstance(meta, str) else json.dumps(meta, ensure_ascii=False)
            content = row["document_content"]
            yield Document(docid, "" if content is None else str(content), fields)
        if encoded:
            _note(f"{encoded} document id(s) hold whitespace or '%': stored percent-encoded for TREC files")
        if corpus == "passage" and task in FULL_DOC_TASKS:
            sets = "'test', 'valid'" if self.uses_maxp else "'test.full_document', 'valid.full_document'"
            _note(f"qrels {sets} judge whole documents (the passages' parent_id): score passage runs "
                  f"against them after `legalir maxp`; the report below that they are missing from this "
                  f"passage corpus is expected")

    # ------------------------------------------------------------ topics
    def _query_rows(self, set_name: str) -> list[tuple[str, dict]] | None:
        config = TOPIC_SETS[set_name]
        if set_name != "test" and not self.has_config(config):
            _note(f"no {config} config under {self.root}: no {set_name!r} topics")
            return None
        return list(self.rows(config, self.task, QUERY_COLUMNS))

    def topic_sets(self) -> dict[str, list[Topic]]:
        sets: dict[str, list[Topic]] = {}
        for set_name, config in TOPIC_SETS.items():
            rows = self._query_rows(set_name)
            if rows is None:
                continue
            topics = []
            for where, row in rows:
                if row["query_id"] in (None, ""):
                    raise DatasetError(f"crumb: {where}: empty query_id")
                raw = str(row["query_id"])
                fields: dict[str, Any] = {"task": self.task}
                if trec_id(raw) != raw:
                    fields["query_id"] = raw
                fields["instruction"] = row["instruction"] or ""
                fields["use_max_p"] = bool(row["use_max_p"])
                fields["metadata"] = self._metadata(row["metadata"], where)
                topics.append(Topic(trec_id(raw), "" if row["query_content"] is None else str(row["query_content"]),
                                    fields))
            sets[set_name] = topics
        return sets

    # ------------------------------------------------------------ qrels
    def _judgements(self, rows: list[tuple[str, dict]], column: str, config: str) -> list[Judgement]:
        out: dict[tuple[str, str], int] = {}
        repeated = 0
        for where, row in rows:
            labels = row[column] or []
            if not isinstance(labels, list):
                raise DatasetError(f"crumb: {where}: {column} is not a list of {{id, label}}")
            qid = trec_id(str(row["query_id"]))
            for k, entry in enumerate(labels):
                if not isinstance(entry, dict) or entry.get("id") in (None, "") or entry.get("label") is None:
                    raise DatasetError(f"crumb: {where}: {column}[{k}] needs 'id' and 'label', found {entry!r}")
                try:
                    label = int(float(entry["label"]))
                except (TypeError, ValueError):
                    raise DatasetError(f"crumb: {where}: {column}[{k}] label {entry['label']!r} is not a number") \
                        from None
                key = (qid, trec_id(str(entry["id"])))
                repeated += key in out
                out[key] = label  # the last wins, as in CRUMB's evaluator; int() as it casts
        if repeated:
            _note(f"{config}/{self.task}: {repeated} repeated judgement(s) in {column}; the last one kept "
                  f"(as CRUMB's evaluator does)")
        return [Judgement(q, d, r) for (q, d), r in out.items()]

    def qrels_plan(self) -> dict[str, str]:
        """Qrels set suffix -> published column, for this task and corpus (see module doc)."""
        if self.full_documents:
            return {"": "full_document_qrels"}
        plan = {"": "full_document_qrels" if self.uses_maxp else "passage_qrels"}
        if self.uses_maxp:
            plan[".passage"] = "passage_qrels"
        else:
            if self.task in BINARY_QRELS_TASKS:
                plan[".binary"] = "passage_binary_qrels"
            plan[".full_document"] = "full_document_qrels"
        return plan

    def qrels_sets(self) -> dict[str, list[Judgement]]:
        sets: dict[str, list[Judgement]] = {}
        for set_name, config in TOPIC_SETS.items():
            rows = self._query_rows(set_name)
            if rows is None:
                continue
            for suffix, column in self.qrels_plan().items():
                judgements = self._judgements(rows, column, config)
                if judgements:
                    sets[set_name + suffix] = judgements
                elif not suffix:
                    _note(f"{config}/{self.task}: {column} is empty: no {set_name!r} qrels")
        return sets
