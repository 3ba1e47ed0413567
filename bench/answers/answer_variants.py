"""Prompt variants measured by bench/answers/bench_answers.py --variant NAME (issue 16).

Each variant replaces `ragcli.answer.prompt.build` (the one place ask's answer prompt is made) for the
run, so the rest of `ask` (retrieval, streaming citation filter, claim support) is ragcli's own. The
figures of the variants are in git history (docs/benchmarks-answers.md, removed); the chosen one is ragcli's prompt.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Optional

# A system prompt for the answer task alone (the shared one serves five tasks).
ANSWER_SYSTEM = """You answer questions from numbered passages of the user's books.
Write 2 to 4 short sentences that answer the question with what the passages say: the steps to take, \
the signs, the facts, in the passages' own words.
End every sentence with the label of the passage it comes from, like [S2].
Only if no passage says anything about what was asked, write: The passages do not say."""

ANSWER_SYSTEM_STRICT = ANSWER_SYSTEM.replace(
    "Only if no passage says anything about what was asked, write: The passages do not say.",
    "Never add facts, numbers or doses that are not in the passages. If the passages do not give what "
    "was asked, write: The passages do not say.")

EXAMPLE_USER = """Passages:

[S1] Brakes, p. 12
If the brakes squeal, clean the rims with rubbing alcohol. Check the brake pads for wear and replace \
pads worn to the groove.

[S2] Tyres, p. 20
Pump the tyres to the pressure printed on the sidewall.

