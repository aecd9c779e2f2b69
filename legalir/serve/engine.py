"""The work behind `legalir serve`'s endpoints, without HTTP: search, documents, runs.

Search is the searcher core's (:class:`legalir.Searcher`: routing, filters, citations, hybrid, the
Java gate that makes concurrent searches safe, document lookup); scores are the scoring core's
(:mod:`legalir.scoring.core`). What is added here is only what a server needs, one module per job:

* :mod:`legalir.serve.indexes`: the names exposed, each served as one :class:`Snapshot` (a Searcher on
  pinned versions) at a time, and reloaded when `legalir index` or `legalir index update` publishes a
  new version (a request takes one snapshot for everything it does; an old one is closed when its last
  request ends; a version that cannot be opened is logged and skipped);
* :mod:`legalir.serve.explorer`: the runs exposed (the run explorer) with their qrels, topics and scores;
* :mod:`legalir.serve.display`: what a hit shows (snippets, citation, heading path);
* :mod:`legalir.serve.failures`: what a request can meet, with its HTTP status;
* this module: the :class:`Engine` that answers each endpoint from those tables.

Nothing a request sends is ever used as a path: index, collection and run names, partitions, document
ids and topic ids are all looked up in tables built at start-up from the configuration. FAISS: a dense
search holds its encoder's lock (a fast tokenizer must not be called from two threads at once); worker
threads are attached to the JVM when they first call Java and detached when the server stops
(:class:`legalir.serve.workers.Workers`).
"""
from __future__ import annotations

import contextlib
import math
import sys
import threading
from pathlib import Path
from typing import Any

from legalir import api, datasets, trec
from legalir.api import Hit
from legalir.base import checks, log
from legalir.errors import ApiError, LegalirError
from legalir.indexing import METHODS
from legalir.legal import filters
from legalir.scoring.judged import is_judged
from legalir.scoring.measures import DEFAULT_MEASURES  # noqa: F401  (the one default set, legalir.evaluate's)
from legalir.search import bm25, fusion, gate
from legalir.search.arguments import check_k
from legalir.serve.config import DEFAULT_RELOAD_INTERVAL, Config, ConfigError, RunSpec

# the engine's parts, one module per job (re-exported here: the app, MCP and tests name them through the engine)
from legalir.serve.display import SNIPPET_WORDS, STOPWORDS, describe, duplicates, norm_term, query_terms, shown, snippet  # noqa: F401
from legalir.serve.explorer import RunEntry, _sibling_topics
from legalir.serve.failures import BadRequest, NotFound, ServeError, Unavailable  # noqa: F401
from legalir.serve.indexes import PAIR_WAIT_S, DocStore, IndexEntry, Snapshot, _kind, _version_label  # noqa: F401
from legalir.trec import runformats
from legalir.version import __version__

_log = log.get(__name__)

MAX_K = 1000
MAX_BATCH = 1000
MAX_QUERY_CHARS = 10_000
#: an inline run (MCP evaluate/fuse) is at most this many characters (~60,000 TREC lines)
MAX_INLINE_RUN_CHARS = 3_000_000

# the one way into the JVM: legalir.search.gate (the searcher core's gate, shared by every face)
LuceneGate = gate.LuceneGate
LUCENE = gate.LUCENE


