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
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("ragcli-tiny-embed")
    writer.add_context_length(context)
    writer.add_embedding_length(n_embd)
    writer.add_block_count(n_layer)
    writer.add_feed_forward_length(n_ff)
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_head_kv)
    writer.add_rope_dimension_count(n_embd // n_head)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_pooling_type(gguf.PoolingType.MEAN)
    writer.add_vocab_size(len(tokens))
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(tokens.index("<|endoftext|>"))
    writer.add_eos_token_id(tokens.index("<|im_end|>"))
    writer.add_add_bos_token(False)
    rng = np.random.default_rng(seed)
    head_dim = n_embd // n_head
    n_kv = head_dim * n_head_kv

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.2).astype(np.float32)

    tensors = {"token_embd.weight": w(len(tokens), n_embd), "output_norm.weight": np.ones(n_embd, np.float32),
               "output.weight": w(len(tokens), n_embd)}
    for i in range(n_layer):
        p = f"blk.{i}."
        tensors.update({
            p + "attn_norm.weight": np.ones(n_embd, np.float32), p + "attn_q.weight": w(n_embd, n_embd),
            p + "attn_k.weight": w(n_kv, n_embd), p + "attn_v.weight": w(n_kv, n_embd),
            p + "attn_output.weight": w(n_embd, n_embd), p + "ffn_norm.weight": np.ones(n_embd, np.float32),
            p + "ffn_gate.weight": w(n_ff, n_embd), p + "ffn_up.weight": w(n_ff, n_embd),
            p + "ffn_down.weight": w(n_embd, n_ff)})
    tinymodel.save(writer, tensors)
    return path


if __name__ == "__main__":  # python tests/tinyembed.py out.gguf [minilm]
    import sys

    big = len(sys.argv) > 2 and sys.argv[2] == "minilm"
    print(write_embed_gguf(sys.argv[1], **({"n_embd": 384, "n_layer": 6, "n_ff": 1536} if big else {})))
