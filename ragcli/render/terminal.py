"""Terminal views of the core's dataclasses: hits, books, answers, summaries, eval tables, info,
ingest results. The JSON of the same data is `render/data.py`. rich is imported lazily."""
from __future__ import annotations

import re

from ragcli.render.data import books_of, model_name, summary_row
from ragcli.types import Book, Hit, Summary


def highlight(text: str, query: str):
    from rich.text import Text

    from ragcli.text import STOPWORDS

    out = Text(text)
    words = {w.lower() for w in re.findall(r"\w{3,}", query) if w.lower() not in STOPWORDS}
    for w in words:
        out.highlight_regex(re.compile(rf"\b{re.escape(w)}\w*", re.I), "bold yellow")
    return out


def snippet(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


# -- search, books, info, ingest, eval ------------------------------------------------------------

def hits_table(hits: list[Hit], query: str):
    from rich.table import Table

    table = Table(show_lines=True, expand=True)
    table.add_column("#", justify="right", width=3)
    table.add_column("where", ratio=1)
    table.add_column("text", ratio=3)
    table.add_column("score", justify="right", width=8)
    for h in hits:
        kind = f"Figure {h.figure_number}" if h.kind == "figure" else ""
        where = f"[bold]{h.book_id}[/] p. {h.page_label} (pdf {h.page_start})\n[dim]{h.section_str}[/]"
        if kind:
            where = f"[magenta]{kind}[/]\n" + where
        sides = []
        if h.lexical_rank:
            sides.append(f"bm25 #{h.lexical_rank}")
        if h.dense_rank:
            sides.append(f"vec #{h.dense_rank}")
        table.add_row(str(h.rank), where, highlight(snippet(h.text, 400), query),
                      f"{h.score:.4f}\n[dim]{' '.join(sides)}[/]")
    return table


def books_table(books: list[Book]):
    from rich.table import Table

    table = Table()
    for col in ("id", "title", "pages", "sections", "figures", "passages", "ingested at"):
        table.add_column(col, justify="right" if col in ("pages", "sections", "figures", "passages") else "left")
    for b in books:
        table.add_row(b.id, b.title, str(b.page_count), str(b.sections), str(b.figures), str(b.passages),
                      b.ingested_at)
    return table


def print_info(console, data: dict) -> None:
    """`ragcli info`: one `key: value` line each (nested dicts on one line)."""
    for key, value in data.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in value.items())
        console.print(f"[bold]{key}[/]: {value}", highlight=False)


def ingest_line(r) -> str | None:
    """The one line an ingested file gets on stderr (None for a failed one: its error was said)."""
    if r.status == "failed":
        return None
    if r.status == "unchanged":
        return f"[dim]unchanged[/] {r.book_id}: already in the corpus ({r.path})"
    return (f"[green]{r.status}[/] [bold]{r.book_id}[/] “{r.title}”: {r.pages} pages, {r.sections} sections, "
            f"{r.figures} figures, {r.passages} passages ({r.embedded} embedded, {r.reused} reused) "
            f"in {r.seconds:.1f}s")


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
    from rich.text import Text

    out = Text(text)
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
    if answer.notice:
        console.print(f"[yellow]{_escape(answer.notice)}[/]", highlight=False)
    if answer.status == "no_context" and not answer.answer:
        pass
    elif streamed:
        console.print()
    else:
        console.print(styled_answer(answer.answer))
    if answer.status == "unsupported":
        console.print("[bold red]unsupported:[/] no sentence of this answer cites a retrieved passage")
    if answer.claims:
        print_claims(console, answer.claims, evidence)
    cited = [s for s in answer.sources if s.label in answer.citations]
    other = [s for s in answer.sources if s.label not in answer.citations]
    if cited:
        console.print("\n[bold]Sources[/]")
        for s in cited:
            console.print(source_line(s), highlight=False)
    if other:
        console.print("\n[dim]Other retrieved passages[/]" if cited else "\n[bold]Nearest passages[/]")
        for s in other:
            console.print(f"[dim]{source_line(s)}[/]", highlight=False)


