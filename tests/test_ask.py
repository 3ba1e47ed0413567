"""ask: the pipeline with a deterministic fake model, and end to end with real llama.cpp (tiny model)."""
from __future__ import annotations

import json
import re
import shutil

import pytest
from typer.testing import CliRunner

from ragcli import ask
from ragcli.answer import prompt
from ragcli.cli import app
from ragcli.models.fake import FakeChatModel
from ragcli.models.grammars import forced_text_grammar
from ragcli.search.rewrite import clean_rewrite
from ragcli.store.calibration import CITED_FLOOR

LABEL = re.compile(r"\[([A-Z])\s*(\d+)\]")


@pytest.fixture(scope="module")
def ask_db(sample_db):
    """The sample book ingested once for the run (conftest's sample_db); every test here copies it."""
    return sample_db


@pytest.fixture
def conn(ask_db, tmp_path):
    from ragcli.store import db

    copy = tmp_path / "corpus.db"
    shutil.copy(ask_db, copy)
    c = db.connect(copy)
    yield c
    c.close()


@pytest.fixture(scope="module")
def embedder():
    from ragcli.models import embed

    return embed.get_embedder()


def labels_in(text: str) -> set[str]:
    return {f"{a}{b}" for a, b in LABEL.findall(text)}


def test_labels_follow_rank_and_kind(conn, embedder):
    from ragcli.search.pipeline import SearchOptions, search

    hits = search(conn, embedder, "saccular aneurysm figure", SearchOptions(k=8)).hits
    sources = prompt.label_sources(hits)
    passages = [s.label for s in sources if s.hit.kind == "passage"]
    figures = [s.label for s in sources if s.hit.kind == "figure"]
    assert passages == [f"S{i}" for i in range(1, len(passages) + 1)]
    assert figures == [f"F{i}" for i in range(1, len(figures) + 1)]
    assert figures, "a figure caption should be retrieved for a figure question"


def test_invalid_citations_are_removed_and_reported(conn, embedder):
    model = FakeChatModel("A craniotomy removes a bone flap [S1]. It never fails [S19] (p. 45). See [Source 2].")
    answer = ask.ask(conn, embedder, "what is a craniotomy?", model, ask.AskOptions(expand=False))
    given = {s.label for s in answer.sources}
    assert answer.status == "answered"
    assert labels_in(answer.answer) <= given
    assert "[S19]" not in answer.answer and "(p. 45)" not in answer.answer
    removed = {r.text for r in answer.removed_citations}
    assert "[S19]" in removed and "(p. 45)" in removed
    assert "S1" in answer.citations and set(answer.citations) <= given
    prompt_text = model.calls[-1]["messages"][-1]["content"]  # the question's turn (after the worked example)
    assert labels_in(prompt_text) == {s.label for s in answer.sources[: len(labels_in(prompt_text))]}


def test_streamed_text_equals_answer_and_never_shows_invalid_labels(conn, embedder):
    reply = "Mannitol draws water out of the brain [S1][S12]. Dose [S2, S40] matters [7]."
    model = FakeChatModel(reply, piece_size=2)
    shown: list[str] = []
    answer = ask.ask(conn, embedder, "mannitol for raised intracranial pressure", model,
                     ask.AskOptions(expand=False), on_text=shown.append)
    given = {s.label for s in answer.sources}
    assert "".join(shown).strip() == answer.answer
    printed = ""
    for piece in shown:
        printed += piece
        assert labels_in(printed) <= given  # at no moment is an invalid label on screen
    assert not re.search(r"\[\s*7\s*\]", answer.answer)


def test_expansion_is_used_and_shown(conn, embedder):
    replies = ["craniotomy bone flap dura opening", "It is a craniotomy [S1]."]
    model = FakeChatModel(replies)
    answer = ask.ask(conn, embedder, "what happens after cutting the skull?", model, ask.AskOptions(rewrite=True))
    assert answer.expanded_query == "craniotomy bone flap dura opening"
    rewrite_call = model.calls[0]
    assert rewrite_call["constraint"] and "Question: what happens after cutting the skull?" in \
        rewrite_call["messages"][-1]["content"]
    assert any("raniotomy" in s.hit.section_str for s in answer.sources)


