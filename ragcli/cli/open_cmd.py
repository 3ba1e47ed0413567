"""open and show: the cited page in the system viewer, or the passage with the text around it."""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer

from ragcli.cli.common import DbOpt, JsonOpt, app, console, handle_errors, info, open_db
from ragcli.errors import InputError, NotFoundError, UsageError

# The library is imported inside the commands: `ragcli --help` imports every cli module and loads none of it.

PassageArg = Annotated[str, typer.Argument(metavar="PASSAGE_ID",
                                           help="A passage id (search/ask --json: passage_id), or a label "
                                                "of the latest saved answer (S2).")]


def _passage(conn, ref: str):
    """The passage a reference names. `S2`-style labels need saved conversations."""
    from ragcli.store import files

    ref = ref.strip().strip("[]")
    if ref[:1].upper() in ("S", "F") and ref[1:].isdigit():
        ref = str(_latest_answer_source(conn, ref.upper()))
    elif not ref.isdigit():
        raise UsageError(f"'{ref}' is not a passage id (a whole number; search/ask --json: passage_id) "
                         f"nor a label of the latest answer (S2)")
    hit = files.passage(conn, int(ref))
    if hit is None:
        raise NotFoundError(f"no passage {ref} in the corpus (it may have been re-read since: search again)")
    return hit


def _latest_answer_source(conn, label: str) -> int:
    """The passage the latest saved answer gave the model under `label` (as it is now: a passage
    re-read with the same text is followed)."""
    from ragcli.store import files

    if not files.has_table(conn, "conversation_turns"):
        raise UsageError(f"'{label}' names a source of a saved answer, and this corpus has no saved answers; "
                         f"give the passage id (`ask --json`: sources[].passage_id)")
    from ragcli import conversation

    latest = conversation.latest(conn)
    if latest is None or not latest.turns:
        raise NotFoundError(f"no saved answer to take {label} from; give a passage id "
                            f"(`ask --json`: sources[].passage_id)")
    turn = latest.turns[-1]
    source = next((s for s in turn.sources if s.label.upper() == label), None)
    if source is None:
        given = ", ".join(s.label for s in turn.sources) or "none"
        raise NotFoundError(f"the latest answer has no source {label} (its sources: {given})")
    if source.status == "gone" or not source.current_passage_id:
        raise NotFoundError(f"{label} of the latest answer is no longer in the corpus ({source.reason or 'gone'})")
    return source.current_passage_id


def viewer_command(path: str, page: int, template: str | None = None, platform: str = sys.platform) -> list[str]:
    """The command that opens `path` at `page`: $RAGCLI_VIEWER (`{file}` and `{page}` replaced; the file
    appended when the template has no `{file}`), else `open` (macOS) / `xdg-open` (elsewhere)."""
    if template is None:
        template = os.environ.get("RAGCLI_VIEWER", "")
    if template.strip():
        try:
            parts = shlex.split(template)
        except ValueError as exc:
            raise UsageError(f"RAGCLI_VIEWER cannot be read as a command ({exc}): {template!r}") from exc
        command = [p.replace("{file}", path).replace("{page}", str(page)) for p in parts]
        return command if any("{file}" in p for p in parts) else command + [path]
    return ["open" if platform == "darwin" else "xdg-open", path]


@app.command("open")
@handle_errors
def open_cmd(passage_id: PassageArg, db: DbOpt = None, json_out: JsonOpt = False) -> None:
    """Open the book of a passage at its page in the system viewer ($RAGCLI_VIEWER with {file} and
    {page}, else xdg-open / open)."""
    from ragcli.render.data import file_data, print_json
    from ragcli.render.links import file_state

    from ragcli.store import files

    conn = open_db(db, create=False)
    hit = _passage(conn, passage_id)
    path = files.source_file(conn, hit)  # the local file, else the library's copy of it
    if path is None or file_state(path) != "ok":
        where = f": {hit.path}" if hit.path else ""
        raise InputError(f"the file of book '{hit.book_id}' moved or is gone{where}, and the library keeps no "
                         f"copy of it; `ragcli sync FOLDER` follows a moved file, `ragcli show "
                         f"{hit.passage_id}` prints the passage")
    command = viewer_command(path, hit.page_start)
    try:
        subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, close_fds=True)
    except OSError as exc:
        hint = "" if os.environ.get("RAGCLI_VIEWER") else " (set RAGCLI_VIEWER, e.g. 'evince -i {page} {file}')"
        raise UsageError(f"cannot start the viewer {command[0]}: {exc.strerror}{hint}") from exc
    if json_out:
        print_json({"passage_id": hit.passage_id, "book_id": hit.book_id, "page_label": hit.page_label,
                    "page": hit.page_start, **file_data(hit), "opened": path, "command": command})
        return
    note = "" if os.environ.get("RAGCLI_VIEWER") else \
        " (it may open the first page: set RAGCLI_VIEWER, e.g. 'evince -i {page} {file}', to open at the page)"
    info(f"opened {hit.book_id} p. {hit.page_label} (pdf {hit.page_start}) with {command[0]}{note}")


@app.command()
@handle_errors
def show(passage_id: PassageArg,
         quote: Annotated[str, typer.Option("--quote", metavar="TEXT", help="Highlight this sentence in the "
                                            "passage (an answer's evidence quote).")] = "",
         context: Annotated[int, typer.Option("--context", metavar="N", help="Passages shown before and "
                                              "after it.")] = 1,
         image: Annotated[str, typer.Option("--image", metavar="PNG", help="Also write the page as a PNG with "
                                            "the passage's sentences (or the quote) highlighted.")] = "",
         db: DbOpt = None, json_out: JsonOpt = False) -> None:
    """Print a passage with the text around it, the quote highlighted, and where its page is."""
    from ragcli.render.data import passage_data, print_json
    from ragcli.render.library import print_passage
    from ragcli.store import files

    if context < 0:
        raise UsageError("--context must be 0 or more")
    conn = open_db(db, create=False)
    hit = _passage(conn, passage_id)
    before, after = files.neighbours(conn, hit, context, context)
    picture = _image(conn, hit, image, quote) if image else None
    if json_out:
        data = passage_data(hit, before, after)
        if picture:
            from ragcli.render.data import to_data

            data["image"] = to_data(picture)
        print_json(data)
        return
    print_passage(console(), hit, before, after, quote)
    if picture:
        info(f"wrote {picture.path}: pdf page {picture.page}, {picture.found} of {picture.sentences} "
             f"{'sentences' if picture.sentences != 1 else 'sentence'} highlighted")


def _image(conn, hit, out: str, quote: str):
    from ragcli.ingest import page_image
    from ragcli.store import files

    path = files.source_file(conn, hit)  # the local file, else the library's copy of it
    if path is None:
        raise InputError(f"the file of book '{hit.book_id}' moved or is gone{': ' + hit.path if hit.path else ''}, "
                         f"and the library keeps no copy of it; --image needs it")
    return page_image.render(path, hit.page_start, hit.page_end, hit.text, Path(out).expanduser(), quote)
