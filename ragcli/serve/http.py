"""`ragcli serve`: an OpenAI-compatible endpoint and the CLI's JSON over HTTP (Starlette on uvicorn).

    POST /v1/chat/completions   the last user message is the question (earlier turns: a follow-up);
                                streamed (SSE) or not; the reply carries the sources (serve/chat.py)
    GET  /v1/models             one model, `ragcli`
    POST /search  {query, book?, k?, mode?}                       = `ragcli search --json`
    POST /ask     {question, book?, k?, expand?, rewrite?, feedback?, ...}  = `ragcli ask --json`
    GET  /books                                                   = `ragcli books --json`
    GET  /summaries                                               = `ragcli summary topics --json`
    GET  /summaries/{topic}[?number=N]                            = `ragcli summary show --json`
    GET  /summaries/{topic}/history                               = `ragcli summary list --json`
    GET  /  and /web/...                                          the page (serve/web.py)

Errors are JSON, `{"error": {"message", "type", "code"}}`: the CLI's one-line message, and as `code`
the exit code the CLI gives the same error (2 bad input, 5 not found, ...; null for errors of HTTP
itself). Status: 400 bad input, 401 no or wrong key, 404 not found, 405, 413 too large, 503 busy,
500 otherwise.
A client that disconnects stops its generation (the Job raises at the next token); a request still
queued when its client leaves is dropped when its turn comes.

The API key is compared in constant time and never printed or logged.
"""
from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import math
import re
import sys
import threading
import time
from types import SimpleNamespace
from typing import Annotated, Callable, Optional, Sequence, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr

from ragcli.conversation import standalone
from ragcli.errors import CorpusError, InputError, NotFoundError, RagcliError, UsageError
from ragcli.render.data import answer_data
from ragcli.serve import chat, guard
from ragcli.serve.admission import Admission, Busy, Ticket
from ragcli.serve.guard import Guard
from ragcli.serve.library import Cancelled, Job, Library

# starlette and uvicorn are imported where the app is built and run (about 0.8 s): `serve --mcp` skips them.

MAX_BODY = 1 << 20  # bytes of a request body: a question and its conversation, not a book
MAX_DEPTH = 32  # levels of JSON arrays and objects in a body (the deepest request has 4)
LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    if host.strip("[]").lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name other than localhost: may resolve anywhere
        return False


def check_bind(host: str, api_key: Optional[str]) -> None:
    """Only loopback may be served without a key."""
    if not is_loopback(host) and not api_key:
        raise UsageError(f"serving on {host} (not a loopback address) needs an API key: set RAGCLI_SERVE_KEY "
                         f"(--api-key KEY works too, but other users of the machine see it in `ps`)")


class HTTPError(Exception):
    """A request refused before any core call; `code` as a ragcli error's exit code (2: bad input)."""

    def __init__(self, status: int, message: str, kind: str, code: Optional[int] = 2):
        super().__init__(message)
        self.status, self.kind, self.code = status, kind, code


# -- one schema per route (pydantic, strict: `"k": "3"` or `"stream": 1` is refused, not coerced) --------------

Books = Optional[Union[StrictStr, list[StrictStr]]]  # a book id or a list of them


