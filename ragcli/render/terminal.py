"""Terminal views of the core's dataclasses: hits, books, answers, summaries, eval tables, info,
ingest results. The JSON of the same data is `render/data.py`. rich is imported lazily."""
from __future__ import annotations

import re
import textwrap

from rich.markup import escape
from rich.text import Text

from ragcli.render.console import terminal_safe
from ragcli.render.links import gone_note, linked
from ragcli.render.data import found_citations, model_name, summary_row, summary_warnings, supported_share
from ragcli.types import Book, Hit, Summary, SummarySource


def highlight(text: str, query: str):
    from ragcli.text import STOPWORDS

    out = Text(terminal_safe(text))
    words = {w.lower() for w in re.findall(r"\w{3,}", query) if w.lower() not in STOPWORDS}
    for w in words:
        out.highlight_regex(re.compile(rf"\b{re.escape(w)}\w*", re.I), "bold yellow")
    return out


def snippet(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def _escape(text: str) -> str:
    """Untrusted one-line text (a title, a name, a question) for markup: escapes shown, one line."""
    return escape(terminal_safe(text, lines=False))


# -- search, books, info, ingest, eval ------------------------------------------------------------

SNIPPET_LINES = 2  # a hit on a terminal: a header line, two lines of text, the scores with --verbose


def print_hits(console, hits: list[Hit], query: str, verbose: bool = False) -> None:
    """One hit in at most 4 lines at 80 columns: rank, book id, printed page (figure) and the tail
    of the section; a snippet of the text; with `verbose`, the scores. In a pipe each part is one
    unwrapped line."""
    terminal = console.is_terminal
    width = console.width if terminal else None
    for h in hits:
        console.print(hit_header(h, width), highlight=False)
        text = " ".join(h.text.split())
        if width:
            lines = _wrap(text, width - 5, SNIPPET_LINES)
        else:
            lines = [snippet(text, 300)]
        for line in lines:
            out = highlight(line, query)
            out.pad_left(5)
            console.print(out)
        if verbose:
            console.print(f"     [dim]{hit_scores(h)}[/]", highlight=False)


def hit_header(h: Hit, width: int | None = None) -> str:
    """`  3. fm4-25-11 · p. 2-25 · Figure 2-31 · … › Tourniquet` (the section cut from the left)."""
    head = f"{h.rank:>3}. " + linked(f"[bold]{_escape(h.book_id)}[/] · p. {_escape(h.page_label)}", h.path,
                                     h.page_start)
    plain = len(f"{h.rank:>3}. {h.book_id} · p. {h.page_label}")
    if h.kind == "figure" and h.figure_number:
        head += f" · [magenta]Figure {_escape(h.figure_number)}[/]"
        plain += len(f" · Figure {h.figure_number}")
    if h.text_kind and h.text_kind not in ("exposition", ""):  # a drill, an exam question, an index...
        head += f" · [yellow]{_escape(h.text_kind)}[/]"
        plain += len(f" · {h.text_kind}")
    section = h.section_str
    if section and width:
        section = section_tail(h.section_path, width - plain - 3)
    if section:
        head += f" · [dim]{_escape(section)}[/]"
    return head


def section_tail(path: list[str], room: int) -> str:
    """The last parts of a section path that fit in `room` characters ("… › 2-20. Tourniquet"),
    cut at a word when even the last part is too long."""
    parts: list[str] = []
    for part in reversed(path):
        candidate = " › ".join([part, *parts])
        if len(candidate) + (2 if part is not path[0] else 0) > room:
            break
        parts.insert(0, part)
    if not parts:
        if room < 12 or not path:
            return ""
        last = path[-1]
        return "…" + last[len(last) - (room - 1):].split(" ", 1)[-1] if len(last) > room else last
    text = " › ".join(parts)
    return text if len(parts) == len(path) else "… › " + text


def hit_scores(h: Hit) -> str:
    """What the fused score is made of, in words."""
    parts = [f"score {h.score:.4f}"]
    parts.append(f"words #{h.lexical_rank}" if h.lexical_rank else "words: not found")
    parts.append(f"meaning #{h.dense_rank}" if h.dense_rank else "meaning: not in the top")
    if h.dense_score is not None:
        parts.append(f"similarity {h.dense_score:.2f}")
    return " · ".join(parts)


def _wrap(text: str, width: int, max_lines: int) -> list[str]:
    """Word-boundary lines; the last one ends in … when text is left over."""
    lines = textwrap.wrap(text, max(width, 20), break_long_words=True, break_on_hyphens=False)
    if len(lines) <= max_lines:
        return lines
    kept = lines[:max_lines]
    last = kept[-1]
    if len(last) + 1 > width:
        last = last[:width - 1].rsplit(" ", 1)[0]
    kept[-1] = last + "…"
    return kept


BOOK_COLUMNS = ("id", "title", "format", "pages", "ocr", "ocr_engine", "passages", "sections", "figures", "ingested")


def compact(n: int) -> str:
    """A count in at most 4 characters: 980, 7.8k, 78k, 1.2M."""
    if n < 1000:
        return str(n)
    for unit, size in (("k", 1_000), ("M", 1_000_000)):
        if n < 10 * size:
            return f"{n / size:.1f}".rstrip("0").rstrip(".") + unit
        if n < 1000 * size:
            return f"{n // size}{unit}"
    return f"{n // 1_000_000_000}G"


def books_table(books: list[Book], width: int | None = None):
    """Books on a terminal of `width` columns (80 at least): id and title first, the id (what --book
    takes) never cut, the title cut with an ellipsis to what is left, counts compact; sections,
    figures and the date only when there is room (100 columns)."""
    from rich import box
    from rich.table import Table

    width = max(width or 80, 80)
    rows = [book_row(b, compact) for b in books]

    def title_room(cols: list[str]) -> int:
        fixed = sum(max([len(c)] + [len(r[c]) for r in rows]) for c in cols if c != "title")
        return width - fixed - 3 * (len(cols) - 1) - 2  # cell padding and separators, the two edges

    cols = ["id", "title", "format", "pages"] + (["ocr"] if any(b.ocr_pages for b in books) else []) + ["passages"]
    if title_room(cols + ["sections", "figures", "ingested"]) >= 30:
        cols += ["sections", "figures", "ingested"]
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for col in cols:
        numeric = col in ("pages", "ocr", "passages", "sections", "figures")
        table.add_column(col, justify="right" if numeric else "left", no_wrap=True, overflow="ellipsis",
                         max_width=max(title_room(cols), 8) if col == "title" else None)
    for r in rows:
        table.add_row(*(_escape(r[c]) for c in cols))
    return table


def book_row(b: Book, number=str) -> dict[str, str]:
    """One book's cells by column name (BOOK_COLUMNS), counts written by `number`."""
    return {"id": b.id, "title": " ".join(b.title.split()), "format": b.format or "",
            "pages": number(b.page_count), "ocr": number(b.ocr_pages) if b.ocr_pages else "",
            "ocr_engine": b.ocr_engine if b.ocr_pages else "",
            "passages": number(b.passages), "sections": number(b.sections), "figures": number(b.figures),
            "ingested": b.ingested_at[:10]}


def books_lines(books: list[Book]) -> list[str]:
    """Books for a pipe: a header and one tab-separated line per book, every column, whole values."""
    return ["\t".join(BOOK_COLUMNS)] + ["\t".join(terminal_safe(str(book_row(b)[c]), lines=False) for c in BOOK_COLUMNS)
                                        for b in books]


def print_info(console, data: dict) -> None:
    """`ragcli info`: one `key: value` line each (nested dicts on one line, their empty values left out)."""
    for key, value in data.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in value.items() if v is not None and v != "")
        console.print(f"[bold]{key}[/]: {value}", highlight=False)


