"""Retrieval-augmented QA: what retrieval does to answer accuracy (Zheng et al. 2025, Section 5.4).

    from legalir.search import qa
    items = qa.load_items("barexam_qa", "data", split="test")
    ctx = qa.contexts(items, "top1", run=trec.read_run("runs/barexam/bm25.test.trec"), texts=...)
    answerer = qa.LikelihoodAnswerer("models/llama-3-8b-instruct")       # or qa.ChatAnswerer(generator)
    preds = qa.answer(items, ctx, qa.load_prompt("qa_barexam"), answerer)
    result = qa.results(preds, ...)                                    # accuracy + 95% bootstrap CI

Conditions (the paper's): ``none`` (no passage); ``top1`` (the run's first
passage); ``topk`` (one answer per passage of the run's top k, keeping the
answer of the passage that gives the most confident prediction); ``expansion``
(a generated expansion, e.g. the structured-reasoning rollout, as a pseudo-
passage: from `legalir expand`'s output topics, field ``expansion``, or a
generations JSONL ``{qid, text}``); ``gold`` (the question's relevant
passage(s) from the qrels, joined).

Answerers:

* :class:`LikelihoodAnswerer` (a local causal LM; the paper's open-model
  method): the prompt, then the prompt file's ``answer_prefix`` (``Answer:``),
  then each answer label (`` A``..`` D``, `` Yes``/`` No``) is scored by its
  log-probability (summed over its tokens); the answer is the argmax, the
  confidence its probability renormalised over the labels. No text is generated.
* :class:`ChatAnswerer` (any :mod:`legalir.datasets.generate` generator: an
  OpenAI-compatible API, or precomputed answers): free text, read by
  :func:`parse_answer`. Refusals and unreadable answers count as wrong and are
  reported. A chat answer has no probability: under ``topk`` the answer given
  for the most passages wins (ties: the better-ranked passage's answer).

Both cache every prompt's result on disk (:class:`legalir.datasets.generate.DiskCache`),
so an interrupted run resumes where it stopped and a re-run computes nothing.
"""
from __future__ import annotations

import json
import math
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from legalir.base import log
from legalir.errors import LegalirError
from legalir.version import __version__

_log = log.get(__name__)

CONDITIONS = ("none", "top1", "topk", "expansion", "gold")
DATASETS = ("barexam_qa", "housing_qa")
DEFAULT_PROMPT = {"barexam_qa": "qa_barexam", "housing_qa": "qa_housing"}
PAPER = "Zheng et al. 2025, A Reasoning-Focused Legal Retrieval Benchmark (CS&Law '25)"

#: The paper's downstream-QA accuracy (%), Llama 3 8B Instruct, maximum-likelihood answers (Tables 30 and 33).
REFERENCES: dict[str, list[tuple[str, str, float]]] = {
    "barexam_qa": [("none", "no passage", 37.84), ("top1", "BM25 top-1", 39.10),
                   ("top1", "BM25 + reasoning expansion top-1", 42.82), ("top1", "E5-mistral top-1", 41.33),
                   ("expansion", "reasoning rollout as pseudo-passage", 42.69), ("gold", "gold passage", 57.38)],
    "housing_qa": [("none", "no passage", 58.81), ("top1", "BM25 top-1", 68.22),
                   ("top1", "E5-mistral top-1", 70.26), ("gold", "gold passage", 75.27)],
}


class QAError(LegalirError, ValueError):
    pass


@dataclass(frozen=True)
class QAItem:
    qid: str
    question: str
    labels: tuple[str, ...]            # answer labels, e.g. A-D or Yes/No
    answer: str                        # the gold label
    values: Mapping[str, str] = field(default_factory=dict)   # other prompt fields (choices, state)
    fields: Mapping[str, Any] = field(default_factory=dict)   # metadata kept in the predictions


# ---------------------------------------------------------------- questions

