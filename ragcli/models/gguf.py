"""GGUF file headers: metadata and the facts people want about a model file, without loading it.

A GGUF file starts with the magic, a version, the tensor count and the metadata count; then the
metadata key/values; then one info record per tensor (name, shape, type, offset). Reading stops
before the weights, so this is fast even on multi-GB files.
"""
from __future__ import annotations

import os
import re
import struct
from pathlib import Path
from typing import Optional, Union

from ragcli.errors import ModelError

GGUF_MAGIC = b"GGUF"
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
            11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9

# general.file_type -> the quantisation name llama.cpp prints (llama_ftype in llama.h)
FILE_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
              11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S",
              17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS",
              23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S",
              29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0", 37: "TQ2_0"}


# quantisation words a converter may leave in general.name (the weights it started from), which the
# file's own type contradicts: "Qwen2.5 Coder 0.5B Instruct AWQ" in a Q4_K_M file
_QUANT_WORDS = re.compile(r"[\s_-]*\b(AWQ|GPTQ|GGUF|GGML|EXL2|bnb|[IQ]\d\w*|F16|F32|BF16|fp16|int[48])\b", re.I)


def display_name(name: Optional[str], quantization: Optional[str], stem: str) -> str:
    """A model's name for people: the header's general.name without the quantisation words it may
    carry from the weights it was converted from, then `quantization`, the one the file's type says
    ("Qwen2.5 Coder 0.5B Instruct (Q4_K_M)"); the file name when the header has no name."""
    base = _QUANT_WORDS.sub("", str(name)).strip(" -_") if name else ""
    if not base:
        return stem
    return f"{base} ({quantization})" if quantization else base


def _read_string(f) -> str:
    (n,) = struct.unpack("<Q", f.read(8))
    return f.read(n).decode("utf-8", errors="replace")


def _read_value(f, vtype: int, keep_arrays: bool = False):
    """One metadata value; arrays are skipped (None) unless keep_arrays (then their length, as
    ("array", n))."""
    if vtype in _SCALARS:
        fmt = _SCALARS[vtype]
        return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]
    if vtype == _STRING:
        return _read_string(f)
    if vtype == _ARRAY:
        item_type, count = struct.unpack("<IQ", f.read(12))
        if item_type in _SCALARS:
            f.seek(struct.calcsize(_SCALARS[item_type]) * count, os.SEEK_CUR)
        elif item_type == _STRING:
            for _ in range(count):
                (n,) = struct.unpack("<Q", f.read(8))
                f.seek(n, os.SEEK_CUR)
        else:
            for _ in range(count):
                _read_value(f, item_type)
        return ("array", count) if keep_arrays else None
    raise ValueError(f"unknown GGUF value type {vtype}")


def _open(path: Path, f) -> tuple[int, int]:
    """Check the magic and version; returns (tensor count, metadata count)."""
    if f.read(4) != GGUF_MAGIC:
        raise ModelError(f"{path} is not a GGUF model file (no 'GGUF' magic at the start)")
    version, n_tensors, n_kv = struct.unpack("<IQQ", f.read(20))
    if version < 2:
        raise ModelError(f"{path}: GGUF version {version} is too old; convert it again")
    return n_tensors, n_kv


def _metadata(f, n_kv: int, keep_arrays: bool = False):
    """(key, value) pairs of the metadata section, in file order."""
    for _ in range(n_kv):
        key = _read_string(f)
        (vtype,) = struct.unpack("<I", f.read(4))
        yield key, _read_value(f, vtype, keep_arrays)


def gguf_metadata(path: Union[str, Path], shape: bool = False) -> dict:
    """Scalar metadata of a GGUF file, read from its header without loading the model.

    Stops once the architecture's context length is known (tokenizer arrays come later); `shape`: reads
    on to the first tokenizer key, so the layer and attention-head counts written after the context
    length are there too. Raises ModelError when the file is not a GGUF file.
    """
    path = Path(path)
    try:
        with open(path, "rb") as f:
            _n_tensors, n_kv = _open(path, f)
            meta: dict = {}
            for key, value in _metadata(f, n_kv):
                if shape and key.startswith("tokenizer."):
                    break
                meta[key] = value
                arch = meta.get("general.architecture")
                if not shape and arch and f"{arch}.context_length" in meta:
                    break
            return meta
    except (OSError, struct.error, ValueError, UnicodeDecodeError) as exc:
        raise ModelError(f"cannot read GGUF header of {path}: {exc}") from exc


def gguf_facts(path: Union[str, Path]) -> dict:
    """What `ragcli models` shows about a file: architecture, name, parameter count (summed over the
    tensor shapes), quantisation, trained context, size on disk, whether it carries a chat template,
    and whether it is a reranker (rank pooling or a classification head)."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            n_tensors, n_kv = _open(path, f)
            meta = dict(_metadata(f, n_kv, keep_arrays=True))
            params = 0
            names = []
            for _ in range(n_tensors):
                names.append(_read_string(f))
                (n_dims,) = struct.unpack("<I", f.read(4))
                dims = struct.unpack(f"<{n_dims}Q", f.read(8 * n_dims))
                f.seek(4 + 8, os.SEEK_CUR)  # type, offset
                count = 1
                for d in dims:
                    count *= d
                params += count
    except (OSError, struct.error, ValueError, UnicodeDecodeError) as exc:
        raise ModelError(f"cannot read GGUF header of {path}: {exc}") from exc
    arch = meta.get("general.architecture")
    file_type = meta.get("general.file_type")
    pooling = meta.get(f"{arch}.pooling_type") if arch else None
    return {
        "path": str(path), "file": path.name, "size_bytes": path.stat().st_size,
        "architecture": arch, "name": meta.get("general.name"),
        "parameters": params or None, "size_label": meta.get("general.size_label"),
        "quantization": FILE_TYPES.get(file_type) if isinstance(file_type, int) else None,
        "context_length": trained_context(meta),
        "chat_template": isinstance(meta.get("tokenizer.chat_template"), str),
        "reranker": pooling == 4 or any(n.startswith("cls") for n in names),  # 4: LLAMA_POOLING_TYPE_RANK
    }


def trained_context(meta: dict) -> Optional[int]:
    arch = meta.get("general.architecture")
    value = meta.get(f"{arch}.context_length") if arch else None
    return int(value) if isinstance(value, int) and value else None


def kv_bytes_per_token(meta: dict) -> Optional[int]:
    """Bytes of llama.cpp's KV cache for one token of context (f16 keys and values, every layer), from
    header metadata read with `shape=True`; None when the header does not say."""
    arch = meta.get("general.architecture")
    if not arch:
        return None
    layers, heads = meta.get(f"{arch}.block_count"), meta.get(f"{arch}.attention.head_count")
    kv_heads = meta.get(f"{arch}.attention.head_count_kv") or heads
    width = meta.get(f"{arch}.embedding_length")
    if not all(isinstance(v, int) and v > 0 for v in (layers, heads, kv_heads, width)):
        return None
    key_dim = meta.get(f"{arch}.attention.key_length") or width // heads
    value_dim = meta.get(f"{arch}.attention.value_length") or width // heads
    return int(layers * kv_heads * (key_dim + value_dim) * 2)
