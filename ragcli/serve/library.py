"""One corpus and its models, loaded once, and what the servers offer of it.

Each operation is the core call its CLI command makes, returning that command's `--json` shape
(render/data.py), and raising the CLI's own errors (ragcli.errors) with the CLI's messages. The
operations block: the servers run them in worker threads. Each thread keeps its own SQLite
connection; chat models come from a pool of `parallel` instances (one llama.cpp context serves one
generation at a time; the weights are memory-mapped, so the instances share them).

A request that is no longer wanted (its client left) sets its `Job` (serve/jobs.py): the callbacks
passed to the core then raise `Cancelled` at the next token.
"""
from __future__ import annotations

import queue
import tempfile
import threading
from collections import OrderedDict
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

from ragcli import ask as core, summary
from ragcli.errors import NotFoundError, RagcliError, UsageError
from ragcli.ingest import paths, pipeline
from ragcli.render.data import (books_data, conversation_data, conversation_row, hits_data, ingest_data, passage_data,
                                summary_data, summary_list_data, topics_data, turn_data)
from ragcli.search.pipeline import SearchOptions, check_scope, search
from ragcli.serve.jobs import Cancelled, Job  # noqa: F401 - Cancelled: also imported from here
from ragcli.serve.jobs import callbacks as _callbacks, checking as _checking, reading as _reading
from ragcli.store import backend, corpus, files

EMPTY_QUESTION = "the question is empty: ask in a few words, e.g. `ragcli ask \"how to stop bleeding\"`"
EMPTY_QUERY = "the query is empty: give a few words, e.g. `ragcli search tourniquet`"
MAX_K = 50
PAGE_CACHE = 64  # rendered page images kept in memory (about 0.3-1 MB each)
SQLITE_MAX = 2 ** 63 - 1  # the largest integer SQLite stores


class ModelPool:
    """`models` loaded once; a generation leases one for its whole run."""

    def __init__(self, models: Sequence):
        self.size = len(models)
        self.first = models[0] if models else None
        self._free: queue.Queue = queue.Queue()
        for m in models:
            self._free.put(m)

    @contextmanager
    def lease(self) -> Iterator:
        if not self.size:  # no model configured: extractive answers
            yield None
            return
        model = self._free.get()
        try:
            yield model
        finally:
            self._free.put(model)


POOL_SIZE = 8  # server connections a served PostgreSQL library holds at most (psycopg_pool)


