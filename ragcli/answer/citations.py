"""Find, normalise and strip citation marks in generated text (pure string logic).

The model is given passages labelled ``[S1]``, ``[S2]``, ... and figures ``[F1]``, ... and told to cite
only those. ``validate`` finds every citation-like mark in its answer; each is either rewritten to the
canonical form or removed, and every removal is reported as a ``RemovedCitation``. What a mark holds
(its items and their reasons) is parsed in answer/citation_marks.py; this module walks the text.

Decisions (documented here because the tests pin them):

* A *mark* is a bracketed span: ``[...]``, ``(...)``, ``【...】``, ``［...］`` (optionally preceded by a
  footnote caret ``^``) of at most ``MAX_SPAN`` characters once its inner marks are handled (and closed
  within ``MAX_HOLD`` characters as written), on one line, whose content parses as a list
  of citation items: labels ``S1``/``s 1``/``S1-S3``/``S1–3``, ``Source(s) 1, 2`` (= S1, S2), ``Ref 3``,
  ``Figure/Fig. 2-31``, pages ``p. 45``/``pp. 4-5``/``page 45``, sections ``Section: X``/``Chapter 3``,
  separated by ``,`` ``;`` ``&`` ``/`` or ``and``, optionally led in by "see", "cf.", "e.g." ...
  Anything else in brackets is ordinary text and is never touched ("[sic]", "(see below)", "(2019)",
  "(60 mg)", "(S)-ketamine", "(L5-S1)"). Bracket spans nest; inner marks are handled first, so removing
  an inner mark can never leave ``()`` or ``[]`` behind nor assemble a new mark.
* Canonical output: one bracket per label, adjacent, in the order written: ``[S1, S3]`` -> ``[S1][S3]``,
  ``(S2)`` -> ``[S2]``, ``[s 1]`` -> ``[S1]``, ``^[S1]`` -> ``[S1]``, ``【S1】`` -> ``[S1]``.
  Duplicates inside one mark are dropped.
* ``Source N`` means ``SN`` (the label letter S stands for "source"). ``Ref N`` / ``Reference N`` are
  removed ("ambiguous reference"). ``Figure N`` / ``Fig. N`` name the *book's* figure numbers, which are
  not our ``F`` labels: removed unless ``figure_labels`` maps that number to a given label.
* Bare numbers ``[1]``, ``[1, 2]``, ``[1-3]`` are ambiguous and removed ("bare number"), except as
  code: directly attached to an identifier (``x[1]``, ``arr[0][2]``) or inside a backtick span. In
  parentheses, numbers alone are ordinary text ("(1)", "(2019)").
* Pages / sections: removed unless ``page_labels`` / ``section_titles`` say which given label sits on
  that page / in that section; then the mark becomes those labels. Keys are compared case-insensitively
  with unified dashes and quotes; a page range ``4-5`` not found as a key is looked up page by page.
* Whitespace left by a removal is cleaned: no double spaces, no space before ``.,;:!?)]``, none after an
  opening bracket or at the start; newlines are kept. Text away from a removed mark is never changed.
* A label that opens a sentence and also closed the sentence before it is shown once: "... clothing
  [S3]. [S3] Use ..." -> "... clothing [S3]. Use ..." (not reported: it was valid).
* Text that ends inside a mark (a reply cut by ``max_tokens`` or a broken stream: "(p. 99", "[S") is
  never shown: when some ending would make it a citation mark it is removed ("unfinished citation").
* Labels are one letter and a number (``S1``, ``F2``); the letters S and F, plus the first letter of every
  valid label, are recognised as label letters.

* Text from a book is inert (issue 17): ``neutralise`` rewrites every mark found in a passage with the
  book's own brackets ``⟨…⟩`` (``[3]`` -> ``⟨3⟩``, ``[Source 2]`` -> ``⟨Source 2⟩``, ``(p. 45)`` ->
  ``⟨p. 45⟩``) before the passage enters a prompt or an extractive answer, so no engine pass can read it
  as a mark, and the reader still sees the book's reference. ``⟨`` is not a bracket here. And when an
  answer writes a mark that a given passage holds as text (``book_marks``: the same content in any
  bracket), it is the book's reference, never a label: it is shown in ``⟨…⟩`` and reported as
  removed ("book's own reference"), and the sentence keeps its words ("According to ⟨3⟩ and ...").

Known limits: "(S1)" or "(S1-S2)" meaning the sacral nerve root is read as a citation; a group longer
than ``MAX_SPAN`` characters is prose; prose mentions ("as shown on page 45") are not marks.
"""
from __future__ import annotations

