"""What kind of text a passage is: exposition, or text that is not (questions, drills, lists of pages).

A small model asked a question copies what it reads; a final-exam question, an exercise or a
scenario prompt placed beside the answer is read as if it were the answer. Such passages are marked
at ingest so `ask` and `summary` can leave them out of the prompt (search/options.py `skip_kinds`),
while `search` still finds them, with the kind shown.

The rule is by form and by the kind of section, never by one book's words:
- contents: dot leaders or a run of titles each followed by a page number;
- index: entries followed by page numbers ("Tourniquet, 2-20, 2-25"), or an "Index" section;
- glossary cross-references: entries that only send the reader elsewhere ("Splint. See Immobilize.");
- question: short multiple-choice options (a. b. c. / A) B) C)) after a question or a blank, numbered
  questions, or a review/exam/quiz section;
- exercise: an exercise/activity/drill/practice section, or a passage that opens as one;
- scenario: a scenario/case-study section, or a passage that opens as one.
Anything else is exposition. A rule that matches only on the section kind needs the passage not to
read as plain prose (an exam section's answer key is a question; an "Exercise" section's
introduction that explains what to do still counts as the exercise).
"""
from __future__ import annotations

import re
from typing import Sequence

EXPOSITION = "exposition"
QUESTION = "question"
EXERCISE = "exercise"
SCENARIO = "scenario"
CONTENTS = "contents"
INDEX = "index"
GLOSSARY_REF = "glossary_ref"
KINDS = (EXPOSITION, QUESTION, EXERCISE, SCENARIO, CONTENTS, INDEX, GLOSSARY_REF)
# ask and summary leave these out of the prompt unless nothing else is found
NOT_EXPOSITION = tuple(k for k in KINDS if k != EXPOSITION)
# what ask and summary say when only such passages were found (they are then used)
ONLY_NON_EXPOSITION = ("only exercises, exam questions, scenarios or lists of pages were found near it: "
                       "the passages used are those")

# section titles naming a kind of section (any book's: the words of textbooks' and manuals' apparatus)
_SECTION_KIND = [
    (CONTENTS, re.compile(r"^(?:table of )?contents$|^list of (?:figures|tables|illustrations)$", re.I)),
    (INDEX, re.compile(r"^(?:subject |general )?index$", re.I)),
    (QUESTION, re.compile(r"\b(?:review questions?|questions? for review|self[- ]?(?:test|check|assessment)|"
                          r"quiz(?:zes)?|(?:final|unit|module|course|chapter|pre|post)[- ]?(?:exam|test)s?|"
                          r"knowledge check|check your (?:knowledge|understanding)|test your knowledge|"
                          r"study questions|answer key)\b|^(?:exam|examination|test|questions)\s*\d*$", re.I)),
    (EXERCISE, re.compile(r"^(?:practical |tabletop |class |unit |module )?(?:exercises?|activit(?:y|ies)|drills?|"
                          r"worksheets?)(?:\s*\d+\b|\s*:|\.|\s+[-–—]\s|$)|\b(?:tabletop|practical) exercise\b", re.I)),
    (SCENARIO, re.compile(r"^(?:scenarios?|case stud(?:y|ies)|vignettes?)(?:\s*\d+\b|\s*:|\.|\s+[-–—]\s|$)", re.I)),
]

# "3-1.", "Unit 3:", "Chapter 2 -", "Section II." before a title
_NUMBERING = re.compile(r"^(?:(?:[Cc]hapter|[Uu]nit|[Mm]odule|[Ll]esson|[Ss]ection|[Aa]ppendix|[Pp]art|CHAPTER|UNIT|"
                        r"MODULE|LESSON|SECTION|APPENDIX|PART)\s+[\dIVXA-Z]{1,4}\s*[:.\-–]?\s*|"
                        r"(?:\d{1,3}(?:[-.]\d{1,3})*|[A-Z](?:-\d{1,3})*|[IVX]{1,4})[.):]?\s+)")
