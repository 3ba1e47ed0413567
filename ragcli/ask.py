"""question -> expansion -> retrieval -> labelled prompt -> model (or extractive) -> validated answer."""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from ragcli import language
from ragcli.answer import citations
from ragcli.answer import prompt
from ragcli.models.chat import Grammar, IncompleteReply
from ragcli.search import legs as retrieve
from ragcli.store import corpus as store
from ragcli.types import Answer, Source

NO_ANSWER = "The provided passages do not answer this."
# bench/no_context_floor.py on FM 4-25.11: the best passage cosine of all 114 questions of the book's
# question set was >= 0.324 (median 0.581); of 20 off-topic questions, 18 stayed below 0.30 (max 0.382).
# A false "no context" hides an answer the book has, so the floor sits under every on-topic question;
# the model is still told to say when the passages do not answer.
DENSE_FLOOR = 0.30
ANSWER_TOKENS_RESERVE = 64
REWRITE_WEIGHT = 0.8  # the LLM rewrite's lists weigh a little below the question's own
# FM 4-25.11: the best book term of 12 of the 27 exact-term questions is this close, of none of the
# 87 lay questions.
IN_BOOK_WORDS = 0.8
# A rewrite sharing no word with the question or the book terms must be this close to the question
# (MiniLM cosine): good bridges measured 0.27-0.55 ("entrance and exit wounds" for "did the bullet
# come out somewhere else"), small-model answers and echoes 0.02-0.20.
REWRITE_MIN_SIMILARITY = 0.2


@dataclass
class AskOptions:
    k: int = 10  # as `ragcli eval` ranks them: the question's own top 5 pinned, the top 10 re-ranked
    book_ids: Optional[Sequence[str]] = None
    expand: bool = True
    feedback: bool = False  # pseudo-relevance feedback (expand.FEEDBACK): for topical questions
    max_tokens: int = 512
    show_prompt: bool = False
    grammar: Optional[Grammar] = None  # the user's --grammar-file, constraining the answer


@dataclass
class Expansion:
    rewrite: Optional[str]
    terms: list[str]
    seconds: float
    base: Any = None  # expand.Expansion: the model-free part (its extra queries, terms, candidates)


def expand_question(conn, embedder, question: str, model, opts: AskOptions) -> Expansion:
    """Model-free expansion from the book's vocabulary, plus one LLM rewrite when a model is set."""
    t0 = time.perf_counter()
    if not opts.expand:
        return Expansion(None, [], 0.0)
    from ragcli.search import expansion as expand

    base = expand.expansions(conn, embedder, question, opts.book_ids)
    rewrite = None
    if model is not None and not in_book_words(base):
        rewrite = _rewrite(conn, embedder, model, question, base.terms, opts.book_ids)
    return Expansion(rewrite, base.terms, time.perf_counter() - t0, base)


def other_language_notice(conn, text: str, what: str, verb: str) -> Optional[str]:
    """A notice when `text` seems to be in another language than the books (else None)."""
    lang = language.other_language(text, lambda w: store.term_in_corpus(conn, w))
    if not lang:
        return None
    return (f"the {what} looks {language.NAMES.get(lang, lang)}, but the books and the embedding "
            f"model are English; {verb} in English")


def in_book_words(base) -> bool:
    """The question is (nearly) one of the book's own terms: a rewrite has nothing to bridge and,
    with a small model, only reorders what the question found (bench/bench_rewrite.py)."""
    return bool(base.candidates) and base.candidates[0][2] >= IN_BOOK_WORDS


def retrieve_passages(conn, embedder, question: str, exp: Expansion, opts: AskOptions) -> retrieve.SearchResult:
    """Hybrid search; with expansion, the measured default of issue 5 (book terms as an extra
    lexical query, the LLM rewrite if any, a re-rank of the top hits) and, with `feedback`,
    pseudo-relevance feedback."""
    if not opts.expand:
        return retrieve.search(conn, embedder, question, k=opts.k, book_ids=opts.book_ids)
    from ragcli.search import expansion as expand

    more = [retrieve.Query(exp.rewrite, weight=REWRITE_WEIGHT)] if exp.rewrite else []
    return expand.search(conn, embedder, question, k=opts.k, book_ids=opts.book_ids,
                         options=expand.FEEDBACK if opts.feedback else expand.DEFAULTS,
                         exp=exp.base, more=more)


def _rewrite(conn, embedder, model, question: str, terms: list[str], book_ids) -> Optional[str]:
    from ragcli.models.chat import OneLine

    titles = [b.title for b in store.list_books(conn, book_ids)]
    messages = prompt.rewrite_messages(question, titles, terms)
    try:
        text = model.chat(messages, max_tokens=48, constraint=OneLine(160), temperature=0.0)
    except Exception:  # a failed rewrite must never fail the question
        return None

    def similarity(a: str, b: str) -> float:
        va, vb = embedder.embed([a, b])
        return float(va @ vb)

    return clean_rewrite(str(text), question, terms, similarity)


