"""Fine-tune a cross-encoder on graded qrels (the ACORD paper's recipe).

Recipe (Wang et al. 2025, ACORD):

* training pairs: every judged (topic, document) pair of the training qrels;
* oversampling: every batch holds the relevance levels in equal numbers
  (levels rotate through the remainder when the batch size is not a multiple
  of the number of levels), each level's pairs cycling in a fresh seeded
  shuffle per pass;
* target: normalised grade ``rel / max_rel`` (ACORD: 1 star -> 0.0 ... 5 stars -> 1.0);
* loss: binary cross-entropy on the logit; AdamW (weight decay 0.01, not on
  biases and LayerNorm), batch 64, linear warm-up then linear decay;
* model selection: a small grid of learning rates, each run evaluated at a
  few numbers of updates; the (learning rate, updates) with the best
  validation score (judged-only NDCG@10 of the validation topics' first-stage
  candidates, reranked) is kept. Test topics are never read.

Reproducible: one seed fixes the new head's initialisation, dropout and the
batch order (batch ``b`` is a pure function of the seed and ``b``). Each run
saves its state at every checkpoint under ``work_dir``; an interrupted
``train`` resumes from the last checkpoint and gives the same model as an
uninterrupted one (same machine and thread count).

Output (``out_dir``, written under a temporary name then renamed): the
selected model as a sentence-transformers CrossEncoder folder, plus
``legalir-train.json``: configuration, data counts and digests, the whole
validation grid, the selection, timings, library versions and the command.
"""
from __future__ import annotations

from legalir.errors import LegalirError

import dataclasses
import hashlib
import json
import os
import platform
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from legalir import atomic, trec
from legalir.trec import Qrels, Run, Topic

TRAIN_CONFIG = "legalir-train.json"
KIND = "cross-encoder"


class TrainingError(LegalirError, ValueError):
    pass


@dataclass
class TrainConfig:
    base_model: str = "minilm"
    learning_rates: list[float] = field(default_factory=lambda: [2e-5, 5e-5])
    checkpoints: list[int] = field(default_factory=lambda: [100, 200, 300, 400])
    batch_size: int = 64
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    max_grad_norm: float = 1.0
    max_length: int = 256
    attention_dropout: float | None = 0.0     # None: the base model's (0.1); 0 lets torch use fused attention
    head_lr_multiplier: float = 1.0           # learning rate of the new scoring head = lr x this
    precision: str = "auto"                   # bf16 autocast where the hardware has it (AMX, CUDA), else fp32
    seed: int = 42
    max_relevance: int | None = None          # default: the highest grade in the training qrels
    valid_depth: int = 1000                   # rerank depth of the validation candidates
    measure: str = "ndcg_cut_10"
    eval_batch_size: int = 64
    threads: int | None = None

    def validate(self) -> None:
        if not self.learning_rates or any(lr <= 0 for lr in self.learning_rates):
            raise TrainingError(f"learning rates must be > 0 (got {self.learning_rates})")
        if not self.checkpoints or any(c < 1 for c in self.checkpoints):
            raise TrainingError(f"checkpoints must be numbers of updates >= 1 (got {self.checkpoints})")
        if self.batch_size < 1 or self.max_length < 8 or self.valid_depth < 1:
            raise TrainingError("batch size, max length and validation depth must be positive")
        if not 0 <= self.warmup_ratio < 1:
            raise TrainingError(f"warmup ratio must be in [0, 1) (got {self.warmup_ratio})")

    @property
    def updates(self) -> int:
        return max(self.checkpoints)


# ---------------------------------------------------------------- data

@dataclass
class GradedPairs:
    """Training pairs by relevance level: ``levels[rel] = [(query, document), ...]``."""

    levels: dict[int, list[tuple[str, str]]]
    max_relevance: int
    missing_documents: list[str]

    def counts(self) -> dict[int, int]:
        return {r: len(p) for r, p in sorted(self.levels.items())}


