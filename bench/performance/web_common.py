"""What the page benchmarks (bench_web_stream.py, bench_web_reads.py) share: a corpus (a copy of --db, or
the sample book ingested) and a `ragcli serve` on 127.0.0.1 whose tiny model is forced by a GBNF
grammar to write a given text."""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from serve_helpers import Server, server_env  # noqa: E402


def corpus(db: Path | None, work: Path) -> Path:
    target = work / "corpus.db"
    if db:
        shutil.copyfile(db, target)
        return target
    from ragcli.ingest import pipeline
    from ragcli.models import embed
    from ragcli.store import db as store

    conn = store.connect(target)
    pipeline.ingest_file(conn, ROOT / "corpus" / "cerebrovascular-neurosurgery-primer.pdf", embed.get_embedder())
    conn.close()
    return target


def forced_server(prefix: str, db: Path | None, cache: str | None, text: str, serve_args: list,
                  context: int | None = None) -> Server:
    """`ragcli serve` over a corpus in a new temporary folder (named with `prefix`), the tiny model (of
    `context` tokens, else its default) forced to write `text`; `serve_args` (--ctx, --max-tokens,
    --threads, ...) added. The embedding model comes from `cache` (RAGCLI_CACHE), else a shared temp
    folder; this process gets the same environment (it ingests the sample book when no --db is given)."""
    from ragcli.models.grammars import forced_text_grammar
    from tinymodel import write_tiny_gguf

    work = Path(tempfile.mkdtemp(prefix=prefix))
    cache_dir = Path(cache) if cache else Path(tempfile.gettempdir()) / "ragcli-bench-cache"
    env = server_env(cache_dir, work / "home")
    os.environ.update({k: env[k] for k in ("RAGCLI_CACHE", "HF_HUB_OFFLINE", "XDG_CONFIG_HOME")})
    target = corpus(db, work)
    model = write_tiny_gguf(work / "tiny.gguf", **({"context": context} if context else {}))
    grammar = work / "forced.gbnf"
    grammar.write_text(forced_text_grammar(text))
    return Server(["--db", target, "--model", model, *serve_args, "--grammar-file", grammar], env,
                  work / "serve.log")
