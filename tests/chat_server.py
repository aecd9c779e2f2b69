"""A real HTTP server on loopback that speaks OpenAI's chat-completions protocol, for tests.

Deterministic canned answers; a script of responses to serve first (e.g. a 503,
then normal answers); serves at most ``max_requests`` requests and stops by
itself after ``idle_timeout`` seconds without one.
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from conftest import WAIT_S


def default_answer(messages: list[dict]) -> str:
    """Expansion prompts get a 'Rule:' line built from the question; judges get a grade."""
    user = messages[-1]["content"]
    if "Retrieved text:" in user:
        doc = user.split("Retrieved text:", 1)[1].lower()
        if "new york" in doc:
            return "Relevance: 5/5"
        if "governing law" in doc or "laws of" in doc:
            return "I would rate this **3** out of 5."
        if "indemnif" in doc:
            return "The clause is unrelated. I can't give a number."   # no grade: unparsable
        return "1"
    question = user.rsplit("Question:", 1)[-1].strip() if "Question:" in user else user.strip()
    return f"Rule: the contract clause on {question.lower()} is governed by the law chosen by the parties."


class ChatServer:
    def __init__(self, answer: Callable[[list[dict]], str] = default_answer,
                 script: list[tuple[int, dict | None, dict | None]] | None = None,
                 max_requests: int = 200, idle_timeout: float = WAIT_S, fail_after: tuple[int, int] | None = None):
        self.answer = answer
        self.fail_after = fail_after      # (n, status): answer `status` once n requests were answered
        self.answered = 0
        self.script = list(script or [])
        self.max_requests = max_requests
        self.idle_timeout = idle_timeout
        self.received: list[dict] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _send(self, status: int, payload: dict, headers: dict | None = None):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, str(v))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                with server._lock:
                    server.received.append({"path": self.path, "body": body,
                                            "authorization": self.headers.get("Authorization")})
                    scripted = server.script.pop(0) if server.script else None
                if not self.path.endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                if scripted is not None:
                    status, payload, headers = scripted
                    return self._send(status, payload or {"error": {"message": f"scripted {status}"}}, headers)
                if self.headers.get("Authorization") == "Bearer bad-key":
                    return self._send(401, {"error": {"message": "Incorrect API key provided"}})
                if server.fail_after and server.answered >= server.fail_after[0]:
                    return self._send(server.fail_after[1], {"error": {"message": "scripted failure"}})
                if body.get("model") == "missing-model":
                    return self._send(404, {"error": {"message": "The model `missing-model` does not exist"}})
                text = server.answer(body["messages"])
                with server._lock:
                    server.answered += 1
                self._send(200, {"id": "cmpl-test", "object": "chat.completion", "model": body.get("model"),
                                 "choices": [{"index": 0, "finish_reason": "stop",
                                              "message": {"role": "assistant", "content": text}}]})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.timeout = 0.2
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self):
        last = time.monotonic()
        seen = 0
        while not self._stop.is_set() and seen < self.max_requests:
            self.httpd.handle_request()
            with self._lock:
                if len(self.received) != seen:
                    seen, last = len(self.received), time.monotonic()
            if time.monotonic() - last > self.idle_timeout:
                break
        self.httpd.server_close()

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.received)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self.thread.join(timeout=5)
