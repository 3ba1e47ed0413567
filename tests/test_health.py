"""An answer's health (answer/health.py): loops, prompt echoes, cut-off and weak answers."""
from __future__ import annotations

import pytest

from ragcli.answer import health
from ragcli.types import Claim, HealthWarning, Hit, Source


def _fed(detector_or_filter, text: str, step: int = 3) -> str:
    out = []
    for i in range(0, len(text), step):
        out.append(detector_or_filter.feed(text[i:i + step]))
    return "".join(o for o in out if isinstance(o, str))


def test_a_sentence_repeated_with_counting_numbers_is_a_loop_and_stops_early():
    text = "".join(f"({i}) The casualty must be moved to a cool shaded area [S1]. " for i in range(1, 30))
    loop = health.LoopDetector()
    stopped = next(i for i in range(0, len(text), 3) if loop.feed(text[i:i + 3]))
    assert loop.looping and stopped < len(text) // 5  # after about 3 copies, not 29


def test_a_short_stretch_repeated_many_times_is_a_loop():
    loop = health.LoopDetector()
    _fed(loop, "Check the eyes, " + "eyes, " * 30)
    assert loop.looping


def test_a_sentence_twice_then_cut_by_the_token_limit_in_its_third_copy_is_a_loop():
    # the real Qwen2.5-Coder 0.5B (bench/answers/answer_health.py, FM 4-25.11 lay-40), cut at 160 tokens
    text = ("[Passage S1] The steps to take: Check for responsiveness and call for help.\n"
            "[Passage S2] The steps to take: Place the casualty on his back, face up, turn him as a unit.\n"
            "[Passage S3] The steps to take: Place the casualty on his back, face up, turn him as a unit.\n"
            "[Passage S4] The steps to take: Place the casualty on his back, face up, turn")
    monitor = health.Monitor([], "")
    _fed(monitor, text, 4)
    assert not monitor.stop  # two copies while it streamed
    monitor.flush()
    assert monitor.stop
    codes = [w.code for w in monitor.warnings({"finish_reason": "length", "generated_tokens": 160}, 160)]
    assert codes == ["repetition", "truncated"]
    inside = health.Monitor([], "")  # the copies may sit inside longer sentences (lay-85)
    _fed(inside, "If he is lying face down, do not put anything under any part of his body. b. Do not put "
                 "anything under any part of his body. Figure 4-28. b. Do not put anything under", 4)
    inside.flush()
    assert inside.stop
    once = health.Monitor([], "")  # a sentence written once and cut is only cut off
    _fed(once, "Place the casualty on his back, face up, and call out for help.\nPlace the casualty on his back", 4)
    once.flush()
    assert not once.stop


def test_ordinary_answers_and_lists_are_not_loops():
    answers = [
        "Apply a tourniquet 2 inches above the wound [S1]. Tighten it until the bleeding stops [S2]. "
        "Note the time it was applied [S1]. Do not loosen it once applied [S3].",
        "## Signs\n- Hot, dry skin [S1]\n- Headache [S1]\n- Dizziness [S2]\n\n## First aid\n- Move the "
        "casualty to shade [S2]\n- Loosen the clothing [S2]\n- Pour water on the casualty [S3]\n",
        "Very, very, very hot skin is a sign of heatstroke [S1].",
        "1. Check for breathing [S1]. 2. Check for bleeding [S2]. 3. Check for shock [S3]. 4. Check for "
        "fractures [S4]. 5. Check for burns [S5].",
    ]
    for text in answers:
        loop = health.LoopDetector()
        _fed(loop, text, 1)
        assert not loop.looping, text


def test_drop_repeats_keeps_each_sentence_once():
    text = "Move him to shade [S1]. " + "".join(f"({i}) Cool the casualty with water at once [S2]. "
                                               for i in range(1, 6))
    assert health.drop_repeats(text) == "Move him to shade [S1]. (1) Cool the casualty with water at once [S2]."


