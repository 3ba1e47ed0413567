"""What the page says to a reader: an answer's status and reason in plain words (the figures behind
them kept for a "why?" on demand), error messages without server paths or command-line flags, a
summary's Markdown as safe HTML, and a book file's kind.

The CLI's messages are written for a terminal user (they name flags and commands that help there);
the page cannot pass a flag, and a server path is the server's business, not the reader's.
"""
from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Optional

from ragcli.answer.verdict import WORDS, Reason

STATUS_WORDS = {
    "answered": "Answered from the books",
    "no_answer": "Not answered",
    "unsupported": "Not checked: the answer cites no passage",
    "incomplete": "Incomplete",
    "extractive": "Sentences quoted from the books",
}

# why an answer was withheld, for a reader (verdict.WORDS says it for the terminal, with its terms)
REASON_WORDS = {
    Reason.OTHER_LANGUAGE: "The question is in another language than the books.",
    Reason.NO_CONTEXT: "The books do not seem to cover this.",
    Reason.MISSING_SUBJECT: "The books never mention what the question is about.",
    Reason.NOT_RELEVANT: "The passages found are about something else.",
    Reason.REFUSED: "The passages found do not answer this.",
    Reason.NO_SOURCE: "The draft did not come from the books: no passage says what it said.",
    Reason.NOT_BACKED: "The draft said things the passages it pointed to do not say.",
    Reason.CITES_IRRELEVANT: "The draft rested on passages that do not answer the question.",
    Reason.OFF_QUESTION: "The draft was about something other than the question.",
    Reason.FAR_PASSAGES: "The passages found are about something else.",
    Reason.UNFINISHED: "The answer did not finish.",
    Reason.NO_MODEL: "This server has no language model: these are the sentences of the books nearest the question.",
}

PATH = re.compile(r"(?:(?<=\s)|(?<=^)|(?<=[(:'\"]))(?:~|[A-Za-z]:)?[/\\](?:[^\s/\\:;,'\"()`]+[/\\])+([^\s/\\:;,'\"()`]*)")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z-]+|`ragcli\b|\bragcli [a-z]+ ")
PAREN = re.compile(r"\s*\([^()]*\)")
MEDIA = {"pdf": "application/pdf", "epub": "application/epub+zip",
         "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
         "html": "application/octet-stream", "md": "text/markdown; charset=utf-8", "txt": "text/plain; charset=utf-8"}
KINDS = {".pdf": "pdf", ".epub": "epub", ".docx": "docx", ".html": "html", ".htm": "html", ".xhtml": "html",
         ".md": "md", ".markdown": "md", ".txt": "txt"}


def file_kind(path: Optional[str]) -> str:
    """pdf | epub | docx | html | md | txt | "" (unknown), from the file's name."""
    return KINDS.get(Path(path or "").suffix.lower(), "")


def for_reader(message: str) -> str:
    """A message without server paths (a path becomes its file name), and without the parts that
    name a command or a flag (a reader of the page has neither)."""
    text = PAREN.sub(lambda m: "" if FLAG.search(m.group(0)) else m.group(0), message or "")
    kept = []
    for part in text.split("; "):
        hit = FLAG.search(part)
        if hit:
            head = part[:hit.start()]
            cut = head.rfind(": ")
            part = head[:cut] if cut > 0 else ""
        if part.strip():
            kept.append(part.strip())
    text = "; ".join(kept) or "the server could not do this"
    text = PATH.sub(lambda m: m.group(1) or "a folder", text)
    return text.replace("`", "").rstrip(":, ")


def reason_of(data: dict) -> Optional[Reason]:
    """The reason of an answer: its `reason`, or (a saved turn keeps only its notice) the verdict
    words its notice holds."""
    try:
        return Reason(data.get("reason")) if data.get("reason") else _reason_in(data.get("notice") or "")
    except ValueError:
        return None


def _reason_in(notice: str) -> Optional[Reason]:
    for reason, said in WORDS.items():
        if said in notice:
            return reason
    return None


STRONG = ("supported", "quoted")  # a sentence its passage states (or the book's own sentence)
WEAK_WORDS = "Only weakly backed: the passages say part of this at most. Read them before relying on it."


def answer_words(data: dict) -> dict:
    """`status`: the status in words; `words`: why, in words (empty when answered); `details`:
    the notice as ragcli wrote it (figures and all), made safe for a reader, for a "why?" on demand."""
    status = data.get("status") or ""
    reason = reason_of(data)
    said = REASON_WORDS.get(reason, "") if reason is not None and status != "answered" else ""
    if status == "no_answer" and not said:
        said = "The books do not seem to answer this."
    claims = [c.get("support") for c in data.get("claims") or [] if isinstance(c, dict)]
    if status == "answered" and claims and not any(c in STRONG for c in claims):
        said = WEAK_WORDS  # kept by the checks, yet no sentence is plainly stated by its passage
    notice = data.get("notice") or ""
    if status == "no_answer":  # ragcli's own attribution is no finding about a withheld draft
        notice = "; ".join(p for p in notice.split("; ") if not p.startswith("the model cited no passage"))
    return {"status": STATUS_WORDS.get(status, status.replace("_", " ")), "words": said,
            "details": for_reader(notice) if notice else ""}


# -- Markdown -------------------------------------------------------------------------------------

ALLOWED = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "strong", "em", "code", "pre", "blockquote",
           "hr", "br", "table", "thead", "tbody", "tr", "th", "td", "del", "a"}
HEADING_SHIFT = {"h1": "h4", "h2": "h4", "h3": "h5"}  # a summary's headings sit under the page's own
VOID = {"hr", "br"}


def markdown_html(text: str) -> str:
    """A summary's Markdown as HTML a page may insert: markdown-it-py (CommonMark) with raw HTML off
    (a `<script>` in the text stays text), images off (nothing is fetched), then every tag checked
    against an allowlist and every attribute dropped but an http(s) link's href."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False}).disable(["image", "html_inline", "html_block"])
    return sanitise(md.render(text or ""))


class _Sanitiser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.open: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        if tag not in ALLOWED:
            return
        shown = HEADING_SHIFT.get(tag, tag)
        extra = ""
        if tag == "a":
            href = dict(attrs).get("href") or ""
            if re.match(r"https?://", href, re.I):
                extra = f' href="{html.escape(href, quote=True)}" rel="noopener noreferrer nofollow" target="_blank"'
        self.out.append(f"<{shown}{extra}>")
        if tag not in VOID:
            self.open.append(shown)

    def handle_endtag(self, tag) -> None:
        shown = HEADING_SHIFT.get(tag, tag)
        if tag in ALLOWED and tag not in VOID and shown in self.open:
            while self.open:
                last = self.open.pop()
                self.out.append(f"</{last}>")
                if last == shown:
                    break

    def handle_data(self, data) -> None:
        self.out.append(html.escape(data, quote=False))


def sanitise(markup: str) -> str:
    """Only ALLOWED tags, no attributes but a checked href; all text escaped; every tag closed."""
    parser = _Sanitiser()
    parser.feed(markup)
    parser.close()
    return "".join(parser.out) + "".join(f"</{t}>" for t in reversed(parser.open))
