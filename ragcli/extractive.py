"""The model-free answer: the retrieved sentences that best answer the question, each with its label."""
from __future__ import annotations

import re

import numpy as np

from .types import Source

MAX_SENTENCES = 3
SCAN_SOURCES = 5
_WORD = re.compile(r"[a-z0-9]{3,}")


def _sentences(source: Source) -> list[str]:
    from .claims import split_sentences_plain

    return [s for s in split_sentences_plain(source.hit.text) if len(s.split()) >= 5]


def answer(embedder, question: str, sources: list[Source]) -> tuple[str, list[str]]:
    """(answer text with [S1]-style labels, labels used in order)."""
    candidates: list[tuple[str, str, int]] = []  # (sentence, label, source rank)
    for rank, source in enumerate(sources[:SCAN_SOURCES]):
        if source.hit.kind == "figure":
            continue
        candidates += [(s, source.label, rank) for s in _sentences(source)]
    if not candidates:
        return "", []
    vecs = embedder.embed([question] + [c[0] for c in candidates])
    cos = vecs[1:] @ vecs[0]
    q_words = set(_WORD.findall(question.lower()))
    scores = []
    for (sentence, _, rank), c in zip(candidates, cos):
        overlap = len(q_words & set(_WORD.findall(sentence.lower()))) / max(1, len(q_words))
        scores.append(float(c) + 0.2 * overlap - 0.02 * rank)
    order = np.argsort(scores)[::-1]
    chosen, seen = [], set()
    for i in order:
        sentence, label, _ = candidates[i]
        key = sentence.lower()[:80]
        if key in seen:
            continue
        seen.add(key)
        chosen.append((sentence.rstrip(), label))
        if len(chosen) == MAX_SENTENCES:
            break
    text = " ".join(f"{s} [{label}]" for s, label in chosen)
    used: list[str] = []
    for _, label in chosen:
        if label not in used:
            used.append(label)
    return text, used