def test_echoed_prompt_lines_are_removed_as_they_stream():
    hit = Hit(1, "passage", "fm", "FIRST AID", ["Chapter 2", "Tourniquet"], 40, 40, "2-25", "text")
    patterns = health.echo_patterns([Source("S1", hit)], "You are ragcli, an assistant that works ONLY from "
                                    "numbered passages of the user's books,")
    echo = health.EchoFilter(patterns)
    text = ("Apply a tourniquet above the wound [S1].\n[S1] FIRST AID — Chapter 2 › Tourniquet, p. 2-25\n"
            "You are ragcli, an assistant that works ONLY from numbered passages\nTighten it [S1]. "
            "Labels you may cite: [S1], [S2]")
    out = _fed(echo, text, 2) + echo.flush()
    assert out.strip() == "Apply a tourniquet above the wound [S1].\nTighten it [S1]."
    assert len(echo.removed) == 3


def test_a_header_or_the_question_copied_after_a_label_of_the_models_own_is_an_echo():
    # what the real Qwen2.5-Coder 0.5B wrote (bench/answers/answer_health.py on FM 4-25.11)
    hit = Hit(1, "passage", "fm", "FIRST AID", ["Chapter 2", "2-7. Mouth-to-Mouth Method"], 29, 29, "2-7", "text")
    question = "A deep gash on his leg is still pouring blood after I put a bandage on. Should I push on it?"
    echo = health.EchoFilter(health.echo_patterns([Source("S1", hit)], "", question))
    text = ("[2-7] Mouth-to-Mouth Method, p. 2-7\nIn this method you inflate the lungs [S1].\n"
            "[Passage S1] A deep gash on his leg is still pouring blood after I put a bandage on. Should I push on it?\n"
            "[S1] Pinch the nostrils together.\nMouth-to-mouth method: seal the mouth [S1].")
    out = _fed(echo, text, 2) + echo.flush()
    assert out == ("In this method you inflate the lungs [S1].\n[S1] Pinch the nostrils together.\n"
                   "Mouth-to-mouth method: seal the mouth [S1].")
    assert len(echo.removed) == 2
    echo = health.EchoFilter(health.echo_patterns([], "", "A soldier's arm was blown off but the stump isn't bleeding."))
    assert _fed(echo, "[2-18] The soldier's arm was blown off but the stump isn't bleeding.", 3) + echo.flush() == ""
    echo = health.EchoFilter(health.echo_patterns([], "", "His intestines are spilling out of a belly wound."))
    assert _fed(echo, "[Passage 3-7] The intestines are spilling out of a belly wound.", 3) + echo.flush() == ""


def test_a_short_question_or_topic_is_no_echo_pattern():
    patterns = health.echo_patterns([], "", "heat stroke")
    echo = health.EchoFilter(patterns)
    assert _fed(echo, "Heat stroke is an emergency [S1].", 1) + echo.flush() == "Heat stroke is an emergency [S1]."


def test_text_that_only_starts_like_the_prompt_is_kept():
    echo = health.EchoFilter(health.echo_patterns([], ""))
    text = "Questions about shock: keep him warm [S1].\nLabels on the kit show the date [S2]."
    assert _fed(echo, text, 1) + echo.flush() == text
    assert echo.removed == []


def test_generation_warnings():
    cut = health.generation_warnings({"finish_reason": "length", "generated_tokens": 64}, 64, False, [])
    assert [w.code for w in cut] == ["truncated"] and "64-token limit" in cut[0].message
    looped = health.generation_warnings({"finish_reason": None, "generated_tokens": 30}, 64, True, ["x"])
    assert {w.code for w in looped} == {"repetition", "echo"}  # stopped by ragcli: nothing of it was cut
    assert not health.unfinished(looped)
    fine = health.generation_warnings({"finish_reason": "stop", "generated_tokens": 64}, 64, False, [])
    assert fine == []
    unknown = health.generation_warnings({"generated_tokens": 64}, 64, False, [])  # backend gave no reason
    assert [w.code for w in unknown] == ["truncated"]


