"""`ragcli mcp` against a careless or hostile client: raw JSON-RPC lines over the real process's stdio
(what the SDK's client would never send), and the official client for the symlink escapes.

- Malformed lines, a non-JSON-RPC object, a lone surrogate: each answered with a JSON-RPC error (the
  request's id when it has one), the server answering the next request.
- Tool calls with out-of-range numbers or a NUL in a path: a tool error with ragcli's one-line
  message; nothing on stderr but log lines, never a traceback.
- Fuzzing: hypothesis draws tool calls with arbitrary JSON arguments for every tool the server lists
  (tools/list: a tool added later is fuzzed too), new examples every run (the seed printed on
  failure): each gets a reply with its id, none a traceback or "internal error".
- A request with a null id gets an error (not silence); argument types are strict (`true` is no
  passage id); a 5,000-character path is a one-line refusal.
- `ingest` of a folder with links leaving the allowed folder reads nothing outside it.
"""
from __future__ import annotations

import json
import os
import queue
import random
import shutil
import subprocess
import sys
import threading
import time

import pytest
from hypothesis import HealthCheck, given, seed, settings, strategies as st

from serve_helpers import ROOT, corpus_copy, server_env

TOOLS = ["search", "ask", "books", "summary_list", "summary_show", "read_passage", "ingest"]


class Rpc:
    """`python -m ragcli mcp ARGS` spoken to line by line."""

    def __init__(self, args: list, env: dict):
        self.proc = subprocess.Popen([sys.executable, "-m", "ragcli", "mcp", *map(str, args)], cwd=ROOT, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: queue.Queue = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(l.decode("utf-8", "replace") for l in self.proc.stderr),
                         daemon=True).start()
        self.next_id = 100
        reply = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                            "clientInfo": {"name": "test", "version": "0"}}, timeout=300)
        assert "result" in reply, reply
        self.send_raw(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))  # every line on stdout must be JSON

    def send_raw(self, line: bytes) -> None:
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def reply(self, timeout: float = 60) -> dict:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no reply in {timeout} s; stderr: {''.join(self.stderr)[-2000:]}") from None

    def request(self, method: str, params=None, timeout: float = 120) -> dict:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send_raw(json.dumps(message).encode())
        reply = self.reply(timeout)
        assert reply.get("id") == self.next_id, reply
        return reply

    def call(self, tool: str, arguments) -> dict:
        return self.request("tools/call", {"name": tool, "arguments": arguments})

    def close(self) -> str:
        self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        time.sleep(0.2)
        return "".join(self.stderr)


@pytest.fixture(scope="module")
def rpc(template_db, model_cache, tmp_path_factory):
    work = tmp_path_factory.mktemp("mcp-guard")
    db, inbox = corpus_copy(template_db, work, "inbox")
    server = Rpc(["--db", db, "--allow-ingest", inbox], server_env(model_cache, work / "home"))
    yield server
    server.close()


def text_of(reply: dict) -> str:
    return "".join(c.get("text", "") for c in reply["result"]["content"])


def test_malformed_lines_get_a_json_rpc_error_and_the_server_goes_on(rpc):
    for line, code in ((b"{", -32700), (b"not json at all", -32700), (b"[1, 2]", -32600),
                       (b'{"jsonrpc": "2.0", "id": 5}', -32600), (b"[" * 100_000 + b"]" * 100_000, -32700)):
        rpc.send_raw(line)
        reply = rpc.reply()
        assert reply["error"]["code"] == code and reply["id"] in (None, 5), (line[:40], reply)
    rpc.send_raw(b'{"jsonrpc": "2.0", "id": 77, "method": "tools/call", "params": {"name": "search", '
                 b'"arguments": {"query": "bone \\ud800"}}}')
    reply = rpc.reply()
    assert reply["id"] == 77 and reply["error"]["code"] == -32600 and "Unicode" in reply["error"]["message"]
    rpc.send_raw(b'{"jsonrpc": "2.0", "id": 78, "method": "tools/call", "params": 5}')
    assert rpc.reply()["id"] == 78
    assert "result" in rpc.request("tools/list")


@pytest.mark.parametrize("tool, arguments, words", [
    ("read_passage", {"passage_id": 10 ** 30}, "no passage with id"),
    ("summary_show", {"topic": "bleeding", "number": 10 ** 30}, "no summary number"),
    ("ingest", {"path": "a\x00b.pdf"}, "NUL"),
    ("search", {"query": "bone", "k": 10 ** 30}, "k must be between"),
    ("read_passage", {"passage_id": "abc"}, "`passage_id`"),
    ("read_passage", {"passage_id": True}, "`passage_id`"),
    ("search", {"query": "bone", "k": "3"}, "`k`"),
    ("summary_show", {"topic": "bleeding", "number": 1.0}, "`number`"),
    ("ingest", {"path": "a" * 5000 + ".pdf"}, "too long"),
    ("ingest", {"path": "/".join(["b" * 250] * 30)}, "too long"),
])
def test_tool_errors_are_one_line_results_and_no_traceback(rpc, tool, arguments, words):
    reply = rpc.call(tool, arguments)
    assert reply["result"]["isError"], reply
    message = text_of(reply)
    assert words in message and "\n" not in message and "Traceback" not in message, message
    assert "internal error" not in message, message  # 7df4928's long paths: "internal error: OSError: ... too long"
    assert not message.startswith("Error executing tool"), message  # ragcli's own line, as the CLI prints it
    assert "Traceback" not in "".join(rpc.stderr)
    assert all(line.startswith("ragcli mcp: ") for line in rpc.stderr if line.strip()), rpc.stderr[-5:]


