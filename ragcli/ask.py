"""question -> expansion -> retrieval -> labelled prompt -> model (or extractive) -> validated answer
-> per-claim support (and the --verify pass): a thin pipeline over search/ and answer/."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from ragcli.answer import citations
from ragcli.answer import grounding
from ragcli.answer import health
from ragcli.answer import prompt
from ragcli.answer import refusal
from ragcli.answer.generate import generate
from ragcli.models.chat import Grammar
from ragcli.store import corpus
from ragcli.search.pipeline import DENSE_FLOOR, SearchOptions, mode_for, no_context, other_language_notice, search
from ragcli.types import Answer, Expansion, Source


@dataclass
class AskOptions:
    k: int = 10  # as `ragcli eval` ranks them: the question's own top 5 pinned, the top 10 re-ranked
    book_ids: Optional[Sequence[str]] = None
    expand: bool = True
    feedback: bool = False  # pseudo-relevance feedback (search mode `feedback`): for topical questions
    max_tokens: int = 512
    show_prompt: bool = False
    grammar: Optional[Grammar] = None  # the user's --grammar-file, constraining the answer
    verify: bool = False  # a second model pass checks each claim (grounding.verify)
    # claims are assessed for answers that cite (and extractive ones); `evidence` (ask --evidence) or
    # `verify` assess an answer that cites nothing too
    evidence: bool = False
    rerank_depth: int = 20  # hits a re-ranker model (ask's `reranker`) re-scores, at least k


def ask(conn, embedder, question: str, model=None, opts: Optional[AskOptions] = None,
        on_text: Optional[Callable[[str], None]] = None,
        on_expanded: Optional[Callable[[Expansion], None]] = None,
        on_phase: Optional[Callable[..., None]] = None,
        on_progress: Optional[Callable[[str, dict], None]] = None, reranker=None) -> Answer:
    """Answer `question` from the corpus, each claim assessed and the answer's health folded into its
    status. `on_text` receives validated text as it streams; `on_expanded` the expansion before
    retrieval runs; `on_phase(name)` each step as it starts (expand, rewrite, search: search.pipeline's;
    prompt, claims or verify); `on_progress(event, info)` the model's own progress. `reranker`: a
    re-ranker model for the search (search/model_rerank.py)."""
    from ragcli.models.embed import MemoEmbedder

    opts = opts or AskOptions()
    phase = on_phase or (lambda *a, **k: None)
    if not isinstance(embedder, MemoEmbedder):
        embedder = MemoEmbedder(embedder)  # the answer and its claims share sentence vectors
    search_opts = SearchOptions(mode=mode_for(opts.expand, opts.feedback), k=opts.k, book_ids=opts.book_ids,
                                check_language=True, rerank_depth=opts.rerank_depth)
    result = search(conn, embedder, question, search_opts, model=model, reranker=reranker,
                    on_expanded=on_expanded, on_phase=phase)
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
    def in_corpus(word: str) -> bool:  # does any page of the books use it (FTS5)?
        return corpus.term_in_corpus(conn, word)

    subject = refusal.missing_subject(question, in_corpus, embedder)
    if subject:  # what the question is about is named nowhere in the books: no answer to write
        return Answer(**base, answer="", status="no_context", citations=[], removed_citations=[],
                      sources=sources, timings=timings,
                      notice=f"the books never mention \"{subject}\", which the question is about; "
                             f"the nearest passages are listed")
    if model is None:
        answer = _extractive(embedder, question, sources, base, timings)
    else:
        phase("prompt")
        answer = _model_answer(model, question, sources, base, timings, opts, on_text, on_progress, phase)
    rewrite = result.expansion.rewrite

    def in_books(word: str) -> bool:  # a word of the question that is no subject the books lack
        return in_corpus(word) or refusal.translated(word, rewrite)

    answer = _assessed(answer, embedder, model, opts, phase, in_books=in_books)
    again = (model, embedder, question, sources, base, timings, opts, on_text, on_progress, phase, in_books)
    if model is not None and _unbacked_deserves_retry(answer, sources):
        asked = _situation(question) if answer.unbacked == refusal.NOT_BACKED else None
        answer = _again(answer, *again, step="retry", asked=asked,
                        why=f"the first answer was not backed ({answer.unbacked})") or answer
    elif model is not None and _terse(answer) and refusal.deserves_second_chance(sources):
        kept = _again(answer, *again, step="steps", instruction=prompt.STEPS_INSTRUCTION,
                      why="the first answer only named what to do")
        if kept is None and on_text:  # the second try's text was streamed: the first answer again
            phase("restore")
            on_text(answer.answer)
        answer = kept or answer
    return answer


def _terse(answer: Answer) -> bool:
    """A "how do I ...?" answered with one short sentence that names what to do without the doing
    ("Use the mouth-to-mouth method [S4]" for "how do I blow air into his lungs?")."""
    from ragcli.answer.extractive import question_kind

    factual = [c for c in answer.claims if c.support != "not_factual"]
    return (answer.status == "answered" and answer.attempts == 1 and question_kind(answer.question) == "steps"
            and len(factual) == 1 and len(factual[0].text.split()) <= TERSE_WORDS)


TERSE_WORDS = 8


def _again(answer: Answer, model, embedder, question, sources, base, timings, opts: AskOptions, on_text,
           on_progress, phase, in_books, *, step: str, why: str, instruction: Optional[str] = None,
           asked: Optional[str] = None) -> Optional[Answer]:
    """One more try from the top passages (`step`: the phase shown; `instruction` and `asked`: see
    _from_the_top), after an answer ragcli did not keep (refusal.unbacked_reason) or found terse. The
    second answer is kept only if it is answered, and then lists the first try's passages too (it was
    written from, and assessed against, the top passages alone); else None, and the first stands."""
    if on_text:
        on_text("\n")
    phase(step)
    second = _model_answer(model, question, sources, base, dict(timings), opts, on_text, on_progress, phase,
                           retry=True, instruction=instruction, asked=asked)
    second = _assessed(second, embedder, model, opts, phase, in_books=in_books)
    if second.status == "answered":
        second.notice = _join(f"answered on the second try, from the top {len(second.sources)} passages: {why}",
                              second.notice)
        labels = {s.label for s in second.sources}
        second.sources = list(second.sources) + [s for s in answer.sources if s.label not in labels]
        return second
    answer.attempts = 2
    answer.timings["generation"] = second.timings.get("generation", 0.0)
    return None


def _join(*notes: Optional[str]) -> Optional[str]:
    return "; ".join(n for n in notes if n) or None


def _unbacked_deserves_retry(answer: Answer, sources: list[Source]) -> bool:
    """A model's answer turned into `no_answer` by ragcli's checks (not a refusal in the model's own
    words, which has had its second chance) for a reason another try can mend
    (refusal.worth_a_second_try), when the top passages match the question well."""
    return (answer.status == "no_answer" and answer.attempts == 1 and answer.unbacked is not None
            and refusal.worth_a_second_try(answer.unbacked) and refusal.deserves_second_chance(sources))


def _from_the_top(model, question, sources, timings, opts: AskOptions, on_text, on_progress,
                  instruction: Optional[str] = None, asked: Optional[str] = None):
    """The second chance's generation: the top passages only, the direct instruction (`asked`: what the
    prompt asks instead of the question); its time is added to the answer's."""
    top = [s for s in sources if s.hit.kind == "passage"][:refusal.SECOND_CHANCE_SOURCES]
    gen = generate(model, asked or question, top, max_tokens=opts.max_tokens, constraint=opts.grammar,
                   instruction=instruction or prompt.instructions_for(question)[1], on_text=on_text,
                   on_progress=on_progress)
    timings["generation"] = timings.get("generation", 0.0) + gen.timings.get("generation", 0.0)
    timings["second_chance_prompt_tokens"] = gen.timings.get("prompt_tokens")
    return gen


