"""`ragcli models pull`: the catalogue (models/catalog.toml, data) and a GGUF file fetched from the
Hugging Face Hub (or the host a URL names) into the Hugging Face cache, where `ragcli models`, llama.cpp
tools and other programs already look (`models--ORG--NAME/blobs/<sha256>` with
`snapshots/<commit>/<file>` linking to it).

huggingface_hub does the Hub's metadata (a HEAD on `/{repo}/resolve/{revision}/{file}`: X-Repo-Commit,
X-Linked-Etag = the sha256 of an LFS file, X-Linked-Size) and lists a repository's files. The transfer
and the cache's pointers are ragcli's own, because a mirror (HF_ENDPOINT) or anything answering in its
place is not trusted (issue 44):
- no name a server sends (ETag, commit, size) touches a path before it is checked: the blob is named by
  the sha256 ragcli expects (64 hex digits), the snapshot folder by a commit of 40 hex digits, and the
  repository, revision and file names by a safe set of characters (no `..`, no leading `/`);
- the sha256 of the file is computed every time it is taken into use, found in the cache or not;
- the body is bounded by the expected size (a server that sends more is cut off and the file removed);
  a server that ignores `Range` starts the file again; retries are bounded (MAX_ATTEMPTS without
  progress) and the pull has a total time limit (pull_limit);
- redirects are followed only to http(s) (https, or http on loopback), at most MAX_REDIRECTS;
- a URL is downloaded from its own host: https anywhere, plain http only on loopback; the Hub's token
  is sent to the Hub's endpoint only.
An interrupted transfer is kept as `blobs/<sha256>.incomplete` and the next pull resumes it; a half file
is never under `snapshots/`, so neither `models` nor `ask` can take it for a model.
"""
from __future__ import annotations

import hashlib
import ipaddress
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional
from urllib.parse import urljoin, urlparse

from ragcli.errors import DownloadError, Interrupted, NotFoundError, UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

DEFAULT_ENDPOINT = "https://huggingface.co"
SHA256 = re.compile(r"[0-9a-f]{64}")
DISK_MARGIN = 100 * 2**20  # free space kept beyond the file itself
HEAD_TIMEOUT = 10.0  # seconds for the metadata request
READ_TIMEOUT = 30.0  # seconds without a byte from the server before a transfer counts as cut
MAX_ATTEMPTS = 5  # transfers in a row that add no byte to the file before the pull gives up
MAX_REDIRECTS = 5
MIN_RATE = 100_000  # bytes/s: the total time limit is 120 s + size / MIN_RATE (RAGCLI_PULL_TIMEOUT overrides)
UNKNOWN_SIZE_MOST = 64 * 2**30  # bytes taken from a URL whose server gives no size
NAME_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,127}")  # one part of a repository, revision or file name
COMMIT = re.compile(r"[0-9a-f]{40}")
# Bytes http_get reads before writing: what an interruption can lose, and how often progress moves.
# huggingface_hub's default (10 MB) would leave a small file's partial download empty.
CHUNK = 64 * 1024

Progress = Callable[[int, Optional[int]], None]  # (bytes on disk, total bytes or None)


# ------------------------------------------------------------------------------ the catalogue

@dataclass
class Entry:
    name: str
    title: str
    repo: str
    file: str
    revision: str
    size_gb: float
    memory_gb: float
    licence: str
    measured: str
    sha256: Optional[str] = None
    sha256_source: Optional[str] = None
    fits: Optional[bool] = None  # set by `entries(hw)`: memory_gb within this machine's RAM


def catalog_path() -> Path:
    """RAGCLI_CATALOG, else the catalogue shipped in the package."""
    if os.environ.get("RAGCLI_CATALOG"):
        return Path(os.environ["RAGCLI_CATALOG"]).expanduser()
    return Path(__file__).with_name("catalog.toml")


def entries(hw=None) -> list[Entry]:
    """The catalogue, smallest first; with `hw` (models/hardware.Hardware), each marked fits or not."""
    path = catalog_path()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"cannot read the model catalogue {path}: {exc}") from exc
    out = []
    for i, row in enumerate(data.get("model", [])):
        try:
            entry = Entry(**{k: v for k, v in row.items()})
        except TypeError as exc:
            raise UsageError(f"model {i + 1} of the catalogue {path}: {exc}") from exc
        if entry.sha256 is not None and not SHA256.fullmatch(entry.sha256):
            raise UsageError(f"model {entry.name} of the catalogue {path}: sha256 must be 64 lower-case hex digits")
        if hw is not None:
            entry.fits = entry.memory_gb * 1e9 <= hw.memory_total
        out.append(entry)
    return sorted(out, key=lambda e: e.size_gb)


