"""Fine-tune a cross-encoder on graded qrels (the ACORD paper's recipe).

Recipe (Wang et al. 2025, ACORD):

* training pairs: every judged (topic, document) pair of the training qrels,
  optionally once per query wording (``train``, ``train.medium``, ``train.long``);
* oversampling: every batch holds the relevance levels in equal numbers
  (levels rotate through the remainder when the batch size is not a multiple
  of the number of levels), each level's pairs cycling in a fresh seeded
  shuffle per pass;
* target: normalised grade ``rel / max_rel`` (ACORD: 1 star -> 0.0 ... 5 stars -> 1.0);
* loss: binary cross-entropy on the logit; AdamW (weight decay 0.01, not on
  biases and LayerNorm), batch 64, linear warm-up then linear decay;
* learning rates: the default grid is 5e-4 and 1e-3 (:data:`LEARNING_RATES`), what learned on ACORD, starting
  from the bundled MiniLM bi-encoder with a new one-logit head. The evidence: on ACORD (one H100, the paper's
  grid 5e-5 ... 1e-3 x 3 seeds x 100 ... 3000 updates) the best validation nDCG@10 came at 1e-3 (2000 updates,
  mean 0.545), and with three query wordings at 5e-4 (750 updates, 0.573; docs/pipelines.md); the earlier
  defaults 2e-5 and 5e-5 peaked at 0.334 and 0.392 on ACORD after 300 updates, and on the statutes' cross-
  references (one H200, 800 updates) their best validation MRR, 0.141 (Georgia) and 0.067 (North Carolina),
  was below BM25's order (docs/statutes.md). On the embedded sample, 8 updates of batch 8 from MiniLM move the
  training loss from 0.690 to 0.688 at 2e-5 and from 0.657 to 0.545 at 5e-4 (docs/statutes.md, issue 40). The
  new head starts at random: a small rate leaves it, and the encoder under it, where they began;
* model selection: a grid of learning rates x seeds, each run validated at
  several numbers of updates (checkpoints within one run). A (learning rate,
  updates) is scored by the mean over seeds of the validation score
  (judged-only NDCG@10 of each validation run's top ``valid_depth``, reranked,
  averaged over the validation runs); the best one's best seed is kept. Test
  topics are never read.

Reproducible and resumable: a seed fixes the new head's initialisation,
dropout and the batch order (batch ``b`` is a pure function of the seed and
``b``: the data-order position is the update count). Each grid cell
``(learning rate, seed)`` saves its whole state (model, optimizer, scheduler,
torch/CUDA/numpy/python RNG states, data position, losses, validation
records) every ``save_every`` updates and at every checkpoint, atomically,
under ``work_dir``; a killed or time-limited ``train`` resumes from the last
save and ends with the same model, bit for bit, as an uninterrupted run (same
machine, device and thread count). Cells run one after the other, or ``jobs``
at a time in separate processes (one GPU holds several).

Output (``out_dir``, written under a temporary name then renamed): the
selected model as a sentence-transformers CrossEncoder folder, plus
``legalir-train.json``: configuration, data counts and digests, the whole
validation grid, the selection, training losses, timings, library versions
and the command.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import platform
import random
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from legalir import trec
from legalir.base import atomic, models, numeric
from legalir.base import log as _logging
from legalir.base.models import TRAIN_RECORD, autocast, default_device, resolve_precision
from legalir.errors import LegalirError
from legalir.scoring import evaluate
from legalir.scoring.judged import is_judged
from legalir.trec import Qrels, Run, Topic
from legalir.version import __version__

_log = _logging.get(__name__)

TRAIN_CONFIG = TRAIN_RECORD   # the record train-ce writes beside the weights (rerank reads it)
KIND = "cross-encoder"
#: the default learning-rate grid: what learned on ACORD from the same start (module docstring: the evidence)
LEARNING_RATES = (5e-4, 1e-3)
#: the default numbers of updates validated (the largest is a run's length)
CHECKPOINTS = (250, 500, 1000)


class TrainingError(LegalirError, ValueError):
    pass


@dataclass
class TrainConfig:
    base_model: str = "minilm"
    learning_rates: list[float] = field(default_factory=lambda: list(LEARNING_RATES))
    checkpoints: list[int] = field(default_factory=lambda: list(CHECKPOINTS))
    seeds: list[int] = field(default_factory=lambda: [42])
    batch_size: int = 64
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    max_grad_norm: float = 1.0
    max_length: int = 256
    attention_dropout: float | None = 0.0     # None: the base model's (0.1); 0 lets torch use fused attention
    head_lr_multiplier: float = 1.0           # learning rate of the new scoring head = lr x this
    precision: str = "auto"                   # bf16 autocast where the hardware has it (AMX, CUDA), else fp32
    max_relevance: int | None = None          # default: the highest grade in the training qrels
    valid_depth: int = 1000                   # rerank depth of the validation candidates
    measure: str = "ndcg_cut_10"
    judged_only: bool = True                  # validation scored judged-only (graded qrels); False: every candidate
    negatives_depth: int = 0                  # grade-0 pairs from each negatives run's top this many unjudged
    eval_batch_size: int = 64
    threads: int | None = None
    save_every: int = 100                     # resumable state every this many updates (and at checkpoints)
    jobs: int = 1                             # grid cells trained at the same time (separate processes)

    def validate(self) -> None:
        if not self.learning_rates or any(lr <= 0 for lr in self.learning_rates):
            raise TrainingError(f"learning rates must be > 0 (got {self.learning_rates})")
        if not self.checkpoints or any(c < 1 for c in self.checkpoints):
            raise TrainingError(f"checkpoints must be numbers of updates >= 1 (got {self.checkpoints})")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise TrainingError(f"seeds must be distinct and at least one (got {self.seeds})")
        if self.batch_size < 1 or self.max_length < 8 or self.valid_depth < 1:
            raise TrainingError("batch size, max length and validation depth must be positive")
        if not 0 <= self.warmup_ratio < 1:
            raise TrainingError(f"warmup ratio must be in [0, 1) (got {self.warmup_ratio})")
        if self.save_every < 1 or self.jobs < 1:
            raise TrainingError("--save-every and --jobs must be >= 1")
        if self.negatives_depth < 0:
            raise TrainingError(f"--negatives-depth must be >= 0 (got {self.negatives_depth})")

    @property
    def updates(self) -> int:
        return max(self.checkpoints)

    def cells(self) -> list[tuple[float, int]]:
        return [(lr, seed) for lr in self.learning_rates for seed in self.seeds]


# ---------------------------------------------------------------- data

@dataclass
class GradedPairs:
    """Training pairs by relevance level: ``levels[rel] = [(query, document), ...]``."""

    levels: dict[int, list[tuple[str, str]]]
    max_relevance: int
    missing_documents: list[str]

    def counts(self) -> dict[int, int]:
        return {r: len(p) for r, p in sorted(self.levels.items())}


def graded_pairs(topics: Mapping[str, Topic] | Sequence[Mapping[str, Topic]], qrels: Qrels,
                 texts: Mapping[str, str], max_relevance: int | None = None, *,
                 negatives: Sequence[Run] = (), negatives_depth: int = 0) -> GradedPairs:
    """Every judged pair of ``qrels`` as (query text, document text), by grade.

    ``topics`` may be a list of topic sets with the same ids (query wordings):
    each judged pair then appears once per wording. Judgements of topics
    missing from a topic set are an error; documents missing from ``texts``
    are reported (``missing_documents``) and left out. Negative grades
    (trec_eval's "unjudged") are left out.

    ``negatives``: first-stage runs of the training topics (hard negatives, for qrels that judge
    relevant documents only, such as a cross-reference benchmark): each unjudged document in a
    topic's top ``negatives_depth`` of a run is a pair of grade 0 (once per topic, whichever runs
    hold it). A run's topic that the qrels do not judge is left out.
    """
    sets = [topics] if isinstance(topics, Mapping) else list(topics)
    levels: dict[int, list[tuple[str, str]]] = {}
    missing: set[str] = set()
    for tops in sets:
        absent = sorted(q for q in qrels if q not in tops)
        if absent:
            raise TrainingError(f"{len(absent)} qrels topic(s) have no query: {', '.join(absent[:10])}")
        for qid in sorted(qrels):
            for docid in sorted(qrels[qid]):
                rel = int(qrels[qid][docid])
                if rel < 0:
                    continue
                if docid not in texts:
                    missing.add(docid)
                    continue
                levels.setdefault(rel, []).append((tops[qid].text, texts[docid]))
        for qid in sorted(qrels) if negatives_depth else ():
            judged, added = qrels[qid], set()
            for run in negatives:
                for docid, _ in trec.ranking(run.get(qid, {}))[:negatives_depth]:
                    if docid in judged or docid in added:
                        continue
                    added.add(docid)
                    if docid not in texts:
                        missing.add(docid)
                        continue
                    levels.setdefault(0, []).append((tops[qid].text, texts[docid]))
    if len(levels) < 2:
        raise TrainingError(f"training needs at least two relevance levels (found {sorted(levels)}); qrels that "
                            f"judge relevant documents only need hard negatives (--negatives-run)")
    top = max(levels) if max_relevance is None else max_relevance
    if top <= 0 or max(levels) > top:
        raise TrainingError(f"max relevance {top} does not cover the grades {sorted(levels)}")
    return GradedPairs(levels, top, sorted(missing))


class BalancedBatches:
    """Batches with every relevance level equally frequent; ``batch(b)`` depends only on (seed, b)."""

    def __init__(self, pairs: GradedPairs, batch_size: int, seed: int):
        self.pairs = pairs
        self.levels = sorted(pairs.levels)
        self.batch_size = batch_size
        self.seed = seed
        self._perms: dict[tuple[int, int], np.ndarray] = {}
        self._pos_cache: tuple[int, dict[int, int]] = (0, {lv: 0 for lv in self.levels})

    def _slots(self, b: int) -> dict[int, int]:
        n = len(self.levels)
        base, rem = divmod(self.batch_size, n)
        counts = {lv: base for lv in self.levels}
        for j in range(rem):
            counts[self.levels[(b * rem + j) % n]] += 1
        return counts

    def _positions(self, b: int) -> dict[int, int]:
        """How many items of each level batches 0..b-1 used."""
        start, pos = self._pos_cache
        if start > b:
            start, pos = 0, {lv: 0 for lv in self.levels}
        pos = dict(pos)
        for i in range(start, b):
            for lv, c in self._slots(i).items():
                pos[lv] += c
        self._pos_cache = (b, pos)
        return pos

    def _perm(self, level: int, epoch: int) -> np.ndarray:
        key = (level, epoch)
        if key not in self._perms:
            if len(self._perms) > 64:
                self._perms.clear()
            rng = np.random.default_rng([self.seed, level, epoch])
            self._perms[key] = rng.permutation(len(self.pairs.levels[level]))
        return self._perms[key]

    def batch(self, b: int) -> list[tuple[str, str, float]]:
        """Batch ``b``: (query, document, target) triples, in a seeded shuffled order."""
        pos = self._positions(b)
        items: list[tuple[str, str, float]] = []
        for lv, c in self._slots(b).items():
            pairs = self.pairs.levels[lv]
            n = len(pairs)
            for i in range(pos[lv], pos[lv] + c):
                q, d = pairs[int(self._perm(lv, i // n)[i % n])]
                items.append((q, d, lv / self.pairs.max_relevance))
        order = np.random.default_rng([self.seed, 1_000_003, b]).permutation(len(items))
        return [items[int(i)] for i in order]


@dataclass
class Validation:
    """Validation topics, qrels and the first-stage runs whose candidates are reranked (judged-only scoring).

    ``runs`` maps a name (``bm25.valid``) to a run; the validation score is the
    mean of the measure over the runs.
    """

    topics: Mapping[str, Topic]
    qrels: Qrels
    runs: Mapping[str, Run]
    texts: Mapping[str, str]
    depth: int = 1000
    #: judged-only scoring (graded qrels); False: every candidate scored, an unjudged one non-relevant
    judged_only: bool = True

    def pairs(self) -> list[tuple[str, str]]:
        """(qid, docid) of the candidates scored: the judged documents in any run's top ``depth`` for its
        topic (judged-only), or every one of them.

        Judged-only scoring drops unjudged documents, so scoring only the
        judged ones gives exactly the judged-only score of the full rerank.
        """
        seen: set[tuple[str, str]] = set()
        for run in self.runs.values():
            for qid in run:
                judged = self.qrels.get(qid, {})
                for d, _ in trec.ranking(run[qid])[:self.depth]:
                    if not self.judged_only or is_judged(d, judged):
                        seen.add((qid, d))
        if not seen:
            raise TrainingError("no judged document among the validation candidates")
        return sorted(seen)


def evaluate_scores(valid: Validation, keys: Sequence[tuple[str, str]], scores: Sequence[float],
                    measure: str = "ndcg_cut_10", depths: Sequence[int] = ()) -> dict[str, float]:
    """``measure`` (judged-only where ``valid.judged_only``) of each validation run's reranked candidates, at the full depth and at
    each of ``depths``; ``<measure>@rerank<depth>`` is the mean over the runs."""

    spec = _measure_spec(measure)
    score_of = dict(zip(keys, (float(s) for s in scores)))
    out: dict[str, float] = {}
    for depth in [valid.depth, *depths]:
        values = []
        for name, first in sorted(valid.runs.items()):
            run: Run = {}
            for q, docs in first.items():
                for d, _ in trec.ranking(docs)[:depth]:
                    if (q, d) in score_of:
                        run.setdefault(q, {})[d] = score_of[(q, d)]
            res = evaluate(valid.qrels, run, [spec], judged_only=valid.judged_only)
            v = float(res["all"][measure])
            values.append(v)
            if len(valid.runs) > 1:
                out[f"{name}:{measure}@rerank{depth}"] = v
        out[f"{measure}@rerank{depth}"] = float(np.mean(values))
    return out


def _measure_spec(name: str) -> str:
    """``ndcg_cut_10`` -> ``ndcg_cut.10`` (trec_eval's spec for an output measure name)."""
    head, sep, tail = name.rpartition("_")
    return f"{head}.{tail}" if sep and tail.isdigit() else name


# ---------------------------------------------------------------- training

def _new_model(cfg: TrainConfig, seed: int, device: str = "cpu"):
    import torch
    from sentence_transformers import CrossEncoder

    torch.manual_seed(seed)
    config_kwargs = {}
    if cfg.attention_dropout is not None:
        config_kwargs["attention_probs_dropout_prob"] = float(cfg.attention_dropout)
    return CrossEncoder(str(models.resolve(cfg.base_model)), num_labels=1, max_length=cfg.max_length, device=device,
                        config_kwargs=config_kwargs or None)


def _optimizer(model, lr: float, weight_decay: float, head_lr_multiplier: float = 1.0):
    import torch

    if head_lr_multiplier == 1.0:  # two groups: decayed, not decayed
        decay: list = []
        no_decay: list = []
        for name, p in model.named_parameters():
            if p.requires_grad:
                (no_decay if name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name
                 else decay).append(p)
        return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                                  {"params": no_decay, "weight_decay": 0.0}], lr=lr)
    groups: dict[tuple[bool, bool], list] = {}
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        head = name.startswith("classifier.") or name.startswith("score.")
        undecayed = name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name
        groups.setdefault((head, undecayed), []).append(p)
    return torch.optim.AdamW([
        {"params": ps, "weight_decay": 0.0 if no_decay else weight_decay,
         "lr": lr * (head_lr_multiplier if head else 1.0)}
        for (head, no_decay), ps in sorted(groups.items())], lr=lr)


