"""Retrieval: the legs (FTS5, vectors), fusion, expansion, feedback, re-rank."""
