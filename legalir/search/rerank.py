"""Rerank the top k of any run: a cross-encoder, or an LLM (pointwise, listwise, pairwise).

    from legalir.search import rerank
    scorer = rerank.CrossEncoderScorer("models/acord-ce")
    new_run = rerank.rerank(run, topics, rerank.collection_texts("collections/acord", run, k=100), scorer, k=100)
    new_run = rerank.ListwiseReranker(generator).rerank(run, topics, texts, k=100)

Every topic's top ``k`` documents (in trec_eval's order) are reordered;
documents below ``k`` keep their order *below* every reranked one.

Scorers (one score per pair, :func:`rerank`): pairs are scored in one
batched pass over all topics (sorted by length, so batches need little
padding), with a progress bar.

* :class:`CrossEncoderScorer`: a sentence-transformers ``CrossEncoder`` (a
  model folder or a Hub name); the score is the raw logit (no sigmoid: full
  resolution, same order).
* :class:`LLMJudge`: a pointwise judge through :mod:`legalir.datasets.generate`: a 1-5
  relevance grade (the ACORD paper's pointwise reranking: the grade is the
  score, the first-stage score breaks ties) or yes/no, parsed from free text
  by :func:`parse_grade` / :func:`parse_yes_no`. Answers that cannot be
  parsed are reported and ranked below every parsed one (never dropped).

LLM rerankers that compare documents (through any :mod:`legalir.datasets.generate`
backend and its disk cache: a re-run asks nothing twice):

* :class:`ListwiseReranker`: RankGPT's sliding window (window 20, step 10,
  from the bottom up; settable, several passes), the permutation prompt a
  data file (``judge-listwise.toml``); :func:`parse_permutation` survives
  repeated, missing and out-of-range identifiers.
* :class:`PairwiseReranker`: PRP, all pairs in both orders (score = wins), or
  its sliding (bubble-sort) variant; prompt ``judge-pairwise.toml``.
"""
from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from legalir import collections, trec
from legalir.base import atomic, log, models, numeric
from legalir.base.models import PRECISIONS, autocast, default_device, resolve_precision  # noqa: F401  (re-exported)
from legalir.search.arguments import check_k
from legalir.search.runner import SearchError
from legalir.trec import Run, Topic

_log = log.get(__name__)

DEFAULT_K = 100
DEFAULT_BATCH_SIZE = 32
WINDOW = 2048  # pairs tokenized and length-sorted together


class RerankError(SearchError):
    pass


# ---------------------------------------------------------------- inputs

def candidates(run: Mapping[str, Mapping[str, float]], k: int) -> dict[str, list[str]]:
    """Each topic's top ``k`` document ids, in trec_eval's order."""
    check_k(k, "rerank depth k")
    return {qid: [d for d, _ in trec.ranking(docs)[:k]] for qid, docs in run.items()}


def collection_texts(collection_dir: str | os.PathLike, docids: Iterable[str] | Mapping | None = None,
                     k: int | None = None, field: str = "contents", doc_text: str | None = None) -> dict[str, str]:
    """Texts of ``docids`` (or of a run's top ``k``) from a collection's JSONL corpus.

    ``docids`` may be a run (``{qid: {docid: score}}``): its top ``k``
    documents are loaded. Ids not in the collection raise a :class:`RerankError`.
    ``doc_text``: a template of the record's fields (:func:`legalir.indexing.encoders.record_text`, e.g. a
    statute's ``{citation} {title}\n{heading_path}\n{contents}``) instead of the one ``field``; a record without
    a field it names is a :class:`RerankError` naming the document.
    """

    wanted = _wanted(docids, k)
    out: dict[str, str] = {}
    for n, rec in enumerate(collections.iter_documents(collection_dir), 1):
        if wanted is None or rec["id"] in wanted:
            if doc_text is not None:
                out[rec["id"]] = _record_text(doc_text, rec, f"{Path(collection_dir) / 'corpus'}: document {n}")
                continue
            if field not in rec:
                raise RerankError(f"{collection_dir}: document {rec['id']!r} has no field {field!r}")
            out[rec["id"]] = str(rec[field])
    _check_found(wanted, out, str(collection_dir))
    return out


def index_texts(index_dir: str | os.PathLike, docids: Iterable[str] | Mapping, k: int | None = None,
                field: str = "contents", doc_text: str | None = None) -> dict[str, str]:
    """Texts of ``docids`` (or a run's top ``k``) from a Lucene index's stored raw JSON (``doc_text``: a template
    of the stored record's fields, as :func:`collection_texts`)."""
    from legalir.indexing import lucene

    wanted = _wanted(docids, k)
    if doc_text is None:
        out = dict(lucene.texts(index_dir, wanted or (), field=field))
    else:
        out = {}
        for d, rec in lucene.records(index_dir, wanted or ()).items():
            if rec is None:
                raise RerankError(f"{index_dir}: document {d!r} is stored as plain text, not a JSON record: the "
                                  f"document text {doc_text!r} needs its fields; give the collection (--collection)")
            out[d] = _record_text(doc_text, rec, f"{index_dir}: stored record")
    _check_found(wanted, out, str(index_dir))
    return out


