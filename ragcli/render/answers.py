"""An answer on a terminal (`ragcli ask`, `chat`): the text with its labels styled, its health, the
verification, the claims with their support, and the sources cited and not. The JSON of the same data
is `render/data.py`."""
from __future__ import annotations

import re

from rich.text import Text

from ragcli.render.links import gone_note, linked
from ragcli.render.console import terminal_safe
from ragcli.render.data import found_citations
from ragcli.render.terminal import _escape, snippet


_LABEL = re.compile(r"\[([SF]\d+)\]")


def styled_answer(text: str):
    out = Text(terminal_safe(text))
    out.highlight_regex(_LABEL, "bold cyan")
    return out


def expansion_line(rewrite, terms) -> str:
    parts = []
    if rewrite:
        parts.append(f"rewritten: {_escape(rewrite)}")
    if terms:
        parts.append("book terms: " + _escape(", ".join(terms[:8])))
    return "[dim]" + " · ".join(parts) + "[/]"


def print_answer(console, answer, streamed: bool = False, evidence: bool = False) -> None:
    """The answer (unless it was streamed), its health in words, what --verify did, each sentence's
    support (quotes, for an extractive answer), then the sources."""
    if answer.notice:
        console.print(f"[yellow]{_escape(answer.notice)}[/]", highlight=False)
    if (answer.status == "no_context" and not answer.answer) or answer.status == "no_answer":
        pass  # no answer: the notice says why, the passages follow (a streamed draft was withdrawn)
    elif streamed:
        console.print()
    else:
        console.print(styled_answer(answer.answer))
    print_health(console, answer.warnings, answer.status)
    if answer.verification:
        print_verification(console, answer.verification)
    if answer.claims:
        print_claims(console, answer.claims, evidence, quoted=answer.status == "extractive")
    cited = [s for s in answer.sources if s.label in answer.citations]
    other = [s for s in answer.sources if s.label not in answer.citations]
    found = found_citations(answer)
    if cited:
        console.print("\n[bold]Sources[/]")
        for s in cited:
            console.print(source_line(s, found=s.label in found), highlight=False)
    if other:
        console.print("\n[dim]Other retrieved passages[/]" if cited else "\n[bold]Nearest passages[/]")
        for s in other:
            console.print(f"[dim]{source_line(s)}[/]", highlight=False)


def health_words(warnings, status: str = "") -> str:
    """The warnings as one sentence-like line, readable without colour."""
    messages = [w.message if hasattr(w, "message") else w["message"] for w in warnings]
    if status == "unsupported" and not any((getattr(w, "code", None) or w.get("code")) == "unsupported"
                                           for w in warnings):
        messages.insert(0, "no sentence of this answer cites a retrieved passage")
    return "; ".join(messages)


def print_health(console, warnings, status: str = "") -> None:
    """One line after the answer, in words: `warning: ...` (bold red when unsupported)."""
    words = health_words(warnings, status)
    if not words:
        return
    label = "[bold red]unsupported:[/]" if status == "unsupported" else "[bold yellow]warning:[/]"
    console.print(f"{label} {_escape(words)}", highlight=False)


def print_verification(console, verification: dict) -> None:
    """What --verify did: a one-line count, each removed claim struck through with its verdict; or
    why it was skipped."""
    if verification.get("skipped"):
        console.print(f"\n[bold]verification skipped:[/] {_escape(verification['skipped'])}", highlight=False)
        return
    verdicts = verification.get("verdicts") or []
    removed = verification.get("removed_claims") or []
    unknown = sum(1 for v in verdicts if v.get("verdict") is None)
    line = f"\n[bold]verified:[/] {len(verdicts)} claim{'s' if len(verdicts) != 1 else ''} checked, " \
           f"{len(removed)} removed"
    if unknown:
        line += f", {unknown} without a verdict"
    console.print(line, highlight=False)
    by_text = {v.get("claim"): v.get("verdict") for v in verdicts}
    for text in removed:
        console.print(f"  [red]✗ removed ({by_text.get(text) or 'unsupported'}):[/] [strike dim]{_escape(text)}[/]",
                      highlight=False)


def source_line(source, found: bool = False) -> str:
    """`[S1] Title — section, p. 5 (pdf 7): text…`; `found`: the model did not cite this passage,
    ragcli found that it backs a sentence (the Support list says which)."""
    h = source.hit
    where = f"Figure {h.figure_number}, " if h.kind == "figure" else ""
    mark = "[dim](found by ragcli)[/] " if found else ""
    rel = getattr(source, "relevance", None)
    if rel is not None:  # the relevance judge's share of probability that this passage answers
        mark += f"[dim](judged {rel:.2f})[/] "
    where = linked(f"{_escape(h.book_title)} — {_escape(h.section_str)}, {where}p. {h.page_label} "
                   f"(pdf {h.page_start})", h.path, h.page_start)
    return f"[cyan][{source.label}][/] {mark}{where}: {_escape(snippet(h.text, 160))}{gone_note(h.path)}"