def ingest_line(r) -> str | None:
    """The one line an ingested file gets on stderr (None for a failed one: its error was said)."""
    if r.status == "failed":
        return None
    if r.status == "unchanged":
        return f"[dim]unchanged[/] {r.book_id}: already in the corpus ({r.path})"
    ocr = f" ({r.ocr_pages} by OCR)" if r.ocr_pages else ""
    return (f"[green]{r.status}[/] [bold]{_escape(r.book_id)}[/] “{_escape(r.title)}”: {r.pages} pages{ocr}, "
            f"{r.sections} sections, {r.figures} figures, {r.passages} passages in {r.seconds:.1f}s "
            f"({r.embedded} vectors computed, {r.reused} reused)")


def reembed_line(report: dict) -> str:
    return (f"re-embedded {report['passages']} passages and {report['terms']} terms with {report['model']} "
            f"({report['dim']} dimensions)")


def eval_table(report):
    """`eval retrieval`: one column per mode, the best value of each row in bold."""
    from rich.table import Table

    table = Table(title=f"{report.queries} {'BEIR' if report.kind == 'beir' else 'page-set'} queries")
    table.add_column("metric")
    for r in report.modes:
        table.add_column(r.mode, justify="right")
    rows = [("", m) for m in report.metrics]
    types = sorted({t for r in report.modes for t in r.by_type})
    for t in types:
        rows += [(t, m) for m in report.metrics if m.startswith(("hit", "mrr"))]
    for group, metric in rows:
        values = [(r.by_type.get(group, {}) if group else r.metrics).get(metric, 0.0) for r in report.modes]
        best = max(values) if values else 0.0
        cells = [f"[bold]{v:.3f}[/]" if v == best and len(values) > 1 else f"{v:.3f}" for v in values]
        table.add_row(f"{group} {metric}".strip(), *cells)
    table.add_row("seconds", *[f"{r.seconds:.1f}" for r in report.modes])
    return table


