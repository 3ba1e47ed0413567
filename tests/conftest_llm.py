"""Fixtures for the chat-model layer; tests/conftest.py imports them:

    from tests.conftest_llm import tiny_gguf  # noqa: F401
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tinymodel import write_tiny_gguf  # noqa: E402


@pytest.fixture(scope="session")
def tiny_gguf(tmp_path_factory) -> Path:
    """Path of a tiny random-weight llama GGUF (about 400 KB) written once per test session."""
    return write_tiny_gguf(tmp_path_factory.mktemp("models") / "tiny.gguf")
