"""The commands of the `legalir` CLI, one module per pipeline stage; :mod:`legalir.cli` registers them.

Each command only parses its options and calls one library function; the
group in :mod:`legalir.cli` turns user errors into ``error: ...`` and exit 2.
"""
from __future__ import annotations

from legalir.commands import analysis, data, evaluate, models, retrieve, serve

ALL = [*data.COMMANDS, *retrieve.COMMANDS, *evaluate.COMMANDS, *models.COMMANDS, *analysis.COMMANDS,
       *serve.COMMANDS]
