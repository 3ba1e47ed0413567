"""Where the answers that are not correct are lost, question by question (issue 34's accounting).

    python bench/answers/loss_accounting.py --db CERT.db --run RUN.jsonl [--run RUN2.jsonl] \
        --answers bench/answers/cert-answers.jsonl --labels bench/answers/labels/cert-s13.jsonl

For each answerable question of a bench_answers run and its hand label (system ragcli): whether a passage
on the question's listed pages was among the prompt's sources (and under which labels); for a partial or
wrong answer, whether its sentences come (by word overlap) from such a passage or from another one. Causes:
retrieval (no answer passage in the prompt), withheld, a fact short or a stray step, copied another
passage, misread the answer passage.
"""
import argparse
import collections
import json
import re
import sqlite3

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--db", required=True)
ap.add_argument("--run", action="append", required=True)
ap.add_argument("--answers", required=True)
ap.add_argument("--labels", required=True)
a = ap.parse_args()
db, answers, labels = a.db, a.answers, a.labels
c = sqlite3.connect(db)
P = {r[0]: (r[1], r[2], r[3]) for r in c.execute("select id, page_start, page_end, text from passages")}
Q = {json.loads(l)['id']: json.loads(l) for l in open(answers) if l.strip()}
L = {json.loads(l)['id']: json.loads(l) for l in open(labels)
     if l.strip() and json.loads(l)['system'] == 'ragcli'}
W = lambda t: set(re.findall(r"[a-z0-9]+", t.lower()))
causes = collections.Counter()
for l in (line for path in a.run for line in open(path)):
    r = json.loads(l); x = r['ragcli']; q = Q[r['id']]
    if not q['answerable']: continue
    pages = set(q.get('pages') or [])
    lab = L[r['id']]['label']
    prompt_n = len(x.get('blocks') or []) or 6
    srcs = x['sources'][:prompt_n]
    ids = [int(s.split('#')[-1]) for s in srcs]
    on = [s.split()[0] for s, i in zip(srcs, ids) if i in P and any(p in pages for p in range(P[i][0], P[i][1] + 1))]
    if lab == 'correct':
        cause = 'correct'
    elif not on:
        cause = 'retrieval: no passage of the answer pages in the prompt'
    elif lab == 'refused':
        cause = 'withheld (answer passage in the prompt)'
    else:
        # where the answer's sentences come from
        sent = [s for s in re.split(r'(?<=[.!?])\s+', re.sub(r'\[[SF]\d+\]', '', x['answer'])) if len(s.split()) > 3]
        from_answer = 0
        for s in sent:
            ws = W(s)
            best = max(((len(ws & W(P[i][2])) / max(1, len(ws)), i) for i in ids if i in P), default=(0, None))
            if best[1] is not None and any(p in pages for p in range(P[best[1]][0], P[best[1]][1] + 1)):
                from_answer += 1
        if lab == 'partial':
            cause = 'a fact short or a stray step (answer passage in the prompt)' if from_answer else 'partial, copied another passage'
        else:
            cause = 'misread the answer passage' if sent and from_answer == len(sent) else 'distraction: copied another passage'
    causes[cause] += 1
    print(f"{r['id']:10s} {lab:8s} answer-page labels in prompt: {','.join(on) or '-':12s} {cause}")
print(dict(causes))
