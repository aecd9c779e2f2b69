"""LLM query expansion: prompts kept as data files, generated text joined to the query.

    from legalir import trec
    from legalir.datasets import generate
    from legalir.search import expansion
    topics = trec.read_topics("topics.jsonl")
    gen = generate.make("precomputed", path="structured.jsonl")
    expanded = expansion.expand(topics, gen, "structured", join="append")
    expansion.write_topics("topics.structured.jsonl", expanded)   # any retriever runs on it unchanged

Methods are TOML files in ``legalir/resources/prompts/`` (or any file given
by path): ``user`` (and optionally ``system``) templates using ``{query}``
and named topic fields; ``[fields]`` maps template names to topic metadata
(``jurisdiction = "state"``; a trailing ``?`` makes the field optional);
``labels`` are answer labels stripped from the generated text (``Rule:``);
``output_after`` keeps only the text after the last such marker (e.g. the
answer of a chain of thought). Built-in methods:

* Zheng et al. 2025 (Bar Exam QA / Housing Statute QA): ``paraphrase``, ``cot``,
  ``structured`` (issue spotting, then the governing rules) and the Housing
  variants ``cot-housing``, ``structured-housing`` (``{jurisdiction}`` = the topic's state);
* CRUMB (Killingback & Zamani 2025): ``q2a`` (Query-to-Answer), ``q2d``
  (Query-to-Document), ``q2r`` (Query-as-Reasoning-Trace).

How the generation joins the query (``join``): ``append`` (query then
generation), ``replace`` (generation only), ``repeat`` (the query ``repeat``
times, then the generation, as query2doc does to keep the query's weight in
BM25). An empty generation is reported and the original query is kept.
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from string import Formatter

from legalir import trec
from legalir.base import log
from legalir.search.runner import SearchError
from legalir.trec import Topic

_log = log.get(__name__)

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "resources" / "prompts"
JOINS = ("append", "replace", "repeat")


class ExpansionError(SearchError):
    pass


@dataclass
class PromptTemplate:
    name: str
    path: Path
    user: str
    system: str | None = None
    description: str = ""
    source: str = ""
    labels: list[str] = field(default_factory=list)
    output_after: str | None = None
    field_map: dict[str, str] = field(default_factory=dict)   # template name -> topic field ("x?" optional)

    @property
    def fields(self) -> set[str]:
        names = set()
        for text in (self.user, self.system or ""):
            for _, name, _, _ in Formatter().parse(text):
                if name is not None:
                    if not name.isidentifier():
                        raise ExpansionError(f"{self.path}: template field {{{name}}} is not a plain name")
                    names.add(name)
        return names

    def values_for(self, topic: Topic) -> dict[str, str]:
        """Template values for ``topic``: ``query`` plus the mapped metadata fields."""
        values = {"query": topic.text}
        for name in self.fields - {"query"}:
            src = self.field_map.get(name, name)
            optional = src.endswith("?")
            src = src.rstrip("?")
            v = topic.fields.get(src)
            if v in (None, ""):
                if not optional:
                    raise ExpansionError(f"prompt {self.name!r} needs the topic field {src!r} (for {{{name}}}), "
                                         f"which topic {topic.qid!r} lacks; use a .jsonl topics file with it")
                v = ""
            values[name] = str(v)
        return values

    def messages(self, **values: str) -> list[dict[str, str]]:
        def fill(text: str) -> str:
            out = text.format(**values)
            return re.sub(r"\n{3,}", "\n\n", out).strip()

        msgs = [{"role": "system", "content": fill(self.system)}] if self.system else []
        return msgs + [{"role": "user", "content": fill(self.user)}]

    def clean(self, text: str) -> str:
        """The useful part of a generation: after ``output_after`` if present, answer labels removed."""
        t = re.sub(r"<think>.*?</think>", " ", str(text), flags=re.DOTALL | re.IGNORECASE)
        if self.output_after:
            i = t.lower().rfind(self.output_after.lower())
            if i >= 0:
                t = t[i + len(self.output_after):]
        for label in self.labels:
            t = re.sub(rf"(?im)^\W*{re.escape(label)}\s*:\**\s*", "", t)
        return " ".join(t.split())


def builtin_prompts() -> list[str]:
    return sorted(p.stem for p in PROMPTS_DIR.glob("*.toml"))


def methods() -> list[str]:
    """Built-in expansion methods (prompt files that are not judges)."""
    return [m for m in builtin_prompts() if not m.startswith(("judge-", "qa_"))]  # qa_*: legalir.search.qa


def load_prompt(name_or_path: str | os.PathLike) -> PromptTemplate:
    """A built-in prompt by name (``structured``) or a TOML prompt file by path."""
    p = Path(name_or_path)
    if not p.suffix and not p.exists():
        p = PROMPTS_DIR / f"{name_or_path}.toml"
        if not p.exists():
            raise ExpansionError(f"unknown prompt {str(name_or_path)!r}; built-in: {', '.join(builtin_prompts())} "
                                 f"(or give a .toml file)")
    if not p.exists():
        raise ExpansionError(f"{p}: prompt file not found")
    try:
        with open(p, "rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ExpansionError(f"{p}: not valid TOML: {e}") from None
    if not isinstance(data.get("user"), str) or not data["user"].strip():
        raise ExpansionError(f"{p}: a prompt file needs a non-empty 'user' template")
    fmap = data.get("fields", {})
    if not isinstance(fmap, dict) or not all(isinstance(v, str) for v in fmap.values()):
        raise ExpansionError(f"{p}: [fields] must map template names to topic field names")
    labels = data.get("labels", [])
    if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
        raise ExpansionError(f"{p}: 'labels' must be a list of strings")
    t = PromptTemplate(name=str(data.get("name", p.stem)), path=p, user=data["user"], system=data.get("system"),
                       description=str(data.get("description", "")), source=str(data.get("source", "")),
                       labels=labels, output_after=data.get("output_after"), field_map=dict(fmap))
    if "query" not in t.fields:
        raise ExpansionError(f"{p}: the 'user' (or 'system') template must use {{query}}")
    return t


def join_text(query: str, generated: str, join: str = "append", repeat: int = 1) -> str:
    if join == "append":
        return f"{query} {generated}".strip()
    if join == "replace":
        return generated
    if join == "repeat":
        return " ".join([query] * max(1, repeat) + [generated]).strip()
    raise ExpansionError(f"unknown join {join!r}; known: {', '.join(JOINS)}")


def requests_for(topics: Mapping[str, Topic], template: PromptTemplate):
    from legalir.datasets import generate

    return [generate.Request(key=qid, qid=qid, messages=template.messages(**template.values_for(t)))
            for qid, t in topics.items()]


def expand(topics: Mapping[str, Topic], generator, method: str | os.PathLike | PromptTemplate,
           join: str = "append", repeat: int = 1, progress: bool = True,
           generations: list | None = None) -> dict[str, Topic]:
    """Expanded topics (same ids, same metadata plus ``original_text``, ``expansion``, ``expansion_method``).

    ``generations``: if a list is given, the raw generated texts are appended to it, in topic order.
    """
    if join not in JOINS:
        raise ExpansionError(f"unknown join {join!r}; known: {', '.join(JOINS)}")
    if not topics:
        raise ExpansionError("no topics to expand")
    template = method if isinstance(method, PromptTemplate) else load_prompt(method)
    reqs = requests_for(topics, template)
    texts = generator.generate(reqs, progress=progress)
    if len(texts) != len(reqs):  # pragma: no cover - generator contract
        raise ExpansionError(f"generator returned {len(texts)} texts for {len(reqs)} topics")
    if generations is not None:
        generations.extend(texts)
    out: dict[str, Topic] = {}
    empty = []
    for (qid, t), raw in zip(topics.items(), texts):
        gen = template.clean(raw)
        if not gen:
            empty.append(qid)
            text = t.text
        else:
            text = join_text(t.text, gen, join, repeat)
        fields = {**dict(t.fields), "original_text": t.text, "expansion": gen,
                  "expansion_method": template.name}
        out[qid] = Topic(qid, text, fields)
    if empty:
        _log.warning(f"{len(empty)} topic(s) got an empty generation and keep their original query: "
                     + ", ".join(empty[:10]) + (" ..." if len(empty) > 10 else ""))
    return out


def write_topics(path: str | os.PathLike, topics: Mapping[str, Topic] | Sequence[Topic]) -> int:
    """Write topics as ``.jsonl`` (metadata kept) or ``.tsv`` (qid<TAB>text), atomically."""
    p = Path(path)
    items = list(topics.values()) if isinstance(topics, Mapping) else list(topics)
    if p.suffix not in (".jsonl", ".tsv"):
        raise ExpansionError(f"{p}: expanded topics are written as .jsonl or .tsv")
    return (trec.write_topics_jsonl if p.suffix == ".jsonl" else trec.write_topics)(p, items)
