"""Dense retrieval of one FAISS index: encode the topics, search the index, return a run.

:class:`DenseRetriever` searches one index (or one partition's); partition routing, releases and the
hybrid rule are the searcher core's (:class:`legalir.Searcher`, which opens one per partition and shares one
encoder between them). :class:`DenseOptions` are the dense search options every face passes to the
searcher (``legalir search-dense --ef-search``, ``legalir.pt.dense(ef_search=)``, ``Searcher(dense_options=)``).
"""
from __future__ import annotations

import dataclasses
import os
import threading
import weakref
from collections.abc import Mapping
from typing import Any

from legalir.base import log
from legalir.indexing import IndexPair, MethodError, dense, encoders
from legalir.search.runner import SearchError, check_topics
from legalir.trec import Topic

_log = log.get(__name__)

#: topic metadata field holding a per-topic instruction (CRUMB)
INSTRUCTION_FIELD = "instruction"


_ENCODER_LOCKS: weakref.WeakKeyDictionary[Any, threading.Lock] = weakref.WeakKeyDictionary()
_ENCODER_LOCKS_LOCK = threading.Lock()


def lock_of(encoder: Any) -> threading.Lock:
    """One lock per encoder object: a Hugging Face fast tokenizer must not be called from two threads at
    once ("Already borrowed"), whichever retrievers share it."""
    with _ENCODER_LOCKS_LOCK:
        lock = _ENCODER_LOCKS.get(encoder)
        if lock is None:
            lock = _ENCODER_LOCKS[encoder] = threading.Lock()
        return lock


def load_encoder(index_dir: str | os.PathLike, model: str | None = None, device: str | None = None,
                 **overrides: Any) -> encoders.Encoder:
    """The query encoder for an index: the settings it was built with, then ``overrides``.

    ``model`` points to the weights when they moved (same model); an encoder
    with other document-side settings is allowed only for the query side
    (formats, instruction) and is reported on stderr.
    """
    _check_dense(index_dir)
    meta = dense.read_meta(index_dir)
    recorded = encoders.EncoderSettings.from_dict(meta["encoder"])
    settings = recorded
    if model is not None:
        settings = dataclasses.replace(settings, model=model)
    clean = {k: v for k, v in overrides.items() if v is not None}
    if clean:
        settings = dataclasses.replace(settings, **clean)
    changed = [k for k in encoders.DOCUMENT_SIDE if k != "model" and getattr(settings, k) != getattr(recorded, k)]
    if changed:
        _log.warning(f"querying {index_dir} with other settings than its documents were encoded with: "
                     + ", ".join(f"{k}={getattr(settings, k)!r} (index: {getattr(recorded, k)!r})" for k in changed))
    return encoders.Encoder.from_settings(settings, device=device)


class DenseRetriever:
    """Exact or approximate inner-product search of one FAISS index, or of one built in shards.

    A sharded index (``index-dense --shard-size``) is searched shard by shard
    with an exact merge of the top k: the run equals the one of a single flat
    index over the same vectors. ``resident`` keeps its shards loaded between
    searches (otherwise one shard at a time is in memory).
    """

    def __init__(self, index_dir: str | os.PathLike, encoder: encoders.Encoder, *, instruction: str | None = None,
                 gpu: bool | None = None,
                 ef_search: int | None = None, nprobe: int | None = None, threads: int | None = None,
                 resident: bool = False):
        self.index = dense.open_index(index_dir, gpu=gpu, ef_search=ef_search, nprobe=nprobe, threads=threads,
                                      resident=resident)
        if encoder.dim != self.index.dim:
            raise dense.DenseIndexError(
                f"{index_dir}: the index holds {self.index.dim}-dimensional vectors but the encoder "
                f"{encoder.settings.model} makes {encoder.dim}-dimensional ones; use the encoder the index was "
                f"built with ({self.index.meta['encoder'].get('model')})")
        self.encoder = encoder
        self.instruction = instruction

    def search(self, topics: Mapping[str, Topic], k: int) -> dict[str, Mapping[str, float]]:
        """``{qid: {docid: score}}`` (each a :class:`legalir.trec.Hits`, best first) of the top ``k``."""
        check_topics(topics)
        qids = list(topics)
        instructions = [self.instruction or topics[q].fields.get(INSTRUCTION_FIELD) or None for q in qids]
        # the encoder's lock around the search too: FAISS's thread count is set per search (legalir.base.numeric)
        with lock_of(self.encoder):
            vecs = self.encoder.encode_queries([topics[q].text for q in qids], instructions)
            return dict(zip(qids, self.index.search(vecs, k)))

    def close(self) -> None:
        """The FAISS index stays loaded (partitions share one encoder and may be searched again)."""


def _check_dense(index_dir: str | os.PathLike) -> None:
    """A FAISS index whose metadata is whole (:func:`legalir.indexing.check_metadata`), or a located error (a
    Lucene index: what to search it with)."""
    try:
        IndexPair([index_dir]).method("dense")
    except MethodError as e:
        raise SearchError(str(e)) from None
