"""Write a tiny `bert`-architecture reranker GGUF (random weights, a classification head, rank
pooling) with the `gguf` package, for running llama.cpp's rank pooling in tests.

Its scores mean nothing, but they are real: llama.cpp tokenizes the pair, runs the encoder and the
classification head, and pools the first token's output into one number per pair.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from tinymodel import save

N_EMBD = 32
N_HEAD = 2
N_LAYER = 1
N_FF = 64
CONTEXT_LENGTH = 512

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def vocab() -> list[str]:
    """Special tokens, characters and a few whole words. llama.cpp's WordPiece vocabulary marks a
    word start with "▁" (as its converter writes BERT vocabularies); continuations are bare."""
    chars = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [str(d) for d in range(10)] + list(".,;:!?'\"()-[]")
    words = ["the", "bleeding", "wound", "pressure", "apply", "tourniquet", "burn", "water", "heat", "stroke",
             "splint", "fracture", "shock", "airway", "breathing"]
    return SPECIAL + ["▁" + c for c in chars] + chars + ["▁" + w for w in words]


def write_tiny_reranker(path: str | Path, seed: int = 0) -> Path:
    import gguf

    path = Path(path)
    tokens = vocab()
    rng = np.random.default_rng(seed)

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.2).astype(np.float32)

    def ones(n: int) -> np.ndarray:
        return np.ones(n, dtype=np.float32)

    def zeros(n: int) -> np.ndarray:
        return np.zeros(n, dtype=np.float32)

    writer = gguf.GGUFWriter(str(path), "bert")
    writer.add_name("ragcli-tiny-reranker")
    writer.add_context_length(CONTEXT_LENGTH)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(N_LAYER)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEAD)
    writer.add_layer_norm_eps(1e-12)
    writer.add_causal_attention(False)
    writer.add_pooling_type(gguf.PoolingType.RANK)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("bert")
    writer.add_token_list(tokens)
    writer.add_token_types([int(gguf.TokenType.CONTROL) if t in SPECIAL else int(gguf.TokenType.NORMAL)
                            for t in tokens])
    writer.add_token_type_count(2)
    writer.add_bos_token_id(tokens.index("[CLS]"))
    writer.add_eos_token_id(tokens.index("[SEP]"))
    writer.add_sep_token_id(tokens.index("[SEP]"))
    writer.add_pad_token_id(tokens.index("[PAD]"))
    writer.add_unk_token_id(tokens.index("[UNK]"))
    writer.add_mask_token_id(tokens.index("[MASK]"))
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(True)
    tensors = {
        "token_embd.weight": w(len(tokens), N_EMBD),
        "token_types.weight": w(2, N_EMBD),
        "position_embd.weight": w(CONTEXT_LENGTH, N_EMBD),
        "token_embd_norm.weight": ones(N_EMBD), "token_embd_norm.bias": zeros(N_EMBD),
        "cls.weight": w(N_EMBD, N_EMBD), "cls.bias": zeros(N_EMBD),
        "cls.output.weight": w(1, N_EMBD), "cls.output.bias": zeros(1),
    }
    for i in range(N_LAYER):
        p = f"blk.{i}."
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            tensors[p + name + ".weight"] = w(N_EMBD, N_EMBD)
            tensors[p + name + ".bias"] = zeros(N_EMBD)
        tensors.update({
            p + "attn_output_norm.weight": ones(N_EMBD), p + "attn_output_norm.bias": zeros(N_EMBD),
            p + "ffn_up.weight": w(N_FF, N_EMBD), p + "ffn_up.bias": zeros(N_FF),
            p + "ffn_down.weight": w(N_EMBD, N_FF), p + "ffn_down.bias": zeros(N_EMBD),
            p + "layer_output_norm.weight": ones(N_EMBD), p + "layer_output_norm.bias": zeros(N_EMBD),
        })
    save(writer, tensors)
    return path


if __name__ == "__main__":  # python tests/tinyreranker.py out.gguf
    import sys

    print(write_tiny_reranker(sys.argv[1] if len(sys.argv) > 1 else "tiny-reranker.gguf"))
