"""Every SQL statement of conversations (tables from migration m008_conversations).

`insert_turn` is the only writer of turns: it takes the next number of the conversation inside one
BEGIN IMMEDIATE transaction, so two `ask -c` running at once on one conversation get 2 and 3, never 2
and 2 (UNIQUE(conversation_id, number) would refuse a duplicate anyway). A new conversation is created
in the same transaction as its first turn: a turn that fails or is interrupted leaves nothing behind.
"""
from __future__ import annotations

import json
from typing import Optional

from ragcli.store.sql import transaction
from ragcli.store.summaries import SOURCE_COLUMNS, _claim, _dumps, _source_row, saved_sources
from ragcli.types import Conversation, RemovedCitation, SummarySource, Turn

_TURN_COLUMNS = ("id, conversation_id, number, question, standalone, rewritten, rewrite, answer, status, notice,"
                 " expanded_query, model, claims, removed_citations, timings, created_at")
_CONVERSATION_COLUMNS = "id, title, book_ids, created_at, updated_at"


def insert_turn(conn, turn: Turn, title: str = "", book_ids=()) -> tuple[int, int]:
    """Save `turn` as the next turn of `turn.conversation_id`, or of a new conversation (titled
    `title`, scoped to `book_ids`) when that is 0. Returns (conversation id, turn number), also set on
    `turn`. Returns (0, 0) when the conversation was deleted meanwhile."""
    lock = f"conversation:{turn.conversation_id}" if turn.conversation_id else None
    with transaction(conn, lock=lock):  # PostgreSQL: one writer of this conversation's numbers at a time
        cid = turn.conversation_id
        if not cid:
            cid = conn.execute("INSERT INTO conversations(title, book_ids, created_at, updated_at)"
                               " VALUES (?,?,?,?)", (title or turn.question, _dumps(list(book_ids or [])),
                                                     turn.created_at, turn.created_at)).lastrowid
        elif not conn.execute("SELECT 1 FROM conversations WHERE id = ?", (cid,)).fetchone():
            return 0, 0
        number = conn.execute("SELECT COALESCE(MAX(number), 0) FROM conversation_turns WHERE conversation_id = ?",
                              (cid,)).fetchone()[0] + 1
        cur = conn.execute(
            f"INSERT INTO conversation_turns({_TURN_COLUMNS.split(', ', 1)[1]}) VALUES ({', '.join('?' * 15)})",
            (cid, number, turn.question, turn.standalone, 1 if turn.rewritten else 0, _dumps(turn.rewrite),
             turn.answer, turn.status, turn.notice, turn.expanded_query,
             None if turn.model is None else _dumps(turn.model), _dumps(turn.claims),
             _dumps(turn.removed_citations), _dumps(turn.timings), turn.created_at))
        conn.executemany(
            f"INSERT INTO turn_sources(turn_id, {', '.join(SOURCE_COLUMNS)}) VALUES (?{', ?' * len(SOURCE_COLUMNS)})",
            [(cur.lastrowid, *_source_row(s)) for s in turn.sources])
        conn.execute("UPDATE conversations SET updated_at = ? WHERE id = ?", (turn.created_at, cid))
    turn.conversation_id, turn.number = cid, number
    return cid, number


def delete_conversation(conn, conversation_id: int) -> bool:
    """Delete a conversation with its turns and their sources; its id is never given again."""
    with transaction(conn):
        return bool(conn.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,)).rowcount)


def rename_conversation(conn, conversation_id: int, title: str) -> bool:
    """Give a conversation a new title; False when there is none."""
    with transaction(conn):
        return bool(conn.execute("UPDATE conversations SET title = ? WHERE id = ?", (title, conversation_id)).rowcount)


def delete_all(conn) -> int:
    """Delete every conversation, its turns and their sources (one transaction); returns how many.
    Ids are never given again (AUTOINCREMENT)."""
    with transaction(conn):
        return conn.execute("DELETE FROM conversations").rowcount


def conversation(conn, conversation_id: int, with_turns: bool = True) -> Optional[Conversation]:
    row = conn.execute(f"SELECT {_CONVERSATION_COLUMNS} FROM conversations WHERE id = ?",
                       (conversation_id,)).fetchone()
    if row is None:
        return None
    found = _conversation(row)
    if with_turns:
        found.turns = turns(conn, conversation_id)
        found.turn_count = len(found.turns)
    else:
        found.turn_count = _count(conn, conversation_id)
    return found


def latest_id(conn) -> Optional[int]:
    """The conversation whose latest turn is the most recent (`ask --continue`)."""
    row = conn.execute("SELECT id FROM conversations ORDER BY updated_at DESC, id DESC LIMIT 1").fetchone()
    return row[0] if row else None


def conversations(conn) -> list[Conversation]:
    """Every conversation (no turns, their count set), most recently continued first."""
    rows = conn.execute(f"SELECT {_CONVERSATION_COLUMNS} FROM conversations ORDER BY updated_at DESC, id DESC")
    out = []
    for row in rows.fetchall():
        c = _conversation(row)
        c.turn_count = _count(conn, c.id)
        out.append(c)
    return out


def _count(conn, conversation_id: int) -> int:
    return conn.execute("SELECT COUNT(*) FROM conversation_turns WHERE conversation_id = ?",
                        (conversation_id,)).fetchone()[0]


def _conversation(row) -> Conversation:
    cid, title, book_ids, created, updated = row
    return Conversation(id=cid, title=title, book_ids=json.loads(book_ids), created_at=created, updated_at=updated)


def turns(conn, conversation_id: int) -> list[Turn]:
    """The turns of a conversation, in order, with their sources."""
    rows = conn.execute(f"SELECT {_TURN_COLUMNS} FROM conversation_turns WHERE conversation_id = ? ORDER BY number",
                        (conversation_id,)).fetchall()
    return [_turn(row, _sources(conn, row[0])) for row in rows]


def _turn(row, sources: list[SummarySource]) -> Turn:
    (_id, cid, number, question, standalone, rewritten, rewrite, answer, status, notice, expanded, model, claims,
     removed, timings, created) = row
    return Turn(conversation_id=cid, number=number, question=question, standalone=standalone,
                rewritten=bool(rewritten), rewrite=json.loads(rewrite), answer=answer, status=status,
                sources=sources, model=json.loads(model) if model else None, notice=notice,
                expanded_query=expanded, claims=[_claim(c) for c in json.loads(claims)],
                removed_citations=[RemovedCitation(**r) for r in json.loads(removed)],
                timings=json.loads(timings), created_at=created)


def _sources(conn, turn_id: int) -> list[SummarySource]:
    return saved_sources(conn, "turn_sources", "turn_id", turn_id)
