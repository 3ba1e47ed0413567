"""Chat models: one protocol (complete a chat), a llama.cpp implementation, a fake, and grammars.

`llama_cpp` is imported inside the functions that use it, so `import ragcli.models.llm` stays fast and
works without llama-cpp-python installed (the fake and the grammar helpers need nothing heavy).
"""
from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Callable, Iterator, Optional, Protocol, Union

from ragcli.errors import ModelError

Messages = list[dict]


class ChatModel(Protocol):
    name: str
    params: dict  # recorded with answers and summaries: path, n_ctx, seed, temperature, ...
    context_size: int
    stats: dict  # last call: prompt_tokens, prompt_evaluated, prompt_cached, generated_tokens

    def chat(self, messages: Messages, *, max_tokens: int, grammar: Optional[str] = None,
             stream: bool = False, temperature: Optional[float] = None
             ) -> Union[str, Iterator[str]]:
        """The assistant's reply; with stream=True an iterator of text pieces. `grammar` is GBNF
        text that constrains the output; `temperature` None means the model's default."""
        ...

    def count_tokens(self, text: str) -> int:
        ...


# --------------------------------------------------------------------------- GGUF header


GGUF_MAGIC = b"GGUF"
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
            11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


def _read_string(f) -> str:
    (n,) = struct.unpack("<Q", f.read(8))
    return f.read(n).decode("utf-8", errors="replace")


def _read_value(f, vtype: int):
    """One metadata value; arrays are skipped (returned as None) since we only need scalars."""
    if vtype in _SCALARS:
        fmt = _SCALARS[vtype]
        return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]
    if vtype == _STRING:
        return _read_string(f)
    if vtype == _ARRAY:
        item_type, count = struct.unpack("<IQ", f.read(12))
        if item_type in _SCALARS:
            f.seek(struct.calcsize(_SCALARS[item_type]) * count, os.SEEK_CUR)
        else:
            for _ in range(count):
                _read_value(f, item_type)
        return None
    raise ValueError(f"unknown GGUF value type {vtype}")


def gguf_metadata(path: Union[str, Path]) -> dict:
    """Scalar metadata of a GGUF file, read from its header without loading the model.

    Stops once the architecture's context length is known (tokenizer arrays come later). Raises
    ModelError when the file is not a GGUF file.
    """
    path = Path(path)
    try:
        with open(path, "rb") as f:
            if f.read(4) != GGUF_MAGIC:
                raise ModelError(f"{path} is not a GGUF model file (no 'GGUF' magic at the start)")
            version, _n_tensors, n_kv = struct.unpack("<IQQ", f.read(20))
            if version < 2:
                raise ModelError(f"{path}: GGUF version {version} is too old; convert it again")
            meta: dict = {}
            for _ in range(n_kv):
                key = _read_string(f)
                (vtype,) = struct.unpack("<I", f.read(4))
                meta[key] = _read_value(f, vtype)
                arch = meta.get("general.architecture")
                if arch and f"{arch}.context_length" in meta:
                    break
            return meta
    except (OSError, struct.error, ValueError, UnicodeDecodeError) as exc:
        raise ModelError(f"cannot read GGUF header of {path}: {exc}") from exc


def trained_context(meta: dict) -> Optional[int]:
    arch = meta.get("general.architecture")
    value = meta.get(f"{arch}.context_length") if arch else None
    return int(value) if value else None


# --------------------------------------------------------------------------- llama.cpp


def _import_llama_cpp():
    try:
        import llama_cpp  # noqa: F401
    except ImportError as exc:
        raise ModelError(
            "llama-cpp-python is not installed; install it (pip install llama-cpp-python) "
            "or run without --model for extractive answers"
        ) from exc
    return llama_cpp


DEFAULT_CTX = 4096


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


def _capture_stderr(fn):
    """Run fn() with file descriptor 2 redirected (llama.cpp's C code prints errors there);
    returns (result, captured text)."""
    import sys
    import tempfile

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


