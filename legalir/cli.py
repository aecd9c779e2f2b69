"""The `legalir` command line. Thin: every command parses options and calls one layer.

Bad input (a malformed file, a missing file, an unknown dataset or partition)
ends with exit status 2 and a one-line message naming the file and line.
"""
from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

import click

from legalir import __version__


def friendly_errors(fn):
    """Turn the package's input errors into `error: ...` and exit status 2."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from legalir.errors import LegalirError

        try:
            return fn(*args, **kwargs)
        except (LegalirError, FileNotFoundError) as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(2)

    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="legalir")
def main():
    """legalir: legal IR benchmarks from published files to scored TREC runs.

    \b
    Typical pipeline (what the Makefile targets run):
      legalir convert acord --data-dir data       # published files -> collections/acord
      legalir index collections/acord indexes/acord/bm25
      legalir search indexes/acord/bm25 collections/acord/topics/test.jsonl runs/acord/bm25.test.trec
      legalir eval -J -m ndcg_cut.5,10 collections/acord/qrels/test.txt runs/acord/bm25.test.trec
    """


# ------------------------------------------------------------------ convert
@main.command()
@click.argument("dataset")
@click.option("--data-dir", default="data", show_default=True, type=click.Path(file_okay=False),
              help="Folder holding <dataset>/ in its published layout.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False),
              help="Collection folder to write [default: collections/<dataset>].")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE",
              help="Dataset-specific option (repeatable), e.g. --option text=citation+path+text.")
@click.option("--strict", is_flag=True, help="Fail on duplicate ids, empty texts or dangling qrels documents.")
@click.option("--quiet", is_flag=True, help="No progress bar or problem report on stderr.")
@friendly_errors
def convert(dataset, data_dir, out_dir, options, strict, quiet):
    """Turn DATASET's published files into a collection: JSONL corpus, topics, qrels."""
    from legalir import collections, datasets

    opts = {}
    for o in options:
        if "=" not in o:
            raise click.BadParameter(f"expected KEY=VALUE, got {o!r}", param_hint="--option")
        key, value = o.split("=", 1)
        opts[key] = value
    ds = datasets.get(dataset, data_dir, **opts)
    out = Path(out_dir or f"collections/{dataset}")
    m = collections.write(ds, out, quiet=quiet, strict=strict)
    d = m["documents"]
    click.echo(f"{out}: {d['written']} documents written of {d['read']} read "
               f"({d['duplicate_ids']} duplicate ids, {d['empty_text']} empty); "
               f"topic sets: {', '.join(f'{k} ({v})' for k, v in m['topics'].items())}", err=True)


# ------------------------------------------------------------------ index
@main.command()
@click.argument("collection", type=click.Path(exists=True, file_okay=False))
@click.argument("index_dir", type=click.Path(file_okay=False))
@click.option("--threads", default=2, show_default=True, help="Indexing threads.")
@click.option("--partition", "partitions", multiple=True,
              help="Build only these partitions of a partitioned collection (repeatable).")
@friendly_errors
def index(collection, index_dir, threads, partitions):
    """Build the Lucene index of COLLECTION into INDEX_DIR (one per partition when partitioned)."""
    from legalir.index import sparse

    counts = sparse.build(collection, index_dir, threads=threads, partitions=list(partitions) or None)
    click.echo(f"{index_dir}: {sum(counts.values())} documents in {len(counts)} index(es)", err=True)


# ------------------------------------------------------------------ search
@main.command()
@click.argument("index_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("topics", type=click.Path(exists=True, dir_okay=False))
@click.argument("run", type=click.Path(dir_okay=False))
@click.option("-k", "--depth", "k", default=1000, show_default=True, help="Documents retrieved per topic.")
@click.option("--k1", type=float, default=None, help="BM25 k1 [default: Pyserini's 0.9].")
@click.option("--b", type=float, default=None, help="BM25 b [default: Pyserini's 0.4].")
@click.option("--rm3", is_flag=True, help="Add RM3 pseudo-relevance feedback.")
@click.option("--fb-terms", default=10, show_default=True, help="RM3 feedback terms.")
@click.option("--fb-docs", default=10, show_default=True, help="RM3 feedback documents.")
@click.option("--original-query-weight", default=0.5, show_default=True, help="RM3 original query weight.")
@click.option("--partition-field", default=None,
              help="Topic field naming each topic's partition; INDEX_DIR then holds one index per partition "
                   "[default: detected from INDEX_DIR].")
@click.option("--threads", default=2, show_default=True, help="Search threads.")
@click.option("--tag", default="bm25", show_default=True, help="Run tag (last column).")
@friendly_errors
def search(index_dir, topics, run, k, k1, b, rm3, fb_terms, fb_docs, original_query_weight, partition_field,
           threads, tag):
    """BM25 search of TOPICS (.tsv or .jsonl) over INDEX_DIR, written to RUN in TREC format."""
    from legalir import trec
    from legalir.index import sparse
    from legalir.search import lucene
    from legalir.search.base import Partitioned, SearchError, report_empty_results

    rm3_cfg = lucene.RM3(fb_terms, fb_docs, original_query_weight) if rm3 else None
    k1 = lucene.DEFAULT_K1 if k1 is None else k1
    b = lucene.DEFAULT_B if b is None else b

    def make(path):
        return lucene.BM25(path, k1=k1, b=b, rm3=rm3_cfg, threads=threads)

    tops = trec.read_topics(topics)
    parts = sparse.partitions(index_dir)
    if parts:
        field = partition_field or _partition_field_of(index_dir)
        if not field:
            raise SearchError(f"{index_dir} holds one index per partition: name the topic field with "
                              f"--partition-field")
        retriever = Partitioned(index_dir, field, make, parts)
    else:
        retriever = make(index_dir)
    result = retriever.search(tops, k)
    report_empty_results(result, tops)
    n = trec.write_run(run, result, tag=tag, depth=k)
    click.echo(f"{run}: {n} lines for {len(result)} topics", err=True)


@main.command()
@click.argument("dataset")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--qrels", type=click.Path(exists=True, dir_okay=False),
              help="Qrels to score runs against (not needed when INPUTS are results .json files).")
@click.option("--results-dir", type=click.Path(file_okay=False),
              help="Save each run's scores as <results-dir>/<run name>.json (legalir eval --json -q shape).")
@click.option("--label", "labels", multiple=True, help="Row label per input, in order [default: file name].")
@click.option("--title", default=None, help="Title line above the table.")
@click.option("--by", "by", multiple=True,
              help="Also print per-group means by this topic metadata field, e.g. category, source, state "
                   "(repeatable; needs --topics).")
@click.option("--topics", "topics_path", type=click.Path(exists=True, dir_okay=False),
              help="Topics .jsonl holding the metadata for --by.")
@click.option("--html", "html_out", type=click.Path(dir_okay=False),
              help="Also write one self-contained HTML page (tables, bootstrap intervals, figures, commands).")
