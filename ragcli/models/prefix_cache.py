"""Saved llama.cpp states of a chat's system-prompt prefix, one file per (model, context, prefix).

Every `ragcli ask` is a new process, and llama.cpp reuses a KV cache only inside one process, so
without this the fixed system prompt is evaluated on every call. A state saved once is loaded in
a fraction of that time. Files are written to a temporary name then renamed (a reader never sees a
half-written one); a file that is truncated, corrupt or from another build is ignored and replaced,
never an error for the user. The folder holds at most KEEP files; the least recently used go first.

File layout: MAGIC, an 8-byte little-endian header length, a JSON header (key, tokens, sha256 and
size of the state), then llama.cpp's state bytes (llama_state_get_data: the KV cells and the last
logits). No pickle: the file is data, never code.
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
from pathlib import Path
from typing import Optional

MAGIC = b"RAGCLI-PREFIX-STATE-1\n"
KEEP = 4  # files kept in the folder: a few models or system prompts
OFF_VALUES = {"0", "off", "false", "no"}
ENV = "RAGCLI_PREFIX_CACHE"  # "0"/"off"/"false"/"no" turns the cache off


def enabled_by_env() -> bool:
    return os.environ.get(ENV, "").strip().lower() not in OFF_VALUES


def folder() -> Path:
    from ragcli.config import cache_dir

    return cache_dir() / "prefix-states"


def cache_key(model_path: Path, n_ctx: int, tokens: list[int], backend_version: str) -> str:
    """What a saved state depends on: the model file (path, size, mtime), the context size, the
    prefix's tokens and llama-cpp-python's version (the state layout is llama.cpp's)."""
    st = model_path.stat()
    ident = {"path": str(model_path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
             "n_ctx": n_ctx, "version": backend_version,
             "tokens": hashlib.sha256(json.dumps(tokens).encode()).hexdigest()}
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:32]


def path_for(where: Path, key: str) -> Path:
    return where / f"{key}.state"


def read(where: Path, key: str, tokens: list[int]) -> Optional[bytes]:
    """The state bytes saved under `key` for exactly `tokens`, or None (no file, or one that is
    unreadable, truncated, corrupt or for other tokens)."""
    path = path_for(where, key)
    try:
        with open(path, "rb") as fh:
            if fh.read(len(MAGIC)) != MAGIC:
                return None
            (size,) = struct.unpack("<Q", fh.read(8))
            if size > 1 << 24:
                return None
            header = json.loads(fh.read(size).decode("utf-8"))
            data = fh.read()
        if (header.get("key") != key or header.get("tokens") != tokens
                or header.get("size") != len(data)
                or header.get("sha256") != hashlib.sha256(data).hexdigest()):
            return None
        os.utime(path)  # least recently used goes first
        return data
    except (OSError, ValueError, struct.error, UnicodeDecodeError, AttributeError):
        return None


def write(where: Path, key: str, tokens: list[int], data: bytes, keep: int = KEEP) -> bool:
    """Save atomically, then evict the oldest files beyond `keep`. False when it cannot be written
    (a read-only or full disk): the cache is an optimisation, never an error."""
    path = path_for(where, key)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    header = json.dumps({"key": key, "tokens": tokens, "size": len(data),
                         "sha256": hashlib.sha256(data).hexdigest()}).encode("utf-8")
    try:
        where.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as fh:
            fh.write(MAGIC + struct.pack("<Q", len(header)) + header)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass
        return False
    evict(where, keep)
    return True


def evict(where: Path, keep: int = KEEP) -> None:
    try:
        files = sorted(where.glob("*.state"), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return
    for old in files[keep:]:
        try:
            old.unlink()
        except OSError:
            pass
