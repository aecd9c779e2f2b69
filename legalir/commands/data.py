"""Published files -> collections -> Lucene indexes: download, datasets, convert, index, chunk, anchors."""
from __future__ import annotations

import click

from legalir.commands.options import force_option, key_values


@click.command()
@click.argument("dataset")
@click.option("--data-dir", default="data", show_default=True, type=click.Path(file_okay=False),
              help="Folder holding <dataset>/ in its published layout.")
@click.option("--revision", default=None, help="Hub revision (branch, tag or commit) to fetch [default: main].")
@click.option("--timeout", default=10.0, show_default=True, help="Seconds to wait for the Hub before giving up.")
@click.option("--force", is_flag=True, help="Fetch even when the files are already there.")
def download(dataset, data_dir, revision, timeout, force):
    """Fetch DATASET's published files from the Hugging Face Hub (fails at once when offline)."""
    from legalir.datasets import download as dl

    for path in dl.fetch(dataset, data_dir, timeout=timeout, force=force, revision=revision):
        click.echo(str(path))


@click.command("datasets")
@click.option("--make", "as_make", is_flag=True,
              help="Print the datasets' pipelines as make variables (what the Makefile includes).")
def datasets_(as_make):
    """List the datasets: name, Hub repository, measures, options, pipeline."""
    from legalir.datasets import catalogue

    click.echo(catalogue.make_variables() if as_make else catalogue.listing(), nl=False)


@click.command()
@click.argument("dataset")
@click.option("--data-dir", default="data", show_default=True, type=click.Path(file_okay=False),
              help="Folder holding <dataset>/ in its published layout.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False),
              help="Collection folder to write [default: $LEGALIR_COLLECTIONS/<dataset>, else "
                   "collections/<dataset>: where legalir.load looks].")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE", callback=key_values,
              help="Dataset-specific option (repeatable), e.g. --option text=citation+path+text "
                   "(`legalir datasets` lists each dataset's options).")
@click.option("--strict", is_flag=True, help="Fail on duplicate ids, empty texts or dangling qrels documents.")
@click.option("--overwrite", is_flag=True,
              help="Replace OUT all the same when it holds files legalir did not write there or that changed "
                   "since (named, and logged as replaced), or a legalir output of another kind (a folder that is "
                   "no legalir output is never replaced).")
@click.option("--quiet", is_flag=True, help="No progress bar or problem report on stderr.")
@click.option("--citations", type=click.Choice(["on", "off"]), default="on", show_default=True,
              help="Extract each document's citations (eyecite and legalir's state-code rules) into its "
                   "normalised `citations` field (docs/legal-structure.md).")
def convert(dataset, data_dir, out_dir, options, strict, overwrite, quiet, citations):
    """Turn DATASET's published files into a collection: JSONL corpus, topics, qrels."""
    from legalir import collections, datasets

    # the one default place (legalir.collections.default_path: $LEGALIR_COLLECTIONS, else ./collections), where
    # legalir.load and `legalir report` look for it
    out = out_dir or str(collections.default_path(datasets.dataset_class(dataset).name))
    m = collections.write(datasets.get(dataset, data_dir, **options), out, quiet=quiet, strict=strict,
                          overwrite=overwrite, citations=citations == "on")
    d = m["documents"]
    click.echo(f"{out}: {d['written']} documents written of {d['read']} read "
               f"({d['duplicate_ids']} duplicate ids, {d['empty_text']} empty); "
               f"topic sets: {', '.join(f'{k} ({v})' for k, v in m['topics'].items())}", err=True)