import re

from ragcli.answer.citation_marks import (BOOK_CLOSE, BOOK_OPEN, BOOK_REFERENCE, MAX_HOLD, MAX_SPAN, UNFINISHED,
                                          _CLOSE, _KIND_WORDS, _MORE, _NONE, _OPEN, _SENTENCE_END, _SQUARE,
                                          _Context, _Group, _find_close, _make_context, _mark_key, _parse_group)
from ragcli.types import RemovedCitation, ValidatedText

_CLOSING_PUNCT = set(".,;:!?)]}】］…")
_OPENING_PUNCT = set("([{【［“‘")


def _join_gap(left: str, right: str, nxt: str | None, last: str) -> str:
    """What to keep where marks were removed: left/right = whitespace (and held , ;) around them."""
    sep = next((ch for ch in right if ch in ",;"), "")  # a separator after the last removed mark
    left, right = left.replace(",", "").replace(";", ""), right.replace(",", "").replace(";", "")
    if "\n" in left or "\n" in right:
        return left.rstrip(" \t") + (right if "\n" in right else "")
    if nxt is None or nxt in _CLOSING_PUNCT or not last or last in _OPENING_PUNCT:
        return ""
    return sep + (" " if left or right else "")


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


class _Engine:
    """Left-to-right transducer shared by ``validate`` and ``StreamFilter``.

    Output is emitted as soon as it cannot change: whitespace is held until the next visible character
    (a removed mark may swallow it), and an opening bracket until its span is decided.
    """

    def __init__(self, ctx: _Context, opener: str = "", in_code: bool = False):
        self._ctx = ctx
        self._buf = ""
        self._ws = ""
        self._gap_left: str | None = None  # whitespace before removed mark(s) awaiting resolution
        self._last_out = opener
        self._prev_src = opener
        self._code_chain = False
        self._in_code = in_code
        self._after_mark = False  # a "," or ";" right after a mark is held with the whitespace
        self._last_labels: list[str] = []  # the labels of the last mark written ...
        self._since_mark = ""  # ... and what was written after it (whitespace aside)
        self.removed: list[RemovedCitation] = []
        self.citations: list[str] = []

    def feed(self, chunk: str) -> str:
        self._buf += chunk
        return self._run(final=False)

    def flush(self) -> str:
        out = self._run(final=True)
        return out + self._release(None)

    def _run(self, final: bool) -> str:
        out: list[str] = []
        buf, i = self._buf, 0
        while i < len(buf):
            ch = buf[i]
            if ch.isspace() or (ch in ",;" and self._after_mark):
                self._ws += ch
                self._prev_src, self._code_chain = ch, False
                i += 1
                continue
            if ch in _OPEN or ch == "^":
                step = self._mark(buf, i, final, out)
                if step == _MORE:
                    break
                if step > 0:
                    i = step
                    continue
            out.append(self._release(ch) + ch)
            self._note(ch)
            i += 1
        self._buf = buf[i:]
        return "".join(out)

    def _note(self, ch: str) -> None:
        self._since_mark = self._since_mark[-8:] + ch
        self._last_out = self._prev_src = ch
        self._code_chain = self._after_mark = False
        if ch == "`":
            self._in_code = not self._in_code

    def _release(self, nxt: str | None) -> str:
        ws, left = self._ws, self._gap_left
        self._ws, self._gap_left = "", None
        return ws if left is None else _join_gap(left, ws, nxt, self._last_out)

    def _mark(self, buf: str, i: int, final: bool, out: list[str]) -> int:
        """Handle a span starting at buf[i]: new index, _MORE (wait), or _NONE (ordinary char)."""
        start = i
        while i < len(buf) and buf[i] == "^" and i - start < MAX_SPAN:  # footnote carets: ^[S1]
            i += 1
        if i >= len(buf):
            return _NONE if final else _MORE
        if buf[i] not in _OPEN:
            return _NONE
        end = _find_close(buf, i, i + MAX_HOLD)
        if end == _MORE and final and _half_mark(buf[i], buf[i + 1:], self._ctx):
            # the text ends inside a mark (a cut reply): what was written of it is never shown
            self._apply(out, _Group([], [RemovedCitation(buf[start:].rstrip(), UNFINISHED)]),
                        self._sub(buf[i]), _OPEN[buf[i]])
            return len(buf)
        if end == _MORE:
            return _NONE if final else _MORE
        if end == _NONE:
            return _NONE
        sub = self._sub(buf[i])
        inner = sub.feed(buf[i + 1:end]) + sub.flush()
        square = buf[i] in _SQUARE
        group = None
        if len(inner) + 2 <= MAX_SPAN:
            group = _parse_group(inner, square, self._ctx, bool(sub.removed), buf[start:end + 1])
        if group is None or (group.bare_only and self._is_code()):
            if start != i:
                return _NONE  # the caret is ordinary text; the bracket is handled next
            self._block(out, buf[i] + inner + buf[end], sub, code=group is not None)
        elif _mark_key(inner) in self._ctx.book:  # the book's own mark, written again: text, not a label
            self.removed.append(RemovedCitation(buf[start:end + 1], BOOK_REFERENCE))
            self._block(out, BOOK_OPEN + inner.strip() + BOOK_CLOSE, sub, code=False)
        else:
            self._apply(out, group, sub, buf[end])
        return end + 1

    def _sub(self, opener: str) -> "_Engine":
        return _Engine(self._ctx, opener, self._in_code)  # shares the context: the book's marks too

    def _is_code(self) -> bool:
        return self._in_code or self._code_chain or _is_word(self._prev_src)

    def _block(self, out: list[str], text: str, sub: "_Engine", code: bool) -> None:
        """Emit a bracket that is ordinary text (its inner marks already validated)."""
        out.append(self._release(text[0]) + text)
        self.removed += sub.removed
        self._cite(sub.citations)
        self._last_out = self._prev_src = text[-1]
        self._since_mark = (self._since_mark + text)[-9:]
        self._in_code = sub._in_code
        self._code_chain, self._after_mark = code, False

    def _apply(self, out: list[str], group: _Group, sub: "_Engine", closer: str) -> None:
        """Emit a citation mark in canonical form, or remove it and leave a gap."""
        self.removed += sub.removed + group.removed
        kept = group.kept
        if _SENTENCE_END.fullmatch(self._since_mark):  # "... [S3]. [S3] Use": the label is shown once
            kept = [lab for lab in kept if lab not in self._last_labels]
        if kept:
            out.append(self._release("[") + "".join(f"[{lab}]" for lab in kept))
            self._cite(kept)
            self._last_out = "]"
            self._last_labels, self._since_mark = kept, ""
        elif self._gap_left is None:
            self._gap_left, self._ws = self._ws, ""
        else:
            self._gap_left, self._ws = self._gap_left + self._ws, ""
        self._prev_src, self._code_chain, self._after_mark = closer, False, True

    def _cite(self, labels: list[str]) -> None:
        self.citations += [lab for lab in labels if lab not in self.citations]


