"""The page `ragcli serve` serves at /, in a real browser (tests/browser/conftest.py), against a real
server (subprocess on 127.0.0.1) with the tiny llama.cpp model.

The model's output is forced by a GBNF grammar (as tests/test_serve_http.py does) to a text citing
[S1] and [S2], one label no source has ([S19]) and a page reference: the invalid ones must never reach
the page, not even for a moment while the answer streams. A book whose text holds markup (a
<script>, an <img onerror>) must show those characters, and none of it may run: the injected code
would set `window.__pwned`.

The tests share one browser session and one server and run in file order (the conversation of the
first is continued by a later one).
"""
from __future__ import annotations

import json
import os
import shutil
import time
import urllib.request
from pathlib import Path

import pytest

from browser.conftest import requests  # tests/browser/conftest.py (a package: its conftest is not the top-level one)
from serve_helpers import ROOT, Server, server_env

FORCED = "The bone flap is lifted [S1]. The artery is clipped at its neck [S2]. Edema follows [S19] (p. 45)."
QUESTION = "what happens after a craniotomy?"  # its prompt holds S1 and S2
MARKUP = ('<script>window.__pwned = "script"</script> and <img src=x onerror="window.__pwned = \'img\'"> '
          'zanzibarquux')
# withheld as an answer; saved as a summary only with "Keep a weak summary": its Markdown is hostile
UNBACKED = ("## Shaving <script>window.__pwned = 'md'</script>\n\nSurgeons usually shave the whole head the night "
            "before [S1]. **Always** <img src=x onerror=\"window.__pwned = 'md-img'\"> "
            "[more](javascript:window.__pwned='md-link').")
KEY = "web-test-key-9c2b"
WAIT = 300  # seconds: the tiny model on a busy 2-core machine


