"""`ragcli models pull`: a GGUF file (models/catalogue.py: the catalogue and the names a pull takes) fetched
from the Hugging Face Hub (or the host a URL names; models/transfer.py: the bytes) into the Hugging Face
cache, where `ragcli models`, llama.cpp tools and other programs already look
(`models--ORG--NAME/blobs/<sha256>` with `snapshots/<commit>/<file>` linking to it).

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
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ragcli.errors import DownloadError, NotFoundError, UsageError
from ragcli.models.catalogue import SHA256, Pulled, Target, _token, endpoint, safe_name
from ragcli.models.transfer import (HEAD_TIMEOUT, UNKNOWN_SIZE_MOST, Progress, _download, _follow, _httpx,
                                    _network_errors, _remove)

MIN_RATE = 100_000  # bytes/s: the total time limit is 120 s + size / MIN_RATE (RAGCLI_PULL_TIMEOUT overrides)
COMMIT = re.compile(r"[0-9a-f]{40}")



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


def hub_cache() -> Path:
    """The Hugging Face cache (HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub), as
    models/discovery reads it."""
    from ragcli.models.discovery import hf_dirs

    return hf_dirs()[0]


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "on", "yes", "true")


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
