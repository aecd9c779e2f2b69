"""The base of every input error legalir raises on purpose.

The CLI turns a :class:`LegalirError` into ``error: <message>`` and exit
status 2; anything else is a bug and keeps its traceback.
"""


class LegalirError(Exception):
    """Bad input: a malformed or missing file, an unknown name, an impossible setting."""