def test_phases_name_the_rewrite_and_the_search_apart(conn, embedder):
    """The status line says "rewriting the question" while the model rewrites, "searching" while
    retrieval runs: search.pipeline reports each step as it starts."""
    model = FakeChatModel(["craniotomy bone flap dura opening", "It is a craniotomy [S1]."] + ["[S1]"] * 2)
    seen = []
    ask.ask(conn, embedder, "what happens after cutting the skull?", model, ask.AskOptions(rewrite=True),
            on_phase=lambda name, **info: seen.append((name, len(model.calls))))
    names = [name for name, _ in seen]
    assert names[:names.index("claims") + 1] == ["expand", "rewrite", "search", "checks", "prompt", "claims"]
    seen.clear()
    model = FakeChatModel(["craniotomy bone flap dura opening", "It is a craniotomy [S1]."] + ["[S1]"] * 2)
    ask.ask(conn, embedder, "what happens after cutting the skull?", model, ask.AskOptions(judge=True, rewrite=True),
            on_phase=lambda name, **info: seen.append((name, len(model.calls))))
    names = [name for name, _ in seen]
    assert names[:names.index("claims") + 1] == ["expand", "rewrite", "search", "checks", "prompt", "judge", "claims"]
    calls = dict(seen)
    assert calls["rewrite"] == 0 and calls["search"] == 1  # the rewrite runs between the two
    assert calls["prompt"] == 1  # the answer's call comes after

    seen.clear()
    ask.ask(conn, embedder, "what happens after cutting the skull?", FakeChatModel(["It is [S1]."] * 2),
            ask.AskOptions(expand=False), on_phase=lambda name, **info: seen.append(name))
    assert seen[:3] == ["search", "checks", "prompt"]  # no expansion, no rewrite: searching only


def test_ask_makes_no_rewrite_call_unless_asked(conn, embedder):
    """The model rewrite is off by default (D102): the answer is the only call, and the question's own
    words are searched; with rewrite=True the rewrite call comes first."""
    model = FakeChatModel(["It is a craniotomy [S1]."])  # a second call would fail the test
    answer = ask.ask(conn, embedder, "what happens after cutting the skull?", model, ask.AskOptions())
    assert len(model.calls) == 1 and model.calls[0]["messages"][-1]["content"].startswith("Passages:")
    assert answer.expanded_query is None or "craniotomy bone flap" not in answer.expanded_query


def test_bad_rewrite_cannot_push_out_the_original_hits(conn, embedder):
    from ragcli.search.pipeline import SearchOptions, mode_for, search

    question = "nimodipine dose for vasospasm"
    plain = [h.passage_id for h in search(conn, embedder, question, SearchOptions(k=8)).hits]
    model = FakeChatModel(["arteriovenous malformation embolization glue"])
    # the retrieval ask runs (its rewrite by the model), not the passages an answer is given
    opts = SearchOptions(mode=mode_for(True, False), k=8, check_language=True)
    got = [h.passage_id for h in search(conn, embedder, question, opts, model=model).hits]
    assert set(plain[:4]) <= set(got)  # the question's own best hits are never pushed out


@pytest.mark.parametrize("junk", ["", "   ", "!!!! ??? 1234", "Question: " + "x" * 300])
def test_junk_rewrites_fall_back_to_the_original(junk):
    assert clean_rewrite(junk, "what is a craniotomy?") is None


# What SmolLM2-135M-Instruct (a real model, bench/retrieval/bench_rewrite.py) wrote instead of a rewrite.
@pytest.mark.parametrize("reply", [
    "The answer to this question is:",  # an answer, about nothing the question or terms name
    "The book's own terms fit the question: \"The book's own terms fit the question.",  # the prompt
    "The book's own terms are: \"Cerebral edema\" and \"Collapsed lung.",
])
def test_small_model_replies_that_are_not_rewrites_are_dropped(reply):
    assert clean_rewrite(reply, "why does the brain swell after surgery?", ["Cerebral edema"]) is None


