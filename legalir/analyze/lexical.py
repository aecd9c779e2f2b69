"""Lexical similarity analysis (Zheng et al. 2025, Section 4; Tables 2, 17-20; Figures 2 and 4).

Per example, TF-IDF cosine similarity between the query and its gold (relevant)
document, and between the gold document and the answer (where the topics or
the dataset give one). Works on any collection with topics and qrels.

Vectorizer (the paper does not print its settings; ours): scikit-learn
``TfidfVectorizer(lowercase=True, stop_words="english", sublinear_tf=False,
smooth_idf=True, norm="l2")``, default word tokenizer (2+ character tokens).
It is fit per sample on the texts compared (``fit="pairs"``: the queries, the
gold documents and the answers of that sample), or on the collection's whole
corpus (``fit="corpus"``). A query with several gold documents (Housing,
ACORD) gets the similarity of its most similar one (``agg="max"``; or
``"mean"``). Relevant = qrels relevance >= ``level``.

Reported per sample: mean with a 95% percentile-bootstrap interval (1,000
resamples, seeded); between samples: two-sample Kolmogorov-Smirnov and Welch
t-tests (scipy). Figure 4: a per-topic retrieval measure (Recall@10 by
default) averaged per similarity bucket of width 0.1, for each run, with the
least-squares line fit to the per-topic points (slope = change in the measure
per unit of similarity).
"""
from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from legalir.errors import LegalirError

VECTORIZER = {"lowercase": True, "stop_words": "english", "sublinear_tf": False, "smooth_idf": True, "norm": "l2"}
FITS = ("pairs", "corpus")
AGGS = ("max", "mean")

#: The paper's means (Table 2): (query, gold) and (gold, answer) TF-IDF cosine.
PAPER_MEANS = {"Bar Exam QA": (0.07, 0.14), "Housing Statute QA": (0.09, 0.00), "NQ": (0.27, 0.25)}


class AnalysisError(LegalirError, ValueError):
    pass


@dataclass
class Sample:
    """One dataset or subset: per-topic similarities (and the texts they came from)."""

    label: str
    query_gold: dict[str, float] = field(default_factory=dict)
    gold_answer: dict[str, float] = field(default_factory=dict)
    groups: dict[str, str] = field(default_factory=dict)      # qid -> metadata value (for --by)


def _vectorizer():
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(**VECTORIZER)


