"""Typer app: arguments -> one core call -> render. Command groups live in sibling modules."""
from __future__ import annotations

from ragcli.cli import (ask_cmd, corpus_cmds, eval_cmd, models_cmd, open_cmd, search_cmd,  # noqa: F401
                        serve_cmd, summary_cmd, sync_cmd)
from ragcli.cli import chat_cmd, conversations_cmd, copy_cmd  # noqa: F401
from ragcli.cli import common
from ragcli.cli.common import app


def main() -> None:
    common.run(app)
