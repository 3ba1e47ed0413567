"""Citation validator: adversarial cases, false positives, and hypothesis properties."""
from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ragcli.answer.citations import MAX_HOLD, MAX_SPAN, StreamFilter, cited_labels, validate

VALID = {"S1", "S2", "S3", "F1"}
PAGES = {"45": ["S2"], "2-25": ["S3"], "7": ["S1"], "8": ["S3"]}
SECTIONS = {"Tourniquet": ["S3"], "2.1 Skull Anatomy": ["S1"]}
FIGURES = {"2-31": ["F1"]}


def run(text: str):
    return validate(text, VALID, page_labels=PAGES, section_titles=SECTIONS, figure_labels=FIGURES)


# (input, expected text, expected removed reasons)
CASES = [
    ("The skull is opened [S1].", "The skull is opened [S1].", []),
    ("Opened [S9].", "Opened.", ["unknown label"]),
    ("Group [S1, S3] here.", "Group [S1][S3] here.", []),
    ("Group [S1; S3] here.", "Group [S1][S3] here.", []),
    ("Range [S1-S3].", "Range [S1][S2][S3].", []),
    ("Range [S1–S3].", "Range [S1][S2][S3].", []),
    ("Short range [S1–3].", "Short range [S1][S2][S3].", []),
    ("Range past the end [S2-S4].", "Range past the end [S2][S3].", ["unknown label"]),
    ("Reversed [S3-S1].", "Reversed.", ["invalid range"]),
    ("Huge [S1-S99].", "Huge.", ["invalid range"]),
    ("Adjacent [S1][F1].", "Adjacent [S1][F1].", []),
    ("Adjacent bad [S1][F2].", "Adjacent bad [S1].", ["unknown label"]),
    ("Lower [s1].", "Lower [S1].", []),
    ("Spaced [S 1].", "Spaced [S1].", []),
    ("Zero padded [S01].", "Zero padded [S1].", []),
    ("Parens (S1).", "Parens [S1].", []),
    ("Parens group (S1, S2).", "Parens group [S1][S2].", []),
    ("Lenticular 【S1】.", "Lenticular [S1].", []),
    ("Full width ［S2］.", "Full width [S2].", []),
    ("Caret ^[S1].", "Caret [S1].", []),
    ("Caret bad ^[S7].", "Caret bad.", ["unknown label"]),
    ("Bare number [1].", "Bare number.", ["bare number"]),
    ("Bare list [1, 2] end", "Bare list end", ["bare number"] * 2),
    ("Wiki style.[3] Next.", "Wiki style. Next.", ["bare number"]),
    ("Source word [Source 2].", "Source word [S2].", []),
    ("Sources word [Sources 1, 2].", "Sources word [S1][S2].", []),
    ("Source colon (Source: S3).", "Source colon [S3].", []),
    ("Unknown source [Source 9].", "Unknown source.", ["unknown label"]),
    ("Ref [Ref 3].", "Ref.", ["ambiguous reference"]),
    ("Figure [Figure 1].", "Figure.", ["figure reference"]),
    ("Fig [Fig. 1].", "Fig.", ["figure reference"]),
    ("Known figure (see Fig. 2-31).", "Known figure [F1].", []),
    ("Mixed [S1, S9] kept.", "Mixed [S1] kept.", ["unknown label"]),
    ("Page (p. 45).", "Page [S2].", []),
    ("Page unknown (p. 99).", "Page unknown.", ["page reference"]),
    ("Page word (page 45).", "Page word [S2].", []),
    ("Page range (pp. 7-8).", "Page range [S1][S3].", []),
    ("Page range unknown (pp. 4-5).", "Page range unknown.", ["page reference"]),
    ("Printed label (p. 2–25).", "Printed label [S3].", []),
    ("Label and page [S1, p. 99].", "Label and page [S1].", ["page reference"]),
    ("Page then label (p. 45, S1).", "Page then label [S2][S1].", []),
    ("Figure then label (Fig. 9, S3).", "Figure then label [S3].", ["figure reference"]),
    ("And-joined (S1 and S2).", "And-joined [S1][S2].", []),
    ("Label in code `x[S9]` too", "Label in code `x` too", ["unknown label"]),
    ('Section (see Section "Tourniquet").', "Section [S3].", []),
    ("Section [Section: Tourniquet].", "Section [S3].", []),
    ("Section number [Section: Skull anatomy].", "Section number [S1].", []),
    ("Section unknown (see Section “Bleeding”).", "Section unknown.", ["section reference"]),
    ("Chapter (Chapter 3).", "Chapter.", ["section reference"]),
    ("Nested ([S9]).", "Nested.", ["unknown label"]),
    ("Nested see (see [S9]).", "Nested see.", ["unknown label"]),
    ("Nested keep (see [S1], [S9]).", "Nested keep [S1].", ["unknown label"]),
    ("Prose paren (as the text says [S9]) ok", "Prose paren (as the text says) ok", ["unknown label"]),
    ("Double [[S9]] gone", "Double gone", ["unknown label"]),
    ("Comma list [S1], [S9], [S8] and more", "Comma list [S1] and more", ["unknown label"] * 2),
    ("Clause [S1], [S9], then more", "Clause [S1], then more", ["unknown label"]),
    ("[S9] Starts the text.", "Starts the text.", ["unknown label"]),
    ("Ends the text [S9]", "Ends the text", ["unknown label"]),
    ("Para one [S9]\n\nPara two.", "Para one\n\nPara two.", ["unknown label"]),
    ("- item [S9]\n- item [S2]", "- item\n- item [S2]", ["unknown label"]),
    ("Two bad [S8] [S9] marks.", "Two bad marks.", ["unknown label"] * 2),
    ("Glued word[S9]next", "Glued wordnext", ["unknown label"]),
    ("Mark then paren [S1] (S9).", "Mark then paren [S1].", ["unknown label"]),
    ("Malformed [S1, see above].", "Malformed [S1].", ["malformed citation"]),
    ("Hidden label ([S9]S5)", "Hidden label", ["unknown label", "unknown label"]),
    ("Code `f([1, 2])` stays", "Code `f([1, 2])` stays", []),
]

