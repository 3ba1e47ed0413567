"""Read health of a PDF: which pages could not be read, and one warning a reader can act on.

While each page is read, MuPDF's messages are collected (`pymupdf.TOOLS.mupdf_warnings()`) and the
page's own content streams are decoded once more, so a broken stream is pinned to its page. A page is

  ok            read without a content error
  partial       its content stream is damaged (zlib/flate errors, syntax errors in the operators):
                some of its text is missing
  unreadable    damaged and (almost) no text came out (under a quarter of the book's median page),
                or MuPDF could not load it at all
  no_text_layer no text, and an image covers most of it (a scanned page inside a text PDF)
  blank         no text and no large image (separator pages, full-page drawings)

Font, colour-profile and image messages are not content errors: a broken font or picture leaves the
text layer intact (bench/robustness/bench_damaged.py: the 7 copies with a flipped font stream lost no passage).
`unreadable` and `no_text_layer` pages are the candidates for OCR; `partial` pages re-render the same
broken stream, so OCR rarely gets more out of them.
"""
from __future__ import annotations

import re
import statistics
import unicodedata
from dataclasses import dataclass, field
from typing import Optional

from ragcli.language import ENGLISH, FUNCTION_WORDS
from ragcli.text import letter_runs

# pymupdf is imported where MuPDF is called (it takes seconds): importing this module stays cheap.

OK, PARTIAL, UNREADABLE, NO_TEXT_LAYER, BLANK = "ok", "partial", "unreadable", "no_text_layer", "blank"
OCR_CANDIDATES = (UNREADABLE, NO_TEXT_LAYER)

UNREADABLE_SHARE = 0.25  # a damaged page with less text than this share of the median page
SCANNED_COVER = 0.5  # an image over half the page and no text: a scanned page
HEADER_LOSS_SHARE = 0.5  # running-line removal taking more of the text than this is reported

# MuPDF messages that mean the page's drawing operators (where its text is) are broken
_CONTENT = re.compile(r"syntax error|unknown keyword|no current point|zlib|flate|read error|premature end"
                      r"|stream length|unterminated|too many|cannot (?:find|load|parse)|invalid", re.I)
_OPERATORS = re.compile(r"syntax error|unknown keyword|no current point|unterminated", re.I)
# messages about fonts, colour profiles and images: the text layer does not depend on them
_NOT_CONTENT = re.compile(r"font|freetype|\bft_|cmap|icc|colou?r|image|jpeg|jpx|jbig|png|tiff", re.I)


@dataclass
class PageHealth:
    number: int
    chars: int = 0
    image_cover: float = 0.0  # share of the page area under images
    problems: list[str] = field(default_factory=list)  # MuPDF's messages about this page's content
    status: str = OK
    not_text: str = ""  # why its text layer is not language (not_language), when it is not
    ocr: bool = False  # its text came from OCR


def silence_mupdf() -> None:
    """MuPDF prints its messages on stderr by default; ragcli collects them and reports per book."""
    import pymupdf

    pymupdf.TOOLS.mupdf_display_errors(False)
    pymupdf.TOOLS.mupdf_display_warnings(False)


def take_messages() -> list[str]:
    """MuPDF's messages since the last call (and forget them)."""
    import pymupdf

    text = pymupdf.TOOLS.mupdf_warnings(reset=True) or ""
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("...")]


def content_problems(text_messages: list[str], doc, page) -> list[str]:
    """The content errors of one page. Its content streams and form XObjects (where its text is
    drawn) are decoded again: anything that goes wrong there is this page's. Of the messages MuPDF
    gave while extracting the text, only operator errors count ("syntax error in content stream");
    a broken stream met then belongs to a font or an image, which the text layer does not need."""
    problems: list[str] = []
    streams = list(page.get_contents()) + [x[0] for x in page.get_xobjects()]
    for xref in dict.fromkeys(streams):
        try:
            doc.xref_stream(xref)
        except Exception as exc:  # pymupdf raises several types for broken streams
            problems.append(f"content stream {xref}: {exc}")
        problems += [m for m in take_messages() if _CONTENT.search(m)]
    problems += [m for m in text_messages if _OPERATORS.search(m) and not _NOT_CONTENT.search(m)]
    return list(dict.fromkeys(problems))


