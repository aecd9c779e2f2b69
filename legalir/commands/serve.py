"""Serving: `legalir serve` exposes indexes, documents and runs over HTTP (legalir.serve)."""
from __future__ import annotations

import click


@click.command()
@click.option("--index", "indexes", multiple=True, metavar="NAME=DIR",
              help="Expose a Lucene or FAISS index (or a folder of per-partition ones) as NAME (repeatable); the "
                   "same NAME for a Lucene and a FAISS index offers bm25, dense and hybrid search.")
@click.option("--collection", "collections_", multiple=True, metavar="NAME=DIR",
              help="Expose a collection's documents as NAME (repeatable) [default: each index's own collection].")
@click.option("--run", "runs", multiple=True, metavar="NAME=FILE", help="A TREC run for the run explorer (repeatable).")
@click.option("--qrels", "qrels", multiple=True, metavar="[NAME=]FILE",
              help="Qrels of the run of the same NAME, or of every run when only one is given (repeatable; "
                   "one --qrels needs no NAME).")
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False),
              help="TOML or JSON file with [index], [collection], [run], [qrels] tables (and host, port).")
@click.option("--host", default=None, help="Address to listen on [default: the config's, else 127.0.0.1 (loopback)].")
@click.option("--port", type=click.IntRange(0, 65535), default=None, help="Port to listen on [default: the config's, else 8000].")
@click.option("--workers", default=4, show_default=True, type=click.IntRange(min=1),
              help="Worker threads for requests; BM25 searches that arrive together run as one Lucene batch "
                   "over this many Java threads.")
@click.option("--k1", type=click.FloatRange(min=0), default=None, help="BM25 k1 [default: the tuned value of the dataset the index was built from, else Pyserini's 0.9].")
@click.option("--b", type=click.FloatRange(0, 1), default=None, help="BM25 b [default: the tuned value of the dataset the index was built from, else Pyserini's 0.4].")
@click.option("-m", "--measure", "measures", multiple=True, metavar="MEASURE",
              help="Run explorer measure, repeatable, as for `legalir eval` [default: the dataset's, else "
                   "ndcg_cut.10 and recip_rank].")
@click.option("--judged-only/--all-documents", "judged_only", default=None,
              help="Score runs judged-only (trec_eval -J) or not [default: the dataset's protocol].")
@click.option("--device", default=None, help="torch device of dense query encoders [default: cuda if present].")
@click.option("--log-level", type=click.Choice(["critical", "error", "warning", "info", "debug"]), default="warning",
              show_default=True, help="uvicorn's log level (info shows each request).")
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


COMMANDS = [serve]
