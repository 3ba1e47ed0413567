"""Per-claim support: split the answer into claims and say, for each, whether a cited passage backs it.

(First version: claims and their citations; issue 7 adds the scorer and --verify.)
"""
from __future__ import annotations

from typing import Optional

from .claims import attach_citations, split_claims
from .types import Answer, Claim


def assess(answer: Answer, embedder, verify_model: Optional[object] = None) -> Answer:
    claims = []
    for text, labels in attach_citations(split_claims(answer.answer)):
        claims.append(Claim(text=text, citations=labels, support="no_source" if not labels else "weak"))
    answer.claims = claims
    return answer