def load_items(dataset: str, data_dir: str | os.PathLike, split: str = "test") -> list[QAItem]:
    """The QA questions of ``dataset`` read from its published files under ``data_dir/<dataset>``."""
    from legalir import datasets

    if dataset not in DATASETS:
        raise QAError(f"no QA for dataset {dataset!r}; known: {', '.join(DATASETS)}")
    ds: Any = datasets.get(dataset, data_dir)  # BarExamQA or HousingQA: each has its own questions()
    items: list[QAItem] = []
    labels: tuple[str, ...]
    if dataset == "barexam_qa":
        from legalir.datasets.barexam import query_text

        labels = ("A", "B", "C", "D")
        for r in ds.questions(split):
            where = f"{r['file']}:{r['line']}"
            answer = str(r.get("answer") or "").strip().upper()
            if answer not in labels:
                raise QAError(f"{where}: answer {r.get('answer')!r} of {r['idx']!r} is not one of A-D")
            missing = [f"choice_{x.lower()}" for x in labels if f"choice_{x.lower()}" not in r]
            if missing:
                raise QAError(f"{where}: no column(s) {', '.join(missing)}: QA needs the four choices")
            values = {f"choice_{x.lower()}": str(r[f"choice_{x.lower()}"] or "").strip() for x in labels}
            items.append(QAItem(r["idx"], query_text(r["prompt"], r["question"]), labels, answer, values,
                                {k: r.get(k, "") for k in ("source", "subject")}))
    else:
        if split not in ("test", "all"):
            raise QAError(f"housing_qa has one labelled question set (split 'test'), not {split!r}")
        labels = ("Yes", "No")
        for q in ds.questions():
            answer = str(q.get("answer") or "").strip().capitalize()
            if answer not in labels:
                raise QAError(f"{q['where']}: answer {q.get('answer')!r} is not Yes or No")
            items.append(QAItem(q["qid"], str(q["question"]).strip(), labels, answer, {"state": q["state"]},
                                {"state": q["state"]}))
    if not items:
        raise QAError(f"{dataset}: no questions in split {split!r}")
    return items


# ---------------------------------------------------------------- prompts

@dataclass
class QAPrompt:
    name: str
    path: Path
    user: str
    system: str | None
    labels: tuple[str, ...]
    answer_prefix: str
    passage_block: str

    def messages(self, item: QAItem, passage: str | None) -> list[dict[str, str]]:
        block = self.passage_block.format(passage=passage.strip()) if passage else ""
        values = {**dict(item.values), "query": item.question, "passage_block": block}

        def fill(text: str) -> str:
            try:
                out = text.format(**values)
            except KeyError as e:
                raise QAError(f"{self.path}: template field {e} has no value for question {item.qid!r}") from None
            return re.sub(r"\n{3,}", "\n\n", out).strip()

        msgs = [{"role": "system", "content": fill(self.system)}] if self.system else []
        return msgs + [{"role": "user", "content": fill(self.user)}]


def load_prompt(name_or_path: str | os.PathLike) -> QAPrompt:
    """A built-in QA prompt (``qa_barexam``, ``qa_housing``) or a TOML file with the same keys."""
    from legalir.search import expansion

    t = expansion.load_prompt(name_or_path)          # one loader: validation, {query}, errors
    with open(t.path, "rb") as f:
        data = tomllib.load(f)
    labels = data.get("labels")
    if not isinstance(labels, list) or len(labels) < 2 or not all(isinstance(x, str) and x for x in labels):
        raise QAError(f"{t.path}: a QA prompt needs 'labels', the answer labels (e.g. [\"A\", \"B\", \"C\", \"D\"])")
    block = data.get("passage_block", "{passage}\n\n")
    if "{passage}" not in block:
        raise QAError(f"{t.path}: 'passage_block' must contain {{passage}}")
    if "passage_block" not in t.fields:
        raise QAError(f"{t.path}: the 'user' template must place {{passage_block}}")
    return QAPrompt(t.name, t.path, t.user, t.system, tuple(labels), str(data.get("answer_prefix", "Answer:")), block)


# ---------------------------------------------------------------- passages per condition

def read_expansions(path: str | os.PathLike) -> dict[str, str]:
    """Pseudo-passages: `legalir expand`'s output topics (field ``expansion``) or generations ``{qid, text}``."""
    from legalir import trec

    out: dict[str, str] = {}
    for n, rec in trec.iter_jsonl(path):
        qid = rec.get("qid")
        text = rec.get("expansion", rec.get("text"))
        if qid is None or not isinstance(text, str):
            raise trec.FormatError(Path(path), n, "expected {qid, expansion} (legalir expand output) "
                                                  "or {qid, text} (generations)")
        out[str(qid)] = text
    return out


