"""docs/cli.md is what `legalir COMMAND --help` prints now (regenerate: python scripts/gen_cli_docs.py)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "gen_cli_docs.py"


def test_cli_reference_is_not_stale():
    spec = importlib.util.spec_from_file_location("gen_cli_docs", SCRIPT)
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    text = gen.render()
    from legalir.cli import main

    for name in main.commands:  # every command has its section
        assert f"## legalir {name}\n" in text
    assert gen.OUT.read_text(encoding="utf-8") == text, "docs/cli.md is stale: run python scripts/gen_cli_docs.py"
