"""ask: expand -> retrieve -> labelled prompt -> llama.cpp (or extractive) -> validated, cited answer."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from ragcli.cli.common import (
    BookOpt, DbOpt, EmbedOpt, FeedbackOpt, JsonOpt, app, console, embedder_for, handle_errors, open_db, status, warn,
)


def model_options(model, ctx, threads, gpu_layers, seed, temperature, max_tokens, model_name=None):
    """Merge flags, RAGCLI_MODEL and the config file; load the model or connect to its server (None
    when none is configured)."""
    from ragcli import config
    from ragcli.models.factory import from_settings

    s = config.model_settings(path=model, name=model_name, n_ctx=ctx, threads=threads, gpu_layers=gpu_layers,
                              seed=seed, temperature=temperature, max_tokens=max_tokens)
    if not (s.path or s.url):
        return None, s
    from ragcli.models.openai_http import safe_url

    what = f"connecting to {safe_url(s.url)}" if s.url else f"loading the model {s.path}"
    with status(what):
        return from_settings(s), s


ModelOpt = Annotated[Optional[str], typer.Option("--model", "-m", help="Chat model: a GGUF file, an OpenAI-"
                                                 "compatible server URL (http://host:port/v1) or a profile of the "
                                                 "config file (default: $RAGCLI_MODEL, then the config file).",
                                                 show_default=False)]
ModelNameOpt = Annotated[Optional[str], typer.Option("--model-name", help="Which of the server's models to use "
                                                     "(default: the only one it serves).", show_default=False)]
CtxOpt = Annotated[Optional[int], typer.Option("--ctx", help="Context size in tokens (default 4096).",
                                               show_default=False)]
ThreadsOpt = Annotated[Optional[int], typer.Option("--threads", help="CPU threads for llama.cpp.", show_default=False)]
GpuOpt = Annotated[Optional[int], typer.Option("--gpu-layers", help="Layers to offload to a GPU (needs a GPU "
                                               "build of llama.cpp).", show_default=False)]
SeedOpt = Annotated[Optional[int], typer.Option("--seed", show_default=False, help="Sampling seed: the same "
                                                "seed, model and prompt give the same answer (default 0).")]
TempOpt = Annotated[Optional[float], typer.Option("--temperature", show_default=False, help="Sampling "
                                                  "temperature: 0 always takes the likeliest word (default 0.2).")]
FORMATS = ("text", "markdown")
FormatOpt = Annotated[str, typer.Option("--format", metavar="text|markdown", help="text (the default), or "
                                        "markdown: a document with footnote sources, for notes.")]
MaxTokOpt = Annotated[Optional[int], typer.Option("--max-tokens", help="Longest answer in tokens (default 512).",
                                                  show_default=False)]


@app.command()
@handle_errors
def ask(
    question: Annotated[str, typer.Argument(help="Your question, in your own words.")],
    book: BookOpt = None,
    k: Annotated[int, typer.Option("-k", min=1, max=50, help="Passages to retrieve.")] = 10,
    no_expand: Annotated[bool, typer.Option("--no-expand", help="Do not rewrite the question.")] = False,
    feedback: FeedbackOpt = False,
    show_prompt: Annotated[bool, typer.Option("--show-prompt", help="Print the exact prompt (stderr).")] = False,
    evidence: Annotated[bool, typer.Option("--evidence", help="Show each sentence's supporting quote.")] = False,
    verify: Annotated[bool, typer.Option("--verify", help="A second model pass checks each claim.")] = False,
    model: ModelOpt = None, model_name: ModelNameOpt = None, ctx: CtxOpt = None, threads: ThreadsOpt = None,
    gpu_layers: GpuOpt = None, seed: SeedOpt = None, temperature: TempOpt = None, max_tokens: MaxTokOpt = None,
    grammar_file: Annotated[Optional[str], typer.Option("--grammar-file", help="GBNF grammar that constrains "
                                                        "the answer (llama.cpp format).", show_default=False)] = None,
    output: FormatOpt = "text",
    db: DbOpt = None, json_out: JsonOpt = False, embed_model: EmbedOpt = None,
) -> None:
    """Answer a question from the books, citing only passages that were retrieved."""
    from ragcli import ask as core
    from ragcli.answer import health
    from ragcli.models.embed import MemoEmbedder
    from ragcli.render import data, terminal
    from ragcli.render.stream import AnswerStream
    from ragcli.search.pipeline import check_scope

    from ragcli.errors import UsageError

    if output not in FORMATS:
        raise UsageError(f"unknown format '{output}' (choose from {', '.join(FORMATS)})")
    if not question.strip():  # before any work: no corpus opened, no model loaded
        raise UsageError("the question is empty: ask in a few words, e.g. `ragcli ask \"how to stop bleeding\"`")
    conn = open_db(db, create=False)
    check_scope(conn, book)  # before the model loads
    embedder = MemoEmbedder(embedder_for(conn, embed_model))  # answer and claims share sentence vectors
    chat_model, settings = model_options(model, ctx, threads, gpu_layers, seed, temperature, max_tokens, model_name)
    stream = AnswerStream.for_model(chat_model, json_out or output != "text")
    opts = core.AskOptions(k=k, book_ids=book, expand=not no_expand, feedback=feedback,
                           max_tokens=settings.max_tokens,
                           show_prompt=show_prompt, grammar=read_grammar(grammar_file))
    try:
        answer = core.ask(conn, embedder, question, chat_model, opts, on_text=stream.on_text,
                          on_expanded=stream.on_expanded, on_phase=stream.phase, on_progress=stream.on_progress)
        stream.finish_text()
        if verify or evidence or answer.status in ("answered", "extractive"):
            stream.phase("verify" if verify and chat_model is not None else "claims")
            _assess(answer, embedder, chat_model, verify)
        health.finish(answer)
        if verify and health.verification_skipped(answer, chat_model is not None):
            answer.verification = {"skipped": health.verification_skipped(answer, chat_model is not None)}
    finally:
        stream.clear()
    answer.timings.update(stream.timings())
    if answer.prompt and show_prompt:
        console(stderr=True).print(answer.prompt, markup=False, highlight=False)
    if json_out:
        data.print_json(data.answer_data(answer))
    elif output == "markdown":
        from ragcli.render.markdown import answer_markdown

        stream.console.print(answer_markdown(answer), markup=False, highlight=False, end="")
    else:
        terminal.print_answer(stream.console, answer, streamed=stream.live, evidence=evidence)
    for removed in answer.removed_citations:  # after the answer, never inside it
        warn(f"removed citation {removed.text!r}: {removed.reason}")
    if any(w.code == "stream_cut" for w in answer.warnings):  # the part received was shown, validated
        from ragcli.errors import ModelError

        raise ModelError(answer.notice or "the model's reply was cut")


def read_grammar(path: Optional[str]):
    from ragcli.errors import UsageError
    from ragcli.models.chat import Grammar

    if not path:
        return None
    try:
        return Grammar(open(path, encoding="utf-8").read())
    except OSError as exc:
        raise UsageError(f"cannot read grammar file {path}: {exc.strerror}") from exc


def _assess(answer, embedder, chat_model, verify: bool) -> None:
    """Per-claim support, and the optional --verify pass."""
    from ragcli.answer import grounding

    grounding.assess(answer, embedder, chat_model if verify else None)
