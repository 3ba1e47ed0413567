"""The live answer: text streamed to stdout as the model writes it (ask and summary new share it).

Only on a terminal and only when a model writes: piped output and `--json` get the finished answer
in one piece from `render/terminal.py` or `render/data.py`."""
from __future__ import annotations

from typing import Optional

from ragcli.render.console import Environment, info
from ragcli.render.terminal import expansion_line, styled_answer


class AnswerStream:
    """Callbacks for the pipelines: `on_text` (validated text as it streams), `on_expanded`
    (the question's rewrite and book terms, dimmed on stderr)."""

    def __init__(self, live: bool, json_out: bool = False, env: Optional[Environment] = None):
        self.env = env or Environment()
        self.console = self.env.console()
        self.live = live and not json_out
        self.json_out = json_out
        self.pieces: list[str] = []

    @classmethod
    def for_model(cls, model, json_out: bool, env: Optional[Environment] = None) -> "AnswerStream":
        """Live when stdout is a terminal, the output is not JSON and a model writes."""
        env = env or Environment()
        return cls(env.stdout_isatty and model is not None, json_out, env)

    def on_text(self, text: str) -> None:
        self.pieces.append(text)
        if self.live:
            self.console.print(styled_answer(text), end="")

    def on_expanded(self, exp) -> None:
        if not self.json_out and (exp.rewrite or exp.terms):
            info(expansion_line(exp.rewrite, exp.terms))
