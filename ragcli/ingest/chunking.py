"""Sections -> passages sized for the embedding model, with overlap, never across sections.

all-MiniLM-L6-v2 reads at most 256 word pieces and silently cuts the rest. The embedded text is the
passage plus a header (book title, section path), so a passage holds at most MAX_WORDS words
(medical prose runs about 1.4 word pieces per word, the header about 20): the whole passage is read.
"""
from __future__ import annotations

from ragcli.text import chunk_sentences
from ragcli.types import Figure, Passage, Section

MAX_WORDS = 120
OVERLAP_WORDS = 25
MIN_WORDS = 8


def _units(section: Section) -> list[tuple[int, str]]:
    """Sentences with their page; very long sentences are cut into MAX_WORDS pieces."""
    units = []
    for page, para in section.paragraphs:
        for sentence in chunk_sentences(para):
            words = sentence.split()
            for i in range(0, len(words), MAX_WORDS):
                piece = " ".join(words[i : i + MAX_WORDS])
                if piece:
                    units.append((page, piece))
    return units


def chunk_section(section: Section, max_words: int = MAX_WORDS, overlap: int = OVERLAP_WORDS) -> list[Passage]:
    units = _units(section)
    passages: list[Passage] = []
    start = 0
    while start < len(units):
        end, words = start, 0
        while end < len(units) and (words + len(units[end][1].split()) <= max_words or end == start):
            words += len(units[end][1].split())
            end += 1
        chunk = units[start:end]
        text = " ".join(t for _, t in chunk)
        if len(text.split()) >= MIN_WORDS or not passages:
            passages.append(Passage(text, section.path, chunk[0][0], chunk[-1][0]))
        if end >= len(units):
            break
        back, kept = end, 0  # step back whole sentences to overlap about `overlap` words
        while back - 1 > start and kept + len(units[back - 1][1].split()) <= overlap:
            back -= 1
            kept += len(units[back][1].split())
        start = back if back > start else end
    return [p for p in passages if p.text.strip()]


def figure_passage(figure: Figure) -> Passage:
    return Passage(figure.caption, figure.section_path, figure.page, figure.page, kind="figure",
                   figure_number=figure.number)


def chunk_book(sections: list[Section], figures: list[Figure]) -> list[Passage]:
    passages: list[Passage] = []
    for section in sections:
        passages.extend(chunk_section(section))
    passages.extend(figure_passage(f) for f in figures)
    for i, p in enumerate(passages):
        p.ordinal = i
    return passages
