"""ask: expand -> retrieve -> labelled prompt -> llama.cpp (or extractive) -> validated, cited answer."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from ragcli.cli.common import (
    BookOpt, DbOpt, EmbedOpt, FeedbackOpt, JsonOpt, app, console, embedder_for, handle_errors, info, open_db, warn,
)
from ragcli.cli.options import (max_tokens_help, 
    CtxOpt, GpuOpt, ModelNameOpt, ModelOpt, RerankDepthOpt, RerankOpt, SeedOpt, TempOpt, ThreadsOpt, load_model,
    load_reranker, read_grammar,
)
from ragcli.errors import ModelError, UsageError

# The library is imported inside the commands: `ragcli --help` imports every cli module and loads none of it.

FORMATS = ("text", "markdown")
FormatOpt = Annotated[str, typer.Option("--format", metavar="text|markdown", help="text (the default), or "
                                        "markdown: a document with footnote sources, for notes.")]
ContinueOpt = Annotated[bool, typer.Option("--continue", "-c", help="Continue the latest conversation: a "
                                           "follow-up is read with the turns before it; the turn is saved.")]
ConversationOpt = Annotated[Optional[str], typer.Option("--conversation", metavar="ID", show_default=False,
                                                        help="Continue conversation ID (`ragcli conversations "
                                                        "list`); the turn is saved.")]
NoLogOpt = Annotated[bool, typer.Option("--no-log", help="Do not save this ask (every ask is saved as a "
                                         "one-turn conversation that `ask -c` continues; `log = false` in the "
                                         "config file stops it for all).")]
MaxTokOpt = Annotated[Optional[int], typer.Option("--max-tokens", help=max_tokens_help(),
                                                  show_default=False)]


@app.command()
@handle_errors
def ask(
    question: Annotated[str, typer.Argument(help="Your question, in your own words.")],
    book: BookOpt = None,
    k: Annotated[int, typer.Option("-k", min=1, max=50, help="Passages to retrieve.")] = 10,
    no_expand: Annotated[bool, typer.Option("--no-expand", help="Search the question's words only: no book "
                                            "terms, no rewrite.")] = False,
    rewrite: Annotated[bool, typer.Option("--rewrite", help="The model first rewrites the question into the "
                                          "books' words (slower; off by default).")] = False,
    feedback: FeedbackOpt = False,
    show_prompt: Annotated[bool, typer.Option("--show-prompt", help="Print the exact prompt (stderr).")] = False,
    evidence: Annotated[bool, typer.Option("--evidence", help="Show each sentence's supporting quote.")] = False,
    verify: Annotated[bool, typer.Option("--verify", help="A second model pass checks each claim.")] = False,
    judge: Annotated[bool, typer.Option("--judge/--no-judge", help="The model first judges which passages "
                                        "answer the question; no passage: no answer (off by default: "
                                        "small models judge poorly, see docs/benchmarks.md).")] = False,
    model: ModelOpt = None, model_name: ModelNameOpt = None, ctx: CtxOpt = None, threads: ThreadsOpt = None,
    gpu_layers: GpuOpt = None, seed: SeedOpt = None, temperature: TempOpt = None, max_tokens: MaxTokOpt = None,
    grammar_file: Annotated[Optional[str], typer.Option("--grammar-file", help="GBNF grammar that constrains "
                                                        "the answer (llama.cpp format).", show_default=False)] = None,
    output: FormatOpt = "text",
    rerank: RerankOpt = None, rerank_depth: RerankDepthOpt = None,
    cont: ContinueOpt = False, conversation: ConversationOpt = None, no_log: NoLogOpt = False,
    db: DbOpt = None, json_out: JsonOpt = False, embed_model: EmbedOpt = None,
) -> None:
    """Answer a question from the books, citing only passages that were retrieved. Each ask is saved as a
    one-turn conversation (not with --no-log or `log = false`); with --continue or --conversation the
    question is the next turn of one: a follow-up is made a standalone question from the turns before
    it, and the turn is saved with its sources."""
    from ragcli import ask as core
    from ragcli import config
    from ragcli import conversation as chats
    from ragcli.render.stream import AnswerStream
    from ragcli.search.pipeline import check_scope

    if output not in FORMATS:
        raise UsageError(f"unknown format '{output}' (choose from {', '.join(FORMATS)})")
    if not question.strip():  # before any work: no corpus opened, no model loaded
        raise UsageError("the question is empty: ask in a few words, e.g. `ragcli ask \"how to stop bleeding\"`")
    conversation_id = None if conversation is None else chats.parse_id(conversation)
    conn = open_db(db, create=False)
    talk = None
    if conversation_id is not None:  # an unknown id fails here: nothing loaded, nothing written
        talk = chats.get(conn, conversation_id)
    elif cont:
        talk = chats.latest(conn)
        if talk is None:
            info("no conversation yet: this question starts one")
    check_scope(conn, book)  # before the model loads
    embedder = embedder_for(conn, embed_model)
    chat_model, settings = load_model(model, ctx, threads, gpu_layers, seed, temperature, max_tokens, model_name)
    reranker, depth = load_reranker(rerank, rerank_depth, chat_model)
    stream = AnswerStream.for_model(chat_model, json_out or output != "text", draft=True)
    opts = core.AskOptions(k=k, book_ids=book, expand=not no_expand, rewrite=rewrite, feedback=feedback,
                           max_tokens=settings.max_tokens, show_prompt=show_prompt,
                           grammar=read_grammar(grammar_file or settings.grammar_file), verify=verify, evidence=evidence, rerank_depth=depth,
                           judge=judge, model_off=settings.model_off)
    continued = talk is not None or cont
    log = not no_log and (continued or config.log_enabled())

    def call(**callbacks):  # a follow-up is saved with the answer; a plain ask after it is shown
        turn, answer = chats.ask_turn(conn, embedder, question, chat_model, opts, talk, reranker=reranker,
                                      on_standalone=lambda made: show_standalone(stream, made, continued),
                                      save=log and continued, **callbacks)
        return answer, turn
    answer, turn = stream_answer(stream, call)
    show_answer(stream, answer, json_out=json_out, output=output, evidence=evidence, show_prompt=show_prompt,
                turn=turn if continued else None)
    if log and not continued:
        save_plain_ask(conn, turn, opts.book_ids)


def save_plain_ask(conn, turn, book_ids) -> None:
    """A plain ask becomes a one-turn conversation (`ask -c` continues it). Saved after the answer is
    shown: a corpus that cannot be written (read-only, locked) costs the log, never the answer."""
    from ragcli import conversation as chats
    from ragcli.errors import CorpusError

    try:
        chats.save_turn(conn, turn, book_ids)
    except CorpusError as exc:
        warn(f"this ask was not saved as a conversation: {exc}")


def stream_answer(stream, call):
    """Run `call(on_text=..., on_expanded=..., on_phase=..., on_progress=...)` (ask, or a turn of a
    conversation; it returns (Answer, extra)) with `stream` showing it live. Returns what it returns."""
    try:
        answer, extra = call(on_text=stream.on_text, on_expanded=stream.on_expanded, on_phase=stream.phase,
                             on_progress=stream.on_progress)
        stream.finish_text()
    finally:
        stream.clear()
    if answer.status == "no_answer":  # a streamed draft that is not the answer does not stay above the verdict
        stream.withdraw()
    else:  # the dimmed draft gives way to the checked answer, printed in full
        stream.settle()
    answer.timings.update(stream.timings())
    return answer, extra


def show_standalone(stream, made, continued: bool = True) -> None:
    """The standalone question a follow-up became, dimmed on stderr before retrieval (not in --json);
    a question that refers back to nothing says so in one line (also with --json: it is stderr)."""
    from ragcli.followup import dangling_words
    from ragcli.render.conversations import standalone_line

    words = dangling_words(made, continued)
    if words:
        stream.clear()
        warn(words)
    if made.rewritten and not stream.json_out:
        stream.clear()
        stream.err.print(standalone_line(made.question), highlight=False)


def show_answer(stream, answer, *, json_out: bool, output: str = "text", evidence: bool = False,
                show_prompt: bool = False, turn=None) -> None:
    """The finished answer (JSON, Markdown or the terminal's), then removed citations on stderr.
    ModelError after it when the model's stream was cut."""
    from ragcli.render import answers, conversations, data

    if answer.prompt and show_prompt:
        console(stderr=True).print(answer.prompt, markup=False, highlight=False)
    if json_out:
        data.print_json(data.answer_data(answer) if turn is None else data.turn_data(turn, answer))
    elif output == "markdown":
        from ragcli.render.markdown import answer_markdown

        stream.console.print(answer_markdown(answer), markup=False, highlight=False, end="")
    else:
        answers.print_answer(stream.console, answer, streamed=stream.live and not stream.replaced,
                              evidence=evidence)
        if turn is not None and turn.number:
            console(stderr=True).print(conversations.turn_saved_line(turn), highlight=False)
    for removed in answer.removed_citations:  # after the answer, never inside it
        warn(f"removed citation {removed.text!r}: {removed.reason}")
    if any(w.code == "stream_cut" for w in answer.warnings):  # the part received was shown, validated
        raise ModelError(answer.notice or "the model's reply was cut")
