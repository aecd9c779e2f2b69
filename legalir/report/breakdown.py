"""Per-group scores: a run's per-topic values averaged within each value of a topic metadata field.

``legalir report ... --by category`` (ACORD's clause categories, the ACORD paper's Table D-1), ``--by source``
(Bar Exam QA's MBE subsets), ``--by state`` (Housing). A topic whose field is missing or empty falls in the
group ``NaN``. A group where no topic has a value for a measure (e.g. 5-star precision where no clause has
5 stars, when the measure leaves such topics out) prints ``NaN`` for it, as the ACORD paper's table does;
each group's topic count is printed beside it.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from legalir.report.tables import display_name

NAN_GROUP = "NaN"


def group_of(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return NAN_GROUP
    text = str(value).strip()
    return NAN_GROUP if text.lower() in ("", "nan", "none", "null") else text


def breakdown(per_topic: Mapping[str, Mapping[str, float]], topic_fields: Mapping[str, Mapping],
              field: str, measures: Sequence[str]) -> dict[str, dict]:
    """``{group: {"count": topics, measure: mean or NaN}}``, groups sorted (NaN last), over the scored topics."""
    groups: dict[str, list[str]] = {}
    for qid in per_topic:
        groups.setdefault(group_of(topic_fields.get(qid, {}).get(field)), []).append(qid)
    out: dict[str, dict] = {}
    for g in sorted(groups, key=lambda x: (x == NAN_GROUP, x.lower())):
        qids = groups[g]
        row: dict = {"count": len(qids)}
        for m in measures:
            vals = [float(per_topic[q][m]) for q in qids if m in per_topic[q]]
            row[m] = sum(vals) / len(vals) if vals else math.nan
        out[g] = row
    return out


def format_breakdown(label: str, field: str, table: Mapping[str, Mapping], measures: Sequence[str],
                     scale: float = 100) -> str:
    fmt = "{:.1f}" if scale == 100 else "{:.3f}"
    header = [field, "n"] + [display_name(m) for m in measures]
    body = [[g, str(row["count"])] + ["NaN" if math.isnan(row[m]) else fmt.format(row[m] * scale) for m in measures]
            for g, row in table.items()]
    widths = [max(len(r[i]) for r in [header] + body) for i in range(len(header))]
    line = lambda r: "  ".join(c.ljust(widths[0]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r))
    return "\n".join([f"{label}: by {field}", line(header), "  ".join("-" * w for w in widths), *map(line, body)])
