"""legalir's version: one place, read by the package, the CLI, the server and every output's provenance."""
__version__ = "0.1.0"