class _Body(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class SearchBody(_Body):
    """POST /search."""
    query: StrictStr = ""
    book: Books = None
    k: StrictInt = 10
    mode: StrictStr = "hybrid"


class AskBody(_Body):
    """POST /ask."""
    question: StrictStr = ""
    book: Books = None
    k: StrictInt = 10
    expand: StrictBool = True
    rewrite: StrictBool = False
    feedback: StrictBool = False
    verify: StrictBool = False
    evidence: StrictBool = False
    max_tokens: Optional[StrictInt] = None


class TextPart(BaseModel):
    """A content part; only text parts are read (an image part, say, is ignored)."""
    model_config = ConfigDict(strict=True, extra="allow")
    type: StrictStr
    text: Optional[StrictStr] = None


class Message(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")  # name, tool_calls, ...: accepted, unused
    role: StrictStr
    content: Union[StrictStr, list[TextPart], None] = None


class ChatBody(BaseModel):
    """POST /v1/chat/completions: the OpenAI request; its other fields (temperature, ...) are
    accepted and unused, as OpenAI clients send them."""
    model_config = ConfigDict(strict=True, extra="allow")
    messages: Annotated[list[Message], Field(min_length=1)]
    book: Books = None
    k: StrictInt = 10
    max_tokens: Optional[StrictInt] = None
    max_completion_tokens: Optional[StrictInt] = None
    stream: Optional[StrictBool] = False


NUMBER = re.compile(r"[0-9]{1,9}")  # a summary number in a query string (ASCII digits, not `²`)


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


class AnswerEvents:
    """The streamed chat completion, as a raw ASGI response: the status is sent only when the work
    has begun well (an unknown book or an empty corpus is still a 4xx JSON error); then chunks of
    validated text (what arrived since the last one), and a last chunk with the sources and the
    `ragcli` field.

    Text after a later phase (text ragcli may or may not keep) is held back: what was sent
    cannot be taken back, so the last chunk says when the text above is not the answer kept, and
    gives the final one (chat.closing_text)."""

    def __init__(self, ticket: Ticket, job: Job, work: Callable):
        self.ticket, self.job, self.work = ticket, job, work

    async def __call__(self, scope, receive, send) -> None:
        box = Mailbox(asyncio.get_running_loop())

        async def produce() -> None:
            try:
                answer, asked = await self.ticket.run(lambda: self.work(box.put))
                box.put("done", answer, asked)
            except BaseException as exc:  # noqa: BLE001 - handed to the stream, which reports it
                if isinstance(exc, Cancelled):
                    log("a client disconnected: its answer stopped being generated")
                box.put("error", exc)
            finally:
                self.ticket.release()

        worker = asyncio.ensure_future(produce())
        watcher = asyncio.ensure_future(until_disconnected(receive, self.job))
        try:
            await self._stream(box, scope, receive, send)
        except OSError:  # the client is gone (uvicorn raises on a write to a closed socket)
            self.job.cancel()
        finally:
            watcher.cancel()
            if not worker.done():
                self.job.cancel()

    async def _stream(self, box: Mailbox, scope, receive, send) -> None:
        batch = await box.take()  # the scope and corpus checks come before the first phase
        early = next((item for item in batch if item[0] in ("text", "done", "error")), None)
        if early is not None and early[0] == "error":  # nothing sent yet: a plain JSON error
            if not isinstance(early[1], Cancelled):
                await error_response(early[1])(scope, receive, send)
            return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream; charset=utf-8"),
                                (b"cache-control", b"no-cache"), (b"x-accel-buffering", b"no")]})
        cid, created = chat.new_id(), int(time.time())

        async def emit(text: str) -> None:
            await send({"type": "http.response.body", "body": text.encode("utf-8"), "more_body": True})

        await emit(chat.chunk(cid, created, {"role": "assistant", "content": ""}))
        streamed: list[str] = []
        live = True
        while True:
            pending = ""  # the batch's text, sent as one chunk
            for item in batch:
                kind = item[0]
                if kind == "text" and live:
                    pending += item[1]
                    continue
                if pending:
                    streamed.append(pending)
                    await emit(chat.chunk(cid, created, {"content": pending}))
                    pending = ""
                if kind == "phase" and streamed:
                    live = False  # a later step: what follows may replace the text sent
                elif kind == "done":
                    answer, asked = item[1], item[2]
                    await emit(chat.chunk(cid, created, {"content": chat.closing_text(answer, "".join(streamed))},
                                          "stop", usage=chat.usage(answer), ragcli=chat.ragcli_field(answer, asked)))
                    return await self._close(emit, send)
                elif kind == "error":
                    if isinstance(item[1], Cancelled):
                        return
                    exc = item[1]
                    message = str(exc) if isinstance(exc, RagcliError) else \
                        f"internal error: {type(exc).__name__}: {exc}"
                    await emit(chat.sse(error_body(message, "server_error", getattr(exc, "exit_code", 70))))
                    return await self._close(emit, send)
            if pending:
                streamed.append(pending)
                await emit(chat.chunk(cid, created, {"content": pending}))
            batch = await box.take()

    @staticmethod
    async def _close(emit, send) -> None:
        await emit(chat.DONE)
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def create_app(library: Library, api_key: Optional[str] = None, parallel: int = 1, waiting: int = 8,
               host: str = "127.0.0.1", allowed: Sequence[str] = (), port: Optional[int] = None):
    """The ASGI application (no socket: `run` serves it), every route behind serve/guard.py's Guard
    (Host, Origin, JSON POSTs, the key) for the names of `host` and `allowed`."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    admission = Admission(parallel, waiting)

    async def models(request):
        return JSONResponse({"object": "list", "data": [
            {"id": chat.MODEL_ID, "object": "model", "created": 0, "owned_by": "ragcli",
             "ragcli": {"chat_model": library.model_name}}]})

    async def chat_completions(request):
        body = await read_json(request, ChatBody)
        question, history = chat.split_messages([m.model_dump() for m in body.messages])
        if not question.strip():
            raise UsageError("the question is empty: the last user message has no text")
        opts = dict(book=body.book, k=body.k, max_tokens=body.max_completion_tokens or body.max_tokens)
        stream = bool(body.stream)
        asked: dict = {"asked": question, "question": question, "rewritten": False, "reason": "", "method": ""}

        def prepare(model) -> str:
            """The follow-up made standalone (conversation.standalone, with the leased model)."""
            made = standalone(question, history, model)
            asked.update(question=made.question, rewritten=made.rewritten, reason=made.reason, method=made.method)
            return made.question

        ticket, job = admission.admit(), Job()
        if stream:
            def work(put):
                answer = library.ask(question, job=job, prepare=prepare, on_text=lambda t: put("text", t),
                                     on_phase=lambda name: put("phase", name), **opts)
                return answer, asked
            return AnswerEvents(ticket, job, work)
        answer = await run_watched(request, ticket, job, lambda: library.ask(question, job=job, prepare=prepare,
                                                                              **opts))
        return JSONResponse(chat.completion(answer, asked))

    async def ask(request):
        body = await read_json(request, AskBody)
        opts = body.model_dump(exclude={"question"})
        ticket, job = admission.admit(), Job()
        answer = await run_watched(request, ticket, job, lambda: library.ask(body.question, job=job, **opts))
        return JSONResponse(answer_data(answer))

    async def search(request):
        body = await read_json(request, SearchBody)
        ticket, job = admission.admit(), Job()
        return JSONResponse(await run_watched(request, ticket, job, lambda: library.search(
            body.query, job=job, book=body.book, k=body.k, mode=body.mode)))

    async def blocking(fn: Callable):  # a read: no generation slot (serve/admission.py)
        return JSONResponse(await admission.read(fn))

    async def books(request):
        return await blocking(library.books)

    async def topics(request):
        return await blocking(library.summary_list)

    async def summary_show(request):
        number = request.query_params.get("number")
        if number is not None and not NUMBER.fullmatch(number):
            raise UsageError(f"`number` must be a positive integer, not {number!r}")
        topic = request.path_params["topic"]
        return await blocking(lambda: library.summary_show(topic, int(number) if number else None))

    async def summary_history(request):
        topic = request.path_params["topic"]
        return await blocking(lambda: library.summary_list(topic))

    async def not_found(request, exc):
        return JSONResponse(error_body(f"no such endpoint: {request.method} {request.url.path}", "not_found_error",
                                       None), status_code=404)

    async def not_allowed(request, exc):
        return JSONResponse(error_body(f"{request.method} is not allowed on {request.url.path}",
                                       "invalid_request_error", None), status_code=405)

    def endpoint(handler):
        """Every failure of a handler as a JSON error (no traceback reaches the client or the log)."""
        async def guarded(request):
            try:
                return await handler(request)
            except Exception as exc:  # noqa: BLE001 - reported as JSON, one line in the log for a bug
                return error_response(exc)
        return guarded

    routes = [
        Route("/v1/models", endpoint(models), methods=["GET"]),
        Route("/v1/chat/completions", endpoint(chat_completions), methods=["POST"]),
        Route("/search", endpoint(search), methods=["POST"]),
        Route("/ask", endpoint(ask), methods=["POST"]),
        Route("/books", endpoint(books), methods=["GET"]),
        Route("/summaries", endpoint(topics), methods=["GET"]),
        Route("/summaries/{topic}", endpoint(summary_show), methods=["GET"]),
        Route("/summaries/{topic}/history", endpoint(summary_history), methods=["GET"]),
    ]
    from ragcli.serve import web  # the page at / (serve/web.py)

    sessions, attempts, cookie = guard.Sessions(), guard.Attempts(), guard.cookie_name(port)

    def login(request, given: str):
        """The page's key form: a wrong key is counted (429 past the limit) and refused with 401; the
        right one starts a session (a random token in an HttpOnly, SameSite=Strict cookie)."""
        client = guard.client_of(request.scope)
        locked = attempts.refusal(client)
        if locked is not None:
            return locked
        if not key_matches(api_key, given):
            attempts.failed(client, "the page's key form")
            return guard.error(401, "wrong API key", "unauthorized")
        response = JSONResponse({"ok": True, "key_required": True})
        response.set_cookie(cookie, sessions.new(), max_age=int(guard.SESSION_SECONDS), httponly=True,
                            samesite="strict", path="/")
        return response

    kit = SimpleNamespace(endpoint=endpoint, read_json=read_json, error_response=error_response,
                          Mailbox=Mailbox, until_disconnected=until_disconnected, HTTPError=HTTPError,
                          key_matches=lambda given: key_matches(api_key, given), login=login)
    routes += web.routes(library, admission, kit, api_key)
    # Middleware wraps the whole app: every route, the page's included, is guarded (Host, Origin, JSON
    # POSTs, the key as a Bearer header or the page's session cookie; only the page's shell and key form
    # are public), and every response gets the security headers.
    app = Starlette(routes=routes, exception_handlers={404: not_found, 405: not_allowed},
                    middleware=[Middleware(Guard, hosts=guard.allowed_hosts(host, allowed), api_key=api_key,
                                           sessions=sessions, cookie=cookie, attempts=attempts,
                                           public=web.PUBLIC, binary_posts=web.BINARY_POSTS)])
    app.state.admission = admission
    return app


def key_matches(api_key: Optional[str], given: str) -> bool:
    """The one comparison of a key a client gave with the server's (constant time)."""
    return bool(api_key) and hmac.compare_digest(given.encode("utf-8"), api_key.encode("utf-8"))