def _record_text(template: str, rec: Mapping[str, Any], where: str) -> str:
    from legalir.indexing.encoders import EncoderError, record_text

    try:
        return record_text(template, rec)
    except EncoderError as e:
        raise RerankError(f"{where}: {e}") from None


def model_doc_text(model: str | os.PathLike) -> str:
    """The document text a cross-encoder was trained to read: the ``doc_text`` template that ``legalir train-ce``
    recorded in the model folder's ``legalir-train.json`` (``train-ce --doc-text``).

    A model without that record (one legalir did not train: a Hub cross-encoder, ``minilm``) and one trained
    before ``--doc-text`` existed read a record's ``contents``: ``{contents}``.
    """
    import json

    from legalir.indexing.encoders import DOC_TEXT, EncoderError, doc_text_fields
    path = models.resolve(model, error=RerankError) / models.TRAIN_RECORD
    if not path.is_file():
        return DOC_TEXT
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RerankError(f"{path}: not readable as the record of `legalir train-ce` ({e}); the document text the "
                          f"model was trained on cannot be known") from None
    template = record.get("doc_text", DOC_TEXT) if isinstance(record, dict) else None
    if not isinstance(template, str):
        raise RerankError(f"{path}: 'doc_text' must be a template string (got {template!r})")
    try:
        doc_text_fields(template)
    except EncoderError as e:
        raise RerankError(f"{path}: doc_text: {e}") from None
    return template


def _wanted(docids, k) -> set[str] | None:
    if docids is None:
        return None
    if isinstance(docids, Mapping):
        cands = candidates(docids, k) if k is not None else {q: list(d) for q, d in docids.items()}
        return {d for ds in cands.values() for d in ds}
    return set(docids)


def _check_found(wanted: set[str] | None, found: Mapping[str, str], where: str) -> None:
    if wanted is None:
        return
    missing = sorted(wanted - set(found))
    if missing:
        raise RerankError(f"{where}: {len(missing)} run document(s) not found (does the run belong to this "
                          f"collection?): {', '.join(missing[:10])}" + (" ..." if len(missing) > 10 else ""))


# ---------------------------------------------------------------- scorers

class Scorer(Protocol):
    """Scores (query, document) pairs; higher is more relevant."""

    def score(self, queries: Sequence[str], docs: Sequence[str], *, keys: Sequence[tuple[str, str]] | None = None,
              progress: bool = True) -> Sequence[float | None]: ...


class _Generating(Protocol):
    """What :func:`rerank_files` reads of a :class:`legalir.datasets.generate.Generator`: its generation count."""

    calls: int


class CrossEncoderScorer:
    """A sentence-transformers CrossEncoder; the score is its raw logit.

    With two or more labels (a classifier head), the score is the log-odds of the last label. ``doc_text`` is
    the document text the model was trained to read (:func:`model_doc_text`): give it documents written so
    (:func:`collection_texts` ``doc_text=``; :func:`rerank_files` does).
    """

    def __init__(self, model: str, *, max_length: int | None = None, batch_size: int = DEFAULT_BATCH_SIZE,
                 device: str | None = None, num_labels: int | None = None, precision: str = "auto"):
        from sentence_transformers import CrossEncoder

        self.model_name = model
        path = str(models.resolve(model, error=RerankError))
        self.doc_text = model_doc_text(path)
        self.device = device or default_device()
        self.precision = resolve_precision(precision, self.device)
        kwargs: dict[str, Any] = {"device": self.device}
        if num_labels is not None:
            kwargs["num_labels"] = num_labels
        try:
            self.ce = CrossEncoder(path, max_length=max_length, **kwargs)
        except OSError as e:
            raise RerankError(f"{model}: could not load a cross-encoder ({e})") from None
        self.max_length = int(max_length or self.ce.tokenizer.model_max_length or 512)
        if self.max_length > 100_000:  # tokenizers without a limit report a huge sentinel
            self.max_length = 512
        self.batch_size = batch_size

    @property
    def model(self):
        return self.ce.model

    @property
    def tokenizer(self):
        return self.ce.tokenizer

    def score(self, queries: Sequence[str], docs: Sequence[str], *, keys: Sequence[tuple[str, str]] | None = None,
              progress: bool = True) -> list[float]:
        return score_pairs(self.model, self.tokenizer, queries, docs, max_length=self.max_length,
                           batch_size=self.batch_size, progress=progress, precision=self.precision)


