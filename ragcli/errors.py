"""The project's own exceptions, each with its exit code (documented in docs/exit-codes.md).

The CLI boundary turns these into a one-line message and the exit code; anything else is a bug and
raises a traceback only when RAGCLI_DEBUG is set.
"""
from __future__ import annotations


class RagcliError(Exception):
    exit_code = 1


class UsageError(RagcliError):
    """Bad arguments or options the user gave."""

    exit_code = 2


class InputError(RagcliError):
    """A file to ingest is missing, not a PDF, corrupt, encrypted, or has no text layer."""

    exit_code = 3


class CorpusError(RagcliError):
    """The corpus file cannot be used: not a ragcli corpus, newer schema, read-only, locked."""

    exit_code = 4


class NotFoundError(RagcliError):
    """An unknown book id, topic or summary number, or nothing found."""

    exit_code = 5


class ModelError(RagcliError):
    """A language model or embedding model could not be loaded or used."""

    exit_code = 6


class DownloadError(RagcliError):
    """A model download failed: the Hub (or HF_ENDPOINT) unreachable or offline, a checksum that does not
    match, not enough disk space."""

    exit_code = 7


class Interrupted(RagcliError):
    exit_code = 130