# -- answers -------------------------------------------------------------------------------------

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


# -- summaries ------------------------------------------------------------------------------------

KIND_NOTE = {"extractive": "extractive summary: key sentences of the books, no model was used"}
SOURCE_STATUS = {"ok": "", "moved": "re-ingested, same text", "gone": "gone"}


def _date(created_at: str) -> str:
    return created_at.replace("T", " ")[:16]


def print_summary(console, summary: Summary, streamed: bool = False, saved: bool = True) -> None:
    """The saved text (unless it was already streamed; Markdown rendered on a terminal), its health
    and share of supported sentences, its support and its cited sources."""
    title = f"Summary #{summary.number} · {_escape(summary.topic)} · {_date(summary.created_at)}"
    if not saved:
        console.print(f"\n[bold red]not saved:[/] summary of {_escape(summary.topic)} · "
                      f"{_date(summary.created_at)}", highlight=False)
    elif streamed:
        console.print(f"\n[bold]saved as {title}[/]", highlight=False)
    else:
        console.print(f"[bold]{title}[/]", highlight=False)
    if summary.kind in KIND_NOTE:
        console.print(f"[yellow]{KIND_NOTE[summary.kind]}[/]", highlight=False)
    elif summary.model:
        console.print(f"[dim]model: {_escape(str(model_name(summary)))}[/]", highlight=False)
    if summary.status == "stale":
        console.print(f"[bold red]stale:[/] the books changed since; gone: {', '.join(summary.stale_sources)}"
                      f" (`ragcli summary new` makes a fresh one)", highlight=False)
    if not streamed:
        console.print()
        if console.is_terminal:
            from rich.markdown import Markdown

            console.print(Markdown(summary.text))
        else:
            console.print(summary.text, markup=False, highlight=False)
    share = supported_share(summary.claims)
    if share is not None and summary.kind != "extractive":
        console.print(f"\n[bold]supported:[/] {share:.0%} of its factual sentences", highlight=False)
    print_health(console, summary_warnings(summary))
    if summary.claims:
        print_claims(console, summary.claims, evidence=False, quoted=summary.kind == "extractive")
    cited = [s for s in summary.sources if s.cited]
    if cited:
        console.print("\n[bold]Sources[/]")
        for s in cited:
            console.print(summary_source_line(s), highlight=False)
    else:
        console.print("\n[bold red]no sentence of this summary cites a passage[/]")


