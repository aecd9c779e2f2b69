"""Contextualised markdown chunking (CRUMB's passage construction) as a reusable step.

A markdown document is split into **blocks**: ATX headings (``#`` .. ``######``),
paragraphs, list items (a top-level item with its nested items and
continuation lines), fenced code (``````` or ``~~~``, kept whole, blank lines
and all) and tables (GFM pipe tables, kept whole). Blank lines separate
blocks; a heading, a fence, a list item or a table also ends a paragraph.

Every block knows its **heading path**: the headings that enclose it,
outermost first (a heading of level *n* closes every open heading of level
*n* or deeper). Chunks are built greedily, in document order:

* a chunk starts with a block and is **prefixed with that block's heading
  path** (the heading lines, one per line, then a blank line);
* following blocks are added while the chunk stays within ``max_tokens``
  tokens of a BERT tokenizer, counted as the model sees the text
  (``[CLS]`` and ``[SEP]`` included), prefix included;
* a block that does not fit starts the next chunk; a block that alone
  exceeds ``max_tokens`` is a chunk of its own, **never truncated**;
* headings at the end of a chunk that enclose the next block move to the
  next chunk (where they are part of its prefix), so no chunk ends on a
  dangling heading and no heading text is lost.

Blocks inside a chunk are joined as in the source: list items of one tight
list by a newline, everything else by a blank line.

Token counts are summed per block. For BERT's WordPiece tokenizers (the
default, and what CRUMB used) this equals the count of the joined chunk,
because WordPiece never merges across whitespace; for other tokenizers a
chunk may differ from the limit by a token or two at block boundaries.

Passage ids are ``<document id>:<n>`` (n from 0) and every passage keeps
``parent_id``, so :mod:`legalir.search.maxp` maps passage runs back to
documents.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from legalir import collections, trec
from legalir.base import atomic, log
from legalir.collections import CollectionError
from legalir.datasets.dataset import Document
from legalir.trec import FormatError, iter_jsonl

DEFAULT_MAX_TOKENS = 512
FALLBACK_TOKENIZER = "bert-base-uncased"

__all__ = ["Block", "Chunk", "Chunker", "ChunkingError", "split_blocks", "default_tokenizer", "chunk_corpus"]


class ChunkingError(CollectionError):
    pass


# ------------------------------------------------------------------ markdown blocks

_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+.*|[ \t]*)$")
_ITEM = re.compile(r"^( {0,3})([-*+]|\d{1,9}[.)])(?:[ \t]+|$)")
_DELIM_ROW = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")


@dataclass(frozen=True)
class Block:
    kind: str                        # "heading" | "paragraph" | "list_item" | "code" | "table"
    text: str
    index: int                       # position in the document's block list
    path: tuple[Block, ...] = ()   # enclosing headings, outermost first
    level: int = 0                   # heading level (1-6) for headings
    list_id: int | None = None       # items of one list share an id
    blank_before: bool = True        # a blank line separated it from the previous block in the source


def _blank(line: str) -> bool:
    return not line.strip()


def _indent(line: str) -> int:
    expanded = line.expandtabs(4)
    return len(expanded) - len(expanded.lstrip(" "))


def _table_start(lines: Sequence[str], i: int) -> bool:
    line = lines[i]
    if line.lstrip().startswith("|"):
        return True
    return "|" in line and i + 1 < len(lines) and bool(_DELIM_ROW.match(lines[i + 1])) and "-" in lines[i + 1]


def _starts_block(lines: Sequence[str], i: int) -> bool:
    """Does line i start a block that interrupts a paragraph?"""
    line = lines[i]
    return bool(_FENCE.match(line) or _ATX.match(line) or _ITEM.match(line)) or line.lstrip().startswith("|")


def split_blocks(markdown: str) -> list[Block]:
    """The blocks of a markdown document, each with its heading path."""
    lines = markdown.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    n = len(lines)
    raw: list[dict[str, Any]] = []
    i = 0
    blank_before = True
    list_id: int | None = None
    lists = 0

    def emit(kind: str, start: int, end: int, **kw) -> None:
        nonlocal blank_before
        text = "\n".join(lines[start:end]).strip("\n")
        if text.strip():
            raw.append({"kind": kind, "text": text, "blank_before": blank_before, **kw})
        blank_before = False

    while i < n:
        line = lines[i]
        if _blank(line):
            blank_before = True
            i += 1
            continue
        fence = _FENCE.match(line)
        if fence:
            end = _fence_end(lines, i, fence)
            list_id = None
            emit("code", i, end)
            i = end
            continue
        atx = _ATX.match(line)
        if atx:
            list_id = None
            emit("heading", i, i + 1, level=len(atx.group(1)))
            raw[-1]["text"] = line.strip()
            i += 1
            continue
        if _table_start(lines, i):
            j = i + 1
            while j < n and not _blank(lines[j]) and "|" in lines[j]:
                j += 1
            list_id = None
            emit("table", i, j)
            i = j
            continue
        item = _ITEM.match(line)
        if item:
            j = _item_end(lines, i, item)
            if list_id is None:
                lists += 1
                list_id = lists
            same_list = list_id
            emit("list_item", i, j, list_id=same_list)
            i = j
            continue
        # paragraph: up to a blank line or a line that starts another block
        j = i + 1
        while j < n and not _blank(lines[j]) and not _starts_block(lines, j) and not _table_start(lines, j):
            j += 1
        list_id = None
        emit("paragraph", i, j)
        i = j
    return _with_headings(raw)


def _fence_end(lines: list[str], i: int, fence: re.Match) -> int:
    """End (exclusive) of the code fence opened at line ``i``; an unclosed fence runs to the end."""
    ch, size = fence.group(2)[0], len(fence.group(2))
    closing = re.compile(r"^ {0,3}" + re.escape(ch) + "{" + str(size) + r",}\s*$")
    j = i + 1
    while j < len(lines) and not closing.match(lines[j]):
        j += 1
    return min(j + 1, len(lines))


def _item_end(lines: list[str], i: int, item: re.Match) -> int:
    """End (exclusive) of the list item starting at line ``i``: its continuation paragraphs and nested lists."""
    n = len(lines)
    base = _indent(lines[i])
    content = len(item.group(0).expandtabs(4))
    j = i + 1
    while j < n:
        nxt = lines[j]
        if _blank(nxt):
            k = j
            while k < n and _blank(lines[k]):
                k += 1
            if k < n and _indent(lines[k]) >= max(content, base + 2):
                j = k  # a continuation paragraph or nested list of this item
                continue
            break
        ind = _indent(nxt)
        if ind <= base and (_ITEM.match(nxt) or _ATX.match(nxt) or _FENCE.match(nxt)):
            break
        if ind < content and (_ATX.match(nxt) or _FENCE.match(nxt) or nxt.lstrip().startswith("|")):
            break
        j += 1
    return j


def _with_headings(raw: list[dict[str, Any]]) -> list[Block]:
    """Blocks with the heading path above each."""
    blocks: list[Block] = []
    stack: list[Block] = []
    for idx, r in enumerate(raw):
        if r["kind"] == "heading":
            while stack and stack[-1].level >= r["level"]:
                stack.pop()
            b = Block("heading", r["text"], idx, tuple(stack), level=r["level"], blank_before=r["blank_before"])
            stack.append(b)
        else:
            b = Block(r["kind"], r["text"], idx, tuple(stack), list_id=r.get("list_id"),
                      blank_before=r["blank_before"])
        blocks.append(b)
    return blocks


# ------------------------------------------------------------------ tokenizer


def default_tokenizer() -> str:
    """The bundled all-MiniLM-L6-v2 tokenizer folder (BERT uncased WordPiece) when installed, else bert-base-uncased."""
    from legalir.base import models

    try:
        return str(models.bundled_minilm())
    except models.ModelError:
        return FALLBACK_TOKENIZER


def load_tokenizer(name_or_path: str | os.PathLike | None = None):
    """A fast (Rust) tokenizer with truncation and padding off, from a folder, a tokenizer.json or a Hub name."""
    from tokenizers import Tokenizer

    from legalir.base import models

    name = str(name_or_path) if name_or_path is not None else default_tokenizer()
    if models.is_alias(name):
        name = str(models.resolve(name))
    p = Path(name)
    try:
        if p.is_file():
            tok = Tokenizer.from_file(str(p))
        elif (p / "tokenizer.json").is_file():
            tok = Tokenizer.from_file(str(p / "tokenizer.json"))
        else:
            from transformers import AutoTokenizer

            hf = AutoTokenizer.from_pretrained(name)
            if not getattr(hf, "is_fast", False):
                raise ChunkingError(f"tokenizer {name!r} has no fast (Rust) version; give a folder with tokenizer.json")
            tok = hf.backend_tokenizer
    except ChunkingError:
        raise
    except Exception as e:  # missing folder, offline Hub, corrupt file
        raise ChunkingError(f"could not load tokenizer {name!r}: {e} (give a local folder holding tokenizer.json; "
                            f"the Hub is not reachable offline)") from None
    tok.no_truncation()
    tok.no_padding()
    return tok


# ------------------------------------------------------------------ chunker


@dataclass(frozen=True)
class Chunk:
    text: str
    tokens: int
    blocks: tuple[int, ...]   # indexes of the blocks it holds (its prefix headings not included)
    prefix: tuple[str, ...]   # heading lines of the prefix


@dataclass
class Chunker:
    """Greedy contextualised chunking (see module doc). ``tokenizer``: folder, tokenizer.json or Hub name."""

    max_tokens: int = DEFAULT_MAX_TOKENS
    tokenizer: str | os.PathLike | None = None
    _tok: Any = field(default=None, init=False, repr=False)
    _special: int = field(default=0, init=False, repr=False)

    def __post_init__(self):
        if self.max_tokens < 8:
            raise ChunkingError(f"max_tokens must be at least 8, got {self.max_tokens}")
        self._tok = load_tokenizer(self.tokenizer)
        self._special = len(self._tok.encode("", add_special_tokens=True).ids)

    def count(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text, without special tokens."""
        if not texts:
            return []
        return [len(e.ids) for e in self._tok.encode_batch(list(texts), add_special_tokens=False)]

    def count_text(self, text: str) -> int:
        """Tokens of one text as the model sees it (special tokens included)."""
        return len(self._tok.encode(text, add_special_tokens=True).ids)

    def chunk(self, markdown: str) -> list[Chunk]:
        return self.chunk_many([markdown])[0]

    def chunk_many(self, documents: Sequence[str]) -> list[list[Chunk]]:
        """Chunk several documents (tokenised in one batch)."""
        all_blocks = [split_blocks(d) for d in documents]
        flat = [b.text for blocks in all_blocks for b in blocks]
        counts = self.count(flat)
        out, pos = [], 0
        for blocks in all_blocks:
            sizes = counts[pos:pos + len(blocks)]
            pos += len(blocks)
            out.append(self._greedy(blocks, sizes))
        return out

    def _greedy(self, blocks: list[Block], sizes: list[int]) -> list[Chunk]:
        chunks: list[Chunk] = []
        cur: list[Block] = []
        cur_tokens = 0

        def prefix_tokens(b: Block) -> int:
            return sum(sizes[h.index] for h in b.path)

        def flush(next_block: Block | None) -> None:
            nonlocal cur, cur_tokens
            if next_block is not None:
                carried = {h.index for h in next_block.path}
                while cur and cur[-1].kind == "heading" and cur[-1].index in carried:
                    cur.pop()
            if cur:
                chunks.append(self._make(cur, sizes))
            cur, cur_tokens = [], 0

        for b in blocks:
            if cur and cur_tokens + sizes[b.index] <= self.max_tokens:
                cur.append(b)
                cur_tokens += sizes[b.index]
                continue
            if cur:
                flush(b)
            cur = [b]
            cur_tokens = self._special + prefix_tokens(b) + sizes[b.index]
        flush(None)
        return chunks

    def _make(self, blocks: list[Block], sizes: list[int]) -> Chunk:
        prefix = tuple(h.text for h in blocks[0].path)
        parts = []
        for k, b in enumerate(blocks):
            if k:
                prev = blocks[k - 1]
                tight = (b.kind == prev.kind == "list_item" and b.list_id == prev.list_id and not b.blank_before)
                parts.append("\n" if tight else "\n\n")
            parts.append(b.text)
        body = "".join(parts)
        text = "\n".join(prefix) + "\n\n" + body if prefix else body
        tokens = self._special + sum(sizes[h.index] for h in blocks[0].path) + sum(sizes[b.index] for b in blocks)
        return Chunk(text, tokens, tuple(b.index for b in blocks), prefix)


