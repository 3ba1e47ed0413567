"""A conversation on a terminal (`ragcli conversations`, `ask --continue`): the standalone question a
follow-up became, the saved turn, the list of conversations and one conversation's turns."""
from __future__ import annotations

from ragcli.render.answers import styled_answer
from ragcli.render.summaries import summary_source_line
from ragcli.render.terminal import _date, _escape, snippet


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
