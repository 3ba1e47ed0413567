"""What every HTTP route of `ragcli serve` shares: reading a JSON body (size, depth, Unicode, a
pydantic schema), errors as JSON (the CLI's one-line message and exit code), and the hand-over of a
worker thread's output to the event loop (Mailbox) with the client's disconnect watched.

Errors are JSON, `{"error": {"message", "type", "code"}}`: the CLI's one-line message, and as `code`
the exit code the CLI gives the same error (2 bad input, 5 not found, ...; null for errors of HTTP
itself). Status: 400 bad input, 401 no or wrong key, 404 not found, 405, 413 too large, 503 busy,
500 otherwise.
"""
from __future__ import annotations

import asyncio
import json
import math
import sys
import threading
from typing import Callable, Optional, Union

from pydantic import StrictStr

from ragcli.errors import CorpusError, InputError, NotFoundError, RagcliError, UsageError
from ragcli.serve.admission import Busy, Ticket
from ragcli.serve.jobs import Cancelled, Job

MAX_BODY = 1 << 20  # bytes of a request body: a question and its conversation, not a book
MAX_DEPTH = 32  # levels of JSON arrays and objects in a body (the deepest request has 4)


class HTTPError(Exception):
    """A request refused before any core call; `code` as a ragcli error's exit code (2: bad input)."""

    def __init__(self, status: int, message: str, kind: str, code: Optional[int] = 2):
        super().__init__(message)
        self.status, self.kind, self.code = status, kind, code


Books = Optional[Union[StrictStr, list[StrictStr]]]  # a book id or a list of them


STATUS = ((UsageError, 400, "invalid_request_error"), (InputError, 400, "invalid_request_error"),
          (NotFoundError, 404, "not_found_error"), (CorpusError, 500, "corpus_error"))


def error_body(message: str, kind: str, code) -> dict:
    return {"error": {"message": message, "type": kind, "code": code}}


def error_response(exc: BaseException):
    """The JSON error for an exception (CLI message and exit code for ragcli's own)."""
    from starlette.responses import JSONResponse

    if isinstance(exc, HTTPError):
        return JSONResponse(error_body(str(exc), exc.kind, exc.code), status_code=exc.status)
    from starlette.requests import ClientDisconnect

    if isinstance(exc, (Cancelled, ClientDisconnect)):  # nobody is there to read it
        log("a client disconnected: its request was stopped")
        return JSONResponse(error_body("the client disconnected", "cancelled", None), status_code=499)
    if isinstance(exc, Busy):
        return JSONResponse(error_body(str(exc), "server_busy", None), status_code=503, headers={"Retry-After": "1"})
    if isinstance(exc, RagcliError):
        for cls, status, kind in STATUS:
            if isinstance(exc, cls):
                return JSONResponse(error_body(str(exc), kind, exc.exit_code), status_code=status)
        return JSONResponse(error_body(str(exc), "server_error", exc.exit_code), status_code=500)
    log(f"internal error: {type(exc).__name__}: {exc}")
    return JSONResponse(error_body(f"internal error: {type(exc).__name__}: {exc}", "server_error", 70),
                        status_code=500)


def log(line: str) -> None:
    print(f"ragcli serve: {line}", file=sys.stderr, flush=True)


