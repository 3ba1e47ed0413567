"""ragcli's HTTP backend beside the bare `openai` client, against one OpenAI-compatible server.

    python bench/performance/bench_http.py [--model F.gguf] [--runs 5] [--url http://127.0.0.1:8080/v1] [--cache-only]

Without --url the script starts llama-cpp-python's own server (`python -m llama_cpp.server`) on a free
loopback port with --model (default: the tiny test GGUF, whose output a grammar forces, so both sides
stream the same 450-character answer). Both sides send the same messages and grammar to the same
server, alternating, and the median wall times are compared: the ratio is ragcli's overhead (the
HTTP model object, the citation filter on every piece) over the bare client's streaming loop.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

ANSWER = ("The dura is opened after the bone flap is lifted [S1]. Mannitol relaxes the brain [S2]. "
          "The flap is replaced at closure (p. 45) [S1]. ") * 3
MESSAGES = [{"role": "system", "content": "You answer questions about books using only the sources given."},
            {"role": "user", "content": "[S1] The dura is opened after the bone flap is lifted.\n"
                                        "[S2] Mannitol relaxes the brain.\n\nQuestion: what happens after the skull is cut?"}]


def start_server(model: str, threads: int, extra: tuple = ()) -> tuple[subprocess.Popen, str]:
    from conftest_http import _die_with_parent, _wait_ready, free_port

    port = free_port()
    log = Path(tempfile.mkdtemp()) / "server.log"
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", model, "--host", "127.0.0.1",
                             "--port", str(port), "--n_ctx", "2048", "--n_threads", str(threads), *extra],
                            stdout=open(log, "w"), stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
    url = f"http://127.0.0.1:{port}/v1"
    _wait_ready(url, proc, log)
    return proc, url


def bare(client, name: str, grammar: str, max_tokens: int) -> tuple[float, float, str]:
    t = time.perf_counter()
    first, parts = None, []
    stream = client.chat.completions.create(model=name, messages=MESSAGES, max_tokens=max_tokens, temperature=0.2,
                                            seed=0, stream=True, extra_body={"grammar": grammar})
    for chunk in stream:
        text = chunk.choices[0].delta.content if chunk.choices else None
        if text:
            first = first or time.perf_counter() - t
            parts.append(text)
    return time.perf_counter() - t, first or 0.0, "".join(parts)


def ragcli_side(model, grammar: str, max_tokens: int) -> tuple[float, float, str]:
    from ragcli.answer.citations import StreamFilter
    from ragcli.models.chat import Grammar

    t = time.perf_counter()
    first, parts = None, []
    f = StreamFilter({"S1", "S2"})
    for piece in model.chat(MESSAGES, max_tokens=max_tokens, stream=True, constraint=Grammar(grammar)):
        safe = f.feed(piece)
        if safe:
            first = first or time.perf_counter() - t
            parts.append(safe)
    parts.append(f.flush())
    return time.perf_counter() - t, first or 0.0, "".join(parts)


PASSAGES = [
    "Apply a tourniquet above the wound, between the wound and the heart, when pressure and a dressing "
    "do not stop the bleeding from an arm or a leg. Tighten it until the bright red bleeding stops and "
    "mark the casualty's forehead with a T and the time it was applied. Do not loosen it once applied.",
    "Apply direct manual pressure over the field dressing for five to ten minutes. Elevate the injured "
    "limb above the level of the heart unless a fracture is suspected and has not been splinted.",
    "Signs of shock: sweaty but cool skin, pale skin colour, restlessness or nervousness, thirst, loss "
    "of blood, confusion, faster than normal breathing rate, blotchy or bluish skin, nausea or vomiting.",
]


def prompt_cache(model) -> None:
    """The calls of one process as `ask` makes them (ragcli's own message builders): a question's
    rewrite, its answer, its --verify verdicts, then the next question's rewrite and answer. The
    server's report of each call's cached prompt tokens (llama-server: timings.cache_n; OpenAI-style
    servers: usage.prompt_tokens_details.cached_tokens). Start llama-server with `--cache-ram 0`: its
    store of earlier prompts would otherwise serve a re-run of the same calls."""
    from ragcli.answer import prompt
    from ragcli.answer.grounding import verify_messages
    from ragcli.search.rewrite import rewrite_messages
    from ragcli.types import Answer, Claim, Hit

    hits = [Hit(i, "passage", "fm", "FM 4-25.11 First Aid", ["Chapter 3", "Bleeding"], 40 + i, 40 + i,
                f"3-{i}", text) for i, text in enumerate(PASSAGES, 1)]
    sources = prompt.label_sources(hits)
    book = ["FM 4-25.11 First Aid"]

    def answer_call(question: str, order=1) -> list[dict]:  # another question finds other passages first
        return prompt.build(question, sources[::order], model.count_tokens, 3000).messages

    draft = Answer("how do I stop bleeding from a leg?", None, "Apply a tourniquet above the wound [S1].",
                   "answered", ["S1"], [], sources)
    claims = [Claim(text="Apply a tourniquet above the wound.", citations=["S1"])]
    calls = [("rewrite", rewrite_messages("how do I stop bleeding from a leg?", book, ["tourniquet", "pressure dressing"])),
             ("answer", answer_call("how do I stop bleeding from a leg?")),
             ("verify", verify_messages(draft, claims)),
             ("rewrite, next question", rewrite_messages("what are the signs of shock?", book, ["shock"])),
             ("answer, next question", answer_call("what are the signs of shock?", -1))]
    print("prompt cache, one process's calls in order:")
    for what, messages in calls:
        "".join(model.chat(messages, max_tokens=16, stream=True))
        st = model.stats
        cached = st.get("prompt_cached")
        print(f"  {what}: prompt {st.get('prompt_tokens')} tokens, cached "
              f"{cached if cached is not None else 'not reported by this server'}, evaluated {st.get('prompt_evaluated')}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", help="GGUF to serve (default: the tiny test model)")
    ap.add_argument("--url", help="an already running server instead")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=1200)
    ap.add_argument("--cache-only", action="store_true", help="only the prompt cache over one process's calls")
    args = ap.parse_args()
    import openai

    from ragcli.models.grammars import forced_text_grammar
    from ragcli.models.openai_http import HttpChatModel

    proc = None
    url = args.url
    if not url:
        model_path = args.model
        if not model_path:
            from tinymodel import write_tiny_gguf

            model_path = str(write_tiny_gguf(Path(tempfile.mkdtemp()) / "tiny.gguf"))
        proc, url = start_server(model_path, args.threads)
    try:
        model = HttpChatModel(url)
        if args.cache_only:
            prompt_cache(model)
            return 0
        client = openai.OpenAI(base_url=url, api_key="none")
        grammar = forced_text_grammar(ANSWER)
        bare(client, model.name, grammar, args.max_tokens)  # warm-up: model pages, the server's cache
        times: dict[str, list[tuple[float, float]]] = {"bare openai client": [], "ragcli HttpChatModel": []}
        for _ in range(args.runs):
            total, first, raw = bare(client, model.name, grammar, args.max_tokens)
            times["bare openai client"].append((total, first))
            total, first, shown = ragcli_side(model, grammar, args.max_tokens)
            times["ragcli HttpChatModel"].append((total, first))
        assert raw == ANSWER, raw[:80]
        assert "(p. 45)" not in shown and "[S1]" in shown
        print(f"server {model.server.kind} at {url}, {args.runs} runs each, alternating; "
              f"{len(ANSWER)} characters streamed")
        print("| side | median total (s) | median first piece (s) |")
        print("|---|---|---|")
        med = {}
        for side, rows in times.items():
            med[side] = statistics.median(r[0] for r in rows)
            print(f"| {side} | {med[side]:.3f} | {statistics.median(r[1] for r in rows):.3f} |")
        print(f"ratio ragcli / bare: {med['ragcli HttpChatModel'] / med['bare openai client']:.3f} (bar <= 1.1)")
        prompt_cache(model)
    finally:
        if proc:
            proc.terminate()
            proc.wait(10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
