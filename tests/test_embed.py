"""The embedders, for real: all-MiniLM-L6-v2 through sentence-transformers and through the ONNX export.

The ONNX files are exported once per session into the session's RAGCLI_CACHE (conftest `model_cache`).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragcli.models import embed

ROOT = Path(__file__).resolve().parents[1]
HEART_PDF = Path(__file__).resolve().parent / "fixtures" / "heart-failure-programmes-article.pdf"


@pytest.fixture(scope="module")
def real_texts() -> list[str]:
    """Short queries plus real article text: one page (far over 256 word pieces) and a paragraph."""
    import pymupdf

    with pymupdf.open(HEART_PDF) as doc:
        page = doc[1].get_text()
    paragraph = " ".join(page.split()[:90])
    return [
        "How long can a tourniquet stay on?",
        "patient experiences of heart failure programmes",
        page,
        "self-care",
        paragraph,
        "Structured telephone support and nurse-led clinics reduced readmissions for heart failure.",
    ]


@pytest.fixture(scope="module")
def st_embedder():
    return embed.SentenceTransformerEmbedder()


@pytest.fixture(scope="module")
def onnx_embedders(model_cache) -> dict:
    """Both ONNX variants from the session cache (exported there on first use)."""
    out = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAGCLI_CACHE", str(model_cache))
        for backend in ("onnx", "onnx-int8"):
            out[backend] = embed.load_onnx_embedder(embed.DEFAULT_MODEL, backend)
    return out


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_long_text_is_cut_at_256_word_pieces(onnx_embedders, real_texts):
    counts = onnx_embedders["onnx"].token_counts(real_texts)
    assert counts[2] == 256  # the page is far longer: truncated as sentence-transformers does
    assert all(c <= 256 for c in counts)
    assert min(counts) < 16


def test_onnx_fp32_equals_sentence_transformers(onnx_embedders, st_embedder, real_texts):
    ours = onnx_embedders["onnx"].embed(real_texts)
    theirs = st_embedder.embed(real_texts)
    assert ours.shape == theirs.shape == (len(real_texts), 384)
    assert _cosines(ours, theirs).min() >= 0.999


def test_onnx_int8_stays_close_to_sentence_transformers(onnx_embedders, st_embedder, real_texts):
    cos = _cosines(onnx_embedders["onnx-int8"].embed(real_texts), st_embedder.embed(real_texts))
    assert cos.min() >= 0.98  # int8 weights: close, not equal (retrieval quality: docs/benchmarks.md)


@pytest.mark.parametrize("backend", ["onnx", "onnx-int8"])
def test_rows_unit_length_float32_dim_384(onnx_embedders, real_texts, backend):
    e = onnx_embedders[backend]
    vecs = e.embed(real_texts)
    assert e.dim == 384 and vecs.dtype == np.float32 and vecs.shape == (len(real_texts), 384)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


def test_length_sorted_batches_keep_input_order(onnx_embedders, real_texts):
    e = onnx_embedders["onnx"]
    one_by_one = np.vstack([e.embed([t]) for t in real_texts])
    saved = e.batch_size
    try:
        e.batch_size = 2  # several batches, each padded to its own longest text
        batched = e.embed(real_texts)
    finally:
        e.batch_size = saved
    np.testing.assert_allclose(batched, one_by_one, atol=1e-4)
    reversed_rows = e.embed(real_texts[::-1])
    np.testing.assert_allclose(reversed_rows[::-1], batched, atol=1e-4)


def test_duplicates_and_padding_do_not_change_a_vector(onnx_embedders):
    e = onnx_embedders["onnx"]
    alone = e.embed(["self-care"])
    mixed = e.embed(["self-care", "a much longer sentence that forces padding of the short one " * 5,
                     "self-care"])
    np.testing.assert_allclose(mixed[0], alone[0], atol=1e-5)
    np.testing.assert_allclose(mixed[2], alone[0], atol=1e-5)


@pytest.mark.parametrize("backend", ["onnx", "onnx-int8"])
def test_empty_input(onnx_embedders, backend):
    vecs = onnx_embedders[backend].embed([])
    assert vecs.shape == (0, 384) and vecs.dtype == np.float32


def test_empty_input_sentence_transformers(st_embedder):
    assert st_embedder.embed([]).shape == (0, 384)


def test_get_embedder_default_is_onnx_with_the_model_name(model_cache, onnx_embedders):
    e = embed.get_embedder()
    assert e.backend == embed.DEFAULT_BACKEND
    assert e.name == embed.DEFAULT_MODEL and e.dim == 384
    assert embed.get_embedder("all-MiniLM-L6-v2").name == embed.DEFAULT_MODEL
    assert embed.get_embedder() is e  # one per process


def test_backend_override_and_other_models(monkeypatch):
    monkeypatch.setenv("RAGCLI_EMBED_BACKEND", "st")
    assert embed._backend_for(embed.DEFAULT_MODEL) == "st"
    monkeypatch.setenv("RAGCLI_EMBED_BACKEND", "onnx")
    assert embed._backend_for(embed.DEFAULT_MODEL) == "onnx"
    assert embed._backend_for("BAAI/bge-small-en-v1.5") == "st"  # only the default model is exported
    monkeypatch.setenv("RAGCLI_EMBED_BACKEND", "tensorflow")
    with pytest.raises(ValueError):
        embed._backend_for(embed.DEFAULT_MODEL)


def test_existing_export_is_reused_not_redone(model_cache, onnx_embedders, monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("export_onnx called although the cache holds the model")

    monkeypatch.setattr(embed, "export_onnx", boom)
    e = embed.load_onnx_embedder(embed.DEFAULT_MODEL, "onnx-int8")
    assert e.embed(["x"]).shape == (1, 384)
    folder = embed.model_cache_dir()
    assert folder.parent.parent == Path(model_cache)
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]  # atomic writes left no temp


def test_export_failure_falls_back_to_sentence_transformers(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGCLI_CACHE", str(tmp_path))  # empty cache: an export would be needed
    monkeypatch.setattr(embed, "_CACHE", {})

    def no_torch(*args, **kwargs):
        raise ImportError("No module named 'torch'")

    monkeypatch.setattr(embed, "export_onnx", no_torch)
    messages: list[str] = []
    e = embed.get_embedder(progress=messages.append)
    assert isinstance(e, embed.SentenceTransformerEmbedder) and e.name == embed.DEFAULT_MODEL
    assert any("sentence-transformers" in m for m in messages)


def test_export_files_and_meta(model_cache, onnx_embedders):
    folder = embed.model_cache_dir()
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["meta.json", "model-int8.onnx", "model.onnx", "tokenizer.json"]
    meta = embed._read_meta(folder)
    assert meta["dim"] == 384 and meta["max_seq_length"] == 256 and meta["pooling"] == "mean"


def test_query_process_never_imports_torch(model_cache, onnx_embedders):
    code = ("import sys; from ragcli.models.embed import get_embedder; e = get_embedder(); "
            "v = e.embed(['how do I stop bleeding?']); "
            "assert v.shape == (1, 384), v.shape; "
            "bad = [m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules]; "
            "assert not bad, bad; print(e.backend)")
    env = dict(os.environ, RAGCLI_CACHE=str(model_cache), PYTHONPATH=str(ROOT))
    env.pop("RAGCLI_EMBED_BACKEND", None)
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == embed.DEFAULT_BACKEND