def optimizer_step(loss, model, opt, sched, max_grad_norm: float | None) -> float:
    """One update of a training loop (train-ce's and train-dense's): backward, gradients clipped to
    ``max_grad_norm`` (0 or None: not clipped), the optimizer's and the scheduler's step, gradients cleared.
    Returns the loss as a float."""
    import torch

    loss.backward()
    if max_grad_norm:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    opt.step()
    sched.step()
    opt.zero_grad(set_to_none=True)
    return float(loss.item())


def _lr_lambda(total: int, warmup: int) -> Callable[[int], float]:
    def f(step: int) -> float:
        if warmup and step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total - step) / max(1, total - warmup))
    return f


def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def _cell_tag(lr: float, seed: int) -> str:
    return f"lr-{lr:g}.seed-{seed}"


def _write_json(path: Path, obj) -> None:
    atomic.write_json(path, obj, indent=1, sort_keys=True)


def _is_model(path: Path) -> bool:
    """A model folder written by train-ce before output markers existed."""
    return (path / TRAIN_CONFIG).exists()


def _rng_states() -> dict:
    import torch

    st = {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate()}
    if torch.cuda.is_available():
        st["cuda"] = torch.cuda.get_rng_state_all()
    return st


def _set_rng_states(st: Mapping) -> None:
    import torch

    torch.set_rng_state(st["torch"])
    np.random.set_state(st["numpy"])
    random.setstate(st["python"])
    if "cuda" in st and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(st["cuda"])


