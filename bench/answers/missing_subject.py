"""Does `book_words.missing_subject` tell a question about what the books never name ("migraine") from a
lay word for what they do name ("a deep gash")? For every question word no page of the corpus uses,
the cosine of the question without the word to the question with it (MiniLM): under
`book_words.SUBJECT_COSINE` the word carries much of the question, and ask answers `no_context`.

    python bench/answers/missing_subject.py --db fm.db [--answers bench/answers/fm4-25-11-answers.jsonl] [--type lay]

`--answers` takes any question set of bench/ (a row without `answerable` is answerable: the FM
question set bench/retrieval/fm4-25-11-questions.jsonl); `--type lay` keeps its rows of that `type`.

Prints the answer set's questions that have such words, then 24 questions written after the
threshold was chosen (12 the manual answers in lay words, 12 it does not answer), and how many of each
side fall under the threshold."""
from __future__ import annotations

import argparse
import json

HELD_OUT_ANSWERABLE = [
    "My buddy got stung by a wasp and his arm is puffing up. What do I do?",
    "He twisted his ankle jumping off the truck, how do I wrap it?",
    "Someone's lips are turning blue and he's barely breathing, what do I do?",
    "There's grit in his eye, should I rub it?",
    "He chugged something from an unlabeled bottle and is puking, what now?",
    "My pal's nose won't stop gushing blood, what do I do?",
    "His shin bone is poking out of the skin after a motorbike wreck, what now?",
    "He's shivering like crazy and mumbling after falling in an icy creek. What do I do?",
    "A scorpion got my buddy on the foot. What should I do?",
    "He got hit in the gut by shrapnel and his guts are hanging out, what do I do?",
    "My friend fainted in formation, what should I do?",
    "He has a splinter of wood jammed in his palm, should I yank it out?",
]
HELD_OUT_UNANSWERABLE = [
    "How do I treat a jellyfish sting?", "What should I do for someone having a diabetic low sugar episode?",
    "How do I give insulin to a diabetic?", "What do I do for a migraine?",
    "How do I care for a newborn's umbilical cord?", "What should I do for a toothache?",
    "How do I treat a poison ivy rash?", "How do I treat a dog with heatstroke?",
    "What should I do for a child with a high fever?", "How do I manage someone's epilepsy medication?",
    "How do I treat sunburn on a baby?", "What do I do if someone overdoses on heroin?",
]


def main() -> None:
    from ragcli.answer import book_words
    from ragcli.models.embed import get_embedder
    from ragcli.store import corpus, db

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--answers", default="bench/answers/fm4-25-11-answers.jsonl")
    ap.add_argument("--type", default=None, help="keep only the rows of this `type` (FM: lay, exact)")
    args = ap.parse_args()
    conn, embedder = db.connect(args.db), get_embedder()
    in_books = lambda w: corpus.term_in_corpus(conn, w)  # noqa: E731
    rows = [json.loads(line) for line in open(args.answers) if line.strip()]
    rows = [r for r in rows if args.type is None or r.get("type") == args.type]
    sets = {"answer set": [(r["question"], r.get("answerable", True)) for r in rows],
            "held out": [(q, True) for q in HELD_OUT_ANSWERABLE] + [(q, False) for q in HELD_OUT_UNANSWERABLE]}
    for name, questions in sets.items():
        caught = {True: 0, False: 0}
        total = {True: 0, False: 0}
        print(f"## {name} (threshold {book_words.SUBJECT_COSINE})")
        for question, answerable in questions:
            total[answerable] += 1
            cos = book_words.subject_weights(question, in_books, embedder)
            if not cos:
                continue
            low = cos[0][0] < book_words.SUBJECT_COSINE
            caught[answerable] += low
            side = "answerable  " if answerable else "unanswerable"
            print(f"{side} {cos[0][0]:.3f} {'CAUGHT ' if low else '       '}{question[:70]}  {cos}")
        print(f"under the threshold: answerable {caught[True]}/{total[True]}, "
              f"unanswerable {caught[False]}/{total[False]}\n")


if __name__ == "__main__":
    main()