def largest_fit(found: list[Entry]) -> Optional[Entry]:
    fitting = [e for e in found if e.fits]
    return fitting[-1] if fitting else None


# ------------------------------------------------------------------------------ what to pull

@dataclass
class Target:
    repo: str
    file: Optional[str]  # None: the one GGUF chat file of the repository (found when pulled)
    revision: str = "main"
    sha256: Optional[str] = None  # the catalogue's or --sha256; None: the Hub's (X-Linked-Etag)
    name: Optional[str] = None  # the catalogue entry's
    endpoint: Optional[str] = None  # a URL's scheme://host (None: HF_ENDPOINT or the Hub)
    url: Optional[str] = None  # a URL that is not a Hub file URL: fetched as it is
    sha256_source: str = "catalogue"  # whose sha256 `sha256` is: "catalogue" or "given" (--sha256)


def endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def _loopback(host: str) -> bool:
    host = (host or "").strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def allowed_url(url: str) -> bool:
    """https anywhere, plain http only on loopback (a download over the network is never plain)."""
    parts = urlparse(url)
    return bool(parts.hostname) and (parts.scheme == "https" or parts.scheme == "http" and _loopback(parts.hostname))


def safe_name(name: str, what: str, parts: int = 0) -> str:
    """`name` as it may appear in a cache path: '/'-separated parts of NAME_PART (no `..`, no empty
    or hidden part, no leading `/`); `parts`: the exact number of them (0: any). UsageError otherwise."""
    pieces = name.split("/")
    ok = all(NAME_PART.fullmatch(p) and ".." not in p for p in pieces) and len(name) <= 512
    if not ok or parts and len(pieces) != parts:
        raise UsageError(f"{name!r} is not a valid {what} name (letters, digits, `.`, `_`, `-`, `+`; "
                         f"no `..`): nothing downloaded")
    return name


def check_sha256(sha: Optional[str]) -> Optional[str]:
    if sha is None:
        return None
    sha = sha.strip().lower()
    if not SHA256.fullmatch(sha):
        raise UsageError(f"--sha256 must be 64 hexadecimal digits, not {sha!r}")
    return sha


def target(spec: str, sha256: Optional[str] = None) -> Target:
    """A catalogue name, REPO (org/name), REPO/FILE.gguf, a Hub file URL
    https://HOST/ORG/NAME/resolve/REVISION/FILE.gguf (fetched from HOST), or any other https URL of a
    GGUF file. `sha256` (--sha256): the file's expected sha256."""
    spec = spec.strip()
    given = check_sha256(sha256)
    named = {e.name: e for e in entries()}
    if spec in named:
        e = named[spec]
        if given and e.sha256 and given != e.sha256:
            raise UsageError(f"--sha256 {given} is not the catalogue's sha256 of {e.name} ({e.sha256})")
        return Target(e.repo, e.file, e.revision, e.sha256 or given, e.name,
                      sha256_source="catalogue" if e.sha256 else "given")
    if "://" in spec:
        parts = urlparse(spec)
        if not allowed_url(spec):
            raise UsageError(f"{spec}: only https URLs are downloaded (plain http only from loopback); "
                             f"nothing downloaded")
        origin = f"{parts.scheme}://{parts.netloc}"
        path = [p for p in parts.path.split("/") if p]
        if len(path) >= 5 and path[2] in ("resolve", "blob"):
            repo = safe_name("/".join(path[:2]), "repository", 2)
            return Target(repo, safe_name("/".join(path[4:]), "file"), safe_name(path[3], "revision"), given,
                          endpoint=origin, sha256_source="given")
        if not path:
            raise UsageError(f"{spec} names no file: nothing downloaded")
        return Target(safe_name(parts.hostname, "host"), safe_name(path[-1], "file"), "url", given,
                      endpoint=origin, url=spec, sha256_source="given")
    parts = spec.split("/")
    if len(parts) == 2 and all(parts):
        return Target(safe_name(spec, "repository", 2), None, sha256=given, sha256_source="given")
    if len(parts) >= 3 and all(parts) and spec.lower().endswith(".gguf"):
        return Target(safe_name("/".join(parts[:2]), "repository", 2), safe_name("/".join(parts[2:]), "file"),
                      sha256=given, sha256_source="given")
    if ".." in parts or spec.startswith("/"):
        raise UsageError(f"{spec!r} is not a model to pull: a path climbing out (`..`, `/`) names no repository")
    raise NotFoundError(f"{spec!r} is no catalogue model ({', '.join(named)}), repository (ORG/NAME), "
                        f"REPO/FILE.gguf or URL: `ragcli models pull` lists the catalogue")


