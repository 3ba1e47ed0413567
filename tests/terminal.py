"""Run ragcli as a person sees it: in a pseudo-terminal of a given size, the output fed to a terminal
emulator (pyte), every chunk timed.

`run(args, columns=80)` -> Screen: `.text` (the final screen, one string per row, trailing spaces
dropped), `.raw` (every byte written, as text), `.chunks` ([(seconds since start, text)]),
`.returncode`, `.longest_gap` (seconds between two writes, start to exit), `.seen(text)` (did the text
appear on screen at any moment: after each chunk the screen is checked), `.stdout` when stdout was piped.
"""
from __future__ import annotations

import codecs
import fcntl
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Screen:
    returncode: int
    chunks: list[tuple[float, str]]
    text: list[str]
    snapshots: list[list[str]] = field(default_factory=list)  # the screen after each chunk
    stdout: str | None = None
    elapsed: float = 0.0

    @property
    def raw(self) -> str:
        return "".join(c for _, c in self.chunks)

    @property
    def longest_gap(self) -> float:
        times = [0.0] + [t for t, _ in self.chunks] + [self.elapsed]
        return max(b - a for a, b in zip(times, times[1:]))

    def seen(self, needle: str) -> bool:
        return any(needle in line for snap in self.snapshots for line in snap)

    @property
    def screen(self) -> str:
        return "\n".join(self.text).rstrip("\n")


def run(args, columns: int = 80, rows: int = 200, pipe_stdout: bool = False, env: dict | None = None,
        timeout: float = 600, module: str | None = "ragcli") -> Screen:
    """`python -m ragcli ARGS` in the pseudo-terminal; module=None runs `python ARGS` (e.g. ["-c", code])."""
    import pyte

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    environment = dict(env if env is not None else os.environ)
    environment.update(COLUMNS=str(columns), LINES=str(rows), TERM="xterm-256color")
    start = time.monotonic()
    command = [sys.executable, *(["-m", module] if module else []), *map(str, args)]
    proc = subprocess.Popen(command, stdin=slave,
                            stdout=subprocess.PIPE if pipe_stdout else slave, stderr=slave, cwd=ROOT,
                            env=environment, close_fds=True, start_new_session=True)
    os.close(slave)
    screen = pyte.Screen(columns, rows)
    stream = pyte.Stream(screen)
    chunks: list[tuple[float, str]] = []
    snapshots: list[list[str]] = []
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    out_fd = proc.stdout.fileno() if pipe_stdout else None
    piped: list[bytes] = []
    fds = [master] + ([out_fd] if out_fd is not None else [])
    while fds:
        if time.monotonic() - start > timeout:
            proc.kill()
            raise TimeoutError(f"ragcli {' '.join(map(str, args))} ran over {timeout} s")
        ready, _, _ = select.select(fds, [], [], 0.05)
        for fd in ready:
            try:
                data = os.read(fd, 65536)
            except OSError:  # EIO: the child closed the terminal
                data = b""
            if not data:
                fds.remove(fd)
                continue
            if fd == out_fd:
                piped.append(data)
                continue
            text = decoder.decode(data)
            chunks.append((time.monotonic() - start, text))
            stream.feed(text)
            snapshots.append([line.rstrip() for line in screen.display])
    proc.wait()
    os.close(master)
    elapsed = time.monotonic() - start
    return Screen(proc.returncode, chunks, [line.rstrip() for line in screen.display], snapshots,
                  b"".join(piped).decode("utf-8", errors="replace") if pipe_stdout else None, elapsed)


class Session:
    """An interactive run: `python -m ragcli ARGS` with the pseudo-terminal as its controlling terminal
    (so Ctrl-C, written as "\\x03", is a SIGINT as in a shell), the output fed to pyte, keys sent with
    `send`. Cursor-position requests (ESC[6n, prompt_toolkit's) are answered as a terminal does.

        s = Session(["chat", ...]); s.wait_for("›"); s.send("question\\r"); s.wait_for("Sources")
        s.send("\\x04"); s.close()  # -> returncode
    """

    def __init__(self, args, columns: int = 100, rows: int = 60, env: dict | None = None):
        import pyte

        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        environment = dict(env if env is not None else os.environ)
        environment.update(COLUMNS=str(columns), LINES=str(rows), TERM="xterm-256color")

        def controlling_terminal() -> None:  # in the child: a session whose terminal is the pty
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
            # Ctrl-C as a shell's foreground program gets it: pytest started in the background (`... &`)
            # ignores SIGINT, and an ignored signal stays ignored across exec
            signal.signal(signal.SIGINT, signal.SIG_DFL)

        self.start = time.monotonic()
        self.proc = subprocess.Popen([sys.executable, "-m", "ragcli", *map(str, args)], stdin=slave, stdout=slave,
                                     stderr=slave, cwd=ROOT, env=environment, close_fds=True,
                                     preexec_fn=controlling_terminal)
        os.close(slave)
        self.screen = pyte.Screen(columns, rows)
        self.stream = pyte.Stream(self.screen)
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.chunks: list[tuple[float, str]] = []
        self.snapshots: list[list[str]] = []
        self.closed = False

    def _pump(self, wait: float) -> None:
        if self.closed:
            return
        ready, _, _ = select.select([self.master], [], [], wait)
        if not ready:
            return
        try:
            data = os.read(self.master, 65536)
        except OSError:
            data = b""
        if not data:
            self.closed = True
            return
        text = self.decoder.decode(data)
        self.chunks.append((time.monotonic() - self.start, text))
        self.stream.feed(text)
        for _ in range(text.count("\x1b[6n")):  # where the cursor is, 1-based
            os.write(self.master, f"\x1b[{self.screen.cursor.y + 1};{self.screen.cursor.x + 1}R".encode())
        self.snapshots.append([line.rstrip() for line in self.screen.display])

    def wait_for(self, needle: str, timeout: float = 120, after: int = 0, line_start: bool = False) -> int:
        """Read until `needle` is on screen (at the start of a line: `line_start`) in a snapshot taken
        after snapshot number `after`; returns the number of snapshots then (pass it as `after` to wait
        for the next time it shows)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for snap in self.snapshots[after:]:
                if any(line.startswith(needle) if line_start else needle in line for line in snap):
                    return len(self.snapshots)
            if self.closed:
                break
            self._pump(0.05)
        raise AssertionError(f"{needle!r} never shown; screen:\n" + self.text)

    def wait_for_cursor_line(self, needle: str, timeout: float = 60) -> str:
        """Read until the line the cursor is on starts with `needle` (what is being typed or recalled
        now, not a line of earlier output); returns that line."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.screen.display[self.screen.cursor.y].rstrip()
            if line.startswith(needle):
                return line
            if self.closed:
                break
            self._pump(0.05)
        raise AssertionError(f"{needle!r} never on the cursor's line; it shows "
                             f"{self.screen.display[self.screen.cursor.y].rstrip()!r}")

    def send(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    @property
    def raw(self) -> str:
        return "".join(c for _, c in self.chunks)

    @property
    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display).rstrip("\n")

    def close(self, timeout: float = 60) -> int:
        deadline = time.monotonic() + timeout
        while not self.closed and time.monotonic() < deadline:
            self._pump(0.05)
        try:
            code = self.proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            os.close(self.master)
        return code