Question: my bike squeaks every time I stop, what should I do?"""
EXAMPLE_ANSWER = ("Clean the rims with rubbing alcohol [S1]. Then check the brake pads and replace them if "
                  "they are worn down to the groove [S1].")
TASK = "Answer in 2 to 4 sentences, each ending with its label."


@dataclass
class Variant:
    system: Optional[str] = ANSWER_SYSTEM
    passages: int = 10  # at most this many (rank order)
    example: bool = False
    short_headers: bool = True
    task: str = TASK
    temperature: Optional[float] = None  # None: ragcli's default (0.2)


VARIANTS = {
    "task-system": Variant(),
    "task-system-6": Variant(passages=6),
    "task-system-4": Variant(passages=4),
    "task-system-6-example": Variant(passages=6, example=True),
    "task-system-4-example": Variant(passages=4, example=True),
    "strict-6": Variant(system=ANSWER_SYSTEM_STRICT, passages=6),
    "strict-6-example": Variant(system=ANSWER_SYSTEM_STRICT, passages=6, example=True),
    "task-system-6-t0": Variant(passages=6, temperature=0.0),
    # ragcli's own answer system prompt (no refusal line) with the worked example as an earlier turn
    "ragcli-6-example": Variant(system=None, passages=6, example=True),
    "no-system-6": Variant(system=None, passages=6,
                           task=TASK + " If the passages do not say, write: The passages do not say."),
}


def header(source) -> str:
    h = source.hit
    if h.kind == "figure":
        return f"[{source.label}] Figure {h.figure_number}, p. {h.page_label}"
    section = h.section_path[-1] if h.section_path else h.book_title
    return f"[{source.label}] {section}, p. {h.page_label}"


def messages(v: Variant, question: str, blocks: list[str]) -> list[dict]:
    out = [{"role": "system", "content": v.system}] if v.system else []
    if v.example:
        out += [{"role": "user", "content": EXAMPLE_USER + "\n\n" + v.task},
                {"role": "assistant", "content": EXAMPLE_ANSWER}]
    context = "\n\n".join(blocks)
    return out + [{"role": "user", "content": f"Passages:\n\n{context}\n\nQuestion: {question}\n\n{v.task}"}]


def make_build(v: Variant):
    from ragcli.answer import prompt

    def block(source) -> str:
        if not v.short_headers:
            return prompt.source_block(source)
        text = source.hit.text
        return f"{header(source)}\n{text}"

    def build(question, sources, count_tokens, budget, instruction=prompt.ANSWER_INSTRUCTION):
        if instruction != prompt.ANSWER_INSTRUCTION:  # summaries keep ragcli's prompt
            return original(question, sources, count_tokens, budget, instruction=instruction)
        kept = list(sources)[: v.passages]
        while True:
            msgs = messages(v, question, [block(s) for s in kept])
            total = sum(count_tokens(m["content"]) + 8 for m in msgs)
            if total <= budget or len(kept) <= 1:
                break
            kept.pop()
        return prompt.Prompt(msgs, kept, list(sources)[len(kept):], [], total)

    original = prompt.build
    return build


PLAIN_TASK = ("Answer the question from the passages in 2-4 sentences. End each sentence with the label of "
              "the passage it comes from, e.g. [S1].")
# Variants of ragcli's own answer prompt that change one thing of its user message (prompt.answer_message):
# the rest (system prompt, worked example, headers, neutralised marks, figures) is ragcli's, byte for byte.
MESSAGE_VARIANTS = {
    # the order build gives, reversed (labels unchanged): build lists the best passage last, next to the
    # question (small models use what is nearest), so this is the best first, the plain script's order
    "ragcli-reversed": lambda blocks, instruction: (list(reversed(blocks)), instruction),
    # the plain baseline's task line instead of ragcli's
    "ragcli-plain-task": lambda blocks, instruction: (blocks, PLAIN_TASK),
}


# A second worked example, for the answer call only (the rewrite and verify keep the shared prefix, so
# their calls and replies are unchanged and replay): a yes/no question in lay words ("gunky", "squirt"),
# answered yes or no first, then in the passage's own words, with its steps. Qwen2.5-Coder-1.5B answered
# "should I ..." questions in the asker's words ("No, you should not slice the snakebite open"), which
# no passage backs word for word, and named a method instead of giving its steps.
YES_NO_EXAMPLE = (
    "Passages:\n\n[S1] Gears, p. 33\nIf the chain skips, turn the barrel adjuster a quarter turn at a time."
    "\n\n[S2] Chains, p. 31\nDO NOT oil a dirty chain. Clean the chain with degreaser and a stiff brush, "
    "dry it, then put one drop of chain oil on each link.\n\nQuestion: my chain is all gunky and black, "
    "can I just squirt some oil on it?\n\n",
    "No: do not oil a dirty chain [S2]. Clean the chain with degreaser and a stiff brush, dry it, then put "
    "one drop of chain oil on each link [S2].")
# A question the passages are on the topic of but silent on (an amount they never give), refused in plain
# words: the model learns by example that such a question is refused, without a refusal sentence in
# the instructions to copy (the 0.5B copied one, docs/decisions.md).
SILENT_EXAMPLE = (
    "Passages:\n\n[S1] Saddle, p. 8\nSet the saddle so the knee is slightly bent at the bottom of the pedal "
    "stroke.\n\n[S2] Hubs, p. 40\nPack the hub bearings with fresh grease every spring and check the cones "
    "for play.\n\nQuestion: how many grams of grease do the hub bearings take?\n\n",
    "The passages do not say how much grease the hub bearings take.")
EXTRA_EXAMPLES = {"ragcli-yesno-example": [YES_NO_EXAMPLE],
                  "ragcli-silent-yesno-examples": [SILENT_EXAMPLE, YES_NO_EXAMPLE],
                  "ragcli-silent-quote": [SILENT_EXAMPLE]}
# The last user message's task line, where a variant changes it (the worked examples keep ragcli's).
QUOTE_TASK = ("Answer with the passages' own sentences that answer the question, copied word for word, 2 to 5 "
              "of them, each ending with its label. For a yes or no question, begin with Yes or No.")
TASKS = {"ragcli-silent-quote": QUOTE_TASK}


def extra_examples_build(examples, task=None):
    """ragcli's own prompt.build, with more worked examples between the shared prefix and the question
    (answer calls only; the second chance keeps its own)."""
    from ragcli.answer import prompt

    original = prompt.build

    def build(question, sources, count_tokens, budget, instruction=prompt.ANSWER_INSTRUCTION):
        if instruction != prompt.ANSWER_INSTRUCTION:
            return original(question, sources, count_tokens, budget, instruction=instruction)
        turns = []
        for user, reply in examples:
            turns += [{"role": "user", "content": user + prompt.ANSWER_INSTRUCTION},
                      {"role": "assistant", "content": reply}]
        extra = sum(count_tokens(m["content"]) + 8 for m in turns)
        built = original(question, sources, count_tokens, budget - extra, instruction=instruction)
        n = len(prompt.ANSWER_PREFIX)
        built.messages[n:n] = turns
        if task:
            last = built.messages[-1]
            assert last["content"].endswith(prompt.ANSWER_INSTRUCTION)
            last["content"] = last["content"][: -len(prompt.ANSWER_INSTRUCTION)] + task
            built.prompt_tokens += count_tokens(task) - count_tokens(prompt.ANSWER_INSTRUCTION)
        built.prompt_tokens += extra
        return built

    return build


def plain_build(question, sources, count_tokens, budget, instruction=None):
    """The plain baseline's prompt (common.baseline_messages: the top 6 passages, no system prompt,
    no headers, no example) inside ragcli's pipeline: its replies are the baseline's, so with --cache the
    variant re-scores the baseline's own replies with everything ragcli does after generation."""
    from common import BASELINE_PASSAGES, baseline_messages
    from ragcli.answer import prompt

    if instruction not in (None, prompt.ANSWER_INSTRUCTION):
        return _original_build(question, sources, count_tokens, budget, instruction=instruction)
    # as the baseline takes them: the passages among the 6 sources ragcli's own prompt would give
    kept = [s for s in list(sources)[:prompt.ANSWER_SOURCES] if s.hit.kind == "passage"][:BASELINE_PASSAGES]
    messages = baseline_messages(question, kept)
    total = sum(count_tokens(m["content"]) + 8 for m in messages)
    return prompt.Prompt(messages, kept, [], [], total)


