"""Text generation for query expansion and LLM judges: one interface, three backends, a disk cache.

    from legalir.datasets import generate
    gen = generate.make("api", model="gpt-4o-mini")          # cached under cache/generations
    texts = gen.generate([generate.Request("q1", [{"role": "user", "content": "..."}])])

Backends:

* ``api``: any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM,
  llama.cpp, ...). Base URL, model and key come from the arguments or the
  environment: ``LEGALIR_LLM_BASE_URL`` (else ``OPENAI_BASE_URL``, else
  OpenAI's), ``LEGALIR_LLM_MODEL``, ``LEGALIR_LLM_API_KEY`` (else
  ``OPENAI_API_KEY``). The key is read when a generator is made, never at
  import; a server that needs none (local vLLM) works without one. Transient
  errors (429, 5xx, timeouts, resets, refused connections) are retried with
  exponential back-off (``Retry-After`` honoured); 401/403 and 404 (unknown
  model) fail at once with a clear message. An unreachable endpoint fails
  fast: before its first request a generator opens one TCP connection to the
  server (or to the proxy that urllib would use); a host name that does not
  resolve fails at once, a refused or unanswered connection is retried for at
  most ``LEGALIR_LLM_CONNECT_TIMEOUT`` seconds (default 10, also
  ``connect_timeout=``), then a :class:`GenerationError` says so. Once the
  server has been reached, the retries above apply (a server restarting
  mid-run is waited for).
* ``local``: a transformers causal LM from a folder (its chat template when
  it has one); greedy when temperature is 0, seeded sampling otherwise.
* ``precomputed``: a JSONL file of ``{"qid": ..., "text": ...}`` lines (plus
  ``"docid"`` for judge answers), e.g. generations made once on a GPU box.

Every ``api``/``local`` generation is cached on disk, keyed by backend,
model, messages and sampling parameters (one JSON file per generation,
written atomically): a re-run makes no calls. ``cache=None`` disables it.
"""
from __future__ import annotations

import concurrent.futures as cf
import hashlib
import http.client
import json
import os
import random
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from legalir.base import log
from legalir.errors import LegalirError
from legalir.trec import FormatError

_log = log.get(__name__)

BACKENDS = ("api", "local", "precomputed")
DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_CACHE_DIR = "cache/generations"
DEFAULT_CONNECT_TIMEOUT = 10.0  # seconds to wait for an unreachable endpoint before giving up
TRANSIENT_STATUS = (408, 409, 425, 429, 500, 502, 503, 504, 520, 521, 522, 523, 524, 529)


class GenerationError(LegalirError, ValueError):
    """A generator cannot do what was asked (configuration, input, or a non-transient server error)."""


class AuthenticationError(GenerationError):
    pass


class ModelNotFoundError(GenerationError):
    pass


class _Transient(Exception):
    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class Request:
    """One generation: ``key`` names the item (a qid, or ``qid<TAB>docid``), ``messages`` the chat."""

    key: str
    messages: Sequence[Mapping[str, str]]
    qid: str | None = None
    docid: str | None = None


@dataclass(frozen=True)
class Sampling:
    temperature: float = 0.0
    max_tokens: int = 512
    top_p: float = 1.0
    seed: int | None = 0
    stop: tuple[str, ...] = ()

    def __post_init__(self):
        if self.temperature < 0 or self.max_tokens < 1 or not 0 < self.top_p <= 1:
            raise GenerationError(f"bad sampling parameters: {self}")


def messages_of(prompt: str | Sequence[Mapping[str, str]], system: str | None = None) -> list[dict[str, str]]:
    """Chat messages from a plain prompt (optionally with a system message) or messages."""
    if isinstance(prompt, str):
        msgs = [{"role": "system", "content": system}] if system else []
        return msgs + [{"role": "user", "content": prompt}]
    out = [dict(m) for m in prompt]
    for m in out:
        if set(m) != {"role", "content"} or m["role"] not in ("system", "user", "assistant"):
            raise GenerationError(f"a chat message needs exactly 'role' (system/user/assistant) and 'content': {m}")
    return out


class Generator(ABC):
    """Generates one text per request, in order. ``calls`` counts the backend's generations."""

    backend: str = ""
    cacheable: bool = True

    def __init__(self, model: str, sampling: Sampling | None = None):
        self.model = model
        self.sampling = sampling or Sampling()
        self.calls = 0
        self._lock = threading.Lock()

    def identity(self) -> dict:
        """What determines a generation besides the messages (the cache key)."""
        return {"backend": self.backend, "model": self.model, "sampling": asdict(self.sampling)}

    def generate(self, requests: Sequence[Request], progress: bool = True) -> list[str]:
        requests = list(requests)
        if not requests:
            return []
        return self._generate(requests, progress)

    @abstractmethod
    def _generate(self, requests: list[Request], progress: bool) -> list[str]: ...

    def _count(self, n: int = 1) -> None:
        with self._lock:
            self.calls += n