ARGS = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.integers(min_value=-10 ** 40, max_value=10 ** 40),
                              st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20),
                              st.sampled_from(["\x00", "bone", "primer", "..", "/etc/hostname", "", "1", "hybrid",
                                               "a" * 5000, "\udcff.pdf", "sub", "x" * 300 + ".md", "~/x.pdf"])),
                    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner,
                                                                                         max_size=3)), max_leaves=8)
FIELDS = ["query", "question", "book", "k", "mode", "topic", "number", "passage_id", "neighbours", "path"]
CALL = st.tuples(st.sampled_from(TOOLS), st.one_of(st.dictionaries(st.sampled_from(FIELDS), ARGS, max_size=4), ARGS))


def test_a_request_with_a_null_id_gets_an_error(rpc):
    rpc.send_raw(b'{"jsonrpc": "2.0", "id": null, "method": "ping"}')
    reply = rpc.reply(30)
    assert reply["id"] is None and reply["error"]["code"] == -32600 and "null" in reply["error"]["message"]
    assert "result" in rpc.request("ping")


SEED = int(os.environ.get("RAGCLI_FUZZ_SEED") or random.SystemRandom().randrange(2 ** 32))


def test_fuzzed_tool_calls_always_get_a_reply_and_never_a_traceback(rpc):
    replies = {"result": 0, "error": 0}
    listed = [t["name"] for t in rpc.request("tools/list")["result"]["tools"]]
    assert set(listed) == set(TOOLS), listed  # every tool the server offers is drawn below
    fields = sorted({name for t in rpc.request("tools/list")["result"]["tools"]
                     for name in t["inputSchema"].get("properties", {})})
    call = st.tuples(st.sampled_from(listed), st.one_of(st.dictionaries(st.sampled_from(fields), ARGS, max_size=4),
                                                        ARGS))
    tools: dict[str, int] = {}

    @seed(SEED)
    @settings(max_examples=400, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(call)
    def one(call):
        tool, arguments = call
        reply = rpc.call(tool, arguments)
        tools[tool] = tools.get(tool, 0) + 1
        replies["result" if "result" in reply else "error"] += 1
        where = f"seed {SEED} (RAGCLI_FUZZ_SEED={SEED} repeats this run)"
        if "result" in reply and reply["result"].get("isError"):
            assert "Traceback" not in text_of(reply), (where, tool, arguments)
            assert "internal error" not in text_of(reply), (where, tool, arguments, text_of(reply))

    one()
    assert sum(replies.values()) >= 400, replies
    assert set(tools) == set(listed), tools
    assert "result" in rpc.request("tools/list")
    stderr = "".join(rpc.stderr)
    assert "Traceback" not in stderr and "internal error" not in stderr, (SEED, stderr[-3000:])
    print(f"mcp fuzz (seed {SEED}): {replies}, per tool {tools}")


def test_mcp_ingest_reads_nothing_through_links_leaving_the_allowed_folder(mcp_escape):
    rpc, allowed = mcp_escape
    for path in ("sub", ".", ""):
        reply = rpc.call("ingest", {"path": path})
        assert not reply["result"]["isError"], reply
        report = json.loads(text_of(reply))
        read = [r["path"] for r in report if r["status"] != "skipped"]
        assert not any(name in p for p in read for name in ("host.html", "link-out", "outdir", "secret")), report
        skipped = {r["path"].rsplit("/", 1)[-1] for r in report if r["status"] == "skipped"}
        assert {"host.html", "link-out.pdf", "outdir"} <= skipped, report
    reply = rpc.call("ingest", {"path": "sub/link-out.pdf"})
    assert reply["result"]["isError"] and "is outside" in text_of(reply)
    hits = json.loads(text_of(rpc.call("search", {"query": "hostname-secret-words", "mode": "lexical"})))
    assert not any("hostname-secret-words" in h["text"] for h in hits)
    books = json.loads(text_of(rpc.call("books", {})))
    assert not any("secret" in (b.get("path") or "") for b in books), books


@pytest.fixture
def mcp_escape(template_db, model_cache, tmp_path):
    from test_paths import escapes

    db = tmp_path / "corpus.db"
    shutil.copyfile(template_db["path"], db)
    allowed, _ = escapes(tmp_path)
    server = Rpc(["--db", db, "--allow-ingest", allowed], server_env(model_cache, tmp_path / "home"))
    yield server, allowed
    stderr = server.close()
    assert "Traceback" not in stderr
