"""topic -> numbered, saved summary: a thin pipeline over search and answer/.

The topic goes through the search pipeline (`search.pipeline.search`, expanded as a question is) and
more passages are retrieved than for a question (k=16); with a model, the
one generation loop of `answer.generate` (shared with ask) streams the summary through the citation
filter under `prompt.SUMMARY_INSTRUCTION`; without one, `answer.extractive.summary` picks key sentences
of the retrieved passages, grouped by section, each cited (kind "extractive"). `grounding.score` judges
each claim.

Everything is generated before anything is written; `store.summaries.insert_summary` then takes the next
number of the topic inside one BEGIN IMMEDIATE transaction.

A saved summary is stale when a source it cites is gone: its book was removed, or re-ingested with
different text. After `ingest --replace` passage ids change, so a source is also found again by book
id + text hash.
"""
from __future__ import annotations

import time
import unicodedata
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from ragcli.answer import extractive
from ragcli.answer import grounding
from ragcli.answer import health
from ragcli.answer import prompt
from ragcli.answer import refusal
from ragcli.answer.generate import generate as generate_text
from ragcli.config import SUMMARY_MAX_TOKENS
from ragcli.ingest.kinds import NOT_EXPOSITION, ONLY_NON_EXPOSITION
from ragcli.models.chat import Grammar
from ragcli.search.pipeline import SearchOptions, mode_for, no_context, other_language_notice, search
from ragcli.system_prompt import SUMMARY_PREFIX
from ragcli.store import calibration as calibrations
from ragcli.store import corpus as store
from ragcli.store import summaries as summary_store
from ragcli.errors import NotFoundError, RagcliError, UsageError
from ragcli.text import sha256
from ragcli.types import Source, Summary, SummarySource

DEFAULT_K = 16
MAX_TOKENS = SUMMARY_MAX_TOKENS

_STRIP_AT_ENDS = ("Po", "Pi", "Pf", "Pd", "Pc", "Zs")  # brackets only in pairs: "sah (sah)" stays
_PAIRS = {"(": ")", "[": "]", "{": "}"}


@dataclass
class SummaryOptions:
    k: int = DEFAULT_K
    book_ids: Optional[Sequence[str]] = None
    expand: bool = True
    feedback: bool = False  # pseudo-relevance feedback (search mode `feedback`)
    max_tokens: int = MAX_TOKENS
    grammar: Optional[Grammar] = None  # the user's --grammar-file, constraining the summary
    keep_weak: bool = False  # save it even when its health is bad (answer/health.py BAD)
    rerank_depth: int = 20  # hits a re-ranker model (`reranker`) re-scores, at least k


class NotSaved(RagcliError):
    """The generated summary's health is bad (cut off, looping, weak, unsupported): not saved.
    `summary` is what was generated (number 0)."""

    exit_code = 1

    def __init__(self, message: str, summary: Summary):
        super().__init__(message)
        self.summary = summary


def normalise_topic(topic: str) -> str:
    """The key that makes "Aneurysms", "aneurysms " and "aneurysms?" one topic: NFKC, casefolded,
    whitespace collapsed, punctuation stripped from both ends (a bracket only with its partner)."""
    key = " ".join(unicodedata.normalize("NFKC", topic).casefold().split())
    while True:
        before = key
        while key and unicodedata.category(key[0]) in _STRIP_AT_ENDS:
            key = key[1:]
        while key and unicodedata.category(key[-1]) in _STRIP_AT_ENDS:
            key = key[:-1]
        if len(key) >= 2 and _PAIRS.get(key[0]) == key[-1] and not set(key[1:-1]) & {key[0], key[-1]}:
            key = key[1:-1]
        if key == before:
            break
    if not key:
        raise UsageError("the topic is empty: give a few words, e.g. `ragcli summary new aneurysms`")
    return key


# -- generation ---------------------------------------------------------------------------------

def new(conn, embedder, topic: str, model=None, opts: Optional[SummaryOptions] = None,
        on_text: Optional[Callable[[str], None]] = None, on_phase: Optional[Callable[..., None]] = None,
        on_progress: Optional[Callable[[str, dict], None]] = None, reranker=None) -> Summary:
    """Generate a summary of `topic` and save it under the topic's next number. NotSaved when its
    health is bad, unless `opts.keep_weak`. `reranker`: a re-ranker model for the search."""
    opts = opts or SummaryOptions()
    summary = generate(conn, embedder, topic, model, opts, on_text, on_phase, on_progress, reranker=reranker)
    warnings = summary.params.get("warnings") or []
    if health.is_bad(warnings) and not opts.keep_weak:
        words = "; ".join(w["message"] for w in warnings if w["code"] in health.BAD)
        raise NotSaved(f"not saved: {words} (`--keep-weak` saves it anyway)", summary)
    summary_store.insert_summary(conn, summary)
    return summary


