"""Split answers into claims (sentences) and passages into evidence sentences.

Sentence boundaries come from pysbd (the Golden Rules segmenter: abbreviations such as "e.g.", "i.e.",
"Dr.", "Fig. 2", "p. 45", "et al.", decimals, quotes, ellipses, numbered lists), imported lazily. A thin
layer fixes what pysbd leaves for ragcli's answers:

* citation marks after the full stop ("... end. [S1] Next.") belong to the sentence before them;
* list markers ("1. ", "- ", "• ") are not part of a claim;
* a split after a few abbreviations pysbd misses ("approx.", "ca.", "resp.") is undone;
* passages from PDFs: hard line breaks are joined and "exam-\\nple" is de-hyphenated first.
"""
from __future__ import annotations

import functools
import re
from functools import lru_cache

from ragcli.answer.citations import cited_labels

_MARKS = r"(?:\[[A-Za-z]?\s*\d+(?:\s*[-–,;]\s*[A-Za-z]?\s*\d+)*\]\s*)+"
_LEADING_MARKS = re.compile(rf"^\s*({_MARKS})")
_CANONICAL_MARK = re.compile(r"\s*\[[A-Z]\d+(?:\s*[,;]\s*[A-Z]\d+)*\]")
_LIST_MARKER = re.compile(r"^\s*(?:[-*•·–]|\d{1,3}[.)]|[a-zA-Z][.)]|#{1,6})\s+")
_ONLY_MARKS = re.compile(rf"^\s*{_MARKS}$")
_MISSED_ABBREVIATIONS = ("approx.", "ca.", "resp.", "incl.", "cf.", "fig.", "figs.", "eq.", "vol.",
                         "sec.", "ch.", "p.", "pp.")


@lru_cache(maxsize=1)
def _segmenter():
    import pysbd  # pure Python; kept out of module import time all the same

    return pysbd.Segmenter(language="en", clean=False)


def _segment(text: str) -> list[str]:
    if not text.strip():
        return []
    return _segmenter().segment(text)


def _is_false_split(before: str, after: str) -> bool:
    """pysbd cut after an abbreviation it does not know ("approx.", "mg/kg i.v. every")."""
    if not before.strip() or "\n" in before:
        return False
    last = before.split()[-1].lower()
    if last in _MISSED_ABBREVIATIONS or not re.search(r"[.!?:;\"')\]]\s*$", before):
        return True
    return bool(re.match(r"\s*[a-z]", after)) and not _LIST_MARKER.match(after)


def _merge_abbreviations(parts: list[str]) -> list[str]:
    out: list[str] = []
    for part in parts:
        if out and _is_false_split(out[-1], part):
            out[-1] += part
        else:
            out.append(part)
    return out


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


def split_claims(text: str) -> list[str]:
    """Sentences of an answer, each with the citation marks that follow it; list markers removed."""
    parts = _move_leading_marks(_merge_abbreviations(_segment(text)))
    parts = [_LIST_MARKER.sub("", p).strip() for p in parts]
    return [p for p in _attach_orphans([p for p in parts if p]) if p]


def attach_citations(sentences: list[str]) -> list[tuple[str, list[str]]]:
    """(sentence without its citation marks, labels it cites) for each sentence."""
    return [(_CANONICAL_MARK.sub("", s).strip(), cited_labels(s)) for s in sentences]


def _join_lines(paragraph: str) -> str:
    paragraph = re.sub(r"([a-z])-\n\s*([a-z])", r"\1\2", paragraph)
    return re.sub(r"\s*\n\s*", " ", paragraph).strip()


def split_sentences_plain(text: str) -> list[str]:
    """Sentences of a passage (evidence candidates): hard line breaks joined, paragraphs kept apart.
    Cached: the extractive answer and the support scorer split the same passages."""
    return list(_split_plain_cached(text))


@functools.lru_cache(maxsize=1024)
def _split_plain_cached(text: str) -> tuple[str, ...]:
    sentences: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        parts = _merge_abbreviations(_segment(_join_lines(paragraph)))
        sentences += [p.strip() for p in parts if p.strip()]
    return tuple(sentences)
