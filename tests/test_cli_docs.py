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

    for name in main.list_commands(None):  # every command has its section
        assert f"## legalir {name}\n" in text
    assert gen.OUT.read_text(encoding="utf-8") == text, "docs/cli.md is stale: run python scripts/gen_cli_docs.py"


def test_command_registry_names_each_module_s_commands():
    """legalir.commands.REGISTRY (what the CLI imports lazily) lists exactly the commands the modules define."""
    from legalir import commands

    defined = {c.name: c.callback.__module__.rsplit(".", 1)[-1] for c in commands.all_commands()}
    assert defined == commands.REGISTRY


def test_eval_imports_no_other_command_module():
    import subprocess
    import sys

    code = ("import sys; from legalir.cli import main\n"
            "try: main(['eval', '--list-measures'])\n"
            "except SystemExit: pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('legalir.commands.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    # the shared options (click only, for the one --force) are no command module
    assert out.strip().splitlines()[-1] == "['legalir.commands.evaluate', 'legalir.commands.options']"
