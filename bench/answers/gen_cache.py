"""A generation cache for the answer benchmarks: every model call's reply, keyed by what was asked.

`CachedModel(model, path)` wraps a chat model (ragcli.models.chat.ChatModel). A call whose messages,
constraint, max_tokens, temperature and model file were seen before returns the recorded reply and
stats at once; any other call goes to the model and is appended to `path` (JSON lines). So a change to
what ragcli does *after* generation (claim scoring, the unbacked check, relabelling, the health checks)
is re-measured on the same replies in seconds, and a change to a prompt re-runs only the calls whose
prompt changed. Sampling is seeded (seed 0), so a cached reply is the one the model would give again.

With `model_path` given and no live model (`replay_only=True`), a missing call is an error rather than
a silent fallback: the benchmark then measures exactly the recorded replies.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Optional

REPLAY_PIECE = 12  # characters a replayed piece (about three tokens)


def _constraint_key(constraint) -> Optional[str]:
    if constraint is None:
        return None
    gbnf = getattr(constraint, "gbnf", None)
    return gbnf if gbnf else repr(constraint)


class CachedModel:
    def __init__(self, model, path: str | Path, replay_only: bool = False):
        self._model = model
        self._path = Path(path)
        self._replay_only = replay_only
        self._cache: dict[str, dict] = {}
        if self._path.exists():
            for line in self._path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    row = json.loads(line)
                    self._cache[row["key"]] = row
        self.hits = self.misses = self.unrecorded = 0
        self.stats: dict = {}

    # the protocol's attributes come from the wrapped model (its tokenizer, window, params)
    def __getattr__(self, name):
        return getattr(self._model, name)

    def _key(self, messages, max_tokens, constraint, temperature) -> str:
        ident = self._model.params.get("file") or self._model.params.get("name")
        blob = json.dumps([ident, messages, max_tokens, _constraint_key(constraint), temperature,
                           self._model.params.get("repeat_penalty") or 1.0], sort_keys=True)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def _recorded(self, key: str, what: str):
        """The recorded row for `key`, or None when the call must be made (counted as a miss). Replay
        only: a missing call raises KeyError, and is counted too, since a caller may swallow the error
        (ask's rewrite falls back silently)."""
        row = self._cache.get(key)
        if row is None:
            if self._replay_only:
                self.unrecorded += 1
                raise KeyError(f"gen_cache: no recorded {what} for this call (replay only)")
            self.misses += 1
        return row

    def _record(self, row: dict) -> None:
        self._cache[row["key"]] = row
        with self._path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")

    def chat(self, messages, *, max_tokens: int, constraint=None, stream: bool = False,
             temperature=None, on_progress=None):
        key = self._key(messages, max_tokens, constraint, temperature)
        row = self._recorded(key, "reply")
        if row is None:
            text = "".join(self._model.chat(messages, max_tokens=max_tokens, constraint=constraint,
                                            stream=True, temperature=temperature, on_progress=on_progress))
            stats = {k: v for k, v in self._model.stats.items() if isinstance(v, (int, float, str)) or v is None}
            row = {"key": key, "text": text, "stats": stats,
                   "user": messages[-1]["content"][-300:]}  # for a person reading the file
            self._record(row)
        else:
            self.hits += 1
        self.stats = dict(row["stats"])
        return self._pieces(row) if stream else row["text"]

    def next_word_probs(self, messages, words):
        """The wrapped model's next-word probabilities, recorded and replayed like replies."""
        ident = self._model.params.get("file") or self._model.params.get("name")
        key = hashlib.sha256(json.dumps([ident, "next_word_probs", messages, words], sort_keys=True)
                             .encode("utf-8")).hexdigest()
        row = self._recorded(key, "probabilities")
        if row is None:
            probs = self._model.next_word_probs(messages, words)
            row = {"key": key, "probs": probs, "stats": dict(getattr(self._model, "stats", {})),
                   "user": messages[-1]["content"][-200:]}
            self._record(row)
        else:
            self.hits += 1
        return dict(row["probs"])

    def _pieces(self, row: dict):
        """The recorded reply in small pieces, as a live stream comes. A caller that stops reading
        early (ragcli's loop check closes the stream) gets the stats a live llama.cpp model reports
        then: no finish reason, the tokens generated so far (pro rata): the recording itself ran to
        the model's own end, since the cache records whole replies."""
        text, stats = row["text"], dict(row["stats"])
        sent = 0
        try:
            while sent < len(text):
                piece = text[sent:sent + REPLAY_PIECE]
                sent += len(piece)
                yield piece
        finally:
            if sent < len(text):
                share = sent / max(1, len(text))
                self.stats = {**stats, "finish_reason": None,
                              "generated_tokens": round(share * (stats.get("generated_tokens") or 0))}
