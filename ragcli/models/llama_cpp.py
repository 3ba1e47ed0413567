"""The in-process backend: a GGUF chat model run by llama-cpp-python.

`llama_cpp` is imported inside the functions that use it, so importing this module stays fast and
works without llama-cpp-python installed. The file check, the library's import and the settings from the
machine are models/llama_setup.py.
"""
from __future__ import annotations

import codecs
import json
import time
from pathlib import Path
from typing import Iterator, Optional, Union

from ragcli.errors import ModelError
from ragcli.models import grammars
from ragcli.models import prefix_cache as saved_states
from ragcli.models.chat import Constraint, Grammar, JsonSchema, Messages, OneLine, Progress
from ragcli.models.gguf import FILE_TYPES, display_name, gguf_facts, trained_context
from ragcli.models.llama_setup import capture_stderr, check_model_file, import_llama_cpp, run_settings

# Prompt tokens evaluated between two progress reports: llama.cpp's own batch (n_batch 512). Each batch
# reads all the weights once; in 64-token steps the 1.5B read a 658-token prompt 1.6x to 2.5x slower on
# a loaded 2-core machine (decision D137), so the status line's progress cost the first word most of all.
PROMPT_BATCH = 512
# A system prefix shorter than this is evaluated faster than its state file is read and checked.
MIN_PREFIX_TOKENS = 32
PROBE_USERS = ("x", "y")  # two user turns whose renderings share exactly the system part


def json_schema_grammar(schema: dict) -> str:
    """GBNF from a JSON schema, using llama-cpp-python's converter."""
    import_llama_cpp()
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    return json_schema_to_gbnf(json.dumps(schema))


def constraint_gbnf(constraint: Optional[Constraint]) -> Optional[str]:
    """The GBNF grammar that enforces a constraint (None: no constraint)."""
    if constraint is None:
        return None
    if isinstance(constraint, Grammar):
        return constraint.gbnf
    if isinstance(constraint, OneLine):
        return grammars.one_line_grammar(constraint.max_chars)
    if isinstance(constraint, JsonSchema):
        return constraint.gbnf or json_schema_grammar(constraint.schema)
    raise TypeError(f"unknown output constraint {constraint!r}")


def fixed_head(messages: Messages) -> list[dict]:
    """The messages a prompt shares with every other call of its kind: the system message, and the
    worked example right after it (a user/assistant pair followed by more turns), as every call of
    an `ask` begins (system_prompt.ANSWER_PREFIX). Later turns (a conversation's history, the
    question) vary, so they are never part of a saved state."""
    head = list(messages[:1])
    if (len(messages) > 3 and messages[1].get("role") == "user"
            and messages[2].get("role") == "assistant"):
        head += list(messages[1:3])
    return head