def image_cover(images, width: float, height: float) -> float:
    area = max(1.0, width * height)
    covered = sum(max(0.0, x1 - x0) * max(0.0, y1 - y0) for x0, y0, x1, y1 in images)
    return min(1.0, covered / area)


def classify(pages: list[PageHealth]) -> None:
    """Set each page's status from its problems and its text against the book's median page."""
    texts = [p.chars for p in pages if p.chars > 0]
    median = statistics.median(texts) if texts else 0
    for p in pages:
        if p.not_text and not p.ocr:  # its text layer was junk and OCR did not replace it
            p.status = UNREADABLE
        elif p.problems:
            p.status = UNREADABLE if p.chars <= UNREADABLE_SHARE * median else PARTIAL
        elif p.chars == 0:
            p.status = NO_TEXT_LAYER if p.image_cover >= SCANNED_COVER and texts else BLANK
        else:
            p.status = OK


# -- a text layer that is not text ----------------------------------------------------------------
# A damaged or deliberately scrambled font map (ToUnicode CMap) gives a text layer of the right size
# whose characters are wrong: letters shifted ("Qsjnfs pg" for "Primer of"), control characters for
# the spaces. MuPDF reports nothing, the page image is intact. Two signs, each enough on its own:

JUNK_SHARE = 0.5  # more of a page's characters than this U+FFFD or unassigned code points: no text at all
JUNK_MIN_CHARS = 20  # ... on a page of at least this many characters (the sign needs no words to compare)
NOT_TEXT_MIN_CHARS = 200  # shorter pages (titles, captions, blank-ish pages) give too little evidence
CONTROL_SHARE = 0.01  # control characters between two letters over this share of the characters ...
CONTROL_MIN = 10  # ... and at least this many (a stray byte on a cover page is not a broken font map;
# private-use characters are not counted: symbol fonts map their bullets there)
COMMON_SHARE = 0.03  # Latin-script pages with fewer of their words than this among the common words
COMMON_MIN_WORDS = 40
NO_VOWEL_SHARE = 0.2  # ... and more of its words of 3+ letters than this without a vowel (a form or a
# table of real words has few common words too, but vowels in its words; a shifted alphabet moves them)
VOWELS = re.compile(r"[aeiouyàáâãäåæèéêëìíîïòóôõöøùúûüýÿœ]")
LATIN_SHARE = 0.8  # the common-word test applies to pages mostly in Latin letters (other scripts: controls only)
COMMON_WORDS = ENGLISH | {w for words in FUNCTION_WORDS.values() for w in words} | set(
    "that this it on be as at by from was were has have had not but can may will if its their there which "
    "be been also into than other these some such when all more most one two see only each used use".split())