def generate(conn, embedder, topic: str, model=None, opts: Optional[SummaryOptions] = None,
             on_text: Optional[Callable[[str], None]] = None, on_phase: Optional[Callable[..., None]] = None,
             on_progress: Optional[Callable[[str, dict], None]] = None, reranker=None) -> Summary:
    """Generate (not save) a summary; its number is 0 until `summary_store.insert_summary`."""
    opts = opts or SummaryOptions()
    phase = on_phase or (lambda *a, **k: None)
    key = normalise_topic(topic)
    topic = " ".join(topic.split())
    search_opts = SearchOptions(mode=mode_for(opts.expand, opts.feedback), k=opts.k, book_ids=opts.book_ids,
                                check_language=True, rerank_depth=opts.rerank_depth, skip_kinds=NOT_EXPOSITION,
                                rewrite_prefix=SUMMARY_PREFIX)  # the summary call begins so: cache re-use
    result = search(conn, embedder, topic, search_opts, model=model, reranker=reranker, on_phase=phase)
    if result.language:
        raise NotFoundError(other_language_notice(result.language, "topic", "name it") + "; nothing saved")
    timings: dict[str, float] = dict(result.timings)
    exp = result.expansion
    cal = calibrations.for_corpus(conn)  # without a calibration only an empty retrieval is "nothing"
    if not result.hits or (cal is not None and no_context(result, cal.no_context)):
        raise NotFoundError(f"the books do not seem to cover '{topic}': nothing to summarise, nothing saved")
    sources = prompt.label_sources(result.hits)
    t = time.perf_counter()
    warnings: list = []
    if model is None:
        text, used = extractive.summary(embedder, topic, sources)
        kind, removed, shown = "extractive", [], sources
    else:
        phase("prompt")
        gen = generate_text(model, topic, sources, max_tokens=opts.max_tokens, constraint=opts.grammar,
                            instruction=prompt.SUMMARY_INSTRUCTION.format(topic=topic), on_text=on_text,
                            on_progress=on_progress)
        if gen.cut is not None:
            raise gen.cut  # a summary cut short is not saved
        text, used, removed, shown = gen.text, gen.citations, gen.removed, gen.prompt.sources
        warnings = gen.warnings
        kind = "generated"
    timings["generation"] = time.perf_counter() - t
    if not text or refusal.is_refusal(text):
        raise NotFoundError(f"the passages found say nothing usable about '{topic}': nothing saved")
    summary = Summary(topic=topic, topic_key=key, number=0, text=text,
                      sources=[saved_source(s, s.label in used) for s in shown],
                      model=None if model is None else {"name": model.name, **dict(model.params)},
                      created_at=store.now(), kind=kind, removed_citations=removed,
                      params=_params(opts, exp.shown, embedder, model, len(sources), len(shown), timings))
    phase("claims")
    summary.claims = grounding.score(_without_headings(text), shown, embedder)
    if kind == "generated":
        warnings = health.merge(warnings, health.claim_warnings(summary.claims,
                                                                "answered" if used else "unsupported"))
        summary.params["warnings"] = [{"code": w.code, "message": w.message} for w in warnings]
    if result.skipped_kinds_kept:  # said, not a reason to refuse the summary
        summary.params["warnings"] = list(summary.params.get("warnings") or []) + [
            {"code": "non_exposition", "message": ONLY_NON_EXPOSITION}]
    return summary


def _params(opts: SummaryOptions, expanded: Optional[str], embedder, model, retrieved: int, shown: int,
            timings) -> dict:
    params = {"k": opts.k, "books": list(opts.book_ids) if opts.book_ids else None, "expand": opts.expand,
              "expanded_query": expanded,
              "embedding_model": embedder.name, "retrieved": retrieved, "in_prompt": shown,
              "timings": {k: round(v, 4) for k, v in timings.items()}}
    if model is not None:
        params["max_tokens"] = opts.max_tokens
        params["grammar"] = opts.grammar is not None
    return params


def _without_headings(text: str) -> str:
    """The summary's sentences: its "## Heading" lines are not claims."""
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def saved_source(source: Source, cited: bool) -> SummarySource:
    """What is saved of one source: where it is, and the text (and hash) it had."""
    h = source.hit
    text_hash = h.text_hash
    if not text_hash:
        text_hash = sha256(h.text)
    return SummarySource(label=source.label, cited=cited, passage_id=h.passage_id, book_id=h.book_id,
                         book_title=h.book_title, kind=h.kind, figure_number=h.figure_number,
                         section_path=list(h.section_path), page_start=h.page_start, page_end=h.page_end,
                         page_label=h.page_label, text=h.text, text_hash=text_hash)


# -- reading back ------------------------------------------------------------------------------

def history(conn, topic: str) -> tuple[str, list[Summary]]:
    """(topic key, every saved summary of the topic, oldest first, each checked for staleness)."""
    key = normalise_topic(topic)
    return key, [check_sources(conn, s) for s in summary_store.summaries(conn, key)]


def get(conn, topic: str, number: Optional[int] = None) -> Summary:
    """One saved summary (the latest when `number` is None), checked for staleness. NotFoundError
    for an unknown topic or number."""
    key = normalise_topic(topic)
    if number is None:
        have = summary_store.numbers(conn, key)
        number = have[-1] if have else 0
    found = summary_store.summaries(conn, key, number) if number else []
    if found:
        return check_sources(conn, found[0])
    have = summary_store.numbers(conn, key)
    if not have:
        raise NotFoundError(f"no summaries of '{topic.strip()}' yet: make one with "
                            f"`ragcli summary new \"{topic.strip()}\"` (see `ragcli summary topics`)")
    span = f"#{have[0]}" if len(have) == 1 else f"#{have[0]} to #{have[-1]}"
    raise NotFoundError(f"'{topic.strip()}' has no summary #{number}: it has {span}")


def delete(conn, topic: str, number: int) -> None:
    """Delete summary `number` of `topic`; the others keep their numbers, and the number is not
    given again. NotFoundError when there is no such summary."""
    get(conn, topic, number)  # says what the topic has when the number is wrong
    summary_store.delete_summary(conn, normalise_topic(topic), number)


def topics(conn) -> list[dict]:
    return summary_store.topics(conn)


def check_sources(conn, summary: Summary) -> Summary:
    """Mark each source ok / moved (same text under a new passage id) / gone, and the summary stale
    when a source it cites is gone (any source, when it cites none)."""
    summary.stale_sources = summary_store.mark_sources(conn, summary.sources)
    summary.status = "stale" if summary.stale_sources else "ok"
    return summary
