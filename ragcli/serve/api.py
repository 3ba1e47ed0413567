"""The CLI's JSON over HTTP (`ragcli serve`): each route gives what the command's `--json` gives.

    POST /search  {query, book?, k?, mode?}                       = `ragcli search --json`
    POST /ask     {question, book?, k?, expand?, rewrite?, feedback?, ...}  = `ragcli ask --json`
    GET  /books                                                   = `ragcli books --json`
    GET  /summaries                                               = `ragcli summary topics --json`
    GET  /summaries/{topic}[?number=N]                            = `ragcli summary show --json`
    GET  /summaries/{topic}/history                               = `ragcli summary list --json`

/ask and /search take a `--parallel` slot (serve/admission.py); the others are reads beside them.
"""
from __future__ import annotations

import re
from typing import Callable, Optional

from pydantic import BaseModel, ConfigDict, StrictBool, StrictInt, StrictStr

from ragcli.errors import UsageError
from ragcli.render.data import answer_data
from ragcli.serve.admission import Admission
from ragcli.serve.exchange import Books, endpoint, read_json, run_watched
from ragcli.serve.jobs import Job
from ragcli.serve.library import Library

# -- one schema per route (pydantic, strict: `"k": "3"` or `"stream": 1` is refused, not coerced) --------------


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



NUMBER = re.compile(r"[0-9]{1,9}")  # a summary number in a query string (ASCII digits, not `²`)


def routes(library: Library, admission: Admission) -> list:
    """The JSON routes, each wrapped by `endpoint` (errors as JSON)."""
    from starlette.responses import JSONResponse
    from starlette.routing import Route

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

    return [
        Route("/search", endpoint(search), methods=["POST"]),
        Route("/ask", endpoint(ask), methods=["POST"]),
        Route("/books", endpoint(books), methods=["GET"]),
        Route("/summaries", endpoint(topics), methods=["GET"]),
        Route("/summaries/{topic}", endpoint(summary_show), methods=["GET"]),
        Route("/summaries/{topic}/history", endpoint(summary_history), methods=["GET"]),
    ]
