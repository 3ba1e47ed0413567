"""What a sentence of a book is: an instruction, a definition, signs, a figure caption, a
cross-reference or other text (the extractive answer picks and skips sentences by it)."""
from __future__ import annotations

import re


_STEP_MARKER = re.compile(r"^\s*(?:\((?:\d{1,2}|[a-z])\)|\d{1,2}[.)]|[a-z][.)]|[•·▪-])\s+")
_NUMBERED = re.compile(r"^\s*(?:\((\d{1,2}|[a-z])\)|(\d{1,2}|[a-h])[.)])\s+")
_LEAD_LABEL = re.compile(r"^(?:(?:CAUTION|WARNING|NOTE|DANGER)\s+)+")
_IMPERATIVE = frozenset("""administer allow apply ask assess assist attempt avoid bandage begin bend blow bring call
    carry check clean cleanse clear close continue cool cover cut deliver determine do don't drag dress drink dry
    ease elevate encourage ensure evacuate evaluate examine exert expose fan feel fill flush fold get give grasp
    have hold identify immobilize immerse improvise inject insert inspect keep kill kneel lay leave let lift
    listen loosen look lower maintain make mark massage monitor move never notify observe open pad perform pinch
    place position pour prepare press prevent protect pull put raise reassure recheck release remove repeat
    reposition rest rewarm rinse roll rub save scrape secure seek send slide soak splint squat squeeze stand
    start stay stop straighten support take tell thaw tie tilt transport treat try turn twist use warm wash
    watch wipe wrap bind cross decontaminate fasten lean lie locate loop return shake sit slip spray tape tear
    tighten tuck""".split())
_ADVERBS = frozenset("then next also now first finally gently quickly immediately carefully slowly firmly loosely "
                     "again".split())
_DEFINITION = re.compile(r"\b(?:is|are) (?:a|an|the|caused|defined|called|usually|generally)\b|\bmeans\b|"
                         r"\brefers? to\b|\bresults? from\b", re.I)
_SIGNS = re.compile(r"\b(?:signs?|symptoms?|characteri[sz]ed|indications?|may (?:feel|appear|look|have)|"
                    r"include|pain|swelling|skin)\b", re.I)
_CAPTION = re.compile(r"^\s*(?:figure|fig\.|table)\s+[A-Z]?-?\d[\w-]*\.?\s*$|\(illustrated\b", re.I)
_XREF = re.compile(r"^\W*(?:refer to|see) (?:paragraphs?|figures?|chapter|appendix|table)\b", re.I)


def is_instruction(sentence: str) -> bool:
    """"Place a band ...", "(1) If the bite is on a leg, place a band ...", "DO NOT ...", "He should ..."."""
    body = _LEAD_LABEL.sub("", _STEP_MARKER.sub("", sentence.strip()))
    words = re.findall(r"[A-Za-z']+", body)
    if not words:
        return False
    first = next((w for w in words[:3] if w.lower() not in _ADVERBS), words[0])  # "Then bring", "Gently lift"
    if first.lower() in _IMPERATIVE or re.match(r"(?:do not|don't|never)\b", body, re.I):
        return True
    if re.match(r"(?:if|when|unless|before|after|until|once|while|in case|should|to)\b", body, re.I):
        for then in re.findall(r"(?:[,;]\s*|\bthen\s+)(?:then\s+)?([A-Za-z']+)", body):  # "If ..., (then) apply"
            if then.lower() in _IMPERATIVE or then.lower() in ("do", "never"):
                return True
    return bool(re.search(r"\b(?:should|must)\b", body, re.I))


def sentence_kind(sentence: str) -> str:
    """"step" (an instruction), "definition", "signs" or "other"."""
    body = _LEAD_LABEL.sub("", _STEP_MARKER.sub("", sentence.strip()))
    if is_instruction(sentence):
        return "step"
    if _DEFINITION.search(body):
        return "definition"
    if _SIGNS.search(body):
        return "signs"
    return "other"


def is_caption(previous: str, sentence: str) -> bool:
    """A figure's title after its number ("Figure 6-8." then "Constricting band.")."""
    return bool(_CAPTION.search(previous)) and len(sentence.split()) <= 12 and not _STEP_MARKER.match(sentence)


def is_junk(sentence: str) -> bool:
    """A figure caption, a flattened table or flowchart (mostly capitals), or a cross-reference."""
    letters = [c for c in sentence if c.isalpha()]
    upper = sum(c.isupper() for c in letters) / max(1, len(letters))
    if upper > 0.6 and len(sentence.split()) >= 6:
        return True
    return bool(_CAPTION.search(sentence) or _XREF.search(sentence))
