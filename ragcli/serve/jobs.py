"""A served call's Job: the cancellation flag a request's worker thread checks, and the callbacks a
served call passes to the core, each of which checks it first.

A request that is no longer wanted (its client left) sets its `Job`; the callbacks then raise
`Cancelled`, which unwinds the generation at the next token (the model's stream is closed as the
exception passes through it).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable, Optional


class Cancelled(Exception):
    """The client went away: the work it asked for stops (not a RagcliError: nobody is told)."""


@dataclass
class Job:
    """One request's cancellation flag, set from the server's event loop, read by the worker."""

    cancelled: threading.Event = field(default_factory=threading.Event)

    def cancel(self) -> None:
        self.cancelled.set()

    def check(self) -> None:
        if self.cancelled.is_set():
            raise Cancelled()


def checking(job: Optional[Job]) -> Callable[..., None]:
    """A phase callback that stops the work when its job was cancelled."""
    def check(*args, **kwargs) -> None:
        if job is not None:
            job.check()
    return check


def reading(check: Callable[[], None], on_phase: Optional[Callable[..., None]]) -> Callable[[str, dict], None]:
    """The model's progress callback: checks the job, and tells `on_phase` how much of the prompt is
    read ("prompt" with done/total tokens: on one CPU thread reading the passages takes most of a minute)."""
    def progress(event: str, info: dict) -> None:
        check()
        if on_phase and event == "prompt_progress" and info.get("total"):
            on_phase("prompt", done=int(info.get("done") or 0), total=int(info["total"]))
    return progress


def callbacks(check: Callable[[], None], on_text: Optional[Callable[[str], None]],
               on_phase: Optional[Callable[..., None]]):
    """The (text, phase) callbacks a served call passes to the core: each first checks the job (a
    cancelled or timed-out job stops there), then tells the caller's own callback, if any."""
    def text(piece: str) -> None:
        check()
        if on_text:
            on_text(piece)

    def phase(name, *args, **kwargs) -> None:
        check()
        if on_phase:
            on_phase(name, **({"passages": kwargs["passages"]} if kwargs.get("passages") else {}))

    return text, phase
