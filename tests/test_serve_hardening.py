"""`ragcli serve` against the second round of attacks (issue 44): a real uvicorn server on 127.0.0.1
(in a thread, with the server's own protocol class, its limits lowered so a test takes seconds),
driven by raw sockets.

- A slow request body (a byte every half second against a declared 100,000) is cut at the body
  deadline, with a key or without, answered already or not; other clients are served meanwhile.
- A refused request (401) closes its connection: the client cannot keep it to trickle a body.
- Past the connection limit, 503 comes in the JSON error shape.
- The page's session: a random token made by the server (two logins, two tokens; not derived from the
  key), expiring, dropped when the server restarts; wrong keys are rate-limited per address (429 with
  Retry-After, the right key refused too while locked) and logged without the key given.
- The security headers are on every response: 404s, /books, /summaries, errors.
"""
from __future__ import annotations

import asyncio
import json
import shutil
import socket
import threading
import time

import pytest

KEY = "hardening-key-7d21"


class Uvicorn:
    """create_app served by uvicorn with `protocol_class(**limits)` on 127.0.0.1 until stop()."""

    def __init__(self, db, key=None, **limits):
        import uvicorn

        from ragcli.serve.http import create_app
        from ragcli.serve.transport import protocol_class
        from ragcli.serve.library import Library
        from serve_helpers import free_port

        self.port = free_port()
        app = create_app(Library(db, embedder=None), api_key=key, host="127.0.0.1", port=self.port, waiting=64)
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", access_log=False,
                                timeout_keep_alive=5, http=protocol_class(**limits), lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=lambda: asyncio.run(self.server.serve()), daemon=True)
        self.thread.start()
        for _ in range(200):
            if self.server.started:
                return
            time.sleep(0.05)
        raise RuntimeError("uvicorn did not start")

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def request(port: int, raw: bytes, timeout: float = 30, source: str = "") -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                  source_address=(source, 0) if source else None) as s:
        s.sendall(raw)
        out = b""
        while True:
            try:
                part = s.recv(65536)
            except socket.timeout:
                break
            if not part:
                break
            out += part
            if b"\r\n\r\n" in out:
                head, _, body = out.partition(b"\r\n\r\n")
                length = [int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")]
                if length and len(body) >= length[0]:
                    break
        return out


def get(port: int, path: str, headers: str = "", source: str = "") -> tuple[int, dict, bytes]:
    raw = request(port, f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{headers}Connection: close\r\n\r\n".encode(),
                  source=source)
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    fields = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), fields, body


def post(port: int, path: str, body: dict, headers: str = "", source: str = "") -> tuple[int, dict, bytes]:
    data = json.dumps(body).encode()
    raw = request(port, (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                         f"Content-Length: {len(data)}\r\n{headers}Connection: close\r\n\r\n").encode() + data,
                  source=source)
    head, _, rest = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    fields = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), fields, rest


@pytest.fixture
def db(template_db, tmp_path):
    path = tmp_path / "corpus.db"
    shutil.copyfile(template_db["path"], path)
    return path


def _slow_body(port: int, auth: bool) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall((f"POST /search HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
               f"{'Authorization: Bearer ' + KEY + chr(13) + chr(10) if auth else ''}"
               f"Content-Length: 100000\r\n\r\n{{").encode())
    s.settimeout(0.05)
    return s


def test_slow_bodies_are_cut_and_the_keyed_client_is_served(db):
    server = Uvicorn(db, KEY, max_connections=8, body_timeout=3.0)
    try:
        slow = [_slow_body(server.port, auth=i % 2 == 0) for i in range(7)]  # keyed or not
        t0 = time.monotonic()
        closed: dict[int, float] = {}
        served = []
        while len(closed) < len(slow) and time.monotonic() - t0 < 20:
            for i, s in enumerate(slow):
                if i in closed:
                    continue
                try:
                    s.sendall(b" ")
                    if s.recv(4096) == b"":
                        closed[i] = time.monotonic() - t0
                except socket.timeout:
                    pass
                except OSError:
                    closed[i] = time.monotonic() - t0
            served.append(get(server.port, "/books", f"Authorization: Bearer {KEY}\r\n")[0])
            time.sleep(0.4)
        for s in slow:
            s.close()
        assert len(closed) == 7, closed
        assert all(t <= 3.0 + 4 for t in closed.values()), closed  # the deadline plus a check interval
        assert set(served) == {200}, served  # the keyed client never got 503 meanwhile
    finally:
        server.stop()