# ------------------------------------------------------------------ corpora


def passage_id(docid: str, n: int) -> str:
    return f"{docid}:{n}"


def read_jsonl_documents(path: str | os.PathLike, id_field: str = "id",
                         text_field: str = "contents") -> Iterator[dict]:
    """Records of a JSONL corpus, checked line by line (file and line named on error)."""

    p = Path(path)
    for n, rec in iter_jsonl(p):
        if rec.get(id_field) in (None, "") or text_field not in rec:
            raise FormatError(p, n, f"expected an object with {id_field!r} and {text_field!r}")
        if not isinstance(rec[text_field], str):
            raise FormatError(p, n, f"{text_field!r} is not a string")
        yield rec


def chunk_records(records: Iterable[Mapping[str, Any]], chunker: Chunker, id_field: str = "id",
                  text_field: str = "contents", batch: int = 64, stats: dict | None = None) -> Iterator[dict]:
    """Passage records ``{"id": "<docid>:<n>", "contents", "parent_id", ...other fields}`` for each document.

    ``stats`` (if given) receives counts: documents, passages, documents without
    text, passages over the limit (single blocks kept whole).
    """
    st = stats if stats is not None else {}
    st.update({"documents": 0, "passages": 0, "empty_documents": 0, "over_limit": 0, "empty_first": []})
    pending: list[Mapping[str, Any]] = []

    def drain() -> Iterator[dict]:
        texts = [str(r[text_field]) for r in pending]
        for rec, chunks in zip(pending, chunker.chunk_many(texts)):
            docid = str(rec[id_field])
            st["documents"] += 1
            if rec.get("parent_id") not in (None, ""):
                raise ChunkingError(f"document {docid!r} already has a parent_id ({rec['parent_id']!r}): "
                                    f"it is a passage already")
            if not chunks:
                st["empty_documents"] += 1
                if len(st["empty_first"]) < 10:
                    st["empty_first"].append(docid)
                continue
            extra = {k: v for k, v in rec.items() if k not in (id_field, text_field, "id", "contents", "parent_id")}
            for n, c in enumerate(chunks):
                st["passages"] += 1
                st["over_limit"] += c.tokens > chunker.max_tokens
                yield {"id": passage_id(docid, n), "contents": c.text, "parent_id": docid, **extra}
        pending.clear()

    for rec in records:
        pending.append(rec)
        if len(pending) >= batch:
            yield from drain()
    if pending:
        yield from drain()


