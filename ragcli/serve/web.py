"""The page `ragcli serve` serves at `/`: the books in a browser (ask, the cited pages, conversations,
topics and their numbered summaries, the library), as plain HTML, CSS and one script shipped in
ragcli/serve/web/ (no build step, nothing fetched from another host).

    GET  /                                  the page (index.html); /web/app.js, /web/style.css
    POST /web/key   {key}                   with --api-key: checks the key, starts a session (a random
                                            token in an HttpOnly, SameSite=Strict cookie; serve/guard.py)
    GET  /web/api/session                   what the page may offer: model, ingest allowed, generations running
    POST /web/api/ask {question, conversation_id?, book?}   SSE: standalone, phase, text, done (the turn)
    POST /web/api/summaries {topic, keep_weak?}   SSE: phase, text, done (the new numbered summary)
    GET  /web/api/summaries/{topic}?number=N      = `summary show --json` with `html`, its Markdown made safe
    GET  /web/api/conversations[/{id}]      = `conversations list|show --json` (each turn with `reader`,
                                            each source with its book's `format`)
    POST /web/api/conversations/{id}/rename {title};  POST /web/api/conversations/{id}/delete {}
    GET  /web/api/search?q=WORDS[&book=ID...]  = `search --json` (`book` repeated: several books)
    GET  /web/api/passages/{id}             = `show ID --json` with the book's page_count, page_labels, format
    GET  /web/api/passages/{id}/section     the passage in its section's text (books without page images)
    GET  /web/api/passages/{id}/page.png[?page=N]   = `show ID --image`, as PNG, cached
    GET  /web/api/passages/{id}/file        the book's file (a PDF opens at #page=N; others download)
    POST /web/api/upload?name=FILE          the body saved under --allow-ingest FOLDER, then ingested

Only the answer and the summary take one of the server's `--parallel` generation slots; every read
(a page image, a conversation, the books, a search) runs beside them (serve/admission.py), so the page
never freezes while the model writes. A Stop on the page closes the answer's stream: the server
cancels its Job at the next token, frees the slot, and saves nothing (a turn is saved only whole).

Messages reach the page in a reader's words (serve/words.py): no server path, no command-line flag.

The books, summaries and topics the page shows come from the JSON routes of serve/api.py (/books,
/summaries...). Every route here but the page's three files and the key form needs the key when
the server has one (serve/guard.py Guard: the header or this cookie, one check). Every response
carries a Content-Security-Policy that allows only the page's own script and style and requests
to this server: a text of a book that reached the page as HTML still could not run.

This module does not import serve/http.py (which mounts it): what it needs of it comes in `kit`.
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import tempfile
from importlib import resources
from pathlib import Path
from typing import Callable, Optional, Union

from pydantic import BaseModel, ConfigDict, StrictBool, StrictInt, StrictStr

from ragcli.errors import UsageError
from ragcli.serve.guard import COOKIE
from ragcli.serve import words
from ragcli.ingest import paths
from ragcli.serve.jobs import Cancelled, Job
from ragcli.serve.library import Library

# The page shell and the key form: served without the key (they hold no data of the corpus).
class _Body(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class KeyBody(_Body):
    """POST /web/key."""
    key: StrictStr = ""


class AskBody(_Body):
    """POST /web/api/ask."""
    question: StrictStr = ""
    conversation_id: Optional[StrictInt] = None
    book: Optional[Union[StrictStr, list[StrictStr]]] = None


class SummaryBody(_Body):
    """POST /web/api/summaries."""
    topic: StrictStr = ""
    keep_weak: StrictBool = False


class RenameBody(_Body):
    """POST /web/api/conversations/{id}/rename."""
    title: StrictStr = ""


class EmptyBody(_Body):
    """POST /web/api/conversations/{id}/delete."""


BINARY_POSTS = frozenset({"/web/api/upload"})  # a book file posted as application/octet-stream
PUBLIC = frozenset({"/", "/web/app.js", "/web/style.css", "/web/key"})
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'none'; frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
                    "Referrer-Policy": "no-referrer"}
FILES = {"/": ("index.html", "text/html; charset=utf-8"),
         "/web/app.js": ("app.js", "text/javascript; charset=utf-8"),
         "/web/style.css": ("style.css", "text/css; charset=utf-8")}
MAX_UPLOAD = 512 << 20  # bytes of an uploaded book
UPLOAD_SUFFIXES = (".pdf", ".epub", ".docx", ".html", ".htm", ".txt", ".md")


def secured(response):
    """The security headers on a response (an event stream sets its own)."""
    if not hasattr(response, "headers"):
        return response
    for name, value in SECURITY_HEADERS.items():
        response.headers[name] = value
    return response


def _page_files() -> dict:
    """The page's files, read once from the package."""
    folder = resources.files("ragcli.serve") / "web"
    return {path: ((folder / name).read_bytes(), kind) for path, (name, kind) in FILES.items()}


