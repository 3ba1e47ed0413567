"""Plain dataclasses passed between pipeline stages.

Nothing here imports a heavy library; every stage takes and returns these values so it can be
tested without a database or a model.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass
class Page:
    number: int  # physical page, 1-based
    label: str  # page label as printed in the book ("2-25"); falls back to str(number)
    text: str
    # read health (ingest/health.py): ok | partial | unreadable | no_text_layer | blank; unreadable and
    # no_text_layer pages are the OCR candidates
    health: str = "ok"
    ocr: str = ""  # the OCR engine that read the page ("rapidocr"); "" for a text layer


@dataclass
class Section:
    path: list[str]  # ["Chapter 2", "Section II", "Tourniquet"]
    page_start: int  # physical, 1-based, inclusive
    page_end: int
    text: str = ""
    level: int = 1
    paragraphs: list[tuple[int, str]] = field(default_factory=list)  # (physical page, text)

    @property
    def title(self) -> str:
        return self.path[-1] if self.path else ""

    @property
    def path_str(self) -> str:
        return " › ".join(self.path)


@dataclass
class Figure:
    number: str  # "2-31", "2.1", "3"
    caption: str  # full caption text, e.g. "Figure 2-31. Tourniquet applied."
    page: int  # physical page
    bbox: Optional[tuple[float, float, float, float]] = None  # nearest image position, if any
    section_path: list[str] = field(default_factory=list)


@dataclass
class Passage:
    text: str  # the text shown to the reader
    section_path: list[str]
    page_start: int
    page_end: int
    kind: str = "passage"  # "passage" | "figure"
    figure_number: Optional[str] = None
    ordinal: int = 0  # position within the book
    ocr: str = ""  # the OCR engine that read its page(s); "" for a text layer
    # exposition | question | exercise | scenario | contents | index | glossary_ref (ingest/kinds.py)
    text_kind: str = "exposition"

    def embed_text(self, book_title: str) -> str:
        """The text that is embedded: passage with its context (book title, section path)."""
        header = book_title
        if self.section_path:
            header += " — " + " › ".join(self.section_path)
        return f"{header}\n{self.text}"


@dataclass
class ParsedBook:
    """What pdf parsing produces, before anything touches the database."""

    title: str
    pages: list[Page]
    sections: list[Section]
    figures: list[Figure]
    source_path: str = ""
    file_hash: str = ""
    terms: list[tuple[str, str]] = field(default_factory=list)  # (term, source) vocabulary
    warnings: list[str] = field(default_factory=list)  # what was lost while reading, one sentence each
    unreadable_pages: list[int] = field(default_factory=list)  # physical; OCR candidates
    format: str = "pdf"  # pdf | epub | mobi | fb2 | xps | cbz | docx | html | text | beir
    author: str = ""  # from the file's metadata, when it has one


@dataclass
class Book:
    id: str
    title: str
    path: str
    file_hash: str
    page_count: int
    sections: int = 0
    figures: int = 0
    passages: int = 0
    ingested_at: str = ""
    warnings: list[str] = field(default_factory=list)
    unreadable_pages: list[int] = field(default_factory=list)
    format: str = ""  # pdf | epub | ... ("" for books ingested before formats were recorded)
    author: str = ""
    ocr_pages: int = 0  # pages whose text came from OCR
    ocr_engine: str = ""  # the engine that read them


@dataclass
class Hit:
    """One retrieved item (a passage or a figure)."""

    passage_id: int
    kind: str
    book_id: str
    book_title: str
    section_path: list[str]
    page_start: int
    page_end: int
    page_label: str  # label of page_start as printed
    text: str
    score: float = 0.0  # fused score
    lexical_score: Optional[float] = None  # bm25 (lower is better in FTS5; we store -rank)
    dense_score: Optional[float] = None  # cosine similarity
    lexical_rank: Optional[int] = None
    dense_rank: Optional[int] = None
    rank: int = 0
    figure_number: Optional[str] = None
    text_hash: str = ""
    ocr: str = ""  # the OCR engine that read the passage's page(s); "" for a text layer
    path: str = ""  # the book's file (absolute when recorded by ingest or sync); "" when unknown
    # exposition | question | exercise | ... (ingest/kinds.py); "" for a passage ingested before kinds
    text_kind: str = ""

    @property
    def section_str(self) -> str:
        return " › ".join(self.section_path)


@dataclass
class Source:
    """A hit given to the model under a label ([S1], [F1])."""

    label: str
    hit: Hit
    relevance: Optional[float] = None  # the chat model's P(yes) that it answers the question (answer/relevance.py)
    # a context block (answer/context.py): the book passages it holds, in reading order ([]: the hit alone)
    passages: list[Hit] = field(default_factory=list)
    # the text the answer prompt gives (answer/context.select: the sentences nearest the question); None:
    # the hit's text. Claims are checked against the hit's text, never this.
    shown: Optional[str] = None


@dataclass
class Evidence:
    label: str
    quote: str
    page_label: str
    page: int


@dataclass
class Claim:
    text: str
    citations: list[str]  # valid labels cited by this sentence
    support: str = "no_source"  # supported | weak | unsupported | no_source | not_factual
    score: float = 0.0
    evidence: Optional[Evidence] = None
    flagged_citations: list[str] = field(default_factory=list)  # valid labels that don't back it
    # the labels the model wrote, when another passage it was given backs the sentence and the cited
    # one does not (grounding.repoint): `citations` then names that passage
    cited_as: list[str] = field(default_factory=list)
    # the model cited nothing for this sentence; ragcli found the passage of the prompt that states it
    # (grounding.attribute) and `citations` names it
    attributed: bool = False
    # why a sentence the scorer would tick is not `supported`, in the reader's words: "the book says
    # scalp, the answer says skull" (a swapped word: answer/swaps.py); None when there is nothing to say
    why: Optional[str] = None


@dataclass
class RemovedCitation:
    text: str  # the mark as the model wrote it, e.g. "[S9]" or "(p. 45)"
    reason: str  # "unknown label", "page reference", ...


@dataclass
class ValidatedText:
    text: str
    citations: list[str]  # valid labels used, in order of first use
    removed: list[RemovedCitation]


@dataclass
class HealthWarning:
    """Something wrong with a generated text (answer/health.py): `truncated`, `repetition`, `echo`,
    `weak`, `unsupported`."""

    code: str
    message: str


@dataclass
class Answer:
    question: str
    expanded_query: Optional[str]
    answer: str
    status: str  # answered | extractive | no_context | no_answer | unsupported | incomplete
    citations: list[str]
    removed_citations: list[RemovedCitation]
    sources: list[Source]
    claims: list[Claim] = field(default_factory=list)
    model: Optional[dict] = None
    timings: dict = field(default_factory=dict)
    prompt: Optional[str] = None
    notice: Optional[str] = None  # e.g. "no model configured; extractive answer"
    verification: Optional[dict] = None
    warnings: list[HealthWarning] = field(default_factory=list)  # the answer's health (answer/health.py)
    attempts: int = 0  # model calls for the answer: 1 (0: none)
    unbacked: Optional[str] = None  # why ragcli's checks made the model's answer no_answer, in words
    reason: Optional[str] = None  # answer/verdict.py's Reason code: why the status is not `answered`
    judge: Optional[dict] = None  # how the relevance judge ran: method, seconds, notice
    # the answer with the label that backs each sentence where ragcli moved one (answer/claims.py
    # backing_labels_text); None when no label moved. `answer` stays as the model wrote it (and streamed).
    relabelled: Optional[str] = None


@dataclass
class SummarySource:
    """What a saved summary keeps of one source: where it is and the text (and hash) it had; `status`
    says whether it is still there (ok), came back under a new passage id (moved), or is gone."""

    label: str
    cited: bool
    passage_id: int
    book_id: str
    book_title: str
    kind: str
    figure_number: Optional[str]
    section_path: list[str]
    page_start: int
    page_end: int
    page_label: str
    text: str
    text_hash: str
    status: str = "ok"  # ok | moved | gone (set when read back)
    reason: Optional[str] = None  # for gone: "book removed" | "text changed"
    current_passage_id: Optional[int] = None


@dataclass
class Summary:
    topic: str
    topic_key: str
    number: int
    text: str
    sources: list[SummarySource]
    model: Optional[dict]
    created_at: str
    status: str = "ok"  # ok | stale
    stale_sources: list[str] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)
    kind: str = "generated"  # generated | extractive
    params: dict = field(default_factory=dict)  # k, books, expansion, embedding model (issue 4)
    removed_citations: list[RemovedCitation] = field(default_factory=list)


@dataclass
class Expansion:
    """What the search added to the query, as shown to the user before the hits."""

    rewrite: Optional[str] = None  # the chat model's rewrite, when one was kept
    terms: list[str] = field(default_factory=list)  # the book's own terms chosen
    candidates: list[tuple[str, str, float]] = field(default_factory=list)  # (term, source, similarity)
    seconds: float = 0.0

    @property
    def shown(self) -> Optional[str]:
        """The one line ask and summary record as their expanded query."""
        return self.rewrite or (", ".join(self.terms) or None)


@dataclass
class SearchResult:
    query: str
    mode: str
    hits: list[Hit]
    expansion: Expansion = field(default_factory=Expansion)
    timings: dict = field(default_factory=dict)  # seconds: expansion, retrieval
    language: Optional[str] = None  # set (and no search run) when the query looks like another language
    # the text kinds left out by SearchOptions.skip_kinds were all there was: the hits are theirs
    skipped_kinds_kept: bool = False


@dataclass
class Turn:
    """One question and its answer in a conversation, as saved (issue 25). `sources` are kept as a
    summary's are (text and hash); `status` is the answer's, `stale` whether a source the answer
    relied on is gone now (set when read back)."""

    conversation_id: int
    number: int
    question: str  # as asked
    standalone: str  # what retrieval, the prompt and every check ran on
    rewritten: bool
    rewrite: dict  # reason, method ("model" | "carried" | ""), seconds
    answer: str
    status: str
    sources: list[SummarySource]
    model: Optional[dict] = None
    notice: Optional[str] = None
    expanded_query: Optional[str] = None
    claims: list[Claim] = field(default_factory=list)
    removed_citations: list[RemovedCitation] = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    created_at: str = ""
    stale: bool = False
    stale_sources: list[str] = field(default_factory=list)


@dataclass
class Conversation:
    id: int
    title: str  # its first question
    book_ids: list[str]  # the --book scope it was started with ([]: every book)
    created_at: str
    updated_at: str
    turns: list[Turn] = field(default_factory=list)
    turn_count: int = 0
