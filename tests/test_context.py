"""answer/context.py: ranked hits -> fewer, contiguous blocks (neighbours joined, overlap removed,
near-duplicates merged, budget kept), and labels that name the passages and pages they hold. The
pure rules on invented books; the wiring on the real sample corpus (ask, citations, --json)."""
from __future__ import annotations

import shutil

import pytest

from ragcli.answer import citations, context, prompt
from ragcli.types import Hit


def _book(sections: list[tuple[str, list[str]]], book: str = "b") -> list[Hit]:
    """Passages in reading order: (section, [texts]); page = ordinal + 1."""
    out, n = [], 0
    for section, texts in sections:
        for text in texts:
            out.append(Hit(passage_id=100 + n, kind="passage", book_id=book, book_title="Book",
                           section_path=["Ch 1", section], page_start=n + 1, page_end=n + 1,
                           page_label=f"1-{n + 1}", text=text, text_hash=f"h{n}"))
            n += 1
    return out


def _neighbours(book: list[Hit]):
    at = {h.passage_id: i for i, h in enumerate(book)}

    def around(hit):
        i = at[hit.passage_id]
        return (book[i - 1] if i > 0 else None), (book[i + 1] if i + 1 < len(book) else None)
    return around


BURNS = ["Burns are injuries to skin.", "Cool the burn with running water for ten minutes.",
         "Cover it loosely with a clean dressing."]
SPLINTS = ["A splint keeps a broken bone still.", "Pad the splint and tie it above and below the break."]


# small-to-big (D86), as a caller or a bench variant asks for it; ask's default joins nothing (D102)
JOINING = dict(block_tokens=260, max_neighbours=1)


def test_by_default_each_ranked_passage_is_its_own_block_and_near_duplicates_still_merge():
    book = _book([("Burns", BURNS), ("Splints", SPLINTS)])
    hits = [book[1], book[3], book[0], book[2], book[4]]
    blocks, rest = context.build(hits, _neighbours(book))
    assert [b.hit.passage_id for b in blocks] == [101, 103, 100, 102, 104] and rest == []
    assert all(len(context.passages_of(b)) == 1 for b in blocks)  # no neighbour joined, no adjacent hit
    assert [b.label for b in blocks] == ["S1", "S2", "S3", "S4", "S5"]
    many = _book([(f"S{i}", [f"Passage number {i} says a different thing about item {i}."]) for i in range(9)])
    blocks, rest = context.build(many, _neighbours(many))
    assert len(blocks) == context.MAX_BLOCKS == 6 and len(rest) == 3


def test_a_hit_is_joined_with_its_neighbours_of_the_same_section_only():
    book = _book([("Burns", BURNS), ("Splints", SPLINTS)])
    blocks, rest = context.build([book[1]], _neighbours(book), **JOINING)
    assert len(blocks) == 1 and rest == []
    b = blocks[0]
    # the whole Burns section, in reading order; the Splints passage next to it is another section
    assert [p.passage_id for p in b.passages] == [100, 101, 102]
    assert b.hit.text.split("\n") == BURNS
    assert (b.hit.page_start, b.hit.page_end, b.hit.page_label) == (1, 3, "1-1")
    assert b.hit.passage_id == 101 and b.hit.text_hash == "h1"  # the ranked passage's id: show/open follow it
    blocks, _ = context.build([book[2]], _neighbours(book), **JOINING)
    assert [p.passage_id for p in blocks[0].passages] == [101, 102]  # not the Splints passage after it
    blocks, _ = context.build([book[2]], _neighbours(book), block_tokens=260, max_neighbours=2)
    assert [p.passage_id for p in blocks[0].passages] == [100, 101, 102]


def test_the_words_a_passage_repeats_from_the_one_before_are_removed_where_they_join():
    book = _book([("CPR", ["Kneel beside the person. Place both hands on the centre of the chest",
                           "on the centre of the chest and push hard and fast, 100 times a minute."])])
    blocks, _ = context.build([book[0]], _neighbours(book), **JOINING)
    text = blocks[0].hit.text
    assert text.lower().count("centre of the chest") == 1
    assert text.endswith("push hard and fast, 100 times a minute.")
    # fewer than MIN_OVERLAP_WORDS repeated is not an overlap
    assert context.drop_overlap("cool the burn", "burn cream is not used") == "burn cream is not used"


