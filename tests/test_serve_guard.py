"""`ragcli serve` against a web page and a careless or hostile client: a real server (subprocess on
loopback, no chat model: extractive answers) driven by raw HTTP.

- A foreign Host (DNS rebinding), a foreign Origin, a non-JSON POST: refused before any route.
- Bodies and parameters that gave 500 (deep nesting, wrong types in a content part, `number=²`, a
  20-digit number, lone surrogates): 4xx with a JSON message.
- Fuzzing: hypothesis draws >= 2,000 requests over every route of the app's route table (arbitrary
  JSON with the schemas' field names, strings with surrogates, NULs and escapes, huge numbers, deep
  nesting, raw uploads), new examples every run (the seed printed on failure): never a 5xx, never
  "internal error" or a traceback, every route drawn, the server answering afterwards.
- Slow clients: connections that send partial headers or none, or a body a byte at a time, are
  closed after the header or body timeout,
  while the server keeps answering others.
"""
from __future__ import annotations

import http.client
import json
import os
import random
import re
import shutil
import socket
import time
import urllib.parse
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, seed, settings, strategies as st

from serve_helpers import Server, keyed_server, server_env

KEY = "guard-test-key-0f3a"


@pytest.fixture(scope="module")
def plain(template_db, model_cache, tmp_path_factory):
    """One server for the module: no key, no model, --allowed-host books.example, uploads allowed."""
    work = tmp_path_factory.mktemp("guard")
    db = work / "corpus.db"
    shutil.copyfile(template_db["path"], db)
    inbox = work / "inbox"
    inbox.mkdir()
    server = Server(["--db", db, "--allowed-host", "books.example", "--queue", "64", "--allow-ingest", inbox],
                    server_env(model_cache, work / "home"), work / "serve.log")
    server.db = db
    yield server
    server.stop()


def send(server, method: str, path: str, body=None, headers=None, conn=None) -> tuple[int, dict, str]:
    """(status, JSON body or {}, raw text). `body`: bytes as they are, anything else as JSON."""
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    base = {"Content-Type": "application/json"} if method == "POST" else {}
    conn.request(method, path, body=data, headers={**base, **(headers or {})})
    response = conn.getresponse()
    text = response.read().decode("utf-8", "replace")
    if own:
        conn.close()
    try:
        parsed = json.loads(text) if text else {}
    except ValueError:
        parsed = {}
    return response.status, parsed, text


def alive(server) -> bool:
    return send(server, "GET", "/v1/models")[0] == 200


# -- a web page cannot use it ---------------------------------------------------------------------

def test_a_foreign_host_is_refused_and_the_served_names_are_not(plain):
    code, data, _ = send(plain, "GET", "/books", headers={"Host": "attacker.example"})
    assert code == 400 and "Host" in data["error"]["message"] and "primer" not in json.dumps(data)
    for host in (f"127.0.0.1:{plain.port}", f"localhost:{plain.port}", "localhost", "books.example",
                 f"BOOKS.example:{plain.port}", f"[::1]:{plain.port}"):
        assert send(plain, "GET", "/books", headers={"Host": host})[0] == 200, host


def test_a_foreign_origin_and_a_non_json_post_are_refused(plain):
    body = {"question": "what is a craniotomy?"}
    code, data, _ = send(plain, "POST", "/ask", body, headers={"Origin": "http://attacker.example"})
    assert code == 403 and "another site" in data["error"]["message"]
    assert send(plain, "POST", "/ask", body, headers={"Origin": "null"})[0] == 403
    code, data, _ = send(plain, "POST", "/ask", body, headers={"Content-Type": "text/plain"})
    assert code == 415 and "application/json" in data["error"]["message"]
    assert send(plain, "POST", "/search", {"query": "bone"}, headers={"Content-Type": "application/x-www-form-urlencoded"})[0] == 415
    # the server's own page (same origin) is fine
    same = {"Origin": f"http://127.0.0.1:{plain.port}"}
    assert send(plain, "POST", "/search", {"query": "bone flap"}, headers=same)[0] == 200
    assert send(plain, "GET", "/books", headers=same)[0] == 200


