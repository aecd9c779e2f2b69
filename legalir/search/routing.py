"""Partition routing, once for every face: which index each topic is searched in.

An index with one index per partition (Housing's states; ``legalir index``, ``legalir index-dense``) sends
each topic to its own partition's index: ``partition=`` names it for every topic, else the topic's own
partition field does (a Benchmark's topics, a topics file's ``state`` key, a frame's ``state`` column),
matched through :func:`legalir.legal.filters.partition_key` (``New York`` = ``new_york``). A partition the index
does not hold is an :class:`~legalir.search.arguments.UnknownPartition` listing the known ones (404 over HTTP,
exit 2 on the command line). A pooled index (``legalir index --pooled``) has no sub-indexes: ``partition=``
becomes a filter on the partition field, AND-ed with any ``filter=``.

:class:`Router` is the one router; :class:`legalir.Searcher` holds one (``Searcher.route``).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from legalir.base import checks
from legalir.indexing import IndexPair
from legalir.legal import filters
from legalir.legal.filters import FilterError, partition_key
from legalir.search.arguments import SearcherError, UnknownPartition
from legalir.trec import Topic


def key_of(partition: str | None) -> str | None:
    """A partition as the key its index folder is named by (``New York`` -> ``new_york``), or None; a value
    no key can be made of is a :class:`SearcherError`."""
    partition = checks.optional_text("partition", partition)
    if partition is None:
        return None
    try:
        return partition_key(partition)
    except FilterError as e:
        raise SearcherError(str(e)) from None


@dataclass(frozen=True)
class Router:
    """Where the topics of one searcher go.

    Attributes
    ----------
    pair : legalir.indexing.IndexPair
        The index versions held, with their partitions.
    partition_field : str or None
        The topic field naming each topic's partition.
    pooled : bool
        One Lucene index over every partition (``legalir index --pooled``).
    """

    pair: IndexPair
    partition_field: str | None
    pooled: bool

    def route(self, topics: Mapping[str, Topic], partition: str | None, method: str) -> dict[str, dict[str, Topic]]:
        """``{partition key: topics}``: where each topic is searched ('' for an index that is not partitioned).

        On a pooled index, ``partition`` becomes a filter on the partition field (and the topics'
        partition field, which the citation hint reads)."""
        partition = checks.optional_text("partition", partition)
        if not self.pair.sparse_parts and not self.pair.dense_parts:
            if partition is None:
                return {"": dict(topics)}
            if not self.pooled:
                raise SearcherError(f"this index is not partitioned: leave out partition (got {partition!r}), "
                                    f"or give filter=")
            field_ = str(self.partition_field)
            out = {}
            for q, t in topics.items():
                # a clause of its own, AND-ed with filter= (legalir.legal.filters: a repeated field is AND-ed)
                flt = filters.combine(t.fields.get("_filter"), [(field_, (partition,))])
                out[q] = Topic(q, t.text, {**t.fields, field_: partition, "_filter": flt})
            return {"": out}
        have = {"bm25": self.pair.sparse_parts, "dense": self.pair.dense_parts,
                "hybrid": sorted(set(self.pair.sparse_parts) & set(self.pair.dense_parts))}[method]
        groups: dict[str, dict[str, Topic]] = {}
        missing = []
        for q, t in topics.items():
            value = partition if partition is not None else t.fields.get(self.partition_field or "")
            if value in (None, ""):
                missing.append(q)
                continue
            try:
                key: str | None = partition_key(value)
            except FilterError:
                key = None
            if key is None or key not in have:
                where = f"topic {q!r}: " if partition is None else ""
                raise UnknownPartition(f"{where}this index has no {self.partition_field or 'partition'} {value!r} "
                                       f"for {method}; known: {', '.join(have)}")
            if partition is not None:
                t = Topic(q, t.text, {**t.fields, str(self.partition_field): partition})
            groups.setdefault(key, {})[q] = t
        if missing:
            known = ", ".join(self.pair.partitions[:5]) + (" ..." if len(self.pair.partitions) > 5 else "")
            raise SearcherError(f"this index holds one index per {self.partition_field or 'partition'} ({known}): "
                                f"give partition=, or topics whose {self.partition_field!r} field names it "
                                f"(e.g. a Benchmark's); missing for: {', '.join(missing[:5])}")
        return groups
