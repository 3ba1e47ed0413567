// ragcli's page. Every text of a book, a question or an answer goes into the page as text
// (text nodes, textContent): never as HTML. The one exception is a summary's Markdown, which the
// server renders with raw HTML off and sanitises, and which is copied here node by node through an
// allowlist again. Requests go to this server only (the CSP says so too).
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const LABEL = /\[([SF]\d+)\]/g;
  const MARKS = { supported: "✓", weak: "~", unsupported: "✗", no_source: "?", quoted: "❝" };
  const MARK_WORDS = { supported: "supported by the passage", weak: "weakly supported", unsupported: "not supported by the cited passage",
    no_source: "no passage says this", quoted: "quoted from the book" };
  // what the server is doing, in words (the phases of ask and summary)
  const PHASES = { expand: "looking up related words", rewrite: "rewording the question", search: "retrieving passages",
    standalone: "reading the follow-up", prompt: "reading the passages found", judge: "weighing the passages",
    claims: "checking each sentence against the book", verify: "checking each sentence against the book",
    retry: "trying again", checks: "checking the question against the books" };
  // a phase event in words: "reading 6 passages" when the server says how many the model reads
  // (and, as the model reads its prompt, how far it is: "reading 6 passages (40%)")
  const reading = { passages: 0 };
  function phaseWords(data, words) {
    if (data.name !== "prompt") return (words || PHASES)[data.name] || data.name;
    if (data.passages) reading.passages = data.passages;
    const what = reading.passages ? `reading ${reading.passages} passage${reading.passages === 1 ? "" : "s"}` : PHASES.prompt;
    return data.total ? `${what} (${Math.floor(100 * data.done / data.total)}%)` : what;
  }
  const KINDS = { pdf: "the PDF", epub: "the EPUB file", docx: "the Word file", html: "the HTML file",
    md: "the Markdown file", txt: "the text file" };
  const state = { conversation: null, ingest: false, asking: null, summarising: null, books: [], chosen: new Set() };
  let uid = 0;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === "class") node.className = value;
      else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : child);
    }
    return node;
  }

  const when = (iso) => (iso || "").replace("T", " ").slice(0, 16);

  class Unauthorized extends Error {}

  async function api(path, options) {
    const response = await fetch(path, { credentials: "same-origin", ...(options || {}) });
    if (response.status === 401) { showKey(); throw new Unauthorized("the API key is needed"); }
    if (!response.ok) {
      let message = "the server could not do this";
      try { message = (await response.json()).error.message; } catch (e) { /* not JSON */ }
      throw new Error(message);
    }
    return response;
  }
  const getJSON = async (path) => (await api(path)).json();
  const postJSON = (path, body, signal) => api(path, { method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body), signal });

  // Server-sent events of a POST (EventSource only GETs): onEvent(name, data) for each. Aborting
  // `signal` closes the connection: the server stops the work at its next token.
  async function stream(path, body, onEvent, signal) {
    const response = await postJSON(path, body, signal);
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        let name = "message", data = "";
        for (const line of block.split("\n")) {
          if (line.startsWith("event: ")) name = line.slice(7);
          else if (line.startsWith("data: ")) data += line.slice(6);
        }
        onEvent(name, data ? JSON.parse(data) : null);
      }
    }
  }

  function announce(text) {  // the live region: a finished answer, its status
    $("announce").textContent = "";
    setTimeout(() => { $("announce").textContent = text; }, 50);
  }

  // -- the key form ------------------------------------------------------------------------------
  function showKey() {
    $("app").hidden = true;
    $("tabs").hidden = true;
    $("key-view").hidden = false;
    $("key-input").focus();
  }

  $("key-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    $("key-error").textContent = "";
    const response = await fetch("/web/key", { method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json" }, body: JSON.stringify({ key: $("key-input").value }) });
    if (!response.ok) { $("key-error").textContent = "That key is not this server's key."; return; }
    $("key-input").value = "";
    start();
  });

  // -- views and the drawer ----------------------------------------------------------------------
  function showView(name) {
    for (const tab of document.querySelectorAll(".tab")) tab.setAttribute("aria-pressed", String(tab.dataset.view === name));
    for (const view of document.querySelectorAll(".view")) view.hidden = view.id !== `view-${name}`;
    if (name === "topics") loadTopics();
    if (name === "books") loadBooks();
    if (name === "search") $("search-input").focus();
    drawer(false);
  }
  for (const tab of document.querySelectorAll(".tab")) tab.addEventListener("click", () => showView(tab.dataset.view));

  function drawer(open) {
    document.body.classList.toggle("drawer-open", open);
    $("drawer-toggle").setAttribute("aria-expanded", String(open));
    if (open) $("new-conversation").focus();
  }
  $("drawer-toggle").addEventListener("click", () => drawer(!document.body.classList.contains("drawer-open")));
  $("drawer-close").addEventListener("click", () => { drawer(false); $("drawer-toggle").focus(); });

  // -- answers -----------------------------------------------------------------------------------
  // A text with its [S1] labels as badges: hovering or focusing one highlights its card, a click opens its page.
  function withBadges(text, scope) {
    const out = [];
    let last = 0;
    for (const m of text.matchAll(LABEL)) {
      if (m.index > last) out.push(text.slice(last, m.index));
      out.push(badge(m[1], scope));
      last = m.index + m[0].length;
    }
    if (last < text.length) out.push(text.slice(last));
    return out;
  }

  function badge(label, scope) {
    const card = () => scope.querySelector(`.card[data-label="${label}"]`);
    const on = () => { for (const c of scope.querySelectorAll(".card.highlight")) c.classList.remove("highlight");
      const c = card(); if (c) c.classList.add("highlight"); };
    return el("button", { type: "button", class: "badge", "data-label": label, "aria-label": `source ${label}`,
      onmouseenter: on, onfocus: on, onclick: (event) => { on(); const c = card(); if (c) openPage(c.dataset.passage, null, c.dataset.title, event.currentTarget); } },
      `[${label}]`);
  }

  function mark(claim) {
    const support = claim.support;
    if (!MARKS[support]) return null;
    const id = `quote-${++uid}`;
    const e = claim.evidence;
    const words = e ? `[${e.label}] p. ${e.page_label}: “${e.quote}”` : "";
    return el("span", { class: `mark ${support}`, tabindex: 0, role: "note", "aria-describedby": id,
      "aria-label": MARK_WORDS[support] }, MARKS[support],
      el("span", { class: "quote", id, role: "tooltip" }, words ? `${MARK_WORDS[support]}: ${words}` : MARK_WORDS[support]));
  }

  function sourceCard(source, quotes) {
    const pid = source.current_passage_id || source.passage_id;
    const where = [];
    if (source.section_path && source.section_path.length) where.push(source.section_path.join(" › "));
    // a book without page images (EPUB, Word, HTML, Markdown, text) is shown by its section, not a page
    // (`format`: the server's word for the book's file type; a saved source names no file)
    const paged = source.format !== undefined ? source.format === "pdf" || !source.format
      : !source.file || /\.pdf$/i.test(source.file);
    if (paged) where.push(`p. ${source.page_label}`);
    const text = el("p", { class: "text" });
    const quote = (quotes || []).find((q) => q && source.text.includes(q));
    if (quote) {
      const at = source.text.indexOf(quote);
      text.append(source.text.slice(0, at), el("mark", {}, quote), source.text.slice(at + quote.length));
    } else text.append(source.text);
    const gone = source.status && source.status !== "ok" && source.status !== "moved";
    return el("li", { class: "card", "data-label": source.label || "", "data-passage": pid, "data-title": source.book_title,
      "aria-label": source.label ? `source ${source.label}` : source.book_title },
      el("h3", {}, source.label ? `[${source.label}] ` : "", source.book_title),
      el("p", { class: "where" }, where.filter(Boolean).join(" · ")),
      gone ? el("p", { class: "stale" }, "This passage is no longer in the books.") : null,
      text,
      gone ? null : el("button", { type: "button", onclick: (event) => openPage(pid, null, source.book_title, event.currentTarget) },
        paged ? `Show page ${source.page_label || ""}`.trim() : "Show in the book"));
  }

  // What Copy puts on the clipboard: the answer as written, its labels, and the sources it cites
  // (not the support marks' hidden explanations, which are part of the page's text).
  function copyText(data) {
    const cited = new Set(data.citations || []);
    const where = (s) => (s.format && s.format !== "pdf" ? (s.section_path || []).join(" › ")
      : s.page_label ? `p. ${s.page_label}` : "");
    const sources = (data.sources || []).filter((s) => cited.has(s.label))
      .map((s) => `[${s.label}] ${s.book_title}${where(s) ? `, ${where(s)}` : ""}`);
    return [(data.answer || "").trim(), ...(sources.length ? ["", ...sources] : [])].join("\n");
  }

  // The answer of a turn (live or saved), its marks, its words and its source cards.
  function renderAnswer(box, data, question) {
    box.replaceChildren();
    const reader = data.reader || { status: data.status, words: "", details: data.notice || "" };
    const answered = data.status !== "no_answer" && (data.answer || "").trim();
    const body = el("div", { class: "answer" });
    if (answered && data.claims && data.claims.length) {
      for (const claim of data.claims) {  // each sentence: its support mark, its text, its badges
        const inline = LABEL.test(claim.text);
        LABEL.lastIndex = 0;
        const m = mark(claim);
        const sentence = el("span", { class: "claim" }, m, m ? " " : null, withBadges(claim.text, box));
        if (!inline) for (const label of claim.citations || []) sentence.append(badge(label, box));
        body.append(sentence, " ");
      }
    } else if (answered) body.append(...withBadges(data.answer, box));
    if (answered) box.append(body);
    const weakOnly = answered && reader.words && (data.claims || []).length
      && !data.claims.some((c) => c.support === "supported" || c.support === "quoted");
    box.append(el("p", { class: `status status-${data.status}${weakOnly ? " status-weak" : ""}` }, el("strong", {}, reader.status),
      reader.words ? ` · ${reader.words}` : ""));
    if (reader.details) box.append(el("details", { class: "why" }, el("summary", {}, "Why? (the figures)"),
      el("p", {}, reader.details)));
    if (data.stale) box.append(el("p", { class: "stale" }, "A passage this answer cites has changed or is gone."));
    if (question !== undefined) {
      const copy = el("button", { type: "button", class: "small", onclick: async () => {
        try { await navigator.clipboard.writeText(copyText(data)); copy.textContent = "Copied"; }
        catch (e) { copy.textContent = "Copy failed"; }
        setTimeout(() => { copy.textContent = "Copy"; }, 1500);
      } }, "Copy");
      box.append(el("div", { class: "actions" }, answered ? copy : null,
        el("button", { type: "button", class: "small ask-again", onclick: () => { $("question").value = question; send(); } }, "Ask again")));
    }
    const cited = new Set(data.citations || []);
    const sources = data.sources || [];
    let shown = sources.filter((s) => cited.has(s.label));
    const heading = shown.length ? "Sources" : "Nearest passages";
    if (!shown.length) shown = sources.slice(0, 5);
    if (shown.length) {
      const quotes = (data.claims || []).map((c) => c.evidence && c.evidence.quote);
      // the nearest passages of an unanswered question are said to be so, visibly: cards under a
      // refusal must not read as the sources of an answer (and carry no [S1] labels)
      const nearest = heading === "Nearest passages" && !answered;
      box.append(el("h3", { class: nearest ? "sources-head" : "sr" }, nearest ? "Nearest passages found (not an answer)" : heading),
        el("ul", { class: "sources", "aria-label": heading },
          shown.map((s) => sourceCard(nearest ? { ...s, label: "" } : s, quotes))));
    }
    // a badge whose card is not shown (an uncited source) gets the card too
    for (const b of box.querySelectorAll(".badge")) {
      const label = b.dataset.label;
      if (!box.querySelector(`.card[data-label="${label}"]`)) {
        const s = sources.find((x) => x.label === label);
        const list = box.querySelector(".sources");
        if (s && list) list.append(sourceCard(s, []));
      }
    }
  }

  // A streamed text is a draft until the server's verdict: dimmed, labelled, never mistaken for an answer.
  function draftBox(label) {
    const text = el("div", { class: "draft-text" });
    const box = el("div", { class: "draft", "aria-busy": "true" },
      el("p", { class: "draft-label" }, el("span", { class: "spinner", "aria-hidden": "true" }), label), text);
    return { box, text };
  }

  function turnItem(question) {
    const standalone = el("p", { class: "standalone", hidden: true });
    const answer = el("div", { class: "answer-box" });
    const item = el("li", { class: "turn" }, el("p", { class: "question" }, question), standalone, answer);
    return { item, standalone, answer };
  }

  function showStandalone(node, data) {
    if (!data.rewritten) return;
    node.hidden = false;
    node.textContent = `read as: ${data.question}`;
  }

  function progress(text) { $("ask-status").textContent = text; }

  function asking(on) {
    $("ask-button").hidden = on;
    $("stop-button").hidden = !on;
  }

  // Stop the answer being written (Stop, Esc, New conversation, another conversation): its stream is
  // closed, the server stops generating and saves nothing; its turn leaves the screen.
  function stopAsk(words) {
    const current = state.asking;
    if (!current) return false;
    state.asking = null;
    current.controller.abort();
    current.turn.item.remove();
    asking(false);
    progress(words || "");
    return true;
  }

  async function send() {
    const question = $("question").value.trim();
    if (!question || state.asking) return;
    const turn = turnItem(question);
    const draft = draftBox("Draft · checking against the book…");
    turn.answer.append(draft.box);
    $("turns").append(turn.item);
    const current = { controller: new AbortController(), turn, conversation: state.conversation };
    state.asking = current;
    asking(true);
    reading.passages = 0;
    progress("sending the question…");
    $("question").value = "";
    $("question").focus();
    const book = state.chosen.size ? [...state.chosen] : null;
    let wrote = false;
    try {
      await stream("/web/api/ask", { question, conversation_id: current.conversation, book }, (name, data) => {
        if (state.asking !== current) return;  // stopped, or the reader moved on
        if (name === "text") {
          if (!wrote) { wrote = true; progress("writing the answer… (a draft until it is checked)"); }
          draft.text.append(data.text);
        } else if (name === "phase" && !wrote) progress(`${phaseWords(data)}…`);
        else if (name === "phase") progress(`${phaseWords(data)}… (the text above is a draft until it is checked)`);
        else if (name === "standalone") showStandalone(turn.standalone, data);
        else if (name === "done") {
          state.asking = null;
          renderAnswer(turn.answer, data, question);
          state.conversation = data.conversation_id;
          progress("");
          asking(false);
          const reader = data.reader || {};
          announce(`Answer: ${reader.status || data.status}. ${reader.words || ""} ${(data.answer || "").replace(LABEL, "").slice(0, 300)}`);
          loadConversations();
        } else if (name === "error") {
          state.asking = null;
          turn.answer.replaceChildren(el("p", { class: "error", role: "alert" }, data.message));
          progress("");
          asking(false);
        }
      }, current.controller.signal);
    } catch (error) {
      if (state.asking !== current) return;  // aborted on purpose
      state.asking = null;
      asking(false);
      progress("");
      if (!(error instanceof Unauthorized)) turn.answer.replaceChildren(el("p", { class: "error", role: "alert" }, error.message));
    }
  }

  $("ask-form").addEventListener("submit", (event) => { event.preventDefault(); send(); });
  $("question").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) { event.preventDefault(); send(); }
  });
  $("stop-button").addEventListener("click", () => { stopAsk("Stopped: nothing was saved."); $("question").focus(); });
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape" || $("page-view").open) return;
    if (stopAsk("Stopped: nothing was saved.")) { event.preventDefault(); $("question").focus(); }
    else if (document.body.classList.contains("drawer-open")) drawer(false);
  });

  // -- conversations -----------------------------------------------------------------------------
  async function loadConversations() {
    const rows = await getJSON("/web/api/conversations");
    $("conversations").replaceChildren(...rows.map((c) => {
      const open = el("button", { type: "button", class: "open", "data-id": c.id, "aria-current": String(c.id === state.conversation),
        onclick: () => { drawer(false); openConversation(c.id); } }, el("span", { class: "title" }, c.title),
        el("span", { class: "dim when" }, `${when(c.updated_at || c.created_at)} · ${c.turn_count} turn${c.turn_count === 1 ? "" : "s"}`));
      const rename = el("button", { type: "button", class: "icon rename", "aria-label": `Rename “${c.title}”`, title: "Rename",
        onclick: () => renameConversation(c, item) }, "✎");
      const remove = el("button", { type: "button", class: "icon delete", "aria-label": `Delete “${c.title}”`, title: "Delete",
        onclick: () => deleteConversation(c) }, "✕");
      const item = el("li", { "data-id": c.id }, open, el("span", { class: "row-actions" }, rename, remove));
      return item;
    }));
  }

  function renameConversation(c, item) {
    const input = el("input", { type: "text", class: "rename-input", value: c.title, "aria-label": "New title" });
    let done = false;  // saved or cancelled once: Escape's redraw blurs the box, which must not save
    const save = async () => {
      if (done) return;
      done = true;
      const title = input.value.trim();
      if (title && title !== c.title) {
        try { await postJSON(`/web/api/conversations/${c.id}/rename`, { title }); } catch (e) { announce(e.message); }
      }
      await loadConversations();
    };
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter") { event.preventDefault(); save(); }
      if (event.key === "Escape") { event.stopPropagation(); done = true; loadConversations(); }
    });
    input.addEventListener("blur", save, { once: true });
    item.replaceChildren(input);
    input.focus();
    input.select();
  }

  async function deleteConversation(c) {
    if (!window.confirm(`Delete the conversation “${c.title}” and its answers?`)) return;
    await postJSON(`/web/api/conversations/${c.id}/delete`, {});
    if (state.conversation === c.id) newConversation();
    await loadConversations();
    announce("Conversation deleted.");
  }

  async function openConversation(id) {
    stopAsk("");
    state.conversation = id;
    const data = await getJSON(`/web/api/conversations/${id}`);
    if (state.conversation !== id) return;  // another was chosen meanwhile
    showView("ask");
    $("conversation-title").textContent = `${data.title} · ${when(data.created_at)}${data.stale ? " · a cited passage has changed since" : ""}`;
    $("turns").replaceChildren();
    for (const t of data.turns) {
      const turn = turnItem(t.question);
      showStandalone(turn.standalone, { rewritten: t.rewritten, question: t.standalone_question });
      renderAnswer(turn.answer, t, t.question);
      $("turns").append(turn.item);
    }
    await loadConversations();
    $("question").focus();
  }

  function newConversation() {
    stopAsk("");
    state.conversation = null;
    $("turns").replaceChildren();
    $("conversation-title").textContent = "";
  }

  $("new-conversation").addEventListener("click", () => {
    newConversation();
    drawer(false);
    loadConversations();
    $("question").focus();
  });

  // -- the page view: a PDF's page image, or the passage in its section's text ------------------
  // On a wide screen it is a panel at the right and the answer column narrows: what the reader
  // clicked (a badge, a card's button) is scrolled back to where it was, so nothing moves under them.
  const page = { passage: null, number: null, count: null, title: "", labels: {}, zoom: 1 };

  function keepInPlace(anchor, change) {
    const before = anchor && anchor.isConnected ? anchor.getBoundingClientRect().top : null;
    change();
    if (before === null) return;
    const moved = anchor.getBoundingClientRect().top - before;  // the layout after the change
    if (Math.abs(moved) >= 1) window.scrollBy(0, moved);
  }

  async function openPage(passage, number, title, anchor) {
    page.passage = passage;
    $("page-title").textContent = title || "";
    $("page-error").textContent = "";
    if (!$("page-view").open) keepInPlace(anchor, () => $("page-view").showModal());
    try {
      const info = await getJSON(`/web/api/passages/${passage}`);
      page.count = info.page_count;
      page.title = info.book_title;
      page.labels = info.page_labels || {};
      const kind = info.format || "";
      $("page-open").textContent = `Open ${KINDS[kind] || "the book's file"}${kind === "pdf" ? " at this page" : ""}`;
      if (kind && kind !== "pdf") return showText(info, kind);
      $("page-text").hidden = true;
      $("page-frame").hidden = false;
      for (const id of ["page-prev", "page-next", "page-number", "page-zoom"]) $(id).hidden = false;
      showPage(number || info.page, !number);
    } catch (error) {
      $("page-error").textContent = error.message;
    }
  }

  async function showText(info, kind) {
    $("page-frame").hidden = true;
    $("page-image").removeAttribute("src");
    for (const id of ["page-prev", "page-next", "page-number", "page-zoom"]) $(id).hidden = true;
    const section = await getJSON(`/web/api/passages/${info.passage_id}/section`);
    const where = (section.section_path || []).join(" › ");
    $("page-title").textContent = `${section.book_title}${where ? ` · ${where}` : ""}`;
    const box = $("page-text");
    box.hidden = false;
    box.replaceChildren(...section.parts.map((part, i) => i === section.at
      ? el("p", {}, el("mark", { class: "passage", tabindex: "-1" }, part.text)) : el("p", {}, part.text)));
    $("page-open").href = `/web/api/passages/${info.passage_id}/file`;
    $("page-open").hidden = section.file_status !== "ok";
    const hit = box.querySelector("mark.passage");
    if (hit) hit.scrollIntoView({ block: "center" });
  }

  // A page's name as the book prints it ("p. xii", "p. 116"), else its place in the file.
  function pageName(number) {
    const label = page.labels[String(number)];
    return label ? `p. ${label}` : `page ${number} of the file`;
  }

  // `best`: the page of the passage where most of it is found (show --image's choice), else page `number`
  function showPage(number, best) {
    page.number = number;
    const img = $("page-image");
    img.alt = `${pageName(number)} of ${page.title}, the passage highlighted`;
    img.src = `/web/api/passages/${page.passage}/page.png${best ? "" : `?page=${number}`}`;
    $("page-title").textContent = `${page.title} · ${pageName(number)}`;
    const label = page.labels[String(number)];
    $("page-number").textContent = label && label !== String(number)
      ? `p. ${label} · page ${number} of ${page.count} in the file` : `page ${number} of ${page.count}`;
    $("page-prev").disabled = number <= 1;
    $("page-next").disabled = number >= page.count;
    $("page-open").hidden = false;
    $("page-open").href = `/web/api/passages/${page.passage}/file#page=${number}`;
  }

  // Zoom: the image is drawn at `zoom` times the frame's width and the frame scrolls (a finger or
  // the mouse wheel moves around it); a tap or click zooms in at that point, and out again.
  const ZOOMS = [1, 1.5, 2, 3, 4];
  function setZoom(zoom, at) {
    const frame = $("page-frame");
    const rect = frame.getBoundingClientRect();
    const x = at ? at.x - rect.left : frame.clientWidth / 2, y = at ? at.y - rect.top : frame.clientHeight / 2;
    const fx = (frame.scrollLeft + x) / (frame.scrollWidth || 1), fy = (frame.scrollTop + y) / (frame.scrollHeight || 1);
    page.zoom = zoom;
    $("page-image").style.width = `${zoom * 100}%`;
    frame.classList.toggle("zoomed", zoom > 1);
    frame.scrollLeft = fx * frame.scrollWidth - x;  // the point under the finger stays under it
    frame.scrollTop = fy * frame.scrollHeight - y;
    $("zoom-out").disabled = zoom <= ZOOMS[0];
    $("zoom-in").disabled = zoom >= ZOOMS[ZOOMS.length - 1];
    $("zoom-fit").disabled = zoom === 1;
  }
  $("zoom-in").addEventListener("click", () => setZoom(ZOOMS.find((z) => z > page.zoom) || page.zoom));
  $("zoom-out").addEventListener("click", () => setZoom([...ZOOMS].reverse().find((z) => z < page.zoom) || 1));
  $("zoom-fit").addEventListener("click", () => setZoom(1));
  $("page-image").addEventListener("click", (event) => setZoom(page.zoom > 1 ? 1 : 2.5, { x: event.clientX, y: event.clientY }));
  setZoom(1);

  $("page-image").addEventListener("error", () => {
    if ($("page-image").getAttribute("src")) $("page-error").textContent = "This page cannot be shown: the book's file is no longer where it was read from.";
  });
  $("page-prev").addEventListener("click", () => showPage(page.number - 1));
  $("page-next").addEventListener("click", () => showPage(page.number + 1));
  $("page-close").addEventListener("click", () => $("page-view").close());

  // -- search ------------------------------------------------------------------------------------
  $("search-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const q = $("search-input").value.trim();
    if (!q) return;
    $("search-status").textContent = "searching…";
    try {
      const books = [...state.chosen].map((b) => `&book=${encodeURIComponent(b)}`).join("");
      const hits = await getJSON(`/web/api/search?q=${encodeURIComponent(q)}${books}`);
      $("search-results").replaceChildren(...hits.map((h) => sourceCard({ ...h, label: "" }, [])));
      $("search-status").textContent = hits.length ? `${hits.length} passages found` : "Nothing found.";
    } catch (error) {
      $("search-status").textContent = error.message;
    }
  });

  // -- topics and summaries ----------------------------------------------------------------------
  async function loadTopics() {
    const topics = await getJSON("/summaries");
    const items = [];
    for (const t of topics) {
      const history = await getJSON(`/summaries/${encodeURIComponent(t.topic_key)}/history`);
      items.push(el("li", {}, el("h3", {}, t.topic),
        el("ul", { class: "chips", "aria-label": `summaries of ${t.topic}` }, history.summaries.map((s) => el("li", {},
          el("button", { type: "button", class: "chip", "aria-pressed": "false", "data-topic": t.topic_key, "data-number": s.number,
            onclick: (event) => showSummary(t.topic_key, s.number, event.currentTarget) },
          `Summary #${s.number} · ${(s.created_at || "").slice(0, 10)}`,
          s.status === "stale" ? " (stale)" : ""))))));
    }
    $("topics").replaceChildren(...items);
  }

  async function showSummary(topic, number, chip) {
    for (const c of document.querySelectorAll(".chip")) c.setAttribute("aria-pressed", String(c === chip));
    renderSummary(await getJSON(`/web/api/summaries/${encodeURIComponent(topic)}?number=${number}`));
  }

  // The server's sanitised HTML, copied through an allowlist of tags (no attribute but a link's
  // http(s) href); its [S1] labels become badges.
  const SAFE = new Set(["P", "H4", "H5", "H6", "UL", "OL", "LI", "STRONG", "EM", "CODE", "PRE", "BLOCKQUOTE", "HR",
    "BR", "TABLE", "THEAD", "TBODY", "TR", "TH", "TD", "DEL", "A"]);
  function safeCopy(from, to, scope) {
    for (const node of from.childNodes) {
      if (node.nodeType === Node.TEXT_NODE) to.append(...withBadges(node.textContent, scope));
      else if (node.nodeType === Node.ELEMENT_NODE) {
        if (!SAFE.has(node.tagName)) { to.append(...withBadges(node.textContent, scope)); continue; }
        const copy = document.createElement(node.tagName.toLowerCase());
        const href = node.getAttribute("href");
        if (node.tagName === "A" && href && /^https?:\/\//i.test(href)) {
          copy.setAttribute("href", href); copy.setAttribute("rel", "noopener noreferrer nofollow"); copy.setAttribute("target", "_blank");
        }
        safeCopy(node, copy, scope);
        to.append(copy);
      }
    }
  }

  function renderSummary(data) {
    const box = $("summary");
    box.replaceChildren(el("h3", {}, `${data.topic} · Summary #${data.number}`,
      el("span", { class: "dim" }, ` · ${(data.created_at || "").slice(0, 10)}`)));
    if (data.status === "stale") box.append(el("p", { class: "stale" }, "A passage it cites has changed or is gone."));
    const body = el("div", {});
    renderAnswer(body, { answer: data.text, status: data.kind, claims: [], citations: data.citations, sources: data.sources,
      reader: { status: data.kind === "extractive" ? "Sentences quoted from the books" : "Summary of the books", words: "", details: "" } });
    const text = body.querySelector(".answer");
    if (text && data.html !== undefined) {
      const parsed = new DOMParser().parseFromString(`<body>${data.html}</body>`, "text/html");
      const md = el("div", { class: "answer markdown" });
      safeCopy(parsed.body, md, body);
      text.replaceWith(md);
    }
    box.append(body);
  }

  const SUMMARY_PHASES = { ...PHASES, prompt: "reading the passages found", claims: "checking each sentence against the book" };
  $("summary-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const topic = $("topic").value.trim();
    if (!topic || state.summarising) return;
    state.summarising = true;
    $("generate").disabled = true;
    const draft = draftBox("Draft · checking against the book…");
    $("summary").replaceChildren(draft.box);
    $("summary-status").textContent = "retrieving passages…";
    let wrote = false;
    try {
      await stream("/web/api/summaries", { topic, keep_weak: $("keep-weak").checked }, (name, data) => {
        if (name === "text") {
          if (!wrote) { wrote = true; $("summary-status").textContent = "writing the summary…"; }
          draft.text.append(data.text);
        } else if (name === "phase") $("summary-status").textContent = `${phaseWords(data, SUMMARY_PHASES)}…`;
        else if (name === "done") { $("summary-status").textContent = `saved as Summary #${data.number}`; renderSummary(data); loadTopics(); }
        else if (name === "error") {
          $("summary-status").textContent = "";
          const said = [el("p", { class: "error", role: "alert" }, data.message,
            data.weak ? " Tick “Keep a weak summary” and generate again to save one anyway." : "")];
          if (data.weak && draft.text.textContent) {  // the text stays readable, marked as not saved
            draft.box.querySelector(".draft-label").textContent = "Not saved · weak draft";
            draft.box.removeAttribute("aria-busy");
            said.push(draft.box);
          }
          $("summary").replaceChildren(...said);
        }
      });
    } catch (error) {
      if (!(error instanceof Unauthorized)) $("summary").replaceChildren(el("p", { class: "error", role: "alert" }, error.message));
      $("summary-status").textContent = "";
    } finally {
      state.summarising = false;
      $("generate").disabled = false;
    }
  });

  // -- books -------------------------------------------------------------------------------------
  async function loadBooks() {
    const books = await getJSON("/books");
    state.books = books;
    $("books").replaceChildren(...books.map((b) => {
      const unreadable = (b.unreadable_pages || []).length;
      const warnings = (b.warnings || []).length;
      const health = unreadable || warnings ? `${unreadable} pages could not be read, ${warnings} warnings` : "read well";
      const ocr = b.page_count && b.ocr_pages ? ` · ${Math.round(100 * b.ocr_pages / b.page_count)}% read from images` : "";
      return el("li", { class: "book" }, el("h3", {}, b.title), el("p", { class: "dim" },
        `${(b.format || "").toUpperCase() || "book"} · ${b.page_count} pages · ${b.passages} passages · ${health}${ocr}`));
    }));
    fillBookChoice(books);
  }

  // -- the book chooser: all books, or the ones ticked (a box finds a book by its title) ----------
  function fillBookChoice(books) {
    const ids = new Set(books.map((b) => b.id));
    for (const id of [...state.chosen]) if (!ids.has(id)) state.chosen.delete(id);
    $("book-options").replaceChildren(...books.map((b) => {
      const box = el("input", { type: "checkbox", value: b.id, checked: state.chosen.has(b.id),
        onchange: () => { if (box.checked) state.chosen.add(b.id); else state.chosen.delete(b.id); bookLabel(); } });
      return el("li", { "data-title": b.title.toLowerCase() }, el("label", {}, box, " ", b.title));
    }));
    filterBooks();
    bookLabel();
  }

  function bookLabel() {
    const chosen = state.books.filter((b) => state.chosen.has(b.id));
    const words = !chosen.length ? "All books" : chosen.length === 1 ? chosen[0].title : `${chosen.length} books`;
    $("book-choice").textContent = words;
    $("book-choice").setAttribute("aria-label", `Books to ask: ${chosen.length ? chosen.map((b) => b.title).join(", ") : "all books"}`);
    $("book-choice").title = chosen.map((b) => b.title).join("\n");
    $("book-count").textContent = chosen.length ? `${chosen.length} of ${state.books.length} chosen` : "asking all books";
  }

  function filterBooks() {
    const words = $("book-filter").value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    for (const li of $("book-options").children) li.hidden = !words.every((w) => li.dataset.title.includes(w));
  }

  function bookPanel(open) {
    $("book-panel").hidden = !open;
    $("book-choice").setAttribute("aria-expanded", String(open));
    if (open) { $("book-filter").value = ""; filterBooks(); $("book-filter").focus(); }
  }
  $("book-choice").addEventListener("click", () => bookPanel($("book-panel").hidden));
  $("book-filter").addEventListener("input", filterBooks);
  $("book-filter").addEventListener("keydown", (event) => {
    if (event.key === "Enter") {  // Enter ticks the one book left by the filter
      event.preventDefault();
      const shown = [...$("book-options").children].filter((li) => !li.hidden);
      if (shown.length === 1) shown[0].querySelector("input").click();
    }
  });
  $("book-all").addEventListener("click", () => { state.chosen.clear(); fillBookChoice(state.books); });
  $("book-done").addEventListener("click", () => { bookPanel(false); $("book-choice").focus(); });
  $("book-panel").addEventListener("keydown", (event) => {
    if (event.key === "Escape") { event.stopPropagation(); bookPanel(false); $("book-choice").focus(); }
  });
  document.addEventListener("click", (event) => {
    if (!$("book-panel").hidden && !event.target.closest(".book-pick")) bookPanel(false);
  });

  $("upload-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const file = $("upload").files[0];
    if (!file) return;
    $("upload-status").textContent = `uploading ${file.name}…`;
    try {
      const result = await (await api(`/web/api/upload?name=${encodeURIComponent(file.name)}`, { method: "POST", headers: { "Content-Type": "application/octet-stream" }, body: file })).json();
      $("upload-status").textContent = result.map((r) => `${file.name}: ${r.status}${r.error ? ` (${r.error})` : ""}`).join("; ");
      loadBooks();
    } catch (error) {
      $("upload-status").textContent = error.message;
    }
  });

  // -- start -------------------------------------------------------------------------------------
  async function start() {
    let session;
    try { session = await getJSON("/web/api/session"); } catch (error) { return; }
    $("key-view").hidden = true;
    $("app").hidden = false;
    $("tabs").hidden = false;
    $("drawer-toggle").hidden = false;
    $("model").textContent = session.model ? `model: ${session.model}` : "no model: answers quote the books";
    state.ingest = session.ingest;
    $("upload-form").hidden = !session.ingest;
    await Promise.all([loadConversations(), getJSON("/books").then((books) => { state.books = books; fillBookChoice(books); })]);
    document.body.dataset.ready = "true";
  }
  start();
})();
