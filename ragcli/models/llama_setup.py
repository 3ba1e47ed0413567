"""What a llama.cpp model is loaded with: the GGUF file checked before llama.cpp reads it, the library
imported (one error when it is missing), its stderr captured, and the run settings (GPU layers,
threads, context) decided from the machine and the file's header. models/llama_cpp.py loads and runs
the model with them."""
from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

from ragcli.errors import ModelError
from ragcli.models.gguf import gguf_metadata, kv_bytes_per_token, trained_context


DEFAULT_CTX = 4096  # the context when the header does not give the KV cache's size
# Memory left to the system and the rest of ragcli (embedding model, SQLite, Python) when the
# context is sized; of what remains after the weights, at most KV_SHARE goes to the KV cache.
MEMORY_RESERVE = 1 << 30
KV_SHARE = 0.5
MIN_CTX = 2048  # never sized below this (or the trained context, when smaller): prompts need room
ALL_LAYERS = -1  # llama.cpp's n_gpu_layers for "every layer"


@dataclass
class RunSettings:
    """How a model runs: the values given, else the machine's defaults, each with why it was chosen."""

    n_ctx: int
    n_threads: int
    n_gpu_layers: int
    why: dict = field(default_factory=dict)  # {"n_ctx": "...", ...}: the defaults taken, in words


def machine_defaults(hw, meta: dict, model_bytes: int, n_ctx: Optional[int] = None,
                     n_threads: Optional[int] = None, n_gpu_layers: Optional[int] = None) -> RunSettings:
    """The settings for a model (header `meta` read with shape=True, file of `model_bytes`) on `hw`
    (models/hardware.Hardware): every layer on the GPU when llama.cpp offloads to one, the physical
    cores, and the context the model was trained for, capped by what memory holds. A value given is kept."""
    why = {}
    if n_gpu_layers is None:
        n_gpu_layers = ALL_LAYERS if hw.gpu_offload else 0
        why["n_gpu_layers"] = ("all layers: llama.cpp offloads to a GPU" if hw.gpu_offload
                               else "0: this llama.cpp has no GPU offload")
    if n_threads is None:
        n_threads = hw.physical_cores
        why["n_threads"] = f"{n_threads}: the physical cores"
    if n_ctx is None:
        trained = trained_context(meta)
        per_token = kv_bytes_per_token(meta)
        if not trained or not per_token:
            n_ctx = min(DEFAULT_CTX, trained or DEFAULT_CTX)
            why["n_ctx"] = f"{n_ctx}: the header gives no trained context or cache size"
        else:
            room = max(0, hw.memory_available - model_bytes - MEMORY_RESERVE) * KV_SHARE
            fits = int(room // per_token) // 256 * 256
            n_ctx = max(min(trained, fits), min(trained, MIN_CTX))
            why["n_ctx"] = (f"{n_ctx}: the trained context" if n_ctx == trained else
                            f"{n_ctx}: the trained {trained}, capped by memory "
                            f"({hw.memory_available / 2**30:.1f} GiB available)")
    return RunSettings(n_ctx, n_threads, n_gpu_layers, why)


def run_settings(path: Union[str, Path], n_ctx: Optional[int] = None, n_threads: Optional[int] = None,
                 n_gpu_layers: Optional[int] = None, hw=None) -> RunSettings:
    """machine_defaults for the GGUF file at `path` on this machine (`hw`: another)."""
    from ragcli.models import hardware

    path = Path(path).expanduser()
    meta = gguf_metadata(path, shape=True) if n_ctx is None else {}
    return machine_defaults(hw or hardware.detect(), meta, path.stat().st_size, n_ctx, n_threads, n_gpu_layers)


def import_llama_cpp():
    try:
        import llama_cpp  # noqa: F401
    except ImportError as exc:
        raise ModelError(
            "llama-cpp-python is not installed; install it (pip install llama-cpp-python) "
            "or run without --model for extractive answers"
        ) from exc
    return llama_cpp


def check_model_file(path: Union[str, Path], n_ctx: Optional[int]) -> dict:
    """Validate a model file before loading it; returns its header metadata. n_ctx None: no check
    (the default context is capped at the trained one)."""
    path = Path(path).expanduser()
    if not path.exists():
        raise ModelError(f"model file not found: {path}")
    if not path.is_file():
        raise ModelError(f"model path is not a file: {path}")
    meta = gguf_metadata(path)
    trained = trained_context(meta)
    if trained and n_ctx and n_ctx > trained:
        raise ModelError(
            f"context size {n_ctx} is larger than the context this model was trained with ({trained}); "
            f"use --ctx {trained} or less"
        )
    return meta


def capture_stderr(fn):
    """Run fn() with file descriptor 2 redirected (llama.cpp's C code prints errors there);
    returns (result, captured text)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            result = fn()
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        return result, tmp.read().decode("utf-8", errors="replace")
