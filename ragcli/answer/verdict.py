"""The one place an answer's status and its reason are decided, from the evidence the stages gathered.

Statuses: answered | extractive | no_context | no_answer | unsupported | incomplete. A reason says why an
answer is not `answered`, as a code (`--json`'s `reason`) and in words (the notice). The rules, in order:
1. a server's stream was cut: incomplete; the model refused in its own words: no_answer (refused);
2. the generation was cut at --max-tokens: incomplete; the answer is not language (mostly numbers,
   symbols, a figure's labels: answer/health.py's not_language): no_answer (not_text);
3. the relevance judge ran and no passage of the prompt answers the question: no_answer, before any
   answer is written (not_relevant);
4. the answer cites nothing: no_answer when no passage states any of it (no_source), else unsupported;
5. its substance is not in the passages it cites (answer/refusal.py's unbacked_reason): no_answer;
6. the judge ran and no backed sentence rests on a passage it found to answer the question: no_answer
   (cites_irrelevant);
7. with a calibrated embedding model, an answer no nearer the question than unrelated text: no_answer
   (off_question); or one whose cited passages are all far from the question, below the calibrated
   `cited_floor`, unless one of them names the question's subject (book_words.names_subject): no_answer
   (far_passages).
Otherwise answered. A check that could not run never counts as passed evidence for `answered`: rule 6
needs the judge to have run, and without it the other rules decide.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Optional


class Reason(str, Enum):
    OTHER_LANGUAGE = "other_language"
    NO_CONTEXT = "no_context"
    MISSING_SUBJECT = "missing_subject"
    NOT_RELEVANT = "not_relevant"
    REFUSED = "refused"
    NO_SOURCE = "no_source"
    NOT_BACKED = "not_backed"
    CITES_IRRELEVANT = "cites_irrelevant"
    OFF_QUESTION = "off_question"
    FAR_PASSAGES = "far_passages"
    UNFINISHED = "unfinished"
    NOT_TEXT = "not_text"
    NO_MODEL = "no_model"


WORDS = {
    Reason.OTHER_LANGUAGE: "the question is in another language than the books",
    Reason.NO_CONTEXT: "the books do not seem to cover this",
    Reason.MISSING_SUBJECT: "the books never mention what the question is about",
    Reason.NOT_RELEVANT: "the books do not seem to answer this: no passage found was judged to answer the question",
    Reason.REFUSED: "the passages do not seem to answer this",
    Reason.NO_SOURCE: "the answer cites no passage, and no passage given states any of its sentences",
    Reason.NOT_BACKED: "the answer's substance is not in the passages it cites",
    Reason.CITES_IRRELEVANT: "the answer rests only on passages judged not to answer the question",
    Reason.OFF_QUESTION: "the answer is about something else: its text is no nearer the question than unrelated text",
    Reason.FAR_PASSAGES: "the passages the answer rests on are about something else than the question",
    Reason.UNFINISHED: "the answer did not finish",
    Reason.NOT_TEXT: "the model's answer is not language: mostly numbers, symbols or a figure's labels",
    Reason.NO_MODEL: "no model: extractive answer",
}

@dataclass
class Evidence:
    """What the stages found about one attempt's answer."""

    has_model: bool = True
    refused: bool = False
    cut: bool = False  # a server's stream stopped before the model finished
    unfinished: bool = False  # cut at --max-tokens (looping or not)
    not_text: bool = False  # mostly numbers, symbols, labels: no language (health.not_language)
    cited: bool = False  # it cites a valid label (its own or one ragcli found for it)
    no_source: bool = False  # uncited, and no passage states any of its sentences
    unbacked: Optional[str] = None  # refusal.unbacked_reason's words, when its substance is not in the passages
    judge_ran: bool = False
    relevant: set = field(default_factory=set)  # labels judged to answer the question
    backed_on: set = field(default_factory=set)  # labels that back a supported or weak sentence
    off_question: Optional[bool] = None  # None: not checked (no calibration)
    # the best cosine of the cited passages to the question, and the calibrated floor it must reach
    cited_cosine: Optional[float] = None
    cited_floor: Optional[float] = None
    cited_names_subject: bool = False  # a cited passage names the question's subject (book_words.names_subject)


@dataclass
class Verdict:
    status: str
    reason: Optional[Reason] = None
    detail: Optional[str] = None  # the reason in words, with its particulars

    @property
    def words(self) -> Optional[str]:
        return self.detail or (WORDS[self.reason] if self.reason else None)


def decide(e: Evidence) -> Verdict:
    if not e.has_model:
        return Verdict("extractive", Reason.NO_MODEL)
    if e.cut:
        return Verdict("incomplete", Reason.UNFINISHED)
    if e.refused:  # a refusal is one, even cut at --max-tokens
        return Verdict("no_answer", Reason.REFUSED)
    if e.unfinished:
        return Verdict("incomplete", Reason.UNFINISHED)
    if e.not_text:
        return Verdict("no_answer", Reason.NOT_TEXT)
    if e.judge_ran and not e.relevant:
        return Verdict("no_answer", Reason.NOT_RELEVANT)
    if not e.cited:
        return Verdict("no_answer", Reason.NO_SOURCE) if e.no_source else Verdict("unsupported")
    if e.unbacked:
        return Verdict("no_answer", Reason.NOT_BACKED, e.unbacked)
    if e.judge_ran and not (e.backed_on & e.relevant):
        return Verdict("no_answer", Reason.CITES_IRRELEVANT)
    if e.off_question:
        return Verdict("no_answer", Reason.OFF_QUESTION)
    if e.cited_cosine is not None and e.cited_floor is not None and e.cited_cosine < e.cited_floor \
            and not e.cited_names_subject:
        return Verdict("no_answer", Reason.FAR_PASSAGES,
                       f"{WORDS[Reason.FAR_PASSAGES]} (their best cosine to it is "
                       f"{math.floor(e.cited_cosine * 1000) / 1000:.3f}, under {e.cited_floor:.2f})")
    return Verdict("answered")


def before_answer(reason: Reason, detail: Optional[str] = None) -> Verdict:
    """A verdict reached before any answer is written (other language, nothing near, subject missing,
    no passage relevant)."""
    status = "no_answer" if reason is Reason.NOT_RELEVANT else "no_context"
    return Verdict(status, reason, detail)