def score_pairs(model, tokenizer, queries: Sequence[str], docs: Sequence[str], *, max_length: int,
                batch_size: int = DEFAULT_BATCH_SIZE, progress: bool = False, desc: str = "rerank",
                precision: str = "fp32") -> list[float]:
    """Logits of a sequence-classification model for (query, doc) pairs; batches sorted by length."""
    import torch

    if len(queries) != len(docs):
        raise ValueError("queries and docs differ in length")
    n = len(queries)
    if n == 0:
        return []
    out = [0.0] * n
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    try:
        with torch.inference_mode(), log.progress(total=n, desc=desc, unit=" pairs", quiet=not progress) as bar:
            # windows of pairs sorted by length: little padding; lengths padded to a multiple of 16,
            # so few distinct shapes (bounded kernel caches, steady memory)
            for w in range(0, n, WINDOW):
                ids = range(w, min(n, w + WINDOW))
                enc = tokenizer([queries[i] for i in ids], [docs[i] for i in ids], truncation="longest_first",
                                max_length=max_length)
                order = sorted(range(len(ids)), key=lambda j: (len(enc["input_ids"][j]), j))
                for start in range(0, len(order), batch_size):
                    idx = order[start:start + batch_size]
                    batch = tokenizer.pad({k: [enc[k][j] for j in idx] for k in enc.keys()}, return_tensors="pt",
                                          pad_to_multiple_of=16)
                    batch = {k: v.to(device) for k, v in batch.items()}
                    with autocast(precision, str(device)):
                        logits = model(**batch).logits.float()
                    if logits.shape[-1] == 1:
                        s = logits[:, 0]
                    else:
                        logp = torch.log_softmax(logits, dim=-1)
                        s = logp[:, -1] - torch.log1p(-logp[:, -1].exp().clamp(max=1 - 1e-7))
                    for j, v in zip(idx, s.tolist()):
                        out[w + j] = float(v)
                    bar.update(len(idx))
    finally:
        model.train(was_training)
    return out


# ---------------------------------------------------------------- LLM judge

_LABELED = re.compile(
    r"(?:final\s+)?(?:relevance|score|grade|rating|rated|judg(?:e)?ment|answer|stars?)"
    r"(?:\s+(?:score|grade|rating|level))?\s*(?:is|of|=|:|-|—)?\s*\**\s*([1-5])(?:\.0+)?\b(?!\s*(?:/|out\s+of)\s*(?:[6-9]|10)\b)",
    re.IGNORECASE)
_OUT_OF = re.compile(r"\b([1-5])(?:\.0+)?\s*(?:/|out\s+of)\s*5\b", re.IGNORECASE)
_STARS = re.compile(r"\b([1-5])\s*(?:-\s*)?stars?\b", re.IGNORECASE)
_LONE = re.compile(r"^\W*([1-5])(?:\.0+)?\W*$")
_DIGIT = re.compile(r"(?<![\d.])([1-5])(?![\d.]|\s*(?:%|/\s*(?:[6-9]|10)))")


def parse_grade(text: str | None, lo: int = 1, hi: int = 5) -> int | None:
    """A relevance grade in ``[lo, hi]`` from a model's free-text answer, or None.

    In order of trust: the whole answer is one number (``"4"``, ``"**4**"``);
    a labelled grade (``"Score: 4"``, ``"Relevance: 3/5"``, the last one wins);
    ``"4/5"``, ``"4 out of 5"`` or ``"4 stars"``; else the last standalone
    digit in range. Numbers out of range or on other scales (``"7/10"``) are ignored.
    """
    if text is None:
        return None
    t = str(text).strip()
    if not t:
        return None
    t = re.sub(r"<think>.*?</think>", " ", t, flags=re.DOTALL | re.IGNORECASE)  # reasoning models' scratchpad
    for pattern, whole in ((_LONE, True), (_LABELED, False), (_OUT_OF, False), (_STARS, False), (_DIGIT, False)):
        if whole:
            m = pattern.match(t)
            matched = [m.group(1)] if m else []
        else:
            matched = pattern.findall(t)
        found = [int(x) for x in matched if lo <= int(x) <= hi]
        if found:
            return found[-1]
    return None


_YES = r"(?:yes|relevant|true)"
_NO = r"(?:no|not\s+relevant|irrelevant|non-?relevant|false)"


def parse_yes_no(text: str | None) -> bool | None:
    """Yes (True) / no (False) from a model's free-text answer, or None when absent or contradictory."""
    if text is None:
        return None
    t = re.sub(r"<think>.*?</think>", " ", str(text), flags=re.DOTALL | re.IGNORECASE).strip().lower()
    if not t:
        return None
    labeled = re.findall(rf"(?:answer|judg(?:e)?ment|verdict|relevan(?:t|ce)|decision)\s*(?:is|:|=|-)\s*\**\s*({_NO}|{_YES})\b", t)
    if labeled:
        return not re.fullmatch(_NO, labeled[-1])
    no = re.findall(rf"\b{_NO}\b", t)
    t_wo_no = re.sub(rf"\b{_NO}\b", " ", t)
    yes = re.findall(rf"\b{_YES}\b", t_wo_no)
    m = re.match(rf"^\W*({_NO}|{_YES})\b(?!\s*:)", t)
    if m:  # a leading verdict, unless the other one follows ("yes and no")
        lead_no = bool(re.fullmatch(_NO, m.group(1)))
        return None if (yes if lead_no else no) else not lead_no
    if yes and not no:
        return True
    if no and not yes:
        return False
    return None


