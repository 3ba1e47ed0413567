"""Sections -> passages that follow the book's structure, sized for the embedding model, never across
sections.

A section's paragraphs are read as atoms: a sentence of running prose, or a list (numbered or
lettered steps, bullets, "Step 1"...) together with its lead-in (the sentence before it, usually
ending in a colon or a dash; a warning box before a list is no lead-in). Atoms are packed into passages of at most `max_words` words; a list is never cut
unless it alone is longer than a passage: then each part starts with the list's lead-in and holds
whole items, with their own numbers. Prose passages overlap by about `overlap` words of whole
sentences; a passage never starts with the tail of a list.

all-MiniLM-L6-v2 reads at most 256 word pieces and silently cuts the rest. The embedded text is the
passage plus a header (book title, section path), so a passage holds at most MAX_WORDS words (medical
prose runs about 1.4 word pieces per word, the header about 20): the whole passage is read. A list
part that repeats its lead-in stays within the same budget (the lead-in counts).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ragcli.ingest.items import ITEM_RE
from ragcli.ingest.kinds import text_kind
from ragcli.text import chunk_sentences
from ragcli.types import Figure, Passage, Section

MAX_WORDS = 120
OVERLAP_WORDS = 25
MIN_WORDS = 8
BOX_RE = re.compile(r"^\s*(?:NOTE|NOTES|WARNING|CAUTION|DANGER)\b")
LEAD_IN_WORDS = 40  # a lead-in longer than this is prose, not a list's heading: its last sentence leads
LIST_ITEM_WORDS = 40  # items longer than this on average are paragraphs, not a list's steps
# a lead-in that announces a list ends in a colon or a dash, or with "as follows", "the following" or
# "the following steps."
ANNOUNCE_RE = re.compile(r"(?:[:\u2013\u2014-]|\b(?:as follows|following(?:\s+\w+)?)\W*)$", re.I)



@dataclass
class _Atom:
    page_start: int
    page_end: int
    lines: list[str]  # prose: one sentence; list: lead-in (maybe "") then items
    is_list: bool = False
    # list: each item (lines[1:]) as its pieces of text by page: an item that runs onto the next page
    # (a wrapped line in lower case there) has a piece on each, so its pages stay known when it is cut
    segments: list[list[tuple[int, str]]] = field(default_factory=list)

    @property
    def words(self) -> int:
        return sum(len(s.split()) for s in self.lines)

    @property
    def text(self) -> str:
        return " ".join(s for s in self.lines if s)


def _pieces(page: int, text: str, max_words: int) -> list[_Atom]:
    """Prose sentences as atoms; a sentence longer than a passage is cut into max_words pieces."""
    atoms = []
    for sentence in chunk_sentences(text):
        words = sentence.split()
        for i in range(0, len(words), max_words):
            piece = " ".join(words[i:i + max_words])
            if piece:
                atoms.append(_Atom(page, page, [piece]))
    return atoms


def _leads_in(paragraph: str) -> bool:
    """The paragraph before a list leads into it (its last sentence, when it is long), unless it is a
    warning box of its own ("NOTE ...", "WARNING ...", "CAUTION ..."): that packs as prose."""
    return not BOX_RE.match(paragraph)


def is_item(paragraph: str) -> bool:
    return bool(ITEM_RE.match(paragraph))


def _atoms(section: Section, max_words: int) -> list[_Atom]:
    """The section's paragraphs as atoms: prose sentences, and lists with their lead-in. A paragraph
    that starts in lower case right after an item continues that item (a line wrapped into a block of
    its own)."""
    atoms: list[_Atom] = []
    paras = [(pg, t.strip()) for pg, t in section.paragraphs if t.strip()]
    i = 0
    while i < len(paras):
        page, text = paras[i]
        if not is_item(text):
            nxt = paras[i + 1][1] if i + 1 < len(paras) else ""
            if nxt and is_item(nxt) and _leads_in(text):  # this paragraph leads into a list
                sentences = chunk_sentences(text)
                lead = sentences[-1] if len(text.split()) > LEAD_IN_WORDS else text
                if lead is not text:
                    atoms.extend(_pieces(page, " ".join(sentences[:-1]), max_words))
                lead_page = page
            else:
                atoms.extend(_pieces(page, text, max_words))
                i += 1
                continue
            i += 1
        else:
            lead, lead_page = "", page
        items: list[str] = []
        segments: list[list[tuple[int, str]]] = []
        while i < len(paras):
            pg, t = paras[i]
            if is_item(t):
                items.append(t)
                segments.append([(pg, t)])
            elif items and t[:1].islower():
                items[-1] = f"{items[-1]} {t}"
                segments[-1].append((pg, t))
            else:
                break
            i += 1
        if not items:  # a lead-in with nothing after it (cannot happen: nxt was an item)
            atoms.extend(_pieces(lead_page, lead, max_words))
            continue
        if len(lead.split()) > max_words // 2:  # a lead-in this long is prose; the list goes alone
            atoms.extend(_pieces(lead_page, lead, max_words))
            lead = ""
        first, last = segments[0][0][0], max(pg for seg in segments for pg, _ in seg)
        atoms.append(_Atom(lead_page if lead else first, last, [lead] + items, True, segments))
    return atoms


def _announces(lead: str) -> bool:
    """Does the lead-in announce the list ("... include—", "... the following steps:", "as follows.")?
    The paragraph that happens to precede a manual's lettered paragraphs ("a.", "(1)") does not."""
    return bool(ANNOUNCE_RE.search(lead.rstrip()))


