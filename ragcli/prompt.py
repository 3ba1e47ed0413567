"""Labels and prompts: hits become [S1]/[F1] blocks the model may cite, and nothing else."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from .types import Hit, Source

SYSTEM_PROMPT = """You answer questions using ONLY the numbered context passages provided by the user.
Rules:
- Every factual sentence must end with the label of the passage that supports it, e.g. [S1] or [F2].
- Cite ONLY labels that appear in the CONTEXT block ({labels}). Never invent labels, page numbers,
  section titles or sources, and never cite from memory.
- If the context does not contain the answer, say exactly: "The provided passages do not answer this."
- If passages disagree, say so and cite both sides.
- Be concise: a few sentences, plain language, no preamble."""

REWRITE_SYSTEM = """You rewrite a reader's question into the vocabulary of the book being asked, so that a
search finds the right passages. Use the book's own terms where they fit. Output one short line: the
rewritten question only, nothing else."""

TRUNCATION_NOTE = " […passage cut here to fit the model's context window]"


@dataclass
class Prompt:
    messages: list[dict]
    sources: list[Source]  # the sources actually in the prompt, in label order
    dropped: list[Source]  # lowest-ranked sources left out to fit the window
    truncated: list[str]  # labels whose text was cut (said so in the prompt)
    prompt_tokens: int


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


def source_block(source: Source, text: str | None = None) -> str:
    body = source.hit.text if text is None else text
    if source.hit.kind == "figure":
        caption = re.sub(r"^\W*(?:figure|fig\.?)\s*\S+\s*", "", body, flags=re.I)
        return f"{source_header(source)}: {caption}"
    return f"{source_header(source)}\n{body}"


def user_message(question: str, blocks: list[str]) -> str:
    context = "\n\n".join(blocks)
    return f"CONTEXT:\n{context}\n\nQUESTION: {question}\n\nAnswer with a citation label after each sentence."


def build(question: str, sources: list[Source], count_tokens: Callable[[str], int], budget: int) -> Prompt:
    """Fit the labelled context into `budget` prompt tokens: drop the lowest-ranked sources first; cut
    the text of the last one only when even the best source does not fit, and say so in the prompt."""
    kept = list(sources)
    while True:
        labels = ", ".join(f"[{s.label}]" for s in kept) or "none"
        system = SYSTEM_PROMPT.format(labels=labels)
        blocks = [source_block(s) for s in kept]
        total = count_tokens(system) + count_tokens(user_message(question, blocks)) + 16
        if total <= budget or len(kept) <= 1:
            break
        kept.pop()  # the lowest-ranked source goes first
    truncated: list[str] = []
    if total > budget and kept:
        blocks, total = _cut_to_fit(question, system, kept, count_tokens, budget)
        truncated = [kept[0].label]
    messages = [{"role": "system", "content": system},
                {"role": "user", "content": user_message(question, blocks)}]
    return Prompt(messages, kept, sources[len(kept):], truncated, total)


def _cut_to_fit(question, system, kept, count_tokens, budget):
    source = kept[0]
    words = source.hit.text.split()
    lo, hi = 0, len(words)
    while lo < hi:  # the longest prefix that fits
        mid = (lo + hi + 1) // 2
        block = source_block(source, " ".join(words[:mid]) + TRUNCATION_NOTE)
        if count_tokens(system) + count_tokens(user_message(question, [block])) + 16 <= budget:
            lo = mid
        else:
            hi = mid - 1
    block = source_block(source, " ".join(words[:lo]) + TRUNCATION_NOTE)
    return [block], count_tokens(system) + count_tokens(user_message(question, [block])) + 16


def rewrite_messages(question: str, book_titles: list[str], terms: list[str]) -> list[dict]:
    books = "; ".join(book_titles) or "the books in the corpus"
    vocab = ", ".join(terms[:15]) or "(none found)"
    user = (f"Book(s): {books}\nTerms used in the book near this question: {vocab}\n"
            f"Question: {question}\nRewritten question:")
    return [{"role": "system", "content": REWRITE_SYSTEM}, {"role": "user", "content": user}]


def reference_maps(sources: list[Source]) -> tuple[dict, dict, dict]:
    """Page labels, section titles and figure numbers -> labels, so that "(p. 45)" written by the model
    can be turned into the label of the passage on that page, or removed."""
    pages: dict[str, list[str]] = {}
    sections: dict[str, list[str]] = {}
    figures: dict[str, list[str]] = {}
    for s in sources:
        h = s.hit
        pages.setdefault(h.page_label, []).append(s.label)
        if h.section_path:
            sections.setdefault(h.section_path[-1], []).append(s.label)
        if h.figure_number:
            figures.setdefault(h.figure_number, []).append(s.label)
    return pages, sections, figures