@dataclass(frozen=True)
class Pause:
    """When a training call pauses: at its first save after ``updates`` updates in this call, or at its first save
    at or past ``deadline`` (seconds since the epoch), whichever comes first. Its state is kept; the same call
    again resumes it, and the model it ends with does not depend on where it paused. Time decides only where a
    run pauses, never what it learns (``train-ce`` and ``train-dense``: ``--stop-after``,
    ``--stop-after-minutes``).

    Parameters
    ----------
    updates : int, optional
        Updates (steps) of this call.
    deadline : float, optional
        A ``time.time()`` value; :meth:`after` sets it from minutes.
    """

    updates: int | None = None
    deadline: float | None = None

    @classmethod
    def after(cls, updates: int | None = None, minutes: float | None = None) -> Pause | None:
        """A pause after ``updates`` updates or ``minutes`` from now (``None`` when both are ``None``); a
        ``minutes`` that is not a number of 0 or more (NaN, negative) is a :class:`TrainingError`, never a bound
        that silently never comes."""
        if updates is None and minutes is None:
            return None
        if minutes is not None and not minutes >= 0:
            raise TrainingError(f"--stop-after-minutes {minutes}: give a number of minutes, 0 or more")
        return cls(updates, None if minutes is None else time.time() + 60.0 * minutes)

    def due(self, ran: int) -> bool:
        """Whether a save point, ``ran`` updates into this call, is where to pause."""
        return ((self.updates is not None and ran >= self.updates)
                or (self.deadline is not None and time.time() >= self.deadline))