class LlamaCppModel:
    """A GGUF chat model run in-process by llama-cpp-python.

    The same `Llama` object serves every call, so llama.cpp keeps the KV cache of the previous
    prompt and only evaluates the tokens after the longest common prefix: a second call that
    shares the system prompt does not re-process it (see `stats["prompt_cached"]`).
    """

    def __init__(self, path: Union[str, Path], n_ctx: Optional[int] = None, n_threads: Optional[int] = None,
                 n_gpu_layers: int = 0, seed: int = 0, temperature: float = 0.2,
                 verbose: bool = False):
        self.path = Path(path).expanduser()
        meta = check_model_file(self.path, n_ctx)
        if n_ctx is None:  # not asked for: 4096, or less when the model was trained on less
            n_ctx = min(DEFAULT_CTX, trained_context(meta) or DEFAULT_CTX)
        llama_cpp = _import_llama_cpp()
        self.seed = seed
        self.temperature = temperature
        self._grammars: dict[str, object] = {}
        self._format = None
        try:
            self._llm = llama_cpp.Llama(
                model_path=str(self.path), n_ctx=n_ctx, n_threads=n_threads,
                n_gpu_layers=n_gpu_layers, seed=seed, verbose=verbose,
            )
        except Exception as exc:  # llama-cpp-python raises ValueError/RuntimeError/OSError
            raise ModelError(f"cannot load model {self.path}: {exc}") from exc
        self._install_eval_counter()
        self.name = str(meta.get("general.name") or self.path.stem)
        self.context_size = int(self._llm.n_ctx())
        self.params = {
            "path": str(self.path), "file": self.path.name, "backend": "llama.cpp",
            "n_ctx": self.context_size, "n_ctx_train": trained_context(meta),
            "n_threads": n_threads, "n_gpu_layers": n_gpu_layers, "seed": seed,
            "temperature": temperature, "architecture": meta.get("general.architecture"),
        }
        self.stats: dict = {}

    def _install_eval_counter(self) -> None:
        """Count tokens llama.cpp really evaluates: Llama.generate calls self.eval() once with
        the prompt tokens not already in the KV cache, then once per generated token."""
        original = self._llm.eval
        self._evals: list[int] = []

        def counting_eval(tokens):
            self._evals.append(len(tokens))
            return original(tokens)

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
        sampler, message = _capture_stderr(
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

    def chat(self, messages: Messages, *, max_tokens: int, grammar: Optional[str] = None,
             stream: bool = False, temperature: Optional[float] = None):
        prompt = self.prompt_tokens(messages)
        room = self.context_size - len(prompt)
        if room <= 0:
            raise ModelError(f"the prompt has {len(prompt)} tokens but the model context holds "
                             f"{self.context_size}; use fewer sources or a larger --n-ctx")
        temp = self.temperature if temperature is None else temperature
        pieces = self._generate(prompt, min(max_tokens, room), self._grammar(grammar), temp)
        return pieces if stream else "".join(pieces)

    def _generate(self, prompt: list[int], max_tokens: int, grammar, temp: float) -> Iterator[str]:
        """Sample until an end-of-generation token or max_tokens, yielding decoded text.

        Bytes are decoded incrementally (a character may span tokens; invalid UTF-8 is dropped),
        so the streamed pieces always join to the non-streamed reply."""
        import codecs

        import llama_cpp

        llm, generated = self._llm, 0
        decoder = codecs.getincrementaldecoder("utf-8")(errors="ignore")
        llm.set_seed(self.seed)
        self._evals = []
        try:
            for token in llm.generate(prompt, temp=temp, top_k=40, top_p=0.95, min_p=0.05,
                                      repeat_penalty=1.0, grammar=grammar):
                if llama_cpp.llama_vocab_is_eog(llm._model.vocab, token):
                    break
                generated += 1
                piece = decoder.decode(llm.detokenize([token]))
                if piece:
                    yield piece
                if generated >= max_tokens:
                    break
            tail = decoder.decode(b"", final=True)
            if tail:
                yield tail
        except RuntimeError as exc:  # llama_decode failures
            raise ModelError(f"llama.cpp failed while generating: {exc}") from exc
        finally:
            self._record(len(prompt), generated)

    def _record(self, prompt_tokens: int, generated: int) -> None:
        """Stats of the last call. The eval counter's first entry is the number of prompt tokens
        llama.cpp evaluated; the rest of the prompt came from the KV cache."""
        evaluated = self._evals[0] if self._evals else 0
        self.stats = {
            "prompt_tokens": prompt_tokens,
            "prompt_evaluated": evaluated,
            "prompt_cached": prompt_tokens - evaluated,
            "generated_tokens": generated,
        }


# --------------------------------------------------------------------------- fake


class FakeChatModel:
    """Deterministic chat model for pipeline tests.

    `replies`: a list of replies given in order (an exhausted queue fails the test), one string
    given to every call, or a function(messages) -> str. Every call is recorded in `calls`."""

    def __init__(self, replies: Union[list[str], Callable[[Messages], str], str] = "",
                 name: str = "fake", context_size: int = 4096, piece_size: int = 3):
        if isinstance(replies, str):
            fixed = replies
            replies = lambda _messages: fixed  # noqa: E731 - the same reply to every call
        self._replies = replies if callable(replies) else list(replies)
        self.name = name
        self.params = {"backend": "fake"}
        self.context_size = context_size
        self.piece_size = piece_size
        self.calls: list[dict] = []
        self.stats: dict = {}

    def count_tokens(self, text: str) -> int:
        return len(text) // 4 + 1

    def _next_reply(self, messages: Messages) -> str:
        if callable(self._replies):
            return self._replies(messages)
        if not self._replies:
            raise AssertionError("FakeChatModel: no queued reply left")
        return self._replies.pop(0)

    def chat(self, messages: Messages, *, max_tokens: int, grammar: Optional[str] = None,
             stream: bool = False, temperature: Optional[float] = None):
        self.calls.append({"messages": [dict(m) for m in messages], "max_tokens": max_tokens,
                           "grammar": grammar, "stream": stream, "temperature": temperature})
        reply = self._next_reply(messages)
        prompt = sum(self.count_tokens(m.get("content", "")) for m in messages)
        self.stats = {"prompt_tokens": prompt, "prompt_evaluated": prompt, "prompt_cached": 0,
                      "generated_tokens": self.count_tokens(reply)}
        if not stream:
            return reply
        step = self.piece_size
        return iter([reply[i:i + step] for i in range(0, len(reply), step)])


# --------------------------------------------------------------------------- grammars


_GBNF_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _gbnf_literal(text: str) -> str:
    """A GBNF string literal matching exactly `text`."""
    def escape(ch: str) -> str:
        if ch in _GBNF_ESCAPES:
            return _GBNF_ESCAPES[ch]
        return f"\\x{ord(ch):02X}" if ord(ch) < 0x20 or ord(ch) == 0x7F else ch

    return '"' + "".join(escape(ch) for ch in text) + '"'


def forced_text_grammar(text: str) -> str:
    """GBNF accepting only `text` (tests use it to force a model's output)."""
    if not text:
        raise ValueError("forced text must not be empty")
    return f"root ::= {_gbnf_literal(text)}\n"


def one_line_grammar(max_chars: int = 200) -> str:
    """GBNF for one line of printable text (no control characters), 1..max_chars characters,
    not starting with a space. Used for query rewriting."""
    if max_chars < 1:
        raise ValueError("max_chars must be at least 1")
    tail = f" [^\\x00-\\x1F\\x7F]{{0,{max_chars - 1}}}" if max_chars > 1 else ""
    return f"root ::= [^\\x00-\\x20\\x7F]{tail}\n"


VERDICTS = ("supported", "partial", "unsupported")


def json_verdicts_grammar(n_claims: int, verdicts: tuple[str, ...] = VERDICTS) -> str:
    """GBNF for a JSON array of exactly n_claims objects, in order:
    [{"claim": 1, "verdict": "supported"}, {"claim": 2, "verdict": "unsupported"}]"""
    if n_claims < 1:
        raise ValueError("n_claims must be at least 1")
    choices = " | ".join(_gbnf_literal(json.dumps(v)) for v in verdicts)
    items = []
    for i in range(1, n_claims + 1):
        items.append(_gbnf_literal('{"claim": ' + str(i) + ', "verdict": ') + " verdict " + '"}"')
    body = ' ", " '.join(items)
    return f'root ::= "[" {body} "]"\nverdict ::= {choices}\n'


def parse_verdicts(text: str, n_claims: int) -> list[Optional[str]]:
    """Verdicts by claim number (claim i at position i-1) from a JSON reply; None if missing."""
    out: list[Optional[str]] = [None] * n_claims
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return out
    for item in data if isinstance(data, list) else []:
        if isinstance(item, dict) and isinstance(item.get("claim"), int):
            i = item["claim"]
            if 1 <= i <= n_claims and isinstance(item.get("verdict"), str):
                out[i - 1] = item["verdict"]
    return out


def json_schema_grammar(schema: dict) -> str:
    """GBNF from a small JSON schema, using llama-cpp-python's converter."""
    _import_llama_cpp()
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    return json_schema_to_gbnf(json.dumps(schema))


# --------------------------------------------------------------------------- factory

_OPTION_ALIASES = {"threads": "n_threads", "gpu_layers": "n_gpu_layers"}
_LOADED: dict[tuple, LlamaCppModel] = {}


def load_model(path: Optional[Union[str, Path]], **opts) -> Optional[ChatModel]:
    """The chat model at `path` (one instance per path and options per process, so the KV cache
    is shared by every stage), or None when no model is configured.

    Accepts the constructor's options and the config names `threads`, `gpu_layers`;
    `max_tokens` is a per-call setting and is ignored here."""
    if not path:
        return None
    opts.pop("max_tokens", None)
    opts = {_OPTION_ALIASES.get(k, k): v for k, v in opts.items()}
    opts = {k: v for k, v in opts.items() if v is not None}
    key = (str(Path(path).expanduser().resolve()), tuple(sorted(opts.items())))
    if key not in _LOADED:
        _LOADED[key] = LlamaCppModel(path, **opts)
    return _LOADED[key]
