"""Append-only schema steps. A shipped step is never edited; new steps go at the end.

Each step is recorded by name in the `migrations` table when applied, so a file knows its schema
version (the number of steps applied) and a newer file is recognised and refused.
"""
from __future__ import annotations

from typing import Callable

from ragcli.store.sql import sqlite3
from ragcli.store.vectors import rebuild_vector_codes

STEPS: list[tuple[str, Callable]] = []


def step(fn: Callable) -> Callable:
    STEPS.append((fn.__name__, fn))
    return fn


def run_script(conn, sql: str) -> None:
    """Run statements one by one: executescript() would COMMIT the migration's transaction."""
    statement = ""
    for line in sql.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            conn.execute(statement)
            statement = ""


@step
def m001_initial(conn) -> None:
    run_script(conn, 
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE books (
            id TEXT PRIMARY KEY,
            title TEXT NOT NULL,
            path TEXT NOT NULL,
            file_hash TEXT NOT NULL,
            page_count INTEGER NOT NULL,
            ingested_at TEXT NOT NULL
        );
        CREATE TABLE pages (
            book_id TEXT NOT NULL REFERENCES books(id) ON DELETE CASCADE,
            number INTEGER NOT NULL,
            label TEXT NOT NULL,
            PRIMARY KEY (book_id, number)
        );
        CREATE TABLE sections (
            id INTEGER PRIMARY KEY,
            book_id TEXT NOT NULL REFERENCES books(id) ON DELETE CASCADE,
            ordinal INTEGER NOT NULL,
            path TEXT NOT NULL,          -- JSON list of titles, outermost first
            page_start INTEGER NOT NULL,
            page_end INTEGER NOT NULL
        );
        CREATE INDEX sections_book ON sections(book_id);
        CREATE TABLE figures (
            id INTEGER PRIMARY KEY,
            book_id TEXT NOT NULL REFERENCES books(id) ON DELETE CASCADE,
            number TEXT NOT NULL,
            caption TEXT NOT NULL,
            page INTEGER NOT NULL,
            bbox TEXT,                   -- JSON [x0, y0, x1, y1] of the nearest image, or NULL
            section_path TEXT NOT NULL   -- JSON list
        );
        CREATE INDEX figures_book ON figures(book_id);
        CREATE TABLE passages (
            id INTEGER PRIMARY KEY,
            book_id TEXT NOT NULL REFERENCES books(id) ON DELETE CASCADE,
            ordinal INTEGER NOT NULL,
            kind TEXT NOT NULL,          -- 'passage' | 'figure'
            figure_number TEXT,
            section_path TEXT NOT NULL,  -- JSON list
            heading TEXT NOT NULL,       -- section path as text, indexed by FTS5
            page_start INTEGER NOT NULL,
            page_end INTEGER NOT NULL,
            text TEXT NOT NULL,
            text_hash TEXT NOT NULL,     -- sha256 of the shown text (summaries check staleness)
            embed_hash TEXT NOT NULL     -- sha256 of model + embedded text (re-embedding is skipped)
        );
        CREATE INDEX passages_book ON passages(book_id);
        CREATE INDEX passages_embed_hash ON passages(embed_hash);
        CREATE VIRTUAL TABLE passages_fts USING fts5(
            text, heading, content='passages', content_rowid='id', tokenize='porter unicode61'
        );
        CREATE TRIGGER passages_ai AFTER INSERT ON passages BEGIN
            INSERT INTO passages_fts(rowid, text, heading) VALUES (new.id, new.text, new.heading);
        END;
        CREATE TRIGGER passages_ad AFTER DELETE ON passages BEGIN
            INSERT INTO passages_fts(passages_fts, rowid, text, heading)
            VALUES ('delete', old.id, old.text, old.heading);
        END;
        CREATE TABLE terms (
            id INTEGER PRIMARY KEY,
            book_id TEXT NOT NULL REFERENCES books(id) ON DELETE CASCADE,
            term TEXT NOT NULL,
            source TEXT NOT NULL,        -- heading | glossary | index | frequent | figure
            weight REAL NOT NULL DEFAULT 1.0
        );
        CREATE INDEX terms_book ON terms(book_id);
        """
    )


@step
def m002_vector_codes(conn) -> None:
    """Sign-bit codes of every passage vector, one row per block of a book (fast first pass), and
    float16 copies for rescoring.

    `rowids` holds n little-endian int64 (the vec0 rowids); `codes` n x dim/8 bytes, bit i of a row
    set when component i > 0 (the bit layout of sqlite-vec's vec_quantize_binary). Existing vectors
    are encoded here, once."""
    conn.execute(
        """CREATE TABLE vector_codes (
            id INTEGER PRIMARY KEY,
            tab TEXT NOT NULL,           -- the vec0 table the rows belong to ('passage_vec')
            book_id TEXT NOT NULL,
            n INTEGER NOT NULL,
            rowids BLOB NOT NULL,        -- n x int64 little-endian
            codes BLOB NOT NULL          -- n x dim/8 bytes of sign bits
        )""")
    conn.execute("CREATE INDEX vector_codes_book ON vector_codes(tab, book_id)")
    # float16 copies of the passage vectors by rowid: candidates are rescored from here, because a
    # rowid lookup in a vec0 table costs about a millisecond
    conn.execute("CREATE TABLE passage_vec_half (id INTEGER PRIMARY KEY, vec BLOB NOT NULL)")
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'passage_vec'").fetchone():
        rebuild_vector_codes(conn, "passage_vec")


@step
def m003_passages_book_kind(conn) -> None:
    """Counting a book's passages by kind (`ragcli books`, every search's scope check) read every
    passage row through the book_id index: 3 s on a 1M-passage corpus. This index covers it."""
    conn.execute("CREATE INDEX IF NOT EXISTS passages_book_kind ON passages(book_id, kind)")


def pending(applied: list[str]) -> list[tuple[str, Callable]]:
    done = set(applied)
    return [(name, fn) for name, fn in STEPS if name not in done]


def known_names() -> set[str]:
    return {name for name, _ in STEPS}


@step
def m004_summaries(conn) -> None:
    """Numbered topic summaries (issue 4). Numbers are 1, 2, 3, ... per normalised topic: the schema
    refuses a duplicate and `summary_store.insert_summary` picks the next number inside BEGIN
    IMMEDIATE. Sources are copied (text and hash) so a summary still reads back, and is recognised as
    stale, after its book was removed or re-ingested."""
    # one statement at a time: executescript() would COMMIT the migration's transaction first
    conn.execute(
        """CREATE TABLE summaries (
            id INTEGER PRIMARY KEY,
            topic TEXT NOT NULL,          -- as typed
            topic_key TEXT NOT NULL,      -- normalised: casefolded, spaces collapsed, end punctuation off
            number INTEGER NOT NULL CHECK (number >= 1),
            kind TEXT NOT NULL,           -- 'generated' | 'extractive'
            text TEXT NOT NULL,
            model TEXT,                   -- JSON: the chat model's name and parameters, NULL if none
            params TEXT NOT NULL,         -- JSON: k, books, expansion, embedding model, ...
            claims TEXT NOT NULL,         -- JSON list of per-claim support at generation time
            removed_citations TEXT NOT NULL,  -- JSON list
            created_at TEXT NOT NULL,
            UNIQUE (topic_key, number)
        )""")
    conn.execute(
        """CREATE TABLE summary_sources (
            summary_id INTEGER NOT NULL REFERENCES summaries(id) ON DELETE CASCADE,
            label TEXT NOT NULL,          -- S1, F1 as given to the model
            cited INTEGER NOT NULL,       -- 1 when the summary text cites it
            passage_id INTEGER NOT NULL,  -- no foreign key: the passage may be gone later
            book_id TEXT NOT NULL,
            book_title TEXT NOT NULL,
            kind TEXT NOT NULL,
            figure_number TEXT,
            section_path TEXT NOT NULL,   -- JSON list
            page_start INTEGER NOT NULL,
            page_end INTEGER NOT NULL,
            page_label TEXT NOT NULL,
            text TEXT NOT NULL,           -- the passage as it was shown
            text_hash TEXT NOT NULL,      -- sha256 of it (passages.text_hash)
            PRIMARY KEY (summary_id, label)
        )""")
    conn.execute("CREATE INDEX summary_sources_book_hash ON summary_sources(book_id, text_hash)")


@step
def m005_read_health(conn) -> None:
    """What was lost while a book was read (issue 17): the book's warnings (JSON list of sentences),
    the physical pages whose text is not in the corpus (JSON list), and each page's read health
    (ok | partial | unreadable | no_text_layer | blank; ingest/health.py). Books ingested before this
    step read as healthy: nothing was measured then."""
    conn.execute("ALTER TABLE books ADD COLUMN warnings TEXT NOT NULL DEFAULT '[]'")
    conn.execute("ALTER TABLE books ADD COLUMN unreadable_pages TEXT NOT NULL DEFAULT '[]'")
    conn.execute("ALTER TABLE pages ADD COLUMN health TEXT NOT NULL DEFAULT 'ok'")


@step
def m006_ocr_and_format(conn) -> None:
    """Issue 14: which pages and passages were read by OCR (the engine's name, '' for a text layer),
    and each book's file format ('pdf', 'epub', 'docx', 'html', 'text', ...; '' for books ingested
    before this step) and author (from the file's metadata; '' when it has none)."""
    conn.execute("ALTER TABLE pages ADD COLUMN ocr TEXT NOT NULL DEFAULT ''")
    conn.execute("ALTER TABLE passages ADD COLUMN ocr TEXT NOT NULL DEFAULT ''")
    conn.execute("ALTER TABLE books ADD COLUMN format TEXT NOT NULL DEFAULT ''")
    conn.execute("ALTER TABLE books ADD COLUMN author TEXT NOT NULL DEFAULT ''")


@step
def m007_files_and_folders(conn) -> None:
    """Issue 27: the files a book was read from, with the size and modification time seen when it was
    read (a folder sync re-hashes a file only when those change), and the folders `ragcli sync`
    keeps in line. A path is absolute. Several files with the same bytes point at one book; a book's
    rows go with it (ON DELETE CASCADE). Books ingested before this step have no row: a sync hashes
    their files once and links them by content."""
    conn.execute(
        """CREATE TABLE files (
            path TEXT PRIMARY KEY,
            book_id TEXT NOT NULL REFERENCES books(id) ON DELETE CASCADE,
            size INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            file_hash TEXT NOT NULL
        )""")
    conn.execute("CREATE INDEX files_book ON files(book_id)")
    conn.execute("CREATE INDEX files_hash ON files(file_hash)")
    conn.execute("CREATE TABLE folders (path TEXT PRIMARY KEY, added_at TEXT NOT NULL, synced_at TEXT)")


@step
def m008_conversations(conn) -> None:
    """Conversations (issue 25): each turn keeps the question as asked, the standalone question
    retrieval ran on, the answer, its status and model, and its sources copied as summaries keep them
    (text and hash: a turn still reads back, and is recognised as stale, after its book was removed or
    re-ingested). Turn numbers are 1, 2, 3, ... per conversation: the schema refuses a duplicate and
    `store.conversations.insert_turn` picks the next number inside BEGIN IMMEDIATE. AUTOINCREMENT: a
    deleted conversation's id is never given again."""
    conn.execute(
        """CREATE TABLE conversations (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            title TEXT NOT NULL,          -- the first question as asked
            book_ids TEXT NOT NULL,       -- JSON list of the --book scope of its first turn, [] for all
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL      -- when its latest turn was saved (`ask -c` continues the latest)
        )""")
    conn.execute("CREATE INDEX conversations_updated ON conversations(updated_at)")
    conn.execute(
        """CREATE TABLE conversation_turns (
            id INTEGER PRIMARY KEY,
            conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            number INTEGER NOT NULL CHECK (number >= 1),
            question TEXT NOT NULL,       -- as asked
            standalone TEXT NOT NULL,     -- what retrieval, the prompt and the checks ran on
            rewritten INTEGER NOT NULL,   -- 1 when standalone differs from question
            rewrite TEXT NOT NULL,        -- JSON: reason, method ('model' | 'carried' | ''), seconds
            answer TEXT NOT NULL,
            status TEXT NOT NULL,         -- the answer's status (answered, extractive, no_answer, ...)
            notice TEXT,
            expanded_query TEXT,
            model TEXT,                   -- JSON: the chat model's name and parameters, NULL if none
            claims TEXT NOT NULL,         -- JSON list of per-claim support at answer time
            removed_citations TEXT NOT NULL,  -- JSON list
            timings TEXT NOT NULL,        -- JSON: seconds per step, the rewrite's included
            created_at TEXT NOT NULL,
            UNIQUE (conversation_id, number)
        )""")
    conn.execute(
        """CREATE TABLE turn_sources (
            turn_id INTEGER NOT NULL REFERENCES conversation_turns(id) ON DELETE CASCADE,
            label TEXT NOT NULL,          -- S1, F1 as given to the model
            cited INTEGER NOT NULL,       -- 1 when the answer cites it
            passage_id INTEGER NOT NULL,  -- no foreign key: the passage may be gone later
            book_id TEXT NOT NULL,
            book_title TEXT NOT NULL,
            kind TEXT NOT NULL,
            figure_number TEXT,
            section_path TEXT NOT NULL,   -- JSON list
            page_start INTEGER NOT NULL,
            page_end INTEGER NOT NULL,
            page_label TEXT NOT NULL,
            text TEXT NOT NULL,           -- the passage as it was shown
            text_hash TEXT NOT NULL,      -- sha256 of it (passages.text_hash)
            PRIMARY KEY (turn_id, label)
        )""")
    conn.execute("CREATE INDEX turn_sources_book_hash ON turn_sources(book_id, text_hash)")


@step
def m009_text_kind(conn) -> None:
    """Issue 34: each passage's kind of text (exposition | question | exercise | scenario | contents |
    index | glossary_ref; ingest/kinds.py), so ask and summary can leave drills, exams and lists of pages
    out of the prompt. Passages ingested before this step get '' (not classified): every filter reads
    them as exposition until the book is ingested again. The (book, ordinal) index serves a passage's
    neighbours in reading order (store.corpus.neighbours)."""
    conn.execute("ALTER TABLE passages ADD COLUMN text_kind TEXT NOT NULL DEFAULT ''")
    conn.execute("CREATE INDEX IF NOT EXISTS passages_book_ordinal ON passages(book_id, ordinal)")


@step
def m010_file_copies(conn) -> None:
    """Issue 43: a copy of a book's source file, by its hash, kept in the library (by default in a
    PostgreSQL library, with `ingest --keep-file` in a file), so `show --image`, `open` and the page view
    work on a machine that does not have the file. Several books of the same bytes share one copy; the
    last book of a hash to go takes its copy with it (store.corpus.delete_book)."""
    conn.execute("""
        CREATE TABLE file_copies (
            file_hash TEXT PRIMARY KEY,
            name TEXT NOT NULL,          -- the file's name when it was kept (its suffix says its kind)
            size INTEGER NOT NULL,
            data BLOB NOT NULL,
            stored_at TEXT NOT NULL
        )""")


@step
def m011_halfvec_index(conn) -> None:
    """Issue 43 (D154): a PostgreSQL library's passage graph is built over halfvec casts of its vectors
    (store/postgres/vectors.py). A file's vectors are searched by sign-bit codes and float16 rescoring
    (m002), so this step has nothing to do here; it exists so both dialects count the same steps."""