# ---------------------------------------------------------------- cache

class DiskCache:
    """One JSON file per generation under ``root/<backend>/<2 hex>/<sha256>.json``, written atomically."""

    def __init__(self, root: str | os.PathLike = DEFAULT_CACHE_DIR):
        self.root = Path(root)

    @staticmethod
    def key(identity: Mapping, messages: Sequence[Mapping[str, str]]) -> str:
        blob = json.dumps({"identity": identity, "messages": [dict(m) for m in messages]},
                          sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def _path(self, backend: str, key: str) -> Path:
        return self.root / backend / key[:2] / f"{key}.json"

    def get(self, backend: str, key: str) -> str | None:
        p = self._path(backend, key)
        try:
            with open(p, encoding="utf-8") as f:
                return json.load(f)["text"]
        except FileNotFoundError:
            return None
        except (json.JSONDecodeError, KeyError, UnicodeDecodeError):
            return None  # a damaged entry is regenerated and overwritten

    def put(self, backend: str, key: str, identity: Mapping, messages, text: str) -> None:
        from legalir.base import atomic

        atomic.write_json(self._path(backend, key),
                          {"identity": identity, "messages": [dict(m) for m in messages], "text": text,
                           "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
                          indent=None, sort_keys=False)


class Cached(Generator):
    """A generator whose generations are read from / written to a :class:`DiskCache`."""

    def __init__(self, inner: Generator, cache: DiskCache | str | os.PathLike = DEFAULT_CACHE_DIR,
                 chunk_size: int = 32):
        self.inner = inner
        self.chunk_size = max(1, chunk_size)
        self.cache = cache if isinstance(cache, DiskCache) else DiskCache(cache)
        self.backend = inner.backend
        self.hits = 0
        super().__init__(inner.model, inner.sampling)

    @property
    def calls(self) -> int:  # generations the backend made (cache misses)
        return self.inner.calls

    @calls.setter
    def calls(self, value):  # set by Generator.__init__; the inner generator counts
        pass

    def identity(self) -> dict:
        return self.inner.identity()

    def _generate(self, requests: list[Request], progress: bool) -> list[str]:
        ident = self.identity()
        keys = [self.cache.key(ident, r.messages) for r in requests]
        out: list[str | None] = [self.cache.get(self.backend, k) for k in keys]
        todo = [i for i, t in enumerate(out) if t is None]
        self.hits += len(requests) - len(todo)
        # identical prompts are generated once
        first: dict[str, int] = {}
        unique = [i for i in todo if first.setdefault(keys[i], i) == i]
        if unique:

            if progress:
                _log.info(f"generate: {len(requests) - len(todo)} of {len(requests)} from the cache, "
                          f"{len(unique)} to generate ({self.backend}: {self.model})")
            # in chunks, each written to the cache at once: an interrupted run loses at most one chunk
            with log.progress(total=len(unique), desc=f"generate ({self.model})", unit=" texts",
                              quiet=not progress) as bar:
                for c in range(0, len(unique), self.chunk_size):
                    chunk = unique[c:c + self.chunk_size]
                    texts = self.inner.generate([requests[i] for i in chunk], progress=False)
                    for i, t in zip(chunk, texts):
                        self.cache.put(self.backend, keys[i], ident, requests[i].messages, t)
                        out[i] = t
                    bar.update(len(chunk))
        for i in todo:
            if out[i] is None:
                out[i] = out[first[keys[i]]]
        return [str(t) for t in out]


# ---------------------------------------------------------------- OpenAI-compatible API

class OpenAIChat(Generator):
    """An OpenAI-compatible ``/chat/completions`` endpoint over plain HTTP (urllib)."""

    backend = "api"

    def __init__(self, model: str | None = None, base_url: str | None = None, api_key: str | None = None,
                 sampling: Sampling | None = None, *, timeout: float = 120.0, max_retries: int = 6,
                 backoff: float = 1.0, max_backoff: float = 60.0, concurrency: int = 4,
                 extra_body: Mapping[str, Any] | None = None, connect_timeout: float | None = None):
        model = model or os.environ.get("LEGALIR_LLM_MODEL")
        if not model:
            raise GenerationError("no model for the API backend: pass --model or set LEGALIR_LLM_MODEL")
        super().__init__(model, sampling)
        self.base_url = (base_url or os.environ.get("LEGALIR_LLM_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
                         or DEFAULT_BASE_URL).rstrip("/")
        if not self.base_url.startswith(("http://", "https://")):
            raise GenerationError(f"API base URL must start with http:// or https:// (got {self.base_url!r})")
        self._key = api_key if api_key is not None else (
            os.environ.get("LEGALIR_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY"))
        self.timeout, self.max_retries = timeout, max_retries
        self.backoff, self.max_backoff = backoff, max_backoff
        self.concurrency = max(1, concurrency)
        self.extra_body = dict(extra_body or {})
        self.url = self.base_url + "/chat/completions"
        if connect_timeout is None:
            raw = os.environ.get("LEGALIR_LLM_CONNECT_TIMEOUT", str(DEFAULT_CONNECT_TIMEOUT))
            try:
                connect_timeout = float(raw)
            except ValueError:
                raise GenerationError(f"LEGALIR_LLM_CONNECT_TIMEOUT must be a number of seconds, got {raw!r}") from None
        if connect_timeout <= 0:
            raise GenerationError(f"the connect timeout must be positive, got {connect_timeout}")
        self.connect_timeout = float(connect_timeout)
        self._reached = False
        self._reach_lock = threading.Lock()

    def _check_reachable(self) -> None:
        """Fail fast when nothing answers at the endpoint (see the module doc); once per generator."""
        if self._reached:
            return
        with self._reach_lock:
            if self._reached:
                return
            parts = urllib.parse.urlsplit(self.url)
            host, port = parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
            proxy = urllib.request.getproxies().get(parts.scheme)
            via = ""
            if proxy and not urllib.request.proxy_bypass(host):
                p = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
                host, port, via = p.hostname or "", p.port or 80, f" (through the proxy {proxy})"
            deadline = time.monotonic() + self.connect_timeout
            delay = 0.25
            while True:
                try:
                    socket.create_connection((host, port), timeout=max(0.05, deadline - time.monotonic())).close()
                    break
                except socket.gaierror as e:
                    raise GenerationError(f"{self.url}: host {host!r}{via} does not resolve ({e.strerror or e}); "
                                          f"check --base-url / LEGALIR_LLM_BASE_URL") from None
                except OSError as e:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        reason = e.strerror or type(e).__name__
                        raise GenerationError(
                            f"{self.url}: cannot connect to {host}:{port}{via} ({reason}) within "
                            f"{self.connect_timeout:g} s: is the server running? Check --base-url / "
                            f"LEGALIR_LLM_BASE_URL (LEGALIR_LLM_CONNECT_TIMEOUT sets this wait)") from None
                    time.sleep(min(delay, left))
                    delay = min(2.0, delay * 2)
            self._reached = True

    def identity(self) -> dict:
        ident = super().identity()
        ident["base_url"] = self.base_url
        if self.extra_body:
            ident["extra_body"] = self.extra_body
        return ident

    def _body(self, messages) -> bytes:
        s = self.sampling
        body: dict[str, Any] = {"model": self.model, "messages": [dict(m) for m in messages],
                                "temperature": s.temperature, "max_tokens": s.max_tokens, "top_p": s.top_p}
        if s.seed is not None:
            body["seed"] = s.seed
        if s.stop:
            body["stop"] = list(s.stop)
        body.update(self.extra_body)
        return json.dumps(body).encode("utf-8")

    def _once(self, messages) -> str:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        req = urllib.request.Request(self.url, data=self._body(messages), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            detail = _error_detail(e)
            if e.code in (401, 403):
                raise AuthenticationError(
                    f"{self.url}: HTTP {e.code} ({detail}): the API refused the credentials; set "
                    f"LEGALIR_LLM_API_KEY or OPENAI_API_KEY to a valid key") from None
            if e.code == 404:
                raise ModelNotFoundError(
                    f"{self.url}: HTTP 404 ({detail}): model {self.model!r} (or the endpoint) does not exist "
                    f"there; check --model / LEGALIR_LLM_MODEL and the base URL") from None
            if e.code in TRANSIENT_STATUS:
                raise _Transient(f"HTTP {e.code} ({detail})", _retry_after(e.headers)) from None
            raise GenerationError(f"{self.url}: HTTP {e.code}: {detail}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException, OSError) as e:
            reason = getattr(e, "reason", e)
            raise _Transient(f"{type(reason).__name__}: {reason}") from None
        try:
            data = json.loads(raw)
            content = data["choices"][0]["message"].get("content")
        except (json.JSONDecodeError, KeyError, IndexError, TypeError, AttributeError):
            raise _Transient(f"malformed response: {raw[:200]!r}") from None
        return "" if content is None else str(content)

    def _with_retries(self, messages) -> str:
        self._check_reachable()
        last = None
        for attempt in range(self.max_retries + 1):
            try:
                text = self._once(messages)
                self._count()
                return text
            except _Transient as e:
                last = e
                if attempt == self.max_retries:
                    break
                delay = min(self.max_backoff, self.backoff * (2 ** attempt))
                if e.retry_after is not None:
                    delay = min(self.max_backoff, max(delay, e.retry_after))
                delay *= 1 + 0.1 * random.random()
                _log.warning(f"generate: {self.url}: {e}; retry {attempt + 1}/{self.max_retries} in {delay:.1f}s")
                time.sleep(delay)
        raise GenerationError(f"{self.url}: gave up after {self.max_retries + 1} attempts: {last}")

    def _generate(self, requests: list[Request], progress: bool) -> list[str]:

        out: list[str | None] = [None] * len(requests)
        with log.progress(total=len(requests), desc=f"generate ({self.model})", unit=" texts",
                          quiet=not progress) as bar:
            if self.concurrency == 1:
                for i, r in enumerate(requests):
                    out[i] = self._with_retries(r.messages)
                    bar.update(1)
            else:
                with cf.ThreadPoolExecutor(self.concurrency) as pool:
                    futures = {pool.submit(self._with_retries, r.messages): i for i, r in enumerate(requests)}
                    try:
                        for fut in cf.as_completed(futures):
                            out[futures[fut]] = fut.result()
                            bar.update(1)
                    except BaseException:
                        for f in futures:
                            f.cancel()
                        raise
        return [str(t) for t in out]


def _error_detail(e: urllib.error.HTTPError) -> str:
    try:
        body = e.read().decode("utf-8", "replace")
    except Exception:
        return e.reason or ""
    try:
        err = json.loads(body).get("error")
        if isinstance(err, dict):
            return str(err.get("message") or err)
        if err:
            return str(err)
    except (json.JSONDecodeError, AttributeError):
        pass
    return body.strip()[:300] or str(e.reason)


def _retry_after(headers) -> float | None:
    value = headers.get("Retry-After") if headers else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


# ---------------------------------------------------------------- local transformers model

class LocalCausalLM(Generator):
    """A transformers causal LM from a folder; batched, left-padded generation."""

    backend = "local"

    def __init__(self, path: str | os.PathLike, sampling: Sampling | None = None, *, device: str | None = None,
                 batch_size: int = 8, dtype: str = "auto"):
        p = Path(os.path.expanduser(str(path)))
        if not (p / "config.json").exists():
            raise GenerationError(f"{p}: not a transformers model folder (no config.json)")
        super().__init__(str(p.resolve()), sampling)
        self.path = p
        self.device_name = device
        self.batch_size = max(1, batch_size)
        self.dtype = dtype
        self._model = None
        self._tok = None

    def identity(self) -> dict:
        ident = super().identity()
        cfg = self.path / "config.json"
        weights = sorted(self.path.glob("*.safetensors")) or sorted(self.path.glob("*.bin"))
        h = hashlib.sha256(cfg.read_bytes())
        for w in weights:  # size + mtime: cheap, changes when the weights change
            st = w.stat()
            h.update(f"{w.name}:{st.st_size}:{int(st.st_mtime)}".encode())
        ident["weights"] = h.hexdigest()[:16]
        return ident

    def _load(self):
        if self._model is None:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer

            device = self.device_name or ("cuda" if torch.cuda.is_available() else "cpu")
            tok = AutoTokenizer.from_pretrained(str(self.path))
            tok.padding_side = "left"
            if tok.pad_token is None:
                tok.pad_token = tok.eos_token or tok.unk_token
            kwargs = {}
            if self.dtype != "auto":
                kwargs["dtype"] = getattr(torch, self.dtype)
            model = AutoModelForCausalLM.from_pretrained(str(self.path), **kwargs).to(device)
            model.eval()
            self._model, self._tok, self._device = model, tok, device
        return self._model, self._tok

    def prompt_text(self, messages) -> str:
        _, tok = self._load()
        if getattr(tok, "chat_template", None):
            return tok.apply_chat_template([dict(m) for m in messages], tokenize=False, add_generation_prompt=True)
        return "\n\n".join(m["content"] for m in messages) + "\n\n"

    def _generate(self, requests: list[Request], progress: bool) -> list[str]:
        import torch

        model, tok = self._load()
        s = self.sampling
        out: list[str] = []
        with log.progress(total=len(requests), desc=f"generate ({self.path.name})", unit=" texts",
                          quiet=not progress) as bar:
            for b in range(0, len(requests), self.batch_size):
                chunk = requests[b:b + self.batch_size]
                enc = tok([self.prompt_text(r.messages) for r in chunk], return_tensors="pt", padding=True,
                          add_special_tokens=False).to(self._device)
                kwargs: dict[str, Any] = {"max_new_tokens": s.max_tokens, "pad_token_id": tok.pad_token_id}
                if s.temperature > 0:
                    torch.manual_seed((s.seed or 0) + b)
                    kwargs.update(do_sample=True, temperature=s.temperature, top_p=s.top_p)
                else:
                    kwargs.update(do_sample=False)
                with torch.inference_mode():
                    gen = model.generate(**enc, **kwargs)
                new = gen[:, enc["input_ids"].shape[1]:]
                for row in new:
                    text = tok.decode(row, skip_special_tokens=True)
                    for stop in s.stop:
                        if stop in text:
                            text = text[:text.index(stop)]
                    out.append(text.strip())
                self._count(len(chunk))
                bar.update(len(chunk))
        return out


# ---------------------------------------------------------------- precomputed file

class Precomputed(Generator):
    """Generations read from JSONL: ``{"qid": ..., "text": ...}`` (``"docid"`` too for judge answers)."""

    backend = "precomputed"
    cacheable = False

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        super().__init__(f"file:{self.path}")
        if not self.path.exists():
            raise GenerationError(f"{self.path}: precomputed generations file not found")
        self.texts: dict[str, str] = {}
        with open(self.path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as e:
                    raise FormatError(self.path, n, f"invalid JSON: {e.msg}") from None
                if not isinstance(rec, dict) or "qid" not in rec or "text" not in rec:
                    raise FormatError(self.path, n, "a generation needs 'qid' and 'text' (and 'docid' for judges)")
                if not isinstance(rec["text"], str):
                    raise FormatError(self.path, n, "'text' must be a string")
                key = str(rec["qid"]) if rec.get("docid") is None else f"{rec['qid']}\t{rec['docid']}"
                if key in self.texts:
                    raise FormatError(self.path, n, f"duplicate generation for {key!r}")
                self.texts[key] = rec["text"]
        if not self.texts:
            raise FormatError(self.path, None, "no generations in file")

    def _generate(self, requests: list[Request], progress: bool) -> list[str]:
        missing = [r.key for r in requests if r.key not in self.texts]
        if missing:
            shown = ", ".join(m.replace("\t", "/") for m in missing[:10])
            raise GenerationError(f"{self.path}: no generation for {len(missing)} of {len(requests)} item(s): "
                                  f"{shown}" + (" ..." if len(missing) > 10 else ""))
        self._count(len(requests))
        return [self.texts[r.key] for r in requests]


def write_generations(path: str | os.PathLike, requests: Sequence[Request], texts: Sequence[str]) -> int:
    """Save generations in the precomputed backend's format (atomic); returns the count."""
    from legalir.base import atomic

    with atomic.open_file(path, output=True) as f:
        for r, t in zip(requests, texts):
            rec = {"qid": r.qid if r.qid is not None else r.key, "text": t}
            if r.docid is not None:
                rec["docid"] = r.docid
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return len(texts)


# ---------------------------------------------------------------- factory

def make(backend: str, *, model: str | None = None, path: str | os.PathLike | None = None,
         sampling: Sampling | None = None, cache: str | os.PathLike | None | bool = True,
         **options: Any) -> Generator:
    """A generator by backend name, wrapped in the disk cache unless ``cache`` is False/None.

    ``api``: ``model``, ``base_url``, ``api_key``, ``concurrency``, ``max_retries``, ``backoff``, ``timeout``,
    ``connect_timeout``;
    ``local``: ``path`` (or ``model``) = model folder, ``device``, ``batch_size``;
    ``precomputed``: ``path`` = the JSONL file.
    """
    if backend == "api":
        gen: Generator = OpenAIChat(model=model, sampling=sampling, **options)
    elif backend == "local":
        where = path or model
        if not where:
            raise GenerationError("the local backend needs a model folder (--model PATH)")
        gen = LocalCausalLM(where, sampling, **options)
    elif backend == "precomputed":
        where = path or model
        if not where:
            raise GenerationError("the precomputed backend needs a generations file (--generations FILE)")
        return Precomputed(where)
    else:
        raise GenerationError(f"unknown generator backend {backend!r}; known: {', '.join(BACKENDS)}")
    if cache is None or cache is False:
        return gen
    root = os.environ.get("LEGALIR_CACHE_DIR", DEFAULT_CACHE_DIR) if cache is True else cache
    return Cached(gen, root)
