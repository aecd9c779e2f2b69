"""The runs `legalir serve` exposes (the run explorer, scoring): a run, its qrels, topics, collection and scores."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from legalir import trec
from legalir.serve.indexes import DocStore
from legalir.trec import Topic


@dataclass
class RunEntry:
    name: str
    path: Path
    run: trec.Run
    qrels: trec.Qrels | None = None
    qrels_path: Path | None = None
    qrels_name: str | None = None
    topics: dict[str, Topic] | None = None
    topics_path: Path | None = None
    collection: DocStore | None = None
    judged_only: bool = False
    measures: list[str] = field(default_factory=list)
    evaluation: dict | None = None
    grade_names: dict[str, str] | None = None   # the dataset's words for its grades (ACORD: stars)

    def info(self) -> dict:
        from legalir.report import display_name

        values = self.evaluation["all"] if self.evaluation else None
        missing = sorted(set(self.qrels or {}) - set(self.run)) if self.qrels else []
        return {"name": self.name, "file": self.path.name, "topics": len(self.run),
                "qrels": self.qrels_name, "qrels_file": self.qrels_path.name if self.qrels_path else None,
                "collection": self.collection.name if self.collection else None,
                "judged_only": self.judged_only, "measures": self.measures,
                "all": values, "measure_names": {k: display_name(k) for k in values or {}},
                "grade_names": self.grade_names, "qrels_topics_not_in_run": len(missing)}


def _sibling_topics(qrels_path: Path) -> Path | None:
    """``collections/x/topics/<set>.jsonl`` (or .tsv) beside ``collections/x/qrels/<set>.txt``."""
    folder = qrels_path.parent.parent / "topics"
    for suffix in (".jsonl", ".tsv"):
        p = folder / f"{qrels_path.stem}{suffix}"
        if p.is_file():
            return p
    return None