def test_the_guard_covers_a_route_added_later(template_db, tmp_path):
    """Middleware, not a check per route: a route mounted after create_app is guarded too."""
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from ragcli.serve.http import create_app
    from ragcli.serve.library import Library

    db = tmp_path / "corpus.db"
    shutil.copyfile(template_db["path"], db)
    app = create_app(Library(db, embedder=None), host="127.0.0.1")
    app.router.routes.append(Route("/later", lambda request: PlainTextResponse("page"), methods=["GET", "POST"]))
    client = TestClient(app, base_url="http://127.0.0.1:8088")
    assert client.get("/later").status_code == 200
    assert client.get("/later", headers={"Host": "attacker.example"}).status_code == 400
    assert client.post("/later", content=b"x", headers={"Content-Type": "text/plain"}).status_code == 415
    assert client.get("/later", headers={"Origin": "http://evil.example"}).status_code == 403


# -- 4xx, never 500 -------------------------------------------------------------------------------

CHAT = "/v1/chat/completions"
BAD = [
    ("POST", CHAT, b'{"messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", 400),
    ("POST", "/ask", b"[" * 100_000 + b"]" * 100_000, 400),
    ("POST", CHAT, {"messages": [{"role": "user", "content": [{"type": "text", "text": 123}]}]}, 400),
    ("POST", CHAT, {"messages": [{"role": "user", "content": [{"type": "text", "text": None}]}]}, 400),
    ("POST", CHAT, {"messages": [{"role": "user", "content": "\ud800 bleeding"}]}, 400),
    ("POST", "/ask", {"question": "\ud800"}, 400),
    ("POST", "/search", {"query": "bone \udcff"}, 400),
    ("POST", "/search", {"query": "bone", "k": 10 ** 30}, 400),
    ("POST", "/search", b'{"query": "bone", "k": 1e999}', 400),
    ("POST", "/ask", {"question": "x", "k": 2.5}, 400),
    ("POST", "/ask", {"question": "x", "rewrite": "yes"}, 400),
    ("GET", "/summaries/x?number=%C2%B2", None, 400),
    ("GET", "/summaries/x?number=99999999999999999999", None, 400),
    ("GET", "/summaries/%ED%A0%80", None, 404),
]


@pytest.mark.parametrize("method, path, body, status", BAD, ids=[f"{m} {p[:20]} {i}" for i, (m, p, _, _) in enumerate(BAD)])
def test_inputs_that_gave_500_get_a_4xx_with_a_message(plain, method, path, body, status):
    code, data, text = send(plain, method, path, body)
    assert code == status, text[:300]
    assert data["error"]["message"] and "Traceback" not in text
    assert alive(plain)


def test_an_empty_text_part_is_an_empty_question_not_a_crash(plain):
    code, data, _ = send(plain, "POST", CHAT, {"messages": [{"role": "user", "content": [{"type": "text", "text": None}]}]})
    assert code == 400 and "question is empty" in data["error"]["message"]


# -- fuzzing --------------------------------------------------------------------------------------
# The requests are drawn from the app's own route table (every Route of create_app: its methods, its
# path parameters) and the field names of every request schema in serve/: a route added later is
# fuzzed without anyone listing it. The examples differ on every run (a fresh seed, printed with any
# failure; RAGCLI_FUZZ_SEED=N draws a run's examples again).

SEED = int(os.environ.get("RAGCLI_FUZZ_SEED") or random.SystemRandom().randrange(2 ** 32))
SPECIAL = st.sampled_from(["\ud800", "\udcff", "\x00", "\u202e", "\ufeff", "𝔘", "%00", "../..", "\r\n", "'; --",
                           "craniotomy", "bone flap", "primer", "hybrid", "lexical", "user", "text", "\x1b]0;t\x07",
                           "²", "٣", "1", "0", "-1", "9" * 20, str(2 ** 63), "x" * 300, "a.md", "\n.md", "b\x00.pdf"])
TEXT = st.one_of(st.text(max_size=30), SPECIAL, st.lists(SPECIAL, max_size=4).map("".join))
NUMBER = st.one_of(st.integers(), st.integers(min_value=-10 ** 40, max_value=10 ** 40), st.sampled_from([0, 1, 5, 10, 50]),
                   st.sampled_from([2 ** 63, 2 ** 63 - 1, -2 ** 63 - 1, 10 ** 20]),
                   st.floats(allow_nan=False, allow_infinity=False))
SCALAR = st.one_of(st.none(), st.booleans(), NUMBER, TEXT)
JSON = st.recursive(SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                   st.dictionaries(TEXT, inner, max_size=4)), max_leaves=12)


def schema_fields() -> list[str]:
    """The field names of every request schema of the servers (pydantic models in serve/)."""
    from pydantic import BaseModel

    from ragcli.serve import api, openai_api, web

    names = set()
    for module in (api, openai_api, web):
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, BaseModel) and value is not BaseModel:
                names |= set(value.model_fields)
    return sorted(names)


