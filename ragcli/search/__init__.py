"""Retrieval: one pipeline (pipeline.py, options.py) over the legs (FTS5, vectors) and fusion, expansion,
the model rewrite, feedback and re-rank."""