def test_weak_when_most_factual_sentences_lack_support():
    claims = [Claim("a b c", ["S1"], "supported"), Claim("d e f", [], "no_source"),
              Claim("g h i", ["S2"], "unsupported"), Claim("Thanks.", [], "not_factual")]
    assert [w.code for w in health.claim_warnings(claims)] == ["weak"]
    assert health.claim_warnings(claims[:1] + claims[3:]) == []
    assert [w.code for w in health.claim_warnings([], "unsupported")] == ["unsupported"]


def test_status_and_badness():
    cut = [HealthWarning("truncated", "cut")]
    assert health.status("answered", cut) == "incomplete"
    assert health.status("unsupported", cut) == "unsupported"
    assert health.status("answered", [HealthWarning("echo", "x")]) == "answered"
    assert health.is_bad(cut) and health.is_bad([{"code": "weak", "message": "w"}])
    assert not health.is_bad([HealthWarning("echo", "x")])


def test_one_sentence_of_a_longer_question_copied_is_an_echo():
    # the real Qwen2.5-Coder 0.5B copied the first of the question's two sentences, then answered
    question = ("He took a hard knock to the head and now one eye's black centre looks bigger than the other "
                "and he's mumbling. How serious is that?")
    echo = health.EchoFilter(health.echo_patterns([], "", question))
    text = ("He took a hard knock to the head and now one eye's black centre looks bigger than the other and "
            "he's mumbling [S3].\nGet medical help at once [S3].")
    assert _fed(echo, text, 3) + echo.flush() == "Get medical help at once [S3]."
    assert len(echo.removed) == 1
    echo = health.EchoFilter(health.echo_patterns([], "", "Is it bad? My head hurts."))  # short sentences: none
    assert _fed(echo, "My head hurts when I stand [S1].", 2) + echo.flush() == "My head hurts when I stand [S1]."


def test_an_answer_that_only_repeats_the_question_is_an_echo():
    from ragcli.answer import health

    question = "He keeled over in the heat; his skin is burning hot, beet red and bone dry."
    # a real 0.5B reply: the question split into two sentences
    assert health.repeats_question(
        "He keeled over in the heat [S1]. His skin is burning hot, beet red and bone dry [S1].", question)
    # restating the question, then answering it, is an answer
    assert not health.repeats_question(
        "He keeled over in the heat [S1]. Move him to a cool, shady area and loosen his clothing [S1].", question)
    assert not health.repeats_question("", question)


def test_numbers_and_figure_labels_are_not_language():
    garbage = "466059-58 466059°-58 2 4 -.- PACE SETTER Figure 4 [S1]."
    assert health.not_language(garbage)
    assert [w.code for w in health.text_warnings(garbage)] == ["not_text"]
    # an axis run inside a sentence: a warning, the answer still language
    spliced = ("Hyperventilation therefore 0 60 100 150 200 250 constricts the cerebral arterioles and "
               "lowers intracranial pressure within minutes, but the effect fades over hours [S2].")
    assert not health.not_language(spliced)
    assert [w.code for w in health.text_warnings(spliced)] == ["not_text"]


@pytest.mark.parametrize("text", [
    "5 to 7 minutes [S1].",  # short, mostly numbers, and an answer
    "Take 30-inch steps at 106 steps per minute [S1].",
    "A typical home dry-powder fire extinguisher sprays approximately 8-12 feet [S4]. It lasts for "
    "approximately 10-20 seconds [S4].",
    "Check body parts in the following order: 1. Head 2. Neck 3. Shoulders 4. Chest 5. Arms [S1].",
    "\uf0a7 Helmet \uf0a7 Goggles \uf0a7 N95 Mask \uf0a7 Gloves (work and non-latex exam) [S5]",
    "Mild traumatic brain injury < 24 hours ≤ 30 minutes < 24 hours [S1].",
])
def test_answers_with_numbers_are_language(text):
    assert not health.not_language(text) and not health.text_warnings(text)
