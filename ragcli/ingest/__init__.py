"""Files -> pages, sections, figures, passages -> the corpus."""
