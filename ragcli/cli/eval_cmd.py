"""eval retrieval: nDCG@10, Recall@10/100, MRR@10 (and hit@1/5 for page sets) per mode."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from ragcli.cli.common import BookOpt, DbOpt, EmbedOpt, JsonOpt, app, console, embedder_for, handle_errors, open_db, path_arg
from ragcli.cli.options import JudgeModelOpt, ModelNameOpt, RerankDepthOpt, RerankOpt, judge_loader, load_reranker

# The library is imported inside the commands: `ragcli --help` imports every cli module and loads none of it.

eval_app = typer.Typer(rich_markup_mode=None, no_args_is_help=True, help="Measure retrieval on your own test set.")
app.add_typer(eval_app, name="eval")


@eval_app.command("retrieval")
@handle_errors
def retrieval(
    queries: Annotated[str, typer.Option("--queries", "-q", help="BEIR queries.jsonl, or a JSONL of "
                                         "{question, book, pages} (physical pages).")],
    qrels: Annotated[Optional[str], typer.Option("--qrels", help="BEIR qrels TSV (query-id, corpus-id, "
                                                 "score); omit for page-set questions.")] = None,
    mode: Annotated[Optional[list[str]], typer.Option("--mode", "-m", help="lexical | dense | hybrid | "
                                                      "expanded | feedback (repeat; default: all five).")] = None,
    k: Annotated[Optional[int], typer.Option("--k", min=10, max=2000, help="Passages retrieved per query "
                                             "(default: 300 for BEIR, 20 for page sets).")] = None,
    book: BookOpt = None,
    per_query: Annotated[bool, typer.Option("--per-query", help="With --json: every query's scores.")] = False,
    rerank: RerankOpt = None,
    rerank_depth: RerankDepthOpt = None,
    model: JudgeModelOpt = None,
    model_name: ModelNameOpt = None,
    db: DbOpt = None,
    json_out: JsonOpt = False,
    embed_model: EmbedOpt = None,
) -> None:
    """Score the corpus's retrieval against known answers, one column per mode."""
    from ragcli import evaluate
    from ragcli.render.data import eval_data, print_json
    from ragcli.render.terminal import eval_table
    from ragcli.search.options import MODES, check_mode

    modes = [check_mode(m) for m in dict.fromkeys(mode or MODES)]
    conn = open_db(db, create=False)
    qs = evaluate.load_queries(path_arg(queries), path_arg(qrels) if qrels else None)
    embedder = embedder_for(conn, embed_model) if modes != ["lexical"] else None
    reranker, depth = load_reranker(rerank, rerank_depth, chat_loader=judge_loader(model, model_name))
    report = evaluate.run_eval(conn, embedder, qs, modes, book, k, keep_ranked=10 if per_query else 0,
                               reranker=reranker, rerank_depth=depth)
    if json_out:
        print_json(eval_data(report, per_query))
    else:
        console().print(eval_table(report))
