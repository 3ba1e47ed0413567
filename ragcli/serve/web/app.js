// ragcli's page. Every text of a book, a question or an answer goes into the page as text
// (text nodes, textContent): never as HTML. Requests go to this server only (the CSP says so too).
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const LABEL = /\[([SF]\d+)\]/g;
  const MARKS = { supported: "✓", weak: "~", unsupported: "✗", no_source: "?", quoted: "❝" };
  const MARK_WORDS = { supported: "supported", weak: "weakly supported", unsupported: "not supported by the cited passage",
    no_source: "no source", quoted: "quoted from the book" };
  const state = { conversation: null, ingest: false, topic: null, busy: false };
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

  class Unauthorized extends Error {}

  async function api(path, options) {
    const response = await fetch(path, { credentials: "same-origin", ...(options || {}) });
    if (response.status === 401) { showKey(); throw new Unauthorized("the API key is needed"); }
    if (!response.ok) {
      let message = `${response.status} ${response.statusText}`;
      try { message = (await response.json()).error.message; } catch (e) { /* not JSON */ }
      throw new Error(message);
    }
    return response;
  }
  const getJSON = async (path) => (await api(path)).json();
  const postJSON = (path, body) => api(path, { method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body) });

  // Server-sent events of a POST (EventSource only GETs): onEvent(name, data) for each.
  async function stream(path, body, onEvent) {
    const response = await postJSON(path, body);
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

  // -- views -------------------------------------------------------------------------------------
  function showView(name) {
    for (const tab of document.querySelectorAll(".tab")) tab.setAttribute("aria-pressed", String(tab.dataset.view === name));
    for (const view of document.querySelectorAll(".view")) view.hidden = view.id !== `view-${name}`;
    if (name === "topics") loadTopics();
    if (name === "books") loadBooks();
  }
  for (const tab of document.querySelectorAll(".tab")) tab.addEventListener("click", () => showView(tab.dataset.view));

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
      onmouseenter: on, onfocus: on, onclick: () => { on(); const c = card(); if (c) openPage(c.dataset.passage, null, c.dataset.title); } },
      `[${label}]`);
  }

  function mark(claim) {
    const support = claim.support;
    if (!MARKS[support]) return null;
    const id = `quote-${++uid}`;
    const e = claim.evidence;
    const words = e ? [`[${e.label}] p. ${e.page_label}: “${e.quote}”`] : [MARK_WORDS[support]];
    return el("span", { class: `mark ${support}`, tabindex: 0, role: "note", "aria-describedby": id,
      "aria-label": MARK_WORDS[support] }, MARKS[support],
      el("span", { class: "quote", id, role: "tooltip" }, `${MARK_WORDS[support]}. `, ...words));
  }

  function sourceCard(source, quotes) {
    const pid = source.current_passage_id || source.passage_id;
    const where = [];
    if (source.section_path && source.section_path.length) where.push(source.section_path.join(" › "));
    where.push(`p. ${source.page_label} (pdf ${source.page})`);
    const text = el("p", { class: "text" });
    const quote = (quotes || []).find((q) => q && source.text.includes(q));
    if (quote) {
      const at = source.text.indexOf(quote);
      text.append(source.text.slice(0, at), el("mark", {}, quote), source.text.slice(at + quote.length));
    } else text.append(source.text);
    const gone = source.status && source.status !== "ok" && source.status !== "moved";
    return el("li", { class: "card", "data-label": source.label, "data-passage": pid, "data-title": source.book_title,
      "aria-label": `source ${source.label}` },
      el("h3", {}, `[${source.label}] `, source.book_title),
      el("p", { class: "where" }, where.join(" · ")),
      gone ? el("p", { class: "stale" }, `no longer in the corpus: ${source.reason || source.status}`) : null,
      text,
      gone ? null : el("button", { type: "button", onclick: () => openPage(pid, null, source.book_title) },
        `Show page ${source.page_label}`));
  }

  // The answer of a turn (live: ask's JSON; saved: the turn's), its marks and its source cards.
  function renderAnswer(box, data) {
    box.replaceChildren();
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
    if (data.notice) box.append(el("p", { class: "notice", role: "status" }, data.notice));
    if (data.stale) box.append(el("p", { class: "stale" }, "stale: a source this answer cites has changed or is gone"));
    box.append(el("p", { class: "status" }, `status: ${data.status}`));
    const cited = new Set(data.citations || []);
    const sources = data.sources || [];
    let shown = sources.filter((s) => cited.has(s.label));
    const heading = shown.length ? "Sources" : "Nearest passages";
    if (!shown.length) shown = sources.slice(0, 5);
    if (shown.length) {
      const quotes = (data.claims || []).map((c) => c.evidence && c.evidence.quote);
      box.append(el("h3", { class: "sr" }, heading),
        el("ul", { class: "sources", "aria-label": heading }, shown.map((s) => sourceCard(s, quotes))));
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

  function turnItem(question) {
    const standalone = el("p", { class: "standalone", hidden: true });
    const answer = el("div", { class: "answer-box" }, el("div", { class: "answer draft", "aria-busy": "true" }));
    const item = el("li", { class: "turn" }, el("p", { class: "question" }, question), standalone, answer);
    return { item, standalone, answer };
  }

  function showStandalone(node, data) {
    if (!data.rewritten) return;
    node.hidden = false;
    node.textContent = `read as: ${data.question}`;
  }

  $("ask-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const question = $("question").value.trim();
    if (!question || state.busy) return;
    state.busy = true;
    $("ask-button").disabled = true;
    const turn = turnItem(question);
    $("turns").append(turn.item);
    const draft = turn.answer.firstChild;
    $("ask-status").textContent = "asking…";
    try {
      await stream("/web/api/ask", { question, conversation_id: state.conversation }, (name, data) => {
        if (name === "text") draft.append(data.text);
        else if (name === "phase") $("ask-status").textContent = `${data.name}…`;
        else if (name === "standalone") showStandalone(turn.standalone, data);
        else if (name === "done") {
          renderAnswer(turn.answer, data);
          state.conversation = data.conversation_id;
          $("question").value = "";
          $("ask-status").textContent = "";
          loadConversations();
        } else if (name === "error") {
          turn.answer.replaceChildren(el("p", { class: "error", role: "alert" }, data.message));
          $("ask-status").textContent = "";
        }
      });
    } catch (error) {
      if (!(error instanceof Unauthorized)) turn.answer.replaceChildren(el("p", { class: "error", role: "alert" }, error.message));
      $("ask-status").textContent = "";
    } finally {
      state.busy = false;
      $("ask-button").disabled = false;
    }
  });

  // -- conversations -----------------------------------------------------------------------------
  async function loadConversations() {
    const rows = await getJSON("/web/api/conversations");
    $("conversations").replaceChildren(...rows.map((c) => el("li", {},
      el("button", { type: "button", "data-id": c.id, "aria-current": String(c.id === state.conversation),
        onclick: () => openConversation(c.id) }, c.title, el("span", { class: "dim" }, ` · ${c.turn_count} turn${c.turn_count === 1 ? "" : "s"}`)))));
  }

  async function openConversation(id) {
    const data = await getJSON(`/web/api/conversations/${id}`);
    state.conversation = data.id;
    showView("ask");
    $("conversation-title").textContent = `Conversation ${data.id}${data.stale ? " (stale turns marked)" : ""}`;
    $("turns").replaceChildren();
    for (const t of data.turns) {
      const turn = turnItem(t.question);
      showStandalone(turn.standalone, { rewritten: t.rewritten, question: t.standalone_question });
      renderAnswer(turn.answer, t);
      $("turns").append(turn.item);
    }
    await loadConversations();
    $("question").focus();
  }

  $("new-conversation").addEventListener("click", () => {
    state.conversation = null;
    $("turns").replaceChildren();
    $("conversation-title").textContent = "";
    loadConversations();
    $("question").focus();
  });

  // -- the page view -----------------------------------------------------------------------------
  const page = { passage: null, number: null, count: null };

  async function openPage(passage, number, title) {
    page.passage = passage;
    $("page-title").textContent = title || "";
    $("page-error").textContent = "";
    if (!$("page-view").open) $("page-view").showModal();
    try {
      const info = await getJSON(`/web/api/passages/${passage}`);
      page.count = info.page_count;
      $("page-title").textContent = `${info.book_title} · p. ${info.page_label}`;
      showPage(number || info.page, !number);
    } catch (error) {
      $("page-error").textContent = error.message;
    }
  }

  // `best`: the page of the passage where most of it is found (show --image's choice), else page `number`
  function showPage(number, best) {
    page.number = number;
    const img = $("page-image");
    img.alt = `page ${number} of ${$("page-title").textContent}, the passage highlighted`;
    img.src = `/web/api/passages/${page.passage}/page.png${best ? "" : `?page=${number}`}`;
    $("page-number").textContent = `pdf page ${number} of ${page.count}`;
    $("page-prev").disabled = number <= 1;
    $("page-next").disabled = number >= page.count;
    $("page-pdf").href = `/web/api/passages/${page.passage}/file#page=${number}`;
  }

  $("page-image").addEventListener("error", () => { $("page-error").textContent = "this page cannot be shown (the book's file moved or is gone?)"; });
  $("page-prev").addEventListener("click", () => showPage(page.number - 1));
  $("page-next").addEventListener("click", () => showPage(page.number + 1));
  $("page-close").addEventListener("click", () => $("page-view").close());

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
    renderSummary(await getJSON(`/summaries/${encodeURIComponent(topic)}?number=${number}`));
  }

  function renderSummary(data) {
    const box = $("summary");
    box.replaceChildren(el("h3", {}, `${data.topic} · Summary #${data.number}`,
      el("span", { class: "dim" }, ` · ${(data.created_at || "").slice(0, 10)}`)));
    if (data.status === "stale") box.append(el("p", { class: "stale" }, "stale: a source it cites has changed or is gone"));
    const body = el("div", {});
    renderAnswer(body, { answer: data.text, status: data.kind, claims: [], citations: data.citations, sources: data.sources });
    const text = body.querySelector(".answer");
    if (text) text.classList.add("text");
    box.append(body);
  }

  $("summary-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const topic = $("topic").value.trim();
    if (!topic || state.busy) return;
    state.busy = true;
    $("generate").disabled = true;
    const live = el("div", { class: "answer draft" });
    $("summary").replaceChildren(live);
    $("summary-status").textContent = "generating…";
    try {
      await stream("/web/api/summaries", { topic }, (name, data) => {
        if (name === "text") live.append(data.text);
        else if (name === "phase") $("summary-status").textContent = `${data.name}…`;
        else if (name === "done") { $("summary-status").textContent = `saved as Summary #${data.number}`; renderSummary(data); loadTopics(); }
        else if (name === "error") { $("summary-status").textContent = ""; $("summary").replaceChildren(el("p", { class: "error", role: "alert" }, data.message)); }
      });
    } catch (error) {
      if (!(error instanceof Unauthorized)) $("summary").replaceChildren(el("p", { class: "error", role: "alert" }, error.message));
      $("summary-status").textContent = "";
    } finally {
      state.busy = false;
      $("generate").disabled = false;
    }
  });

  // -- books -------------------------------------------------------------------------------------
  async function loadBooks() {
    const books = await getJSON("/books");
    $("books").tBodies[0].replaceChildren(...books.map((b) => {
      const unreadable = (b.unreadable_pages || []).length;
      const warnings = (b.warnings || []).length;
      const health = unreadable || warnings ? `${unreadable} unreadable pages, ${warnings} warnings` : "ok";
      const ocr = b.page_count ? `${Math.round(100 * (b.ocr_pages || 0) / b.page_count)}%` : "–";
      return el("tr", {}, el("td", {}, b.title, el("span", { class: "dim" }, ` (${b.id})`)), el("td", {}, b.page_count),
        el("td", {}, b.passages), el("td", {}, health), el("td", {}, ocr));
    }));
  }

  $("upload-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const file = $("upload").files[0];
    if (!file) return;
    $("upload-status").textContent = `uploading ${file.name}…`;
    try {
      const result = await (await api(`/web/api/upload?name=${encodeURIComponent(file.name)}`, { method: "POST", headers: { "Content-Type": "application/octet-stream" }, body: file })).json();
      $("upload-status").textContent = result.map((r) => `${r.path || file.name}: ${r.status}${r.error ? ` (${r.error})` : ""}`).join("; ");
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
    $("model").textContent = session.model ? `model: ${session.model}` : "no model: extractive answers";
    state.ingest = session.ingest;
    $("upload-form").hidden = !session.ingest;
    await loadConversations();
    document.body.dataset.ready = "true";
  }
  start();
})();
