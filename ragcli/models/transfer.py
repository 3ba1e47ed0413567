"""The bytes of a file pulled by `ragcli models pull` (models/download.py), over httpx: a server is not
trusted, so the body is bounded by the expected size (more is cut off and the file removed), a server that
ignores `Range` starts the file again, retries are bounded (MAX_ATTEMPTS without progress) as is the
whole pull (its deadline), and redirects are followed only to http(s) (https, or http on loopback), at
most MAX_REDIRECTS.
"""
from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path
from typing import Callable, Optional
from urllib.parse import urljoin, urlparse

from ragcli.errors import DownloadError, Interrupted, NotFoundError
from ragcli.models.catalogue import Pulled, _token, allowed_url


DISK_MARGIN = 100 * 2**20  # free space kept beyond the file itself
HEAD_TIMEOUT = 10.0  # seconds for the metadata request
READ_TIMEOUT = 30.0  # seconds without a byte from the server before a transfer counts as cut
MAX_ATTEMPTS = 5  # transfers in a row that add no byte to the file before the pull gives up
MAX_REDIRECTS = 5
UNKNOWN_SIZE_MOST = 64 * 2**30  # bytes taken from a URL whose server gives no size
# Bytes http_get reads before writing: what an interruption can lose, and how often progress moves.
# huggingface_hub's default (10 MB) would leave a small file's partial download empty.
CHUNK = 64 * 1024

Progress = Callable[[int, Optional[int]], None]  # (bytes on disk, total bytes or None)


def _network_errors() -> tuple:
    """What a cut or refused connection raises: huggingface_hub 2.x uses httpx2, 1.x httpx."""
    return (_httpx().TransportError, OSError)


def _httpx():
    try:
        import httpx2 as httpx
    except ImportError:
        import httpx
    return httpx


