"""Where output goes and what the terminal can do: one `Environment` (as httpie's) that every
renderer asks, instead of each command probing `sys.stdout.isatty()` and building its own console.

stdout carries the data (answers, tables, JSON); stderr carries messages (errors, warnings,
progress, the status line). Colour follows rich's rules (NO_COLOR, TERM=dumb, not a terminal).
rich is imported lazily so `import ragcli.render.console` stays cheap.
"""
from __future__ import annotations

import atexit
import os
import re
import sys
from typing import IO, Optional


class Environment:
    """The streams and what they are. Built fresh for each command from the current `sys` streams
    (tests' CliRunner swaps them); a test may pass its own streams and flags instead."""

    def __init__(self, stdout: Optional[IO] = None, stderr: Optional[IO] = None,
                 stdout_isatty: Optional[bool] = None, stderr_isatty: Optional[bool] = None,
                 colour: Optional[bool] = None):
        self.stdout = stdout if stdout is not None else sys.stdout
        self.stderr = stderr if stderr is not None else sys.stderr
        self.stdout_isatty = _isatty(self.stdout) if stdout_isatty is None else stdout_isatty
        self.stderr_isatty = _isatty(self.stderr) if stderr_isatty is None else stderr_isatty
        self.colour = (not os.environ.get("NO_COLOR")) if colour is None else colour

    def isatty(self, stderr: bool = False) -> bool:
        return self.stderr_isatty if stderr else self.stdout_isatty

    def console(self, stderr: bool = False):
        """On a terminal: text wrapped at word boundaries to its width. Elsewhere (a pipe, a file):
        plain text, one line per line (no hard wrapping) and no trailing spaces."""
        stream = self.stderr if stderr else self.stdout
        if self.isatty(stderr):
            return _safe_console(file=stream, highlight=False, no_color=not self.colour or None)
        return _safe_console(file=_NoTrailingSpaces(stream), highlight=False, soft_wrap=True, width=PIPE_WIDTH,
                             no_color=not self.colour or None)

    def status_console(self):
        """The stderr console of a status line. On a terminal it writes through its own duplicate of
        stderr's file descriptor: llama-cpp-python points descriptors 1 and 2 at /dev/null while
        llama.cpp loads a model (so do other libraries that silence C code), and a spinner written to
        descriptor 2 would vanish, leaving a still screen while the model loads."""
        if not self.stderr_isatty:
            return self.console(stderr=True)
        return _safe_console(file=_own_stream(self.stderr), highlight=False, no_color=not self.colour or None)


# C0 controls but tab and line feed, DEL, C1 controls (ESC and CSI among them) and the bidirectional
# overrides and isolates (text that reads one way and runs another): what untrusted text must not
# carry to a terminal (escape sequences retitle windows, clear screens, fake output) or into a
# document. Shown as a visible `\x1b` escape instead.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
                      "\ud800-\udfff]")  # lone surrogates: a file name's bytes that are not UTF-8
_CONTROL_OR_BREAK = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
                               "\u0085\u2028\u2029\ud800-\udfff]")


def _visible(match) -> str:
    ch = match.group(0)
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


def terminal_safe(text: str, lines: bool = True) -> str:
    """Untrusted text (a book's title or passage, a question, a file name) safe to print or to write
    into a document: control characters and escape sequences shown as visible escapes (`\x1b`), so
    nothing in the text acts on the terminal. `lines=False` (a title, a heading, a name: one line):
    line breaks become spaces too. Every console this module makes applies it to the text it is given;
    call it yourself for text written by other means (a Markdown export, a raw stream)."""
    if not isinstance(text, str):
        text = str(text)
    if lines:
        return _CONTROL.sub(_visible, text) if _CONTROL.search(text) else text
    text = re.sub("[\r\n\u0085\u2028\u2029]+", " ", text)
    text = text.replace("\t", " ")
    return _CONTROL_OR_BREAK.sub(_visible, text) if _CONTROL_OR_BREAK.search(text) else text


def _safe_console(**kwargs):
    """A rich Console whose every string (print's arguments, table cells, markup) goes through
    terminal_safe before rich renders it: rich's own styling is added after, so colours still work."""
    from rich.console import Console

    class SafeConsole(Console):
        def render_str(self, text, **kw):
            return super().render_str(terminal_safe(text), **kw)

    return SafeConsole(**kwargs)


PIPE_WIDTH = 4000  # tables in a pipe are as wide as their content, never wrapped at 80 columns


class _NoTrailingSpaces:
    """A text stream that drops spaces before each line end (rich pads table cells with them)."""

    def __init__(self, stream):
        self.stream, self._held = stream, ""

    def write(self, text: str) -> int:
        text = self._held + text
        body = text.rstrip(" ")
        self._held = text[len(body):]
        self.stream.write(re.sub(r" +\n", "\n", body))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.stream.fileno()


_OWN_STREAMS: list = []


def _own_stream(stream):
    """A text stream on a private duplicate of `stream`'s file descriptor (closed at exit), or
    `stream` itself when it has no descriptor (a test's in-memory stream)."""
    try:
        fd = stream.fileno()
    except (AttributeError, ValueError, OSError):  # io.UnsupportedOperation is both
        return stream
    stream.flush()
    own = os.fdopen(os.dup(fd), "w", encoding=getattr(stream, "encoding", None) or "utf-8",
                    errors="replace", buffering=1)
    if not _OWN_STREAMS:
        atexit.register(_close_own_streams)
    _OWN_STREAMS.append(own)
    return own


def _close_own_streams() -> None:
    for own in _OWN_STREAMS:
        try:
            own.close()
        except OSError:
            pass
    _OWN_STREAMS.clear()


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or not a file
        return False


def env() -> Environment:
    return Environment()


def console(stderr: bool = False):
    return env().console(stderr)


def err(message: str) -> None:
    console(stderr=True).print(f"[bold red]error:[/] {message}", markup=True, highlight=False)


def warn(message: str) -> None:
    console(stderr=True).print(f"[yellow]warning:[/] {message}", markup=True, highlight=False)


def info(message: str) -> None:
    console(stderr=True).print(message, markup=True, highlight=False)


def escape(text: str) -> str:
    """`text` safe to print with rich markup on."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


class status:
    """`with status("loading ..."):` a spinner on stderr while the block runs, only on a terminal."""

    def __init__(self, message: str, env: Optional[Environment] = None):
        self.env, self.message, self._live = env or Environment(), message, None

    def __enter__(self):
        if self.env.stderr_isatty:
            self._live = self.env.status_console().status(self.message, spinner="dots")
            self._live.__enter__()
        return self

    def __exit__(self, *exc):
        if self._live is not None:
            self._live.__exit__(*exc)
        return False
