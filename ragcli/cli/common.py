"""Shared CLI pieces: the app, common options, error -> exit code (output helpers: render/console.py)."""
from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from ragcli.errors import RagcliError
from ragcli.render.console import console, err, escape, info, status, warn  # noqa: F401  (the commands' helpers)

app = typer.Typer(
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
    help="Ask questions of your PDF books, offline, with citations you can check.",
)

DbOpt = Annotated[Optional[str], typer.Option("--db", help="Corpus file (default: $RAGCLI_DB or the user data dir).",
                                              show_default=False)]
BookOpt = Annotated[Optional[list[str]], typer.Option("--book", "-b", help="Only these book ids (repeat the "
                                                    "option for several).", show_default=False)]
FeedbackOpt = Annotated[bool, typer.Option("--feedback", help="Pseudo-relevance feedback: also search with "
                                           "the words and meaning of the first hits. Helps topical questions "
                                           "over many documents; can blur finding one page of a book.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output on stdout.")]
EmbedOpt = Annotated[Optional[str], typer.Option("--embed-model", help="Embedding model name or path "
                                                 "(default: the one recorded in the corpus).", show_default=False)]

INTERNAL_ERROR = 70


def handle_errors(fn):
    """Turn the project's errors into one line on stderr and a documented exit code."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except RagcliError as exc:
            err(escape(str(exc)))
            raise typer.Exit(exc.exit_code)
        except KeyboardInterrupt:
            err("interrupted; nothing was changed by the unfinished step")
            raise typer.Exit(130)
        except typer.Exit:
            raise
        except Exception as exc:  # a bug: one line, unless debugging
            corpus_problem = _corpus_error(exc)
            if corpus_problem:  # a database error no core function turned into CorpusError
                err(escape(corpus_problem.args[0]))
                raise typer.Exit(corpus_problem.exit_code)
            if os.environ.get("RAGCLI_DEBUG"):
                raise
            err(f"internal error: {type(exc).__name__}: {escape(str(exc))} (set RAGCLI_DEBUG=1 for a traceback)")
            raise typer.Exit(INTERNAL_ERROR)

    return wrapper


def _corpus_error(exc: Exception):
    from ragcli.store import db as dbmod
    from ragcli.errors import CorpusError

    known = ("readonly", "read-only", "locked", "busy", "not a database", "malformed", "disk")
    if isinstance(exc, dbmod.DatabaseError) and any(word in str(exc) for word in known):
        return CorpusError(dbmod.describe(exc, Path("the corpus file")))
    return None  # anything else is a bug: reported as an internal error


def open_db(db: Optional[str], create: bool = True):
    from ragcli import config
    from ragcli.store import db as dbmod

    return dbmod.connect(config.db_path(db), create=create)


def embedder_for(conn, name: Optional[str] = None, quiet: bool = False, bulk: bool = False):
    """The embedder the corpus was built with (or the one asked for), loaded once, with a spinner.
    bulk=True: the ingest variant (int8 weights for the default model)."""
    from ragcli.models import embed
    from ragcli.store import corpus as store

    recorded = store.embedding_model(conn)
    name = name or (recorded[0] if recorded else embed.DEFAULT_MODEL)
    store.check_embedding(conn, name)
    if quiet:
        return embed.get_embedder(name, bulk=bulk)
    with status(f"loading embedding model {name}"):
        return embed.get_embedder(name, bulk=bulk)


def run(app_: typer.Typer) -> None:
    try:
        app_()
    except KeyboardInterrupt:
        err("interrupted")
        sys.exit(130)


def path_arg(p: str) -> Path:
    return Path(p).expanduser()
