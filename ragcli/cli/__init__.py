"""Typer app: arguments -> one core call -> render. Command groups live in sibling modules."""
from __future__ import annotations

from . import common
from .common import app

from . import corpus_cmds, search_cmd  # noqa: E402,F401  (register commands)

for _name in ("ask_cmd", "summary_cmd", "eval_cmd"):
    try:
        __import__(f"{__name__}.{_name}")
    except ModuleNotFoundError as exc:  # a command group not written yet
        if exc.name != f"{__name__}.{_name}":
            raise


def main() -> None:
    common.run(app)
