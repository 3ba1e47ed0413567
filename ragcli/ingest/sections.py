"""Sections from the outline, refined or replaced by headings detected from font size and weight.

Every text line is assigned to the last section heading that precedes it in reading order, so a
section knows its pages and its paragraphs (each with its physical page). Positions are counted in
reading order (block by block, line by line), not by height on the page: in a two-column article a
heading low in the left column comes before the text at the top of the right column.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ragcli.ingest.items import ITEM_RE
from ragcli.types import Section

MAX_LEVELS = 3


@dataclass
class Marker:
    page: int
    pos: int  # index of the heading line on its page in reading order; -1: the top of the page
    path: list[str]


def _page_lines(page):
    """(position, line) of one page in reading order."""
    pos = 0
    for block in page.blocks:
        for line in block.lines:
            yield pos, line
            pos += 1


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def _locate(pages, page_no: int, title: str) -> int:
    """Position of the outline title on its page, so a section can start mid-page; -1 when not found."""
    want = _norm(title)[:24]
    if not want or not (1 <= page_no <= len(pages)):
        return -1
    for pos, line in _page_lines(pages[page_no - 1]):
        got = _norm(line.text)
        if got and (got.startswith(want[: len(got)]) or want.startswith(got[:24])) and len(got) > 3:
            return pos
    return -1


def outline_markers(pages, toc) -> list[Marker]:
    stack: list[str] = []
    markers = []
    top = [e for e in toc if e[0] == 1]
    if len(top) == 1 and len(toc) > 2:  # a single root ("COVER") around the whole book says nothing
        toc = [[e[0] - 1] + list(e[1:]) for e in toc if e[0] > 1]
    for entry in toc:
        level, title, page_no = entry[0], " ".join(str(entry[1]).split()), entry[2]
        if page_no < 1:
            continue
        stack = stack[: level - 1] + [title]
        markers.append(Marker(page_no, _locate(pages, page_no, title), list(stack)))
    return markers


def _bold_run(block) -> int:
    n = 0
    for line in block.lines:
        if not line.bold:
            break
        n += 1
    return n


def heading_markers(pages, body: float, is_heading) -> list[tuple[Marker, float, bool]]:
    found = []
    for p in pages:
        pos = 0
        for block in p.blocks:
            line = block.lines[0]
            if is_heading(line, body) and (line.size >= body + 1.5 or _bold_run(block) <= 2):
                text = line.text.strip()
                if len(block.lines) > 1 and is_heading(block.lines[1], body) and len(text) < 40:
                    text = f"{text} {block.lines[1].text.strip()}"  # "2-20." + "Tourniquet"
                found.append((Marker(p.number, pos, [text]), round(line.size, 1), line.bold))
            pos += len(block.lines)
    return found


def _levels(found) -> list[Marker]:
    """Nest detected headings by font size. A size used by a single heading (an article's title, its
    author line) makes a flat section of its own instead of a parent of everything after it."""
    counts = Counter(size for _, size, _ in found)
    shared = [size for size in counts if counts[size] > 1] or list(counts)
    sizes = sorted(shared, reverse=True)[:MAX_LEVELS]
    stack: list[tuple[int, str]] = []  # (level, title): a heading closes those of its level and below
    markers = []
    for marker, size, _ in found:
        if size not in shared:
            stack = []
            markers.append(Marker(marker.page, marker.pos, list(marker.path)))
            continue
        level = sizes.index(size) + 1 if size in sizes else MAX_LEVELS
        stack = [(lv, t) for lv, t in stack if lv < level] + [(level, marker.path[0])]
        markers.append(Marker(marker.page, marker.pos, [t for _, t in stack]))
    return markers


def _refine(outline: list[Marker], found) -> list[Marker]:
    """Nest detected headings under a shallow outline (FM 4-25.11 outlines chapters only)."""
    titles = {(_norm(m.path[-1])[:30]) for m in outline}
    merged = list(outline)
    for marker, _, _ in found:
        key = _norm(marker.path[0])[:30]
        if any(key and (key in t or t in key) for t in titles):
            continue
        parent = _parent(outline, marker)
        merged.append(Marker(marker.page, marker.pos, (parent.path if parent else []) + marker.path))
    return sorted(merged, key=lambda m: (m.page, m.pos))


def _parent(outline: list[Marker], marker: Marker):
    best = None
    for m in outline:
        if (m.page, m.pos) <= (marker.page, marker.pos):
            best = m
    return best


def build_sections(pages, toc, body: float, is_heading) -> list[Section]:
    """`is_heading(line, body)`: the reader's test for a heading line (pdf.is_heading)."""
    found = heading_markers(pages, body, is_heading)
    if toc:
        markers = outline_markers(pages, toc)
        depth = max(len(m.path) for m in markers) if markers else 0
        if found and (depth <= 2 or len(pages) / max(1, len(markers)) > 6):
            markers = _refine(markers, found)
    elif found:
        markers = _levels(found)
    else:
        markers = [Marker(p.number, -1, [f"Page {p.number}"]) for p in pages]
    markers.sort(key=lambda m: (m.page, m.pos))
    return _fill(pages, markers)