class Events:
    """A stream of server-sent events (`event: NAME`, `data: JSON`) of one piece of work run in a
    worker thread: `work(put)` calls put(name, data) as it goes and returns the `done` event's data.
    As for the chat completions stream, an error before the first event is a plain JSON error."""

    def __init__(self, kit, ticket, job: Job, work: Callable):
        self.kit, self.ticket, self.job, self.work = kit, ticket, job, work

    async def __call__(self, scope, receive, send) -> None:
        kit = self.kit
        box = kit.Mailbox(asyncio.get_running_loop())

        async def produce() -> None:
            try:
                box.put("done", await self.ticket.run(lambda: self.work(box.put)))
            except BaseException as exc:  # noqa: BLE001 - handed to the stream, which reports it
                box.put("error", exc)
            finally:
                self.ticket.release()

        worker = asyncio.ensure_future(produce())
        watcher = asyncio.ensure_future(kit.until_disconnected(receive, self.job))
        try:
            await self._stream(box, scope, receive, send)
        except OSError:  # the client is gone
            self.job.cancel()
        finally:
            watcher.cancel()
            if not worker.done():
                self.job.cancel()

    async def _stream(self, box, scope, receive, send) -> None:
        batch = await box.take()
        if batch[0][0] == "error":
            if not isinstance(batch[0][1], Cancelled):
                await secured(self.kit.error_response(batch[0][1]))(scope, receive, send)
            return
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"), *((k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items())]})
        while True:
            out, text = [], ""
            for name, data in batch:
                if name == "text":  # a batch's text as one event
                    text += data
                    continue
                if text:
                    out.append(_event("text", {"text": text}))
                    text = ""
                if name == "error":
                    if isinstance(data, Cancelled):
                        return
                    out.append(_event("error", _error_data(data)))
                else:
                    out.append(_event(name, data))
                if name in ("done", "error"):
                    await send({"type": "http.response.body", "body": "".join(out).encode("utf-8"),
                                "more_body": False})
                    return
            if text:
                out.append(_event("text", {"text": text}))
            await send({"type": "http.response.body", "body": "".join(out).encode("utf-8"), "more_body": True})
            batch = await box.take()


def _event(name: str, data) -> str:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def _error_data(exc: BaseException) -> dict:
    from ragcli.errors import RagcliError

    message = str(exc) if isinstance(exc, RagcliError) else f"internal error: {type(exc).__name__}: {exc}"
    data = {"message": words.for_reader(message), "code": getattr(exc, "exit_code", 70)}
    if getattr(exc, "summary", None) is not None and "not saved" in message:  # a weak summary, not kept
        data["weak"] = True
    return data


ID = re.compile(r"[0-9]{1,15}")  # ASCII digits only (str.isdigit takes `²` and `٣`), below SQLite's 2^63


def _number(text: Optional[str], name: str) -> Optional[int]:
    if text is None or text == "":
        return None
    if not ID.fullmatch(text) or int(text) < 1:
        raise UsageError(f"`{name}` must be a whole number from 1 to {10 ** 15 - 1}, not {text[:40]!r}")
    return int(text)


def _import_renderer() -> None:
    import pymupdf  # noqa: F401 - imported for its side effect: loaded once

    from ragcli.ingest import page_image  # noqa: F401
    from ragcli.text import sentences

    sentences("The segmenter loads. Once.")  # the highlighter splits the passage into sentences


def reader_errors(handler):
    """A route's JSON error with its message in a reader's words (serve/words.py)."""
    async def run(request):
        response = await handler(request)
        if getattr(response, "status_code", 200) < 400 or not hasattr(response, "body"):
            return response
        try:
            data = json.loads(response.body)
            data["error"]["message"] = words.for_reader(data["error"]["message"])
        except (ValueError, KeyError, TypeError):
            return response
        from starlette.responses import JSONResponse

        headers = {k: v for k, v in response.headers.items() if k.lower() not in ("content-length", "content-type")}
        return secured(JSONResponse(data, status_code=response.status_code, headers=headers))
    return run


