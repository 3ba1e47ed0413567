"""Model-free text from retrieved passages: the sentences that best match a question or a topic.

`pick_sentences` is shared by the extractive answer (ask without a model) and the extractive summary.
"""
from __future__ import annotations

from typing import Optional

from ragcli.text import overlap_words, sentences
from ragcli.types import Source

MAX_SENTENCES = 3
SCAN_SOURCES = 5


def candidates(sources: list[Source], max_words: int = 10_000) -> list[tuple[str, int, int]]:
    """(sentence, source index, position in the passage) of every usable sentence (not figures). The
    book's own citation-like marks are inert in them ("[3]" -> "⟨3⟩"): a quoted sentence never cites."""
    from ragcli.answer.citations import neutralise

    out = []
    for i, source in enumerate(sources):
        if source.hit.kind == "figure":
            continue
        for j, sentence in enumerate(sentences(neutralise(source.hit.text))):
            if 5 <= len(sentence.split()) <= max_words:
                out.append((sentence.strip(), i, j))
    return out


def pick_sentences(embedder, query: str, found: list[tuple[str, int, int]], limit: int,
                   per_source: Optional[int] = None, rank_penalty: float = 0.02) -> list[tuple[str, int, int]]:
    """The best `limit` candidates by cosine to the query + 0.2 x word overlap - a small penalty per
    source rank; duplicates skipped, at most `per_source` from one passage."""
    if not found:
        return []
    vecs = embedder.embed([query] + [c[0] for c in found])
    cos = vecs[1:] @ vecs[0]
    words = overlap_words(query)
    scored = []
    for (sentence, i, j), c in zip(found, cos):
        overlap = len(words & overlap_words(sentence)) / max(1, len(words))
        scored.append((float(c) + 0.2 * overlap - rank_penalty * i, (sentence, i, j)))
    scored.sort(key=lambda x: -x[0])
    chosen, seen, taken = [], set(), {}
    for _, (sentence, i, j) in scored:
        key = sentence.lower()[:80]
        if key in seen or (per_source is not None and taken.get(i, 0) >= per_source):
            continue
        seen.add(key)
        taken[i] = taken.get(i, 0) + 1
        chosen.append((sentence, i, j))
        if len(chosen) == limit:
            break
    return chosen


def answer(embedder, question: str, sources: list[Source]) -> tuple[str, list[str]]:
    """(answer text with [S1]-style labels, labels used in order)."""
    scanned = sources[:SCAN_SOURCES]
    chosen = pick_sentences(embedder, question, candidates(scanned), MAX_SENTENCES)
    text = " ".join(f"{sentence.rstrip()} [{scanned[i].label}]" for sentence, i, _ in chosen)
    used: list[str] = []
    for _, i, _ in chosen:
        if scanned[i].label not in used:
            used.append(scanned[i].label)
    return text, used
