"""How many requests the HTTP server works on at once: `parallel` run (each in a worker thread, with
its own chat model of the pool), `waiting` more queue in arrival order, and beyond that a request
is refused at once (503) instead of waiting without bound. Used from the server's event loop only.

Only work that uses a chat model (an answer, a summary) takes one of the `parallel` slots. A read (a
page image, a conversation, the books, a search) never waits for the model: it runs in a worker
thread of its own, at most READS at once (a few: the machine's cores are shared with the model).
"""
from __future__ import annotations

import asyncio
from typing import Callable, TypeVar

# anyio is imported where a blocking call is handed to a worker thread (inside the running server).

T = TypeVar("T")
READS = 4  # reads run at once, besides the generations


class Busy(Exception):
    """Every worker is busy and the queue is full."""


class Admission:
    def __init__(self, parallel: int, waiting: int):
        self.parallel = parallel
        self.waiting = waiting
        self.inside = 0  # running + waiting
        self._slots: asyncio.Semaphore | None = None
        self._reads: asyncio.Semaphore | None = None

    @property
    def generating(self) -> int:
        """Generations running or queued."""
        return self.inside

    async def read(self, fn: Callable[[], T]) -> T:
        """Run a read `fn` in a worker thread without a generation slot (READS at once)."""
        import anyio

        if self._reads is None:  # made inside the running loop
            self._reads = asyncio.Semaphore(READS)
        async with self._reads:
            return await anyio.to_thread.run_sync(fn, abandon_on_cancel=False)

    def admit(self) -> "Ticket":
        """A place in the queue, or Busy. The ticket must be released (Ticket.release)."""
        if self.inside >= self.parallel + self.waiting:
            raise Busy(f"the server is busy: {self.parallel} request(s) running and {self.waiting} waiting; "
                       f"try again shortly")
        self.inside += 1
        return Ticket(self)

    @property
    def slots(self) -> asyncio.Semaphore:
        if self._slots is None:  # made inside the running loop
            self._slots = asyncio.Semaphore(self.parallel)
        return self._slots


class Ticket:
    def __init__(self, admission: Admission):
        self._admission = admission
        self._released = False

    async def run(self, fn: Callable[[], T]) -> T:
        """Wait for a worker slot, then run `fn` in a thread; the caller awaits its result. The
        thread is never abandoned: a cancelled request stops through its Job, not here."""
        import anyio

        async with self._admission.slots:
            return await anyio.to_thread.run_sync(fn, abandon_on_cancel=False)

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._admission.inside -= 1
