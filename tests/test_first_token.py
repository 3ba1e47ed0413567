"""Issue 49: the answer prompt carries what the model needs (label, section once, passage text; no page,
no book title, no running header), the context is capped, and every step before the model is timed."""
from __future__ import annotations

import shutil

import pytest

from ragcli import ask
from ragcli.answer import context, prompt
from ragcli.models.fake import FakeChatModel
from ragcli.types import Hit



def _hit(i: int, section: str, text: str, book: str = "b") -> Hit:
    return Hit(passage_id=100 + i, kind="passage", book_id=book, book_title="Community Emergency Response Team",
               section_path=["UNIT 4: Disaster Medical Operations - Part 2", section], page_start=i + 1,
               page_end=i + 1, page_label=f"4-{i + 1}", text=text, text_hash=f"h{i}")


def _user(hits: list[Hit], question: str = "How do I warm a frostbitten hand?") -> str:
    laid = prompt.build(question, prompt.label_sources(hits), lambda t: len(t.split()), 10_000)
    return laid.messages[-1]["content"]


def test_the_answer_prompt_has_labels_and_text_but_no_page_or_book_title(monkeypatch):
    monkeypatch.setattr(prompt, "SHORT_HEADERS", True)
    hits = [_hit(0, "FROSTBITE", "Warm the frostbitten part slowly in water of 100 to 105 degrees."),
            _hit(1, "HYPOTHERMIA", "Hypothermia sets in when the body temperature drops below normal.")]
    user = _user(hits)
    assert "[S1] FROSTBITE\nWarm the frostbitten part" in user and "[S2] HYPOTHERMIA\n" in user
    assert "p. 4-" not in user and "4-1" not in user and "Community Emergency" not in user
    assert user.index("[S2]") < user.index("[S1]")  # best last, by the question


def test_every_passage_has_its_section_title_unless_told_to_give_it_once(monkeypatch):
    monkeypatch.setattr(prompt, "SHORT_HEADERS", True)
    hits = [_hit(0, "FROSTBITE", "Do not rub the frostbitten area."),
            _hit(1, "FROSTBITE", "Frostbite is the freezing of the skin."),
            _hit(2, "HYPOTHERMIA", "Remove wet clothing.")]
    user = _user(hits)
    assert "[S3] HYPOTHERMIA\n" in user and "[S2] FROSTBITE\n" in user and "[S1] FROSTBITE\nDo not rub" in user
    monkeypatch.setattr(prompt, "SECTION_ONCE", True)
    user = _user(hits)
    # read in the order S3, S2, S1: S2 brings the title, S1 under the same title has its label alone
    assert "[S3] HYPOTHERMIA\n" in user and "[S2] FROSTBITE\n" in user and "[S1]\nDo not rub" in user
    assert user.count("FROSTBITE") == 1


def test_a_running_header_caught_in_a_passage_is_left_out_of_the_prompt_not_the_passage(monkeypatch):
    monkeypatch.setattr(prompt, "SHORT_HEADERS", True)
    text = ("UNIT 4: DISASTER MEDICAL OPERATIONS — PART 2 FROSTBITE (CONTINUED) Warm the area slowly. "
            "Frostbite signs include numbness. Unit 4: Disaster medical operations - part 2 covers cold.")
    hit = _hit(0, "FROSTBITE", text)
    hit.section_path = ["UNIT 4: Disaster Medical Operations - Part 2", "Treating Cold-Related Injuries", "FROSTBITE"]
    user = _user([hit])
    assert "DISASTER MEDICAL OPERATIONS" not in user and "CONTINUED" not in user
    assert "[S1] FROSTBITE\nFROSTBITE Warm the area slowly." in user  # a one-word title stays: it may be text
    assert "Warm the area slowly. Frostbite signs include numbness." in user
    assert "Unit 4: Disaster medical operations - part 2 covers cold." in user  # prose keeps its words
    assert hit.text == text  # the passage itself (what claims are checked against) is unchanged


def test_a_context_cap_keeps_the_best_passages_first():
    words = [" ".join(f"w{i}x{j}" for j in range(150)) for i in range(6)]  # about 203 estimated tokens each
    hits = [_hit(i, f"S{i}", t) for i, t in enumerate(words)]
    assert len(context.build(hits)[0]) == 6  # no cap by default: the 6 best
    blocks, rest = context.build(hits, budget=600)
    assert sum(context.estimate_tokens(b.hit.text) for b in blocks) <= 600
    assert [b.hit.passage_id for b in blocks] == [100, 101]  # the third would pass the cap
    assert [s.label for s in blocks + rest] == [f"S{i}" for i in range(1, 7)]  # the rest listed, in rank order
    one = context.build([_hit(0, "S", " ".join(["long"] * 900))], budget=600)[0]
    assert len(one) == 1  # the best passage is given even when it alone passes the cap


def test_no_neighbour_is_looked_up_when_none_can_be_joined():
    calls = []

    def neighbours(hit):
        calls.append(hit.passage_id)
        return None, None

    context.build([_hit(0, "A", "one two three"), _hit(1, "A", "four five six")], neighbours)
    assert calls == []
    context.build([_hit(0, "A", "one two three")], neighbours, max_neighbours=1, block_tokens=300)
    assert calls == [100]


