"""The OpenAI chat-completions protocol around an answer: request messages -> (question, history),
an Answer -> a `chat.completion` (or its stream of `chat.completion.chunk`s).

The reply's text is the validated answer, its `[S1]` labels kept, then a plain "Sources" block (for
clients that show only text). The response carries `ragcli`: the answer as `ragcli ask --json` prints
it (render/data.answer_data: status, notice, citations, claims, sources with book, section, page
and passage id; `question` is the standalone question answered), with `follow_up` (the message as
sent and whether and why conversation.standalone rewrote it).
"""
from __future__ import annotations

import json
import time
import uuid
from typing import Optional

from ragcli.errors import UsageError
from ragcli.render.data import answer_data

MODEL_ID = "ragcli"
SOURCES_HEADING = "Sources:"


def split_messages(messages) -> tuple[str, list[tuple[str, str]]]:
    """The last user message is the question; the user/assistant turns before it, as (question,
    answer) pairs, are the conversation it may follow up (system messages are not questions and are
    ignored). UsageError for a request without a user message."""
    if not isinstance(messages, list) or not messages:
        raise UsageError("`messages` must be a non-empty list of {role, content} objects")
    turns: list[tuple[str, str]] = []
    for m in messages:
        if not isinstance(m, dict) or "role" not in m:
            raise UsageError("each message must be an object with `role` and `content`")
        role = m["role"]
        if role in ("user", "assistant"):
            turns.append((role, _text(m.get("content"))))
    if not turns or turns[-1][0] != "user":
        raise UsageError("the last message must be the user's question")
    question = turns[-1][1]
    history: list[tuple[str, str]] = []
    asked: Optional[str] = None
    for role, text in turns[:-1]:
        if role == "user":
            if asked is not None:
                history.append((asked, ""))
            asked = text
        elif asked is not None:
            history.append((asked, without_sources(text)))
            asked = None
    if asked is not None:
        history.append((asked, ""))
    return question, history


def _text(content) -> str:
    """A message's text: a string, or the text parts of a list of content parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text") or "" for p in content if isinstance(p, dict) and p.get("type") == "text")
    raise UsageError("a message's `content` must be a string or a list of text parts")


def without_sources(text: str) -> str:
    """An earlier reply of ours without its Sources block (the conversation needs the answer only)."""
    cut = text.rfind("\n\n" + SOURCES_HEADING + "\n")
    return text[:cut] if cut >= 0 else text


def sources_block(answer) -> str:
    """The cited sources, one line each (`[S1] Title, section, p. 12 (passage 345)`); when nothing
    is cited (no answer), the nearest passages."""
    cited = [s for s in answer.sources if s.label in answer.citations]
    shown = cited or answer.sources[:5]
    if not shown:
        return ""
    heading = SOURCES_HEADING if cited else "Nearest passages:"
    lines = []
    for s in shown:
        h = s.hit
        where = " › ".join(h.section_path)
        figure = f"Figure {h.figure_number}, " if h.kind == "figure" else ""
        lines.append(f"[{s.label}] {h.book_title}{', ' + where if where else ''}, {figure}p. {h.page_label} "
                     f"(passage {h.passage_id})")
    return f"\n\n{heading}\n" + "\n".join(lines)


def reply_text(answer) -> str:
    """The whole reply: the answer (or, when there is none, why), then the sources."""
    body = answer.answer.strip() if answer.status not in ("no_answer",) else ""
    if not body:
        body = answer.notice or "no answer"
    elif answer.notice:
        body = f"{body}\n\n({answer.notice})"
    return body + sources_block(answer)


def ragcli_field(answer, asked: dict) -> dict:
    """`ragcli ask --json` of the answer, and `follow_up`: the last user message as sent, whether it
    was rewritten into the standalone question that was answered (`question`), how and why."""
    return {**answer_data(answer), "follow_up": {"asked": asked.get("asked"), "rewritten": asked["rewritten"],
                                                 "reason": asked["reason"], "method": asked["method"]}}


def usage(answer) -> dict:
    prompt = int(answer.timings.get("prompt_tokens") or 0)
    completion = int(answer.timings.get("generated_tokens") or 0)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def new_id() -> str:
    return "chatcmpl-" + uuid.uuid4().hex[:24]


def completion(answer, asked: dict) -> dict:
    """A non-streamed `chat.completion`."""
    return {
        "id": new_id(), "object": "chat.completion", "created": int(time.time()), "model": MODEL_ID,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": reply_text(answer)},
                     "finish_reason": "stop"}],
        "usage": usage(answer), "ragcli": ragcli_field(answer, asked),
    }


def chunk(cid: str, created: int, delta: dict, finish: Optional[str] = None, **extra) -> str:
    """One server-sent event of a streamed completion."""
    data = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": MODEL_ID,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
    return sse(data)


def sse(data) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


DONE = "data: [DONE]\n\n"


def closing_text(answer, streamed: str) -> str:
    """What the last chunk adds to the `streamed` text so the reply ends as `reply_text` says: the
    sources when the streamed text is the answer; else (a draft ragcli did not keep) a
    line saying so and the final reply."""
    final = answer.answer.strip() if answer.status != "no_answer" else ""
    if streamed.strip() == final and final:
        tail = f"\n\n({answer.notice})" if answer.notice else ""
        return tail + sources_block(answer)
    if not streamed.strip():
        return reply_text(answer)
    return "\n\n[ragcli did not keep the text above; its answer follows]\n\n" + reply_text(answer)