def _cos(vec, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
    """Row-wise cosine of two aligned lists of texts (rows are L2-normalised)."""
    A, B = vec.transform(a), vec.transform(b)
    return np.asarray(A.multiply(B).sum(axis=1)).ravel()


def similarities(topics: Mapping[str, str], golds: Mapping[str, Sequence[str]], texts: Mapping[str, str],
                 answers: Mapping[str, str] | None = None, *, fit: str = "pairs", agg: str = "max",
                 corpus: Sequence[str] | None = None) -> tuple[dict[str, float], dict[str, float]]:
    """``(query_gold, gold_answer)``: per-topic cosines (topics without a gold document are left out)."""
    if fit not in FITS:
        raise AnalysisError(f"unknown fit {fit!r}; known: {', '.join(FITS)}")
    if agg not in AGGS:
        raise AnalysisError(f"unknown aggregation {agg!r}; known: {', '.join(AGGS)}")
    qids = [q for q in topics if golds.get(q)]
    if not qids:
        raise AnalysisError("no topic has a relevant document in the qrels")
    answers = {q: a for q, a in (answers or {}).items() if q in set(qids) and str(a).strip()}
    vec = _vectorizer()
    if fit == "corpus":
        if not corpus:
            raise AnalysisError("fit=corpus needs the corpus texts")
        vec.fit(corpus)
    else:
        gold_ids = sorted({d for q in qids for d in golds[q]})
        vec.fit([topics[q] for q in qids] + [texts[d] for d in gold_ids] + list(answers.values()))
    pairs_q, pairs_d, owner = [], [], []
    for q in qids:
        for d in golds[q]:
            pairs_q.append(topics[q])
            pairs_d.append(texts[d])
            owner.append(q)
    qg_all = _cos(vec, pairs_q, pairs_d)
    qg = _aggregate(owner, qg_all, agg)
    ga: dict[str, float] = {}
    if answers:
        pa, pd_, own = [], [], []
        for q in qids:
            if q in answers:
                for d in golds[q]:
                    pa.append(answers[q])
                    pd_.append(texts[d])
                    own.append(q)
        ga = _aggregate(own, _cos(vec, pd_, pa), agg)
    return qg, ga


def _aggregate(owner: Sequence[str], values: np.ndarray, agg: str) -> dict[str, float]:
    out: dict[str, list[float]] = {}
    for q, v in zip(owner, values):
        out.setdefault(q, []).append(float(v))
    return {q: (max(v) if agg == "max" else sum(v) / len(v)) for q, v in out.items()}


def summary(values: Sequence[float], bootstrap: int = 1000, seed: int = 0) -> dict:
    from legalir.scoring import stats

    ci = stats.bootstrap_ci(list(values), bootstrap, 0.95, seed)
    return {"n": ci.n, "mean": ci.mean, "ci_low": ci.low, "ci_high": ci.high,
            "median": float(np.median(values)) if len(values) else math.nan}


def two_sample_tests(a: Sequence[float], b: Sequence[float]) -> dict:
    """Two-sample Kolmogorov-Smirnov and Welch's t-test (unequal variances), both two-sided."""
    from scipy import stats as ss

    if len(a) < 2 or len(b) < 2:
        return {"ks": None, "ks_p": None, "welch_t": None, "welch_p": None}
    ks = ss.ks_2samp(a, b)
    t = ss.ttest_ind(a, b, equal_var=False)
    f = lambda x: float(x) if math.isfinite(float(x)) else None
    return {"ks": f(ks.statistic), "ks_p": f(ks.pvalue), "welch_t": f(t.statistic), "welch_p": f(t.pvalue)}


def buckets(sim: Mapping[str, float], per_topic: Mapping[str, float], width: float = 0.1) -> dict:
    """Mean measure per similarity bucket ``[i*width, (i+1)*width)`` and the least-squares line on the topics."""
    qids = sorted(q for q in sim if q in per_topic)
    xs = np.array([sim[q] for q in qids])
    ys = np.array([per_topic[q] for q in qids])
    idx = np.floor(xs / width + 1e-9).astype(int)
    lows, means, counts = [], [], []
    for i in sorted(set(idx.tolist())):
        m = idx == i
        lows.append(round(i * width, 10))
        means.append(float(ys[m].mean()))
        counts.append(int(m.sum()))
    if len(qids) >= 2 and float(np.ptp(xs)) > 0:
        slope, intercept = (float(v) + 0.0 for v in np.polyfit(xs, ys, 1))
        slope = 0.0 if abs(slope) < 1e-12 else slope
    else:
        slope, intercept = math.nan, float(ys.mean()) if len(ys) else math.nan
    return {"lows": lows, "means": means, "counts": counts, "slope": slope, "intercept": intercept,
            "topics": len(qids), "width": width}


# ---------------------------------------------------------------- collections

def load_sample(label: str, collection: str | os.PathLike, topic_set: str = "test", *, level: int = 1,
                answers: Mapping[str, str] | None = None, answer_field: str | None = None,
                fit: str = "pairs", agg: str = "max", by: str | None = None) -> Sample:
    """A sample from a collection's topics and qrels (answers from ``answers`` or the topics' ``answer_field``)."""
    from legalir import collections, trec
    from legalir.search.rerank import collection_texts

    topics = trec.read_topics(collections.topics_path(collection, topic_set))
    qrels = trec.read_qrels(collections.qrels_path(collection, topic_set))
    golds = {q: sorted(d for d, r in qrels.get(q, {}).items() if r >= level) for q in topics}
    wanted = {d for ds in golds.values() for d in ds}
    texts = collection_texts(collection, wanted)
    if answers is None and answer_field:
        answers = {q: str(t.fields[answer_field]) for q, t in topics.items() if t.fields.get(answer_field)}
    corpus = [r["contents"] for r in collections.iter_documents(collection)] if fit == "corpus" else None
    qg, ga = similarities({q: t.text for q, t in topics.items()}, golds, texts, answers, fit=fit, agg=agg,
                          corpus=corpus)
    groups = {}
    if by:
        groups = {q: _group_value(topics[q].fields.get(by)) for q in qg}
    return Sample(label, qg, ga, groups)


def _group_value(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)) or str(v).strip().lower() in ("", "nan", "none"):
        return "NaN"
    return str(v)


