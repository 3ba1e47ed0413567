"""Citation marks in generated text, parsed (pure string logic): what a bracketed span holds (labels,
sources, pages, sections, figures, bare numbers, each item resolved against the given labels or
reported with its reason) and where a bracket closes. answer/citations.py walks the text, rewrites the
marks to labels and removes the rest; the rules are in its docstring.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ragcli.types import RemovedCitation

MAX_SPAN = 80  # longest mark (brackets included, inner marks already handled); longer is prose
MAX_HOLD = 4 * MAX_SPAN  # a bracket not closed within this many characters is prose (stream hold-back)

UNKNOWN_LABEL = "unknown label"
BARE_NUMBER = "bare number"
PAGE_REFERENCE = "page reference"
SECTION_REFERENCE = "section reference"
FIGURE_REFERENCE = "figure reference"
AMBIGUOUS_REFERENCE = "ambiguous reference"
INVALID_RANGE = "invalid range"
MALFORMED = "malformed citation"
BOOK_REFERENCE = "book's own reference"
UNFINISHED = "unfinished citation"
BOOK_OPEN, BOOK_CLOSE = "⟨", "⟩"  # how a book's own citation-like mark is shown: never a bracket here

_OPEN = {"[": "]", "(": ")", "【": "】", "［": "］"}
_CLOSE = set(_OPEN.values())
_SQUARE = {"[", "【", "［"}
_DASH = "\\-–—‐‑"
_MAX_RANGE = 20
_MORE, _NONE = -2, -1

_LEAD_IN = re.compile(
    r"^(?:see\s+also|see|cf\.?|compare|e\.g\.|i\.e\.|from|in|per|according\s+to"
    r"|as\s+(?:shown|described|noted|stated|discussed)\s+in)(?:\s*[,:]\s*|\s+|$)",
    re.I,
)
_SECTION = re.compile(
    r"^(?:the\s+)?(?:(?:section|chapter)\b|sect\.|sec\.|chap\.|ch\.|§)\s*(?:[:#]\s*)?"
    r"(?:(?:on|titled|entitled|called|named)\s+)?(?P<title>\S.*)$",
    re.I,
)
_NOT_TITLES = {"below", "above", "later", "earlier", "before", "after"}
_SEP = re.compile(r"\s*(?:[,;&/]|\band\b)\s*|\s+(?=(?:pp?|pg)\.|pages?\b)", re.I)
_KIND = re.compile(
    r"^(?P<word>sources?|src\.?|passages?|refs?\.?|references?|citations?|figures?|figs?\.?"
    r"|pages?|pp\.?|p\.|pgs?\.)\s*[:#]?\s*(?P<val>.*)$",
    re.I,
)
_LABEL_VAL = re.compile(
    rf"^(?P<p>[a-z])\s*(?P<n>\d+)(?:\s*[{_DASH}]\s*(?:(?P<p2>[a-z])\s*)?(?P<n2>\d+))?$", re.I
)
_NUM_VAL = re.compile(rf"^(?P<n>\d+)(?:\s*[{_DASH}]\s*(?P<n2>\d+))?$")
_PAGE_VAL = re.compile(rf"^(?=.*\d|[ivxlcdm]+$)[0-9a-z]+(?:\s*[{_DASH}.]\s*[0-9a-z]+)*$", re.I)
_FIG_VAL = re.compile(rf"^\d+(?:[{_DASH}.]\d+)*[a-z]?$", re.I)
_CANONICAL = re.compile(r"\[([A-Z]\d+)\]")
_KIND_WORDS = ("source", "passage", "ref", "figure", "page", "p.", "pp.", "section", "chapter")
_SENTENCE_END = re.compile(r"[.!?…]+[\"'”’)]*")


@dataclass
class _Context:
    valid: frozenset
    prefixes: frozenset
    pages: dict
    sections: dict
    figures: dict
    book: frozenset = frozenset()  # _mark_key of every mark the given passages hold as text


@dataclass
class _Group:
    kept: list
    removed: list
    bare_only: bool = False


def _norm_label(label: str) -> str:
    return re.sub(r"[\s\[\]]", "", label).upper()


def _key(text: str) -> str:
    text = re.sub(f"[{_DASH}]", "-", text.casefold())
    text = re.sub(r"[\"'“”‘’«»]", "", text)
    return re.sub(r"\s+", " ", text).strip(" .,;:")


def _table(mapping: dict | None, valid: frozenset) -> dict:
    out: dict[str, list[str]] = {}
    for key, labels in (mapping or {}).items():
        good = [_norm_label(lab) for lab in labels if _norm_label(lab) in valid]
        keys = {_key(str(key)), re.sub(r"^\d+(?:\.\d+)*\s+", "", _key(str(key)))}  # "2.1 Skull"
        for k in keys if good else ():
            out.setdefault(k, []).extend(lab for lab in good if lab not in out.get(k, []))
    return out


def _make_context(valid_labels, page_labels=None, section_titles=None, figure_labels=None,
                  book_marks=None) -> _Context:
    valid = frozenset(_norm_label(lab) for lab in valid_labels)
    prefixes = frozenset({"S", "F"} | {lab[0] for lab in valid if re.fullmatch(r"[A-Z]\d+", lab)})
    return _Context(valid, prefixes, _table(page_labels, valid), _table(section_titles, valid),
                    _table(figure_labels, valid), frozenset(book_marks or ()))


def _mark_key(mark: str) -> str:
    """A mark's content whatever its brackets: "[Source 2]", "(source 2)", "⟨Source 2⟩" -> "source 2"."""
    return _key(re.sub(r"[\[\]()【】［］⟨⟩^]", " ", mark))


