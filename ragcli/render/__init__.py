"""Everything a person or a script sees: terminal views and JSON shapes."""
