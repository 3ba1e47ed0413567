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
from typing import Optional

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


# ------------------------------------------------------------------------------ labels that back
_MARK = re.compile(r"\s*\[[A-Z]\d+(?:\s*[,;]\s*[A-Z]\d+)*\]")
_END_PUNCT = re.compile(r"[.!?…]+[\"'”’)]*\s*$")
_PARAGRAPHS = re.compile(r"\n\s*\n")


def _spans(text: str, pieces: list[str], start: int = 0) -> list[Optional[tuple[int, int]]]:
    """Where each piece of `split_claims` is in `text` (whitespace may differ: list markers are cut and
    moved marks re-spaced), searched in order from `start`; None for a piece not found."""
    out: list[Optional[tuple[int, int]]] = []
    pos = start
    for piece in pieces:
        pattern = r"\s*".join(re.escape(tok) for tok in piece.split())
        m = re.compile(pattern).search(text, pos) if pattern else None
        if m is None:
            out.append(None)
            continue
        out.append((m.start(), m.end()))
        pos = m.end()
    return out


def _mark(labels: list[str]) -> str:
    return "".join(f"[{lab}]" for lab in labels)


def backing_labels_text(text: str, claims) -> Optional[str]:
    """The answer with each sentence whose label ragcli moved (a claim with `cited_as`) carrying the
    label that backs it instead of the one the model wrote, or None when no label was moved (or the
    sentences cannot be found in the text). A script that follows the labels of the answer's text
    must land on the passage that states the sentence.

    The answer is read as grounding.score reads it (paragraphs, then sentences, a label covering the
    uncited sentences of its run), and written so that it reads back the same way: a moved sentence's
    own marks are replaced by the backing label; a sentence that had inherited the wrong label gets the
    backing label of its own; and a neighbour that inherited the replaced label gets that label
    written out, so it keeps citing what it cited."""
    if not any(c.cited_as for c in claims):
        return None
    # the claims of each paragraph, in order, as grounding.score made them
    located: list[tuple[object, tuple[int, int], bool, bool]] = []  # claim, span, own marks, labels lead
    todo = list(claims)
    offset = 0
    for para in _PARAGRAPHS.split(text):
        start = text.find(para, offset)
        offset = start + len(para)
        pieces = split_claims(para)
        lead = labels_lead(segment(para))
        spans = _spans(text, pieces, start)
        for piece, span in zip(pieces, spans):
            if not todo:
                break
            claim = todo[0]
            if _MARK.sub("", piece).strip() != claim.text or span is None:
                return None  # the text no longer matches the claims (e.g. --verify rewrote it)
            located.append((todo.pop(0), span, bool(_MARK.search(piece)), lead))
    if todo:
        return None
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement), non-overlapping
    for i, (claim, (a, b), own, lead) in enumerate(located):
        if not claim.cited_as:
            continue
        new = _mark(claim.citations)
        if own:
            marks = list(_MARK.finditer(text, a, b))
            keep = marks[0] if lead else marks[-1]
            spaced = any(m.group()[:1].isspace() for m in marks)
            for m in marks:
                edits.append((m.start(), m.end(), (" " if spaced else "") + new if m is keep else ""))
        elif lead:
            edits.append((a, a, new + " "))
        else:
            end = _END_PUNCT.search(text, a, b)
            at = end.start() if end else b
            edits.append((at, at, " " + new))
        # the neighbour that inherited this sentence's label (the one before it when labels follow
        # their sentences, after it when they lead) keeps it, written out
        step = 1 if lead else -1
        j = i + step
        while 0 <= j < len(located):
            other, (oa, ob), other_own, _ = located[j]
            if other_own or other.cited_as:
                break
            if other.attributed:
                break  # no label covered it, so none covers past it
            if other.citations:
                if lead:
                    edits.append((oa, oa, _mark(other.citations) + " "))
                else:
                    end = _END_PUNCT.search(text, oa, ob)
                    at = end.start() if end else ob
                    edits.append((at, at, " " + _mark(other.citations)))
                break
            j += step
    out = text
    for a, b, rep in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        out = out[:a] + rep + out[b:]
    return out