_original_build = None


# The answer prompt's passages from the extractive answer's choice (issue 34, d25c94a):
# (the passages it quotes, the prompt's own passages) -> the passages the model reads, first = best.
EXTRACTIVE_CONTEXT = {
    "extractive-pick": lambda picked, blocks: picked or blocks,  # only the quoted passages
    # the 6 passages, the quoted ones first (so last in the prompt, by the question)
    "extractive-last": lambda picked, blocks: (picked + [s for s in blocks if s not in picked])[
        :max(len(blocks), len(picked))],
}


def _with_extractive_context(choose) -> None:
    from ragcli import ask
    from ragcli.answer import extractive
    original_answer = ask._answer

    def _answer(run):
        _, used = extractive.answer(run.embedder, run.question, run.sources)
        by_label = {s.label: s for s in run.sources}
        run.blocks = choose([by_label[lab] for lab in used], run.blocks)
        return original_answer(run)

    ask._answer = _answer


def apply(name: str) -> Variant:
    """Install the variant for this process.

    Context variants (answer/context.py, issue 34): `context-T-N[-J]`: blocks of at most N, T tokens in
    all, J neighbours a side (default: context.MAX_NEIGHBOURS; 0: the hits alone, no joining; J >= 1
    grows a block to D86's 260 tokens): `context-700-5-1` is D86's blocks;
    `context-T-N-best-first`: the same, listed best first. `passages-6`: the context before blocks
    (every hit its own passage, the first 6, prompt.ANSWER_SOURCES). `select-off`: every passage whole
    in the prompt; `select-wWtTaA[bB][-short]`: answer/context.select's limits (bench/answers/first_token_select.py),
    `-short` with prompt.SHORT_HEADERS."""
    global _original_build
    from ragcli.answer import context, prompt

    sel = re.fullmatch(r"select-(?:off|w(\d+)t(\d+)a(\d+)(?:b(\d+))?(e)?)(-short)?", name)
    if sel:  # the sentence selection (D151): `select-off`, or its limits; `-short`: prompt.SHORT_HEADERS
        w, t, a, b, e, short = sel.groups()
        context.SELECT = w is not None
        if w is not None:
            context.SELECT_WHOLE, context.SELECT_TOP, context.SELECT_AROUND = int(w), int(t), int(a)
            context.SELECT_TOKENS = int(b) if b else None
            context.SELECT_TAIL = bool(e)
        prompt.SHORT_HEADERS = bool(short)
        return Variant(system=prompt.ANSWER_SYSTEM, passages=context.MAX_BLOCKS, example=True)
    ctx = re.fullmatch(r"context-(\d+)-(\d+)(?:-(\d+))?(-best-first)?", name)
    if ctx:
        context.CONTEXT_TOKENS, context.MAX_BLOCKS = int(ctx.group(1)), int(ctx.group(2))
        if ctx.group(3) is not None:
            context.MAX_NEIGHBOURS = int(ctx.group(3))
        if context.MAX_NEIGHBOURS and not context.BLOCK_TOKENS:
            context.BLOCK_TOKENS = 260  # D86's block size (ask's default joins nothing: D102)
        if ctx.group(4):
            return apply("ragcli-reversed")
        return Variant(system=prompt.ANSWER_SYSTEM, passages=context.MAX_BLOCKS, example=True)
    if name == "passages-6":
        context.CONTEXT_TOKENS, context.MAX_BLOCKS, context.MAX_NEIGHBOURS = 10 ** 9, prompt.ANSWER_SOURCES, 0
        context.BLOCK_TOKENS = 0  # no hit joins another
        return Variant(system=prompt.ANSWER_SYSTEM, passages=prompt.ANSWER_SOURCES, example=True)

    if name == "plain":
        _original_build, prompt.build = prompt.build, plain_build
        return Variant(system=None, passages=6)
    if name in EXTRA_EXAMPLES:
        prompt.build = extra_examples_build(EXTRA_EXAMPLES[name], TASKS.get(name))
        return Variant(system=prompt.ANSWER_SYSTEM, passages=prompt.ANSWER_SOURCES, example=True)
    if name in EXTRACTIVE_CONTEXT:
        _with_extractive_context(EXTRACTIVE_CONTEXT[name])
        return Variant(system=prompt.ANSWER_SYSTEM, passages=prompt.ANSWER_SOURCES, example=True)
    top = re.fullmatch(r"ragcli-top-(\d+)", name)
    if top:  # ragcli's own prompt and order (best last) with its first N passages
        prompt.ANSWER_SOURCES = int(top.group(1))
        return Variant(system=prompt.ANSWER_SYSTEM, passages=prompt.ANSWER_SOURCES, example=True)
    first = re.fullmatch(r"ragcli-first-(\d+)", name)
    if first:  # ragcli's prompt with its first N passages, listed best first (labels unchanged)
        prompt.ANSWER_SOURCES = int(first.group(1))
        name = "ragcli-reversed"
    if name in MESSAGE_VARIANTS:
        original, change = prompt.answer_message, MESSAGE_VARIANTS[name]

        def answer_message(question, blocks, instruction=prompt.ANSWER_INSTRUCTION, lead=""):
            if instruction not in prompt.ANSWERING:  # a summary keeps its own
                return original(question, blocks, instruction, lead)
            changed, task = change(list(blocks), instruction)
            return original(question, changed, task, lead)

        prompt.answer_message = answer_message
        return Variant(system=prompt.ANSWER_SYSTEM, passages=prompt.ANSWER_SOURCES, example=True)
    v = VARIANTS[name]
    if name.startswith("ragcli-"):
        v = replace(v, system=prompt.ANSWER_SYSTEM)
    prompt.build = make_build(v)
    return v


def with_passages(name: str, n: int) -> Variant:
    return replace(VARIANTS[name], passages=n)
