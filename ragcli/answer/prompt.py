"""Labels and prompts: hits become [S1]/[F1] blocks the model may cite, and nothing else."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from ragcli.answer.citations import book_marks, neutralise
from ragcli.answer.extractive import question_kind
from ragcli.types import Hit, Source

# The answer's system prompt, instruction and worked example live in ragcli/system_prompt.py: the
# rewrite and --verify begin with them too, so a server's prompt cache re-uses them (issue 12).
from ragcli.system_prompt import (ANSWER_EXAMPLE, ANSWER_INSTRUCTION, ANSWER_PREFIX, ANSWER_SYSTEM,  # noqa: F401
                                  SUMMARY_PREFIX, SYSTEM_PROMPT)

ANSWER_SOURCES = 6  # passages given for an answer (k retrieved; the rest are listed, not prompted)
# True: a section's title given once for passages of it read one after the other. Off (decision D135):
# with it on, the 1.5B's correct FM answer lay-18 ("prop up his feet higher than his heart, cover him")
# became the step before it; with every passage under its own title the answer came back word for word.
SECTION_ONCE = False
# True: each passage under its label and section title alone, without the page, and the running headers
# caught in its text left out. Off (decision D135): it made the prompt no shorter (0.99x the plain
# prompt's on CERT, 1.01x on FM) and FM lay-05, correct with the page in the header, came out partial.
SHORT_HEADERS = False
# A yes/no question about what to do is asked as what the passages tell the reader to do: the passages
# state instructions, not yes or no.
YES_NO_INSTRUCTION = ("Say what the passages tell the reader to do about this, in 2 to 4 sentences, each "
                      "ending with its label.")

# The task lines of an answer (its own system prompt, the worked example, at most ANSWER_SOURCES).
ANSWERING = (ANSWER_INSTRUCTION, YES_NO_INSTRUCTION)


def instruction_for(question: str) -> str:
    """The task line of the answer, by the question's kind."""
    return YES_NO_INSTRUCTION if question_kind(question) == "yes_no" else ANSWER_INSTRUCTION


SUMMARY_INSTRUCTION = (
    "Summarise what the passages say about: {topic}. Use 2 to 5 sections, each a \"## Heading\" line "
    "then \"- \" bullets, every bullet ending with its citation label.")

TRUNCATION_NOTE = " […passage cut here to fit the model's context window]"


@dataclass
class Prompt:
    messages: list[dict]
    sources: list[Source]  # the sources actually in the prompt, in label order
    dropped: list[Source]  # lowest-ranked sources left out to fit the window
    truncated: list[str]  # labels whose text was cut (said so in the prompt)
    prompt_tokens: int


def as_text(messages: list[dict]) -> str:
    """The messages as `--show-prompt` prints them."""
    return "\n\n".join(f"<{m['role']}>\n{m['content']}" for m in messages)


def label_sources(hits: list[Hit]) -> list[Source]:
    """Book passages get S1, S2, ...; figures F1, F2, ... in rank order."""
    sources, s, f = [], 0, 0
    for hit in hits:
        if hit.kind == "figure":
            f += 1
            sources.append(Source(f"F{f}", hit))
        else:
            s += 1
            sources.append(Source(f"S{s}", hit))
    return sources


def source_header(source: Source) -> str:
    h = source.hit
    pages = h.page_label
    if source.hit.kind == "figure":
        return f"[{source.label}] Figure {h.figure_number} (p. {pages})"
    return f"[{source.label}] {h.book_title} — {h.section_str}, p. {pages}"


def source_block(source: Source, text: str | None = None, header=None) -> str:
    """A passage as the model sees it: its label header (`header(source)`, `source_header` unless
    given), then its text with the book's own citation-like marks made inert ("[3]" -> "⟨3⟩":
    citations.neutralise), so only labels are labels."""
    if text is None:  # the sentences context.select kept, else the whole passage
        text = source.hit.text if source.shown is None else source.shown
    body = neutralise(text)
    if source.hit.kind == "figure":
        caption = re.sub(r"^\W*(?:figure|fig\.?)\s*\S+\s*", "", body, flags=re.I)
        return f"{(header or source_header)(source)}: {caption}"
    return f"{(header or source_header)(source)}\n{body}"


