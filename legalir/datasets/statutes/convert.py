"""The dataset ``statutes``: a release's files -> one document per section with its keys and citations, and
the cross-reference benchmark (topic sets ``train``, ``valid``, ``test``) from the code's links."""
from __future__ import annotations

import hashlib
import re
import tarfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from legalir.base import checks
from legalir.base import log as _logging
from legalir.base.words import words
from legalir.datasets.dataset import Dataset, DatasetError, Document, Judgement, Option, Topic, register
from legalir.datasets.statutes.blocks import Block, Link
from legalir.datasets.statutes.codes import (
    ANCHOR,
    LIST_ITEM,
    NUM,
    PLACE,
    STATES,
    alt_id,
    expand_range,
    key_prefix,
    official_citation,
    section_key,
    title_of,
)
from legalir.datasets.statutes.reader import TITLE_FILE, Report, Section, located, read_sections
from legalir.errors import ApiError
from legalir.legal.guarded import GuardedCitations

_log = _logging.get(__name__)

TEXT_PARTS = ("heading", "text", "history", "notes", "case_notes")
TEXT_DEFAULT = "text"
SPLITS = ("train", "valid", "test")
MASK = "[CITATION]"
#: seconds one call of legalir.legal.citations may take on one section before it is given up (and counted)
#: seconds legalir.legal.citations may take on one section: 0, no guard (its extraction is linear in the text since
#: issue 29; the option remains for a guard in a child process)
CITE_TIMEOUT_S = 0.0

_SUB = re.compile(r"\s*((?:\([0-9A-Za-z]{1,4}\)\s*)+)$")



def parse_text_option(value: str) -> tuple[str, ...]:
    parts = tuple(p.strip().lower() for p in str(value).split("+") if p.strip())
    bad = [p for p in parts if p not in TEXT_PARTS]
    if not parts or bad or len(set(parts)) != len(parts) or "text" not in parts:
        raise DatasetError(f"statutes: option text={value!r}: expected '+'-joined parts, each once, from "
                           f"{', '.join(TEXT_PARTS)}, 'text' among them (default {TEXT_DEFAULT})")
    return parts


def _check_date(value: str) -> str:
    """``--option date``: ``YYYY-MM-DD``, ``YYYY-MM`` or ``YYYY`` (:func:`legalir.base.checks.calendar_date`), as ISO text."""
    try:
        return checks.calendar_date("date", str(value).strip(), partial=True)
    except ApiError:
        raise DatasetError(f"statutes: option date={value!r}: expected the release's date as the publisher dates "
                           f"it, YYYY-MM-DD, YYYY-MM or YYYY (e.g. 2022-11 for 'Release 86 dated 2022.11.')") from None


