"""Train a dense retriever on a statute code's own cross-references (issue 40, ``legalir train-dense``).

The supervision is the codes' links: each paragraph of a code that links another section of it is a
question of the cross-reference benchmark (:meth:`legalir.datasets.statutes.Statutes.xref_examples`),
as written (``train``) and with its citations masked (``train.masked``); the linked sections are its
answers. A training pair is (paragraph, one linked section).

Recipe:

* a bi-encoder started from ``base_model`` (the bundled all-MiniLM-L6-v2 by default), mean pooling and
  L2 normalisation, the form :class:`legalir.indexing.encoders.Encoder` runs;
* loss: multiple-negatives ranking (InfoNCE): each paragraph against every section of its batch (the
  other pairs' sections are in-batch negatives) and ``hard_negatives`` sections per pair from BM25's top
  ``negatives_depth`` for the paragraph (citations off; the paragraph's linked sections never count as
  negatives, nor do another pair's sections that the paragraph links), cosine similarity x ``scale``;
* AdamW (weight decay not on biases and LayerNorm), linear warm-up then linear decay, gradient clipping;
* the document text the model reads is ``doc_text``, a template of the record's fields: by default the
  section's citation (its number), heading and heading path, then its statutory text. The trained model
  folder declares it (``legalir-encoder.json``), so ``legalir encode`` and ``legalir index --kind dense``
  encode a collection the same way.

Protocol (what cannot leak): a collection given to train on is read for its corpus, its ``train`` topic
sets and qrels (the training pairs) and its ``valid`` topic sets and qrels (selection); nothing else. Test
topic sets are never opened; the model card lists every file read, with its digest. BM25 negatives come
from an index of the same collection (built under the work folder, or given and checked to be built from
that collection's corpus). Selection: every ``eval_every`` steps (and before the first), MRR@10 of the
validation topics ranked over a pool of each collection's documents (the validation topics' linked
sections and BM25's top ``valid_depth`` for each), the mean over collections of ``select_on``
(``valid.masked``); the best step's weights are the model (step 0, the base model, when no step beats it).

Reproducible and resumable: the batch of step ``b`` is a pure function of the seed and ``b``; dropout
draws from torch's generator inside :func:`torch.random.fork_rng` (the caller's generators are left as
they were). The whole state (weights, optimizer, scheduler, generator, step, losses, validation) is saved
every ``save_every`` steps and at each validation, atomically, under ``work_dir``; a killed run, started
again, resumes from the last save and ends with the same weights, bit for bit, as an uninterrupted one
(same machine, device and thread count).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import platform
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from legalir import collections, trec
from legalir.base import atomic, numeric
from legalir.base import log as _logging
from legalir.base.models import autocast, default_device, resolve, resolve_precision
from legalir.errors import LegalirError
from legalir.scoring import evaluate

# the one AdamW set-up (weight decay off for biases and norms) and the one update step, train-ce's
from legalir.search.finetune import Pause, _optimizer, optimizer_step, pause_of
from legalir.version import __version__

_log = _logging.get(__name__)

KIND = "dense-model"
CARD_JSON = "model_card.json"
CARD_MD = "model_card.md"
#: the document text a statute model reads: its citation (number), heading, heading path, statutory text
DEFAULT_DOC_TEXT = "{citation} {title}\n{heading_path}\n{contents}"
TRAIN_WORDINGS = ("train", "train.masked")
VALID_WORDINGS = ("valid.masked", "valid")


class DenseTrainingError(LegalirError, ValueError):
    """Bad training input or settings (located: the file, the collection or the option)."""


@dataclass
class DenseConfig:
    """Settings of :func:`train` (the command line's options, one for one)."""

    base_model: str = "minilm"
    learning_rate: float = 2e-5
    steps: int = 300
    batch_size: int = 32
    hard_negatives: int = 1            # BM25 negatives per pair in a batch
    negatives_depth: int = 20          # drawn from BM25's top this many for the paragraph
    scale: float = 20.0                # cosine similarity x scale = the logits (sentence-transformers' MNRL)
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    max_grad_norm: float = 1.0
    query_max_length: int = 128
    doc_max_length: int = 256
    seed: int = 42
    eval_every: int = 100
    valid_topics: int = 100            # validation topics per collection (a seeded sample; 0: all)
    valid_depth: int = 20              # BM25's top this many per validation topic join the pool
    select_on: str = "valid.masked"
    save_every: int = 25
    threads: int | None = None
    precision: str = "auto"
    doc_text: str = DEFAULT_DOC_TEXT
    wordings: tuple[str, ...] = TRAIN_WORDINGS
    eval_batch_size: int = 64

    def validate(self) -> None:
        from legalir.indexing.encoders import EncoderError, doc_text_fields

        for name in ("steps", "batch_size", "eval_every", "save_every", "negatives_depth", "valid_depth",
                     "eval_batch_size"):
            if getattr(self, name) < 1:
                raise DenseTrainingError(f"--{name.replace('_', '-')} must be >= 1 (got {getattr(self, name)})")
        if self.hard_negatives < 0 or self.valid_topics < 0:
            raise DenseTrainingError("--hard-negatives and --valid-topics must be >= 0")
        if self.learning_rate <= 0 or self.scale <= 0:
            raise DenseTrainingError(f"--lr and --scale must be > 0 (got {self.learning_rate}, {self.scale})")
        if not 0 <= self.warmup_ratio < 1:
            raise DenseTrainingError(f"--warmup-ratio must be in [0, 1) (got {self.warmup_ratio})")
        if self.query_max_length < 8 or self.doc_max_length < 8:
            raise DenseTrainingError("--query-max-length and --doc-max-length must be >= 8")
        if not self.wordings:
            raise DenseTrainingError("name at least one training topic set (train, train.masked)")
        bad = [w for w in self.wordings if collections.base_set(w) != "train"]
        if bad:
            raise DenseTrainingError(f"--train-topics {bad[0]}: training reads the train topic sets only "
                                     f"(train, train.masked); validation and test topics never train")
        if self.select_on not in VALID_WORDINGS:
            raise DenseTrainingError(f"--select-on must be one of {', '.join(VALID_WORDINGS)} (got {self.select_on!r})")
        try:
            doc_text_fields(self.doc_text)
        except EncoderError as e:
            raise DenseTrainingError(f"--doc-text: {e}") from None


# ---------------------------------------------------------------- data

@dataclass
class Pair:
    """One training pair: a paragraph (``qid`` of topic set ``wording`` of collection ``source``) and a section
    it links (``docid``)."""

    source: int
    wording: str
    qid: str
    query: str
    docid: str


@dataclass
class LinkData:
    """What :func:`read_links` read from one collection: the only inputs of training and selection."""

    collection: str
    label: str
    manifest: dict
    docs: dict[str, str]                                   # docid -> the text the model reads (doc_text)
    pairs: list[Pair]
    gold: dict[str, set[str]]                              # train qid -> linked sections
    negatives: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # (wording, qid) -> BM25's
    valid_topics: dict[str, dict[str, str]] = field(default_factory=dict)      # wording -> {qid: text}
    valid_qrels: dict[str, dict[str, int]] = field(default_factory=dict)
    valid_pool: list[str] = field(default_factory=list)
    inputs: list[dict] = field(default_factory=list)       # every file read: path, sha256
    missing_documents: list[str] = field(default_factory=list)
    index: str | None = None

    def counts(self) -> dict:
        by = {w: sum(1 for p in self.pairs if p.wording == w) for w in sorted({p.wording for p in self.pairs})}
        return {"documents": len(self.docs), "train_topics": len(self.gold), "pairs": len(self.pairs),
                "pairs_by_wording": by, "missing_documents": len(self.missing_documents),
                "topics_with_negatives": sum(1 for v in self.negatives.values() if v),
                "valid_topics": {w: len(t) for w, t in self.valid_topics.items()},
                "valid_pool": len(self.valid_pool)}


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _input(path: Path) -> dict:
    return {"path": str(path.resolve()), "sha256": _sha256(path)}


def read_links(collection: str | os.PathLike, cfg: DenseConfig) -> LinkData:
    """The training pairs, the document texts and the validation topics of one collection.

    Reads the corpus, the ``cfg.wordings`` topic sets (``train``, ``train.masked``) with the ``train``
    qrels, and the ``valid`` / ``valid.masked`` topic sets with the ``valid`` qrels; nothing else (the
    files read are listed in ``inputs``). A qrels topic without a query, a document without a field
    ``cfg.doc_text`` names, or a collection without links is a located :class:`DenseTrainingError`.
    """
    from legalir.indexing.encoders import EncoderError, record_text

    root = Path(collection)
    manifest = collections.read_manifest(root)
    inputs = [_input(root / "manifest.json")]
    opts = manifest.get("options") or {}
    label = "-".join(str(x) for x in (manifest.get("dataset"), opts.get("state"), opts.get("release")) if x) \
        or root.name
    docs: dict[str, str] = {}
    for key, folder in sorted(collections.corpus_dirs(root).items()):
        path = folder / "docs.jsonl"
        for n, rec in enumerate(collections.iter_documents(root, key or None), 1):
            try:
                docs[rec["id"]] = record_text(cfg.doc_text, rec)
            except EncoderError as e:
                raise DenseTrainingError(f"{path}:{n}: {e}") from None
        inputs.append(_input(path))

    def read_set(name: str) -> dict[str, trec.Topic]:
        try:
            p = collections.topics_path(root, name)
        except LegalirError as e:
            raise DenseTrainingError(f"{e} (train-dense needs a statutes collection's cross-reference topics: "
                                     f"legalir convert statutes)") from None
        inputs.append(_input(p))
        return trec.read_topics(p)

    def read_qrels(name: str) -> dict[str, dict[str, int]]:
        p = collections.qrels_path(root, name)
        inputs.append(_input(p))
        return trec.read_qrels(p)

    train_qrels = read_qrels("train")
    gold: dict[str, set[str]] = {}
    missing: set[str] = set()
    for qid in sorted(train_qrels):
        rel = {d for d, g in train_qrels[qid].items() if int(g) > 0}
        missing |= {d for d in rel if d not in docs}
        if rel & docs.keys():
            gold[qid] = rel & docs.keys()
    if not gold:
        raise DenseTrainingError(f"{collections.qrels_path(root, 'train')}: no linked section of the collection "
                                 f"in the train qrels: nothing to train on")
    pairs: list[Pair] = []
    for wording in cfg.wordings:
        topics = read_set(wording)
        absent = sorted(q for q in gold if q not in topics)
        if absent:
            raise DenseTrainingError(f"{collections.topics_path(root, wording)}: {len(absent)} topic(s) of the train "
                                     f"qrels have no query here: {', '.join(absent[:5])}")
        for qid in sorted(gold):
            for docid in sorted(gold[qid]):
                pairs.append(Pair(-1, wording, qid, topics[qid].text, docid))
    valid_qrels_all = read_qrels("valid")
    valid_sets = {w: read_set(w) for w in VALID_WORDINGS}
    candidates = sorted(q for q, js in valid_qrels_all.items()
                        if any(int(g) > 0 and d in docs for d, g in js.items()) and all(q in t for t in valid_sets.values()))
    if not candidates:
        raise DenseTrainingError(f"{collections.qrels_path(root, 'valid')}: no validation topic with a linked "
                                 f"section of the collection: nothing to select on")
    if cfg.valid_topics and len(candidates) > cfg.valid_topics:
        rng = np.random.default_rng([cfg.seed, 5])
        candidates = sorted(candidates[int(i)] for i in rng.choice(len(candidates), cfg.valid_topics, replace=False))
    valid_qrels = {q: {d: 1 for d, g in valid_qrels_all[q].items() if int(g) > 0 and d in docs} for q in candidates}
    valid_topics = {w: {q: t[q].text for q in candidates} for w, t in valid_sets.items()}
    return LinkData(str(root), label, manifest, docs, pairs, gold, valid_topics=valid_topics,
                    valid_qrels=valid_qrels, inputs=inputs, missing_documents=sorted(missing))


def _check_index(index: Path, data: LinkData) -> None:
    """Refuse an index not built from ``data``'s corpus: negatives must be the same collection's documents."""
    meta_path = index / "legalir-index.json"
    if not meta_path.exists():
        raise DenseTrainingError(f"{index}: not a legalir BM25 index (no legalir-index.json); give the index "
                                 f"of {data.collection} or leave --index out (one is built)")
    from legalir.indexing.folders import recorded_location

    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    recorded = recorded_location(meta, "input", index)
    built = Path(os.path.realpath(recorded)) if recorded else None
    want = [Path(os.path.realpath(p)) for p in collections.corpus_dirs(data.collection).values()]
    if built is None or (built not in want and built not in {w.parent for w in want}):
        raise DenseTrainingError(f"{meta_path}: built from {recorded}, not from {data.collection}'s corpus: hard "
                                 f"negatives must come from the collection trained on")


def mine_negatives(data: LinkData, index: str | os.PathLike, cfg: DenseConfig) -> None:
    """BM25's top ``negatives_depth`` for each training paragraph (citations off), its linked sections left out,
    and the validation pool: each validation topic's linked sections and BM25's top ``valid_depth``."""
    from legalir.search.searcher import Searcher

    _check_index(Path(index), data)
    data.index = str(index)
    with Searcher(index) as s:
        _negatives(data, cfg, lambda wording, topics, k: s.batch_search(topics, k=k, citations=False), str(index))


#: the file names a --runs folder holds: one BM25 run (citations off) per topic set read
def run_file(wording: str) -> str:
    return f"bm25-off.{wording}.trec"


def negatives_from_runs(data: LinkData, folder: str | os.PathLike, cfg: DenseConfig) -> None:
    """As :func:`mine_negatives`, from BM25 runs already made (where no Lucene runs, e.g. a GPU machine): ``folder``
    holds ``bm25-off.<set>.trec`` for each training and validation topic set (``legalir search ... --citations
    off``). A run's topic that is not of that set of this collection, or a document not of it, is refused: a run
    can bring nothing of another collection or of a test set. Each file read is listed in ``data.inputs``."""
    root = Path(folder)

    def run_of(wording: str, topics: Mapping[str, str], k: int):
        path = root / run_file(wording)
        if not path.is_file():
            raise DenseTrainingError(f"{path}: not found: --runs {folder} must hold a BM25 run (citations off) of "
                                     f"each topic set read: " + ", ".join(
                                         run_file(w) for w in (*cfg.wordings, *VALID_WORDINGS)))
        data.inputs.append(_input(path))
        run = trec.read_run(path)
        stray = sorted(set(run) - set(topics))
        if stray:
            raise DenseTrainingError(f"{path}: topic {stray[0]!r} is not a {wording} topic of {data.collection} "
                                     f"(of {len(stray)} such): the run must be of that topic set only")
        return run

    data.index = None
    _negatives(data, cfg, run_of, str(root))


def _negatives(data: LinkData, cfg: DenseConfig, run_of: Callable[[str, Mapping[str, str], int], Mapping],
               where: str) -> None:
    for wording in cfg.wordings:
        topics = {}
        for p in data.pairs:
            if p.wording == wording:
                topics[p.qid] = p.query
        run = run_of(wording, topics, cfg.negatives_depth + max(len(g) for g in data.gold.values()))
        for qid in topics:
            ranked = [d for d, _ in trec.ranking(run.get(qid, {}))]
            stray = [d for d in ranked if d not in data.docs]
            if stray:
                raise DenseTrainingError(f"{where}: returned {stray[0]!r}, not a document of {data.collection}: "
                                         f"the {'index' if data.index else 'run'} is not this collection's")
            data.negatives[(wording, qid)] = [d for d in ranked if d not in data.gold[qid]][:cfg.negatives_depth]
    pool = {d for js in data.valid_qrels.values() for d in js}
    for wording, topics in sorted(data.valid_topics.items()):
        run = run_of(wording, topics, cfg.valid_depth)
        for qid in topics:
            pool.update(d for d, _ in trec.ranking(run.get(qid, {}))[:cfg.valid_depth])
    stray = sorted(pool - data.docs.keys())
    if stray:
        raise DenseTrainingError(f"{where}: returned {stray[0]!r}, not a document of {data.collection}")
    data.valid_pool = sorted(pool)


# ---------------------------------------------------------------- batches

class Batches:
    """``batch(b)``: the pairs of step ``b`` (indices into ``pairs``) and each one's hard negatives; a pure
    function of (seed, b), so a resumed run draws what an uninterrupted one would."""

    def __init__(self, sets: Sequence[LinkData], batch_size: int, hard_negatives: int, seed: int):
        self.sets = list(sets)
        self.pairs = [p for d in self.sets for p in d.pairs]
        self.batch_size = min(batch_size, len(self.pairs))
        self.hard_negatives = hard_negatives
        self.seed = seed
        self._perm: tuple[int, np.ndarray] | None = None

    def _order(self, epoch: int) -> np.ndarray:
        if self._perm is None or self._perm[0] != epoch:
            self._perm = (epoch, np.random.default_rng([self.seed, 1, epoch]).permutation(len(self.pairs)))
        return self._perm[1]

    def batch(self, b: int) -> list[tuple[Pair, list[str]]]:
        n = len(self.pairs)
        out = []
        rng = np.random.default_rng([self.seed, 2, b])
        for i in range(b * self.batch_size, (b + 1) * self.batch_size):
            p = self.pairs[int(self._order(i // n)[i % n])]
            pool = self.sets[p.source].negatives.get((p.wording, p.qid), [])
            k = min(self.hard_negatives, len(pool))
            negs = [pool[int(j)] for j in sorted(rng.choice(len(pool), k, replace=False))] if k else []
            out.append((p, negs))
        return out


# ---------------------------------------------------------------- model

def _embed(model, tok, texts: Sequence[str], max_length: int, device: str):
    import torch

    enc = tok(list(texts), padding=True, truncation=True, max_length=max_length, return_tensors="pt")
    enc = {k: v.to(device) for k, v in enc.items()}
    hidden = model(**enc).last_hidden_state
    mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    vec = (hidden * mask).sum(dim=1) / torch.clamp(mask.sum(dim=1), min=1e-9)
    return torch.nn.functional.normalize(vec.float(), p=2, dim=1)


def batch_loss(model, tok, batch: Sequence[tuple[Pair, list[str]]], sets: Sequence[LinkData], cfg: DenseConfig,
               device: str):
    """The multiple-negatives ranking loss of one batch: each paragraph against its section, every other
    section of the batch and the batch's hard negatives; a section the paragraph links is never a negative."""
    import torch

    keys: dict[tuple[int, str], int] = {}
    for p, negs in batch:
        for d in [p.docid, *negs]:
            keys.setdefault((p.source, d), len(keys))
    docs = list(keys)
    q = _embed(model, tok, [p.query for p, _ in batch], cfg.query_max_length, device)
    d = _embed(model, tok, [sets[s].docs[docid] for s, docid in docs], cfg.doc_max_length, device)
    logits = cfg.scale * q @ d.T
    mask = torch.zeros_like(logits, dtype=torch.bool)
    target = []
    for i, (p, _) in enumerate(batch):
        target.append(keys[(p.source, p.docid)])
        linked = sets[p.source].gold[p.qid]
        for j, (s, docid) in enumerate(docs):
            if s == p.source and docid in linked and j != target[-1]:
                mask[i, j] = True
    logits = logits.masked_fill(mask, float("-inf"))
    return torch.nn.functional.cross_entropy(logits, torch.tensor(target, device=logits.device))


def _encode(model, tok, texts: Sequence[str], max_length: int, device: str, batch_size: int) -> np.ndarray:
    import torch

    order = sorted(range(len(texts)), key=lambda i: (-len(texts[i]), i))
    out = np.empty((len(texts), int(model.config.hidden_size)), dtype=np.float32)
    was = model.training
    model.eval()
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            out[idx] = _embed(model, tok, [texts[i] for i in idx], max_length, device).cpu().numpy()
    model.train(was)
    return out


def validate(model, tok, sets: Sequence[LinkData], cfg: DenseConfig, device: str) -> dict[str, float]:
    """MRR@10 and hit@1 of each validation topic set, each collection's topics ranked over its pool; the mean over
    collections (``<set>:recip_rank@10``) and per collection (``<label>:<set>:...``)."""
    out: dict[str, float] = {}
    means: dict[str, list[float]] = {}
    for data in sets:
        vecs = _encode(model, tok, [data.docs[d] for d in data.valid_pool], cfg.doc_max_length, device,
                       cfg.eval_batch_size)
        for wording, topics in sorted(data.valid_topics.items()):
            qids = sorted(topics)
            qv = _encode(model, tok, [topics[q] for q in qids], cfg.query_max_length, device, cfg.eval_batch_size)
            scores = qv @ vecs.T
            run = {}
            for i, q in enumerate(qids):
                top = np.argsort(-scores[i], kind="stable")[:10]
                run[q] = {data.valid_pool[int(j)]: float(scores[i, j]) for j in top}
            res = evaluate(data.valid_qrels, run, ["recip_rank", "success.1"])["all"]
            for m, name in (("recip_rank", "recip_rank@10"), ("success_1", "hit@1")):
                out[f"{data.label}:{wording}:{name}"] = float(res[m])
                means.setdefault(f"{wording}:{name}", []).append(float(res[m]))
    out.update({k: float(np.mean(v)) for k, v in means.items()})
    return out


def _lr_lambda(total: int, warmup: int) -> Callable[[int], float]:
    def f(step: int) -> float:
        if warmup and step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total - step) / max(1, total - warmup))
    return f


def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()[:16]


def _device_name(device: str) -> str:
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        return f"{device} ({torch.cuda.get_device_name()})"
    return f"{device} ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)"


def _versions() -> dict:
    out = {"python": platform.python_version(), "legalir": __version__}
    for mod in ("torch", "transformers", "numpy"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:  # pragma: no cover - a package whose module has no __version__: the card lists the others
            pass
    return out


# ---------------------------------------------------------------- training

def _negative_sources(roots: Sequence[str], indexes: Mapping | None, runs: Mapping | None) -> tuple[dict, dict]:
    """``({collection: BM25 index}, {collection: runs folder})`` keyed by resolved path, each naming a collection
    of ``roots``, none both."""
    if len({Path(c).resolve() for c in roots}) != len(roots):
        raise DenseTrainingError("--from-links: a collection is named twice")
    known = {str(Path(c).resolve()) for c in roots}
    given = {str(Path(k).resolve()): v for k, v in (indexes or {}).items()}
    from_runs = {str(Path(k).resolve()): v for k, v in (runs or {}).items()}
    for option, named in (("--index", given), ("--runs", from_runs)):
        unknown = sorted(set(named) - known)
        if unknown:
            raise DenseTrainingError(f"{option} {unknown[0]}=...: not a collection given to --from-links")
    both = sorted(set(from_runs) & set(given))
    if both:
        raise DenseTrainingError(f"{both[0]}: give its BM25 index (--index) or its runs (--runs), not both")
    return given, from_runs


def _load(i: int, root: str, cfg: DenseConfig, given: Mapping, from_runs: Mapping, work: Path) -> LinkData:
    """Collection ``i``'s pairs and validation topics, with its BM25 negatives: from its runs folder, its index,
    or an index built under ``work``."""
    from legalir.indexing import sparse

    data = read_links(root, cfg)
    for p in data.pairs:
        p.source = i
    key = str(Path(root).resolve())
    if key in from_runs:
        negatives_from_runs(data, from_runs[key], cfg)
        _log.info(f"train-dense: {data.label} ({root}, negatives from {from_runs[key]}): {data.counts()}")
        return data
    index = given.get(key)
    if index is None:
        index = work / f"bm25-{i}-{_digest(key)}"
        if not (index / "legalir-index.json").exists():
            _log.info(f"train-dense: BM25 index of {root} for hard negatives -> {index}")
            sparse.build(root, index, threads=cfg.threads or 2, quiet=True)
    mine_negatives(data, index, cfg)
    _log.info(f"train-dense: {data.label} ({root}): {data.counts()}")
    return data


def train(collections_: Sequence[str | os.PathLike], out_dir: str | os.PathLike, cfg: DenseConfig | None = None, *,
          indexes: Mapping[str, str | os.PathLike] | None = None, work_dir: str | os.PathLike | None = None,
          stop_after: int | Pause | None = None, progress: bool = True, command: str | None = None,
          runs: Mapping[str, str | os.PathLike] | None = None) -> dict:
    """Train on the cross-references of ``collections_`` and write the selected model to ``out_dir``.

    Parameters
    ----------
    collections_ : sequence of path
        Statutes collections (``legalir convert statutes``): their ``train`` topics train, their ``valid``
        topics select; their test topics are never read.
    out_dir : path
        The model folder to write (Hugging Face layout with sentence-transformers' modules, read by
        ``legalir encode --encoder``), with ``model_card.json`` / ``model_card.md``.
    cfg : DenseConfig, optional
        Settings [default: :class:`DenseConfig` ()].
    indexes : mapping, optional
        ``{collection: BM25 index}`` for the hard negatives, each checked to be built from that
        collection; a collection without one (and without ``runs``) gets an index built under ``work_dir``.
    runs : mapping, optional
        ``{collection: folder}``: the hard negatives and the validation pool from BM25 runs already made
        (``bm25-off.<set>.trec`` of each training and validation topic set, :func:`negatives_from_runs`) instead
        of an index: where no Lucene runs (a GPU machine). Listed in the card's inputs with their digests.
    work_dir : path, optional
        Resumable state [default: ``<out_dir>.work``], removed once the model is written.
    stop_after : int or Pause, optional
        Return at the first save after this many steps in this call, or where the :class:`Pause` says (time
        decides only where a run pauses), state kept: run again to resume.
    progress : bool
        A progress bar with the time left (where legalir draws bars), and a log line at each validation.
    command : str, optional
        The command line, for the model card.

    Returns
    -------
    dict
        The model card (``{"stopped": True, ...}`` when ``stop_after`` stopped it).

    Raises
    ------
    DenseTrainingError
        Bad settings or inputs, before any training.
    """
    import torch


    cfg = cfg or DenseConfig()
    cfg.validate()
    if not collections_:
        raise DenseTrainingError("--from-links: name at least one statutes collection to train on")
    roots = [str(Path(c)) for c in collections_]
    given, from_runs = _negative_sources(roots, indexes, runs)
    base_dir = resolve(cfg.base_model)
    out = Path(out_dir)
    atomic.check_target(out, KIND, yes=None)  # refuse before training, not after
    work = Path(work_dir) if work_dir else out.with_name(out.name + ".work")
    work.mkdir(parents=True, exist_ok=True)
    device = default_device()
    precision = resolve_precision(cfg.precision, device)
    t_data = time.time()

    sets = [_load(i, root, cfg, given, from_runs, work) for i, root in enumerate(roots)]
    data_seconds = time.time() - t_data

    common = {k: v for k, v in dataclasses.asdict(cfg).items() if k not in ("threads", "save_every")}
    state_id = _digest({"config": common, "device": device, "precision": precision,
                        "inputs": [d.inputs for d in sets], "negatives": [_digest(sorted(
                            (w, q, n) for (w, q), n in d.negatives.items())) for d in sets]})
    marker = work / "state-id.json"
    state_path = work / "state.pt"
    if marker.exists() and json.loads(marker.read_text(encoding="utf-8")).get("state_id") != state_id:
        _log.warning(f"train-dense: {work} holds another configuration's state; starting over")
        state_path.unlink(missing_ok=True)
        for old in work.glob("ckpt-*"):
            shutil.rmtree(old)
    atomic.write_json(marker, {"state_id": state_id})

    from tqdm.contrib.logging import logging_redirect_tqdm

    devices = [torch.cuda.current_device()] if device.startswith("cuda") else []
    with numeric.threads(cfg.threads, faiss=False), torch.random.fork_rng(devices=devices), \
            logging_redirect_tqdm(loggers=[logging.getLogger(_logging.ROOT)]):
        result = _loop(cfg, sets, base_dir, work, state_path, device, precision, pause_of(stop_after), progress)
    if result.get("stopped"):
        return {"stopped": True, "work_dir": str(work), "step": result["step"]}

    best = result["best"]
    card = {
        "kind": "legalir train-dense: a bi-encoder trained on statute codes' cross-references (issue 40)",
        "data": [{"collection": d.collection, "label": d.label, "dataset": d.manifest.get("dataset"),
                  "state": (d.manifest.get("options") or {}).get("state"),
                  "release": (d.manifest.get("options") or {}).get("release"),
                  "train_topic_sets": list(cfg.wordings), "valid_topic_sets": list(VALID_WORDINGS),
                  **d.counts(), "bm25_index": d.index, "inputs": d.inputs} for d in sets],
        "protocol": {
            "training": "pairs (paragraph, linked section) of the train topic sets of the collections above",
            "negatives": f"in-batch, plus {cfg.hard_negatives} per pair from BM25's top {cfg.negatives_depth} "
                         f"(citations off) of the same collection, linked sections excluded"
                         + ("; from the BM25 runs given (--runs, listed in the inputs)"
                            if any(d.index is None for d in sets) else ""),
            "selection": f"{cfg.select_on} MRR@10 (mean over collections), every {cfg.eval_every} steps and at "
                         f"step 0, {cfg.valid_topics or 'all'} valid topics per collection ranked over a pool of "
                         f"their linked sections and BM25's top {cfg.valid_depth}",
            "test_topics": "never read (the inputs above are every file read)",
            "document_text": cfg.doc_text,
        },
        "hyperparameters": dataclasses.asdict(cfg),
        "base_model": {"name": cfg.base_model, "resolved": str(base_dir)},
        "selected": best,
        "validation": result["records"],
        "train_losses": result["losses"],
        "training": {"steps": cfg.steps, "pairs_seen": cfg.steps * min(cfg.batch_size, sum(len(d.pairs) for d in sets)),
                     "seconds": result["seconds"], "data_seconds": round(data_seconds, 1),
                     "device": _device_name(device), "precision": precision,
                     "torch_threads": int(torch.get_num_threads()) if not cfg.threads else cfg.threads,
                     "load_average": result["load"], "platform": platform.platform()},
        "versions": _versions(),
        "command": command,
    }
    src = work / f"ckpt-{best['step']}"
    with atomic.atomic_dir(out, KIND) as tmp:
        shutil.copytree(src, tmp, dirs_exist_ok=True, ignore=shutil.ignore_patterns(atomic.MARKER))
        _write_modules(tmp, base_dir, cfg)
        atomic.write_json(tmp / CARD_JSON, card, indent=1)
        atomic.write_text(tmp / CARD_MD, model_card_markdown(card))
    shutil.rmtree(work, ignore_errors=True)
    _log.info(f"train-dense: step {best['step']} selected ({cfg.select_on} MRR@10 {best['score']:.4f}); "
              f"model -> {out}")
    return card


def _loop(cfg: DenseConfig, sets: list[LinkData], base_dir: Path, work: Path, state_path: Path, device: str,
          precision: str, stop_after: Pause | None, progress: bool) -> dict:
    import torch
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging


    hf_logging.disable_progress_bar()
    tok = AutoTokenizer.from_pretrained(str(base_dir))
    model = AutoModel.from_pretrained(str(base_dir), dtype=torch.float32).to(device)
    opt = _optimizer(model, cfg.learning_rate, cfg.weight_decay)
    warmup = int(round(cfg.warmup_ratio * cfg.steps))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, _lr_lambda(cfg.steps, warmup))
    batches = Batches(sets, cfg.batch_size, cfg.hard_negatives, cfg.seed)
    step, losses, records, seconds, best = 0, [], [], 0.0, None
    load = {"start": [round(x, 2) for x in os.getloadavg()]}
    if state_path.exists():
        st = torch.load(state_path, weights_only=False, map_location="cpu")
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["optimizer"])
        sched.load_state_dict(st["scheduler"])
        torch.set_rng_state(st["rng"])
        if "cuda_rng" in st and device.startswith("cuda"):
            torch.cuda.set_rng_state_all(st["cuda_rng"])
        step, losses, records, seconds, best = st["step"], st["losses"], st["records"], st["seconds"], st["best"]
        load = st.get("load", load)
        _log.info(f"train-dense: resuming at step {step} ({work})")
    else:
        torch.manual_seed(cfg.seed)  # dropout's draws (inside fork_rng: the caller's generator is untouched)
        if device.startswith("cuda"):
            torch.cuda.manual_seed_all(cfg.seed)

    def save_state() -> None:
        st = {"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
              "rng": torch.get_rng_state(), "step": step, "losses": losses, "records": records,
              "seconds": round(seconds, 1), "best": best, "load": load}
        if device.startswith("cuda"):
            st["cuda_rng"] = torch.cuda.get_rng_state_all()
        with atomic.open_file(state_path, "wb") as fh:
            torch.save(st, fh)

    t0 = time.time()  # the clock of the training steps (restarted below, when they start)

    def evaluate_now() -> None:
        nonlocal best, seconds, t0
        values = validate(model, tok, sets, cfg, device)
        score = values[f"{cfg.select_on}:recip_rank@10"]
        rec = {"step": step, "score": score, "valid": values,
               "train_loss_last50": float(np.mean(losses[-50:])) if losses else None}
        records.append(rec)
        if best is None or score > best["score"]:
            ckpt = work / f"ckpt-{step}"
            if ckpt.exists():
                shutil.rmtree(ckpt)  # our own, from a run killed after writing it
            with atomic.atomic_dir(ckpt, "checkpoint") as tmp:
                model.save_pretrained(str(tmp))
                tok.save_pretrained(str(tmp))
            if best is not None and best["step"] != step:
                shutil.rmtree(work / f"ckpt-{best['step']}", ignore_errors=True)
            best = {"step": step, "score": score}
        _log.info(f"train-dense: step {step}/{cfg.steps} valid " + " ".join(
            f"{k}={v:.4f}" for k, v in values.items() if k.count(":") == 1)
            + (f" loss={rec['train_loss_last50']:.4f}" if losses else "") + f" (best: step {best['step']})")
        seconds += time.time() - t0
        t0 = time.time()

    t0 = time.time()
    if step == 0 and not records:
        evaluate_now()
        save_state()
    model.train()
    ran = 0
    bar = _logging.progress(total=cfg.steps, initial=step, desc="train-dense", unit=" steps", quiet=not progress,
                            mininterval=2.0, leave=True)
    try:
        while step < cfg.steps:
            with autocast(precision, device):
                loss = batch_loss(model, tok, batches.batch(step), sets, cfg, device)
            losses.append(optimizer_step(loss, model, opt, sched, cfg.max_grad_norm))
            step += 1
            ran += 1
            bar.update(1)
            bar.set_postfix(loss=f"{np.mean(losses[-20:]):.4f}")
            validating = step % cfg.eval_every == 0 or step == cfg.steps
            if validating:
                evaluate_now()
            elif step % 10 == 0 and progress:
                spent = seconds + time.time() - t0
                _log.info(f"train-dense: step {step}/{cfg.steps} loss={np.mean(losses[-20:]):.4f} "
                          f"{spent / max(1, step):.1f} s/step")
            if validating or step % cfg.save_every == 0:
                seconds += time.time() - t0
                t0 = time.time()
                load["end"] = [round(x, 2) for x in os.getloadavg()]
                save_state()
                if stop_after is not None and stop_after.due(ran) and step < cfg.steps:
                    _log.info(f"train-dense: stopped after {ran} steps; state saved in {work}: run again to resume")
                    return {"stopped": True, "step": step}
    finally:
        bar.close()
    seconds += time.time() - t0
    load["end"] = [round(x, 2) for x in os.getloadavg()]
    return {"stopped": False, "best": best, "records": records, "losses": losses, "seconds": round(seconds, 1),
            "load": load}


def _write_modules(folder: Path, base_dir: Path, cfg: DenseConfig) -> None:
    """sentence-transformers' description of the model (Transformer, mean Pooling, Normalize), its maximum
    length, and ``legalir-encoder.json``: the document text it was trained on, read by ``legalir encode``."""
    from legalir.indexing.encoders import MODEL_SETTINGS

    atomic.write_json(folder / "modules.json", [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}], indent=2)
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "2_Normalize").mkdir(exist_ok=True)
    import transformers

    hidden = int(transformers.AutoConfig.from_pretrained(str(folder)).hidden_size)
    atomic.write_json(folder / "1_Pooling" / "config.json", {
        "word_embedding_dimension": hidden, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True,
        "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False}, indent=2)
    atomic.write_json(folder / "sentence_bert_config.json", {"max_seq_length": cfg.doc_max_length,
                                                             "do_lower_case": False}, indent=2)
    atomic.write_json(folder / MODEL_SETTINGS, {"doc_text": cfg.doc_text, "query_format": "{text}",
                                                "doc_format": "{text}", "pooling": "mean", "normalize": True,
                                                "max_length": cfg.doc_max_length}, indent=2)


def model_card_markdown(card: Mapping) -> str:
    """The model card as Markdown (the JSON beside it holds everything)."""
    tr = card["training"]
    hp = card["hyperparameters"]
    lines = ["# A statute retriever trained on cross-references (legalir train-dense)", "",
             f"Base model: `{card['base_model']['name']}`. Selected: step {card['selected']['step']} "
             f"({hp['select_on']} MRR@10 {card['selected']['score']:.4f} on the validation pool).", "",
             "## Data", "", "| collection | state | release | documents | train topics | pairs | valid topics |",
             "|---|---|---|---|---|---|---|"]
    for d in card["data"]:
        lines.append(f"| {d['collection']} | {d['state']} | {d['release']} | {d['documents']} | {d['train_topics']} | "
                     f"{d['pairs']} ({', '.join(f'{k} {v}' for k, v in d['pairs_by_wording'].items())}) | "
                     f"{max(d['valid_topics'].values())} |")
    lines += ["", "## Protocol", ""] + [f"- {k.replace('_', ' ')}: " + (f"`{json.dumps(v)[1:-1]}`" if k == "document_text"
                                                                         else f"{v}")
                                         for k, v in card["protocol"].items()]
    lines += ["", "## Evaluation", "",
              "Report this model on codes it never read: the test topics of codes other than those above. "
              "`make links-encode links-index links-search links-eval` (LINKS_UNSEEN: the other codes) encodes them "
              "with the document text above, searches, fuses with BM25 and prints the table against BM25 "
              "(docs/statutes.md, \"The protocol, one make target per step\", with what was measured)."]
    lines += ["", "## Validation", "", "| step | " + " | ".join(k for k in card["validation"][0]["valid"]
                                                               if k.count(":") == 1) + " |",
              "|---|" + "---|" * sum(1 for k in card["validation"][0]["valid"] if k.count(":") == 1)]
    for r in card["validation"]:
        lines.append(f"| {r['step']} | " + " | ".join(f"{v:.4f}" for k, v in r["valid"].items() if k.count(":") == 1)
                     + " |")
    lines += ["", "## Training", "",
              f"- {tr['steps']} steps of {hp['batch_size']} pairs, {tr['seconds']} s (data and BM25 negatives "
              f"{tr['data_seconds']} s), device {tr['device']}, {tr['precision']}, {tr['torch_threads']} torch threads, "
              f"load average {tr['load_average']}",
              "- hyperparameters: " + ", ".join(f"{k}={v!r}" for k, v in hp.items()),
              f"- command: `{card.get('command')}`", ""]
    return "\n".join(lines)


def load_card(model_dir: str | os.PathLike) -> dict:
    """The model card of a folder ``legalir train-dense`` wrote."""
    p = Path(model_dir) / CARD_JSON
    if not p.exists():
        raise DenseTrainingError(f"{p}: not found (not a model trained by `legalir train-dense`)")
    return json.loads(p.read_text(encoding="utf-8"))
