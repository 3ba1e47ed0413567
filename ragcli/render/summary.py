"""Rich and JSON renderings of summaries (`summary new/show/list/topics`). Depends on `types` and
`render` only; rich is imported lazily."""
from __future__ import annotations

from ragcli.render.terminal import print_claims, snippet, styled_answer, to_data
from ragcli.types import Summary

KIND_NOTE = {"extractive": "extractive summary: key sentences of the books, no model was used"}
SOURCE_STATUS = {"ok": "", "moved": "re-ingested, same text", "gone": "gone"}


def books_of(summary: Summary) -> list[str]:
    """Book ids the summary cites (of all its sources when it cites none), in order of first use."""
    relied_on = [s for s in summary.sources if s.get("cited")] or summary.sources
    out: list[str] = []
    for s in relied_on:
        if s["book_id"] not in out:
            out.append(s["book_id"])
    return out


def model_name(summary: Summary):
    return (summary.model or {}).get("name") or (summary.model or {}).get("file")


def source_data(source: dict) -> dict:
    """The JSON shape of one saved source (README: "summary show --json")."""
    return {
        "label": source["label"], "cited": bool(source.get("cited")), "kind": source.get("kind"),
        "book_id": source["book_id"], "book_title": source.get("book_title"),
        "section_path": source.get("section_path", []), "page_label": source.get("page_label"),
        "page": source.get("page_start"), "page_end": source.get("page_end"),
        "figure_number": source.get("figure_number"), "passage_id": source["passage_id"],
        "text_hash": source["text_hash"], "status": source.get("status", "ok"),
        "reason": source.get("reason"), "current_passage_id": source.get("current_passage_id"),
        "text": source.get("text"),
    }


def summary_data(summary: Summary) -> dict:
    """The JSON shape of `summary new --json` and `summary show --json`."""
    return {
        "topic": summary.topic, "topic_key": summary.topic_key, "number": summary.number,
        "kind": summary.kind, "status": summary.status, "stale_sources": summary.stale_sources,
        "created_at": summary.created_at, "text": summary.text,
        "citations": [s["label"] for s in summary.sources if s.get("cited")],
        "books": books_of(summary), "model": summary.model, "params": summary.params,
        "claims": [to_data(c) for c in summary.claims],
        "removed_citations": [to_data(r) for r in summary.removed_citations],
        "sources": [source_data(s) for s in summary.sources],
    }


def list_row(summary: Summary) -> dict:
    return {
        "number": summary.number, "created_at": summary.created_at, "kind": summary.kind,
        "model": model_name(summary), "books": books_of(summary), "sources": len(summary.sources),
        "cited": sum(1 for s in summary.sources if s.get("cited")), "status": summary.status,
        "stale_sources": summary.stale_sources,
    }


def list_data(topic: str, topic_key: str, summaries: list[Summary]) -> dict:
    """The JSON shape of `summary list --json`."""
    return {"topic": topic, "topic_key": topic_key, "count": len(summaries),
            "summaries": [list_row(s) for s in summaries]}


def topics_data(rows: list[dict]) -> list[dict]:
    """The JSON shape of `summary topics --json`."""
    return [{"topic": r["topic"], "topic_key": r["topic_key"], "count": r["count"],
             "latest_number": r["latest_number"], "latest_at": r["latest_at"]} for r in rows]


def _date(created_at: str) -> str:
    return created_at.replace("T", " ")[:16]


def print_summary(console, summary: Summary, streamed: bool = False) -> None:
    """The saved text (unless it was already streamed), its support and its cited sources."""
    from rich.markup import escape

    title = f"Summary #{summary.number} · {escape(summary.topic)} · {_date(summary.created_at)}"
    if streamed:
        console.print(f"\n\n[bold]saved as {title}[/]", highlight=False)
    else:
        console.print(f"[bold]{title}[/]", highlight=False)
    if summary.kind in KIND_NOTE:
        console.print(f"[yellow]{KIND_NOTE[summary.kind]}[/]", highlight=False)
    elif summary.model:
        console.print(f"[dim]model: {escape(str(model_name(summary)))}[/]", highlight=False)
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
            console.print(source_line(s), highlight=False)
    else:
        console.print("\n[bold red]no sentence of this summary cites a passage[/]")


def source_line(source: dict) -> str:
    from rich.markup import escape

    where = f"Figure {source['figure_number']}, " if source.get("kind") == "figure" else ""
    section = " › ".join(source.get("section_path") or [])
    text = escape(snippet(source.get("text") or "", 140))
    line = (f"[cyan][{source['label']}][/] {escape(source.get('book_title') or source['book_id'])} — "
            f"{escape(section)}, {where}p. {source.get('page_label')}: {text}")
    status = source.get("status", "ok")
    if status == "gone":
        line += f" [bold red]({escape(source.get('reason') or 'gone')})[/]"
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
        row = list_row(s)
        status = f"[red]stale[/] ({len(s.stale_sources)} gone)" if s.status == "stale" else "[green]ok[/]"
        table.add_row(str(s.number), _date(s.created_at), s.kind, str(row["model"] or "—"),
                      ", ".join(row["books"]), f"{row['cited']}/{row['sources']}", status)
    return table


def topics_table(rows: list[dict]):
    from rich.markup import escape
    from rich.table import Table

    table = Table()
    for col in ("topic", "summaries", "latest", "date"):
        table.add_column(col, justify="right" if col in ("summaries", "latest") else "left",
                         no_wrap=col != "topic")
    for r in rows:
        table.add_row(escape(r["topic"]), str(r["count"]), f"#{r['latest_number']}", _date(r["latest_at"]))
    return table
