"""The live answer (ask and summary new share it): a status line on stderr naming what is being
done while nothing else shows, then the text streamed to stdout as the model writes it.

- The status line (rich, transient) appears only when stderr is a terminal, and is cleared before
  any text is printed; it names the phase: loading a model, rewriting the question, searching,
  reading N prompt tokens (with progress), writing, checking against the book.
- Once text has streamed, the status line never ends the text's line: it is drawn on the row under
  it (a cursor movement, not a line break of the text), and erased with the cursor put back where
  the text stopped, so the next word continues the same line (a slow model's pause never splits a
  word or leaves one word a line).
- An answer's streamed text is a draft (`draft=True`: dimmed) until ragcli's checks have read it:
  `settle()` then erases it and the checked answer is printed in full (a draft taller than the
  screen cannot be erased and stays, dimmed, above it).
- Text streams only when stdout is a terminal and a model writes; piped output and `--json` get
  the finished answer in one piece (render/answers.py, render/data.py).
- Summaries stream as Markdown: a `## Heading` line in bold without its hashes, `- ` bullets as •.
- A draft ragcli does not keep (ask's answer turned `no_answer`, or a first try before the second)
  is withdrawn: its rows are erased (counted as written, wrapping included), or, when some have
  scrolled out of reach, a line under it says it is withdrawn (`withdraw`).
"""
from __future__ import annotations

import re
import threading
import time
from typing import Optional

from rich.cells import cell_len
from rich.control import Control
from rich.markup import escape
from rich.segment import ControlType

from ragcli.render.console import Environment
from ragcli.render.answers import expansion_line, styled_answer

# rich.live and rich.spinner are imported when a status line is drawn: piped and --json runs skip them.

HELD_SHOW = 0.8  # seconds without visible text while the model writes before the status line returns
re_words = re.compile(r"(\n|[ \t]+)")

PHASES = {
    "expand": "finding the book's terms near the question",
    "rewrite": "rewriting the question",
    "standalone": "reading the follow-up with the conversation",
    "search": "searching",
    "checks": "checking the question against the books",
    "prompt": "reading the prompt",
    "judge": "judging which passages answer the question",
    "write": "writing",
    "claims": "checking against the book",
    "verify": "verifying the claims with the model",
}
WITHDRAWN = "↑ withdrawn: ragcli's checks did not keep the text above"