def _fill(pages, markers: list[Marker]) -> list[Section]:
    sections: list[Section] = []
    current = Section(["Front matter"], 1, 1)
    idx = 0
    heading_keys = {(m.page, m.pos) for m in markers}
    for p in pages:
        pos = 0
        for block in p.blocks:
            lines = []
            for line in block.lines:
                while idx < len(markers) and (markers[idx].page, markers[idx].pos) <= (p.number, pos):
                    if lines:  # text before the heading in this block stays with the section before
                        current.paragraphs.append((p.number, _unwrap(lines)))
                        current.page_end = max(current.page_end, p.number)
                        lines = []
                    _close(current, sections)
                    m = markers[idx]
                    current = Section(m.path, m.page, m.page, level=len(m.path))
                    idx += 1
                is_title = (p.number, pos) in heading_keys and _norm(line.text) and \
                    _norm(current.path[-1]).startswith(_norm(line.text)[:20])
                pos += 1
                if not is_title:  # the heading itself is in the path
                    if lines and ITEM_RE.match(line.text):  # a list item starts a paragraph of its own
                        current.paragraphs.append((p.number, _unwrap(lines)))
                        current.page_end = max(current.page_end, p.number)
                        lines = []
                    lines.append(line.text)
            if lines:
                current.paragraphs.append((p.number, _unwrap(lines)))
                current.page_end = max(current.page_end, p.number)
    _close(current, sections)
    for s in sections:
        s.paragraphs = mend_paragraphs(s.paragraphs)
        s.text = "\n\n".join(t for _, t in s.paragraphs)
    return sections


_CAPTION = re.compile(r"^\s*(?:Figure|FIGURE|Fig\.|FIG\.|Table|TABLE)\s*[A-Z]?\d+(?:[-.]\d+)*[a-z]?\s*[.:\-–—]?\s+\S")
_SENTENCE_END = re.compile(r"[.!?:;)\]\"'”’]\s*$")


def mend_paragraphs(paragraphs: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """A sentence a figure interrupts is whole again: a paragraph that stops mid-sentence, followed by
    captions and then a paragraph that goes on in lower case ("... Hyperventilation therefore" /
    "Figure 1.2: ..." / "constricts the cerebral arterioles ..."), is joined to its end, and the
    captions follow the joined paragraph."""
    out = list(paragraphs)
    i = 0
    while i < len(out) - 2:
        page, text = out[i]
        j = i + 1
        while j < len(out) and _CAPTION.match(out[j][1]):
            j += 1
        if (j > i + 1 and j < len(out) and not _SENTENCE_END.search(text) and out[j][1][:1].islower()
                and not _CAPTION.match(text) and not ITEM_RE.match(out[j][1])):
            joined = (page, f"{text} {out[j][1]}")
            out = out[:i] + [joined] + out[i + 1:j] + out[j + 1:]
        i += 1
    return out


def _close(section: Section, sections: list[Section]) -> None:
    if section.paragraphs or section.path != ["Front matter"]:
        sections.append(section)


def _unwrap(lines: list[str]) -> str:
    text = ""
    for line in lines:
        if text.endswith("-") and line[:1].islower():
            text = text[:-1] + line
        else:
            text = f"{text} {line}" if text else line
    return re.sub(r"\s+", " ", text).strip()
