"""The suite's shared helpers, one of each (tests/conftest.py holds fixtures, the skip rule and the Hypothesis
profile; tests/serve_helpers.py starts and stops `legalir serve`):

- :func:`cli` / :func:`cli_ok` / :func:`invoke`: ``legalir ARGS`` in this process (click's runner; the JVM
  started once for the session);
- :func:`request`: one HTTP request to a test server, its status, headers and decoded body;
- :func:`wait_for`: poll a condition until it holds, with the suite's one hang ceiling (``WAIT_S``), never a
  bare sleep-and-hope;
- :func:`parsed` / :func:`walked`: a source file's syntax tree and a node's subtree, made once per process for
  the structural checks (tests/test_architecture.py and others read the same files many times).
"""
from __future__ import annotations

import ast
import functools
import http.client
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from conftest import WAIT_S

T = TypeVar("T")


@functools.cache
def parsed(path: Path) -> ast.Module:
    """The syntax tree of the source file ``path``, parsed once per process: shared, so never change it."""
    return ast.parse(Path(path).read_text(encoding="utf-8"), str(path))


@functools.cache
def walked(node: ast.AST) -> tuple[ast.AST, ...]:
    """``ast.walk(node)`` as a tuple, made once per node (nodes hash by identity): for the trees of
    :func:`parsed`, which the structural checks walk again and again."""
    return tuple(ast.walk(node))


def invoke(*args, input: str | None = None):
    """``legalir ARGS`` in this process: click's ``Result`` (``exit_code``, ``output``, ``stdout``,
    ``stderr``, ``exception``). Arguments are turned into strings (paths may be passed as they are)."""
    from click.testing import CliRunner

    from legalir.cli import main

    return CliRunner().invoke(main, [str(a) for a in args], input=input)


def cli(*args, input: str | None = None) -> tuple[int, str]:
    """``legalir ARGS`` in this process: (exit status, output)."""
    r = invoke(*args, input=input)
    return r.exit_code, r.output


def cli_ok(*args, input: str | None = None) -> str:
    """``legalir ARGS`` in this process, which must succeed: its output."""
    r = invoke(*args, input=input)
    assert r.exit_code == 0, r.output
    return r.output


def request(server: dict, method: str, path: str, key: str | None = None, headers: dict | None = None,
            body: bytes | None = None, source: str = "127.0.0.1", timeout: float = WAIT_S):
    """(status, headers, JSON or text body) of one request to the server ``start_server`` gave
    (tests/serve_helpers.py), from the loopback address ``source``, with ``key`` as a bearer token."""
    conn = http.client.HTTPConnection("127.0.0.1", server["port"], timeout=timeout, source_address=(source, 0))
    try:
        h = dict(headers or {})
        if key:
            h["Authorization"] = f"Bearer {key}"
        conn.request(method, path, body=body, headers=h)
        resp = conn.getresponse()
        raw = resp.read()
        try:
            data = json.loads(raw)
        except ValueError:
            data = raw.decode("utf-8", "replace")
        return resp.status, resp.headers, data
    finally:
        conn.close()


def wait_for(condition: Callable[[], T], what: str, timeout: float = WAIT_S, interval: float = 0.05) -> T:
    """Call ``condition`` until it returns something true, and return that. Past ``timeout`` seconds (at most
    the suite's hang ceiling, ``WAIT_S``), fail saying ``what`` was awaited. The ceiling is reached only when
    something hangs: it bounds a wait, never the speed of a machine."""
    deadline = time.monotonic() + min(timeout, WAIT_S)
    while True:
        got = condition()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {min(timeout, WAIT_S):.0f} s waiting for {what}")
        time.sleep(interval)


def returns(fn: Callable[..., Any], *args, **kwargs) -> Callable[[], Any]:
    """``fn(*args, **kwargs)`` as a condition for :func:`wait_for` that counts an ``OSError`` (a server not
    listening yet) as false."""
    def call():
        try:
            return fn(*args, **kwargs)
        except OSError:
            return None
    return call
