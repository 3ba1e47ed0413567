"""A reranker GGUF run in process: llama.cpp's rank pooling (LLAMA_POOLING_TYPE_RANK), as used by
bge-reranker-v2-m3 and jina-reranker GGUFs.

llama-cpp-python has no rank method, so the pair is built the way llama.cpp's server builds it
(`format_prompt_rerank`): the model's own `rerank` chat template when the GGUF has one (with
{query} and {document} filled in), else BOS query EOS SEP document EOS, each special token only
where the vocabulary's add_bos / add_eos / add_sep flags say so. The score is the first value of
the pooled output of the pair's sequence (the classification head's logit).
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence, Union

from ragcli.errors import ModelError
from ragcli.models.gguf import gguf_facts, trained_context
from ragcli.models.llama_setup import capture_stderr, check_model_file, import_llama_cpp

# llama_cpp is imported where the re-ranker is loaded (about 0.7 s): listing models never loads it.

MAX_CTX = 1024  # pairs longer than this are cut (the document's end): passages are ~400 tokens


class GgufReranker:
    def __init__(self, path: Union[str, Path], n_threads: Optional[int] = None, n_ctx: Optional[int] = None):
        self.path = Path(path).expanduser()
        meta = check_model_file(self.path, None)
        if not gguf_facts(self.path)["reranker"]:
            raise ModelError(f"{self.path} is not a reranker GGUF (no rank pooling, no classification head)")
        llama_cpp = import_llama_cpp()
        n_ctx = n_ctx or min(MAX_CTX, trained_context(meta) or MAX_CTX)
        try:  # an encoder sees the whole pair in one micro-batch
            self._llm, _log = capture_stderr(lambda: llama_cpp.Llama(
                model_path=str(self.path), embedding=True, pooling_type=llama_cpp.LLAMA_POOLING_TYPE_RANK,
                n_ctx=n_ctx, n_batch=n_ctx, n_ubatch=n_ctx, n_threads=n_threads, verbose=False))
        except Exception as exc:
            raise ModelError(f"cannot load reranker {self.path}: {exc}") from exc
        model = self._llm._model
        self._vocab = model.vocab
        template = llama_cpp.llama_model_chat_template(model.model, b"rerank")
        self.template = template.decode("utf-8") if template else None
        self.context_size = n_ctx
        self.name = str(meta.get("general.name") or self.path.stem)
        self.params = {"backend": "llama.cpp", "kind": "reranker", "name": self.name, "path": str(self.path),
                       "template": bool(self.template)}

    def _tokens(self, text: str, special: bool) -> list[int]:
        return self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=special)

    def pair(self, query: str, document: str) -> list[int]:
        """The pair's tokens, as llama.cpp's server formats a rerank task."""
        import llama_cpp

        if self.template:
            text = self.template.replace("{query}", query).replace("{document}", document)
            return self._fit(self._tokens(text, special=True))
        v = self._vocab
        head, tail = [], []
        if llama_cpp.llama_vocab_get_add_bos(v):
            head.append(llama_cpp.llama_vocab_bos(v))
        head += self._tokens(query, special=False)
        if llama_cpp.llama_vocab_get_add_eos(v):
            head.append(llama_cpp.llama_vocab_eos(v))
        if llama_cpp.llama_vocab_get_add_sep(v):
            head.append(llama_cpp.llama_vocab_sep(v))
        doc = self._tokens(document, special=False)
        if llama_cpp.llama_vocab_get_add_eos(v):
            tail.append(llama_cpp.llama_vocab_eos(v))
        room = self.context_size - len(head) - len(tail)
        return head + doc[:max(room, 0)] + tail

    def _fit(self, tokens: list[int]) -> list[int]:
        return tokens[: self.context_size]

    def scores(self, query: str, documents: Sequence[str]) -> list[float]:
        import llama_cpp

        llm, out = self._llm, []
        for doc in documents:
            tokens = self.pair(query, doc)
            llm._batch.reset()
            llm._ctx.kv_cache_clear()
            llm._batch.add_sequence(tokens, 0, True)
            try:
                llm._ctx.decode(llm._batch)
            except RuntimeError as exc:
                raise ModelError(f"llama.cpp failed while re-ranking with {self.path}: {exc}") from exc
            out.append(float(llama_cpp.llama_get_embeddings_seq(llm._ctx.ctx, 0)[0]))
        llm._batch.reset()
        return out