FIELDS = schema_fields()
MESSAGE = st.fixed_dictionaries({"role": st.one_of(st.sampled_from(["user", "assistant", "system"]), JSON)},
                                optional={"content": st.one_of(TEXT, JSON, st.lists(st.fixed_dictionaries(
                                    {"type": st.one_of(st.just("text"), TEXT)}, optional={"text": st.one_of(TEXT, JSON)}),
                                    max_size=3))})
SHAPED = st.dictionaries(st.sampled_from(FIELDS), st.one_of(JSON, st.lists(MESSAGE, max_size=3)), max_size=5)


def deep(n: int) -> bytes:
    return b'{"query": ' + b"[" * n + b"]" * n + b"}"


RAW = st.one_of(st.sampled_from([deep(40), deep(1000), deep(100_000), b"", b"{", b"\xff\xfe", b'{"query": "\\ud800"}',
                                 b'{"k": 1' + b"0" * 5000 + b"}", b"NaN", b'{"k": Infinity}', b"\x00" * 10]),
                st.binary(max_size=40))


def quoted(text: str) -> str:
    return urllib.parse.quote(text.encode("utf-8", "surrogatepass"), safe="")


def route_table(db: Path) -> list[tuple[str, list[str]]]:
    """(path template, methods) of every route of the app the server runs."""
    from ragcli.serve.http import create_app
    from ragcli.serve.library import Library

    app = create_app(Library(db, embedder=None), host="127.0.0.1")
    return [(route.path, sorted(route.methods - {"HEAD"})) for route in app.routes]

PARAM = st.one_of(TEXT, NUMBER.map(str), st.sampled_from(["1", "2", "3", "aneurysms"]))
QUERY = st.dictionaries(st.sampled_from(["number", "page", "name", "x"]), st.one_of(TEXT, NUMBER.map(str)), max_size=2)


