"""Every SQL statement of numbered topic summaries (tables from migration m004_summaries).

`insert_summary` is the only writer: it takes the next number of the topic inside one BEGIN IMMEDIATE
transaction (on PostgreSQL: under an advisory lock on the topic), so two `summary new` running at once on one file get 1 and 2, never 1 and 1 (and
UNIQUE(topic_key, number) in the schema would refuse a duplicate anyway).
"""
from __future__ import annotations

import dataclasses
import json
from typing import Iterable, Optional

from ragcli.store.sql import select_in, transaction
from ragcli.text import public_chars
from ragcli.types import Claim, Evidence, RemovedCitation, Summary, SummarySource

SOURCE_COLUMNS = ("label", "cited", "passage_id", "book_id", "book_title", "kind", "figure_number",
                  "section_path", "page_start", "page_end", "page_label", "text", "text_hash")
_SUMMARY_COLUMNS = ("id, topic, topic_key, number, kind, text, model, params, claims, removed_citations,"
                    " created_at")


def _dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False, default=lambda o: dataclasses.asdict(o))


def insert_summary(conn, summary: Summary) -> int:
    """Save `summary` as the next number of its topic; returns that number (also set on `summary`)."""
    with transaction(conn, lock="summary:" + summary.topic_key):
        number = max(conn.execute("SELECT COALESCE(MAX(number), 0) FROM summaries WHERE topic_key = ?",
                                  (summary.topic_key,)).fetchone()[0], _deleted_up_to(conn, summary.topic_key)) + 1
        cur = conn.execute(
            "INSERT INTO summaries(topic, topic_key, number, kind, text, model, params, claims,"
            " removed_citations, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (summary.topic, summary.topic_key, number, summary.kind, summary.text,
             None if summary.model is None else _dumps(summary.model), _dumps(summary.params),
             _dumps(summary.claims), _dumps(summary.removed_citations), summary.created_at))
        conn.executemany(
            f"INSERT INTO summary_sources(summary_id, {', '.join(SOURCE_COLUMNS)}) "
            f"VALUES (?{', ?' * len(SOURCE_COLUMNS)})",
            [(cur.lastrowid, *_source_row(s)) for s in summary.sources])
    summary.number = number
    return number


def delete_summary(conn, topic_key: str, number: int) -> bool:
    """Delete one summary (its sources go with it). The number is never given again: the highest
    deleted number of the topic is kept in `meta`, so every other summary keeps its number and a
    note that says "#3" never comes to mean another text."""
    with transaction(conn, lock="summary:" + topic_key):
        gone = conn.execute("DELETE FROM summaries WHERE topic_key = ? AND number = ?",
                            (topic_key, number)).rowcount
        if gone and number > _deleted_up_to(conn, topic_key):
            conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET "
                         "value = excluded.value", (_DELETED_KEY + topic_key, str(number)))
    return bool(gone)


_DELETED_KEY = "summary_deleted_up_to:"


def _deleted_up_to(conn, topic_key: str) -> int:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (_DELETED_KEY + topic_key,)).fetchone()
    return int(row[0]) if row else 0


def _source_row(source: SummarySource) -> tuple:
    row = {col: getattr(source, col) for col in SOURCE_COLUMNS}
    row["cited"] = 1 if row["cited"] else 0
    row["section_path"] = _dumps(row["section_path"] or [])
    return tuple(row[col] for col in SOURCE_COLUMNS)


def numbers(conn, topic_key: str) -> list[int]:
    return [r[0] for r in conn.execute("SELECT number FROM summaries WHERE topic_key = ? ORDER BY number",
                                       (topic_key,))]


def summaries(conn, topic_key: str, number: Optional[int] = None) -> list[Summary]:
    """Saved summaries of a topic (one number, or all), oldest first, with their sources."""
    sql = f"SELECT {_SUMMARY_COLUMNS} FROM summaries WHERE topic_key = ?"
    args: list = [topic_key]
    if number is not None:
        sql += " AND number = ?"
        args.append(number)
    out = []
    for row in conn.execute(sql + " ORDER BY number", args).fetchall():
        out.append(_summary(row, _sources(conn, row[0])))
    return out


