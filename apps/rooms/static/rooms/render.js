// The DOM side of the room: redraws what the store marked dirty, at most once per animation
// frame (a stream of tokens costs one layout per frame, not one per token). Every piece of
// text from a person or a model goes in through textContent or the sanitizer in markdown.js.
// Its own words come from Django's JavaScript catalog (gettext, ngettext, interpolate: /jsi18n/).

import { addCodeCopyButtons, copyButton } from "./copy.js";
import { setMarkdown } from "./markdown.js";
import { renderSources } from "./sources.js";
import { personName } from "./store.js";
import { renderElicitations } from "./elicitation.js";
import { renderInitials } from "./initials.js";
import { createCard, renderCard } from "./tools.js";
import { lastTurn } from "./message_actions.js";
import { renderTitle, renderVersions } from "./versions.js";

const QUEUED_TEXT = gettext("queued, joins at the next step");
const CONTEXT_TEXT = gettext("the agent reads it at its next step");
const WAKES_TEXT = gettext("called the agent");
const LARGE_TEXT = 30000; // past this, Markdown is re-rendered at most every LARGE_TEXT_MS
const LARGE_TEXT_MS = 250;
const NEAR_BOTTOM_PX = 120;

function element(tag, className, text) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined) el.textContent = text;
  return el;
}

function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}

function flag(article, className, text) {
  // A small line under a message (queued, sending, failed, stopped): present only with text.
  let el = article.querySelector(`:scope > .${className}`);
  if (!text) {
    if (el) el.remove();
    return;
  }
  if (!el) {
    el = element("p", `message-flag ${className}`);
    article.append(el);
  }
  setText(el, text);
}

function isEmpty(msg) {
  // A message with nothing to show (a reply stopped before its first word) is left out.
  return !msg.text && !msg.thinking && !msg.images.length && !msg.calls.length && !msg.wiki.length
    && !msg.forks.length && msg.status !== "streaming" && !msg.sending && !msg.failed;
}

function localLink(text, href) {
  // Only the server's own paths become links (a path, never a scheme or another host).
  const ok = typeof href === "string" && href.startsWith("/") && !href.startsWith("//");
  const el = element(ok ? "a" : "span", "wiki-link", text);
  if (ok) el.href = href;
  return el;
}

function wikiLine(change) {
  // "<author> changed <path> — view · diff"
  const li = element("li", "wiki-change");
  li.dataset.commit = change.commit;
  li.dataset.path = change.path;
  li.append(element("span", "wiki-author", change.author || gettext("someone")),
            document.createTextNode(change.created ? gettext(" created ") : gettext(" changed ")),
            element("code", "wiki-path", change.path));
  if (change.summary) li.append(element("span", "wiki-summary", `: ${change.summary}`));
  if (change.merged) li.append(element("span", "wiki-merged",
                                                gettext(" (merged with a concurrent change)")));
  li.append(document.createTextNode(" — "), localLink(gettext("view"), change.pageUrl),
            document.createTextNode(" · "), localLink(gettext("diff"), change.diffUrl));
  return li;
}

function forkLine(fork, url) {
  // "<person> forked the conversation here: “<the fork's title>”"
  const li = element("li", "fork-line");
  li.dataset.conversationId = String(fork.id);
  const link = element("a", "fork-link", interpolate(gettext("“%(title)s”"), { title: fork.title }, true));
  link.href = url;
  li.append(document.createTextNode(interpolate(gettext("%(name)s forked the conversation here: "),
                                                { name: personName(fork.by) }, true)), link);
  return li;
}

function renderImages(msg, article) {
  // A message's images, by URL (the server serves them to the team's members only).
  let box = article.querySelector(":scope > .images");
  const urls = msg.images.map((image) => image.url);
  if (box && box.dataset.urls === urls.join(" ")) return;
  if (!urls.length) {
    if (box) box.remove();
    return;
  }
  if (!box) {
    box = element("div", "images");
    article.querySelector(".body").after(box);
  }
  box.dataset.urls = urls.join(" ");
  box.replaceChildren(...urls.map((url) => {
    const link = element("a");
    link.href = url;
    link.target = "_blank";
    link.rel = "noopener";
    const img = element("img");
    img.src = url;
    img.alt = gettext("attached image");
    img.loading = "lazy";
    link.append(img);
    return link;
  }));
}

