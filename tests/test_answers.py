"""Answers that answer (issue 16): refusals in any wording, labels before sentences, and extractive
answers that give the book's procedure in order (real FM 4-25.11 passages, real embedding model)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragcli.answer import book_lists, book_words, extractive, refusal
from ragcli.answer.claims import attach_citations, split_claims
from ragcli.types import Hit, Source

FM = json.loads((Path(__file__).parent / "fixtures" / "fm4-25-11-passages.json").read_text())["passages"]


@pytest.mark.parametrize("text", [
    "The provided passages do not answer this.",
    "The provided passages do not answer this. [S1]",
    "The passages do not mention a dose of morphine.",
    "The context does not provide information about how many chest compressions to give.",
    "I'm sorry, but I cannot answer that from the given passages.",
    "There is no information about aspirin in the passages.",
    "No information is given on antibiotics.",
    "The passages don't specify the dose. Please consult a doctor.",
    "I don't know.",
    "The sources provided do not contain the answer to this question.",
    "This is not mentioned in the passages.",
    "Unfortunately, the passages do not say how much naloxone to give.",
    "",
])
def test_refusals_in_any_wording_are_refusals(text):
    assert refusal.is_refusal(text)


@pytest.mark.parametrize("text", [
    "Apply firm pressure to the wound for 5 to 10 minutes [S1]. Elevate the leg above the heart [S2].",
    "Do not cut the bite or suck out the venom [S3].",
    "If no swelling is seen, place the bands about 1 inch from either side of the bite [S2].",
    "There is no need to remove the dressing; apply a pressure dressing over it [S1].",
    # a refusal of one part, then an answer from the passages: an answer (its claims are judged)
    "The passages do not give a dose. Keep the casualty quiet and get him to a medical facility [S1].",
])
def test_answers_are_not_refusals(text):
    assert not refusal.is_refusal(text)


def test_labels_placed_before_their_sentences_cite_those_sentences():
    claims = attach_citations(split_claims(
        "[S4] Apply a tourniquet above the wound. [S5] Place a wad of padding over the field dressing."))
    assert claims == [("Apply a tourniquet above the wound.", ["S4"]),
                      ("Place a wad of padding over the field dressing.", ["S5"])]
    # labels after the full stop still belong to the sentence before them
    assert attach_citations(split_claims("The end. [S1] Next one.")) == [("The end.", ["S1"]),
                                                                        ("Next one.", [])]


def _sources(ids: list[int]) -> list[Source]:
    by_id = {p["passage_id"]: p for p in FM}
    out = []
    for n, pid in enumerate(ids, 1):
        p = by_id[pid]
        hit = Hit(passage_id=pid, kind="passage", book_id="fm4-25-11", book_title="First Aid",
                  section_path=p["section_path"], page_start=p["page"], page_end=p["page"],
                  page_label=str(p["page"]), text=p["text"], rank=n)
        out.append(Source(f"S{n}", hit))
    return out


def test_question_kinds():
    assert extractive.question_kind("what should I do if someone is bitten by a snake") == "steps"
    assert extractive.question_kind("How do I stop heavy bleeding from a leg wound?") == "steps"
    assert extractive.question_kind("Should I slice the bite open and suck the poison out?") == "yes_no"
    assert extractive.question_kind("Signs and symptoms of shock") == "signs"
    assert extractive.question_kind("What is heat exhaustion?") == "definition"


def test_captions_tables_and_cross_references_are_not_answers():
    assert extractive.is_junk("Figure 6-8.")
    assert extractive.is_junk("TO A COOL, SHADY AREA HE FIRST MAY EXPERIENCE OR IMPROVISE SHADE HEADACHE")
    assert extractive.is_junk("Refer to paragraphs 2-10 and 2-11 for specific information on the airway.")
    assert not extractive.is_junk("CAUTION DO NOT attempt to cut open the bite nor suck out the venom.")


def test_extractive_answer_gives_the_procedure_in_order(embedder):
    # retrieval order is not book order: the answer follows the book's numbering
    sources = _sources([322, 320, 323, 321, 319])
    text, used = extractive.answer(embedder, "what should I do if someone is bitten by a snake", sources)
    lines = text.splitlines()
    steps = [line for line in lines if line[:2] in {"1.", "2.", "3.", "4.", "5."}]
    assert len(steps) == 5, text
    order = ["constricting band", "below the heart", "soap and water", "food, alcohol", "jewelry"]
    assert [next(i for i, line in enumerate(steps) if key in line) for key in order] == [0, 1, 2, 3, 4]
    # the caption is not a step; the steps' own reference to the figure stays (inert: "⟨Figure 6-8⟩")
    assert "Constricting band." not in text
    assert "Figure 6-8" not in text.replace("(Figure 6-8)", "").replace("⟨Figure 6-8⟩", "")
    assert all(line.rstrip().endswith("]") for line in lines)  # every step carries its label
    assert set(used) <= {s.label for s in sources}


def test_extractive_procedure_keeps_the_item_that_holds_it(embedder):
    # "d. Get the casualty to an MTF ..." holds the steps (1)-(5): the answer gives it first, then the steps
    sources = _sources([322, 320, 323, 321, 319])
    text, _ = extractive.answer(embedder, "what should I do if someone is bitten by a snake", sources)
    lines = text.splitlines()
    assert lines[0].startswith("Get the casualty to an MTF") and "lie quietly" in lines[0], text
    assert "d. Get" not in text and "(1)" not in text  # the book's marks give way to the answer's own


def test_extractive_snakebite_without_the_numbered_steps(embedder):
    # issue 16: retrieval brought only step (1) of the procedure; before, the answer was three loose
    # sentences ("... attempt to kill it and send it with the casualty"); now it is item d's instructions
    sources = _sources([320, 319])
    text, _ = extractive.answer(embedder, "what should I do if someone is bitten by a snake", sources)
    assert text.startswith("Get the casualty to an MTF as soon as possible"), text
    assert "lie quietly" in text and "DO NOT elevate the limb" in text


def test_extractive_technique_question_gets_its_steps_not_its_introduction(embedder):
    # the airway pages: the a.-c. overview mentions both techniques, (1) and (2) give their steps
    sources = _sources([67, 66, 68, 69, 70])
    text, _ = extractive.answer(embedder, "Jaw-thrust technique for a casualty with a suspected neck injury", sources)
    assert text.startswith("Perform the jaw-thrust technique."), text
    assert "angles of the casualty’s lower jaw" in text and "head-tilt" not in text
    text, _ = extractive.answer(embedder, "Head-tilt/chin-lift technique of opening the airway", sources)
    assert text.startswith("Perform the head-tilt/chin-lift technique."), text
    assert "forehead" in text and "bony part of the lower jaw" in text and "jaw-thrust" not in text


def test_list_items_keep_their_sentences():
    # "(b) Femoral pulse." is a title; its instruction is the sentence after it; the figure's title is no item
    lists = [b for b in extractive._blocks(_sources([41])) if b.kind == "list"]
    assert len(lists) == 1 and lists[0].numbered
    items = [[s for s, _, _ in item] for item in lists[0].items]
    assert [item[0] for item in items] == ["(a) Carotid pulse.", "(b) Femoral pulse.", "(c) Radial pulse.",
                                           "(d) Posterior tibial pulse."]
    assert items[1][1].startswith("To check the femoral pulse, press the tips of your first two fingers")
    assert not any(s.startswith("Figure 1-3") or s == "Femoral pulse." for item in items for s in item)
    text = extractive._render(lists[0], _sources([41]))
    assert text.splitlines()[1].startswith("2. Femoral pulse. [S1] To check the femoral pulse, press")


def test_a_list_whose_first_steps_were_not_retrieved_keeps_the_books_numbers():
    # passage 323 holds the snakebite steps (2)-(5) only: given as 1.-4. they would read as the whole procedure
    lists = [b for b in extractive._blocks(_sources([323])) if b.kind == "list" and b.numbered]
    lines = extractive._render(max(lists, key=lambda b: len(b.items)), _sources([323])).splitlines()
    assert [line[:3] for line in lines] == ["2. ", "3. ", "4. ", "5. "], lines
    assert lines[0].startswith("2. If the bite is located on an arm or leg, immobilize it at a level below the heart.")


def test_marks_and_labels_split_off_by_the_sentence_splitter_are_joined():
    runs = book_lists._reading_runs(_sources([89, 90]))
    said = [s for run in runs for s, _, _ in run]
    assert any(s.startswith("c. Listen for high pitched sounds") for s in said), said
    assert not any(s.rstrip().endswith(" c.") for s in said)
    assert "NOTE" not in said  # a label alone at the end of a passage
    assert any(s.startswith("NOTE The manual thrust") for s in said)
    assert book_lists._marks_joined(["Cool him by— • Moving him to shade. • Fanning him."]) == [
        "Cool him by—", "• Moving him to shade.", "• Fanning him."]
    assert book_lists._marks_joined(["d.", "Get the casualty to an MTF."]) == ["d. Get the casualty to an MTF."]
    # FM 4-25.11, 2-20: the splitter leaves a step run into the closing parenthesis before it
    half_knot = "(A half-knot is the same as the first part of tying a shoe lace.)"
    assert book_lists._marks_joined([f"{half_knot} (2) Place a stick on top of the halfknot."]) == [
        half_knot, "(2) Place a stick on top of the halfknot."]
    assert book_lists._marks_joined(["Apply pressure (see (a) above) and wait."]) == [
        "Apply pressure (see (a) above) and wait."]


def test_instructions_the_picker_recognises():
    assert extractive.is_instruction("To check the femoral pulse, press the tips of your first two fingers.")
    assert extractive.is_instruction("NOTE If bleeding continues and all other measures have failed (dressings "
                                     "and covering wound) then apply digital pressure.")
    assert extractive.is_instruction("(1) Perform the jaw-thrust technique.")
    assert extractive.is_instruction("The rescuer’s elbows should rest on the surface.")
    assert extractive.is_instruction("Then bring the ends around the limb to prevent the stick from loosening.")
    assert extractive.is_instruction("(5) Fasten the tourniquet to the limb by looping the free ends over the stick.")
    assert extractive.is_instruction("Gently lift the casualty’s head.")
    assert not extractive.is_instruction("Then the bleeding stops.")
    assert not extractive.is_instruction("The jaw-thrust is the safest first approach to opening the airway.")


def test_a_figure_title_after_its_number_is_not_an_answer():
    assert extractive.is_caption("Figure 7-2.", "Nerve Agent Antidote Kit, MARK I, CANA, and ATNAA.")
    assert not extractive.is_caption("Figure 6-8.", "(2) If the bite is located on an arm or leg, immobilize it.")
    assert not extractive.is_caption("Keep him warm.", "Nerve Agent Antidote Kit, MARK I, CANA, and ATNAA.")


def test_extractive_signs_question_gets_the_books_list(embedder):
    text, _ = extractive.answer(embedder, "Signs and symptoms of shock", _sources([126]))
    assert "Sweaty but cool skin" in text and "Thirst" in text
    assert text.index("Sweaty but cool skin") < text.index("Thirst")


def test_a_sentence_inside_a_step_comes_with_the_steps_lead(embedder):
    # "Use a stable object ... so that his feet will not slip off" is the second sentence of "(3) Elevate the
    # casualty's feet higher than the level of his heart": quoted alone it does not say what to do
    sources = _sources([128, 282, 129, 127])
    question = "He's going into shock after losing a lot of blood. Should I prop up his feet and cover him up?"
    text, _ = extractive.answer(embedder, question, sources)
    assert "Elevate the casualty’s feet higher than the level of his heart. [S1] Use a stable object" in text, text
    runs = book_lists._reading_runs(sources)
    step = next(c for run in runs for c in run if c[0].startswith("Use a stable object"))
    lead = next(c for run in runs for c in run if c[0].startswith("(3) Elevate"))
    blocks = extractive._blocks(sources)
    assert extractive._with_leads([step], blocks) == [lead, step]
    assert extractive._with_leads([lead, step], blocks) == [lead, step]  # a lead already picked is not repeated


def test_bullets_under_a_heading_that_names_a_kind_are_a_list_of_their_own(embedder):
    # FM 4-25.11, 5-2: "• Signs and symptoms. ... • Confusion. • First aid measures. • Move the casualty to a
    # cool, shady area ...": one flattened bullet list; the first aid is the list under its own heading
    sources = _sources([257, 256])
    headed = [b for b in extractive._blocks(sources) if b.kind == "list" and b.intro
              and b.intro[0][0] == "• First aid measures."]
    assert len(headed) == 1 and headed[0].items[0][0][0].startswith("• Move the casualty to a cool, shady area")
    assert any(s.startswith("• Excessive sweating") for s, _, _ in headed[0].context)  # judged with the signs
    question = "I feel faint, sweaty, pale and headachy after a long hike in hot weather. What should I do?"
    text, _ = extractive.answer(embedder, question, sources)
    assert text.splitlines() == [
        "First aid measures. [S1]",
        "- Move the casualty to a cool, shady area or improvise shade if none is available. [S1]"]
    assert not book_lists._KIND_HEADING.match("Headache.")
    assert not book_lists._KIND_HEADING.match("Face, ears, and nose.")


def test_an_item_of_a_do_not_list_quoted_alone_keeps_its_negation(embedder):
    # "DO NOT— • Rub the injured part with snow ... • Warm the part by massage ...": picked as a sentence of
    # its own, the second item would tell the reader to warm the part by massage
    sources = _sources([284, 285])
    negated = extractive._negated_items(extractive._blocks(sources))
    assert negated.get("Warm the part by massage or exposure to open fire because the frozen part may be burned "
                       "due to the lack of feeling.") == "DO NOT"
    question = "Someone fell through the ice into a frozen lake. What do I do once he's out?"
    text, _ = extractive.answer(embedder, question, sources)
    assert "Warm the part by massage" in text, text
    assert "DO NOT — Warm the part by massage" in text
    assert "covering it lightly with a blanket" in text and "DO NOT — Reassure" not in text


# ------------------------------------------------------------------------------ ask: no_answer, second chance
from test_ask import ask_db, conn, run  # noqa: E402,F401  (the sample book, ingested once)

from ragcli import ask  # noqa: E402
from ragcli.answer import prompt  # noqa: E402
from ragcli.models.fake import FakeChatModel  # noqa: E402

QUESTION = "what is a craniotomy?"


def _router(first: str):
    """A fake model whose answer call gets `first`."""
    return lambda messages: first


def _ask(conn, embedder, model):
    return ask.ask(conn, embedder, QUESTION, model, ask.AskOptions(expand=False, max_tokens=128))


def test_a_refusal_in_other_words_is_no_answer_with_the_passages(conn, embedder):
    model = FakeChatModel(_router("The context does not contain any information about this."))
    answer = _ask(conn, embedder, model)
    assert answer.status == "no_answer"
    assert answer.citations == [] and answer.claims == []
    assert answer.sources and "nearest passages" in answer.notice


def test_a_refusal_gets_no_second_try_even_when_the_top_passages_match_well(conn, embedder):
    # one call, one verdict: the second try was dropped (decision D76)
    model = FakeChatModel(_router("I'm sorry, but the passages do not answer this."))
    answer = _ask(conn, embedder, model)
    assert answer.sources[0].hit.dense_score >= 0.45 and answer.sources[0].hit.lexical_rank is not None
    assert answer.status == "no_answer" and answer.attempts == 1 and len(model.calls) == 1


def test_an_answer_with_a_number_no_passage_has_is_no_answer(conn, embedder):
    model = FakeChatModel(_router("Give 725 mg of aspirin every 3 hours after a craniotomy [S1]."))
    answer = _ask(conn, embedder, model)
    assert answer.status == "no_answer"
    assert "725" in answer.notice or "aspirin" in answer.notice
    assert answer.claims == [] and answer.citations == []


def test_an_answer_from_the_passages_stays_answered(conn, embedder):
    def reply(messages):  # a plain sentence of the best passage (listed last), with its label
        blocks = messages[-1]["content"].split("Passages:\n\n")[1].split("\n\nQuestion:")[0].split("\n\n")
        for block in reversed(blocks):
            if not block.startswith("[S") or "\n" not in block:
                continue  # a figure's one-line block, or a paragraph of the passage above
            label, text = block.split("]", 1)[0] + "]", block.split("\n", 1)[1]
            for sentence in text.split(". "):
                if len(sentence.split()) >= 8 and not any(ch.isdigit() for ch in sentence):
                    return f"{sentence.strip().rstrip('.')}. {label}"
        raise AssertionError("no plain sentence in the passages")

    answer = _ask(conn, embedder, FakeChatModel(reply))
    assert answer.status == "answered" and answer.attempts == 1
    assert answer.claims[0].support == "supported"


def test_an_answer_from_a_passage_far_from_the_question_is_withheld(conn, embedder):
    """A faithful copy of the passage furthest from the question in the prompt: every word is in its
    passage, and the passage is not about the question (the calibrated cited-passage floor)."""
    from ragcli.render.data import answer_data
    from ragcli.store.calibration import CITED_FLOOR

    seen = {}
    BLEED = "what are the signs of a brain bleed?"

    def reply(messages):
        blocks = messages[-1]["content"].split("Passages:\n\n")[1].split("\n\nQuestion:")[0].split("\n\n")
        scored = []
        for block in blocks:
            if block.startswith("[S") and "\n" in block:
                label, text = block.split("]", 1)[0][1:], block.split("\n", 1)[1]
                q, t = embedder.embed([BLEED, text])
                scored.append((float(q @ t), label, text))
        cosine, label, text = min(scored)
        seen.update(cosine=cosine, label=label)
        # its sentence nearest the question: the answer's own text is on the question (off_question passes)
        sentences = [x.strip().rstrip(".") for x in text.split(". ") if len(x.split()) >= 6]
        vecs = embedder.embed([BLEED, *sentences])
        best = max(range(len(sentences)), key=lambda i: float(vecs[0] @ vecs[i + 1]))
        return f"{sentences[best]}. [{label}]"

    answer = ask.ask(conn, embedder, BLEED, FakeChatModel(reply), ask.AskOptions(expand=False, max_tokens=128))
    assert seen["cosine"] < CITED_FLOOR  # a lay question: the technical passages found are not all near it
    assert answer.status == "no_answer" and answer.reason == "far_passages", answer.notice
    assert "about something else than the question" in answer.notice and f"{CITED_FLOOR:.2f}" in answer.notice
    data = answer_data(answer)
    assert data["answer"] == "" and f"[{seen['label']}]" in data["withheld_draft"]  # the draft is kept aside


def test_real_llama_cpp_refusal_is_no_answer_in_json(ask_db, tmp_path, tiny_gguf):
    import shutil

    db = tmp_path / "c.db"
    shutil.copy(ask_db, db)
    grammar = tmp_path / "refuse.gbnf"
    from ragcli.models.grammars import forced_text_grammar

    grammar.write_text(forced_text_grammar("The passages do not mention this topic."))
    result = run(["ask", QUESTION, "--db", str(db), "--json", "--model", str(tiny_gguf),
                  "--grammar-file", str(grammar), "--no-expand", "--max-tokens", "32", "--ctx", "2048"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["status"] == "no_answer"
    assert data["attempts"] in (1, 2) and data["claims"] == [] and data["sources"]


# ------------------------------------------------------------------------------ labels on the wrong passage
def test_a_sentence_under_the_wrong_label_is_repointed_to_the_passage_that_backs_it(embedder):
    from ragcli.answer import grounding

    sources = _sources([320, 321, 126])  # only S2 says how tight the band should be
    text = ("The band should be tight enough to stop the flow of blood near the skin, but not tight "
            "enough to interfere with circulation [S1]. "
            "Thirst and restlessness are signs of shock [S3].")
    claims = grounding.score(text, sources, embedder)
    assert claims[0].citations == ["S2"] and claims[0].cited_as == ["S1"]
    assert claims[0].support == "supported" and claims[0].evidence.label == "S2"
    assert claims[1].citations == ["S3"] and claims[1].cited_as == []  # rightly cited: untouched


def test_a_sentence_no_given_passage_backs_keeps_its_label_and_its_verdict(embedder):
    from ragcli.answer import grounding

    sources = _sources([320, 321, 126])
    claims = grounding.score("Give the casualty two aspirin tablets with warm tea [S1].", sources, embedder)
    assert claims[0].citations == ["S1"] and claims[0].cited_as == []
    assert claims[0].support != "supported"


# ------------------------------------------------------------------------------ the asker's words
def test_a_question_word_the_book_uses_elsewhere_is_not_missing():
    sources = _sources([320, 321])
    question = "A snake bit my buddy on the calf, what do I do about the morphine?"
    assert "buddy" in refusal.missing_terms(question, sources)
    in_books = {"buddy", "calf"}.__contains__  # "buddy aid" is on other pages of the manual
    missing = refusal.missing_terms(question, sources, in_books)
    assert "buddy" not in missing and "morphine" in missing


def test_an_answer_in_the_askers_words_is_not_refused_for_them():
    from ragcli.types import Answer, Claim

    sources = _sources([320, 321])
    question = "A snake bit my buddy on the hand. What do I do?"
    text = "Place a single band above the wrist of your buddy [S2]."
    answer = Answer(question, None, text, "answered", ["S2"], [], sources)
    answer.claims = [Claim(text[:-5], ["S2"], support="weak")]  # related, not clearly stated
    assert "buddy" in refusal.unbacked_reason(answer, question)  # "buddy" is in no passage
    assert refusal.unbacked_reason(answer, question, {"buddy"}.__contains__) is None
    question = "A snake bit my buddy on the hand. Can I give him morphine?"
    answer.claims = [Claim("Give your buddy morphine for the pain", ["S2"], support="weak")]
    assert "morphine" in refusal.unbacked_reason(answer, question, {"buddy"}.__contains__)


def test_a_question_for_an_amount_answered_without_one_is_not_answered():
    from ragcli.types import Answer, Claim

    sources = _sources([323])
    question = "What dose of morphine should I give a wounded soldier for severe pain?"
    text = "Keep the casualty quiet and remove his rings [S1]."
    answer = Answer(question, None, text, "answered", ["S1"], [], sources)
    answer.claims = [Claim(text[:-5], ["S1"], support="supported")]
    assert "amount" in refusal.unbacked_reason(answer, question)
    # the same reply to a question that asks for no amount is backed
    assert refusal.unbacked_reason(answer, "What do I do after a snakebite?") is None
    # and an amount in the answer (from the passage) is an answer to the question's kind
    answer.claims = [Claim("Place the bands about 1 inch from either side of the bite", ["S1"], support="supported")]
    assert refusal.unbacked_reason(answer, "How far from the bite do the bands go?") is None


def test_an_amount_of_something_no_cited_passage_names_is_not_an_answer():
    from ragcli.types import Answer, Claim

    assert refusal.amount_object("What dose of morphine should I give for severe pain?") == ["morphine"]
    assert refusal.amount_object("How many milligrams of ibuprofen can I give?") == ["ibuprofen"]
    assert refusal.amount_object("How many chest compressions per minute?") == ["chest", "compressions"]
    assert refusal.amount_object("How often does a soldier need a booster?") == []  # a time, not a thing
    sources = _sources([321])  # the snakebite band: "single band", "1 inch", "fingerbreadth"
    # an amount copied from a passage about something else (the 1.5B: "Take one tablet every 8 hours")
    text = "Place the band about 1 inch above the bite [S1]."
    answer = Answer("", None, text, "answered", ["S1"], [], sources)
    answer.claims = [Claim(text[:-5], ["S1"], support="supported")]
    reason = refusal.unbacked_reason(answer, "What dose of morphine should I give after a snakebite?")
    assert reason and "morphine" in reason
    # the same answer where the passage names what is counted
    assert refusal.unbacked_reason(answer, "How many bands should I place for a bite on the foot?") is None


def test_a_which_question_answered_from_passages_that_never_name_the_kind_is_not_an_answer():
    # the 0.5B: "For an infected dog bite, use a topical antiseptic [S2]" for "which antibiotic"
    from ragcli.types import Answer, Claim

    question = "Which antibiotic should I give for an infected dog bite?"
    assert refusal.asked_kind(question) == ["antibiotic"]
    assert refusal.asked_kind("What kind of splint do I use for a broken arm?") == ["splint"]
    # the question's verb after the kind is not part of it ("which symptoms mean ..." names symptoms)
    assert refusal.asked_kind("Which symptoms mean we need to get him to a doctor right away?") == ["symptoms"]
    assert refusal.asked_kind("What kind of splint works best for a leg?") == ["splint"]
    assert refusal.asked_kind("What should I do after a snakebite?") == []
    sources = _sources([321])
    text = "For an infected bite, keep the casualty quiet [S1]."
    answer = Answer(question, None, text, "answered", ["S1"], [], sources)
    answer.claims = [Claim(text[:-5], ["S1"], support="weak")]
    reason = refusal.unbacked_reason(answer, question)
    assert reason and "which antibiotic" in reason
    # a kind the cited passage names is asked and answered
    assert refusal.unbacked_reason(answer, "Which band do I place above the bite?") is None


def test_a_reply_too_short_to_grade_still_answers_an_amount_question_or_not():
    from ragcli.answer.grounding import is_factual
    from ragcli.types import Answer, Claim

    assert is_factual("a. 100 milligrams.") and is_factual("Give 2 tablets.")  # a quantity is a fact
    assert not is_factual("Inject epinephrine.") and not is_factual("Step 1.")
    sources = _sources([321])
    question = "How much epinephrine should I inject for a severe bee sting allergy?"
    answer = Answer(question, None, "Inject epinephrine [S1].", "answered", ["S1"], [], sources)
    answer.claims = [Claim("Inject epinephrine.", ["S1"], support="not_factual")]
    assert refusal.unbacked_reason(answer, question) == refusal.NO_AMOUNT
    # with an amount, the thing counted must still be in the cited passage
    answer.claims = [Claim("a. 100 milligrams.", ["S1"], support="weak")]
    assert "epinephrine" in refusal.unbacked_reason(answer, question)


def test_a_lay_word_the_rewrite_put_in_the_books_words_is_not_a_missing_subject():
    from ragcli.types import Answer, Claim

    # the 1.5B rewrote "Should I slice the snakebite open and suck the poison out?" as "snakebite
    # characteristics treatment": "slice" is the asker's word for the book's "cut"
    assert book_words.translated("slice", "snakebite characteristics treatment")
    assert not book_words.translated("antibiotic", "antibiotic for infected dog bite treatment")
    assert not book_words.translated("slice", None)  # no rewrite: nothing is known of the word
    question = "Should I slice the snakebite open and suck the poison out?"
    sources = _sources([322])  # "DO NOT attempt to cut open the bite nor suck out the venom."
    text = "No, do not slice the bite open or suck out the venom [S1]."
    answer = Answer(question, None, text, "answered", ["S1"], [], sources)
    answer.claims = [Claim(text[:-5], ["S1"], support="weak")]
    assert "slice" in refusal.unbacked_reason(answer, question, lambda w: False)
    rewrite = "snakebite characteristics treatment"
    assert refusal.unbacked_reason(answer, question, lambda w: book_words.translated(w, rewrite)) is None


def test_an_answer_most_of_whose_sentences_no_passage_backs_is_not_an_answer():
    from ragcli.types import Answer, Claim

    sources = _sources([321])
    question = "How do I help someone having an asthma attack?"
    claims = [Claim("Place your hand on the casualty's forehead", ["S1"], support="unsupported"),
              Claim("Pinch his nostrils together", ["S1"], support="unsupported"),
              Claim("Place a single band above the wrist", ["S1"], support="supported")]
    answer = Answer(question, None, "", "answered", ["S1"], [], sources)
    answer.claims = claims
    assert "2 of its 3 sentences" in refusal.unbacked_reason(answer, question)
    claims[1].support = "supported"  # one of three unbacked: an answer, flagged per sentence
    assert refusal.unbacked_reason(answer, question) is None


def test_a_do_not_list_keeps_its_negation_on_every_item():
    # FM 4-25.11, 5-3 (frostbite), p. 5-13: "DO NOT— • Rub the injured part with snow ... • Warm the part
    # by massage ...": one item a line must not read as an instruction to do it
    hit = Hit(passage_id=284, kind="passage", book_id="fm4-25-11", book_title="First Aid",
              section_path=["5-3. Cold Injuries"], page_start=123, page_end=123, page_label="5-13", text="")
    block = extractive.Block("list", [[("Rub the injured part with snow or apply cold water soaks.", 0, 1)],
                                      [("Warm the part by massage or exposure to open fire.", 0, 2)]],
                             intro=[("DO NOT—", 0, 0)])
    lines = extractive._render(block, [Source("S1", hit)]).splitlines()
    assert lines == ["DO NOT— [S1]",
                     "- DO NOT — Rub the injured part with snow or apply cold water soaks. [S1]",
                     "- DO NOT — Warm the part by massage or exposure to open fire. [S1]"]
    block.intro = [("The following are signs of frostbite:", 0, 0)]  # an ordinary list is untouched
    assert extractive._render(block, [Source("S1", hit)]).splitlines()[1].startswith("- Rub the")


def test_the_answer_prompt_lists_the_best_passage_last_with_its_own_label():
    sources = _sources([320, 321, 126])
    messages = prompt.build("what do I do after a snakebite?", sources, lambda t: len(t) // 4, 3000).messages
    user = messages[-1]["content"]
    assert user.index("[S3]") < user.index("[S2]") < user.index("[S1]") < user.index("Question:")
    assert user.split("[S1]", 1)[1].split("\n", 2)[1].startswith(sources[0].hit.text[:40])  # S1 is still S1


# ------------------------------------------------------------------------------ the reader's spelling
def _fts(texts: list[str]):
    """A real FTS5 index of `texts` as the corpus keeps it (porter unicode61), read by the store's own
    `term_in_corpus`: does a word (or phrase) occur on some page?"""
    import sqlite3

    from ragcli.store import corpus

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE passages_fts USING fts5(text, heading, tokenize='porter unicode61')")
    conn.executemany("INSERT INTO passages_fts(text, heading) VALUES (?, '')", [(t,) for t in texts])
    return lambda w: corpus.term_in_corpus(conn, w)


# our own sentences, spelled as FM 4-25.11 spells these subjects
MANUAL = _fts(["Heatstroke is a medical emergency: cool the casualty at once.",
               "Heat cramps are caused by a loss of salt.", "Every soldier carries a first-aid kit.",
               "Control the hemorrhage with direct pressure.", "Swelling (edema) of the ankle."])
SPLIT = _fts(["Heat stroke is a medical emergency.", "Give first aid to the casualty."])


@pytest.mark.parametrize("in_books, word, question", [
    (MANUAL, "stroke", "How do I treat heat stroke?"),  # the book joins the two words
    (MANUAL, "stroke", "What is heat stroke?"),
    (MANUAL, "heat-stroke", "What is heat-stroke?"),  # hyphenated by the reader
    (SPLIT, "heatstroke", "What is heatstroke?"),  # the book splits what the reader joins
    (MANUAL, "haemorrhage", "How do I stop a haemorrhage?"),  # the book's American spelling
    (MANUAL, "oedema", "Is oedema of the ankle serious?"),
])
def test_a_subject_spelled_the_readers_way_is_named_in_the_books(in_books, word, question):
    assert not in_books(word)  # the premise: the reader's spelling is not the book's
    assert book_words.named_in_books(word, question, in_books)
    assert word not in refusal.missing_terms(question, [], in_books)


def test_a_hyphenated_word_is_named_where_the_book_writes_it_in_two():
    # FTS5 reads "heat-stroke" as the phrase "heat stroke": found as it is
    assert book_words.named_in_books("heat-stroke", "How do I cool someone with heat-stroke?", SPLIT)
    assert book_words.named_in_books("first-aid", "What goes in a first-aid kit?", SPLIT)


def test_a_subject_the_books_never_name_is_still_missing():
    assert not book_words.named_in_books("stroke", "What do I do for a stroke?", MANUAL)
    assert not book_words.named_in_books("migraine", "What do I do for a migraine?", MANUAL)
    assert not book_words.named_in_books("shoes", "Should I take his shoes off?", _fts(["Remove the boots."]))
    assert refusal.missing_terms("What do I do for a stroke?", [], MANUAL) == ["stroke"]


def test_heat_stroke_is_not_a_missing_subject_where_the_book_says_heatstroke(embedder):
    assert book_words.missing_subject("how do I treat heat stroke", MANUAL, embedder) is None
    assert book_words.missing_subject("what is heat stroke", MANUAL, embedder) is None
    assert book_words.missing_subject("What do I do for a migraine?", MANUAL, embedder) == "migraine"


def test_an_answer_that_is_not_language_is_withheld(conn, embedder):
    """A figure's axis ticks and labels copied as the answer (FM 21-18's "466059-58 466059°-58 2 4 -.-
    PACE SETTER Figure 4", issue 47) is no answer, with a `not_text` warning, however it cites."""
    model = FakeChatModel(_router("466059-58 466059°-58 2 4 -.- PACE SETTER Figure 4 [S1]. 0 60 100 150 200 [S1]."))
    answer = _ask(conn, embedder, model)
    assert answer.status == "no_answer" and answer.reason == "not_text", answer.notice
    assert "not language" in answer.notice
    assert "not_text" in [w.code for w in answer.warnings]