def test_looping_rewrites_are_cut_to_their_first_round():
    got = clean_rewrite("cerebral edema, brain swelling, edema, edema, edema, edema",
                            "why does the brain swell?", ["cerebral edema"])
    assert got == "cerebral edema, brain swelling, edema"
    got = clean_rewrite("check for breathing after surgery check for breathing after surgery",
                            "is he breathing?", [])
    assert got == "check for breathing after surgery"


def test_labels_copied_into_a_rewrite_are_dropped():
    # the 0.5B's replies to the rewrite prompt (which begins with the answer's worked example)
    assert clean_rewrite("contamination splashed into eyes rinse [S1].", "chemicals in my eyes?", []) == \
        "contamination splashed into eyes rinse."
    assert clean_rewrite("Head tilt/chin lift technique of opening airway [FIRST AID].", "open his airway?", []) == \
        "Head tilt/chin lift technique of opening airway."


def test_a_rewrite_in_the_books_terms_is_kept():
    assert clean_rewrite("craniotomy bone flap", "what happens after cutting the skull?",
                             ["craniotomy"]) == "craniotomy bone flap"


def test_rewrite_prompt_shows_worked_examples_before_the_task():
    from ragcli.search import rewrite

    msgs = rewrite.rewrite_messages("why does the brain swell?", ["Primer"], ["cerebral edema"])
    assert msgs[0] == {"role": "system", "content": prompt.ANSWER_SYSTEM}  # as the answer: KV cache reuse
    assert [m["role"] for m in msgs[1:]] == ["user", "assistant"] * (1 + len(rewrite.REWRITE_EXAMPLES)) + ["user"]
    assert "Question: why does the brain swell?" in msgs[-1]["content"]
    assert "cerebral edema" in msgs[-1]["content"] and "Primer" in msgs[-1]["content"]


class _Recording:
    """A model whose calls (messages, then the model's stats) are kept."""

    def __init__(self, model):
        self.model, self.calls = model, []

    def chat(self, messages, **kw):
        out = self.model.chat(messages, **kw)
        text = out if isinstance(out, str) else "".join(out)
        self.calls.append({"messages": messages, "stats": dict(self.model.stats)})
        return text if isinstance(out, str) else iter([text])

    def __getattr__(self, name):
        return getattr(self.model, name)


def test_the_calls_of_one_ask_begin_alike_and_the_answer_reuses_the_rewrites_cache(conn, embedder, tiny_gguf):
    """Rewrite, answer and --verify begin with the same messages, byte for byte (the answer's system
    prompt and worked example), so the answer and the verdicts re-use the rewrite's KV cache: real
    llama.cpp (tiny model) reports the cached prompt tokens."""
    from ragcli.models.chat import Grammar
    from ragcli.models.factory import load_model
    from ragcli.system_prompt import ANSWER_PREFIX

    model = _Recording(load_model(tiny_gguf, n_ctx=2048))
    forced = Grammar(forced_text_grammar("The brain swells after the bone flap is lifted [S1]."))
    answer = ask.ask(conn, embedder, "why does my head puff up after they cut the skull?", model,
                     ask.AskOptions(grammar=forced, max_tokens=160, verify=True, rewrite=True))
    tasks = [c["messages"][-1]["content"].split(":")[0] for c in model.calls]
    assert tasks == ["TASK", "Passages", "TASK"]  # rewrite, answer, verify
    assert "check each numbered claim" in model.calls[2]["messages"][-1]["content"]
    prefix = [dict(m) for m in ANSWER_PREFIX]
    assert all(c["messages"][:len(prefix)] == prefix for c in model.calls)
    assert prompt.build("q?", [], len, 10_000).messages[:len(prefix)] == prefix  # as the answer builds it
    prefix_tokens = sum(model.count_tokens(m["content"]) for m in prefix)
    rewrite_call, answer_call, verify_call = (c["stats"] for c in model.calls)
    assert answer_call["prompt_cached"] >= prefix_tokens
    assert verify_call["prompt_cached"] >= prefix_tokens
    assert answer.timings["prompt_cached"] == answer_call["prompt_cached"]


