"""`ragcli serve`: the application and its server (Starlette on uvicorn), its routes by surface:

    /v1/...                           OpenAI-compatible (serve/openai_api.py)
    /search /ask /books /summaries... the CLI's JSON over HTTP (serve/api.py)
    /  and /web/...                   the page (serve/web.py)

Shared by all: JSON bodies and errors (serve/exchange.py), the connection deadlines (serve/transport.py),
Host/Origin/key checks and security headers (serve/guard.py), generation slots (serve/admission.py).

The API key is compared in constant time and never printed or logged.
"""
from __future__ import annotations

import hmac
import ipaddress
from types import SimpleNamespace
from typing import Optional, Sequence

from ragcli.errors import UsageError
from ragcli.serve import api, guard, openai_api
from ragcli.serve.admission import Admission
from ragcli.serve.exchange import (HTTPError, Mailbox, endpoint, error_response, log, not_allowed, not_found,
                                   read_json, until_disconnected)
from ragcli.serve.guard import Guard
from ragcli.serve.library import Library
from ragcli.serve.transport import MAX_HEADERS, protocol_class

# starlette and uvicorn are imported where the app is built and run (about 0.8 s): `serve --mcp` skips them.

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


def listening_socket(bare: str, port: int, shown: str):
    """The server's socket, bound before anything is announced: a port another process holds is a
    one-line refusal (exit 2), not uvicorn's log line after the address was already printed."""
    import socket

    sock = socket.socket(socket.AF_INET6 if ":" in bare else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((bare, port))
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {shown}:{port}: {exc.strerror or exc} (another server may hold "
                         f"the port: choose another with --port)") from None
    return sock


def create_app(library: Library, api_key: Optional[str] = None, parallel: int = 1, waiting: int = 8,
               host: str = "127.0.0.1", allowed: Sequence[str] = (), port: Optional[int] = None):
    """The ASGI application (no socket: `run` serves it), every route behind serve/guard.py's Guard
    (Host, Origin, JSON POSTs, the key) for the names of `host` and `allowed`."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.responses import JSONResponse

    admission = Admission(parallel, waiting)
    routes = openai_api.routes(library, admission) + api.routes(library, admission)
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
    shown = f"[{bare}]" if ":" in bare else bare
    # bound before the app is built: building it starts the page renderer's warm-up import in a thread,
    # and a process that exits on a refused port while that import runs in native code aborts (SIGABRT)
    sock = listening_socket(bare, port, shown)
    try:
        app = create_app(library, api_key, parallel, waiting, host=bare, allowed=allowed, port=port)
    except BaseException:
        sock.close()
        raise
    log(f"http://{shown}:{port}/ (the page), http://{shown}:{port}/v1 (OpenAI-compatible), "
        f"model {library.model_name or 'none (extractive answers)'}, {parallel} at once, {waiting} queued, "
        f"{'API key required' if api_key else 'no API key (loopback only)'}")
    config = uvicorn.Config(app, host=bare, port=port, log_level="warning", access_log=False,
                            timeout_graceful_shutdown=5, timeout_keep_alive=5,
                            h11_max_incomplete_event_size=MAX_HEADERS, http=protocol_class())
    uvicorn.Server(config).run(sockets=[sock])
