"""The one generation loop of ask and summary: labelled prompt -> model stream -> citation filter.

`generate` fits the sources into the model's window (`prompt.build`), streams the model's reply through
the health monitor (which stops a model that loops) and `citations.StreamFilter` (so no invalid citation
is ever passed on, even for a moment) and hands each validated piece to `on_text` as it comes.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

from ragcli.answer import citations
from ragcli.answer import health
from ragcli.answer import prompt
from ragcli.models.chat import Constraint, IncompleteReply
from ragcli.types import HealthWarning, RemovedCitation, Source

ANSWER_TOKENS_RESERVE = 64  # room kept free in the window besides the prompt and the reply
HALF_LABEL = re.compile(r"\s*\[[^\]]{0,12}$")  # an opened, unclosed label at the end of the text held back


@dataclass
class Generated:
    text: str  # validated, stripped
    citations: list[str]  # valid labels cited, in order of first use
    removed: list[RemovedCitation]
    prompt: prompt.Prompt  # messages, the sources in the prompt and those left out to fit
    timings: dict = field(default_factory=dict)  # first_token, generation (s), prompt_tokens, model stats
    cut: Optional[IncompleteReply] = None  # the reply stopped early: `text` is the part received
    warnings: list[HealthWarning] = field(default_factory=list)  # what the health monitor saw
    model_called: Optional[float] = None  # perf_counter when the model was called (the prompt laid out)
    first_text: Optional[float] = None  # perf_counter of the first validated text


def generate(model, question: str, sources: list[Source], *, max_tokens: int,
             constraint: Optional[Constraint] = None,
             instruction: str = prompt.ANSWER_INSTRUCTION,
             on_text: Optional[Callable[[str], None]] = None,
             on_progress: Optional[Callable[[str, dict], None]] = None,
             only: Optional[set] = None) -> Generated:
    """Prompt the model with `sources` under `instruction` and stream its validated reply.
    `on_progress(event, info)` receives the model's own progress (prompt processing, first token).
    `only`: the labels the answer may cite (the relevance judge's); every other label is removed."""
    t = time.perf_counter()
    budget = model.context_size - max_tokens - ANSWER_TOKENS_RESERVE
    p = prompt.build(question, sources, model.count_tokens, budget, instruction=instruction, only=only)
    timings: dict = {"prompt_build": time.perf_counter() - t}
    citable = [s for s in p.sources if only is None or s.label in only]
    stream = citations.StreamFilter({s.label for s in citable}, *prompt.reference_maps(citable))
    monitor = health.Monitor(p.sources, system_prompt=p.messages[0]["content"], question=question)
    pieces: list[str] = []
    marks: dict = {}
    t = time.perf_counter()

    def emit(safe: str) -> None:
        pieces.append(safe)
        if safe and "first_token" not in timings:
            marks["first"] = time.perf_counter()
            timings["first_token"] = marks["first"] - t
        if on_text and safe:
            on_text(safe)

    cut = None
    try:
        reply = model.chat(p.messages, max_tokens=max_tokens, stream=True, constraint=constraint,
                           on_progress=on_progress)
        try:
            for piece in reply:
                emit(stream.feed(monitor.feed(piece)))
                if monitor.stop:  # the model loops: stop generating now
                    break
        finally:  # also when a callback raises (a client gone): the engine stops at once
            getattr(reply, "close", lambda: None)()
    except IncompleteReply as exc:  # keep the part received, validated like the rest
        cut = exc
    tail = monitor.flush()
    if not monitor.stop:  # when it looped, what is still held (a label half written, "[S1") is the loop's
        emit(stream.feed(tail))
        rest = stream.flush()
        if cut is not None:  # a label the cut left half written ("It heals [S") is not text of the answer
            rest = HALF_LABEL.sub("", rest)
        emit(rest)
    timings["generation"] = time.perf_counter() - t
    timings["prompt_tokens"] = p.prompt_tokens
    timings.update({k: v for k, v in getattr(model, "stats", {}).items() if isinstance(v, (int, float))})
    text = "".join(pieces).strip()
    if monitor.stop:
        text = health.drop_repeats(text)
    warnings = monitor.warnings(getattr(model, "stats", None), max_tokens)
    warnings = health.merge(warnings, health.text_warnings(text))
    if health.repeats_question(text, question):
        warnings = health.merge(warnings, [HealthWarning("echo", "the answer only repeats the question")])
    if cut is not None:
        warnings = health.merge([HealthWarning("stream_cut", f"the reply stopped before the model finished: {cut}")],
                                warnings)
    return Generated(text, list(stream.citations), list(stream.removed), p, timings, cut, warnings,
                     model_called=t, first_text=marks.get("first"))
