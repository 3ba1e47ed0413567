"""Write an embedding GGUF for tests and benches: the tiny `llama` model of tinymodel.py with mean
pooling recorded in the file, so llama.cpp (in process, or its servers with --embedding) returns one
pooled vector per text. Random weights: the vectors mean nothing, but the real code paths run.

`write_embed_gguf(path, n_embd=384, n_layer=6, n_ff=1536)` makes one about as costly to run as
all-MiniLM-L6-v2 (the throughput bench), still with random weights."""
from __future__ import annotations

from pathlib import Path

import numpy as np

import tinymodel


def write_embed_gguf(path: str | Path, seed: int = 1, n_embd: int = tinymodel.N_EMBD,
                     n_layer: int = tinymodel.N_LAYER, n_ff: int = tinymodel.N_FF, n_head: int = 4,
                     n_head_kv: int = 2, context: int = 2048) -> Path:
    import gguf

    path = Path(path)
    tokens, types, merges = tinymodel.tiny_vocab()
    shape = dict(n_embd=n_embd, n_layer=n_layer, n_ff=n_ff, n_head=n_head, n_head_kv=n_head_kv)
    writer = tinymodel.llama_writer(path, "ragcli-tiny-embed", tokens, types, merges, context=context,
                                    pooling=gguf.PoolingType.MEAN, **shape)
    tensors = tinymodel.random_tensors(len(tokens), np.random.default_rng(seed), **shape)
    tinymodel.save(writer, tensors)
    return path


if __name__ == "__main__":  # python tests/tinyembed.py out.gguf [minilm]
    import sys

    big = len(sys.argv) > 2 and sys.argv[2] == "minilm"
    print(write_embed_gguf(sys.argv[1], **({"n_embd": 384, "n_layer": 6, "n_ff": 1536} if big else {})))