FALSE_POSITIVES = [
    "He wrote it [sic] twice.",
    "Index x[1] and arr[0][2] in code.",
    "(see below) and (see above)",
    "Published (2019) in a journal.",
    "Give (60 mg) twice daily (1) or (2).",
    "(S)-ketamine and (R,S)-ketamine are enantiomers.",
    "The L5-S1 disc (L5–S1) and the (S1 root).",
    "(e.g., aspirin) and (i.e. the skull)",
    "Significant (p < 0.05) at (n = 45).",
    "A markdown [link](http://example.com/p.45).",
    "Checkboxes [ ] and [x] and [].",
    "Ratio 2:1 and x^2 and a^[note] b",
    "(see the section below)",
    "a (nested (paren) text) b",
    "Dr. Smith (Fig) [Sources] (pages)",
    "Unclosed [S9 bracket that goes on",
]


@pytest.mark.parametrize("text, expected, reasons", CASES)
def test_adversarial(text, expected, reasons):
    result = run(text)
    assert result.text == expected
    assert [r.reason for r in result.removed] == reasons


@pytest.mark.parametrize("text", FALSE_POSITIVES)
def test_ordinary_text_untouched(text):
    result = run(text)
    assert result.text == text
    assert result.removed == []


def test_removed_reports_the_mark_as_written():
    result = run("A (p. 99) b [S 9] c [S1, S9].")
    assert [(r.text, r.reason) for r in result.removed] == [
        ("(p. 99)", "page reference"), ("[S 9]", "unknown label"), ("S9", "unknown label")]
    assert result.text == "A b c [S1]."


def test_citations_in_order_of_first_use():
    result = run("b [S2]. a [S1, S2]. c (p. 8).")
    assert result.citations == ["S2", "S1", "S3"]


def test_page_and_section_need_tables():
    assert validate("Cut (p. 45).", VALID).text == "Cut."
    assert validate("Cut (see Section Tourniquet).", VALID).text == "Cut."


def test_mapped_labels_must_be_valid():
    result = validate("Cut (p. 45).", {"S1"}, page_labels={"45": ["S7"]})
    assert result.text == "Cut."


def test_valid_labels_given_in_bracket_form():
    assert validate("x [s1]", {"[S1]"}).text == "x [S1]"


def test_cited_labels():
    assert cited_labels("a [S2] b [S1][S2] c [F1, S3] [S9 x]") == ["S2", "S1", "F1", "S3"]


def test_stream_holds_back_open_bracket():
    stream = StreamFilter(VALID)
    assert stream.feed("The skull ") == "The skull"
    assert stream.feed("is cut [S") == " is cut"
    assert stream.feed("9") == ""
    assert stream.feed("]. Then") == ". Then"
    assert stream.flush() == ""
    assert [r.text for r in stream.removed] == ["[S9]"]


def test_stream_releases_long_bracket():
    stream = StreamFilter(VALID)
    out = stream.feed("x [" + "a" * MAX_HOLD)
    assert out.startswith("x [a")
    assert out + stream.feed("] y") + stream.flush() == "x [" + "a" * MAX_HOLD + "] y"


def test_long_bracket_is_prose_but_inner_marks_are_checked():
    long = "(" + "word " * 20 + "[S9] [S1])"
    assert validate(long, VALID).text == "(" + "word " * 20 + "[S1])"
    assert validate("[S9, " + "x" * MAX_SPAN + "]", VALID).text == "[S9, " + "x" * MAX_SPAN + "]"


