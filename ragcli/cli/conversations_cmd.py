"""conversations list / show / delete / export: the conversations kept in the corpus file."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from ragcli.cli.common import DbOpt, JsonOpt, app, console, handle_errors, info, open_db
from ragcli.errors import UsageError

# The library is imported inside the commands: `ragcli --help` imports every cli module and loads none of it.

conversations_app = typer.Typer(rich_markup_mode=None, 
    no_args_is_help=True,
    help="Conversations (`ragcli chat`, `ragcli ask -c`) kept in the corpus file, each turn with its sources.",
)
app.add_typer(conversations_app, name="conversations")

IdArg = Annotated[str, typer.Argument(metavar="ID", help="Conversation id (see `ragcli conversations list`).")]
EXPORT_FORMATS = ("markdown", "json")


@conversations_app.command("list")
@handle_errors
def conversations_list(db: DbOpt = None, json_out: JsonOpt = False) -> None:
    """Every conversation: id, turns, dates and its first question, most recently continued first."""
    from ragcli import conversation as core
    from ragcli.render.data import conversation_row, print_json
    from ragcli.render.conversations import conversations_table

    rows = core.conversations(open_db(db, create=False))
    if json_out:
        print_json([conversation_row(c) for c in rows])
    elif not rows:
        info("no conversations yet: start one with `ragcli chat` or `ragcli ask -c \"...\"`")
    else:
        console().print(conversations_table(rows))


@conversations_app.command("show")
@handle_errors
def conversations_show(conversation: IdArg, db: DbOpt = None, json_out: JsonOpt = False) -> None:
    """Every turn of a conversation: the question, the standalone question it became, the answer and
    its cited sources (no model needed); a turn whose sources changed is marked stale."""
    from ragcli import conversation as core
    from ragcli.render.data import conversation_data, print_json
    from ragcli.render.conversations import print_conversation

    cid = core.parse_id(conversation)
    found = core.get(open_db(db, create=False), cid)
    if json_out:
        print_json(conversation_data(found))
    else:
        print_conversation(console(), found)


@conversations_app.command("export")
@handle_errors
def conversations_export(
    conversation: IdArg,
    output: Annotated[str, typer.Option("--format", metavar="markdown|json",
                                        help="markdown (the default): a document with footnote sources; json.")]
    = "markdown",
    db: DbOpt = None, json_out: JsonOpt = False,
) -> None:
    """A conversation as one document on stdout (--json: the same as --format json)."""
    from ragcli import conversation as core
    from ragcli.render.data import conversation_data, print_json
    from ragcli.render.markdown import conversation_markdown

    if output not in EXPORT_FORMATS:
        raise UsageError(f"unknown format '{output}' (choose from {', '.join(EXPORT_FORMATS)})")
    cid = core.parse_id(conversation)
    found = core.get(open_db(db, create=False), cid)
    if output == "json" or json_out:
        print_json(conversation_data(found))
    else:
        console().print(conversation_markdown(found), markup=False, highlight=False, end="", soft_wrap=True)


@conversations_app.command("delete")
@handle_errors
def conversations_delete(
    conversation: Annotated[Optional[str], typer.Argument(metavar="[ID]", show_default=False, help="Conversation "
                                                          "id (see `ragcli conversations list`).")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Delete every conversation (every saved ask); asks "
                                       "first.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="With --all: do not ask.")] = False,
    db: DbOpt = None, json_out: JsonOpt = False,
) -> None:
    """Delete a conversation with its turns (or every one, --all, after a yes). Ids are never given again."""
    from ragcli import conversation as core
    from ragcli.render.data import print_json

    if all_ == (conversation is not None):
        raise UsageError("name one conversation ID, or --all (not both)")
    if all_:
        conn = open_db(db, create=False)
        if not yes:
            confirm_delete_all(len(core.conversations(conn)))
        count = core.delete_all(conn)
        if json_out:
            print_json({"deleted": {"conversations": count}})
        else:
            info(f"deleted {count} conversation{'' if count == 1 else 's'}")
        return
    cid = core.parse_id(conversation)
    core.delete(open_db(db, create=False), cid)
    if json_out:
        print_json({"deleted": {"conversation_id": cid}})
    else:
        info(f"deleted conversation {cid}")


def confirm_delete_all(count: int) -> None:
    """Ask on the terminal before every conversation goes; without a terminal to ask on, refuse
    (a script says --yes). Nothing to delete: nothing to ask."""
    import sys

    from ragcli.errors import RagcliError

    if count == 0:
        return
    what = f"{count} conversation{'' if count == 1 else 's'}"
    if not sys.stdin.isatty():
        raise UsageError(f"--all deletes {what}: add --yes to delete them without being asked")
    if not typer.confirm(f"delete {what} with their turns? Ids are not given again", default=False, err=True):
        raise RagcliError(f"nothing deleted: the {what} are kept")
