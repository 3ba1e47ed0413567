"""Check bench/retrieval/fm4-25-11-questions.jsonl against the FM 4-25.11 PDF.

Usage:
    python bench/retrieval/make_questions_check.py PATH/TO/fm4-25-11-first-aid.pdf [--quiet] [--baseline]

For every question it prints the first 200 characters of each answer page and verifies:
  * the JSON record is well formed (id, question, type lay|exact, book, pages, page_labels, answer_hint);
  * each entry of page_labels equals the label printed on that physical page (the PDF has no
    /PageLabels, so the printed label is read from the page text: its first non-empty line);
  * each answer page contains the verbatim anchor phrase recorded below for it (the phrase that was
    read on that page when the set was made), so every page in a set is justified by its text;
  * no answer page is in the glossary or index, and the set has >= 45 lay and >= 12 exact questions.
Exit code 0 when everything matches, 1 otherwise.

--baseline additionally reports page-level hit@1/hit@5 of two naive retrievers over whole pages
(BM25 and all-MiniLM-L6-v2 via ragcli.models.embed), as a reference point for `ragcli eval retrieval`.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import Counter
from pathlib import Path

QUESTIONS = Path(__file__).resolve().parent / "fm4-25-11-questions.jsonl"
LABEL_RE = re.compile(r"^(?:[1-8AB]-\d+|(?:Glossary|References|Index)-\d+)$")
BACK_MATTER = ("Glossary-", "Index-")
REQUIRED = ("id", "question", "type", "book", "pages", "page_labels", "answer_hint")
MIN_LAY, MIN_EXACT = 45, 12

# Verbatim phrase read on each answer page when the set was made: question id -> {physical page: phrase}.
# fmt: off
ANCHORS: dict[str, dict[int, str]] = {
    'lay-01': {28: 'rescue breathing (artificial respiration) must be started', 29: 'Mouth-to-Mouth Method', 30: 'Blow two full breaths', 31: 'After giving two slow breaths'},
    'lay-02': {27: 'LOOK for the chest to rise and fall', 28: 'LISTEN for sounds of breathing'},
    'lay-03': {25: 'The tongue is the single most common cause of an airway obstruction', 26: 'Perform the jaw-thrust technique', 27: 'Perform the head-tilt/chin-lift technique', 29: 'maintain the backward head tilt'},
    'lay-04': {33: 'universal choking sign', 34: 'Apply abdominal thrusts', 35: 'Each thrust should be a separate and distinct movement'},
    'lay-05': {34: 'advanced stages of pregnancy', 35: 'Apply chest thrusts', 36: 'Each thrust should be delivered slowly'},
    'lay-06': {36: 'a casualty who is lying down, who becomes unconscious', 37: 'Kneel astride the casualty'},
    'lay-07': {39: 'tongue-jaw lift', 40: 'Use a hooking motion'},
    'lay-08': {14: 'The common points for checking the pulse', 15: 'Radial pulse'},
    'lay-09': {31: 'you must immediately seek medical help', 32: 'there is no pulse at all'},
    'lay-10': {43: 'direct manual pressure may be used', 44: 'Elevate an injured limb slightly above the level of the heart'},
    'lay-11': {44: 'Place a wad of padding on top of the field dressing', 45: 'Wrap the ends tightly around the injured limb', 46: 'The dressing must be loosened if the extremity becomes cool, blue, or numb'},
    'lay-12': {46: 'pressure points', 47: 'Digital pressure (pressure with fingers'},
    'lay-13': {45: 'or if the limb is severed, then apply a tourniquet', 47: 'a tourniquet should be applied anyway', 48: 'after a period of time bleeding will start'},
    'lay-14': {48: 'Improvising a Tourniquet', 49: 'Tie a half-knot', 50: 'Twist the stick', 51: 'DO NOT cover the tourniquet'},
    'lay-15': {41: 'DO NOT remove the object'},
    'lay-16': {41: 'The EXIT wound is usually LARGER'},
    'lay-17': {19: 'nine signs and symptoms of shock', 20: 'Faster than normal breathing rate', 52: 'Signs and Symptoms of Shock', 53: 'Weak and rapid pulse'},
    'lay-18': {53: 'First Aid Measures for Shock', 54: 'Loosen clothing at the neck, waist', 55: 'DO NOT give the casualty any food or drink'},
    'lay-19': {22: 'Unequal pupils', 56: 'signs and symptoms a first aid provider might observe', 57: 'unequal pupils, or bruising'},
    'lay-20': {58: 'brain concussion', 59: 'transported to an MTF as soon as conditions permit'},
    'lay-21': {59: 'DO NOT force anything between the casualty'},
    'lay-22': {58: 'push any brain matter back', 59: 'loose moistened dressing'},
    'lay-23': {60: 'sucking sound', 61: 'Place the Wrapper Over the Wound', 62: 'tape three sides of the plastic wrapper', 63: 'Position the casualty on his injured side'},
    'lay-24': {64: 'tension pneumothorax'},
    'lay-25': {65: 'DO NOT push organs back inside the body'},
    'lay-26': {64: 'knees in an upright (flexed) position', 67: 'DO NOT give casualties with abdominal wounds food or water'},
    'lay-27': {68: 'roll the casualty on the ground'},
    'lay-28': {68: 'nonconductive material', 69: 'High voltage electrical burns'},
    'lay-29': {71: 'DO NOT break the blisters'},
    'lay-30': {69: 'Remove liquid chemicals by flushing', 71: 'flush the burns with large amounts of water and cover with a dry dressing'},
    'lay-31': {79: 'flush the eye for at least 20 minutes'},
    'lay-32': {69: 'When WP strikes the skin, smother with a wet cloth or mud', 71: 'For burns caused by WP', 168: 'If burning WP strikes your skin'},
    'lay-33': {70: 'remove jewelry if possible'},
    'lay-34': {78: 'extruded eyeball'},
    'lay-35': {78: 'when one eyeball is injured, you should immobilize both eyes', 79: 'both eyes are usually bandaged'},
    'lay-36': {79: 'arc welding'},
    'lay-37': {82: 'pinching the nostrils together'},
    'lay-38': {82: 'DO NOT attempt to stop the flow from the inner ear canal'},
    'lay-39': {74: 'Apply a dressing to a wound on top of the head', 75: 'Wrap one tail down under the chin', 76: 'Cross the tails'},
    'lay-40': {83: 'Apply a cravat bandage to the jaw', 84: 'immobilize a fractured jaw', 105: 'cannot be laid flat on their backs'},
    'lay-41': {95: 'DO NOT ATTEMPT TO PUSH THE BONE BACK', 96: 'If it is an open fracture, stop the bleeding'},
    'lay-42': {21: 'Check for closed fractures by looking for', 92: 'Indications of a fracture are deformity'},
    'lay-43': {92: 'Splints may be improvised from such items as boards', 93: 'Bandages may be improvised from belts', 103: 'Improvised splints applied to fractured lower leg or ankle', 104: 'Uninjured leg used as splint for fractured leg'},
    'lay-44': {93: 'a sling can be improvised by using the tail of a coat or shirt', 97: 'Shirttail used for support', 98: 'tie them at the side (or hollow) of the neck'},
    'lay-45': {105: 'immobilize a fractured collarbone'},
    'lay-46': {91: 'A dislocation is when a joint', 106: 'fractured or dislocated shoulder'},
    'lay-47': {91: 'Dislocations and sprains'},
    'lay-48': {20: 'Immobilize any casualty suspected of having a back or neck injury', 106: 'does not have feeling in his legs'},
    'lay-49': {21: 'put weighted boots', 108: 'A fractured neck is extremely dangerous', 109: 'boots filled with dirt, sand'},
    'lay-50': {113: 'Cramping is caused by an imbalance of chemicals', 114: 'Abdominal (stomach) cramps', 117: 'HEAT CRAMPS'},
    'lay-51': {114: 'heat exhaustion', 115: 'pour water on him and fan him', 117: 'EXHAUSTION HEAVY SWEATING WITH PALE'},
    'lay-52': {116: 'red (flushed), hot, and dry', 117: 'STOPS SWEATING', 118: 'START COOLING THE CASUALTY IMMEDIATELY'},
    'lay-53': {120: 'putting fingertips in armpits', 122: 'Sudden blanching (whitening)', 123: 'Place the affected hands under the', 128: 'FROSTBITE'},
    'lay-54': {121: 'Immersion foot and trench foot', 122: 'DO NOT massage the injured part', 128: 'IMMERSION'},
    'lay-55': {120: 'Chilblain is caused by repeated', 121: 'itchy skin', 128: 'CHILBLAIN'},
    'lay-56': {126: 'rewarming the body evenly', 127: 'accidental breakthrough into ice water', 129: 'HYPOTHERMIA', 130: 'WARM (NOT HOT) LIQUIDS'},
    'lay-57': {124: 'Snow blindness is the effect that glare', 129: 'COVER THE EYES'},
    'lay-58': {125: 'symptoms of cold weather dehydration', 129: 'DEHYDRATION SIMILAR TO HEAT EXHAUSTION'},
    'lay-59': {135: 'TREAT ALL SNAKEBITES AS POISONOUS', 136: 'constricting band', 137: 'immobilize it at a level below the heart', 142: 'SNAKEBITE', 143: 'IMMOBILIZE THE AFFECTED PART'},
    'lay-60': {136: 'DO NOT attempt to cut open the bite nor suck out the venom'},
    'lay-61': {133: 'Red on yellow will kill a fellow'},
    'lay-62': {134: 'drooping eyelids'},
    'lay-63': {137: 'Animal Bites', 138: 'Transport the casualty immediately'},
    'lay-64': {138: 'Gently remove the clinging tentacles'},
    'lay-65': {138: 'soaking the wounds in hot water', 139: 'scald'},
    'lay-66': {140: 'anaphylactic shock', 141: 'In more serious reactions', 142: 'life-threatening event', 144: 'IF ALLERGIC SIGNS OR SYMPTOMS APPEAR'},
    'lay-67': {141: 'remove the stinger by scraping', 143: 'REMOVE BY SCRAPING WITH A KNIFE OR FINGERNAIL'},
    'lay-68': {141: 'Venom from the black widow spider affects the nervous system', 143: 'BLACK WIDOW'},
    'lay-69': {140: 'Scorpions are rare and their stings', 143: 'SCORPION'},
    'lay-70': {150: 'put on the protective mask and then inject yourself', 151: 'Sudden drooling', 152: 'Respiratory failure'},
    'lay-71': {163: 'mustard agents are deceptive', 164: 'If blisters form, cover them loosely'},
    'lay-72': {165: 'newly mown hay'},
    'lay-73': {166: 'bitter almonds'},
    'lay-74': {169: 'yellow rain', 170: 'Should severe itching of the face become unbearable'},
    'lay-75': {149: 'If vomiting occurs, the mask should be lifted momentarily', 164: 'If vomiting occurs', 171: 'If vomiting occurs'},
    'lay-76': {171: 'radiation illness'},
    'lay-77': {167: 'anticholinergic', 168: 'DO NOT use ice for cooling the skin'},
    'lay-78': {173: 'Painful memories and dreams may recur', 177: 'nightmares, in themselves, are not considered abnormal', 178: 'likely to have dreams about the stressful event'},
    'lay-79': {177: 'Try to remain calm', 178: 'Encourage him to talk'},
    'lay-80': {180: 'THOUSAND-YARD STARE', 181: 'LET SERVICE MEMBER TALK ABOUT HIS FEELINGS'},
    'lay-81': {197: 'best one-man carry for a long distance', 198: 'Pistol-belt carry'},
    'lay-82': {200: 'cradle drop drag', 201: 'Cradle-drop drag'},
    'lay-83': {211: 'Litter made with blanket and poles', 212: 'Fold the free edges of the blanket'},
    'lay-84': {207: 'safest one for transporting a casualty with a back injury', 208: 'Two-man arms carry'},
    'lay-85': {24: 'cautiously roll the casualty as a unit', 25: 'Roll the casualty towards you', 189: 'To roll a casualty onto his back'},
    'lay-86': {86: 'Place the hand in the middle of the triangular bandage', 87: 'tuck any excess material into the pleats'},
    'lay-87': {184: 'To improvise a triangular bandage'},
    'exact-01': {48: 'Improvising a Tourniquet', 49: 'Applying the Tourniquet', 50: 'Full knot over rigid object', 51: 'DO NOT cover the tourniquet'},
    'exact-02': {114: 'signs and symptoms of heat exhaustion', 115: 'pour water on him and fan him', 117: 'EXHAUSTION HEAVY SWEATING WITH PALE'},
    'exact-03': {123: 'Face, ears, and nose', 124: 'Use ointments or other salves', 128: 'FROSTBITE', 129: 'DO NOT ATTEMPT TO THAW'},
    'exact-04': {96: 'Check the Splint for Tightness'},
    'exact-05': {29: 'Mouth-to-Mouth Method', 30: 'Blow two full breaths', 31: 'After giving two slow breaths'},
    'exact-06': {44: 'Pressure Dressing', 45: 'Wrap the ends tightly around the injured limb', 46: 'The dressing must be loosened if the extremity becomes cool, blue, or numb'},
    'exact-07': {116: 'Heatstroke is caused by a failure of the body', 117: 'HEATSTROKE', 118: 'START COOLING THE CASUALTY IMMEDIATELY'},
    'exact-08': {126: 'first aid measures for hypothermia', 127: 'strip the casualty of wet clothing', 129: 'MILD HYPOTHERMIA', 130: 'SEVERE HYPOTHERMIA'},
    'exact-09': {27: 'Perform the head-tilt/chin-lift technique', 29: 'Head tilt/chin lift'},
    'exact-10': {26: 'Perform the jaw-thrust technique'},
    'exact-11': {34: 'Heimlich maneuver', 35: 'Continue performing abdominal thrusts', 37: 'To perform the abdominal thrusts'},
    'exact-12': {150: 'inject yourself with one set of the MARK I', 152: 'Self-Administer MARK I', 153: 'INJECT ATROPINE AT', 154: 'Removing the atropine autoinjector from the MARK I clip', 155: 'DO NOT give yourself another set of injections'},
    'exact-13': {121: 'Immersion syndrome (immersion foot and trench foot)', 122: 'When providing first aid for immersion foot and trench foot', 128: 'IMMERSION'},
    'exact-14': {61: 'occlusive dressing', 62: 'tape three sides of the plastic wrapper', 63: 'Tie the tails into a square knot in the center of the dressing'},
    'exact-15': {191: 'fireman', 192: 'Figure B-3.', 193: 'Figure B-3.', 194: 'alternate method of the fireman'},
    'exact-16': {140: 'anaphylactic shock', 142: 'anaphylactic shock (a shock caused by a severe allergic reaction)'},
    'exact-17': {46: 'Digital Pressure', 47: 'Figure 2-31. Digital pressure'},
    'exact-18': {175: 'Combat and Other Operational Stress Reactions', 176: 'The most obvious combat stress reaction (CSR) is inefficient performance'},
    'exact-19': {120: 'Chilblain', 121: 'Rewarm the affected part by applying firm steady pressure', 128: 'CHILBLAIN'},
    'exact-20': {133: 'Pit viper bites are characterized by severe burning pain'},
    'exact-21': {42: 'Field Dressing', 43: 'Tie the tails into a nonslip knot'},
    'exact-22': {147: 'Conditions for Masking Without Order or Alarm', 148: 'Service members suddenly collapsing without evident cause'},
    'exact-23': {163: 'Blister agents (vesicants)', 164: 'Use your M291 Skin Decontaminating Kit'},
    'exact-24': {19: 'nine signs and symptoms of shock', 20: 'Blotchy or bluish skin', 52: 'Signs and Symptoms of Shock', 53: 'Weak and rapid pulse'},
    'exact-25': {86: 'Elbow Bandage'},
    'exact-26': {124: 'Snow blindness', 129: 'SNOW'},
    'exact-27': {197: 'pistol-belt carry', 198: 'Lie face up between the casualty'},
}
# fmt: on


def normalise(text: str) -> str:
    """Lower-case, straight quotes, one space between words (lines joined)."""
    for a, b in (("\u2019", "'"), ("\u2018", "'"), ("\u201c", '"'), ("\u201d", '"')):
        text = text.replace(a, b)
    return re.sub(r"\s+", " ", " ".join(line.strip() for line in text.splitlines())).strip().lower()


def printed_label(page_text: str) -> str:
    """The page label printed on the page ("2-25", "B-4", "Index-1"), or "" when there is none."""
    for line in page_text.splitlines():
        if line.strip():
            first = line.strip()
            return first if LABEL_RE.match(first) else ""
    return ""


def load_questions(path: Path = QUESTIONS) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def check_record(q: dict, texts: list[str]) -> list[str]:
    """Problems with one question record (empty list when it is right)."""
    missing = [k for k in REQUIRED if k not in q]
    if missing:
        return [f"missing fields {missing}"]
    errs = []
    if q["type"] not in ("lay", "exact"):
        errs.append(f"bad type {q['type']!r}")
    if q["book"] != "fm4-25-11":
        errs.append(f"bad book {q['book']!r}")
    pages, labels = q["pages"], q["page_labels"]
    if not pages or len(pages) != len(labels):
        return errs + ["pages and page_labels empty or of different length"]
    if sorted(set(pages)) != pages:
        errs.append("pages not sorted/unique")
    anchors = ANCHORS.get(q["id"], {})
    if set(anchors) != set(pages):
        errs.append(f"anchor pages {sorted(anchors)} != pages {pages}")
    for page, label in zip(pages, labels):
        if not 1 <= page <= len(texts):
            errs.append(f"page {page} out of range")
            continue
        printed = printed_label(texts[page - 1])
        if printed != label:
            errs.append(f"page {page}: label {label!r} but printed {printed!r}")
        if printed.startswith(BACK_MATTER):
            errs.append(f"page {page} is glossary/index")
        anchor = anchors.get(page)
        if anchor and normalise(anchor) not in normalise(texts[page - 1]):
            errs.append(f"page {page}: anchor not found: {anchor!r}")
    return errs


def check_all(questions: list[dict], texts: list[str], quiet: bool = False) -> int:
    """Print each question with its pages; return the number of problems found."""
    problems = 0
    ids = Counter(q.get("id") for q in questions)
    for qid, n in ids.items():
        if n > 1:
            print(f"DUPLICATE id {qid}")
            problems += 1
    for q in questions:
        errs = check_record(q, texts)
        problems += len(errs)
        if not quiet or errs:
            print(f"\n[{q.get('id')}] ({q.get('type')}) {q.get('question')}")
            print(f"  hint: {q.get('answer_hint')}")
            for page, label in zip(q.get("pages", []), q.get("page_labels", [])):
                if 1 <= page <= len(texts):
                    head = normalise(texts[page - 1])[:200]
                    print(f"  p{page} [{label}] {head}")
        for e in errs:
            print(f"  ERROR: {e}")
    counts = Counter(q.get("type") for q in questions)
    print(f"\n{len(questions)} questions: {counts.get('lay', 0)} lay, {counts.get('exact', 0)} exact")
    if counts.get("lay", 0) < MIN_LAY or counts.get("exact", 0) < MIN_EXACT:
        print(f"ERROR: need >= {MIN_LAY} lay and >= {MIN_EXACT} exact questions")
        problems += 1
    return problems


def _tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def bm25_rank(query: str, docs: list[list[str]], k1: float = 1.2, b: float = 0.75) -> list[int]:
    """Indices of docs ordered by BM25 score for query (plain Okapi BM25)."""
    n = len(docs)
    avg = sum(len(d) for d in docs) / max(n, 1)
    df = Counter(t for d in docs for t in set(d))
    tfs = [Counter(d) for d in docs]
    scores = []
    for d, tf in zip(docs, tfs):
        s = 0.0
        for t in set(_tokens(query)):
            if t in tf:
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                s += idf * tf[t] * (k1 + 1) / (tf[t] + k1 * (1 - b + b * len(d) / avg))
        scores.append(s)
    return sorted(range(n), key=lambda i: -scores[i])


def _hits(ranked: list[list[int]], questions: list[dict], kind: str) -> str:
    sel = [(r, q) for r, q in zip(ranked, questions) if q["type"] == kind]
    h1 = sum(r[0] + 1 in q["pages"] for r, q in sel) / max(len(sel), 1)
    h5 = sum(any(p + 1 in q["pages"] for p in r[:5]) for r, q in sel) / max(len(sel), 1)
    return f"{kind}: hit@1 {h1:.2f} hit@5 {h5:.2f} (n={len(sel)})"


def baseline(questions: list[dict], texts: list[str]) -> None:
    """Naive whole-page retrievers over every page of the PDF, for reference."""
    docs = [_tokens(t) for t in texts]
    bm = [bm25_rank(q["question"], docs) for q in questions]
    print("BM25 pages      ", _hits(bm, questions, "lay"), "|", _hits(bm, questions, "exact"))
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from ragcli.models.embed import get_embedder

    emb = get_embedder()
    pv = emb.embed([normalise(t) or " " for t in texts])
    qv = emb.embed([q["question"] for q in questions])
    dense = [list((-(pv @ v)).argsort()) for v in qv]
    print("MiniLM pages    ", _hits(dense, questions, "lay"), "|", _hits(dense, questions, "exact"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pdf", help="path to fm4-25-11-first-aid.pdf")
    ap.add_argument("--questions", default=str(QUESTIONS), help="JSONL file to check")
    ap.add_argument("--quiet", action="store_true", help="print only problems and the summary")
    ap.add_argument("--baseline", action="store_true", help="also report naive page retrieval hit@k")
    args = ap.parse_args(argv)
    import pymupdf

    with pymupdf.open(args.pdf) as doc:
        texts = [page.get_text() for page in doc]
    questions = load_questions(Path(args.questions))
    problems = check_all(questions, texts, quiet=args.quiet)
    if args.baseline:
        baseline(questions, texts)
    print("OK: all page sets and labels match" if not problems else f"FAILED: {problems} problem(s)")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
