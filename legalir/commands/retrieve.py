"""Runs from indexes: BM25 and dense search, candidate pools, fusion, tuning, MaxP, run formats."""
from __future__ import annotations

import click

from legalir.commands.options import (
    DEPTH,
    encoder_options,
    encoder_overrides,
    force_option,
    fusion_options,
    tag,
    unescape,
)

#: a topics file or a run: ``-`` reads standard input, whole
STREAM = click.Path(exists=True, dir_okay=False, allow_dash=True)


@click.command()
@click.argument("index_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("topics", type=STREAM)
@click.argument("run", type=click.Path(dir_okay=False))
@click.option("-k", "--depth", "k", default=1000, show_default=True, type=DEPTH, help="Documents retrieved per topic.")
@click.option("--k1", type=click.FloatRange(min=0), default=None, help="BM25 k1 [default: the tuned value of the dataset the index was built from, else Pyserini's 0.9].")
@click.option("--b", type=click.FloatRange(0, 1), default=None, help="BM25 b [default: the tuned value of the dataset the index was built from, else Pyserini's 0.4].")
@click.option("--rm3", is_flag=True,
              help="Add RM3 pseudo-relevance feedback: expand each query with terms of its top --fb-docs "
                   "documents (needs the document vectors that `legalir index` stores).")
@click.option("--fb-terms", default=10, show_default=True, type=click.IntRange(min=1), help="RM3 feedback terms.")
@click.option("--fb-docs", default=10, show_default=True, type=click.IntRange(min=1), help="RM3 feedback documents.")
@click.option("--original-query-weight", default=0.5, show_default=True, type=click.FloatRange(0, 1),
              help="RM3 weight of the original query (the rest goes to the feedback terms).")
@click.option("--partition-field", default=None,
              help="Topic field naming each topic's partition; INDEX_DIR then holds one index per partition "
                   "[default: detected from INDEX_DIR].")
@click.option("--threads", default=2, show_default=True, type=click.IntRange(min=1), help="Search threads.")
@click.option("--filter", "filter_specs", multiple=True, metavar="FIELD=VALUE[,VALUE]",
              help="Search only documents whose FIELD has one of the VALUEs (repeatable; clauses AND-ed, a "
                   "repeated FIELD included), e.g. --filter state=california,nevada; LOW..HIGH, LOW.. or ..HIGH "
                   "is a range over an integer, float or date (YYYY-MM-DD) field, e.g. --filter year=2000.. "
                   "(Lucene FILTER clauses: k hits come back whenever k documents match; an unknown FIELD is an "
                   "error listing the index's fields).")
@click.option("--filter-by", "filter_by", multiple=True, metavar="FIELD",
              help="Filter each topic by its own FIELD value (repeatable), e.g. --filter-by state [default: a "
                   "pooled index filters by its collection's partition field; 'none': no such filter].")
@click.option("--citations", "citations", type=click.Choice(["on", "off", "auto"]), default="auto", show_default=True,
              help="Rank the document that IS an authority a query cites first and documents citing it next "
                   "(auto: on where the index has the citations field).")
@click.option("--as-of", "as_of", default=None, metavar="RELEASE|DATE",
              help="Search the code as it stood in RELEASE (e.g. 85), or on DATE (YYYY-MM-DD: the newest release "
                   "dated on or before it, as the publisher dates its releases): the version of INDEX_DIR that holds "
                   "it, with that release's documents and BM25 statistics (an index built from a release, updated "
                   "with `legalir index update --to`, keeps the newest version of each release) [default: the "
                   "current].")
@tag("bm25")
@force_option("run")
def search(index_dir, topics, run, k, k1, b, rm3, fb_terms, fb_docs, original_query_weight, partition_field,
           threads, filter_specs, filter_by, citations, as_of, tag):
    """BM25 search of TOPICS (.tsv or .jsonl; - reads standard input) over INDEX_DIR, written to RUN in TREC format."""
    from legalir.api import Searcher
    from legalir.legal import filters
    from legalir.search import bm25
    from legalir.search.runner import search_to_run

    rm3_cfg = bm25.RM3(fb_terms, fb_docs, original_query_weight) if rm3 else None
    flt = filters.parse(list(filter_specs), "--filter")
    search_to_run(lambda: Searcher(index_dir, k1=k1, b=b, rm3=rm3_cfg, threads=threads, partition_field=partition_field,
                                   filter_by=filter_by_option(filter_by)).retriever(
                      method="bm25", filter=flt or None, citations=citations_option(citations), as_of=as_of), topics,
                  run, k=k, tag=tag)


@click.command("history")
@click.argument("index_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("section")
@click.option("--partition", default=None, help="Partition of a partitioned index.")
@click.option("--json", "as_json", is_flag=True, help="Print the entries as JSON (what legalir.Searcher.history, "
                                                      "GET /history and the MCP history tool give).")
def history(index_dir, section, partition, as_json):
    """A section's history across the releases INDEX_DIR keeps: SECTION (an id, or a citation such as
    'O.C.G.A. § 8-2-1') in each release, oldest first, with the release's date, the section's status ('absent'
    where that release lacks it), the SHA-256 of its text and whether the text changed from the release before."""
    import json

    from legalir.api import Searcher

    with Searcher(index_dir) as s:
        entries = s.history(section, partition)
    if as_json:
        click.echo(json.dumps(entries, ensure_ascii=False, indent=1))
        return
    for e in entries:
        changed = {None: "", True: "changed", False: "same"}[e["changed"]]
        click.echo("\t".join([e["release"] or "-", e["date"] or "-", e["status"] or "-", e["id"] or "-",
                              (e["sha256"] or "-")[:12], changed]))


def filter_by_option(values) -> list[str] | None:
    """``--filter-by``: ``None`` when not given (the index's default), ``[]`` for ``none``."""
    if not values:
        return None
    return [v for v in values if v.lower() != "none"]


def citations_option(value: str) -> bool | None:
    return {"on": True, "off": False}.get(value)


@click.command("rank-pool")
@click.argument("topics", type=STREAM)
@click.argument("run", type=click.Path(dir_okay=False))
@click.option("--ranker", type=click.Choice(["bm25", "tfidf"]), default="bm25", show_default=True,
              help="bm25: Lucene BM25 from --index; tfidf: TF-IDF cosine fit on --collection.")
@click.option("--index", "index_dir", type=click.Path(exists=True, file_okay=False),
              help="Lucene index of the collection (for --ranker bm25).")
@click.option("--collection", type=click.Path(exists=True, file_okay=False),
              help="Collection folder (for --ranker tfidf).")
@click.option("--k1", type=click.FloatRange(min=0), default=None, help="BM25 k1 [default: the tuned value of the dataset the index was built from, else Pyserini's 0.9].")
@click.option("--b", type=click.FloatRange(0, 1), default=None, help="BM25 b [default: the tuned value of the dataset the index was built from, else Pyserini's 0.4].")
@tag(None, "Run tag (last column) [default: the ranker's name]")
@force_option("run")
def rank_pool(topics, run, ranker, index_dir, collection, k1, b, tag):
    """Rank each topic's own candidates (its `candidates` field, e.g. SCALR's five holdings) into RUN."""
    from legalir.search import pool

    pool.rank_file(topics, run, ranker, index_dir=index_dir, collection=collection, k1=k1, b=b, tag=tag)


@click.command()
@click.argument("collection", type=click.Path(exists=True, file_okay=False))
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.option("--encoder", "model", required=True,
              help="Model folder, 'minilm' (the bundled all-MiniLM-L6-v2) or a Hugging Face model name.")
@click.option("--revision", default=None, help="Hub revision (branch, tag or commit) of a named model.")
@encoder_options
@click.option("--doc-text", default=None,
              help="What each document's text is, from its record's fields, e.g. '{citation} {title}\\n"
                   "{heading_path}\\n{contents}' [default: the model's own (a `legalir train-dense` model "
                   "declares the text it was trained on), else {contents}].")
@click.option("--batch-size", default=32, show_default=True, type=click.IntRange(min=1),
              help="Documents per forward pass (queries are encoded one at a time, whatever the face).")
@click.option("--shard-size", default=100_000, show_default=True, type=click.IntRange(min=1),
              help="Documents per shard (unit of resuming).")
@click.option("--partition", "partitions", multiple=True, help="Encode only these partitions (repeatable).")
@click.option("--overwrite", is_flag=True,
              help="Encode afresh into OUT_DIR.new (resumable) and replace OUT_DIR only once complete, all the "
                   "same when it holds files legalir did not write there or that changed since (named, and logged "
                   "as replaced).")
@click.option("--stop-after-shards", type=click.IntRange(min=1), default=None,
              help="Stop after writing this many new shards (split a long job; run again to resume).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--ray", "ray_address", default=None, metavar="auto|ADDRESS",
              help="Spread the shards over Ray workers (pip install 'legalir[distributed]'): 'auto' for a running "
                   "cluster (RAY_ADDRESS, `ray start`) else a new local one, or a cluster address such as "
                   "10.0.0.1:6379. Writes the same folder as without --ray; resumes the same way.")
@click.option("--ray-workers", type=click.IntRange(min=1), default=None,
              help="Ray workers (actors) to start [default: one per GPU of the cluster, else one per CPU].")
def encode(collection, out_dir, model, revision, pooling, max_length, query_format, doc_format, instruction,
           normalize, dtype, backend, device, trust_remote_code, doc_text, batch_size, shard_size, partitions, overwrite,
           stop_after_shards, quiet, ray_address, ray_workers):
    """Encode COLLECTION's documents into OUT_DIR (resumable .npy shards, one folder per partition)."""
    from legalir.indexing import distributed, encoders

    overrides = encoder_overrides(pooling, max_length, query_format, doc_format, instruction, normalize, dtype,
                                  backend, trust_remote_code)
    overrides["doc_text"] = unescape(doc_text)
    enc = (distributed.RayEncoder.load(model, revision=revision, device=device, address=ray_address,
                                       workers=ray_workers, **overrides) if ray_address
           else encoders.Encoder.load(model, revision=revision, device=device, **overrides))
    results = encoders.encode_collection(enc, collection, out_dir, partitions=list(partitions) or None, quiet=quiet,
                                         shard_size=shard_size, batch_size=batch_size, overwrite=overwrite,
                                         stop_after_shards=stop_after_shards)
    if ray_address:
        click.echo(enc.summary(), err=True)
    done = all(r.complete for r in results.values())
    click.echo(f"{out_dir}: {sum(r.documents for r in results.values())} documents in {len(results)} folder(s), "
               f"{'complete' if done else 'NOT complete: run the same command again to resume'}", err=True)


@click.command("index-dense")
@click.argument("embeddings", type=click.Path(exists=True, file_okay=False))
@click.argument("index_dir", type=click.Path(file_okay=False))
@click.option("--type", "kind", type=click.Choice(["flat", "hnsw", "ivfpq"]), default="flat", show_default=True,
              help="flat: exact inner product; hnsw: graph; ivfpq: inverted lists + product quantisation.")
@click.option("--hnsw-m", default=32, show_default=True, type=click.IntRange(min=2), help="HNSW neighbours per node.")
@click.option("--ef-construction", default=200, show_default=True, type=click.IntRange(min=1),
              help="HNSW build-time search width.")
@click.option("--nlist", type=click.IntRange(min=1), default=None, help="IVF lists [default: about 4*sqrt(documents)].")
@click.option("--pq-m", type=click.IntRange(min=1), default=None,
              help="PQ sub-vectors (must divide the dimension) [default: dim/4].")
@click.option("--pq-bits", default=8, show_default=True, type=click.IntRange(1, 16), help="Bits per PQ code.")
@click.option("--collection", type=click.Path(exists=True, file_okay=False), default=None,
              help="Check the embeddings' document ids against this collection [default: the one encoded].")
@click.option("--partition", "partitions", multiple=True, help="Build only these partitions (repeatable).")
@click.option("--threads", type=click.IntRange(min=1), default=None, help="FAISS threads [default: all cores].")
@click.option("--overwrite", is_flag=True,
              help="Replace INDEX_DIR all the same when it holds files legalir did not write there or that "
                   "changed since (named, and logged as replaced), a legalir output of another kind, or changes "
                   "from `legalir index update` (dropped: they are not in the collection); a folder that is no "
                   "legalir output is never replaced.")
@click.option("--shard-size", type=click.IntRange(min=1), default=None,
              help="Write the index as FAISS shards of at most this many vectors, built and searched one at a time "
                   "with an exact merge of the top k (an index larger than memory or GPU memory) [default: one index].")
def index_dense(embeddings, index_dir, kind, hnsw_m, ef_construction, nlist, pq_m, pq_bits, collection, partitions,
                threads, overwrite, shard_size):
    """Build FAISS index(es) in INDEX_DIR from EMBEDDINGS written by `legalir encode`."""
    from legalir.indexing import dense

    spec = dense.IndexSpec(type=kind, hnsw_m=hnsw_m, ef_construction=ef_construction, nlist=nlist, pq_m=pq_m,
                           pq_bits=pq_bits)
    counts = dense.build(embeddings, index_dir, spec, collection_dir=collection,
                         partitions=list(partitions) or None, threads=threads, overwrite=overwrite,
                         shard_size=shard_size)
    click.echo(f"{index_dir}: {sum(counts.values())} vectors in {len(counts)} index(es)", err=True)


@click.command("search-dense")
@click.argument("index_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("topics", type=STREAM)
@click.argument("run", type=click.Path(dir_okay=False))
@click.option("-k", "--depth", "k", default=1000, show_default=True, type=DEPTH, help="Documents retrieved per topic.")
@click.option("--encoder", "model", default=None,
              help="Where the index's encoder is now, if moved [default: the path recorded in the index].")
@encoder_options
@click.option("--gpu/--cpu", "gpu", default=None, help="Search on the GPU [default: when FAISS sees one].")
@click.option("--ef-search", type=click.IntRange(min=1), default=None, help="HNSW search width.")
@click.option("--nprobe", type=click.IntRange(min=1), default=None, help="IVF lists visited per query.")
@click.option("--partition-field", default=None,
              help="Topic field naming each topic's partition [default: recorded in the index].")
@click.option("--partition", default=None,
              help="Search every topic in this partition of a per-partition index (an unknown one: exit 2, "
                   "listing the known ones) [default: each topic's own --partition-field].")
@click.option("--filter", "filter_specs", multiple=True, metavar="FIELD=VALUE[,VALUE]",
              help="As `legalir search --filter`; dense search refuses it (a FAISS index has no filter "
                   "clauses: use --partition, or BM25).")
@click.option("--as-of", "as_of", default=None, metavar="RELEASE|DATE",
              help="As `legalir search --as-of`: the version of INDEX_DIR that holds RELEASE, or the newest "
                   "release dated on or before DATE (YYYY-MM-DD) [default: the current].")
@click.option("--threads", type=click.IntRange(min=1), default=None, help="FAISS threads [default: all cores].")
@tag("dense")
@force_option("run")
def search_dense(index_dir, topics, run, k, model, pooling, max_length, query_format, doc_format, instruction,
                 normalize, dtype, backend, device, trust_remote_code, gpu, ef_search, nprobe,
                 partition_field, partition, filter_specs, as_of, threads, tag):
    """Dense search of TOPICS (.tsv or .jsonl; - reads standard input) over INDEX_DIR (FAISS), written to RUN in
    TREC format: legalir.Searcher's dense search, as `legalir search` is its BM25."""
    from legalir.api import Searcher
    from legalir.legal import filters
    from legalir.search import vector
    from legalir.search.arguments import DenseOptions
    from legalir.search.runner import search_to_run

    overrides = encoder_overrides(pooling, max_length, query_format, doc_format, None, normalize, dtype, backend,
                                  trust_remote_code)
    flt = filters.parse(list(filter_specs), "--filter")
    # one shard in memory at a time: a run file's topics are searched once
    options = DenseOptions(instruction=instruction, gpu=gpu, ef_search=ef_search, nprobe=nprobe,
                                 threads=threads, resident=False)

    def make():
        enc = vector.load_encoder(index_dir, model=model, device=device, **overrides)
        return Searcher(index_dir, encoder=enc, device=device, partition_field=partition_field,
                        dense_options=options).retriever(method="dense", partition=partition, filter=flt or None,
                                                         as_of=as_of)

    search_to_run(make, topics, run, k=k, tag=tag)


@click.command()
@click.argument("runs", nargs=-1, required=True, type=STREAM)
@click.option("-o", "--out", "out", required=True, type=click.Path(dir_okay=False), help="Fused run to write.")
@click.option("--params", "params_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Use the best settings of a `legalir tune-fusion` result (options given here override them).")
@fusion_options
@click.option("-k", "--keep", "keep", default=1000, show_default=True, type=DEPTH, help="Documents written per topic.")
@tag("fused")
@force_option("out")
def fuse(runs, out, params_file, method, weights, rrf_k, norm, depth, keep, tag):
    """Fuse TREC RUNS, such as BM25 and dense runs, into one: RRF or linear fusion of normalised scores.

    One of RUNS may be - (standard input)."""
    from legalir.search import fusion

    params = fusion.params(params_file, method=method, weights=weights, rrf_k=rrf_k, norm=norm)
    n, topics = fusion.fuse_files(runs, out, params, depth=depth, keep=keep, tag=tag)
    shown = ", ".join(f"{k}={v}" for k, v in params.items())
    click.echo(f"{out}: {n} lines for {topics} topics ({shown})", err=True)


_TUNE_TOPICS = click.option("--topics", "topic_sets", multiple=True, required=True,
                            help="Topic set(s) to tune on, e.g. --topics train --topics valid. Test sets are refused.")
_MEASURE = click.option("--measure", default="ndcg_cut_10", show_default=True,
                        help="Measure to maximise: one value, as trec_eval prints it (ndcg_cut_10) or as -m "
                             "takes it (ndcg_cut.10); judged-only where the dataset is.")


@click.command("tune-bm25")
@click.argument("dataset")
@click.argument("index_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--collection", required=True, type=click.Path(exists=True, file_okay=False),
              help="Collection folder holding topics/ and qrels/.")
@_TUNE_TOPICS
@_MEASURE
@click.option("-k", "--depth", "k", default=100, show_default=True, type=DEPTH, help="Documents retrieved per topic.")
@click.option("--threads", default=2, show_default=True, type=click.IntRange(min=1), help="Search threads.")
def tune_bm25(dataset, index_dir, collection, topic_sets, measure, k, threads):
    """Grid-search BM25 k1/b for DATASET on training topic sets; prints the grid, best first.

    The grid is k1 in 0.4-2.0 by b in 0.2-1.0 (64 points), scored with the
    dataset's protocol (judged-only for ACORD). Give the best pair to
    `legalir search --k1 --b` (the Makefile takes it from the dataset module).
    """
    from legalir.datasets import dataset_class
    from legalir.search import tuning

    grid, n = tuning.tune_bm25(dataset_class(dataset), index_dir, collection, topic_sets, measure, k=k,
                               threads=threads)
    click.echo(f"# {dataset}: {measure} on {'+'.join(topic_sets)} ({n} topics), best first")
    for k1, b, v in grid:
        click.echo(f"k1={k1:<4} b={b:<5} {measure}={v:.4f}")


@click.command("tune-fusion")
@click.argument("dataset")
@click.option("--collection", required=True, type=click.Path(exists=True, file_okay=False),
              help="Collection folder holding qrels/.")
@_TUNE_TOPICS
@click.option("--run", "run_patterns", multiple=True, required=True,
              help="One per system: a run path with {set} for the topic set, e.g. runs/acord/bm25.{set}.trec.")
@_MEASURE
@click.option("--step", default=0.05, show_default=True, type=click.FloatRange(0, 1, min_open=True),
              help="Weight grid step.")
@click.option("--rrf-k", "rrf_ks", multiple=True, type=click.FloatRange(min=0), help="RRF k values to try [default: 60].")
@click.option("--depth", type=DEPTH, default=None, help="Fuse only each run's top DEPTH documents [default: all].")
@click.option("-o", "--out", "out", required=True, type=click.Path(dir_okay=False),
              help="JSON file for the best settings and the whole grid (read by `legalir fuse --params`).")
@force_option("out")
def tune_fusion(dataset, collection, topic_sets, run_patterns, measure, step, rrf_ks, depth, out):
    """Grid-search fusion method and weights on DATASET's training topic sets (never test)."""
    from legalir.datasets import dataset_class
    from legalir.search import tuning

    doc = tuning.tune_fusion(dataset_class(dataset), collection, topic_sets, run_patterns, measure, out, step=step,
                             rrf_ks=rrf_ks, depth=depth)
    b, name = doc["best"], doc["measure"]
    extra = f"norm={b['norm']}" if b["method"] == "linear" else f"k={b['k']}"
    click.echo(f"# {dataset}: {name} on {'+'.join(topic_sets)}" + (" (judged-only)" if doc["judged_only"] else ""))
    for p, v in doc["single_runs"].items():
        click.echo(f"single run {p}: {v:.4f}")
    click.echo(f"best: {b['method']} {extra} weights={b['weights']} {name}={b['score']:.4f} -> {out}")


@click.command()
@click.argument("run", type=STREAM)
@click.argument("out", type=click.Path(dir_okay=False))
@click.option("--collection", type=click.Path(exists=True, file_okay=False),
              help="Passage collection whose parent_id fields map passages to documents "
                   "[default: the text before the last ':' of each id].")
@click.option("--auto", is_flag=True,
              help="Apply MaxP only to topics whose `use_max_p` field is true in the collection's topics "
                   "(CRUMB's flag); copy the others unchanged. Needs --collection.")
@click.option("-k", "--depth", default=None, type=DEPTH, help="Documents kept per topic [default: all].")
@tag("maxp", "Run tag of a TREC output")
@force_option("out")
def maxp(run, out, collection, auto, depth, tag):
    """Turn a passage RUN into a document run: each document scores as its best passage (MaxP).

    RUN may be TREC or CRUMB JSONL (- reads standard input); OUT is TREC (.jsonl: CRUMB JSONL).
    """
    from legalir.search import maxp as mp

    chosen, topics, passages, entries = mp.maxp_file(run, out, collection=collection, auto=auto, depth=depth, tag=tag)
    click.echo(f"{out}: MaxP on {chosen} of {topics} topics ({passages} passages -> {entries} entries)", err=True)


@click.command("convert-run")
@click.argument("src", type=STREAM)
@click.argument("dst", type=click.Path(dir_okay=False))
@click.option("--to", "to", type=click.Choice(["trec", "crumb"]), required=True, help="Output format.")
@tag("legalir", "Run tag of a TREC output")
@click.option("-k", "--depth", default=None, type=DEPTH, help="Entries kept per topic [default: all].")
@force_option("dst")
def convert_run(src, dst, to, tag, depth):
    """Convert a run between TREC and CRUMB's JSONL format (the input format is detected; SRC may be -)."""
    from legalir.trec import runformats

    n = runformats.convert_run(src, dst, to, tag=tag, depth=depth)
    click.echo(f"{dst}: {n} entries ({to})", err=True)


COMMANDS = [search, history, rank_pool, encode, index_dense, search_dense, fuse, tune_bm25, tune_fusion, maxp, convert_run]
