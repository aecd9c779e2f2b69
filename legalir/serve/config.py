"""What `legalir serve` exposes: named indexes, collections, runs and qrels.

From the command line (repeatable)::

    --index NAME=DIR          a Lucene index (or folder of per-partition indexes) or a FAISS index;
                              give the same NAME twice (a Lucene and a FAISS index of one collection)
                              to offer bm25, dense and hybrid search under one name
    --collection NAME=DIR     a collection folder (documents by id, hit metadata and snippets)
    --run NAME=FILE           a TREC run for the run explorer
    --qrels [NAME=]FILE       qrels: used by the run of the same NAME, or by every run when only one is given
                              (one --qrels needs no NAME)

or from a TOML (``.toml``) or JSON file (``--config FILE``; relative paths are
relative to the file), which may also say which qrels, topics and collection a run uses::

    [index]
    acord = ["indexes/acord/bm25", "indexes/acord/dense/minilm"]
    [collection]
    acord = "collections/acord"
    [qrels]
    acord = "collections/acord/qrels/test.txt"
    [run]
    bm25 = "runs/acord/bm25.test.trec"
    dense = { file = "runs/acord/minilm.test.trec", qrels = "acord", topics = "collections/acord/topics/test.jsonl" }

Names appear in URLs: letters, digits, ``_``, ``-`` and ``.`` only. Every
path is checked here, before the server starts.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from legalir.errors import LegalirError

#: default request body limit (bytes) of `legalir serve`: a /search/batch of 1,000 queries of ~4,000 characters
DEFAULT_MAX_BODY = 4 * 1024 * 1024
#: seconds between two looks at the links of versioned indexes (`legalir serve --reload-interval`; 0: never)
DEFAULT_RELOAD_INTERVAL = 1.0
NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")


class ConfigError(LegalirError, ValueError):
    """A bad --index/--collection/--run/--qrels value or configuration file."""


@dataclass
class RunSpec:
    name: str
    file: Path
    qrels: str | None = None        # a name in Config.qrels
    topics: Path | None = None      # topics file (.jsonl/.tsv) with the topics' text
    collection: str | None = None   # a name in Config.collections


@dataclass
class Config:
    indexes: dict[str, list[Path]] = field(default_factory=dict)
    collections: dict[str, Path] = field(default_factory=dict)
    runs: dict[str, RunSpec] = field(default_factory=dict)
    qrels: dict[str, Path] = field(default_factory=dict)
    host: str | None = None
    port: int | None = None

    def empty(self) -> bool:
        return not (self.indexes or self.collections or self.runs)


def check_name(name: str, where: str) -> str:
    if not NAME.match(name):
        raise ConfigError(f"{where}: name {name!r} must be letters, digits, '_', '-' or '.' (at most 64, "
                          f"not starting with '-' or '.')")
    return name


def served_index_path(p: Path) -> Path:
    """``p`` as `legalir serve` keeps an index folder: resolved (links followed), except that a versioned
    index's pointer (``NAME -> NAME.vN``, :mod:`legalir.base.atomic`) stays the pointer, so the server can
    see new versions published there (a user's own link to it is followed up to it)."""
    from legalir.base import atomic

    p = Path(os.path.abspath(p))
    for _ in range(40):  # links to links, as the kernel follows them
        p = Path(os.path.realpath(p.parent)) / p.name
        if not p.is_symlink() or atomic.current(p) != p:
            break
        p = Path(os.path.abspath(p.parent / os.readlink(p)))
    return p if p.is_symlink() and atomic.current(p) != p else p.resolve()


def _path(value: Any, where: str, base: Path | None, *, is_dir: bool, index: bool = False) -> Path:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: expected a path, got {value!r}")
    p = Path(value).expanduser()
    if base is not None and not p.is_absolute():
        p = base / p
    if not p.exists():
        raise ConfigError(f"{where}: {p} does not exist")
    if is_dir and not p.is_dir():
        raise ConfigError(f"{where}: {p} is not a folder")
    if not is_dir and not p.is_file():
        raise ConfigError(f"{where}: {p} is not a file")
    return served_index_path(p) if index else p.resolve()


def split_pair(value: str, flag: str) -> tuple[str, str]:
    """``NAME=VALUE`` of a repeatable flag."""
    if "=" not in value:
        raise ConfigError(f"{flag} {value!r}: expected NAME=PATH")
    name, path = value.split("=", 1)
    return check_name(name.strip(), f"{flag} {value!r}"), path.strip()


def _add(table: dict, name: str, value: Any, where: str) -> None:
    if name in table:
        raise ConfigError(f"{where}: {name!r} is given twice")
    table[name] = value


def from_options(cfg: Config, indexes: Iterable[str] = (), collections: Iterable[str] = (),
                 runs: Iterable[str] = (), qrels: Iterable[str] = ()) -> Config:
    """Add the command line's NAME=PATH values to ``cfg``."""
    for v in indexes:
        name, p = split_pair(v, "--index")
        cfg.indexes.setdefault(name, []).append(_path(p, f"--index {v}", None, is_dir=True, index=True))
    for v in collections:
        name, p = split_pair(v, "--collection")
        _add(cfg.collections, name, _path(p, f"--collection {v}", None, is_dir=True), f"--collection {v}")
    qrels = list(qrels)
    for v in qrels:
        if "=" not in v and len(qrels) == 1:  # one qrels file needs no name: every run uses it
            name, p = "qrels", v
        else:
            name, p = split_pair(v, "--qrels")
        _add(cfg.qrels, name, _path(p, f"--qrels {v}", None, is_dir=False), f"--qrels {v}")
    for v in runs:
        name, p = split_pair(v, "--run")
        _add(cfg.runs, name, RunSpec(name, _path(p, f"--run {v}", None, is_dir=False)), f"--run {v}")
    return cfg


def _read_file(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix == ".json":
            data = json.loads(text)
        elif path.suffix == ".toml":
            import tomllib

            data = tomllib.loads(text)
        else:
            raise ConfigError(f"{path}: a configuration file ends in .toml or .json")
    except (ValueError, TypeError) as e:  # JSONDecodeError and TOMLDecodeError are ValueErrors
        if isinstance(e, ConfigError):
            raise
        raise ConfigError(f"{path}: not valid {path.suffix[1:].upper()}: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a table/object at the top level")
    return data


def _table(data: Mapping, key: str, path: Path) -> Mapping:
    t = data.get(key, {})
    if not isinstance(t, Mapping):
        raise ConfigError(f"{path}: [{key}] must be a table of NAME = value")
    return t


def from_file(path: str | Path) -> Config:
    """A :class:`Config` from a ``.toml`` or ``.json`` file (see the module doc)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: configuration file not found")
    data = _read_file(path)
    base = path.resolve().parent
    known = {"index", "collection", "run", "qrels", "host", "port"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    cfg = Config(host=data.get("host"), port=data.get("port"))
    if cfg.port is not None and not isinstance(cfg.port, int):
        raise ConfigError(f"{path}: port must be an integer, got {cfg.port!r}")
    for name, v in _table(data, "index", path).items():
        where = f"{path}: [index] {name}"
        check_name(name, where)
        values = v if isinstance(v, list) else [v]
        cfg.indexes[name] = [_path(x, where, base, is_dir=True, index=True) for x in values]
    for name, v in _table(data, "collection", path).items():
        cfg.collections[check_name(name, f"{path}: [collection]")] = _path(v, f"{path}: [collection] {name}",
                                                                            base, is_dir=True)
    for name, v in _table(data, "qrels", path).items():
        cfg.qrels[check_name(name, f"{path}: [qrels]")] = _path(v, f"{path}: [qrels] {name}", base, is_dir=False)
    for name, v in _table(data, "run", path).items():
        where = f"{path}: [run] {name}"
        check_name(name, where)
        if isinstance(v, str):
            cfg.runs[name] = RunSpec(name, _path(v, where, base, is_dir=False))
            continue
        if not isinstance(v, Mapping) or "file" not in v:
            raise ConfigError(f"{where}: expected a path or a table with 'file' (and optional qrels, topics, "
                              f"collection)")
        extra = sorted(set(v) - {"file", "qrels", "topics", "collection"})
        if extra:
            raise ConfigError(f"{where}: unknown key(s) {', '.join(extra)}")
        cfg.runs[name] = RunSpec(name, _path(v["file"], where, base, is_dir=False), qrels=v.get("qrels"),
                                 topics=_path(v["topics"], where, base, is_dir=False) if v.get("topics") else None,
                                 collection=v.get("collection"))
    return cfg


def gather(indexes: Iterable[str] = (), collections: Iterable[str] = (), runs: Iterable[str] = (),
           qrels: Iterable[str] = (), config_file: str | Path | None = None) -> Config:
    """The :class:`Config` of `legalir serve`'s and `legalir mcp`'s options: ``--config`` file first,
    then the ``NAME=PATH`` options added to it."""
    cfg = from_file(config_file) if config_file else Config()
    return from_options(cfg, indexes, collections, runs, qrels)
