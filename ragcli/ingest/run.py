"""A run over many files (`ragcli ingest` of a folder): files parsed in worker processes ahead of the
book being embedded and written, the embedder and the one SQLite writer in this process, and where the
run is (RunStatus) for the progress display. One file's ingest is ingest/pipeline.py."""
from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional

from ragcli.errors import ModelError, RagcliError
from ragcli.ingest.pipeline import (FileOptions, IngestResult, Prepared, Progress, _file_hash, _unchanged, ingest_file,
                                    prepare, store_prepared)
from ragcli.store import corpus as store


@dataclass
class RunStatus:
    """Where a run over many files is: what the progress display shows."""

    files_total: int
    bytes_total: int
    files_done: int = 0
    bytes_done: int = 0
    pages: int = 0
    passages: int = 0  # passages of the books written (reused ones included)
    embedded: int = 0  # texts embedded in this run
    current: str = ""
    started: float = field(default_factory=time.monotonic)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @property
    def rate(self) -> float:
        """Texts embedded per second over the run so far."""
        return self.embedded / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def eta(self) -> Optional[float]:
        """Seconds left, by the bytes of the files done so far (None before the first file)."""
        if not self.bytes_done or self.bytes_done >= self.bytes_total:
            return None if not self.bytes_done else 0.0
        return self.elapsed * (self.bytes_total - self.bytes_done) / self.bytes_done


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _worker_pool(workers: int):
    """Parsing processes from a fork server: the parent holds model and HTTP threads, which a plain
    fork would copy in an unknown state."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["ragcli.ingest.pipeline"])
    return ProcessPoolExecutor(workers, mp_context=ctx)


def _prepare_in_worker(path: Path, opts: FileOptions, file_hash: Optional[str]) -> Prepared:
    return prepare(path, opts, file_hash)


def ingest_run(conn, files: list[Path], embedder, opts: FileOptions, *, workers: int = 0,
               progress: Optional[Progress] = None, on_status: Optional[Callable[[RunStatus], None]] = None
               ) -> Iterable[IngestResult]:
    """Ingest many files: with workers > 0, files are parsed in that many processes, up to
    workers + 1 ahead of the book being embedded and written (memory stays bounded by that window);
    the embedder and the one SQLite writer stay in this process. Results come in the files' order; a
    failed file is a `failed` result (its error in `error`), the run goes on; an embedder that fails
    (ModelError: a server gone) ends the run, what it embedded kept in the stage for the next run. Per-file progress
    (pages, OCR) is reported only when parsing in process (workers == 0)."""
    status = RunStatus(len(files), sum(_size(f) for f in files))

    def tell(**changes) -> None:
        for key, value in changes.items():
            setattr(status, key, getattr(status, key) + value if isinstance(value, int) else value)
        if on_status:
            on_status(status)

    def embedded(n: int) -> None:
        tell(embedded=n)

    def finish(path: Path, result: IngestResult) -> IngestResult:
        tell(files_done=1, bytes_done=_size(path), pages=result.pages if result.status != "unchanged" else 0,
             passages=result.passages if result.status != "unchanged" else 0)
        return result

    def failed(path: Path, exc: RagcliError) -> IngestResult:
        return IngestResult(str(path), "failed", error=str(exc), exit_code=exc.exit_code)

    pool = _worker_pool(workers) if workers > 0 and len(files) > 1 else None
    window: list = []  # (path, t0, hash or error, future)
    queue = list(files)

    def submit() -> None:
        while queue and len(window) < workers + 1:
            path = queue.pop(0)
            t0 = time.perf_counter()
            try:
                file_hash = _file_hash(path) if path.is_file() else None
            except RagcliError as exc:
                window.append((path, t0, exc, None))
                continue
            same = store.book_by_hash(conn, file_hash) if file_hash else None
            if same and opts.book_id in (None, same.id):
                window.append((path, t0, _unchanged(path, same, t0), None))
                continue
            window.append((path, t0, file_hash, pool.submit(_prepare_in_worker, path, opts, file_hash)))

    try:
        if pool is None:
            for path in files:
                tell(current=path.name)
                try:
                    result = ingest_file(conn, path, embedder, book_id=opts.book_id, title=opts.title,
                                         password=opts.password, replace=opts.replace, strict=opts.strict,
                                         progress=progress, ocr=opts.ocr, ocr_engine=opts.ocr_engine,
                                         on_embedded=embedded, keep_file=opts.keep_file)
                except ModelError:  # the embedder is gone: every file after would fail the same way
                    raise
                except RagcliError as exc:
                    result = failed(path, exc)
                yield finish(path, result)
            return
        submit()
        while window:
            path, t0, state, future = window.pop(0)
            submit()
            tell(current=path.name)
            if isinstance(state, IngestResult):
                yield finish(path, state)
                continue
            if isinstance(state, RagcliError):
                yield finish(path, failed(path, state))
                continue
            try:
                prep = future.result()
                result = store_prepared(conn, prep, embedder, opts, None, t0, embedded)
            except ModelError:
                raise
            except RagcliError as exc:
                result = failed(path, exc)
            yield finish(path, result)
    finally:
        if pool is not None:
            for _, _, _, future in window:
                if future is not None:
                    future.cancel()
            pool.shutdown(wait=True, cancel_futures=True)

