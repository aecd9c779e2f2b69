"""A small driver for real headless Chromium over the DevTools protocol (CDP), for tests.

    with Chromium() as browser:                      # no chromium: skips (CI: fails, conftest.REQUIRE_REFERENCES)
        page = browser.load("file:///tmp/report.html")
        assert not page.errors                       # console errors, uncaught exceptions, failed loads
        images = page.evaluate("[...document.images].map(i => [i.naturalWidth, i.naturalHeight])")
        page.screenshot("shot.png")

One Chromium process serves a whole test process (started at the first ``with Chromium()``, killed when the
process ends or :func:`shutdown` is called: each launch cost about 0.8 CPU-s, six times a run). It runs with its
own new profile folder and ``--remote-debugging-port=0``; the port is read from ``DevToolsActivePort`` in that
folder. Each ``with Chromium()`` block is a browser context of its own (``Target.createBrowserContext``: its
own cookies, storage and cache, as a fresh profile has), disposed at the block's end; each ``load`` opens a new
page target in it, driven through ``websockets``.
"""
from __future__ import annotations

import asyncio
import atexit
import base64
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from conftest import WAIT_S

CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--remote-debugging-port=0"]


def find_chromium() -> str | None:
    env = os.environ.get("LEGALIR_CHROMIUM")
    for c in ([env] if env else []) + list(CANDIDATES):
        if c and os.path.exists(c) and os.access(c, os.X_OK):
            return c
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Page:
    def __init__(self, ws_url: str, timeout: float = WAIT_S):
        self.ws_url = ws_url
        self.timeout = timeout
        self.errors: list[str] = []
        self._id = 0
        self._loop = asyncio.new_event_loop()
        self._ws = self._loop.run_until_complete(self._connect())

    async def _connect(self):
        import websockets

        return await websockets.connect(self.ws_url, max_size=64 * 1024 * 1024, open_timeout=self.timeout,
                                        close_timeout=1)

    async def _call(self, method: str, params: dict | None = None) -> dict:
        self._id += 1
        my = self._id
        await self._ws.send(json.dumps({"id": my, "method": method, "params": params or {}}))
        deadline = time.monotonic() + self.timeout
        while True:
            raw = await asyncio.wait_for(self._ws.recv(), max(0.1, deadline - time.monotonic()))
            msg = json.loads(raw)
            if msg.get("id") == my:
                if "error" in msg:
                    raise RuntimeError(f"CDP {method}: {msg['error']}")
                return msg.get("result", {})
            self._event(msg)

    async def _wait_event(self, name: str) -> dict:
        deadline = time.monotonic() + self.timeout
        while True:
            msg = json.loads(await asyncio.wait_for(self._ws.recv(), max(0.1, deadline - time.monotonic())))
            self._event(msg)
            if msg.get("method") == name:
                return msg.get("params", {})

    def _event(self, msg: dict) -> None:
        m, p = msg.get("method"), msg.get("params", {})
        if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            self.errors.append("console: " + " ".join(str(a.get("value", a.get("description", "")))
                                                       for a in p.get("args", [])))
        elif m == "Runtime.exceptionThrown":
            self.errors.append("exception: " + p.get("exceptionDetails", {}).get("text", ""))
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            e = p["entry"]
            self.errors.append(f"log ({e.get('source')}): {e.get('text')} {e.get('url', '')}".strip())
        elif m == "Network.loadingFailed":
            self.errors.append(f"load failed: {p.get('errorText')}")

    def call(self, method: str, params: dict | None = None) -> dict:
        return self._loop.run_until_complete(self._call(method, params))

    def navigate(self, url: str) -> None:
        async def go():
            for domain in ("Page", "Runtime", "Log", "Network"):
                await self._call(f"{domain}.enable")
            await self._call("Page.navigate", {"url": url})
            await self._wait_event("Page.loadEventFired")
        self._loop.run_until_complete(go())

    def evaluate(self, expression: str):
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            raise RuntimeError(f"evaluate: {r['exceptionDetails'].get('text')}")
        return r.get("result", {}).get("value")

    def screenshot(self, path: str | os.PathLike, width: int = 1200) -> Path:
        """A PNG of the whole page (not only the viewport)."""
        height = int(self.evaluate("Math.ceil(document.documentElement.scrollHeight)") or 800)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": min(height, 16000), "deviceScaleFactor": 1, "mobile": False})
        data = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})["data"]
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(base64.b64decode(data))
        return p

    def drop(self) -> None:
        """Close the socket without the closing handshake (the browser is gone: it would wait ``close_timeout``)."""
        try:
            self._ws.transport.abort()
            self._loop.run_until_complete(asyncio.sleep(0))  # the loop runs the abort's callbacks
        finally:
            self._loop.close()


