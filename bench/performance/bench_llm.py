"""llama.cpp costs inside ragcli, with the tiny test model (tests/tinymodel.py), side by side in one run.

    python bench/performance/bench_llm.py [--model F.gguf] [--runs 5]

(a) Prompt-prefix reuse: rewrite -> answer -> verify in one process share the system prompt; prints the
    prompt tokens of each call, how many were evaluated and how many came from llama.cpp's KV cache.
(b) Streaming overhead: ragcli's streaming path (LlamaCppModel.chat(stream=True) + citations.StreamFilter)
    against raw llama-cpp-python streaming (Llama.create_completion(stream=True)) of the same tokens
    (the output is forced by a grammar so both generate exactly the same text). min/median/max and ratio.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

ANSWER = ("After the bone flap is lifted the dura is opened [S1]. Brain relaxation uses mannitol [S2][S9]. "
          "The flap is replaced at closure (p. 45) [S1]. ") * 3


def reuse(model) -> list[dict]:
    from ragcli.answer import grounding
    from ragcli.answer import prompt
    from ragcli.models.chat import Grammar, OneLine
    from ragcli.models.grammars import forced_text_grammar
    from ragcli.search import rewrite
    from ragcli.types import Answer, Hit, Source

    hit = lambda i, text: Hit(i, "passage", "b", "Book", ["Chapter 3 Craniotomy"], 7, 7, "5", text)  # noqa
    sources = [Source("S1", hit(1, "The dura is opened after the bone flap is lifted and replaced at closure.")),
               Source("S2", hit(2, "Mannitol 0.25-1 g/kg relaxes the brain before the dura is opened."))]
    rows = []
    model.chat(rewrite.rewrite_messages("what happens after cutting the skull?", ["Book"], ["craniotomy"]),
               max_tokens=24, constraint=OneLine(60))
    rows.append(dict(call="rewrite", **model.stats))
    p = prompt.build("what happens after cutting the skull?", sources, model.count_tokens, 1500)
    text = "".join(model.chat(p.messages, max_tokens=200, stream=True,
                              constraint=Grammar(forced_text_grammar("The dura is opened [S1]. Mannitol helps [S2]."))))
    rows.append(dict(call="answer", **model.stats))
    answer = Answer("q", None, text, "answered", ["S1", "S2"], [], sources)
    answer.claims = grounding.score(text, sources, _Flat())
    grounding.verify(answer, model, None)
    rows.append(dict(call="verify", **model.stats))
    return rows


class _Flat:
    """A constant embedder: (a) measures llama.cpp's cache, not the support scorer."""
    name, dim = "flat", 4

    def embed(self, texts):
        import numpy as np

        return np.ones((len(texts), 4), dtype=np.float32) / 2


def streaming(model, runs: int) -> dict:
    from ragcli.answer.citations import StreamFilter
    from ragcli.models.chat import Grammar
    from ragcli.models.grammars import forced_text_grammar

    grammar_text = forced_text_grammar(ANSWER)
    import llama_cpp

    grammar = llama_cpp.LlamaGrammar.from_string(grammar_text, verbose=False)
    messages = [{"role": "system", "content": "You answer."}, {"role": "user", "content": "Tell me."}]
    raw_prompt = "<|im_start|>system\nYou answer.<|im_end|>\n<|im_start|>user\nTell me.<|im_end|>\n" \
                 "<|im_start|>assistant\n"
    times = {"raw": [], "ragcli": []}
    for _ in range(runs):
        model._llm.reset()
        t = time.perf_counter()
        raw = "".join(c["choices"][0]["text"] for c in model._llm.create_completion(
            raw_prompt, max_tokens=1200, stream=True, grammar=grammar, temperature=0.0))
        times["raw"].append(time.perf_counter() - t)
        model._llm.reset()
        t = time.perf_counter()
        f = StreamFilter({"S1", "S2"})
        shown = "".join(f.feed(p) for p in model.chat(messages, max_tokens=1200, stream=True,
                                                       constraint=Grammar(grammar_text))) + f.flush()
        times["ragcli"].append(time.perf_counter() - t)
    assert raw == ANSWER, raw[:80]
    assert "[S9]" not in shown and "(p. 45)" not in shown
    stats = {k: (min(v), statistics.median(v), max(v)) for k, v in times.items()}
    stats["ratio_median"] = stats["ragcli"][1] / stats["raw"][1]
    return stats


def main() -> int:
    from ragcli.models.factory import load_model

    ap = argparse.ArgumentParser()
    ap.add_argument("--model")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    path = args.model
    if not path:
        from tinymodel import write_tiny_gguf

        path = str(write_tiny_gguf(Path(tempfile.mkdtemp()) / "tiny.gguf"))
    model = load_model(path, n_ctx=2048, threads=1)
    print("| call | prompt tokens | evaluated | from cache | generated |")
    print("|---|---|---|---|---|")
    for r in reuse(model):
        print(f"| {r['call']} | {r.get('prompt_tokens')} | {r.get('prompt_evaluated')} | "
              f"{r.get('prompt_cached')} | {r.get('generated_tokens')} |")
    s = streaming(model, args.runs)
    print(f"\nstreaming {len(ANSWER)} chars, {args.runs} runs (min / median / max s):")
    print(f"raw llama-cpp-python: {s['raw'][0]:.3f} / {s['raw'][1]:.3f} / {s['raw'][2]:.3f}")
    print(f"ragcli chat + StreamFilter: {s['ragcli'][0]:.3f} / {s['ragcli'][1]:.3f} / {s['ragcli'][2]:.3f}")
    print(f"ratio (median): {s['ratio_median']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