def run(library: Library, host: str, port: int, api_key: Optional[str], parallel: int, waiting: int,
        allowed: Sequence[str] = ()) -> None:
    """Serve until interrupted (uvicorn; its access log names method, path and status, never headers)."""
    import uvicorn

    check_bind(host, api_key)
    bare = host.strip("[]")  # `[::1]` as a URL writes it; uvicorn binds the bare address
    app = create_app(library, api_key, parallel, waiting, host=bare, allowed=allowed, port=port)
    shown = f"[{bare}]" if ":" in bare else bare
    log(f"http://{shown}:{port}/ (the page), http://{shown}:{port}/v1 (OpenAI-compatible), "
        f"model {library.model_name or 'none (extractive answers)'}, {parallel} at once, {waiting} queued, "
        f"{'API key required' if api_key else 'no API key (loopback only)'}")
    config = uvicorn.Config(app, host=bare, port=port, log_level="warning", access_log=False,
                            timeout_graceful_shutdown=5, timeout_keep_alive=5,
                            h11_max_incomplete_event_size=MAX_HEADERS, http=protocol_class())
    uvicorn.Server(config).run()


def protocol_class(max_connections: int = None, header_timeout: float = None, body_timeout: float = None,
                   min_body_rate: float = None):
    """uvicorn's HTTP protocol (httptools when installed, else h11), with the header deadline, the body
    deadline and minimum rate, and the connection limit's 503 in the JSON error shape. The arguments
    (tests lower them) default to the constants below."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as base
    except ImportError:
        from uvicorn.protocols.http.h11_impl import H11Protocol as base
    return header_deadline_protocol(base, max_connections or MAX_CONNECTIONS, header_timeout or HEADER_TIMEOUT,
                                    body_timeout or BODY_TIMEOUT, min_body_rate or MIN_BODY_RATE)


HEADER_TIMEOUT = 10.0  # seconds a connection has to send a request's whole headers (from its opening, or
# from the end of its previous response); uvicorn has no such limit (timeout_keep_alive restarts at every byte)
BODY_TIMEOUT = 10.0  # seconds a request's body may take from the end of its headers, plus its size at ...
MIN_BODY_RATE = 1024.0  # ... this many bytes a second: a body trickled slower is cut (its connection closed)
BODY_CHECK = 1.0  # seconds between two looks at a body's progress
MAX_CONNECTIONS = 100  # beyond this many open connections a request gets 503 at once
MAX_HEADERS = 16 * 1024  # bytes of a request's headers (h11's buffer of an incomplete event)


def busy_app(app, protocol, most: int):
    """`app` unless the server has `most` connections open already: then 503 in the JSON error shape,
    and the connection closed (uvicorn's own limit_concurrency answers in plain text)."""
    async def limited(scope, receive, send):
        if scope["type"] == "http" and len(protocol.connections) > most:
            body = json.dumps(error_body(f"the server has {most} connections open: try again shortly",
                                         "server_busy", None)).encode()
            await send({"type": "http.response.start", "status": 503, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                (b"retry-after", b"1"), (b"connection", b"close"), *guard.SECURITY_HEADERS]})
            await send({"type": "http.response.body", "body": body})
            return
        await app(scope, receive, send)
    return limited


