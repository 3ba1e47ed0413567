"""summary new / list / show / topics: numbered topic summaries kept in the corpus file."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from ragcli.cli.common import (
    BookOpt, DbOpt, EmbedOpt, FeedbackOpt, JsonOpt, app, console, embedder_for, handle_errors, info, open_db, warn,
)
from ragcli.cli.options import (
    max_tokens_help,
    CtxOpt, GpuOpt, ModelNameOpt, ModelOpt, RerankDepthOpt, RerankOpt, SeedOpt, TempOpt, ThreadsOpt, load_model,
    load_reranker, read_grammar,
)
from ragcli.config import SUMMARY_MAX_TOKENS
from ragcli.errors import NotFoundError, UsageError

# The library is imported inside the commands: `ragcli --help` imports every cli module and loads none of it.

summary_app = typer.Typer(rich_markup_mode=None, 
    no_args_is_help=True,
    help="Numbered summaries of a topic, generated from the books and kept in the corpus file.",
)
app.add_typer(summary_app, name="summary")

MaxTokOpt = Annotated[Optional[int], typer.Option("--max-tokens", show_default=False,
                                                 help=max_tokens_help("summary", SUMMARY_MAX_TOKENS))]
GrammarOpt = Annotated[Optional[str], typer.Option("--grammar-file", show_default=False,
                                                  help="GBNF grammar constraining the summary (llama.cpp).")]
TopicArg = Annotated[str, typer.Argument(help="The topic, e.g. aneurysms (quote several words). "
                                         "Case, extra spaces and end punctuation do not matter.")]


@summary_app.command("new")
@handle_errors
def summary_new(
    topic: TopicArg,
    book: BookOpt = None,
    k: Annotated[int, typer.Option("-k", min=1, max=50, help="Passages to retrieve.")] = 16,
    no_expand: Annotated[bool, typer.Option("--no-expand", help="Do not expand the topic.")] = False,
    feedback: FeedbackOpt = False,
    model: ModelOpt = None, model_name: ModelNameOpt = None, ctx: CtxOpt = None, threads: ThreadsOpt = None,
    gpu_layers: GpuOpt = None, seed: SeedOpt = None, temperature: TempOpt = None, max_tokens: MaxTokOpt = None,
    grammar_file: GrammarOpt = None,
    keep_weak: Annotated[bool, typer.Option("--keep-weak", help="Save the summary even when it is cut off, "
                                            "loops, or most of its sentences lack support.")] = False,
    rerank: RerankOpt = None, rerank_depth: RerankDepthOpt = None,
    db: DbOpt = None, json_out: JsonOpt = False, embed_model: EmbedOpt = None,
) -> None:
    """Generate a summary of TOPIC from the books and save it as the topic's next number (not
    when its health is bad, unless --keep-weak)."""
    from ragcli import summary as core
    from ragcli.render.data import print_json, summary_data
    from ragcli.render.stream import AnswerStream
    from ragcli.render.summaries import print_summary
    from ragcli.search.pipeline import check_scope

    core.normalise_topic(topic)  # an empty topic fails before any model is loaded
    conn = open_db(db, create=False)
    check_scope(conn, book)  # before the model loads
    embedder = embedder_for(conn, embed_model)
    chat_model, settings = load_model(model, ctx, threads, gpu_layers, seed, temperature, max_tokens, model_name)
    reranker, depth = load_reranker(rerank, rerank_depth, chat_model)
    opts = core.SummaryOptions(k=k, book_ids=book, expand=not no_expand, feedback=feedback,
                               max_tokens=max_tokens or max(settings.max_tokens, core.MAX_TOKENS),
                               grammar=read_grammar(grammar_file or settings.grammar_file), keep_weak=keep_weak, rerank_depth=depth)
    stream = AnswerStream.for_model(chat_model, json_out, markdown=True)
    refused = None
    try:
        result = core.new(conn, embedder, topic, chat_model, opts, on_text=stream.on_text,
                          on_phase=stream.phase, on_progress=stream.on_progress, reranker=reranker)
    except core.NotSaved as exc:
        refused, result = too_small(exc, chat_model), exc.summary
    except NotFoundError:  # the model said the passages say nothing of it: its streamed words are no summary
        stream.withdraw()
        raise
    finally:
        stream.finish_text()
    if json_out:  # the status agrees with the exit code: a summary not saved is not "ok"
        data = summary_data(result)
        if refused is not None:
            data = {**data, "status": "not_saved", "health": data.get("status"), "reason": str(refused)}
        print_json({**data, "saved": refused is None})
    else:
        print_summary(stream.console, result, streamed=stream.live, saved=refused is None)
    for removed in result.removed_citations:  # after the summary, never inside it
        warn(f"removed citation {removed.text!r}: {removed.reason}")
    if refused is not None:
        raise refused


# parameters: on the sample book the 0.5B wrote "## Heading / ## Bullet 1 ...", the 1.5B copied passages
# under "## Heading" until it looped; neither summary was saved (docs/benchmarks/terminal.md)
SMALL_FOR_SUMMARY = 2.0e9


def too_small(refused, chat_model):
    """A summary not saved by a model under SMALL_FOR_SUMMARY parameters: the one line says the model is
    too small to write one and what does (a larger model, or the books' own sentences)."""
    from ragcli.models.gguf import gguf_facts
    from ragcli.summary import NotSaved

    params = getattr(chat_model, "params", None) or {}
    if params.get("backend") != "llama.cpp" or not params.get("path"):
        return refused
    try:
        count = gguf_facts(params["path"]).get("parameters") or 0
    except Exception:  # noqa: BLE001 - the header was read when the model loaded; no count, no claim
        return refused
    if not 0 < count < SMALL_FOR_SUMMARY:
        return refused
    why = str(refused).removeprefix("not saved: ").split(" (`--keep-weak`")[0]
    return NotSaved(f"not saved: this model ({count / 1e9:.1f}B parameters) is likely too small to write a summary "
                    f"({why}); `--model none` saves the books' own sentences, `--keep-weak` keeps this one",
                    refused.summary)


@summary_app.command("list")
@handle_errors
def summary_list(topic: TopicArg, db: DbOpt = None, json_out: JsonOpt = False) -> None:
    """The saved summaries of TOPIC: number, date, model, books, sources, stale or not."""
    from ragcli import summary as core
    from ragcli.render.data import print_json, summary_list_data
    from ragcli.render.summaries import summaries_table

    conn = open_db(db, create=False)
    key, found = core.history(conn, topic)
    if json_out:
        print_json(summary_list_data(" ".join(topic.split()), key, found))
    elif not found:
        info(f"no summaries of '{' '.join(topic.split())}' yet: make one with "
             f"`ragcli summary new \"{' '.join(topic.split())}\"`")
    else:
        console().print(summaries_table(found))


@summary_app.command("show")
@handle_errors
def summary_show(
    topic: TopicArg,
    number: Annotated[Optional[int], typer.Argument(min=1, show_default=False, help="Summary number "
                                                    "(see `ragcli summary list TOPIC`; default: the latest).")] = None,
    output: Annotated[str, typer.Option("--format", metavar="text|markdown", help="text (the default), or "
                                        "markdown: a document with footnote sources, for notes.")] = "text",
    db: DbOpt = None, json_out: JsonOpt = False,
) -> None:
    """Print a saved summary (the latest unless NUMBER is given) and its sources (no model needed);
    says when its sources changed."""
    from ragcli import summary as core
    from ragcli.render.data import print_json, summary_data
    from ragcli.render.summaries import print_summary

    if output not in ("text", "markdown"):
        raise UsageError(f"unknown format '{output}' (choose from text, markdown)")
    conn = open_db(db, create=False)
    result = core.get(conn, topic, number)
    if json_out:
        print_json(summary_data(result))
    elif output == "markdown":
        from ragcli.render.markdown import summary_markdown

        console().print(summary_markdown(result), markup=False, highlight=False, end="")
    else:
        print_summary(console(), result)


@summary_app.command("topics")
@handle_errors
def summary_topics(db: DbOpt = None, json_out: JsonOpt = False) -> None:
    """Every topic with its number of summaries and the latest date."""
    from ragcli import summary as core
    from ragcli.render.data import print_json, topics_data
    from ragcli.render.summaries import topics_table

    rows = core.topics(open_db(db, create=False))
    if json_out:
        print_json(topics_data(rows))
    elif not rows:
        info("no summaries yet: make one with `ragcli summary new TOPIC`")
    else:
        console().print(topics_table(rows))


@summary_app.command("delete")
@handle_errors
def summary_delete(
    topic: TopicArg,
    number: Annotated[int, typer.Argument(min=1, help="Summary number (see `ragcli summary list TOPIC`).")],
    db: DbOpt = None, json_out: JsonOpt = False,
) -> None:
    """Delete summary NUMBER of TOPIC. The other summaries keep their numbers, and the number is
    never given to a new summary."""
    from ragcli import summary as core
    from ragcli.render.data import print_json

    conn = open_db(db, create=False)
    core.delete(conn, topic, number)
    if json_out:
        print_json({"deleted": {"topic": " ".join(topic.split()), "number": number}})
    else:
        info(f"deleted summary #{number} of '{' '.join(topic.split())}'")
