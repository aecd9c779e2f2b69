"""The failures a request can meet in ``legalir serve``, each with its HTTP status (the app answers any
:class:`legalir.errors.LegalirError` with its ``status``, the MCP tools with a tool error)."""
from __future__ import annotations

from legalir.errors import LegalirError


class ServeError(LegalirError):
    """A request that cannot be answered; ``status`` is its HTTP status."""

    status = 400


class BadRequest(ServeError):
    status = 400


class NotFound(ServeError):
    status = 404




class Unavailable(ServeError):
    status = 503
