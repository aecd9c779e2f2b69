"""One self-contained HTML page for a set of scored runs (``legalir report ... --html OUT.html``).

Everything is inside the file: figures are PNG data URIs, no script, no external style sheet or font.
Sections: the scores beside the papers' rows; each run's mean with its percentile-bootstrap interval
and its paired difference to the first run (interval and paired t-test); the breakdowns (``--by``);
figures (intervals, sorted per-topic differences, recall@k curves, per-group bars, plus any PNG given
with ``--figure``, e.g. `legalir analyze lexical`'s histograms and bucket plot); the exact command and
the versions of what produced the numbers.
"""
from __future__ import annotations

import base64
import html
import math
import os
import platform
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from legalir.base import atomic
from legalir.report import breakdown as bd
from legalir.report.tables import _counts, display_name, headline, measure_columns, protocol
from legalir.version import __version__

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1100px;color:#222;
padding:0 1em;line-height:1.4}
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}
th,td{border:1px solid #ddd;padding:.25em .6em;text-align:right}th{background:#f4f4f4}
td:first-child,th:first-child{text-align:left}tr.paper td{color:#666;font-style:italic}
figure{display:inline-block;margin:.5em;vertical-align:top}figure img{max-width:520px;border:1px solid #eee}
figcaption{font-size:.8em;color:#555;max-width:520px}code,pre{background:#f6f6f6;padding:.1em .3em;font-size:.85em}
pre{padding:.6em;overflow-x:auto;white-space:pre-wrap}.note{color:#555;font-size:.9em}
"""


def _e(x) -> str:
    return html.escape(str(x))


def _num(v, scale: float) -> str:
    """A value in the tables' scale and decimals; "n/a" (footnoted) where no topic defines it."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    return f"{v * scale:.1f}" if scale == 100 else f"{v * scale:.3f}"


NA_NOTE = "n/a: no evaluated topic defines the measure (e.g. no topic of the group has a 5-star clause)."


def data_uri(png: str | os.PathLike) -> str:
    return "data:image/png;base64," + base64.b64encode(Path(png).read_bytes()).decode("ascii")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], classes: Sequence[str] | None = None) -> str:
    out = ["<table><thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in header) + "</tr></thead><tbody>"]
    for i, r in enumerate(rows):
        cls = f' class="{classes[i]}"' if classes and classes[i] else ""
        out.append(f"<tr{cls}>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _p(p) -> str:
    return "-" if p is None or (isinstance(p, float) and math.isnan(p)) else f"{p:.4f}"


def versions() -> dict[str, str]:
    from importlib import metadata


    out = {"legalir": __version__, "python": platform.python_version(), "platform": platform.platform()}
    for pkg in ("pytrec-eval-terrier", "pyserini", "numpy", "scipy", "matplotlib", "torch", "transformers"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


def write_report(path: str | os.PathLike, dataset_cls, results: Sequence[tuple[str, Mapping]], *,
                 title: str | None = None, command: str = "", by: Sequence[str] = (),
                 topic_fields: Mapping[str, Mapping] | None = None, curves: Mapping[str, Mapping[int, float]] | None = None,
                 extra_figures: Sequence[str | os.PathLike] = (), bootstrap: int = 1000, seed: int = 0,
                 inputs: Sequence[str] = ()) -> Path:
    """Write the page atomically; ``results``: (label, ``{"all", "per_topic"}``) per run, the first = baseline."""
    from legalir.report import plots
    from legalir.scoring import stats

    p = protocol(dataset_cls)
    scale = p["scale"]
    unit = " (×100)" if scale == 100 else ""  # figures in the tables' scale, said on their axes
    columns = measure_columns(dataset_cls)
    for _, r in results:
        for m in r["all"]:
            if m not in columns and isinstance(r["all"][m], (int, float)) and m != "num_q":
                columns.append(m)
    parts: list[str] = []
    title = title or f"{dataset_cls.name}: {len(results)} run(s)"
    parts.append(f"<h1>{_e(title)}</h1>")
    parts.append(f'<p class="note">Generated {_e(time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))} by legalir. '
                 f"Scores ×{scale:g} where the papers print percentages."
                 + (" Judged-only: unjudged documents removed before scoring." if p["judged_only"] else "") + "</p>")

    # ---- main table: papers' rows, then ours
    rows, classes = [], []
    partial = False
    for ref in p["references"]:
        if any(m in ref.values for m in columns):
            # the papers' numbers are printed in the table's scale already: same decimals as ours
            rows.append([f"{ref.system} (paper)", "-"] + [_num(ref.values[m] / scale, scale) if m in ref.values
                                                          else "-" for m in columns])
            classes.append("paper")
    for label, r in results:
        n, of = _counts(r)
        mark = "*" if n is not None and of is not None and n < of else ""
        partial = partial or bool(mark)
        rows.append([label, "-" if n is None else f"{n}{mark}"]
                    + [_num(r["all"].get(m), scale) if m in r["all"] else "-" for m in columns])
        classes.append("")
    parts.append("<h2>Scores beside the papers' rows</h2>")
    parts.append(_table(["system", "topics"] + [display_name(m) for m in columns], rows, classes))
    if partial:
        parts.append('<p class="note"><b>* Warning:</b> scored on fewer topics than the qrels judge (the others '
                     "are missing from the run); the papers' rows are over the whole topic set, so these rows are "
                     "not comparable with them.</p>")
    if any(cell == "n/a" for row in rows for cell in row):
        parts.append(f'<p class="note">{_e(NA_NOTE)}</p>')
    refs = sorted({ref.source for ref in p["references"]})
    if refs:
        parts.append('<p class="note">Paper rows (italic): ' + "; ".join(_e(s) for s in refs) + "</p>")

    figs: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="legalir-report-") as tmp:
        tmp = Path(tmp)
        # ---- bootstrap intervals and paired differences
        per_topic = [r.get("per_topic") or {} for _, r in results]
        comparable = [m for m in columns if all(any(m in v for v in pt.values()) for pt in per_topic)]
        if comparable and all(per_topic):
            parts.append(f"<h2>Means with {bootstrap:,}-resample percentile-bootstrap 95% intervals</h2>")
            label_names = [lab for lab, _ in results]
            comps = stats.compare(per_topic, label_names, comparable, bootstrap=bootstrap, seed=seed,
                                  correction="holm") if len(results) > 1 else None
            rows = []
            for m in comparable:
                if comps:
                    c = next(x for x in comps if x.measure == m)
                    for i, lab in enumerate(label_names):
                        ci, d = c.intervals[i], c.diff_intervals[i]
                        res = c.results[i]
                        rows.append([display_name(m), lab, _num(ci.mean, scale),
                                     f"[{_num(ci.low, scale)}, {_num(ci.high, scale)}]",
                                     f"{d.mean * scale:+.2f} [{d.low * scale:+.2f}, {d.high * scale:+.2f}]" if d else "-",
                                     f"{res.pvalue:.4f}" if res and not math.isnan(res.pvalue) else "-",
                                     _p(c.pvalues[i]), str(c.topics)])
                else:
                    vals = [v[m] for v in per_topic[0].values() if m in v]
                    ci = stats.bootstrap_ci(vals, bootstrap, 0.95, seed)
                    rows.append([display_name(m), label_names[0], _num(ci.mean, scale),
                                 f"[{_num(ci.low, scale)}, {_num(ci.high, scale)}]", "-", "-", "-", str(ci.n)])
            parts.append(_table(["measure", "run", "mean", "95% CI", f"difference vs {label_names[0]} [95% CI]",
                                 "paired t-test p", "Holm-corrected p", "topics"], rows))
            left_out = ""
            if comps and any(c.left_out for c in comps):
                shared, left = min(c.topics for c in comps), max(c.left_out for c in comps)
                left_out = (f" ({shared}; {left} topic(s) some run lacks are left out, so a mean here can differ "
                            f"from the table above)")
            parts.append(f'<p class="note">Topics resampled with replacement ({bootstrap:,} resamples, seed {seed}); '
                         "every interval of a measure uses the same resamples. Means here are over the topics all "
                         f"runs share{left_out}; p-values: paired t-test against the first run, Holm-corrected over "
                         "the runs.</p>")
            m0 = headline(dataset_cls, comparable)
            ivs = []
            if comps:
                c = next(x for x in comps if x.measure == m0)
                ivs = [(lab, ci.mean * scale, ci.low * scale, ci.high * scale) for lab, ci in zip(label_names, c.intervals)]
            else:
                vals = [v[m0] for v in per_topic[0].values() if m0 in v]
                ci = stats.bootstrap_ci(vals, bootstrap, 0.95, seed)
                ivs = [(label_names[0], ci.mean * scale, ci.low * scale, ci.high * scale)]
            png = plots.interval_plot(ivs, tmp / "intervals", title=f"{display_name(m0)}: mean and 95% bootstrap CI",
                                      xlabel=display_name(m0) + unit)[0]
            figs.append((data_uri(png), f"{display_name(m0)} per run with its 95% percentile-bootstrap interval."))
            if len(results) > 1:
                common = sorted(set(per_topic[0]) & set(per_topic[1]))
                diffs = {q: (per_topic[1][q][m0] - per_topic[0][q][m0]) * scale for q in common
                         if m0 in per_topic[1][q] and m0 in per_topic[0][q]}
                png = plots.difference_bars(diffs, tmp / "diffs", measure=display_name(m0) + unit,
                                            title=f"{label_names[1]} minus {label_names[0]}, per topic (sorted)")[0]
                figs.append((data_uri(png), f"Per-topic {display_name(m0)} of {label_names[1]} minus "
                                            f"{label_names[0]}, sorted."))

        # ---- breakdowns
        for field in by:
            if topic_fields is None:
                break
            parts.append(f"<h2>By {_e(field)}</h2>")
            grouped = {}
            for label, r in results:
                t = bd.breakdown(r.get("per_topic") or {}, topic_fields, field, columns)
                grouped[label] = t
                rows = [[g, str(row["count"])] + [_num(row[m], scale) for m in columns] for g, row in t.items()]
                parts.append(f"<p><b>{_e(label)}</b></p>")
                parts.append(_table([field, "topics"] + [display_name(m) for m in columns], rows))
            parts.append(f'<p class="note">{_e(NA_NOTE)} A group named NaN holds the topics without the '
                         "field.</p>")
            if columns:
                m0 = headline(dataset_cls, columns)
                png = plots.group_bars({lab: {g: (row[m0] * scale, row["count"]) for g, row in t.items()}
                                        for lab, t in grouped.items()}, tmp / f"by_{len(figs)}",
                                       title=f"{display_name(m0)} by {field}", measure=display_name(m0) + unit)[0]
                figs.append((data_uri(png), f"{display_name(m0)} per {field} value (topic counts under the bars)."))

        if curves:
            png = plots.recall_curves(curves, tmp / "recall", title="recall@k")[0]
            figs.append((data_uri(png), "Recall at each cutoff k, per run."))
        for f in extra_figures:
            figs.append((data_uri(f), Path(f).name))

    if figs:
        parts.append("<h2>Figures</h2>")
        for uri, cap in figs:
            parts.append(f'<figure><img src="{uri}" alt="{_e(cap)}"><figcaption>{_e(cap)}</figcaption></figure>')

    parts.append("<h2>How these numbers were made</h2>")
    parts.append(f"<pre>{_e(command or ' '.join(sys.argv))}</pre>")
    if inputs:
        parts.append("<p>Inputs:</p><ul>" + "".join(f"<li><code>{_e(i)}</code></li>" for i in inputs) + "</ul>")
    parts.append(_table(["component", "version"], list(versions().items())))

    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_e(title)}</title><link rel=\"icon\" href=\"data:,\"><style>{CSS}</style></head><body>\n" + "\n".join(parts) + "\n</body></html>\n")

    out = Path(path)
    atomic.write_text(out, page, output=True)
    return out