# ------------------------------------------------------------------ the engine
class Engine:
    """Everything exposed, loaded and checked at start-up; each method answers one endpoint.

    ``reload_interval``: seconds between two looks at the links of versioned indexes, by the thread
    :meth:`start_reloading` starts (the server does when it starts); 0: never. See :meth:`reload`.
    """

    def __init__(self, cfg: Config, *, k1: float | None = None, b: float | None = None, lucene_threads: int = 1,
                 measures: list[str] | None = None, judged_only: bool | None = None, device: str | None = None,
                 quiet: bool = False, reload_interval: float = DEFAULT_RELOAD_INTERVAL):
        if cfg.empty():
            raise ConfigError("nothing to serve: give at least one --index, --collection or --run")
        if not isinstance(reload_interval, (int, float)) or not math.isfinite(reload_interval) or reload_interval < 0:
            raise ConfigError(f"--reload-interval must be 0 (never) or a number of seconds, got {reload_interval!r}")
        self.quiet = quiet
        self.reload_interval = float(reload_interval)
        self._reloader: threading.Thread | None = None
        self._stop = threading.Event()
        self.collections: dict[str, DocStore] = {n: DocStore(n, p) for n, p in sorted(cfg.collections.items())}
        self.indexes: dict[str, IndexEntry] = {}
        for name, dirs in sorted(cfg.indexes.items()):
            sparse_dir = next((d for d in dirs if _kind(d)[0] == "sparse"), None)
            k1_, b_, source = (bm25.bm25_params(sparse_dir, k1, b) if sparse_dir is not None
                               else (bm25.DEFAULT_K1, bm25.DEFAULT_B, ""))
            if sparse_dir is not None:
                _log.info(f"index {name}: BM25 k1={k1_:g} b={b_:g} ({source})")
            entry = IndexEntry(name, dirs, k1=k1_, b=b_, device=device, lucene_threads=lucene_threads)
            entry.collection = self.collections.get(name) or self._collection_for(entry.recorded_collection(), name)
            if entry.collection is not None:
                entry.partition_field = entry.collection.partition_field
            self.indexes[name] = entry
        self.qrels_files: dict[str, Path] = dict(cfg.qrels)
        self._qrels: dict[str, trec.Qrels] = {}
        self._qrels_lock = threading.Lock()
        self.runs: dict[str, RunEntry] = {}
        for name, spec in sorted(cfg.runs.items()):
            self.runs[name] = self._load_run(spec, cfg, measures, judged_only)

    def _collection_for(self, root: Path | None, name: str) -> DocStore | None:
        """The registered collection at ``root``, else ``root`` registered under ``name`` (if free)."""
        if root is None:
            return None
        for store in self.collections.values():
            if store.root == root.resolve():
                return store
        if name in self.collections:
            return None
        self.collections[name] = DocStore(name, root)
        return self.collections[name]

    def _load_run(self, spec: RunSpec, cfg: Config, measures: list[str] | None,
                  judged_only: bool | None) -> RunEntry:
        from legalir.scoring import core

        # every run format legalir reads (TREC, CRUMB JSONL), as legalir eval and legalir.evaluate read it
        entry = RunEntry(spec.name, spec.file, core.to_run(spec.file, f"run {spec.name}"))
        qname = spec.qrels or (spec.name if spec.name in cfg.qrels else None)
        if qname is None and len(cfg.qrels) == 1:
            qname = next(iter(cfg.qrels))
        if spec.qrels and spec.qrels not in cfg.qrels:
            raise ConfigError(f"run {spec.name}: no qrels named {spec.qrels!r}; known: {', '.join(cfg.qrels)}")
        if qname is None and cfg.qrels:
            raise ConfigError(f"run {spec.name}: which qrels? give --qrels {spec.name}=FILE or name it in a "
                              f"config file ([run] {spec.name} = {{ file = ..., qrels = ... }})")
        if qname is not None:
            entry.qrels_name, entry.qrels_path = qname, cfg.qrels[qname]
            entry.qrels = trec.read_qrels(entry.qrels_path)
        entry.topics_path = spec.topics or (_sibling_topics(entry.qrels_path) if entry.qrels_path else None)
        if entry.topics_path:
            entry.topics = trec.read_topics(entry.topics_path)
        if spec.collection:
            if spec.collection not in self.collections:
                raise ConfigError(f"run {spec.name}: no collection named {spec.collection!r}; known: "
                                  f"{', '.join(self.collections) or 'none'}")
            entry.collection = self.collections[spec.collection]
        elif entry.qrels_path and (entry.qrels_path.parent.parent / "manifest.json").exists():
            root = entry.qrels_path.parent.parent
            entry.collection = self._collection_for(root, root.name)
        # the dataset's own protocol (ACORD: judged-only), unless told otherwise
        dataset_cls = None
        if entry.collection is not None:
            try:
                dataset_cls = type(datasets.get(entry.collection.manifest.get("dataset", ""), "."))
            except LegalirError:
                dataset_cls = None
        entry.judged_only = bool(getattr(dataset_cls, "judged_only", False)) if judged_only is None else judged_only
        names = getattr(dataset_cls, "grade_names", None)
        entry.grade_names = {str(g): str(w) for g, w in names.items()} if names else None
        entry.measures = core.measure_requests(measures if measures is not None else
                                               getattr(dataset_cls, "measures", None) or None)
        if entry.qrels is not None:
            try:
                # the one scoring function (legalir.evaluate's), keyed by trec_eval's names for the page
                entry.evaluation = core.score(entry.qrels, entry.run, entry.measures, judged_only=entry.judged_only)
            except LegalirError as e:
                raise ConfigError(f"run {spec.name} ({spec.file}) against {entry.qrels_path}: {e}") from None
        return entry

    def warm(self) -> None:
        for entry in self.indexes.values():
            entry.warm()

    def close(self) -> None:
        """Stop the reload thread (joined) and close every index's snapshot."""
        self.stop_reloading()
        for entry in self.indexes.values():
            entry.close()

    # ---- live index updates
    def reload(self) -> list[str]:
        """Look at every watched index link once; serve the new version of those that changed
        (:meth:`IndexEntry.reload`). Returns the names of the indexes now serving a new version."""
        done = []
        for entry in self.indexes.values():
            try:
                if entry.reload():
                    done.append(entry.name)
            except Exception as e:  # pragma: no cover - reload() logs what it expects; anything else too
                _log.warning(f"index {entry.name}: looking for a new version failed: {e}")
        return done

    def start_reloading(self) -> bool:
        """Start the thread that calls :meth:`reload` every ``reload_interval`` seconds (a daemon; stopped
        and joined by :meth:`close`). Nothing is started with an interval of 0 or no versioned index.

        Returns
        -------
        bool
            Whether the thread runs.
        """
        if self.reload_interval <= 0 or not any(e.watched for e in self.indexes.values()):
            return False
        if self._reloader is None:
            self._stop.clear()
            self._reloader = threading.Thread(target=self._watch, name="legalir-reload", daemon=True)
            self._reloader.start()
        return True

    def stop_reloading(self) -> None:
        """Stop the reload thread and wait for it (a reload under way finishes first)."""
        thread, self._reloader = self._reloader, None
        if thread is not None:
            self._stop.set()
            thread.join()

    def _watch(self) -> None:
        try:
            while not self._stop.wait(self.reload_interval):
                self.reload()
        finally:  # the thread called Java (opening searchers): detach it, as pyjnius asks
            if "jnius" in sys.modules:
                with contextlib.suppress(Exception):
                    sys.modules["jnius"].detach()

    def reload_counts(self) -> dict[str, dict[str, int]]:
        """``{index: {"reloads": n, "failures": n}}`` of the watched indexes (``/metrics``)."""
        return {e.name: {"reloads": e.reloads, "failures": e.reload_failures}
                for e in self.indexes.values() if e.watched}

    # ---- lookups
    def index(self, name: str) -> IndexEntry:
        if name not in self.indexes:
            raise NotFound(f"no index named {name!r}; known: {', '.join(self.indexes) or 'none'}")
        return self.indexes[name]

    def collection(self, name: str) -> DocStore:
        if name not in self.collections:
            raise NotFound(f"no collection named {name!r}; known: {', '.join(self.collections) or 'none'}")
        return self.collections[name]

    def run(self, name: str) -> RunEntry:
        if name not in self.runs:
            raise NotFound(f"no run named {name!r}; known: {', '.join(self.runs) or 'none'}")
        return self.runs[name]

    def health(self) -> dict:
        """``{"status": "ok", "version"}``: nothing of what is served. ``/health`` answers without a key and
        whatever the ``Host`` header (load balancers probe it by address), so a page that rebinds its own
        name to the server must learn nothing from it; ``/indexes``, ``/collections`` and ``/runs`` list
        what is served, behind the checks."""

        return {"status": "ok", "version": __version__}

    def list_indexes(self) -> list[dict]:
        return [e.info() for e in self.indexes.values()]

    def index_versions(self) -> dict[str, dict[str, str]]:
        """``{index: {"bm25"|"dense": version}}`` served now: the N of a versioned build's ``INDEX.vN``
        folder, else "-"."""
        return {name: e.versions() for name, e in self.indexes.items()}

    def list_collections(self) -> list[dict]:
        return [c.info() for c in self.collections.values()]

    # ---- search
    @staticmethod
    def _check_query(q: Any, where: str) -> str:
        """The transport's own limit (a request's size); what a query must be is the core's rule."""
        if isinstance(q, str) and len(q) > MAX_QUERY_CHARS:
            raise BadRequest(f"{where}query of {len(q)} characters; at most {MAX_QUERY_CHARS}")
        return q

    @staticmethod
    def _check_k(k: Any) -> int:
        """The searcher core's one depth check, with serve's transport limit (k <= :data:`MAX_K`)."""
        return check_k(k, high=MAX_K)

    @staticmethod
    def _hit(hit: Hit, terms: list[str]) -> dict:
        out: dict[str, Any] = {"rank": hit.rank, "id": hit.docid, "score": hit.score}
        if hit.partition:
            out["partition"] = hit.partition
        if hit.text is not None:
            fields = hit.fields
            d = shown(hit.text, fields)  # describe()'s fields, reading only the citation and heading lines
            out.update(citation=d["citation"], heading_path=d["heading_path"], state=d["state"],
                       category=d["category"], snippet=snippet(d["body"], terms),
                       metadata={k: v for k, v in fields.items() if k[:1] != "_" and k not in ("id", "contents")})
        return out

    @classmethod
    def _hits(cls, hits: list[Hit], terms: list[str]) -> list[dict]:
        """The hits as answered; one whose text equals a better-ranked one's (whitespace and case aside,
        :func:`legalir.serve.display.duplicates`) gets ``duplicate_of``: that hit's rank (contracts repeat
        boilerplate clauses word for word; the page can collapse them)."""
        out = [cls._hit(h, terms) for h in hits]
        for h, same in zip(out, duplicates([h.text for h in hits])):
            if same is not None:
                h["duplicate_of"] = out[same]["rank"]
        return out

    def search_many(self, index: str, queries: list[tuple[str, str, str | None]], k: int = 10,
                    method: str | None = None, filter: str | None = None, citations: str | None = None,
                    as_of: str | None = None) -> list[dict]:
        """``queries``: (id, text, partition) triples; one result per query, in order, searched by the
        searcher core (:meth:`legalir.Searcher.search_many`) on one version of the index. ``filter``
        (``state=california,nevada;type=statute``), ``citations`` (``on``/``off``) and ``as_of`` (a release the
        index keeps: the code as it stood then) apply to every query."""
        entry = self.index(index)
        k = self._check_k(k)
        if citations not in (None, "", "on", "off"):
            raise BadRequest(f"citations must be on or off, got {citations!r}")
        for i, (qid, text, partition) in enumerate(queries):
            self._check_query(text, f"query {i} ({qid}): " if len(queries) > 1 else "")
        cites = {"on": True, "off": False}.get(citations or "")
        # one version for the whole request: routing, every partition, both legs of hybrid, the hits' display
        with entry.acquire() as snap:
            searcher = snap.searcher.at(as_of or None)
            method = searcher.pair.method(method or None, f"index {entry.name!r}")
            found = searcher.search_many([(text, partition or None) for _, text, partition in queries], k,
                                         method=method, filter=filter or None, citations=cites)
            out = []
            for (qid, text, partition), hits in zip(queries, found):
                terms = query_terms(text)
                out.append({"id": qid, "query": text, "index": index, "method": method,
                            **self._release_of(searcher),
                            "partition": filters.partition_key(partition) if partition else None,
                            "k": k, "terms": terms,
                            "hits": self._hits(hits, terms)})
        return out

    @staticmethod
    def _release_of(searcher: Any) -> dict:
        """``release`` (and its ``release_date`` where recorded) a searcher of a code's release searches."""
        if not searcher.release:
            return {}
        date = searcher.release_date
        return {"release": searcher.release, **({"release_date": date} if date else {})}

    def search(self, index: str, q: str, k: int = 10, method: str | None = None,
               partition: str | None = None, filter: str | None = None, citations: str | None = None,
               as_of: str | None = None) -> dict:
        out = self.search_many(index, [("q", q, partition)], k=k, method=method, filter=filter, citations=citations,
                               as_of=as_of)[0]
        if filter:
            out["filter"] = filter
        return out

    # ---- documents
    def document(self, collection: str, docid: str, q: str | None = None, as_of: str | None = None) -> dict:
        """Document ``docid`` of a served collection, as the indexes serving it hold it now.

        A document changed since an index was built (``legalir index update``: added, replaced or
        deleted) is read from that index's current version (:attr:`Snapshot.changed`), so an added
        document is found, a replaced one shows its new text and a deleted one is not found (404);
        any other comes from the collection. When two served indexes of the collection say different
        things about one document, the first of them by name that changed it decides. ``as_of``: the
        document as release ``as_of`` held it (the first index by name of the collection, searched
        as of that release: :meth:`legalir.Searcher.doc`).
        """
        store = self.collection(collection)
        rec, changed = None, False
        entries = sorted((e for e in self.indexes.values() if e.collection is store), key=lambda e: e.name)
        if as_of:
            if not entries:
                raise BadRequest(f"collection {collection!r} is served by no index: as_of needs one")
            with entries[0].acquire() as snap:
                past = snap.searcher.at(as_of)  # a release, or a date: the release dated on or before it
                rec, held = past.doc(docid), self._release_of(past)
            if rec is None:
                when = f"release {as_of!r}" if held.get("release") == str(as_of) else \
                    f"release {held.get('release')!r} (as of {as_of})"
                raise NotFound(f"collection {collection!r} had no document {docid!r} (by id or citation) in {when}")
            changed = True
        for entry in entries if not changed else ():
            with entry.acquire() as snap:
                if docid in snap.changed:
                    rec, changed = snap.record(docid), True
                    break
        if not changed:
            rec = store.get(docid)
        if rec is None:  # a citation as a lawyer writes it (O.C.G.A. § 8-2-1): the document it designates, in the
            # version served (a section `legalir index update` added included), else in the collection
            if entries:
                with entries[0].acquire() as snap:
                    found = [d for d in snap.docs.resolve(docid) if d != docid]
            else:
                found = [d for d in store.resolve(docid) if d != docid]
            if found:
                return self.document(collection, found[0], q)
        if rec is None:
            raise NotFound(f"collection {collection!r} has no document {docid!r} (by id or citation)")
        rec = dict(rec)
        d = describe(rec)
        partition = rec.pop("_partition", None) or None
        return {"collection": collection, "id": str(rec.get("id", docid)), "partition": partition,
                "contents": rec.get("contents", ""),
                "citation": d["citation"], "heading_path": d["heading_path"], "state": d["state"],
                "category": d["category"],
                "metadata": {k: v for k, v in d["fields"].items() if not k.startswith("_") and k != filters.FIELD},
                "terms": query_terms(q) if q else [], **({"as_of": str(as_of), **held} if as_of else {})}

    # ---- a section across releases
    def history(self, index: str, ref: str, partition: str | None = None) -> dict:
        """Section ``ref`` (an id or a citation) in each release index ``index`` keeps, oldest first
        (:meth:`legalir.Searcher.history`, on one version of the index): ``{"index", "id", "releases": [...]}``."""
        entry = self.index(index)
        with entry.acquire() as snap:
            entries = snap.searcher.history(ref, partition or None)
        return {"index": index, "id": ref, "collection": entry.collection.name if entry.collection else None,
                "releases": entries}

    # ---- runs
    def list_runs(self) -> list[dict]:
        return [r.info() for r in self.runs.values()]

    def _per_topic(self, entry: RunEntry, qid: str) -> dict | None:
        if entry.evaluation is None:
            return None
        return entry.evaluation["per_topic"].get(qid)

    def run_topics(self, name: str) -> dict:
        entry = self.run(name)
        qids = sorted(entry.run)  # the run's topics (info() counts the qrels topics it lacks)
        topics = []
        for qid in qids:
            t = entry.topics.get(qid) if entry.topics else None
            fields = dict(t.fields) if t else {}
            topics.append({"qid": qid, "text": t.text if t else None, "category": fields.get("category"),
                           "state": fields.get("state"), "retrieved": len(entry.run.get(qid, {})),
                           "relevant": sum(1 for r in (entry.qrels or {}).get(qid, {}).values() if r > 0),
                           "measures": self._per_topic(entry, qid)})
        return {**entry.info(), "topic_list": topics}

    def run_topic(self, name: str, qid: str, compare: str | None = None, k: int = 20) -> dict:
        entry = self.run(name)
        other = self.run(compare) if compare else None
        k = self._check_k(k)
        if qid not in entry.run and qid not in (entry.qrels or {}):
            raise NotFound(f"run {name!r} has no topic {qid!r} (GET /runs/{name}/topics lists them)")
        labels = (entry.qrels or {}).get(qid, {})
        ranking = trec.ranking(entry.run.get(qid, {}))
        rank_of = {d: r for r, (d, _) in enumerate(ranking, 1)}
        # judged-only scoring sees only judged documents: their ranks among themselves
        judged_rank = {d: r for r, d in enumerate((d for d, _ in ranking if is_judged(d, labels)), 1)}
        other_rank = {d: r for r, (d, _) in enumerate(trec.ranking(other.run.get(qid, {})), 1)} if other else {}
        t = entry.topics.get(qid) if entry.topics else None
        store = entry.collection

        def doc_fields(docid: str) -> dict:
            rec = store.get(docid) if store else None
            if rec is None:
                return {}
            d = describe(rec)
            return {"citation": d["citation"], "heading_path": d["heading_path"],
                    "snippet": snippet(d["body"], query_terms(t.text) if t else [], 25)}

        hits = []
        for r, (docid, score) in enumerate(ranking[:k], 1):
            hits.append({"rank": r, "id": docid, "score": score, "label": labels.get(docid),
                         "judged": is_judged(docid, labels), "judged_rank": judged_rank.get(docid), **({"other_rank": other_rank.get(docid)} if other else {}),
                         **doc_fields(docid)})
        gold = sorted(((d, r) for d, r in labels.items() if r > 0), key=lambda dr: (-dr[1], dr[0]))
        gold_out = [{"id": d, "label": r, "rank": rank_of.get(d), "judged_rank": judged_rank.get(d),
                     **({"other_rank": other_rank.get(d)} if other else {}), **doc_fields(d)} for d, r in gold]
        out = {"run": name, "qid": qid, "in_run": qid in entry.run, "has_qrels": qid in (entry.qrels or {}),
               "text": t.text if t else None, "fields": dict(t.fields) if t else {},
               "collection": store.name if store else None, "judged_only": entry.judged_only,
               "retrieved": len(ranking), "k": k, "measures": self._per_topic(entry, qid),
               "terms": query_terms(t.text) if t else [], "hits": hits, "gold": gold_out}
        if other:
            out["compare"] = {"run": other.name, "retrieved": len(other_rank), "in_run": qid in other.run,
                              "measures": self._per_topic(other, qid)}
        return out

    # ---- scoring and fusion (the MCP tools evaluate and fuse)
    def qrels_named(self, name: str) -> trec.Qrels:
        """The served qrels called ``name`` (read once)."""
        if name not in self.qrels_files:
            raise NotFound(f"no qrels named {name!r}; known: {', '.join(self.qrels_files) or 'none (start with --qrels)'}")
        with self._qrels_lock:
            if name not in self._qrels:
                served = next((r.qrels for r in self.runs.values() if r.qrels_name == name and r.qrels), None)
                self._qrels[name] = served if served is not None else trec.read_qrels(self.qrels_files[name])
            return self._qrels[name]

    def _a_run(self, name: str | None, text: str | None, where: str = "") -> tuple[str, trec.Run, RunEntry | None]:
        """(label, run, served entry or None) of a served run's name or a run's TREC text."""
        if (name is None) == (text is None):
            raise BadRequest(f"{where}give either the name of a served run or the run itself as TREC lines "
                             f"(qid Q0 docid rank score tag), not {'both' if name else 'neither'}")
        if name is not None:
            entry = self.run(checks.text(f"{where}run", name))
            return name, entry.run, entry

        checks.text(f"{where}run_text", text)
        if len(text) > MAX_INLINE_RUN_CHARS:
            raise BadRequest(f"{where}inline run of {len(text):,} characters; at most {MAX_INLINE_RUN_CHARS:,} "
                             f"(serve a large run with --run NAME=FILE and give its name)")
        data = text.encode("utf-8")
        if runformats.sniff_bytes(data, INLINE) == "crumb":  # every run format legalir reads
            return INLINE, runformats.read_crumb_run(INLINE, data=data), None
        return INLINE, trec.read_run(INLINE, data=data), None

    def _scoring(self, entries: list[RunEntry | None], qrels: str | None, measures: list[str] | None,
                 judged_only: bool | None) -> tuple[str | None, list[str], bool]:
        """The qrels name, measures and protocol to score with: as asked, else the served runs' own."""

        served = [e for e in entries if e is not None]
        if judged_only is not None:
            judged_only = checks.boolean("judged_only", judged_only)
        if qrels is not None:
            qrels = checks.text("qrels", qrels)
        if qrels is None:
            names = {e.qrels_name for e in served if e.qrels_name}
            if len(names) == 1:
                qrels = names.pop()
            elif len(self.qrels_files) == 1:
                qrels = next(iter(self.qrels_files))
        if qrels is not None:
            self.qrels_named(qrels)  # a 404 for an unknown name
        same = [e for e in self.runs.values() if qrels is not None and e.qrels_name == qrels]
        if judged_only is None:
            judged_only = bool(same and same[0].judged_only)
        if measures is None:
            measures = same[0].measures if same else None
        from legalir.scoring import core

        return qrels, core.measure_requests(measures), judged_only

    def evaluate(self, run: str | None = None, run_text: str | None = None, qrels: str | None = None,
                 measures: list[str] | None = None, judged_only: bool | None = None,
                 per_topic: bool = False) -> dict:
        """Score a served run (by name) or an inline TREC or CRUMB JSONL run against served qrels
        (:func:`legalir.evaluate`: POST /runs/evaluate and the MCP evaluate tool)."""
        per_topic = checks.boolean("per_topic", per_topic)
        label, data, entry = self._a_run(run, run_text)
        qname, measures, judged_only = self._scoring([entry], qrels, measures, judged_only)
        if qname is None:
            known = ", ".join(self.qrels_files) or "none (start the server with --qrels)"
            raise BadRequest(f"which qrels? give qrels=, one of: {known}")
        scores = api.evaluate(self.qrels_named(qname), data, measures, judged_only=judged_only, per_topic=True)
        out = {"run": label, "qrels": qname, "judged_only": judged_only, "measures": measures,
               "topics": len(scores["per_topic"]), "all": scores["all"]}
        if per_topic:
            out["per_topic"] = scores["per_topic"]
        return out

    def fuse(self, runs: list[str] | None = None, run_texts: list[str] | None = None, method: str = "rrf",
             weights: list[float] | None = None, rrf_k: float | None = None, norm: str = "minmax",
             depth: int | None = None, qrels: str | None = None, measures: list[str] | None = None,
             judged_only: bool | None = None, topics: list[str] | None = None, k: int = 10) -> dict:
        """Fuse runs (:func:`legalir.search.fusion.fuse`); the fused run's top ``k`` for ``topics`` and, with
        qrels, its scores beside each input's."""

        items = [self._a_run(n, None, f"run {n!r}: ") for n in runs or []]
        items += [self._a_run(None, t, f"run_texts[{i}]: ") for i, t in enumerate(run_texts or [])]
        if len(items) < 2:
            raise BadRequest(f"fusion needs at least two runs, got {len(items)}")
        k = self._check_k(k)
        fused = fusion.fuse([r for _, r, _ in items], method=method, weights=weights,
                            k=fusion.DEFAULT_RRF_K if rrf_k is None else rrf_k, norm=norm, depth=depth)
        qids = sorted(fused)
        wanted = list(topics) if topics else qids[:5]
        missing = [q for q in wanted if q not in fused]
        if missing:
            raise NotFound(f"no fused topic {', '.join(map(repr, missing[:5]))}; the runs have: "
                           f"{', '.join(qids[:10])}{' ...' if len(qids) > 10 else ''}")
        out: dict[str, Any] = {
            "method": method, "runs": [label if label != INLINE else f"run_texts[{i - len(runs or [])}]"
                                       for i, (label, _, _) in enumerate(items)],
            "topics": len(fused),
            "rankings": {q: [{"rank": r, "id": d, "score": s} for r, (d, s) in enumerate(trec.ranking(fused[q])[:k], 1)]
                         for q in wanted}}
        qname, measures, judged_only = self._scoring([e for _, _, e in items], qrels, measures, judged_only)
        if qname is not None:
            qr = self.qrels_named(qname)
            out["scores"] = {"qrels": qname, "judged_only": judged_only, "measures": measures,
                             "fused": api.evaluate(qr, fused, measures, judged_only=judged_only),
                             "inputs": {name: api.evaluate(qr, r, measures, judged_only=judged_only)
                                        for name, (_, r, _) in zip(out["runs"], items)}}
        return out