def test_no_context_does_not_call_the_model(conn, embedder):
    model = FakeChatModel([])  # any call would fail the test
    answer = ask.ask(conn, embedder, "what is the capital of France?", model, ask.AskOptions())
    assert answer.status == "no_context" and answer.answer == ""
    assert model.calls == [] or all(c["constraint"] for c in model.calls)  # only the rewrite may run
    assert answer.sources, "the nearest passages are still listed"


def test_answer_whose_citations_were_all_removed_and_no_passage_states_is_not_an_answer(conn, embedder):
    from ragcli.answer import refusal

    model = FakeChatModel("Craniotomy is common [S99]. Surgeons agree (page 300).")
    answer = ask.ask(conn, embedder, "what is a craniotomy?", model, ask.AskOptions(expand=False))
    assert answer.status == "no_answer" and answer.unbacked == refusal.NO_SOURCE
    assert answer.citations == [] and len(answer.removed_citations) == 2
    # a reply with nothing factual in it, uncited, is still only `unsupported`
    answer = ask.ask(conn, embedder, "what is a craniotomy?", FakeChatModel("Yes, surely."),
                     ask.AskOptions(expand=False))
    assert answer.status == "unsupported"


def test_an_answer_without_labels_gets_the_passages_its_sentences_come_from(conn, embedder):
    """The 0.5B pastes the book's sentences and cites nothing: ragcli finds the passage each copied
    sentence comes from, says the labels are its own, and leaves a sentence from memory uncited."""
    from ragcli.text import sentences

    question = "what is a craniotomy?"
    top = ask.ask(conn, embedder, question, None, ask.AskOptions(expand=False)).sources[0].hit
    copied = next(s for s in sentences(top.text) if len(s.split()) >= 8)
    invented = "Patients usually go home on the same afternoon and return to work the next week."
    answer = ask.ask(conn, embedder, question, FakeChatModel(f"{copied} {invented}"),
                     ask.AskOptions(expand=False))
    assert answer.status == "answered" and "ragcli found" in answer.notice
    first, second = answer.claims
    assert first.attributed and first.support == "supported" and first.citations == answer.citations
    assert [s.hit.passage_id for s in answer.sources if s.label == first.citations[0]] == [top.passage_id]
    assert not second.attributed and second.support == "no_source" and second.citations == []
    assert labels_in(answer.answer) == set()  # the model's text is not rewritten
    from ragcli.render.data import answer_data

    data = json.loads(json.dumps(answer_data(answer)))
    assert data["claims"][0]["attributed"] is True and data["claims"][1]["attributed"] is False


def test_an_unbacked_answer_is_no_answer_after_one_call(conn, embedder):
    from ragcli.answer import refusal

    question = "what is a craniotomy?"
    sources = ask.ask(conn, embedder, question, None, ask.AskOptions(expand=False)).sources
    assert sources[0].hit.dense_score >= 0.45  # the passages match the question well
    model = FakeChatModel(["Surgeons usually shave the whole head the night before [S1]."])
    answer = ask.ask(conn, embedder, question, model, ask.AskOptions(expand=False))
    assert len(model.calls) == 1 and answer.attempts == 1
    assert answer.status == "no_answer" and refusal.NOT_BACKED in answer.notice
    assert answer.sources  # the nearest passages are listed


def test_an_answer_about_something_else_is_not_an_answer(embedder):
    from ragcli.answer import refusal
    from ragcli.search.pipeline import DENSE_FLOOR
    from ragcli.types import Answer, Claim

    steps = "Check his first aid case regularly and replace any used or missing dressing [S1]."
    answer = Answer("", None, steps, "answered", ["S1"], [], [])
    answer.claims = [Claim(steps[:-5], ["S1"], support="supported")]
    assert refusal.off_question(answer, "How do I deliver a baby in the field?", embedder, DENSE_FLOOR)
    assert not refusal.off_question(answer, "How often should I check and replace field dressings?", embedder,
                                    DENSE_FLOOR)
    # a reader's slip the embedding model cannot read: the answer is weighed on the books' spelling too
    layers = "Wear layers of porous clothing and windproof outer clothing to keep out the wind [S1]."
    answer = Answer("", None, layers, "answered", ["S1"], [], [])
    answer.claims = [Claim(layers[:-5], ["S1"], support="supported")]
    assert refusal.off_question(answer, "Explain clohting to me.", embedder, DENSE_FLOOR)
    assert not refusal.off_question(answer, "Explain clohting to me.", embedder, DENSE_FLOOR,
                                    "Explain clothing to me.")