class LLMJudge:
    """Pointwise relevance judge through a :mod:`legalir.datasets.generate` generator.

    ``scale`` is ``"graded"`` (1-5, :func:`parse_grade`) or ``"binary"``
    (yes/no, :func:`parse_yes_no`; yes = 1, no = 0). The prompt is a data file
    (``legalir/resources/prompts/judge-graded.toml`` / ``judge-binary.toml``) or
    any file given as ``prompt``; it may use ``{query}`` and ``{document}``.
    Documents are cut to ``max_doc_chars`` characters.
    """

    def __init__(self, generator, scale: str = "graded", prompt: str | os.PathLike | None = None,
                 max_doc_chars: int = 6000, quiet: bool = False):
        from legalir.search import expansion

        if scale not in ("graded", "binary"):
            raise RerankError(f"judge scale must be 'graded' or 'binary' (got {scale!r})")
        self.generator = generator
        self.scale = scale
        self.template = expansion.load_prompt(prompt or f"judge-{scale}")
        missing = {"query", "document"} - self.template.fields
        if missing:
            raise RerankError(f"{self.template.path}: a judge prompt needs {{query}} and {{document}} "
                              f"(missing {', '.join(sorted(missing))})")
        self.max_doc_chars = max_doc_chars
        self.quiet = quiet
        self.unparsed: list[tuple[str, str, str]] = []  # (qid, docid, answer)

    def score(self, queries, docs, *, keys=None, progress=True) -> list[float | None]:
        from legalir.datasets import generate

        if keys is None:
            keys = [(str(i), str(i)) for i in range(len(queries))]
        requests = [
            generate.Request(key=f"{qid}\t{docid}", messages=self.template.messages(
                query=q, document=_cut(d, self.max_doc_chars)), qid=qid, docid=docid)
            for (qid, docid), q, d in zip(keys, queries, docs)
        ]
        answers = self.generator.generate(requests, progress=progress)
        self.last_requests, self.last_answers = requests, answers
        out: list[float | None] = []
        self.unparsed = []
        for (qid, docid), a in zip(keys, answers):
            v = parse_grade(a) if self.scale == "graded" else parse_yes_no(a)
            if v is None:
                self.unparsed.append((qid, docid, a))
                out.append(None)
            else:
                out.append(float(v))
        if self.unparsed and not self.quiet:
            ex = "; ".join(f"{q}/{d}: {a[:60]!r}" for q, d, a in self.unparsed[:3])
            _log.warning(f"{len(self.unparsed)} judge answer(s) had no {self.scale} verdict; ranked below "
                         f"every judged document, in first-stage order ({ex})")
        return out


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n].rsplit(" ", 1)[0] + " ..."


# ---------------------------------------------------------------- listwise and pairwise LLM reranking

def windows(n: int, window: int = 20, step: int = 10) -> list[tuple[int, int]]:
    """RankGPT's sliding windows over ranks ``[0, n)``, from the bottom up: ``[(start, end), ...]``.

    The last window starts at rank 0 (rank_llm's fix of RankGPT's loop, which
    skips the top when ``n - window`` is not a multiple of ``step``). One pass
    brings the best ``window - step`` documents to the top in order; ``p``
    passes the best ``p * (window - step)``.
    """
    if window < 2 or not 1 <= step < window:
        raise RerankError(f"listwise window must be >= 2 and step in [1, window) (got window={window}, step={step})")
    if n < 2:
        return []
    out, end = [], n
    while True:
        start = max(0, end - window)
        out.append((start, end))
        if start == 0:
            return out
        end -= step


_BRACKETED = re.compile(r"\[\s*(\d+)\s*\]")
_NUMBER = re.compile(r"(?<![\w.])(\d+)(?![\w.]|\.\d)")


def parse_permutation(text: str | None, n: int) -> tuple[list[int], set[str]]:
    """A window's new order (0-based positions) from a listwise answer, and what was wrong with it.

    Identifiers are ``[3]`` (else bare numbers), 1-based. Repeated ones keep
    their first mention, out-of-range ones are dropped, missing ones follow the
    ranked ones in their current relative order; an answer with no usable
    identifier leaves the window as it was. Problems: ``repeated``,
    ``out-of-range``, ``missing``, ``unparsable``.
    """
    t = re.sub(r"<think>.*?</think>", " ", str(text or ""), flags=re.DOTALL | re.IGNORECASE)
    ids = _BRACKETED.findall(t) or _NUMBER.findall(t)
    order: list[int] = []
    problems: set[str] = set()
    for x in ids:
        i = int(x) - 1
        if not 0 <= i < n:
            problems.add("out-of-range")
        elif i in order:
            problems.add("repeated")
        else:
            order.append(i)
    if not order:
        return list(range(n)), problems | {"unparsable"}
    rest = [i for i in range(n) if i not in order]
    if rest:
        problems.add("missing")
    return order + rest, problems


_PREF_LEAD = re.compile(r"^\W*(?:output\s*:?\s*)?(?:passage\s*)?([AB])\b(?!')", re.IGNORECASE)
_PREF_ANY = re.compile(r"\bpassage\s*([AB])\b", re.IGNORECASE)


