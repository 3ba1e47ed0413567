"""Terminal views of the core's dataclasses, a module an object: books, info, ingest results and eval
tables here, with the pieces the others share (snippet, _escape, _date); hits in render/hits.py,
answers in render/answers.py, summaries in render/summaries.py, conversations in
render/conversations.py. The JSON of the same data is `render/data.py`. rich is imported lazily."""
from __future__ import annotations

from rich.markup import escape

from ragcli.render.console import terminal_safe
from ragcli.types import Book


def snippet(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def _escape(text: str) -> str:
    """Untrusted one-line text (a title, a name, a question) for markup: escapes shown, one line."""
    return escape(terminal_safe(text, lines=False))


# -- books, info, ingest, eval --------------------------------------------------------------------

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


def _date(created_at: str) -> str:
    return created_at.replace("T", " ")[:16]
