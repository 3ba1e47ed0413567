"""Write a tiny `llama`-architecture GGUF with random weights, for running llama.cpp in tests.

The model writes gibberish, but it loads in milliseconds and generates, so the real llama.cpp code
path (tokenizer, chat template, KV cache, grammar-constrained sampling) runs in every test.

What llama.cpp insists on (see docs ENVIRONMENT.md "Language models"):
- a `gpt2` (byte-level BPE) vocabulary needs at least one merge, and each merge result must itself
  be a token of the vocabulary;
- `tokenizer.chat_template` must be present for `create_chat_completion` to format messages.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

N_EMBD = 64
N_HEAD = 4
N_HEAD_KV = 2
N_LAYER = 2
N_FF = 128
CONTEXT_LENGTH = 2048

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# Merges as pairs of byte-level token strings; each result is appended to the vocabulary.
MERGES = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("e", "r"), ("Ġ", "a"), ("o", "n")]

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable unicode character mapping."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    bs += list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def tiny_vocab() -> tuple[list[str], list[int], list[str]]:
    """Tokens, token types and merges: 256 byte tokens, merge results, then special tokens."""
    import gguf

    byte_chars = bytes_to_unicode()
    byte_tokens = [byte_chars[b] for b in range(256)]
    merged = [a + b for a, b in MERGES]
    tokens = byte_tokens + merged + SPECIAL_TOKENS
    normal, control = int(gguf.TokenType.NORMAL), int(gguf.TokenType.CONTROL)
    types = [normal] * (len(byte_tokens) + len(merged)) + [control] * len(SPECIAL_TOKENS)
    known = set(tokens)
    for a, b in MERGES:
        assert a in known and b in known and a + b in known, (a, b)
    return tokens, types, [f"{a} {b}" for a, b in MERGES]


def _tensors(n_vocab: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Random weights; numpy shapes are (rows, cols) = ggml's (ne1, ne0)."""
    head_dim = N_EMBD // N_HEAD
    n_kv = head_dim * N_HEAD_KV

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.2).astype(np.float32)

    tensors = {
        "token_embd.weight": w(n_vocab, N_EMBD),
        "output_norm.weight": np.ones(N_EMBD, dtype=np.float32),
        "output.weight": w(n_vocab, N_EMBD),
    }
    for i in range(N_LAYER):
        p = f"blk.{i}."
        tensors.update({
            p + "attn_norm.weight": np.ones(N_EMBD, dtype=np.float32),
            p + "attn_q.weight": w(N_EMBD, N_EMBD),
            p + "attn_k.weight": w(n_kv, N_EMBD),
            p + "attn_v.weight": w(n_kv, N_EMBD),
            p + "attn_output.weight": w(N_EMBD, N_EMBD),
            p + "ffn_norm.weight": np.ones(N_EMBD, dtype=np.float32),
            p + "ffn_gate.weight": w(N_FF, N_EMBD),
            p + "ffn_up.weight": w(N_FF, N_EMBD),
            p + "ffn_down.weight": w(N_EMBD, N_FF),
        })
    return tensors


GEMMA_LIKE_TEMPLATE = (  # refuses a system message, as Gemma's template does
    "{% for message in messages %}"
    "{% if message['role'] == 'system' %}"
    "{{ raise_exception('System role not supported') }}{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}{{ '<|im_start|>assistant\\n' }}"
)


def write_tiny_gguf(path: str | Path, seed: int = 0,
                    chat_template: str | None = CHAT_TEMPLATE) -> Path:
    """Write the tiny model to `path` (about 440 KB) and return the path.

    `chat_template=None` leaves the template out (as in some old GGUF files)."""
    import gguf

    path = Path(path)
    tokens, types, merges = tiny_vocab()
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("ragcli-tiny-test")
    writer.add_context_length(CONTEXT_LENGTH)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(N_LAYER)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD_KV)
    writer.add_rope_dimension_count(N_EMBD // N_HEAD)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_vocab_size(len(tokens))
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(tokens.index("<|endoftext|>"))
    writer.add_eos_token_id(tokens.index("<|im_end|>"))
    writer.add_add_bos_token(False)
    if chat_template is not None:
        writer.add_chat_template(chat_template)
    save(writer, _tensors(len(tokens), np.random.default_rng(seed)))
    return path


def save(writer, tensors: dict) -> None:
    """Add the tensors and write the file (header, metadata, weights)."""
    for name, data in tensors.items():
        writer.add_tensor(name, data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":  # python tests/tinymodel.py out.gguf
    import sys

    print(write_tiny_gguf(sys.argv[1] if len(sys.argv) > 1 else "tiny.gguf"))