def summary_source_line(source: SummarySource) -> str:
    where = f"Figure {source.figure_number}, " if source.kind == "figure" else ""
    section = " › ".join(source.section_path or [])
    text = _escape(snippet(source.text or "", 140))
    line = (f"[cyan][{source.label}][/] {_escape(source.book_title or source.book_id)} — "
            f"{_escape(section)}, {where}p. {source.page_label}: {text}")
    status = source.status
    if status == "gone":
        line += f" [bold red]({_escape(source.reason or 'gone')})[/]"
    elif status == "moved":
        line += f" [dim]({SOURCE_STATUS['moved']})[/]"
    return line


def summaries_table(summaries: list[Summary]):
    """`summary list`: number, date, kind, model, cited sources, share of supported sentences, health."""
    from rich import box
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("#", "date", "kind", "model", "cited", "supported", "health"):
        table.add_column(col, justify="right" if col in ("#", "cited", "supported") else "left",
                         no_wrap=col in ("#", "date", "kind", "cited", "supported"))
    for s in summaries:
        row = summary_row(s)
        table.add_row(str(s.number), _date(s.created_at), s.kind, _escape(str(row["model"] or "—")),
                      f"{row['cited']}/{row['sources']}",
                      "—" if row["supported_share"] is None or s.kind == "extractive"
                      else f"{row['supported_share']:.0%}", summary_health_cell(s))
    return table


def summary_health_cell(summary: Summary) -> str:
    """`ok`, or what is wrong in words: stale, and the saved warnings' codes."""
    parts = []
    if summary.status == "stale":
        parts.append(f"[red]stale[/] ({len(summary.stale_sources)} gone)")
    parts += [f"[yellow]{_escape(w['code'])}[/]" for w in summary_warnings(summary)]
    return ", ".join(parts) or "[green]ok[/]"


def topics_table(rows: list[dict]):
    from rich.table import Table

    table = Table()
    for col in ("topic", "summaries", "latest", "date"):
        table.add_column(col, justify="right" if col in ("summaries", "latest") else "left",
                         no_wrap=col != "topic")
    for r in rows:
        table.add_row(_escape(r["topic"]), str(r["count"]), f"#{r['latest_number']}", _date(r["latest_at"]))
    return table


# -- conversations --------------------------------------------------------------------------------

def standalone_line(question: str) -> str:
    """The standalone question a follow-up became, dimmed (before retrieval)."""
    return f"[dim]→ {_escape(question)}[/]"


def turn_saved_line(turn) -> str:
    return f"[dim]conversation {turn.conversation_id}, turn {turn.number} saved[/]"


def conversations_table(rows):
    """`conversations list`: id, turns, last and first date, the first question."""
    from rich import box
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD)
    for col in ("id", "turns", "last turn", "started", "first question"):
        table.add_column(col, justify="right" if col in ("id", "turns") else "left")
    for c in rows:
        table.add_row(str(c.id), str(c.turn_count), _date(c.updated_at), _date(c.created_at),
                      _escape(snippet(c.title, 60)))
    return table


def print_conversation(console, conversation) -> None:
    """Every turn: the question (and the standalone question it became), the answer, its status,
    staleness and cited sources."""
    books = f" · books: {', '.join(conversation.book_ids)}" if conversation.book_ids else ""
    console.print(f"[bold]Conversation {conversation.id}[/] · {len(conversation.turns)} turns · started "
                  f"{_date(conversation.created_at)}{books}", highlight=False)
    for t in conversation.turns:
        console.print(f"\n[bold]{t.number}. {_escape(t.question)}[/]", highlight=False)
        if t.rewritten:
            console.print(standalone_line(t.standalone), highlight=False)
        meta = [t.status, _date(t.created_at)]
        if t.model:
            meta.append(str(t.model.get("name") or t.model.get("file") or ""))
        console.print(f"[dim]{_escape(' · '.join(m for m in meta if m))}[/]", highlight=False)
        if t.stale:
            console.print(f"[bold red]stale:[/] the books changed since; gone: {', '.join(t.stale_sources)}",
                          highlight=False)
        if t.notice:
            console.print(f"[yellow]{_escape(t.notice)}[/]", highlight=False)
        if t.answer and t.status != "no_answer":  # a withheld draft is not shown (the notice says why)
            console.print(styled_answer(t.answer))
        cited = [s for s in t.sources if s.cited]
        for s in cited:
            console.print("  " + summary_source_line(s), highlight=False)


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