class DefaultGroup(click.Group):
    """A group whose first argument, when it names no subcommand, goes to its ``default`` one
    (``legalir index COLLECTION DIR`` is ``legalir index build COLLECTION DIR``)."""

    def __init__(self, *args, default: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.default = default

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = [self.default, *args]
        return super().parse_args(ctx, args)


@click.group(cls=DefaultGroup, default="build")
def index():
    """Build the Lucene index of a collection, or update a built index (Lucene, FAISS) as a new version.

    \b
      legalir index COLLECTION INDEX_DIR            # the same as: legalir index build COLLECTION INDEX_DIR
      legalir index update INDEX [INDEX] --add new.jsonl --replace changed.jsonl --delete gone.txt
    """


@index.command("build")
@click.argument("collection", type=click.Path(exists=True, file_okay=False))
@click.argument("index_dir", type=click.Path(file_okay=False))
@click.option("--threads", default=2, show_default=True, type=click.IntRange(min=1), help="Indexing threads.")
@click.option("--partition", "partitions", multiple=True,
              help="Build only these partitions of a partitioned collection (repeatable).")
@click.option("--overwrite", is_flag=True,
              help="Replace INDEX_DIR all the same when it holds files legalir did not write there or that "
                   "changed since (named, and logged as replaced), a legalir output of another kind, or changes "
                   "from `legalir index update` (dropped: they are not in the collection); a folder that is no "
                   "legalir output is never replaced.")
@click.option("--pooled", is_flag=True,
              help="A partitioned collection (Housing) as one index over every partition, searched with a filter "
                   "on the partition field (legalir search --filter / --filter-by) instead of one index each; a "
                   "search filtered to partitions scores with their statistics, as their own indexes would.")
def index_build(collection, index_dir, threads, partitions, overwrite, pooled):
    """Build the Lucene index of COLLECTION into INDEX_DIR (one per partition when partitioned)."""
    from legalir.indexing import sparse

    counts = sparse.build(collection, index_dir, threads=threads, partitions=list(partitions) or None,
                          overwrite=overwrite, pooled=pooled)
    where = f"1 pooled index ({len(counts)} partitions)" if pooled else f"{len(counts)} index(es)"
    click.echo(f"{index_dir}: {sum(counts.values())} documents in {where}", err=True)


@index.command("update")
@click.argument("indexes", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--add", "add", multiple=True, type=click.Path(dir_okay=False, allow_dash=True), metavar="FILE",
              help="New documents, JSONL {\"id\", \"contents\", ...metadata} as a collection holds them; a "
                   "partitioned collection's carry its partition field (repeatable; - reads standard input).")
@click.option("--replace", "replace", multiple=True, type=click.Path(dir_okay=False, allow_dash=True),
              metavar="FILE", help="Changed documents, the same JSONL: each replaces the document of its id "
                                   "(repeatable).")
@click.option("--delete", "delete", multiple=True, type=click.Path(dir_okay=False, allow_dash=True),
              metavar="FILE", help="Ids of documents to delete, one per line (or JSONL with an id) (repeatable).")
@click.option("--to", "to", type=click.Path(exists=True, file_okay=False), metavar="COLLECTION", default=None,
              help="A newer release's collection of the same dataset: apply the difference between what INDEXES "
                   "hold and it (sections added, changed, removed), so the new version searches as a fresh "
                   "index of COLLECTION (not with --add/--replace/--delete). A release that is not newer than "
                   "the index's (older, the same, or none recorded) is refused, naming both.")
@click.option("--allow-older", is_flag=True,
              help="With --to: apply COLLECTION even when its release is not newer than the index's (older, the "
                   "same, or none recorded); the new version's marker records the release it went from.")
@click.option("--threads", default=2, show_default=True, type=click.IntRange(min=1), help="Lucene indexing threads.")
@click.option("--device", default=None, help="torch device of a FAISS index's encoder [default: cuda if present].")
@click.option("--batch-size", default=None, type=click.IntRange(min=1),
              help="Encoding batch size of new documents (FAISS) [default: 32].")
@click.option("--quiet", is_flag=True, help="No progress messages.")
def index_update(indexes, add, replace, delete, to, allow_older, threads, device, batch_size, quiet):
    """Apply added, changed and deleted documents to built INDEXES, each as a new version.

    INDEXES: a Lucene index, a FAISS index, or one of each built from one
    collection (updated together). The new version searches exactly as a full
    rebuild from the updated collection would (segments that lose documents
    are rewritten, so BM25 statistics are exact); searches and `legalir
    serve` that opened the old version keep it, the server switches between
    requests. Nothing is written unless every change fits: an added id must
    be new, a replaced or deleted one in the index.
    """
    from legalir.indexing import update

    done = update.update(indexes, add=add, replace=replace, delete=delete, to=to, allow_older=allow_older,
                         threads=threads, device=device, batch_size=batch_size, quiet=quiet)
    if not done:
        click.echo(f"{', '.join(indexes)}: already hold what {to} holds; nothing to apply", err=True)
    for kind, d in done.items():
        same = (f", {d['same']} unchanged; {d['text_changed']} of the replaced with a new text" if "same" in d
                else "")
        if d.get("restated"):
            same += (f", {d['restated']} changed in fields the index does not search only (logged for display, "
                     f"their indexed documents kept)")
        click.echo(f"{d['index']}: now {d['version']}, {d['documents']} documents ({d['add']} added, "
                   f"{d['replace']} replaced, {d['delete']} deleted{same})", err=True)


@click.command()
@click.argument("source", type=click.Path(exists=True))
@click.argument("out", type=click.Path())
@click.option("--max-tokens", default=512, show_default=True, type=click.IntRange(min=1),
              help="Chunk size limit in tokenizer tokens.")
@click.option("--tokenizer", default=None,
              help="Tokenizer folder, tokenizer.json, 'minilm' or Hub name [default: the bundled MiniLM (BERT "
                   "uncased) one].")
@click.option("--id-field", default="id", show_default=True, help="Document id field of a JSONL SOURCE.")
@click.option("--text-field", default="contents", show_default=True, help="Markdown text field of a JSONL SOURCE.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@force_option()
def chunk(source, out, max_tokens, tokenizer, id_field, text_field, quiet):
    """Split markdown documents into contextualised passages (CRUMB's chunking).

    SOURCE is a JSONL corpus or a collection folder. OUT ending in .jsonl gets
    the passages as JSONL; otherwise OUT becomes a collection folder (passages
    and the source's topics) ready for `legalir index`. Passage ids are
    <docid>:<n> with parent_id; score passage runs after `legalir maxp`.
    """
    from legalir.collections.chunking import Chunker, chunk_corpus

    stats = chunk_corpus(source, out, Chunker(max_tokens, tokenizer), id_field=id_field, text_field=text_field,
                         quiet=quiet)
    click.echo(f"{out}: {stats['passages']} passages from {stats['documents']} documents "
               f"({stats['over_limit']} single blocks over {max_tokens} tokens kept whole; "
               f"{stats['empty_documents']} documents without text"
               + (f": {', '.join(stats['empty_first'])}" if stats['empty_documents'] else "") + ")", err=True)


@click.command()
@click.argument("collection", type=click.Path(exists=True, file_okay=False))
@click.argument("out", type=click.Path())
@click.option("--from", "sources", multiple=True, default=("train",), show_default=True, metavar="SET",
              help="Topic set whose paragraphs give the anchors (repeatable); every other topic set of "
                   "COLLECTION is held out: none of its paragraphs, nor any paragraph sharing a run of "
                   "--shingle words with one, gives an anchor.")
@click.option("--window", default=10, show_default=True, type=click.IntRange(min=0),
              help="Words kept on each side of the target's section number in a linking paragraph "
                   "(0: the whole paragraph; 10 was chosen on training codes' valid topics).")
@click.option("--shingle", default=8, show_default=True, type=click.IntRange(min=1),
              help="The run of words an anchor's paragraph may never share with a held-out topic.")
@click.option("--max-per-document", default=100, show_default=True, type=click.IntRange(min=1),
              help="The most distinct anchors one document gets.")
@click.option("--overwrite", is_flag=True,
              help="Replace OUT when it is a legalir output of another kind or changed since legalir wrote it.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def anchors(collection, out, sources, window, shingle, max_per_document, overwrite, quiet):
    """Expand each document of a cross-reference COLLECTION with the text of the links to it (anchor text).

    Each section's text is followed by the words around the links that point to it from other paragraphs
    of the same code (the paragraphs of the --from topic sets); OUT is a collection ready for `legalir
    index`, with COLLECTION's topics and qrels. Nothing is trained. Held-out topics never give an anchor,
    checked on the written text (docs/statutes.md).
    """
    from legalir.collections.anchors import expand_collection

    m = expand_collection(collection, out, sources=sources, window=window or None, shingle=shingle,
                          max_per_document=max_per_document, overwrite=overwrite, quiet=quiet)
    c = m["reader"]["anchors"]
    click.echo(f"{out}: {c['anchors']} anchors on {c['documents_with_anchors']} of {m['documents']['written']} "
               f"documents, from {c['kept']} of {c['paragraphs']} paragraphs of {m['options']['anchors_from']} "
               f"({c['dropped_same_text']} dropped as a held-out topic's text, {c['dropped_shared_words']} sharing "
               f"{shingle} words with one, {c['dropped_short']} shorter than that); held out: "
               f"{m['options']['anchors_held_out']}", err=True)


COMMANDS = [download, datasets_, convert, index, chunk, anchors]
