"""matplotlib figures for reports (Agg backend: no display needed). Each figure is saved as PNG and SVG.

* :func:`histograms`: overlaid similarity histograms, one per sample
* :func:`bucket_plot`: a measure per similarity bucket for several runs, each with its least-squares line
  (the Bar Exam / Housing paper's Figure 4)
* :func:`difference_bars`: per-topic differences between two runs, sorted (as Anserini's compare_runs)
* :func:`recall_curves`: recall@k against k for several runs
* :func:`interval_plot`: means with bootstrap intervals (the paper's Figure 3 style)
* :func:`group_bars`: per-group means (breakdowns), with counts
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from legalir.base import atomic

FORMATS = ("png", "svg")
plt.rcParams.update({"svg.hashsalt": "legalir", "figure.dpi": 100, "font.size": 9})


def save(fig, stem: str | os.PathLike) -> list[Path]:
    """Write ``stem.png`` and ``stem.svg`` (each atomically) and close the figure."""

    stem = Path(stem)
    out = []
    for fmt in FORMATS:
        p = stem.with_name(stem.name + f".{fmt}")
        with atomic.open_file(p, "wb") as f:
            fig.savefig(f, format=fmt, bbox_inches="tight", metadata={"Date": None} if fmt == "svg" else None)
        out.append(p)
    plt.close(fig)
    return out


def histograms(samples: Mapping[str, Sequence[float]], stem, *, title: str, xlabel: str,
               bins: int = 20, range_: tuple[float, float] = (0.0, 1.0)) -> list[Path]:
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for label, values in samples.items():
        ax.hist(list(values), bins=bins, range=range_, alpha=0.5, density=True, label=f"{label} (n={len(values)})")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("density")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return save(fig, stem)


def bucket_plot(buckets: Mapping[str, Mapping], stem, *, title: str, measure: str, width: float) -> list[Path]:
    """``buckets[run] = {"lows": [...], "means": [...], "counts": [...], "slope": s, "intercept": c}``."""
    fig, ax = plt.subplots(figsize=(6, 3.5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (run, b) in enumerate(buckets.items()):
        c = colors[i % len(colors)]
        mids = [lo + width / 2 for lo in b["lows"]]
        ax.plot(mids, b["means"], "o", color=c, label=f"{run} (slope {b['slope']:.2f})")
        if mids:
            xs = [0.0, max(mids) + width / 2]
            ax.plot(xs, [b["intercept"] + b["slope"] * x for x in xs], "-", color=c, alpha=0.7)
    ax.set_xlabel(f"TF-IDF cosine similarity (query, gold document), buckets of {width:g}")
    ax.set_ylabel(measure)
    ax.set_title(title)
    ax.legend(fontsize=8)
    return save(fig, stem)


def difference_bars(diffs: Mapping[str, float], stem, *, title: str, measure: str) -> list[Path]:
    items = sorted(diffs.items(), key=lambda kv: (-kv[1], kv[0]))
    fig, ax = plt.subplots(figsize=(7, 3.5))
    vals = [v for _, v in items]
    ax.bar(range(len(vals)), vals, color=["#2a7" if v > 0 else "#c44" if v < 0 else "#999" for v in vals], width=1.0)
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_xlim(-0.5, max(len(vals), 1) - 0.5)
    ax.set_xlabel(f"topics, sorted ({sum(v > 0 for v in vals)} better, {sum(v < 0 for v in vals)} worse, "
                  f"{sum(v == 0 for v in vals)} equal)")
    ax.set_ylabel(f"difference in {measure}")
    ax.set_title(title)
    return save(fig, stem)


def recall_curves(curves: Mapping[str, Mapping[int, float]], stem, *, title: str) -> list[Path]:
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for run, pts in curves.items():
        ks = sorted(pts)
        ax.plot(ks, [pts[k] for k in ks], marker="o", label=run)
    ax.set_xscale("log")
    ax.set_xlabel("k (cutoff)")
    ax.set_ylabel("recall@k")
    ax.set_ylim(0, 1.02)
    ax.set_title(title)
    ax.legend(fontsize=8)
    return save(fig, stem)


def interval_plot(rows: Sequence[tuple[str, float, float, float]], stem, *, title: str, xlabel: str) -> list[Path]:
    """``rows``: (label, mean, low, high), drawn as points with horizontal error bars."""
    fig, ax = plt.subplots(figsize=(6, 0.6 + 0.4 * max(1, len(rows))))
    ys = list(range(len(rows)))[::-1]
    for y, (label, m, lo, hi) in zip(ys, rows):
        ax.errorbar([m], [y], xerr=[[m - lo], [hi - m]], fmt="o", capsize=3)
    ax.set_yticks(ys)
    ax.set_yticklabels([r[0] for r in rows])
    ax.axvline(0, color="#999", linewidth=0.5)
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    return save(fig, stem)


def group_bars(groups: Mapping[str, Mapping[str, tuple[float, int]]], stem, *, title: str, measure: str
               ) -> list[Path]:
    """``groups[run][group] = (mean, count)``: grouped bars, one colour per run."""
    runs = list(groups)
    names = sorted({g for v in groups.values() for g in v})
    fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(names) * max(1, len(runs)) / 2 + 2), 3.8))
    w = 0.8 / max(1, len(runs))
    for i, run in enumerate(runs):
        vals = [groups[run].get(g, (float("nan"), 0))[0] for g in names]
        ax.bar([j + i * w for j in range(len(names))], vals, width=w, label=run)
    counts = [max(groups[r].get(g, (0, 0))[1] for r in runs) for g in names]
    ax.set_xticks([j + w * (len(runs) - 1) / 2 for j in range(len(names))])
    ax.set_xticklabels([f"{g}\n(n={n})" for g, n in zip(names, counts)], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(measure)
    ax.set_title(title)
    ax.legend(fontsize=8)
    return save(fig, stem)
