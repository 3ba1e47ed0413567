"""Build a synthetic ragcli corpus of N passages (384-d vectors) by direct SQL into the real schema.

    python bench/performance/make_synthetic.py --n 100000 --out /tmp/synth-100k.db

Vectors have structure like sentence embeddings, not uniform noise: a shared mean direction (every
pair of real MiniLM vectors has a positive cosine), topics, clusters inside topics, and points
scattered around their cluster centre (cosine to it about 0.5-0.8), all L2-normalised. Each passage
has a short text made of its cluster's topic words and Zipf-distributed common words, so the FTS5
leg has something to match. Books hold 10,000 passages each. The corpus records
all-MiniLM-L6-v2 as its model, so `ragcli search` runs on it (a real query vector lands somewhere
arbitrary in this space: the timing is real, the hits are not meaningful).

`synthetic_queries(n, seed)` gives query vectors and texts drawn from the same mixture.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ragcli.store import db
from ragcli.store import corpus as store  # noqa: E402
from ragcli.store import vectors  # noqa: E402

DIM = 384
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
BOOK_SIZE = 10_000
CLUSTER_SIZE = 400  # average passages per cluster
TOPIC_CLUSTERS = 20  # clusters per topic
WORDS_PER_TEXT = 30
SYLLABLES = ["ka", "lo", "mi", "ra", "tu", "ven", "sor", "di", "pha", "ne", "gul", "tre", "xo", "bri",
             "an", "qui", "zel", "mor", "ta", "sef"]


class Mixture:
    """The generative model: mean direction, topic and cluster centres, spreads, topic words."""

    def __init__(self, n: int, seed: int = 7):
        rng = np.random.default_rng(seed)
        self.clusters = max(16, n // CLUSTER_SIZE)
        topics = max(2, self.clusters // TOPIC_CLUSTERS)
        self.mean = _unit(rng.standard_normal(DIM))
        topic_centres = _unit(rng.standard_normal((topics, DIM)))
        self.topic_of = rng.integers(0, topics, self.clusters)
        self.centres = _unit(topic_centres[self.topic_of] + 0.9 * _unit(rng.standard_normal((self.clusters, DIM))))
        self.spread = rng.uniform(0.7, 1.5, self.clusters).astype(np.float32)
        self.vocab = _words(6000, rng)
        self.common = self.vocab[:5000]
        self.topic_words = rng.choice(self.vocab[500:], size=(self.clusters, 6), replace=True)

    def vectors(self, cluster: np.ndarray, rng, scale: float = 1.0) -> np.ndarray:
        noise = _unit(rng.standard_normal((len(cluster), DIM))) * (self.spread[cluster] * scale)[:, None]
        return _unit(_unit(self.centres[cluster] + noise) + 0.35 * self.mean).astype(np.float32)

    def texts(self, cluster: np.ndarray, rng) -> list[str]:
        ranks = np.minimum(rng.zipf(1.3, size=(len(cluster), WORDS_PER_TEXT - 8)), len(self.common)) - 1
        topic = rng.integers(0, 6, size=(len(cluster), 8))
        out = []
        for c, r, t in zip(cluster, ranks, topic):
            words = list(self.common[r]) + list(self.topic_words[c][t])
            rng.shuffle(words)
            out.append(" ".join(words))
        return out


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _words(n: int, rng) -> np.ndarray:
    seen: dict[str, None] = {}
    while len(seen) < n:
        seen["".join(rng.choice(SYLLABLES, size=rng.integers(2, 4)))] = None
    return np.array(list(seen))


def synthetic_queries(n_corpus: int, count: int, seed: int = 7) -> tuple[np.ndarray, list[str]]:
    """Query vectors (tighter around a cluster than passages) and 3-word query texts."""
    mix = Mixture(n_corpus, seed)
    rng = np.random.default_rng(seed + 1000)
    cluster = rng.integers(0, mix.clusters, count)
    vecs = mix.vectors(cluster, rng, scale=0.6)
    texts = [" ".join([*rng.choice(mix.topic_words[c], 2, replace=False), mix.common[rng.integers(50, 400)]])
             for c in cluster]
    return vecs, texts


def build(n: int, out: Path, seed: int = 7, say=print) -> None:
    if out.exists():
        raise SystemExit(f"{out} exists; remove it first")
    mix = Mixture(n, seed)
    rng = np.random.default_rng(seed)
    conn = db.connect(out)
    with conn:
        conn.execute("BEGIN IMMEDIATE")
        store.ensure_vector_tables(conn, MODEL, DIM)
    t0, next_id = time.perf_counter(), 1
    for b, start in enumerate(range(0, n, BOOK_SIZE)):
        size = min(BOOK_SIZE, n - start)
        book_id = f"synth-{b:03d}"
        cluster = rng.integers(0, mix.clusters, size)
        ids = list(range(next_id, next_id + size))
        next_id += size
        texts = mix.texts(cluster, rng)
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO books(id, title, path, file_hash, page_count, ingested_at) "
                         "VALUES (?,?,?,?,?,?)", (book_id, f"Synthetic book {b}", f"synthetic/{book_id}.pdf",
                                                  f"synthetic-{seed}-{b}", size // 4 + 1, store.now()))
            section = json.dumps(["Synthetic", "cluster"])
            conn.executemany(
                "INSERT INTO passages(id, book_id, ordinal, kind, figure_number, section_path, heading,"
                " page_start, page_end, text, text_hash, embed_hash) VALUES (?,?,?,'passage',NULL,?,?,?,?,?,?,?)",
                ((pid, book_id, i, section, "Synthetic › cluster", i // 4 + 1, i // 4 + 1, text,
                  f"t{pid:x}", f"e{pid:x}") for i, (pid, text) in enumerate(zip(ids, texts))))
            vectors.add_vectors(conn, book_id, ids, mix.vectors(cluster, rng))
        say(f"{start + size:>9,} passages  {time.perf_counter() - t0:7.1f}s")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("ANALYZE")
    conn.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, required=True, help="number of passages")
    ap.add_argument("--out", type=Path, required=True, help="corpus file to create")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    build(args.n, args.out, args.seed)
    size = args.out.stat().st_size
    print(f"{args.out}: {size / 1e6:.1f} MB, {size / args.n:.0f} bytes per passage")


if __name__ == "__main__":
    main()