def not_language(text: str) -> Optional[str]:
    """Why a page's extracted text is not words of any language, or None when it reads as text."""
    chars = [c for c in text if not c.isspace()]
    # a font map that maps every glyph to nothing: the reader gives U+FFFD (or code points no script
    # has) for each, with the spaces between words intact (../shared/data/damaged/m041: all of it)
    junk = sum(1 for c in chars if c == "\ufffd" or unicodedata.category(c) == "Cn")
    if len(chars) >= JUNK_MIN_CHARS and junk > JUNK_SHARE * len(chars):
        return f"{junk} of its {len(chars)} characters are replacement characters (U+FFFD) or unassigned"
    if len(chars) < NOT_TEXT_MIN_CHARS:
        return None
    controls = sum(1 for i in range(1, len(text) - 1)
                   if (unicodedata.category(text[i]) == "Cc" and text[i] not in "\t\n\r\x0b\x0c"
                       or text[i] == "\ufffd")  # the reader shows an unmapped control as U+FFFD
                   and text[i - 1].isalpha() and text[i + 1].isalpha())
    if controls >= CONTROL_MIN and controls > CONTROL_SHARE * len(chars):
        return f"{controls} control characters inside its words"
    letters = [c for c in chars if c.isalpha()]
    latin = sum(1 for c in letters if c < "\u0250")
    words = [w.lower() for w in letter_runs(text)]
    if len(words) >= COMMON_MIN_WORDS and letters and latin >= LATIN_SHARE * len(letters):
        common = sum(1 for w in words if w in COMMON_WORDS)
        long_words = [w for w in words if len(w) >= 3]
        no_vowel = sum(1 for w in long_words if not VOWELS.search(w))
        if common < COMMON_SHARE * len(words) and no_vowel > NO_VOWEL_SHARE * max(1, len(long_words)):
            return (f"{common} of its {len(words)} words are common words of any language, and {no_vowel} "
                    f"have no vowel")
    return None


def page_ranges(numbers: list[int]) -> str:
    """[3, 4, 5, 9] -> "3-5, 9"."""
    out: list[str] = []
    for n in sorted(set(numbers)):
        if out and n == last + 1:
            start = out[-1].split("-")[0]
            out[-1] = f"{start}-{n}"
        else:
            out.append(str(n))
        last = n
    return ", ".join(out)


def _pages_word(numbers: list[int]) -> str:
    return ("page " if len(numbers) == 1 else "pages ") + page_ranges(numbers)


def warnings(pages: list[PageHealth], doc_messages: list[str], outline: tuple[int, int] = (0, 0),
             header_loss: tuple[int, int] = (0, 0)) -> list[str]:
    """One sentence per kind of loss, naming the pages; empty for a healthy book.

    outline: (entries pointing to no page, entries); header_loss: (characters removed as running
    headers and footers, characters read)."""
    out: list[str] = []
    repaired = any("repair" in m for m in doc_messages)
    cause = "the file is damaged" + (" (MuPDF repaired its structure)" if repaired else "")
    unreadable = [p.number for p in pages if p.status == UNREADABLE and not p.not_text]  # junk: said below
    partial = [p.number for p in pages if p.status == PARTIAL]
    scanned = [p.number for p in pages if p.status == NO_TEXT_LAYER]
    junk = [p.number for p in pages if p.not_text]
    junk_read = [p.number for p in pages if p.not_text and p.ocr]
    if unreadable and partial:
        out.append(f"{_pages_word(unreadable)} could not be read and {_pages_word(partial)} only in part: "
                   f"{cause}")
    elif unreadable:
        out.append(f"{_pages_word(unreadable)} could not be read: {cause}")
    elif partial:
        out.append(f"{_pages_word(partial)} could be read only in part: {cause}")
    if scanned:
        verb, its = ("has", "its") if len(scanned) == 1 else ("have", "their")
        out.append(f"{_pages_word(scanned)} {verb} no text layer (scanned?): {its} text is not in the corpus")
    if junk:
        verb = "has" if len(junk) == 1 else "have"
        what = f"{_pages_word(junk)} {verb} a text layer that is not text (a damaged font map?)"
        if len(junk_read) == len(junk):
            out.append(f"{what}: read by OCR instead")
        elif junk_read:
            out.append(f"{what}: {_pages_word(junk_read)} read by OCR instead, the others left out")
        else:
            out.append(f"{what}: left out (`--ocr auto` reads such pages from their image)")
    broken, entries = outline
    if entries and broken * 2 > entries:
        out.append(f"the outline is damaged ({broken} of {entries} entries point to no page): sections "
                   f"come from headings instead")
    removed, read = header_loss
    if read and removed > HEADER_LOSS_SHARE * read:
        out.append(f"{removed * 100 // read}% of the text ({removed:,} of {read:,} characters) was taken "
                   f"for running headers and footers and left out")
    return out
