"""A small driver for real headless Chromium over the DevTools protocol (CDP), for tests.

    with Chromium() as browser:                      # no chromium: skips (CI: fails, conftest.REQUIRE_REFERENCES)
        page = browser.load("file:///tmp/report.html")
        assert not page.errors                       # console errors, uncaught exceptions, failed loads
        images = page.evaluate("[...document.images].map(i => [i.naturalWidth, i.naturalHeight])")
        page.screenshot("shot.png")

Chromium is started with its own new profile folder and ``--remote-debugging-port=0``; the port is read
from ``DevToolsActivePort`` in that folder; one page target is driven through ``websockets``.
"""
from __future__ import annotations

import asyncio
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


class Chromium:
    """A headless Chromium process with its own profile; ``load(url)`` gives a :class:`Page`."""

    def __init__(self, binary: str | None = None, timeout: float = WAIT_S):
        self.binary = binary or find_chromium()
        if not self.binary:
            from conftest import missing_reference

            missing_reference("no chromium here (Debian: apt-get install chromium; or set LEGALIR_CHROMIUM)")
        self.timeout = timeout
        self.proc: subprocess.Popen | None = None
        self.pages: list[Page] = []

    def __enter__(self) -> Chromium:
        self.profile = tempfile.mkdtemp(prefix="legalir-chromium-")
        # TMPDIR inside the profile: Chromium's singleton-socket folder (org.chromium.Chromium.*) goes with it
        self.proc = subprocess.Popen([self.binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     env={**os.environ, "TMPDIR": self.profile}, start_new_session=True)
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + self.timeout
        while not (port_file.exists() and port_file.read_text().strip()):
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.binary} exited with status {self.proc.returncode} at start")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.binary} did not open its DevTools port in {self.timeout}s")
            time.sleep(0.05)
        self.port = int(port_file.read_text().split()[0])
        return self

    def load(self, url: str) -> Page:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/list", timeout=self.timeout) as r:
            targets = json.loads(r.read())
        page_target = next(t for t in targets if t.get("type") == "page")
        page = Page(page_target["webSocketDebuggerUrl"], self.timeout)
        self.pages.append(page)
        page.navigate(url)
        return page

    def __exit__(self, *exc) -> None:
        # killed, not terminated: its profile is thrown away, and a terminated headless Chromium often took its
        # full 10 s grace, as the close handshake of a page's socket did (20 s a browser, twice per test run). Its
        # whole process group: a helper left alive wrote its network state into the profile after it was removed,
        # and left the folder in /tmp (one a run)
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        for p in self.pages:
            try:
                p.drop()
            except Exception:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)