INLINE = "(inline run)"


# ------------------------------------------------------------------ what each operation takes
def _table() -> dict[str, dict[str, checks.Param]]:
    P, opt = checks.Param, checks.optional
    text, blank_text = opt(checks.text), opt(checks.text, blank=True)
    release = opt(checks.identifier, blank=True)

    def k(name: str, value: Any) -> int:
        return check_k(value, name, high=MAX_K, text=True)

    def on_off(name: str, value: Any) -> str | None:
        return checks.choice(name, value, ("on", "off"))

    def measures(name: str, value: Any) -> list[str]:
        from legalir.scoring import core

        return core.measure_requests(value)

    def texts(name: str, value: Any) -> list[str]:
        return checks.listed(name, value, checks.text)

    search = {"query": P(checks.text, required=True, aliases=("q",)), "index": P(blank_text), "k": P(k),
              "method": P(opt(lambda n, v: checks.choice(n, v, METHODS), blank=True)), "partition": P(blank_text),
              "filter": P(blank_text), "citations": P(opt(on_off, blank=True)), "as_of": P(release)}
    return {
        # the MCP tools and the HTTP endpoints that do the same (list_indexes: GET /indexes, search: GET /search,
        # get_document: GET /doc/{collection}/{id}, history: GET /history, evaluate: POST /runs/evaluate)
        "list_indexes": {},
        "search": search,
        "get_document": {"id": P(checks.identifier, required=True), "collection": P(blank_text),
                         "as_of": P(release), "q": P(blank_text)},
        "history": {"id": P(checks.identifier, required=True), "index": P(blank_text), "partition": P(blank_text)},
        "evaluate": {"run": P(text), "run_text": P(text), "qrels": P(text), "measures": P(opt(measures)),
                     "judged_only": P(opt(checks.boolean)), "per_topic": P(checks.boolean)},
        "fuse": {"runs": P(opt(texts)), "run_texts": P(opt(texts)),
                 "method": P(lambda n, v: checks.choice(n, v, fusion.METHODS)),
                 "weights": P(opt(lambda n, v: checks.listed(n, v, checks.number))),
                 "rrf_k": P(opt(checks.number)), "norm": P(lambda n, v: checks.choice(n, v, fusion.NORMS)),
                 "depth": P(opt(lambda n, v: checks.integer_or_text(n, v, 1))), "qrels": P(text),
                 "measures": P(opt(measures)),
                 "topics": P(opt(lambda n, v: checks.listed(n, v, checks.identifier))), "k": P(k)},
        # HTTP only
        "search_batch": {"queries": P(_batch, required=True),
                         **{name: p for name, p in search.items() if name not in ("query", "partition")}},
        "list_collections": {}, "list_runs": {}, "run_topics": {"run": P(checks.text, required=True)},
        "run_topic": {"run": P(checks.text, required=True), "qid": P(checks.identifier, required=True),
                      "compare": P(blank_text), "k": P(k)},
        "health": {}, "metrics": {},
    }