function fmt(n) {
  return typeof n === "number" ? n.toLocaleString() : "–";
}

export class Renderer {
  constructor(root, store) {
    this.root = root;
    this.store = store;
    this.transcript = root.querySelector("#transcript");
    this.articles = new WeakMap(); // message -> <article>
    this.messageOf = new WeakMap(); // <article> -> message (what its copy button copies)
    this.cards = new WeakMap(); // call -> .tool-card
    this.rendered = new WeakMap(); // message -> {text, thinking, at}
    this.scheduled = false;
    this.typingTimer = null;
  }

  schedule() {
    if (this.scheduled) return;
    this.scheduled = true;
    const run = () => this.frame();
    // Hidden tabs get no animation frames: draw them at a slow pace instead.
    if (document.hidden) setTimeout(run, 150);
    else requestAnimationFrame(run);
  }

  frame() {
    this.scheduled = false;
    const store = this.store;
    const dirty = store.takeDirty();
    const stick = this.nearBottom() && !dirty.prepended;
    const doc = document.scrollingElement || document.documentElement;
    const fromBottom = doc.scrollHeight - doc.scrollTop; // older messages keep the view still
    if (dirty.role) this.renderRole();
    for (const msg of dirty.messages) this.renderMessage(msg);
    if (dirty.order || dirty.messages.size) this.renderOrder(); // cheap when nothing moved
    if (dirty.prepended) doc.scrollTop = doc.scrollHeight - fromBottom;
    if (dirty.history) this.renderHistory();
    if (dirty.run) this.renderRun();
    else if (dirty.order || dirty.messages.size) this.renderAgentMode(); // it follows the last turn
    if (dirty.run || dirty.messages.size || dirty.order) renderVersions(this.root, store, this);
    if (dirty.title) renderTitle(this.root, store);
    if (dirty.presence) this.renderPresence();
    if (dirty.typing) this.renderTyping();
    if (dirty.usage) this.renderUsage();
    if (dirty.notices) this.renderNotices();
    if (dirty.todos) this.renderTodos();
    if (dirty.elicitations || dirty.role) this.renderElicitations();
    if (dirty.settings && this.settingsUi) this.settingsUi.render(); // model_settings.js
    if (store.ready) this.transcript.setAttribute("aria-busy", "false");
    if (stick && (dirty.messages.size || dirty.order)) this.scrollToBottom();
  }

  renderElicitations() {
    const box = this.root.querySelector("#elicitations");
    if (box) renderElicitations(box, [...this.store.elicitations.values()], this.store.canWrite);
  }

  renderHistory() {
    const more = this.root.querySelector("#history-more");
    if (!more) return;
    more.hidden = this.store.before === null;
    more.disabled = this.store.loadingHistory;
    setText(more, this.store.loadingHistory ? gettext("Loading earlier messages…")
      : gettext("Load earlier messages"));
  }

  nearBottom() {
    const doc = document.scrollingElement || document.documentElement;
    return doc.scrollHeight - doc.scrollTop - doc.clientHeight < NEAR_BOTTOM_PX;
  }

  scrollToBottom() {
    const doc = document.scrollingElement || document.documentElement;
    doc.scrollTop = doc.scrollHeight;
  }

  // -- messages -------------------------------------------------------------------------------
  /** The text of the message `article` shows, as written (Markdown); "" for another element. */
  messageText(article) {
    const msg = this.messageOf.get(article);
    return msg ? msg.text : "";
  }

  articleFor(msg) {
    let article = this.articles.get(msg);
    if (!article) {
      article = element("article", "message");
      const head = element("header", "message-head");
      const badge = element("span", "initials");
      badge.setAttribute("aria-hidden", "true"); // the name follows: read it once
      head.append(badge, element("span", "author"), copyButton(gettext("Copy message")));
      article.append(head, element("div", "body"), element("div", "tools"));
      this.articles.set(msg, article);
      this.messageOf.set(article, msg);
    }
    return article;
  }