class LlamaCppModel:
    """A GGUF chat model run in-process by llama-cpp-python.

    The same `Llama` object serves every call, so llama.cpp keeps the KV cache of the previous
    prompt and only evaluates the tokens after the longest common prefix: a second call that
    shares the system prompt does not re-process it (see `stats["prompt_cached"]`).

    Across processes, the state after the system prompt's tokens is saved once to a file
    (models/prefix_cache.py) and loaded by the next process before its first call, so a fresh
    `ragcli ask` evaluates only what follows the system prompt (`stats["prompt_from_disk"]`).
    `prefix_cache`: True (the default folder, unless RAGCLI_PREFIX_CACHE=0), False (off), or a folder.
    """

    tokens_exact = True

    def __init__(self, path: Union[str, Path], n_ctx: Optional[int] = None, n_threads: Optional[int] = None,
                 n_gpu_layers: Optional[int] = None, seed: int = 0, temperature: float = 0.2,
                 verbose: bool = False, repeat_penalty: float = 1.0, hw=None,
                 prefix_cache: Union[bool, str, Path] = True):
        self.path = Path(path).expanduser()
        meta = check_model_file(self.path, n_ctx)
        llama_cpp = import_llama_cpp()
        # what is not given comes from the machine (run_settings): GPU layers, cores, context
        run = run_settings(self.path, n_ctx, n_threads, n_gpu_layers, hw)
        n_ctx, n_threads, n_gpu_layers = run.n_ctx, run.n_threads, run.n_gpu_layers
        self.seed = seed
        self.temperature = temperature
        self.repeat_penalty = repeat_penalty
        self._grammars: dict[str, object] = {}
        self._format = None
        self._on_progress: Optional[Progress] = None
        try:
            self._llm = llama_cpp.Llama(
                model_path=str(self.path), n_ctx=n_ctx, n_threads=n_threads,
                n_gpu_layers=n_gpu_layers, seed=seed, verbose=verbose,
            )
        except Exception as exc:  # llama-cpp-python raises ValueError/RuntimeError/OSError
            raise ModelError(f"cannot load model {self.path}: {exc}") from exc
        self._install_eval_counter()
        if prefix_cache is False or not saved_states.enabled_by_env():
            self._prefix_dir: Optional[Path] = None
        else:
            self._prefix_dir = saved_states.folder() if prefix_cache is True else Path(prefix_cache)
        self._prefixes: dict[str, list[int]] = {}  # fixed head (JSON) -> the tokens every prompt starts with
        self._primed = (0, 0)  # this call's prefix tokens (loaded from disk, evaluated to save them)
        file_type = meta.get("general.file_type")
        quant = FILE_TYPES.get(file_type) if isinstance(file_type, int) else gguf_facts(self.path).get("quantization")
        self.name = display_name(meta.get("general.name"), quant, self.path.stem)
        self.context_size = int(self._llm.n_ctx())
        self.params = {
            "backend": "llama.cpp", "name": self.name, "path": str(self.path), "file": self.path.name,
            "n_ctx": self.context_size, "n_ctx_train": trained_context(meta),
            "n_threads": n_threads, "n_gpu_layers": n_gpu_layers, "seed": seed,
            "temperature": temperature, "repeat_penalty": repeat_penalty,
            "prefix_cache": str(self._prefix_dir) if self._prefix_dir else None,
            "architecture": meta.get("general.architecture"), "defaults": run.why,
        }
        self.stats: dict = {}

    def _install_eval_counter(self) -> None:
        """Count tokens llama.cpp really evaluates: Llama.generate calls self.eval() once with
        the prompt tokens not already in the KV cache, then once per generated token. With a
        progress callback the prompt's eval runs in PROMPT_BATCH-token steps (llama.cpp's own eval
        is the same loop over n_batch), each reported as `prompt_progress`: a long prompt on a slow
        machine is never a silent wait."""
        original = self._llm.eval
        self._evals: list[int] = []

        def counting_eval(tokens):
            self._evals.append(len(tokens))
            first, report = len(self._evals) == 1, self._on_progress
            if first and report and len(tokens) > PROMPT_BATCH:
                total = len(tokens)
                for start in range(0, total, PROMPT_BATCH):
                    original(tokens[start:start + PROMPT_BATCH])
                    report("prompt_progress", {"done": min(start + PROMPT_BATCH, total), "total": total})
                result = None
            else:
                result = original(tokens)
            if first and report:
                report("prompt_done", {"evaluated": len(tokens)})
            return result

        self._llm.eval = counting_eval

    def _grammar(self, text: Optional[str]):
        if text is None:
            return None
        if text not in self._grammars:
            from llama_cpp import LlamaGrammar

            self._check_grammar(text)
            self._grammars[text] = LlamaGrammar.from_string(text, verbose=False)
        return self._grammars[text]

    def _check_grammar(self, text: str) -> None:
        """Parse the grammar once with llama.cpp. LlamaGrammar.from_string does not validate, and
        an unparsable grammar would reach the sampler chain as a NULL sampler."""
        import llama_cpp

        vocab = self._llm._model.vocab
        sampler, message = capture_stderr(
            lambda: llama_cpp.llama_sampler_init_grammar(vocab, text.encode("utf-8"), b"root"))
        if not sampler:
            detail = " ".join(message.split())[:300] or "llama.cpp could not parse it"
            raise ModelError(f"invalid GBNF grammar: {detail}")
        llama_cpp.llama_sampler_free(sampler)

    def count_tokens(self, text: str) -> int:
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def _formatter(self):
        """The GGUF's own chat template, rendered the way create_chat_completion renders it."""
        from llama_cpp import llama_chat_format

        template = self._llm.metadata.get("tokenizer.chat_template")
        if not template:  # very old GGUFs: fall back to ChatML
            return llama_chat_format.format_chatml
        model = self._llm._model
        eos, bos = self._llm.token_eos(), self._llm.token_bos()
        return llama_chat_format.Jinja2ChatFormatter(
            template=template,
            eos_token=model.token_get_text(eos) if eos != -1 else "",
            bos_token=model.token_get_text(bos) if bos != -1 else "",
        )

    def prompt_tokens(self, messages: Messages) -> list[int]:
        """The chat rendered with the model's template and tokenized."""
        if self._format is None:
            self._format = self._formatter()
        try:
            result = self._format(messages=messages)
        except Exception as exc:  # templates raise e.g. "System role not supported"
            if not (messages and messages[0].get("role") == "system" and len(messages) > 1):
                raise ModelError(f"the model's chat template refused the messages: {exc}") from exc
            first = messages[0]["content"] + "\n\n" + messages[1]["content"]
            merged = dict(messages[1], content=first)
            return self.prompt_tokens([merged] + list(messages[2:]))
        return self._llm.tokenize(result.prompt.encode("utf-8"),
                                  add_bos=not result.added_special, special=True)

    def chat(self, messages: Messages, *, max_tokens: int, constraint: Optional[Constraint] = None,
             stream: bool = False, temperature: Optional[float] = None,
             on_progress: Optional[Progress] = None):
        prompt = self.prompt_tokens(messages)
        room = self.context_size - len(prompt)
        if room <= 0:
            raise ModelError(f"the prompt has {len(prompt)} tokens but the model context holds "
                             f"{self.context_size}; use fewer sources or a larger --ctx")
        temp = self.temperature if temperature is None else temperature
        grammar = self._grammar(constraint_gbnf(constraint))
        self._prime_prefix(messages, prompt)
        pieces = self._generate(prompt, min(max_tokens, room), grammar, temp, on_progress)
        return pieces if stream else "".join(pieces)

    def next_word_probs(self, messages: Messages, words: dict[str, tuple[str, ...]]) -> dict[str, float]:
        """The probability that the reply starts with each group of `words` ({"yes": ("yes", "Yes"),
        ...}), from the next-token distribution after the prompt: one forward pass over the tokens
        not already in the KV cache, nothing sampled. A word's first token stands for the word."""
        import numpy as np

        prompt = self.prompt_tokens(messages)
        if len(prompt) >= self.context_size:
            raise ModelError(f"the prompt has {len(prompt)} tokens but the model context holds {self.context_size}")
        llm = self._llm
        self._prime_prefix(messages, prompt)
        self._evals = []
        steps = llm.generate(prompt, temp=0.0, top_k=1, repeat_penalty=1.0)
        try:  # generate() evaluates what the cache lacks and samples one token
            next(steps)
        except RuntimeError as exc:
            raise ModelError(f"llama.cpp failed while reading the next token: {exc}") from exc
        finally:
            steps.close()
        self._record(len(prompt), 0)
        # the logits of the prompt's last token, from the last decode (generate() evaluates at least
        # that token, even when the whole prompt is in the cache)
        import llama_cpp

        row = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
        logits = np.ctypeslib.as_array(row, shape=(llm.n_vocab(),)).astype(np.float64)
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        out = {}
        for group, variants in words.items():
            ids = {t[0] for t in (llm.tokenize(v.encode("utf-8"), add_bos=False, special=False) for v in variants) if t}
            out[group] = float(sum(probs[i] for i in ids))
        return out

    def _generate(self, prompt: list[int], max_tokens: int, grammar, temp: float,
                  on_progress: Optional[Progress]) -> Iterator[str]:
        """Sample until an end-of-generation token or max_tokens, yielding decoded text.

        Bytes are decoded incrementally (a character may span tokens; invalid UTF-8 is dropped),
        so the streamed pieces always join to the non-streamed reply."""
        import llama_cpp

        llm, generated = self._llm, 0
        decoder = codecs.getincrementaldecoder("utf-8")(errors="ignore")
        llm.set_seed(self.seed)
        self._evals = []
        self._on_progress = on_progress
        start = time.perf_counter()
        finish = None  # "stop" (end of generation), "length" (max_tokens); None: the caller stopped
        if on_progress:
            on_progress("prompt", {"prompt_tokens": len(prompt)})
        try:
            for token in llm.generate(prompt, temp=temp, top_k=40, top_p=0.95, min_p=0.05,
                                      repeat_penalty=self.repeat_penalty, grammar=grammar):
                if generated == 0 and on_progress:
                    on_progress("first_token", {"seconds": time.perf_counter() - start})
                if llama_cpp.llama_vocab_is_eog(llm._model.vocab, token):
                    finish = "stop"
                    break
                generated += 1
                piece = decoder.decode(llm.detokenize([token]))
                if piece:
                    yield piece
                if generated >= max_tokens:
                    finish = "length"
                    break
            tail = decoder.decode(b"", final=True)
            if tail:
                yield tail
        except RuntimeError as exc:  # llama_decode failures
            raise ModelError(f"llama.cpp failed while generating: {exc}") from exc
        finally:
            self._on_progress = None
            self._record(len(prompt), generated)
            self.stats["finish_reason"] = finish

    def _record(self, prompt_tokens: int, generated: int) -> None:
        """Stats of the last call. The eval counter's first entry is the number of prompt tokens
        llama.cpp evaluated; the rest of the prompt came from the KV cache."""
        loaded, built = self._primed
        self._primed = (0, 0)
        seconds, self._prime_seconds = getattr(self, "_prime_seconds", 0.0), 0.0
        evaluated = (self._evals[0] if self._evals else 0) + built
        self.stats = {
            "prompt_tokens": prompt_tokens,
            "prompt_evaluated": evaluated,
            "prompt_cached": prompt_tokens - evaluated,  # includes prompt_from_disk
            "prompt_from_disk": loaded,
            "generated_tokens": generated,
        }
        if loaded or built:  # seconds to load (or evaluate and save) the system prefix's state
            self.stats["prefix_seconds"] = round(seconds, 4)

    # ------------------------------------------------------------------ the system prefix's saved state

    def system_prefix(self, head) -> list[int]:
        """The tokens every prompt that starts with these messages (`head`; a string: one system
        message) starts with: the common prefix of the chat rendered with two different user turns
        after them (the template's own rendering, whatever the template)."""
        if isinstance(head, str):
            head = [{"role": "system", "content": head}]
        ident = json.dumps([[m.get("role"), m.get("content")] for m in head])
        if ident not in self._prefixes:
            a, b = (self.prompt_tokens([*head, {"role": "user", "content": u}]) for u in PROBE_USERS)
            n = 0
            while n < min(len(a), len(b)) and a[n] == b[n]:
                n += 1
            self._prefixes[ident] = a[:n]
        return self._prefixes[ident]

    def _prime_prefix(self, messages: Messages, prompt: list[int]) -> None:
        """Before a call: when the KV cache does not already start with the system prefix, load
        its saved state, or evaluate it and save the state. Any failure leaves the normal path
        (llama.cpp evaluates the whole prompt); the cache is never an error for the user."""
        self._primed = (0, 0)
        self._prime_seconds = 0.0
        started = time.perf_counter()
        try:
            self._load_prefix(messages, prompt)
        finally:
            self._prime_seconds = time.perf_counter() - started

    def _load_prefix(self, messages: Messages, prompt: list[int]) -> None:
        llm = self._llm
        if (self._prefix_dir is None or not messages or messages[0].get("role") != "system"
                or llm._is_recurrent or llm._is_hybrid):
            return
        prefix = self.system_prefix(fixed_head(messages))
        n = len(prefix)
        # at least one prompt token is left to evaluate: the call needs its logits
        if n < MIN_PREFIX_TOKENS or n >= len(prompt) or prompt[:n] != prefix:
            return
        if llm.n_tokens >= n and llm.input_ids[:n].tolist() == prefix:
            return  # this process already holds it
        import llama_cpp
        import numpy as np
        from llama_cpp.llama import LlamaState

        key = saved_states.cache_key(self.path, self.context_size, prefix, llama_cpp.__version__)
        data = saved_states.read(self._prefix_dir, key, prefix)
        if data is not None:
            ids = np.zeros(self.context_size, dtype=np.intc)  # load_state replaces the whole array
            ids[:n] = prefix
            # save_state's `scores` (n tokens x the vocabulary, float32) are not stored: without
            # logits_all llama-cpp-python never reads them; a (1, n_vocab) row broadcasts into place
            state = LlamaState(input_ids=ids, scores=np.zeros((1, llm.n_vocab()), dtype=np.single),
                               n_tokens=n, llama_state=data, llama_state_size=len(data), seed=llm._seed)
            try:
                llm.load_state(state)
                self._primed = (n, 0)
                return
            except Exception:  # a state llama.cpp refuses: evaluate and save it again
                llm.reset()
        llm.reset()
        try:
            llm.eval(prefix)
        except RuntimeError as exc:
            raise ModelError(f"llama.cpp failed while reading the system prompt: {exc}") from exc
        self._primed = (0, n)
        data = self._state_bytes()
        if data is not None:
            saved_states.write(self._prefix_dir, key, prefix, data)

    def _state_bytes(self) -> Optional[bytes]:
        """llama.cpp's state (KV cells, last logits): the bytes Llama.save_state keeps, without
        its copy of every evaluated token's scores, which is large and never read here."""
        import ctypes

        import llama_cpp

        ctx = self._llm._ctx.ctx
        size = llama_cpp.llama_state_get_size(ctx)
        buf = (ctypes.c_uint8 * int(size))()
        n = int(llama_cpp.llama_state_get_data(ctx, buf, size))
        if n <= 0 or n > int(size):
            return None
        return ctypes.string_at(buf, n)