SUPPORT_MARKS = {"supported": ("✓", "green"), "weak": ("~", "yellow"), "unsupported": ("✗", "red"),
                 "no_source": ("?", "magenta"), "not_factual": ("·", "dim")}


def print_claims(console, claims, evidence: bool, quoted: bool = False) -> None:
    """Each sentence with its support. `quoted` (an extractive text): the sentences are the book's
    own, so each is shown as a quote with its page, not as "supported" (which a reader would take
    for "answers you")."""
    if quoted:
        console.print("\n[bold]Quoted from the book[/] [dim](sentences picked by similarity to the question; "
                      "they may not answer it)[/]")
        for c in claims:
            where = f" p. {c.evidence.page_label}" if c.evidence else ""
            console.print(f"[cyan]❝[/] {_escape(c.text)}[dim]{where}[/]", highlight=False)
        return
    console.print("\n[bold]Support[/]")
    run = 0  # consecutive sentences with the same label note: the note is said once, after them
    for i, c in enumerate(claims):
        mark, colour = SUPPORT_MARKS.get(c.support, ("?", "white"))
        console.print(f"[{colour}]{mark} {c.support:<11}[/] {_escape(c.text)}", highlight=False)
        if evidence and c.evidence:
            e = c.evidence
            console.print(f"    [dim]↳ [{e.label}] p. {e.page_label}: “{_escape(e.quote)}”[/]", highlight=False)
        if evidence and getattr(c, "why", None):  # a swapped word: the reason the tick was withheld
            console.print(f"    [dim]↳ {_escape(c.why)}[/]", highlight=False)
        note = label_note(c)
        run = run + 1 if note else 0
        if note and (i + 1 == len(claims) or label_note(claims[i + 1]) != note):
            console.print(f"    [dim]↳ {_escape(label_note_words(note, run))}[/]", highlight=False)
            run = 0
    console.print("[dim]legend: ✓ supported · ~ weak · ✗ unsupported (cited passage does not back it) · "
                  "? no source[/]")


def label_note(claim):
    """What ragcli did with a claim's label, as a key equal for sentences that share the note:
    ("found", label) for a label found for an uncited sentence (grounding.attribute), ("moved",
    labels the model wrote, label) for a label moved (grounding.repoint), None otherwise."""
    if claim.attributed and claim.citations:
        return ("found", claim.citations[0])
    if claim.cited_as and claim.citations:
        return ("moved", tuple(claim.cited_as), claim.citations[0])
    return None


def label_note_words(note, count: int) -> str:
    """The note under one sentence, or once under a run of `count` consecutive ones."""
    label = f"[{note[-1]}]"
    if note[0] == "found":
        if count == 1:
            return f"the answer cites no passage here; ragcli found it in {label}"
        return f"these {count} sentences cite no passage; ragcli found them in {label}"
    cited = ", ".join(f"[{lab}]" for lab in note[1])
    if count == 1:
        return f"the answer cites {cited}, which does not back it; {label} does"
    return f"these {count} sentences cite {cited}, which does not back them; {label} does"


def print_answer_sources(console, answer) -> None:
    """`/sources` in chat: the passages the last answer was given, the cited ones first."""
    cited = [s for s in answer.sources if s.label in answer.citations]
    other = [s for s in answer.sources if s.label not in answer.citations]
    console.print(f"[bold]The last answer's passages[/] [dim]({len(answer.sources)}; `/show S1` prints one)[/]",
                  highlight=False)
    if cited:
        console.print("[bold]Sources[/]")
        for s in cited:
            console.print(source_line(s), highlight=False)
    if other:
        console.print("[dim]Other retrieved passages[/]" if cited else "[bold]Retrieved passages[/]")
        for s in other:
            console.print(f"[dim]{source_line(s)}[/]", highlight=False)


def print_passage(console, source) -> None:
    """`/show S2` in chat: the whole passage with where it is."""
    h = source.hit
    where = f"Figure {h.figure_number}, " if h.kind == "figure" else ""
    console.print(f"[bold]Passage {source.label}[/] · {_escape(h.book_title)} — {_escape(h.section_str)}, "
                  f"{where}p. {h.page_label} (pdf {h.page_start})", highlight=False)
    console.print(h.text, markup=False, highlight=False)