def test_a_refused_request_closes_its_connection(db):
    server = Uvicorn(db, KEY)
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
            s.sendall((f"POST /search HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nContent-Type: application/json\r\n"
                       f"Content-Length: 100000\r\n\r\n{{").encode())
            t0 = time.monotonic()
            out = b""
            while True:
                part = s.recv(4096)
                if not part:
                    break
                out += part
            took = time.monotonic() - t0
        assert out.startswith(b"HTTP/1.1 401") and b"connection: close" in out.lower(), out[:300]
        assert took < 3, took  # closed by the server right after the answer, not at a timeout
    finally:
        server.stop()


def test_the_connection_limit_answers_json(db):
    server = Uvicorn(db, None, max_connections=4)
    idle = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(5)]
    try:
        time.sleep(0.3)
        status, headers, body = get(server.port, "/books")
        assert status == 503 and headers["content-type"] == "application/json", (status, headers)
        error = json.loads(body)["error"]
        assert error["type"] == "server_busy" and "connections" in error["message"]
        assert "content-security-policy" in headers and headers["retry-after"] == "1"
    finally:
        for s in idle:
            s.close()
    time.sleep(0.3)
    try:
        assert get(server.port, "/books")[0] == 200  # free again
    finally:
        server.stop()


def test_the_session_is_random_expiring_and_dies_with_the_server(db):
    from ragcli.serve import guard

    first = Uvicorn(db, KEY)
    try:
        cookies = []
        for _ in range(2):
            status, headers, _ = post(first.port, "/web/key", {"key": KEY})
            assert status == 200
            cookies.append(headers["set-cookie"].split(";")[0])
        assert cookies[0] != cookies[1] and KEY not in cookies[0]
        name, token = cookies[0].split("=", 1)
        assert name == f"ragcli_session_{first.port}" and len(token) >= 40
        import hashlib
        import hmac

        assert token != hmac.new(KEY.encode(), b"ragcli web page", hashlib.sha256).hexdigest()  # 7df4928's cookie
        assert get(first.port, "/books", f"Cookie: {cookies[0]}\r\n")[0] == 200
        port = first.port
    finally:
        first.stop()
    again = Uvicorn(db, KEY)
    try:
        assert get(again.port, "/books", f"Cookie: ragcli_session_{again.port}={token}\r\n")[0] == 401
        assert get(again.port, "/books", f"Cookie: ragcli_session_{port}={token}\r\n")[0] == 401
    finally:
        again.stop()
    clock = [0.0]
    sessions = guard.Sessions(seconds=60, clock=lambda: clock[0])
    made = sessions.new()
    assert sessions.valid(made) and not sessions.valid(made + "x") and not sessions.valid("")
    clock[0] = 61
    assert not sessions.valid(made)


def test_wrong_keys_are_rate_limited_and_logged_without_the_key(db, capfd):
    from ragcli.serve.guard import MAX_FAILURES

    server = Uvicorn(db, KEY)
    try:
        wrong = "guess-0001-of-many"
        codes = [post(server.port, "/web/key", {"key": wrong}, source="127.0.0.3")[0] for _ in range(MAX_FAILURES)]
        assert codes == [401] * MAX_FAILURES
        status, headers, _ = post(server.port, "/web/key", {"key": KEY}, source="127.0.0.3")
        assert status == 429 and int(headers["retry-after"]) >= 1  # locked: even the right key waits
        status, _, _ = get(server.port, "/books", f"Authorization: Bearer {KEY}\r\n", source="127.0.0.3")
        assert status == 429
        assert post(server.port, "/web/key", {"key": KEY}, source="127.0.0.4")[0] == 200  # another address
        assert get(server.port, "/books", "Authorization: Bearer nope\r\n", source="127.0.0.4")[0] == 401
    finally:
        server.stop()
    log = capfd.readouterr().err
    assert "wrong API key from 127.0.0.3" in log and "wrong API key from 127.0.0.4" in log
    assert wrong not in log and KEY not in log and "nope" not in log


def test_every_response_carries_the_policy(db):
    server = Uvicorn(db, None)
    try:
        for path in ("/books", "/summaries", "/summaries/none", "/no-such-route", "/web/api/passages/999999/file",
                     "/web/api/passages/x"):
            status, headers, _ = get(server.port, path)
            assert "script-src 'self'" in headers.get("content-security-policy", ""), (path, status, headers)
            assert headers.get("x-content-type-options") == "nosniff", path
        status, headers, _ = get(server.port, "/books", "Host: evil.example\r\n".replace("Host", "X-Ignored"))
        assert "content-security-policy" in headers
    finally:
        server.stop()