def _pick_file(t: Target, ep: str) -> str:
    """The GGUF file of a repository named without one: the only one, else the only Q4_K_M one."""
    from huggingface_hub import HfApi

    try:
        files = [f for f in HfApi(endpoint=ep, token=_token(ep)).list_repo_files(t.repo, revision=t.revision)
                 if f.lower().endswith(".gguf")]
    except Exception as exc:  # noqa: BLE001 - turned into the project's errors
        raise _hub_error(exc, t, ep) from exc
    files = [f for f in files if isinstance(f, str)]
    if len(files) == 1:
        return safe_name(files[0], "file")
    q4 = [f for f in files if "q4_k_m" in f.lower() and not re.search(r"-\d{5}-of-\d{5}", f)]
    if len(q4) == 1:
        return safe_name(q4[0], "file")
    if not files:
        raise NotFoundError(f"{t.repo} has no GGUF file at revision {t.revision}")
    raise UsageError(f"{t.repo} has {len(files)} GGUF files; name one: ragcli models pull {t.repo}/FILE "
                     f"(e.g. {files[0]})")


# ------------------------------------------------------------------------------ the download

@dataclass
class Pulled:
    path: str  # the snapshot file in the Hugging Face cache (what `ask --model` takes)
    repo: str
    file: str
    revision: str
    commit: str
    sha256: str
    size: int
    checked_against: str  # "catalogue", "hub", "given" (--sha256) or "computed" (nothing to check against)
    name: Optional[str] = None
    resumed_from: int = 0  # bytes already there from an interrupted pull
    downloaded: int = 0  # bytes transferred by this pull
    already: bool = False  # the file was in the cache: nothing transferred
    seconds: float = 0.0
    source: str = ""  # the host the bytes came from
    notes: list = field(default_factory=list)


def hub_cache() -> Path:
    """The Hugging Face cache (HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub), as
    models/discovery reads it."""
    from ragcli.models.discovery import hf_dirs

    return hf_dirs()[0]


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "on", "yes", "true")


def _token(ep: str):
    """The Hub's token goes to the Hub's endpoint only (False: none, for any other host)."""
    return None if urlparse(ep).netloc == urlparse(endpoint()).netloc else False


def _hub_error(exc: Exception, t: Target, ep: str) -> Exception:
    """huggingface_hub's and the network's errors as the project's (docs/exit-codes.md)."""
    from huggingface_hub import errors as hub

    what = f"{t.repo}/{t.file}" if t.file else t.repo
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(exc, hub.OfflineModeIsEnabled):
        return DownloadError("offline (HF_HUB_OFFLINE is set): nothing downloaded")
    if isinstance(exc, hub.GatedRepoError):
        return DownloadError(f"{t.repo} is gated: accept its licence on the Hub and set HF_TOKEN; nothing downloaded")
    if isinstance(exc, hub.RepositoryNotFoundError):
        return NotFoundError(f"no repository {t.repo} at {ep} (HTTP {status}); nothing downloaded")
    if isinstance(exc, hub.RevisionNotFoundError):
        return NotFoundError(f"{t.repo} has no revision {t.revision} (HTTP {status}); nothing downloaded")
    if isinstance(exc, hub.EntryNotFoundError) or status == 404:
        return NotFoundError(f"no file {what} at revision {t.revision} on {ep} (HTTP 404); nothing downloaded")
    if isinstance(exc, hub.HfHubHTTPError):
        return DownloadError(f"{ep} answered HTTP {status} for {what}; nothing downloaded")
    if isinstance(exc, hub.FileMetadataError):
        return DownloadError(f"{ep} does not answer as the Hugging Face Hub does ({exc}); nothing downloaded")
    if isinstance(exc, UnicodeError):
        return DownloadError(f"{ep} answered with headers that are not text; nothing downloaded")
    reason = str(exc).split("\n")[0] or type(exc).__name__
    return DownloadError(f"cannot reach {ep}: {reason}; nothing downloaded")


def _network_errors() -> tuple:
    """What a cut or refused connection raises: huggingface_hub 2.x uses httpx2, 1.x httpx."""
    return (_httpx().TransportError, OSError)