def clean_rewrite(text: str, question: str, terms: Sequence[str] = (),
                  similarity: Optional[Callable[[str, str], float]] = None) -> Optional[str]:
    """Keep a rewrite only if it looks like a short search in words that is about the question (it
    shares a word with the question or the book terms offered, or its meaning is close enough to
    the question's) and does not copy the instructions; else fall back to the original. Small
    models answer or echo the prompt instead of rewriting (bench/bench_rewrite.py)."""
    from ragcli.text import content_words, stem

    text = " ".join(text.replace("\n", " ").split()).strip(" \"'`")
    text = re.sub(r"^(rewritten question|question)\s*:\s*", "", text, flags=re.I)
    text = _without_repeats(text)
    words = re.findall(r"[A-Za-z]{3,}", text)
    if len(words) < 2 or len(text) > 200 or text.lower() == question.lower().strip():
        return None
    if sum(len(w) for w in words) < 0.5 * len(text.replace(" ", "")):
        return None  # mostly symbols or digits: junk
    if _shares_run(text, prompt.instruction_words(), 4):
        return None  # echoes the prompt
    about = {stem(w) for w in content_words(" ".join([question, *terms]))}
    if not about & {stem(w) for w in content_words(text)} and (
            similarity is None or similarity(question, text) < REWRITE_MIN_SIMILARITY):
        return None  # about something else (often an answer, not a search)
    return text


def _without_repeats(text: str) -> str:
    """Small models loop ("eyes, eyes, eyes", a clause three times): keep each comma-separated part
    once, and cut the text where a run of three words comes back."""
    parts, seen = [], set()
    for part in re.split(r"\s*[,;]\s*", text):
        key = part.lower().strip(" .")
        if key and key not in seen:
            seen.add(key)
            parts.append(part.strip())
    words = ", ".join(parts).split()
    runs: set[tuple[str, ...]] = set()
    for i in range(len(words) - 2):
        run = tuple(w.lower().strip(",.;") for w in words[i:i + 3])
        if run in runs:
            return " ".join(words[:i]).rstrip(",;")
        runs.add(run)
    return " ".join(words)


def _shares_run(text: str, source: str, n: int) -> bool:
    """Do `text` and `source` share a run of n words (case and punctuation ignored)?"""
    def runs(s: str) -> set[tuple[str, ...]]:
        w = re.findall(r"[a-z0-9']+", s.lower())
        return {tuple(w[i:i + n]) for i in range(len(w) - n + 1)}
    return bool(runs(text) & runs(source))


def no_context(result: retrieve.SearchResult) -> bool:
    """Below the calibrated floor: nothing retrieved is about the question."""
    if not result.hits:
        return True
    best_dense = max((h.dense_score for h in result.hits if h.dense_score is not None), default=None)
    return best_dense is None or best_dense < DENSE_FLOOR


def ask(conn, embedder, question: str, model=None, opts: Optional[AskOptions] = None,
        on_text: Optional[Callable[[str], None]] = None,
        on_expanded: Optional[Callable[[Expansion], None]] = None) -> Answer:
    """Answer `question` from the corpus. `on_text` receives validated text as it streams;
    `on_expanded` the expansion before retrieval runs."""
    opts = opts or AskOptions()
    retrieve.check_scope(conn, opts.book_ids)
    timings: dict[str, float] = {}
    notice = other_language_notice(conn, question, "question", "ask")
    if notice:
        return Answer(question, None, "", "no_context", [], [], [], timings=timings, notice=notice)
    exp = expand_question(conn, embedder, question, model, opts)
    timings["expansion"] = exp.seconds
    if on_expanded:
        on_expanded(exp)
    t = time.perf_counter()
    result = retrieve_passages(conn, embedder, question, exp, opts)
    timings["retrieval"] = time.perf_counter() - t
    sources = prompt.label_sources(result.hits)
    base = dict(question=question, expanded_query=exp.rewrite or (", ".join(exp.terms) or None))
    if no_context(result):
        return Answer(**base, answer="", status="no_context", citations=[], removed_citations=[],
                      sources=sources, timings=timings,
                      notice="the books do not seem to cover this; the nearest passages are listed")
    if model is None:
        return _extractive(embedder, question, sources, base, timings)
    return _generate(model, question, sources, base, timings, opts, on_text)


def _generate(model, question, sources, base, timings, opts, on_text) -> Answer:
    budget = model.context_size - opts.max_tokens - ANSWER_TOKENS_RESERVE
    p = prompt.build(question, sources, model.count_tokens, budget)
    valid = {s.label for s in p.sources}
    stream = citations.StreamFilter(valid, *prompt.reference_maps(p.sources))
    t = time.perf_counter()
    pieces = []
    cut = None
    try:
        for piece in model.chat(p.messages, max_tokens=opts.max_tokens, stream=True, constraint=opts.grammar):
            safe = stream.feed(piece)
            pieces.append(safe)
            if on_text and safe:
                on_text(safe)
    except IncompleteReply as exc:  # keep the part received, validated like the rest
        cut = exc
    tail = stream.flush()
    pieces.append(tail)
    if on_text and tail:
        on_text(tail)
    timings["generation"] = time.perf_counter() - t
    timings["prompt_tokens"] = p.prompt_tokens
    timings.update({k: v for k, v in getattr(model, "stats", {}).items() if isinstance(v, (int, float))})
    text = "".join(pieces).strip()
    status = "answered"
    if not stream.citations and NO_ANSWER.lower()[:30] not in text.lower():
        status = "unsupported"
    notice = None
    if p.dropped:
        notice = f"{len(p.dropped)} lower-ranked passage(s) left out to fit the model's context window"
    if cut is not None:
        status, notice = "incomplete", str(cut)
    return Answer(**base, answer=text, status=status, citations=list(stream.citations),
                  removed_citations=list(stream.removed), sources=p.sources,
                  model=getattr(model, "params", None), timings=timings,
                  prompt=_render_prompt(p.messages) if opts.show_prompt else None, notice=notice)


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


