"""The page as a daily tool, in a real browser against a real server (the `web` server of
tests/browser/test_web_page.py: the tiny model forced to cite [S1] and [S2], the sample book, three
fixture PDFs and a Markdown book): the page panel opens without moving what was clicked, previous/next
name pages by their printed labels, the page image zooms and pans at a phone's width, the progress
line says how many passages are read, several books can be chosen (and found by a search box), and
rename, delete, copy and ask again work when clicked. A conversation reopened from the side list
shows a Markdown book's passage by its section text, as a fresh answer does.

The tests run in file order: the later ones use the conversations the earlier ones made.
"""
from __future__ import annotations

import json
import re
import time

from browser.test_web_page import QUESTION, fetch, open_page, wait_for, web  # noqa: F401 - `web`: the fixture
from selenium.webdriver.common.keys import Keys

PAGE_LOADED = ("document.getElementById('page-view').open && document.getElementById('page-image').complete "
               "&& document.getElementById('page-image').naturalWidth > 0")


def send(driver, question: str) -> None:
    """Type a question, send it with Enter, and wait for its verdict; the progress line's texts are
    recorded in window.__progress."""
    driver.execute_script("""
        window.__progress = [];
        new MutationObserver(() => window.__progress.push(document.getElementById('ask-status').textContent))
          .observe(document.getElementById('ask-status'), {childList: true, subtree: true, characterData: true});""")
    before = len(driver.find_elements("css selector", "#turns .turn"))
    box = driver.find_element("id", "question")
    box.clear()
    box.send_keys(question, Keys.ENTER)
    wait_for(driver, f"document.querySelectorAll('#turns .turn').length === {before + 1} && "
                     "!document.querySelector('#turns .draft') && "
                     "document.querySelector('#turns .turn:last-child .status')")


def top(driver, element) -> float:
    return driver.execute_script("return arguments[0].getBoundingClientRect().top", element)


def test_the_page_panel_keeps_the_clicked_badge_in_place_and_names_pages_by_their_printed_labels(web, browser):
    open_page(browser, web.url)
    send(browser, QUESTION)
    # the progress line said what was happening, in words, with the number of passages read
    progress = browser.execute_script("return window.__progress")
    assert "retrieving passages…" in progress, progress
    reading = [p for p in progress if re.fullmatch(r"reading \d+ passages?( \(\d+%\))?…", p)]
    assert reading, progress
    assert int(reading[0].split()[1]) >= 2  # the forced answer cites S1 and S2: both were in the prompt
    assert not any("prompt" in p for p in progress), progress  # no word of the machinery

    turn = browser.find_elements("css selector", "#turns .turn")[-1]
    badge = turn.find_elements("css selector", ".answer .badge")[0]
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", badge)
    time.sleep(0.2)
    before = top(browser, badge)
    width = browser.execute_script("return document.querySelector('main').getBoundingClientRect().width")
    badge.click()
    wait_for(browser, PAGE_LOADED, 120)
    time.sleep(0.3)
    # at 1280 px the panel opens at the right and the answer column narrows (its text reflows) ...
    assert browser.execute_script("return document.querySelector('main').getBoundingClientRect().width") < width - 100
    # ... and what was clicked stayed where it was, beside the panel, its card not under it
    assert abs(top(browser, badge) - before) <= 2, (before, top(browser, badge))
    panel_left = browser.execute_script("return document.getElementById('page-view').getBoundingClientRect().left")
    label = badge.get_attribute("data-label")
    card = turn.find_element("css selector", f'.card[data-label="{label}"]')
    assert browser.execute_script("return arguments[0].getBoundingClientRect().right", card) <= panel_left

    # Next names the page as the book prints it (the sample book's pages are i, ii, then 1, 2, ...)
    passage = card.get_attribute("data-passage")
    info = json.loads(fetch(f"{web.url}/web/api/passages/{passage}")[2])
    labels = info["page_labels"]
    nxt = info["page"] + 1
    assert labels[str(nxt)] != str(nxt)  # the fixture's printed labels differ from the file's numbering
    browser.find_element("id", "page-next").click()
    wait_for(browser, f"document.getElementById('page-image').src.endsWith('?page={nxt}') && "
                      "document.getElementById('page-image').complete", 120)
    title = browser.find_element("id", "page-title").text
    assert title.endswith(f"· p. {labels[str(nxt)]}") and "of the file" not in title, title
    number = browser.find_element("id", "page-number").text
    assert number.startswith(f"p. {labels[str(nxt)]} · page {nxt} of {info['page_count']}"), number
    assert labels[str(nxt)] in browser.find_element("id", "page-image").get_attribute("alt")
    browser.find_element("id", "page-close").click()


