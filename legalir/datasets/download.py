"""``legalir download``: fetch a dataset's published files from the Hugging Face Hub.

Each dataset module says where its release lives and what to fetch:

* ``hub_repo``: the Hub *dataset* repository (``repo_type="dataset"``);
* ``hub_files``: glob patterns of the repository's files to fetch
  (default: ``required_files``);
* ``hub_archive`` (optional): ``(archive, prefix)``: when no file matches
  ``hub_files``, fetch ``archive`` (a ``.tar.gz``) and extract only its
  members under ``prefix`` (LegalBench ships every task in one archive and
  SCALR needs one folder of it).

Files land in ``$DATA_DIR/<name>/`` under their repository paths, i.e. in
the published layout the loaders read. Offline (``HF_HUB_OFFLINE`` set, or
the Hub not answering within ``timeout`` seconds) it fails at once with a
message saying which files to place where. Nothing here runs at import
time, and the tests exercise only the offline path.
"""
from __future__ import annotations

import fnmatch
import os
import shutil
import tarfile
from pathlib import Path, PurePosixPath

from legalir import datasets
from legalir.base import atomic
from legalir.base import log as _logging
from legalir.datasets.dataset import DatasetError

_log = _logging.get(__name__)

TRUE = ("1", "true", "yes", "on")


class DownloadError(DatasetError):
    """The files could not be fetched (offline, unknown repository, nothing to fetch)."""


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in TRUE


def patterns(cls) -> tuple[str, ...]:
    return tuple(cls.hub_files or cls.required_files)


def placement_help(ds) -> str:
    cls = type(ds)
    where = f"https://huggingface.co/datasets/{cls.hub_repo}" if cls.hub_repo else "the dataset's release"
    return (f"Place the published files under {ds.root}/ in their repository layout: "
            f"{', '.join(cls.required_files)} (from {where}"
            + (f"; files matching {', '.join(patterns(cls))}" if patterns(cls) != tuple(cls.required_files) else "")
            + ").")


def fetch(name: str, data_dir: str | os.PathLike, *, timeout: float = 10.0, force: bool = False,
          revision: str | None = None, quiet: bool = False) -> list[Path]:
    """Download ``name``'s published files into ``data_dir/name``; returns the files written.

    Does nothing (returns ``[]``) when the required files are already there,
    unless ``force``.
    """

    ds = datasets.get(name, data_dir)
    cls = type(ds)
    if not force:
        try:
            ds.check_files()
            if not quiet:
                _log.info(f"{name}: the published files are already under {ds.root} (use --force to fetch again)")
            return []
        except DatasetError:
            pass
    if not cls.hub_repo:
        raise DownloadError(f"{name}: no Hugging Face Hub repository is known for this dataset. " + placement_help(ds))
    if offline():
        raise DownloadError(f"{name}: offline (HF_HUB_OFFLINE is set), cannot fetch {cls.hub_repo} from the "
                            f"Hugging Face Hub. " + placement_help(ds))

    from huggingface_hub import HfApi, hf_hub_download, snapshot_download

    try:
        info = HfApi().dataset_info(cls.hub_repo, revision=revision, timeout=timeout)
    except Exception as e:  # connection errors, timeouts, 404s: all end the same way
        raise DownloadError(f"{name}: cannot reach {cls.hub_repo} on the Hugging Face Hub within {timeout:g}s "
                            f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}). "
                            + placement_help(ds)) from None
    available = sorted(s.rfilename for s in (info.siblings or []))
    wanted = sorted({f for f in available for p in patterns(cls) if fnmatch.fnmatch(f, p)})
    ds.root.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    if wanted:
        if not quiet:
            _log.info(f"{name}: fetching {len(wanted)} file(s) from {cls.hub_repo} into {ds.root}")
        snapshot_download(cls.hub_repo, repo_type="dataset", revision=revision or info.sha, local_dir=ds.root,
                          allow_patterns=wanted, etag_timeout=timeout)
        written = [ds.root / f for f in wanted]
    elif cls.hub_archive and cls.hub_archive[0] in available:
        archive, prefix = cls.hub_archive
        if not quiet:
            _log.info(f"{name}: fetching {archive} from {cls.hub_repo}, extracting {prefix}")
        local = hf_hub_download(cls.hub_repo, archive, repo_type="dataset", revision=revision or info.sha,
                                etag_timeout=timeout)
        written = extract_prefix(local, prefix, ds.root)
    else:
        raise DownloadError(f"{name}: {cls.hub_repo} has no file matching {', '.join(patterns(cls))}"
                            f" (it has: {', '.join(available[:20])}{' ...' if len(available) > 20 else ''}). "
                            + placement_help(ds))
    ds.check_files()
    return written


def extract_prefix(archive: str | os.PathLike, prefix: str, dest: str | os.PathLike) -> list[Path]:
    """Extract the regular files under ``prefix`` of a tar archive into ``dest`` (paths kept)."""
    dest = Path(dest)
    out = []
    with tarfile.open(archive) as tf:
        for m in tf:
            path = PurePosixPath(m.name)
            if not m.isfile() or not str(path).startswith(prefix.rstrip("/") + "/"):
                continue
            if path.is_absolute() or ".." in path.parts:
                raise DownloadError(f"{archive}: unsafe member path {m.name!r}")
            target = dest.joinpath(*path.parts)
            with tf.extractfile(m) as src, atomic.open_file(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
            out.append(target)
    if not out:
        raise DownloadError(f"{archive}: no member under {prefix}")
    return out
