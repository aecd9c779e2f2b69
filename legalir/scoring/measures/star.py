"""ACORD's K-star precision at N (stars = relevance + 1), in two forms; a family per K, named by pattern.

* ``starK_P``: the benchmark documentation's formula, hits / min(N, K-star documents);
* ``starK_rawP``: hits / N, the form that reproduces the ACORD paper's published
  columns (checked on its MiniLM row: 49.8 / 35.8 / 7.6 exactly).

Both average over the topics that have a K-star document only (aggregate ``subset_mean``).
"""
from __future__ import annotations

import re

from legalir.scoring.measures.base import Context, Family, Measure, Value
from legalir.scoring.prepare import Topic

_STAR = re.compile(r"^star([1-9][0-9]*)_(P|rawP)$")
#: how `--list-measures` shows the pattern families
PATTERNS = (
    "  starK_P[.N]  (legalir) ACORD's K-star precision at N, e.g. star3_P.5 "
    "(stars = relevance + 1; hits / min(N, K-star documents); topics without a K-star document left out)",
    "  starK_rawP[.N]  (legalir) the same with hits / N, as the ACORD paper's tables compute it",
)
KNOWN = ("starK_P", "starK_rawP")


def star_k(name: str) -> int:
    """K of a ``starK_P`` / ``starK_rawP`` family name."""
    m = _STAR.match(name)
    if m is None:
        raise ValueError(f"{name!r} is not a star measure")
    return int(m.group(1))


def match(name: str) -> Family | None:
    """The family ``starK_P`` / ``starK_rawP`` names, or None."""
    m = _STAR.match(name)
    if not m:
        return None
    k, normalised = int(m.group(1)), m.group(2) == "P"
    denominator = f"min(N, documents rated >= {k} stars)" if normalised else "N"

    def compute(measure: Measure, topic: Topic, ctx: Context) -> dict[str, Value]:
        threshold = k - 1
        good = sum(1 for r in topic.judgements.values() if r >= threshold)
        if good == 0:  # undefined for the topic: left out of the average
            return {}
        j = topic.judgements
        out: dict[str, Value] = {}
        for name, n in zip(measure.output_names(), measure.effective_params()):
            hits = sum(1 for d in topic.ranking[:n] if j.get(d, -1) >= threshold)
            out[name] = hits / (min(n, good) if normalised else n)
        return out

    return Family(name, "legalir", "subset_mean", params="int", defaults=(5,), compute=compute,
                  subset=f"a document rated >= {k} stars", doc=f"documents rated >= {k} stars in the top N / {denominator}; "
                      f"topics with no such document are left out of the average")


FAMILIES: tuple[Family, ...] = ()