def test_at_a_phone_width_the_page_image_zooms_and_pans(web, browser):
    open_page(browser, web.url)
    size = browser.get_window_size()
    browser.set_window_size(390, 844)
    try:
        wait_for(browser, "window.innerWidth <= 400", 10)
        cid = browser.find_element("css selector", "#conversations li:last-child button.open").get_attribute("data-id")
        browser.execute_script("document.querySelector(`#conversations button.open[data-id='${arguments[0]}']`).click()",
                               cid)
        wait_for(browser, "document.querySelector('#turns .card button')", 30)
        show = next(b for b in browser.find_elements("css selector", "#turns .card button")
                    if b.text.startswith("Show page"))
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", show)
        show.click()
        wait_for(browser, PAGE_LOADED, 120)
        frame = browser.find_element("id", "page-frame")
        fit = browser.execute_script("return [arguments[0].clientWidth, arguments[0].scrollWidth, "
                                     "document.getElementById('page-image').getBoundingClientRect().width]", frame)
        assert fit[1] <= fit[0] + 1 and abs(fit[2] - fit[0]) <= 2, fit  # fitted: the whole width, nothing to pan
        for control in ("zoom-in", "zoom-out", "zoom-fit"):  # a finger's size
            assert browser.find_element("id", control).size["height"] >= 40
        browser.find_element("id", "zoom-in").click()
        browser.find_element("id", "zoom-in").click()
        zoomed = browser.execute_script("return [arguments[0].clientWidth, arguments[0].scrollWidth, "
                                        "arguments[0].clientHeight, arguments[0].scrollHeight]", frame)
        assert zoomed[1] >= 1.9 * zoomed[0] and zoomed[3] > zoomed[2], zoomed  # twice the width, both ways to pan
        # panning moves the frame, not the page: nothing of the page itself is wider than the screen
        moved = browser.execute_script("arguments[0].scrollLeft = 150; arguments[0].scrollTop = 200; "
                                       "return [arguments[0].scrollLeft, arguments[0].scrollTop]", frame)
        assert moved == [150, 200], moved
        assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
        assert browser.execute_script("return window.visualViewport.scale") == 1
        # Fit goes back; a tap zooms in at the point tapped, a second tap back out
        browser.find_element("id", "zoom-fit").click()
        assert browser.execute_script("return arguments[0].scrollWidth <= arguments[0].clientWidth + 1", frame)
        browser.find_element("id", "page-image").click()
        tapped = browser.execute_script("return [arguments[0].clientWidth, arguments[0].scrollWidth, "
                                        "arguments[0].scrollLeft]", frame)
        assert tapped[1] >= 2 * tapped[0] and tapped[2] > 0, tapped  # zoomed at the centre: scrolled to it
        browser.find_element("id", "page-image").click()
        assert browser.execute_script("return arguments[0].scrollWidth <= arguments[0].clientWidth + 1", frame)
        browser.find_element("id", "page-close").click()
    finally:
        browser.set_window_size(size["width"], size["height"])


