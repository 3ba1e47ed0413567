"""The follow-up rewrite (ragcli/followup.py): which questions refer back, the deterministic rewrite,
the model's rewrite and the filter that keeps it."""
from __future__ import annotations

import pytest

from ragcli.followup import Standalone, carry, keep, refers_back, rewrite_messages, standalone, subject
from ragcli.models.fake import FakeChatModel
from ragcli.system_prompt import ANSWER_PREFIX

HEAT = [("what are the signs of heat stroke?", "Hot, dry skin and confusion [S1].")]


@pytest.mark.parametrize("question", [
    "What is CPR?", "How do you treat a burn if it blisters?", "Is it safe to move a casualty with a spine injury?",
    "What is the sign that a casualty is in shock?", "Is there a time limit for a tourniquet?",
    "How many rescue breaths do I give an adult?", "What does START triage stand for?",
    "How do I help a friend who is panicking after something terrible happened to him?",
    "How do I help survivors when they panic?"])
def test_a_question_that_stands_alone_comes_back_unchanged_without_a_model_call(question):
    model = FakeChatModel([])  # any call would fail the test
    got = standalone(question, HEAT, model)
    assert got == Standalone(question, False, "stands alone")
    assert model.calls == []


@pytest.mark.parametrize("question,why", [
    ("and what do I do about it?", "opens with 'and'"), ("what if he is unconscious?", "opens with 'what if'"),
    ("What about children?", "opens with 'what about'"), ("how long does it last?", "'it'"),
    ("What are its causes?", "'its'"), ("Why?", "no subject of its own"), ("what else should I do?", "opens with 'what else'"),
    ("Is that normal?", "'that'"), ("Should I cover both of them?", "'them'"), ("Why don't they do CPR?", "'they'"),
    ("How long should I keep trying before I leave?", "no subject of its own"), ("Can I put ice on it?", "'it'"),
    ("how do I mark the casualty once it is on?", "'it'"), ("Why not use tweezers?", "opens with 'why not'"),
    ("What should I watch out for?", "no subject of its own")])
def test_what_refers_back(question, why):
    assert refers_back(question) == why


def test_the_first_question_is_never_rewritten():
    assert standalone("how long does it last?", []) == Standalone(
        "how long does it last?", False, "refers back: 'it', but no earlier turn", dangling="'it'")
    assert standalone("how long does a burn take to heal?", []) == Standalone(
        "how long does a burn take to heal?", False, "first question of the conversation")
    # a first question's "his" is the casualty in front of the asker, not an earlier turn
    spill = "His intestines are spilling out of a belly wound. Do I stuff them back in?"
    assert standalone(spill, []) == Standalone(spill, False, "first question of the conversation")
    assert standalone("what does he need?", []).dangling == "'he'"  # nothing of its own: still dangling
    assert standalone("and is his arm broken?", []).dangling == "opens with 'and'"


def test_without_a_model_the_previous_subject_is_carried():
    assert carry("and what do I do about it?", ["what are the signs of heat stroke?"]) == "What do I do about heat stroke?"
    assert carry("What are its causes?", ["signs of heat stroke"]) == "What are the heat stroke's causes?"
    assert carry("Should I cut it open?", ["what do I do for a snakebite?"]) == "Should I cut snakebite open?"
    assert carry("Can I turn it back on?", ["how do I shut off the gas at the meter?"]) == \
        "Can I turn it back on (shut off the gas at the meter)?"
    assert carry("Can I give him water?", ["What do I do for an open abdominal wound with organs showing?"]) == \
        "Can I give him water (open abdominal wound with organs showing)?"
    assert carry("what if he is unconscious?", ["What do I do about heat stroke?"]) == \
        "What if he is unconscious (heat stroke)?"
    got = standalone("how long does it last?", HEAT)
    assert (got.question, got.rewritten, got.reason, got.method) == (
        "How long does heat stroke last?", True, "refers back: 'it'", "carried")


def test_follow_ups_as_typed_in_the_history_are_made_standalone_first():
    """An OpenAI client sends earlier messages as typed: the subject is found through them."""
    history = HEAT + [("and what do I do about it?", "Cool the casualty [S2].")]
    assert standalone("what if he is unconscious?", history).question == "What if he is unconscious (heat stroke)?"