def user_message(question: str, blocks: list[str], labels: str = "",
                 instruction: str = ANSWER_INSTRUCTION) -> str:
    context = "\n\n".join(blocks)
    return (f"CONTEXT:\n{context}\n\nLabels you may cite: {labels or 'none'}\n\n"
            f"QUESTION: {question}\n\n{instruction}")


def answer_header(source: Source) -> str:
    """The label, the innermost section and the page: what answer prompts before D135 showed, and the
    header a copied line is recognised by (answer/health.py's echo patterns)."""
    h = source.hit
    if h.kind == "figure":
        return f"[{source.label}] Figure {h.figure_number}, p. {h.page_label}"
    return f"[{source.label}] {section_title(source)}, p. {h.page_label}"


def passage_header(source: Source, title: bool = True) -> str:
    """The answer prompt's header: the label and the innermost section (`title` False: the label
    alone, under the section of the passage before it). No book title and no page: the model cites
    labels, and the reader finds the book and the page in the sources block (decision D135)."""
    h = source.hit
    if h.kind == "figure":
        return f"[{source.label}] Figure {h.figure_number}"
    if not title:
        return f"[{source.label}]"
    return f"[{source.label}] {section_title(source)}"


def section_title(source: Source) -> str:
    h = source.hit
    return h.section_path[-1] if h.section_path else h.book_title


def without_running_heads(hit: Hit, text: str) -> str:
    """`text` without the titles of its own section path where the page repeats them in capitals (a
    running header caught in the passage: "UNIT 4: DISASTER MEDICAL OPERATIONS — PART 2", "TREATING
    COLD-RELATED INJURIES (CONTINUED)"); the model reads each once, in the passage's header."""
    for title in dict.fromkeys(hit.section_path or []):
        words = re.findall(r"\w+", title)
        if len(words) < 2:  # a one-word title is as likely a word of the text
            continue
        pattern = re.compile(r"\b" + r"\W+".join(map(re.escape, words)) + r"\b(?:\s*\(CONTINUED\))?", re.I)
        text = pattern.sub(lambda m: " " if m.group(0) == m.group(0).upper() else m.group(0), text)
    text = re.sub(r"\(CONTINUED\)", " ", text)
    return re.sub(r"[ \t]{2,}", " ", re.sub(r" *\n *", "\n", text)).strip()


def answer_message(question: str, blocks: list[str], instruction: str = ANSWER_INSTRUCTION, lead: str = "") -> str:
    return "Passages:\n\n" + "\n\n".join(blocks) + f"\n\nQuestion: {question}\n\n{lead}{instruction}"


def only_line(labels) -> str:
    """Before the task line when the relevance judge kept some of the prompt's passages: the labels
    the answer may use and cite. After the question, so the prompt's prefix is the judge's."""
    listed = ", ".join(f"[{lab}]" for lab in labels)
    return f"Only {listed} answer{'s' if len(labels) == 1 else ''} the question: use and cite only {'it' if len(labels) == 1 else 'them'}. "


