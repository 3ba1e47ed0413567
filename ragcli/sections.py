"""Sections from the outline, refined or replaced by headings detected from font size and weight.

Every text line is assigned to the last section heading that precedes it in reading order, so a
section knows its pages and its paragraphs (each with its physical page).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .types import Section

MAX_LEVELS = 3


@dataclass
class Marker:
    page: int
    y: float
    path: list[str]


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def _locate(pages, page_no: int, title: str) -> float:
    """y of the outline title on its page, so a section can start mid-page; 0 when not found."""
    want = _norm(title)[:24]
    if not want or not (1 <= page_no <= len(pages)):
        return 0.0
    for block in pages[page_no - 1].blocks:
        for line in block.lines:
            got = _norm(line.text)
            if got and (got.startswith(want[: len(got)]) or want.startswith(got[:24])) and len(got) > 3:
                return line.y0
    return 0.0


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
        for block in p.blocks:
            line = block.lines[0]
            if is_heading(line, body) and (line.size >= body + 1.5 or _bold_run(block) <= 2):
                text = line.text.strip()
                if len(block.lines) > 1 and is_heading(block.lines[1], body) and len(text) < 40:
                    text = f"{text} {block.lines[1].text.strip()}"  # "2-20." + "Tourniquet"
                found.append((Marker(p.number, line.y0, [text]), round(line.size, 1), line.bold))
    return found


def _levels(found) -> list[Marker]:
    sizes = sorted({size for _, size, _ in found}, reverse=True)[:MAX_LEVELS]
    stack: list[str] = []
    markers = []
    for marker, size, _ in found:
        level = sizes.index(size) + 1 if size in sizes else MAX_LEVELS
        stack = stack[: level - 1] + [marker.path[0]]
        markers.append(Marker(marker.page, marker.y, list(stack)))
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
        merged.append(Marker(marker.page, marker.y, (parent.path if parent else []) + marker.path))
    return sorted(merged, key=lambda m: (m.page, m.y))


def _parent(outline: list[Marker], marker: Marker):
    best = None
    for m in outline:
        if (m.page, m.y) <= (marker.page, marker.y):
            best = m
    return best


def build_sections(pages, toc, body: float) -> list[Section]:
    from .pdf import is_heading

    found = heading_markers(pages, body, is_heading)
    if toc:
        markers = outline_markers(pages, toc)
        depth = max(len(m.path) for m in markers) if markers else 0
        if found and (depth <= 2 or len(pages) / max(1, len(markers)) > 6):
            markers = _refine(markers, found)
    elif found:
        markers = _levels(found)
    else:
        markers = [Marker(p.number, 0.0, [f"Page {p.number}"]) for p in pages]
    markers.sort(key=lambda m: (m.page, m.y))
    return _fill(pages, markers)


def _fill(pages, markers: list[Marker]) -> list[Section]:
    sections: list[Section] = []
    current = Section(["Front matter"], 1, 1)
    idx = 0
    heading_keys = {(m.page, round(m.y)) for m in markers}
    for p in pages:
        for block in p.blocks:
            lines = []
            for line in block.lines:
                while idx < len(markers) and (markers[idx].page, markers[idx].y) <= (p.number, line.y0 + 1):
                    _close(current, sections)
                    m = markers[idx]
                    current = Section(m.path, m.page, m.page, level=len(m.path))
                    idx += 1
                if (p.number, round(line.y0)) in heading_keys and _norm(line.text) and \
                        _norm(current.path[-1]).startswith(_norm(line.text)[:20]):
                    continue  # the heading itself is in the path
                lines.append(line.text)
            if lines:
                current.paragraphs.append((p.number, _unwrap(lines)))
                current.page_end = max(current.page_end, p.number)
    _close(current, sections)
    for s in sections:
        s.text = "\n\n".join(t for _, t in s.paragraphs)
    return sections


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
