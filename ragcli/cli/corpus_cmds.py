"""ingest, books, info, reembed."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from ragcli.cli.common import (DbOpt, EmbedOpt, JsonOpt, app, console, embedder_for, err, escape, handle_errors,
                               info, open_db, status, warn)
from ragcli.errors import InputError, UsageError

# The library is imported inside the commands: `ragcli --help` imports every cli module and loads none of it.


def _names(files: list) -> str:
    return ", ".join(f.name for f in files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")


@app.command()
@handle_errors
def ingest(
    paths: Annotated[list[str], typer.Argument(help="Files or folders (searched recursively).")],
    db: DbOpt = None,
    json_out: JsonOpt = False,
    title: Annotated[Optional[str], typer.Option(help="Book title (one file only).")] = None,
    book_id: Annotated[Optional[str], typer.Option("--id", help="Book id (one file only).")] = None,
    password: Annotated[Optional[str], typer.Option(help="Password of an encrypted PDF.")] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Swap a changed file in under the same id.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Refuse a book that lost text while being read "
                                         "(damaged or unreadable pages): exit 3, nothing written.")] = False,
    embed_model: EmbedOpt = None,
    ocr: Annotated[str, typer.Option("--ocr", help="OCR pages: auto (pages without a usable text layer), "
                                     "always, never.")] = "auto",
    ocr_engine: Annotated[str, typer.Option("--ocr-engine", help="tesseract (default) or rapidocr "
                                            "(pip install rapidocr-onnxruntime).")] = "tesseract",
    workers: Annotated[Optional[int], typer.Option("--workers", min=0, show_default=False,
                                                   help="Processes parsing files while the previous book "
                                                   "embeds (default: one per core but one, at most 4; "
                                                   "0: parse in this process).")] = None,
    keep_file: Annotated[Optional[bool], typer.Option("--keep-file/--no-keep-file", show_default=False,
                                                      help="Keep a copy of each file in the library, so "
                                                      "`show --image`, `open` and the page view work where "
                                                      "the file is not (default: yes on PostgreSQL, no in "
                                                      "a SQLite file; at most 256 MB a file).")] = None,
) -> None:
    """Add books to the corpus: PDFs (scanned pages OCR'd), e-books, DOCX, HTML, text."""
    from ragcli.ingest import pipeline as core
    from ragcli.ingest.run import ingest_run
    from ragcli.render.data import ingest_data, print_json
    from ragcli.render.progress import RunProgress
    from ragcli.render.terminal import ingest_line

    from ragcli.ingest.ocr import ENGINES, MODES

    if ocr not in MODES:
        raise UsageError(f"--ocr must be one of {', '.join(MODES)}, not '{ocr}'")
    if ocr_engine not in ENGINES:
        raise UsageError(f"--ocr-engine must be one of {', '.join(ENGINES)}, not '{ocr_engine}'")
    skipped: list = []
    notes: list = []
    files = core.discover(paths, skipped, notes)
    for note in notes:  # symlinks leaving the folders named, folders reached twice
        warn(escape(note))
    # a folder walk reads book formats only: text and Markdown files there (READMEs, notes, a book's
    # sources) are read when named, and a line says so; other files are of no supported format
    named_only = [f for f in skipped if core.read_when_named(f)]
    other = [f for f in skipped if not core.read_when_named(f)]
    if named_only:
        info(escape(f"left {len(named_only)} text or Markdown file(s) in the folders, read only when named: "
                    f"{_names(named_only)}"))
    if other:
        warn(escape(f"skipped {len(other)} file(s) of no supported format in the folders: {_names(other)}"))
    if not files:
        raise UsageError("no supported files (PDF, EPUB, DOCX, HTML, ...) found in the given folders")
    if (title or book_id) and len(files) > 1:
        raise UsageError("--title and --id apply to a single file")
    missing = [f for f in files if not f.exists()]
    if len(missing) == len(files):  # nothing to do: do not create or open the corpus
        message = f"{missing[0]}: no such file" + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
        if not json_out:
            raise InputError(message)
        results = [core.IngestResult(str(f), "failed", error=f"{f}: no such file", exit_code=InputError.exit_code)
                   for f in files]
        err(escape(message))
        print_json(ingest_data(results))
        raise typer.Exit(InputError.exit_code)
    conn = open_db(db)
    embedder = embedder_for(conn, embed_model, bulk=True)
    opts = core.FileOptions(book_id, title, password, replace, strict, ocr, ocr_engine, keep_file)
    results = []
    run_progress = RunProgress(json_out)
    with run_progress as progress_cb:
        for result in ingest_run(conn, files, embedder, opts, workers=_workers(workers, len(files)),
                                 progress=progress_cb, on_status=run_progress.status):
            if result.status == "failed":  # a report for every file, failed ones too (also a single one)
                err(escape(result.error))
            results.append(result)
            if result.warnings:  # one line per book, naming the pages
                warn(escape(f"{result.book_id or Path(result.path).name}: " + "; ".join(result.warnings)))
            if not json_out and ingest_line(result):
                info(ingest_line(result))
    if json_out:
        print_json(ingest_data(results))
    failed = [r for r in results if r.status == "failed"]
    if failed:
        raise typer.Exit(failed[0].exit_code)


def _workers(asked: Optional[int], files: int) -> int:
    """Parsing processes: none for one file (its pages and OCR then show progress)."""
    if asked is not None:
        return asked
    if files < 2:
        return 0
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return max(1, min(4, cores - 1))


books_app = typer.Typer(rich_markup_mode=None, help="List the books in the corpus; `books remove ID` removes one.",
                        invoke_without_command=True, no_args_is_help=False)
app.add_typer(books_app, name="books")


@books_app.callback()
@handle_errors
def books(ctx: typer.Context, db: DbOpt = None, json_out: JsonOpt = False) -> None:
    """What is in the corpus."""
    if ctx.invoked_subcommand:
        return
    from ragcli.store import corpus as store
    from ragcli.render.data import books_data, print_json
    from ragcli.render.terminal import books_lines, books_table

    conn = open_db(db, create=False)  # a mistyped --db is refused, not created
    rows = store.list_books(conn)
    if json_out:
        print_json(books_data(rows))
    elif not rows:
        info("the corpus is empty: add a book with `ragcli ingest BOOK.pdf`")
    else:
        out = console()
        if out.is_terminal:
            out.print(books_table(rows, out.width))
        else:  # piped: plain tab-separated lines, whole titles and numbers
            out.file.write("".join(line + "\n" for line in books_lines(rows)))
        for book in rows:
            if book.warnings:
                warn(escape(f"{book.id}: " + "; ".join(book.warnings)))


@books_app.command("remove")
@handle_errors
def books_remove(book_id: Annotated[str, typer.Argument(help="Book id (see `ragcli books`).")],
                 db: DbOpt = None, json_out: JsonOpt = False) -> None:
    """Remove a book and everything of it."""
    from ragcli.ingest import pipeline as core
    from ragcli.render.data import print_json

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
    from ragcli.render.data import info_data, print_json
    from ragcli.render.terminal import print_info
    from ragcli.store import info as corpus_info

    data = corpus_info.describe(open_db(db, create=False))
    data["chat_model"] = _chat_model()
    data["model_runs_on"] = _runs_on()
    if json_out:
        print_json(info_data(data))
    else:
        runs = data["model_runs_on"]  # one line: each setting with why it was chosen
        data["model_runs_on"] = {k: runs["why"].get(k, v) for k, v in runs.items() if k != "why"}
        print_info(console(), data)


def _runs_on():
    """How the in-process model would run on this machine: GPU layers, threads, context (each the value
    given, else the machine's default with why), and the machine's memory and cores."""
    from ragcli import config
    from ragcli.errors import ModelError
    from ragcli.models import hardware
    from ragcli.models.llama_setup import RunSettings, machine_defaults, run_settings

    hw = hardware.detect()
    try:
        s = config.model_settings()
    except UsageError:
        s = config.ModelSettings()
    run: RunSettings = machine_defaults(hw, {}, 0, s.n_ctx or 0, s.threads, s.gpu_layers)
    if s.path and not s.url:
        from ragcli.models.names import resolve

        try:
            run = run_settings(resolve(s.path), s.n_ctx, s.threads, s.gpu_layers, hw)
        except (ModelError, OSError):
            pass  # no readable model: the context is the model's, so none is shown
    out = {"n_gpu_layers": run.n_gpu_layers, "n_threads": run.n_threads, "n_ctx": run.n_ctx or None,
           "memory_gb": round(hw.memory_total / 1e9, 1), "memory_available_gb": round(hw.memory_available / 1e9, 1),
           "physical_cores": hw.physical_cores, "gpu_offload": hw.gpu_offload, "why": run.why}
    if not out["n_ctx"]:
        out.pop("n_ctx")
    return out


def _chat_model():
    """The model `ask` would use (named, not loaded), or why the configuration cannot say."""
    from ragcli import config
    from ragcli.models.factory import describe

    try:
        return describe(config.model_settings())
    except UsageError as exc:
        return {"error": str(exc)}


@app.command()
@handle_errors
def reembed(
    embed_model: Annotated[str, typer.Option("--embed-model", help="The embedding model to use from now on: "
                                             "a sentence-transformers name or path, a .gguf file, an "
                                             "OpenAI-compatible server URL (URL#MODEL), a config profile, "
                                             "or use-multilingual-v3.")],
    db: DbOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Re-embed every passage with another embedding model (one transaction; nothing changes on failure)."""
    from ragcli.models import embed_factory
    from ragcli.ingest.reembed import reembed as core
    from ragcli.render.data import print_json
    from ragcli.render.progress import Progress
    from ragcli.render.terminal import reembed_line

    conn = open_db(db, create=False)
    with status(f"loading embedding model {embed_model}"):
        embedder = embed_factory.get(embed_model, bulk=True)
    with Progress("re-embedding", json_out) as progress:
        report = core(conn, embedder, progress)
    if report.get("calibration"):
        warn(escape(report["calibration"]))
    if json_out:
        print_json(report)
    else:
        info(reembed_line(report))
