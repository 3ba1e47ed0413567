"""serve (OpenAI-compatible HTTP) and mcp (Model Context Protocol over stdio): load the corpus and
the models once, then hand them to ragcli/serve/."""
from __future__ import annotations

import os
from contextlib import nullcontext
from typing import Annotated, Optional

import typer

from ragcli.cli.common import DbOpt, EmbedOpt, app, embedder_for, handle_errors, open_db, path_arg, status
from ragcli.cli.options import (
    max_tokens_help,
    CtxOpt, GpuOpt, ModelNameOpt, ModelOpt, SeedOpt, TempOpt, ThreadsOpt, load_model, read_grammar,
)
from ragcli.errors import UsageError

# The library is imported inside the commands: `ragcli --help` imports every cli module and loads none of it.

MaxTokOpt = Annotated[Optional[int], typer.Option("--max-tokens", help=max_tokens_help(),
                                                  show_default=False)]
GrammarOpt = Annotated[Optional[str], typer.Option("--grammar-file", help="GBNF grammar that constrains every "
                                                   "answer (llama.cpp format).", show_default=False)]


def _library(db, embed_model, model, model_name, ctx, threads, gpu_layers, seed, temperature, max_tokens,
             grammar_file, copies: int, ingest_root=None):
    """The served Library: the corpus checked, the embedder and `copies` chat models loaded."""
    from ragcli import config
    from ragcli.serve.library import Library

    grammar = read_grammar(grammar_file)
    conn = open_db(db, create=False)  # a missing corpus is refused before any model loads
    embedder = embedder_for(conn, embed_model)
    conn.close()
    first, settings = load_model(model, ctx, threads, gpu_layers, seed, temperature, max_tokens, model_name)
    models = []
    if first is not None:  # one context per answer generated at once (llama.cpp's weights are mmapped: shared)
        from ragcli.models.factory import from_settings

        with status(f"preparing {copies - 1} more context(s) of the model") if copies > 1 else nullcontext():
            models = [first] + [from_settings(settings, fresh=True) for _ in range(copies - 1)]
    return Library(config.db_path(db), embedder, models, max_tokens=settings.max_tokens, grammar=grammar,
                   ingest_root=ingest_root)


def _ingest_root(allow_ingest: Optional[str]):
    """--allow-ingest FOLDER: an existing folder, or None (read-only)."""
    if not allow_ingest:
        return None
    root = path_arg(allow_ingest)
    if not root.is_dir():
        raise UsageError(f"--allow-ingest needs an existing folder: {root} is not one")
    return root


@app.command()
@handle_errors
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on. Anything but loopback needs --api-key.")]
    = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")] = 8088,
    api_key: Annotated[Optional[str], typer.Option("--api-key", metavar="KEY", show_default=False,
                                                   help="Require `Authorization: Bearer KEY` on every request. "
                                                   "Prefer setting $RAGCLI_SERVE_KEY: an option shows in "
                                                   "`ps`. Never logged.")] = None,
    allowed_host: Annotated[Optional[list[str]], typer.Option("--allowed-host", metavar="NAME", show_default=False,
                                                             help="Another name the server is reached by (the "
                                                             "Host header must be the bound address, or "
                                                             "localhost on loopback, or one of these). "
                                                             "Repeatable.")] = None,
    parallel: Annotated[int, typer.Option(min=1, max=16, help="Requests answered at once (one chat-model "
                                          "context each).")] = 1,
    queue: Annotated[int, typer.Option(min=0, max=1000, help="Requests waiting beyond --parallel; more are "
                                       "refused with 503.")] = 8,
    model: ModelOpt = None, model_name: ModelNameOpt = None, ctx: CtxOpt = None, threads: ThreadsOpt = None,
    gpu_layers: GpuOpt = None, seed: SeedOpt = None, temperature: TempOpt = None, max_tokens: MaxTokOpt = None,
    grammar_file: GrammarOpt = None, db: DbOpt = None, embed_model: EmbedOpt = None,
    allow_ingest: Annotated[Optional[str], typer.Option("--allow-ingest", metavar="FOLDER", show_default=False,
                                                        help="Let the page upload books: saved into FOLDER and "
                                                        "ingested (default: read-only).")] = None,
) -> None:
    """Serve the books over HTTP: a page at / (ask, the cited pages, conversations, summaries), an
    OpenAI-compatible /v1/chat/completions whose replies keep their citations, and /search, /ask,
    /books, /summaries with the same JSON as --json."""
    from ragcli.serve import http

    key = api_key or os.environ.get("RAGCLI_SERVE_KEY") or None
    http.check_bind(host, key)  # before anything loads
    root = _ingest_root(allow_ingest)
    library = _library(db, embed_model, model, model_name, ctx, threads, gpu_layers, seed, temperature,
                       max_tokens, grammar_file, copies=parallel, ingest_root=root)
    http.run(library, host, port, key, parallel, queue, allowed_host or [])


@app.command()
@handle_errors
def mcp(
    allow_ingest: Annotated[Optional[str], typer.Option("--allow-ingest", metavar="FOLDER", show_default=False,
                                                        help="Add the `ingest` tool, for files under FOLDER "
                                                        "only (default: read-only).")] = None,
    model: ModelOpt = None, model_name: ModelNameOpt = None, ctx: CtxOpt = None, threads: ThreadsOpt = None,
    gpu_layers: GpuOpt = None, seed: SeedOpt = None, temperature: TempOpt = None, max_tokens: MaxTokOpt = None,
    grammar_file: GrammarOpt = None, db: DbOpt = None, embed_model: EmbedOpt = None,
) -> None:
    """Serve the books to an assistant (Claude Desktop, Cursor, Zed, ...) as a Model Context Protocol
    server over stdio: search, ask, books, summaries, read_passage."""
    from ragcli.serve import mcp as server

    root = _ingest_root(allow_ingest)
    library = _library(db, embed_model, model, model_name, ctx, threads, gpu_layers, seed, temperature,
                       max_tokens, grammar_file, copies=1, ingest_root=root)
    server.run(library)