def _lookup(value: str, table: dict) -> list[str]:
    key = _key(value)
    if key in table:
        return table[key]
    m = re.fullmatch(r"(\d+)\s*-\s*(\d+)", key)
    if not m or not 0 <= int(m[2]) - int(m[1]) <= _MAX_RANGE:
        return []
    return [lab for p in range(int(m[1]), int(m[2]) + 1) for lab in table.get(str(p), [])]


def _word_kind(word: str) -> str:
    word = word.lower().rstrip(".")
    if word.startswith(("source", "src", "passage")):
        return "S"
    if word.startswith(("ref", "citation")):
        return "ref"
    if word.startswith("fig"):
        return "figure"
    return "page"


def _expand(prefix: str, n: str, n2: str | None, prefix2: str | None = None) -> list[str] | None:
    """Labels of one item; None for a range that makes no sense (reversed, mixed, too long)."""
    if n2 is None:
        return [f"{prefix}{int(n)}"]
    if (prefix2 and prefix2.upper() != prefix) or not 0 <= int(n2) - int(n) <= _MAX_RANGE:
        return None
    return [f"{prefix}{k}" for k in range(int(n), int(n2) + 1)]


def _parse_item(raw: str, inherited: str | None, ctx: _Context):
    """-> ((kind, value), kind to inherit) or None when the item is not citation-like."""
    inner = re.fullmatch(r"\0([A-Z])\d+", raw)
    if inner:
        return ("inner", [raw[1:]]), inner[1]
    m = _KIND.match(raw)
    word, val = (m["word"], m["val"]) if m and m["val"] else (None, raw)
    kind = _word_kind(word) if word else inherited
    lab = _LABEL_VAL.match(val)
    if lab and lab["p"].upper() in ctx.prefixes and (word is None or kind not in ("page", "figure")):
        p = lab["p"].upper()
        return ("label", _expand(p, lab["n"], lab["n2"], lab["p2"])), p
    if kind == "page" and _PAGE_VAL.match(val):
        return ("page", val), kind
    if kind == "figure" and _FIG_VAL.match(val):
        return ("figure", val), kind
    num = _NUM_VAL.match(val)
    if num and kind in ctx.prefixes:
        return ("label", _expand(kind, num["n"], num["n2"])), kind
    if num and kind in (None, "ref"):
        return ("bare" if kind is None else "ref", val), kind
    return None


