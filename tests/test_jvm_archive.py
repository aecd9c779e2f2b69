"""The JVM's class-data archive (legalir.base.jvm.class_archive; scripts/jvm_archive.py, which `make setup` runs):
used where it is built for this Java and these jars, and never a cause of a failure or of a word on the output."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from legalir.base import jvm

#: a child that starts legalir's JVM, loads Anserini's searcher class and prints where it came from
PROBE = ("from legalir.base import jvm; jvm.start(); "
         "c = jvm.autoclass('java.lang.Class').forName('io.anserini.search.SimpleSearcher'); print('loaded', c.getName())")


def _probe(cache: Path, log: Path) -> tuple[subprocess.CompletedProcess, str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache),
           "LEGALIR_JVM_OPTIONS": f"-XX:TieredStopAtLevel=1 -Xlog:class+load=info:file={log}"}
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300)
    lines = [line for line in log.read_text().splitlines() if " io.anserini.search.SimpleSearcher " in line]
    assert len(lines) == 1, lines
    return done, lines[0].rpartition("source: ")[2]


def test_an_archive_built_for_this_java_is_used_and_a_refused_one_changes_nothing(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    archive = jvm.class_archive()
    assert archive.parent == cache / "legalir" / "jvm" and archive.name.startswith("classes-")
    assert not any(o.startswith("-XX:SharedArchiveFile") for o in jvm.options())  # none built: none offered

    done, source = _probe(cache, tmp_path / "none.log")
    assert done.returncode == 0 and done.stdout == "loaded io.anserini.search.SimpleSearcher\n", done.stderr
    assert source.endswith(".jar"), source  # read from Anserini's jar

    # the classes a run loaded (as scripts/jvm_archive.py records them), dumped into the archive
    listed = tmp_path / "classes.lst"
    env = {**os.environ, "XDG_CACHE_HOME": str(cache),
           "LEGALIR_JVM_OPTIONS": f"-XX:TieredStopAtLevel=1 -Xshare:off -XX:DumpLoadedClassList={listed}"}
    subprocess.run([sys.executable, "-c", PROBE], env=env, check=True, capture_output=True, timeout=300)
    assert jvm.build_class_archive(listed) == archive and archive.stat().st_size > 1_000_000
    assert f"-XX:SharedArchiveFile={archive}" in jvm.options()
    import json  # its record: what proves it legalir's, and what it was made from (prune_class_archives)

    assert json.loads(archive.with_suffix(".json").read_text()) == {
        "java_home": os.path.realpath(jvm.java_home()),
        "jars": [os.path.realpath(jvm.anserini_jar()), os.path.realpath(jvm.legalir_jar())]}

    done, source = _probe(cache, tmp_path / "shared.log")
    assert done.returncode == 0 and done.stdout == "loaded io.anserini.search.SimpleSearcher\n", done.stderr
    assert source == "shared objects file", source

    # an archive the JVM refuses (here: cut short) starts the JVM as without one, and says nothing
    archive.write_bytes(archive.read_bytes()[:4096])
    done, source = _probe(cache, tmp_path / "refused.log")
    assert done.returncode == 0 and done.stdout == "loaded io.anserini.search.SimpleSearcher\n", done.stderr
    assert "cds" not in done.stderr.lower() and source.endswith(".jar"), (done.stderr, source)


def test_the_archive_belongs_to_the_jars_it_was_dumped_from(tmp_path, monkeypatch):
    """A jar changed in place (a rebuilt legalir.jar) keys another archive: the old one is not offered."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    jar = tmp_path / "legalir.jar"
    jar.write_bytes(Path(jvm.legalir_jar()).read_bytes())
    monkeypatch.setattr(jvm, "legalir_jar", lambda: str(jar))
    before = jvm.class_archive()
    os.utime(jar, ns=(jar.stat().st_atime_ns, jar.stat().st_mtime_ns + 1_000_000_000))
    assert jvm.class_archive() != before and jvm.class_archive().parent == before.parent


def test_archives_no_jvm_can_use_again_are_removed_and_only_those(tmp_path, monkeypatch):
    """An archive legalir recorded (its Java home and jars beside it) is removed once a jar it was made from is gone
    or changed, since its KEY then names nothing; another installation's, with its jars as they were, an archive
    without a record and the one being kept stay, byte for byte."""
    import json

    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    folder = jvm.crash_dir()
    home = os.path.realpath(jvm.java_home())

    def made(name: str, jars: list[str]) -> Path:
        """An archive file as build_class_archive leaves it: the archive, and its record beside it."""
        jar = tmp_path / name
        jar.write_bytes(Path(jvm.legalir_jar()).read_bytes())
        jars = [os.path.realpath(j) for j in [jvm.anserini_jar(), str(jar), *jars]]
        archive = folder / f"classes-{jvm._archive_key(home, jars)}.jsa"
        archive.write_bytes(name.encode())
        archive.with_suffix(".json").write_text(json.dumps({"java_home": home, "jars": jars}))
        return archive

    changed, gone, other, kept = made("changed.jar", []), made("gone.jar", []), made("other.jar", []), made("kept.jar", [])
    jar = tmp_path / "changed.jar"
    os.utime(jar, ns=(jar.stat().st_atime_ns, jar.stat().st_mtime_ns + 1_000_000_000))  # a rebuilt jar
    (tmp_path / "gone.jar").unlink()  # a clone or an environment removed
    (tmp_path / "kept.jar").unlink()  # gone too, but the archive asked to be kept
    unrecorded = folder / "classes-0123456789abcdef0123.jsa"
    unrecorded.write_bytes(b"an earlier legalir's")
    broken = folder / "classes-fedcba9876543210fedc.jsa"
    broken.write_bytes(b"a record that is not one")
    broken.with_suffix(".json").write_text("{not json")
    shapeless = folder / "classes-00000000000000000000.jsa"  # JSON, but not a record's shape: no proof either
    shapeless.write_bytes(b"a record of another shape")
    shapeless.with_suffix(".json").write_text(json.dumps({"java_home": 5, "jars": "not a list"}))

    assert sorted(jvm.prune_class_archives(keep=kept)) == sorted([changed, gone])
    assert not changed.exists() and not changed.with_suffix(".json").exists() and not gone.exists()
    assert other.read_bytes() == b"other.jar" and other.with_suffix(".json").is_file()
    assert kept.read_bytes() == b"kept.jar" and unrecorded.read_bytes() == b"an earlier legalir's"
    assert broken.read_bytes() == b"a record that is not one" and shapeless.read_bytes() == b"a record of another shape"
    assert jvm.prune_class_archives(keep=kept) == []  # nothing more to remove