def contexts(items: Sequence[QAItem], condition: str, *, run: Mapping[str, Mapping[str, float]] | None = None,
             texts: Mapping[str, str] | None = None, k: int = 5, expansions: Mapping[str, str] | None = None,
             qrels: Mapping[str, Mapping[str, int]] | None = None) -> dict[str, list[tuple[str | None, str | None]]]:
    """Each question's passages ``[(passage id, text)]`` under ``condition`` (``[(None, None)]``: no passage)."""
    from legalir import trec

    if condition not in CONDITIONS:
        raise QAError(f"unknown condition {condition!r}; known: {', '.join(CONDITIONS)}")
    out: dict[str, list[tuple[str | None, str | None]]] = {}
    missing: list[str] = []
    for it in items:
        if condition == "none":
            out[it.qid] = [(None, None)]
        elif condition in ("top1", "topk"):
            if run is None or texts is None:
                raise QAError(f"condition {condition} needs a run (--run) and the passage texts (--collection)")
            depth = 1 if condition == "top1" else k
            ranked = [d for d, _ in trec.ranking(run.get(it.qid, {}))[:depth]]
            if not ranked:
                missing.append(it.qid)
                out[it.qid] = [(None, None)]
            else:
                out[it.qid] = [(d, texts[d]) for d in ranked]
        elif condition == "expansion":
            if expansions is None:
                raise QAError("condition expansion needs the expansions file (--expansion)")
            if it.qid not in expansions:
                raise QAError(f"no expansion for question {it.qid!r} in the expansions file")
            out[it.qid] = [("expansion", expansions[it.qid])]
        else:
            if qrels is None or texts is None:
                raise QAError("condition gold needs the qrels and the passage texts (--collection)")
            golds = sorted(d for d, rel in qrels.get(it.qid, {}).items() if rel > 0)
            if not golds:
                missing.append(it.qid)
                out[it.qid] = [(None, None)]
            else:
                out[it.qid] = [("+".join(golds), "\n\n".join(texts[d] for d in golds))]
    if missing:
        what = "retrieved passage" if condition in ("top1", "topk") else "relevant passage in the qrels"
        _log.warning(f"qa: {len(missing)} question(s) without a {what} are answered without one: "
                     + ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else ""))
    return out


# ---------------------------------------------------------------- answer parsing

_REFUSAL = re.compile(
    r"\b(?:I\s+(?:cannot|can't|can\s*not|am\s+unable|'m\s+unable|am\s+not\s+able|'m\s+not\s+able|won't|will\s+not|"
    r"must\s+decline|decline)\b|unable\s+to\s+(?:answer|determine|provide)|as\s+an\s+AI\b|"
    r"not\s+(?:able|possible)\s+to\s+(?:answer|determine|say)|cannot\s+be\s+determined|"
    r"(?:not|never)\s+provide\s+legal\s+advice|consult\s+(?:a|an|with\s+a)\s+(?:lawyer|attorney))",
    re.IGNORECASE)