class _Process:
    """The headless Chromium process, with its own profile folder, that every :class:`Chromium` block of this
    test process uses."""

    def __init__(self, binary: str, timeout: float):
        self.binary = binary
        self.profile = tempfile.mkdtemp(prefix="legalir-chromium-")
        # TMPDIR inside the profile: Chromium's singleton-socket folder (org.chromium.Chromium.*) goes with it
        self.proc = subprocess.Popen([binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     env={**os.environ, "TMPDIR": self.profile}, start_new_session=True)
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not (port_file.exists() and port_file.read_text().strip()):
            if self.proc.poll() is not None:
                self.close()
                raise RuntimeError(f"{binary} exited with status {self.proc.returncode} at start")
            if time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"{binary} did not open its DevTools port in {timeout}s")
            time.sleep(0.05)
        self.port = int(port_file.read_text().split()[0])

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        # killed, not terminated: its profile is thrown away, and a terminated headless Chromium often took its
        # full 10 s grace. Its whole process group: a helper left alive wrote its network state into the profile
        # after it was removed, and left the folder in /tmp (one a run)
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


_shared: _Process | None = None


def _process(binary: str, timeout: float) -> _Process:
    """The test process's Chromium, started (again, if it died or another binary is asked for) when needed."""
    global _shared
    if _shared is not None and (not _shared.alive() or _shared.binary != binary):
        shutdown()
    if _shared is None:
        _shared = _Process(binary, timeout)
    return _shared


@atexit.register
def shutdown() -> None:
    """Kill the shared Chromium process, if one was started (at the latest when the test process ends)."""
    global _shared
    if _shared is not None:
        process, _shared = _shared, None
        process.close()


class Chromium:
    """A browser context of its own in the test process's headless Chromium; ``load(url)`` gives a
    :class:`Page` (a new page target in that context)."""

    def __init__(self, binary: str | None = None, timeout: float = WAIT_S):
        self.binary = binary or find_chromium()
        if not self.binary:
            from conftest import missing_reference

            missing_reference("no chromium here (Debian: apt-get install chromium; or set LEGALIR_CHROMIUM)")
        self.timeout = timeout
        self.pages: list[Page] = []

    def __enter__(self) -> Chromium:
        process = _process(self.binary, self.timeout)
        self.port = process.port
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/version", timeout=self.timeout) as r:
            endpoint = json.loads(r.read())["webSocketDebuggerUrl"]
        self._browser = Page(endpoint, self.timeout)  # the browser's own target: contexts and targets
        try:
            self.context = self._browser.call("Target.createBrowserContext", {})["browserContextId"]
        except BaseException:
            self._browser.drop()
            raise
        return self

    def load(self, url: str) -> Page:
        target = self._browser.call("Target.createTarget", {"url": "about:blank",
                                                             "browserContextId": self.context})["targetId"]
        page = Page(f"ws://127.0.0.1:{self.port}/devtools/page/{target}", self.timeout)
        self.pages.append(page)
        page.navigate(url)
        return page

    def __exit__(self, *exc) -> None:
        for p in self.pages:
            try:
                p.drop()
            except Exception:
                pass
        try:  # its pages close with it
            self._browser.call("Target.disposeBrowserContext", {"browserContextId": self.context})
        except Exception:  # the browser died: the next block starts another
            shutdown()
        finally:
            try:
                self._browser.drop()
            except Exception:
                pass