def parse_preference(text: str | None) -> str | None:
    """``"A"`` or ``"B"`` from a pairwise answer (``"Passage B"``, ``"B"``), or None when absent or both named."""
    t = re.sub(r"<think>.*?</think>", " ", str(text or ""), flags=re.DOTALL | re.IGNORECASE).strip()
    m = _PREF_LEAD.match(t)
    if m:
        return m.group(1).upper()
    named = {x.upper() for x in _PREF_ANY.findall(t)}
    return named.pop() if len(named) == 1 else None


def _words(text: str, n: int) -> str:
    w = text.split()
    return " ".join(w[:n]) if n and len(w) > n else " ".join(w)


def _load_llm_prompt(name_or_path, default: str, needs: set[str]):
    from legalir.search import expansion

    template = expansion.load_prompt(name_or_path or default)
    missing = needs - template.fields
    if missing:
        raise RerankError(f"{template.path}: this prompt needs {', '.join('{' + f + '}' for f in sorted(needs))} "
                          f"(missing {', '.join(sorted(missing))})")
    return template


class _LLMReranker:
    """Shared by the listwise and pairwise rerankers: requests, answers, problems, request counts."""

    def __init__(self, generator, max_words: int, quiet: bool):
        self.generator = generator
        self.max_words = max_words
        self.quiet = quiet
        self.requests: list = []       # every request made (in order), for --save-generations
        self.answers: list[str] = []
        self.problems: dict[str, int] = {}

    def _ask(self, requests: list, bar) -> list[str]:
        answers = self.generator.generate(requests, progress=False) if requests else []
        self.requests.extend(requests)
        self.answers.extend(answers)
        bar.update(len(requests))
        return answers

    def _note(self, problems: Iterable[str]) -> None:
        for p in problems:
            self.problems[p] = self.problems.get(p, 0) + 1

    def rerank(self, run: Mapping[str, Mapping[str, float]], topics: Mapping[str, Topic], texts: Mapping[str, str],
               k: int = DEFAULT_K, *, progress: bool = True) -> Run:
        cands = candidates(run, k)
        _check_inputs(cands, topics, texts)
        orders = self.order({q: topics[q].text for q in cands}, cands, texts, progress=progress)
        return run_from_orders(run, orders)

    def order(self, queries, cands, texts, progress=True) -> dict[str, list[str]]:  # pragma: no cover - abstract: each subclass orders
        raise NotImplementedError


class ListwiseReranker(_LLMReranker):
    """Listwise LLM reranking with RankGPT's sliding window (Sun et al. 2023).

    Over each topic's top ``k``: windows of ``window`` documents moved up by
    ``step`` from the bottom (:func:`windows`), ``passes`` times; each window is
    one request whose answer (a permutation, :func:`parse_permutation`)
    reorders it. Windows of all topics are asked together, window by window.
    Documents are cut to ``max_words`` words (RankGPT: 300). Through the
    generator's disk cache, a repeated window is not asked again.
    """

    def __init__(self, generator, window: int = 20, step: int = 10, passes: int = 1,
                 prompt: str | os.PathLike | None = None, max_words: int = 300, quiet: bool = False):
        super().__init__(generator, max_words, quiet)
        windows(window, window, step)  # validates
        if passes < 1:
            raise RerankError(f"listwise passes must be >= 1 (got {passes})")
        self.window, self.step, self.passes = window, step, passes
        self.template = _load_llm_prompt(prompt, "judge-listwise", {"query", "passages"})
        self.passage = _passage_format(self.template.path)

    def requests_per_topic(self, n: int) -> int:
        return self.passes * len(windows(n, self.window, self.step))

    def order(self, queries: Mapping[str, str], cands: Mapping[str, Sequence[str]], texts: Mapping[str, str],
              progress: bool = True) -> dict[str, list[str]]:

        from legalir.datasets import generate

        order = {q: list(c) for q, c in cands.items()}
        plan = {q: windows(len(c), self.window, self.step) * self.passes for q, c in cands.items()}
        total = sum(len(p) for p in plan.values())
        bad = 0
        with log.progress(total=total, desc="rerank listwise", unit=" windows", quiet=not progress) as bar:
            for j in range(max((len(p) for p in plan.values()), default=0)):
                todo = [(q, *plan[q][j]) for q in sorted(plan) if j < len(plan[q])]
                reqs = []
                for q, s, e in todo:
                    docs = order[q][s:e]
                    passages = "\n".join(self.passage.format(id=i + 1, text=_words(texts[d], self.max_words))
                                         for i, d in enumerate(docs))
                    reqs.append(generate.Request(
                        key=f"{q}\twindow:{','.join(docs)}", qid=q, docid=f"window:{','.join(docs)}",
                        messages=self.template.messages(query=queries[q], num=str(len(docs)), passages=passages)))
                for (q, s, e), answer in zip(todo, self._ask(reqs, bar)):
                    perm, problems = parse_permutation(answer, e - s)
                    window_docs = order[q][s:e]
                    order[q][s:e] = [window_docs[i] for i in perm]
                    self._note(problems)
                    bad += bool(problems)
        if bad and not self.quiet:
            _log.warning(f"{bad} of {total} listwise answer(s) were malformed ("
                         + ", ".join(f"{p}: {n}" for p, n in sorted(self.problems.items()))
                         + "); repeated identifiers keep their first mention, out-of-range ones are ignored, missing "
                           "passages follow the ranked ones in their previous order, an unparsable answer leaves its "
                           "window unchanged")
        return order


