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


def random_tensors(n_vocab: int, rng: np.random.Generator, n_embd: int = N_EMBD, n_layer: int = N_LAYER,
             n_ff: int = N_FF, n_head: int = N_HEAD, n_head_kv: int = N_HEAD_KV) -> dict[str, np.ndarray]:
    """Random weights; numpy shapes are (rows, cols) = ggml's (ne1, ne0)."""
    head_dim = n_embd // n_head
    n_kv = head_dim * n_head_kv

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.2).astype(np.float32)

    tensors = {
        "token_embd.weight": w(n_vocab, n_embd),
        "output_norm.weight": np.ones(n_embd, dtype=np.float32),
        "output.weight": w(n_vocab, n_embd),
    }
    for i in range(n_layer):
        p = f"blk.{i}."
        tensors.update({
            p + "attn_norm.weight": np.ones(n_embd, dtype=np.float32),
            p + "attn_q.weight": w(n_embd, n_embd),
            p + "attn_k.weight": w(n_kv, n_embd),
            p + "attn_v.weight": w(n_kv, n_embd),
            p + "attn_output.weight": w(n_embd, n_embd),
            p + "ffn_norm.weight": np.ones(n_embd, dtype=np.float32),
            p + "ffn_gate.weight": w(n_ff, n_embd),
            p + "ffn_up.weight": w(n_ff, n_embd),
            p + "ffn_down.weight": w(n_embd, n_ff),
        })
    return tensors


def llama_writer(path: Path, name: str, tokens: list[str], types: list[int], merges: list[str], *,
                 context: int = CONTEXT_LENGTH, n_embd: int = N_EMBD, n_layer: int = N_LAYER, n_ff: int = N_FF,
                 n_head: int = N_HEAD, n_head_kv: int = N_HEAD_KV, pooling=None):
    """A GGUFWriter with the tiny `llama` model's metadata (shapes, the byte-level BPE vocabulary);
    `pooling` (a gguf.PoolingType) makes it an embedding model."""
    import gguf

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name(name)
    writer.add_context_length(context)
    writer.add_embedding_length(n_embd)
    writer.add_block_count(n_layer)
    writer.add_feed_forward_length(n_ff)
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_head_kv)
    writer.add_rope_dimension_count(n_embd // n_head)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    if pooling is not None:
        writer.add_pooling_type(pooling)
    writer.add_vocab_size(len(tokens))
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(tokens.index("<|endoftext|>"))
    writer.add_eos_token_id(tokens.index("<|im_end|>"))
    writer.add_add_bos_token(False)
    return writer


GEMMA_LIKE_TEMPLATE = (  # refuses a system message, as Gemma's template does
    "{% for message in messages %}"
    "{% if message['role'] == 'system' %}"
    "{{ raise_exception('System role not supported') }}{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}{{ '<|im_start|>assistant\\n' }}"
)


def write_tiny_gguf(path: str | Path, seed: int = 0,
                    chat_template: str | None = CHAT_TEMPLATE, context: int = CONTEXT_LENGTH) -> Path:
    """Write the tiny model to `path` (about 440 KB) and return the path.

    `chat_template=None` leaves the template out (as in some old GGUF files); `context`: the window it
    declares it was trained with (a longer one lets a test keep it writing for seconds)."""
    path = Path(path)
    tokens, types, merges = tiny_vocab()
    writer = llama_writer(path, "ragcli-tiny-test", tokens, types, merges, context=context)
    if chat_template is not None:
        writer.add_chat_template(chat_template)
    save(writer, random_tensors(len(tokens), np.random.default_rng(seed)))
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