def _source(label: str, text: str):
    from ragcli.types import Hit, Source

    return Source(label, Hit(int(label[1:]), "passage", "b", "Book", ["Part"], 1, 1, "1", text))


def test_the_cited_cosine_is_that_of_the_nearest_cited_passage(embedder):
    from ragcli.answer import refusal
    from ragcli.types import Answer, Claim

    labour = "A pregnant woman in labour has gone into the shelter. How do I help deliver the baby?"
    cribbing = _source("S1", "Gather cribbing and wedges. Lift the heavy object an inch at a time with a lever "
                             "and place cribbing under it as it rises.")
    birth = _source("S2", "Childbirth in the field: when the baby's head appears, support it gently; never pull "
                          "on the baby. Keep the mother lying down with her knees bent.")
    text = "Lift the heavy object an inch at a time [S1]."
    answer = Answer("", None, text, "answered", ["S1"], [], [cribbing, birth])
    answer.claims = [Claim(text[:-5], ["S1"], support="supported")]
    far = refusal.cited_cosine(answer, labour, embedder)
    assert far is not None and far < CITED_FLOOR  # the labour question answered from lifting debris
    answer.claims.append(Claim("Support the baby's head gently.", ["S2"], support="supported"))
    near = refusal.cited_cosine(answer, labour, embedder)
    assert near > CITED_FLOOR > far  # one cited passage about the question is enough
    answer.claims = [Claim("Lifting a heavy object.", ["S1"], support="not_factual")]
    assert refusal.cited_cosine(answer, labour, embedder) is None  # nothing factual cites a passage


def test_a_question_about_what_the_books_never_name_is_not_sent_to_the_model(conn, embedder):
    from ragcli.answer import book_words
    from ragcli.store import corpus

    question = "What should I do for a migraine after surgery?"  # on-topic enough to pass the floor
    assert not corpus.term_in_corpus(conn, "migraine")
    model = FakeChatModel([])  # an answer call would fail the test
    answer = ask.ask(conn, embedder, question, model, ask.AskOptions(expand=False))
    assert answer.status == "no_context" and model.calls == [] and answer.sources
    assert '"migraine"' in answer.notice and "never mention" in answer.notice
    # a lay word for what the books do name carries little of the question: not a missing subject
    lay = "A deep gash on his leg is still pouring blood after I put a bandage on. Should I push on it?"
    assert book_words.missing_subject(lay, lambda w: w != "gash", embedder) is None
    assert book_words.missing_subject("What do I do for a migraine?", lambda w: False, embedder) == "migraine"
    assert book_words.missing_subject("What do I do for a migraine?", lambda w: True, embedder) is None


def test_an_unlabelled_answer_from_memory_is_not_an_answer(conn, embedder):
    """It cites nothing and no passage states any of it (the 0.5B: "The soldier needs a tetanus booster
    shot every 15 minutes."): the model's memory, `no_answer` with the reason and the passages listed."""
    from ragcli.answer import refusal

    model = FakeChatModel("Surgeons usually shave the whole head the night before and patients fast for "
                          "two days.")
    answer = ask.ask(conn, embedder, "what is a craniotomy?", model, ask.AskOptions(expand=False))
    assert answer.status == "no_answer" and answer.citations == [] and answer.claims == []
    assert answer.unbacked == refusal.NO_SOURCE and answer.notice.startswith("not answered: the answer cites no")
    assert answer.sources and "Surgeons usually shave" in answer.answer  # the core keeps the draft
    from ragcli.render.data import answer_data

    out = answer_data(answer)
    assert out["unbacked"] == refusal.NO_SOURCE
    assert out["answer"] == "" and "Surgeons usually shave" in out["withheld_draft"]  # never the answer


