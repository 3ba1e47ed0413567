"""question -> retrieval -> the model judges which passages answer it -> labelled prompt -> model (or
extractive) -> validated answer -> per-claim support -> one verdict (answer/verdict.py): a thin pipeline
over search/ and answer/."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from ragcli.answer import citations
from ragcli.answer import context
from ragcli.answer import extractive
from ragcli.answer import book_words
from ragcli.answer import grounding
from ragcli.answer import health
from ragcli.answer import prompt
from ragcli.answer import refusal
from ragcli.answer import relevance
from ragcli.answer import verdict as verdicts
from ragcli.answer.generate import ANSWER_TOKENS_RESERVE, Generated, generate
from ragcli.answer.verdict import Evidence, Reason, Verdict
from ragcli.ingest.kinds import NOT_EXPOSITION, ONLY_NON_EXPOSITION
from ragcli.models.chat import Grammar
from ragcli.models.embed import MemoEmbedder
from ragcli.search.pipeline import SearchOptions, SearchResult, mode_for, no_context, other_language_notice, search
from ragcli.store import calibration as calibrations
from ragcli.store import corpus
from ragcli.store import files
from ragcli.store import vectors as vector_index
from ragcli.types import Answer, Expansion, Source


@dataclass
class AskOptions:
    k: int = 10  # as `ragcli eval` ranks them: the question's own top 5 pinned, the top 10 re-ranked
    book_ids: Optional[Sequence[str]] = None
    expand: bool = True
    # the model rewrites the question into the books' words before the search (search/rewrite.py). Off by
    # default: on FM (tuning) and CERT (held out) the question's own search put a passage of the answer's
    # pages at rank 1 as often or more often, and the call costs a quarter of a 1.5B ask (decision D102)
    rewrite: bool = False
    feedback: bool = False  # pseudo-relevance feedback (search mode `feedback`): for topical questions
    max_tokens: int = 512
    show_prompt: bool = False
    grammar: Optional[Grammar] = None  # the user's --grammar-file, constraining the answer
    verify: bool = False  # a second model pass checks each claim (grounding.verify)
    # claims are assessed for answers that cite (and extractive ones); `evidence` (ask --evidence) or
    # `verify` assess an answer that cites nothing too
    evidence: bool = False
    rerank_depth: int = 20  # hits a re-ranker model (ask's `reranker`) re-scores, at least k
    # the model judges which prompt passages answer before it answers (--judge). Off by default: read
    # through next-token probabilities, Qwen2.5-Coder 0.5B/1.5B do not separate the passages that
    # answer from those that do not (docs/benchmarks.md, bench/answers/bench_judge.py)
    judge: bool = False
    model_off: bool = False  # the user turned the configured model off (`--model none`): said so, not "get one"


@dataclass
class Run:
    """What the attempts of one ask share: the corpus, the model, the retrieved sources, the options,
    the callbacks, the calibration of the corpus's embedding model and the judge's reading."""

    conn: object
    embedder: object
    question: str
    model: object
    opts: AskOptions
    result: SearchResult
    sources: list[Source]
    calibration: Optional[calibrations.Calibration]
    blocks: list[Source]  # the context the answer reads (answer/context.py): the first of `sources`
    on_text: Optional[Callable[[str], None]] = None
    on_progress: Optional[Callable[[str, dict], None]] = None
    phase: Callable[..., None] = lambda *a, **k: None
    timings: dict = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)
    judged: Optional[relevance.Judged] = None
    started: float = 0.0  # perf_counter at the start of the ask
    _book_question: Optional[str] = None

    @property
    def base(self) -> dict:
        return dict(question=self.question, expanded_query=self.result.expansion.shown)

    def in_corpus(self, word: str) -> bool:  # does any page of the books use it (FTS5)?
        return corpus.term_in_corpus(self.conn, word)

    def in_books(self, word: str) -> bool:  # a word of the question that is no subject the books lack
        return self.in_corpus(word) or book_words.translated(word, self.result.expansion.rewrite)

    def texts_with(self, text: str) -> list[str]:  # passages holding `text` as written (an acronym)
        return corpus.texts_with(self.conn, text)

    @property
    def book_question(self) -> str:  # the question in the books' forms (book_words.as_books_write), for the floors
        if self._book_question is None:
            self._book_question = book_words.as_books_write(self.question, self.in_corpus, self.texts_with,
                                                            book_words.word_pieces(self.embedder))
        return self._book_question


def ask(conn, embedder, question: str, model=None, opts: Optional[AskOptions] = None,
        on_text: Optional[Callable[[str], None]] = None,
        on_expanded: Optional[Callable[[Expansion], None]] = None,
        on_phase: Optional[Callable[..., None]] = None,
        on_progress: Optional[Callable[[str, dict], None]] = None, reranker=None) -> Answer:
    """Answer `question` from the corpus. `on_text` receives validated text as it streams; `on_expanded`
    the expansion before retrieval runs; `on_phase(name, ...)` each step as it starts (expand, rewrite,
    search: search.pipeline's; prompt with passages=N, judge with done/total, claims or verify, retry); `on_progress(event,
    info)` the model's own progress. `reranker`: a re-ranker model for the search."""
    opts = opts or AskOptions()
    started = time.perf_counter()
    phase = on_phase or (lambda *a, **k: None)
    if not isinstance(embedder, MemoEmbedder):
        embedder = MemoEmbedder(embedder)  # the answer and its claims share sentence vectors
    search_opts = SearchOptions(mode=mode_for(opts.expand, opts.feedback), k=opts.k, book_ids=opts.book_ids,
                                check_language=True, rerank_depth=opts.rerank_depth, skip_kinds=NOT_EXPOSITION)
    t = time.perf_counter()
    book_question = as_books_write(conn, embedder, question)
    spelled = time.perf_counter() - t
    result = search(conn, embedder, book_question, search_opts, model=model if opts.rewrite else None,
                    reranker=reranker, on_expanded=on_expanded, on_phase=phase)
    # Before the model only what decides what it reads, or whether it runs: the search, the blocks, the
    # checks of _before_answer. Each is timed (`timings`; decision D136).
    t = time.perf_counter()
    cal = calibrations.for_corpus(conn)
    # tokens estimated, not the model's: the same blocks (and labels) whichever model answers, or none
    blocks, rest = context.build(result.hits, lambda h: _adjacent(conn, h))
    if model is not None and context.SELECT:  # the prompt's copy: the sentences the question needs (D151)
        blocks = context.select(blocks, book_question, embedder)
    timings = dict(result.timings, book_words=spelled, context=time.perf_counter() - t)
    run = Run(conn, embedder, question, model, opts, result, blocks + rest, cal, blocks,
              on_text, on_progress, phase, timings, started=started, _book_question=book_question)
    if result.skipped_kinds_kept:
        run.notices.append(ONLY_NON_EXPOSITION)
    if cal is None:
        recorded = corpus.embedding_model(conn)
        run.notices.append(calibrations.UNCALIBRATED_NOTICE.format(model=recorded[0] if recorded else "?"))
    t = time.perf_counter()
    phase("checks")
    answer = _before_answer(run)
    run.timings["checks"] = time.perf_counter() - t
    if answer is None:
        answer = _extractive(run) if model is None else _answer(run)
    answer.notice = _join(answer.notice, *run.notices)
    skipped = health.verification_skipped(answer, model is not None) if opts.verify else None
    if skipped:
        answer.verification = {"skipped": skipped}
    return answer


def as_books_write(conn, embedder, question: str) -> str:
    """The question as the books write it (book_words.as_books_write: a slip of the keys mended, a
    plural acronym as the books write it, with their spelling of it), which ask searches with: the
    embedding model reads "clohting" as no word it knows and finds nothing near, and FTS5 matches no
    page. Words the books use are left as written, so a question without a slip searches as before."""
    return book_words.as_books_write(question, lambda w: corpus.term_in_corpus(conn, w),
                                     lambda t: corpus.texts_with(conn, t), book_words.word_pieces(embedder))


def _adjacent(conn, hit):
    """The passages just before and after `hit` in its book (context.build keeps those of its section)."""
    before, after = files.neighbours(conn, hit)
    return (before[-1] if before else None), (after[0] if after else None)


# ------------------------------------------------------------------------------ before any answer

def _before_answer(run: Run) -> Optional[Answer]:
    """The verdicts reached from retrieval alone: the question is in another language, nothing near it
    was found (calibrated floor), or what it is about is named nowhere in the books (calibrated)."""
    if run.result.language:
        return _unanswered(run, verdicts.before_answer(
            Reason.OTHER_LANGUAGE, other_language_notice(run.result.language, "question", "ask")), sources=[])
    cal = run.calibration
    if not run.result.hits or (cal is not None and no_context(run.result, cal.no_context)
                               and not _near_as_books_write(run, cal.no_context)
                               and not book_words.names_subject(run.book_question,
                                                                [book_words.headed(s.hit) for s in run.blocks],
                                                                run.embedder, cal.subject)):
        return _unanswered(run, verdicts.before_answer(Reason.NO_CONTEXT))
    # weighed on the question as the books write it: a slip left in ("Explain cold injruies to me")
    # makes the frame's words ("explain") seem to carry the question
    subject = book_words.missing_subject(run.book_question, run.in_corpus, run.embedder, cal.subject,
                                         run.texts_with) if cal else None
    if subject:
        return _unanswered(run, verdicts.before_answer(
            Reason.MISSING_SUBJECT, f"the books never mention \"{subject}\", which the question is about"))
    return None


def _near_as_books_write(run: Run, floor: float) -> bool:
    """Is a retrieved passage at or over the floor for the question as the books write it (a slip
    mended, a plural acronym as the books write it)? The same stored passage vectors as retrieval."""
    if run.book_question == run.question:
        return False
    ids = [h.passage_id for h in run.result.hits if h.kind == "passage"]
    vecs = vector_index.stored_vectors(run.conn, "passage_vec", ids)
    if not vecs:
        return False
    q = book_words.unit(run.embedder.embed([run.book_question])[0])
    return max(float(v @ q) for v in vecs.values()) >= floor


def _unanswered(run: Run, v: Verdict, sources: Optional[list[Source]] = None) -> Answer:
    return Answer(**run.base, answer="", status=v.status, citations=[], removed_citations=[],
                  sources=run.sources if sources is None else sources, timings=run.timings,
                  notice=f"{v.words}; the nearest passages are listed" if sources is None else v.words,
                  reason=v.reason.value if v.reason else None, judge=_judge_data(run))


def _judge_data(run: Run) -> Optional[dict]:
    j = run.judged
    if j is None:
        return None
    return {"method": j.method, "seconds": round(j.seconds, 4), "notice": j.notice,
            "none": None if j.none is None else round(j.none, 4), "none_at": relevance.NONE_AT,
            "keep_share": relevance.KEEP_SHARE}


# ------------------------------------------------------------------------------ the model's answer

def _answer(run: Run) -> Answer:
    """The judge (--judge), then one attempt, decided by the verdict. There is no second try: on the
    held-out book every second try either failed again or replaced a withheld draft with a wrong
    answer shown as answered (decision D76)."""
    model, opts = run.model, run.opts
    run.phase("prompt", passages=len(run.blocks))  # the passages the model is given to read
    first = prompt.instruction_for(run.question)
    only = None
    if opts.judge:  # the judge reads the answer's own prompt (generate lays it out again, with `only`)
        budget = model.context_size - opts.max_tokens - ANSWER_TOKENS_RESERVE
        laid = prompt.build(run.question, run.blocks, model.count_tokens, budget, instruction=first)
        usable = laid.sources
        run.phase("judge")
        run.judged = relevance.judge(model, laid, run.question)
        run.timings["judge"] = run.judged.seconds
        for s in run.blocks:
            s.relevance = run.judged.scores.get(s.label)
        if run.judged.notice:
            run.notices.append(run.judged.notice)
        if run.judged.ran:
            usable = run.judged.relevant(laid.sources)
            if not usable:
                return _unanswered(run, verdicts.before_answer(Reason.NOT_RELEVANT))
        only = {s.label for s in usable} if len(usable) < len(laid.sources) else None
    answer, _ = _attempt(run, run.blocks, first, only)
    return answer


def _attempt(run: Run, sources: list[Source], instruction: str, only: Optional[set], attempts: int = 1):
    """One generation from `sources` (citable: `only`, else all in the prompt), assessed and decided."""
    timings = dict(run.timings)
    gen = generate(run.model, run.question, sources, max_tokens=run.opts.max_tokens, constraint=run.opts.grammar,
                   instruction=instruction, on_text=run.on_text, on_progress=run.on_progress, only=only)
    timings.update(gen.timings)
    if gen.model_called is not None:  # from the ask's start: what the reader waits for
        timings["before_model"] = gen.model_called - run.started
        if gen.first_text is not None:
            timings["to_first_token"] = gen.first_text - run.started
    shown = gen.prompt.sources
    citable = [s for s in shown if only is None or s.label in only]
    notice = str(gen.cut) if gen.cut is not None else None  # the part received is kept, validated
    if gen.prompt.dropped:
        notice = _join(notice, f"{len(gen.prompt.dropped)} lower-ranked passage(s) left out to fit the model's "
                               f"context window")
    answer = Answer(**run.base, answer=gen.text, status="answered" if gen.citations else "unsupported",
                    citations=list(gen.citations), removed_citations=gen.removed, sources=citable,
                    model=getattr(run.model, "params", None), timings=timings,
                    prompt=prompt.as_text(gen.prompt.messages) if run.opts.show_prompt else None, notice=notice,
                    attempts=attempts, warnings=gen.warnings, judge=_judge_data(run))
    evidence = _assess(run, answer, gen)
    given = {s.label for s in citable}  # a block shrunk to fit the window is listed as given
    answer.sources = citable + [s for s in run.sources if s.label not in given]  # the rest listed, not citable
    return answer, _apply(answer, verdicts.decide(evidence))


def _assess(run: Run, answer: Answer, gen: Generated) -> Evidence:
    """Claims scored against the citable passages; the evidence the verdict reads."""
    refused = refusal.is_refusal(gen.text)
    e = Evidence(refused=refused, cut=gen.cut is not None, unfinished=health.unfinished(gen.warnings),
                 not_text=health.not_language(gen.text))
    if refused:
        return e
    opts, model = run.opts, run.model
    run.phase("verify" if opts.verify else "claims")
    t = time.perf_counter()
    if answer.status == "unsupported":  # no label: find the passages its sentences come from
        answer.claims = grounding.score(answer.answer, answer.sources, run.embedder)
        _take_attributed(answer)
        if opts.verify and answer.status == "answered":
            grounding.verify(answer, model, run.embedder)
    else:
        grounding.assess(answer, run.embedder, model if opts.verify else None)
    answer.timings["claims"] = time.perf_counter() - t
    e.cited = answer.status == "answered"
    e.no_source = not e.cited and any(c.support == "no_source" for c in answer.claims)
    if e.cited and not (e.unfinished or e.cut):
        e.unbacked = refusal.unbacked_reason(answer, run.question, run.in_books)
        if run.calibration is not None:
            e.off_question = refusal.off_question(answer, run.question, run.embedder, run.calibration.off_question,
                                                  run.book_question)
            e.cited_floor = run.calibration.cited_floor
            if e.cited_floor is not None:
                e.cited_cosine = refusal.cited_cosine(answer, run.question, run.embedder, run.book_question)
                if e.cited_cosine is not None and e.cited_cosine < e.cited_floor:
                    e.cited_names_subject = book_words.names_subject(
                        run.book_question, refusal.cited_texts(answer, book_words.headed), run.embedder,
                        run.calibration.subject)
    if run.judged is not None and run.judged.ran:
        e.judge_ran = True
        e.relevant = {s.label for s in run.judged.relevant(answer.sources)}
        e.backed_on = {lab for c in answer.claims if c.support in ("supported", "weak") for lab in c.citations}
    return e


def _apply(answer: Answer, v: Verdict) -> Verdict:
    """Write the verdict into the answer: status, reason, notice; a no_answer keeps no claims."""
    answer.reason = v.reason.value if v.reason else None
    if v.status == "no_answer":
        answer.citations, answer.claims = [], []
        answer.unbacked = v.words if v.reason is not Reason.REFUSED else None
        answer.notice = _join(f"not answered: {v.words}; the nearest passages are listed", answer.notice)
    elif v.status == "incomplete" and answer.notice is None:
        answer.notice = v.words
    answer.status = v.status
    if v.status in ("answered", "unsupported"):
        answer.warnings = health.merge(answer.warnings, health.claim_warnings(answer.claims, v.status))
    return v


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


# ------------------------------------------------------------------------------ no model

def _extractive(run: Run) -> Answer:
    """No model: the sentences that best answer the question, each with its label."""
    t = time.perf_counter()
    text, _ = extractive.answer(run.embedder, run.question, run.sources)
    # the same validation as a model's answer (the quoted sentences' own marks are already inert)
    checked = citations.validate(text, {s.label for s in run.sources}, *prompt.reference_maps(run.sources))
    run.timings["generation"] = time.perf_counter() - t
    answer = Answer(**run.base, answer=checked.text, status="extractive", citations=checked.citations,
                    removed_citations=checked.removed, sources=run.sources, timings=run.timings,
                    notice=verdicts.WORDS[Reason.NO_MODEL] + (" (--model none)" if run.opts.model_off else
                                                              " (get one with `ragcli models pull`, or set one with --model F.gguf)"),
                    reason=Reason.NO_MODEL.value)
    run.phase("claims")
    t = time.perf_counter()
    grounding.assess(answer, run.embedder, None)
    answer.timings["claims"] = time.perf_counter() - t
    return answer


def _join(*notes: Optional[str]) -> Optional[str]:
    return "; ".join(n for n in notes if n) or None