def _remove(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        shutil.rmtree(path, ignore_errors=True)


def _follow(client, method: str, url: str, headers: dict, stream: bool = False, timeout: Optional[float] = None):
    """A request following at most MAX_REDIRECTS redirects, each to an allowed http(s) URL (https, or
    http on loopback); the Authorization header is dropped on the way to another host. Returns
    (response, final url); a streamed response must be closed by the caller."""
    here = url
    for _ in range(MAX_REDIRECTS + 1):
        extra = {} if timeout is None else {"timeout": _httpx().Timeout(timeout, connect=min(timeout, HEAD_TIMEOUT))}
        request = client.build_request(method, here, headers=headers, **extra)
        response = client.send(request, stream=stream)
        if response.status_code not in (301, 302, 303, 307, 308):
            return response, here
        location = response.headers.get("location", "")
        response.close()
        there = urljoin(here, location)
        if not allowed_url(there):
            raise DownloadError(f"{urlparse(here).netloc} redirected the download to {there[:200]!r}, which is not "
                                f"an https URL (or http on loopback): refused, nothing downloaded")
        if urlparse(there).netloc != urlparse(here).netloc:
            headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
        here = there
    raise DownloadError(f"more than {MAX_REDIRECTS} redirects from {urlparse(url).netloc}: refused, nothing downloaded")


def _download(url: str, size: Optional[int], partial: Path, result: Pulled, on_progress: Optional[Progress],
              deadline: float, ep: str) -> None:
    """The bytes of the file into `partial`, resuming what is there: at most `size` bytes, at most
    MAX_ATTEMPTS transfers in a row that add nothing, and nothing after `deadline` (time.monotonic)."""
    if os.path.islink(partial):
        _remove(partial)
    have = partial.stat().st_size if partial.exists() else 0
    if size is not None and have > size:  # not a prefix of this file: start again
        _remove(partial)
        have = 0
    need = (size or 0) - have
    free = shutil.disk_usage(partial.parent).free
    if size is not None and free < need + DISK_MARGIN:
        raise DownloadError(f"not enough free disk space for {result.file}: it needs {need / 1e9:.2f} GB more, "
                            f"{free / 1e9:.2f} GB are free in {partial.parent}; nothing downloaded")
    result.resumed_from = have
    most = size if size is not None else UNKNOWN_SIZE_MOST
    from huggingface_hub.utils import build_hf_headers

    headers = dict(build_hf_headers(token=_token(ep)))
    headers["Accept-Encoding"] = "identity"
    httpx = _httpx()
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(partial, flags, 0o644)
    still, why = 0, ""
    try:
        with os.fdopen(fd, "ab") as out, httpx.Client(timeout=httpx.Timeout(READ_TIMEOUT, connect=HEAD_TIMEOUT),
                                                      follow_redirects=False) as client:
            while True:
                have = out.tell()
                if size is not None and have == size:
                    break
                if still >= MAX_ATTEMPTS or time.monotonic() > deadline:
                    limit = "its time limit" if time.monotonic() > deadline else f"{MAX_ATTEMPTS} tries in a row"
                    raise DownloadError(f"the download stopped at {_size(have)} of {_size(size)} after {limit} "
                                        f"({why}): run the same `ragcli models pull` again to resume it")
                before = have
                try:
                    done, why = _transfer(client, url, headers, out, have, size, most, deadline, on_progress)
                except _network_errors() as exc:
                    done, why = False, f"{type(exc).__name__}: the connection was cut"
                out.flush()
                if done:
                    break
                still = still + 1 if out.tell() <= before else 0
    except KeyboardInterrupt:
        done = partial.stat().st_size if partial.exists() else 0
        raise Interrupted(f"download interrupted at {_size(done)} of {_size(size)}: run the same "
                          f"`ragcli models pull` again to resume it") from None
    except (DownloadError, NotFoundError):
        if partial.exists() and partial.stat().st_size == 0:
            _remove(partial)  # nothing worth resuming
        raise
    finally:
        result.downloaded = max(0, (partial.stat().st_size if partial.exists() else 0) - result.resumed_from)


def _restart(out) -> None:
    """The partial file emptied: what follows is written from its first byte."""
    out.flush()
    out.seek(0)
    out.truncate()


def _transfer(client, url: str, headers: dict, out, have: int, size: Optional[int], most: int, deadline: float,
              on_progress: Optional[Progress]) -> tuple[bool, str]:
    """One GET into `out` from byte `have`: (the file is complete, why not)."""
    asked = dict(headers, **({"Range": f"bytes={have}-"} if have else {}))
    left = max(0.5, min(READ_TIMEOUT, deadline - time.monotonic()))  # no read outlasts the pull's limit
    response, _ = _follow(client, "GET", url, asked, stream=True, timeout=left)
    try:
        status = response.status_code
        if status == 404:
            raise NotFoundError(f"no file at {urlparse(url).netloc}{urlparse(url).path} (HTTP 404); "
                                f"nothing downloaded")
        if status in (401, 403):
            raise DownloadError(f"{urlparse(url).netloc} refused the download (HTTP {status}): a gated or private "
                                f"file needs HF_TOKEN; nothing downloaded")
        if status == 416:  # the part on disk is not a prefix the server knows: start again
            _restart(out)
            return False, "the server refused the range asked"
        if status >= 400:
            return False, f"HTTP {status}"
        if status == 200 and have:  # Range ignored: the whole file comes again
            _restart(out)
            have = 0
        elif status == 206:
            first = re.match(r"bytes (\d+)-", response.headers.get("content-range", ""))
            if not first or int(first.group(1)) != have:
                _restart(out)
                return False, "the server answered another range than the one asked"
        elif status != 200:
            return False, f"HTTP {status}"
        if on_progress:
            on_progress(have, size)
        got = have
        for block in response.iter_raw(CHUNK):
            if got + len(block) > most:
                _restart(out)
                raise DownloadError(f"{urlparse(url).netloc} sent more than the {_size(most)} the file has: cut "
                                    f"off, the partial file removed (a wrong size or a body without end)")
            out.write(block)
            got += len(block)
            if on_progress:
                on_progress(got, size)
            if time.monotonic() > deadline:
                return False, "the time limit passed mid-transfer"
        out.flush()
        if size is None or got == size:
            return True, ""
        return False, f"the server sent {_size(got - have)} and closed, {_size(size - got)} missing"
    finally:
        response.close()


def _size(n: Optional[int]) -> str:
    if n is None:
        return "an unknown size"
    return f"{n / 1e9:.2f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n} bytes"