def build(question: str, sources: list[Source], count_tokens: Callable[[str], int], budget: int,
          instruction: str = ANSWER_INSTRUCTION, only=None) -> Prompt:
    """Fit the labelled context into `budget` prompt tokens: drop the lowest-ranked sources first (a
    block of several passages first shrinks to its ranked passage, under its label); cut
    the text of the last one only when even the best source does not fit, and say so in the prompt.
    An answer has its own system prompt, one worked example, short headers and
    at most ANSWER_SOURCES passages, listed best last (nearest the question, where a small model reads
    best: decisions.md); a summary the shared system prompt. `only`:
    the labels the relevance judge kept, named after the question (answer/relevance.py)."""
    answering = instruction in ANSWERING
    # the messages before the user's: the prefix every call of one ask shares (system_prompt.py)
    prefix = [dict(m) for m in (ANSWER_PREFIX if answering else SUMMARY_PREFIX)]
    pool = list(sources)[:ANSWER_SOURCES] if answering else list(sources)
    kept = list(pool)
    system_tokens = 16 + sum(count_tokens(m["content"]) + (8 if m["role"] != "system" else 0) for m in prefix)

    lead = only_line([s.label for s in pool if s.label in only]) if only else ""

    def user(blocks: list[str]) -> str:
        if answering:  # the best passage last, by the question
            return answer_message(question, list(reversed(blocks)), instruction, lead)
        return user_message(question, blocks, ", ".join(f"[{s.label}]" for s in kept), instruction)

    def block(source: Source, text: str | None = None, title: bool = True) -> str:
        if not answering:
            return source_block(source, text)
        if not SHORT_HEADERS:
            return source_block(source, text, header=answer_header)
        own = source.hit.text if source.shown is None else source.shown
        return source_block(source, without_running_heads(source.hit, own if text is None else text),
                            header=lambda s: passage_header(s, title))

    def blocks_of(sources: list[Source]) -> list[str]:
        """In rank order; a section's title is given once for passages read one after the other
        (best last: the title goes with the first of them the model reads)."""
        if not answering:
            return [block(s) for s in sources]
        shown = list(reversed(sources))  # the order the model reads them
        titled = [not SECTION_ONCE or i == 0 or shown[i - 1].hit.kind != "passage"
                  or section_title(shown[i - 1]) != section_title(s) for i, s in enumerate(shown)]
        return list(reversed([block(s, title=t) for s, t in zip(shown, titled)]))

    while True:
        blocks = blocks_of(kept)
        total = system_tokens + count_tokens(user(blocks))
        if total <= budget or len(kept) <= 1 and not _joined(kept[0]):
            break
        if _joined(kept[-1]):  # a block (answer/context.py) is cut to its ranked passage before it goes
            kept[-1] = _alone(kept[-1])
        else:
            kept.pop()  # the lowest-ranked source goes first
    truncated: list[str] = []
    if total > budget and kept:
        blocks = [_cut_to_fit(kept[0], lambda b: system_tokens + count_tokens(user([b])) <= budget,
                              block)]
        total = system_tokens + count_tokens(user(blocks))
        truncated = [kept[0].label]
    messages = [*prefix, {"role": "user", "content": user(blocks)}]
    return Prompt(messages, kept, pool[len(kept):], truncated, total)


def _joined(source: Source) -> bool:
    return len(source.passages) > 1 and any(p.passage_id == source.hit.passage_id for p in source.passages)


def _alone(source: Source) -> Source:
    """A block as its ranked passage alone, under the same label."""
    hit = next(p for p in source.passages if p.passage_id == source.hit.passage_id)
    return Source(source.label, hit, source.relevance, passages=[hit])


def _cut_to_fit(source: Source, fits: Callable[[str], bool], block) -> str:
    """The source's block with the longest prefix of its text that fits, marked as cut."""
    words = source.hit.text.split()
    lo, hi = 0, len(words)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(block(source, " ".join(words[:mid]) + TRUNCATION_NOTE)):
            lo = mid
        else:
            hi = mid - 1
    return block(source, " ".join(words[:lo]) + TRUNCATION_NOTE)


def reference_maps(sources: list[Source]) -> tuple[dict, dict, dict, set]:
    """Page labels, section titles and figure numbers -> labels, so that "(p. 45)" written by the model
    can be turned into the label of the passage on that page, or removed; and the citation-like marks
    the passages hold as text, which are never labels. `StreamFilter(valid, *reference_maps(sources))`."""
    pages: dict[str, list[str]] = {}
    sections: dict[str, list[str]] = {}
    figures: dict[str, list[str]] = {}
    for s in sources:
        h = s.hit
        for label in dict.fromkeys([h.page_label, *(m.page_label for m in s.passages)]):
            pages.setdefault(label, []).append(s.label)  # every page of a block names it
        if h.section_path:
            sections.setdefault(h.section_path[-1], []).append(s.label)
        if h.figure_number:
            figures.setdefault(h.figure_number, []).append(s.label)
    return pages, sections, figures, book_marks(s.hit.text for s in sources)
