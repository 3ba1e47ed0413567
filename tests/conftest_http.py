"""Fixtures for the HTTP model backend: llama-cpp-python's own OpenAI-compatible server serving the
tiny test GGUF, and a small fault-injecting server. Both listen on 127.0.0.1 only."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

SERVER_KEY = "test-secret-key-7f3a"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_ready(url: str, proc, log: Path, seconds: float = 120.0, key: str = "") -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {log.read_text()[-2000:]}")
        try:
            req = urllib.request.Request(url + "/models", headers={"Authorization": f"Bearer {key}"})
            with urllib.request.urlopen(req, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"server not ready after {seconds} s: {log.read_text()[-2000:]}")


def _die_with_parent() -> None:
    """In the child: get SIGTERM when the test process dies, even if it is killed (Linux)."""
    import ctypes
    import signal

    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def start_llama_cpp_server(model: Path, log: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    pytest.importorskip("llama_cpp.server.app", reason="llama-cpp-python[server] not installed")
    port = free_port()
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
           "--port", str(port), "--n_ctx", "2048", "--n_threads", "1", "--model_alias", "tiny", *extra]
    proc = subprocess.Popen(cmd, stdout=open(log, "w"), stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
    url = f"http://127.0.0.1:{port}/v1"
    key = extra[extra.index("--api_key") + 1] if "--api_key" in extra else ""
    try:
        _wait_ready(url, proc, log, key=key)
    except Exception:
        proc.kill()
        raise
    return proc, url


@pytest.fixture(scope="session")
def llama_server(tiny_gguf, tmp_path_factory):
    """URL (.../v1) of `python -m llama_cpp.server` serving the tiny GGUF."""
    proc, url = start_llama_cpp_server(tiny_gguf, tmp_path_factory.mktemp("srv") / "server.log")
    yield url
    proc.terminate()
    proc.wait(10)


@pytest.fixture(scope="session")
def llama_server_with_key(tiny_gguf, tmp_path_factory):
    proc, url = start_llama_cpp_server(tiny_gguf, tmp_path_factory.mktemp("srv") / "server.log",
                                       "--api_key", SERVER_KEY)
    yield url
    proc.terminate()
    proc.wait(10)


class FaultServer:
    """An OpenAI-lookalike whose behaviour each test sets: `mode` in ok | cut | error500 | slow |
    no_rerank (/v1/rerank answers 501 as llama-server started without --reranking);
    `models` the listed model ids; `reply` the streamed text; `rerank_scores` by document text.
    Every request body is kept in `requests`."""

    def __init__(self):
        self.mode = "ok"
        self.models = ["alpha"]
        self.reply = "Apply firm pressure to the wound [S1]."
        self.rerank_scores: dict[str, float] = {}
        self.slow_seconds = 3.0
        self.timings = {"cache_n": 40, "prompt_n": 12, "predicted_n": 7}
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _json(self, code: int, data) -> None:
                body = json.dumps(data).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                outer.headers.append(dict(self.headers))
                if self.path == "/v1/models":
                    return self._json(200, {"object": "list", "data": [
                        {"id": m, "object": "model", "owned_by": "fault"} for m in outer.models]})
                return self._json(404, {"error": {"message": "not found"}})

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                outer.requests.append({"path": self.path, **body})
                outer.headers.append(dict(self.headers))
                if self.path in ("/v1/rerank", "/rerank") and outer.mode == "no_rerank":
                    return self._json(501, {"error": {"code": 501, "type": "not_supported_error", "message":
                                                      "This server does not support reranking. Start it with "
                                                      "`--reranking`"}})
                if self.path in ("/v1/rerank", "/rerank"):
                    docs = body.get("documents", [])
                    results = [{"index": i, "relevance_score": outer.rerank_scores.get(d, 0.0)}
                               for i, d in enumerate(docs)]
                    results.sort(key=lambda r: -r["relevance_score"])
                    return self._json(200, {"model": body.get("model"), "results": results})
                if self.path != "/v1/chat/completions":
                    return self._json(404, {"error": {"message": "not found"}})
                if outer.mode == "error500":
                    return self._json(500, {"error": {"message": "the engine crashed", "type": "server_error"}})
                if outer.mode == "slow":
                    time.sleep(outer.slow_seconds)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                text = outer.reply
                pieces = [text[i:i + 6] for i in range(0, len(text), 6)]
                if outer.mode == "cut":
                    pieces = pieces[: max(1, len(pieces) // 2)]
                for piece in pieces:
                    self._event({"id": "x", "object": "chat.completion.chunk", "created": 0, "model": body["model"],
                                 "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
                if outer.mode == "cut":
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)  # no last chunk: the stream is cut
                    return
                self._event({"id": "x", "object": "chat.completion.chunk", "created": 0, "model": body["model"],
                             "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                             "timings": outer.timings})  # as llama-server reports them
                self._chunk(b"data: [DONE]\n\n")
                self._chunk(b"")

            def _event(self, data: dict) -> None:
                self._chunk(b"data: " + json.dumps(data).encode() + b"\n\n")

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def fault_server():
    with FaultServer() as server:
        yield server