@st.composite
def route_request(draw, routes):
    """(method, path, body, headers, template) for a route of the table."""
    template, methods = draw(st.sampled_from(routes))
    path = re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: quoted(draw(PARAM)) or "x", template)
    query = draw(QUERY)
    if query:
        path += "?" + "&".join(f"{k}={quoted(v)}" for k, v in query.items())
    method = draw(st.one_of(st.sampled_from(methods), st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH"])))
    if method != "POST":
        return method, path, None, {}, template
    if draw(st.integers(0, 9)) == 0:  # a file upload's raw body
        return method, path, draw(st.binary(max_size=200)), {"Content-Type": "application/octet-stream"}, template
    body = draw(st.one_of(SHAPED, SHAPED, JSON, RAW))
    return method, path, body, {}, template


FUZZ_REQUESTS = 2100


def test_fuzzed_requests_over_every_route_never_get_a_server_error(plain):
    routes = route_table(plain.db)
    seen: dict[str, int] = {}
    statuses: dict[int, int] = {}
    holder = {"conn": None}

    @seed(SEED)
    @settings(max_examples=FUZZ_REQUESTS, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(route_request(routes))
    def one(request):
        method, path, body, headers, template = request
        if isinstance(body, (dict, list)) or body is None and method == "POST":
            try:
                body = json.dumps(body).encode()  # surrogates become \\ud800 escapes, as a client sends them
            except (ValueError, RecursionError):
                return
        for attempt in range(2):  # a connection the server closed (after an error) is opened again
            if holder["conn"] is None:
                holder["conn"] = http.client.HTTPConnection("127.0.0.1", plain.port, timeout=120)
            try:
                code, data, text = send(plain, method, path, body, headers=headers, conn=holder["conn"])
                break
            except (http.client.HTTPException, OSError):
                holder["conn"].close()
                holder["conn"] = None
        else:
            raise AssertionError(f"no answer to {method} {path} {body!r:.200} (seed {SEED})")
        seen[template] = seen.get(template, 0) + 1
        statuses[code] = statuses.get(code, 0) + 1
        where = f"seed {SEED} (RAGCLI_FUZZ_SEED={SEED} repeats this run)"
        assert code < 500, (where, method, path, body[:300] if body else body, text[:500])
        assert "Traceback" not in text and "internal error" not in text, (where, method, path, text[:500])
        if code >= 400:
            assert isinstance(data.get("error", {}).get("message"), str), (where, text[:300])

    t0 = time.monotonic()
    one()
    took = time.monotonic() - t0
    if holder["conn"] is not None:
        holder["conn"].close()
    assert sum(statuses.values()) >= 2000, statuses
    assert set(seen) == {template for template, _ in routes}, (SEED, sorted(set(t for t, _ in routes) - set(seen)))
    assert alive(plain)
    log = Path(plain.log).read_text()
    assert "Traceback" not in log and "internal error" not in log, (SEED, log[-3000:])
    print(f"fuzz (seed {SEED}): {sum(statuses.values())} requests in {took:.0f} s over {len(seen)} routes, "
          f"statuses {sorted(statuses.items())}")


# -- slow clients ---------------------------------------------------------------------------------

def test_slow_clients_are_closed_at_the_header_timeout_and_others_are_served(plain):
    from ragcli.serve.transport import BODY_TIMEOUT, HEADER_TIMEOUT

    silent = socket.create_connection(("127.0.0.1", plain.port))
    partial = socket.create_connection(("127.0.0.1", plain.port))
    trickle = socket.create_connection(("127.0.0.1", plain.port))
    body = socket.create_connection(("127.0.0.1", plain.port))
    partial.sendall(b"GET /books HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    body.sendall(b"POST /search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 100000\r\n\r\n{")
    t0 = time.monotonic()
    closed: dict[str, float] = {}
    header = b"GET /books HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Slow: " + b"a" * 200
    for s in (silent, partial, trickle, body):
        s.settimeout(0.2)
    i = 0
    while len(closed) < 4 and time.monotonic() - t0 < HEADER_TIMEOUT + 20:
        if "trickle" not in closed:
            try:
                trickle.sendall(header[i % len(header):i % len(header) + 1])  # a byte every 0.2 s: never done
                i += 1
            except OSError:
                closed["trickle"] = time.monotonic() - t0
        if "body" not in closed:
            try:
                body.sendall(b" ")  # the body, a byte every 0.2 s: 5 bytes a second, under the minimum rate
            except OSError:
                closed["body"] = time.monotonic() - t0
        for name, s in (("silent", silent), ("partial", partial), ("trickle", trickle), ("body", body)):
            if name in closed:
                continue
            try:
                if s.recv(1024) == b"":
                    closed[name] = time.monotonic() - t0
            except socket.timeout:
                pass
            except OSError:
                closed[name] = time.monotonic() - t0
        assert alive(plain)  # others are served meanwhile
    for s in (silent, partial, trickle, body):
        s.close()
    assert set(closed) == {"silent", "partial", "trickle", "body"}, closed
    assert all(HEADER_TIMEOUT - 1 <= closed[k] <= HEADER_TIMEOUT + 5 for k in ("silent", "partial", "trickle")), closed
    assert BODY_TIMEOUT - 1 <= closed["body"] <= BODY_TIMEOUT + 5, closed


# -- the key, [::1] -------------------------------------------------------------------------------

def test_the_bearer_scheme_is_case_insensitive(template_db, model_cache, tmp_path):
    server = keyed_server(template_db, model_cache, tmp_path, KEY)
    try:
        for scheme in ("Bearer", "bearer", "BEARER"):
            assert send(server, "GET", "/books", headers={"Authorization": f"{scheme} {KEY}"})[0] == 200, scheme
        for wrong in (f"Basic {KEY}", f"Bearer {KEY}x", KEY, f"bearer{KEY}"):
            assert send(server, "GET", "/books", headers={"Authorization": wrong})[0] == 401, wrong
    finally:
        server.stop()


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback on this machine")
def test_serve_on_bracketed_ipv6_loopback(template_db, model_cache, tmp_path):
    import subprocess
    import sys

    from serve_helpers import ROOT, free_port

    db = tmp_path / "corpus.db"
    shutil.copyfile(template_db["path"], db)
    port = free_port()
    log = tmp_path / "serve.log"
    proc = subprocess.Popen([sys.executable, "-m", "ragcli", "serve", "--host", "[::1]", "--port", str(port),
                             "--db", str(db)], stdout=open(log, "w"), stderr=subprocess.STDOUT,
                            env=server_env(model_cache, tmp_path / "home"), cwd=ROOT)
    try:
        deadline = time.time() + 120
        code = None
        while time.time() < deadline and proc.poll() is None:
            try:
                conn = http.client.HTTPConnection("::1", port, timeout=5)
                conn.request("GET", "/books")
                code = conn.getresponse().status
                conn.close()
                break
            except OSError:
                time.sleep(0.3)
        assert code == 200, log.read_text()[-2000:]
    finally:
        proc.terminate()
        proc.wait(15)