def source_line(source) -> str:
    h = source.hit
    where = f"Figure {h.figure_number}, " if h.kind == "figure" else ""
    return (f"[cyan][{source.label}][/] {_escape(h.book_title)} — {_escape(h.section_str)}, {where}"
            f"p. {h.page_label} (pdf {h.page_start}): {_escape(snippet(h.text, 160))}")


SUPPORT_MARKS = {"supported": ("✓", "green"), "weak": ("~", "yellow"), "unsupported": ("✗", "red"),
                 "no_source": ("?", "magenta"), "not_factual": ("·", "dim")}


def print_claims(console, claims, evidence: bool) -> None:
    console.print("\n[bold]Support[/]")
    for c in claims:
        mark, colour = SUPPORT_MARKS.get(c.support, ("?", "white"))
        console.print(f"[{colour}]{mark} {c.support:<11}[/] {_escape(c.text)}", highlight=False)
        if evidence and c.evidence:
            e = c.evidence
            console.print(f"    [dim]↳ [{e.label}] p. {e.page_label}: “{_escape(e.quote)}”[/]", highlight=False)
    console.print("[dim]legend: ✓ supported · ~ weak · ✗ unsupported (cited passage does not back it) · "
                  "? no source[/]")


# -- summaries ------------------------------------------------------------------------------------

KIND_NOTE = {"extractive": "extractive summary: key sentences of the books, no model was used"}
SOURCE_STATUS = {"ok": "", "moved": "re-ingested, same text", "gone": "gone"}


def _date(created_at: str) -> str:
    return created_at.replace("T", " ")[:16]


def print_summary(console, summary: Summary, streamed: bool = False) -> None:
    """The saved text (unless it was already streamed), its support and its cited sources."""
    title = f"Summary #{summary.number} · {_escape(summary.topic)} · {_date(summary.created_at)}"
    if streamed:
        console.print(f"\n\n[bold]saved as {title}[/]", highlight=False)
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
        console.print(styled_answer(summary.text))
    if summary.claims:
        print_claims(console, summary.claims, evidence=False)
    cited = [s for s in summary.sources if s.get("cited")]
    if cited:
        console.print("\n[bold]Sources[/]")
        for s in cited:
            console.print(summary_source_line(s), highlight=False)
    else:
        console.print("\n[bold red]no sentence of this summary cites a passage[/]")


def summary_source_line(source: dict) -> str:
    where = f"Figure {source['figure_number']}, " if source.get("kind") == "figure" else ""
    section = " › ".join(source.get("section_path") or [])
    text = _escape(snippet(source.get("text") or "", 140))
    line = (f"[cyan][{source['label']}][/] {_escape(source.get('book_title') or source['book_id'])} — "
            f"{_escape(section)}, {where}p. {source.get('page_label')}: {text}")
    status = source.get("status", "ok")
    if status == "gone":
        line += f" [bold red]({_escape(source.get('reason') or 'gone')})[/]"
    elif status == "moved":
        line += f" [dim]({SOURCE_STATUS['moved']})[/]"
    return line


def summaries_table(summaries: list[Summary]):
    from rich.table import Table

    table = Table()
    for col in ("#", "date", "kind", "model", "books", "cited", "status"):
        table.add_column(col, justify="right" if col in ("#", "cited") else "left",
                         no_wrap=col in ("#", "date", "kind", "cited", "status"))
    for s in summaries:
        row = summary_row(s)
        status = f"[red]stale[/] ({len(s.stale_sources)} gone)" if s.status == "stale" else "[green]ok[/]"
        table.add_row(str(s.number), _date(s.created_at), s.kind, str(row["model"] or "—"),
                      ", ".join(books_of(s)), f"{row['cited']}/{row['sources']}", status)
    return table


def topics_table(rows: list[dict]):
    from rich.table import Table

    table = Table()
    for col in ("topic", "summaries", "latest", "date"):
        table.add_column(col, justify="right" if col in ("summaries", "latest") else "left",
                         no_wrap=col != "topic")
    for r in rows:
        table.add_row(_escape(r["topic"]), str(r["count"]), f"#{r['latest_number']}", _date(r["latest_at"]))
    return table