  renderMessage(msg) {
    const article = this.articleFor(msg);
    if (article.dataset.messageId !== msg.key) article.dataset.messageId = msg.key;
    article.dataset.role = msg.role;
    article.dataset.status = msg.status;
    article.classList.toggle("streaming", msg.status === "streaming");
    article.classList.toggle("summary", msg.summary);
    article.classList.toggle("superseded", !!msg.supersededBy);
    article.classList.toggle("mine", !!(msg.author && this.store.you
                                       && String(msg.author.id) === String(this.store.you.id)));
    const author = msg.summary ? gettext("Summary of the earlier conversation")
      : msg.role === "assistant" ? gettext("Agent")
        : msg.role === "tool" ? gettext("Tools") : personName(msg.author);
    setText(article.querySelector(".author"), author);
    renderInitials(article.querySelector(".initials"),
                   msg.role === "user" && !msg.summary ? msg.author : null);
    article.querySelector(".message-head > .copy").hidden = !msg.text;
    if (!this.renderText(msg, article)) this.store.touch(msg); // throttled: draw it later
    renderImages(msg, article);
    this.renderCalls(msg, article);
    this.renderWiki(msg, article);
    this.renderForks(msg, article);
    renderSources(article, article.querySelector(".body"), msg.sources);
    const empty = isEmpty(msg);
    const chat = this.store.agentMode === "mention";
    const mine = article.classList.contains("mine");
    flag(article, "queued", msg.queued && !msg.sending
      ? (chat && !msg.wakesAgent ? CONTEXT_TEXT : QUEUED_TEXT) : "");
    flag(article, "wakes", chat && mine && msg.wakesAgent ? WAKES_TEXT : "");
    flag(article, "sending", msg.sending ? gettext("sending…") : "");
    flag(article, "failed", msg.failed
      ? interpolate(gettext("not sent: %(reason)s"), { reason: msg.failed }, true) : "");
    flag(article, "stopped", msg.status === "cancelled" && !empty ? gettext("stopped") : "");
    flag(article, "interrupted", msg.status === "error" && !empty ? gettext("interrupted") : "");
    flag(article, "earlier", msg.supersededBy ? gettext("earlier version") : "");
  }

  renderText(msg, article) {
    const seen = this.rendered.get(msg) || { text: null, thinking: null, at: 0 };
    const now = performance.now();
    if (msg.status === "streaming" && msg.text.length > LARGE_TEXT && now - seen.at < LARGE_TEXT_MS
        && seen.text !== null) {
      this.schedule();
      return false;
    }
    if (seen.thinking !== msg.thinking) this.renderThinking(msg, article);
    if (seen.text !== msg.text) {
      const body = article.querySelector(".body");
      setMarkdown(body, msg.text);
      addCodeCopyButtons(body);
    }
    this.rendered.set(msg, { text: msg.text, thinking: msg.thinking, at: now });
    return true;
  }

  renderThinking(msg, article) {
    let details = article.querySelector(":scope > details.thinking");
    if (!msg.thinking) {
      if (details) details.remove();
      return;
    }
    if (!details) {
      details = element("details", "thinking");
      details.append(element("summary", null, gettext("Thinking")), element("div", "thinking-body"));
      article.querySelector(".body").before(details);
    }
    setMarkdown(details.querySelector(".thinking-body"), msg.thinking);
  }

  renderCalls(msg, article) {
    const box = article.querySelector(".tools");
    msg.calls.forEach((call, i) => {
      let card = this.cards.get(call);
      if (!card) {
        card = createCard();
        this.cards.set(call, card);
      }
      renderCard(card, call, this.store.canWrite);
      if (box.children[i] !== card) box.insertBefore(card, box.children[i] || null);
    });
    while (box.children.length > msg.calls.length) box.lastElementChild.remove();
  }

  renderWiki(msg, article) {
    let list = article.querySelector(":scope > ul.wiki-changes");
    if (!msg.wiki.length) {
      if (list) list.remove();
      return;
    }
    if (!list) {
      list = element("ul", "wiki-changes");
      list.setAttribute("aria-label", gettext("Wiki changes"));
      article.querySelector(".tools").after(list);
    }
    if (list.children.length !== msg.wiki.length) list.replaceChildren(...msg.wiki.map(wikiLine));
  }

  renderForks(msg, article) {
    let list = article.querySelector(":scope > ul.fork-lines");
    if (!msg.forks.length) {
      if (list) list.remove();
      return;
    }
    if (!list) {
      list = element("ul", "fork-lines");
      list.setAttribute("aria-label", gettext("Forks made here"));
      (article.querySelector(":scope > ul.wiki-changes") || article.querySelector(".tools")).after(list);
    }
    // the sidebar's pattern: /conversations/0/ with the id in place of the 0
    const pattern = this.root.querySelector("#conversation-nav").dataset.conversationUrl;
    if (list.children.length !== msg.forks.length) {
      list.replaceChildren(...msg.forks.map((fork) => forkLine(
        fork, pattern.replace(/\/0\/$/, `/${fork.id}/`))));
    }
  }

