"""The embedded sample: a small contract-clause set in ACORD's published layout.

It ships inside the package (``legalir/resources/sample``), so ``legalir
convert sample`` and ``make demo`` need no download. ``--data-dir`` is
ignored unless it holds a ``sample/corpus.jsonl``.
"""
from __future__ import annotations

from pathlib import Path

from legalir.datasets.acord import Acord
from legalir.datasets.base import register

PACKAGED = Path(__file__).resolve().parent.parent / "resources" / "sample"


@register
class Sample(Acord):
    name = "sample"
    hub_repo = None
    references = ()
    pipeline = None  # the demo runs it (make demo)
    embedded = None  # the packaged sample below is its own fallback

    def __init__(self, root, **options):
        root = Path(root)
        super().__init__(root if (root / "corpus.jsonl").exists() else PACKAGED, **options)