async def read_json(request, schema=None):
    """The request body as a JSON object, at most MAX_BODY bytes, MAX_DEPTH deep, its strings valid
    Unicode (a lone surrogate `\\ud800` is refused: no text that cannot be written out goes further);
    with `schema` (a pydantic model), validated into it (HTTPError 400 naming the first bad field)."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > MAX_BODY:
        raise HTTPError(413, f"the request body is larger than {MAX_BODY} bytes", "request_too_large", None)
    body = bytearray()
    async for part in request.stream():
        body += part
        if len(body) > MAX_BODY:
            raise HTTPError(413, f"the request body is larger than {MAX_BODY} bytes", "request_too_large", None)
    try:
        data = json.loads(bytes(body) or b"null")
    except RecursionError as exc:
        raise HTTPError(400, f"the request body is nested more than {MAX_DEPTH} deep", "invalid_json") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise HTTPError(400, f"the request body is not valid JSON: {exc}", "invalid_json") from exc
    if not isinstance(data, dict):
        raise HTTPError(400, "the request body must be a JSON object", "invalid_request_error")
    check_json(data)
    if schema is None:
        return data
    from pydantic import ValidationError

    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        raise HTTPError(400, schema_message(exc), "invalid_request_error") from exc


def check_json(data) -> None:
    """At most MAX_DEPTH levels of arrays and objects; every string and key valid Unicode."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise HTTPError(400, f"the request body is nested more than {MAX_DEPTH} deep", "invalid_json")
        if isinstance(value, dict):
            for k, v in value.items():
                _check_text(k)
                stack.append((v, depth + 1))
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
        elif isinstance(value, str):
            _check_text(value)
        elif isinstance(value, float) and not math.isfinite(value):
            raise HTTPError(400, "the request body has a number out of range", "invalid_json")


def _check_text(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise HTTPError(400, "the request body has text that is not valid Unicode (a lone surrogate such as "
                             "\\ud800)", "invalid_request_error") from exc


SCHEMA_WORDS = {"int_type": "must be an integer", "string_type": "must be a string", "bool_type": "must be true or false",
                "list_type": "must be a list", "model_type": "must be an object", "dict_type": "must be an object",
                "missing": "is required", "extra_forbidden": "is not a field of this request",
                "too_short": "must be a non-empty list", "int_from_float": "must be an integer"}


def schema_message(exc) -> str:
    """A pydantic ValidationError as one line: the bad field and what it must be (of a union's
    alternatives, the one that got furthest: `content: [{"text": 123}]` names the part's text)."""
    errors = exc.errors()
    first = max(errors, key=lambda e: len(e.get("loc", ())))
    loc = [str(p) for p in first.get("loc", ()) if not str(p).startswith(("str", "list[", "function-"))]
    where = ".".join(loc) or "body"
    words = SCHEMA_WORDS.get(first.get("type", ""), first.get("msg", "is not valid").lower())
    if where in ("book",) and first.get("type") in ("string_type", "list_type"):
        words = "must be a book id or a list of them"
    return f"`{where}` {words}"


async def until_disconnected(receive, job: Job) -> None:
    """Cancel `job` when the client goes away (the request body has been read already)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            job.cancel()
            return


async def run_watched(request, ticket: Ticket, job: Job, fn: Callable):
    """Run `fn` for a non-streamed reply, cancelling it if the client leaves meanwhile."""
    watcher = asyncio.ensure_future(until_disconnected(request.receive, job))
    try:
        return await ticket.run(fn)
    finally:
        watcher.cancel()
        ticket.release()


class Mailbox:
    """What the worker thread hands the event loop (text, phases, the end), with one wake-up per batch:
    a wake-up per token would make the two threads trade the GIL at every token."""

    def __init__(self, loop):
        self._loop, self._lock, self._items = loop, threading.Lock(), []
        self._ready = asyncio.Event()
        self._signalled = False

    def put(self, *item) -> None:  # from any thread
        with self._lock:
            self._items.append(item)
            if self._signalled:
                return
            self._signalled = True
        self._loop.call_soon_threadsafe(self._ready.set)

    async def take(self) -> list:
        await self._ready.wait()
        with self._lock:
            items, self._items, self._signalled = self._items, [], False
            self._ready.clear()
        return items


def endpoint(handler):
    """Every failure of a handler as a JSON error (no traceback reaches the client or the log)."""
    async def guarded(request):
        try:
            return await handler(request)
        except Exception as exc:  # noqa: BLE001 - reported as JSON, one line in the log for a bug
            return error_response(exc)
    return guarded


async def not_found(request, exc):
    from starlette.responses import JSONResponse

    return JSONResponse(error_body(f"no such endpoint: {request.method} {request.url.path}", "not_found_error",
                                   None), status_code=404)


async def not_allowed(request, exc):
    from starlette.responses import JSONResponse

    return JSONResponse(error_body(f"{request.method} is not allowed on {request.url.path}",
                                   "invalid_request_error", None), status_code=405)