def _half_mark(opener: str, written: str, ctx: _Context) -> bool:
    """Is `written`, after `opener` with no closing bracket, the start of a citation mark ("(p. 99",
    "[S", "(see pa")? It is when some ending (a number, the rest of a kind word) makes it one."""
    inner = next((k for k, ch in enumerate(written) if ch in _OPEN), None)
    if inner is not None and _half_mark(written[inner], written[inner + 1:], ctx):
        written = written[:inner]  # the text ends in half marks one after another ("[1[1"): all of them go
    elif inner is not None:
        # complete marks inside are judged as they will be shown: once an invalid one is removed
        # ("【e.g.^[S8]" -> "【e.g."), what is left is judged, so that validating again changes nothing
        sub = _Engine(ctx, opener)
        shown = sub.feed(written) + sub.flush()
        if sub.removed and not any(ch in _OPEN or ch in _CLOSE for ch in shown):
            written = shown
    if not written.strip() or "\n" in written or len(written) + 2 > MAX_SPAN or any(ch in _OPEN or ch in _CLOSE for ch in written):
        return False  # a bracket inside: the inner marks are judged on their own, this one is text
    word = re.search(r"[A-Za-z.]+$", written)
    texts = [written, written + "1", written + " 1"] + [
        written[:word.start()] + kind + " 1" for kind in _KIND_WORDS if word and kind.startswith(word[0].lower())]
    for text in texts:
        sub = _Engine(ctx, opener)
        inner = sub.feed(text) + sub.flush()
        if _parse_group(inner, opener in _SQUARE, ctx, bool(sub.removed), opener + text) is not None:
            return True
    return False


