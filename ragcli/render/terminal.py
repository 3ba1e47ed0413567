"""Rich and JSON renderings of the same dataclasses. Depends only on `types` (and rich, lazily)."""
from __future__ import annotations

import dataclasses
import json
import re
import sys
from typing import Any

from ragcli.types import Book, Hit


def to_data(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {k: to_data(v) for k, v in dataclasses.asdict(obj).items()}
    if isinstance(obj, (list, tuple)):
        return [to_data(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_data(v) for k, v in obj.items()}
    return obj


def print_json(data: Any) -> None:
    json.dump(to_data(data), sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")


def hit_data(hit: Hit) -> dict:
    """The documented JSON shape of one search hit (README: "search --json")."""
    return {
        "rank": hit.rank, "kind": hit.kind, "passage_id": hit.passage_id,
        "book_id": hit.book_id, "book_title": hit.book_title,
        "section_path": hit.section_path, "section": hit.section_str,
        "page_label": hit.page_label, "page": hit.page_start, "page_end": hit.page_end,
        "figure_number": hit.figure_number,
        "score": round(hit.score, 6),
        "lexical_score": None if hit.lexical_score is None else round(hit.lexical_score, 4),
        "lexical_rank": hit.lexical_rank,
        "dense_score": None if hit.dense_score is None else round(hit.dense_score, 4),
        "dense_rank": hit.dense_rank,
        "text": hit.text,
    }


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


# -- answers -------------------------------------------------------------------------------------

_LABEL = re.compile(r"\[([SF]\d+)\]")


def styled_answer(text: str):
    from rich.text import Text

    out = Text(text)
    out.highlight_regex(_LABEL, "bold cyan")
    return out


def expansion_line(rewrite, terms) -> str:
    from rich.markup import escape

    parts = []
    if rewrite:
        parts.append(f"rewritten: {escape(rewrite)}")
    if terms:
        parts.append("book terms: " + escape(", ".join(terms[:8])))
    return "[dim]" + " · ".join(parts) + "[/]"


def source_data(source) -> dict:
    h = source.hit
    return {
        "label": source.label, "kind": h.kind, "book_id": h.book_id, "book_title": h.book_title,
        "section_path": h.section_path, "page_label": h.page_label, "page": h.page_start,
        "page_end": h.page_end, "figure_number": h.figure_number, "passage_id": h.passage_id,
        "score": round(h.score, 6), "text": h.text,
    }


def answer_data(answer) -> dict:
    """The documented JSON shape of `ask --json` (README)."""
    return {
        "question": answer.question,
        "expanded_query": answer.expanded_query,
        "answer": answer.answer,
        "status": answer.status,
        "notice": answer.notice,
        "citations": answer.citations,
        "removed_citations": [to_data(r) for r in answer.removed_citations],
        "claims": [to_data(c) for c in answer.claims],
        "sources": [source_data(s) for s in answer.sources],
        "model": answer.model,
        "timings": {k: (round(v, 4) if isinstance(v, float) else v) for k, v in answer.timings.items()},
        "verification": answer.verification,
        **({"prompt": answer.prompt} if answer.prompt else {}),
    }


def print_answer(console, answer, streamed: bool = False, evidence: bool = False) -> None:
    from rich.markup import escape

    if answer.notice:
        console.print(f"[yellow]{escape(answer.notice)}[/]", highlight=False)
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
            console.print(_source_line(s), highlight=False)
    if other:
        console.print("\n[dim]Other retrieved passages[/]" if cited else "\n[bold]Nearest passages[/]")
        for s in other:
            console.print(f"[dim]{_source_line(s)}[/]", highlight=False)


def _source_line(source) -> str:
    from rich.markup import escape

    h = source.hit
    where = f"Figure {h.figure_number}, " if h.kind == "figure" else ""
    return (f"[cyan][{source.label}][/] {escape(h.book_title)} — {escape(h.section_str)}, {where}"
            f"p. {h.page_label} (pdf {h.page_start}): {escape(snippet(h.text, 160))}")


SUPPORT_MARKS = {"supported": ("✓", "green"), "weak": ("~", "yellow"), "unsupported": ("✗", "red"),
                 "no_source": ("?", "magenta"), "not_factual": ("·", "dim")}


def print_claims(console, claims, evidence: bool) -> None:
    from rich.markup import escape

    console.print("\n[bold]Support[/]")
    for c in claims:
        mark, colour = SUPPORT_MARKS.get(c.support, ("?", "white"))
        console.print(f"[{colour}]{mark} {c.support:<11}[/] {escape(c.text)}", highlight=False)
        if evidence and c.evidence:
            e = c.evidence
            console.print(f"    [dim]↳ [{e.label}] p. {e.page_label}: “{escape(e.quote)}”[/]", highlight=False)
    console.print("[dim]legend: ✓ supported · ~ weak · ✗ unsupported (cited passage does not back it) · "
                  "? no source[/]")
