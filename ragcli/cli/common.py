"""Shared CLI pieces: the app, common options, error -> exit code (output helpers: render/console.py)."""
from __future__ import annotations

import functools
import os
import signal
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from ragcli import __version__
from ragcli.errors import CorpusError, RagcliError, UsageError
from ragcli.render.console import console, err, escape, info, status, warn  # noqa: F401  (the commands' helpers)

# The library is imported inside the commands: `ragcli --help` imports every cli module and loads none of it.

app = typer.Typer(rich_markup_mode=None,
    no_args_is_help=True, pretty_exceptions_enable=False,
    help="Ask questions of your PDF books, offline, with citations you can check.",
)


def _flags_take_no_value() -> None:
    """Help as click prints it (rich_markup_mode=None: plain text wrapped to the terminal, each
    paragraph re-flowed, nothing cut with "..."), with three of typer's habits undone: a flag takes
    no value, so none is shown (typer prints `<bool>`); an option's value is named by its metavar or
    a word (`N`, `X`, `TEXT`), not `<int>`; an argument is its name in capitals (`QUESTION`), not
    `{question} <str>`. Lines break at spaces only: a hyphenated name (use-multilingual-v3) or a
    path is never split."""
    from typer import core as typer_core
    from typer._click import _textwrap  # typer 0.29 carries its own click

    option_type = typer_core.TyperOption.display_type_rich
    if getattr(option_type, "ragcli", False):
        return
    words = {"int": "N", "float": "X", "str": "TEXT", "Path": "PATH"}

    def option_display(self, ctx):
        if self.is_flag and not self.count:
            return None
        shown = option_type(self, ctx) or ""
        bare = shown.strip("<>").split(" ")[0]
        return words.get(bare, bare.upper() or None)

    def argument_display(self, ctx):
        return "..." if self.nargs != 1 else None

    def argument_name(self):
        return (self.metavar or self.name).upper()

    def usage_name(self):
        name = argument_name(self)
        name = name if self.required else f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")

    option_display.ragcli = True
    typer_core.TyperOption.display_type_rich = option_display
    typer_core.TyperArgument.display_type_rich = argument_display
    typer_core.TyperArgument._rich_display_name = argument_name
    typer_core.TyperArgument._usage_display_name = usage_name

    wrapper_init = _textwrap.TextWrapper.__init__

    def whole_words(self, *args, **kwargs):
        wrapper_init(self, *args, **{**kwargs, "break_on_hyphens": False, "break_long_words": False})

    _textwrap.TextWrapper.__init__ = whole_words

    from typer._click import core as click_core
    from typer._click.utils import make_default_short_help

    def first_sentence(self, limit: int = 45) -> str:  # wrapped by the list, never cut with "..."
        if self.short_help:
            return self.short_help
        return make_default_short_help(self.help or "", 10**6) if self.help else ""

    click_core.Command.get_short_help_str = first_sentence


_flags_take_no_value()

DbOpt = Annotated[Optional[str], typer.Option("--db", metavar="PATH", show_default=False,
                                              help="Corpus file or postgresql:// address (default: $RAGCLI_DB, "
                                                   "db in the config file, or the user data dir).")]
BookOpt = Annotated[Optional[list[str]], typer.Option("--book", "-b", metavar="ID", show_default=False,
                                                    help="Only these book ids (repeat the option for several).")]
FeedbackOpt = Annotated[bool, typer.Option("--feedback", help="Pseudo-relevance feedback: also search with "
                                           "the words and meaning of the first hits. Helps topical questions "
                                           "over many documents; can blur finding one page of a book.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output on stdout.")]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="More detail (search: the scores).")]
EmbedOpt = Annotated[Optional[str], typer.Option("--embed-model", metavar="NAME", show_default=False,
                                                 help="Embedding model: a sentence-transformers name or "
                                                 "path, a .gguf file, an OpenAI-compatible server URL "
                                                 "(URL#MODEL), a config profile, or use-multilingual-v3 "
                                                 "(default: the one recorded in the corpus).")]


class _Global:
    """--db, --json and --verbose given before the command (`ragcli --db F books`)."""

    db: Optional[str] = None
    json: bool = False
    verbose: bool = False


GLOBAL = _Global()


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"ragcli {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                          help="Print ragcli's version and exit.")] = False,
    db: DbOpt = None, json_out: JsonOpt = False, verbose: VerboseOpt = False,
) -> None:
    """Ask questions of your PDF books, offline, with citations you can check.

    --db, --json and --verbose may come before or after the command."""
    GLOBAL.db, GLOBAL.json, GLOBAL.verbose = db, json_out, verbose


