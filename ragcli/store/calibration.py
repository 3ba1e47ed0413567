"""Calibration as data: the thresholds that read cosines, per embedding model, with how each was measured.

A cosine means different things under different embedding models, so every rule that compares one to a
fixed figure is calibrated for one model. The bundled model's figures ship here; a corpus may hold its
own (meta key `calibration:<model>`, JSON, written by `ragcli calibrate` or `store`). With an embedding
model that has no calibration those rules are off, and `ask` and `reembed` say so (`ask --judge` then has the
chat model judge relevance instead).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Optional

from ragcli.store.corpus import embedding_model, get_meta, set_meta


@dataclass(frozen=True)
class Calibration:
    model: str
    no_context: float  # best passage cosine below this: nothing retrieved is about the question
    subject: float  # question-without-a-word cosine below this: the word carries the question
    # best passage cosine at or above this once earned a refusal a second try; no rule reads it since the
    # second try was dropped (decision D76), but stored calibrations carry it
    second_chance: float
    off_question: float  # answer-to-question cosine below this: the answer is about something else
    # the best cosine of the passages an answer cites, to the question, below this: the answer rests on
    # passages about something else (None: the rule is off, as for a calibration stored before it existed)
    cited_floor: Optional[float] = None
    measured: dict = field(default_factory=dict, compare=False)  # threshold -> how it was measured


CITED_FLOOR = 0.42  # all-MiniLM-L6-v2's (docs/decisions.md D103)
BUNDLED = Calibration(
    model="all-MiniLM-L6-v2", no_context=0.30, subject=0.80, second_chance=0.45, off_question=0.30,
    cited_floor=CITED_FLOOR,
    measured={
        "no_context": "bench/answers/no_context_floor.py: the cosine of the best passage for answerable vs off-topic "
                      "questions over FM 4-25.11 and NFCorpus; 0.30 separates them",
        "subject": "bench/answers/missing_subject.py: the question's cosine without one word, over FM questions",
        "second_chance": "best-passage cosine of FM questions the 1.5B refused although their passages answer",
        "off_question": "the no-context floor, applied to the answer's text",
        "cited_floor": "bench/answers/cited_floor.py: the cited passages' cosine to the question of the 1.5B's answers "
                       "read as correct and as wrong or harmful, FM 4-25.11 and ATP 6-22.5 (tuning)",
    })
SHIPPED = {BUNDLED.model: BUNDLED}
KEY = "calibration:"


def _short(name: str) -> str:
    return name.rstrip("/").split("/")[-1]


def for_model(conn, name: Optional[str]) -> Optional[Calibration]:
    """The corpus's own calibration for `name` (stored under the full or the short name), else the
    shipped one, else None."""
    if not name:
        return None
    raw = None
    for key in dict.fromkeys((name, _short(name))) if conn is not None else ():
        raw = raw or get_meta(conn, KEY + key)
    if raw:
        data = json.loads(raw)
        return Calibration(**data)
    return SHIPPED.get(_short(name))


def for_corpus(conn) -> Optional[Calibration]:
    recorded = embedding_model(conn)
    return for_model(conn, recorded[0] if recorded else None)


def store(conn, calibration: Calibration) -> None:
    set_meta(conn, KEY + calibration.model, json.dumps(asdict(calibration)))


UNCALIBRATED_NOTICE = ("no calibration for the embedding model {model}: the cosine rules (no-context floor, "
                       "missing subject, off-question, second chance) are off; `ask --judge` has the chat model judge relevance instead")
