"""`ragcli copy SRC DST`: a library from one place to another (a SQLite file <-> a PostgreSQL address)."""
from __future__ import annotations

from typing import Annotated

import typer

from ragcli.cli.common import JsonOpt, app, console, handle_errors, info


@app.command("copy")
@handle_errors
def copy_cmd(
    src: Annotated[str, typer.Argument(metavar="SRC", help="The library to copy: a file or a postgresql:// address.")],
    dst: Annotated[str, typer.Argument(metavar="DST", help="An empty library to fill (created when missing).")],
    json_out: JsonOpt = False,
) -> None:
    """Copy a whole library (books, passages, vectors, figures, summaries, conversations, with their ids
    and numbers) into an empty one, in one transaction; the row counts of both are compared after."""
    from ragcli import config
    from ragcli.errors import CorpusError
    from ragcli.render.data import print_json
    from ragcli.store import backend
    from ragcli.store import copy as library_copy

    source = backend.connect(config.db_path(src), create=False)
    target = backend.connect(config.db_path(dst), create=True)
    report = library_copy.copy_library(source, target,
                                       None if json_out else lambda t, n: info(f"copied {n} rows of {t}"))
    before, after = library_copy.table_counts(source), library_copy.table_counts(target)
    if before != after:
        differ = ", ".join(f"{t} {before[t]} -> {after.get(t)}" for t in before if before[t] != after.get(t))
        raise CorpusError(f"the copy's row counts differ from the source's: {differ}")
    data = {"source": backend.location(source), "destination": backend.location(target), "counts": after}
    if json_out:
        print_json(data)
    else:
        console().print(f"copied {after['books']} books, {after['passages']} passages and figures, "
                        f"{after['passage_vec']} vectors, {after['summaries']} summaries and "
                        f"{after['conversations']} conversations to {data['destination']}", highlight=False)