class _AnyMark(frozenset):
    """Contains every key: in book text, every mark is the book's own."""

    def __contains__(self, item) -> bool:
        return True


_BOOK_TEXT = _Context(frozenset(), frozenset({"S", "F"}), {}, {}, {}, _AnyMark())


def neutralise(text: str) -> str:
    """Book text with its citation-like marks made inert: "According to [3] and [Source 2], ... (p. 45)."
    -> "According to ⟨3⟩ and ⟨Source 2⟩, ... ⟨p. 45⟩.". What is not a mark ("[sic]", "(2019)", "x[1]")
    is left as it is; nothing is removed. Apply it wherever a passage's text enters a prompt or an
    answer."""
    if not any(ch in text for ch in _OPEN):
        return text
    engine = _Engine(_BOOK_TEXT)  # every mark is "the book's own": shown in ⟨…⟩, nothing removed
    return engine.feed(text) + engine.flush()


def book_marks(texts) -> set[str]:
    """Keys of the citation-like marks these passages hold as text: a mark in an answer with the same
    content is the book's reference, never a label (StreamFilter's `book_marks`)."""
    found: set[str] = set()
    for text in texts:
        found |= {_mark_key(m) for m in re.findall(f"{BOOK_OPEN}[^{BOOK_CLOSE}]*{BOOK_CLOSE}",
                                                    neutralise(text))}
    return found


class StreamFilter(_Engine):
    """Validate citations while text streams in.

    ``feed(chunk)`` returns the text that is safe to print now, ``flush()`` the rest. It holds back only
    whitespace and an unfinished bracket (at most ``MAX_HOLD`` characters), never prints an invalid
    citation, and the concatenated output equals ``validate(full_text, ...).text``. ``.removed`` and
    ``.citations`` are complete after ``flush()``.
    """

    def __init__(self, valid_labels, page_labels: dict[str, list[str]] | None = None,
                 section_titles: dict[str, list[str]] | None = None,
                 figure_labels: dict[str, list[str]] | None = None, book_marks=None):
        super().__init__(_make_context(valid_labels, page_labels, section_titles, figure_labels, book_marks))


def validate(text: str, valid_labels: set[str], page_labels: dict[str, list[str]] | None = None,
             section_titles: dict[str, list[str]] | None = None,
             figure_labels: dict[str, list[str]] | None = None, book_marks=None) -> ValidatedText:
    """Normalise valid citations to ``[S1]`` form, remove every other citation-like mark.

    ``page_labels`` maps a page as a reader would write it ("45", "2-25") to the labels on that page;
    ``section_titles`` maps a section title to the labels in it; ``figure_labels`` maps a book figure
    number ("2-31") to its labels. A page/section/figure reference is replaced by those labels
    (valid ones only) or removed. ``book_marks`` (``book_marks(passage texts)``): marks the passages
    hold as text, shown inert in the answer, never labels.
    """
    stream = StreamFilter(valid_labels, page_labels, section_titles, figure_labels, book_marks)
    out = stream.feed(text) + stream.flush()
    return ValidatedText(text=out, citations=stream.citations, removed=stream.removed)


def cited_labels(text: str) -> list[str]:
    """Labels cited in canonical marks (``[S1]``; also ``[S1, S2]``), in order of first use."""
    labels: list[str] = []
    for group in re.findall(r"\[([A-Z]\d+(?:\s*[,;]\s*[A-Z]\d+)*)\]", text):
        labels += [lab for lab in re.split(r"\s*[,;]\s*", group) if lab not in labels]
    return labels