def graded_pairs(topics: Mapping[str, Topic], qrels: Qrels, texts: Mapping[str, str],
                 max_relevance: int | None = None) -> GradedPairs:
    """Every judged pair of ``qrels`` as (query text, document text), by grade.

    Judgements of topics missing from ``topics`` are an error; documents
    missing from ``texts`` are reported (``missing_documents``) and left out.
    Negative grades (trec_eval's "unjudged") are left out.
    """
    absent = sorted(q for q in qrels if q not in topics)
    if absent:
        raise TrainingError(f"{len(absent)} qrels topic(s) have no query: {', '.join(absent[:10])}")
    levels: dict[int, list[tuple[str, str]]] = {}
    missing: set[str] = set()
    for qid in sorted(qrels):
        for docid in sorted(qrels[qid]):
            rel = int(qrels[qid][docid])
            if rel < 0:
                continue
            if docid not in texts:
                missing.add(docid)
                continue
            levels.setdefault(rel, []).append((topics[qid].text, texts[docid]))
    if len(levels) < 2:
        raise TrainingError(f"training needs at least two relevance levels (found {sorted(levels)})")
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
    """Validation topics, qrels and the candidates to rerank (judged-only scoring)."""

    topics: Mapping[str, Topic]
    qrels: Qrels
    run: Run                      # first-stage run of the validation topics
    texts: Mapping[str, str]
    depth: int = 1000

    def pairs(self) -> list[tuple[str, str]]:
        """(qid, docid) of the judged documents in each topic's top ``depth``.

        Judged-only scoring drops unjudged documents, so scoring only the
        judged ones gives exactly the judged-only score of the full rerank.
        """
        out = []
        for qid in sorted(self.run):
            judged = self.qrels.get(qid, {})
            for d, _ in trec.ranking(self.run[qid])[:self.depth]:
                if judged.get(d, -1) >= 0:
                    out.append((qid, d))
        if not out:
            raise TrainingError("no judged document among the validation candidates")
        return out


def evaluate_scores(valid: Validation, keys: Sequence[tuple[str, str]], scores: Sequence[float],
                    measure: str = "ndcg_cut_10", depths: Sequence[int] = ()) -> dict[str, float]:
    """Judged-only ``measure`` of the reranked candidates, at the full depth and at each of ``depths``."""
    from legalir.evaluate import evaluate

    spec = _measure_spec(measure)
    rank = {q: {d: i for i, (d, _) in enumerate(trec.ranking(docs))} for q, docs in valid.run.items()}
    out = {}
    for depth in [valid.depth, *depths]:
        run: Run = {}
        for (q, d), s in zip(keys, scores):
            if rank[q][d] < depth:
                run.setdefault(q, {})[d] = float(s)
        res = evaluate(valid.qrels, run, [spec], judged_only=True)
        out[f"{measure}@rerank{depth}"] = float(res["all"][measure])
    return out


def _measure_spec(name: str) -> str:
    """``ndcg_cut_10`` -> ``ndcg_cut.10`` (trec_eval's spec for an output measure name)."""
    head, sep, tail = name.rpartition("_")
    return f"{head}.{tail}" if sep and tail.isdigit() else name


# ---------------------------------------------------------------- training

def _set_threads(n: int | None) -> None:
    if n:
        import torch

        torch.set_num_threads(int(n))


def _new_model(cfg: TrainConfig, device: str = "cpu"):
    import torch
    from sentence_transformers import CrossEncoder

    from legalir.search.rerank import resolve_model

    torch.manual_seed(cfg.seed)
    config_kwargs = {}
    if cfg.attention_dropout is not None:
        config_kwargs["attention_probs_dropout_prob"] = float(cfg.attention_dropout)
    ce = CrossEncoder(resolve_model(cfg.base_model), num_labels=1, max_length=cfg.max_length, device=device,
                      config_kwargs=config_kwargs or None)
    return ce


def _optimizer(model, lr: float, weight_decay: float, head_lr_multiplier: float = 1.0):
    import torch

    if head_lr_multiplier == 1.0:  # two groups: decayed, not decayed
        decay, no_decay = [], []
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
        no_decay = name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name
        groups.setdefault((head, no_decay), []).append(p)
    return torch.optim.AdamW([
        {"params": ps, "weight_decay": 0.0 if no_decay else weight_decay,
         "lr": lr * (head_lr_multiplier if head else 1.0)}
        for (head, no_decay), ps in sorted(groups.items())], lr=lr)


