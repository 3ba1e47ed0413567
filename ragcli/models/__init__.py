"""Language and embedding models behind small protocols."""
