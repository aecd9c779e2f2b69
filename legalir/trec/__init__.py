"""File formats shared by every layer: topics, qrels and runs.

The data model is BEIR's, as three plain mappings:

* topics: ``{qid: Topic}`` (a ``Topic`` has ``text`` and metadata ``fields``)
* qrels:  ``{qid: {docid: relevance}}`` (int)
* run:    ``{qid: {docid: score}}`` (float); the ranking is implied by the
  scores, ordered as trec_eval orders them: score descending, then docid in
  *descending* lexical order for ties.

Readers validate every line and raise :class:`FormatError`, whose message
names the file, the line number and what is wrong. Nothing is dropped
silently.

Split by what it holds: :mod:`legalir.trec.model` (the data model, ids, reading files whole),
:mod:`legalir.trec.topics`, :mod:`legalir.trec.qrels`, :mod:`legalir.trec.runs`, and
:mod:`legalir.trec.plain` (the plain-file fast path and C's number parsing, shared by the
qrels and run readers). ``from legalir import trec`` gives every public name of them.
"""
from __future__ import annotations

from legalir.trec.model import *  # noqa: F403
from legalir.trec.model import _display, _lines  # noqa: F401  (used by other layers' readers)
from legalir.trec.plain import _CHUNK, _pieces  # noqa: F401
from legalir.trec.qrels import *  # noqa: F403
from legalir.trec.runs import *  # noqa: F403
from legalir.trec.runs import _read_run_exact  # noqa: F401
from legalir.trec.topics import *  # noqa: F403
