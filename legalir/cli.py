"""The `legalir` command line: the group, the one error path, and the commands' registration.

Commands live in :mod:`legalir.commands` (one module per pipeline stage);
each parses its options and calls one library function. Every failure a
user can cause (see :func:`legalir.errors.user_message`) ends with
``error: <file>[:<line>]: <what is wrong and what to do>`` on stderr and exit
status 2; ``--debug`` (or ``LEGALIR_DEBUG=1``) shows the traceback instead.
"""
from __future__ import annotations

import click

from legalir.version import __version__

from legalir import commands
from legalir.errors import DEBUG_ENV, debug_enabled, user_message


def friendly_errors(fn):
    """Kept for commands written against the old decorator: errors are handled by the group now."""
    return fn


class LegalirGroup(click.Group):
    """A click group whose commands' user errors become one ``error:`` line and exit status 2; a command's
    module is imported when the command is looked up (:mod:`legalir.commands`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(commands.REGISTRY)

    def get_command(self, ctx: click.Context, cmd_name: str):
        return self.commands.get(cmd_name) or commands.load(cmd_name)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except click.UsageError as e:  # a bad option value or a missing argument, before any work
            # the whole command path (`legalir analyze lexical`, `legalir index build`), named `legalir`
            # however the program was started
            names, c = [], e.ctx
            while c is not None and c.parent is not None:
                names.append(c.info_name)
                c = c.parent
            where = " ".join(["legalir", *reversed(names)])
            click.echo(f"error: {where}: {e.format_message()} (see `{where} --help`)", err=True)
            ctx.exit(2)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except Exception as e:
            message = user_message(e)
            if message is None or ctx.params.get("debug") or debug_enabled():
                raise
            click.echo(f"error: {message}", err=True)
            ctx.exit(2)


@click.group(cls=LegalirGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="legalir")
@click.option("--debug", is_flag=True,
              help=f"Show the Python traceback of errors (for bug reports); also ${DEBUG_ENV}=1.")
@click.option("-v", "--verbose", is_flag=True, help="Also print debugging messages on stderr.")
@click.option("-q", "--quiet", is_flag=True,
              help="Print only warnings and errors on stderr (no progress messages); also LEGALIR_LOG_LEVEL=WARNING.")
def main(debug, verbose, quiet):
    """legalir: legal IR benchmarks from published files to scored TREC runs.

    \b
    Typical pipeline (what the Makefile targets run):
      legalir convert acord                       # published files -> collections/acord
      legalir index collections/acord indexes/acord/bm25
      legalir search indexes/acord/bm25 collections/acord/topics/test.jsonl runs/acord/bm25.test.trec
      legalir eval -J -m ndcg_cut.5,10 collections/acord/qrels/test.txt runs/acord/bm25.test.trec
      # -> ndcg_cut_5 all 0.4806, ndcg_cut_10 all 0.5020: the demo's row (`make demo`), BM25 with
      #    ACORD's tuned k1=1.0 b=0.5, which `search` takes from the dataset the index was built from
      legalir report acord runs/acord/bm25.test.trec   # the same run beside the paper's rows

    A failure caused by the input prints `error: <file>[:<line>]: ...` and exits with status 2.
    """
    from legalir import log

    log.configure("DEBUG" if verbose else "WARNING" if quiet else None)


if __name__ == "__main__":  # pragma: no cover
    main()