def readme_release_dates(text: str) -> dict[str, tuple[str | None, int, str]]:
    """``{release: (date, line, as written)}`` of the release lines of a publisher's repository README
    (``* Release 81 dated 2021.07.`` -> ``("2021-07", 8, "2021.07.")``): the date as ISO text at the precision
    printed (``2020.04.20.`` day, ``2021.07`` month, ``2020`` year), or None where it is not a date of the
    calendar (``2020.11.019``: the line is still reported). Read by splitting words, no regular expression."""
    out: dict[str, tuple[str | None, int, str]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        words = line.replace("*", " ").split()
        if len(words) < 4 or words[0].lower() != "release" or words[2].lower() != "dated" or not words[1].isdigit():
            continue
        raw = words[3]
        parts = raw.rstrip(".").split(".")
        try:
            date = checks.calendar_date("date", "-".join(parts), partial=True) if raw.rstrip(".") else None
        except ApiError:
            date = None
        release = str(int(words[1]))
        if release not in out or (out[release][0] is None and date is not None):  # the first date read counts
            out[release] = (date, n, raw)
    return out


def _check_release(value: str) -> None:
    if not re.fullmatch(r"\d{1,4}", str(value).strip()):
        raise DatasetError(f"statutes: option release={value!r}: expected the publisher's release number "
                           f"(e.g. 86 for cic-code-ga/transforms/ga/ocga/r86)")


# ------------------------------------------------------------------ the dataset
@dataclass
class Converted:
    """A section with its keys: the document, and the links of its statutory text (for the benchmark)."""

    doc: Document
    key: str
    title_number: str
    #: (part, paragraph, [(link, key of the linked section)]) of each paragraph with a link within the code
    paragraphs: list[tuple[str, Block, list[tuple[Link, str]]]]
    #: for each of ``paragraphs``, the keys of the sections inside a range whose two ends are links
    inside_ranges: list[list[str]] = field(default_factory=list)


@register
class Statutes(Dataset):
    """A state's official code as Public.Resource.Org publishes it (see :mod:`legalir.datasets.statutes`)."""

    name = "statutes"
    jurisdiction_field = "state"
    filter_fields = ("state", "status")  # a release is a version of the index: as_of=, not a filter
    #: the reader writes each document's ``citations`` field itself, from the code's own links
    citations_given = True
    #: set by legalir.collections (``legalir convert --citations off``: False, nothing extracted)
    citations_wanted = True
    # the cross-reference benchmark's protocol (legalir report, tune-bm25, tune-fusion)
    measures = ("success.1,10", "recip_rank", "recall.10,100", "ndcg_cut.10")
    headline = "recip_rank"
    report_scale = 1
    options_spec = {
        "state": Option("the state's postal abbreviation (the publisher's cic-code-<state>)", "ga",
                        choices=tuple(STATES)),
        "release": Option("the publisher's release number (r86 -> 86) [default: the newest present]",
                          check=_check_release),
        "date": Option("the release's date as the publisher dates it, YYYY-MM-DD, YYYY-MM or YYYY [default: the one the "
                       "repository's README gives: 'Release 86 dated 2022.11.']", check=lambda v: _check_date(v)),
        "text": Option(f"what `contents` holds: '+'-joined parts of {', '.join(TEXT_PARTS)} (text: the "
                       f"statutory text)", TEXT_DEFAULT, check=lambda v: parse_text_option(v)),
        "cite_timeout": Option("seconds legalir.legal.citations may take on one section before it is given up and "
                               "counted (0: no guard, in this process)", str(int(CITE_TIMEOUT_S)),
                               check=lambda v: _check_timeout(v)),
    }

    def __init__(self, root, **options):
        super().__init__(root, **options)
        self.state = str(options.get("state", "ga")).strip().lower()
        self.options["state"] = self.state
        self.text_parts = parse_text_option(options.get("text", TEXT_DEFAULT))
        self.options["text"] = "+".join(self.text_parts)
        self.cite_timeout = _check_timeout(options.get("cite_timeout", str(int(CITE_TIMEOUT_S))))
        self.release = str(options["release"]).strip() if options.get("release") else None
        #: the release's date (ISO, at the precision the publisher gives) and where it was read (_record_date)
        self.date: str | None = _check_date(options["date"]) if options.get("date") else None
        self.date_from: str | None = "--option date" if self.date else None
        self.report = Report()
        self._converted: list[Converted] | None = None
        self._xref: list[dict] | None = None

    # ------------------------------------------------------------ files
    def _sources(self) -> list[Path]:
        """Where the publisher's files are: folders ``cic-code-<st>/`` and ``cic-code-<st>*.tar.xz`` archives,
        under ``root`` (``DIR/statutes``) or its parent (``DIR``)."""
        st = self.state
        for base in (self.root, self.root.parent):
            found = ([base / f"cic-code-{st}"] if (base / f"cic-code-{st}").is_dir() else []) + \
                sorted(base.glob(f"cic-code-{st}*.tar.xz")) + sorted(base.glob(f"cic-code-{st}*.tar"))
            if found:
                return found
        raise DatasetError(f"statutes: no cic-code-{st}/ folder or cic-code-{st}*.tar.xz archive under {self.root} "
                           f"or {self.root.parent}; place the publisher's repository UniCourt/cic-code-{st} there "
                           f"as published (cic-code-{st}/transforms/{st}/<code>/r<release>/*.html)")

    def _member_release(self, name: str) -> str | None:
        st = self.state
        m = re.fullmatch(rf"(?:.*/)?cic-code-{st}/transforms/{st}/[^/]+/r(\d+)/[^/]+\.html", name)
        return m.group(1) if m else None

    def _files(self) -> Iterator[tuple[str, bytes]]:
        """``(label, bytes)`` of each HTML file of the release, in name order."""
        sources = self._sources()
        found: dict[str, tuple[str, Any]] = {}
        releases: set[str] = set()
        readmes: list[tuple[str, str]] = []  # (where, text) of the repository's README: the releases' dates
        for src in sources:
            if src.is_dir():
                if (src / "README.md").is_file():
                    readmes.append((str(src / "README.md"), (src / "README.md").read_text("utf-8", "replace")))
                for p in sorted(src.glob(f"transforms/{self.state}/*/r*/*.html")):
                    rel = self._member_release(f"{src.name}/{p.relative_to(src).as_posix()}")
                    if rel is not None:
                        releases.add(rel)
                        found.setdefault(f"{src.name}/{p.relative_to(src).as_posix()}", ("file", p))
            else:
                found.update(self._scan_archive(src, releases, readmes))
        if not releases:
            raise DatasetError(f"statutes: no release folder transforms/{self.state}/<code>/r<N>/*.html in "
                               f"{', '.join(map(str, sources))}")
        if self.release is None:
            self.release = max(releases, key=int)
            self.options["release"] = self.release
        if self.release not in releases:
            raise DatasetError(f"statutes: no release {self.release} of {self.state} in "
                               f"{', '.join(map(str, sources))}; present: {', '.join(sorted(releases, key=int))} "
                               f"(--option release=N)")
        self._record_date(readmes)
        wanted = sorted(n for n in found if self._member_release(n) == self.release)
        archives: dict[Path, list[str]] = {}
        for n in wanted:
            kind, where = found[n]
            if kind == "file":
                yield str(where), where.read_bytes()
            else:
                archives.setdefault(where, []).append(n)
        for arc, names in archives.items():  # one pass over each archive (xz cannot seek cheaply)
            want = set(names)
            got: dict[str, bytes] = {}
            with tarfile.open(arc) as tf:
                for member in tf:
                    if member.name in want and member.isfile():
                        got[member.name] = tf.extractfile(member).read()
            for n in names:
                yield f"{arc}!{n}", got[n]

    def _scan_archive(self, path: Path, releases: set[str],
                      readmes: list[tuple[str, str]] | None = None) -> dict[str, tuple[str, Any]]:
        out = {}
        try:
            with tarfile.open(path) as tf:
                for member in tf:
                    if readmes is not None and member.isfile() and \
                            member.name.split("/")[-2:] == [f"cic-code-{self.state}", "README.md"]:
                        readmes.append((f"{path}!{member.name}", tf.extractfile(member).read().decode("utf-8", "replace")))
                    rel = self._member_release(member.name) if member.isfile() else None
                    if rel is not None:
                        releases.add(rel)
                        out[member.name] = ("archive", path)
        except (tarfile.TarError, OSError, EOFError) as e:
            raise DatasetError(f"{path}: not a readable tar archive ({e})") from None
        return out

    # ------------------------------------------------------------ conversion
    def converted(self) -> list[Converted]:
        """Every section of the release with its keys, read once (the corpus and the benchmark)."""
        if self._converted is not None:
            return self._converted
        t0 = time.perf_counter()
        report = self.report = Report()
        sections: list[Section] = []
        for label, data in self._files():
            report.files += 1
            if not TITLE_FILE.fullmatch(Path(label.split("!")[-1]).name):
                report.skip("a file that is not a title of the code (the publisher's copy of a constitution): not "
                            "read, its <h3>s not counted", f"{label} ({data.count(b'<h3')} <h3>)")
                continue
            sections += read_sections(label, data, report, self.state)
        by_anchor = {s.anchor: s for s in sections}
        from legalir.legal import citations as cite

        # two numbers legalir.legal.citations writes alike (Rhode Island's 4-4-1.1 and 4-4.1-1, Colorado's 26-5.3-101 and
        # 26.5-3-101: one key): the later number's id writes its dots as "d" (ri_code_4_4d1_1), so both are kept
        self._alt_ids = {}
        firsts: dict[str, str] = {}
        for s in sections:
            title = title_of(s.anchor, s.number)
            for number in s.numbers:
                key = self._key(number, title)
                if firsts.setdefault(key, number) != number and (number, title) not in self._alt_ids:
                    self._alt_ids[(number, title)] = alt_id(key, number)
                    report.note("two section numbers with one citation key (legalir.legal.citations writes them alike): "
                                "the later one's id writes its dots as 'd'",
                                f"{located(s.file, s.line, s.anchor)}: {number} ({self._alt_ids[(number, title)]}; "
                                f"{key} is {firsts[key]})")
        out: list[Converted] = []
        seen: dict[str, tuple[str, str]] = {}
        with GuardedCitations(self.cite_timeout) as guard:
            for s in sections:
                out += self._convert(s, by_anchor, seen, guard, cite)
        report.written = len(out)
        report.seconds = time.perf_counter() - t0
        self._converted = out
        return out


    def _key(self, section: str, title: str | None = None, *, count: bool = False) -> str:
        alt = getattr(self, "_alt_ids", {}).get((section, title))
        if alt is not None:
            return alt
        key, from_lib = section_key(self.state, section, title if self.state == "vt" else None)
        if count and not from_lib:
            self.report.counts["ids: legalir.legal.citations reads no key in the official form (the general code's key)"] += 1
        return key

    def _title_first(self, text: str, own: str, found: list[str]) -> str:
        """The code's title-first citations in ``text`` (``13 V.S.A. § 2901``), keyed by the title they print (the
        key :func:`section_key` gives ``Vt. Stat. Ann. tit. 13, § 2901``: ``vt_code_13_2901``) into ``found``;
        returns the text with them blanked, so that legalir.legal.citations does not read their ``§ 2901`` in the
        citing section's title."""
        abbr = STATES[self.state].title_first
        if not abbr:
            return text
        pattern = _title_first_pattern(abbr)
        out = []
        pos = 0
        for m in pattern.finditer(text):
            numbers = [m.group("sec")] + LIST_ITEM.findall(m.group("more") or "")
            for number in numbers:
                k = self._key(number, m.group("title"))
                if k != own and k not in found:
                    found.append(k)
            self.report.counts["citations: the code's title-first form, keyed by the title it prints"] += len(numbers)
            out.append(text[pos:m.start()] + " " * (m.end() - m.start()))
            pos = m.end()
        return "".join(out) + text[pos:]

    def _target(self, link: Link, by_anchor: dict[str, Section]) -> tuple[str, str] | None:
        """(section as printed, anchor) a link within this code points to, or None (not a section link)."""
        href = link.href
        anchor = href.split("#", 1)[1] if "#" in href else ""
        page = href.split("#", 1)[0]
        name = page.rsplit("/", 1)[-1]
        if not anchor or not (page == "" or re.fullmatch(rf"gov\.{self.state}\.[\w.]+\.html", name)
                              or TITLE_FILE.fullmatch(name)):
            return None
        if anchor in by_anchor:
            return by_anchor[anchor].number, anchor
        # an item or a note of a section read (``…s2144aol1a``, ``…s511-notetodecision-…``): the longest anchor of a
        # section that begins the link's, followed by ``ol`` or ``-``
        for cut in sorted((c.start() for c in re.finditer(r"ol|-", anchor)), reverse=True):
            if anchor[:cut] in by_anchor:
                return by_anchor[anchor[:cut]].number, anchor[:cut]
        m = ANCHOR.search(anchor)
        if not m:
            return None
        base = anchor[: m.start()] + "s" + m.group("sec")
        if base in by_anchor:
            return by_anchor[base].number, base
        return m.group("sec"), base

    def _foreign(self, block: Block, link: Link) -> str | None:
        """The key of another code's citation when the text around the link says the link is one."""
        from legalir.legal import citations as cite

        a = max(0, link.start - 60)
        window = block.text[a:link.end]
        if not _other_states(self.state).search(block.text, a, link.start):
            return None
        for c in cite.extract(window, use_eyecite=False):
            if c.end + a >= link.end - 1 and c.start + a < link.end:
                jur = c.key.split("_", 1)[0]
                if jur in cite.JURISDICTIONS and jur != self.state:
                    return c.key
        return None

    def _inside_ranges(self, block: Block, printed: list[tuple[Link, str, str | None]]) -> list[str]:
        """Keys of the sections a linked range cites besides its linked ends: strictly inside a range whose two
        ends are links (``§§ 12-6-101 — 12-6-105``: the publisher links the ends only; the paragraph cites the
        five), and after the link of a range whose last end is printed without one (``§§ 5-8-601—5-8-604``)."""
        out = []
        for i, (a, first, title) in enumerate(printed):
            nxt = printed[i + 1] if i + 1 < len(printed) else None
            if nxt is not None and _RANGE_BETWEEN.fullmatch(block.text[a.end:nxt[0].start]):
                numbers = expand_range(first, nxt[1], limit=RANGE_GOLD_LIMIT) or []
                out += [self._key(n, title) for n in numbers[1:-1]]
                continue
            m = _RANGE_END.match(block.text, a.end)
            if m and (nxt is None or m.end() <= nxt[0].start):
                numbers = expand_range(first, m.group("last"), limit=RANGE_GOLD_LIMIT) or []
                out += [self._key(n, title) for n in numbers[1:]]
        return out

    def _convert(self, s: Section, by_anchor, seen: dict[str, tuple[str, str]], guard: GuardedCitations, cite) -> list[Converted]:
        report = self.report
        where = located(s.file, s.line, s.anchor)
        title_number = title_of(s.anchor, s.number)
        if s.future and any(self._key(n, title_number) in seen for n in s.numbers):
            report.skip("a later version of a section already read (delayed effective date): the version in "
                        "force kept", f"{where}: {s.number} ({s.anchor})")
            return []
        if s.unknown_h4:
            report.note("<h4> headings read as statutory text or notes by position", f"{where}: {s.unknown_h4[:3]}")
        out = []
        cites, paragraphs, inside = self._links(s, where, by_anchor)
        text = "\n".join(b.text for b in s.text)
        notes = "\n".join(b.text for b in s.notes)
        for number in s.numbers:
            key = self._key(number, title_number, count=True)
            if not self._first_time(key, number, where, seen):
                continue
            found = self._text_citations(s, key, number, where, cites, guard)
            doc = self._document(s, key, number, title_number, text, notes, found, cite)
            out.append(Converted(doc, key, title_number,
                                 paragraphs if number == s.numbers[0] else [],
                                 inside if number == s.numbers[0] else []))
        return out

    def _links(self, s: Section, where: str, by_anchor) -> tuple[list[str], list, list[list[str]]]:
        """The links of every part of a section, resolved once: (the keys its text and notes cite, ``(part,
        paragraph, [(link, key)])`` of each paragraph with a link within the code, the keys inside its ranges)."""
        cites: list[str] = []
        paragraphs: list[tuple[str, Block, list[tuple[Link, str]]]] = []
        inside: list[list[str]] = []
        for part, blocks in (("text", s.text), ("notes", s.notes), ("case_notes", s.case_notes)):
            for b in blocks:
                resolved, printed = self._resolve(part, b, where, by_anchor, cites)
                abbr = STATES[self.state].title_first
                if abbr:
                    self._title_first_links(abbr, part, b, resolved, cites)
                    resolved.sort(key=lambda r: r[0].start)
                if resolved:
                    paragraphs.append((part, b, resolved))
                    inside.append(self._inside_ranges(b, printed))
        return cites, paragraphs, inside

    def _resolve(self, part: str, b: Block, where: str, by_anchor,
                 cites: list[str]) -> tuple[list[tuple[Link, str]], list[tuple[Link, str, str | None]]]:
        """(``[(link, key)]`` of the links of a paragraph to a section of this code, ``[(link, section, its
        title)]`` of the same for ranges); the keys the paragraph cites added to ``cites``."""
        report = self.report
        resolved = []
        printed: list[tuple[Link, str, str | None]] = []  # (link, section, its title) for ranges
        for link in b.links:
            target = self._target(link, by_anchor)
            if target is None:
                page = link.href.split("#", 1)[0].rsplit("/", 1)[-1]
                if "#" not in link.href and re.fullmatch(rf"gov\.{self.state}\.[\w.]+\.html", page):
                    # NC r80: every link names a title's file, none its section
                    report.counts[f"links: to a whole file of this code, no section anchor ({part})"] += 1
                else:
                    report.counts[f"links: not to a section of this code ({part})"] += 1
                continue
            foreign = self._foreign(b, link)
            if foreign:
                report.counts[f"links: on another state's citation, read as that code ({part})"] += 1
                if part != "case_notes":
                    cites.append(foreign)
                report.note("link on another state's citation, not a reference to this code",
                            f"{where}: {b.text[max(0, link.start - 40):link.end]!r}")
                continue
            sec, anchor = target
            place = PLACE.findall(anchor)
            its_title = re.sub(r"^[a-z]+0*", "", place[0]) if place else None
            key = self._key(sec, its_title)
            report.counts[f"links: within this code ({part})"] += 1
            if anchor not in by_anchor:
                report.counts[f"links: to a section in a file not present, key from the anchor ({part})"] += 1
            resolved.append((link, key))
            printed.append((link, sec, its_title))
            if part == "case_notes":
                continue  # a decision's words about another section: not this section's citation
            cites.append(key)
            sub = _SUB.search(link.text)
            if sub:
                cites.append(self._key(sec + re.sub(r"\s+", "", sub.group(1)), its_title))
        return resolved, printed

    def _title_first_links(self, abbr: str, part: str, b: Block, resolved: list[tuple[Link, str]],
                           cites: list[str]) -> None:
        """The code's title-first citations (Vermont's "13 V.S.A. § 2901", a <cite> without a link: the code links
        no section) are its cross-references: read as links to the section they name, into ``resolved``."""
        for m in _title_first_pattern(abbr).finditer(b.text):
            for number in [m.group("sec")] + LIST_ITEM.findall(m.group("more") or ""):
                key = self._key(number, m.group("title"))
                self.report.counts[f"links: the code's title-first citations, read as links ({part})"] += 1
                resolved.append((Link("", "title-first", m.group(0), m.start(), m.end()), key))
                if part == "notes":
                    cites.append(key)

    def _first_time(self, key: str, number: str, where: str, seen: dict[str, tuple[str, str]]) -> bool:
        """Whether a section's key is met for the first time (recorded in ``seen``); a second one is a skip."""
        if key in seen:
            first_where, first_number = seen[key]
            if first_number != number:
                # Colorado's 26-5.3-101 (title 26) and 26.5-3-101 (title 26.5): legalir.legal.citations gives both
                # the key co_code_26_5_3_101, so one id cannot hold both
                self.report.skip("two section numbers with one citation key (legalir.legal.citations writes them "
                                 "alike): the first kept", f"{where}: {number} (first: {first_number} at {first_where})")
            else:
                self.report.skip("a section number read twice: the first kept",
                                 f"{where}: {number} (first at {first_where})")
            return False
        seen[key] = (where, number)
        return True

    def _text_citations(self, s: Section, key: str, number: str, where: str, cites: list[str],
                        guard: GuardedCitations) -> list[str]:
        """The keys a section cites: its links (``cites``), then the rest of its statutory text through
        legalir.legal.citations (links blanked: they are read already; the notes: their links only)."""
        found = list(dict.fromkeys(c for c in cites if c != key))
        for part_blocks in ((s.text,) if self.citations_wanted else ()):  # the statute's text (notes: links)
            blanked = "\n".join(_blank(b) for b in part_blocks)
            if not blanked.strip():
                continue
            blanked = self._title_first(blanked, key, found)
            got = guard.extract(blanked, context=key_prefix(key, number), jurisdiction_hint=self.state)
            if got is None:
                self.report.skip("citations of the text not read: legalir.legal.citations ran past the time limit "
                                 "(links kept)", f"{where}: {number}")
                continue
            found += [k for k, *_ in got if k != key and k not in found]
        return found

    def _document(self, s: Section, key: str, number: str, title_number: str, text: str, notes: str,
                  found: list[str], cite) -> Document:
        """The document of one section number of ``s`` (counted in the report by status)."""
        report = self.report
        fields = {
            "section": number, "state": self.state,
            "citation": official_citation(self.state, number, title_number),
            "title": s.heading, "heading_path": " > ".join(s.heading_path),
            "status": s.status, "history": "\n".join(b.text for b in s.history), "notes": notes,
            "case_notes": "\n".join(b.text for b in s.case_notes),
            "source": f"{Path(s.file.split('!')[-1]).name}#{s.anchor}",
        }
        if len(s.numbers) > 1:
            fields["printed_as"] = f"{s.number}: one heading for {len(s.numbers)} sections"
        fields[cite.FIELD] = " ".join(dict.fromkeys([f"is_{key}"] + [f"cites_{k}" for k in found]))
        parts = {"heading": s.heading, "text": text or f"{fields['citation']}. {s.heading or s.status.capitalize()}", "history": fields["history"],
                 "notes": notes, "case_notes": fields["case_notes"]}
        contents = "\n".join(parts[p] for p in self.text_parts if parts[p])
        report.counts[f"status: {s.status}"] += 1
        if not text:
            report.counts["sections without statutory text (their heading is their text)"] += 1
        return Document(key, contents, fields, source=s.file, line=s.line)

    def documents(self) -> Iterator[Document]:
        conv = self.converted()
        for c in conv:
            yield c.doc
        r = self.report
        _log.info(f"statutes {self.state} r{self.release}: {r.files} files, {r.read} sections read, {r.written} "
                  f"documents, {sum(r.skipped.values())} skipped, in {r.seconds:.1f} s")
        for reason, n in sorted(r.skipped.items()):
            _log.warning(f"statutes: skipped {n}: {reason} (first: {r.skipped_first[reason][0]})")

    def convert_report(self) -> dict:
        """The reader's report, for the collection's manifest (``reader``)."""
        return {"state": self.state, "release": self.release,
                **({"date": self.date, "date_from": self.date_from} if self.date else {}), **self.report.as_dict()}

    def _record_date(self, readmes: list[tuple[str, str]]) -> None:
        """The release's date, from the repository README's release lines (:func:`readme_release_dates`) or
        ``--option date``, recorded in the options (the collection's manifest, then each index version's
        marker: ``as_of=`` a date). Both given and different: an error naming both. Neither: no date (logged);
        a date is required only where one is asked for (``as_of=2021-09-01``), and never invented."""
        dated = [(where, *readme_release_dates(text).get(self.release, (None, None, None))) for where, text in readmes]
        read = [(where, date, line, raw) for where, date, line, raw in dated if date]
        for where, date, line, raw in dated:
            if date is None and line is not None:
                _log.warning(f"{where}:{line}: release {self.release} dated {raw!r}, not a date legalir reads "
                             f"(YYYY.MM.DD, YYYY.MM or YYYY); give --option date=YYYY-MM[-DD]")
        if read:
            where, date, line, raw = read[0]
            if self.date is not None and self.date != date:
                raise DatasetError(f"statutes: --option date={self.date} for release {self.release}, but {where}:"
                                   f"{line} dates it {raw!r} ({date}); leave the option out, or give the date the "
                                   f"publisher gives")
            if self.date is None:
                self.date, self.date_from = date, f"{where}:{line}"
        if self.date is None:
            _log.info(f"statutes {self.state} r{self.release}: no date (no README release line, no --option "
                      f"date=YYYY-MM): searching as of a date will need it")
        else:
            self.options["date"] = self.date

    # ------------------------------------------------------------ the cross-reference benchmark
    def xref_examples(self) -> list[dict]:
        """The benchmark's questions: each paragraph (statutory text, notes or case notes) with a link to
        another section of this code present in the corpus.

        Returns
        -------
        list of dict
            ``qid`` (``<section id>.<part letter><n>``), ``split`` (by the paragraph's title:
            :func:`split_of`), ``text`` (the paragraph as written), ``masked`` (each link's text replaced
            by ``[CITATION]``), ``gold`` (the linked sections' ids, in order, each once; a range whose
            two ends are links, ``§§ 12-6-101 — 12-6-105``, gives the sections inside it too, at most
            :data:`RANGE_GOLD_LIMIT`; the paragraph's own section where it links to it besides another),
            ``part``, ``source`` (the paragraph's own section id).

        Notes
        -----
        A ``train`` paragraph whose words (:func:`legalir.base.words.words`: casefolded, numbers dropped) are
        those of a ``valid`` or ``test`` paragraph, as written or masked, is left out: the same text under
        another section (a cross-reference note repeated in each section of a chapter) would otherwise be a
        held-out question and its answer in training. Their number is the report's count
        :data:`DROPPED_TWINS` (the collection's manifest, ``reader.counts``) and is logged.
        """
        if self._xref is None:
            self._xref = _drop_held_out_twins(self._xref_all(), self.report, f"statutes {self.state} r{self.release}")
        return self._xref

    def _xref_all(self) -> list[dict]:
        """Every question of the benchmark, before :func:`_drop_held_out_twins`."""
        conv = self.converted()
        present = {c.key for c in conv}
        out = []
        for c in conv:
            n: Counter = Counter()
            for (part, block, resolved), inside in zip(c.paragraphs, c.inside_ranges):
                linked = [k for _, k in resolved]
                gold = list(dict.fromkeys(k for k in linked + inside if k != c.key and k in present))
                n[part] += 1
                if not gold:
                    continue  # a paragraph that links to its own section only is no question
                if c.key in linked:
                    gold.append(c.key)  # "this section and § 6-51-103": its own section, linked, is cited too
                masked = block.text
                for start, end in sorted({(link.start, link.end) for link, _ in resolved}, reverse=True):
                    masked = masked[:start] + MASK + masked[end:]  # (a span once: "17 V.S.A. §§ 2121, 2122")
                out.append({"qid": f"{c.key}.{PART_LETTER[part]}{n[part]}", "split": split_of(self.state, c.title_number),
                            "text": block.text, "masked": masked, "gold": gold, "part": part, "source": c.key})
        return out

    def topic_sets(self) -> dict[str, list[Topic]]:
        """``train``, ``valid``, ``test`` (the paragraph as written) and ``<split>.masked`` (its citations
        replaced by a placeholder), split by title (:func:`split_of`)."""
        sets: dict[str, list[Topic]] = {}
        examples = self.xref_examples()
        for split in SPLITS:
            for variant in ("", ".masked"):
                sets[split + variant] = [
                    Topic(e["qid"], e["masked"] if variant else e["text"],
                          {"state": self.state, "part": e["part"], "source": e["source"]})
                    for e in examples if e["split"] == split]
        return sets

    def qrels_sets(self) -> dict[str, list[Judgement]]:
        examples = self.xref_examples()
        return {split: [Judgement(e["qid"], g, 1) for e in examples if e["split"] == split for g in e["gold"]]
                for split in SPLITS}


#: the report's count of train paragraphs left out of the benchmark for a held-out paragraph's words
DROPPED_TWINS = "benchmark: train paragraphs left out, their words a valid or test paragraph's"


def _drop_held_out_twins(examples: list[dict], report: Report, label: str) -> list[dict]:
    """``examples`` without the ``train`` ones whose words, as written or masked, are a held-out (``valid``,
    ``test``) example's, as written or masked; their number set in ``report.counts[DROPPED_TWINS]``."""
    held = {tuple(words(e[k])) for e in examples if e["split"] != "train" for k in ("text", "masked")}
    kept = [e for e in examples if e["split"] != "train"
            or not (tuple(words(e["text"])) in held or tuple(words(e["masked"])) in held)]
    dropped = len(examples) - len(kept)
    report.counts[DROPPED_TWINS] = dropped
    if dropped:
        _log.info(f"{label}: {dropped} train paragraph(s) left out of the benchmark: their words are a valid or "
                  f"test paragraph's")
    return kept


@cache
def _title_first_pattern(abbr: str) -> re.Pattern:
    """``<title> <abbr> § <number>`` (and ``§§ <number>, <number> and <number>``): ``13 V.S.A. § 2901``."""
    a = r"\.?\s?".join(re.escape(x) for x in abbr.rstrip(".").split("."))
    return re.compile(rf"(?<![\w.])(?P<title>\d{{1,3}}[A-Z]?)\s{{1,3}}{a}\.?\s{{1,3}}§§?\s{{0,3}}(?P<sec>{NUM})"
                      rf"(?P<more>(?:\s{{0,3}}(?:,|and|or)\s{{1,3}}{NUM}(?![\w-])){{0,20}})")


@cache
def _other_states(state: str) -> re.Pattern:
    """Names and abbreviations of every jurisdiction but ``state`` (a cheap test before reading a window)."""
    from legalir.legal import citations as cite

    words = sorted({w for j, (name, abbrs) in cite.JURISDICTIONS.items() if j != state for w in (name, *abbrs)},
                   key=len, reverse=True)
    return re.compile(r"(?<![\w.])(?:" + "|".join(re.escape(w) for w in words) + r")(?!\w)")



PART_LETTER = {"text": "t", "notes": "n", "case_notes": "c"}
#: the text between two links that makes them the ends of one range (``§§ 1-2-107 — 1-2-113``)
_RANGE_BETWEEN = re.compile(r"\s*(?:—|–|-|through|to)\s*(?:§§?\s*)?")
#: the unlinked last end of a range after a link (``—5-8-604``)
_RANGE_END = re.compile(rf"\s*(?:—|–|-|through|to)\s*(?:§§?\s*)?(?P<last>{NUM})(?![\w-])")
#: the most sections a linked range makes relevant (a longer one is a citation of a chapter, not of sections)
RANGE_GOLD_LIMIT = 50


def split_of(state: str, title: str) -> str:
    """The benchmark split of a title (chapter): 60% train, 20% valid, 20% test by a hash of
    ``state/title``, so a title keeps its split whatever else a release holds."""
    h = int(hashlib.sha256(f"{state}/{title.lower()}".encode()).hexdigest(), 16) % 5
    return "train" if h < 3 else "valid" if h == 3 else "test"


def _blank(block: Block) -> str:
    """The block's text with its links' text replaced by spaces (same length: offsets kept)."""
    t = block.text
    for k in sorted(block.links, key=lambda k: k.start, reverse=True):
        t = t[:k.start] + " " * (k.end - k.start) + t[k.end:]
    return t


def _check_timeout(value: Any) -> float | None:
    try:
        v = float(str(value).strip())
    except ValueError:
        raise DatasetError(f"statutes: option cite_timeout={value!r}: expected seconds (0: no guard)") from None
    if v < 0:
        raise DatasetError(f"statutes: option cite_timeout={value!r}: expected seconds >= 0")
    return None if v == 0 else v
