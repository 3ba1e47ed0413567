"""Split answers into claims (sentences); passages' evidence sentences are `text.sentences`.

Sentence boundaries come from `text.segment` (pysbd with abbreviation fixes). A thin layer fixes what
it leaves for ragcli's answers:

* citation marks after the full stop ("... end. [S1] Next.") belong to the sentence before them, unless
  the answer puts its labels before its sentences ("[S1] Apply pressure. [S2] Elevate the leg.": it
  opens with a mark and no sentence ends with one), as small models sometimes do;
* list markers ("1. ", "- ", "• ") are not part of a claim.
"""
from __future__ import annotations

import re

from ragcli.answer.citations import cited_labels
from ragcli.text import LIST_MARKER, segment

_MARKS = r"(?:\[[A-Za-z]?\s*\d+(?:\s*[-–,;]\s*[A-Za-z]?\s*\d+)*\]\s*)+"
_LEADING_MARKS = re.compile(rf"^\s*({_MARKS})")
_CANONICAL_MARK = re.compile(r"\s*\[[A-Z]\d+(?:\s*[,;]\s*[A-Z]\d+)*\]")
_ONLY_MARKS = re.compile(rf"^\s*{_MARKS}$")


def _move_leading_marks(parts: list[str]) -> list[str]:
    """"... end. [S1] Next." -> the marks join the sentence they follow."""
    out: list[str] = []
    for part in parts:
        m = _LEADING_MARKS.match(part)
        if m and out:
            out[-1] = out[-1].rstrip() + (" " if out[-1] != out[-1].rstrip() else "") + m.group(1).strip()
            part = part[m.end():]
        out.append(part)
    return out


def _attach_orphans(parts: list[str]) -> list[str]:
    """A piece that is only citation marks (nothing before it) joins the next sentence."""
    out: list[str] = []
    carry = ""
    for part in parts:
        if _ONLY_MARKS.match(part):
            carry += part.strip()
            continue
        out.append((carry + " " + part) if carry else part)
        carry = ""
    if carry and out:
        out[-1] += " " + carry
    elif carry:
        out.append(carry)
    return out


def labels_lead(parts: list[str]) -> bool:
    """Does the answer put its labels before its sentences? It opens with a mark and no sentence
    ends with one."""
    parts = [LIST_MARKER.sub("", p).strip() for p in parts if p.strip()]
    ending = [p for p in parts if re.search(rf"{_MARKS}[.!?]?\s*$", p)]
    return bool(parts) and bool(_LEADING_MARKS.match(parts[0])) and not ending


def split_claims(text: str) -> list[str]:
    """Sentences of an answer, each with its citation marks (those that follow it, or those before it
    when the answer puts labels first); list markers removed."""
    parts = segment(text)
    if not labels_lead(parts):
        parts = _move_leading_marks(parts)
    parts = [LIST_MARKER.sub("", p).strip() for p in parts]
    return [p for p in _attach_orphans([p for p in parts if p]) if p]


def attach_citations(sentences: list[str]) -> list[tuple[str, list[str]]]:
    """(sentence without its citation marks, labels it cites) for each sentence."""
    return [(_CANONICAL_MARK.sub("", s).strip(), cited_labels(s)) for s in sentences]