def _httpx():
    try:
        import httpx2 as httpx
    except ImportError:
        import httpx
    return httpx


def sha256_of(path: Path, chunk: int = 8 * 2**20) -> str:
    h = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def pull_limit(size: Optional[int]) -> float:
    """Seconds a whole pull may take: RAGCLI_PULL_TIMEOUT, else 120 s plus the size at MIN_RATE."""
    env = os.environ.get("RAGCLI_PULL_TIMEOUT", "").strip()
    if env:
        try:
            return max(1.0, float(env))
        except ValueError:
            raise UsageError(f"RAGCLI_PULL_TIMEOUT must be a number of seconds, not {env!r}") from None
    return 120.0 + (size or UNKNOWN_SIZE_MOST) / MIN_RATE


@dataclass
class _Meta:
    commit: str
    sha256: Optional[str]  # what the server says the file's sha256 is (None: it does not say)
    size: Optional[int]


def _metadata(t: Target, ep: str, url: str) -> _Meta:
    """The file's commit, sha256 and size from the server, each checked before it is used."""
    from huggingface_hub import get_hf_file_metadata

    if t.url is not None:  # not the Hub: a HEAD for the size (not every server answers it)
        size = None
        try:
            with _httpx().Client(timeout=HEAD_TIMEOUT, follow_redirects=False) as client:
                response, _ = _follow(client, "HEAD", url, {})
                if response.status_code == 404:
                    raise NotFoundError(f"no file at {url} (HTTP 404); nothing downloaded")
                if response.status_code < 400:
                    size = _int(response.headers.get("content-length"))
        except _network_errors() as exc:
            raise DownloadError(f"cannot reach {ep}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}; "
                                f"nothing downloaded") from exc
        return _Meta("", None, size)
    try:
        meta = get_hf_file_metadata(url, endpoint=ep, timeout=HEAD_TIMEOUT, token=_token(ep))
    except Exception as exc:  # noqa: BLE001 - every failure of the request becomes one line
        raise _hub_error(exc, t, ep) from exc
    commit = (meta.commit_hash or "").strip().lower()
    if not meta.commit_hash or not meta.etag:
        raise DownloadError(f"{ep} does not answer as the Hugging Face Hub does (no X-Repo-Commit or ETag); "
                            f"nothing downloaded")
    if not COMMIT.fullmatch(commit):
        raise DownloadError(f"{ep} names the commit {meta.commit_hash[:80]!r}, not 40 hexadecimal digits: "
                            f"not a Hub answer, nothing downloaded")
    etag = (meta.etag or "").strip().lower()
    size = meta.size if isinstance(meta.size, int) and meta.size >= 0 else None
    return _Meta(commit, etag if SHA256.fullmatch(etag) else None, size)


def _int(text) -> Optional[int]:
    return int(text) if isinstance(text, str) and text.strip().isascii() and text.strip().isdigit() else None


