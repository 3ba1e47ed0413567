"""Which catalogue model suits this machine (`ragcli models pull --yes`, the catalogue's "fits"
column): it must fit in memory and write at least at reading pace on these cores.

Writing speed is estimated, not measured: llama.cpp's token generation reads the whole model once
per token, so tokens/s is about (bytes a core reads per second x cores) / model bytes.
CORE_GB_PER_S is what one core of the project's 2-core test machine managed with the two Qwen
models it runs (0.5B: 3.3 tokens/s x 0.49 GB = 1.6 GB/s; 1.5B: 2.4 x 1.12 = 2.6 GB/s, one thread
each, docs/benchmarks/terminal.md); a GPU build is not limited by the cores.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

CORE_GB_PER_S = 2.5  # model bytes one core reads per second while generating (see the docstring)
READING_PACE = 4.0  # tokens a second: about three words, as fast as people read an answer


@dataclass
class Fit:
    name: str
    fits_memory: bool
    tokens_per_s: Optional[float]  # estimated; None with GPU offload (the cores do not bound it)
    fits: bool  # fits in memory and writes at least at reading pace
    why: str  # the reason, in words


def estimate(entry, hw) -> Fit:
    memory = entry.memory_gb * 1e9 <= hw.memory_total
    speed = None if hw.gpu_offload else CORE_GB_PER_S * hw.physical_cores / max(entry.size_gb, 0.01)
    fast = speed is None or speed >= READING_PACE
    if not memory:
        why = f"needs {entry.memory_gb:.1f} GB of memory, this machine has {hw.memory_total / 1e9:.1f} GB"
    elif not fast:
        why = (f"about {speed:.1f} tokens/s on {hw.physical_cores} core{'s' if hw.physical_cores != 1 else ''} "
               f"(estimated), slower than reading pace ({READING_PACE:.0f} tokens/s)")
    elif speed is None:
        why = "fits in memory; a GPU build writes it"
    else:
        why = f"about {speed:.0f} tokens/s on {hw.physical_cores} core{'s' if hw.physical_cores != 1 else ''} (estimated)"
    return Fit(entry.name, memory, None if speed is None else round(speed, 1), memory and fast, why)


def best(entries, hw) -> tuple[Optional[object], Optional[Fit]]:
    """The largest catalogue entry that fits memory and writes at reading pace, with its Fit; (None,
    None) when none does."""
    chosen = None
    for entry in sorted(entries, key=lambda e: e.size_gb):
        fit = estimate(entry, hw)
        if fit.fits:
            chosen = (entry, fit)
    return chosen or (None, None)