def pause_of(stop_after: int | Pause | None) -> Pause | None:
    """``stop_after`` as the API takes it (a number of updates, or a :class:`Pause`) as a :class:`Pause`."""
    return Pause(updates=stop_after) if isinstance(stop_after, int) else stop_after


@dataclass
class _Cell:
    """What one grid cell needs; picklable, so a worker process can run it."""

    cfg: TrainConfig
    lr: float
    seed: int
    pairs: GradedPairs
    valid: Validation
    vkeys: list[tuple[str, str]]
    work: str
    device: str
    precision: str
    progress: bool
    stop_after: Pause | None


def _run_cell(c: _Cell) -> dict:
    """Train one (learning rate, seed) to ``cfg.updates``, validating and saving each checkpoint.

    Returns ``{"records", "losses", "seconds", "ran", "stopped"}``; resumes from
    ``<work>/state.pt`` when present. Messages go through the ``legalir`` logger,
    its console handler written with ``tqdm.write`` meanwhile (the bar stays intact).
    """
    from tqdm.contrib.logging import logging_redirect_tqdm

    with logging_redirect_tqdm(loggers=[logging.getLogger(_logging.ROOT)]), \
            numeric.threads(c.cfg.threads, faiss=False):  # torch's count for this cell only
        return _train_cell(c)