def test_extractive_answer_without_a_model(conn, embedder):
    answer = ask.ask(conn, embedder, "how is nimodipine given after subarachnoid hemorrhage?", None,
                     ask.AskOptions())
    assert answer.status == "extractive" and "no model" in answer.notice
    assert answer.citations and labels_in(answer.answer) == set(answer.citations)
    assert set(answer.citations) <= {s.label for s in answer.sources}
    assert "nimodipine" in answer.answer.lower()


def test_question_in_another_language_is_flagged(conn, embedder):
    answer = ask.ask(conn, embedder, "¿qué pasa después de cortar el cráneo del paciente?", None)
    assert answer.status == "no_context" and "Spanish" in answer.notice


def test_prompt_fits_the_window_by_dropping_lowest_ranked(conn, embedder):
    from ragcli.search.pipeline import SearchOptions, search

    sources = prompt.label_sources(search(conn, embedder, "cerebral edema", SearchOptions(k=8)).hits)
    count = lambda text: len(text) // 4 + 1  # noqa: E731
    small = prompt.build("cerebral edema?", sources, count, budget=500)
    assert 0 < len(small.sources) < len(sources) and small.prompt_tokens <= 500
    # an answer is given the top ANSWER_SOURCES passages; those that do not fit are the dropped ones
    assert small.dropped == sources[:prompt.ANSWER_SOURCES][len(small.sources):]
    tiny = prompt.build("cerebral edema?", sources, count, budget=260)
    assert len(tiny.sources) == 1 and tiny.truncated == [tiny.sources[0].label]
    assert prompt.TRUNCATION_NOTE.strip() in tiny.messages[-1]["content"]


# -- through the CLI -----------------------------------------------------------------------------

def run(args, env=None):
    result = CliRunner().invoke(app, args, env=env)
    return result


def test_cli_ask_json_without_model(ask_db, tmp_path):
    db = tmp_path / "c.db"
    shutil.copy(ask_db, db)
    result = run(["ask", "what is a craniotomy?", "--db", str(db), "--json"], env={"RAGCLI_MODEL": ""})
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    for field in ("question", "expanded_query", "answer", "status", "citations", "removed_citations",
                  "sources", "model", "timings", "claims"):
        assert field in data
    assert data["status"] == "extractive"
    for source in data["sources"]:
        for field in ("label", "kind", "book_id", "book_title", "section_path", "page_label", "page",
                      "score", "text"):
            assert field in source
    assert labels_in(data["answer"]) <= {s["label"] for s in data["sources"]}


def test_cli_ask_with_real_llama_cpp_strips_forced_invalid_citations(ask_db, tmp_path, tiny_gguf):
    db = tmp_path / "c.db"
    shutil.copy(ask_db, db)
    grammar = tmp_path / "forced.gbnf"
    grammar.write_text(forced_text_grammar(
        "The bone flap is lifted [S1]. Edema follows [S19] (p. 45). Ask [Source 7] or [S2, S30]."))
    result = run(["ask", "what is a craniotomy?", "--db", str(db), "--json", "--model", str(tiny_gguf),
                  "--grammar-file", str(grammar), "--no-expand", "--max-tokens", "160", "--ctx", "2048",
                  "--no-judge"])  # a random model's relevance verdicts are noise: the forced text is the test
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["status"] == "answered", data["warnings"]  # the forced text ends before 160 tokens
    given = {s["label"] for s in data["sources"]}
    assert labels_in(data["answer"]) <= given
    assert "[S19]" not in data["answer"] and "S30" not in data["answer"] and "(p. 45)" not in data["answer"]
    assert {"[S19]", "(p. 45)"} <= {r["text"] for r in data["removed_citations"]}
    assert data["model"]["path"].endswith("tiny.gguf")
    assert data["timings"]["prompt_tokens"] > 0


def test_cli_ask_model_errors_are_one_line(ask_db, tmp_path):
    db = tmp_path / "c.db"
    shutil.copy(ask_db, db)
    missing = run(["ask", "x y z", "--db", str(db), "--model", str(tmp_path / "nope.gguf")])
    assert missing.exit_code == 6 and "nope.gguf" in missing.stderr
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a model at all" * 10)
    bad = run(["ask", "x y z", "--db", str(db), "--model", str(junk)])
    assert bad.exit_code == 6 and "GGUF" in bad.stderr
    assert "Traceback" not in bad.output