def pull(t: Target, on_progress: Optional[Progress] = None, cache_dir: Optional[Path] = None) -> Pulled:
    """Download `t` into the Hugging Face cache (resuming a partial file), check its sha256, and link
    it into the cache's snapshot. Raises UsageError (a URL or name refused), NotFoundError (no such
    repository, revision or file), DownloadError (unreachable, offline, checksum, disk space, a
    server that breaks the rules above), Interrupted (Ctrl-C: the partial file is kept)."""
    ep = (t.endpoint or endpoint()).rstrip("/")
    if _offline():
        raise DownloadError("offline (HF_HUB_OFFLINE is set): nothing downloaded; unset it to pull a model")
    import logging

    from huggingface_hub import hf_hub_url

    # its retry warnings would add lines to ours: every failure is said once, by the error raised
    logging.getLogger("huggingface_hub").setLevel(logging.ERROR)
    cache = Path(cache_dir or hub_cache())
    start = time.perf_counter()
    if t.file is None:
        t.file = _pick_file(t, ep)
    safe_name(t.repo, "repository", 2 if t.url is None else 1)
    safe_name(t.file, "file")
    safe_name(t.revision, "revision")
    url = t.url or hf_hub_url(t.repo, t.file, revision=t.revision, endpoint=ep)
    meta = _metadata(t, ep, url)
    if t.sha256 and meta.sha256 and meta.sha256 != t.sha256:
        whose = "the catalogue says" if t.sha256_source == "catalogue" else "--sha256 says"
        raise DownloadError(f"{ep} serves {t.repo}/{t.file} at {t.revision} with sha256 {meta.sha256}, {whose} "
                            f"{t.sha256}: not downloaded")
    expected = t.sha256 or meta.sha256
    against = t.sha256_source if t.sha256 else ("hub" if meta.sha256 else "computed")
    if expected is None and t.url is None:
        raise DownloadError(f"neither the catalogue nor {ep} gives a sha256 for {t.repo}/{t.file} (not a Git "
                            f"LFS file): it cannot be checked, nothing downloaded (give one with --sha256)")
    storage = cache / ("models--" + "--".join(t.repo.split("/")))
    if not t.url:
        pointer = storage / "snapshots" / meta.commit / t.file
        result = Pulled(str(pointer), t.repo, t.file, t.revision, meta.commit, expected or "", meta.size or 0,
                        against, t.name, source=ep)
        if _in_use(pointer, expected, cache):
            result.already, result.seconds = True, time.perf_counter() - start
            result.size = pointer.stat().st_size
            return result
    else:
        result = Pulled("", t.repo, t.file, t.revision, "", expected or "", meta.size or 0, against, t.name,
                        source=ep)
    blobs = storage / "blobs"
    blobs.mkdir(parents=True, exist_ok=True)
    _inside(blobs, cache)
    name = expected or "url-" + hashlib.sha256(url.encode()).hexdigest()
    blob, partial = blobs / name, blobs / (name + ".incomplete")
    if not (expected and _regular(blob) and sha256_of(blob) == expected):
        _remove(blob)
        _download(url, meta.size, partial, result, on_progress, time.monotonic() + pull_limit(meta.size), ep)
        actual = sha256_of(partial)
        if expected and actual != expected:
            _remove(partial)
            source = {"catalogue": "the catalogue's", "given": "the one given with --sha256"}.get(
                against, f"the one {ep} reported")
            raise DownloadError(f"the downloaded {t.file} has sha256 {actual}, not {source} ({expected}): "
                                f"the file was removed")
        if not expected:
            expected = result.sha256 = actual
            blob = blobs / actual
        os.replace(partial, blob)
    commit = meta.commit or expected[:40]
    result.commit = commit
    pointer = storage / "snapshots" / commit / t.file
    _link(blob, pointer, storage, t.revision if t.url is None else None, commit, cache)
    if not _in_use(pointer, expected, cache):  # checked as it is taken into use
        raise DownloadError(f"{pointer} does not hold the file with sha256 {expected}: not used")
    result.path = str(pointer)
    result.size = pointer.stat().st_size
    result.seconds = time.perf_counter() - start
    return result


def _regular(path: Path) -> bool:
    try:
        import stat

        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _remove(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        shutil.rmtree(path, ignore_errors=True)


def _inside(path: Path, cache: Path) -> None:
    """`path` (its real location) is under the cache: a folder of the cache replaced by a link to
    elsewhere is refused."""
    real, root = os.path.realpath(path), os.path.realpath(cache)
    if not (real == root or real.startswith(root.rstrip(os.sep) + os.sep)):
        raise DownloadError(f"{path} leads outside the cache {cache} (a link): nothing downloaded")


def _in_use(pointer: Path, expected: Optional[str], cache: Path) -> bool:
    """The snapshot file is there, inside the cache, and its sha256 is `expected` (computed now)."""
    if not expected or not pointer.is_file():
        return False
    real = os.path.realpath(pointer)
    root = os.path.realpath(cache)
    if not real.startswith(root.rstrip(os.sep) + os.sep):
        return False
    return sha256_of(Path(real)) == expected


def _link(blob: Path, pointer: Path, storage: Path, revision: Optional[str], commit: str, cache: Path) -> None:
    """snapshots/<commit>/<file> -> ../../blobs/<sha256> (relative, as huggingface_hub links), and
    refs/<revision> = commit for a branch name (what the Hub's own client writes)."""
    pointer.parent.mkdir(parents=True, exist_ok=True)
    _inside(pointer.parent, cache)
    temp = pointer.with_name(f".{pointer.name}.{os.getpid()}.link")
    _remove(temp)
    try:
        os.symlink(os.path.relpath(blob, pointer.parent), temp)
    except OSError:  # no symlinks (some Windows setups): the blob is moved where the pointer is
        os.replace(blob, temp)
    os.replace(temp, pointer)
    if revision and revision != commit and "/" not in revision:
        refs = storage / "refs"
        refs.mkdir(exist_ok=True)
        _inside(refs, cache)
        (refs / revision).write_text(commit)


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