def parse_answer(text: str | None, labels: Sequence[str], choices: Mapping[str, str] | None = None
                 ) -> tuple[str | None, str]:
    """The answer label in a model's free text, and a status: ``ok``, ``refusal`` or ``unparsed``.

    Letters: ``"B"``, ``"(B)"``, ``"B. ..."``, ``"**B**"``, ``"The answer is (B)"``,
    ``"Answer: B"`` (the last labelled answer wins); Yes/No: a leading ``Yes``/``No``
    or a labelled one. Failing that, a single choice text quoted verbatim. A refusal
    ("I cannot provide legal advice") with no answer is ``refusal``.
    """
    if text is None:
        return None, "unparsed"
    t = re.sub(r"<think>.*?</think>", " ", str(text), flags=re.DOTALL | re.IGNORECASE).strip()
    if not t:
        return None, "unparsed"
    letters = all(len(x) == 1 for x in labels)
    alt = "|".join(re.escape(x) for x in sorted(labels, key=len, reverse=True))
    flags = 0 if letters else re.IGNORECASE
    canon = {x.lower(): x for x in labels}

    def label(s: str) -> str:
        return canon[s.lower()]

    if letters:  # "The answer is (B)", "Answer: B", "choice B": keyword any case, the letter a capital
        labelled = re.findall(rf"(?i:answer|choice|option)(?i:\s+is|\s+would\s+be)?\s*[:=\-]?\s*"
                              rf"(?i:option\s+|choice\s+|letter\s+)?[\*\"'(\[]*({alt})(?![A-Za-z])", t)
    else:
        labelled = re.findall(rf"(?:answer|verdict)\s*(?:is|:|=|-)\s*[\*\"']*\s*({alt})\b", t, flags)
    if labelled:
        return label(labelled[-1]), "ok"
    lead = re.match(rf"^[\s\*\"'(\[]*({alt})(?:[\s\*\"')\].:,;!-]|$)", t, flags)
    if lead:
        return label(lead.group(1)), "ok"
    if letters:
        lone = re.findall(rf"(?:^|[\s(\[\*])({alt})(?:[)\].:]|\*\*)", t)
        if len(set(lone)) == 1:
            return lone[0], "ok"
    else:
        found = {label(x) for x in re.findall(rf"\b({alt})\b", t, re.IGNORECASE)}
        if len(found) == 1 and not _REFUSAL.search(t):
            return found.pop(), "ok"
    if choices:
        norm = lambda s: " ".join(re.findall(r"\w+", s.lower()))
        tn = f" {norm(t)} "
        hits = [x for x, c in choices.items() if len(norm(c)) > 3 and f" {norm(c)} " in tn]
        if len(hits) == 1:
            return hits[0], "ok"
    if _REFUSAL.search(t):
        return None, "refusal"
    return None, "unparsed"


# ---------------------------------------------------------------- answerers

@dataclass
class Answer:
    label: str | None
    confidence: float | None
    status: str = "ok"                      # ok | refusal | unparsed
    logprobs: dict[str, float] | None = None
    response: str | None = None


