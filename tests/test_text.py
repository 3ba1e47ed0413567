"""text.py: the named variants keep their documented differences (figures depend on each)."""
from __future__ import annotations

import hashlib

from ragcli import text


def test_words_keep_inner_hyphens_and_apostrophes_letter_runs_do_not():
    s = "Don't move a first-aid kit; COVID-19 café"
    assert text.words(s) == ["Don't", "move", "a", "first-aid", "kit", "COVID-19", "café"]
    assert text.letter_runs(s) == ["Don", "t", "move", "a", "first", "aid", "kit", "COVID", "café"]
    assert text.overlap_words(s) == {"don", "move", "first", "aid", "kit", "covid", "caf"}
    assert text.content_words("How do I stop a nosebleed, tell me?") == ["stop", "nosebleed"]


def test_stopword_variants_differ_where_documented():
    assert "tell" in text.QUERY_STOPWORDS and "tell" not in text.STOPWORDS
    assert text.STOPWORDS <= text.QUERY_STOPWORDS
    assert "patients" in text.SUPPORT_STOPWORDS and "patients" not in text.STOPWORDS
    assert "figure" in text.PHRASE_STOPWORDS and "about" not in text.PHRASE_STOPWORDS


def test_stemmers():
    assert text.light_stem("bandages") == "bandag" and text.light_stem("bleeding") == "bleed" and text.light_stem("cuts") == "cuts"
    assert text.truncation_stem("applied") == text.truncation_stem("apply")
    assert len(text.truncation_stem("hospitalization")) <= text.TRUNCATION


def test_sentence_splitters():
    assert text.chunk_sentences("Stop the bleeding. Apply e.g. a bandage. then wait.") == [
        "Stop the bleeding.", "Apply e.g. a bandage. then wait."]
    assert text.sentences("Use approx. 5 ml of exam-\nple fluid.\nThen wait.\n\nNew para") == [
        "Use approx. 5 ml of example fluid.", "Then wait.", "New para"]
    assert text.segment("") == []


def test_hashes(tmp_path):
    assert text.sha256("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    f = tmp_path / "book.bin"
    data = bytes(range(256)) * 9000  # more than one 1 MiB block
    f.write_bytes(data)
    assert text.file_sha256(f) == hashlib.sha256(data).hexdigest()
