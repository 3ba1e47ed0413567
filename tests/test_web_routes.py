"""The page's routes (serve/web.py) without a browser: every route of the server needs the key when one
is set (by header or by the page's cookie), the page is small, and its security headers are there.
tests/browser/ drives the page itself."""
from __future__ import annotations

import http.client
import json
import re
from pathlib import Path

import pytest

from serve_helpers import Server, corpus_copy, server_env

KEY = "route-walk-key-41f0"
WEB = Path(__file__).resolve().parents[1] / "ragcli" / "serve" / "web"
PARAMS = {"topic": "aneurysms", "cid": "1", "pid": "1"}


@pytest.fixture(scope="module")
def keyed(template_db, model_cache, tmp_path_factory):
    work = tmp_path_factory.mktemp("routes")
    corpus, uploads = corpus_copy(template_db, work, "uploads")
    server = Server(["--db", corpus, "--api-key", KEY, "--allow-ingest", uploads],
                    server_env(model_cache, work / "home"), work / "serve.log", key=KEY)
    server.db, server.uploads = corpus, uploads
    yield server
    server.stop()


def call(server, method: str, path: str, headers=None, body=None, source: str = ""):
    """`source`: another loopback address to send from (wrong keys are rate-limited per address)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=300,
                                      source_address=(source, 0) if source else None)
    conn.request(method, path, body=body, headers=headers or {})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, dict(response.getheaders()), data


def every_route(db: Path) -> list[tuple[str, str]]:
    """(method, path) of every route the server has, path parameters filled in."""
    from ragcli.serve.http import create_app
    from ragcli.serve.library import Library

    app = create_app(Library(db, None), api_key=KEY)
    out = []
    for route in app.routes:
        path = re.sub(r"\{(\w+)\}", lambda m: PARAMS[m.group(1)], route.path)
        out += [(method, path) for method in sorted(route.methods - {"HEAD"})]
    return out


def login(server) -> str:
    """The page's key form with the right key: the `Cookie` header its answer sets."""
    status, headers, _ = call(server, "POST", "/web/key", {"Content-Type": "application/json"},
                              json.dumps({"key": KEY}).encode())
    assert status == 200
    return next(v for k, v in headers.items() if k.lower() == "set-cookie").split(";")[0]


def test_every_route_needs_the_key_but_the_page_shell(keyed):
    from ragcli.serve.web import PUBLIC

    session = login(keyed)
    name = f"ragcli_session_{keyed.port}"
    routes = every_route(keyed.db)
    assert ("GET", "/") in routes and ("POST", "/web/api/ask") in routes and ("GET", "/books") in routes
    body = json.dumps({"question": "what is a craniotomy?", "topic": "aneurysms", "key": "wrong"}).encode()
    for method, path in routes:
        send = body if method == "POST" else None
        kind = {"Content-Type": "application/json"}
        status, headers, data = call(keyed, method, path, kind, send)
        if path in PUBLIC:
            assert status != 401 or path == "/web/key", (method, path, status)
            continue
        assert status == 401, (method, path, status, data[:200])
        assert json.loads(data)["error"]["type"] == "unauthorized"
        source = f"127.0.0.{2 + routes.index((method, path))}"  # under the per-address limit of wrong keys
        for wrong in ({"Authorization": "Bearer nope"}, {"Cookie": f"{name}=" + "A" * 43},
                      {"Cookie": f"{name}={KEY}"}, {"Cookie": f"ragcli_session_1={session.split('=', 1)[1]}"}):
            assert call(keyed, method, path, {**kind, **wrong}, send, source)[0] == 401, (method, path, wrong)
        for right in ({"Authorization": f"Bearer {KEY}"}, {"Cookie": session}):
            status = call(keyed, method, path, {**kind, **right}, send)[0]
            assert status not in (401, 500), (method, path, right, status)


