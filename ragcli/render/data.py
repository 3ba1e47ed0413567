"""Every JSON shape ragcli prints, in one place (docs/json.md documents them). Depends only on
`types` and render/links.py; each function takes the core's dataclasses and returns plain dicts and lists."""
from __future__ import annotations

import dataclasses
import json
import sys
from typing import Any

from ragcli.render.links import file_state, file_uri
from ragcli.types import Hit, Summary, SummarySource


def to_data(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {k: to_data(v) for k, v in dataclasses.asdict(obj).items()}
    if isinstance(obj, (list, tuple)):
        return [to_data(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_data(v) for k, v in obj.items()}
    return obj


def print_json(data: Any) -> None:
    json.dump(to_data(data), sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")


# -- search, books, ingest, info ------------------------------------------------------------------

def hit_data(hit: Hit) -> dict:
    """One search hit (docs/json.md: "search --json")."""
    return {
        "rank": hit.rank, "kind": hit.kind, "passage_id": hit.passage_id,
        "book_id": hit.book_id, "book_title": hit.book_title,
        "section_path": hit.section_path, "section": hit.section_str,
        "page_label": hit.page_label, "page": hit.page_start, "page_end": hit.page_end,
        "figure_number": hit.figure_number, "ocr": hit.ocr or None, "text_kind": hit.text_kind or None,
        **file_data(hit),
        "score": round(hit.score, 6),
        "lexical_score": None if hit.lexical_score is None else round(hit.lexical_score, 4),
        "lexical_rank": hit.lexical_rank,
        "dense_score": None if hit.dense_score is None else round(hit.dense_score, 4),
        "dense_rank": hit.dense_rank,
        "text": hit.text,
    }


def file_data(hit: Hit) -> dict:
    """Where to open a passage: `file` (absolute path, or the path as ingested; null when unknown),
    `file_url` (file:///...#page=N; null without an absolute path), `file_status` (ok | gone | unknown)."""
    return {"file": hit.path or None, "file_url": file_uri(hit.path, hit.page_start) or None,
            "file_status": file_state(hit.path)}


def hits_data(hits: list[Hit]) -> list[dict]:
    return [hit_data(h) for h in hits]


def books_data(books: list) -> list[dict]:
    """`books --json`: id, title, path, file_hash, page_count, sections, figures, passages, ingested_at,
    warnings, unreadable_pages, format, author, ocr_pages, ocr_engine."""
    return to_data(books)


def ingest_data(results: list) -> list[dict]:
    """`ingest --json`: one report per file (the core's IngestResult as it is)."""
    return to_data(results)


def models_data(catalog: dict) -> dict:
    """`models --json`: `selected` (what ask would use), `profiles`, `files` (GGUF header facts), as
    models/discovery.catalog builds them."""
    return to_data(catalog)


def info_data(described: dict) -> dict:
    """`info --json`: the corpus description as the store gives it."""
    return to_data(described)


def change_data(change) -> dict:
    """One change of `sync --json` (and one line of `sync --watch --json`): action (added | changed |
    moved | linked | gone), status (done | removed | kept | failed | skipped | planned), path, book_id,
    old_path (moved), passages, embedded (vectors computed), reused (vectors kept), seconds, error."""
    data = to_data(change)
    data["seconds"] = round(data["seconds"], 3)
    return data


def sync_data(report) -> dict:
    """`sync --json`: the folders, counts per action, every change, the unchanged and hashed files,
    `skipped`: one line per symlink leaving the folders or folder reached twice (not read)."""
    counts = {a: report.count(a) for a in ("added", "changed", "moved", "linked", "gone")}
    counts["removed"] = sum(1 for c in report.changes if c.status == "removed")
    counts["failed"] = len(report.failed)
    return {"folders": report.folders, "dry_run": report.dry_run, "prune": report.prune,
            "counts": counts, "unchanged": report.unchanged, "hashed": report.hashed,
            "embedded": sum(c.embedded for c in report.changes),
            "reused": sum(c.reused for c in report.changes),
            "busy": report.busy, "missing_folders": report.missing_folders, "stopped": report.stopped,
            "skipped": report.skipped,
            "seconds": round(report.seconds, 3), "changes": [change_data(c) for c in report.changes]}


def passage_data(hit: Hit, before: list[Hit], after: list[Hit]) -> dict:
    """`show --json`: the passage, where to open it, and its neighbours' ids, pages and text."""
    def near(h: Hit) -> dict:
        return {"passage_id": h.passage_id, "page": h.page_start, "page_label": h.page_label, "text": h.text}

    return {"passage_id": hit.passage_id, "kind": hit.kind, "book_id": hit.book_id, "book_title": hit.book_title,
            "section_path": hit.section_path, "page_label": hit.page_label, "page": hit.page_start,
            "page_end": hit.page_end, "figure_number": hit.figure_number, **file_data(hit), "text": hit.text,
            "before": [near(h) for h in before], "after": [near(h) for h in after]}


# -- answers --------------------------------------------------------------------------------------

def source_data(source) -> dict:
    """One labelled source of an answer."""
    h = source.hit
    return {
        "label": source.label, "kind": h.kind, "book_id": h.book_id, "book_title": h.book_title,
        "section_path": h.section_path, "page_label": h.page_label, "page": h.page_start,
        "page_end": h.page_end, "figure_number": h.figure_number, "ocr": h.ocr or None,
        "passage_id": h.passage_id, "text_kind": h.text_kind or None, **file_data(h), "score": round(h.score, 6),
        "relevance": None if source.relevance is None else round(source.relevance, 4), "text": h.text,
        # the book passages the label names (a context block joins neighbours: answer/context.py)
        "passages": [{"passage_id": p.passage_id, "page": p.page_start, "page_label": p.page_label}
                     for p in (source.passages or [h])],
    }


def claims_data(claims, quoted: bool = False) -> list[dict]:
    """Each claim; in an extractive text (`quoted`) the support of every sentence is `quoted`: it is
    the book's own sentence, which says nothing about whether it answers the question."""
    out = [to_data(c) for c in claims]
    if quoted:
        for c in out:
            c["support"] = "quoted"
    return out


def supported_share(claims) -> float | None:
    """Supported sentences over the factual ones (None when none is factual)."""
    factual = [c for c in claims if c.support != "not_factual"]
    if not factual:
        return None
    return round(sum(1 for c in factual if c.support == "supported") / len(factual), 4)


def found_citations(answer) -> list[str]:
    """The labels of `answer.citations` the model did not write: ragcli found that passage backs a
    claim (a claim's `cited_as` says what the model cited instead, `attributed` that it cited nothing)."""
    written = {lab for c in answer.claims for lab in (c.cited_as or ([] if c.attributed else c.citations))}
    found = {lab for c in answer.claims if c.cited_as or c.attributed for lab in c.citations}
    return [lab for lab in answer.citations if lab in found and lab not in written]


# Statuses whose answer text ragcli withholds: the model's draft is not shown as an answer anywhere.
WITHHELD = ("no_answer",)


def shown_answer(answer) -> str:
    """The answer text as ragcli gives it: empty for a withheld draft; else with the label that backs
    each sentence where ragcli moved one (`relabelled`), the model's labels being kept in the claims'
    `cited_as`."""
    if answer.status in WITHHELD:
        return ""
    return getattr(answer, "relabelled", None) or answer.answer


def withheld_draft(status: str, text: str):
    """What the model wrote when ragcli withheld it (null otherwise): never under `answer`."""
    return (text or "") if status in WITHHELD else None


def answer_data(answer) -> dict:
    """`ask --json` (docs/json.md)."""
    return {
        "question": answer.question,
        "expanded_query": answer.expanded_query,
        "answer": shown_answer(answer),
        "withheld_draft": withheld_draft(answer.status, answer.answer),
        "status": answer.status,
        "notice": answer.notice,
        "attempts": answer.attempts,
        "reason": answer.reason,
        "unbacked": answer.unbacked,
        "judge": answer.judge,
        "citations": answer.citations,
        "found_citations": found_citations(answer),
        "removed_citations": [to_data(r) for r in answer.removed_citations],
        "warnings": to_data(answer.warnings),
        "claims": claims_data(answer.claims, quoted=answer.status == "extractive"),
        "sources": [source_data(s) for s in answer.sources],
        "model": answer.model,
        "timings": {k: (round(v, 4) if isinstance(v, float) else v) for k, v in answer.timings.items()},
        "verification": answer.verification,
        **({"prompt": answer.prompt} if answer.prompt else {}),
    }


# -- summaries ------------------------------------------------------------------------------------

def books_of(summary: Summary) -> list[str]:
    """Book ids the summary cites (of all its sources when it cites none), in order of first use."""
    relied_on = [s for s in summary.sources if s.cited] or summary.sources
    out: list[str] = []
    for s in relied_on:
        if s.book_id not in out:
            out.append(s.book_id)
    return out


def summary_warnings(summary: Summary) -> list[dict]:
    """The health warnings saved with a summary (in its params)."""
    return list((summary.params or {}).get("warnings") or [])


def model_name(summary: Summary):
    return (summary.model or {}).get("name") or (summary.model or {}).get("file")


def summary_source_data(source: SummarySource) -> dict:
    """One saved source of a summary (docs/json.md: "summary show --json")."""
    return {
        "label": source.label, "cited": bool(source.cited), "kind": source.kind,
        "book_id": source.book_id, "book_title": source.book_title,
        "section_path": source.section_path, "page_label": source.page_label,
        "page": source.page_start, "page_end": source.page_end,
        "figure_number": source.figure_number, "passage_id": source.passage_id,
        "text_hash": source.text_hash, "status": source.status,
        "reason": source.reason, "current_passage_id": source.current_passage_id,
        "text": source.text,
    }


def summary_data(summary: Summary) -> dict:
    """`summary new --json` and `summary show --json`."""
    return {
        "topic": summary.topic, "topic_key": summary.topic_key, "number": summary.number,
        "kind": summary.kind, "status": summary.status, "stale_sources": summary.stale_sources,
        "created_at": summary.created_at, "text": summary.text,
        "citations": [s.label for s in summary.sources if s.cited],
        "books": books_of(summary), "model": summary.model, "params": summary.params,
        "warnings": summary_warnings(summary), "supported_share": supported_share(summary.claims),
        "claims": claims_data(summary.claims, quoted=summary.kind == "extractive"),
        "removed_citations": [to_data(r) for r in summary.removed_citations],
        "sources": [summary_source_data(s) for s in summary.sources],
    }


def summary_row(summary: Summary) -> dict:
    """One summary in `summary list` (no text)."""
    return {
        "number": summary.number, "created_at": summary.created_at, "kind": summary.kind,
        "model": model_name(summary), "books": books_of(summary), "sources": len(summary.sources),
        "cited": sum(1 for s in summary.sources if s.cited), "status": summary.status,
        "stale_sources": summary.stale_sources,
        "warnings": [w["code"] for w in summary_warnings(summary)],
        "supported_share": supported_share(summary.claims),
    }


def summary_list_data(topic: str, topic_key: str, summaries: list[Summary]) -> dict:
    """`summary list --json`."""
    return {"topic": topic, "topic_key": topic_key, "count": len(summaries),
            "summaries": [summary_row(s) for s in summaries]}


def topics_data(rows: list[dict]) -> list[dict]:
    """`summary topics --json`."""
    return [{"topic": r["topic"], "topic_key": r["topic_key"], "count": r["count"],
             "latest_number": r["latest_number"], "latest_at": r["latest_at"]} for r in rows]


# -- eval -----------------------------------------------------------------------------------------

def eval_data(report, per_query: bool) -> dict:
    """`eval retrieval --json`: metrics per mode (and per question type), rounded to 4 places."""
    data = {"kind": report.kind, "queries": report.queries, "metrics": report.metrics, "modes": {}}
    for r in report.modes:
        entry = {"metrics": _rounded(r.metrics), "seconds": round(r.seconds, 2)}
        if r.by_type:
            entry["by_type"] = {t: _rounded(m) for t, m in r.by_type.items()}
        if per_query:
            entry["per_query"] = r.per_query
        data["modes"][r.mode] = entry
    return data


def _rounded(metrics: dict) -> dict:
    return {key: round(value, 4) for key, value in metrics.items()}


# -- conversations --------------------------------------------------------------------------------

def turn_data(turn, answer=None) -> dict:
    """`ask -c --json` (with the live `answer`: ask's shape plus the turn's fields) and each turn of
    `conversations show --json` (the saved turn alone). `question` is as asked; `standalone_question`
    is what retrieval, the prompt and the checks ran on."""
    head = {"conversation_id": turn.conversation_id, "turn": turn.number, "question": turn.question,
            "standalone_question": turn.standalone, "rewritten": turn.rewritten,
            "rewrite": dict(turn.rewrite)}
    if answer is not None:
        return {**head, **{k: v for k, v in answer_data(answer).items() if k != "question"}}
    return {**head, "answer": "" if turn.status in WITHHELD else turn.answer,
            "withheld_draft": withheld_draft(turn.status, turn.answer), "status": turn.status, "notice": turn.notice,
            "expanded_query": turn.expanded_query, "stale": turn.stale, "stale_sources": turn.stale_sources,
            "citations": [s.label for s in turn.sources if s.cited], "model": turn.model,
            "created_at": turn.created_at,
            "claims": claims_data(turn.claims, quoted=turn.status == "extractive"),
            "removed_citations": [to_data(r) for r in turn.removed_citations],
            "timings": turn.timings, "sources": [summary_source_data(s) for s in turn.sources]}


def conversation_row(conversation) -> dict:
    """One conversation in `conversations list --json`."""
    return {"id": conversation.id, "title": conversation.title, "turn_count": conversation.turn_count,
            "book_ids": conversation.book_ids, "created_at": conversation.created_at,
            "updated_at": conversation.updated_at}


def conversation_data(conversation) -> dict:
    """`conversations show --json` and `conversations export --format json`."""
    return {**conversation_row(conversation), "stale": any(t.stale for t in conversation.turns),
            "turns": [turn_data(t) for t in conversation.turns]}
