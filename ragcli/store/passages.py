"""One passage and its neighbours in reading order (the passages just before and after it in its
book), for a reader that wants more than the retrieved passage: MCP's `read_passage`."""
from __future__ import annotations

from typing import Optional

from ragcli.store.corpus import fetch_hits
from ragcli.types import Hit


def around(conn, passage_id: int, neighbours: int) -> Optional[list[Hit]]:
    """The passage `passage_id` with up to `neighbours` passages of the same kind on each side, in
    reading order (ingest's ordinal); None when there is no such passage."""
    row = conn.execute("SELECT book_id, ordinal, kind FROM passages WHERE id = ?", (passage_id,)).fetchone()
    if row is None:
        return None
    book_id, ordinal, kind = row
    ids = [r[0] for r in conn.execute(
        "SELECT id FROM passages WHERE book_id = ? AND kind = ? AND ordinal BETWEEN ? AND ? ORDER BY ordinal",
        (book_id, kind, ordinal - neighbours, ordinal + neighbours))]
    hits = fetch_hits(conn, ids)
    return [hits[i] for i in ids if i in hits]