def test_nul_characters_are_blanks_inside_marks():
    assert validate("[\0] [\0S9] (\0S1)", VALID).text == "[\0] [S1]"


# ---------------------------------------------------------------- properties

LABEL = r"[SsFf]\s*0*\d+"
SEP = r"\s*(?:[,;&/]|and\b)\s*"
SQUARE_LIKE = re.compile(rf"^\s*\^?\s*(?:(?:sources?|src)\s*:?\s*)?({LABEL})\s*(?:$|[,;&/]|and\b|[-–])", re.I)
PAREN_LIKE = re.compile(rf"^\s*(?:(?:sources?|src)\s*:?\s*)?{LABEL}(?:{SEP}{LABEL})*\s*$", re.I)
INNER = r"[^\[\]【】［］()\n]{0,%d}" % (MAX_SPAN - 2)
SPAN = re.compile(rf"(\[)({INNER})\]|(【)({INNER})】|(［)({INNER})］|(\()({INNER})\)")


def citation_like_labels(text: str) -> list[str]:
    """Every label that a reader would take for a citation in text (a broad, independent check)."""
    found = []
    for m in SPAN.finditer(text):
        opener, content = [g for g in m.groups() if g is not None]
        shape = PAREN_LIKE if opener == "(" else SQUARE_LIKE
        if shape.match(content):
            found += [re.sub(r"\s|^0+", "", x).upper() for x in re.findall(LABEL, content)]
    return [re.sub(r"^([SF])0*", r"\1", lab) for lab in found]


FRAGMENTS = [
    "the", "skull", "is", "opened", "Dr.", "2.5 mg", "e.g.", " ", " ", "  ", "\n", "\n\n", ".", ",", ";",
    "(", ")", "[", "]", "^", "【", "】", "`", "-", "–", "S", "1", "9", "x", "see", "and",
    "[S1]", "[S2]", "[F1]", "[S9]", "[F4]", "[s3]", "[S 2]", "(S1)", "(S7)", "【S2】", "^[S1]", "^[S8]",
    "[S1, S9]", "[S1-S3]", "[S2–S6]", "[1]", "[2, 3]", "x[1]", "[Source 2]", "[Sources 1, 12]",
    "[Ref 3]", "[Figure 1]", "[Fig. 2]", "(p. 45)", "(page 99)", "(pp. 4-5)", '(see Section "Tourniquet")',
    "[Section: Bleeding]", "(see [S9])", "([S9])", "[S1][F2]", "[sic]", "(see below)", "(2019)",
    "(60 mg)", "(S)-ketamine", "(L5-S1)", "[S9, see text]",
]
texts = st.one_of(
    st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join),
    st.text(alphabet="[]()【】^SsF19 ,;-–.\n`xp", max_size=60),
)
FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(texts)
def test_no_invalid_citation_survives(text):
    out = run(text).text
    assert set(citation_like_labels(out)) <= VALID
    assert set(re.findall(r"\[([A-Z]\d+)\]", out)) <= VALID


@FAST
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.sampled_from(sorted(VALID)).map(lambda x: [x])),
                max_size=30))
def test_valid_citations_survive(pieces):
    labels = [p[0] for p in pieces if isinstance(p, list)]
    text = "".join(f" [{p[0]}] " if isinstance(p, list) else p for p in pieces)
    result = run(text)
    for lab in labels:
        assert f"[{lab}]" in result.text
        assert lab in result.citations


@FAST
@given(texts, st.lists(st.integers(min_value=0, max_value=80), max_size=12))
def test_stream_equals_batch(text, cuts):
    batch = run(text)
    stream = StreamFilter(VALID, page_labels=PAGES, section_titles=SECTIONS, figure_labels=FIGURES)
    pieces, last = [], 0
    for cut in sorted(c for c in cuts if c <= len(text)) + [len(text)]:
        pieces.append(stream.feed(text[last:cut]))
        last = cut
        assert set(citation_like_labels("".join(pieces))) <= VALID
    pieces.append(stream.flush())
    assert "".join(pieces) == batch.text
    assert stream.removed == batch.removed
    assert stream.citations == batch.citations


@FAST
@given(texts)
@example("[1[1")  # half marks one after another at the end: all go at once
@example("【e.g.^[S8]")  # a half mark whose inner mark is removed: judged on what is left
def test_idempotent(text):
    once = run(text)
    twice = run(once.text)
    assert twice.text == once.text
    assert twice.removed == []


@FAST
@given(texts)
def test_no_double_spaces_created(text):
    out = run(text).text
    assert "  " not in out or "  " in text
    assert "()" not in out or "()" in text
    assert "[]" not in out or "[]" in text
