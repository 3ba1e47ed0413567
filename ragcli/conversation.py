"""Conversations: a question of a conversation answered and saved as a turn. The follow-up is first made
standalone from the conversation so far (ragcli/followup.py: the rules for when and how a follow-up is
rewritten); the turn is answered from the passages retrieved for that standalone question, and earlier
answers are never a source of citations.
"""
from __future__ import annotations

from typing import Optional, Sequence

from ragcli.errors import NotFoundError, UsageError
from ragcli.followup import refers_back, standalone, subject
from ragcli.store import conversations as conversation_store, corpus as store, summaries as source_store
from ragcli.types import Turn

# ask and summary (the search pipeline, numpy) are imported where a turn is answered or a source is
# re-read: listing, showing and deleting conversations need neither.


# -- turns: a question of a conversation answered and saved ----------------------------------------

def parse_id(text) -> int:
    """A conversation id as typed (`--conversation 7`); UsageError for anything but a whole number >= 1."""
    value = str(text).strip().lstrip("#")
    if not value.isdigit() or int(value) < 1:
        raise UsageError(f"'{text}' is no conversation id: ids are numbers, as `ragcli conversations list` shows them")
    return int(value)


def get(conn, conversation_id: int):
    """A saved conversation with its turns, each checked for staleness; NotFoundError when there is none."""
    found = conversation_store.conversation(conn, conversation_id)
    if found is None:
        raise NotFoundError(f"no conversation {conversation_id}: `ragcli conversations list` shows them")
    for t in found.turns:
        check_sources(conn, t)
    return found


def latest(conn):
    """The conversation continued last (`ask --continue`), or None when there is none yet."""
    cid = conversation_store.latest_id(conn)
    return None if cid is None else get(conn, cid)


def history_of(conversation) -> list[tuple[str, str]]:
    """(standalone question, answer) of each saved turn, oldest first: what `standalone` takes."""
    return [] if conversation is None else [(t.standalone, t.answer) for t in conversation.turns]


def ask_turn(conn, embedder, question: str, model=None, opts=None, conversation=None, *,
             on_standalone=None, on_text=None, on_expanded=None, on_phase=None, on_progress=None,
             reranker=None, history: Optional[Sequence[tuple[str, str]]] = None, save: bool = True):
    """One turn: the follow-up made standalone from `conversation` (None: a new one), answered by
    `ask.ask` on the standalone question, then saved as the conversation's next turn (`save`).
    Returns (Turn, Answer). `on_standalone(Standalone)` runs before retrieval. `history`: the
    (question, answer) pairs to rewrite from when there is no saved conversation (the bench).
    Nothing is written before the answer is complete: an error or Ctrl-C leaves the file as it was."""
    from ragcli import ask as asking

    opts = opts or asking.AskOptions()
    if conversation is not None and not opts.book_ids and conversation.book_ids:
        opts.book_ids = list(conversation.book_ids)  # a conversation keeps the scope it began with
    phase = on_phase or (lambda *a, **k: None)
    earlier = history_of(conversation) if history is None else list(history)
    if earlier and refers_back(" ".join(question.split())) and model is not None and subject(question):
        phase("standalone")
    made = standalone(question, earlier, model)
    if on_standalone:
        on_standalone(made)
    answer = asking.ask(conn, embedder, made.question, model, opts, on_text=on_text, on_expanded=on_expanded,
                        on_phase=on_phase, on_progress=on_progress, reranker=reranker)
    if made.seconds:  # the rewrite's one call, reported beside the answer's times
        answer.timings["standalone"] = made.seconds
    timings = dict(answer.timings)
    turn = Turn(conversation_id=0 if conversation is None else conversation.id, number=0, question=question,
                standalone=made.question, rewritten=made.rewritten,
                rewrite={"reason": made.reason, "method": made.method, "seconds": round(made.seconds, 4)},
                answer=answer.relabelled or answer.answer, status=answer.status, sources=saved_sources(answer),
                model=answer.model,
                notice=answer.notice, expanded_query=answer.expanded_query, claims=list(answer.claims),
                removed_citations=list(answer.removed_citations),
                timings={k: (round(v, 4) if isinstance(v, float) else v) for k, v in timings.items()},
                created_at=store.now())
    if save:
        save_turn(conn, turn, opts.book_ids)
    return turn, answer


def save_turn(conn, turn, book_ids=None) -> None:
    """Save an answered turn as the next of its conversation (conversation_id 0: a new one, titled by
    its question). NotFoundError when that conversation was deleted meanwhile."""
    cid, _number = conversation_store.insert_turn(conn, turn, title=turn.question, book_ids=book_ids or [])
    if not cid:
        raise NotFoundError(f"conversation {turn.conversation_id} was deleted while this turn was answered: "
                            f"the turn is not saved")


def saved_sources(answer) -> list:
    """What a turn keeps of each source of its answer (as a summary keeps its own)."""
    from ragcli.summary import saved_source

    return [saved_source(s, s.label in answer.citations) for s in answer.sources]


def check_sources(conn, turn):
    """Mark each source of a saved turn ok / moved / gone (store/summaries.mark_sources), and the turn
    stale when a source its answer cites is gone (any source, when it cites none)."""
    turn.stale_sources = source_store.mark_sources(conn, turn.sources)
    turn.stale = bool(turn.stale_sources)
    return turn


def conversations(conn) -> list:
    return conversation_store.conversations(conn)


def delete_all(conn) -> int:
    """Delete every conversation; returns how many there were."""
    return conversation_store.delete_all(conn)


def delete(conn, conversation_id: int) -> None:
    """Delete a conversation and its turns; NotFoundError when there is none."""
    if not conversation_store.delete_conversation(conn, conversation_id):
        raise NotFoundError(f"no conversation {conversation_id}: `ragcli conversations list` shows them")