def _summary(row, sources: list[SummarySource]) -> Summary:
    _id, topic, key, number, kind, text, model, params, claims, removed, created = row
    return Summary(topic=topic, topic_key=key, number=number, text=text, sources=sources,
                   model=json.loads(model) if model else None, created_at=created, kind=kind,
                   params=json.loads(params), claims=[_claim(c) for c in json.loads(claims)],
                   removed_citations=[RemovedCitation(**r) for r in json.loads(removed)])


def _claim(data: dict) -> Claim:
    evidence = data.get("evidence")
    fields = {f.name for f in dataclasses.fields(Claim)}
    claim = Claim(**{k: v for k, v in data.items() if k in fields and k != "evidence"})
    if evidence:
        claim.evidence = Evidence(**{k: v for k, v in evidence.items()
                                     if k in {f.name for f in dataclasses.fields(Evidence)}})
    return claim


def _sources(conn, summary_id: int) -> list[SummarySource]:
    return saved_sources(conn, "summary_sources", "summary_id", summary_id)


def saved_sources(conn, table: str, owner_column: str, owner_id: int) -> list[SummarySource]:
    """The saved sources of one summary or conversation turn (`table` summary_sources or turn_sources,
    keyed by `owner_column`), in the order they were given to the model."""
    rows = conn.execute(f"SELECT {', '.join(SOURCE_COLUMNS)} FROM {table} WHERE {owner_column} = ? ORDER BY rowid",
                        (owner_id,)).fetchall()
    out = []
    for row in rows:
        source = dict(zip(SOURCE_COLUMNS, row))
        source["cited"] = bool(source["cited"])
        source["section_path"] = json.loads(source["section_path"])
        source["text"] = public_chars(source["text"])  # saved before the ingest mapped a symbol font's bullets
        out.append(SummarySource(**source))
    return out


def topics(conn) -> list[dict]:
    """Every topic: its latest spelling, key, count, latest number and date; most recent first."""
    rows = conn.execute(
        "SELECT s.topic, s.topic_key, t.n, s.number, s.created_at FROM summaries s JOIN ("
        " SELECT topic_key, COUNT(*) AS n, MAX(number) AS last FROM summaries GROUP BY topic_key) t"
        " ON t.topic_key = s.topic_key AND t.last = s.number"
        " ORDER BY s.created_at DESC, s.topic_key").fetchall()
    return [{"topic": r[0], "topic_key": r[1], "count": r[2], "latest_number": r[3], "latest_at": r[4]}
            for r in rows]


# -- what the sources look like now (staleness) ------------------------------------------------

def current_passages(conn, passage_ids: Iterable[int]) -> dict[int, tuple[str, str]]:
    """passage id -> (book id, text hash) of the passages that exist now."""
    rows = select_in(conn, "SELECT id, book_id, text_hash FROM passages WHERE id IN {in}", sorted(set(passage_ids)))
    return {r[0]: (r[1], r[2]) for r in rows}


def passage_by_book_hash(conn, book_id: str, text_hash: str) -> Optional[int]:
    """A passage of this book with exactly this text (its id changes when the book is re-ingested)."""
    row = conn.execute("SELECT MIN(id) FROM passages WHERE book_id = ? AND text_hash = ?",
                       (book_id, text_hash)).fetchone()
    return row[0] if row else None


def existing_books(conn, book_ids: Iterable[str]) -> set[str]:
    return {r[0] for r in select_in(conn, "SELECT id FROM books WHERE id IN {in}", sorted(set(book_ids)))}


def mark_sources(conn, sources: list[SummarySource]) -> list[str]:
    """Mark each saved source ok / moved (same text under a new passage id) / gone, in place; return
    the labels of the gone ones the text relies on: the sources it cites (all of them, when it cites
    none). A summary or a conversation turn is stale when this is not empty."""
    now = current_passages(conn, [s.passage_id for s in sources])
    books = existing_books(conn, [s.book_id for s in sources])
    for s in sources:
        s.status, s.reason, s.current_passage_id = "ok", None, s.passage_id
        if now.get(s.passage_id) == (s.book_id, s.text_hash):
            continue
        moved = passage_by_book_hash(conn, s.book_id, s.text_hash)
        if moved is not None:
            s.status, s.current_passage_id = "moved", moved
        else:
            s.status, s.current_passage_id = "gone", None
            s.reason = "book removed" if s.book_id not in books else "text changed"
    relied_on = [s for s in sources if s.cited] or sources
    return [s.label for s in relied_on if s.status == "gone"]