  renderOrder() {
    const wanted = [...this.store.placed, ...this.store.pending].filter((m) => !isEmpty(m));
    const placeholder = this.transcript.querySelector(".transcript-empty");
    if (placeholder && this.store.ready) {
      if (wanted.length) placeholder.remove();
      else setText(placeholder, gettext("No messages yet. Say hello to start the conversation."));
    }
    let cursor = this.transcript.firstElementChild;
    if (cursor && cursor.classList.contains("transcript-empty")) cursor = cursor.nextElementSibling;
    for (const msg of wanted) {
      const article = this.articleFor(msg);
      if (!article.dataset.messageId) this.renderMessage(msg);
      if (article === cursor) cursor = cursor.nextElementSibling;
      else this.transcript.insertBefore(article, cursor);
    }
    while (cursor) {
      const next = cursor.nextElementSibling;
      cursor.remove();
      cursor = next;
    }
  }

  // -- run, people, usage, notices ---------------------------------------------------------------
  runText() {
    const run = this.store.run;
    const named = (text, name) => interpolate(text, { name: personName(name) }, true);
    if (run) {
      if (run.stopping) return [named(gettext("Stopping — requested by %(name)s"), run.stopping),
                                "stopping"];
      let text = run.started_by ? named(gettext("Running — started by %(name)s"), run.started_by)
        : gettext("Running");
      if (run.status === "queued") {
        text = run.started_by ? named(gettext("Queued — started by %(name)s"), run.started_by)
          : gettext("Queued");
        return [text, "queued"];
      }
      if (run.status === "awaiting_approval") text += gettext(" · waiting for approval");
      if (run.status === "awaiting_input") text += gettext(" · waiting for an answer");
      if (run.turn) text += interpolate(gettext(" · step %(turn)s"), { turn: run.turn }, true);
      return [text, run.status || "running"];
    }
    const end = this.store.lastEnd;
    if (!end) return [gettext("Idle"), "idle"];
    switch (end.status) {
      case "completed": return [gettext("Completed"), "completed"];
      case "cancelled":
        return [end.stopped_by ? named(gettext("Stopped by %(name)s"), end.stopped_by)
          : gettext("Stopped"), "cancelled"];
      case "interrupted": return [gettext("Interrupted — the worker stopped responding"),
                                  "interrupted"];
      default: return [end.error_kind ? interpolate(gettext("Failed (%(kind)s)"),
                                                    { kind: end.error_kind }, true)
        : gettext("Failed"), end.status];
    }
  }

  renderRun() {
    const status = this.root.querySelector("#run-status");
    const [text, state] = this.runText();
    setText(status, text);
    status.dataset.status = state;
    const stop = this.root.querySelector('button[data-action="stop"]');
    if (stop) {
      const active = !!this.store.run && this.store.canWrite;
      stop.hidden = !active;
      stop.disabled = !!(this.store.run && this.store.run.stopping);
    }
    // "Compact now" starts a run of its own: offered while none is active.
    const compact = this.root.querySelector('button[data-action="compact"]');
    if (compact) compact.hidden = !!this.store.run || !this.store.canWrite;
    this.renderAgentMode();
  }

  renderAgentMode() {
    // In "mention" mode people talk among themselves: "Ask the agent" starts its turn. In
    // "always" mode it answers a person's message left without an answer (a fork that ends
    // with a question, a run that failed before its first word).
    const mode = this.store.agentMode;
    const ask = this.root.querySelector('button[data-action="ask-agent"]');
    if (ask) {
      ask.hidden = !(mode === "mention" || (this.store.ready && lastTurn(this.store).unanswered))
        || !!this.store.run || !this.store.canWrite;
    }
    const select = this.root.querySelector("#agent-mode");
    if (select && select.value !== mode) select.value = mode;
    this.root.dataset.agentMode = mode;
  }