class AnswerStream:
    """Callbacks for the pipelines: `phase(name, **info)` (the status line), `on_text` (validated
    text as it streams), `on_expanded` (the question's rewrite and book terms, dimmed on stderr),
    `progress(event, info)` (the model's own: prompt tokens evaluated, first token)."""

    def __init__(self, live: bool, json_out: bool = False, env: Optional[Environment] = None,
                 markdown: bool = False, draft: bool = False):
        self.env = env or Environment()
        self.console = self.env.console()
        self.err = self.env.status_console()  # the status line survives a library silencing fd 2
        self.live = live and not json_out
        self.json_out = json_out
        self.markdown = markdown
        self.draft = draft  # the streamed text is dimmed until `settle()` replaces it with the checked one
        self.replaced = False  # settle() erased the draft: the answer is to be printed in full
        self.started = time.perf_counter()
        self.first_text: Optional[float] = None  # seconds from start to the first visible text
        self._status = None
        self._spinner = None
        self._below = False  # a status line is drawn on the row under open text (not by rich's Live)
        self._text_open = False  # streamed text without its final newline yet
        self._line_start = True
        self._prefix = ""
        self._line_style = ""
        self._col, self._word, self._word_style, self._space = 0, "", "", ""
        self._last_text = 0.0
        self._draft: list[str] = []  # what was written to stdout since the draft began (withdraw)
        self._lock = threading.RLock()  # the watchdog thread shows the status line too
        self._watching = threading.Event()  # set: the stream is over

    @classmethod
    def for_model(cls, model, json_out: bool, env: Optional[Environment] = None,
                  markdown: bool = False, draft: bool = False) -> "AnswerStream":
        """Live when stdout is a terminal, the output is not JSON and a model writes."""
        env = env or Environment()
        return cls(env.stdout_isatty and model is not None, json_out, env, markdown, draft)

    # -- status line ---------------------------------------------------------------------------

    @property
    def on_progress(self):
        """The model's progress callback, or None when no status line is shown (a model then
        evaluates its prompt in one piece, as it would without ragcli)."""
        return self.progress if self.env.stderr_isatty else None

    def phase(self, name: str, detail: str = "", done: Optional[int] = None, total: Optional[int] = None,
              passages: Optional[int] = None) -> None:
        """Name what is being done on the status line (nothing when stderr is not a terminal);
        `passages`: how many passages the model is given to read."""
        if not self.env.stderr_isatty:
            return
        if passages:
            name, detail = f"reading {passages} passage{'s' if passages != 1 else ''}", detail
        with self._lock:
            self._show(name, detail, done, total)

    def _show(self, name: str, detail: str, done: Optional[int], total: Optional[int]) -> None:
        text = PHASES.get(name, name)
        if name == "prompt" and total:
            text = f"reading {total} prompt tokens"
            if done is not None and done < total:
                text += f" ({done * 100 // total}%)"
        if detail:
            text += f" {detail}"
        if self._text_open:  # text was streamed: the status goes under it, the text's line stays open
            self._show_below(text)
            return
        from rich.live import Live
        from rich.spinner import Spinner

        message = f"[dim]{escape(text)}…[/]"
        if self._status is None:  # rich's Status, with a refresh at each change: a short phase is seen too
            self._spinner = Spinner("dots", text=message, style="status.spinner")
            self._status = Live(self._spinner, console=self.err, transient=True, refresh_per_second=12.5)
            self._status.start()
        else:
            self._spinner.update(text=message)
        self._status.refresh()

    def _show_below(self, text: str) -> None:
        """The status on the row under the open text: the cursor goes down a row (scrolling the
        screen when the text is on its last row), the status is written there, dimmed and cut to
        the width; `_stop_status` erases it and puts the cursor back after the text's last word."""
        if self.err.is_dumb_terminal:
            return
        width = max(self.err.width, 2)
        shown = text if cell_len(text) < width - 1 else text[:width - 2]
        dim, plain = ("\x1b[2m", "\x1b[0m") if self.env.colour else ("", "")
        self.console.file.flush()
        out = self.err.file
        out.write(("\r\x1b[2K" if self._below else "\n") + f"{dim}{shown}…{plain}")
        out.flush()
        self._below = True

    def clear(self) -> None:
        """Remove the status line (before text or a result is printed)."""
        with self._lock:
            self._stop_status()

    def _stop_status(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None
        if self._below:  # erase the status row, back up to the text's row, to the column after its last word
            out = self.err.file
            out.write(f"\r\x1b[2K\x1b[1A\x1b[{min(self._col, self.console.width - 1) + 1}G")
            out.flush()
            self._below = False

    def progress(self, event: str, info: dict) -> None:
        """A model backend's progress (models.chat `on_progress`): prompt evaluation, first token."""
        if event in ("prompt", "prompt_progress"):
            self.phase("prompt", done=info.get("done", 0), total=info.get("total") or info.get("prompt_tokens"))
        elif event == "prompt_done":
            self.phase("write")

    def finish_text(self) -> None:
        """The stream is over: end the streamed text's line."""
        self._watching.set()
        self.clear()
        if self._prefix:  # a line start held back to see whether it was Markdown
            self._wrapped(self._prefix, "")
            self._prefix = ""
        self._flush_word()
        if self._text_open:
            self._end_line()

    def withdraw(self) -> None:
        """The streamed text is not the answer (ask made it `no_answer`): take it off the screen
        before the verdict is printed. Nothing when nothing was streamed (a pipe, --json)."""
        with self._lock:
            self._watching.set()
            self._stop_status()
            if self._text_open:
                self._end_line()
            self._withdraw()

    def _withdraw(self) -> None:
        """Erase the rows the draft took, from the line after it up (as rich's transient Live erases
        itself); when the draft is taller than the screen its first rows are out of reach, so a line
        under it says it is withdrawn instead."""
        if not self._draft:
            return
        lines = "".join(self._draft).split("\n")[:-1]  # the last: the empty line the cursor is on
        self._draft = []
        width = max(self.console.width, 1)
        rows = sum(max(1, -(-cell_len(line) // width)) for line in lines)
        if rows >= self.console.height:
            self.console.print(f"[dim]{WITHDRAWN}[/]", highlight=False)
            return
        self.console.control(Control(ControlType.CARRIAGE_RETURN, (ControlType.ERASE_IN_LINE, 2),
                                     *(((ControlType.CURSOR_UP, 1), (ControlType.ERASE_IN_LINE, 2)) * rows)))

    def settle(self) -> bool:
        """The checks are done and the answer is kept: erase the dimmed draft so the checked answer
        is printed in full in its place (True), or leave it when it is not a draft, nothing was
        streamed, or it is taller than the screen (False: the draft stays above what follows)."""
        with self._lock:
            self._watching.set()
            self._stop_status()
            if not (self.draft and self._draft):
                return False
            if self._text_open:
                self._end_line()
            lines = "".join(self._draft).split("\n")[:-1]
            width = max(self.console.width, 1)
            if sum(max(1, -(-cell_len(line) // width)) for line in lines) >= self.console.height:
                return False
            self._withdraw()
            self.replaced = True
            return True

    def _end_line(self) -> None:
        """End the streamed text's line (the word held back first)."""
        self._flush_word()
        self.console.print()
        self._draft.append("\n")
        self._text_open, self._line_start, self._col = False, True, 0

    # -- text ----------------------------------------------------------------------------------

    def on_text(self, text: str) -> None:
        if not self.live or not text:
            return
        with self._lock:
            self._last_text = time.perf_counter()
            if self.first_text is None:
                self.first_text = self._last_text - self.started
                self._watch()
            self.clear()
            if self.markdown:
                self._markdown(text)
            else:
                self._wrapped(text, "")
            self._text_open = True

    def _watch(self) -> None:
        """While text streams: when none came for HELD_SHOW seconds (a slow machine, or text held
        back: a copied prompt line being removed), the status line comes back below the text, so
        the screen is never still for long."""
        if not self.env.stderr_isatty:
            return

        def watch() -> None:
            while not self._watching.wait(0.2):
                with self._lock:
                    if self._watching.is_set():
                        break
                    waited = time.perf_counter() - self._last_text
                    if self._text_open and self._status is None and waited > HELD_SHOW:
                        self._show("write", f"(waiting for the model, {waited:.0f} s)", None, None)

        threading.Thread(target=watch, name="ragcli-status", daemon=True).start()

    def _wrapped(self, text: str, style: str) -> None:
        """Print streamed text wrapped at word boundaries: a word is held until it is complete,
        then goes on the line if it fits, else on the next one (the space before it is dropped)."""
        width = self.console.width
        for part in re_words.split(text):
            if not part:
                continue
            if part == "\n":
                self._flush_word()
                self._out("\n", style)
                self._col, self._space = 0, ""
            elif part.isspace():
                self._flush_word()
                self._space += part
            else:
                self._word += part
                self._word_style = style
        if self._word and len(self._word) > width // 2:  # a very long "word": show it now
            self._flush_word()

    def _flush_word(self) -> None:
        if not self._word:
            return
        width = self.console.width
        if self._col and self._col + len(self._space) + len(self._word) > width:
            self._out("\n", "")
            self._col, self._space = 0, ""
        if self._space and self._col:  # no space at the start of a line
            self._out(self._space, "")
            self._col += len(self._space)
        self._out(self._word, self._word_style)
        self._col += len(self._word)
        self._word, self._space = "", ""

    def _out(self, text: str, style: str) -> None:
        self._draft.append(text)
        styled = styled_answer(text)
        if style:
            styled.stylize(style)
        if self.draft:
            styled.stylize("dim")
        self.console.print(styled, end="", soft_wrap=True)

    def _markdown(self, text: str) -> None:
        """Line by line: hold a line's first characters until it is known to be a heading or a bullet."""
        out = []
        for ch in text:
            if self._line_start:
                self._prefix += ch
                if ch == "\n":
                    out.append((self._prefix, ""))
                    self._prefix = ""
                    continue
                if self._prefix.lstrip("#") == "" or self._prefix in ("-", "*"):
                    continue  # maybe a heading or a bullet
                head = self._prefix.lstrip("#")
                if self._prefix.startswith("#") and head.startswith(" "):
                    self._line_style = "bold"
                    out.append((head.lstrip(), self._line_style))
                elif self._prefix in ("- ", "* "):
                    out.append(("• ", ""))
                else:
                    out.append((self._prefix, ""))
                self._prefix, self._line_start = "", False
                continue
            out.append((ch, self._line_style))
            if ch == "\n":
                self._line_start, self._line_style = True, ""
        for piece, style in out:
            self._wrapped(piece, style)

    def on_expanded(self, exp) -> None:
        if not self.json_out and (exp.rewrite or exp.terms):
            self.err.print(expansion_line(exp.rewrite, exp.terms), highlight=False)

    def timings(self) -> dict:
        """`first_text`: seconds from the start of the command's work to the first streamed text."""
        return {} if self.first_text is None else {"first_text": round(self.first_text, 4)}
