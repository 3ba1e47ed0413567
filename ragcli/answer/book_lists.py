"""The book's own list structure read across retrieved passages: numbered, lettered and bulleted
lists, items with the sentences after them, lists under kind headings; and their rendering as an answer."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from ragcli.answer.citations import neutralise
from ragcli.answer.sentence_kind import _NUMBERED, _STEP_MARKER, is_caption, is_junk
from ragcli.text import sentences
from ragcli.types import Source

MAX_STEPS = 9  # items of a list answer
MAX_ITEM_SENTENCES = 4  # a list item: its marked sentence and up to 3 that follow it


Item = list[tuple[str, int, int]]  # a list item: its marked sentence, then the sentences that follow it


@dataclass
class Block:
    """A candidate answer: "sentences" (picked one by one), "list" (the book's numbered or bulleted
    list) or "item" (one numbered item and its sentences); `intro`: the sentences that introduce it
    ("... the following signs and symptoms:", or the item a list belongs to); `context`: what the
    block is also judged by (a list under a heading: the bullets of the heading before it)."""
    kind: str
    items: list[Item]
    intro: list[tuple[str, int, int]] = field(default_factory=list)
    numbered: bool = False
    context: list[tuple[str, int, int]] = field(default_factory=list)

    def sentences(self) -> list[tuple[str, int, int]]:
        return list(self.intro) + [c for item in self.items for c in item]


def _with_leads(picked: list[tuple[str, int, int]], blocks: list[Block]) -> list[tuple[str, int, int]]:
    """The picked sentences, each that continues a numbered item ("Use a stable object ... so that his
    feet will not slip off.") after the item's lead ("(3) Elevate the casualty's feet higher than the
    level of his heart."): a sentence in the middle of a step reads as the step only with it."""
    def plain(sentence: str) -> str:
        return _STEP_MARKER.sub("", sentence).strip()

    leads: dict[str, tuple[str, int, int]] = {}
    for block in blocks:
        if block.kind == "item" and not block.intro:
            lead = block.items[0][0]
            for c in block.items[0][1:]:
                leads.setdefault(plain(c[0]), lead)
    out: list[tuple[str, int, int]] = []
    shown = {plain(s) for s, _, _ in picked}
    for c in picked:
        lead = leads.get(plain(c[0]))
        if lead is not None and plain(lead[0]) not in shown:
            out.append(lead)
            shown.add(plain(lead[0]))
        out.append(c)
    return out


def _headings(parts: list[tuple[str, int, int]], sources: list[Source]) -> str:
    """The section headings of the sentences' passages (a procedure's steps rarely name their topic;
    their section does: "6-3. Snakebites")."""
    out: list[str] = []
    for _, i, _ in parts:
        path = sources[i].hit.section_path
        if path and path[-1] not in out:
            out.append(path[-1])
    return "; ".join(out)


def _render(block: Block, sources: list[Source], negated: Optional[dict[str, str]] = None) -> str:
    """Sentences and one item: prose, each sentence with its label; an item of a "DO NOT—" list
    quoted alone keeps its "DO NOT" (`negated`: `_negated_items`). A list: its intro, then one item
    a line ("1." for a numbered list, from the book's number of its first item, "- " for bullets),
    each sentence with its label."""
    def labelled(part: list[tuple[str, int, int]], negated: dict[str, str]) -> str:
        out = []
        for s, i, _ in part:
            plain = _STEP_MARKER.sub("", s).strip()
            lead = f"{negated[plain]} — " if plain in negated else ""
            out.append(f"{lead}{plain} [{sources[i].label}]")
        return " ".join(out)

    if block.kind != "list":
        return labelled(block.sentences(), negated or {})
    lines = [labelled(block.intro, {})] if block.intro else []
    # "DO NOT— • Rub the part with snow • Warm the part by massage": one item a line would read as an
    # instruction to do it; each item keeps its "DO NOT" in front
    negation = _NEGATED_LIST.search(block.intro[-1][0]) if block.intro else None
    lead = f"{negation.group(1)} — " if negation else ""
    # a list that starts at the book's step (3) (the steps before it were not retrieved) is numbered from 3
    first = max(1, _step_number(block.items[0][0][0])) if block.numbered else 1
    for n, item in enumerate(block.items, first):
        lines.append(f"{n}. {lead}{labelled(item, {})}" if block.numbered else f"- {lead}{labelled(item, {})}")
    return "\n".join(lines)


def _negated_items(blocks: list[Block]) -> dict[str, str]:
    """The first sentence of every item of a list opened by "DO NOT—" (marks off) -> "DO NOT": quoted
    alone, "Warm the part by massage ..." says the opposite of what the book says."""
    out: dict[str, str] = {}
    for block in blocks:
        negation = _NEGATED_LIST.search(block.intro[-1][0]) if block.kind == "list" and block.intro else None
        if negation:
            for item in block.items:
                out.setdefault(_STEP_MARKER.sub("", item[0][0]).strip(), negation.group(1))
    return out


# a bullet that heads the bullets after it by naming their kind: "Signs and symptoms.", "First aid measures."
_KIND_HEADING = re.compile(r"^(?:[\w-]+ ){0,2}(?:signs?|symptoms?|first aid|treatment|measures|procedures?|steps|"
                           r"self-aid|buddy aid)(?: (?:and|&) [\w-]+(?: [\w-]+)?)?\.\s*$", re.I)
_NEGATED_LIST = re.compile(r"\b(DO NOT|NEVER|Do not|Never|Don't|Avoid)\s*[—:–-]+\s*$")


def _blocks(sources: list[Source]) -> list[Block]:
    """The book's lists and numbered items in the retrieved passages (passages next to each other in
    the book read as one text): every numbered or lettered list of one marker style counting up
    ((1), (2) ... or a., b. ...), every run of bullets, every numbered item alone, and an item with
    the list it holds ("d. Get the casualty to an MTF ..." then its steps "(1)" ... "(5)"); each item
    with the sentences after it up to the next marked sentence (at most MAX_ITEM_SENTENCES)."""
    out: list[Block] = []
    for run in _reading_runs(sources):
        styles = [_marker_style(s) for s, _, _ in run]
        items: dict[int, Item] = {}
        for at, style in enumerate(styles):
            if style is None:
                continue
            item = [run[at]]
            for nxt in range(at + 1, len(run)):
                if styles[nxt] is not None or len(item) >= MAX_ITEM_SENTENCES:
                    break
                item.append(run[nxt])
            items[at] = item
            if style != "bullet" and len(item) > 1:
                out.append(Block("item", [item]))
                opener = _opener(run, at)
                if opener and styles[at - 1] is None:
                    out.append(Block("item", [item], intro=[opener]))
        lists = [(style, found) for style in sorted({s for s in styles if s}) for found in _lists(run, styles, style)]
        for style, found in lists:
            opener = _opener(run, found[0])
            out.append(Block("list", [items[at] for at in found[:MAX_STEPS]], [opener] if opener else [],
                             numbered=style != "bullet"))
            if style == "bullet":
                out += _headed_lists(run, found, items)
        for at, style in enumerate(styles):  # an item and the list inside it
            if style is None or style == "bullet":
                continue
            end = next((k for k in range(at + 1, len(run)) if styles[k] == style), len(run))
            for inner, found in lists:
                if inner != style and at < found[0] < end:
                    out.append(Block("list", [items[k] for k in found[:MAX_STEPS]], items[at],
                                     numbered=inner != "bullet"))
    return out


def _headed_lists(run, found: list[int], items: dict[int, Item]) -> list[Block]:
    """A bulleted list whose bullets include headings that name a kind of content ("• Signs and
    symptoms. ... • First aid measures. • Move the casualty to a cool, shady area ..."): the book's
    nested lists flattened into one. Each heading's own bullets are a list of their own, introduced by
    the heading; it is judged (`context`) with the bullets of the heading before it too, since the
    situation a question describes is in the signs and the answer in the measures that follow them."""
    heads = [n for n, at in enumerate(found) if _KIND_HEADING.match(_STEP_MARKER.sub("", run[at][0]))]
    out = []
    for h, n in enumerate(heads):
        end = heads[h + 1] if h + 1 < len(heads) else len(found)
        if end > n + 1:
            around = [c for at in found[heads[h - 1] if h else 0:end] for c in items[at]]
            out.append(Block("list", [items[at] for at in found[n + 1:end][:MAX_STEPS]], items[found[n]],
                             context=around))
    return out


def _lists(run, styles: list[Optional[str]], style: str) -> list[list[int]]:
    """The positions of the items of each list of `style` in the run (two items or more): bullets in a
    row, or numbered items counting up; a numbered sentence of another style ends a bulleted list."""
    out: list[list[int]] = []
    current: list[int] = []
    for at, st in enumerate(styles):
        if st != style:
            if style == "bullet" and st is not None:
                out += [current] if len(current) >= 2 else []
                current = []
            continue
        if current and (style == "bullet" or _step_number(run[at][0]) == _step_number(run[current[-1]][0]) + 1):
            current.append(at)
            continue
        out += [current] if len(current) >= 2 else []
        current = [at]
    return out + ([current] if len(current) >= 2 else [])


def _opener(run, at: int) -> Optional[tuple[str, int, int]]:
    """The sentence before run[at] when it introduces what follows ("... the following signs and
    symptoms:", "Some of these are—", "... is performed as follows:")."""
    if at and re.search(r"\b(?:following|as follows)\b|[:—-]\s*$", run[at - 1][0]):
        return run[at - 1]
    return None


def _marker_style(sentence: str) -> Optional[str]:
    """How a sentence is marked as a list item: "(1)", "(a)", "1.", "a." or "bullet"; None if not."""
    if re.match(r"\s*[•·▪]", sentence):
        return "bullet"
    m = _NUMBERED.match(sentence)
    if not m:
        return None
    mark = m.group(1) or m.group(2)
    kind = "digit" if mark.isdigit() else "letter"
    return f"({kind})" if m.group(1) else f"{kind}."


def _step_number(sentence: str) -> int:
    """1, 2, ... for "(1)", "2." and for "(a)", "(b)"; 0 when not numbered."""
    m = _NUMBERED.match(sentence)
    if not m:
        return 0
    mark = m.group(1) or m.group(2)
    return int(mark) if mark.isdigit() else ord(mark) - ord("a") + 1


def _reading_runs(sources: list[Source]) -> list[list[tuple[str, int, int]]]:
    """The sentences of the retrieved passages, passages next to each other in the book read as one
    text in book order (the sentence they share once); captions, tables and cross-references left out."""
    by_id = {(s.hit.book_id, s.hit.passage_id): k for k, s in enumerate(sources) if s.hit.kind == "passage"}
    runs = []
    for book, pid in sorted(by_id):
        if (book, pid - 1) in by_id:
            continue  # not the first of its run
        run: list[tuple[str, int, int]] = []
        seen: set[str] = set()
        while (book, pid) in by_id:
            k = by_id[(book, pid)]
            previous = ""
            for j, sentence in enumerate(_marks_joined(sentences(neutralise(sources[k].hit.text)))):
                key = sentence.strip().lower()
                if key not in seen and not is_junk(sentence) and not is_caption(previous, sentence):
                    seen.add(key)
                    run.append((sentence.strip(), k, j))
                previous = sentence
            pid += 1
        runs.append(run)
    return runs
def _marks_joined(parts: list[str]) -> list[str]:
    """The sentence splitter's pieces as list items: a list mark or a label split off as a sentence of
    its own ("d.", "(1)", "NOTE") joined to the sentence it marks, a mark left at the end of the
    sentence before ("... the obstruction. c.") moved to its own, bullets run into one sentence
    ("... by— • Moving him ...") and a step run into a closing parenthesis ("(A half-knot is ...
    lace.) (2) Place a stick ...") split apart."""
    pieces: list[str] = []
    for part in parts:
        pieces += [p for p in _RUN_INTO.split(part) if p.strip()]
    out: list[str] = []
    carry = ""
    for part in pieces:
        part = f"{carry} {part}".strip() if carry else part
        carry = ""
        trailing = _TRAILING_MARK.search(part)
        if trailing:
            part, carry = part[: trailing.start()].rstrip(), trailing.group(1)
        if out and _BARE_MARK.match(out[-1]):
            out[-1] = f"{out[-1].strip()} {part}"
        else:
            out.append(part)
    if out and _BARE_MARK.match(out[-1]):
        out.pop()  # a mark or label that ends the passage: its sentence is in the next one
    return out


_RUN_INTO = re.compile(r"(?<=\S)\s+(?=[•·▪]\s)|(?<=[.!?][)”’\"])\s+(?=\((?:\d{1,2}|[a-z])\)\s+[A-Z])")
_BARE_MARK = re.compile(r"^\s*(?:\((?:\d{1,2}|[a-z])\)|\d{1,2}[.)]|[a-z][.)]|[•·▪]|NOTES?|CAUTION|WARNING|DANGER)\s*$")
_TRAILING_MARK = re.compile(r"(?<=[.!?)])\s+(\((?:\d{1,2}|[a-z])\)|[a-z]\.)$")