def header_deadline_protocol(base, max_connections: int = MAX_CONNECTIONS, header_timeout: float = HEADER_TIMEOUT,
                             body_timeout: float = BODY_TIMEOUT, min_body_rate: float = MIN_BODY_RATE):
    """`base` (uvicorn's H11Protocol or HttpToolsProtocol) with
    - a header-read deadline: a connection that has not sent a request's complete headers
      `header_timeout` seconds after opening (or after its previous response ended) is closed;
    - a body deadline: a request whose body is not complete `body_timeout` seconds after its headers,
      plus its bytes so far at `min_body_rate`, is closed (a body trickled a byte at a time, keyed or
      not, answered already or not);
    - the connection limit (`max_connections`) answered by busy_app.
    A slow client cannot hold a connection (the key is read only once the headers are in)."""

    class HeaderDeadline(base):
        _deadline = None
        _body_timer = None
        _headers_in = False  # the current request's headers were read
        _received = 0  # bytes received on the connection
        _body_start = (0.0, 0)  # (when, bytes received) at the end of the current request's headers

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.app = busy_app(self.app, self, max_connections)

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            self._received += len(data)
            super().data_received(data)

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(header_timeout, self._expired)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expired(self) -> None:
            self._deadline = None
            if not self._headers_in and not self.transport.is_closing():
                self.transport.close()

        def _headers_done(self) -> None:
            if not self._headers_in:
                self._headers_in = True
                self._body_start = (self.loop.time(), self._received)
                self._watch_body()
            self._disarm()

        def _watch_body(self) -> None:
            if self._body_timer is not None:
                self._body_timer.cancel()
            self._body_timer = self.loop.call_later(BODY_CHECK, self._body_check)

        def _body_check(self) -> None:
            self._body_timer = None
            cycle = getattr(self, "cycle", None)
            if self.transport.is_closing() or cycle is None or not cycle.more_body:
                return  # the body is in (or there is none)
            if self.flow.read_paused and not cycle.response_complete:
                self._watch_body()  # the app has not taken what came yet: not the client's delay
                return
            since, at = self._body_start
            allowed = body_timeout + (self._received - at) / min_body_rate
            if self.loop.time() - since > allowed:
                self.transport.close()  # the app sees a disconnect
                return
            self._watch_body()

        def on_headers_complete(self) -> None:  # httptools' parser calls it
            self._headers_done()
            super().on_headers_complete()

        def handle_events(self) -> None:  # h11: the headers are in once the peer has left IDLE
            super().handle_events()
            import h11

            if self.conn.their_state is not h11.IDLE and not self._headers_in:
                self._headers_done()

        def on_response_complete(self) -> None:
            self._headers_in = False
            super().on_response_complete()  # may read a pipelined request's headers already
            if not self._headers_in and not self.transport.is_closing():
                self._arm()

        def connection_lost(self, exc) -> None:
            self._disarm()
            if self._body_timer is not None:
                self._body_timer.cancel()
                self._body_timer = None
            super().connection_lost(exc)

    if not hasattr(base, "handle_events"):
        del HeaderDeadline.handle_events
    if not hasattr(base, "on_headers_complete"):
        del HeaderDeadline.on_headers_complete
    return HeaderDeadline
