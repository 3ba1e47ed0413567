"""A summary on a terminal (`ragcli summary`): the saved text, its health, its support and its sources;
the tables of saved summaries and of topics. The JSON of the same data is `render/data.py`."""
from __future__ import annotations

from ragcli.render.answers import print_claims, print_health
from ragcli.render.data import model_name, summary_row, summary_warnings, supported_share
from ragcli.render.terminal import _date, _escape, snippet
from ragcli.types import Summary, SummarySource


KIND_NOTE = {"extractive": "extractive summary: key sentences of the books, no model was used"}
SOURCE_STATUS = {"ok": "", "moved": "re-ingested, same text", "gone": "gone"}


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
