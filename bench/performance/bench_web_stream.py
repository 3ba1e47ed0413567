"""What the page costs a streamed answer: the same question asked on the page `ragcli serve` serves
at / (typed and sent in a real headless chromium, timed on the page: to the first answer text shown and
to the finished answer rendered with its badges, marks and cards) and through /v1/chat/completions
streamed (read by a fetch in the same page: to the first content delta and to [DONE]), interleaved,
tiny model, the output forced by a GBNF grammar so both ways generate the same text. Bar (issues 36
and 46): page / chat-completions <= 1.1 for both times, medians of --n runs. On the page the first
text is the draft (labelled, dimmed); the last is the checked answer rendered.

    python bench/performance/bench_web_stream.py [--db corpus.db] [--n 10] [--cache DIR]

Without --db the sample book is ingested into a temporary corpus first. Needs chromium and
chromedriver (apt-get install chromium chromium-driver) and selenium. Traffic goes to 127.0.0.1 only.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from web_common import forced_server  # noqa: E402

FORCED = "The bone flap is lifted [S1]. The artery is clipped at its neck [S2]. Edema follows the operation [S1]."
QUESTION = "what happens after a craniotomy?"  # its prompt holds S1 and S2

PAGE_ASK = """
const done = arguments[arguments.length - 1];
document.getElementById('new-conversation').click();
const turns = document.getElementById('turns');
let first = null;
const t0 = performance.now();
const watch = new MutationObserver(() => {
  const last = turns.lastElementChild;
  if (!last) return;
  const draft = last.querySelector('.draft');
  const text = draft && draft.querySelector('.draft-text');
  if (first === null && text && text.textContent) first = performance.now() - t0;
  if (!draft && last.querySelector('.status')) { watch.disconnect(); done([first, performance.now() - t0]); }
});
watch.observe(turns, {childList: true, subtree: true, characterData: true});
document.getElementById('question').value = arguments[0];
document.getElementById('ask-button').click();
"""

CHAT_ASK = """
const done = arguments[arguments.length - 1];
const t0 = performance.now();
let first = null;
fetch('/v1/chat/completions', {method: 'POST', headers: {'Content-Type': 'application/json'},
  body: JSON.stringify({model: 'ragcli', stream: true, messages: [{role: 'user', content: arguments[0]}]})})
.then(async (response) => {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const {value, done: end} = await reader.read();
    if (end) break;
    buffer += decoder.decode(value, {stream: true});
    let cut;
    while ((cut = buffer.indexOf('\\n\\n')) >= 0) {
      const line = buffer.slice(0, cut); buffer = buffer.slice(cut + 2);
      if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
      const chunk = JSON.parse(line.slice(6));
      if (first === null && chunk.choices[0].delta.content) first = performance.now() - t0;
    }
  }
  done([first, performance.now() - t0]);
});
"""


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=options)
    driver.set_script_timeout(600)
    return driver


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", type=Path)
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--cache", default=None, help="RAGCLI_CACHE (the exported embedding model)")
    args = ap.parse_args()

    server = forced_server("web-stream-", args.db, args.cache, FORCED,
                           ["--ctx", "2048", "--max-tokens", "160", "--threads", "2"])
    driver = browser()
    try:
        driver.get(server.url + "/")
        deadline = time.time() + 30
        while driver.execute_script("return document.body.dataset.ready") != "true":
            if time.time() > deadline:
                raise SystemExit("the page did not start")
            time.sleep(0.1)
        driver.execute_async_script(PAGE_ASK, QUESTION)  # warm both ways once
        driver.execute_async_script(CHAT_ASK, QUESTION)
        runs = {"page": [], "chat": []}
        print(f"tiny model, forced text, {args.n} runs each, interleaved; seconds")
        print(f"{'run':>3} {'page 1st':>9} {'page last':>9} {'chat 1st':>9} {'chat last':>9}")
        for i in range(args.n):
            page = driver.execute_async_script(PAGE_ASK, QUESTION)
            chat = driver.execute_async_script(CHAT_ASK, QUESTION)
            runs["page"].append(page)
            runs["chat"].append(chat)
            print(f"{i:>3} {page[0] / 1000:>9.3f} {page[1] / 1000:>9.3f} {chat[0] / 1000:>9.3f} {chat[1] / 1000:>9.3f}")
    finally:
        driver.quit()
        server.stop()
    med = {way: [statistics.median(r[j] for r in runs[way]) / 1000 for j in (0, 1)] for way in runs}
    first, last = med["page"][0] / med["chat"][0], med["page"][1] / med["chat"][1]
    print(f"median to the first text: page {med['page'][0]:.3f} s, chat completions {med['chat'][0]:.3f} s, "
          f"ratio {first:.3f}")
    print(f"median to the last: page {med['page'][1]:.3f} s, chat completions {med['chat'][1]:.3f} s, ratio {last:.3f}")
    print("verdict:", "met" if max(first, last) <= 1.1 else "NOT met", "(bar <= 1.1)")


if __name__ == "__main__":
    main()