def test_several_books_are_chosen_through_a_search_box_and_the_answer_comes_from_them(web, browser):
    open_page(browser, web.url)
    browser.find_element("id", "new-conversation").click()
    chooser = browser.find_element("id", "book-choice")
    assert chooser.text == "All books"
    chooser.click()
    wait_for(browser, "!document.getElementById('book-panel').hidden", 10)
    assert browser.execute_script("return document.activeElement.id") == "book-filter"
    books = {b["id"]: b["title"] for b in json.loads(fetch(web.url + "/books")[2])}
    assert len(browser.find_elements("css selector", "#book-options li")) == len(books) == 5
    # the search box narrows the list by the title's words; Enter ticks the one left
    primer = books["primer"]
    words = " ".join(primer.split()[:2]).lower()
    box = browser.find_element("id", "book-filter")
    box.send_keys(words)
    shown = [li.text for li in browser.find_elements("css selector", "#book-options li") if li.is_displayed()]
    assert shown == [primer], shown
    box.send_keys(Keys.ENTER)
    box.clear()
    box.send_keys("zanzibarquux")  # the Markdown book's title carries the word
    shown = [li for li in browser.find_elements("css selector", "#book-options li") if li.is_displayed()]
    assert len(shown) == 1
    shown[0].find_element("css selector", "input").click()
    assert chooser.text == "2 books"
    assert browser.find_element("id", "book-count").text == f"2 of {len(books)} chosen"
    browser.find_element("id", "book-done").click()
    assert browser.find_element("id", "book-panel").get_attribute("hidden") is not None
    send(browser, QUESTION)
    turn = browser.find_elements("css selector", "#turns .turn")[-1]
    titles = {c.find_element("css selector", "h3").text.split("] ", 1)[-1]
              for c in turn.find_elements("css selector", ".card")}
    assert titles and titles <= {primer, books["markup"]}, titles
    saved = json.loads(fetch(web.url + "/web/api/conversations")[2])
    newest = max(saved, key=lambda c: c["id"])
    assert sorted(newest["book_ids"]) == ["markup", "primer"], newest
    # the Search tab searches the chosen books too
    browser.find_element("css selector", '.tab[data-view="search"]').click()
    browser.find_element("id", "search-input").send_keys("aneurysm", Keys.ENTER)
    wait_for(browser, "document.getElementById('search-status').textContent.includes('found')", 60)
    found = {h.text.split("] ", 1)[-1] for h in browser.find_elements("css selector", "#search-results .card h3")}
    assert found and found <= {primer, books["markup"]}, found
    # "All books" clears the choice
    browser.find_element("css selector", '.tab[data-view="ask"]').click()
    chooser.click()
    browser.find_element("id", "book-all").click()
    assert chooser.text == "All books"
    assert not browser.find_elements("css selector", "#book-options input:checked")
    browser.find_element("id", "book-filter").send_keys(Keys.ESCAPE)
    assert browser.find_element("id", "book-panel").get_attribute("hidden") is not None


def test_a_reopened_markdown_turn_shows_its_section_text_and_names_the_file(web, browser):
    open_page(browser, web.url)
    browser.find_element("id", "new-conversation").click()
    send(browser, "how is the zanzibarquux kept?")
    fresh = [b.text for b in browser.find_elements("css selector", "#turns .turn:last-child .card button")]
    cid = max(c["id"] for c in json.loads(fetch(web.url + "/web/api/conversations")[2]))
    browser.refresh()
    wait_for(browser, "document.body.dataset.ready === 'true'", 30)
    browser.find_element("css selector", f'#conversations button.open[data-id="{cid}"]').click()
    wait_for(browser, "document.querySelectorAll('#turns .turn').length === 1 && document.querySelector('#turns .card')")
    turn = browser.find_element("css selector", "#turns .turn")
    saved = [b.text for b in turn.find_elements("css selector", ".card button")]
    assert saved == fresh, (saved, fresh)  # the same buttons as the fresh answer had
    card = next(c for c in turn.find_elements("css selector", ".card") if "zanzibarquux" in c.text.lower()
                and "Notes" in c.find_element("css selector", "h3").text)
    button = card.find_element("css selector", "button")
    assert button.text == "Show in the book"
    assert "p. " not in card.find_element("css selector", ".where").text
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", button)
    button.click()
    wait_for(browser, "document.getElementById('page-view').open && document.querySelector('#page-text mark.passage')",
             30)
    assert not browser.find_element("id", "page-frame").is_displayed()
    assert browser.find_element("id", "page-open").text == "Open the Markdown file"
    browser.find_element("id", "page-close").click()
    # a PDF's card in a reopened turn still shows its page
    for other in turn.find_elements("css selector", ".card"):
        if "Notes" not in other.find_element("css selector", "h3").text:
            assert other.find_element("css selector", "button").text.startswith("Show page")