class PairwiseReranker(_LLMReranker):
    """Pairwise Ranking Prompting (PRP, Qin et al. 2024): "which of two passages is more relevant?".

    ``variant="allpairs"``: every pair of each topic's top ``k`` is asked in
    both orders (``k (k - 1)`` requests); a document gets one point per answer
    preferring it, half a point for an answer that names neither (or both);
    documents are ranked by points, the first-stage order breaking ties.
    ``variant="sliding"``: ``passes`` bubble-sort passes from the bottom up
    (PRP-Sliding-K); each adjacent pair asked in both orders, swapped when the
    lower one gets more points; ``passes`` = K gives the exact top K.
    """

    VARIANTS = ("allpairs", "sliding")

    def __init__(self, generator, variant: str = "allpairs", passes: int = 10,
                 prompt: str | os.PathLike | None = None, max_words: int = 300, quiet: bool = False):
        super().__init__(generator, max_words, quiet)
        if variant not in self.VARIANTS:
            raise RerankError(f"pairwise variant must be one of {', '.join(self.VARIANTS)} (got {variant!r})")
        if passes < 1:
            raise RerankError(f"pairwise passes must be >= 1 (got {passes})")
        self.variant, self.passes = variant, passes
        self.template = _load_llm_prompt(prompt, "judge-pairwise", {"query", "passage_a", "passage_b"})
        self._unparsed = 0

    def requests_per_topic(self, n: int) -> int:
        if self.variant == "allpairs":
            return n * (n - 1)
        return sum(2 * (n - 1 - p) for p in range(min(self.passes, n - 1)))

    def _request(self, q: str, query: str, a: str, b: str, texts):
        from legalir.datasets import generate

        return generate.Request(key=f"{q}\tpair:{a}|{b}", qid=q, docid=f"pair:{a}|{b}", messages=self.template.messages(
            query=query, passage_a=_words(texts[a], self.max_words), passage_b=_words(texts[b], self.max_words)))

    def _points(self, answer: str) -> tuple[float, float]:
        pref = parse_preference(answer)
        if pref is None:
            self._note(["unparsable"])
            return 0.5, 0.5
        return (1.0, 0.0) if pref == "A" else (0.0, 1.0)

    def order(self, queries: Mapping[str, str], cands: Mapping[str, Sequence[str]], texts: Mapping[str, str],
              progress: bool = True) -> dict[str, list[str]]:

        total = sum(self.requests_per_topic(len(c)) for c in cands.values())
        with log.progress(total=total, desc=f"rerank pairwise ({self.variant})", unit=" requests",
                          quiet=not progress) as bar:
            out = self._allpairs(queries, cands, texts, bar) if self.variant == "allpairs" else \
                self._sliding(queries, cands, texts, bar)
        if self.problems and not self.quiet:
            _log.warning(f"{self.problems.get('unparsable', 0)} of {len(self.answers)} pairwise answer(s) "
                         "named neither passage (or both); each counted as a tie (half a point to each)")
        return out

    def _allpairs(self, queries, cands, texts, bar) -> dict[str, list[str]]:
        pairs = [(q, a, b) for q in sorted(cands) for i, a in enumerate(cands[q]) for b in cands[q][i + 1:]]
        reqs = [r for q, a, b in pairs for r in (self._request(q, queries[q], a, b, texts),
                                                 self._request(q, queries[q], b, a, texts))]
        answers = self._ask(reqs, bar)
        points = {q: {d: 0.0 for d in c} for q, c in cands.items()}
        for n, (q, a, b) in enumerate(pairs):
            pa, pb = self._points(answers[2 * n])
            qb, qa = self._points(answers[2 * n + 1])
            points[q][a] += pa + qa
            points[q][b] += pb + qb
        return {q: [d for _, d in sorted(((-points[q][d], i), d) for i, d in enumerate(c))]
                for q, c in cands.items()}

    def _sliding(self, queries, cands, texts, bar) -> dict[str, list[str]]:
        order = {q: list(c) for q, c in cands.items()}
        steps = {q: [i for p in range(min(self.passes, len(c) - 1)) for i in range(len(c) - 2, p - 1, -1)]
                 for q, c in cands.items()}
        for t in range(max((len(s) for s in steps.values()), default=0)):
            todo = [(q, steps[q][t]) for q in sorted(steps) if t < len(steps[q])]
            reqs = []
            for q, i in todo:
                upper, lower = order[q][i], order[q][i + 1]
                reqs += [self._request(q, queries[q], upper, lower, texts),
                         self._request(q, queries[q], lower, upper, texts)]
            answers = self._ask(reqs, bar)
            for n, (q, i) in enumerate(todo):
                pu, pl = self._points(answers[2 * n])
                ql, qu = self._points(answers[2 * n + 1])
                if pl + ql > pu + qu:
                    order[q][i], order[q][i + 1] = order[q][i + 1], order[q][i]
        return order