@click.option("--figure", "figures", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Extra PNG to embed in the HTML page (e.g. from `legalir analyze lexical`); repeatable.")
@click.option("--bootstrap", default=1000, show_default=True, type=click.IntRange(min=1),
              help="HTML page: bootstrap resamples over topics.")
@click.option("--seed", default=0, show_default=True, help="HTML page: bootstrap seed.")
@friendly_errors
def report(dataset, inputs, qrels, results_dir, labels, title, by, topics_path, html_out, figures, bootstrap, seed):
    """Score runs with DATASET's own protocol and print them beside the papers' rows.

    INPUTS are TREC runs (scored against --qrels with the dataset's measures, e.g.
    judged-only for ACORD) or results .json files saved earlier.
    """
    from legalir import datasets, report as rep

    cls = type(datasets.get(dataset, "."))
    if labels and len(labels) != len(inputs):
        raise click.BadParameter(f"{len(labels)} labels for {len(inputs)} inputs", param_hint="--label")
    rows, full = [], []
    for i, path in enumerate(inputs):
        name = Path(path).name.removesuffix(".trec").removesuffix(".json")
        if path.endswith(".json"):
            result = json.loads(Path(path).read_text())
        else:
            if not qrels:
                raise click.UsageError("--qrels is needed to score a run")
            out = Path(results_dir) / f"{name}.json" if results_dir else None
            result = rep.score_run(cls, qrels, path, out)
        rows.append((labels[i] if labels else name, result["all"]))
        full.append((labels[i] if labels else name, result))
    click.echo(rep.table(cls, rows, title=title))
    if by and not topics_path:
        raise click.UsageError("--by needs --topics (a .jsonl topics file with the metadata)")
    fields = rep.topic_fields(topics_path) if topics_path else None
    from legalir.report import breakdown

    for field in by:
        for label, result in full:
            click.echo("\n" + breakdown.format_breakdown(label, field, breakdown.breakdown(
                result.get("per_topic") or {}, fields, field, rep.measure_columns(cls)), rep.measure_columns(cls),
                rep.protocol(cls)["scale"]))
    if html_out:
        from legalir.report import html

        curves = {lab: rep.recall_curve(cls, qrels, path) for (lab, _), path in zip(full, inputs)
                  if qrels and not path.endswith(".json")}
        html.write_report(html_out, cls, full, title=title, command=" ".join(["legalir", *sys.argv[1:]]), by=by,
                          topic_fields=fields, curves=curves, extra_figures=figures, bootstrap=bootstrap, seed=seed,
                          inputs=list(inputs))
        click.echo(f"{html_out}: written", err=True)


@main.command("tune-bm25")
@click.argument("dataset")
@click.argument("index_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--collection", required=True, type=click.Path(exists=True, file_okay=False),
              help="Collection folder holding topics/ and qrels/.")
@click.option("--topics", "topic_sets", multiple=True, required=True,
              help="Topic set(s) to tune on, e.g. --topics train --topics valid. Test sets are refused.")
@click.option("--measure", default="ndcg_cut_10", show_default=True, help="Output measure name to maximise.")
@click.option("-k", "--depth", "k", default=100, show_default=True)
@click.option("--threads", default=2, show_default=True)
@friendly_errors
def tune_bm25(dataset, index_dir, collection, topic_sets, measure, k, threads):
    """Grid-search BM25 k1/b for DATASET on training topic sets; prints the grid, best first."""
    from legalir import collections, datasets, trec
    from legalir.search.tuning import grid_search_bm25

    if any(collections.base_set(t) == "test" for t in topic_sets):
        raise click.BadParameter("tuning on test topics is not allowed", param_hint="--topics")
    cls = type(datasets.get(dataset, "."))
    topics, qrels = {}, {}
    for t in topic_sets:
        topics.update(trec.read_topics(collections.topics_path(collection, t)))
        qrels.update(trec.read_qrels(collections.qrels_path(collection, t)))
    grid = grid_search_bm25(index_dir, topics, qrels, measure, bool(getattr(cls, "judged_only", False)),
                            k=k, threads=threads)
    click.echo(f"# {dataset}: {measure} on {'+'.join(topic_sets)} ({len(topics)} topics), best first")
    for k1, b, v in grid:
        click.echo(f"k1={k1:<4} b={b:<5} {measure}={v:.4f}")


def _partition_field_of(index_dir) -> str | None:
    """The partition field recorded by the collection that an index was built from."""
    from legalir.index import sparse

    for key in sparse.partitions(index_dir):
        meta = json.loads((Path(index_dir) / key / sparse.META).read_text())
        manifest = Path(meta["input"]).parent.parent / "manifest.json"
        if manifest.exists():
            return json.loads(manifest.read_text()).get("partition_field")
    return None


# ------------------------------------------------------------------ download
@main.command()
@click.argument("dataset")
@click.option("--data-dir", default="data", show_default=True, type=click.Path(file_okay=False),
              help="Files land in <data-dir>/<dataset>/ in the published layout.")
@click.option("--revision", default=None, help="Hub revision (branch, tag or commit) to fetch [default: main].")
@click.option("--timeout", default=10.0, show_default=True, help="Seconds to wait for the Hub before giving up.")
@click.option("--force", is_flag=True, help="Fetch even when the files are already there.")
@friendly_errors
def download(dataset, data_dir, revision, timeout, force):
    """Fetch DATASET's published files from the Hugging Face Hub (fails at once when offline)."""
    from legalir import download as dl

    written = dl.fetch(dataset, data_dir, timeout=timeout, force=force, revision=revision)
    for path in written:
        click.echo(str(path))


# ------------------------------------------------------------------ rank-pool
@main.command("rank-pool")
@click.argument("topics", type=click.Path(exists=True, dir_okay=False))
@click.argument("run", type=click.Path(dir_okay=False))
@click.option("--ranker", type=click.Choice(["bm25", "tfidf"]), default="bm25", show_default=True,
              help="bm25: Lucene BM25 from --index; tfidf: TF-IDF cosine fit on --collection.")
@click.option("--index", "index_dir", type=click.Path(exists=True, file_okay=False),
              help="Lucene index of the collection (for --ranker bm25).")
@click.option("--collection", type=click.Path(exists=True, file_okay=False),
              help="Collection folder (for --ranker tfidf).")
@click.option("--k1", type=float, default=None, help="BM25 k1 [default: Pyserini's 0.9].")
@click.option("--b", type=float, default=None, help="BM25 b [default: Pyserini's 0.4].")
@click.option("--tag", default=None, help="Run tag (last column) [default: the ranker's name].")
@friendly_errors
def rank_pool(topics, run, ranker, index_dir, collection, k1, b, tag):
    """Rank each topic's own candidates (its `candidates` field, e.g. SCALR's five holdings) into RUN."""
    from legalir import trec
    from legalir.search import pool
    from legalir.search.lucene import DEFAULT_B, DEFAULT_K1

    if ranker == "bm25" and not index_dir:
        raise click.UsageError("--ranker bm25 needs --index")
    if ranker == "tfidf" and not collection:
        raise click.UsageError("--ranker tfidf needs --collection")
    tops = trec.read_topics(topics)
    if ranker == "bm25":
        r = pool.PoolBM25(index_dir, k1=DEFAULT_K1 if k1 is None else k1, b=DEFAULT_B if b is None else b)
    else:
        r = pool.PoolTfidf.from_collection(collection)
    result = r.search(tops, k=max(len(v) for v in pool.candidate_pools(tops).values()))
    n = trec.write_run(run, result, tag=tag or ranker)
    click.echo(f"{run}: {n} lines for {len(result)} topics", err=True)


# ------------------------------------------------------------------ dense retrieval and fusion
def _unescape(text):
    """Command-line formats may write a newline as \\n."""
    return None if text is None else text.replace("\\n", "\n")


def _encoder_overrides(pooling, max_length, query_format, doc_format, instruction, normalize, dtype, backend,
                       trust_remote_code=False):
    return {"pooling": pooling, "max_length": max_length, "query_format": _unescape(query_format),
            "doc_format": _unescape(doc_format), "instruction": instruction, "normalize": normalize,
            "dtype": dtype, "backend": backend, "trust_remote_code": trust_remote_code or None}


def _encoder_options(fn):
    opts = [
        click.option("--pooling", type=click.Choice(["mean", "cls", "last"]), default=None,
                     help="Pooling of token vectors [default: the model's own, else its family's preset, else mean]."),
        click.option("--max-length", type=int, default=None, help="Maximum tokens per text [default: model/preset]."),
        click.option("--query-format", default=None,
                     help="Query text format with {text} and optionally {instruction}, e.g. 'query: {text}' "
                          "[default: the family's preset]."),
        click.option("--doc-format", default=None, help="Document text format with {text}, e.g. 'passage: {text}'."),
        click.option("--instruction", default=None,
                     help="Task instruction for {instruction} in queries (search-dense: overrides the topics' "
                          "'instruction' field; encode: recorded as the index's default)."),
        click.option("--normalize/--no-normalize", default=None, help="L2-normalise vectors [default: model/preset]."),
        click.option("--dtype", type=click.Choice(["float32", "float16", "bfloat16"]), default=None,
                     help="Model precision [default: float16 on CUDA, float32 on CPU]."),
        click.option("--backend", type=click.Choice(["transformers", "sentence-transformers"]), default=None,
                     help="Run the model through transformers (pooling done by legalir) or sentence-transformers "
                          "[default: transformers unless the model has modules legalir does not reproduce]."),
        click.option("--device", default=None, help="torch device, e.g. cpu, cuda, cuda:1 [default: cuda if present]."),
        click.option("--trust-remote-code", is_flag=True,
                     help="Allow the model repository's own Python code (needed by some encoders)."),
        click.option("--batch-size", default=32, show_default=True, help="Texts per forward pass."),
    ]
    for o in reversed(opts):
        fn = o(fn)
    return fn


@main.command()
@click.argument("collection", type=click.Path(exists=True, file_okay=False))
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.option("--encoder", "model", required=True, help="Hugging Face model name or local model folder.")
@click.option("--revision", default=None, help="Hub revision (branch, tag or commit) of a named model.")
@_encoder_options
@click.option("--shard-size", default=100_000, show_default=True, help="Documents per shard (unit of resuming).")
@click.option("--partition", "partitions", multiple=True, help="Encode only these partitions (repeatable).")
@click.option("--overwrite", is_flag=True, help="Discard embeddings already in OUT_DIR and start again.")
@click.option("--stop-after-shards", type=int, default=None,
              help="Stop after writing this many new shards (split a long job; run again to resume).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@friendly_errors
def encode(collection, out_dir, model, revision, pooling, max_length, query_format, doc_format, instruction,
           normalize, dtype, backend, device, trust_remote_code, batch_size, shard_size, partitions, overwrite,
           stop_after_shards, quiet):
    """Encode COLLECTION's documents into OUT_DIR (resumable .npy shards, one folder per partition)."""
    from legalir.index import encoders

    enc = encoders.Encoder.load(model, revision=revision, device=device, **_encoder_overrides(
        pooling, max_length, query_format, doc_format, instruction, normalize, dtype, backend, trust_remote_code))
    results = encoders.encode_collection(enc, collection, out_dir, partitions=list(partitions) or None, quiet=quiet,
                                         shard_size=shard_size, batch_size=batch_size, overwrite=overwrite,
                                         stop_after_shards=stop_after_shards)
    done = all(r.complete for r in results.values())
    click.echo(f"{out_dir}: {sum(r.documents for r in results.values())} documents in {len(results)} folder(s), "
               f"{'complete' if done else 'NOT complete: run the same command again to resume'}", err=True)


@main.command("index-dense")
@click.argument("embeddings", type=click.Path(exists=True, file_okay=False))
@click.argument("index_dir", type=click.Path(file_okay=False))
@click.option("--type", "kind", type=click.Choice(["flat", "hnsw", "ivfpq"]), default="flat", show_default=True,
              help="flat: exact inner product; hnsw: graph; ivfpq: inverted lists + product quantisation.")
@click.option("--hnsw-m", default=32, show_default=True, help="HNSW neighbours per node.")
@click.option("--ef-construction", default=200, show_default=True, help="HNSW build-time search width.")
@click.option("--nlist", type=int, default=None, help="IVF lists [default: about 4*sqrt(documents)].")
@click.option("--pq-m", type=int, default=None, help="PQ sub-vectors (must divide the dimension) [default: dim/4].")
@click.option("--pq-bits", default=8, show_default=True, help="Bits per PQ code.")
@click.option("--collection", type=click.Path(exists=True, file_okay=False), default=None,
              help="Check the embeddings' document ids against this collection [default: the one encoded].")
@click.option("--partition", "partitions", multiple=True, help="Build only these partitions (repeatable).")
@click.option("--threads", type=int, default=None, help="FAISS threads [default: all cores].")
@friendly_errors
def index_dense(embeddings, index_dir, kind, hnsw_m, ef_construction, nlist, pq_m, pq_bits, collection, partitions,
                threads):
    """Build FAISS index(es) in INDEX_DIR from EMBEDDINGS written by `legalir encode`."""
    from legalir.index import dense

    spec = dense.IndexSpec(type=kind, hnsw_m=hnsw_m, ef_construction=ef_construction, nlist=nlist, pq_m=pq_m,
                           pq_bits=pq_bits)
    counts = dense.build(embeddings, index_dir, spec, collection_dir=collection,
                         partitions=list(partitions) or None, threads=threads)
    click.echo(f"{index_dir}: {sum(counts.values())} vectors in {len(counts)} index(es)", err=True)


@main.command("search-dense")
@click.argument("index_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("topics", type=click.Path(exists=True, dir_okay=False))
@click.argument("run", type=click.Path(dir_okay=False))
@click.option("-k", "--depth", "k", default=1000, show_default=True, help="Documents retrieved per topic.")
@click.option("--encoder", "model", default=None,
              help="Where the index's encoder is now, if moved [default: the path recorded in the index].")
@_encoder_options
@click.option("--gpu/--cpu", "gpu", default=None, help="Search on the GPU [default: when FAISS sees one].")
@click.option("--ef-search", type=int, default=None, help="HNSW search width.")
@click.option("--nprobe", type=int, default=None, help="IVF lists visited per query.")
@click.option("--partition-field", default=None,
              help="Topic field naming each topic's partition [default: recorded in the index].")
@click.option("--threads", type=int, default=None, help="FAISS threads [default: all cores].")
@click.option("--tag", default="dense", show_default=True, help="Run tag (last column).")
@friendly_errors
def search_dense(index_dir, topics, run, k, model, pooling, max_length, query_format, doc_format, instruction,
                 normalize, dtype, backend, device, trust_remote_code, batch_size, gpu, ef_search, nprobe,
                 partition_field, threads, tag):
    """Dense search of TOPICS (.tsv or .jsonl) over INDEX_DIR (FAISS), written to RUN in TREC format."""
    from legalir import trec
    from legalir.search import dense as dense_search
    from legalir.search.base import report_empty_results

    tops = trec.read_topics(topics)
    overrides = _encoder_overrides(pooling, max_length, query_format, doc_format, None, normalize, dtype, backend,
                                   trust_remote_code)
    enc = dense_search.load_encoder(index_dir, model=model, device=device, **overrides)
    retriever = dense_search.retriever(index_dir, enc, partition_field, instruction=instruction,
                                       batch_size=batch_size, gpu=gpu, ef_search=ef_search, nprobe=nprobe,
                                       threads=threads)
    result = retriever.search(tops, k)
    report_empty_results(result, tops)
    n = trec.write_run(run, result, tag=tag, depth=k)
    click.echo(f"{run}: {n} lines for {len(result)} topics", err=True)


def _fusion_params(params_file, method, weights, rrf_k, norm):
    """Fusion settings: --params (a tune-fusion result) first, then the options given explicitly."""
    chosen = {}
    if params_file:
        data = json.loads(Path(params_file).read_text())
        chosen = dict(data.get("best", data))
    if method is not None:
        chosen["method"] = method
    if weights is not None:
        try:
            chosen["weights"] = [float(x) for x in weights.split(",")]
        except ValueError:
            raise click.BadParameter(f"expected comma-separated numbers, got {weights!r}", param_hint="--weights")
    if rrf_k is not None:
        chosen["k"] = rrf_k
    if norm is not None:
        chosen["norm"] = norm
    chosen.setdefault("method", "rrf")
    return {k: chosen[k] for k in ("method", "weights", "k", "norm") if k in chosen}


_FUSION_OPTIONS = [
    click.option("--method", type=click.Choice(["rrf", "linear"]), default=None,
                 help="Reciprocal rank fusion, or a weighted sum of normalised scores [default: rrf]."),
    click.option("--weights", default=None, help="One weight per run, comma-separated [default: equal]."),
    click.option("--rrf-k", type=float, default=None, help="RRF constant k [default: 60]."),
    click.option("--norm", type=click.Choice(["minmax", "zscore"]), default=None,
                 help="Score normalisation for linear fusion [default: minmax]."),
    click.option("--depth", type=int, default=None, help="Fuse only each run's top DEPTH documents [default: all]."),
]


@main.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--out", "out", required=True, type=click.Path(dir_okay=False), help="Fused run to write.")
@click.option("--params", "params_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Use the best settings of a `legalir tune-fusion` result (options given here override them).")
@_FUSION_OPTIONS[0]
@_FUSION_OPTIONS[1]
@_FUSION_OPTIONS[2]
@_FUSION_OPTIONS[3]
@_FUSION_OPTIONS[4]
@click.option("-k", "--keep", "keep", default=1000, show_default=True, help="Documents written per topic.")
@click.option("--tag", default="fused", show_default=True, help="Run tag (last column).")
@friendly_errors
def fuse(runs, out, params_file, method, weights, rrf_k, norm, depth, keep, tag):
    """Fuse TREC RUNS, such as BM25 and dense runs, into one: RRF or linear fusion of normalised scores."""
    from legalir import trec
    from legalir.search import fusion

    params = _fusion_params(params_file, method, weights, rrf_k, norm)
    fused = fusion.fuse([trec.read_run(r) for r in runs], depth=depth, **params)
    n = trec.write_run(out, fused, tag=tag, depth=keep)
    shown = ", ".join(f"{k}={v}" for k, v in params.items())
    click.echo(f"{out}: {n} lines for {len(fused)} topics ({shown})", err=True)


@main.command("tune-fusion")
@click.argument("dataset")
@click.option("--collection", required=True, type=click.Path(exists=True, file_okay=False),
              help="Collection folder holding qrels/.")
@click.option("--topics", "topic_sets", multiple=True, required=True,
              help="Topic set(s) to tune on, e.g. --topics train --topics valid. Test sets are refused.")
@click.option("--run", "run_patterns", multiple=True, required=True,
              help="One per system: a run path with {set} for the topic set, e.g. runs/acord/bm25.{set}.trec.")
@click.option("--measure", default="ndcg_cut_10", show_default=True, help="Measure to maximise (output name).")
@click.option("--step", default=0.05, show_default=True, help="Weight grid step.")
@click.option("--rrf-k", "rrf_ks", multiple=True, type=float, help="RRF k values to try [default: 60].")
@click.option("--depth", type=int, default=None, help="Fuse only each run's top DEPTH documents [default: all].")
@click.option("-o", "--out", "out", required=True, type=click.Path(dir_okay=False),
              help="JSON file for the best settings and the whole grid (read by `legalir fuse --params`).")
@friendly_errors
def tune_fusion(dataset, collection, topic_sets, run_patterns, measure, step, rrf_ks, depth, out):
    """Grid-search fusion method and weights on DATASET's training topic sets (never test)."""
    from legalir import collections, datasets, trec
    from legalir.evaluate import evaluate
    from legalir.search import fusion

    if any(collections.base_set(t) == "test" for t in topic_sets):
        raise click.BadParameter("tuning on test topics is not allowed", param_hint="--topics")
    if any("{set}" not in p for p in run_patterns):
        raise click.BadParameter("each --run needs {set} in its path", param_hint="--run")
    judged = bool(getattr(type(datasets.get(dataset, ".")), "judged_only", False))
    qrels, runs = {}, [dict() for _ in run_patterns]
    for t in topic_sets:
        qrels.update(trec.read_qrels(collections.qrels_path(collection, t)))
        for i, p in enumerate(run_patterns):
            runs[i].update(trec.read_run(p.replace("{set}", t)))

    def score(run):
        return float(evaluate(qrels, run, [measure], judged_only=judged)["all"][measure])

    result = fusion.tune(runs, score, rrf_ks=tuple(rrf_ks) or (fusion.DEFAULT_RRF_K,), step=step, depth=depth)
    singles = {p: score(r) for p, r in zip(run_patterns, runs)}
    doc = {"dataset": dataset, "topics": list(topic_sets), "measure": measure, "judged_only": judged,
           "runs": list(run_patterns), "single_runs": singles, **result}
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(doc, indent=2) + "\n")
    b = result["best"]
    extra = f"norm={b['norm']}" if b["method"] == "linear" else f"k={b['k']}"
    click.echo(f"# {dataset}: {measure} on {'+'.join(topic_sets)}" + ("" if not judged else " (judged-only)"))
    for p, v in singles.items():
        click.echo(f"single run {p}: {v:.4f}")
    click.echo(f"best: {b['method']} {extra} weights={b['weights']} {measure}={b['score']:.4f} -> {out}")


# ------------------------------------------------------------------ chunk, maxp, convert-run (passages, CRUMB runs)
@main.command()
@click.argument("source", type=click.Path(exists=True))
@click.argument("out", type=click.Path())
@click.option("--max-tokens", default=512, show_default=True, help="Chunk size limit in tokenizer tokens.")
@click.option("--tokenizer", default=None,
              help="Tokenizer folder, tokenizer.json or Hub name [default: the bundled MiniLM (BERT uncased) one].")
@click.option("--id-field", default="id", show_default=True, help="Document id field of a JSONL SOURCE.")
@click.option("--text-field", default="contents", show_default=True, help="Markdown text field of a JSONL SOURCE.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@friendly_errors
def chunk(source, out, max_tokens, tokenizer, id_field, text_field, quiet):
    """Split markdown documents into contextualised passages (CRUMB's chunking).

    SOURCE is a JSONL corpus or a collection folder. OUT ending in .jsonl gets
    the passages as JSONL; otherwise OUT becomes a collection folder (passages
    and the source's topics) ready for `legalir index`. Passage ids are
    <docid>:<n> with parent_id; score passage runs after `legalir maxp`.
    """
    from legalir.chunking import Chunker, chunk_corpus

    stats = chunk_corpus(source, out, Chunker(max_tokens, tokenizer), id_field=id_field, text_field=text_field,
                         quiet=quiet)
    click.echo(f"{out}: {stats['passages']} passages from {stats['documents']} documents "
               f"({stats['over_limit']} single blocks over {max_tokens} tokens kept whole; "
               f"{stats['empty_documents']} documents without text"
               + (f": {', '.join(stats['empty_first'])}" if stats['empty_documents'] else "") + ")", err=True)


@main.command()
@click.argument("run", type=click.Path(exists=True, dir_okay=False))
@click.argument("out", type=click.Path(dir_okay=False))
@click.option("--collection", type=click.Path(exists=True, file_okay=False),
              help="Passage collection whose parent_id fields map passages to documents "
                   "[default: the text before the last ':' of each id].")
@click.option("--auto", is_flag=True,
              help="Apply MaxP only to topics whose `use_max_p` field is true in the collection's topics "
                   "(CRUMB's flag); copy the others unchanged. Needs --collection.")
@click.option("-k", "--depth", default=None, type=int, help="Documents kept per topic [default: all].")
@click.option("--tag", default="maxp", show_default=True, help="Run tag of a TREC output.")
@friendly_errors
def maxp(run, out, collection, auto, depth, tag):
    """Turn a passage RUN into a document run: each document scores as its best passage (MaxP).

    RUN may be TREC or CRUMB JSONL; OUT is TREC (.jsonl: CRUMB JSONL).
    """
    from legalir import runformats, trec
    from legalir.search import maxp as mp

    passages = runformats.read_any_run(run)
    if auto and not collection:
        raise click.UsageError("--auto needs --collection (its topics carry use_max_p)")
    chosen = set(passages)
    if auto:
        topics = {}
        for path in sorted((Path(collection) / "topics").glob("*.jsonl")):
            topics.update(trec.read_topics(path))
        chosen = mp.topics_using_maxp(topics) & set(passages)
    parents = None
    if collection and chosen:
        needed = {d for q in chosen for d in passages[q]}
        parents = mp.parents_from_collection(collection, only=needed)
    docs = mp.maxp({q: passages[q] for q in chosen}, parents)
    result = {q: (docs[q] if q in chosen else passages[q]) for q in passages}
    if str(out).endswith(".jsonl"):
        runformats.write_crumb_run(out, result, depth=depth)
    else:
        trec.write_run(out, result, tag=tag, depth=depth)
    click.echo(f"{out}: MaxP on {len(chosen)} of {len(passages)} topics "
               f"({sum(map(len, passages.values()))} passages -> {sum(map(len, result.values()))} entries)", err=True)


@main.command("convert-run")
@click.argument("src", type=click.Path(exists=True, dir_okay=False))
@click.argument("dst", type=click.Path(dir_okay=False))
@click.option("--to", "to", type=click.Choice(["trec", "crumb"]), required=True, help="Output format.")
@click.option("--tag", default="legalir", show_default=True, help="Run tag of a TREC output.")
@click.option("-k", "--depth", default=None, type=int, help="Entries kept per topic [default: all].")
@friendly_errors
def convert_run(src, dst, to, tag, depth):
    """Convert a run between TREC and CRUMB's JSONL format (the input format is detected)."""
    from legalir import runformats

    n = runformats.convert_run(src, dst, to, tag=tag, depth=depth)
    click.echo(f"{dst}: {n} entries ({to})", err=True)


# ------------------------------------------------------------------ eval, compare
def _list_measures(ctx, param, value):
    if not value or ctx.resilient_parsing:
        return
    from legalir.evaluate import supported

    click.echo(supported())
    ctx.exit()


@main.command("eval")
@click.argument("qrels", type=click.Path(dir_okay=False, allow_dash=True))
@click.argument("run", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("-m", "--measure", "measures", multiple=True, metavar="MEASURE",
              help="Measure, repeatable: a trec_eval spec (map, P.5,10, ndcg_cut.10, ndcg.1=3,2=9, "
                   "utility.1,-1,0,0, 11pt_avg.0.5, rbp.p=0.95, unj.5, recall.100,1000, all_trec, official, set), "
                   "an ir_measures name (nDCG@10, 'P(rel=2)@5', R@100, RR@10, AP, Judged@10, Success@10, Rprec) "
                   "or legalir's own (recip_rank_cut.10, recall_all.10, star3_P.5) "
                   "[default: trec_eval's 'official' set].")
@click.option("--compat", type=click.Choice(["10", "9"]), default="10", show_default=True,
              help="trec_eval version whose semantics apply: 10 (10.0, current) or 9 (9.0.x: pytrec_eval's, "
                   "Pyserini's and most published numbers).")
@click.option("-q", "per_topic", is_flag=True, help="Also print every topic's values (trec_eval -q).")
@click.option("-n", "no_summary", is_flag=True, help="No summary ('all') lines (trec_eval -n).")
@click.option("-c", "complete", is_flag=True,
              help="Average over every qrels topic; topics missing from the run count 0 (trec_eval -c; with "
                   "--compat 10 and -q they get per-topic lines too, as 10.0 prints them).")
@click.option("-J", "judged_only", is_flag=True,
              help="Judged-only: drop run documents without a judgement before scoring (trec_eval -J).")
@click.option("-l", "relevance_level", type=click.IntRange(min=1), default=1, show_default=True,
              help="Lowest relevance counted as relevant (trec_eval -l).")
@click.option("-M", "max_docs", type=click.IntRange(min=1), default=None,
              help="Only the first N documents of each topic's ranking count (trec_eval -M).")
@click.option("-N", "num_docs", type=click.IntRange(min=0), default=0, show_default=True,
              help="Documents in the collection, for utility's 4th coefficient (trec_eval -N).")
@click.option("--skip-missing", is_flag=True,
              help="Average ir_measures-named measures over the run's topics only (trec_eval's convention) "
                   "instead of counting qrels topics missing from the run as 0 (ir_measures' convention).")
@click.option("--json", "as_json", is_flag=True,
              help='Print {"all": {...}, "per_topic": {...}} (per_topic with -q) instead of trec_eval lines.')
@click.option("--quiet", is_flag=True, help="No topic-coverage notes or warnings on stderr.")
@click.option("--list-measures", is_flag=True, is_eager=True, expose_value=False, callback=_list_measures,
              help="List the supported measures and exit.")
@friendly_errors
def eval_(qrels, run, measures, compat, per_topic, no_summary, complete, judged_only, relevance_level, max_docs,
          num_docs, skip_missing, as_json, quiet):
    """Score RUN against QRELS exactly as trec_eval 10.0 (or, --compat 9, 9.0.x) would, plus
    ir_measures names and legal IR's own measures. QRELS or RUN may be '-' (standard input).

    \b
    Output: trec_eval's lines (measure, topic or 'all', value), or --json.
    Conventions (details in the README, "Scoring any run"):
    - reading: '#' lines are comments and fields after a run line's sixth are
      ignored (as 10.0); a repeated qrels line is kept once with a warning and
      a score or grade with no number is an error (trec_eval: stops / reads 0).
    - 10.0 stops (exit 4) when a qrels topic is missing from the run and -c is
      not given; legalir evaluates the other topics, as 9.0.x does.
    - 10.0 prints -nan for iprec_at_recall/11pt_avg of an empty ranking (-J);
      legalir prints 0.
    - the same trec_eval measure twice (-m P.5 -m P.10): legalir computes the
      union of cut-offs, trec_eval only the first.
    - ir_measures names: values are ir_measures' (pytrec_eval provider) and a
      qrels topic missing from the run counts 0, as in ir_measures (use
      --skip-missing for trec_eval's convention); -l does not apply to them
      (write P(rel=2)@5).
    Measures trec_eval lacks: recip_rank_cut.k (MRR@k), recall_all.k (all
    relevant documents in the top k: the lower-bound recall), starK_P.N
    (ACORD's K-star precision@N, stars = relevance + 1; topics with no
    K-star document are left out of its average, also under -c).
    """
    from legalir import evaluate

    result = evaluate.evaluate_files(qrels, run, list(measures) or None, judged_only=judged_only,
                                     complete=complete, relevance_level=relevance_level, version=compat,
                                     max_docs=max_docs, num_docs=num_docs, skip_missing=skip_missing)
    if not quiet:
        for note in evaluate.coverage_notes(result, complete):
            click.echo(f"eval: {note}", err=True)
    if as_json:
        click.echo(json.dumps(evaluate.to_json(result, per_topic, summary=not no_summary), indent=1))
    else:
        click.echo(evaluate.format_trec_eval(result, per_topic, summary=not no_summary), nl=False)


@main.command()
@click.argument("qrels", type=click.Path(dir_okay=False))
@click.argument("runs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-m", "--measure", "measures", multiple=True, metavar="MEASURE",
              help="Measure to compare, repeatable, as for `legalir eval` [default: map, ndcg_cut.10].")
@click.option("--test", type=click.Choice(["t", "randomization"]), default="t", show_default=True,
              help="Paired two-sided t-test, or paired randomization (permutation) test.")
@click.option("--correction", type=click.Choice(["none", "bonferroni", "holm"]), default="none",
              show_default=True, help="Multiple-comparison correction over the runs compared to the first.")
@click.option("--permutations", default=10000, show_default=True, type=click.IntRange(min=1),
              help="Randomization test: random sign vectors (exact enumeration when 2^topics is fewer).")
@click.option("--seed", default=0, show_default=True,
              help="Seed of the randomization test and the bootstrap (same seed, same numbers).")
@click.option("--alpha", default=0.05, show_default=True, help="Significance level marked with '*'.")
@click.option("-J", "judged_only", is_flag=True, help="Judged-only evaluation (as `legalir eval -J`).")
@click.option("-l", "relevance_level", type=click.IntRange(min=1), default=1, show_default=True,
              help="Lowest relevance counted as relevant.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparisons as JSON.")
@click.option("--bootstrap", default=1000, show_default=True, type=click.IntRange(min=0),
              help="Percentile-bootstrap resamples over topics for each mean and each difference vs the first "
                   "run (seeded by --seed; 0: no intervals).")
@click.option("--level", default=0.95, show_default=True, type=click.FloatRange(0, 1, min_open=True, max_open=True),
              help="Confidence level of the bootstrap intervals.")
@friendly_errors
def compare(qrels, runs, measures, test, correction, permutations, seed, alpha, judged_only, relevance_level,
            as_json, bootstrap, level):
    """Compare RUNS (two or more) on QRELS: each run's mean and its p-value against the first run."""
    from legalir import evaluate, trec
    from legalir.evaluate import stats

    if len(runs) < 2:
        raise click.UsageError("compare needs at least two runs")
    ms = evaluate.parse_measures(list(measures) or ["map", "ndcg_cut.10"])
    names = stats.comparable_names(ms)
    q = trec.read_qrels(qrels)
    per_topic = [evaluate.evaluate(q, trec.read_run(r), ms, judged_only=judged_only,
                                   relevance_level=relevance_level)["per_topic"] for r in runs]
    comps = stats.compare(per_topic, runs, names, test=test, correction=correction,
                          permutations=permutations, seed=seed, bootstrap=bootstrap, level=level)
    if as_json:
        click.echo(json.dumps([c.to_dict() for c in comps], indent=1))
    else:
        click.echo(stats.format_comparisons(comps, alpha), nl=False)


# ------------------------------------------------------------------ rerankers, query expansion, fine-tuning
def _float_list(ctx, param, value):
    try:
        return [float(x) for v in value for x in str(v).split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"expected numbers, got {value!r}") from None


def _int_list(ctx, param, value):
    try:
        return [int(x) for x in str(value).split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, got {value!r}") from None


@main.command("train-ce")
@click.argument("collection", type=click.Path(exists=True, file_okay=False))
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.option("--valid-run", "valid_runs", required=True, multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="First-stage run(s) of the validation topics; each one's top --valid-depth is reranked and "
                   "the validation score is the mean over the runs (repeatable).")
@click.option("--train-topics", "train_sets", multiple=True, default=("train",), show_default=True,
              help="Training topic set; repeat for several wordings of it (train, train.medium, train.long).")
@click.option("--valid-topics", "valid_set", default="valid", show_default=True, help="Validation topic set.")
@click.option("--base-model", default="minilm", show_default=True,
              help="Encoder to start from: a model folder, 'minilm' (bundled all-MiniLM-L6-v2), or a Hub name.")
@click.option("--lr", "learning_rates", multiple=True, callback=_float_list, default=("2e-5", "5e-5"),
              show_default=True, help="Learning rate(s) of the grid (repeatable or comma-separated).")
@click.option("--checkpoints", default="100,200,300,400", show_default=True, callback=_int_list,
              help="Numbers of updates at which each run is validated; the largest is the run's length.")
@click.option("--seed", "seeds", default="42", show_default=True, callback=_int_list,
              help="Seed(s) of the grid (comma-separated): a (lr, updates) is scored by its mean over seeds.")
@click.option("--batch-size", default=64, show_default=True)
@click.option("--max-length", default=256, show_default=True, help="Tokens per (query, clause) pair.")
@click.option("--weight-decay", default=0.01, show_default=True)
@click.option("--warmup-ratio", default=0.1, show_default=True)
@click.option("--attention-dropout", default=0.0, show_default=True,
              help="Attention dropout (0 lets torch use its fused attention; the base model has 0.1).")
@click.option("--precision", type=click.Choice(["auto", "fp32", "bf16"]), default="auto", show_default=True,
              help="auto = bf16 autocast where the hardware has it (CPU AMX, CUDA), else fp32.")
@click.option("--head-lr-multiplier", default=1.0, show_default=True,
              help="Learning rate of the new scoring head = lr x this.")
@click.option("--valid-depth", default=1000, show_default=True, help="Validation rerank depth.")
@click.option("--measure", default="ndcg_cut_10", show_default=True, help="Validation measure (judged-only).")
@click.option("--threads", type=int, default=None, help="Torch CPU threads per process [default: torch's].")
@click.option("--jobs", default=1, show_default=True,
              help="Grid cells (lr, seed) trained at the same time, in separate processes (one GPU holds several).")
@click.option("--save-every", default=100, show_default=True,
              help="Save the resumable state every this many updates (and at every checkpoint).")
@click.option("--work-dir", type=click.Path(file_okay=False), help="Resumable state [default: OUT_DIR.work].")
@click.option("--stop-after", type=int, default=None,
              help="Stop at the first save after this many updates (state kept); run again to resume.")
@friendly_errors
def train_ce(collection, out_dir, valid_runs, train_sets, valid_set, base_model, learning_rates, checkpoints, seeds,
             batch_size, max_length, weight_decay, warmup_ratio, attention_dropout, precision, head_lr_multiplier,
             valid_depth, measure, threads, jobs, save_every, work_dir, stop_after):
    """Fine-tune a cross-encoder on COLLECTION's training qrels (ACORD recipe); save the best to OUT_DIR.

    Relevance levels are oversampled to equal frequency, targets are rel/max_rel,
    the loss is binary cross-entropy. Each (learning rate, seed) run is validated
    at each checkpoint (judged-only, reranking each --valid-run's top --valid-depth);
    the (learning rate, updates) with the best mean over seeds is kept, with its
    best seed, and saved with legalir-train.json. Killed or stopped, the same
    command resumes from the last save and gives the same model. Test topic sets are refused.
    """
    from legalir import finetune

    cfg = finetune.TrainConfig(base_model=base_model, learning_rates=list(learning_rates),
                               checkpoints=sorted(set(checkpoints)), seeds=list(seeds), batch_size=batch_size,
                               max_length=max_length, weight_decay=weight_decay, warmup_ratio=warmup_ratio,
                               attention_dropout=attention_dropout, precision=precision,
                               head_lr_multiplier=head_lr_multiplier, valid_depth=valid_depth, measure=measure,
                               threads=threads, jobs=jobs, save_every=save_every)
    finetune.train_collection(cfg, collection, out_dir, valid_runs, train_sets, valid_set, work_dir,
                              stop_after=stop_after, command=" ".join(["legalir", *sys.argv[1:]]))


def _generator_options(fn):
    """Options that pick and configure a text generator (legalir.generate)."""
    opts = [
        click.option("--backend", type=click.Choice(["api", "local", "precomputed"]), default="api",
                     show_default=True, help="api: OpenAI-compatible server; local: transformers model folder; "
                                             "precomputed: a JSONL file of generations."),
        click.option("--llm", "llm_model", default=None,
                     help="api: model name [default: $LEGALIR_LLM_MODEL]; local: model folder."),
        click.option("--base-url", default=None,
                     help="api: server base URL [default: $LEGALIR_LLM_BASE_URL, else OpenAI's]."),
        click.option("--generations", type=click.Path(dir_okay=False),
                     help="precomputed: JSONL of {qid, text} ({qid, docid, text} for judges)."),
        click.option("--temperature", default=0.0, show_default=True),
        click.option("--max-tokens", default=512, show_default=True),
        click.option("--top-p", default=1.0, show_default=True),
        click.option("--gen-seed", default=0, show_default=True, help="Sampling seed (sent to the API too)."),
        click.option("--concurrency", default=4, show_default=True, help="api: parallel requests."),
        click.option("--max-retries", default=6, show_default=True, help="api: retries of transient errors."),
        click.option("--cache-dir", default=None, type=click.Path(file_okay=False),
                     help="Generation cache [default: $LEGALIR_CACHE_DIR or cache/generations]."),
        click.option("--no-cache", is_flag=True, help="Do not read or write the generation cache."),
    ]
    for o in reversed(opts):
        fn = o(fn)
    return fn


def _make_generator(backend, llm_model, base_url, generations, temperature, max_tokens, top_p, gen_seed,
                    concurrency, max_retries, cache_dir, no_cache):
    from legalir import generate

    sampling = generate.Sampling(temperature=temperature, max_tokens=max_tokens, top_p=top_p, seed=gen_seed)
    cache = False if no_cache else (cache_dir or True)
    if backend == "api":
        return generate.make("api", model=llm_model, sampling=sampling, cache=cache, base_url=base_url,
                             concurrency=concurrency, max_retries=max_retries)
    if backend == "local":
        return generate.make("local", path=llm_model, sampling=sampling, cache=cache)
    return generate.make("precomputed", path=generations)


@main.command()
@click.argument("topics", type=click.Path(exists=True, dir_okay=False))
@click.argument("out", type=click.Path(dir_okay=False))
@click.option("--method", default="structured", show_default=True,
              help="Built-in prompt (paraphrase, cot, structured, cot-housing, structured-housing, q2a, q2d, q2r) "
                   "or a .toml prompt file.")
@click.option("--join", type=click.Choice(["append", "replace", "repeat"]), default="append", show_default=True,
              help="How the generation joins the query.")
@click.option("--repeat", default=5, show_default=True, help="--join repeat: copies of the original query.")
@click.option("--save-generations", type=click.Path(dir_okay=False),
              help="Also write the raw generations as JSONL, reusable with --backend precomputed.")
@_generator_options
@friendly_errors
def expand(topics, out, method, join, repeat, save_generations, **gen_opts):
    """Expand TOPICS (.tsv/.jsonl) with an LLM; write OUT (.jsonl keeps metadata, or .tsv).

    OUT is an ordinary topics file: `legalir search` (and dense search) run on it unchanged.
    """
    from legalir import generate, trec
    from legalir.search import expansion

    tops = trec.read_topics(topics)
    gen = _make_generator(**gen_opts)
    raw: list[str] = []
    expanded = expansion.expand(tops, gen, method, join=join, repeat=repeat, generations=raw)
    n = expansion.write_topics(out, expanded)
    if save_generations:
        template = expansion.load_prompt(method)
        generate.write_generations(save_generations, expansion.requests_for(tops, template), raw)
    source = (f"read from {gen_opts['generations']}" if gen_opts["backend"] == "precomputed"
              else f"{gen.calls} generated, {getattr(gen, 'hits', 0)} from cache")
    click.echo(f"{out}: {n} expanded topics ({method}, join={join}; {source})", err=True)


@main.command()
@click.argument("out", type=click.Path(dir_okay=False))
@click.option("--run", "run_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="First-stage TREC run to rerank.")
@click.option("--topics", "topics_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Topics (.tsv/.jsonl) holding the queries of the run's topics.")
@click.option("--collection", type=click.Path(exists=True, file_okay=False),
              help="Collection folder: document texts from its JSONL corpus.")
@click.option("--index", "index_dir", type=click.Path(exists=True, file_okay=False),
              help="Or a Lucene index: document texts from its stored raw JSON.")
@click.option("-k", "--k", "k", default=100, show_default=True, help="Rerank each topic's top k.")
@click.option("--method", type=click.Choice(["cross-encoder", "pointwise", "listwise", "pairwise"]), default=None,
              help="cross-encoder (--model); pointwise LLM judge (1-5 grade = score, first-stage score breaks "
                   "ties); listwise (RankGPT sliding window); pairwise (PRP). [default: cross-encoder with "
                   "--model, pointwise with --judge]")
@click.option("--model", default=None,
              help="Cross-encoder: model folder (e.g. models/acord-ce), 'minilm', or a Hub name.")
@click.option("--judge", type=click.Choice(["graded", "binary"]), default=None,
              help="Pointwise judge scale: 1-5 grade (the ACORD paper's) or yes/no.")
@click.option("--prompt", "--judge-prompt", "prompt", type=click.Path(exists=True, dir_okay=False),
              help="LLM prompt .toml [default: judge-graded / judge-binary, judge-listwise, judge-pairwise].")
@click.option("--window", default=20, show_default=True, help="listwise: documents per window.")
@click.option("--step", default=10, show_default=True, help="listwise: how far the window moves up each time.")
@click.option("--passes", type=int, default=None,
              help="listwise: sliding-window passes [default: 1]; pairwise sliding: bubble passes = the exact "
                   "top K [default: 10].")
@click.option("--pairwise", type=click.Choice(["allpairs", "sliding"]), default="allpairs", show_default=True,
              help="pairwise: every pair in both orders (k(k-1) requests), or PRP-Sliding-K.")
@click.option("--max-words", default=300, show_default=True, help="listwise/pairwise: words kept per document.")
@click.option("--save-generations", type=click.Path(dir_okay=False),
              help="LLM methods: also write every answer as JSONL, replayable with --backend precomputed.")
@click.option("--batch-size", default=32, show_default=True)
@click.option("--max-length", type=int, default=None, help="Cross-encoder tokens per pair [default: the model's].")
@click.option("--precision", type=click.Choice(["auto", "fp32", "bf16"]), default="auto", show_default=True)
@click.option("--device", default=None, help="cpu or cuda [default: cuda when available].")
@click.option("--threads", type=int, default=None, help="Torch CPU threads [default: torch's].")
@click.option("--tag", default=None, help="Run tag [default: rerank].")
@_generator_options
@friendly_errors
def rerank(out, run_path, topics_path, collection, index_dir, k, method, model, judge, prompt, window, step, passes,
           pairwise, max_words, save_generations, batch_size, max_length, precision, device, threads, tag,
           **gen_opts):
    """Rerank the top --k of a run with a cross-encoder or an LLM (pointwise, listwise, pairwise); write OUT.

    Documents below k keep their order, below the reranked ones. LLM methods use
    the generator options (any backend; answers cached on disk).
    """
    from legalir.search import rerank as rr

    click.echo(rr.rerank_files(
        out, run_path, topics_path, method=method, collection=collection, index_dir=index_dir, k=k, model=model,
        judge=judge, prompt=prompt, make_generator=lambda: _make_generator(**gen_opts), window=window, step=step,
        passes=passes, pairwise=pairwise, max_words=max_words, batch_size=batch_size, max_length=max_length,
        precision=precision, device=device, threads=threads, tag=tag, save_generations=save_generations), err=True)


# ------------------------------------------------------------------ downstream QA (legalir.qa)
@main.command()
@click.argument("dataset", type=click.Choice(["barexam_qa", "housing_qa"]))
@click.argument("predictions", type=click.Path(dir_okay=False))
@click.option("--data-dir", default="data", show_default=True, type=click.Path(file_okay=False),
              help="Folder holding <dataset>/ in its published layout (questions, choices, answers).")
@click.option("--split", default="test", show_default=True, help="Question split (Housing: test = all labelled).")
@click.option("--condition", type=click.Choice(["none", "top1", "topk", "expansion", "gold"]), default="none",
              show_default=True, help="Passage given with each question: none, the run's top 1, its top k (most "
                                      "confident answer kept), a generated expansion, the gold passage(s).")
@click.option("--run", "run_path", type=click.Path(exists=True, dir_okay=False), help="top1/topk: retrieval run.")
@click.option("--collection", type=click.Path(exists=True, file_okay=False),
              help="top1/topk/gold: collection holding the passage texts (and the qrels for gold).")
@click.option("-k", "--k", "k", default=5, show_default=True, help="topk: passages tried per question.")
@click.option("--expansion", "expansion_path", type=click.Path(exists=True, dir_okay=False),
              help="expansion: `legalir expand` output topics (.jsonl) or generations JSONL {qid, text}.")
@click.option("--prompt", "prompt_name", default=None,
              help="QA prompt: built-in name or .toml file [default: qa_barexam / qa_housing].")
@click.option("--results", "results_path", type=click.Path(dir_okay=False),
              help="Accuracy JSON (results/ shape) [default: PREDICTIONS with .json].")
@click.option("--batch-size", default=8, show_default=True, help="local: sequences per forward pass.")
@click.option("--device", default=None, help="local: cpu or cuda [default: cuda when available].")
@click.option("--bootstrap", default=1000, show_default=True, type=click.IntRange(min=1),
              help="Bootstrap resamples for the accuracy interval.")
@click.option("--seed", default=0, show_default=True, help="Bootstrap seed.")
@_generator_options
@friendly_errors
def qa(dataset, predictions, data_dir, split, condition, run_path, collection, k, expansion_path, prompt_name,
       results_path, batch_size, device, bootstrap, seed, **gen_opts):
    """Answer DATASET's questions with an LLM under a retrieval condition; write PREDICTIONS (JSONL) and accuracy.

    --backend local scores the answer labels by likelihood (no generation); --backend api / precomputed
    parse free-text answers (refusals and unreadable answers count as wrong and are reported).
    """
    from legalir import qa as qa_mod

    answerer = (qa_mod.LikelihoodAnswerer(gen_opts["llm_model"] or "", device=device, batch_size=batch_size,
                                          cache=False if gen_opts["no_cache"] else (gen_opts["cache_dir"] or True))
                if gen_opts["backend"] == "local" else qa_mod.ChatAnswerer(_make_generator(**gen_opts)))
    result = qa_mod.run(dataset, data_dir, split, condition, answerer, predictions, results_path,
                        prompt=prompt_name, run_path=run_path, collection=collection, k=k,
                        expansion_path=expansion_path, bootstrap=bootstrap, seed=seed,
                        command=" ".join(["legalir", *sys.argv[1:]]))
    click.echo(qa_mod.summary_line(result))


@main.command("qa-report")
@click.argument("dataset", type=click.Choice(["barexam_qa", "housing_qa"]))
@click.argument("results", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--label", "labels", multiple=True, help="Row label per results file [default: file name].")
@friendly_errors
def qa_report(dataset, results, labels):
    """Print QA accuracies (RESULTS from `legalir qa`) beside the paper's Llama 3 8B rows."""
    from legalir import qa as qa_mod

    if labels and len(labels) != len(results):
        raise click.BadParameter(f"{len(labels)} labels for {len(results)} results", param_hint="--label")
    rows = [(labels[i] if labels else Path(p).stem, json.loads(Path(p).read_text())) for i, p in enumerate(results)]
    click.echo(qa_mod.table(dataset, rows))


# ------------------------------------------------------------------ analyses (legalir.analyze)
def _labelled(ctx, param, value):
    """LABEL=PATH (or PATH: labelled by its file or folder name)."""
    out = []
    for v in value:
        label, _, path = v.rpartition("=") if "=" in v else ("", "", v)
        out.append((label or Path(path).name.removesuffix(".trec"), path))
    return out


@main.group()
def analyze():
    """Analyses beyond retrieval scores (lexical similarity)."""


@analyze.command("lexical")
@click.argument("inputs", nargs=-1, required=True, callback=_labelled, metavar="[LABEL=]COLLECTION...")
@click.option("--topics", "topic_set", default="test", show_default=True, help="Topic set (and its qrels).")
@click.option("-l", "--level", default=1, show_default=True, help="Lowest qrels relevance counted as gold.")
@click.option("--by", default=None, help="Split each collection into subsets by this topic metadata field.")
@click.option("--run", "runs", multiple=True, callback=_labelled, metavar="[LABEL=]RUN",
              help="Run of the first collection for the bucket plot (repeatable).")
@click.option("--measure", default="recall.10", show_default=True, help="Per-topic measure of the bucket plot.")
@click.option("-J", "judged_only", is_flag=True, help="Judged-only scoring of the runs (ACORD).")
@click.option("--fit", type=click.Choice(["pairs", "corpus"]), default="pairs", show_default=True,
              help="Fit TF-IDF on the compared texts of each sample, or on the whole corpus.")
@click.option("--agg", type=click.Choice(["max", "mean"]), default="max", show_default=True,
              help="A query with several gold documents: its most similar one, or the mean.")
@click.option("--answers-from", "answers_dataset", type=click.Choice(["barexam_qa", "housing_qa"]), default=None,
              help="(gold, answer) similarity for the first collection: answers from this dataset's files.")
@click.option("--answer-field", default=None, help="Or: topic metadata field holding the answer text.")
@click.option("--data-dir", default="data", show_default=True, type=click.Path(file_okay=False),
              help="Folder of the published files (for --answers-from).")
@click.option("--width", default=0.1, show_default=True, help="Similarity bucket width.")
@click.option("--bootstrap", default=1000, show_default=True, type=click.IntRange(min=1), help="Bootstrap resamples.")
@click.option("--seed", default=0, show_default=True, help="Bootstrap seed.")
@click.option("--out-dir", type=click.Path(file_okay=False), help="Write lexical.json and the figures (PNG, SVG).")
@friendly_errors
def analyze_lexical(inputs, topic_set, level, by, runs, measure, judged_only, fit, agg, answers_dataset, answer_field,
                    data_dir, width, bootstrap, seed, out_dir):
    """TF-IDF cosine of (query, gold) and (gold, answer) per topic: means with CIs, KS and Welch tests between
    collections or subsets, histograms, and a retrieval measure per similarity bucket (--run)."""
    from legalir.analyze import lexical

    result = lexical.run_analysis(inputs, topic_set=topic_set, level=level, by=by, runs=runs, measure=measure,
                                  judged_only=judged_only, fit=fit, agg=agg, answers_dataset=answers_dataset,
                                  answer_field=answer_field, data_dir=data_dir, width=width, bootstrap=bootstrap,
                                  seed=seed, out_dir=out_dir)
    click.echo(lexical.format_analysis(result))


# ------------------------------------------------------------------ regressions (legalir.regress)
@main.command()
@click.argument("dataset")
@click.option("--all", "all_tiers", is_flag=True, help="Also run the slow tier (e.g. dense encoding).")
@click.option("--root", default=".", show_default=True, type=click.Path(file_okay=False),
              help="Folder holding collections/, indexes/, runs/ (the Makefile's layout); outputs land there.")
@click.option("--data-dir", default="data", show_default=True,
              help="Folder of the published files (relative to --root, or absolute).")
@friendly_errors
def regress(dataset, all_tiers, root, data_dir):
    """Rerun DATASET's published pipelines (resources/regressions/DATASET.toml); OK / off by / FAIL per number.

    Exit status 1 when a number FAILs."""
    from legalir import regress as rg

    spec = rg.load(dataset)
    Path(root).mkdir(parents=True, exist_ok=True)
    rows, ok = rg.regress(spec, root=root, data_dir=data_dir, all_tiers=all_tiers,
                          invoke=lambda args: main.main(args, standalone_mode=False),
                          log=lambda m: click.echo(m, err=True))
    click.echo(rg.format_rows(rows))
    click.echo(f"{dataset}: {'all OK' if ok else 'FAILED'} ({sum(r['verdict'] == 'OK' for r in rows)} of "
               f"{len(rows)} numbers OK)")
    if not ok:
        sys.exit(1)


# ------------------------------------------------------------------ serve
@main.command()
@click.option("--index", "indexes", multiple=True, metavar="NAME=DIR",
              help="Expose a Lucene or FAISS index (or a folder of per-partition ones) as NAME (repeatable); the "
                   "same NAME for a Lucene and a FAISS index offers bm25, dense and hybrid search.")
@click.option("--collection", "collections_", multiple=True, metavar="NAME=DIR",
              help="Expose a collection's documents as NAME (repeatable) [default: each index's own collection].")
@click.option("--run", "runs", multiple=True, metavar="NAME=FILE", help="A TREC run for the run explorer (repeatable).")
@click.option("--qrels", "qrels", multiple=True, metavar="NAME=FILE",
              help="Qrels of the run of the same NAME, or of every run when only one is given (repeatable).")
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False),
              help="TOML or JSON file with [index], [collection], [run], [qrels] tables (and host, port).")
@click.option("--host", default=None, help="Address to listen on [default: the config's, else 127.0.0.1 (loopback)].")
@click.option("--port", type=int, default=None, help="Port to listen on [default: the config's, else 8000].")
@click.option("--workers", default=4, show_default=True, type=click.IntRange(min=1),
              help="Worker threads for requests; BM25 searches that arrive together run as one Lucene batch "
                   "over this many Java threads.")
@click.option("--k1", type=float, default=None, help="BM25 k1 [default: Pyserini's 0.9].")
@click.option("--b", type=float, default=None, help="BM25 b [default: Pyserini's 0.4].")
@click.option("-m", "--measure", "measures", multiple=True, metavar="MEASURE",
              help="Run explorer measure, repeatable, as for `legalir eval` [default: the dataset's, else "
                   "ndcg_cut.10 and recip_rank].")
@click.option("--judged-only/--all-documents", "judged_only", default=None,
              help="Score runs judged-only (trec_eval -J) or not [default: the dataset's protocol].")
@click.option("--device", default=None, help="torch device of dense query encoders [default: cuda if present].")
@click.option("--log-level", type=click.Choice(["critical", "error", "warning", "info", "debug"]), default="warning",
              show_default=True, help="uvicorn's log level (info shows each request).")
@friendly_errors
def serve(indexes, collections_, runs, qrels, config_file, host, port, workers, k1, b, measures,
          judged_only, device, log_level):
    """Serve indexes, documents and runs over HTTP: a JSON API (/docs) and a web page (/).

    \b
      legalir serve --index acord=indexes/acord/bm25 --run bm25=runs/acord/bm25.test.trec \\
                    --qrels bm25=collections/acord/qrels/test.txt
    """
    from legalir.serve import app

    app.serve(indexes, collections_, runs, qrels, config_file, host=host, port=port, workers=workers,
              log_level=log_level, lucene_threads=workers, k1=k1, b=b, measures=list(measures) or None,
              judged_only=judged_only, device=device)


if __name__ == "__main__":  # pragma: no cover
    main()