def _train_cell(c: _Cell) -> dict:
    import torch

    from legalir.search.rerank import score_pairs

    cfg, tag = c.cfg, _cell_tag(c.lr, c.seed)
    work = Path(c.work)
    work.mkdir(parents=True, exist_ok=True)
    done_path, state_path = work / "done.json", work / "state.pt"
    if done_path.exists():
        return {**json.loads(done_path.read_text(encoding="utf-8")), "ran": 0, "stopped": False}
    log = _log.info
    batches = BalancedBatches(c.pairs, cfg.batch_size, c.seed)
    vq = [c.valid.topics[q].text for q, _ in c.vkeys]
    vd = [c.valid.texts[d] for _, d in c.vkeys]
    depths = [d for d in (10, 100) if d < c.valid.depth]
    key = f"{cfg.measure}@rerank{c.valid.depth}"

    ce = _new_model(cfg, c.seed, c.device)
    model, tok = ce.model, ce.tokenizer
    opt = _optimizer(model, c.lr, cfg.weight_decay, cfg.head_lr_multiplier)
    total = cfg.updates
    warmup = int(round(cfg.warmup_ratio * total))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, _lr_lambda(total, warmup))
    step, losses, records, seconds = 0, [], [], 0.0
    if state_path.exists():
        st = torch.load(state_path, weights_only=False, map_location="cpu")
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["optimizer"])
        sched.load_state_dict(st["scheduler"])
        _set_rng_states(st["rng"])
        step, losses, records, seconds = st["data_position"], st["losses"], st["records"], st["seconds"]
        log(f"train-ce: {tag}: resuming at update {step}")
    else:
        torch.manual_seed(c.seed + 1)  # dropout stream
        random.seed(c.seed)
        np.random.seed(c.seed)

    def save_state():
        with atomic.open_file(state_path, "wb") as fh:
            torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                        "scheduler": sched.state_dict(), "rng": _rng_states(), "data_position": step,
                        "losses": losses, "records": records, "seconds": round(seconds, 1),
                        "cell": {"learning_rate": c.lr, "seed": c.seed}}, fh)

    done = {r["updates"] for r in records}
    ran = 0
    model.train()
    bar = _logging.progress(total=total, initial=step, desc=f"train-ce {tag}", unit=" updates",
                            quiet=not c.progress, mininterval=2.0, leave=True)
    t0 = time.time()
    try:
        while step < total:
            batch = batches.batch(step)
            enc = tok([q for q, _, _ in batch], [d for _, d, _ in batch], truncation="longest_first",
                      max_length=cfg.max_length, padding=True, return_tensors="pt")
            enc = {k: v.to(c.device) for k, v in enc.items()}
            target = torch.tensor([t for _, _, t in batch], dtype=torch.float32, device=c.device)
            with autocast(c.precision, c.device):
                logits = model(**enc).logits[:, 0].float()
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, target)
            losses.append(optimizer_step(loss, model, opt, sched, cfg.max_grad_norm))
            step += 1
            ran += 1
            bar.update(1)
            bar.set_postfix(loss=f"{np.mean(losses[-20:]):.4f}")
            checkpoint = step in cfg.checkpoints and step not in done
            if checkpoint:
                scores = score_pairs(model, tok, vq, vd, max_length=cfg.max_length,
                                     batch_size=cfg.eval_batch_size, progress=False, precision=c.precision)
                values = evaluate_scores(c.valid, c.vkeys, scores, cfg.measure, depths)
                seconds += time.time() - t0
                t0 = time.time()
                rec = {"learning_rate": c.lr, "seed": c.seed, "updates": step, "valid": values,
                       "score": values[key], "train_loss_last50": float(np.mean(losses[-50:])),
                       "seconds": round(seconds, 1)}
                with atomic.atomic_dir(work / f"ckpt-{step}", "checkpoint") as tmp:
                    ce.save(str(tmp))
                # back to training mode after the save: sentence-transformers' save() leaves the model in eval
                # mode (no dropout), so the updates after a checkpoint ran without dropout, and a run resumed
                # from a later save (which starts in training mode) diverged from the uninterrupted one
                model.train()
                records.append(rec)
                done.add(step)
                log(f"train-ce: {tag} updates={step} valid " + " ".join(
                    f"{k}={v:.4f}" for k, v in values.items()) + f" loss={rec['train_loss_last50']:.4f}")
            if checkpoint or step % cfg.save_every == 0 or step == total:
                seconds += time.time() - t0
                t0 = time.time()
                save_state()
                if c.stop_after is not None and c.stop_after.due(ran) and step < total:
                    log(f"train-ce: {tag}: stopped after {ran} updates; state saved in {work}: run again to resume")
                    return {"records": records, "losses": losses, "seconds": round(seconds, 1), "ran": ran,
                            "stopped": True}
    finally:
        bar.close()
    result = {"records": records, "losses": losses, "seconds": round(seconds, 1)}
    _write_json(done_path, result)
    state_path.unlink(missing_ok=True)
    return {**result, "ran": ran, "stopped": False}