def _passage_format(path: Path) -> str:
    try:
        import tomllib
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    with open(path, "rb") as f:
        fmt = tomllib.load(f).get("passage", "[{id}] {text}")
    try:
        fmt.format(id=1, text="x")
    except (KeyError, IndexError, ValueError) as e:
        raise RerankError(f"{path}: 'passage' must be a template with {{id}} and {{text}} only ({e})") from None
    return fmt


def run_from_orders(run: Mapping[str, Mapping[str, float]], orders: Mapping[str, Sequence[str]]) -> Run:
    """A run whose topics start with ``orders[q]`` (scores n, n-1, ..., 1), then the rest of the run in its order."""
    out: Run = {}
    for q, docs in run.items():
        head = list(orders.get(q, []))
        seen = set(head)
        new = {d: float(len(head) - i) for i, d in enumerate(head)}
        rest = [d for d, _ in trec.ranking(docs) if d not in seen]
        for j, d in enumerate(rest):
            new[d] = float(-j)
        out[q] = new
    return out


def _check_inputs(cands: Mapping[str, Sequence[str]], topics: Mapping[str, Topic], texts: Mapping[str, str]) -> None:
    missing = sorted(q for q in cands if q not in topics)
    if missing:
        raise RerankError(f"{len(missing)} run topic(s) have no query in the topics file: "
                          + ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else ""))
    absent = sorted({d for ds in cands.values() for d in ds if d not in texts})
    if absent:
        raise RerankError(f"no text for {len(absent)} run document(s): " + ", ".join(absent[:10])
                          + (" ..." if len(absent) > 10 else ""))


# ---------------------------------------------------------------- rerank

def rerank(run: Mapping[str, Mapping[str, float]], topics: Mapping[str, Topic], texts: Mapping[str, str],
           scorer: Scorer, k: int = DEFAULT_K, *, progress: bool = True) -> Run:
    """Rerank each topic's top ``k`` with ``scorer``; documents below ``k`` follow in their old order.

    Scores that are ``None`` (an unparsable judge answer) rank below every
    scored document of the top ``k``, in first-stage order. Within equal
    scores (a judge's grades) the first-stage order is kept.
    """
    cands = candidates(run, k)
    _check_inputs(cands, topics, texts)
    keys = [(q, d) for q in sorted(cands) for d in cands[q]]
    scores = scorer.score([topics[q].text for q, _ in keys], [texts[d] for _, d in keys], keys=keys,
                          progress=progress) if keys else []
    by_topic: dict[str, dict[str, float | None]] = {}
    for (q, d), s in zip(keys, scores):
        if s is not None and not math.isfinite(s):
            raise RerankError(f"scorer returned {s} for topic {q!r}, document {d!r}")
        by_topic.setdefault(q, {})[d] = s
    out: Run = {}
    for q, docs in run.items():
        head = cands[q]
        got = by_topic.get(q, {})
        n = len(head)
        # first-stage rank breaks ties: a fraction < the smallest gap between distinct scores
        valid = sorted({s for s in got.values() if s is not None})
        gap = min((b - a for a, b in zip(valid, valid[1:])), default=1.0)
        eps = min(gap, 1.0) / (2 * (n + 1))
        ties = _has_ties(got)
        new: dict[str, float] = {}
        for i, d in enumerate(head):
            s = got.get(d)
            if s is not None:
                new[d] = s + eps * (n - i) if ties else s
        lowest = min(new.values(), default=0.0)
        rest = [d for d in head if got.get(d) is None] + [d for d, _ in trec.ranking(docs)[n:]]
        for j, d in enumerate(rest, 1):
            new[d] = lowest - j
        out[q] = new
    return out


def _has_ties(scores: Mapping[str, float | None]) -> bool:
    vals = [s for s in scores.values() if s is not None]
    return len(set(vals)) < len(vals)


# ---------------------------------------------------------------- files in, file out (the CLI's one call)

METHODS = ("cross-encoder", "pointwise", "listwise", "pairwise")