def test_the_key_form_sets_an_httponly_strict_cookie_only_for_the_right_key(keyed):
    status, headers, _ = call(keyed, "POST", "/web/key", {"Content-Type": "application/json"},
                              json.dumps({"key": "nope"}).encode(), source="127.0.0.200")
    assert status == 401 and "set-cookie" not in {k.lower() for k in headers}
    status, headers, _ = call(keyed, "POST", "/web/key", {"Content-Type": "application/json"},
                              json.dumps({"key": KEY}).encode())
    cookie = next(v for k, v in headers.items() if k.lower() == "set-cookie")
    assert status == 200 and cookie.startswith(f"ragcli_session_{keyed.port}=")
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and KEY not in cookie
    assert re.search(r"Max-Age=(\d+)", cookie) and int(re.search(r"Max-Age=(\d+)", cookie).group(1)) <= 24 * 3600


def test_the_page_is_small_and_carries_its_policy(keyed):
    size = sum(p.stat().st_size for p in WEB.iterdir())
    assert size <= 150 * 1024, f"the page is {size} bytes"
    for path in ("/", "/web/app.js", "/web/style.css"):
        status, headers, data = call(keyed, "GET", path)
        assert status == 200 and data == (WEB / {"/": "index.html"}.get(path, path.rsplit("/", 1)[1])).read_bytes()
        assert "script-src 'self'" in headers["content-security-policy"]
        assert headers["x-content-type-options"] == "nosniff"
    html = (WEB / "index.html").read_text()
    assert "http://" not in html and "https://" not in html and "<script>" not in html  # no inline script
    assert "http://" not in (WEB / "app.js").read_text() and "innerHTML" not in (WEB / "app.js").read_text()


def test_upload_ingests_into_the_folder_only(keyed, tmp_path):
    text = b"# Upload notes\n\nThe quokkaflux valve must be closed before the pump starts.\n"
    for simple in ("text/plain", "multipart/form-data; boundary=x", None):  # what a page posts cross-site
        kind = {"Content-Type": simple} if simple else {}
        status, _, _ = call(keyed, "POST", "/web/api/upload?name=simple.md", {"Authorization": f"Bearer {KEY}", **kind},
                            text)
        assert status == 415, (simple, status)
    auth = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/octet-stream"}
    status, _, data = call(keyed, "POST", "/web/api/upload?name=../../escape.md", auth, text)
    assert status == 200, data  # the name is cut to its last part: the file lands in the folder
    assert (keyed.uploads / "escape.md").read_bytes() == text
    report = json.loads(data)
    assert [r["status"] for r in report] == ["added"] and report[0]["passages"] >= 1, report
    status, _, data = call(keyed, "POST", "/search", {**auth, "Content-Type": "application/json"},
                           json.dumps({"query": "quokkaflux valve", "k": 1}).encode())
    assert status == 200 and "quokkaflux" in json.loads(data)[0]["text"]  # searchable at once
    status, _, data = call(keyed, "POST", "/web/api/upload?name=escape.md", auth, text)
    assert status == 400 and "already" in json.loads(data)["error"]["message"]
    status, _, data = call(keyed, "POST", "/web/api/upload?name=run.sh", auth, b"echo hi")
    assert status == 400
    assert sorted(p.name for p in keyed.uploads.iterdir()) == ["escape.md"]  # no partial file left behind


def test_a_missing_passage_or_page_is_a_json_404(keyed):
    auth = {"Authorization": f"Bearer {KEY}"}
    for path in ("/web/api/passages/999999", "/web/api/passages/999999/page.png", "/web/api/conversations/42"):
        status, _, data = call(keyed, "GET", path, auth)
        assert status == 404 and json.loads(data)["error"]["code"] == 5, (path, data)
    status, _, data = call(keyed, "GET", "/web/api/passages/abc", auth)
    assert status == 400