_MC_OPTION = re.compile(r"(?:^|\s)\(?([a-dA-D])[.)]\s+\S")
_QUESTION_NUM = re.compile(r"(?:^|\s)\d{1,3}[.)]\s+[^?.!]{3,200}\?")
_ASKS = re.compile(r"\?|_{3,}")
MC_OPTION_WORDS = 15  # a multiple-choice option is a phrase; a lettered procedure's step is longer
_DOT_LEADER = re.compile(r"(?:\.\s?){4,}\s*[A-Za-z]?-?\d{1,4}(?:-\d{1,4})?\b")
_PAGE_REF = re.compile(r"\b[A-Z]?-?\d{1,4}(?:-\d{1,4})?\b")
_INDEX_ENTRY = re.compile(r"[A-Za-z)][,:]?\s+[A-Z]?\d{1,4}(?:-\d{1,4})?(?:\s*,\s*[A-Z]?\d{1,4}(?:-\d{1,4})?)+")
_SEE = re.compile(r"\b[Ss]ee(?: also)?\s+[A-Z]")
_OPENS_AS = [
    (SCENARIO, re.compile(r"^\s*(?:scenario|case study|case)\s*\d*\s*(?::|\.\s|\s[-–—]\s)", re.I)),
    (EXERCISE, re.compile(r"^\s*(?:exercise|activity|drill|practice)\s*\d*\s*(?::|\.\s|\s[-–—]\s)", re.I)),
]


def section_kind(section_path: Sequence[str]) -> str:
    """The kind a section's titles name (innermost first), EXPOSITION when none does."""
    for title in reversed(list(section_path)):
        if "," in title:  # a chapter naming several parts ("Course Review, Final Exam, and ...") is none
            continue
        t = _NUMBERING.sub("", title.strip()) or title.strip()
        for kind, rx in _SECTION_KIND:
            if rx.search(t):
                return kind
    return EXPOSITION


def _mc_options(text: str) -> bool:
    """Options a. b. c. (or A) B) C)) in order, at least three, short (a lettered procedure's steps are
    sentences), after a question mark or a blank to fill."""
    marks = list(_MC_OPTION.finditer(text))
    for i, m in enumerate(marks):
        if m.group(1).lower() != "a" or not _ASKS.search(text[max(0, m.start() - 400):m.start() + 1]):
            continue
        run = [m]
        for nxt in marks[i + 1:]:
            if ord(nxt.group(1).lower()) != ord(run[-1].group(1).lower()) + 1:
                break
            run.append(nxt)
        if len(run) >= 3:
            ends = [o.start() for o in run[1:]] + [min(len(text), run[-1].end() + 120)]
            lengths = [len(text[o.end():e].split()) for o, e in zip(run, ends)]
            if sum(lengths[:-1]) / max(1, len(lengths) - 1) <= MC_OPTION_WORDS:
                return True
    return False


def text_kind(text: str, section_path: Sequence[str] = ()) -> str:
    """The kind of one passage's text (KINDS). Forms decide first; the section's kind decides for text
    in a question/exercise/scenario/contents/index section."""
    words = text.split()
    n = max(1, len(words))
    if len(_DOT_LEADER.findall(text)) >= 3:
        return CONTENTS
    sec = section_kind(section_path)
    numbers = sum(1 for w in words if _PAGE_REF.fullmatch(w.strip(",;.")))
    if len(_INDEX_ENTRY.findall(text)) >= 3 and numbers / n >= 0.2:
        return INDEX if sec != CONTENTS else CONTENTS
    if sec in (CONTENTS, INDEX) and numbers / n >= 0.1:
        return sec
    if len(_SEE.findall(text)) >= 3 and len(_SEE.findall(text)) * 12 >= n:
        return GLOSSARY_REF
    if _mc_options(text):
        return QUESTION
    if len(_QUESTION_NUM.findall(text)) >= 2:
        return QUESTION
    for kind, rx in _OPENS_AS:
        if rx.match(text):
            return kind
    if sec in (QUESTION, EXERCISE, SCENARIO):
        return sec
    return EXPOSITION
