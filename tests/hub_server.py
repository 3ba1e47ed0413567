"""A Hugging Face Hub on 127.0.0.1 for `models pull` tests (HF_ENDPOINT points at it): the requests
huggingface_hub makes, answered as the Hub answers them.

- HEAD /{org}/{name}/resolve/{revision}/{file}: 200 with X-Repo-Commit, X-Linked-Etag (the file's
  sha256, as for a Git LFS file), X-Linked-Size, ETag, Content-Length; 404 with X-Error-Code
  EntryNotFound for a file the repository does not have;
- GET of the same: the bytes, or from a `Range: bytes=N-` with 206 and Content-Range;
- GET /api/models/{org}/{name}/tree/{revision}: the file list (HfApi.list_repo_files).

Faults, set per test: `cut_at` (the first GET sends that many bytes of a full Content-Length and
closes the connection), `stall_at` (the first GET sends that many bytes and then waits until released:
an interrupted pull), `hub_sha` (another sha256 in X-Linked-Etag, as a corrupt mirror would send),
`hub_size` (another size in X-Linked-Size: a file larger than any disk).
Hostile faults (issue 44): `etag` / `commit` (any text in X-Linked-Etag and ETag / X-Repo-Commit, a path
that climbs out of the cache say), `endless` (GET sends a chunked body that never ends), `ignore_range_cut`
(every GET answers 200 from byte 0, ignoring Range, and closes after that many bytes), `get_status` (GET
answers that status), `redirect` (GET answers 302 to that Location), `body` (GET sends these bytes
instead of the file's, under the file's declared size).
Every request is recorded in `requests` as (method, path, Range header).
"""
from __future__ import annotations

import hashlib
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Optional

COMMIT = "c0ffee" + "0" * 34


def write_catalogue(path: Path, sha: str, name: str = "tiny", title: str = "Tiny test model", extra: str = "") -> Path:
    """A model catalogue (RAGCLI_CATALOG, models/catalog.toml's form) whose one entry `name` is the tiny
    model as FakeHub serves it (repository tiny-org/Tiny-GGUF, file tiny.gguf) with sha256 `sha`;
    `extra`: more TOML after it."""
    path.write_text(f'''[[model]]
name = "{name}"
title = "{title}"
repo = "tiny-org/Tiny-GGUF"
file = "tiny.gguf"
revision = "main"
sha256 = "{sha}"
size_gb = 0.0004
memory_gb = 0.01
licence = "MIT"
measured = "not measured here"
{extra}''')
    return path


class FakeHub:
    def __init__(self, files: dict[str, bytes], repo: str = "tiny-org/Tiny-GGUF"):
        """files: {file name: bytes} of one repository `repo`."""
        self.repo, self.files = repo, files
        self.cut_at: Optional[int] = None
        self.stall_at: Optional[int] = None
        self.hub_sha: Optional[str] = None
        self.hub_size: Optional[int] = None  # another size in X-Linked-Size (a file larger than the disk)
        self.etag: Optional[str] = None
        self.commit: Optional[str] = None
        self.endless = False
        self.ignore_range_cut: Optional[int] = None
        self.get_status: Optional[int] = None
        self.redirect: Optional[str] = None
        self.body: Optional[bytes] = None
        self.plain: dict[str, bytes] = {}  # other paths served as plain files (no Hub headers): {path: bytes}
        self.requests: list[tuple[str, str, Optional[str]]] = []
        self.stalled = threading.Event()  # set when a stalled GET has sent its part
        self.release = threading.Event()
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_HEAD(self):
                hub.requests.append(("HEAD", self.path, self.headers.get("Range")))
                self._resolve(body=False)

            def do_GET(self):
                hub.requests.append(("GET", self.path, self.headers.get("Range")))
                if self.path.split("?")[0] == f"/api/models/{hub.repo}/tree/main":
                    import json

                    listing = [{"type": "file", "oid": "0" * 40, "size": len(data), "path": name}
                               for name, data in hub.files.items()] + [
                        {"type": "file", "oid": "1" * 40, "size": 5, "path": "README.md"}]
                    body = json.dumps(listing).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                self._resolve(body=True)

            def _resolve(self, body: bool):
                if self.path in hub.plain:
                    data = hub.plain[self.path]
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if body:
                        self.wfile.write(data)
                    return
                if body and hub.redirect is not None:
                    self.send_response(302)
                    self.send_header("Location", hub.redirect)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if body and hub.get_status is not None:
                    self.send_response(hub.get_status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                m = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", self.path.split("?")[0])
                if not m or m.group(1) != hub.repo:
                    self.send_response(404)
                    self.send_header("X-Error-Code", "RepoNotFound")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data = hub.files.get(m.group(3))
                if data is None:
                    self.send_response(404)
                    self.send_header("X-Error-Code", "EntryNotFound")
                    self.send_header("X-Repo-Commit", COMMIT)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                sha = hub.etag or hub.hub_sha or hashlib.sha256(data).hexdigest()
                start = 0
                rng = self.headers.get("Range")
                if body and rng and hub.ignore_range_cut is None:
                    start = int(re.match(r"bytes=(\d+)-", rng).group(1))
                self.send_response(206 if start else 200)
                self.send_header("X-Repo-Commit", hub.commit or COMMIT)
                self.send_header("X-Linked-Etag", f'"{sha}"')
                self.send_header("X-Linked-Size", str(hub.hub_size or len(data)))
                self.send_header("ETag", f'"{sha}"')
                self.send_header("Accept-Ranges", "bytes")
                if body and hub.endless:  # a chunked body that never ends
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    block = b"x" * 65536
                    try:
                        while True:
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(block), block))
                    except OSError:
                        self.close_connection = True
                        return
                if body and hub.body is not None:
                    data = hub.body
                if start:
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                self.send_header("Content-Length", str(len(data) - start))
                self.end_headers()
                if not body:
                    return
                part = data[start:]
                gets = sum(1 for r in hub.requests if r[0] == "GET" and "/resolve/" in r[1])
                if hub.ignore_range_cut is not None:  # every transfer: from byte 0, cut
                    self.wfile.write(part[:hub.ignore_range_cut])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                if gets == 1 and hub.cut_at is not None:  # the first transfer: cut by the server
                    self.wfile.write(part[:hub.cut_at])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                if gets == 1 and hub.stall_at is not None:  # the first transfer: hangs half-way
                    self.wfile.write(part[:hub.stall_at])
                    self.wfile.flush()
                    hub.stalled.set()
                    hub.release.wait(60)
                    self.close_connection = True
                    return
                self.wfile.write(part)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
