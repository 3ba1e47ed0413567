"""The connection layer under `ragcli serve`: uvicorn's HTTP protocol with deadlines for headers and
bodies and a limit on open connections, so a slow or greedy client cannot hold the server.
"""
from __future__ import annotations

import json

from ragcli.serve import guard
from ragcli.serve.exchange import error_body


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
