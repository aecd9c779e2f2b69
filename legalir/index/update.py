"""Live updates of built indexes: added, replaced and deleted documents applied as a new version.

An index version is its collection plus the changes applied since the build:
the version folder records them in ``legalir-updates.jsonl`` (cumulative, one
JSON object per changed document: ``{"id", "op", "partition", "record"}``,
``record`` ``null`` for a deleted document). Readers that show documents
(``legalir serve``) read a changed document from there, every other one
from the collection (:func:`changed_documents`).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from legalir.errors import LegalirError

#: the changes applied to a version since its build (in the version folder's root)
UPDATES = "legalir-updates.jsonl"
OPS = ("add", "replace", "delete")


class UpdateError(LegalirError, ValueError):
    """A change set that cannot be applied to an index as given."""


def changed_documents(index_dir: str | os.PathLike) -> dict[str, dict | None]:
    """The documents changed since ``index_dir`` was built: ``{docid: record or None (deleted)}``.

    Parameters
    ----------
    index_dir : str or PathLike
        An index folder (the link ``legalir index`` publishes, or one version folder).

    Returns
    -------
    dict
        Each added or replaced document's record as indexed (``{"id", "contents", ...}``, with
        ``"_partition"``: its partition key, ``""`` when not partitioned); ``None`` for a
        deleted one. Empty for an index never updated.
    """
    from legalir.trec import iter_jsonl

    path = Path(os.path.realpath(index_dir)) / UPDATES
    out: dict[str, dict | None] = {}
    if not path.is_file():
        return out
    for n, row in iter_jsonl(path):
        docid, op, rec = row.get("id"), row.get("op"), row.get("record")
        if not isinstance(docid, str) or op not in OPS or (op == "delete") != (rec is None):
            raise UpdateError(f"{path}:{n}: not a change legalir wrote ({row!r:.80}); rebuild the index "
                              f"(legalir index)")
        out[docid] = None if rec is None else {**rec, "_partition": row.get("partition") or ""}
    return out
