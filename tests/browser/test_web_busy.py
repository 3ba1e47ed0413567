"""The page while the model is writing, in a real browser against a real server whose tiny model is
forced (GBNF) to write a long answer (several seconds of generation): reads do not wait for it, Stop
and Esc end it on the server too (the generation slot is free again, nothing is saved), and a
question asked after "New conversation" lands in a new conversation.

The server runs with `--parallel 1`: before reads stopped taking the generation slot, every read
here waited for the answer to finish.
"""
from __future__ import annotations

import json
import shutil
import time

import pytest

from browser.test_web_page import fetch, open_page, wait_for
from serve_helpers import LONG, Server, server_env


@pytest.fixture(scope="module")
def busy(template_db, model_cache, tmp_path_factory):
    from ragcli.models.grammars import forced_text_grammar
    from tinymodel import write_tiny_gguf

    work = tmp_path_factory.mktemp("web-busy")
    tiny_gguf = write_tiny_gguf(work / "tiny-8k.gguf", context=8192)  # room for a long answer
    corpus = work / "corpus.db"
    shutil.copyfile(template_db["path"], corpus)
    grammar = work / "long.gbnf"
    grammar.write_text(forced_text_grammar(LONG))
    server = Server(["--db", corpus, "--model", tiny_gguf, "--ctx", "8192", "--max-tokens", "5600",
                     "--grammar-file", grammar, "--parallel", "1", "--threads", "1"],
                    server_env(model_cache, work / "home"), work / "serve.log")
    yield server
    server.stop()


def start_asking(driver, question: str, draft: bool = True) -> None:
    """Send a question (Enter) and wait until its draft text is streaming (`draft`), else until it
    is in flight (a follow-up is first made standalone, by the model: no text for a while)."""
    from selenium.webdriver.common.keys import Keys

    box = driver.find_element("id", "question")
    box.clear()
    box.send_keys(question, Keys.ENTER)
    if not draft:
        wait_for(driver, "document.getElementById('stop-button').offsetParent !== null", 10)
        return
    wait_for(driver, "document.querySelector('#turns .draft .draft-text') && "
                     "document.querySelector('#turns .draft .draft-text').textContent.length > 40", 120)


def generating(server) -> int:
    return json.loads(fetch(server.url + "/web/api/session")[2])["generating"]


def conversations(server) -> list:
    return json.loads(fetch(server.url + "/web/api/conversations")[2])


def test_reads_answer_while_the_answer_is_written(busy, browser):
    open_page(browser, busy.url)
    pid = json.loads(fetch(busy.url + "/web/api/search?q=craniotomy&k=3")[2])[0]["passage_id"]
    start_asking(browser, "what happens after a craniotomy?")
    assert generating(busy) == 1
    # a page image not rendered before, a conversation list, the books: each while the draft streams
    timed = browser.execute_async_script("""
        const [pid, done] = arguments;
        const time = async (url, image) => {
          const t = performance.now();
          if (image) await new Promise((ok, bad) => { const i = new Image(); i.onload = ok; i.onerror = bad; i.src = url; });
          else await (await fetch(url)).json();
          return performance.now() - t;
        };
        (async () => {
          const out = {};
          out.image = await time(`/web/api/passages/${pid}/page.png?page=2`, true);
          out.conversations = await time('/web/api/conversations');
          out.books = await time('/books');
          out.streaming = !!document.querySelector('#turns .draft');
          done(out);
        })();""", pid)
    assert timed["streaming"], "the answer finished before the reads: the test measured nothing"
    assert timed["image"] < 2000, timed
    assert timed["conversations"] < 2000 and timed["books"] < 2000, timed
    # the page view opens on a click while the model still writes
    browser.execute_script("document.querySelector('.tab[data-view=search]').click()")
    box = browser.find_element("id", "search-input")
    box.send_keys("craniotomy")
    browser.find_element("css selector", "#search-form button").click()
    wait_for(browser, "document.querySelector('#search-results .card button')", 10)
    browser.find_element("css selector", "#search-results .card button").click()
    wait_for(browser, "document.getElementById('page-image').complete && "
                      "document.getElementById('page-image').naturalWidth > 0", 10)
    browser.find_element("id", "page-close").click()
    browser.execute_script("document.querySelector('.tab[data-view=ask]').click()")


def test_stop_and_esc_end_the_generation_on_the_server_and_save_nothing(busy, browser):
    from selenium.webdriver.common.keys import Keys

    open_page(browser, busy.url)
    before = conversations(busy)
    start_asking(browser, "how is the bone flap kept?")
    assert browser.find_element("id", "stop-button").is_displayed()
    assert not browser.find_element("id", "ask-button").is_displayed()
    browser.find_element("id", "stop-button").click()
    wait_for(browser, "!document.querySelector('#turns .draft')", 5)
    assert "nothing was saved" in browser.find_element("id", "ask-status").text
    deadline = time.time() + 10
    while generating(busy) and time.time() < deadline:
        time.sleep(0.1)
    assert generating(busy) == 0, "the server still generates after Stop"
    assert conversations(busy) == before  # no half answer saved
    assert browser.execute_script("return document.activeElement.id") == "question"

    start_asking(browser, "how is the bone flap kept, again?")
    browser.switch_to.active_element.send_keys(Keys.ESCAPE)
    wait_for(browser, "!document.querySelector('#turns .draft')", 5)
    deadline = time.time() + 10
    while generating(busy) and time.time() < deadline:
        time.sleep(0.1)
    assert generating(busy) == 0
    assert conversations(busy) == before


def test_new_conversation_during_an_answer_puts_the_next_question_in_a_new_one(busy, browser):
    open_page(browser, busy.url)
    start_asking(browser, "how is the bone flap handled?")
    wait_for(browser, "document.querySelector('#turns .turn .status')", 300)  # answered: conversation A
    first = {c["id"] for c in conversations(busy)}
    start_asking(browser, "and how is it kept dry afterwards?", draft=False)  # left behind
    browser.find_element("id", "new-conversation").click()
    assert not browser.find_elements("css selector", "#turns .turn")
    wait_for(browser, "document.getElementById('ask-button').offsetParent !== null", 5)
    start_asking(browser, "what happens to the scalp after a craniotomy?", draft=False)
    wait_for(browser, "document.querySelector('#turns .turn .status')", 400)
    rows = conversations(busy)
    new = [c for c in rows if c["id"] not in first]
    assert len(new) == 1 and new[0]["title"] == "what happens to the scalp after a craniotomy?", rows
    old = [c for c in rows if c["id"] in first and c["title"] == "how is the bone flap handled?"]
    assert old and old[0]["turn_count"] == 1, rows  # the left-behind follow-up was not saved into it
    shown = browser.find_elements("css selector", "#turns .question")
    assert [q.text for q in shown] == ["what happens to the scalp after a craniotomy?"]
    current = browser.find_element("css selector", '#conversations button[aria-current="true"]')
    assert current.get_attribute("data-id") == str(new[0]["id"])