def _source_records(src: Path, id_field: str, text_field: str) -> Iterator[dict]:
    if src.is_dir():
        yield from collections.iter_documents(src)
    else:
        yield from read_jsonl_documents(src, id_field, text_field)


def chunk_corpus(src: str | os.PathLike, dst: str | os.PathLike, chunker: Chunker, *, id_field: str = "id",
                 text_field: str = "contents", quiet: bool = False) -> dict:
    """Chunk a JSONL corpus or a collection folder.

    ``dst`` ending in ``.jsonl`` gets the passages as JSONL; any other ``dst``
    becomes a collection folder (``legalir index`` ready) holding the passages
    and a copy of the source collection's topics. Qrels stay with the source
    (they judge documents: score passage runs after :mod:`legalir.search.maxp`).
    Returns the counts.
    """

    src, dst = Path(src), Path(dst)
    if not src.exists():
        raise FileNotFoundError(f"{src}: not found")
    if src.is_dir():
        id_field, text_field = "id", "contents"
    stats: dict = {}
    records = log.progress(_source_records(src, id_field, text_field), desc="chunking", unit=" docs", quiet=quiet)
    passages = chunk_records(records, chunker, id_field, text_field, stats=stats)
    if dst.suffix == ".jsonl":
        with atomic.open_file(dst, output=True, inputs=[src]) as f:
            for rec in passages:
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    else:
        manifest = collections.write(_Passages(src, passages), dst, quiet=True)
        stats["manifest"] = str(dst / "manifest.json")
        stats["written"] = manifest["documents"]["written"]
    return stats


class _Passages:
    """A chunked corpus as a Dataset for :func:`legalir.collections.write` (topics copied, no qrels)."""

    name = "passages"

    def __init__(self, src: Path, passages: Iterable[dict]):
        self.root = src
        self.options = {"chunked_from": str(src)}
        self._passages = passages
        self.partition_field = None
        if src.is_dir():
            self.partition_field = collections.read_manifest(src).get("partition_field")

    def documents(self):
        for rec in self._passages:
            fields = {k: v for k, v in rec.items() if k not in ("id", "contents")}
            yield Document(rec["id"], rec["contents"], fields)

    def topic_sets(self):
        if not self.root.is_dir():
            return {}
        out = {}
        for p in sorted((self.root / "topics").glob("*.jsonl")):
            out[p.stem] = list(trec.read_topics(p).values())
        return out

    def qrels_sets(self):
        return {}
