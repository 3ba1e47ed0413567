"""question -> expansion -> retrieval -> labelled prompt -> model (or extractive) -> validated answer."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from ragcli.answer import citations
from ragcli.answer import health
from ragcli.answer import prompt
from ragcli.answer import refusal
from ragcli.models.chat import Grammar, IncompleteReply
from ragcli.search.pipeline import SearchOptions, mode_for, no_context, other_language_notice, search
from ragcli.types import Answer, Expansion, HealthWarning, Source

ANSWER_TOKENS_RESERVE = 64


@dataclass
class AskOptions:
    k: int = 10  # as `ragcli eval` ranks them: the question's own top 5 pinned, the top 10 re-ranked
    book_ids: Optional[Sequence[str]] = None
    expand: bool = True
    feedback: bool = False  # pseudo-relevance feedback (search mode `feedback`): for topical questions
    max_tokens: int = 512
    show_prompt: bool = False
    grammar: Optional[Grammar] = None  # the user's --grammar-file, constraining the answer


def ask(conn, embedder, question: str, model=None, opts: Optional[AskOptions] = None,
        on_text: Optional[Callable[[str], None]] = None,
        on_expanded: Optional[Callable[[Expansion], None]] = None,
        on_phase: Optional[Callable[..., None]] = None,
        on_progress: Optional[Callable[[str, dict], None]] = None) -> Answer:
    """Answer `question` from the corpus. `on_text` receives validated text as it streams;
    `on_expanded` the expansion before retrieval runs; `on_phase(name)` each step as it starts
    (search, prompt); `on_progress(event, info)` the model's own progress."""
    opts = opts or AskOptions()
    phase = on_phase or (lambda *a, **k: None)
    phase("search" if model is None or not opts.expand else "rewrite")
    search_opts = SearchOptions(mode=mode_for(opts.expand, opts.feedback), k=opts.k, book_ids=opts.book_ids,
                                check_language=True)
    result = search(conn, embedder, question, search_opts, model=model, on_expanded=on_expanded)
    timings: dict[str, float] = dict(result.timings)
    if result.language:
        return Answer(question, None, "", "no_context", [], [], [], timings=timings,
                      notice=other_language_notice(result.language, "question", "ask"))
    sources = prompt.label_sources(result.hits)
    base = dict(question=question, expanded_query=result.expansion.shown)
    if no_context(result):
        return Answer(**base, answer="", status="no_context", citations=[], removed_citations=[],
                      sources=sources, timings=timings,
                      notice="the books do not seem to cover this; the nearest passages are listed")
    if model is None:
        return _extractive(embedder, question, sources, base, timings)
    phase("prompt")
    return _generate(model, question, sources, base, timings, opts, on_text, on_progress)


def _generate(model, question, sources, base, timings, opts, on_text, on_progress=None) -> Answer:
    budget = model.context_size - opts.max_tokens - ANSWER_TOKENS_RESERVE
    p = prompt.build(question, sources, model.count_tokens, budget)
    valid = {s.label for s in p.sources}
    stream = citations.StreamFilter(valid, *prompt.reference_maps(p.sources))
    monitor = health.Monitor(p.sources)
    t = time.perf_counter()
    pieces = []

    def emit(safe: str) -> None:
        pieces.append(safe)
        if safe and "first_token" not in timings:
            timings["first_token"] = time.perf_counter() - t
        if on_text and safe:
            on_text(safe)

    cut = None
    try:
        reply = model.chat(p.messages, max_tokens=opts.max_tokens, stream=True, constraint=opts.grammar,
                           on_progress=on_progress)
        for piece in reply:
            emit(stream.feed(monitor.feed(piece)))
            if monitor.stop:  # the model loops: stop generating now
                getattr(reply, "close", lambda: None)()
                break
    except IncompleteReply as exc:  # keep the part received, validated like the rest
        cut = exc
    emit(stream.feed(monitor.flush()))
    emit(stream.flush())
    timings["generation"] = time.perf_counter() - t
    timings["prompt_tokens"] = p.prompt_tokens
    timings.update({k: v for k, v in getattr(model, "stats", {}).items() if isinstance(v, (int, float))})
    text = "".join(pieces).strip()
    warnings = monitor.warnings(getattr(model, "stats", None), opts.max_tokens)
    if monitor.stop:
        text = health.drop_repeats(text)
    status = "answered"
    if refusal.is_refusal(text):  # in any wording: a status, never an answer with a support table
        status = "no_answer"
    elif not stream.citations:
        status = "unsupported"
    notice = None
    if p.dropped:
        notice = f"{len(p.dropped)} lower-ranked passage(s) left out to fit the model's context window"
    if cut is not None:
        status, notice = "incomplete", str(cut)
        warnings = health.merge([HealthWarning("stream_cut", f"the reply stopped before the model finished: {cut}")],
                                warnings)
    return Answer(**base, answer=text, status=status, citations=list(stream.citations),
                  removed_citations=list(stream.removed), sources=p.sources,
                  model=getattr(model, "params", None), timings=timings,
                  prompt=_render_prompt(p.messages) if opts.show_prompt else None, notice=notice,
                  warnings=warnings)


def _render_prompt(messages: list[dict]) -> str:
    return "\n\n".join(f"<{m['role']}>\n{m['content']}" for m in messages)


def _extractive(embedder, question, sources: list[Source], base, timings) -> Answer:
    """No model: the sentences that best answer the question, each with its label."""
    from ragcli.answer import extractive

    t = time.perf_counter()
    text, _ = extractive.answer(embedder, question, sources)
    # the same validation as a model's answer (the quoted sentences' own marks are already inert)
    checked = citations.validate(text, {s.label for s in sources}, *prompt.reference_maps(sources))
    timings["generation"] = time.perf_counter() - t
    return Answer(**base, answer=checked.text, status="extractive", citations=checked.citations,
                  removed_citations=checked.removed,
                  sources=sources, timings=timings,
                  notice="no model configured: extractive answer (set one with --model F.gguf or RAGCLI_MODEL)")


def cited_sources(answer: Answer) -> list[Source]:
    return [s for s in answer.sources if s.label in answer.citations]