def test_a_hit_inside_or_next_to_a_block_joins_it_instead_of_taking_a_label():
    book = _book([("Burns", BURNS)])
    blocks, rest = context.build([book[1], book[0], book[2]], _neighbours(book), max_neighbours=0,
                                 block_tokens=500)
    assert len(blocks) == 1 and rest == []
    assert [p.passage_id for p in blocks[0].passages] == [100, 101, 102]
    assert blocks[0].label == "S1" and blocks[0].hit.passage_id == 101  # the best hit names the block


def test_near_duplicates_are_merged_into_the_better_block():
    a = _book([("Burns", ["Cool the burn under cool running water for ten to twenty minutes, then cover it."])])
    b = _book([("Burn care", ["Cool the burn under cool running water for ten to twenty minutes, then cover it well."])],
              book="other")
    b[0].passage_id = 900
    splint = _book([("Splints", SPLINTS[:1])], book="third")
    splint[0].passage_id = 901
    blocks, rest = context.build([a[0], b[0], splint[0]], None)
    assert [s.label for s in blocks] == ["S1", "S2"]
    assert [p.passage_id for p in blocks[0].passages] == [100, 900]  # the label names both passages
    assert blocks[1].hit.passage_id == 901 and rest == []


def test_the_token_budget_and_the_block_count_are_kept():
    long = [" ".join(f"word{i}x{j}" for j in range(60)) for i in range(8)]
    book = _book([(f"S{i}", [t]) for i, t in enumerate(long)])
    hits = list(reversed(book))
    blocks, rest = context.build(hits, _neighbours(book), budget=250, max_blocks=4, **JOINING)
    used = sum(context.estimate_tokens(b.hit.text) for b in blocks)
    assert used <= 250 and len(blocks) == 3  # 82 tokens each
    assert [s.label for s in blocks + rest] == [f"S{i}" for i in range(1, 9)]  # rank order, blocks first
    assert {p.passage_id for b in blocks for p in context.passages_of(b)}.isdisjoint(
        {s.hit.passage_id for s in rest})
    blocks, rest = context.build(hits, _neighbours(book), budget=10_000, max_blocks=2, **JOINING)
    assert len(blocks) == 2 and len(rest) == 6
    # a block whose neighbours would break the budget comes in as its hit alone
    book = _book([("Burns", [" ".join(["cool"] * 50), " ".join(["water"] * 50), " ".join(["dress"] * 50)])])
    other = _book([("Eyes", ["Rinse the eye with clean water."])], book="eyes")
    other[0].passage_id = 700
    blocks, _ = context.build([other[0], book[1]], _neighbours(book + other), budget=90, **JOINING)
    assert [p.passage_id for p in blocks[1].passages] == [101]


def test_a_figure_stays_a_block_of_its_own_with_its_own_label():
    book = _book([("Burns", BURNS)])
    fig = Hit(passage_id=500, kind="figure", book_id="b", book_title="Book", section_path=["Ch 1", "Burns"],
              page_start=2, page_end=2, page_label="1-2", text="Figure 1-2. Cooling a burn.", figure_number="1-2")
    blocks, _ = context.build([fig, book[1]], _neighbours(book))
    assert [s.label for s in blocks] == ["F1", "S1"]
    assert blocks[0].passages == [fig] and blocks[0].hit.text == fig.text


