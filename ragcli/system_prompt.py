"""The prompts' shared beginnings, in a base module so that search/ (the question rewrite) and answer/
(the answer, --verify, the summary) need not import each other for them.

A server (llama-server `cache_prompt`, vLLM prefix caching) and llama.cpp in process keep the KV cache
of the previous prompt and re-use it for the longest byte-identical prefix of the next one. So the calls
of one `ask` (the rewrite, the answer, --verify) all begin with ANSWER_PREFIX, the answer's own system
prompt and worked example, and say their task in the user message after it; `summary new`'s
rewrite and summary begin with SYSTEM_PROMPT."""
from __future__ import annotations

# What the model is told to say when the passages do not answer; `answer.refusal` recognises it (and
# every other wording of a refusal).
NO_ANSWER = "The provided passages do not answer this."

# One system prompt for the rewrite, summary and verify calls: llama.cpp keeps the KV cache of the
# previous prompt, so each such call after the first re-uses these tokens instead of evaluating them again.
SYSTEM_PROMPT = f"""You are ragcli, an assistant that works ONLY from numbered passages of the user's books,
given in a CONTEXT block as [S1], [S2], ... (book passages) and [F1], [F2], ... (figures).
Rules for every task:
- Cite ONLY labels that appear in the CONTEXT block. Never invent labels, page numbers, section titles
  or sources, and never answer from memory.
- Answering: every factual sentence ends with the label of the passage that supports it, e.g. [S1].
  If the context does not contain the answer, say exactly: "{NO_ANSWER}"
  If passages disagree, say so and cite both sides. Be concise: a few sentences, no preamble.
- Summarising: 2 to 5 short sections, each a line "## Heading" then bullet lines "- ", every bullet
  ending with its label. No preamble and no closing remarks.
- Rewriting a question for search: one short line in the book's own vocabulary, nothing else.
- Checking claims: reply with the JSON array asked for, nothing else."""


# The answer task has a system prompt of its own, one task and no refusal sentence to copy: small
# models refuse answerable questions under a prompt of many tasks' rules, and copy a refusal line they
# are offered. Refusals in any words are detected (answer/refusal.py), unbacked answers become no_answer.
# Passages come first, then the question, then the task (docs/decisions.md D41).
# (Defined here, not in answer/prompt.py, which imports them: the rewrite starts with them too.)
ANSWER_SYSTEM = """You answer questions from numbered passages of the user's books.
Write 2 to 4 short sentences that answer the question with what the passages say: the steps to take, \
the signs, the facts, in the passages' own words. Never add facts, numbers or doses the passages do not give.
End every sentence with the label of the passage it comes from, like [S2]."""
ANSWER_INSTRUCTION = "Answer in 2 to 4 sentences, each ending with its label."
# One worked example, shown as an earlier turn, from another field (so its content cannot pass for the
# book's): it shows the label form; without it small models write "[1]" or no label at all
# (docs/decisions.md D41).
ANSWER_EXAMPLE = (
    "Passages:\n\n[S1] Brakes\nIf the brakes squeal, clean the rims with rubbing alcohol. Check the "
    "brake pads for wear and replace pads worn to the groove.\n\n[S2] Tyres\nPump the tyres to "
    "the pressure printed on the sidewall.\n\nQuestion: my bike squeaks every time I stop, what should I "
    "do?\n\n" + ANSWER_INSTRUCTION,
    "Clean the rims with rubbing alcohol [S1]. Then check the brake pads and replace them if they are worn "
    "down to the groove [S1].")
# The first messages of every call of one `ask`, exactly as answer/prompt.py's `build` begins an
# answer (tests/test_ask.py checks that they stay byte-identical).
ANSWER_PREFIX = (
    {"role": "system", "content": ANSWER_SYSTEM},
    {"role": "user", "content": ANSWER_EXAMPLE[0]},
    {"role": "assistant", "content": ANSWER_EXAMPLE[1]},
)
# ... and of `summary new`'s calls (its rewrite, then the summary).
SUMMARY_PREFIX = ({"role": "system", "content": SYSTEM_PROMPT},)