def dataset_answers(dataset: str, data_dir: str | os.PathLike, split: str = "test") -> dict[str, str]:
    """Answer texts from a QA dataset's published files: Bar Exam QA's correct choice, Housing's Yes/No."""
    from legalir.search import qa

    out = {}
    for it in qa.load_items(dataset, data_dir, split):
        key = f"choice_{it.answer.lower()}"
        out[it.qid] = it.values.get(key, it.answer) if key in it.values else it.answer
    return out


def split_by_group(sample: Sample) -> list[Sample]:
    """One sample per metadata value of ``sample.groups`` (sorted; NaN last)."""
    values = sorted(set(sample.groups.values()), key=lambda v: (v == "NaN", v))
    out = []
    for v in values:
        qs = {q for q, g in sample.groups.items() if g == v}
        out.append(Sample(f"{sample.label}: {v}", {q: x for q, x in sample.query_gold.items() if q in qs},
                          {q: x for q, x in sample.gold_answer.items() if q in qs}))
    return out


def analyse(samples: Sequence[Sample], *, bootstrap: int = 1000, seed: int = 0, max_pairs: int = 4) -> dict:
    """Summaries per sample and two-sample tests, for both similarities: between every pair of samples
    when there are at most ``max_pairs`` samples, else each sample against the others pooled.
    Samples with fewer than 2 topics are not tested."""
    out: dict = {"vectorizer": VECTORIZER, "samples": {}, "tests": []}
    for s in samples:
        out["samples"][s.label] = {
            "query_gold": summary(list(s.query_gold.values()), bootstrap, seed),
            "gold_answer": summary(list(s.gold_answer.values()), bootstrap, seed) if s.gold_answer else None,
        }
    if len(samples) <= max_pairs:      # every pair
        pairs = [(samples[i], samples[j]) for i in range(len(samples)) for j in range(i + 1, len(samples))]
    else:                              # many subsets: each against all the others pooled
        pairs = []
        for s in samples:
            rest = Sample("the rest")
            for o in samples:
                if o is not s:
                    rest.query_gold.update({f"{o.label}\t{q}": v for q, v in o.query_gold.items()})
                    rest.gold_answer.update({f"{o.label}\t{q}": v for q, v in o.gold_answer.items()})
            pairs.append((s, rest))
    for a, b in pairs:
        for kind in ("query_gold", "gold_answer"):
            va, vb = list(getattr(a, kind).values()), list(getattr(b, kind).values())
            if len(va) >= 2 and len(vb) >= 2:
                out["tests"].append({"a": a.label, "b": b.label, "similarity": kind, **two_sample_tests(va, vb)})
    return out