def select(records: Sequence[Mapping]) -> tuple[dict, dict]:
    """The (learning rate, updates) with the best mean validation score over seeds, and its best seed's record.

    Ties go to fewer updates, then the smaller learning rate, then the smaller seed.
    """
    by_cfg: dict[tuple[float, int], list[Mapping]] = {}
    for r in records:
        by_cfg.setdefault((r["learning_rate"], r["updates"]), []).append(r)
    means = {k: float(np.mean([r["score"] for r in rs])) for k, rs in by_cfg.items()}
    (lr, updates) = min(means, key=lambda k: (-means[k], k[1], k[0]))
    best = min(by_cfg[(lr, updates)], key=lambda r: (-r["score"], r["seed"]))
    return ({"learning_rate": lr, "updates": updates, "mean_score_over_seeds": means[(lr, updates)],
             "seeds": sorted(r["seed"] for r in by_cfg[(lr, updates)])}, dict(best))


def train(cfg: TrainConfig, train_topics: Mapping[str, Topic] | Sequence[Mapping[str, Topic]], train_qrels: Qrels,
          texts: Mapping[str, str], valid: Validation, out_dir: str | os.PathLike,
          work_dir: str | os.PathLike | None = None, *, progress: bool = True, command: str | None = None,
          extra: Mapping | None = None, log: Callable[[str], None] | None = None,
          stop_after: int | Pause | None = None, negatives: Sequence[Run] = ()) -> dict:
    """Run the grid, keep the selected (learning rate, updates, seed); returns the summary.

    ``work_dir`` (default ``<out_dir>.work``) holds resumable state; it is
    removed after a successful run. ``stop_after``: each cell returns at the
    first save point after this many updates in this call, or where the
    :class:`Pause` given says (state saved), and ``train`` returns
    ``{"stopped": True, ...}``: call again to resume.
    """

    cfg.validate()
    device = default_device()
    precision = resolve_precision(cfg.precision, device)
    warn = log or _log.warning
    log = log or _log.info
    out = Path(out_dir)
    atomic.check_target(out, KIND, legacy=_is_model, yes=None)  # refuse before training, not after
    work = Path(work_dir) if work_dir else out.with_name(out.name + ".work")
    work.mkdir(parents=True, exist_ok=True)

    if cfg.negatives_depth and not negatives:
        raise TrainingError("--negatives-depth needs a run of the training topics (--negatives-run)")
    pairs = graded_pairs(train_topics, train_qrels, texts, cfg.max_relevance, negatives=negatives,
                         negatives_depth=cfg.negatives_depth)
    if pairs.missing_documents:
        warn(f"train-ce: {len(pairs.missing_documents)} judged document(s) have no text and are left out: "
             + ", ".join(pairs.missing_documents[:10]))
    vkeys = valid.pairs()
    log(f"train-ce: {sum(pairs.counts().values())} training pairs by grade {pairs.counts()} "
        f"(targets rel/{pairs.max_relevance}); {len(vkeys)} judged validation candidates "
        f"(top {valid.depth} of {', '.join(sorted(valid.runs))}); grid: {len(cfg.learning_rates)} learning "
        f"rate(s) x {len(cfg.seeds)} seed(s), checkpoints {cfg.checkpoints}; {device}, {precision}")

    # the state of a cell depends on everything but the grid's other cells, the threads and the jobs
    common = {k: v for k, v in dataclasses.asdict(cfg).items()
              if k not in ("threads", "jobs", "learning_rates", "seeds", "save_every")
              and not (k == "head_lr_multiplier" and v == 1.0)}
    state_id = _digest({"config": common, "precision": precision, "device": device,
                        "train": pairs.counts(), "train_digest": _digest(sorted(
                            (lv, p) for lv, ps in pairs.levels.items() for p in ps)),
                        "valid": vkeys, "runs": sorted(valid.runs)})
    marker = work / "state-id.json"
    if marker.exists() and json.loads(marker.read_text(encoding="utf-8")).get("state_id") != state_id:
        warn(f"train-ce: {work} holds another configuration's state; starting over")
        for p in sorted(work.iterdir()):
            if p.is_dir() and p.name.startswith("lr-"):
                shutil.rmtree(p)
    _write_json(marker, {"state_id": state_id})

    t_all = time.time()
    cells = [_Cell(cfg, lr, seed, pairs, valid, vkeys, str(work / _cell_tag(lr, seed)), device, precision,
                   progress and cfg.jobs == 1, pause_of(stop_after)) for lr, seed in cfg.cells()]
    if cfg.jobs == 1 or len(cells) == 1:
        results = []
        for c in cells:
            results.append(_run_cell(c))
            if results[-1]["stopped"]:
                break
    else:
        import concurrent.futures as cf
        import multiprocessing as mp

        with cf.ProcessPoolExecutor(min(cfg.jobs, len(cells)), mp_context=mp.get_context("spawn")) as pool:
            results = list(pool.map(_run_cell, cells))
    records = [r for res in results for r in res["records"]]
    if any(res["stopped"] for res in results) or len(results) < len(cells):
        return {"stopped": True, "work_dir": str(work), "records": records}

    chosen, best = select(records)
    summary = {
        "recipe": "ACORD (Wang et al. 2025): balanced relevance levels, targets rel/max_rel, BCE, AdamW",
        "config": dataclasses.asdict(cfg),
        "base_model_resolved": _resolved(cfg.base_model),
        "train": {"topics": len(train_qrels), "wordings": 1 if isinstance(train_topics, Mapping) else len(train_topics),
                  "pairs_by_grade": {str(k): v for k, v in pairs.counts().items()},
                  "max_relevance": pairs.max_relevance, "missing_documents": pairs.missing_documents,
                  "qrels_digest": _digest({q: train_qrels[q] for q in sorted(train_qrels)})},
        "valid": {"topics": len({q for q, _ in vkeys}), "judged_candidates": len(vkeys), "depth": valid.depth,
                  "runs": sorted(valid.runs),
                  "measure": f"{cfg.measure} ({'judged-only' if valid.judged_only else 'every candidate'})",
                  "qrels_digest": _digest({q: valid.qrels[q] for q in sorted(valid.qrels)})},
        "grid": sorted(records, key=lambda r: (r["learning_rate"], r["seed"], r["updates"])),
        "selected_config": chosen,
        "selected": best,
        "train_losses": {_cell_tag(c.lr, c.seed): res["losses"] for c, res in zip(cells, results)},
        "seconds": {"total_this_call": round(time.time() - t_all, 1),
                    **{_cell_tag(c.lr, c.seed): res["seconds"] for c, res in zip(cells, results)}},
        "versions": _versions(),
        "machine": {"platform": platform.platform(), "torch_threads": _threads(), "device": _device_name(device),
                    "precision": precision, "jobs": cfg.jobs},
        "command": command,
        **(dict(extra) if extra else {}),
    }
    src = work / _cell_tag(best["learning_rate"], best["seed"]) / f"ckpt-{best['updates']}"
    with atomic.atomic_dir(out, KIND, legacy=_is_model) as tmp:
        shutil.copytree(src, tmp, dirs_exist_ok=True, ignore=shutil.ignore_patterns(atomic.MARKER))
        _write_json(tmp / TRAIN_CONFIG, summary)
    shutil.rmtree(work, ignore_errors=True)
    log(f"train-ce: selected learning rate {best['learning_rate']:g}, {best['updates']} updates, seed "
        f"{best['seed']} ({cfg.measure}{' judged-only' if cfg.judged_only else ''} on validation = {best['score']:.4f}; mean over seeds "
        f"{chosen['mean_score_over_seeds']:.4f}); model -> {out}")
    return summary


