"""What this machine has for running a model: memory, physical cores, and whether llama.cpp can offload
to a GPU. Read once per process; `Hardware` is a plain value, so the defaults built on it
(models/llama_setup.machine_defaults) test with a made-up machine.

Physical cores, not logical ones: llama.cpp's token generation is bound by memory bandwidth, and a
second hyper-thread on a core adds contention, not speed (llama.cpp's own default is the physical count
where it can read it). Linux: the distinct (physical id, core id) pairs of /proc/cpuinfo, limited to
the CPUs this process may run on; macOS: `hw.physicalcpu`; elsewhere the logical count.
"""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional


@dataclass(frozen=True)
class Hardware:
    memory_total: int  # bytes of RAM
    memory_available: int  # bytes free for a new process now (MemAvailable on Linux)
    physical_cores: int
    logical_cores: int
    gpu_offload: bool  # llama.cpp was built with a GPU backend (CUDA, Metal, Vulkan, ...)


def _meminfo() -> dict[str, int]:
    out = {}
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                key, _, rest = line.partition(":")
                parts = rest.split()
                if parts and parts[0].isdigit():
                    out[key] = int(parts[0]) * (1024 if parts[1:2] == ["kB"] else 1)
    except OSError:
        pass
    return out


def memory() -> tuple[int, int]:
    """(total, available) bytes of RAM; available falls back to the free pages, then to the total."""
    info = _meminfo()
    total = info.get("MemTotal") or _sysconf("SC_PHYS_PAGES")
    available = info.get("MemAvailable") or _sysconf("SC_AVPHYS_PAGES") or total
    return total, available


def _sysconf(name: str) -> int:
    try:
        return int(os.sysconf(name)) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 0


def logical_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def physical_cores(cpuinfo: Optional[str] = None, allowed: Optional[set] = None) -> int:
    """Physical cores this process can use (at least 1): of `cpuinfo` (/proc/cpuinfo's text), the
    cores of the processors in `allowed` (default: this process's CPU affinity)."""
    logical = len(allowed) if allowed else logical_cores()
    if cpuinfo is None and sys.platform.startswith("linux"):
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                cpuinfo = f.read()
        except OSError:
            cpuinfo = None
    if cpuinfo:
        cores, proc, phys = {}, None, "0"
        for line in cpuinfo.splitlines() + [""]:
            key, _, value = (part.strip() for part in line.partition(":"))
            if key == "processor":
                proc = value
            elif key == "physical id":
                phys = value
            elif key == "core id" and proc is not None:
                cores[proc] = (phys, value)
            elif not line.strip():
                proc, phys = None, "0"
        if cores:
            if allowed is None:
                try:
                    allowed = set(os.sched_getaffinity(0))
                except AttributeError:
                    allowed = {int(p) for p in cores if p.isdigit()}
            found = {pair for p, pair in cores.items() if p.isdigit() and int(p) in allowed} or set(cores.values())
            return max(1, min(len(found), logical))
    if sys.platform == "darwin":
        try:
            out = subprocess.run(["sysctl", "-n", "hw.physicalcpu"], capture_output=True, text=True, timeout=2)
            return max(1, int(out.stdout.strip()))
        except (OSError, ValueError, subprocess.SubprocessError):
            pass
    return max(1, logical)


def gpu_offload() -> bool:
    """Does the installed llama.cpp offload layers to a GPU? False without llama-cpp-python."""
    try:
        import llama_cpp
    except ImportError:
        return False
    try:
        return bool(llama_cpp.llama_supports_gpu_offload())
    except (AttributeError, OSError):
        return False


@lru_cache(maxsize=1)
def detect() -> Hardware:
    """This machine (read once per process)."""
    total, available = memory()
    return Hardware(memory_total=total, memory_available=available, physical_cores=physical_cores(),
                    logical_cores=logical_cores(), gpu_offload=gpu_offload())
