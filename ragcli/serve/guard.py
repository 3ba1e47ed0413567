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
  case-insensitive), the key compared in constant time and never logged. Refused: 401. Or the page's
  session cookie: a random token the server made when the key was given to its form (Sessions), never
  derived from the key, expiring after SESSION_SECONDS and forgotten when the server stops. Browsers do
  not keep cookies apart by port, so any program serving HTTP on this machine can receive the cookie:
  what it gets is a token that expires and dies with the server, not a value that opens the API for as
  long as the key is unchanged.
- Wrong keys (a Bearer header or the page's form): each logged with the client's address (never the key
  given); more than MAX_FAILURES from one address within FAILURE_WINDOW seconds and that address gets
  429 until the window has passed, before its key is even compared.
- Every refusal closes the connection (`Connection: close`): a client refused does not keep the
  connection to send a slow body on it. Every response, refused or not, a 404 or a file, carries the
  security headers (SECURITY_HEADERS: a Content-Security-Policy that allows only this server's own
  script, style and requests).
"""
from __future__ import annotations

import hmac
import ipaddress
import secrets
import sys
import time
from collections import OrderedDict, deque
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


CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'none'; frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS = ((b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"))
COOKIE = "ragcli_session"  # the page's cookie (cookie_name adds the port; serve/web.py sets it)
SESSION_SECONDS = 12 * 3600  # a page's session lasts a working day; then the key is asked for again
MAX_SESSIONS = 1000  # the oldest is forgotten beyond this many
MAX_FAILURES = 10  # wrong keys from one address within FAILURE_WINDOW before it gets 429
FAILURE_WINDOW = 60.0


def error(status: int, message: str, kind: str, headers: Optional[dict] = None):
    """A refusal: the JSON error shape, and the connection closed after it."""
    from starlette.responses import JSONResponse

    return JSONResponse({"error": {"message": message, "type": kind, "code": None}}, status_code=status,
                        headers={**(headers or {}), "Connection": "close"})


def log(line: str) -> None:
    print(f"ragcli serve: {line}", file=sys.stderr, flush=True)


def cookie_name(port: Optional[int]) -> str:
    """The page's cookie, named after the port: two ragcli servers on one machine keep their own."""
    return f"{COOKIE}_{port}" if port else COOKIE


class Sessions:
    """The page's sessions: random tokens (secrets.token_urlsafe, 256 bits) made by the server, each
    valid SESSION_SECONDS, held in memory only (a restart drops them all)."""

    def __init__(self, seconds: float = SESSION_SECONDS, clock=time.monotonic):
        self.seconds, self.clock = seconds, clock
        self._tokens: OrderedDict[str, float] = OrderedDict()  # token -> when it expires

    def new(self) -> str:
        token = secrets.token_urlsafe(32)
        self._tokens[token] = self.clock() + self.seconds
        while len(self._tokens) > MAX_SESSIONS:
            self._tokens.popitem(last=False)
        return token

    def valid(self, token: str) -> bool:
        if not token:
            return False
        now = self.clock()
        found = False
        for known, until in list(self._tokens.items()):  # constant time in the token: every one compared
            if until <= now:
                del self._tokens[known]
            elif hmac.compare_digest(known.encode("latin-1"), token.encode("latin-1", "replace")):
                found = True
        return found


class Attempts:
    """Wrong keys per client address, for the rate limit (MAX_FAILURES within FAILURE_WINDOW)."""

    def __init__(self, most: int = MAX_FAILURES, window: float = FAILURE_WINDOW, clock=time.monotonic):
        self.most, self.window, self.clock = most, window, clock
        self._failed: dict[str, deque] = {}

    def _recent(self, client: str) -> deque:
        times = self._failed.setdefault(client, deque())
        while times and times[0] <= self.clock() - self.window:
            times.popleft()
        return times

    def locked(self, client: str) -> Optional[int]:
        """Seconds until `client` may try again, or None."""
        times = self._recent(client)
        if len(times) < self.most:
            if not times:
                self._failed.pop(client, None)
            return None
        return max(1, int(times[0] + self.window - self.clock()) + 1)

    def failed(self, client: str, where: str) -> None:
        times = self._recent(client)
        times.append(self.clock())
        log(f"wrong API key from {client} ({where}; {len(times)} within {self.window:.0f} s)")
        if len(self._failed) > 10_000:  # many addresses: forget those with nothing recent
            for other in [c for c, t in self._failed.items() if not t]:
                del self._failed[other]

    def refusal(self, client: str):
        wait = self.locked(client)
        if wait is None:
            return None
        return error(429, f"too many wrong API keys from this address: try again in {wait} s", "rate_limited",
                     {"Retry-After": str(wait)})


def client_of(scope) -> str:
    client = scope.get("client") or ("unknown", 0)
    return str(client[0])


class Guard:
    """ASGI middleware applying the rules above to every HTTP request."""

    def __init__(self, app, hosts: Optional[set[str]], api_key: Optional[str] = None,
                 sessions: Optional[Sessions] = None, cookie: str = COOKIE, attempts: Optional[Attempts] = None,
                 public: Iterable[str] = (), binary_posts: Iterable[str] = ()):
        """`sessions`: the page's session tokens (its cookie `cookie` holds one); `attempts`: the wrong
        keys counted per address; `public`: the paths served without the key (the page's shell and its
        key form)."""
        self.app = app
        self.hosts = hosts
        self._key = api_key.encode("utf-8") if api_key else None
        self.sessions = sessions
        self.cookie = cookie
        self.attempts = attempts if attempts is not None else Attempts()
        self.public = frozenset(public)
        self.binary_posts = frozenset(binary_posts)  # paths that take a raw file (application/octet-stream)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def secured(message):
            if message["type"] == "http.response.start":
                have = {name.lower() for name, _ in message.get("headers") or []}
                extra = [(name, value) for name, value in SECURITY_HEADERS if name not in have]
                if extra:
                    message = {**message, "headers": [*(message.get("headers") or []), *extra]}
            await send(message)

        refusal = self.check(scope)
        if refusal is not None:
            await refusal(scope, receive, secured)
            return
        await self.app(scope, receive, secured)

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
            authorization = headers.get(b"authorization")
            client = client_of(scope)
            if authorization is not None:
                locked = self.attempts.refusal(client)
                if locked is not None:
                    return locked
            scheme, _, given = (authorization or b"").strip().partition(b" ")
            bearer = scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self._key)
            session = self.sessions is not None and self.sessions.valid(page_cookie(headers, self.cookie))
            if not bearer and not session:
                if authorization is not None:
                    self.attempts.failed(client, f"{scope.get('method')} {scope.get('path')}")
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


def page_cookie(headers: dict, name: str = COOKIE) -> str:
    """The page's cookie `name` from raw ASGI headers (b"cookie" -> value), "" when absent."""
    raw = headers.get(b"cookie", b"").decode("latin-1")
    for part in raw.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return ""