def train_collection(cfg: TrainConfig, collection: str | os.PathLike | Sequence[str | os.PathLike],
                     out_dir: str | os.PathLike,
                     valid_runs: Sequence[str | os.PathLike], train_sets: Sequence[str] = ("train",),
                     valid_set: str = "valid", work_dir: str | os.PathLike | None = None, *,
                     stop_after: int | Pause | None = None, command: str | None = None,
                     negative_runs: Sequence[str | os.PathLike] = (), doc_text: str = "{contents}") -> dict:
    """:func:`train` on a collection's topic sets: ``train_sets`` (query wordings of the training topics,
    e.g. ``train train.medium train.long``) and ``valid_set``; validation reranks ``valid_runs``;
    ``negative_runs``: runs of the training topics, hard negatives (``cfg.negatives_depth``).
    ``doc_text``: the text the model reads for a document, a template of its record's fields
    (:func:`legalir.indexing.encoders.record_text`; a statute's ``{citation} {title}\n{heading_path}\n{contents}``
    puts its number and headings before its text); recorded in ``legalir-train.json``, so reranking with the
    model must read documents the same way.

    ``collection`` may be several collections (the statute codes a model is trained on, issue 40): their
    training topics, qrels and documents are trained on together and their validation topics select; a topic or
    document id in two of them is refused. Each run given then holds the topics of all of them (one run per
    first stage: the codes' runs concatenated). Only the named topic sets of the named collections are read."""
    import dataclasses

    from legalir import collections
    from legalir.search.rerank import collection_texts
    from legalir.search.tuning import objective, refuse_test

    colls = [collection] if isinstance(collection, (str, os.PathLike)) else list(collection)
    if not colls:
        raise TrainingError("name at least one collection to train on")
    # everything checked before training starts: no test set, a measure with one value
    # (ndcg_cut_10 or ndcg_cut.10), a base model that resolves, validation runs of the validation topics
    refuse_test([*train_sets, valid_set], "--train-topics/--valid-topics", "training or validating")
    _, measure = objective(cfg.measure)
    cfg = dataclasses.replace(cfg, measure=measure)
    cfg.validate()
    models.resolve(cfg.base_model)
    if len({collections.base_set(s) for s in train_sets}) != 1:
        raise TrainingError(f"training topic sets must be wordings of one set (got {', '.join(train_sets)})")

    owner: dict[tuple[str, str], str] = {}   # (what, id) -> the collection that has it

    def merged(parts: Sequence[tuple[str | os.PathLike, Mapping]], what: str) -> dict:
        out: dict = {}
        for coll, part in parts:
            for key, value in part.items():
                first = owner.setdefault((what, key), str(coll))
                if key in out or first != str(coll):
                    raise TrainingError(f"{coll}: {what} {key!r} is also in {first}: collections trained on "
                                        f"together must have distinct ids")
                out[key] = value
        return out

    train_topics = [merged([(c, trec.read_topics(collections.topics_path(c, s))) for c in colls], f"{s} topic")
                    for s in train_sets]
    train_qrels = merged([(c, trec.read_qrels(collections.qrels_path(c, train_sets[0]))) for c in colls],
                         f"{train_sets[0]} qrels topic")
    valid_topics = merged([(c, trec.read_topics(collections.topics_path(c, valid_set))) for c in colls],
                          f"{valid_set} topic")
    valid_qrels = merged([(c, trec.read_qrels(collections.qrels_path(c, valid_set))) for c in colls],
                         f"{valid_set} qrels topic")

    def read_runs(paths, topics, name: str) -> dict[str, Run]:
        """Each run by its file name; a topic the set lacks is an error."""
        out: dict[str, Run] = {}
        for path in paths:
            run = trec.read_run(path)
            stray = sorted(set(run) - set(topics))
            if stray:
                raise TrainingError(f"{path}: {len(stray)} topic(s) of the run are not {name} topics: "
                                    f"{', '.join(stray[:5])}")
            key = Path(path).name.removesuffix(".trec")
            if key in out:
                raise TrainingError(f"{path}: two runs named {key!r}")
            out[key] = run
        return out

    from legalir.indexing.encoders import DOC_TEXT, EncoderError, doc_text_fields, record_text

    try:
        doc_text_fields(doc_text)
    except EncoderError as e:
        raise TrainingError(f"--doc-text: {e}") from None
    runs = read_runs(valid_runs, valid_topics, valid_set)
    negatives = list(read_runs(negative_runs, train_qrels, train_sets[0]).values())

    def texts_of(coll) -> dict[str, str]:
        if doc_text == DOC_TEXT:
            return collection_texts(coll)
        out = {}
        for n, rec in enumerate(collections.iter_documents(coll), 1):
            try:
                out[rec["id"]] = record_text(doc_text, rec)
            except EncoderError as e:
                raise TrainingError(f"{Path(coll) / 'corpus'}: document {n}: {e}") from None
        return out

    texts = merged([(c, texts_of(c)) for c in colls], "document")
    valid = Validation(valid_topics, valid_qrels, runs, texts, depth=cfg.valid_depth, judged_only=cfg.judged_only)
    return train(cfg, train_topics if len(train_topics) > 1 else train_topics[0], train_qrels, texts, valid,
                 out_dir, work_dir, stop_after=stop_after, command=command, negatives=negatives,
                 extra={"collection": str(colls[0]), "collections": [str(c) for c in colls],
                        "train_topics": list(train_sets), "valid_topics": valid_set,
                        "valid_runs": [str(p) for p in valid_runs],
                        "negative_runs": [str(p) for p in negative_runs], "doc_text": doc_text})


def _resolved(model: str) -> str:
    try:
        return str(models.resolve(model))
    except Exception:  # pragma: no cover - the record keeps the name as given when it no longer resolves
        return model


def _device_name(device: str) -> str:
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        return f"{device} ({torch.cuda.get_device_name()})"
    return device


def _threads() -> int:
    import torch

    return int(torch.get_num_threads())


def _versions() -> dict:
    out = {"python": platform.python_version()}
    for mod in ("torch", "transformers", "sentence_transformers", "numpy"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:  # pragma: no cover - dependencies of legalir: a broken install only
            pass
    out["legalir"] = __version__
    return out


def load_config(model_dir: str | os.PathLike) -> dict:
    p = Path(model_dir) / TRAIN_CONFIG
    if not p.exists():
        raise TrainingError(f"{p}: not found (not a model trained by `legalir train-ce`)")
    return json.loads(p.read_text(encoding="utf-8"))