def _resolve(kind: str, value, raw: str, ctx: _Context) -> tuple[list[str], list[tuple[str, str]]]:
    """One parsed item -> (labels kept, [(text, reason) removed])."""
    if kind in ("label", "inner"):
        if value is None:
            return [], [(raw, INVALID_RANGE)]
        return ([lab for lab in value if lab in ctx.valid],
                [(lab, UNKNOWN_LABEL) for lab in value if lab not in ctx.valid])
    if kind in ("page", "figure", "section"):
        table = {"page": ctx.pages, "figure": ctx.figures, "section": ctx.sections}[kind]
        found = _lookup(value, table)
        reason = {"page": PAGE_REFERENCE, "figure": FIGURE_REFERENCE, "section": SECTION_REFERENCE}
        return (found, []) if found else ([], [(raw, reason[kind])])
    reason = {"bare": BARE_NUMBER, "ref": AMBIGUOUS_REFERENCE}.get(kind, MALFORMED)
    return [], [(raw, reason)]


def _items(body: str, square: bool, ctx: _Context) -> list[tuple[str, object, str]] | None:
    """Split a group body into (kind, value, raw) items; None when it is not a citation group."""
    sec = _SECTION.match(body)
    if sec:
        title = sec["title"].strip(" \"'“”‘’«».,;:")
        if not title or title.lower() in _NOT_TITLES:
            return None
        return [("section", title, body)]
    out, inherited = [], None
    for raw in (part.strip() for part in _SEP.split(body)):
        if not raw:
            continue
        parsed = _parse_item(raw, inherited, ctx)
        if parsed is None and not square:
            return None
        (kind, value), inherited = parsed if parsed else (("malformed", raw), inherited)
        out.append((kind, value, raw))
    kinds = {kind for kind, _, _ in out}
    if not out or kinds <= {"bare", "malformed"} and not (square and kinds == {"bare"}):
        return None
    if "malformed" in kinds and "label" not in kinds:  # prose around inner marks stays prose
        return None
    return out


def _parse_group(content: str, square: bool, ctx: _Context, emptied: bool, mark: str) -> _Group | None:
    """Parse a bracket's content (inner marks already handled) as a citation group."""
    body = _CANONICAL.sub(", \0\\1, ", content.replace("\0", " "))  # inner marks become items
    body = re.sub(r"[\[\]【】［］]", " ", body).strip(" ,;")
    body = _LEAD_IN.sub("", body, count=1).strip()
    if not body:
        return _Group([], []) if emptied else None
    items = _items(body, square, ctx)
    if items is None:
        return None
    kept: list[str] = []
    removed: list[tuple[str, str]] = []
    for kind, value, raw in items:
        labels, gone = _resolve(kind, value, raw, ctx)
        kept += [lab for lab in labels if lab not in kept]
        removed += gone
    if not kept and len(removed) == 1:
        removed = [(mark, removed[0][1])]
    bare = all(kind == "bare" for kind, _, _ in items)
    return _Group(kept, [RemovedCitation(text, why) for text, why in removed], bare)


def _find_close(buf: str, i: int, limit: int) -> int:
    """Index of the bracket closing buf[i]; _NONE if it is not a mark span, _MORE if undecided yet."""
    stack = [_OPEN[buf[i]]]
    j = i + 1
    while j < len(buf):
        if j >= limit or buf[j] in "\r\n":
            return _NONE
        ch = buf[j]
        if ch in _OPEN:
            stack.append(_OPEN[ch])
        elif ch in _CLOSE:
            if ch != stack[-1]:
                return _NONE
            stack.pop()
            if not stack:
                return j
        j += 1
    return _NONE if j >= limit else _MORE