def _situation(question: str) -> str:
    """What the second try after a contradicted yes/no answer asks: for "A deep gash ... is still
    pouring blood after I put a bandage on. Should I push on it and lift the leg?" the situation alone,
    the passages asked what to do about it (asked the yes/no again, the 1.5B said "No" again where the
    book says to do it). A question of one sentence is asked as it is."""
    from ragcli.answer.extractive import question_kind
    from ragcli.text import sentences

    parts = sentences(question)
    if question_kind(question) != "yes_no" or len(parts) < 2:
        return question
    return " ".join(parts[:-1])


def _model_answer(model, question, sources, base, timings, opts: AskOptions, on_text, on_progress,
                  phase, retry: bool = False, instruction: Optional[str] = None,
                  asked: Optional[str] = None) -> Answer:
    """The model's answer; a refusal is `no_answer`, and gets one second chance (the top passages
    only, a direct instruction) when retrieval matched the question well (refusal.deserves_second_chance).
    `retry`: this is the second chance itself (after an answer ragcli found unbacked)."""
    if retry:
        gen = _from_the_top(model, question, sources, timings, opts, on_text, on_progress, instruction, asked)
    else:
        gen = generate(model, question, sources, max_tokens=opts.max_tokens, constraint=opts.grammar,
                       instruction=prompt.instructions_for(question)[0], on_text=on_text, on_progress=on_progress)
        timings.update(gen.timings)
    shown = gen.prompt.sources  # the passages listed: those of the prompt the answer comes from
    attempts = 2 if retry else 1
    if not retry and refusal.is_refusal(gen.text) and refusal.deserves_second_chance(sources):
        if on_text:
            on_text("\n")
        phase("retry")
        second = _from_the_top(model, question, sources, timings, opts, on_text, on_progress)
        attempts = 2
        gen = second if not refusal.is_refusal(second.text) else gen
    notice = None
    if refusal.is_refusal(gen.text):
        status = "no_answer"
        notice = "the passages do not seem to answer this; the nearest passages are listed"
    else:
        status = "answered" if gen.citations else "unsupported"
    if gen.prompt.dropped:
        dropped = f"{len(gen.prompt.dropped)} lower-ranked passage(s) left out to fit the model's context window"
        notice = f"{notice}; {dropped}" if notice else dropped
    if gen.cut is not None:  # the part received is kept, validated like the rest
        status, notice = "incomplete", str(gen.cut)
    return Answer(**base, answer=gen.text, status=status, citations=gen.citations if status != "no_answer" else [],
                  removed_citations=gen.removed, sources=shown, model=getattr(model, "params", None), timings=timings,
                  prompt=prompt.as_text(gen.prompt.messages) if opts.show_prompt else None, notice=notice,
                  attempts=attempts, warnings=gen.warnings)


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


