"""ragcli: PDF books into one SQLite file; questions answered with citations you can check."""

__version__ = "0.1.0"