def routes(library: Library, admission, kit, api_key: Optional[str]) -> list:
    """The page's routes, each wrapped by `kit.endpoint` (errors as JSON) and given the security headers.
    `kit`: serve/http.py's endpoint, read_json, field, error_response, Mailbox, until_disconnected."""
    from starlette.responses import FileResponse, JSONResponse, Response
    from starlette.routing import Route

    files = _page_files()
    # the page renderer (PyMuPDF) imported now, beside the start-up: the first "Show page" clicked while
    # the model writes would otherwise also wait for the import, on a busy machine seconds
    import threading

    threading.Thread(target=_import_renderer, name="ragcli-warm-renderer", daemon=True).start()

    def guarded(handler):
        async def run(request):
            return secured(await handler(request))
        return reader_errors(kit.endpoint(run))

    async def page_file(request):
        body, kind = files[request.url.path]
        return Response(body, media_type=kind, headers={"Cache-Control": "no-cache"})

    async def key_form(request):
        given = (await kit.read_json(request, KeyBody)).key
        if not api_key:
            return JSONResponse({"ok": True, "key_required": False})
        return kit.login(request, given)  # serve/http.py: rate limit, log, a random session token

    async def blocking(fn: Callable):  # a read: never waits for a generation (serve/admission.py)
        return await admission.read(fn)

    def with_formats(sources) -> None:
        """Each source's book file type as `format` (a saved turn's or summary's sources name the book
        only): the page shows a PDF's page and any other book's section text, and names the file type."""
        formats = library.book_formats([s.get("book_id") for s in sources or []])
        for source in sources or []:
            source["format"] = formats.get(source.get("book_id"), words.file_kind(source.get("file")))

    async def session(request):
        return JSONResponse({"model": library.model_name, "ingest": library.ingest_root is not None,
                             "key_required": bool(api_key), "generating": admission.generating})

    async def conversations(request):
        return JSONResponse(await blocking(library.conversations))

    async def conversation(request):
        cid = _number(request.path_params["cid"], "conversation id")
        data = await blocking(lambda: library.conversation_show(cid))
        for turn in data.get("turns", []):
            turn["reader"] = words.answer_words(turn)
        await blocking(lambda: with_formats([s for t in data.get("turns", []) for s in t.get("sources") or []]))
        return JSONResponse(data)

    async def rename(request):
        cid = _number(request.path_params["cid"], "conversation id")
        title = (await kit.read_json(request, RenameBody)).title
        return JSONResponse(await blocking(lambda: library.conversation_rename(cid, title)))

    async def delete(request):
        cid = _number(request.path_params["cid"], "conversation id")
        await kit.read_json(request, EmptyBody)
        return JSONResponse(await blocking(lambda: library.conversation_delete(cid)))

    async def ask(request):
        data = await kit.read_json(request, AskBody)
        question, cid, book = data.question, data.conversation_id, data.book
        if cid is not None and not 1 <= cid < 10 ** 15:
            raise UsageError(f"`conversation_id` must be a whole number from 1 to {10 ** 15 - 1}")
        ticket, job = admission.admit(), Job()

        def work(put):
            turn = library.ask_turn(question, cid, book=book, job=job, on_text=lambda t: put("text", t),
                                    on_phase=lambda name, **more: put("phase", {"name": name, **more}),
                                    on_standalone=lambda made: put("standalone", made))
            turn["reader"] = words.answer_words(turn)
            with_formats(turn.get("sources"))
            return turn
        return Events(kit, ticket, job, work)

    async def summary_new(request):
        body = await kit.read_json(request, SummaryBody)
        ticket, job = admission.admit(), Job()

        def work(put):
            made = library.summary_new(body.topic, job=job, on_text=lambda t: put("text", t),
                                       on_phase=lambda name, **more: put("phase", {"name": name, **more}),
                                       keep_weak=body.keep_weak)
            made["html"] = words.markdown_html(made.get("text") or "")
            with_formats(made.get("sources"))
            return made
        return Events(kit, ticket, job, work)

    async def summary_show(request):
        number = _number(request.query_params.get("number"), "number")
        topic = request.path_params["topic"]
        made = await blocking(lambda: library.summary_show(topic, number))
        made["html"] = words.markdown_html(made.get("text") or "")
        await blocking(lambda: with_formats(made.get("sources")))
        return JSONResponse(made)

    async def search(request):
        query = request.query_params.get("q") or ""
        book = [b for b in request.query_params.getlist("book") if b] or None  # one or several books
        k = _number(request.query_params.get("k"), "k") or 10
        return JSONResponse(await blocking(lambda: library.search(query, book=book, k=k)))

    async def passage(request):
        pid = _number(request.path_params["pid"], "passage id")
        data = await blocking(lambda: library.passage_page(pid))
        data["format"] = words.file_kind(data.get("file"))
        return JSONResponse(data)

    async def section(request):
        pid = _number(request.path_params["pid"], "passage id")
        return JSONResponse(await blocking(lambda: library.passage_section(pid)))

    async def page_png(request):
        pid = _number(request.path_params["pid"], "passage id")
        page = _number(request.query_params.get("page"), "page")
        png, number = await blocking(lambda: library.page_image(pid, page))
        return Response(png, media_type="image/png", headers={"Cache-Control": "private, max-age=3600",
                                                              "X-Page": str(number)})

    async def book_file(request):
        pid = _number(request.path_params["pid"], "passage id")
        path = await blocking(lambda: library.book_file(pid))
        kind = words.file_kind(str(path))
        if kind == "pdf":
            return FileResponse(path, media_type="application/pdf", content_disposition_type="inline",
                                filename=path.name)
        # a book's own HTML (or anything else) never opens as a page of this server: it is downloaded
        return secured(FileResponse(path, media_type=words.MEDIA.get(kind, "application/octet-stream"),
                                    content_disposition_type="attachment", filename=path.name))

    async def upload(request):
        if library.ingest_root is None:
            raise kit.HTTPError(403, "uploading is off: start the server with --allow-ingest FOLDER",
                                "forbidden", 2)
        # the name reduced to a safe set and length; the file written beside it, then linked to the name
        # exclusively (a second upload of one name never replaces the first); removed if not ingested
        name = paths.safe_upload_name(request.query_params.get("name") or "", UPLOAD_SUFFIXES)
        if (library.ingest_root / name).exists():
            raise UsageError(f"{name} is already in the upload folder: rename the file to add it again")
        handle, partial = tempfile.mkstemp(prefix=".upload-", dir=library.ingest_root)
        size = 0
        try:
            with os.fdopen(handle, "wb") as out:
                async for part in request.stream():
                    size += len(part)
                    if size > MAX_UPLOAD:
                        raise kit.HTTPError(413, f"the file is larger than {MAX_UPLOAD >> 20} MB", "request_too_large",
                                            None)
                    out.write(part)
            if not size:
                raise UsageError("the upload is empty")
            target = paths.create_exclusive(library.ingest_root, name, Path(partial))
        finally:
            if os.path.exists(partial):
                os.unlink(partial)
        try:
            report = await blocking(lambda: library.ingest(str(target)))
        except BaseException:
            target.unlink(missing_ok=True)
            raise
        if any(r.get("status") == "failed" for r in report):  # not in the corpus: the file goes too
            target.unlink(missing_ok=True)
        return JSONResponse(report)

    return [
        Route(path, guarded(page_file), methods=["GET"]) for path in FILES
    ] + [
        Route("/web/key", guarded(key_form), methods=["POST"]),
        Route("/web/api/session", guarded(session), methods=["GET"]),
        Route("/web/api/ask", guarded(ask), methods=["POST"]),
        Route("/web/api/summaries", guarded(summary_new), methods=["POST"]),
        Route("/web/api/summaries/{topic}", guarded(summary_show), methods=["GET"]),
        Route("/web/api/conversations", guarded(conversations), methods=["GET"]),
        Route("/web/api/conversations/{cid}", guarded(conversation), methods=["GET"]),
        Route("/web/api/conversations/{cid}/rename", guarded(rename), methods=["POST"]),
        Route("/web/api/conversations/{cid}/delete", guarded(delete), methods=["POST"]),
        Route("/web/api/search", guarded(search), methods=["GET"]),
        Route("/web/api/passages/{pid}", guarded(passage), methods=["GET"]),
        Route("/web/api/passages/{pid}/section", guarded(section), methods=["GET"]),
        Route("/web/api/passages/{pid}/page.png", guarded(page_png), methods=["GET"]),
        Route("/web/api/passages/{pid}/file", reader_errors(kit.endpoint(book_file)), methods=["GET"]),
        Route("/web/api/upload", guarded(upload), methods=["POST"]),
    ]