def markup_book(folder: Path) -> Path:
    path = folder / "markup-notes.md"
    path.write_text(f"# Notes {MARKUP}\n\n## Zanzibarquux handling\n\nThe zanzibarquux procedure is described "
                    f"here. {MARKUP} The zanzibarquux must be kept dry and cool at all times.\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def web(template_db, tiny_gguf, model_cache, embedder, tmp_path_factory):
    from ragcli.ingest import pipeline
    from ragcli.models.grammars import forced_text_grammar
    from ragcli.store import db as store

    work = tmp_path_factory.mktemp("web")
    corpus = work / "corpus.db"
    shutil.copyfile(template_db["path"], corpus)
    conn = store.connect(corpus)
    pipeline.ingest_file(conn, markup_book(work), embedder, book_id="markup")
    conn.close()
    grammar = work / "forced.gbnf"
    grammar.write_text(forced_text_grammar(FORCED))
    uploads = work / "uploads"
    uploads.mkdir()
    server = Server(["--db", corpus, "--model", tiny_gguf, "--ctx", "2048", "--max-tokens", "160",
                     "--grammar-file", grammar, "--allow-ingest", uploads],
                    server_env(model_cache, work / "home"), work / "serve.log")
    server.db = corpus
    yield server
    server.stop()


def wait_for(driver, script: str, seconds: float = WAIT, every: float = 0.1):
    """Run `script` (a JS expression) until it is truthy; its value."""
    deadline = time.time() + seconds
    while True:
        value = driver.execute_script(f"return ({script});")
        if value:
            return value
        if time.time() > deadline:
            raise AssertionError(f"still false after {seconds} s: {script}")
        time.sleep(every)


def open_page(driver, url: str) -> None:
    driver.get(url + "/")
    wait_for(driver, "document.body.dataset.ready === 'true'", 30)


def ask(driver, question: str) -> None:
    """Type a question and send it with Enter; the page records every text the answer area ever
    showed, and whether the draft label was on screen each time draft text was (`__unlabelled`)."""
    from selenium.webdriver.common.keys import Keys

    driver.execute_script("""
        window.__seen = []; window.__done = false; window.__unlabelled = 0; window.__drafts = 0;
        const turns = document.getElementById('turns');
        new MutationObserver(() => {
          const last = turns.lastElementChild;
          if (!last) return;
          const draft = last.querySelector('.draft');
          if (draft && draft.querySelector('.draft-text').textContent) {
            window.__drafts += 1;
            const label = draft.querySelector('.draft-label');
            if (!label || !label.textContent.includes('checking against the book')) window.__unlabelled += 1;
          }
          window.__seen.push(last.textContent);
          if (!draft && last.querySelector('.status')) window.__done = true;
        }).observe(turns, {childList: true, subtree: true, characterData: true});""")
    box = driver.find_element("id", "question")
    box.clear()
    box.send_keys(question)
    box.send_keys(Keys.ENTER)
    wait_for(driver, "window.__done")


def fetch(url: str, headers=None) -> tuple[int, dict, bytes]:
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read()


def test_ask_streams_validated_text_and_a_badge_opens_its_highlighted_page(web, browser, tmp_path):
    from ragcli.ingest import page_image

    open_page(browser, web.url)
    ask(browser, QUESTION)
    seen = browser.execute_script("return window.__seen;")
    drafts = [s for s in seen if "The bone flap" in s]
    assert drafts, "no answer text appeared"
    # while it streamed the text was labelled a draft, every time; after the verdict no draft is left
    assert browser.execute_script("return window.__drafts") > 0
    assert browser.execute_script("return window.__unlabelled") == 0
    assert not browser.find_elements("css selector", "#turns .draft")
    # Enter sent it; the focus is back in the question box; the live region announced the answer
    assert browser.execute_script("return document.activeElement.id") == "question"
    assert browser.find_element("id", "question").get_attribute("value") == ""
    assert wait_for(browser, "document.getElementById('announce').textContent.startsWith('Answer: Answered')", 10)
    # it streamed: the answer area showed more than one length of text before the answer was rendered
    assert len({len(s) for s in seen}) >= 3, seen
    assert not any("S19" in s or "p. 45" in s for s in seen), "an invalid label or page reference reached the page"
    turn = browser.find_elements("css selector", "#turns .turn")[-1]
    text = turn.find_element("css selector", ".answer").text
    assert "The bone flap is lifted" in text and "S19" not in text
    badges = [b.text for b in turn.find_elements("css selector", ".answer .badge")]
    # the page shows the labels that back each sentence (as `--json`'s answer): a sentence the model
    # cited [S2] for may carry [S1] when S1's block states it
    assert "[S1]" in badges and not set(badges) - {"[S1]", "[S2]"}, badges
    target = "S2" if "[S2]" in badges else "S1"
    marks = turn.find_elements("css selector", ".answer .mark")
    assert marks and all(m.get_attribute("tabindex") == "0" for m in marks)

    # focusing a support mark shows what backs it
    browser.execute_script("arguments[0].focus()", marks[0])
    assert marks[0].find_element("css selector", ".quote").is_displayed()

    badge = next(b for b in turn.find_elements("css selector", ".answer .badge") if b.text == f"[{target}]")
    badge.click()
    card = turn.find_element("css selector", f'.card[data-label="{target}"]')
    assert "highlight" in card.get_attribute("class").split()
    assert [c.get_attribute("data-label") for c in turn.find_elements("css selector", ".card.highlight")] == [target]
    wait_for(browser, "document.getElementById('page-view').open && document.getElementById('page-image').complete "
                      "&& document.getElementById('page-image').naturalWidth > 0", 120)
    src = browser.find_element("id", "page-image").get_attribute("src")
    passage = card.get_attribute("data-passage")
    assert src == f"{web.url}/web/api/passages/{passage}/page.png"

    # the image is `show --image` of that passage's page: the same PNG, byte for byte
    status, headers, png = fetch(src)
    assert status == 200 and headers["content-type"] == "image/png" and png[:8] == b"\x89PNG\r\n\x1a\n"
    info = json.loads(fetch(f"{web.url}/web/api/passages/{passage}")[2])
    made = page_image.render(info["file"], info["page"], info["page_end"], info["text"], tmp_path / "show.png")
    assert int(headers["x-page"]) == made.page
    assert png == (tmp_path / "show.png").read_bytes()
    link = browser.find_element("id", "page-open")
    assert link.text == "Open the PDF at this page"
    pdf = link.get_attribute("href")
    assert pdf.endswith(f"/web/api/passages/{passage}/file#page={info['page']}")
    status, headers, body = fetch(pdf.split("#")[0])
    assert status == 200 and headers["content-type"] == "application/pdf" and body[:5] == b"%PDF-"

    screenshot = tmp_path / "web-ui.png"
    size = browser.get_window_size()
    browser.set_window_size(1600, 1000)
    time.sleep(0.3)
    browser.save_screenshot(str(screenshot))
    browser.set_window_size(size["width"], size["height"])
    if os.environ.get("RAGCLI_WEB_SCREENSHOT"):  # the README's picture: RAGCLI_WEB_SCREENSHOT=docs/web-ui.png
        shutil.copyfile(screenshot, ROOT / os.environ["RAGCLI_WEB_SCREENSHOT"])

    # next page, and back
    browser.find_element("id", "page-next").click()
    wait_for(browser, f"document.getElementById('page-image').src.endsWith('?page={info['page'] + 1}') && "
                      "document.getElementById('page-image').complete && "
                      "document.getElementById('page-image').naturalWidth > 0", 120)
    browser.find_element("id", "page-prev").click()
    wait_for(browser, f"document.getElementById('page-image').src.endsWith('?page={info['page']}')", 30)
    browser.find_element("id", "page-close").click()
    assert not browser.execute_script("return document.getElementById('page-view').open")

    # by keyboard: a badge takes focus (its card lights up), Enter opens the page, Escape closes it
    from selenium.webdriver.common.keys import Keys

    s1 = next(b for b in turn.find_elements("css selector", ".answer .badge") if b.text == "[S1]")
    browser.execute_script("arguments[0].focus()", s1)
    assert [c.get_attribute("data-label") for c in turn.find_elements("css selector", ".card.highlight")] == ["S1"]
    s1.send_keys(Keys.ENTER)
    wait_for(browser, "document.getElementById('page-view').open", 30)
    browser.switch_to.active_element.send_keys(Keys.ESCAPE)
    wait_for(browser, "!document.getElementById('page-view').open", 10)


def test_markup_in_a_book_and_a_question_is_shown_as_text_and_never_runs(web, browser):
    open_page(browser, web.url)
    browser.find_element("id", "new-conversation").click()
    question = 'zanzibarquux <img src=x onerror="window.__pwned = \'question\'"> <b>bold</b>?'
    ask(browser, question)
    turn = browser.find_elements("css selector", "#turns .turn")[-1]
    assert turn.find_element("css selector", ".question").text == question
    cards = [c.text for c in turn.find_elements("css selector", ".card")]
    assert any("<script>window.__pwned" in c and "<img src=x onerror=" in c for c in cards), cards
    # a Markdown book has no page images: "Show page" shows the passage in its section's text, marked
    card = next(c for c in turn.find_elements("css selector", ".card") if "zanzibarquux procedure" in c.text)
    show = card.find_element("css selector", "button")
    assert show.text == "Show in the book"
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", show)
    show.click()
    wait_for(browser, "document.getElementById('page-view').open && "
                      "document.querySelector('#page-text mark.passage')", 30)
    assert not browser.find_element("id", "page-image").is_displayed()
    assert not browser.find_element("id", "page-error").text
    marked = browser.find_element("css selector", "#page-text mark.passage").text
    assert "zanzibarquux procedure is described" in marked and "<script>" in marked  # as text
    link = browser.find_element("id", "page-open")
    assert link.text == "Open the Markdown file"
    status, headers, body = fetch(link.get_attribute("href"))
    assert status == 200 and "attachment" in headers["content-disposition"] and b"zanzibarquux" in body
    browser.find_element("id", "page-close").click()
    # the library shows the book's title, markup and all, as text
    browser.find_element("css selector", '.tab[data-view="books"]').click()
    wait_for(browser, "document.querySelector('#books li')", 30)
    assert browser.find_element("id", "upload-form").is_displayed()  # started with --allow-ingest
    titles = [h.text for h in browser.find_elements("css selector", "#books h3")]
    assert any("<script>" in t and "onerror" in t for t in titles), titles
    # the conversation list shows the question as text
    side = browser.find_element("id", "conversations").text
    assert "<img src=x" in side
    time.sleep(0.5)  # an image's error handler would have run by now
    assert browser.execute_script("return window.__pwned === undefined")
    for tag in ("#turns img", "#turns script", "#turns b", "#books img", "#conversations img"):
        assert not browser.find_elements("css selector", tag), tag


def test_two_summaries_are_two_chips_and_the_first_loads_without_generating(web, browser):
    open_page(browser, web.url)
    browser.find_element("css selector", '.tab[data-view="topics"]').click()
    for number in (1, 2):
        topic = browser.find_element("id", "topic")
        topic.clear()
        topic.send_keys("craniotomy")
        browser.find_element("id", "generate").click()
        wait_for(browser, f"document.getElementById('summary-status').textContent === 'saved as Summary #{number}' "
                          f"|| document.querySelector('#summary .error')")
        assert not browser.find_elements("css selector", "#summary .error"), \
            browser.find_element("id", "summary").text
    chips = wait_for(browser, "document.querySelectorAll('.chip').length === 2 && "
                              "[...document.querySelectorAll('.chip')].map(c => c.textContent)")
    today = time.strftime("%Y-%m-%d", time.gmtime())
    assert [c.split(" · ")[0] for c in chips] == ["Summary #1", "Summary #2"], chips
    assert all(c.split(" · ")[1][:4] == today[:4] for c in chips), chips

    requests(browser)
    before = len(browser.requested)
    browser.find_elements("css selector", ".chip")[0].click()
    wait_for(browser, "document.querySelector('#summary h3') && "
                      "document.querySelector('#summary h3').textContent.includes('Summary #1')", 30)
    made = [r for r in requests(browser)[before:] if "/web/api/" in r or "/summaries" in r]
    assert made == [f"GET {web.url}/web/api/summaries/craniotomy?number=1"], made  # a saved text: no generation
    status, _, body = fetch(f"{web.url}/summaries/craniotomy?number=1")
    saved = json.loads(body)
    shown = browser.find_element("css selector", "#summary .answer").text
    assert saved["number"] == 1 and shown.replace("\n", " ").startswith(saved["text"].split("[")[0].strip())
    assert browser.find_elements("css selector", "#summary .card")


def test_a_conversation_continues_from_the_side_list_and_survives_a_reload(web, browser):
    open_page(browser, web.url)
    first = browser.find_element("css selector", "#conversations li:last-child button")  # the oldest: the first test's
    cid = first.get_attribute("data-id")
    first.click()
    wait_for(browser, "document.querySelectorAll('#turns .turn').length === 1")
    assert browser.find_element("css selector", "#turns .question").text == QUESTION
    ask(browser, "and what happens to it at the end?")
    turns = browser.find_elements("css selector", "#turns .turn")
    assert len(turns) == 2
    standalone = turns[1].find_element("css selector", ".standalone")
    assert standalone.is_displayed() and "craniotomy" in standalone.text.lower()  # the rewrite, shown dimmed
    conversation = json.loads(fetch(f"{web.url}/web/api/conversations/{cid}")[2])
    assert [t["question"] for t in conversation["turns"]] == [QUESTION, "and what happens to it at the end?"]

    browser.refresh()
    wait_for(browser, "document.body.dataset.ready === 'true'", 30)
    assert not browser.find_elements("css selector", "#turns .turn")
    browser.find_element("css selector", f'#conversations button[data-id="{cid}"]').click()
    wait_for(browser, "document.querySelectorAll('#turns .turn').length === 2")
    questions = [q.text for q in browser.find_elements("css selector", "#turns .question")]
    assert questions == [QUESTION, "and what happens to it at the end?"]
    assert browser.find_elements("css selector", "#turns .turn:last-child .badge")

    # at a phone's width (390 x 844): nothing wider than the screen, the question box in the first
    # screen with two turns above it, the conversations in a drawer that opens and closes
    size = browser.get_window_size()
    browser.set_window_size(390, 844)
    try:
        wait_for(browser, "window.innerWidth <= 400", 10)
        assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
        browser.execute_script("window.scrollTo(0, 0)")
        box = browser.execute_script("const r = document.getElementById('question').getBoundingClientRect();"
                                     "return [r.top, r.bottom, window.innerHeight];")
        assert 0 <= box[0] and box[1] <= box[2], box
        assert not browser.find_element("id", "side").is_displayed()
        toggle = browser.find_element("id", "drawer-toggle")
        toggle.click()
        wait_for(browser, "document.getElementById('side').getBoundingClientRect().left >= 0", 10)
        assert browser.find_element("css selector", f'#conversations button[data-id="{cid}"]').is_displayed()
        browser.find_element("id", "drawer-close").click()
        wait_for(browser, "getComputedStyle(document.getElementById('side')).visibility === 'hidden'", 10)
    finally:
        browser.set_window_size(size["width"], size["height"])


@pytest.fixture(scope="module")
def withdrawing(template_db, tiny_gguf, model_cache, tmp_path_factory):
    """A server whose model writes an answer no passage backs (as tests/test_ask.py's
    test_an_unbacked_answer_is_no_answer_after_one_call): ragcli withdraws it."""
    from ragcli.models.grammars import forced_text_grammar

    work = tmp_path_factory.mktemp("web-withdrawn")
    corpus = work / "corpus.db"
    shutil.copyfile(template_db["path"], corpus)
    grammar = work / "forced.gbnf"
    grammar.write_text(forced_text_grammar(UNBACKED))
    server = Server(["--db", corpus, "--model", tiny_gguf, "--ctx", "2048", "--max-tokens", "400",
                     "--grammar-file", grammar], server_env(model_cache, work / "home"), work / "serve.log")
    yield server
    server.stop()


def test_a_withdrawn_draft_is_replaced_by_the_reason_and_the_nearest_passages(withdrawing, browser):
    open_page(browser, withdrawing.url)
    ask(browser, "what is a craniotomy?")
    seen = browser.execute_script("return window.__seen;")
    assert any("Surgeons usually shave" in s for s in seen), "the draft was not shown while it streamed"
    turn = browser.find_elements("css selector", "#turns .turn")[-1]
    assert "Surgeons usually shave" not in turn.text  # taken away
    assert not turn.find_elements("css selector", ".answer, .draft")
    status = turn.find_element("css selector", ".status").text
    from ragcli.serve.words import REASON_WORDS

    assert status.startswith("Not answered · ") and status.split(" · ", 1)[1] in REASON_WORDS.values(), status
    why = turn.find_element("css selector", ".why")
    assert not why.find_element("css selector", "p").is_displayed()  # the figures: on demand
    assert "no_answer" not in turn.text and "ragcli" not in turn.text and "--" not in turn.text
    nearest = turn.find_element("css selector", ".sources")
    assert nearest.get_attribute("aria-label") == "Nearest passages"
    assert nearest.find_elements("css selector", ".card")


def test_hostile_markdown_in_a_summary_is_rendered_safely_and_a_weak_one_kept_on_request(withdrawing, browser):
    """The model's summary is Markdown with a script, an image with a handler and a javascript: link:
    it is rendered (a heading, bold) and none of it runs. The withheld draft is weak: saved only with
    "Keep a weak summary" ticked."""
    open_page(browser, withdrawing.url)
    browser.find_element("css selector", '.tab[data-view="topics"]').click()
    browser.find_element("id", "topic").send_keys("craniotomy")
    browser.find_element("id", "keep-weak").click()
    browser.find_element("id", "generate").click()
    wait_for(browser, "document.getElementById('summary-status').textContent.startsWith('saved as Summary') "
                      "|| document.querySelector('#summary .error')")
    assert not browser.find_elements("css selector", "#summary .error"), browser.find_element("id", "summary").text
    md = browser.find_element("css selector", "#summary .markdown")
    assert "<script>window.__pwned" in md.find_element("css selector", "h4").text  # the heading, its markup as text
    assert md.find_element("css selector", "strong").text == "Always"
    assert md.find_elements("css selector", ".badge")  # [S1] is still a badge
    time.sleep(0.5)
    assert browser.execute_script("return window.__pwned === undefined")
    for tag in ("script", "img", "a[href^='javascript']", "[onerror]"):
        assert not md.find_elements("css selector", tag), tag


@pytest.fixture(scope="module")
def keyed(template_db, model_cache, tmp_path_factory):
    """A server with --api-key and no model (extractive answers)."""
    work = tmp_path_factory.mktemp("web-key")
    corpus = work / "corpus.db"
    shutil.copyfile(template_db["path"], corpus)
    server = Server(["--db", corpus, "--api-key", KEY], server_env(model_cache, work / "home"), work / "serve.log",
                    key=KEY)
    yield server
    server.stop()


def test_with_a_key_the_page_shows_only_the_key_form_until_it_is_given(keyed, browser):
    browser.delete_all_cookies()
    browser.get(keyed.url + "/")
    wait_for(browser, "!document.getElementById('key-view').hidden", 30)
    assert not browser.find_element("id", "app").is_displayed()
    assert not browser.find_element("id", "tabs").is_displayed()
    assert browser.find_element("id", "key-input").is_displayed()
    assert browser.execute_script("return document.querySelectorAll('#conversations li, #turns li').length") == 0

    box = browser.find_element("id", "key-input")
    box.send_keys("not-the-key")
    browser.find_element("css selector", "#key-form button").click()
    wait_for(browser, "document.getElementById('key-error').textContent", 30)
    assert not browser.find_element("id", "app").is_displayed()

    box.clear()
    box.send_keys(KEY)
    browser.find_element("css selector", "#key-form button").click()
    wait_for(browser, "document.body.dataset.ready === 'true'", 30)
    assert browser.find_element("id", "app").is_displayed() and not browser.find_element("id", "key-view").is_displayed()
    cookie = browser.get_cookie(f"ragcli_session_{keyed.url.rsplit(':', 1)[1]}")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and KEY not in cookie["value"]
    assert browser.execute_script("return document.cookie") == ""  # the script cannot read it
    # everything works with the cookie alone: an (extractive) answer, the books
    ask(browser, QUESTION)
    assert browser.find_elements("css selector", "#turns .turn .card")
    browser.find_element("css selector", '.tab[data-view="books"]').click()
    wait_for(browser, "document.querySelectorAll('#books li').length === 4", 30)
    assert not browser.find_element("id", "upload-form").is_displayed()  # no --allow-ingest: no upload
    refused = browser.execute_async_script("""const done = arguments[0];
        fetch('/web/api/upload?name=x.md', {method: 'POST', body: 'text',
               headers: {'Content-Type': 'application/octet-stream'}}).then(r => done(r.status));""")
    assert refused == 403  # the route says no without --allow-ingest (a text/plain post gets 415 before it)
    # after a reload the cookie still opens the page: the key is asked for once
    browser.refresh()
    wait_for(browser, "document.body.dataset.ready === 'true'", 30)
    assert browser.find_element("id", "key-view").get_attribute("hidden") is not None
    browser.delete_all_cookies()


def test_the_page_asked_no_other_host_and_carries_its_policy(web, browser):
    """Every request of the tests above (this one runs last) went to one of the test servers."""
    urls = [r.split(" ", 1)[1] for r in requests(browser)]
    assert len(urls) > 20, "the performance log recorded too few requests"
    foreign = [u for u in urls if not (u.startswith(("http://127.0.0.1:", "data:", "about:", "blob:")))]
    assert not foreign, foreign
    status, headers, body = fetch(web.url + "/")
    assert status == 200 and "script-src 'self'" in headers["content-security-policy"]
    assert "default-src 'none'" in headers["content-security-policy"]
    csp_errors = [e for e in browser.get_log("browser") if "Content Security Policy" in e.get("message", "")]
    assert not csp_errors, csp_errors  # the page itself needs nothing the policy forbids
