"""Transformer text encoders and resumable, sharded corpus encoding.

An :class:`Encoder` turns queries and documents into vectors with a Hugging
Face model, given by Hub name or local path. It runs through ``transformers``
(pooling, normalisation and truncation done here) unless the model is in
sentence-transformers' format with modules this file does not reproduce
(e.g. a ``Dense`` projection), in which case sentence-transformers itself
runs it. A model in sentence-transformers' format (``modules.json``) declares
its own pooling, normalisation and maximum length; those are read from its
files.

Query and document *formats* are what each model family was trained with:

=====================  ==========================================  ==============
family (name pattern)  query format                                document format
=====================  ==========================================  ==============
E5 v2                  ``query: {text}``                           ``passage: {text}``
E5-mistral, GTE-Qwen   ``Instruct: {instruction}\\nQuery: {text}``  ``{text}``
BGE v1.5 (English)     ``Represent this sentence for searching     ``{text}``
                       relevant passages: {text}``
sentence-transformers  its own ``prompts`` if any, else bare       same
=====================  ==========================================  ==============

Every setting can be overridden (command line: ``--pooling``, ``--max-length``,
``--query-format``, ``--doc-format``, ``--instruction``, ``--no-normalize``,
``--dtype``). The ``{instruction}`` of a query comes from ``--instruction``,
else from the topic's ``instruction`` field (CRUMB), else from the preset.

Corpus encoding (:func:`encode_corpus`) writes ``shard-NNNNN.npy`` files of
``shard_size`` consecutive documents plus ``docids.txt`` and ``manifest.json``
(the encoder's settings and the shards done). A killed job resumes at the
first missing shard; shards written with other settings, or for another
list of documents, are refused, never mixed.

torch, transformers and sentence-transformers are imported lazily, so that
importing this module (e.g. for its error class) is cheap.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from legalir import trec
from legalir.base import atomic, log, models, numeric
from legalir.base.atomic import OutputError
from legalir.base.atomic.outputs import _swap_in
from legalir.base.models import default_device
from legalir.errors import LegalirError

np = numeric.LazyModule("numpy")  # imported where a vector is handled: not by a Lucene-only update

_log = log.get(__name__)

POOLINGS = ("mean", "cls", "last")
DTYPES = ("float32", "float16", "bfloat16")
MANIFEST = "manifest.json"
KIND = "embeddings"
DOCIDS = "docids.txt"
DEFAULT_SHARD_SIZE = 100_000
DEFAULT_BATCH_SIZE = 32
FORMAT_VERSION = 1

#: settings that decide what a document vector is: shards differing in any are never mixed
DOCUMENT_SIDE = ("model", "revision", "backend", "pooling", "max_length", "normalize", "doc_format", "dtype",
                 "append_eos", "doc_text")
#: what a model folder trained by legalir declares about its inputs (``legalir train-dense``): read as the
#: model's own settings, below the command line's
MODEL_SETTINGS = "legalir-encoder.json"
#: the default document text: a collection record's ``contents``
DOC_TEXT = "{contents}"


class EncoderError(LegalirError, ValueError):
    """A model that cannot be loaded, bad settings, or shards that must not be mixed."""


# ------------------------------------------------------------------ presets
@dataclass(frozen=True)
class Preset:
    pattern: str  # regular expression, searched in the lower-cased model name or path
    family: str
    values: Mapping[str, Any]


WEB_SEARCH_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"
INSTRUCT_QUERY = "Instruct: {instruction}\nQuery: {text}"

#: first match wins; anything not given here comes from the model's own files or the defaults
PRESETS: tuple[Preset, ...] = (
    Preset(r"e5-mistral", "e5-mistral",
           {"pooling": "last", "normalize": True, "max_length": 4096, "append_eos": True,
            "query_format": INSTRUCT_QUERY, "doc_format": "{text}", "instruction": WEB_SEARCH_INSTRUCTION}),
    Preset(r"gte-qwen", "gte-qwen",
           {"pooling": "last", "normalize": True, "max_length": 8192, "append_eos": True,
            "query_format": INSTRUCT_QUERY, "doc_format": "{text}", "instruction": WEB_SEARCH_INSTRUCTION}),
    Preset(r"(^|[/_-])e5-(small|base|large)(-v2)?($|[/_-])|multilingual-e5-(small|base|large)($|[/_-])", "e5",
           {"pooling": "mean", "normalize": True, "max_length": 512,
            "query_format": "query: {text}", "doc_format": "passage: {text}"}),
    Preset(r"bge-(small|base|large)-(en|zh)", "bge",
           {"pooling": "cls", "normalize": True, "max_length": 512,
            "query_format": "Represent this sentence for searching relevant passages: {text}",
            "doc_format": "{text}"}),
    Preset(r"bge-m3", "bge-m3",
           {"pooling": "cls", "normalize": True, "max_length": 8192, "query_format": "{text}", "doc_format": "{text}"}),
)


def preset_for(model: str) -> Preset | None:
    name = str(model).lower()
    for p in PRESETS:
        if re.search(p.pattern, name):
            return p
    return None


# ------------------------------------------------------------------ settings
@dataclass(frozen=True)
class EncoderSettings:
    model: str  # what the user gave (Hub name or path)
    revision: str | None = None
    backend: str = "transformers"  # or "sentence-transformers"
    pooling: str = "mean"  # mean | cls | last | "model" (sentence-transformers backend)
    max_length: int = 512
    normalize: bool = True
    query_format: str = "{text}"
    doc_format: str = "{text}"
    instruction: str | None = None
    dtype: str = "float32"
    append_eos: bool = False
    family: str = "default"
    trust_remote_code: bool = False  # run the model repository's own Python code (some encoders need it)
    #: how a collection record becomes the document's text, before ``doc_format``: ``{field}``s of the record
    #: (``{contents}``; a statute's ``{citation} {title}\n{heading_path}\n{contents}``)
    doc_text: str = DOC_TEXT

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> EncoderSettings:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})

    def document_side(self) -> dict:
        return {k: getattr(self, k) for k in DOCUMENT_SIDE}


def resolve_model_dir(model: str, revision: str | None = None) -> Path:
    """A local folder holding ``model`` (see :func:`legalir.base.models.resolve`: ``minilm``, a folder, a Hub name)."""

    return models.resolve(model, revision, what="encoder", error=EncoderError)


def _read_json(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        raise EncoderError(f"{path}:{e.lineno}: invalid JSON: {e.msg}") from None


def sentence_transformers_config(model_dir: Path) -> dict[str, Any] | None:
    """What a sentence-transformers model folder declares (pooling, normalize, max length, prompts).

    ``None`` when the folder is not in sentence-transformers' format. ``backend``
    is ``sentence-transformers`` when it holds modules that this file does not
    reproduce (then sentence-transformers runs the model).
    """
    modules_path = model_dir / "modules.json"
    if not modules_path.exists():
        return None
    modules = _read_json(modules_path)
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    out: dict[str, Any] = {"normalize": "Normalize" in kinds}
    simple = set(kinds) <= {"Transformer", "Pooling", "Normalize"} and "Transformer" in kinds
    pooling = None
    for m in modules:
        if str(m.get("type", "")).endswith("Pooling"):
            cfg_path = model_dir / m.get("path", "") / "config.json"
            if cfg_path.exists():
                cfg = _read_json(cfg_path)
                modes = [k[len("pooling_mode_"):] for k, v in cfg.items() if k.startswith("pooling_mode_") and v]
                if cfg.get("pooling_mode"):
                    modes = [cfg["pooling_mode"]]
                names = {"mean_tokens": "mean", "mean": "mean", "cls_token": "cls", "cls": "cls",
                         "lasttoken": "last", "last": "last"}
                pooling = names.get(modes[0]) if len(modes) == 1 else None
    if pooling is None:
        simple = False
    else:
        out["pooling"] = pooling
    for name in ("sentence_bert_config.json",):
        if (model_dir / name).exists():
            cfg = _read_json(model_dir / name)
            if cfg.get("max_seq_length"):
                out["max_length"] = int(cfg["max_seq_length"])
    st_cfg = model_dir / "config_sentence_transformers.json"
    if st_cfg.exists():
        prompts = (_read_json(st_cfg) or {}).get("prompts") or {}
        if prompts.get("query"):
            out["query_format"] = prompts["query"] + "{text}"
        for key in ("document", "passage", "corpus"):
            if prompts.get(key):
                out["doc_format"] = prompts[key] + "{text}"
                break
    out["backend"] = "transformers" if simple else "sentence-transformers"
    return out


def default_dtype(device: str) -> str:
    return "float16" if str(device).startswith("cuda") else "float32"


def resolve_settings(model: str, *, revision: str | None = None, device: str | None = None,
                     **overrides: Any) -> tuple[EncoderSettings, Path]:
    """Settings for ``model``: defaults < preset (by name) < the model's own files < ``overrides``.

    ``overrides`` with value ``None`` are ignored. Returns the settings and the
    local model folder.
    """
    model_dir = resolve_model_dir(model, revision)
    values: dict[str, Any] = {}
    preset = preset_for(str(model)) or preset_for(str(model_dir))
    if preset:
        values.update(preset.values)
        values["family"] = preset.family
    st = sentence_transformers_config(model_dir)
    if st:
        for k in ("pooling", "normalize", "max_length", "backend"):
            if k in st:
                values[k] = st[k]
        for k in ("query_format", "doc_format"):
            if k in st and k not in values:
                values[k] = st[k]
        if not preset:
            values["family"] = "sentence-transformers"
    elif "pooling" not in values:
        values["pooling"] = "mean"
    own = model_dir / MODEL_SETTINGS
    if own.exists():  # a model trained by legalir declares the texts it was trained on
        declared = _read_json(own)
        if not isinstance(declared, dict):
            raise EncoderError(f"{own}: expected a JSON object of encoder settings")
        values.update({k: v for k, v in declared.items()
                       if k in ("query_format", "doc_format", "doc_text", "pooling", "normalize", "max_length")})
    if "max_length" not in values:
        cfg = _read_json(model_dir / "config.json") if (model_dir / "config.json").exists() else {}
        values["max_length"] = int(min(512, cfg.get("max_position_embeddings", 512) or 512))
    values["dtype"] = default_dtype(device or default_device())
    values.update({k: v for k, v in overrides.items() if v is not None})
    if values.get("backend") == "sentence-transformers" and "pooling" in overrides and overrides["pooling"]:
        values["backend"] = "transformers"  # an explicit pooling means: run it through transformers
    if values.get("backend") == "sentence-transformers":
        values["pooling"] = "model"
    identity = str(model_dir) if Path(os.path.expanduser(str(model))).exists() else str(model)
    settings = EncoderSettings(model=identity, revision=revision, **{
        k: v for k, v in values.items() if k in {f.name for f in dataclasses.fields(EncoderSettings)} - {"model", "revision"}})
    validate(settings)
    return settings, model_dir


def validate(s: EncoderSettings) -> None:
    if s.backend not in ("transformers", "sentence-transformers"):
        raise EncoderError(f"backend must be transformers or sentence-transformers, got {s.backend!r}")
    if s.backend == "transformers" and s.pooling not in POOLINGS:
        raise EncoderError(f"pooling must be one of {', '.join(POOLINGS)}, got {s.pooling!r}")
    if s.dtype not in DTYPES:
        raise EncoderError(f"dtype must be one of {', '.join(DTYPES)}, got {s.dtype!r}")
    if int(s.max_length) < 2:
        raise EncoderError(f"max length must be at least 2, got {s.max_length}")
    for name in ("query_format", "doc_format"):
        fmt = getattr(s, name)
        if "{text}" not in fmt:
            raise EncoderError(f"{name.replace('_', ' ')} {fmt!r} must contain '{{text}}'")
        try:
            fmt.format(text="", instruction="")
        except (KeyError, IndexError, ValueError) as e:
            raise EncoderError(f"{name.replace('_', ' ')} {fmt!r}: only {{text}} and {{instruction}} may be used "
                               f"({e})") from None
    if "{instruction}" in s.doc_format:
        raise EncoderError("the document format cannot use {instruction}")
    doc_text_fields(s.doc_text)


def doc_text_fields(template: str) -> list[str]:
    """The record fields a ``doc_text`` template names (``{contents}``, ``{citation}`` ...); a bad template is an
    :class:`EncoderError`."""
    import string

    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as e:
        raise EncoderError(f"document text {template!r}: {e} (write a literal brace as {{{{ or }}}})") from None
    fields = [name for _, name, spec, conv in parsed if name is not None]
    bad = [f for f in fields if not f or not f.isidentifier()]
    if bad or any(spec or conv for _, name, spec, conv in parsed if name is not None):
        raise EncoderError(f"document text {template!r}: only plain {{field}} names of a collection record may be "
                           f"used, e.g. '{{citation}} {{title}}\\n{{contents}}'")
    if not fields:
        raise EncoderError(f"document text {template!r} names no field of the record; give at least {{contents}}")
    return list(dict.fromkeys(fields))


def record_text(template: str, record: Mapping[str, Any]) -> str:
    """A collection record's document text by ``template`` (``doc_text``): its ``{field}``s filled from the
    record. A field the record lacks is an :class:`EncoderError` naming the document: never an empty default.
    Empty fields leave no blank line or stray separator at the start (a section without a heading)."""
    if template == DOC_TEXT:
        return str(record["contents"])
    values = {}
    for name in doc_text_fields(template):
        if name not in record or record[name] is None:
            raise EncoderError(f"document {record.get('id')!r} has no field {name!r}, which the document text "
                               f"{template!r} names; give a template of the fields the collection holds")
        values[name] = str(record[name])
    return template.format_map(values).strip()


# ------------------------------------------------------------------ encoder
def _cpu_has_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (AMX or AVX512-BF16; Linux's /proc/cpuinfo): there
    bfloat16 encoding is faster than float32 (MiniLM 3.2x, BERT-large 3.7x measured on a 2-core Xeon with
    AMX: scripts/scale_plan.py), with the same ACORD nDCG@10 to 0.1 point."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            flags = next((line for line in f if line.startswith("flags")), "").split()
    except OSError:
        return False
    return "amx_bf16" in flags or "avx512_bf16" in flags


class Encoder:
    """A loaded model that encodes queries and documents into float32 vectors."""

    def __init__(self, settings: EncoderSettings, model_dir: str | os.PathLike, device: str | None = None):
        import torch

        validate(settings)
        self.settings = settings
        self.model_dir = Path(model_dir)
        self.device = device or default_device()
        torch_dtype = getattr(torch, settings.dtype)
        if settings.dtype != "float32" and not str(self.device).startswith("cuda") and not (
                settings.dtype == "bfloat16" and _cpu_has_bf16()):
            _log.warning(f"{settings.dtype} on {self.device} is slow and may be unsupported; "
                         f"use --dtype float32 on CPU (or bfloat16 on a CPU with AMX or AVX512-BF16)")
        try:
            if settings.backend == "sentence-transformers":
                from sentence_transformers import SentenceTransformer

                self._st = SentenceTransformer(str(self.model_dir), device=self.device, local_files_only=True,
                                               model_kwargs={"dtype": torch_dtype},
                                               trust_remote_code=bool(settings.trust_remote_code))
                self._st.max_seq_length = int(settings.max_length)
                get_dim = getattr(self._st, "get_embedding_dimension", None) or self._st.get_sentence_embedding_dimension
                self.dim = int(get_dim())
            else:
                from transformers import AutoModel, AutoTokenizer
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()  # one bar per weight file is noise on every search

                remote = bool(settings.trust_remote_code)
                self.tokenizer = AutoTokenizer.from_pretrained(str(self.model_dir), trust_remote_code=remote)
                self.model = AutoModel.from_pretrained(str(self.model_dir), dtype=torch_dtype, trust_remote_code=remote)
                self.model.to(self.device).eval()
                self.dim = int(self.model.config.hidden_size)
                if settings.append_eos and self.tokenizer.eos_token_id is None:
                    raise EncoderError(f"{self.model_dir}: append_eos is set but the tokenizer has no EOS token")
                if self.tokenizer.pad_token_id is None:
                    self.tokenizer.pad_token = self.tokenizer.eos_token or self.tokenizer.unk_token
        except EncoderError:
            raise
        except (OSError, ValueError) as e:
            raise EncoderError(f"{self.model_dir}: could not load the encoder: {e}") from None

    @classmethod
    def load(cls, model: str, *, revision: str | None = None, device: str | None = None, **overrides: Any) -> Encoder:
        """Load ``model`` (Hub name or local folder) with the family's preset and ``overrides``."""
        device = device or default_device()
        settings, model_dir = resolve_settings(model, revision=revision, device=device, **overrides)
        return cls(settings, model_dir, device=device)

    @classmethod
    def from_settings(cls, settings: EncoderSettings | Mapping[str, Any], device: str | None = None,
                      model: str | None = None) -> Encoder:
        """Load the encoder that ``settings`` describe (e.g. an index's); ``model`` relocates the weights."""
        s = settings if isinstance(settings, EncoderSettings) else EncoderSettings.from_dict(settings)
        if model is not None:
            s = dataclasses.replace(s, model=model)
        return cls(s, resolve_model_dir(s.model, s.revision), device=device)

    # ---- text formats
    def format_queries(self, texts: Sequence[str], instructions: Sequence[str | None] | None = None) -> list[str]:
        fmt = self.settings.query_format
        out = []
        for i, t in enumerate(texts):
            inst = instructions[i] if instructions is not None else None
            inst = inst or self.settings.instruction
            if "{instruction}" in fmt and not inst:
                raise EncoderError(f"the query format {fmt!r} needs an instruction: give --instruction, or an "
                                   f"'instruction' field in the topics")
            out.append(fmt.format(text=t, instruction=inst or ""))
        return out

    def format_documents(self, texts: Sequence[str]) -> list[str]:
        return [self.settings.doc_format.format(text=t) for t in texts]

    def encode_queries(self, texts: Sequence[str], instructions: Sequence[str | None] | None = None,
                       progress: bool = False) -> np.ndarray:
        """Vectors of queries (float32, shape ``(len(texts), dim)``), each a function of its own text alone.

        This is the one place a query becomes a vector, for every face (the API, the
        CLI, HTTP, MCP, PyTerrier). Each query is encoded by itself, never padded to a
        longer neighbour (padding changes the shapes of the matrix products and with
        them the last bits), and on the CPU with :data:`legalir.base.numeric.QUERY_THREADS`
        torch threads, whatever count the calling process set (restored after). So a
        query's vector, and its scores, are the same alone or in any batch, in any
        process. Measured cost against batches of 32: ``scripts/bench_query_encoding.py``.

        Parameters
        ----------
        texts : sequence of str
            The queries.
        instructions : sequence of str or None, optional
            Per query, the instruction for a ``{instruction}`` query format.
        progress : bool
            A progress bar on stderr.
        """
        formatted = self.format_queries(texts, instructions)
        out = np.empty((len(formatted), self.dim), dtype=np.float32)
        cpu = not str(self.device).startswith("cuda")
        with numeric.threads(numeric.QUERY_THREADS if cpu else None, faiss=False), \
                log.progress(total=len(formatted), desc="queries", unit=" queries", quiet=not progress) as bar:
            for i, text in enumerate(formatted):
                out[i] = self.encode([text], batch_size=1)[0]
                bar.update(1)
        return out

    def encode_documents(self, texts: Sequence[str], batch_size: int = DEFAULT_BATCH_SIZE,
                         progress: bool = False, callback: Callable[[int], Any] | None = None) -> np.ndarray:
        return self.encode(self.format_documents(texts), batch_size=batch_size, progress=progress, desc="documents",
                           callback=callback)

    def encode_shards(self, shards: Iterable[tuple[int, Sequence[str]]], batch_size: int = DEFAULT_BATCH_SIZE,
                      callback: Callable[[int], Any] | None = None) -> Iterator[tuple[int, np.ndarray]]:
        """``(index, vectors)`` of each ``(index, document texts)`` shard, in order.

        :func:`encode_corpus` writes what this yields; another implementation
        (:class:`legalir.indexing.distributed.RayEncoder`) spreads the shards over
        workers and yields them as they finish.
        """
        for index, texts in shards:
            yield index, self.encode_documents(texts, batch_size=batch_size, callback=callback)

    # ---- the model
    def encode(self, texts: Sequence[str], batch_size: int = DEFAULT_BATCH_SIZE, progress: bool = False,
               desc: str = "encoding", callback: Callable[[int], Any] | None = None) -> np.ndarray:
        """Vectors of already formatted ``texts`` (float32, shape ``(len(texts), dim)``).

        Texts are encoded longest first in batches (less padding), then put
        back in input order. The same texts give the same bytes run to run.
        ``callback(n)`` is called after each batch of ``n`` texts.
        """
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self.settings.backend == "sentence-transformers":
            vecs = self._st.encode(list(texts), batch_size=batch_size, show_progress_bar=progress,
                                   convert_to_numpy=True, normalize_embeddings=bool(self.settings.normalize))
            if callback:
                callback(len(texts))
            return np.ascontiguousarray(vecs, dtype=np.float32)
        import torch

        order = sorted(range(len(texts)), key=lambda i: (-len(texts[i]), i))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        bar = log.progress(total=len(texts), desc=desc, unit=" texts", quiet=not progress)
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                idx = order[start:start + batch_size]
                batch = self._tokenize([texts[i] for i in idx])
                hidden = self.model(**batch).last_hidden_state
                vec = self._pool(hidden, batch["attention_mask"]).float()
                if self.settings.normalize:
                    vec = torch.nn.functional.normalize(vec, p=2, dim=1)
                out[idx] = vec.cpu().numpy()
                bar.update(len(idx))
                if callback:
                    callback(len(idx))
        bar.close()
        return out

    def _tokenize(self, texts: list[str]):
        tok, n = self.tokenizer, int(self.settings.max_length)
        if not self.settings.append_eos:
            enc = tok(texts, padding=True, truncation=True, max_length=n, return_tensors="pt")
        else:
            ids = tok(texts, padding=False, truncation=True, max_length=n - 1)["input_ids"]
            eos = tok.eos_token_id
            ids = [x if x and x[-1] == eos else x + [eos] for x in ids]
            enc = tok.pad({"input_ids": ids}, padding=True, return_tensors="pt")
        return {k: v.to(self.device) for k, v in enc.items()}

    def _pool(self, hidden, mask):
        import torch

        pooling = self.settings.pooling
        if pooling == "cls":
            return hidden[:, 0]
        if pooling == "mean":
            m = mask.unsqueeze(-1).to(hidden.dtype)
            return (hidden * m).sum(dim=1) / torch.clamp(m.sum(dim=1), min=1e-9)
        # last: the last non-padding token, whichever side the tokenizer pads
        positions = torch.arange(mask.shape[1], device=mask.device).unsqueeze(0)
        last = (positions * mask).argmax(dim=1)
        return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]