class Library:
    """The served corpus. `models`: chat-model instances (none: extractive answers);
    `ingest_root`: the folder MCP's `ingest` may read (None: read-only)."""

    def __init__(self, db_path: Path, embedder, models: Sequence = (), max_tokens: int = 512, grammar=None,
                 ingest_root: Optional[Path] = None):
        self.db_path = db_path if backend.is_address(db_path) else Path(db_path)
        self.embedder = embedder
        self.models = ModelPool(list(models))
        self.max_tokens = max_tokens
        self.grammar = grammar  # the --grammar-file constraining every answer (models.chat.Grammar)
        self.ingest_root = ingest_root.resolve() if ingest_root else None
        self._local = threading.local()
        self._write = threading.Lock()  # one ingest at a time (each is its own transaction anyway)
        self._pages: OrderedDict = OrderedDict()  # page_image's cache, least recently used first
        self._cache_lock = threading.Lock()
        self._render = threading.Lock()  # PyMuPDF renders one page at a time (it is not thread-safe)
        # a PostgreSQL library: one connection for every thread, over a pool of server connections
        self._shared = (backend.connect(self.db_path, create=False, pool_size=POOL_SIZE)
                        if backend.is_address(self.db_path) else None)
        self.conn()  # a missing or foreign corpus fails now, at start

    @property
    def model_name(self) -> Optional[str]:
        return getattr(self.models.first, "name", None)

    def conn(self):
        """This thread's connection (SQLite connections are not shared between threads here; a
        PostgreSQL library's pooled one is)."""
        if self._shared is not None:
            return self._shared
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = backend.connect(self.db_path, create=False)
        return conn

    # -- read-only ------------------------------------------------------------------------------

    def search(self, query: str, book: Optional[Sequence[str]] = None, k: int = 10, mode: str = "hybrid",
               job: Optional[Job] = None) -> list[dict]:
        """`ragcli search --json`."""
        if not (query or "").strip():
            raise UsageError(EMPTY_QUERY)
        _check_k(k, 1000)
        SearchOptions(mode=mode)  # an unknown mode fails before any work
        conn = self.conn()
        check_scope(conn, _books(book))
        opts = SearchOptions(mode=mode, k=k, book_ids=_books(book))
        phase = _checking(job)
        result = search(conn, self.embedder if mode != "lexical" else None, query, opts, on_phase=phase)
        return hits_data(result.hits)

    def ask(self, question: str, book: Optional[Sequence[str]] = None, k: int = 10, expand: bool = True,
            rewrite: bool = False, feedback: bool = False, verify: bool = False, evidence: bool = False,
            max_tokens: Optional[int] = None, job: Optional[Job] = None,
            on_text: Optional[Callable[[str], None]] = None,
            on_phase: Optional[Callable[..., None]] = None,
            prepare: Optional[Callable[[object], str]] = None):
        """`ragcli ask`: the core's Answer (render with data.answer_data). `max_tokens`: at most the
        server's own (a client cannot ask for more than the window was set up for). `on_text` gets the validated
        text as it streams, `on_phase(name)` each step. `prepare(model)`, called with the leased model
        before the question is asked, returns the question to ask (a follow-up made standalone)."""
        if not (question or "").strip():
            raise UsageError(EMPTY_QUESTION)
        _check_k(k, MAX_K)
        if max_tokens is not None and max_tokens < 1:
            raise UsageError(f"max_tokens must be 1 or more, not {max_tokens}")
        conn = self.conn()
        check_scope(conn, _books(book))
        check = _checking(job)
        opts = core.AskOptions(k=k, book_ids=_books(book), expand=expand, rewrite=rewrite, feedback=feedback,
                               max_tokens=min(max_tokens or self.max_tokens, self.max_tokens), verify=verify, evidence=evidence,
                               grammar=self.grammar)

        text, phase = _callbacks(check, on_text, on_phase)

        def progress(event: str, info: dict) -> None:
            check()

        with self.models.lease() as model:
            check()
            if prepare is not None:
                question = prepare(model)
            return core.ask(conn, self.embedder, question, model, opts, on_text=text, on_phase=phase,
                            on_progress=progress)

    def books(self) -> list[dict]:
        """`ragcli books --json`."""
        return books_data(corpus.list_books(self.conn()))

    def summary_list(self, topic: Optional[str] = None) -> object:
        """`ragcli summary list TOPIC --json`; without a topic, `ragcli summary topics --json`."""
        if not (topic or "").strip():
            return topics_data(summary.topics(self.conn()))
        key, found = summary.history(self.conn(), topic)
        return summary_list_data(" ".join(topic.split()), key, found)

    def summary_show(self, topic: str, number: Optional[int] = None) -> dict:
        """`ragcli summary show TOPIC [NUMBER] --json`."""
        if number is not None and number < 1:
            raise UsageError(f"the summary number must be 1 or more, not {number}")
        if number is not None and number > SQLITE_MAX:
            raise NotFoundError(f"no summary number {number} of '{topic}' (see `summary list`)")
        return summary_data(summary.get(self.conn(), topic, number))

    def read_passage(self, passage_id: int, neighbours: int = 1) -> dict:
        """`ragcli show ID --context N --json`: a passage with `neighbours` passages before and after it."""
        if not 0 <= neighbours <= 5:
            raise UsageError(f"neighbours must be between 0 and 5, not {neighbours}")
        if not 0 < passage_id <= SQLITE_MAX:  # beyond SQLite's integers: no such passage, not an overflow
            raise NotFoundError(f"no passage with id {passage_id} (ids come from search and ask results)")
        conn = self.conn()
        hit = corpus.fetch_hits(conn, [passage_id]).get(passage_id)
        if hit is None:
            raise NotFoundError(f"no passage with id {passage_id} (ids come from search and ask results)")
        before, after = files.neighbours(conn, hit, neighbours, neighbours)
        return passage_data(hit, before, after)

    def passage_page(self, passage_id: int) -> dict:
        """`show ID --json` of a passage (no neighbours) with its book's `page_count` (the page view's
        previous/next)."""
        conn = self.conn()
        hit = corpus.fetch_hits(conn, [passage_id]).get(passage_id)
        if hit is None:
            raise NotFoundError(f"no passage with id {passage_id} (ids come from search and ask results)")
        books = corpus.list_books(conn, [hit.book_id])
        # the printed label of each page (previous/next name the page as the book prints it)
        labels = {str(n): label for n, label in corpus.page_labels(conn, hit.book_id).items() if label}
        return {**passage_data(hit, [], []), "page_count": books[0].page_count if books else hit.page_end,
                "page_labels": labels}

    def book_formats(self, book_ids: Sequence[str]) -> dict[str, str]:
        """Each book's file type (pdf | epub | docx | html | md | txt | ""), from its file's name: a saved
        source names its book, not its file, and the page shows a book without page images by its text."""
        from ragcli.serve.words import file_kind

        ids = sorted({b for b in book_ids if b})
        return {b.id: file_kind(b.path) for b in corpus.list_books(self.conn(), ids)} if ids else {}

    def page_image(self, passage_id: int, page: Optional[int] = None) -> tuple[bytes, int]:
        """`show ID --image`: the PNG of the passage's page with its sentences highlighted (`page`:
        another page of the same book, for previous/next; the passage is highlighted where it is on
        it). Returns (PNG bytes, physical page). Rendered once per (passage, page, file state)."""
        from ragcli.ingest import page_image

        conn = self.conn()
        hit = corpus.fetch_hits(conn, [passage_id]).get(passage_id)
        if hit is None:
            raise NotFoundError(f"no passage with id {passage_id} (ids come from search and ask results)")
        path = files.source_file(conn, hit)  # the local file, else the library's copy of it
        if path is None:
            raise NotFoundError(f"the file of book '{hit.book_id}' moved or is gone"
                                f"{': ' + hit.path if hit.path else ''}, and the library keeps no copy of it; "
                                f"`ragcli sync FOLDER` follows a moved file")
        start, end = (hit.page_start, hit.page_end) if page is None else (page, page)
        if start < 1:
            raise UsageError(f"the page must be 1 or more, not {start}")
        stat = Path(path).stat()
        key = (passage_id, start, end, stat.st_mtime_ns, stat.st_size)
        with self._cache_lock:
            found = self._pages.get(key)
            if found is not None:
                self._pages.move_to_end(key)
                return found
        with tempfile.TemporaryDirectory(prefix="ragcli-page-") as tmp:
            out = Path(tmp) / "page.png"
            with self._render:
                made = page_image.render(path, start, end, hit.text, out)
            if page is not None and made.page != page:
                raise NotFoundError(f"book '{hit.book_id}' has no page {page}")
            found = (out.read_bytes(), made.page)
        with self._cache_lock:
            self._pages[key] = found
            while len(self._pages) > PAGE_CACHE:
                self._pages.popitem(last=False)
        return found

    def passage_section(self, passage_id: int, most: int = 40) -> dict:
        """The text of a passage's section (the passages of its book with the same section path, in
        order, at most `most` either side): the page view of a book that has no page images (EPUB,
        DOCX, HTML, Markdown, text). `format`: the book's file type; `at`: the passage's index."""
        conn = self.conn()
        hit = corpus.fetch_hits(conn, [passage_id]).get(passage_id)
        if hit is None:
            raise NotFoundError(f"no passage with id {passage_id} (ids come from search and ask results)")
        from ragcli.serve.words import file_kind

        fmt = file_kind(hit.path)  # the file's kind (a Markdown book is recorded as format "text")
        before, after = files.neighbours(conn, hit, most, most)
        same = list(hit.section_path or [])
        before = [h for h in _run_of(reversed(before), same)][::-1]
        after = list(_run_of(after, same))
        parts = [{"passage_id": h.passage_id, "text": h.text, "page_label": h.page_label} for h in before + [hit] + after]
        return {"passage_id": passage_id, "book_id": hit.book_id, "book_title": hit.book_title, "format": fmt,
                "section_path": same, "page_label": hit.page_label, "parts": parts, "at": len(before),
                "file_status": "ok" if files.source_file(conn, hit) else "gone"}

    def book_file(self, passage_id: int) -> Path:
        """The file of a passage's book (the page view's link to the PDF): only a book's own file."""
        conn = self.conn()
        hit = corpus.fetch_hits(conn, [passage_id]).get(passage_id)
        if hit is None:
            raise NotFoundError(f"no passage with id {passage_id} (ids come from search and ask results)")
        path = files.source_file(conn, hit)  # the local file, else the library's copy of it
        if path is None:
            raise NotFoundError(f"the file of book '{hit.book_id}' moved or is gone")
        return Path(path)

    # -- conversations ------------------------------------------------------------------------------

    def conversations(self) -> list[dict]:
        """`ragcli conversations list --json`."""
        from ragcli import conversation

        return [conversation_row(c) for c in conversation.conversations(self.conn())]

    def conversation_show(self, conversation_id: int) -> dict:
        """`ragcli conversations show ID --json` (stale turns marked)."""
        from ragcli import conversation

        return conversation_data(conversation.get(self.conn(), conversation_id))

    def conversation_rename(self, conversation_id: int, title: str) -> dict:
        """A conversation's new title (the page's rename); its row."""
        from ragcli import conversation

        title = " ".join((title or "").split())
        if not title:
            raise UsageError("the title is empty")
        if len(title) > 200:
            raise UsageError("the title is longer than 200 characters")
        from ragcli.store import conversations as store

        conversation.get(self.conn(), conversation_id)  # NotFoundError when there is none
        with self._write:
            store.rename_conversation(self.conn(), conversation_id, title)
        return conversation_row(conversation.get(self.conn(), conversation_id))

    def conversation_delete(self, conversation_id: int) -> dict:
        """`ragcli conversations delete ID`."""
        from ragcli import conversation

        with self._write:
            conversation.delete(self.conn(), conversation_id)
        return {"deleted": conversation_id}

    def ask_turn(self, question: str, conversation_id: Optional[int] = None,
                 book: Optional[Sequence[str]] = None, k: int = 10, job: Optional[Job] = None,
                 on_text: Optional[Callable[[str], None]] = None, on_phase: Optional[Callable[[str], None]] = None,
                 on_standalone: Optional[Callable[[dict], None]] = None) -> dict:
        """`ragcli ask -c --json` (`chat`'s turn): the question answered as the next turn of conversation
        `conversation_id` (None: a new one) and saved; returns turn_data with the answer. The answer
        carries each sentence's evidence (as `ask --evidence`)."""
        from ragcli import conversation

        if not (question or "").strip():
            raise UsageError(EMPTY_QUESTION)
        _check_k(k, MAX_K)
        conn = self.conn()
        talk = None if conversation_id is None else conversation.get(conn, conversation_id)
        check_scope(conn, _books(book))
        check = _checking(job)
        opts = core.AskOptions(k=k, book_ids=_books(book), max_tokens=self.max_tokens, evidence=True,
                               grammar=self.grammar)

        text, phase = _callbacks(check, on_text, on_phase)

        def made(standalone) -> None:
            if on_standalone:
                on_standalone({"question": standalone.question, "rewritten": standalone.rewritten,
                               "reason": standalone.reason, "method": standalone.method})

        with self.models.lease() as model:
            check()
            turn, answer = conversation.ask_turn(conn, self.embedder, question, model, opts, talk,
                                                 on_standalone=made, on_text=text, on_phase=phase,
                                                 on_progress=_reading(check, on_phase))
        return turn_data(turn, answer)

    def summary_new(self, topic: str, job: Optional[Job] = None, on_text: Optional[Callable[[str], None]] = None,
                    on_phase: Optional[Callable[[str], None]] = None, keep_weak: bool = False) -> dict:
        """`ragcli summary new TOPIC [--keep-weak] --json`: the topic's next numbered summary, generated and
        saved (`keep_weak`: saved even when its health is bad)."""
        if not (topic or "").strip():
            raise UsageError("the topic is empty: give a few words, e.g. `aneurysms`")
        check = _checking(job)

        text, phase = _callbacks(check, on_text, on_phase)

        opts = summary.SummaryOptions(grammar=self.grammar, keep_weak=keep_weak)
        with self.models.lease() as model:
            check()
            made = summary.new(self.conn(), self.embedder, topic, model, opts, on_text=text, on_phase=phase,
                               on_progress=_reading(check, on_phase))
        return summary_data(made)

    # -- writing (MCP --allow-ingest only) ---------------------------------------------------------

    def ingest(self, path: str) -> list[dict]:
        """`ragcli ingest PATH --json` for a file or folder under `ingest_root`; a file that fails is
        reported in its entry (status "failed", error), as the CLI does; a symlink leaving the folder
        or a folder reached twice is an entry of status "skipped" (ingest/paths.py), never read."""
        if self.ingest_root is None:
            raise UsageError("ingesting is off: start the server with --allow-ingest FOLDER")
        if "\x00" in path:
            raise UsageError("the path contains a NUL character")
        paths.check_length(path)
        root = str(self.ingest_root)
        try:
            target = Path(path).expanduser()
            if not target.is_absolute():
                target = self.ingest_root / target
            target = target.resolve()
            if not paths.inside(str(target), [root]):
                raise UsageError(f"{path} is outside {self.ingest_root}, the folder this server may ingest from")
            if not target.exists():
                raise NotFoundError(f"{target}: no such file")
            notes: list[str] = []
            found = pipeline.discover([str(target)], notes=notes, roots=[root])
        except (OSError, RuntimeError, ValueError) as exc:  # too long, a link loop, a name the system refuses
            raise UsageError(f"{path[:200]}: cannot be used ({getattr(exc, 'strerror', None) or exc})") from exc
        if not found and not notes:
            raise UsageError("no supported files (PDF, EPUB, DOCX, HTML, ...) found there")
        results = [pipeline.IngestResult(note.split(": skipped")[0], "skipped", error=note) for note in notes]
        with self._write:
            for f in found:
                try:  # opened once, checked, and read from that descriptor (a swap after the walk is refused)
                    with paths.opened(f, [root]) as one:
                        results.append(pipeline.ingest_file(self.conn(), one.real, self.embedder,
                                                            read_from=one.read_from))
                except RagcliError as exc:
                    results.append(pipeline.IngestResult(str(f), "failed", error=str(exc), exit_code=exc.exit_code))
        return ingest_data(results)


def _run_of(hits, section: list) -> Iterator:
    """The leading hits of `hits` in `section` (a section's passages are contiguous)."""
    for h in hits:
        if list(h.section_path or []) != section:
            return
        yield h


def _books(book) -> Optional[list[str]]:
    """A book id or a list of them (None or empty: every book)."""
    if book is None or book == [] or book == "":
        return None
    return [book] if isinstance(book, str) else list(book)


def _check_k(k: int, most: int) -> None:
    if not isinstance(k, int) or not 1 <= k <= most:
        raise UsageError(f"k must be between 1 and {most}, not {k}")
