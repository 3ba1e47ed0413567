"""`ragcli models pull`: the catalogue (models/catalog.toml, data) and a GGUF file fetched from the
Hugging Face Hub into the Hugging Face cache, where `ragcli models`, llama.cpp tools and other programs
already look (`models--ORG--NAME/blobs/<sha256>` with `snapshots/<commit>/<file>` linking to it).

huggingface_hub does the Hub's part: the file's metadata (a HEAD on `/{repo}/resolve/{revision}/{file}`:
X-Repo-Commit, X-Linked-Etag = the sha256 of an LFS file, X-Linked-Size), the transfer (`http_get`,
which sends `Range` to resume and retries a transfer the network cut), and the cache's pointers
(`hf_hub_download` finds the finished blob and links it into the snapshot). What it does not do
since 2.x, ragcli does: keep an interrupted transfer as `blobs/<etag>.incomplete` so the next pull
resumes it (huggingface_hub writes each attempt to a file of its own and deletes it on failure), refuse
to start without the disk space, and check the sha256 before the file becomes a blob. A half file is
never under `snapshots/`, so neither `models` nor `ask` can take it for a model.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional
from urllib.parse import urlparse

from ragcli.errors import DownloadError, Interrupted, NotFoundError, UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

DEFAULT_ENDPOINT = "https://huggingface.co"
SHA256 = re.compile(r"[0-9a-f]{64}")
DISK_MARGIN = 100 * 2**20  # free space kept beyond the file itself
HEAD_TIMEOUT = 10.0  # seconds for the metadata request
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
    sha256: Optional[str] = None  # the catalogue's; None: the Hub's (X-Linked-Etag)
    name: Optional[str] = None  # the catalogue entry's


def endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def target(spec: str) -> Target:
    """A catalogue name, REPO (org/name), REPO/FILE.gguf, or a URL .../ORG/NAME/resolve/REVISION/FILE."""
    spec = spec.strip()
    named = {e.name: e for e in entries()}
    if spec in named:
        e = named[spec]
        return Target(e.repo, e.file, e.revision, e.sha256, e.name)
    if spec.startswith(("http://", "https://")):
        parts = [p for p in urlparse(spec).path.split("/") if p]
        if len(parts) >= 5 and parts[2] in ("resolve", "blob"):
            return Target("/".join(parts[:2]), "/".join(parts[4:]), parts[3])
        raise UsageError(f"{spec} is not a Hugging Face file URL (https://HOST/ORG/NAME/resolve/REVISION/FILE.gguf)")
    parts = spec.split("/")
    if len(parts) == 2 and all(parts):
        return Target(spec, None)
    if len(parts) >= 3 and all(parts) and spec.lower().endswith(".gguf"):
        return Target("/".join(parts[:2]), "/".join(parts[2:]))
    raise NotFoundError(f"{spec!r} is no catalogue model ({', '.join(named)}), repository (ORG/NAME), "
                        f"REPO/FILE.gguf or URL: `ragcli models pull` lists the catalogue")


def _pick_file(t: Target, ep: str) -> str:
    """The GGUF file of a repository named without one: the only one, else the only Q4_K_M one."""
    from huggingface_hub import HfApi

    try:
        files = [f for f in HfApi(endpoint=ep).list_repo_files(t.repo, revision=t.revision)
                 if f.lower().endswith(".gguf")]
    except Exception as exc:  # noqa: BLE001 - turned into the project's errors
        raise _hub_error(exc, t, ep) from exc
    if len(files) == 1:
        return files[0]
    q4 = [f for f in files if "q4_k_m" in f.lower() and not re.search(r"-\d{5}-of-\d{5}", f)]
    if len(q4) == 1:
        return q4[0]
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
    checked_against: str  # "catalogue" or "hub": whose sha256 the file matched
    name: Optional[str] = None
    resumed_from: int = 0  # bytes already there from an interrupted pull
    downloaded: int = 0  # bytes transferred by this pull
    already: bool = False  # the file was in the cache: nothing transferred
    seconds: float = 0.0
    notes: list = field(default_factory=list)


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
    reason = str(exc).split("\n")[0] or type(exc).__name__
    return DownloadError(f"cannot reach {ep}: {reason}; nothing downloaded")


def _network_errors() -> tuple:
    """What a cut or refused connection raises: huggingface_hub 2.x uses httpx2, 1.x httpx."""
    try:
        import httpx2 as httpx
    except ImportError:
        import httpx
    return (httpx.TransportError, OSError)


def sha256_of(path: Path, chunk: int = 8 * 2**20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def _bar_class(report: Optional[Progress]):
    """A progress class for huggingface_hub's `http_get` (it calls cls(total=, initial=, ...) and
    update(n)) that hands the bytes on disk to `report`."""

    class Bar:
        def __init__(self, total=None, initial=0, **_kwargs):
            self.total, self.n = total, initial
            if report:
                report(self.n, self.total)

        def update(self, n=1):
            self.n += n
            if report:
                report(self.n, self.total)

        def close(self):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    return Bar


def pull(t: Target, on_progress: Optional[Progress] = None, cache_dir: Optional[Path] = None) -> Pulled:
    """Download `t` into the Hugging Face cache (resuming a partial file), check its sha256, and link
    it into the cache's snapshot. Raises NotFoundError (no such repository, revision or file),
    DownloadError (unreachable, offline, checksum, disk space), Interrupted (Ctrl-C: the partial file
    is kept for the next pull)."""
    ep = endpoint()
    if _offline():
        raise DownloadError("offline (HF_HUB_OFFLINE is set): nothing downloaded; unset it to pull a model")
    import logging

    from huggingface_hub import constants, get_hf_file_metadata, hf_hub_url

    constants.DOWNLOAD_CHUNK_SIZE = min(constants.DOWNLOAD_CHUNK_SIZE, CHUNK)
    # its retry warnings would add lines to ours: every failure is said once, by the error raised
    logging.getLogger("huggingface_hub").setLevel(logging.ERROR)
    cache = Path(cache_dir or hub_cache())
    start = time.perf_counter()
    if t.file is None:
        t.file = _pick_file(t, ep)
    url = hf_hub_url(t.repo, t.file, revision=t.revision, endpoint=ep)
    try:
        meta = get_hf_file_metadata(url, endpoint=ep, timeout=HEAD_TIMEOUT)
    except Exception as exc:  # noqa: BLE001 - every failure of the request becomes one line
        raise _hub_error(exc, t, ep) from exc
    if not meta.commit_hash or not meta.etag:
        raise DownloadError(f"{ep} does not answer as the Hugging Face Hub does (no X-Repo-Commit or ETag); "
                            f"nothing downloaded")
    hub_sha = meta.etag if SHA256.fullmatch(meta.etag or "") else None
    expected, against = (t.sha256, "catalogue") if t.sha256 else (hub_sha, "hub")
    if expected is None:
        raise DownloadError(f"neither the catalogue nor {ep} gives a sha256 for {t.repo}/{t.file} (not a Git "
                            f"LFS file): it cannot be checked, nothing downloaded")
    if t.sha256 and hub_sha and hub_sha != t.sha256:
        raise DownloadError(f"{ep} serves {t.repo}/{t.file} at {t.revision} with sha256 {hub_sha}, the catalogue "
                            f"says {t.sha256}: not downloaded")
    storage = cache / constants.REPO_ID_SEPARATOR.join(["models", *t.repo.split("/")])
    pointer = storage / "snapshots" / meta.commit_hash / t.file
    result = Pulled(str(pointer), t.repo, t.file, t.revision, meta.commit_hash, expected, meta.size or 0,
                    against, t.name)
    if pointer.is_file():
        blob = pointer.resolve()
        if blob.name == expected or sha256_of(pointer) == expected:
            result.already, result.seconds = True, time.perf_counter() - start
            result.size = pointer.stat().st_size
            return result
    blob = storage / "blobs" / meta.etag
    partial = blob.with_name(blob.name + ".incomplete")
    blob.parent.mkdir(parents=True, exist_ok=True)
    if not blob.is_file():
        _download(url, meta, partial, result, on_progress)
        actual = sha256_of(partial)
        if actual != expected:
            partial.unlink(missing_ok=True)
            source = "the catalogue's" if against == "catalogue" else f"the one {ep} reported"
            raise DownloadError(f"the downloaded {t.file} has sha256 {actual}, not {source} ({expected}): "
                                f"the file was removed")
        os.replace(partial, blob)
    result.path = _link(t, ep, cache)
    result.size = Path(result.path).stat().st_size
    result.seconds = time.perf_counter() - start
    return result


def _download(url: str, meta, partial: Path, result: Pulled, on_progress: Optional[Progress]) -> None:
    """The bytes of the file into `partial`, resuming what is there."""
    from huggingface_hub.file_download import http_get
    from huggingface_hub.utils import build_hf_headers

    have = partial.stat().st_size if partial.exists() else 0
    size = meta.size
    if size is not None and have > size:  # not a prefix of this file: start again
        partial.unlink()
        have = 0
    need = (size or 0) - have
    free = shutil.disk_usage(partial.parent).free
    if size is not None and free < need + DISK_MARGIN:
        raise DownloadError(f"not enough free disk space for {result.file}: it needs {need / 1e9:.2f} GB more, "
                            f"{free / 1e9:.2f} GB are free in {partial.parent}; nothing downloaded")
    result.resumed_from = have
    headers = build_hf_headers()
    location = meta.location or url
    if urlparse(location).netloc != urlparse(url).netloc:
        headers.pop("authorization", None)  # a signed CDN URL: the Hub's token stays with the Hub
    try:
        with open(partial, "ab") as f:
            try:
                http_get(location, f, resume_size=have, headers=headers, expected_size=size,
                         tqdm_class=_bar_class(on_progress))
            finally:
                f.flush()
                result.downloaded = f.tell() - have
    except KeyboardInterrupt:
        done = partial.stat().st_size if partial.exists() else 0
        raise Interrupted(f"download interrupted at {_size(done)} of {_size(size)}: run the same "
                          f"`ragcli models pull` again to resume it") from None
    except Exception as exc:  # noqa: BLE001
        done = partial.stat().st_size if partial.exists() else 0
        if isinstance(exc, _network_errors()):
            raise DownloadError(f"the download was cut at {_size(done)} of {_size(size)} ({type(exc).__name__}): "
                                f"run the same `ragcli models pull` again to resume it") from exc
        raise _hub_error(exc, Target(result.repo, result.file, result.revision), endpoint()) from exc


def _size(n: Optional[int]) -> str:
    if n is None:
        return "an unknown size"
    return f"{n / 1e9:.2f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n} bytes"


def _link(t: Target, ep: str, cache: Path) -> str:
    """huggingface_hub links the verified blob into the snapshot (and records the branch's commit)."""
    from huggingface_hub import hf_hub_download

    try:
        return hf_hub_download(t.repo, t.file, revision=t.revision, cache_dir=str(cache), endpoint=ep,
                               etag_timeout=HEAD_TIMEOUT)
    except Exception as exc:  # noqa: BLE001
        raise _hub_error(exc, t, ep) from exc
