"""What a request must look like before any route sees it: ASGI middleware wrapping the whole app, so
every route is covered, those added later (the web page) too.

Rules (a web page the user visits must not be able to use a local server: DNS rebinding, cross-site
form posts):
- Host: the request's Host header (port aside) must be a name the server is served under: the bound
  address, `localhost` and the loopback addresses when bound to loopback, and every `--allowed-host`.
  Bound to a wildcard address (0.0.0.0, ::) the names are unknown and the Host is not checked: such a
  bind needs an API key, which a foreign page does not have. Refused: 400.
- Origin: a browser names the page that sent a request. Present, it must be this server itself
  (scheme://Host of the request); anything else, `null` included, is refused: 403.
- POST bodies must be declared `Content-Type: application/json` (a form or `text/plain` post, which a
  browser sends cross-site without asking, is refused: 415).
- Authorization (when a key is set): `Bearer KEY`, the scheme in any case (RFC 9110: schemes are
  case-insensitive), the key compared in constant time and never logged. Refused: 401.
"""
from __future__ import annotations

import hmac
import ipaddress
from typing import Iterable, Optional
from urllib.parse import urlsplit

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
WILDCARDS = ("0.0.0.0", "::", "")


def bare_host(host: str) -> str:
    """A host name or address without brackets, lowercased (`[::1]` -> `::1`)."""
    return host.strip().strip("[]").lower().rstrip(".")


def host_of(header: str) -> str:
    """The host of a Host header value (`127.0.0.1:8088`, `[::1]:8088`, `example.org`), bare."""
    header = header.strip()
    if header.startswith("["):
        return bare_host(header[1:header.find("]")] if "]" in header else header)
    if header.count(":") == 1:
        header = header.split(":", 1)[0]
    return bare_host(header)


def allowed_hosts(bound: str, extra: Iterable[str] = ()) -> Optional[set[str]]:
    """The names the server answers to, or None (a wildcard bind: not checked)."""
    host = bare_host(bound)
    if host in WILDCARDS:
        return None
    names = {host} | {bare_host(h) for h in extra}
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if loopback:
        names |= set(LOOPBACK_HOSTS)
    return names


def error(status: int, message: str, kind: str, headers: Optional[dict] = None):
    from starlette.responses import JSONResponse

    return JSONResponse({"error": {"message": message, "type": kind, "code": None}}, status_code=status,
                        headers=headers)


class Guard:
    """ASGI middleware applying the rules above to every HTTP request."""

    def __init__(self, app, hosts: Optional[set[str]], api_key: Optional[str] = None, cookie: Optional[str] = None,
                 public: Iterable[str] = (), binary_posts: Iterable[str] = ()):
        """`cookie`: the value of the page's cookie that stands for the key (serve/web.py); `public`: the
        paths served without the key (the page's shell and its key form)."""
        self.app = app
        self.hosts = hosts
        self._key = api_key.encode("utf-8") if api_key else None
        self._cookie = cookie.encode("ascii") if cookie else None
        self.public = frozenset(public)
        self.binary_posts = frozenset(binary_posts)  # paths that take a raw file (application/octet-stream)

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            refusal = self.check(scope)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def check(self, scope):
        headers: dict[bytes, bytes] = {}
        for name, value in scope.get("headers") or []:
            if name in headers and name in (b"host", b"origin", b"authorization", b"content-type"):
                return error(400, f"the header {name.decode('latin-1')} is given twice", "invalid_request_error")
            headers[name] = value
        host = headers.get(b"host", b"").decode("latin-1")
        if self.hosts is not None and host_of(host) not in self.hosts:
            return error(400, f"the Host header {host!r} is not a name this server is served under (add it "
                              f"with --allowed-host)", "invalid_host")
        origin = headers.get(b"origin")
        if origin is not None:
            parts = urlsplit(origin.decode("latin-1").strip())
            if parts.scheme not in ("http", "https") or parts.netloc.lower() != host.lower():
                return error(403, f"requests from another site are refused (Origin "
                                  f"{origin.decode('latin-1')!r})", "forbidden_origin")
        if self._key is not None and scope.get("path") not in self.public:
            scheme, _, given = headers.get(b"authorization", b"").strip().partition(b" ")
            bearer = scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self._key)
            if not bearer and not (self._cookie is not None
                                   and hmac.compare_digest(page_cookie(headers).encode("latin-1"), self._cookie)):
                return error(401, "missing or wrong API key: send the header `Authorization: Bearer KEY`",
                             "unauthorized", {"WWW-Authenticate": "Bearer"})
        if scope.get("method") == "POST":
            media = headers.get(b"content-type", b"").split(b";", 1)[0].strip().lower()
            binary = media == b"application/octet-stream" and scope.get("path") in self.binary_posts
            if media != b"application/json" and not binary:  # neither is a type a page can post cross-site
                # without the browser asking the server first (CORS preflight, which this server never grants)
                return error(415, "a POST body must be JSON, sent with `Content-Type: application/json`",
                             "unsupported_media_type")
        return None


COOKIE = "ragcli_key"  # the page's cookie (serve/web.py sets it from its key form)


def page_cookie(headers: dict) -> str:
    """The page's cookie from raw ASGI headers (b"cookie" -> value), "" when absent."""
    raw = headers.get(b"cookie", b"").decode("latin-1")
    for part in raw.split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE:
            return value
    return ""
