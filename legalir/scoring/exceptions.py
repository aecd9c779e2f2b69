"""The scoring layer's errors (subclasses of :class:`legalir.errors.LegalirError`)."""
from __future__ import annotations

from legalir.errors import LegalirError


class EvaluationError(LegalirError, ValueError):
    """Nothing to evaluate, or inputs that cannot be scored together."""


class NoCommonTopics(EvaluationError):
    """The run and the qrels share no topic: nothing can be scored (ir_measures would print 0)."""