  renderRole() {
    if (this.store.canWrite) return;
    // A viewer watches: no composer, no stop, no buttons on tool calls.
    const composer = this.root.querySelector("#composer");
    if (composer) {
      const note = element("p", "viewer-note",
                           gettext("You are watching as a viewer: you see everything but cannot send."));
      note.id = "viewer-note";
      composer.replaceWith(note);
    }
    this.root.querySelectorAll('button[data-action="stop"], button[data-action="compact"]')
      .forEach((button) => button.remove());
    this.root.querySelectorAll('.tool-approval button, form.ask-user').forEach((el) => el.remove());
  }

  renderPresence() {
    const list = this.root.querySelector("#presence");
    const items = this.store.present.map((person) => {
      const li = element("li", null, person.name);
      li.dataset.userId = String(person.id);
      if (String(person.id) === String(this.store.you.id)) {
        li.classList.add("me");
        li.append(element("span", "you-tag", gettext(" (you)")));
      }
      return li;
    });
    list.replaceChildren(...items);
  }

  renderTyping() {
    const typing = this.root.querySelector("#typing");
    const people = this.store.typers().map(personName);
    const text = people.length === 0 ? ""
      : people.length === 1 ? interpolate(gettext("%(name)s is typing…"), { name: people[0] }, true)
        : interpolate(gettext("%(names)s and %(last)s are typing…"),
                      { names: people.slice(0, -1).join(gettext(", ")), last: people.at(-1) }, true);
    setText(typing, text);
    clearTimeout(this.typingTimer);
    if (people.length) {
      this.typingTimer = setTimeout(() => {
        this.store.dirty.typing = true;
        this.schedule();
      }, 1000);
    }
  }

  renderUsage() {
    const box = this.root.querySelector("#usage");
    const u = this.store.usage;
    if (!u) return;
    const parts = [];
    if (u.context_window) {
      const pct = Math.min(100, Math.round((u.context_tokens / u.context_window) * 100));
      const line = element("div", "usage-context");
      const meter = element("meter");
      meter.min = 0;
      meter.max = u.context_window;
      meter.value = u.context_tokens;
      meter.low = u.context_window * 0.6;
      meter.high = u.context_window * 0.85;
      meter.optimum = 0;
      line.append(element("span", "usage-label",
                          interpolate(gettext("Context %(pct)s full"), { pct: `${pct}%` }, true)),
                  meter,
                  element("span", "usage-numbers", interpolate(
                    gettext("%(used)s / %(window)s tokens"),
                    { used: fmt(u.context_tokens), window: fmt(u.context_window) }, true)));
      parts.push(line);
    }
    const t = u.usage || {};
    const count = (text, n) => interpolate(text, { n: fmt(n) }, true);
    const last = [count(gettext("%(n)s in"), t.input_tokens),
                  count(gettext("%(n)s out"), t.output_tokens)];
    if (t.cached_input_tokens) last.push(count(gettext("%(n)s cached"), t.cached_input_tokens));
    if (t.reasoning_tokens) last.push(count(gettext("%(n)s reasoning"), t.reasoning_tokens));
    parts.push(element("div", "usage-last",
                       interpolate(gettext("Last call: %(parts)s"), { parts: last.join(" · ") },
                                   true)));
    box.replaceChildren(...parts);
  }

  renderNotices() {
    const box = this.root.querySelector("#notices");
    box.replaceChildren(...this.store.notices.map((n) => {
      const div = element("div", `notice notice-${n.level}`);
      div.dataset.kind = n.kind;
      div.append(element("span", "notice-text", n.text));
      if (n.href) {
        const link = element("a", "notice-link", n.linkText || n.href);
        link.href = n.href;
        div.append(" ", link);
      }
      const close = element("button", "notice-dismiss", "×");
      close.type = "button";
      close.dataset.action = "dismiss";
      close.dataset.noticeId = n.id;
      close.setAttribute("aria-label", gettext("Dismiss"));
      div.append(close);
      return div;
    }));
  }

  renderTodos() {
    const section = this.root.querySelector("#todos-section");
    const list = this.root.querySelector("#todos");
    if (!list) return;
    list.replaceChildren(...this.store.todos.map((todo) => {
      const li = element("li", null, todo.content);
      li.dataset.status = todo.status;
      return li;
    }));
    if (section) section.hidden = this.store.todos.length === 0;
  }

  setConnection(state, text) {
    const el = this.root.querySelector("#connection");
    el.dataset.state = state;
    setText(el, text);
  }
}