def test_a_text_book_shows_its_section_and_errors_name_no_server_path(keyed):
    """A Markdown book has no page image: its passage comes in its section's text; a message never
    carries the server's folders or a command-line flag."""
    auth = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/octet-stream"}
    text = (b"# Valve care\n\n## Closing\n\nThe zorblat valve is closed by hand before the pump starts.\n\n"
            b"Then the zorblat gauge is read twice.\n\n## Opening\n\nOpen it slowly.\n")
    status, _, data = call(keyed, "POST", "/web/api/upload?name=valve.md", auth, text)
    assert status == 200, data
    get = {"Authorization": f"Bearer {KEY}"}
    hits = json.loads(call(keyed, "GET", "/web/api/search?q=zorblat+valve&k=1", get)[2])
    pid = hits[0]["passage_id"]
    info = json.loads(call(keyed, "GET", f"/web/api/passages/{pid}", get)[2])
    assert info["format"] == "md"
    section = json.loads(call(keyed, "GET", f"/web/api/passages/{pid}/section", get)[2])
    assert section["format"] == "md" and section["file_status"] == "ok"
    assert "zorblat valve is closed" in section["parts"][section["at"]]["text"]
    assert not any("Open it slowly" in p["text"] for p in section["parts"])  # another section
    status, headers, body = call(keyed, "GET", f"/web/api/passages/{pid}/file", get)
    assert status == 200 and headers["content-disposition"].startswith("attachment") and body == text
    status, _, data = call(keyed, "GET", f"/web/api/passages/{pid}/page.png", get)
    message = json.loads(data)["error"]["message"]
    assert status >= 400 and str(keyed.uploads) not in message and "--" not in message, message
    status, _, data = call(keyed, "POST", "/web/api/upload?name=valve.md", auth, text)
    message = json.loads(data)["error"]["message"]
    assert status == 400 and str(keyed.uploads) not in message and "/" not in message, message


def test_conversations_are_renamed_and_deleted(keyed):
    auth = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    status, _, data = call(keyed, "POST", "/web/api/ask", auth, json.dumps({"question": "what is a craniotomy?"}).encode())
    assert status == 200 and b"event: done" in data
    cid = json.loads(data.split(b"event: done\ndata: ", 1)[1].split(b"\n", 1)[0])["conversation_id"]
    status, _, data = call(keyed, "POST", f"/web/api/conversations/{cid}/rename", auth,
                           json.dumps({"title": "  Skull   surgery "}).encode())
    assert status == 200 and json.loads(data)["title"] == "Skull surgery"
    rows = json.loads(call(keyed, "GET", "/web/api/conversations", auth)[2])
    assert [r["title"] for r in rows if r["id"] == cid] == ["Skull surgery"]
    assert call(keyed, "POST", f"/web/api/conversations/{cid}/rename", auth, b'{"title": " "}')[0] == 400
    assert call(keyed, "POST", f"/web/api/conversations/{cid}/delete", auth, b"{}")[0] == 200
    assert call(keyed, "GET", f"/web/api/conversations/{cid}", auth)[0] == 404
    assert call(keyed, "POST", f"/web/api/conversations/{cid}/delete", auth, b"{}")[0] == 404
    session = json.loads(call(keyed, "GET", "/web/api/session", auth)[2])
    assert session["generating"] == 0


def test_a_failed_upload_is_removed_and_one_name_is_never_replaced(keyed):
    """7df4928: a failed upload kept its file (the retry said "already in"), and of two uploads of one
    name at once the slower replaced the file after the faster was ingested."""
    import threading

    auth = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/octet-stream"}
    for _ in range(2):  # the same failure twice: the first left nothing behind
        status, _, data = call(keyed, "POST", "/web/api/upload?name=broken.pdf", auth, b"%PDF-1.4 not a pdf at all")
        assert status == 200 and json.loads(data)[0]["status"] == "failed", data
        assert not (keyed.uploads / "broken.pdf").exists()
    texts = {n: f"# Race {n}\n\nThe {n} twin valve of the pump house is checked each morning.\n".encode()
             for n in ("first", "second")}
    answers = {}

    def send(n):
        answers[n] = call(keyed, "POST", "/web/api/upload?name=twins.md", auth, texts[n])

    threads = [threading.Thread(target=send, args=(n,)) for n in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    codes = sorted(a[0] for a in answers.values())
    assert codes == [200, 400], answers
    winner = next(n for n, a in answers.items() if a[0] == 200)
    assert (keyed.uploads / "twins.md").read_bytes() == texts[winner]  # the file is the book ingested
    assert "already in" in json.loads(next(a for a in answers.values() if a[0] == 400)[2])["error"]["message"]