@pytest.fixture(scope="module")
def ask_db(sample_db):
    """The sample book ingested once for the run (conftest's sample_db); the test copies it."""
    return sample_db


def test_every_step_before_the_model_is_timed_and_the_prompt_is_laid_out_once(ask_db, tmp_path):
    from ragcli.models import embed
    from ragcli.render.data import answer_data
    from ragcli.store import db

    copy = tmp_path / "c.db"
    shutil.copy(ask_db, copy)
    conn = db.connect(copy)
    model = FakeChatModel(lambda messages: "A craniotomy removes a bone flap [S1].")
    counted = []
    count = model.count_tokens
    model.count_tokens = lambda text: counted.append(1) or count(text)
    phases = []
    answer = ask.ask(conn, embed.get_embedder(), "what is a craniotomy?", model, ask.AskOptions(),
                     on_phase=lambda name, **info: phases.append((name, len(model.calls))))
    t = answer.timings
    for key in ("book_words", "expansion", "retrieval", "context", "checks", "prompt_build", "before_model",
                "first_token", "to_first_token", "generation"):
        assert isinstance(t[key], float) and t[key] >= 0, key
    assert t["before_model"] >= (t["book_words"] + t["retrieval"] + t["context"] + t["checks"]
                                 + t["prompt_build"])
    assert t["to_first_token"] >= t["before_model"] + t["first_token"] - 1e-6
    assert ("checks", 0) in phases and ("prompt", 0) in phases  # said before the model is called
    laid_out = len(counted)
    ask.ask(conn, embed.get_embedder(), "what is a craniotomy?", model, ask.AskOptions(judge=True))
    assert len(counted) > 2 * laid_out  # --judge lays the prompt out for the judge too: without it, once
    data = answer_data(answer)
    assert data["timings"]["before_model"] == round(t["before_model"], 4)
    conn.close()


def test_by_default_each_passage_keeps_its_section_and_page_as_before():
    hits = [_hit(0, "FROSTBITE", "Warm the frostbitten part slowly in water of 100 to 105 degrees.")]
    user = _user(hits)
    assert "[S1] FROSTBITE, p. " in user


def _frostbite_blocks():
    """A passage that answers whole and one whose useful middle sits among other duties, ending with the
    first passage's sentence again."""
    best = _hit(0, "FROSTBITE", "Warm the frostbitten part slowly in water of 100 to 105 degrees. Do not rub it.")
    other = _hit(1, "COLD INJURIES", (
        "Teams should carry radios on every search. The radio check is made each hour. "
        "Never rub a frostbitten hand with snow, it damages the skin. Cover the hand with dry cloth. "
        "Vehicles are parked facing out. Fuel is kept in a separate shed. Keys stay with the team leader. "
        "Warm the frostbitten part slowly in water of 100 to 105 degrees."))
    return other, prompt.label_sources([best, other])


def test_the_prompt_gives_the_sentences_nearest_the_question_and_claims_read_the_whole_passage():
    from ragcli.models import embed

    other, blocks = _frostbite_blocks()
    chosen = context.select(blocks, "How do I warm a frostbitten hand?", embed.get_embedder(),
                            whole=1, top=1, around=1)
    assert chosen[0].shown is None  # the best block whole
    shown = chosen[1].shown
    assert "Never rub a frostbitten hand with snow" in shown and "Keys stay with the team leader" not in shown
    assert shown.count(context.GAP) >= 1
    assert "100 to 105" not in shown  # the better block already gives that sentence
    assert chosen[1].hit.text == other.text  # the stored passage, which claims are checked against, is whole
    user = prompt.build("How do I warm a frostbitten hand?", chosen, lambda t: len(t.split()),
                        10_000).messages[-1]["content"]
    assert shown in user and "Fuel is kept" not in user and "Do not rub it." in user


def test_nothing_is_left_out_of_a_passage_whose_every_sentence_is_kept():
    from ragcli.models import embed

    blocks = prompt.label_sources([_hit(0, "A", "One sentence here."),
                                   _hit(1, "B", "Warm the hand slowly. Then cover it.")])
    chosen = context.select(blocks, "How do I warm a hand?", embed.get_embedder(), whole=0, top=2, around=1)
    assert [s.shown for s in chosen] == [None, None]


def test_with_the_tail_a_cut_passage_keeps_everything_after_its_first_kept_sentence():
    from ragcli.models import embed

    _, blocks = _frostbite_blocks()
    chosen = context.select(blocks, "How do I warm a frostbitten hand?", embed.get_embedder(),
                            whole=1, top=1, around=0, tail=True)
    shown = chosen[1].shown
    assert shown.startswith(context.GAP) and "Teams should carry radios" not in shown  # the lead is cut
    assert "Never rub a frostbitten hand" in shown and "Keys stay with the team leader." in shown  # the rest is not
    assert "100 to 105" not in shown  # still not given twice
    without = context.select(blocks, "How do I warm a frostbitten hand?", embed.get_embedder(),
                             whole=1, top=1, around=0, tail=False)[1].shown
    assert "Keys stay with the team leader." not in without
