"""A library's address: a PostgreSQL URL or a SQLite file path; shown without its password."""
from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

SCHEMES = ("postgresql://", "postgres://")


def is_address(target) -> bool:
    """Is this library a PostgreSQL address (else a SQLite file path)?"""
    return isinstance(target, str) and target.strip().lower().startswith(SCHEMES)


def redact(address: str) -> str:
    """The address without its password (for every message, `info` and `--json`)."""
    if not is_address(address):
        return address
    parts = urlsplit(address)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}@{host}" if user else host
    query = re.sub(r"(?i)(^|&)password=[^&]*", r"\1password=***", parts.query)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
