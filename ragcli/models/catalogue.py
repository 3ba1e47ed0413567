"""What `ragcli models pull` is asked for: the catalogue (models/catalog.toml, data), the names and URLs a
spec may give, each checked before it touches a path (a repository, revision and file name of a safe set
of characters, no `..`, no leading `/`; https anywhere, plain http only on loopback), and what a pull
gives back. models/download.py fetches the file.
"""
from __future__ import annotations

import ipaddress
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional
from urllib.parse import urlparse

from ragcli.errors import NotFoundError, UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib


DEFAULT_ENDPOINT = "https://huggingface.co"
SHA256 = re.compile(r"[0-9a-f]{64}")
NAME_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,127}")  # one part of a repository, revision or file name


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


def _token(ep: str):
    """The Hub's token goes to the Hub's endpoint only (False: none, for any other host)."""
    return None if urlparse(ep).netloc == urlparse(endpoint()).netloc else False


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
