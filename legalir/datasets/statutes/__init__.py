"""Official state codes as Public.Resource.Org publishes them (UniCourt's ``cic-code-XX`` repositories).

One reader for the publisher's layout, for every state it publishes; nothing per state but
:data:`STATES` (name, abbreviation, official citation form). Published layout, under
``--data-dir DIR`` (``DIR/statutes`` or ``DIR`` itself)::

    cic-code-ga/transforms/ga/ocga/r86/gov.ga.ocga.title.08.html    one file per title (chapter in NC)
    cic-code-nc/transforms/nc/ocnc/r81/gov.nc.stat.title.042.html
    cic-code-ga-r85-r86.tar.xz                                       or the same tree in a .tar.xz

What a file holds (see ``../shared/data/statutes/README.md``): each section is an ``<h3>``
whose ``id`` encodes its place (``t08c02a01p01s8-2-1``: title 8, chapter 2, article 1, part 1,
section 8-2-1) and whose text is the number and heading; its statutory text (``<p>``, nested
``<ol>``/``<li>``) and annotations follow it: a ``History.`` paragraph, bold note headings
(Editor's notes, Cross references, Law reviews ...) and ``<h4>`` blocks (CASE NOTES,
JUDICIAL DECISIONS, RESEARCH REFERENCES ...). A reference within the code is a link to the
cited section's anchor, ``<cite class="ocga"><a href="#t08c02a01p01s8-2-3">8-2-3</a></cite>``.

One document per section (``legalir convert statutes --option state=ga --option release=86``):

* ``id``: legalir's citation key of the section's official citation (what
  :mod:`legalir.legal.citations` gives ``O.C.G.A. § 8-2-1``; where it reads none, the key of the
  state's general code it gives other forms, ``ga_code_8_2_1``, counted in the report);
* ``section`` (as printed), ``state``, ``citation`` (the official form),
  ``title`` (the heading), ``heading_path`` (Title > Chapter > Article > Part); the release is the
  collection's (its manifest's ``options.release``) and then the index version's, not each record's: a
  section a newer release leaves as it was is the same record, so ``legalir index update --to`` replaces
  only the sections that changed (documents shown still name their version's ``release``:
  :class:`legalir.indexing.changes.Documents`);
* ``contents``: the statutory text only (list labels ``(a)``, ``(1)`` restored from the
  ``<ol type>``); ``history``, ``notes`` (editor's notes, cross-references, research
  references, comments), ``case_notes``: separate fields (``--option text=`` adds them);
* ``status``: ``in force``, ``repealed`` (also transferred, redesignated) or ``reserved``;
  such sections are kept (their heading is their text) so a citation to them resolves;
* ``citations`` (:mod:`legalir.legal.citations` roles): ``is_<id>``, ``cites_<key>`` of every link
  to a section of this code, exactly (its target, plus the subsection its text prints), and
  of what :mod:`legalir.legal.citations` reads in the rest of the statutory text (other codes, U.S.C.,
  cases; the notes' own links are read, their other text is not: law reviews and case reporters).
  A link whose text the page says is another state's code ("Ark. Code § 16-13-301" linked to
  the home state's title 16) is not a reference to this code.

The codes differ in how they print the same things, and the reader knows each form (docs/statutes.md, "Every
code the publisher publishes"): a heading ``§ 8-2-1.``, ``Sec. 09.10.070.`` (Alaska), ``§ 2144a.`` (a letter
suffix), a range ``§§ 61-69. Repealed.`` (one document per section; Alaska's and Kentucky's numbers by tens);
an ``<h3>`` inside a section (Idaho's compact articles, Mississippi's notes printed as ``<h3>``) read as a
paragraph of it; a heading printed as a paragraph that links to its own anchor (Mississippi's title 79);
annotations by the kind of their heading (:func:`heading_kind`: an ``<h4>``, a bold paragraph or a bold lead),
a heading of no known kind in the annotations being a decision's topic when decisions follow it (Wyoming's and
Alaska's case notes, printed without a case-notes heading). Vermont's numbers repeat from title to title: its
ids carry the title (``vt_code_17_2531``, the key of ``Vt. Stat. Ann. tit. 17, § 2531``) and its title-first
citations (``13 V.S.A. § 2901``) are keyed by the title they print.

Bad or unexpected HTML is a counted, located skip in the reader's report (``manifest.json``,
``reader``), never a silent loss: sections read, documents written, skips with their reasons.

Topic sets ``xref`` (train/valid/test) come from the links (:meth:`Statutes.xref_examples`).
"""
from legalir.datasets.statutes.codes import STATES, State, official_citation, section_key, title_of
from legalir.datasets.statutes.convert import (
    MASK,
    RANGE_GOLD_LIMIT,
    SPLITS,
    TEXT_PARTS,
    Statutes,
    readme_release_dates,
    split_of,
)
from legalir.datasets.statutes.headings import heading_kind
from legalir.datasets.statutes.reader import Report, read_sections

__all__ = ["MASK", "RANGE_GOLD_LIMIT", "SPLITS", "STATES", "TEXT_PARTS", "Report", "State", "Statutes", "heading_kind",
           "official_citation", "read_sections", "readme_release_dates", "section_key", "split_of", "title_of"]
