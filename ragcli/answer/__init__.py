"""From retrieved passages to a checked answer: prompt, generation, citations, claims, support."""
