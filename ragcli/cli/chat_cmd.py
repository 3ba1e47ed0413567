"""chat: an interactive conversation in the terminal. Input and rendering only: each turn is one call of
`conversation.ask_turn`, shown by ask's own streaming renderer (cli/ask_cmd.py)."""
from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from ragcli.cli.ask_cmd import ContinueOpt, ConversationOpt, show_answer, show_standalone, stream_answer
from ragcli.cli.common import BookOpt, DbOpt, EmbedOpt, app, console, embedder_for, err, escape, handle_errors, open_db
from ragcli.cli.options import (
    max_tokens_help,
    CtxOpt, GpuOpt, ModelNameOpt, ModelOpt, RerankDepthOpt, RerankOpt, SeedOpt, TempOpt, ThreadsOpt, load_model,
    load_reranker, read_grammar,
)
from ragcli.errors import ModelError, RagcliError

# The library is imported inside the commands: `ragcli --help` imports every cli module and loads none of it.

HELP = """[bold]Commands[/]
  /sources      the passages of the last answer (cited ones first)
  /show S2      one passage of the last answer in full, with its page
  /help         this list
  /exit         leave (or Ctrl-D)
Ctrl-C stops an answer being written (it is not saved) and keeps the session.
A follow-up ("and what do I do about it?") is read with the conversation; the question it became is
shown dimmed. Every turn is saved: `ragcli conversations show ID`."""
PROMPT = "› "


@app.command()
@handle_errors
def chat(
    book: BookOpt = None,
    k: Annotated[int, typer.Option("-k", min=1, max=50, help="Passages to retrieve per question.")] = 10,
    no_expand: Annotated[bool, typer.Option("--no-expand", help="Search the questions' words only: no book "
                                            "terms, no rewrite.")] = False,
    rewrite: Annotated[bool, typer.Option("--rewrite", help="The model first rewrites each question into the "
                                          "books' words (slower; off by default).")] = False,
    evidence: Annotated[bool, typer.Option("--evidence", help="Show each sentence's supporting quote.")] = False,
    model: ModelOpt = None, model_name: ModelNameOpt = None, ctx: CtxOpt = None, threads: ThreadsOpt = None,
    gpu_layers: GpuOpt = None, seed: SeedOpt = None, temperature: TempOpt = None,
    max_tokens: Annotated[Optional[int], typer.Option("--max-tokens", help=max_tokens_help(), show_default=False)] = None,
    grammar_file: Annotated[Optional[str], typer.Option("--grammar-file", help="GBNF grammar that constrains "
                                                        "the answers (llama.cpp format).", show_default=False)] = None,
    rerank: RerankOpt = None, rerank_depth: RerankDepthOpt = None,
    cont: ContinueOpt = False, conversation: ConversationOpt = None,
    db: DbOpt = None, embed_model: EmbedOpt = None,
) -> None:
    """Talk with the books: ask, then ask follow-ups. Each answer streams as `ask` shows it, and the
    conversation is saved in the corpus file with every answer's sources."""
    from ragcli import ask as asking
    from ragcli import conversation as chats
    from ragcli.search.pipeline import check_scope

    conversation_id = None if conversation is None else chats.parse_id(conversation)
    conn = open_db(db, create=False)
    talk = chats.get(conn, conversation_id) if conversation_id is not None else (chats.latest(conn) if cont else None)
    check_scope(conn, book)
    embedder = embedder_for(conn, embed_model)
    chat_model, settings = load_model(model, ctx, threads, gpu_layers, seed, temperature, max_tokens, model_name)
    reranker, depth = load_reranker(rerank, rerank_depth, chat_model)
    grammar = read_grammar(grammar_file or settings.grammar_file)

    def options():
        return asking.AskOptions(k=k, book_ids=book, expand=not no_expand, rewrite=rewrite, max_tokens=settings.max_tokens,
                                 grammar=grammar, evidence=evidence, rerank_depth=depth,
                                 model_off=settings.model_off)

    out = console()
    where = f"conversation {talk.id} ({len(talk.turns)} turns)" if talk else "a new conversation"
    model_words = chat_model.name if chat_model is not None else "no model: extractive answers"
    out.print(f"[dim]ragcli chat · {where} · {model_words} · /help lists the commands, Ctrl-D leaves[/]",
              highlight=False)
    read = _reader([t.question for t in talk.turns] if talk else [])
    last = None
    while True:
        try:
            line = read()
        except KeyboardInterrupt:  # at the prompt: a fresh line, as a shell does
            continue
        except EOFError:
            break
        text = " ".join(line.split())  # a pasted question over several lines is one question
        if not text:
            continue
        if text.startswith("/"):
            if _command(out, text, last):
                break
            continue
        from ragcli.render.stream import AnswerStream

        stream = AnswerStream.for_model(chat_model, False, draft=True)

        def call(**callbacks):
            turn, answer = chats.ask_turn(conn, embedder, text, chat_model, options(), talk, reranker=reranker,
                                          on_standalone=lambda made: show_standalone(stream, made), **callbacks)
            return answer, turn

        try:
            answer, turn = stream_answer(stream, call)
        except KeyboardInterrupt:
            stream.finish_text()
            err("stopped: this answer is not saved")
            continue
        except Exception as exc:  # a turn's error ends the turn, not the session
            if not isinstance(exc, RagcliError):
                raise
            err(escape(str(exc)))
            continue
        try:
            show_answer(stream, answer, json_out=False, evidence=evidence, turn=turn)
        except Exception as exc:
            if not isinstance(exc, ModelError):
                raise
            err(escape(str(exc)))
        last = answer
        talk = chats.get(conn, turn.conversation_id)
    out.print("[dim]bye[/]" + (f"[dim] · `ragcli conversations show {talk.id}` reads it again[/]" if talk else ""),
              highlight=False)


def _reader(past: list[str]):
    """A function that reads one line: prompt_toolkit's line editor on a terminal (editing, history
    with the arrow keys, bracketed paste of several lines), plain lines from a pipe."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        def plain() -> str:
            line = sys.stdin.readline()
            if not line:
                raise EOFError
            return line
        return plain
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import InMemoryHistory

    history = InMemoryHistory()
    for q in past:
        history.append_string(q)
    session = PromptSession(history=history)
    return lambda: session.prompt(PROMPT)


def _command(out, text: str, last) -> bool:
    """Run a /command; True when the session ends."""
    from ragcli.render.answers import print_answer_sources, print_passage

    name, _, arg = text.partition(" ")
    name = name.lower()
    if name in ("/exit", "/quit"):
        return True
    if name == "/help":
        out.print(HELP, highlight=False)
    elif name in ("/sources", "/show") and last is None:
        err("no answer yet: ask a question first")
    elif name == "/sources":
        print_answer_sources(out, last)
    elif name == "/show":
        label = arg.strip().strip("[]").upper()
        found = next((s for s in last.sources if s.label == label), None)
        if found is None:
            labels = ", ".join(s.label for s in last.sources) or "none"
            err(escape(f"no source '{arg.strip()}' in the last answer (it has: {labels})"))
        else:
            print_passage(out, found)
    else:
        err(escape(f"unknown command {name}: /help lists them"))
    return False