def test_rename_delete_copy_and_ask_again_work_when_clicked(web, browser):
    open_page(browser, web.url)
    browser.execute_cdp_cmd("Browser.grantPermissions", {"origin": web.url,
                                                          "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
    rows = json.loads(fetch(web.url + "/web/api/conversations")[2])
    # a conversation whose last turn was answered (Copy is offered for an answer only)
    target = next(r for r in rows if json.loads(fetch(f"{web.url}/web/api/conversations/{r['id']}")[2])
                  ["turns"][-1]["answer"].strip())
    # rename: the pencil turns the row into a box; Enter saves; markup in a title stays text
    item = browser.find_element("css selector", f'#conversations li[data-id="{target["id"]}"]')
    item.find_element("css selector", "button.rename").click()
    box = browser.find_element("css selector", "#conversations .rename-input")
    assert box.get_attribute("value") == target["title"]
    assert browser.execute_script("return document.activeElement.classList.contains('rename-input')")
    box.send_keys(Keys.CONTROL, "a")
    title = "Daily <b>notes</b> on the clip"
    box.send_keys(title, Keys.ENTER)
    shown = f"#conversations button.open[data-id='{target['id']}'] .title"
    wait_for(browser, f"document.querySelector({json.dumps(shown)}) && "
                      f"document.querySelector({json.dumps(shown)}).textContent === {json.dumps(title)}", 30)
    assert not browser.find_elements("css selector", "#conversations b")
    assert json.loads(fetch(f"{web.url}/web/api/conversations/{target['id']}")[2])["title"] == title
    # Escape in the box leaves the title as it was (the box's blur, as the list is redrawn, saved it once)
    item = browser.find_element("css selector", f'#conversations li[data-id="{target["id"]}"]')
    item.find_element("css selector", "button.rename").click()
    box = browser.find_element("css selector", "#conversations .rename-input")
    box.send_keys(Keys.END, " and more", Keys.ESCAPE)
    wait_for(browser, "!document.querySelector('#conversations .rename-input')", 10)
    assert json.loads(fetch(f"{web.url}/web/api/conversations/{target['id']}")[2])["title"] == title

    # copy: the answer as written, its labels and the sources it cites; not the marks' hidden words
    browser.find_element("css selector", f'#conversations button.open[data-id="{target["id"]}"]').click()
    wait_for(browser, "document.querySelector('#turns .turn .actions')", 30)
    turns = len(browser.find_elements("css selector", "#turns .turn"))
    turn = browser.find_elements("css selector", "#turns .turn")[-1]
    saved = json.loads(fetch(f"{web.url}/web/api/conversations/{target['id']}")[2])["turns"][-1]
    copy = next(b for b in turn.find_elements("css selector", ".actions button") if b.text == "Copy")
    copy.click()
    wait_for(browser, "[...document.querySelectorAll('#turns .turn:last-child .actions button')]"
                      ".some(b => b.textContent === 'Copied')", 10)
    copied = browser.execute_async_script("navigator.clipboard.readText().then(arguments[0], e => arguments[0]('ERR ' + e))")
    assert copied.startswith(saved["answer"].strip()), copied
    for label in saved["citations"]:
        source = next(s for s in saved["sources"] if s["label"] == label)
        assert f"[{label}] {source['book_title']}" in copied, copied
    assert "supported by the passage" not in copied and "✓" not in copied, copied

    # ask again: the same question is asked again in the same conversation, and answered
    question = turn.find_element("css selector", ".question").text
    again = turn.find_element("css selector", ".actions .ask-again")
    again.click()
    wait_for(browser, f"document.querySelectorAll('#turns .turn').length === {turns + 1} && "
                      "!document.querySelector('#turns .draft') && document.querySelector('#turns .turn:last-child .status')")
    assert browser.find_elements("css selector", "#turns .turn .question")[-1].text == question
    after = json.loads(fetch(f"{web.url}/web/api/conversations/{target['id']}")[2])
    assert [t["question"] for t in after["turns"]][-1] == question and len(after["turns"]) == turns + 1

    # delete: asks first (Cancel keeps it), then removes it from the list, the server and the screen
    item = browser.find_element("css selector", f'#conversations li[data-id="{target["id"]}"]')
    item.find_element("css selector", "button.delete").click()
    alert = browser.switch_to.alert
    assert "Delete the conversation" in alert.text and title in alert.text
    alert.dismiss()
    assert fetch(f"{web.url}/web/api/conversations/{target['id']}")[0] == 200
    item = browser.find_element("css selector", f'#conversations li[data-id="{target["id"]}"]')
    item.find_element("css selector", "button.delete").click()
    browser.switch_to.alert.accept()
    wait_for(browser, f"!document.querySelector('#conversations li[data-id=\"{target['id']}\"]')", 30)
    assert fetch(f"{web.url}/web/api/conversations/{target['id']}")[0] == 404
    assert not browser.find_elements("css selector", "#turns .turn")  # it was on screen: the screen is cleared
    assert browser.find_element("id", "conversation-title").text == ""
    wait_for(browser, "document.getElementById('announce').textContent === 'Conversation deleted.'", 10)
