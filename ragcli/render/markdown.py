"""`--format markdown`: an answer or a summary as a Markdown document for notes and sharing.

Citation labels become footnote references (`[S1]` -> `[^S1]`), and each cited source a footnote:
book, section, printed page and PDF page. Health warnings, when there are any, are said in a
blockquote under the text, so a saved note keeps them."""
from __future__ import annotations

import re

from ragcli.render.console import terminal_safe
from ragcli.render.data import found_citations, summary_warnings, supported_share
from ragcli.types import Summary

_LABEL = re.compile(r"\[([SF]\d+)\]")


def _footnoted(text: str) -> str:
    return _LABEL.sub(lambda m: f"[^{m.group(1)}]", terminal_safe(text))


def _line(text: str) -> str:
    """Untrusted text on one line of the document (a heading, an italic note): no control character,
    no line break (a question ending in "\n# heading" would add a heading)."""
    return terminal_safe(text or "", lines=False).strip()


def _where(book: str, section: str, page_label, page, figure=None) -> str:
    where = [_line(book) or "?"]
    if section:
        where.append(_line(section))
    if figure:
        where.append(f"Figure {figure}")
    where.append(f"p. {page_label}" + (f" (PDF page {page})" if page is not None else ""))
    return ", ".join(where) + "."


def _hit_where(h) -> str:
    """Where a retrieved passage or figure is, for a footnote or a list line."""
    return _where(h.book_title, h.section_str, h.page_label, h.page_start,
                  h.figure_number if h.kind == "figure" else None)


def _warnings_block(warnings) -> list[str]:
    messages = [w.message if hasattr(w, "message") else w["message"] for w in warnings]
    return [f"> **Warning:** {m}" for m in messages]


def answer_markdown(answer) -> str:
    lines = [f"# {_line(answer.question)}", ""]
    if answer.notice:
        lines += [f"> {_line(answer.notice)}", ""]
    shown = answer.answer if answer.status != "no_answer" else ""  # a withheld draft is not an answer
    lines += [_footnoted(shown) if shown else "*No answer.*", ""]
    block = _warnings_block(answer.warnings)
    if answer.status == "unsupported" and not any(w.code == "unsupported" for w in answer.warnings):
        block.insert(0, "> **Warning:** no sentence of this answer cites a retrieved passage")
    if block:
        lines += block + [""]
    if answer.status == "extractive":
        lines += ["*Sentences quoted from the book (no model was used); they may not answer the question.*", ""]
    found = found_citations(answer)
    lines += [f"[^{s.label}]: " + _hit_where(s.hit) for s in answer.sources
              if s.label in answer.citations and s.label not in found]
    if found:  # labels the text does not hold: no footnote marks them, so a list after the footnotes
        lines += ["", "*Found by ragcli (sentences that cite no passage, or the wrong one, are backed by):*", ""]
        lines += [f"- {s.label}: " + _hit_where(s.hit) for s in answer.sources if s.label in found]
    return "\n".join(lines).rstrip() + "\n"


def summary_markdown(summary: Summary) -> str:
    lines = [f"# {_line(summary.topic)}", "",
             f"*Summary #{summary.number}, {summary.created_at.replace('T', ' ')[:16]}"
             + (", extractive (no model)" if summary.kind == "extractive" else "")
             + (f", {supported_share(summary.claims):.0%} of its factual sentences supported"
                if summary.kind != "extractive" and supported_share(summary.claims) is not None else "") + "*",
             ""]
    if summary.status == "stale":
        lines += [f"> **Stale:** the books changed since; gone: {', '.join(summary.stale_sources)}", ""]
    text = re.sub(r"^(#{1,5}) ", r"#\1 ", summary.text, flags=re.M)  # its headings under the title
    lines += [_footnoted(text), ""]
    block = _warnings_block(summary_warnings(summary))
    if block:
        lines += block + [""]
    lines += _notes([s for s in summary.sources if s.cited], set(_LABEL.findall(summary.text)), "")
    return "\n".join(lines).rstrip() + "\n"


def _notes(cited, in_text: set, prefix: str) -> list[str]:
    """A footnote for each cited source whose label stands in the text (a footnote nothing refers to is
    dropped by Markdown renderers, its source with it); the others (found by ragcli, not written by the
    model) listed after them."""
    def where(s):
        return _where(s.book_title or s.book_id, " › ".join(s.section_path or []), s.page_label, s.page_start,
                      s.figure_number if s.kind == "figure" else None)

    lines = [f"[^{prefix}{s.label}]: " + where(s) for s in cited if s.label in in_text]
    rest = [s for s in cited if s.label not in in_text]
    if rest:
        lines += ["", "*Also backed by (found by ragcli):*", ""] + [f"- {s.label}: " + where(s) for s in rest]
    return lines


def conversation_markdown(conversation) -> str:
    """`conversations export ID --format markdown`: each turn a section (the question as asked, the
    standalone question it became, the answer with footnotes). Labels restart at S1 in every turn,
    so footnotes are named by turn: `[^2-S1]` is turn 2's S1."""
    books = f", books: {', '.join(conversation.book_ids)}" if conversation.book_ids else ""
    lines = [f"# {_line(conversation.title)}", "",
             f"*Conversation {conversation.id}, started {conversation.created_at.replace('T', ' ')[:16]}, "
             f"{len(conversation.turns)} turns{books}*", ""]
    for t in conversation.turns:
        lines += [f"## {t.number}. {_line(t.question)}", ""]
        if t.rewritten:
            lines += [f"*Read as: {_line(t.standalone)}*", ""]
        if t.stale:
            lines += [f"> **Stale:** the books changed since; gone: {', '.join(t.stale_sources)}", ""]
        if t.notice:
            lines += [f"> {_line(t.notice)}", ""]
        text = _LABEL.sub(lambda m, n=t.number: f"[^{n}-{m.group(1)}]", terminal_safe(t.answer)) \
            if t.answer and t.status != "no_answer" else "*No answer.*"
        lines += [text, ""]
        if t.status == "extractive":
            lines += ["*Sentences quoted from the book (no model was used); they may not answer the question.*", ""]
        shown = t.answer if t.answer and t.status != "no_answer" else ""
        notes = _notes([s for s in t.sources if s.cited], set(_LABEL.findall(shown)), f"{t.number}-")
        if notes:
            lines += notes + [""]
    return "\n".join(lines).rstrip() + "\n"