def _batch(name: str, value: Any) -> list[dict]:
    if isinstance(value, (list, tuple)) and not value:
        raise ApiError(f"no {name}: give at least one ({{\"q\": ...}})")
    if isinstance(value, (list, tuple)) and len(value) > MAX_BATCH:
        raise ApiError(f"{len(value)} {name} in one batch; at most {MAX_BATCH}")
    return checks.listed(name, value, _batch_query)


def _batch_query(name: str, value: Any) -> dict:
    return checks.arguments(name, value, {"query": checks.Param(checks.text, required=True, aliases=("q",)),
                                          "id": checks.Param(checks.optional(checks.identifier)),
                                          "partition": checks.Param(checks.optional(checks.text, blank=True))},
                            prefix=f"{name}.")


#: operation -> its arguments, each with its check (:class:`legalir.base.checks.Param`): the one table the faces
#: check a call against before anything runs (:func:`arguments`), so the MCP tools and the HTTP endpoints
#: refuse an unknown, doubled, missing or mistyped argument alike, in the same words
ARGUMENTS: dict[str, dict[str, checks.Param]] = _table()


def arguments(operation: str, given: Any) -> dict[str, Any]:
    """``given`` checked against ``ARGUMENTS[operation]`` (:func:`legalir.base.checks.arguments`): the
    arguments under their own names, checked, or an :class:`~legalir.errors.ApiError` (400 over HTTP, a tool
    error over MCP) naming what is wrong."""
    return checks.arguments(operation, given, ARGUMENTS[operation])


def build(cfg: Config, **kwargs: Any) -> Engine:
    """An :class:`Engine` for ``cfg``, with its searchers loaded (what the first request would wait for)."""
    engine = Engine(cfg, **kwargs)
    if not kwargs.get("quiet"):
        for e in engine.indexes.values():
            _log.info(f"serve: index {e.name}: {', '.join(e.methods)}"
                      + (f", {len(e.partitions)} partitions" if e.partitioned else "")
                      + (f", documents from {e.collection.root}" if e.collection else ", no collection (ids only)"))
        for r in engine.runs.values():
            _log.info(f"serve: run {r.name}: {len(r.run)} topics"
                      + (f", scored against {r.qrels_path}" if r.qrels_path else ", no qrels"))
    engine.warm()
    return engine
