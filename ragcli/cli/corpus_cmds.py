"""ingest, books, info, reembed."""
from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from ragcli.cli.common import DbOpt, EmbedOpt, JsonOpt, app, console, embedder_for, err, handle_errors, info, open_db


@app.command()
@handle_errors
def ingest(
    paths: Annotated[list[str], typer.Argument(help="PDF files or folders (searched recursively).")],
    db: DbOpt = None,
    json_out: JsonOpt = False,
    title: Annotated[Optional[str], typer.Option(help="Book title (one file only).")] = None,
    book_id: Annotated[Optional[str], typer.Option("--id", help="Book id (one file only).")] = None,
    password: Annotated[Optional[str], typer.Option(help="Password of an encrypted PDF.")] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Swap a changed file in under the same id.")] = False,
    embed_model: EmbedOpt = None,
) -> None:
    """Add PDF books to the corpus (pages, sections, figures, passages, vectors)."""
    from ragcli.ingest import pipeline as core
    from ragcli.errors import InputError, RagcliError, UsageError
    from ragcli.render.terminal import print_json

    files = core.discover(paths)
    if not files:
        raise UsageError("no PDF files found in the given folders")
    if (title or book_id) and len(files) > 1:
        raise UsageError("--title and --id apply to a single file")
    missing = [f for f in files if not f.exists()]
    if len(missing) == len(files):  # nothing to do: do not create or open the corpus
        raise InputError(f"{missing[0]}: no such file" + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
    conn = open_db(db)
    embedder = embedder_for(conn, embed_model, bulk=True)
    results = []
    for path in files:
        try:
            with _progress(path.name, json_out) as progress:
                result = core.ingest_file(conn, path, embedder, book_id=book_id, title=title,
                                          password=password, replace=replace, progress=progress)
        except RagcliError as exc:
            if len(files) == 1:
                raise
            result = core.IngestResult(str(path), "failed", error=str(exc), exit_code=exc.exit_code)
            err(str(exc))
        results.append(result)
        if not json_out:
            _print_result(result)
    if json_out:
        print_json(results)
    failed = [r for r in results if r.status == "failed"]
    if failed:
        raise typer.Exit(failed[0].exit_code)


class _progress:
    """A rich progress bar on stderr: pages read, then passages embedded."""

    def __init__(self, name: str, quiet: bool):
        self.name, self.quiet, self.bar, self.tasks = name, quiet or not sys.stderr.isatty(), None, {}

    def __enter__(self):
        if self.quiet:
            return None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), console=console(stderr=True), transient=True)
        self.bar.start()
        return self.update

    def update(self, phase: str, done: int, total: int) -> None:
        label = {"pages": "reading pages", "embed": "embedding passages"}.get(phase, phase)
        if phase not in self.tasks:
            self.tasks[phase] = self.bar.add_task(f"{self.name}: {label}", total=total)
        self.bar.update(self.tasks[phase], completed=done, total=total)

    def __exit__(self, *exc):
        if self.bar:
            self.bar.stop()
        return False


def _print_result(r) -> None:
    if r.status == "failed":
        return
    if r.status == "unchanged":
        info(f"[dim]unchanged[/] {r.book_id}: already in the corpus ({r.path})")
        return
    info(f"[green]{r.status}[/] [bold]{r.book_id}[/] “{r.title}”: {r.pages} pages, {r.sections} sections, "
         f"{r.figures} figures, {r.passages} passages ({r.embedded} embedded, {r.reused} reused) "
         f"in {r.seconds:.1f}s")


books_app = typer.Typer(help="List the books in the corpus; `books remove ID` removes one.",
                        invoke_without_command=True, no_args_is_help=False)
app.add_typer(books_app, name="books")


@books_app.callback()
@handle_errors
def books(ctx: typer.Context, db: DbOpt = None, json_out: JsonOpt = False) -> None:
    """What is in the corpus."""
    if ctx.invoked_subcommand:
        return
    from ragcli.store import corpus as store
    from ragcli.render.terminal import books_table, print_json

    conn = open_db(db)
    rows = store.list_books(conn)
    if json_out:
        print_json(rows)
    elif not rows:
        info("the corpus is empty: add a book with `ragcli ingest BOOK.pdf`")
    else:
        console().print(books_table(rows))


@books_app.command("remove")
@handle_errors
def books_remove(book_id: Annotated[str, typer.Argument(help="Book id (see `ragcli books`).")],
                 db: DbOpt = None, json_out: JsonOpt = False) -> None:
    """Remove a book and everything of it."""
    from ragcli.ingest import pipeline as core
    from ragcli.render.terminal import print_json

    conn = open_db(db, create=False)
    core.remove_book(conn, book_id)
    if json_out:
        print_json({"removed": book_id})
    else:
        info(f"removed {book_id}")


@app.command("info")
@handle_errors
def info_cmd(db: DbOpt = None, json_out: JsonOpt = False) -> None:
    """Where the corpus is, what is in it, schema version, embedding model, library versions."""
    from ragcli.store import info as corpus_info
    from ragcli.render.terminal import print_json

    data = corpus_info.describe(open_db(db))
    if json_out:
        print_json(data)
        return
    for key, value in data.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in value.items())
        console().print(f"[bold]{key}[/]: {value}", highlight=False)


@app.command()
@handle_errors
def reembed(
    embed_model: Annotated[str, typer.Option("--embed-model", help="The embedding model to use from now on "
                                             "(sentence-transformers name or path).")],
    db: DbOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Re-embed every passage with another embedding model (one transaction; nothing changes on failure)."""
    from ragcli.models import embed
    from ragcli.ingest.reembed import reembed as core
    from ragcli.render.terminal import print_json

    conn = open_db(db, create=False)
    embedder = embed.get_embedder(embed_model, bulk=True)
    with _progress("re-embedding", json_out) as progress:
        report = core(conn, embedder, progress)
    if json_out:
        print_json(report)
    else:
        info(f"re-embedded {report['passages']} passages and {report['terms']} terms with {report['model']} "
             f"({report['dim']} dimensions)")
