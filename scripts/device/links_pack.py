"""CPU side of issue 40's GPU run: pack what a lent GPU machine needs into a folder it can carry (64 MiB a call).

    python scripts/device/links_pack.py LINKS_OUT .links-gpu/model --part model
    python scripts/device/links_pack.py LINKS_OUT .links-gpu/train --part train --codes "ga86 nc81 tn76 ky87 co80"
    python scripts/device/links_pack.py LINKS_OUT .links-gpu/eval1 --part eval --codes "ar78 nd81 wy84"

LINKS_OUT is what `make links-collections links-bm25` wrote (collections, BM25 runs). The machine has no Java (no
Lucene) and no bundled MiniLM, so a part carries, as one pack.tar.xz:

* ``--part model``: the bundled MiniLM as float16 (39 MiB packed; scripts/device/minilm_fp32.py restores float32
  there), the start of both models and the baseline encoder;
* ``--part train``: each training code's collection, slimmed to what training reads (the manifest; each record's
  id, citation, title, heading_path and contents; the train and valid topic sets and qrels: never a test file),
  its BM25 runs of those sets (citations off; the training sets' cut to --train-depth) and of the valid sets
  with citations on (the hybrid's fusion);
* ``--part eval``: each unseen code's collection slimmed the same way with its test topic sets and qrels only, and
  its BM25 test runs (citations off and on, top 100).

A pack over --limit-mb (default 60) is refused with its size: give fewer codes and carry another part in a second
call (the machine keeps /tmp/links while it stays warm). scripts/device/links_gpu.sh runs the parts there.
"""
from __future__ import annotations

import argparse
import io
import json
import lzma
import shutil
import sys
import tarfile
from pathlib import Path

FIELDS = ("id", "citation", "title", "heading_path", "contents")
TRAIN_SETS = ("train", "train.masked", "valid", "valid.masked")
TEST_SETS = ("test", "test.masked")


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 0
    tar.addfile(info, io.BytesIO(data))


def _slim_corpus(path: Path) -> bytes:
    out = io.StringIO()
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            rec = json.loads(line)
            missing = [k for k in FIELDS if k not in rec]
            if missing:
                raise SystemExit(f"{path}:{n}: no field {missing[0]!r}: not a statutes collection")
            out.write(json.dumps({k: rec[k] for k in FIELDS}, ensure_ascii=False) + "\n")
    return out.getvalue().encode("utf-8")


def _cut_run(path: Path, depth: int) -> bytes:
    """The run's top ``depth`` per topic, in the file's order (legalir writes each topic's lines ranked)."""
    seen: dict[str, int] = {}
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            q = line.split(maxsplit=1)[0] if line.strip() else None
            if q is None:
                continue
            seen[q] = seen.get(q, 0) + 1
            if seen[q] <= depth:
                out.append(line)
    return "".join(out).encode("utf-8")


def pack(links_out: Path, dest: Path, part: str, codes: list[str], train_depth: int, limit_mb: float) -> Path:
    if part == "model" and codes:
        raise SystemExit("--part model carries the model only: no --codes")
    sets = TRAIN_SETS if part == "train" else TEST_SETS
    qrels = ("train", "valid") if part == "train" else ("test",)
    # training: BM25 without citations for the negatives and the cross-encoder, with citations of the valid
    # topics for the hybrid's fusion (make links-fusion)
    runs = ([("off", s) for s in sets] + [("on", "valid"), ("on", "valid.masked")] if part == "train"
            else [(c, s) for s in sets for c in ("off", "on")])
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / "pack.tar.xz"
    tmp = dest / "pack.tar.xz.tmp"
    with lzma.open(tmp, "wb", preset=9) as xz, tarfile.open(fileobj=xz, mode="w") as tar:
        for code in codes:
            c = links_out / "collections" / code
            if not (c / "manifest.json").is_file():
                raise SystemExit(f"{c}: no collection (make links-collections LINKS_OUT={links_out})")
            _add(tar, f"collections/{code}/manifest.json", (c / "manifest.json").read_bytes())
            _add(tar, f"collections/{code}/corpus/docs.jsonl", _slim_corpus(c / "corpus" / "docs.jsonl"))
            for s in sets:
                _add(tar, f"collections/{code}/topics/{s}.jsonl", (c / "topics" / f"{s}.jsonl").read_bytes())
            for q in qrels:
                _add(tar, f"collections/{code}/qrels/{q}.txt", (c / "qrels" / f"{q}.txt").read_bytes())
            for cit, s in runs:
                r = links_out / "runs" / code / f"bm25-{cit}.{s}.trec"
                if not r.is_file():
                    raise SystemExit(f"{r}: not found (make links-bm25 LINKS_OUT={links_out})")
                depth = train_depth if part == "train" and s.startswith("train") else 100
                _add(tar, f"runs/{code}/bm25-{cit}.{s}.trec", _cut_run(r, depth))
        if part == "model":
            from safetensors.torch import load_file, save_file

            from legalir.base import models

            src = models.bundled_minilm()
            for f in sorted(src.rglob("*")):
                if f.is_file() and f.name != "model.safetensors" and not f.name.startswith("."):
                    _add(tar, f"minilm16/{f.relative_to(src).as_posix()}", f.read_bytes())
            half = dest / "model16.safetensors"
            sd = load_file(src / "model.safetensors")
            save_file({k: (v.half() if v.is_floating_point() else v).contiguous() for k, v in sd.items()}, half,
                      metadata={"format": "pt"})
            tar.add(half, "minilm16/model.safetensors")
            half.unlink()
    size = tmp.stat().st_size / 2**20
    if size > limit_mb:
        tmp.unlink()
        raise SystemExit(f"{target}: {size:.1f} MiB, over --limit-mb {limit_mb:g}: pack fewer codes per part")
    tmp.replace(target)
    (dest / "pack.json").write_text(json.dumps({"part": part, "codes": codes, "mib": round(size, 1)}) + "\n")
    print(f"{target}: {size:.1f} MiB ({part}: {' '.join(codes)})")
    return target


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("links_out", type=Path)
    ap.add_argument("dest", type=Path)
    ap.add_argument("--part", choices=("model", "train", "eval"), required=True)
    ap.add_argument("--codes", default="", help="code names, space-separated (ga86 nc81 ...)")
    ap.add_argument("--train-depth", type=int, default=30, help="BM25 depth kept of the training runs (negatives)")
    ap.add_argument("--limit-mb", type=float, default=60.0)
    a = ap.parse_args(argv)
    if a.dest.exists() and any(a.dest.iterdir()) and not (a.dest / "pack.json").exists():
        raise SystemExit(f"{a.dest}: a folder this script did not write; give an empty or new one")
    if (a.dest / "pack.json").exists():   # a pack this script wrote: replaced
        shutil.rmtree(a.dest)
    if a.part != "model" and not a.codes.split():
        raise SystemExit(f"--part {a.part}: name its codes (--codes)")
    pack(a.links_out, a.dest, a.part, a.codes.split(), a.train_depth, a.limit_mb)


if __name__ == "__main__":
    sys.exit(main())
