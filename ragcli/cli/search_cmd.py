"""search: hybrid retrieval, no model needed."""
from __future__ import annotations

from typing import Annotated

import typer

from ragcli.cli.common import (
    BookOpt, DbOpt, EmbedOpt, JsonOpt, VerboseOpt, app, console, embedder_for, handle_errors, info, open_db,
)
from ragcli.cli.options import JudgeModelOpt, ModelNameOpt, RerankDepthOpt, RerankOpt, judge_loader, load_reranker
from ragcli.errors import UsageError

# The library is imported inside the commands: `ragcli --help` imports every cli module and loads none of it.


@app.command()
@handle_errors
def search(
    query: Annotated[str, typer.Argument(help="What to look for, in any words.")],
    book: BookOpt = None,
    k: Annotated[int, typer.Option("-k", min=1, max=1000, help="How many hits.")] = 10,
    mode: Annotated[str, typer.Option(help="hybrid | dense | lexical | expanded (the book's own terms "
                                      "join, as in ask) | feedback (expanded + pseudo-relevance feedback)")] = "hybrid",
    rerank: RerankOpt = None,
    rerank_depth: RerankDepthOpt = None,
    model: JudgeModelOpt = None,
    model_name: ModelNameOpt = None,
    verbose: VerboseOpt = False,
    db: DbOpt = None,
    json_out: JsonOpt = False,
    embed_model: EmbedOpt = None,
) -> None:
    """Find passages and figures by meaning and by word."""
    from ragcli.render.data import hits_data, print_json
    from ragcli.render.hits import print_hits
    from ragcli.search.pipeline import SearchOptions, check_scope, search as run_search

    if not query.strip():  # before any work
        raise UsageError("the query is empty: give a few words, e.g. `ragcli search tourniquet`")
    SearchOptions(mode=mode)  # an unknown mode fails before any work
    conn = open_db(db, create=False)
    check_scope(conn, book)  # before the embedding model loads
    embedder = embedder_for(conn, embed_model) if mode != "lexical" else None
    reranker, depth = load_reranker(rerank, rerank_depth, chat_loader=judge_loader(model, model_name))
    opts = SearchOptions(mode=mode, k=k, book_ids=book, rerank_depth=depth)
    result = run_search(conn, embedder, query, opts, reranker=reranker)
    if json_out:
        print_json(hits_data(result.hits))
    elif not result.hits:
        info("no passage matches; try other words or --mode dense")
    else:
        print_hits(console(), result.hits, query, verbose)