def test_a_question_in_the_books_own_words_is_not_rewritten(conn, embedder):
    from ragcli.search import expansion as expand

    term = expand.candidates(conn, embedder, "cerebral edema", None)[0][0]  # a term of the sample book
    model = FakeChatModel(["The answer [S1]."] * 2)  # the answer; no rewrite
    answer = ask.ask(conn, embedder, term, model, ask.AskOptions())
    assert answer.expanded_query != "The answer [S1]."
    assert all(c["messages"][-1]["content"].startswith("Passages:") for c in model.calls)


def test_a_rewrite_in_other_words_is_kept_when_its_meaning_is_close():
    def close(a: str, b: str) -> float:
        return 0.4

    def far(a: str, b: str) -> float:
        return 0.1

    q = "did the bullet come out somewhere else?"
    assert clean_rewrite("entrance and exit wounds", q, [], close) == "entrance and exit wounds"
    assert clean_rewrite("entrance and exit wounds", q, [], far) is None


# -- the rewrite runs only when it can change retrieval (search/rewrite.py `needed`) ----------------

def test_the_rewrite_runs_only_for_a_question_with_a_word_the_books_lack(conn, embedder):
    from ragcli.search.rewrite import missing_words, needed
    from ragcli.store import corpus

    def in_corpus(w):
        return corpus.term_in_corpus(conn, w)

    # every content word is on some page of the sample book: no model call before the answer
    inside = "how is a ruptured aneurysm treated?"
    assert missing_words(inside, in_corpus) == [] and not needed(inside, in_corpus)
    model = FakeChatModel(["A ruptured aneurysm is clipped or coiled [S1]."])
    seen = []
    answer = ask.ask(conn, embedder, inside, model, ask.AskOptions(rewrite=True),
                     on_phase=lambda name, **i: seen.append(name))
    assert "rewrite" not in seen and answer.expanded_query != "A ruptured aneurysm is clipped or coiled [S1]."
    assert len(model.calls) == 1 and not model.calls[0]["constraint"]  # the answer's call only
    # a lay word the book never uses ("puff") lets it run first
    lay = "why does my head puff up after brain surgery?"
    assert missing_words(lay, in_corpus) == ["puff"] and needed(lay, in_corpus)
    model = FakeChatModel(["cerebral edema after craniotomy", "The brain swells [S1]."])
    answer = ask.ask(conn, embedder, lay, model, ask.AskOptions(rewrite=True))
    assert model.calls[0]["constraint"] and "Question: " + lay in model.calls[0]["messages"][-1]["content"]
    assert answer.expanded_query == "cerebral edema after craniotomy"


def test_contractions_and_possessives_are_no_missing_words():
    from ragcli.search.rewrite import missing_words

    book = {"eye", "swollen", "bleeding"}
    assert missing_words("He's bleeding and isn't awake, what's wrong with his eye's lid?",
                         lambda w: w in book) == ["awake", "wrong", "lid"]
    assert missing_words("I'm sure my eye’s swollen", lambda w: w in book) == ["sure"]


def test_a_slip_of_the_keys_is_searched_as_the_books_write_it(conn, embedder):
    """"vasopsasm" is no word the embedding model or FTS5 knows: ask searches with the books' word
    (ask.as_books_write), so the reader's slip finds what the word as the books spell it finds."""
    from ragcli.search.pipeline import SearchOptions, search

    slip, right = "How is vasopsasm treated?", "How is vasospasm treated?"
    assert ask.as_books_write(conn, embedder, slip) == right
    as_written = [h.passage_id for h in search(conn, embedder, slip, SearchOptions(k=5)).hits]
    mended = [h.passage_id for h in search(conn, embedder, right, SearchOptions(k=5)).hits]
    assert as_written != mended  # the slip alone searches elsewhere
    got = ask.ask(conn, embedder, slip, None, ask.AskOptions())
    want = ask.ask(conn, embedder, right, None, ask.AskOptions())
    assert [s.hit.passage_id for s in got.sources] == [s.hit.passage_id for s in want.sources]
    assert got.question == slip  # the reader's words are kept for the answer
