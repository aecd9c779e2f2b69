"""The publisher's HTML -> blocks of text: a paragraph or list item's text (list labels restored from the
``<ol type>``) with the spans of the links inside its ``<cite>``s."""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

WS = re.compile(r"\s+")
_BEFORE_PUNCT = re.compile(r" (?=[,.;:)\]])|(?<=[(\[]) ")
_LINK = re.compile(r"\x01(\d+)\x02([^\x03]*)\x03")


@dataclass
class Link:
    """A link inside a ``<cite>``: ``href``, the ``<cite>`` class, its text, its span in its block."""

    href: str
    cls: str
    text: str
    start: int = 0
    end: int = 0


@dataclass
class Block:
    """One paragraph (or list item) of a section: its text and the links in it."""

    text: str
    links: list[Link] = field(default_factory=list)
    line: int | None = None


_ROMAN = ((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"), (50, "l"), (40, "xl"),
          (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i"))


def _label(kind: str | None, n: int) -> str:
    if kind in ("a", "A"):
        s = ""
        while n > 0:
            n, r = divmod(n - 1, 26)
            s = chr(ord("a") + r) + s
        return f"({s.upper() if kind == 'A' else s})"
    if kind in ("i", "I"):
        s = ""
        for v, r in _ROMAN:
            while n >= v:
                s, n = s + r, n - v
        return f"({s.upper() if kind == 'I' else s})"
    return f"({n})"


def _inline(el, out: list[str], links: list[Link], in_cite: str | None = None) -> None:
    """Text of ``el``'s content (not its tail) into ``out``; a link inside a ``<cite>`` as a marked span."""
    tag = el.tag if isinstance(el.tag, str) else None
    if tag is None:  # comment, processing instruction
        return
    if tag == "a" and in_cite is not None and el.get("href"):
        text = WS.sub(" ", el.text_content()).strip()
        out.append(f"\x01{len(links)}\x02{text}\x03")
        links.append(Link(el.get("href"), in_cite, text))
        return
    cite = (el.get("class") or "") if tag == "cite" else in_cite
    out.append(el.text or "")
    for child in el:
        if isinstance(child.tag, str) and child.tag in ("ol", "ul"):
            continue  # a nested list is its own blocks
        _inline(child, out, links, cite)
        out.append(child.tail or "")


#: a link run into a word by the publisher's markup (Idaho's ``former<cite><a>§ 32-706</a></cite>or``): a space is
#: where a reader of the page sees a word's end
_GLUED_BEFORE = re.compile(r"(?<=[A-Za-z0-9])(?=\x01\d+\x02[§A-Za-z0-9])")
_GLUED_AFTER = re.compile(r"(?<=[A-Za-z0-9]\x03)(?=[A-Za-z0-9])")


def finish_block(raw: str, links: list[Link], line: int | None) -> Block:
    if "\x01" in raw:
        raw = _GLUED_AFTER.sub(" ", _GLUED_BEFORE.sub(" ", raw))
    text = _BEFORE_PUNCT.sub("", WS.sub(" ", raw).strip())
    out, kept, pos = [], [], 0
    for m in _LINK.finditer(text):
        out.append(text[pos:m.start()])
        start = sum(len(p) for p in out)
        link = links[int(m.group(1))]
        link.start, link.end = start, start + len(m.group(2))
        out.append(m.group(2))
        kept.append(link)
        pos = m.end()
    out.append(text[pos:])
    return Block("".join(out), kept, line)


def blocks_of(el) -> Iterator[Block]:
    """The blocks of an element: a paragraph, each item of a list (with its label), each child of a div."""
    tag = el.tag if isinstance(el.tag, str) else None
    if tag is None:
        return
    if tag in ("ol", "ul"):
        kind = el.get("type") if tag == "ol" else None
        try:
            n = int(el.get("start") or 1) - 1
        except ValueError:
            n = 0
        for li in el:
            if not isinstance(li.tag, str):
                continue
            n = int(li.get("value")) if (li.get("value") or "").isdigit() else n + 1
            out, links = [], []
            _inline(li, out, links)
            label = _label(kind, n) + " " if tag == "ol" else ""
            block = finish_block("".join(out), links, li.sourceline)
            if block.text:
                yield Block(label + block.text, [Link(k.href, k.cls, k.text, k.start + len(label), k.end + len(label))
                                                 for k in block.links], block.line)
            for child in li:
                if isinstance(child.tag, str) and child.tag in ("ol", "ul"):
                    yield from blocks_of(child)
        return
    if tag in ("div", "section", "main", "nav") or (tag in ("li",) and len(el)):
        if tag == "nav":
            return
        if el.text and el.text.strip():
            yield finish_block(el.text, [], el.sourceline)
        for child in el:
            yield from blocks_of(child)
            if child.tail and child.tail.strip():
                yield finish_block(child.tail, [], el.sourceline)
        return
    out, links = [], []
    _inline(el, out, links)
    block = finish_block("".join(out), links, el.sourceline)
    if block.text:
        yield block


def bold_only(el) -> str | None:
    """The text of a paragraph that is only a bold heading (``<p><b>Editor's notes.</b></p>``), else None."""
    kids = [k for k in el if isinstance(k.tag, str)]
    if len(kids) == 1 and kids[0].tag in ("b", "strong") and not (el.text or "").strip() \
            and not (kids[0].tail or "").strip():
        return WS.sub(" ", kids[0].text_content()).strip()
    span = [k for k in kids if k.tag == "span" and "boldspan" in (k.get("class") or "")]
    if len(kids) == 1 and span and not (el.text or "").strip() and not (kids[0].tail or "").strip():
        return WS.sub(" ", kids[0].text_content()).strip()
    return None
