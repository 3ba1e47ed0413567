"""The one set of search options and the one list of modes.

A mode names which steps of the pipeline run (search/pipeline.py):

- lexical, dense: one leg (FTS5 BM25, or sqlite-vec cosine);
- hybrid: both legs, fused by reciprocal rank fusion;
- expanded: hybrid + the book's own terms near the question as an extra lexical query (+ the model
  rewrite when a chat model is given) + a re-rank of the first `rerank_top` hits (ask's default);
- feedback: expanded + pseudo-relevance feedback (Rocchio on the dense leg, RM3-style words on the
  lexical leg) and deep fusion (`ask --feedback`).

The other fields tune the steps a mode runs; their defaults are the measured ones
(docs/decisions.md D25).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Union

from ragcli.errors import UsageError

MODES = ("lexical", "dense", "hybrid", "expanded", "feedback")  # simplest first: eval's column order
EXPANDING = ("expanded", "feedback")

RRF_K = 60
# Fusion window: only the first WINDOW ranks of each list count in the fusion (the rest follow, for
# recall). A deep fusion lets passages that are mediocre in both legs overtake one that a single leg
# ranks near the top, which is the usual shape of a lay question's answer (dense finds it, the words
# do not match): FM 4-25.11 lay hit@5 0.851 (no window) -> 0.920 (20); NFCorpus, where many documents
# are relevant, prefers deep fusion (dev nDCG@10 0.3287 -> 0.3200), which `feedback` mode keeps.
WINDOW = 20
BY_MODE = "by-mode"
SKIP_READ = 3  # with skip_kinds, the fusion returns this many times k hits before the filter  # `window` default: WINDOW, or deep fusion (None) in feedback mode


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise UsageError(f"unknown mode '{mode}' (choose from {', '.join(MODES)})")
    return mode


def mode_for(expand: bool, feedback: bool) -> str:
    """ask's and summary's flags as a mode: --no-expand is plain hybrid (feedback needs expansion)."""
    return "hybrid" if not expand else ("feedback" if feedback else "expanded")


@dataclass(frozen=True)
class SearchOptions:
    mode: str = "hybrid"
    k: int = 10  # hits returned
    book_ids: Optional[Sequence[str]] = None  # None: every book
    depth: int = 50  # ranks read from each leg (at least k)
    # fusion
    rrf_k: int = RRF_K
    window: Union[int, None, str] = BY_MODE  # fusion window (None: deep fusion)
    # expansion (expanded, feedback): the book's terms near the question
    n_terms: int = 8  # terms joined into the expansion query
    min_similarity: float = 0.35  # terms less similar to the question are left out
    relative: float = 0.8  # ... and so are terms below this share of the best term's similarity
    term_weight: float = 0.1  # weight of the lexical terms query (the user's own words weigh 1.0);
    # RRF scores are flat near the top, so even 0.3 reorders exact-term hits (see the benchmarks)
    lexical_terms: bool = True  # add terms sharing a content word with the question
    rewrite_weight: float = 0.8  # the model rewrite's lists weigh a little below the question's own
    # the messages the rewrite begins with: those of the pipeline's next model call, so that call re-uses
    # their KV cache (None: ask's answer, system_prompt.ANSWER_PREFIX; summary: SUMMARY_PREFIX)
    rewrite_prefix: Optional[Sequence[dict]] = None
    # feedback (feedback mode), tuned on NFCorpus dev
    feedback: int = 3  # Rocchio: the question's vector + feedback_beta x the mean vector of the
    feedback_beta: float = 1.0  # first pass's top N passages replaces it in the dense leg (0: off)
    lexical_feedback: int = 5  # RM3-style: the N first-pass top passages' most telling words (tf x
    lexical_feedback_terms: int = 10  # idf, the question's own words left out) join as a lexical
    lexical_feedback_weight: float = 0.6  # query of their own, at this weight (0 passages: off)
    # re-rank (expanded, feedback; any mode when a reranker is passed to the pipeline)
    rerank_top: int = 10  # re-order the first N fused hits (0: off)
    rerank_dense: float = 0.5  # cosine mix: the question's cosine to each passage,
    rerank_terms: float = 0.1  # ... the chosen terms' cosine to it, and the fused score (the rest)
    # a re-ranker model passed to the pipeline (--rerank) re-scores the first max(k, rerank_depth)
    # hits after the cosine mix; its order is fused with the search's (search/model_rerank.py)
    rerank_depth: int = 20
    # ask and summary: stop before searching when the query looks like another language than the books
    check_language: bool = False
    # text kinds to leave out (ingest/kinds.py; ask and summary: kinds.NOT_EXPOSITION): the legs read
    # SKIP_READ times k hits, those of these kinds are dropped; when nothing else is left the hits are
    # kept as found and SearchResult.skipped_kinds_kept says so. Passages without a kind ('', ingested
    # before kinds) are never left out.
    skip_kinds: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_mode(self.mode)

    @property
    def legs(self) -> tuple[str, ...]:
        return (self.mode,) if self.mode in ("lexical", "dense") else ("lexical", "dense")

    @property
    def expands(self) -> bool:
        return self.mode in EXPANDING

    @property
    def feeds_back(self) -> bool:
        return self.mode == "feedback" and (self.feedback > 0 or self.lexical_feedback > 0)

    @property
    def fusion_window(self) -> Optional[int]:
        if self.window == BY_MODE:
            return None if self.mode == "feedback" else WINDOW
        return self.window  # type: ignore[return-value]
