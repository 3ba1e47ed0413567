"""The OpenAI-compatible surface of `ragcli serve`.

    POST /v1/chat/completions   the last user message is the question (earlier turns: a follow-up);
                                streamed (SSE) or not; the reply carries the sources (serve/chat.py)
    GET  /v1/models             one model, `ragcli`

A client that disconnects stops its generation (the Job raises at the next token); a request still
queued when its client leaves is dropped when its turn comes.
"""
from __future__ import annotations

import asyncio
import time
from typing import Annotated, Callable, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr

from ragcli.conversation import standalone
from ragcli.errors import RagcliError, UsageError
from ragcli.serve import chat
from ragcli.serve.admission import Admission, Ticket
from ragcli.serve.exchange import (Books, Mailbox, endpoint, error_body, error_response, log, read_json,
                                   run_watched, until_disconnected)
from ragcli.serve.jobs import Cancelled, Job
from ragcli.serve.library import Library


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


def routes(library: Library, admission: Admission) -> list:
    """The /v1 routes, each wrapped by `endpoint` (errors as JSON)."""
    from starlette.responses import JSONResponse
    from starlette.routing import Route

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
                                     on_phase=lambda name, **_: put("phase", name), **opts)
                return answer, asked
            return AnswerEvents(ticket, job, work)
        answer = await run_watched(request, ticket, job, lambda: library.ask(question, job=job, prepare=prepare,
                                                                              **opts))
        return JSONResponse(chat.completion(answer, asked))

    return [
        Route("/v1/models", endpoint(models), methods=["GET"]),
        Route("/v1/chat/completions", endpoint(chat_completions), methods=["POST"]),
    ]