def rerank_files(out: str | os.PathLike, run_path: str | os.PathLike, topics_path: str | os.PathLike, *,
                 method: str | None = None, collection: str | os.PathLike | None = None,
                 index_dir: str | os.PathLike | None = None, k: int = DEFAULT_K, model: str | None = None,
                 judge: str | None = None, prompt: str | os.PathLike | None = None,
                 make_generator: Callable[[], _Generating] | None = None, window: int = 20, step: int = 10,
                 passes: int | None = None, pairwise: str = "allpairs", max_words: int = 300,
                 batch_size: int = DEFAULT_BATCH_SIZE, max_length: int | None = None, precision: str = "auto",
                 device: str | None = None, threads: int | None = None, tag: str | None = None,
                 save_generations: str | os.PathLike | None = None, force: bool = False,
                 doc_text: str | None = None) -> str:
    """Rerank the top ``k`` of the run file with ``method``, write ``out``; returns a one-line summary.

    The documents are read as the model was trained to read them: a cross-encoder folder written by
    ``legalir train-ce --doc-text`` declares its template (:func:`model_doc_text`), e.g. a statute's number and
    headings before its text; any other model, and the LLM methods, read a record's ``contents``. ``doc_text``
    overrides it (a template of the record's fields; with a cross-encoder trained on another text, a warning).

    ``method`` defaults to ``cross-encoder`` with ``model``, ``pointwise`` with
    ``judge`` (``graded`` 1-5 as the ACORD paper, or ``binary``). LLM methods
    take their generator from ``make_generator()``; ``save_generations``
    writes every request's answer as a precomputed-backend file. ``out`` may not be
    the run or the topics, nor a file legalir did not write unless ``force``
    (:func:`legalir.base.atomic.check_file`), checked before any model is loaded.
    """

    if str(run_path) == str(topics_path) == trec.STDIN:
        raise RerankError("standard input ('-') can be read once: give it as the run or as the topics, not both")
    atomic.check_file(out, [run_path, topics_path], force=force)
    method = method or ("pointwise" if judge else "cross-encoder")
    if method not in METHODS:
        raise RerankError(f"unknown rerank method {method!r}; known: {', '.join(METHODS)}")
    if (model is not None) != (method == "cross-encoder"):
        raise RerankError("--model goes with --method cross-encoder (and only with it)")
    if judge and method != "pointwise":
        raise RerankError("--judge goes with --method pointwise")
    if (collection is None) == (index_dir is None):
        raise RerankError("give exactly one of --collection or --index for the document texts")
    if method != "cross-encoder" and make_generator is None:
        raise RerankError(f"--method {method} needs a generator")
    from legalir.indexing.encoders import DOC_TEXT, EncoderError, doc_text_fields

    if doc_text is not None:
        try:
            doc_text_fields(doc_text)
        except EncoderError as e:
            raise RerankError(f"--doc-text: {e}") from None
    trained = model_doc_text(model) if method == "cross-encoder" and model is not None else DOC_TEXT
    if doc_text is not None and doc_text != trained:
        _log.warning(f"rerank: {model} was trained on documents written {trained!r}; reading them as "
                     f"{doc_text!r} (--doc-text) instead")
    template = trained if doc_text is None else doc_text
    with numeric.threads(threads, faiss=False):  # torch's count for this call only
        run = trec.read_run(run_path)
        topics = trec.read_topics(topics_path)
        fields = None if template == DOC_TEXT else template
        if collection:
            texts = collection_texts(collection, run, k=k, doc_text=fields)
        else:
            assert index_dir is not None  # exactly one of them, refused above otherwise
            texts = index_texts(index_dir, run, k=k, doc_text=fields)
        # a generator for every method but the cross-encoder's (refused above without one)
        gen = make_generator() if make_generator is not None and method != "cross-encoder" else None
        llm: LLMJudge | _LLMReranker | None = None
        if method == "cross-encoder":
            assert model is not None  # refused above without it
            scorer = CrossEncoderScorer(model, max_length=max_length, batch_size=batch_size, device=device,
                                        precision=precision)
            result = rerank(run, topics, texts, scorer, k=k)
        elif method == "pointwise":
            llm = LLMJudge(gen, scale=judge or "graded", prompt=prompt)
            result = rerank(run, topics, texts, llm, k=k)
        elif method == "listwise":
            listwise = ListwiseReranker(gen, window=window, step=step, passes=passes or 1, prompt=prompt,
                                        max_words=max_words)
            result, llm = listwise.rerank(run, topics, texts, k=k), listwise
        else:
            pairs = PairwiseReranker(gen, variant=pairwise, passes=passes or 10, prompt=prompt, max_words=max_words)
            result, llm = pairs.rerank(run, topics, texts, k=k), pairs
        n = trec.write_run(out, result, tag=tag or "rerank", inputs=[run_path, topics_path], force=force)
        msg = f"{out}: {n} lines for {len(result)} topics (top {k} reranked, {method}" + (
            f"; documents read as {template!r})" if fields else ")")
        if gen is not None:
            msg += f"; {gen.calls} generated, {getattr(gen, 'hits', 0)} from cache"
        if save_generations and llm is not None:
            from legalir.datasets import generate

            reqs, answers = _requests_of(llm)
            generate.write_generations(save_generations, reqs, answers)
            msg += f"; generations -> {save_generations}"
        return msg


def _requests_of(llm: LLMJudge | _LLMReranker) -> tuple[list, list[str]]:
    if isinstance(llm, _LLMReranker):
        seen: dict[str, int] = {}
        reqs: list = []
        answers: list[str] = []
        for r, a in zip(llm.requests, llm.answers):  # one line per distinct request (a window asked twice)
            if r.key not in seen:
                seen[r.key] = len(reqs)
                reqs.append(r)
                answers.append(a)
        return reqs, answers
    return llm.last_requests, llm.last_answers