def test_a_block_label_is_named_by_every_page_it_holds_and_evidence_names_the_right_page():
    book = _book([("Burns", BURNS)])
    blocks, _ = context.build([book[1]], _neighbours(book), **JOINING)
    pages, *_ = prompt.reference_maps(blocks)
    assert pages == {"1-1": ["S1"], "1-2": ["S1"], "1-3": ["S1"]}
    checked = citations.validate("Cover it loosely (p. 1-3).", {"S1"}, *prompt.reference_maps(blocks))
    assert checked.text == "Cover it loosely [S1]." and checked.citations == ["S1"]
    checked = citations.validate("Cover it [S2].", {"S1"}, *prompt.reference_maps(blocks))
    assert checked.citations == [] and [r.reason for r in checked.removed] == ["unknown label"]
    assert context.page_of(blocks[0], "Cover it loosely with a clean dressing.") == ("1-3", 3)
    assert context.page_of(blocks[0], "Something else.") == ("1-1", 1)


# -- wired into ask, on the real sample corpus -------------------------------------------------------

@pytest.fixture
def conn(corpus_db):
    from ragcli.store import db

    c = db.connect(corpus_db)
    yield c
    c.close()


def test_ask_gives_the_model_blocks_and_json_sources_name_their_passages(conn, embedder, monkeypatch):
    from ragcli import ask
    from ragcli.models.fake import FakeChatModel
    from ragcli.render.data import answer_data
    from ragcli.store import files

    # the sample book's passages are whole 120-word windows: two of them joined need more room than
    # the default block (sized on CERT's shorter passages)
    monkeypatch.setattr(context, "BLOCK_TOKENS", 400)
    monkeypatch.setattr(context, "MAX_NEIGHBOURS", 1)  # small-to-big, as a caller may set it
    model = FakeChatModel("Mannitol lowers the pressure [S1]. It is given as a bolus [S9].")
    answer = ask.ask(conn, embedder, "mannitol for raised intracranial pressure", model,
                     ask.AskOptions(expand=False))
    user = model.calls[-1]["messages"][-1]["content"]
    in_prompt = [s for s in answer.sources if f"[{s.label}]" in user]
    assert 1 <= len(in_prompt) <= context.MAX_BLOCKS
    assert "[S9]" not in answer.answer and answer.status in ("answered", "no_answer", "incomplete")
    data = answer_data(answer)
    joined = 0
    for s, row in zip(answer.sources, data["sources"]):
        ids = [p["passage_id"] for p in row["passages"]]
        assert row["passage_id"] in ids
        for p in row["passages"]:  # every passage a label names is one the reader can open
            hit = files.passage(conn, p["passage_id"])
            assert hit is not None and hit.page_label == p["page_label"]
        joined += len(ids) > 1
        # its passage text is in the block, past the overlap with the passage before it
        if len(ids) > 1 and s.hit.kind == "passage":
            last = files.passage(conn, ids[-1]).text.split()
            assert " ".join(last[-5:]) in " ".join(s.hit.text.split())
    assert joined, "some hit of the sample book has a neighbour in its section"
    labels = [s.label for s in answer.sources]
    assert len(labels) == len(set(labels))
    assert len({p["passage_id"] for r in data["sources"] for p in r["passages"]}) == \
        sum(len(r["passages"]) for r in data["sources"])  # no passage under two labels


def test_a_block_that_does_not_fit_the_window_shrinks_to_its_ranked_passage_before_it_is_dropped():
    book = _book([("Burns", [" ".join(["cool"] * 80), "Cool the burn with running water.", " ".join(["dress"] * 80)])])
    blocks, _ = context.build([book[1]], _neighbours(book), block_tokens=500, max_neighbours=1)
    assert [p.passage_id for p in blocks[0].passages] == [100, 101, 102]
    from ragcli.types import Source

    q = "how do I treat a burn?"  # one token a character: room for the passage, not for the block
    room = prompt.build(q, [Source("S1", book[1], passages=[book[1]])], len, 10 ** 6).prompt_tokens + 50
    assert prompt.build(q, blocks, len, 10 ** 6).prompt_tokens > room
    built = prompt.build(q, blocks, len, room)
    assert [s.label for s in built.sources] == ["S1"] and built.dropped == [] and built.truncated == []
    assert built.sources[0].hit.text == "Cool the burn with running water." and built.sources[0].passages == [book[1]]
    assert "cool cool" not in built.messages[-1]["content"]
