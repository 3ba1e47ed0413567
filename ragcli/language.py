"""Is the question in the language of the books? (The default embedding model is English-only.)

A question is flagged only when two signals agree: most of its words occur nowhere in the corpus,
and it shows another language (function words of a common language, or a non-Latin script).
Library detectors were measured and rejected for this job (docs/decisions.md): too slow to load for a
CLI and wrong on two-word queries ("tourniquet" -> French).
"""
from __future__ import annotations

from typing import Callable, Optional

from ragcli.text import letter_runs

FUNCTION_WORDS = {
    "es": "el la los las de del que qué por para con una uno como cómo cuál cuando después es son está se mi".split(),
    "fr": "le la les des du que quoi pour avec une un est sont dans sur comment quand après faire en cas".split(),
    "de": "der die das und ist sind nicht mit für von wie was wann nach ein eine einer bei".split(),
    "it": "il lo gli della che per con una sono come quando dopo cosa non".split(),
    "pt": "o os da das do dos que para com uma como quando depois não é são".split(),
    "nl": "de het een van en is zijn niet met voor hoe wat wanneer na".split(),
}
ENGLISH = set("the a an of to in is are what how when why which do does after before with for and or".split())


def other_language(question: str, known_word: Callable[[str], bool]) -> Optional[str]:
    """The language the question seems to be in when it is not the books'; None when it looks fine."""
    words = [w.lower() for w in letter_runs(question)]
    if not words:
        return None
    if sum(1 for ch in question if ch.isalpha() and ord(ch) > 0x24F) > len(question) * 0.3:
        return "a non-Latin script"
    unknown = [w for w in words if len(w) > 2 and not known_word(w)]
    if len(unknown) < max(2, 0.5 * len(words)):
        return None
    english = sum(w in ENGLISH for w in words)
    scores = {lang: sum(w in set(fw) for w in words) for lang, fw in FUNCTION_WORDS.items()}
    lang, best = max(scores.items(), key=lambda kv: kv[1])
    return lang if best >= 2 and best > english else None


NAMES = {"es": "Spanish", "fr": "French", "de": "German", "it": "Italian", "pt": "Portuguese", "nl": "Dutch"}
