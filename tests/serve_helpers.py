"""Starting `ragcli serve` for the tests and benchmarks: a real subprocess on 127.0.0.1, with the
test's model cache and a private copy of a corpus."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# A long answer to force the tiny model to write (a GBNF grammar): several seconds of generation, for
# what happens while the model is busy.
NOUNS = ("bone flap", "dressing", "drain", "wound edge", "suture line", "scalp", "bandage", "pressure",
         "skin clip", "head wrap", "swelling", "incision", "gauze")
VERBS = ("is lifted", "stays dry", "is checked", "is cleaned", "is kept cool", "is covered", "is watched",
         "is padded", "is raised", "is taped", "is marked")
WHEN = ("at night", "each morning", "after meals", "before rounds", "on the ward", "in theatre", "at home",
        "during transport", "while asleep", "before discharge")
# about 5,000 tokens of the tiny model's byte-level vocabulary, no sentence twice (a repeated one is a
# loop, and ragcli stops a looping generation)
LONG = " ".join(f"The {NOUNS[i % 13]} {VERBS[(i * 7) % 11]} {WHEN[(i * 3) % 10]} [S1]." for i in range(110))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(cache: Path, home: Path) -> dict:
    env = dict(os.environ)
    for var in ("RAGCLI_MODEL", "RAGCLI_CONFIG", "RAGCLI_DEBUG", "RAGCLI_SERVE_KEY", "RAGCLI_DB"):
        env.pop(var, None)
    env.update(RAGCLI_CACHE=str(cache), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               XDG_DATA_HOME=str(home / "data"), XDG_CONFIG_HOME=str(home / "config"),
               XDG_CACHE_HOME=str(home / "cache"), PYTHONPATH=str(ROOT))
    return env


def corpus_copy(template_db: dict, folder: Path, inbox: str = "") -> tuple[Path, Path | None]:
    """A fresh copy of the session's template corpus in `folder` (a server may write to it), and
    `folder/inbox` made empty when named (a folder a server is allowed to ingest from)."""
    db = folder / "corpus.db"
    shutil.copyfile(template_db["path"], db)
    box = None
    if inbox:
        box = folder / inbox
        box.mkdir()
    return db, box


def keyed_server(template_db: dict, model_cache: Path, folder: Path, key: str) -> "Server":
    """A server on a copy of the template corpus whose API key comes from RAGCLI_SERVE_KEY."""
    db, _ = corpus_copy(template_db, folder)
    env = server_env(model_cache, folder / "home")
    env["RAGCLI_SERVE_KEY"] = key
    return Server(["--db", db], env, folder / "serve.log", key=key)


class Server:
    """`python -m ragcli serve ARGS --port P` until stop(); `log` holds its stderr."""

    def __init__(self, args: list, env: dict, log: Path, key: str = ""):
        self.port = free_port()
        self.log = log
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([sys.executable, "-m", "ragcli", "serve", *map(str, args),
                                      "--port", str(self.port)], stdout=open(log, "w"), stderr=subprocess.STDOUT,
                                     env=env, cwd=ROOT)
        self._wait(key)

    def _wait(self, key: str, seconds: float = 180) -> None:
        deadline = time.time() + seconds
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"ragcli serve exited: {self.log.read_text()[-3000:]}")
            try:
                req = urllib.request.Request(self.url + "/v1/models", headers={"Authorization": f"Bearer {key}"})
                with urllib.request.urlopen(req, timeout=2) as r:
                    if r.status == 200:
                        return
            except (OSError, urllib.error.URLError):
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"ragcli serve not ready after {seconds} s: {self.log.read_text()[-3000:]}")

    def rss_kb(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