def test_the_model_rewrite_is_kept_when_it_keeps_the_follow_up_and_names_the_subject():
    model = FakeChatModel(["What should I do if a casualty with heat stroke is unconscious?"])
    got = standalone("what if he is unconscious?", HEAT, model)
    assert (got.question, got.rewritten, got.method) == (
        "What should I do if a casualty with heat stroke is unconscious?", True, "model")
    messages = model.calls[0]["messages"]
    assert messages[:3] == [dict(m) for m in ANSWER_PREFIX]  # the answer re-uses the rewrite's KV cache
    assert "User: what are the signs of heat stroke?" in messages[-1]["content"]
    assert "[S1]" not in messages[-1]["content"]  # earlier answers are context, never labels
    assert model.calls[0]["max_tokens"] <= 64


@pytest.mark.parametrize("reply", [
    "Move him to a cool place and give water.",  # drops "unconscious": an answer, not the question
    "What if he is unconscious?",  # unchanged
    "What if the soldier is unconscious?",  # brings in nothing of the conversation
    "TASK: rewrite the last question so that it can be understood",  # echo
])
def test_a_model_rewrite_that_is_not_the_question_falls_back_to_the_carried_one(reply):
    got = standalone("what if he is unconscious?", HEAT, FakeChatModel([reply]))
    assert got.question == "What if he is unconscious (heat stroke)?"
    assert got.method == "carried" and "not kept" in got.reason


def test_a_failing_model_never_fails_the_turn():
    def boom(_messages):
        raise RuntimeError("server went away")

    got = standalone("how long does it last?", HEAT, FakeChatModel(boom))
    assert got.question == "How long does heat stroke last?" and got.rewritten


def test_the_rewrite_runs_on_the_real_tiny_model(tiny_gguf):
    """The real llama.cpp backend takes the call (random weights: whatever it says is filtered)."""
    from ragcli.models.factory import load_model

    model = load_model(tiny_gguf, n_ctx=2048)
    got = standalone("how long does it last?", HEAT, model)
    assert got.rewritten and (got.method == "model" or got.question == "How long does heat stroke last?")
    assert got.seconds > 0


def test_a_follow_up_with_no_subject_of_its_own_is_carried_without_a_model_call():
    """"and what else?" has nothing a rewrite could keep but the earlier subject, which carrying brings in."""
    model = FakeChatModel("What else are the signs of heat stroke?")
    got = standalone("and what else?", HEAT, model)
    assert (got.question, got.method, got.seconds) == ("What else (heat stroke)?", "carried", 0.0)
    assert model.calls == []


def test_subject_and_keep():
    assert subject("what are the signs of heat stroke?") == ["heat", "stroke"]
    assert keep("Standalone question: How long does heat stroke last? [S1]", "how long does it last?",
                ["signs of heat stroke"]) == "How long does heat stroke last?"
    # the model answering instead of rewriting, or repeating an earlier question, is not a rewrite
    assert keep("If the door is hot, there is fire behind it.", "what if it's hot?",
                ["how do I check whether there's a fire behind a closed door?"]) == ""
    assert keep("What are the signs of heat stroke?", "how long does it last?", ["What are the signs of heat stroke?"]) == ""
    # a rewrite that asks the earlier question's aspect (signs) instead of the follow-up's, or asks two questions
    assert keep("What signs of heatstroke should I look for?", "and what do I do about it?",
                ["What are the signs of heatstroke?"]) == ""
    assert keep("What are the signs of heat exhaustion? And what is the first aid?", "and the first aid?",
                ["What is heat exhaustion?", "What are the signs of heat exhaustion?"]) == ""
    # an ellipsis leaves the aspect to the earlier question: "what about X?" asks what it asked
    assert keep("What are the signs of a coral snake bite?", "What about a coral snake bite?",
                ["What are the signs of a pit viper bite?"]) == "What are the signs of a coral snake bite?"
    assert keep("How do I treat a burn on the hand?", "and how do I treat it on the hand?",
                ["what are the signs of a burn?"]) == "How do I treat a burn on the hand?"
    # a word of a worked example the conversation never used is the example copied ("a dog")
    assert keep("How much water should I give a dog with heat stroke?", "how much water should I give him?",
                ["what are the signs of heat stroke?"], "Hot, dry skin; headache.") == ""
    # a plural the light stemmer keeps ("eyes") still matches the earlier question's "eye"
    assert keep("Should I cover both injured eyes?", "should I cover both of them?",
                ["how do I treat an eye with something stuck in it?"]) == "Should I cover both injured eyes?"
    assert rewrite_messages("why?", HEAT)[-1]["content"].endswith("Last question: why?\nStandalone question:")
