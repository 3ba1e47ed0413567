"""The corpus file: every SQL statement, migrations, vectors, summaries."""