def _with_globals(kwargs: dict) -> dict:
    """A command's own --db wins; --json and --verbose given anywhere count."""
    if "db" in kwargs and kwargs["db"] is None:
        kwargs["db"] = GLOBAL.db
    if "json_out" in kwargs:
        kwargs["json_out"] = kwargs["json_out"] or GLOBAL.json
    if "verbose" in kwargs:
        kwargs["verbose"] = kwargs["verbose"] or GLOBAL.verbose
    return kwargs


INTERNAL_ERROR = 70
PIPE_CLOSED = 141  # what a shell reports for a process ended by SIGPIPE (128 + 13)


def handle_errors(fn):
    """Turn the project's errors into one line on stderr and a documented exit code."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **_with_globals(kwargs))
        except BrokenPipeError:  # `ragcli search x --json | head -1`: the reader left; exit quietly
            _quiet_pipe()
            raise typer.Exit(PIPE_CLOSED)
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

    known = ("readonly", "read-only", "locked", "busy", "not a database", "malformed", "disk")
    if isinstance(exc, dbmod.DatabaseError) and any(word in str(exc) for word in known):
        return CorpusError(dbmod.describe(exc, Path("the corpus file")))
    return None  # anything else is a bug: reported as an internal error


def open_db(db: Optional[str], create: bool = True):
    from ragcli import config
    from ragcli.store import backend

    return backend.connect(config.db_path(db), create=create)


def embedder_for(conn, name: Optional[str] = None, quiet: bool = False, bulk: bool = False):
    """The embedder the corpus was built with, from where the corpus says it was made (a server, a
    GGUF file, the bundled model), or the one asked for; loaded once, with a spinner. A model of
    another name is refused; one that cannot be reached is a ModelError (never another model).
    bulk=True: the ingest variant (int8 weights for the bundled model)."""
    from ragcli.models import embed_factory
    from ragcli.store import corpus as store

    recorded = store.embedding_model(conn)

    def load():
        if name:
            embedder = embed_factory.get(name, bulk=bulk)
            store.check_embedding(conn, embedder.name)
            return embedder
        if recorded:
            return embed_factory.from_source(recorded[0], store.embedding_source(conn), bulk=bulk)
        return embed_factory.get(None, bulk=bulk)

    if name and not name.startswith(("http://", "https://")) and not embed_factory.is_profile(name):
        store.check_embedding(conn, _local_name(name))  # refused before a model loads
    if quiet:
        return load()
    with status(f"loading embedding model {name or (recorded[0] if recorded else 'all-MiniLM-L6-v2')}"):
        return load()


def _local_name(name: str) -> str:
    """What a local spec records as its name, before loading it (a refusal should not wait for a load)."""
    from ragcli.models import embed

    if name == "all-MiniLM-L6-v2":
        return embed.DEFAULT_MODEL
    if name.endswith(".gguf"):
        return Path(name).name
    return name


def _quiet_pipe() -> None:
    """stdout's reader is gone: point stdout at /dev/null so the final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (tests' runner)
        pass


def run(app_: typer.Typer) -> None:
    if hasattr(signal, "SIGPIPE"):  # as Unix tools do: a closed pipe ends the process, no message
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    bad = undecodable_arg(sys.argv[1:])
    if bad is not None:
        err(escape(f"the argument {bad!r} is not valid text in this locale's encoding "
                   f"({sys.getfilesystemencoding()}): give the words as UTF-8"))
        sys.exit(UsageError.exit_code)
    from typer._click import exceptions as click_errors
    from typer.exceptions import Abort  # typer's click carries no Abort of its own

    try:
        code = app_(prog_name="ragcli", standalone_mode=False)
    except click_errors.NoArgsIsHelpError as exc:  # `ragcli` alone: the help, as before
        exc.show()
        sys.exit(exc.exit_code)
    except click_errors.UsageError as exc:  # a bad flag or argument: one line (docs/exit-codes.md)
        where = exc.ctx.command_path if exc.ctx is not None else "ragcli"
        err(escape(f"{exc.format_message().rstrip('.')} (`{where} --help` lists what it takes)"))
        sys.exit(exc.exit_code)
    except click_errors.ClickException as exc:
        err(escape(exc.format_message()))
        sys.exit(exc.exit_code)
    except Abort:
        err("aborted")
        sys.exit(1)
    except KeyboardInterrupt:
        err("interrupted")
        sys.exit(130)
    except BrokenPipeError:
        _quiet_pipe()
        sys.exit(PIPE_CLOSED)
    sys.exit(code if isinstance(code, int) else 0)


def undecodable_arg(args: list[str]) -> Optional[str]:
    """The first argument holding bytes the locale cannot decode (Python keeps them as lone
    surrogates, which no later step can print or store), shown with those bytes escaped; None when
    all decode. An existing file's name may hold such bytes: a path is taken as it is."""
    for arg in args:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            if os.path.exists(arg):
                continue
            return os.fsencode(arg).decode("utf-8", "backslashreplace")
    return None


def path_arg(p: str) -> Path:
    return Path(p).expanduser()