def _lr_lambda(total: int, warmup: int) -> Callable[[int], float]:
    def f(step: int) -> float:
        if warmup and step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total - step) / max(1, total - warmup))
    return f


def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def _lr_tag(lr: float) -> str:
    return f"lr-{lr:g}"


def _atomic_json(path: Path, obj) -> None:
    atomic.write_json(path, obj, indent=1, ensure_ascii=True)


def _is_model(path: Path) -> bool:
    """A model folder written by train-ce before output markers existed."""
    return (path / TRAIN_CONFIG).exists()


def train(cfg: TrainConfig, train_topics: Mapping[str, Topic], train_qrels: Qrels, texts: Mapping[str, str],
          valid: Validation, out_dir: str | os.PathLike, work_dir: str | os.PathLike | None = None, *,
          progress: bool = True, command: str | None = None, extra: Mapping | None = None,
          log: Callable[[str], None] | None = None, stop_after: int | None = None) -> dict:
    """Run the grid, keep the best (learning rate, updates) by validation score; returns the summary.

    ``work_dir`` (default ``<out_dir>.work``) holds resumable state; it is
    removed after a successful run. ``stop_after``: return (``{"stopped": True}``)
    at the first checkpoint reached after this many updates in this call, state
    saved, so a long grid can run in slices; call again to resume.
    """
    import torch
    from tqdm import tqdm

    from legalir.search.rerank import autocast, default_device, resolve_precision, score_pairs

    cfg.validate()
    device = default_device()
    precision = resolve_precision(cfg.precision, device)
    log = log or (lambda m: print(m, file=sys.stderr))
    _set_threads(cfg.threads)
    out = Path(out_dir)
    atomic.check_target(out, KIND, legacy=_is_model)  # refuse before training, not after
    work = Path(work_dir) if work_dir else out.with_name(out.name + ".work")
    work.mkdir(parents=True, exist_ok=True)

    pairs = graded_pairs(train_topics, train_qrels, texts, cfg.max_relevance)
    if pairs.missing_documents:
        log(f"train-ce: {len(pairs.missing_documents)} judged document(s) have no text and are left out: "
            + ", ".join(pairs.missing_documents[:10]))
    batches = BalancedBatches(pairs, cfg.batch_size, cfg.seed)
    vkeys = valid.pairs()
    vq = [valid.topics[q].text for q, _ in vkeys]
    vd = [valid.texts[d] for _, d in vkeys]
    depths = [d for d in (10, 100) if d < valid.depth]
    log(f"train-ce: {sum(pairs.counts().values())} training pairs by grade {pairs.counts()} "
        f"(targets rel/{pairs.max_relevance}); {len(vkeys)} judged validation candidates "
        f"(top {valid.depth} of {len(valid.run)} topics)")

    state_id = _digest({"config": {k: v for k, v in dataclasses.asdict(cfg).items()
                                   if k != "threads" and not (k == "head_lr_multiplier" and v == 1.0)},
                        "precision": precision, "device": device,
                        "train": {q: train_qrels[q] for q in sorted(train_qrels)}, "valid": vkeys})
    progress_path = work / "progress.json"
    prog = json.loads(progress_path.read_text()) if progress_path.exists() else {}
    if prog.get("state_id") != state_id:
        if prog:
            log(f"train-ce: {work} holds another configuration's state; starting over")
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        prog = {"state_id": state_id, "records": [], "best": None, "seconds": {}}
        _atomic_json(progress_path, prog)

    t_all = time.time()
    ran = 0
    for lr in cfg.learning_rates:
        tag = _lr_tag(lr)
        done = {r["updates"] for r in prog["records"] if r["learning_rate"] == lr}
        if all(c in done for c in cfg.checkpoints):
            log(f"train-ce: {tag}: already done (resumed)")
            continue
        ce = _new_model(cfg, device)
        model, tok = ce.model, ce.tokenizer
        opt = _optimizer(model, lr, cfg.weight_decay, cfg.head_lr_multiplier)
        total = cfg.updates
        warmup = int(round(cfg.warmup_ratio * total))
        sched = torch.optim.lr_scheduler.LambdaLR(opt, _lr_lambda(total, warmup))
        state_path = work / tag / "state.pt"
        step, losses = 0, []
        if state_path.exists():
            st = torch.load(state_path, weights_only=False)
            model.load_state_dict(st["model"])
            opt.load_state_dict(st["optimizer"])
            sched.load_state_dict(st["scheduler"])
            torch.set_rng_state(st["torch_rng"])
            step, losses = st["step"], st["losses"]
            log(f"train-ce: {tag}: resuming at update {step}")
        else:
            torch.manual_seed(cfg.seed + 1)  # dropout stream: same for every learning rate
        seconds = prog["seconds"].get(tag, 0.0)
        model.train()
        bar = tqdm(total=total, initial=step, desc=f"train-ce {tag}", unit=" updates", disable=not progress,
                   file=sys.stderr, mininterval=2.0)
        t0 = time.time()
        while step < total:
            batch = batches.batch(step)
            enc = tok([q for q, _, _ in batch], [d for _, d, _ in batch], truncation="longest_first",
                      max_length=cfg.max_length, padding=True, return_tensors="pt")
            enc = {k: v.to(device) for k, v in enc.items()}
            target = torch.tensor([t for _, _, t in batch], dtype=torch.float32, device=device)
            with autocast(precision, device):
                logits = model(**enc).logits[:, 0].float()
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, target)
            loss.backward()
            if cfg.max_grad_norm:
                torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            step += 1
            ran += 1
            losses.append(float(loss.item()))
            bar.update(1)
            bar.set_postfix(loss=f"{np.mean(losses[-20:]):.4f}")
            if step in cfg.checkpoints and step not in done:
                scores = score_pairs(model, tok, vq, vd, max_length=cfg.max_length,
                                     batch_size=cfg.eval_batch_size, progress=False, precision=precision)
                values = evaluate_scores(valid, vkeys, scores, cfg.measure, depths)
                model.train()
                seconds += time.time() - t0
                t0 = time.time()
                key = f"{cfg.measure}@rerank{valid.depth}"
                rec = {"learning_rate": lr, "updates": step, "valid": values, "score": values[key],
                       "train_loss_last50": float(np.mean(losses[-50:])), "seconds": round(seconds, 1)}
                prog["records"].append(rec)
                best = prog["best"]
                if best is None or rec["score"] > best["score"]:
                    with atomic.atomic_dir(work / "best", "checkpoint") as tmp:
                        ce.save(str(tmp))
                    prog["best"] = rec
                state_path.parent.mkdir(parents=True, exist_ok=True)
                with atomic.open_file(state_path, "wb") as fh:
                    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                                "scheduler": sched.state_dict(), "torch_rng": torch.get_rng_state(),
                                "step": step, "losses": losses}, fh)
                prog["seconds"][tag] = round(seconds, 1)
                prog.setdefault("losses", {})[tag] = losses
                _atomic_json(progress_path, prog)
                bar.write(f"train-ce: {tag} updates={step} valid " + " ".join(
                    f"{k}={v:.4f}" for k, v in values.items()) + f" loss={rec['train_loss_last50']:.4f}"
                    + (" (best so far)" if prog["best"] is rec else ""), file=sys.stderr)
                if stop_after is not None and ran >= stop_after:
                    bar.close()
                    log(f"train-ce: stopped after {ran} updates; state saved in {work}: run again to resume")
                    return {"stopped": True, "work_dir": str(work), "records": prog["records"]}
        bar.close()
        del ce, model, opt

    best = prog["best"]
    summary = {
        "recipe": "ACORD (Wang et al. 2025): balanced relevance levels, targets rel/max_rel, BCE, AdamW",
        "config": dataclasses.asdict(cfg),
        "base_model_resolved": _resolved(cfg.base_model),
        "train": {"topics": len(train_qrels), "pairs_by_grade": {str(k): v for k, v in pairs.counts().items()},
                  "max_relevance": pairs.max_relevance, "missing_documents": pairs.missing_documents,
                  "qrels_digest": _digest({q: train_qrels[q] for q in sorted(train_qrels)})},
        "valid": {"topics": len(valid.run), "judged_candidates": len(vkeys), "depth": valid.depth,
                  "measure": f"{cfg.measure} (judged-only)", "qrels_digest": _digest(
                      {q: valid.qrels[q] for q in sorted(valid.qrels)})},
        "grid": prog["records"],
        "selected": best,
        "train_losses": prog.get("losses", {}),
        "seconds": {"total_this_call": round(time.time() - t_all, 1), **prog["seconds"]},
        "versions": _versions(),
        "machine": {"platform": platform.platform(), "torch_threads": _threads(), "device": device,
                    "precision": precision},
        "command": command,
        **(dict(extra) if extra else {}),
    }
    with atomic.atomic_dir(out, KIND, legacy=_is_model) as tmp:
        shutil.copytree(work / "best", tmp, dirs_exist_ok=True, ignore=shutil.ignore_patterns(atomic.MARKER))
        _atomic_json(tmp / TRAIN_CONFIG, summary)
    shutil.rmtree(work, ignore_errors=True)
    log(f"train-ce: selected learning rate {best['learning_rate']:g}, {best['updates']} updates "
        f"({cfg.measure} judged-only on validation = {best['score']:.4f}); model -> {out}")
    return summary