# ------------------------------------------------------------------ sharded corpus encoding
def docids_digest(docids: Iterable[str]) -> str:
    h = hashlib.sha256()
    for d in docids:
        h.update(d.encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


def read_manifest(emb_dir: str | os.PathLike) -> dict:
    path = Path(emb_dir) / MANIFEST
    if not path.exists():
        raise EncoderError(f"{path}: not found; encode the collection first (legalir encode)")
    return _read_json(path)


def read_docids(emb_dir: str | os.PathLike) -> list[str]:
    path = Path(emb_dir) / DOCIDS
    if not path.exists():
        raise EncoderError(f"{path}: not found (incomplete embeddings folder)")
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def shard_name(i: int) -> str:
    return f"shard-{i:05d}.npy"


@dataclass
class EncodeResult:
    documents: int
    shards_total: int
    shards_done: int
    shards_written: int
    complete: bool
    out_dir: Path = field(default_factory=Path)


def _is_embeddings(path: Path) -> bool:
    """An embeddings folder written by legalir before output markers existed (or what one killed
    before writing its manifest left)."""
    return ((path / MANIFEST).exists() and (path / DOCIDS).exists()) or _only_leftovers(path)


def _only_leftovers(path: Path) -> bool:
    """A folder holding nothing but what an older legalir left when killed before its manifest."""
    names = [p.name for p in path.iterdir()]
    return bool(names) and all(n == DOCIDS or re.fullmatch(r"docids\.txt\.tmp-\d+", n) for n in names)


def encode_corpus(
    encoder: Encoder,
    docs: Callable[[], Iterator[tuple[str, str]]],
    out_dir: str | os.PathLike,
    *,
    shard_size: int = DEFAULT_SHARD_SIZE,
    batch_size: int = DEFAULT_BATCH_SIZE,
    overwrite: bool = False,
    stop_after_shards: int | None = None,
    source: Mapping[str, Any] | None = None,
    progress: bool = True,
) -> EncodeResult:
    """Encode the documents ``docs()`` yields (``(docid, text)``, same order each call) into shards.

    Resumes the shards already in ``out_dir`` when they were written with the
    same document-side settings and batch size for the same document ids;
    refuses otherwise. ``overwrite`` encodes afresh into ``OUT_DIR.new`` (itself
    resumable by the same command) and replaces ``out_dir`` with it only when
    complete: the old embeddings stay usable until then. ``stop_after_shards``
    stops after writing that many new shards (to split a long job, or to test
    resuming). One process at a time writes ``out_dir`` (:func:`legalir.base.atomic.lock`).
    """

    out = Path(out_dir)
    if shard_size < 1:
        raise EncoderError(f"shard size must be at least 1, got {shard_size}")
    if batch_size < 1:
        raise EncoderError(f"batch size must be at least 1, got {batch_size}")
    with atomic.lock(out):
        atomic.check_target(out, KIND, overwrite=overwrite, legacy=_is_embeddings)
        if not overwrite:
            return _encode_into(encoder, docs, out, shard_size, batch_size, stop_after_shards, source, progress,
                                restart=False)
        work = out.with_name(out.name + ".new")
        result = _encode_into(encoder, docs, work, shard_size, batch_size, stop_after_shards, source, progress,
                              restart=True)
        if result.complete:
            atomic.check_target(out, KIND, overwrite=True, legacy=_is_embeddings)
            _swap_in(work, out, overwrite=True)
            result.out_dir = out
        return result


def _encode_into(encoder: Encoder, docs, out: Path, shard_size: int, batch_size: int,
                 stop_after_shards: int | None, source, progress: bool, restart: bool) -> EncodeResult:
    """Encode into ``out``, resuming it; ``restart``: a folder of other settings there is ours to replace."""


    docids: list[str] = []
    seen: set[str] = set()
    for n, (docid, text) in enumerate(docs(), 1):
        problem = trec.id_message(docid)
        if problem:
            raise EncoderError(f"document {n}: id {docid!r} {problem}; a run could not hold it: give each document "
                               f"a one-word id")
        if docid in seen:
            raise EncoderError(f"document {n}: duplicate id {docid!r}")
        seen.add(docid)
        docids.append(docid)
    del seen
    if not docids:
        raise EncoderError(f"no documents to encode for {out}")
    digest = docids_digest(docids)
    settings = encoder.settings.to_dict()

    manifest = None
    if out.is_dir() and _only_leftovers(out):  # killed in its first moment by an older legalir
        shutil.rmtree(out)
    if (out / MANIFEST).exists():
        manifest = read_manifest(out)
        problem = _resume_problem(manifest, encoder, digest, len(docids), batch_size)
        if problem and restart:
            atomic.check_target(out, KIND)  # our own unfinished --overwrite work of other settings, if unchanged
            shutil.rmtree(out)
            manifest = None
        elif problem:
            raise EncoderError(f"{out}: {problem}. Use a new output folder, or --overwrite to start again "
                               f"(the old embeddings stay until the new ones are complete).")
        else:
            shard_size = int(manifest["shard_size"])
            if "batch_size" not in manifest:
                manifest["batch_size"] = batch_size
    elif out.exists() and any(out.iterdir()):
        raise EncoderError(f"{out}: exists and is not an embeddings folder (no {MANIFEST}); "
                           f"use a new output folder")
    if manifest is None:
        manifest = {"format": FORMAT_VERSION, "encoder": settings, "dim": encoder.dim, "documents": len(docids),
                    "docids_sha256": digest, "shard_size": shard_size, "batch_size": batch_size, "shards": {},
                    "complete": False, "source": dict(source or {})}
        # the folder appears whole (ids + manifest) or not at all: a kill here leaves nothing to refuse
        with atomic.atomic_dir(out, KIND, marker={"patterns": ["shard-*.npy"]}) as tmp:
            with open(tmp / DOCIDS, "w", encoding="utf-8") as f:
                for d in docids:
                    f.write(d + "\n")
            with open(tmp / MANIFEST, "w", encoding="utf-8") as f:
                json.dump(manifest, f, indent=2, sort_keys=True)
                f.write("\n")

    n_shards = (len(docids) + shard_size - 1) // shard_size
    done = {int(k) for k in manifest["shards"]}
    todo = [i for i in range(n_shards) if i not in done or not (out / shard_name(i)).exists()]
    written = 0
    bar = log.progress(total=len(docids), initial=len(docids) - sum(min(shard_size, len(docids) - i * shard_size)
                                                                    for i in todo),
                       desc=f"encoding {out.name}", unit=" docs", quiet=not progress)
    todo_set = set(todo)

    def pending() -> Iterator[tuple[int, list[str]]]:
        """(index, texts) of each shard still to write, in order, at most ``stop_after_shards`` of them."""
        shard: list[str] = []
        given = 0
        for pos, (docid, text) in enumerate(docs()):
            i = pos // shard_size
            if i not in todo_set:
                continue
            if pos >= len(docids) or docids[pos] != docid:
                raise EncoderError(f"document {pos + 1}: the documents changed while encoding ({docid!r})")
            shard.append(text)
            if len(shard) == min(shard_size, len(docids) - i * shard_size):
                if stop_after_shards is not None and given >= stop_after_shards:
                    return
                yield i, shard
                given += 1
                shard = []

    try:  # the encoder may finish shards out of order (several workers): each is recorded as it lands
        for index, vecs in encoder.encode_shards(pending(), batch_size=batch_size, callback=bar.update):
            save_shard(out, index, vecs)
            manifest["shards"][str(index)] = {"file": shard_name(index), "start": index * shard_size,
                                              "count": len(vecs)}
            atomic.write_json(out / MANIFEST, manifest)
            written += 1
    finally:
        bar.close()
    complete = len(manifest["shards"]) == n_shards
    if complete and not manifest.get("complete"):
        manifest["complete"] = True
        atomic.write_json(out / MANIFEST, manifest)
    return EncodeResult(len(docids), n_shards, len(manifest["shards"]), written, complete, out)


def _resume_problem(manifest: dict, encoder: Encoder, digest: str, n_docs: int, batch_size: int) -> str | None:
    """Why the shards of ``manifest`` cannot be continued by this encoding, or None."""
    old = EncoderSettings.from_dict(manifest.get("encoder", {})).document_side()
    new = encoder.settings.document_side()
    diff = {k: (old.get(k), new[k]) for k in new if old.get(k) != new[k]}
    if diff:
        what = "; ".join(f"{k}: {a!r} there, {b!r} now" for k, (a, b) in diff.items())
        return f"holds embeddings made with other settings ({what})"
    if manifest.get("docids_sha256") != digest or manifest.get("documents") != n_docs:
        return (f"holds embeddings of other documents ({manifest.get('documents')} there, {n_docs} now, or "
                f"different ids): the collection changed")
    old_batch = manifest.get("batch_size")
    if old_batch is not None and int(old_batch) != int(batch_size) and manifest.get("shards"):
        return (f"was encoded with --batch-size {old_batch}, now {batch_size}: vectors differ slightly "
                f"(about 1e-7) with the batch size, so the shards would mix two encodings; resume with "
                f"--batch-size {old_batch}")
    return None


def save_shard(out: Path, index: int, vecs: np.ndarray) -> None:
    """Write shard ``index`` of an embeddings folder (float32 ``.npy``), atomically."""

    with atomic.open_file(out / shard_name(index), "wb") as f:
        np.save(f, np.ascontiguousarray(vecs, dtype=np.float32), allow_pickle=False)


def iter_shards(emb_dir: str | os.PathLike) -> Iterator[np.ndarray]:
    """The embeddings of a complete folder, shard by shard (read-only memmaps), in document order."""
    out = Path(emb_dir)
    manifest = read_manifest(out)
    if not manifest.get("complete"):
        raise EncoderError(f"{out}: encoding is not finished ({len(manifest['shards'])} shard(s) done); "
                           f"run the same `legalir encode` again to resume")
    n_shards = (manifest["documents"] + manifest["shard_size"] - 1) // manifest["shard_size"]
    for i in range(n_shards):
        path = out / shard_name(i)
        if not path.exists():
            raise EncoderError(f"{path}: missing shard")
        arr = np.load(path, mmap_mode="r")
        expected = min(manifest["shard_size"], manifest["documents"] - i * manifest["shard_size"])
        if arr.shape != (expected, manifest["dim"]):
            raise EncoderError(f"{path}: shape {arr.shape}, expected {(expected, manifest['dim'])}")
        yield arr


def load_embeddings(emb_dir: str | os.PathLike) -> np.ndarray:
    """All embeddings of a complete folder in one array (document order)."""
    return np.concatenate(list(iter_shards(emb_dir)), axis=0)


def partitions(emb_dir: str | os.PathLike) -> list[str]:
    """Partition keys of a partitioned embeddings folder (sub-folders with a manifest); [] if not partitioned.

    Work folders (``KEY.new`` of ``--overwrite``, ``KEY.tmp-PID``) are not partitions."""
    root = Path(emb_dir)
    if (root / MANIFEST).exists():
        return []
    return sorted(p.name for p in root.iterdir()
                  if "." not in p.name and (p / MANIFEST).exists()) if root.is_dir() else []


def _check_partitioned_root(root: Path, keys: list[str]) -> None:
    """Refuse to put partition folders into a folder holding anything else (legalir never mixes
    its output into a user's folder)."""

    if not root.is_dir():
        if root.exists():
            raise OutputError(f"{root}: exists and is a file; name a folder for the embeddings")
        return
    names = "|".join(map(re.escape, keys))
    allowed = re.compile(rf"(?:\.(?:{names})\.lock|(?:{names})(?:\.new|\.tmp-\d+(?:-[0-9a-z]+)?)?)")
    foreign = sorted(p.name for p in root.iterdir() if not allowed.fullmatch(p.name))
    if foreign:
        raise OutputError(f"{root}: holds entries that are not this collection's partition embeddings "
                          f"({', '.join(foreign[:5])}{' ...' if len(foreign) > 5 else ''}); legalir never "
                          f"mixes its output into another folder: choose a new output folder")


def encode_collection(encoder: Encoder, collection_dir: str | os.PathLike, out_dir: str | os.PathLike, *,
                      partitions: list[str] | None = None, quiet: bool = False, **kwargs: Any) -> dict[str, EncodeResult]:
    """Encode a collection's documents: one embeddings folder, or one per partition (``out_dir/<partition>/``).

    ``kwargs`` go to :func:`encode_corpus` (shard size, batch size, overwrite, stop_after_shards).
    """
    from legalir import collections

    manifest = collections.read_manifest(collection_dir)
    dirs = collections.corpus_dirs(collection_dir)
    keys = sorted(dirs) if partitions is None else list(partitions)
    unknown = [k for k in keys if k not in dirs]
    if unknown:
        raise EncoderError(f"unknown partition(s) {unknown}; known: {', '.join(sorted(dirs))}")
    results: dict[str, EncodeResult] = {}
    if manifest.get("partition_field"):
        _check_partitioned_root(Path(out_dir), sorted(dirs))
    budget = kwargs.pop("stop_after_shards", None)  # new shards allowed in all, over every partition
    for key in keys:
        target = Path(out_dir) / key if key else Path(out_dir)

        def docs(key=key):
            for rec in collections.iter_documents(collection_dir, key or None):
                yield str(rec["id"]), record_text(encoder.settings.doc_text, rec)

        source = {"collection": str(Path(collection_dir).resolve()), "partition": key or None,
                  "partition_field": manifest.get("partition_field")}
        results[key] = encode_corpus(encoder, docs, target, source=source, progress=not quiet,
                                     stop_after_shards=budget, **kwargs)
        r = results[key]
        if budget is not None:
            budget -= r.shards_written
        if not quiet:
            state = "complete" if r.complete else f"stopped, {r.shards_done}/{r.shards_total} shards (run again to resume)"
            _log.info(f"{target}: {r.documents} documents, {r.shards_written} shard(s) written now, {state}")
        if not r.complete:
            break
    return results
