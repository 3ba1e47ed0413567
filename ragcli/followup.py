"""Conversations: a follow-up question turned into a standalone one from the conversation so far.

Only a question that refers back (a pronoun with nothing in the question it could stand for, an
ellipsis such as "and for a child?", a question opening with "and ..." or "what about ...", one with no
subject of its own such as "what else?") is rewritten; a question that stands alone comes back
unchanged, so asking it inside a conversation retrieves exactly what it retrieves outside one.

With a chat model the rewrite is one short call (the conversation's last turns, the follow-up, one
line back), kept only if it is a question in words that keeps the follow-up's own subject words and
brings in something from the conversation; otherwise, and without a model, a deterministic rewrite
carries the subject of the previous standalone question into the follow-up ("and what do I do about
it?" after "what are the signs of heat stroke?" -> "what do I do about heat stroke?").

Earlier answers are context for the rewrite only: they never become a source of citations (the turn
is answered from the passages retrieved for its standalone question).
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Optional, Sequence

from ragcli.models.chat import OneLine
from ragcli.system_prompt import ANSWER_PREFIX
from ragcli.text import QUERY_STOPWORDS, light_stem


@dataclass
class Standalone:
    question: str  # what retrieval, the prompt and every check run on
    rewritten: bool  # False: `question` is the follow-up as asked
    reason: str  # why it was (or was not) rewritten, e.g. "refers back: 'it'"
    # how the rewrite was made: "model", "carried" (the deterministic rewrite) or "" (not rewritten)
    method: str = ""
    seconds: float = 0.0  # time spent in the model call (0 without one)
    # why the question refers back ("'it'") when there is no earlier turn to take it from: it is answered
    # as asked, and the user is told so (`dangling_words`) rather than left with a silent no_context
    dangling: str = ""


# Pronouns that stand for something named before, unless the question names it first ("how do I treat
# a burn if it blisters?": `_antecedent`).
BACK_PRONOUNS = frozenset("it its itself they them their theirs themselves this that these those he him his "
                          "himself she her hers herself".split())
PERSON_PRONOUNS = frozenset("he him his himself she her hers herself".split())
PLURAL_PRONOUNS = frozenset("they them their theirs themselves".split())
# Pronouns for a thing: replaced by the subject in the deterministic rewrite; for the others ("he") the
# subject is added to the question.
THING_PRONOUNS = frozenset("it itself this that these those them they".split())
POSSESSIVE_PRONOUNS = frozenset("its their".split())
# Words that name a person: an antecedent of "he"/"she" ("my friend fell; is he ...").
PERSON_NOUNS = frozenset("""someone somebody anyone person people casualty casualties victim victims soldier
soldiers friend friends buddy child children kid kids baby man men woman women patient patients survivor
survivors neighbour neighbor boy girl husband wife son daughter mother father worker rescuer rescuers
family member guy""".split())
DETERMINERS = frozenset("a an the my your our some any each every another one".split())
# "that" before a clause ("the sign that a casualty is in shock") and "it" before "to" ("is it safe to
# move him?") stand for nothing earlier.
_CLAUSE_AFTER_THAT = frozenset("a an the you i we he she they someone somebody his her their my your".split())
# Openings that continue the previous question: "and what ...?", "what about children?", "also ...".
CONTINUATION = re.compile(
    r"^\s*(?:and|or|but|also|so|then|plus|same|what about|how about|what if|why not|and if"
    r"|what else|anything else|else|instead|otherwise|in that case|if so|if not|for (?:a|an|the)\b"
    r"|with(?:out)? (?:a|an|the)\b|in (?:a|an|the)\b|after that|before that|afterwards|next)\b",
    re.IGNORECASE)
# Words of a question that are about what is asked, not what it is about: a question made only of
# these ("what are the signs?", "how long should I keep trying?", "why?") has no subject of its own.
GENERIC = frozenset("""
what which when where why how who whom whose is are was were be been do does did done doing can could should
would will shall may might must have has had get gets happen happens happened happening mean means meaning
sign signs symptom symptoms treat treats treated treating treatment treatments cause causes caused causing
prevent prevention step steps first next then else also too more other another same instead long often
much many way ways best right wrong kind kinds type types part parts look looks watch watching like use used using
need needed needs know tell explain describe give giving list again still enough different difference
important main okay ok good bad worse better thing things something anything stuff case cases
situation well now go going take taking make making come comes check done keep help handle deal put
try trying tried tries move moving moved on off leave leaving stop stopping wait waiting continue
start starts started time times minutes long
don doesn didn isn aren wasn weren can't won shouldn wouldn couldn haven hasn
""".split()) | QUERY_STOPWORDS
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'-]*|\d+(?:\.\d+)?")
# What a question asks about its subject. A rewrite that names one the follow-up does not has put the
# earlier question's aspect in place of the follow-up's own.
ASPECTS = frozenset(light_stem(w) for w in """sign signs symptom symptoms cause causes prevent prevention
treat treatment""".split())
# Earlier turns the model sees, and how much of each answer (the rewrite must stay one short call).
HISTORY_TURNS = 3
ANSWER_CHARS = 300
# A subject this short takes the pronoun's place ("cut snakebite"); a longer one, whose words may be
# verbs and nouns mixed ("shut gas meter"), is added in brackets instead, which reads as a note.
SUBSTITUTE_WORDS = 2
# The longest stretch of an earlier question carried in brackets as written (else its subject words).
SPAN_WORDS = 8


def _words(text: str) -> list[str]:
    """Lower-cased words, contractions and possessives cut at the apostrophe ("he's" -> "he",
    "don't" -> "don", "burn's" -> "burn")."""
    return [w.lower().split("'")[0] for w in _WORD.findall(text) if w.lower().split("'")[0]]


def standalone(question: str, history: Sequence[tuple[str, str]], model=None) -> Standalone:
    """`question` as a question that stands alone, from `history` (earlier (question, answer) pairs,
    oldest first; pass each turn's standalone question where it is known). Never raises."""
    question = " ".join(str(question).split())
    if not history:
        why = refers_back(question)
        if why and _casualty_pronoun(question):
            why = ""  # "his intestines are spilling out": the person in front of the asker, not an earlier turn
        if why:
            return Standalone(question, False, f"refers back: {why}, but no earlier turn", dangling=why)
        return Standalone(question, False, "first question of the conversation")
    why = refers_back(question)
    if not why:
        return Standalone(question, False, "stands alone")
    earlier = _standalone_history(history)
    if model is not None and not subject(question):
        # "and what else?", "why?": nothing of its own for a rewrite to keep (`keep` wants the earlier
        # subject brought in, which is all carrying does), so no model call is spent on it
        carried = carry(question, earlier)
        if carried != question:
            return Standalone(carried, True, f"refers back: {why} (no subject of its own: the earlier one "
                              f"carried, no model call)", "carried")
    if model is not None:
        start = time.perf_counter()
        text = _model_rewrite(model, question, history, earlier)
        seconds = time.perf_counter() - start
        if text:
            return Standalone(text, True, f"refers back: {why}", "model", seconds)
        carried = carry(question, earlier)
        if carried != question:
            return Standalone(carried, True, f"refers back: {why} (the model's rewrite was not kept)",
                              "carried", seconds)
        return Standalone(question, False, f"refers back: {why}, but nothing earlier to carry", "", seconds,
                          dangling=why)
    carried = carry(question, earlier)
    if carried == question:
        return Standalone(question, False, f"refers back: {why}, but nothing earlier to carry", dangling=why)
    return Standalone(carried, True, f"refers back: {why}", "carried")


def dangling_words(made: Standalone, continued: bool) -> str:
    """The one line for a question that refers back to nothing ("" when it does not); `continued`: it
    was asked as a follow-up (ask -c, chat), else as a plain ask."""
    if not made.dangling:
        return ""
    if continued:
        return (f"the question refers back ({made.dangling}) but no earlier turn says to what: "
                f"it is answered as asked")
    return (f"the question refers back ({made.dangling}) but starts a new conversation: it is answered as "
            f"asked; `ragcli ask -c` continues the last question")


def refers_back(question: str) -> str:
    """Why `question` needs the conversation to make sense ("'it'", "opens with 'and'", "no subject
    of its own"), or "" when it stands alone."""
    words = _words(question)
    if not words:
        return ""
    opening = CONTINUATION.match(question)
    if opening:
        return f"opens with '{' '.join(opening.group(0).split()).lower()}'"
    i = _back_pronoun(words)
    if i is not None:
        return f"'{words[i]}'"
    if not any(_is_subject(w) for w in words):
        return "no subject of its own"
    return ""


def _casualty_pronoun(question: str) -> bool:
    """Does the question's first dangling word stand for a person ("his", "she") in a question that has
    a subject of its own? A first question's "he" is the person the asker is looking at ("His
    intestines are spilling out of a belly wound"); only "it", "that", "they" or an opening such as
    "and ..." asks for an earlier turn."""
    words = _words(question)
    i = _back_pronoun(words)
    return (i is not None and words[i] in PERSON_PRONOUNS and not CONTINUATION.match(question)
            and any(_is_subject(w) for w in words if w not in BACK_PRONOUNS))


def _back_pronoun(words: Sequence[str]) -> Optional[int]:
    """The index of the first pronoun that stands for nothing named before it in the question."""
    for i, w in enumerate(words):
        if w in BACK_PRONOUNS and not _dummy(w, words[i + 1:]) and not _antecedent(words[:i], w):
            return i
    return None


def _antecedent(before: Sequence[str], pronoun: str) -> bool:
    """Does the question name, before `pronoun`, what it may stand for? A person ("a casualty", "my
    friend") for he/she; a thing with a determiner ("a burn") for it; either, or a plural noun, for
    they."""
    person = pronoun in PERSON_PRONOUNS
    plural = pronoun in PLURAL_PRONOUNS
    for j, w in enumerate(before):
        if w in PERSON_NOUNS:
            if person or plural:
                return True
            continue
        if person:
            continue
        if j and before[j - 1] in DETERMINERS and _is_subject(w):
            return True
        if plural and w.endswith("s") and len(w) > 3 and _is_subject(w):
            return True
    return False


def _dummy(word: str, after: Sequence[str]) -> bool:
    """Is this "it" or "that" one that stands for nothing earlier (see _CLAUSE_AFTER_THAT)?"""
    if word == "it":
        return "to" in after[:3] and any(_is_subject(w) for w in after)
    if word == "that":
        return bool(after) and after[0] in _CLAUSE_AFTER_THAT
    return False


def _is_subject(word: str) -> bool:
    return (len(word) > 2 and word not in GENERIC and light_stem(word) not in GENERIC and not word.isdigit()
            and word not in BACK_PRONOUNS)


def subject(question: str) -> list[str]:
    """The subject words of a question, in order: its words that are neither question words nor
    generic ones ("what are the signs of heat stroke?" -> ["heat", "stroke"])."""
    out: list[str] = []
    for w in _words(question):
        if _is_subject(w) and w not in out:
            out.append(w)
    return out


def carry(question: str, earlier: Sequence[str]) -> str:
    """The deterministic rewrite: the follow-up with the subject of the latest earlier standalone
    question that has one put in place of its pronoun for a thing ("what do I do about it?" -> "what
    do I do about heat stroke?"; up to SUBSTITUTE_WORDS words), or added after it in brackets, as that
    question words it ("can I give him water?" -> "can I give him water (open abdominal wound with
    organs showing)?"). The opening "and"/"also"/... is dropped. `question` back unchanged
    when no earlier question has a subject."""
    terms: list[str] = []
    source = ""
    for source in reversed(earlier):
        terms = subject(source)
        if terms:
            break
    own = {light_stem(w) for w in subject(question)}
    terms = [t for t in terms if light_stem(t) not in own]
    if not terms:
        return question
    phrase = " ".join(terms)
    body = re.sub(r"^\s*(?:and|or|but|also|so|then|plus)\b[\s,]*", "", question, flags=re.IGNORECASE).strip()
    body = body[:1].upper() + body[1:] if body else body
    tokens = list(_WORD.finditer(body))
    at = _back_pronoun([t.group(0).lower().split("'")[0] for t in tokens])
    if at is not None and len(terms) <= SUBSTITUTE_WORDS:
        token = tokens[at]
        word = token.group(0).lower()
        if word in THING_PRONOUNS:
            return (body[:token.start()] + phrase + body[token.end():]).strip()
        if word in POSSESSIVE_PRONOUNS:
            return (body[:token.start()] + "the " + phrase + "'s" + body[token.end():]).strip()
    stem_q = body.rstrip(" ?.!")
    end = body[len(stem_q):].strip() or "?"
    return f"{stem_q} ({_subject_span(source) or phrase}){end}"


def _subject_span(question: str) -> str:
    """The stretch of `question` from its first subject word to its last, as written ("open abdominal
    wound with organs showing", not the bare words "open abdominal wound organs showing"), or "" when
    it is longer than SPAN_WORDS words or holds brackets (an earlier carried rewrite)."""
    tokens = [t for t in _WORD.finditer(question) if _is_subject(t.group(0).lower().split("'")[0])]
    if not tokens:
        return ""
    span = re.sub(r"['’]s$", "", question[tokens[0].start():tokens[-1].end()])
    if "(" in span or ")" in span or len(span.split()) > SPAN_WORDS:
        return ""
    return span


def _standalone_history(history: Sequence[tuple[str, str]]) -> list[str]:
    """The earlier questions, each made standalone (deterministically) from the ones before it: the
    history may hold follow-ups as asked (an OpenAI client sends its messages as typed)."""
    out: list[str] = []
    for q, _answer in history:
        q = " ".join(str(q).split())
        if out and refers_back(q):
            q = carry(q, out)
        out.append(q)
    return out


# Worked examples from other fields, shown as earlier turns (as search/rewrite.py does): a small model
# otherwise answers the question, echoes it, or puts a bare "the person" where the pronoun stood. One
# each for a pronoun for a thing, a pronoun for a person in a situation, and an ellipsis ("what about X?").
_EXAMPLES = (
    ([("my bike squeaks every time I stop, what should I do?",
       "Clean the rims with rubbing alcohol. Then check the brake pads and replace them if worn.")],
     "and how often should I do that?",
     "How often should I clean the bike rims and check the brake pads?"),
    ([("what should I do if my dog ate chocolate?",
       "Call a vet at once and tell them how much he ate and what kind of chocolate it was.")],
     "should I make him throw up?",
     "Should I make a dog that ate chocolate throw up?"),
    ([("how long should I boil a hen's egg for a soft yolk?", "About six minutes in boiling water.")],
     "what about a duck egg?",
     "How long should I boil a duck egg for a soft yolk?"),
)


# The subject words of the worked examples: a rewrite that brings one in the conversation never used
# copied it from an example.
EXAMPLE_WORDS = frozenset(light_stem(w) for turns, q, out in _EXAMPLES
                          for w in subject(" ".join([q, out, *(t for turn in turns for t in turn)])))


def _task(follow_up: str, turns: Sequence[tuple[str, str]]) -> str:
    lines = ["TASK: rewrite the last question so that it can be understood without the conversation: "
             "replace every word that refers back (it, they, he, she, this, that, ...) by what it refers to, "
             "naming the situation of the conversation (not just \"the person\"), complete a question that "
             "leaves out its subject, and keep the last question's own words. One line, a question, nothing "
             "else: do not answer it.", "Conversation:"]
    for q, a in turns:
        a = " ".join(str(a).split())
        a = a if len(a) <= ANSWER_CHARS else a[:ANSWER_CHARS].rsplit(" ", 1)[0] + " ..."
        lines += [f"User: {q}", f"Assistant: {_LABEL.sub('', a)}"]
    lines += [f"Last question: {follow_up}", "Standalone question:"]
    return "\n".join(lines)


_LABEL = re.compile(r"\s*\[[SF]\d+\]")


def rewrite_messages(follow_up: str, history: Sequence[tuple[str, str]]) -> list[dict]:
    """The rewrite call: ask's prefix (the turn's answer then re-uses its KV cache), the worked
    example, then the task over the last HISTORY_TURNS turns."""
    messages = [dict(m) for m in ANSWER_PREFIX]
    for example_turns, example_q, example_out in _EXAMPLES:
        messages += [{"role": "user", "content": _task(example_q, example_turns)},
                     {"role": "assistant", "content": example_out}]
    return messages + [{"role": "user", "content": _task(follow_up, list(history)[-HISTORY_TURNS:])}]


def _model_rewrite(model, question: str, history: Sequence[tuple[str, str]], earlier: Sequence[str]) -> str:
    """The model's standalone question, or "" when it failed or is not kept (see `keep`)."""
    turns = [(q, a) for (q, a), _ in zip(history, earlier)]
    try:
        text = model.chat(rewrite_messages(question, turns), max_tokens=64, constraint=OneLine(200),
                          temperature=0.0)
    except Exception:  # a failed rewrite falls back to the deterministic one; it never fails the turn
        return ""
    return keep(str(text), question, earlier, " ".join(a for _q, a in turns))


def keep(text: str, question: str, earlier: Sequence[str], context: str = "") -> str:
    """The model's rewrite cleaned, or "" when it is not a standalone form of `question`: it must be
    one short question in words (a statement is the model answering instead of rewriting), not copy
    the task or an earlier question, not ask for an aspect (signs, causes, treatment) a follow-up
    that says what it asks does not ask for ("what do I do about it?" after a question on heat
    stroke's signs is not "what are the signs of heat stroke?"; "what about a coral snake?" after one
    on a pit viper's signs asks for the signs), keep the follow-up's own subject words (a rewrite that drops
    "unconscious" from "what if he is unconscious?" asks something else), bring in a subject word of
    the conversation's questions, and itself no longer refer back."""
    text = " ".join(text.replace("\n", " ").split()).strip(" \"'`")
    text = re.sub(r"^(standalone question|rewritten question|question)\s*:\s*", "", text, flags=re.I)
    text = _LABEL.sub("", text).strip()
    words = [w.lower() for w in _WORD.findall(text)]
    if len(words) < 3 or len(text) > 200 or text.lower() == question.lower() or not text.endswith("?"):
        return ""
    if "task" in words and "rewrite" in words:
        return ""
    if text.count("?") > 1 or any(text.lower() == q.lower() for q in earlier):
        return ""
    asked = {light_stem(w) for w in _words(question)}
    if _own_frame(question) and any(light_stem(w) in ASPECTS and light_stem(w) not in asked for w in words):
        return ""
    stems = {f for w in words for f in _forms(w)}
    if any(not (_forms(w) & stems) for w in subject(question)):
        return ""
    before = {f for q in earlier for w in subject(q) for f in _forms(w)}
    if before and not (before & stems):
        return ""
    said = {f for w in _words(" ".join([question, *earlier, context])) for f in _forms(w)}
    if any(light_stem(w) in EXAMPLE_WORDS and not (_forms(w) & said) for w in words):
        return ""  # a word of a worked example the conversation never used ("a dog with heat stroke")
    if not before and refers_back(text):
        return ""
    return text


# The words a question that says what it asks begins with, once an opening such as "and" is set aside.
QUESTION_OPENINGS = frozenset("""what how why when where which who whom whose can could should would will is are
was were do does did may might must shall""".split())


def _own_frame(question: str) -> bool:
    """Does the follow-up say what it asks ("and what do I do about it?") rather than leave it to the
    earlier question ("what about a coral snake?", "and for a child?", "what if he is unconscious?")?"""
    opening = CONTINUATION.match(question)
    rest = _words(question[opening.end():] if opening else question)
    return bool(rest) and rest[0] in QUESTION_OPENINGS


def _forms(word: str) -> set[str]:
    """A word's stems for comparing a rewrite with the question: its light stem, and that of the word
    without a plural "s" the light stemmer keeps ("eyes")."""
    word = word.lower()
    out = {light_stem(word)}
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        out.add(light_stem(word[:-1]))
    return out
