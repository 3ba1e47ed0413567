"""What a question asks for: steps, a yes or no, signs, a definition, or other (the extractive
answer, the answer prompt and ask's second tries read it)."""
from __future__ import annotations

import re


# ------------------------------------------------------------------------------ question and sentence kinds
_SIGNS_Q = re.compile(r"\b(signs?|symptoms?|how (?:can|do|would|will) (?:i|you|we) (?:tell|know|recogni[sz]e)|"
                      r"what(?:'s| is) (?:going on|wrong|happening)|how serious|is (?:it|that) (?:serious|dangerous|normal)|"
                      r"look like)\b", re.I)
_STEPS_Q = re.compile(r"\b(what (?:should|do|can|must|shall) (?:i|we|you)(?: \w+)? do|what now|what helps|"
                      r"technique|method|maneuver|manoeuvre|self-aid|carry|measures|"
                      r"how (?:do|can|should|would|shall) (?:i|we|you)|how to|how (?:is|are) .{3,60} "
                      r"(?:applied|performed|done|used|treated|given)|should i|do i|can i|first aid|"
                      r"treat(?:ment|ed)?|appl(?:y|ying|ication)|procedure|steps?)\b", re.I)
_DEFINITION_Q = re.compile(r"^\s*(?:what(?:'s| is| are| does)|define|meaning of)\b", re.I)


def question_kind(question: str) -> str:
    """"steps" (what to do, how to), "yes_no" (should I ...?: an instruction answers it, not a whole
    procedure), "signs", "definition" (what is) or "other"."""
    last = [p for p in re.split(r"(?<=[.?!])\s+", question.strip()) if p.strip()][-1:] or [""]
    yes_no = re.match(r"\W*(?:should|do|does|can|could|is|are|will|must|would|shall)\b", last[0], re.I)
    if _SIGNS_Q.search(question) and not yes_no:
        return "signs"
    if _STEPS_Q.search(question):
        return "yes_no" if yes_no else "steps"
    if _DEFINITION_Q.search(question):
        return "definition"
    return "other"