class LikelihoodAnswerer:
    """Maximum-likelihood answers from a local causal LM (see the module doc); results cached on disk."""

    backend = "local-likelihood"

    def __init__(self, path: str | os.PathLike, *, cache: str | os.PathLike | None | bool = True,
                 device: str | None = None, batch_size: int = 8):
        from legalir.datasets import generate

        self.lm = generate.LocalCausalLM(path, device=device, batch_size=batch_size)
        self.model = self.lm.model
        self.batch_size = max(1, batch_size)
        root = os.environ.get("LEGALIR_CACHE_DIR", generate.DEFAULT_CACHE_DIR) if cache is True else cache
        self.cache = generate.DiskCache(root) if root else None
        self.calls = self.hits = self.truncated = 0

    def prompt_text(self, messages, prefix: str) -> str:
        return self.lm.prompt_text(messages) + prefix

    @staticmethod
    def continuations(labels: Sequence[str], prefix: str) -> list[str]:
        sep = " " if prefix and not prefix[-1].isspace() else ""
        return [sep + x for x in labels]

    def option_logprobs(self, prompt: str, continuations: Sequence[str]) -> list[float]:
        """Sum of log P(continuation tokens | prompt) for each continuation (one forward pass per batch)."""
        import torch

        model, tok = self.lm._load()
        p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
        o_ids = [tok(c, add_special_tokens=False)["input_ids"] for c in continuations]
        if any(not o for o in o_ids):
            raise QAError(f"an answer label tokenizes to nothing with {self.model}: {list(continuations)}")
        limit = getattr(model.config, "max_position_embeddings", None) or getattr(model.config, "n_positions", None)
        seqs, starts = [], []
        for o in o_ids:
            ids = p_ids + o
            if limit and len(ids) > limit:           # keep the end: the question, the options, the answer slot
                ids = ids[len(ids) - limit:]
                self.truncated += 1
            seqs.append(ids)
            starts.append(len(ids) - len(o))
        width = max(len(s) for s in seqs)
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        input_ids = torch.full((len(seqs), width), pad, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for i, s in enumerate(seqs):
            input_ids[i, :len(s)] = torch.tensor(s)
            mask[i, :len(s)] = 1
        out: list[float] = []
        with torch.inference_mode():
            for b in range(0, len(seqs), self.batch_size):
                sl = slice(b, b + self.batch_size)
                logits = model(input_ids=input_ids[sl].to(self.lm._device),
                               attention_mask=mask[sl].to(self.lm._device)).logits.float()
                logp = torch.log_softmax(logits, dim=-1).cpu()
                for j in range(logp.shape[0]):
                    i = b + j
                    total = 0.0
                    for pos in range(starts[i], len(seqs[i])):
                        total += float(logp[j, pos - 1, seqs[i][pos]])
                    out.append(total)
        return out

    def answer(self, keyed_prompts: Sequence[tuple[str, list[dict], Sequence[str]]], prompt: QAPrompt,
               progress: bool = True) -> list[Answer]:

        self.lm._load()
        ident = {**self.lm.identity(), "task": "option-loglik", "answer_prefix": prompt.answer_prefix}
        out: list[Answer] = []
        for key, messages, labels in log.progress(keyed_prompts, desc=f"qa ({Path(self.model).name})",
                                                  unit=" prompts", quiet=not progress):
            conts = self.continuations(labels, prompt.answer_prefix)
            text = self.prompt_text(messages, prompt.answer_prefix)
            cache_msgs = [{"role": "user", "content": text}, {"role": "assistant", "content": json.dumps(conts)}]
            ck = self.cache.key(ident, cache_msgs) if self.cache else ""
            cached = self.cache.get("likelihood", ck) if self.cache else None
            if cached is not None:
                lps = json.loads(cached)
                self.hits += 1
            else:
                lps = self.option_logprobs(text, conts)
                self.calls += 1
                if self.cache:
                    self.cache.put("likelihood", ck, ident, cache_msgs, json.dumps(lps))
            best = max(range(len(labels)), key=lambda i: (lps[i], -i))
            m = max(lps)
            z = sum(math.exp(v - m) for v in lps)
            out.append(Answer(labels[best], math.exp(lps[best] - m) / z, "ok", dict(zip(labels, lps))))
        return out


class ChatAnswerer:
    """Free-text answers from a :mod:`legalir.datasets.generate` generator, read by :func:`parse_answer`."""

    backend = "chat"

    def __init__(self, generator):
        self.gen = generator
        self.model = generator.model

    @property
    def calls(self) -> int:
        return self.gen.calls

    @property
    def hits(self) -> int:
        return getattr(self.gen, "hits", 0)

    def answer(self, keyed_prompts, prompt: QAPrompt, progress: bool = True,
               choices: Sequence[Mapping[str, str] | None] | None = None) -> list[Answer]:
        from legalir.datasets import generate

        reqs = [generate.Request(key, messages, qid=key.split("\t")[0],
                                 docid=key.split("\t")[1] if "\t" in key else None)
                for key, messages, _ in keyed_prompts]
        texts = self.gen.generate(reqs, progress=progress)
        out = []
        for (key, _, labels), text, ch in zip(keyed_prompts, texts, choices or [None] * len(texts)):
            label, status = parse_answer(text, labels, ch)
            out.append(Answer(label, None, status, None, text))
        return out


# ---------------------------------------------------------------- the QA run

def answer(items: Sequence[QAItem], ctx: Mapping[str, Sequence[tuple[str | None, str | None]]], prompt: QAPrompt,
           answerer, condition: str, progress: bool = True) -> list[dict]:
    """One prediction record per question (see :func:`results`)."""
    keyed, owners = [], []
    choices = []
    for it in items:
        if tuple(it.labels) != tuple(prompt.labels):
            raise QAError(f"prompt {prompt.name!r} answers {list(prompt.labels)}, question {it.qid!r} "
                          f"expects {list(it.labels)}")
        for rank, (pid, text) in enumerate(ctx[it.qid]):
            key = it.qid if pid is None else f"{it.qid}\t{pid}"
            if condition == "topk":
                key = f"{key}\t{rank}" if pid is None else key
            keyed.append((key, prompt.messages(it, text), it.labels))
            owners.append((it, rank, pid))
            choices.append({x: it.values.get(f"choice_{x.lower()}", "") for x in it.labels}
                           if "choice_a" in it.values else None)
    if isinstance(answerer, ChatAnswerer):
        answers = answerer.answer(keyed, prompt, progress, choices)
    else:
        answers = answerer.answer(keyed, prompt, progress)
    per: dict[str, list[tuple[int, str | None, Answer]]] = {}
    for (it, rank, pid), a in zip(owners, answers):
        per.setdefault(it.qid, []).append((rank, pid, a))
    records = []
    for it in items:
        tries = per[it.qid]
        chosen = _select(tries)
        rank, pid, a = chosen
        rec = {"qid": it.qid, "condition": condition, "gold": it.answer, "prediction": a.label,
               "correct": a.label == it.answer, "status": a.status, "confidence": a.confidence,
               "passage": pid, "passage_rank": rank + 1 if pid is not None and condition in ("top1", "topk") else None,
               **{k: v for k, v in it.fields.items() if v not in (None, "")}}
        if a.logprobs is not None:
            rec["logprobs"] = a.logprobs
        if a.response is not None:
            rec["response"] = a.response
        if len(tries) > 1:
            rec["per_passage"] = [{"passage": p, "prediction": x.label, "confidence": x.confidence,
                                   "status": x.status} for _, p, x in tries]
        records.append(rec)
    return records


def _select(tries: list[tuple[int, str | None, Answer]]) -> tuple[int, str | None, Answer]:
    """Top-k selection: the most confident answer (likelihood), else the most frequent answer (chat)."""
    if len(tries) == 1:
        return tries[0]
    if all(a.confidence is not None for _, _, a in tries):
        return max(tries, key=lambda t: (t[2].confidence, -t[0]))
    votes: dict[str, int] = {}
    for _, _, a in tries:
        if a.label is not None:
            votes[a.label] = votes.get(a.label, 0) + 1
    if not votes:
        return tries[0]
    top = max(votes.values())
    for t in tries:  # best-ranked passage among the answers with the most votes
        if t[2].label is not None and votes[t[2].label] == top:
            return t
    return tries[0]  # pragma: no cover - invariant: a label with the most votes is among the tries


def results(records: Sequence[dict], *, meta: Mapping[str, Any], bootstrap: int = 1000, level: float = 0.95,
            seed: int = 0) -> dict:
    """Accuracy (fraction) with a percentile-bootstrap interval, in the ``results/`` JSON shape."""
    from legalir.scoring import stats

    per_topic = {r["qid"]: {"accuracy": 1.0 if r["correct"] else 0.0} for r in records}
    values = [v["accuracy"] for v in per_topic.values()]
    ci = stats.bootstrap_ci(values, bootstrap, level, seed)
    statuses = {s: sum(1 for r in records if r["status"] == s) for s in ("ok", "refusal", "unparsed")}
    return {
        "all": {"accuracy": ci.mean, "num_q": len(records)},
        "ci": {"accuracy": {"low": ci.low, "high": ci.high, "level": level, "resamples": bootstrap, "seed": seed,
                            "method": "percentile bootstrap over questions"}},
        "per_topic": per_topic,
        "qa": {**dict(meta), "questions": len(records), "correct": int(sum(values)),
               "refusals": statuses["refusal"], "unparsed": statuses["unparsed"]},
    }


def write_outputs(records: Sequence[dict], result: Mapping, predictions: str | os.PathLike,
                  results_path: str | os.PathLike) -> None:
    """Predictions JSONL and results JSON, each written atomically."""
    from legalir.base import atomic
    from legalir.report import save_json

    with atomic.open_file(predictions, output=True) as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    save_json(result, results_path)


def summary_line(result: Mapping) -> str:
    a, ci, q = result["all"]["accuracy"], result["ci"]["accuracy"], result["qa"]
    extra = []
    if q.get("refusals"):
        extra.append(f"{q['refusals']} refusals")
    if q.get("unparsed"):
        extra.append(f"{q['unparsed']} unparsed")
    return (f"{q['dataset']} {q['condition']}: accuracy {100 * a:.2f}% "
            f"[{100 * ci['low']:.2f}, {100 * ci['high']:.2f}] ({q['correct']}/{q['questions']}"
            + (", " + ", ".join(extra) + " counted wrong" if extra else "") + ")")


def table(dataset: str, results_list: Sequence[tuple[str, Mapping]]) -> str:
    """The paper's Llama 3 8B rows, then ours (accuracy % with 95% CI)."""
    rows = [(f"{label} (paper, Llama 3 8B)", cond, f"{acc:.2f}", "-")
            for cond, label, acc in REFERENCES.get(dataset, [])]
    for label, r in results_list:
        q, ci = r.get("qa", {}), r.get("ci", {}).get("accuracy", {})
        acc = r["all"]["accuracy"]
        interval = f"[{100 * ci['low']:.2f}, {100 * ci['high']:.2f}]" if ci else "-"
        rows.append((f"{label} (legalir, {Path(str(q.get('model', '?'))).name})", str(q.get("condition", "?")),
                     f"{100 * acc:.2f}", interval))
    header = ("system", "condition", "accuracy %", "95% CI")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    fmt = lambda r: "  ".join(c.ljust(widths[i]) if i < 2 else c.rjust(widths[i]) for i, c in enumerate(r))
    return "\n".join([fmt(header), "  ".join("-" * w for w in widths), *map(fmt, rows)])


def run(dataset: str, data_dir: str | os.PathLike, split: str, condition: str, answerer,
        predictions: str | os.PathLike, results_path: str | os.PathLike | None = None, *,
        prompt: str | os.PathLike | None = None, run_path: str | os.PathLike | None = None,
        collection: str | os.PathLike | None = None, k: int = 5, expansion_path: str | os.PathLike | None = None,
        bootstrap: int = 1000, seed: int = 0, command: str = "", progress: bool = True) -> dict:
    """Everything `legalir qa` does: questions, passages, answers, accuracy; writes both outputs."""
    from legalir import collections, trec
    from legalir.search.arguments import check_k
    from legalir.search.rerank import collection_texts
    from legalir.trec.runformats import read_any_run

    if condition == "topk":
        check_k(k, "-k")
    if Path(predictions).suffix != ".jsonl":
        raise QAError(f"{predictions}: predictions are written as .jsonl")
    items = load_items(dataset, data_dir, split)
    template = load_prompt(prompt or DEFAULT_PROMPT[dataset])
    run_ = texts = qrels = expansions = None
    if condition in ("top1", "topk"):
        if not run_path or not collection:
            raise QAError(f"condition {condition} needs --run and --collection")
        run_ = read_any_run(run_path)
        wanted = {it.qid for it in items}
        run_ = {q: d for q, d in run_.items() if q in wanted}
        if not run_:
            raise QAError(f"{run_path}: no topic of the run is a {dataset} {split} question")
        texts = collection_texts(collection, run_, k=1 if condition == "top1" else k)
    elif condition == "gold":
        if not collection:
            raise QAError("condition gold needs --collection (its qrels and passage texts)")
        qpath = collections.qrels_path(collection, split)
        qrels = trec.read_qrels(qpath)
        golds = {d for it in items for d, rel in qrels.get(it.qid, {}).items() if rel > 0}
        texts = collection_texts(collection, golds)
    elif condition == "expansion":
        if not expansion_path:
            raise QAError("condition expansion needs --expansion")
        expansions = read_expansions(expansion_path)
    ctx = contexts(items, condition, run=run_, texts=texts, k=k, expansions=expansions, qrels=qrels)
    records = answer(items, ctx, template, answerer, condition, progress=progress)
    meta = {"dataset": dataset, "split": split, "condition": condition, "k": k if condition == "topk" else None,
            "backend": answerer.backend, "model": answerer.model, "prompt": template.name,
            "run": str(run_path) if run_path else None, "expansion": str(expansion_path) if expansion_path else None,
            "computed": answerer.calls, "from_cache": answerer.hits,
            "truncated_prompts": getattr(answerer, "truncated", 0), "command": command,
            "legalir": __version__}
    result = results(records, meta=meta, bootstrap=bootstrap, seed=seed)
    out = Path(predictions)
    write_outputs(records, result, out, results_path or out.with_suffix(".json"))
    return result
