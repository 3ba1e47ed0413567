"""Defaults that fit the machine, read from a made-up hardware description: every layer on the GPU when
llama.cpp offloads to one, threads = the physical cores, the trained context capped by memory; each
shown with why by `ragcli info` and in `ask --json`'s model, and a value given still wins."""
from __future__ import annotations

import json

from ragcli.models.gguf import gguf_metadata, kv_bytes_per_token
from ragcli.models.hardware import Hardware, physical_cores
from ragcli.models.llama_setup import ALL_LAYERS, MEMORY_RESERVE, machine_defaults

GB = 10**9
# a Qwen2.5-1.5B-like header: 28 layers, 12 heads, 2 KV heads, width 1536, trained on 32768 tokens
QWEN = {"general.architecture": "qwen2", "qwen2.context_length": 32768, "qwen2.block_count": 28,
        "qwen2.attention.head_count": 12, "qwen2.attention.head_count_kv": 2, "qwen2.embedding_length": 1536}


def _hw(memory_gb=24.0, cores=4, gpu=False) -> Hardware:
    return Hardware(memory_total=int(memory_gb * GB), memory_available=int(memory_gb * GB), physical_cores=cores,
                    logical_cores=cores * 2, gpu_offload=gpu)


def test_gpu_layers_threads_and_context_from_the_machine():
    assert kv_bytes_per_token(QWEN) == 28 * 2 * (128 + 128) * 2  # f16 keys and values, every layer
    big = machine_defaults(_hw(24, cores=6, gpu=True), QWEN, int(1.1 * GB))
    assert (big.n_gpu_layers, big.n_threads, big.n_ctx) == (ALL_LAYERS, 6, 32768)
    assert "GPU" in big.why["n_gpu_layers"] and "physical cores" in big.why["n_threads"]
    assert big.why["n_ctx"] == "32768: the trained context"
    small = machine_defaults(_hw(3, cores=2), QWEN, int(1.1 * GB))
    assert small.n_gpu_layers == 0 and "no GPU offload" in small.why["n_gpu_layers"] and small.n_threads == 2
    room = (3 * GB - int(1.1 * GB) - MEMORY_RESERVE) * 0.5
    assert small.n_ctx == int(room // kv_bytes_per_token(QWEN)) // 256 * 256 < 32768
    assert "capped by memory" in small.why["n_ctx"]
    tiny = machine_defaults(_hw(1.5), QWEN, int(1.1 * GB))  # no room at all: still a usable context
    assert tiny.n_ctx == 2048


def test_values_given_win_and_a_header_without_shape_keeps_4096():
    given = machine_defaults(_hw(gpu=True), QWEN, GB, n_ctx=1024, n_threads=1, n_gpu_layers=3)
    assert (given.n_ctx, given.n_threads, given.n_gpu_layers, given.why) == (1024, 1, 3, {})
    bare = machine_defaults(_hw(), {"general.architecture": "llama"}, GB)
    assert bare.n_ctx == 4096 and "no trained context" in bare.why["n_ctx"]


def test_physical_cores_from_cpuinfo():
    """Two hyper-threads of one core count once; the processors this process may use decide."""
    cpuinfo = "".join(f"processor\t: {p}\nphysical id\t: 0\ncore id\t\t: {p // 2}\n\n" for p in range(4))
    assert physical_cores(cpuinfo, allowed={0, 1, 2, 3}) == 2
    assert physical_cores(cpuinfo, allowed={0, 1}) == 1
    two_sockets = "".join(f"processor\t: {p}\nphysical id\t: {p // 2}\ncore id\t\t: 0\n\n" for p in range(4))
    assert physical_cores(two_sockets, allowed={0, 1, 2, 3}) == 2


def test_info_and_ask_json_say_what_the_model_runs_on(cli, corpus_db, tiny_gguf, monkeypatch):
    monkeypatch.setenv("RAGCLI_MODEL", str(tiny_gguf))
    info = json.loads(cli("info", "--json").stdout)["model_runs_on"]
    assert info["n_threads"] == info["physical_cores"] and info["n_gpu_layers"] in (0, ALL_LAYERS)
    assert info["n_ctx"] == 2048 and info["why"]["n_ctx"] == "2048: the trained context"
    text = cli("info").stdout
    assert "model_runs_on: n_gpu_layers " in text and "the physical cores" in text
    ask = cli("ask", "what is a craniotomy?", "--json", "--no-expand", "--max-tokens", "4", "--no-log")
    model = json.loads(ask.stdout)["model"]
    assert model["n_threads"] == info["n_threads"] and model["n_ctx"] == 2048
    assert set(model["defaults"]) == {"n_ctx", "n_threads", "n_gpu_layers"}
    given = json.loads(cli("ask", "what is a craniotomy?", "--json", "--no-expand", "--max-tokens", "4",
                           "--threads", "1", "--no-log").stdout)["model"]
    assert given["n_threads"] == 1 and "n_threads" not in given["defaults"]
    assert gguf_metadata(tiny_gguf, shape=True)["llama.block_count"] == 2
