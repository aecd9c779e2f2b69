"""The `legalir` command line: the group, the one error path, and the commands' registration.

Commands live in :mod:`legalir.commands` (one module per pipeline stage);
each parses its options and calls one library function. Every failure a
user can cause (see :func:`legalir.errors.user_message`) ends with
``error: <file>[:<line>]: <what is wrong and what to do>`` on stderr and exit
status 2; ``--debug`` (or ``LEGALIR_DEBUG=1``) shows the traceback instead.
"""
from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time

import click

from legalir import commands
from legalir.base import collector
from legalir.errors import DEBUG_ENV, debug_enabled, user_message
from legalir.version import __version__


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
        # the program's collector (legalir.base.collector): its thresholds for the command, and once the command has
        # ended no collector pass over everything it loaded (with torch and transformers, a second of the exit's
        # CPU). A Python program calling the command line in process keeps its own: the collector is its process's
        program = _is_the_program()
        if program:
            collector.collect_less()
            name = next((a for a in sys.argv[1:] if not a.startswith("-")), None)  # the group takes no values
            if name is not None and name not in _OWN_SIGNALS:
                stop_on_signals()
            if name in _SEARCH_ONLY:
                from legalir.base import jvm

                jvm.prefer(*jvm.SEARCH_ONLY)
        try:
            return self._invoke(ctx)
        finally:
            if program:
                collector.settle()

    def _invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:  # Ctrl-C (SIGINT) unwound the command: what was being written is removed
            click.echo("error: stopped by SIGINT (interrupted): nothing was published", err=True)
            ctx.exit(130)
        except SystemExit as e:
            from legalir.base.atomic.common import _Terminated

            if isinstance(e, _Terminated):  # SIGTERM unwound the command, as Ctrl-C does
                click.echo("error: stopped by SIGTERM: nothing was published", err=True)
            raise
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
            if isinstance(e, OSError) and e.filename is None and message.startswith("standard output:"):
                # what could not be written stays in stdout's buffer: flushed at exit, it would fail again
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            click.echo(f"error: {message}", err=True)
            ctx.exit(2)


#: seconds a command has, after SIGINT or SIGTERM, to stop by itself (unwinding: temporaries removed, nothing
#: published) before the process ends anyway (a command blocked in Java or in Ray's connection loop)
GRACE_S = 3.0
#: commands that stop on signals their own way (uvicorn's graceful shutdown)
_OWN_SIGNALS = ("serve", "mcp")
#: commands that never build an index: the program running one starts its JVM with log4j's simple logger
#: (:data:`legalir.base.jvm.SEARCH_ONLY`). Only the program: a Python program calling them in process may index
#: next, in the same JVM, which needs log4j-core
_SEARCH_ONLY = ("search", "serve", "mcp")
_stopper: list = []


def _is_the_program() -> bool:
    """Whether this process is the `legalir` program (its console script, or ``python -m legalir.cli``), not a
    Python program calling the command line in-process (a test's CliRunner): only the program's signals are
    legalir's to handle."""
    argv0 = sys.argv[0] if sys.argv else ""
    return os.path.basename(argv0) == "legalir" or os.path.realpath(argv0) == os.path.realpath(__file__)


def _terminate(signum, frame):
    """SIGTERM as an exception: ``finally`` blocks run (temporaries removed), exit status 143."""
    from legalir.base.atomic.common import _Terminated

    raise _Terminated(128 + signum)


def stop_on_signals(grace: float = GRACE_S) -> bool:
    """Make SIGINT and SIGTERM stop this process within ``grace`` seconds, whatever its main thread is doing.

    Both first unwind the main thread (KeyboardInterrupt; SIGTERM raises ``SystemExit(143)``), so an output
    being written is never published and its temporary is removed. A main thread blocked in Java or in a
    Ray connection does not run Python until that call returns: the signal also wakes a watchdog thread
    (through :func:`signal.set_wakeup_fd`, written by the C-level handler at once), which, if the process is
    still alive ``grace`` seconds later (or at a second signal), removes the temporaries being written
    (:func:`legalir.base.atomic.abandon`), says so on stderr and ends the process (exit status 128 + signal).
    Main thread only, once per process; returns whether it is in force.
    """
    if _stopper:
        return True
    if threading.current_thread() is not threading.main_thread():
        return False
    r, w = os.pipe()
    os.set_blocking(w, False)
    try:
        signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except (ValueError, OSError):  # pragma: no cover - not the main thread of the main interpreter
        os.close(r)
        os.close(w)
        return False
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, _terminate)
    if signal.getsignal(signal.SIGINT) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGINT, signal.default_int_handler)

    def watch():
        first = 0
        while first not in (signal.SIGINT, signal.SIGTERM):  # the wakeup fd carries every caught signal
            first = os.read(r, 1)[0]
        deadline = time.monotonic() + grace
        import select

        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([r], [], [], left)
            if ready and any(b in (signal.SIGINT, signal.SIGTERM) for b in os.read(r, 64)):
                break  # a second signal: stop now
        from legalir.base import atomic

        gone = atomic.abandon()
        name = signal.Signals(first).name
        removed = f"; removed what it was writing ({', '.join(str(p) for p in gone)})" if gone else ""
        try:
            os.write(2, f"error: stopped by {name}: the command did not finish within {grace:g} s, so legalir "
                        f"ended it; nothing was published{removed}\n".encode())
        finally:
            os._exit(128 + first)

    threading.Thread(target=watch, name="legalir-signal-watchdog", daemon=True).start()
    _stopper.append(w)
    return True


@click.group(cls=LegalirGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="legalir")
@click.option("--debug", is_flag=True,
              help=f"Show the Python traceback of errors (for bug reports); also ${DEBUG_ENV}=1.")
@click.option("-v", "--verbose", is_flag=True, help="Also print debugging messages on stderr.")
@click.option("-q", "--quiet", is_flag=True,
              help="Print only legalir's warnings and errors on stderr: no progress messages or bars, no other "
                   "library's warnings; also LEGALIR_LOG_LEVEL=WARNING. (A progress bar is drawn only when stderr "
                   "is a terminal.)")
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
    from legalir.base import log

    root = log.configure("DEBUG" if verbose else "WARNING" if quiet else None)
    if quiet or not root.isEnabledFor(logging.INFO):  # -q, LEGALIR_LOG_LEVEL=WARNING: no library's warnings either
        log.quiet_libraries()


if __name__ == "__main__":  # `python -m legalir.cli`: the tests' servers and child processes
    main()
