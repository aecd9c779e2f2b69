"""The serve hardening subclasses uvicorn's ``H11Protocol`` (not public API): uvicorn is pinned to the range it
was written against, and an upgrade that removes what the subclass overrides or reads fails here (issue 38).

The behaviour itself (per-client connection cap, header deadline) is tested against a real server in
tests/test_serve_hostile.py; this file checks the contract those tests rely on, without a server.
"""
from __future__ import annotations

import ast
import inspect
import re
import textwrap
import tomllib
from importlib.metadata import version
from pathlib import Path

from packaging.specifiers import SpecifierSet
from uvicorn.protocols.http.h11_impl import H11Protocol

from legalir.serve import protocol
from legalir.serve.guard import Policy
from legalir.serve.metrics import Metrics

REPO = Path(__file__).resolve().parents[1]


def _subclass():
    return protocol.protocol_class(Policy(), Metrics())


def test_pyproject_pins_uvicorn_to_the_subclassed_range():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for extra in ("serve", "test"):
        pins = [r for r in extras[extra] if re.match(r"uvicorn\b", r)]
        assert pins == [f"uvicorn{protocol.UVICORN_SUBCLASSED}"], (extra, pins)


def test_the_installed_uvicorn_is_in_the_range():
    assert version("uvicorn") in SpecifierSet(protocol.UVICORN_SUBCLASSED), version("uvicorn")


def test_every_overridden_method_exists_upstream_with_the_same_parameters():
    cls = _subclass()
    overridden = [name for name, value in vars(cls).items() if inspect.isfunction(value) and not name.startswith("_")]
    assert set(overridden) == {"connection_made", "connection_lost", "data_received", "on_response_complete"}
    for name in overridden:
        upstream = getattr(H11Protocol, name, None)
        assert upstream is not None, f"uvicorn's H11Protocol has no {name} any more"
        assert list(inspect.signature(upstream).parameters) == list(inspect.signature(getattr(cls, name)).parameters)


def test_every_attribute_the_subclass_reads_is_set_by_uvicorn():
    cls = _subclass()
    module = ast.parse(Path(protocol.__file__).read_text(encoding="utf-8"))
    tree = next(n for n in ast.walk(module) if isinstance(n, ast.ClassDef) and n.name == cls.__name__)
    own = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)}
    own |= {name for name in vars(cls)}
    read = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and n.value.id == "self" and isinstance(n.ctx, ast.Load)} - own
    assert read >= {"conn", "client", "loop", "transport"}, read
    upstream = ast.parse(textwrap.dedent(inspect.getsource(H11Protocol)))
    assigned = {n.attr for n in ast.walk(upstream) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
                and isinstance(n.value, ast.Name) and n.value.id == "self"}
    assert read <= assigned | set(dir(H11Protocol)), read - assigned - set(dir(H11Protocol))