def _take_attributed(answer: Answer) -> None:
    """An answer that cites no passage, but whose sentences ragcli found in passages of the prompt
    (grounding.attribute), is answered with those labels, and says the labels are ragcli's."""
    found = list(dict.fromkeys(lab for c in answer.claims if c.attributed for lab in c.citations))
    if not found:
        return
    answer.status, answer.citations = "answered", found
    note = ("the model cited no passage; ragcli found the passage each supported sentence comes from: "
            + ", ".join(f"[{lab}]" for lab in found))
    answer.notice = f"{answer.notice}; {note}" if answer.notice else note


def _assessed(answer: Answer, embedder, model, opts: AskOptions, phase, in_books=None) -> Answer:
    """Per-claim support, with `verify` the second model pass; a model's answer whose substance the
    passages do not back (refusal.unbacked_reason) becomes `no_answer` with the reason; then the
    claims' health folded into the status, and why --verify did not run when it did not."""
    if opts.verify or opts.evidence or answer.status in ("answered", "extractive", "unsupported"):
        phase("verify" if opts.verify and model is not None else "claims")
        t = time.perf_counter()
        if answer.status == "unsupported":  # no label: find the passages its sentences come from
            answer.claims = grounding.score(answer.answer, answer.sources, embedder)
            _take_attributed(answer)
            if opts.verify and model is not None and answer.status == "answered":
                grounding.verify(answer, model, embedder)
        else:
            grounding.assess(answer, embedder, model if opts.verify else None)
        answer.timings["claims"] = time.perf_counter() - t
    reason = None
    if answer.status == "answered" and not health.unfinished(answer.warnings):  # a broken one is incomplete
        reason = refusal.unbacked_reason(answer, answer.question, in_books)
        if not reason and refusal.off_question(answer, answer.question, embedder, DENSE_FLOOR):
            reason = refusal.OFF_QUESTION
    elif answer.status == "unsupported" and any(c.support == "no_source" for c in answer.claims):
        reason = refusal.NO_SOURCE  # it cites nothing, and no passage states any of it: from memory
    if reason:
        answer.status, answer.citations, answer.claims, answer.unbacked = "no_answer", [], [], reason
        answer.notice = f"not answered: {reason}; the nearest passages are listed"
    health.finish(answer)
    skipped = health.verification_skipped(answer, model is not None) if opts.verify else None
    if skipped:
        answer.verification = {"skipped": skipped}
    return answer
