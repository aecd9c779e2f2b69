"""The embedded sample: a small contract-clause set in ACORD's published layout.

It ships inside the package (``legalir/resources/sample``), so ``legalir
convert sample`` and ``make demo`` need no download. ``--data-dir`` is
read when it holds a ``sample/corpus.jsonl``; a ``sample/`` folder holding other
files (``corpus.jsonl.gz``, a renamed file) is an error, never silently
replaced by the packaged copy, which is read only when ``sample/`` is absent
or empty.
"""
from __future__ import annotations

from pathlib import Path

from legalir.datasets.acord import Acord, refuse_unreadable
from legalir.datasets.dataset import register

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
        if not (root / "corpus.jsonl").exists():
            refuse_unreadable(root, self.name, ("corpus.jsonl",), xz=False)
            root = PACKAGED
        super().__init__(root, **options)