def _item_pieces(segments: list[tuple[int, str]], budget: int) -> list[tuple[int, int, str]]:
    """An item (its text by page) as pieces (first page, last page, text) of at most `budget` words
    cut between its sentences (a sentence longer than that is cut by words), so that a long lettered
    paragraph does not break mid-sentence and each piece names the pages its text is on."""
    text = " ".join(t for _, t in segments)
    if len(text.split()) <= budget:
        return [(segments[0][0], segments[-1][0], text)]
    pieces: list[tuple[int, int, str]] = []
    cur: list[_Atom] = []
    for atom in (a for pg, t in segments for a in _pieces(pg, t, budget)):
        if cur and sum(a.words for a in cur) + atom.words > budget:
            pieces.append((cur[0].page_start, cur[-1].page_end, " ".join(a.text for a in cur)))
            cur = []
        cur.append(atom)
    if cur:
        pieces.append((cur[0].page_start, cur[-1].page_end, " ".join(a.text for a in cur)))
    return pieces


def _split_list(atom: _Atom, max_words: int) -> list[_Atom]:
    """A list longer than a passage: parts of whole items. Each part opens with the lead-in when the
    lead-in announces the list and the items are steps (LIST_ITEM_WORDS or fewer words on average);
    otherwise only the first part has it: a manual's numbered paragraphs, or a list of paragraph-long
    items, is body text, and a lead-in repeated on each of its parts makes near-copies that match the
    lead-in's words alike and fill a question's first hits. An item longer than a passage on its own
    is cut into pieces between its sentences (its first piece keeps its number)."""
    lead = atom.lines[0]
    steps = atom.lines[1:]
    repeat = _announces(lead) and sum(len(t.split()) for t in steps) <= LIST_ITEM_WORDS * len(steps)
    budget = max(20, max_words - len(lead.split()))
    items = [piece for seg in atom.segments for piece in _item_pieces(seg, budget)]
    parts: list[_Atom] = []
    cur: list[tuple[int, int, str]] = []

    def close() -> None:
        head = lead if repeat or not parts else ""
        parts.append(_Atom(cur[0][0], max(e for _, e, _ in cur), [head] + [t for _, _, t in cur], True,
                           [[(p, t)] for p, _, t in cur]))

    for item in items:
        room = budget if repeat or not parts else max_words
        if cur and sum(len(t.split()) for _, _, t in cur) + len(item[2].split()) > room:
            close()
            cur = []
        cur.append(item)
    if cur:
        close()
    return parts


def chunk_section(section: Section, max_words: int = MAX_WORDS, overlap: int = OVERLAP_WORDS) -> list[Passage]:
    atoms: list[_Atom] = []
    for atom in _atoms(section, max_words):
        atoms.extend(_split_list(atom, max_words) if atom.is_list and atom.words > max_words else [atom])
    passages: list[Passage] = []
    start = 0
    while start < len(atoms):
        end, words = start, 0
        while end < len(atoms) and (words + atoms[end].words <= max_words or end == start):
            words += atoms[end].words
            end += 1
        chunk = atoms[start:end]
        text = " ".join(a.text for a in chunk)
        if len(text.split()) >= MIN_WORDS or not passages:
            passages.append(Passage(text, section.path, chunk[0].page_start, max(a.page_end for a in chunk)))
        if end >= len(atoms):
            break
        # overlap: whole prose sentences stepped back from the end, never a list (it is whole where it is)
        back, kept = end, 0
        while back - 1 > start and not atoms[back - 1].is_list and kept + atoms[back - 1].words <= overlap:
            back -= 1
            kept += atoms[back].words
        start = back if back > start else end
    return [p for p in passages if p.text.strip()]


def figure_passage(figure: Figure) -> Passage:
    return Passage(figure.caption, figure.section_path, figure.page, figure.page, kind="figure",
                   figure_number=figure.number)


def chunk_book(sections: list[Section], figures: list[Figure]) -> list[Passage]:
    """Every section's passages in reading order, each figure's caption placed after the passages of its
    section on its page, so ordinal order is reading order; each passage's text kind (ingest/kinds.py)."""
    passages: list[Passage] = []
    by_section: dict[tuple, list[Figure]] = {}
    for f in figures:
        by_section.setdefault(tuple(f.section_path), []).append(f)
    placed: set[int] = set()
    for section in sections:
        own = chunk_section(section)
        figs = [f for f in by_section.get(tuple(section.path), [])
                if id(f) not in placed and section.page_start <= f.page <= section.page_end]
        for f in figs:
            placed.add(id(f))
        for p in own:
            while figs and figs[0].page < p.page_start:
                passages.append(figure_passage(figs.pop(0)))
            passages.append(p)
        passages.extend(figure_passage(f) for f in figs)
    passages.extend(figure_passage(f) for f in figures if id(f) not in placed)
    for i, p in enumerate(passages):
        p.ordinal = i
        p.text_kind = text_kind(p.text, p.section_path)
    return passages
