"""`ragcli mcp`: the official `mcp` SDK's client talks to a real `python -m ragcli mcp` over stdio,
with the tiny llama.cpp model forced by a grammar to write one valid and one invalid citation."""
from __future__ import annotations

import asyncio
import json
import shutil

import pytest

from serve_helpers import ROOT, server_env

FORCED = "The bone flap is lifted [S1]. Edema follows [S19] (p. 45)."
READ_ONLY_TOOLS = {"search", "ask", "books", "summary_list", "summary_show", "read_passage"}


def session_run(args: list, env: dict, body):
    """Start `ragcli mcp ARGS`, open a client session, run `await body(session)`, close."""
    import sys

    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "ragcli", "mcp", *map(str, args)],
                                   env=env, cwd=str(ROOT))

    async def main():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await body(session)

    return asyncio.run(asyncio.wait_for(main(), 600))


def text_of(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def data_of(result):
    assert not result.is_error, text_of(result)
    return json.loads(text_of(result))


@pytest.fixture
def mcp_setup(template_db, tiny_gguf, model_cache, tmp_path):
    from ragcli.models.grammars import forced_text_grammar

    db = tmp_path / "corpus.db"
    shutil.copyfile(template_db["path"], db)
    grammar = tmp_path / "forced.gbnf"
    grammar.write_text(forced_text_grammar(FORCED))
    args = ["--db", db, "--model", tiny_gguf, "--ctx", "2048", "--max-tokens", "160", "--grammar-file", grammar]
    return args, server_env(model_cache, tmp_path / "home"), db


def test_tools_search_ask_and_errors_over_stdio(mcp_setup, fingerprint):
    args, env, db = mcp_setup
    before = fingerprint(db)

    async def body(session):
        out = {"tools": {t.name: t for t in (await session.list_tools()).tools}}
        out["search"] = await session.call_tool("search", {"query": "bone flap", "k": 3, "book": ["primer"]})
        out["ask"] = await session.call_tool("ask", {"question": "what is a craniotomy?", "book": ["primer"]})
        out["books"] = await session.call_tool("books", {})
        hit = json.loads(text_of(out["search"]))[0]
        out["read"] = await session.call_tool("read_passage", {"passage_id": hit["passage_id"], "neighbours": 1})
        out["topics"] = await session.call_tool("summary_list", {})
        out["no_summary"] = await session.call_tool("summary_show", {"topic": "aneurysms"})
        out["no_book"] = await session.call_tool("search", {"query": "bone", "book": ["nope"]})
        out["empty"] = await session.call_tool("ask", {"question": "  "})
        out["no_passage"] = await session.call_tool("read_passage", {"passage_id": 999999})
        out["ingest"] = await session.call_tool("ingest", {"path": "x.pdf"})
        return out

    out = session_run(args, env, body)
    tools = out["tools"]
    assert set(tools) == READ_ONLY_TOOLS, "read-only by default: no ingest tool"
    assert all(len(t.description) > 80 for t in tools.values()), "descriptions written for a model"
    assert "question" in tools["ask"].input_schema["properties"]

    hits = data_of(out["search"])
    assert len(hits) == 3 and all(h["book_id"] == "primer" for h in hits)
    for field in ("passage_id", "book_title", "section_path", "page_label", "text"):
        assert all(h[field] for h in hits), field

    answer = data_of(out["ask"])
    assert "[S1]" in answer["answer"]
    assert "S19" not in answer["answer"] and "(p. 45)" not in answer["answer"], "the invalid citation never arrives"
    assert {r["text"] for r in answer["removed_citations"]} >= {"[S19]", "(p. 45)"}
    assert {"status", "notice", "citations", "claims", "sources"} <= set(answer)
    s1 = next(s for s in answer["sources"] if s["label"] == "S1")
    assert s1["book_id"] == "primer" and s1["passage_id"] and s1["page_label"] and s1["section_path"]
    assert all(c["support"] for c in answer["claims"])

    assert {b["id"] for b in data_of(out["books"])} == {"primer", "faa", "malawi", "heart"}
    read = data_of(out["read"])
    assert read["passage_id"] == hits[0]["passage_id"] and read["text"] == hits[0]["text"]  # `ragcli show --json`
    assert len(read["before"]) <= 1 and len(read["after"]) <= 1 and (read["before"] or read["after"])
    assert data_of(out["topics"]) == []

    # errors: tool errors carrying the CLI's one-line message
    for key, message in [("no_summary", "no summaries of 'aneurysms' yet"),
                         ("no_book", "no book with id 'nope' (see `ragcli books`)"),
                         ("empty", "the question is empty"),
                         ("no_passage", "no passage with id 999999"),
                         ("ingest", "ingest")]:
        assert out[key].is_error, key
        assert message in text_of(out[key]), (key, text_of(out[key]))
    assert "Traceback" not in "".join(text_of(out[k]) for k in ("no_summary", "no_book", "empty"))
    assert fingerprint(db) == before, "read-only: the corpus is unchanged"


def test_allow_ingest_adds_ingest_for_the_folder_only(mcp_setup, tmp_path):
    from conftest import FIXTURE_PDFS

    args, env, db = mcp_setup
    allowed = tmp_path / "inbox"
    allowed.mkdir()
    shutil.copyfile(FIXTURE_PDFS["malawi"], allowed / "second.pdf")
    (allowed / "notes.md").write_text("# Field notes\n\n## Splints\n\n" + "A splint keeps a broken limb still "
                                      "while the casualty is moved to care. Pad it well and check the pulse. " * 6)
    outside = tmp_path / "elsewhere.pdf"
    shutil.copyfile(FIXTURE_PDFS["malawi"], outside)

    async def body(session):
        out = {"tools": {t.name for t in (await session.list_tools()).tools}}
        out["outside"] = await session.call_tool("ingest", {"path": str(outside)})
        out["escape"] = await session.call_tool("ingest", {"path": "../elsewhere.pdf"})
        out["inside"] = await session.call_tool("ingest", {"path": "second.pdf"})
        out["new"] = await session.call_tool("ingest", {"path": str(allowed / "notes.md")})
        out["books"] = await session.call_tool("books", {})
        return out

    out = session_run(args + ["--allow-ingest", allowed], env, body)
    assert out["tools"] == READ_ONLY_TOOLS | {"ingest"}
    for key in ("outside", "escape"):
        assert out[key].is_error and "is outside" in text_of(out[key]), text_of(out[key])
    same = data_of(out["inside"])
    assert [r["status"] for r in same] == ["unchanged"], same  # already in the corpus as "malawi"
    added = data_of(out["new"])
    assert [r["status"] for r in added] == ["added"], added
    assert len(data_of(out["books"])) == 5


def test_mcp_refuses_a_missing_corpus_in_one_line(run_module, tmp_path):
    result = run_module("mcp", "--db", tmp_path / "none.db", timeout=60)
    assert result.returncode == 4 and "no corpus at" in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == "", "stdout is the protocol channel"