def format_analysis(result: Mapping) -> str:
    lines = ["TF-IDF cosine similarity (mean [95% bootstrap CI], n)"]
    w = max([len("sample")] + [len(k) for k in result["samples"]])
    lines.append(f"{'sample':<{w}}  {'(query, gold)':>28}  {'(gold, answer)':>28}")
    for label, s in result["samples"].items():
        def cell(x):
            return f"{x['mean']:.3f} [{x['ci_low']:.3f}, {x['ci_high']:.3f}] n={x['n']}" if x else "-"
        lines.append(f"{label:<{w}}  {cell(s['query_gold']):>28}  {cell(s['gold_answer']):>28}")
    if result["tests"]:
        lines.append("")
        lines.append("two-sample tests (two-sided): Kolmogorov-Smirnov D (p), Welch t (p)")
        for t in result["tests"]:
            f = lambda v, fmt: "n/a" if v is None else format(v, fmt)
            lines.append(f"{t['a']} vs {t['b']} [{t['similarity']}]: D={f(t['ks'], '.3f')} (p={f(t['ks_p'], '.3g')}), "
                         f"t={f(t['welch_t'], '.3f')} (p={f(t['welch_p'], '.3g')})")
    if result.get("buckets"):
        b0 = next(iter(result["buckets"].values()))
        lines.append("")
        lines.append(f"{result['measure']} per (query, gold) similarity bucket of {b0['width']:g}; "
                     f"least-squares slope over topics")
        for run, b in result["buckets"].items():
            cells = ", ".join(f"[{lo:.1f},{lo + b['width']:.1f}): {m:.3f} (n={c})"
                              for lo, m, c in zip(b["lows"], b["means"], b["counts"]))
            lines.append(f"{run}: slope {b['slope']:.3f}; {cells}")
    return "\n".join(lines)


def run_analysis(inputs: Sequence[tuple[str, str]], *, topic_set: str = "test", level: int = 1, by: str | None = None,
                 runs: Sequence[tuple[str, str]] = (), measure: str = "recall.10", judged_only: bool = False,
                 fit: str = "pairs", agg: str = "max", answers_dataset: str | None = None,
                 answer_field: str | None = None,
                 data_dir: str | os.PathLike = "data", width: float = 0.1, bootstrap: int = 1000, seed: int = 0,
                 out_dir: str | os.PathLike | None = None) -> dict:
    """What `legalir analyze lexical` does; figures and lexical.json under ``out_dir``."""
    from legalir import collections, scoring, trec
    from legalir.trec.runformats import read_any_run

    samples = []
    for i, (label, coll) in enumerate(inputs):
        answers = dataset_answers(answers_dataset, data_dir, topic_set) if answers_dataset and i == 0 else None
        s = load_sample(label, coll, topic_set, level=level, answers=answers, answer_field=answer_field, fit=fit,
                        agg=agg, by=by)
        samples.extend(split_by_group(s) if by else [s])
    result = analyse(samples, bootstrap=bootstrap, seed=seed)
    result.update({"fit": fit, "agg": agg, "level": level, "topic_set": topic_set, "by": by,
                   "per_topic": {s.label: {"query_gold": s.query_gold, "gold_answer": s.gold_answer}
                                 for s in samples}})
    if runs:
        ms = scoring.parse_measures([measure])
        name = ms[0].output_names()[0]
        coll = inputs[0][1]
        qrels = trec.read_qrels(collections.qrels_path(coll, topic_set))
        sim = {}
        for s in samples:
            sim.update(s.query_gold)
        result["measure"] = name
        result["buckets"] = {}
        for label, path in runs:
            pt = scoring.evaluate(qrels, read_any_run(path), ms, judged_only=judged_only)["per_topic"]
            result["buckets"][label] = buckets(sim, {q: v[name] for q, v in pt.items() if name in v}, width)
    if out_dir:
        from legalir.report import plots, save_json

        out = Path(out_dir)
        figs = []
        figs += plots.histograms({s.label: list(s.query_gold.values()) for s in samples}, out / "hist_query_gold",
                                 title="TF-IDF cosine (query, gold document)", xlabel="cosine similarity")
        if any(s.gold_answer for s in samples):
            figs += plots.histograms({s.label: list(s.gold_answer.values()) for s in samples if s.gold_answer},
                                     out / "hist_gold_answer", title="TF-IDF cosine (gold document, answer)",
                                     xlabel="cosine similarity")
        if result.get("buckets"):
            figs += plots.bucket_plot(result["buckets"], out / "buckets", measure=result["measure"], width=width,
                                      title=f"{result['measure']} by (query, gold) similarity ({inputs[0][0]})")
        result["figures"] = [str(p) for p in figs]
        save_json(result, out / "lexical.json")
    return result