def _resolved(model: str) -> str:
    from legalir.search.rerank import resolve_model

    try:
        return resolve_model(model)
    except Exception:  # pragma: no cover
        return model


def _threads() -> int:
    import torch

    return int(torch.get_num_threads())


def _versions() -> dict:
    out = {"python": platform.python_version()}
    for mod in ("torch", "transformers", "sentence_transformers", "numpy"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:  # pragma: no cover
            pass
    try:
        from legalir import __version__

        out["legalir"] = __version__
    except Exception:  # pragma: no cover
        pass
    return out


def load_config(model_dir: str | os.PathLike) -> dict:
    p = Path(model_dir) / TRAIN_CONFIG
    if not p.exists():
        raise TrainingError(f"{p}: not found (not a model trained by `legalir train-ce`)")
    return json.loads(p.read_text(encoding="utf-8"))


def train_from_collection(cfg: TrainConfig, collection: str | os.PathLike, out_dir: str | os.PathLike,
                          valid_run: str | os.PathLike, *, train_set: str = "train", valid_set: str = "valid",
                          work_dir: str | os.PathLike | None = None, stop_after: int | None = None,
                          command: str | None = None) -> dict:
    """:func:`train` on a collection's training and validation topic sets, checked before training starts:
    no test set, a measure with one value (``ndcg_cut_10`` or ``ndcg_cut.10``), a validation run of the
    validation topics, a base model that resolves."""
    import dataclasses

    from legalir import collections, models, trec
    from legalir.search.rerank import collection_texts
    from legalir.search.tuning import objective, refuse_test

    refuse_test([train_set, valid_set], "--train-topics/--valid-topics", "training or validating")
    _, measure = objective(cfg.measure)
    cfg = dataclasses.replace(cfg, measure=measure)
    cfg.validate()
    models.resolve(cfg.base_model)
    train_topics = trec.read_topics(collections.topics_path(collection, train_set))
    train_qrels = trec.read_qrels(collections.qrels_path(collection, train_set))
    valid_topics = trec.read_topics(collections.topics_path(collection, valid_set))
    valid_qrels = trec.read_qrels(collections.qrels_path(collection, valid_set))
    run = trec.read_run(valid_run)
    stray = sorted(set(run) - set(valid_topics))
    if stray:
        raise TrainingError(f"--valid-run {valid_run}: {len(stray)} topic(s) of the run are not {valid_set} "
                            f"topics: {', '.join(stray[:5])}")
    texts = collection_texts(collection)
    valid = Validation(valid_topics, valid_qrels, run, texts, depth=cfg.valid_depth)
    return train(cfg, train_topics, train_qrels, texts, valid, out_dir, work_dir, stop_after=stop_after,
                 command=command, extra={"collection": str(collection), "train_topics": train_set,
                                         "valid_topics": valid_set, "valid_run": str(valid_run)})
