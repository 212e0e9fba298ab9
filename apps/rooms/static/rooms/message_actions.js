// Fork and Edit in the transcript (issue 19; REST: docs/protocol.md, "Versions and forks").
// Fork, on any complete message, makes a conversation whose history ends with it and opens it.
// Edit, on your own last message, opens an inline editor; saving replaces the message (the old
// one stays as an earlier version) and, as a sent message would, runs the agent again: always
// in an `always` conversation, in a `mention` one only when the new text mentions it. Both are
// offered to writers while no run is active; the server decides (a `conflict` is shown where
// it was asked for).

import { imeKey } from "./ime.js";

const BUSY_STATUSES = new Set(["streaming", "pending"]);

/** POST `body` (JSON) to `path` as this page's person. Returns `{data, refused}`: the response's
 * JSON, and the server's message (or the HTTP status) when it refused, else null. */
export async function apiPost(root, path, body = null) {
  let response;
  try {
    response = await fetch(path, {
      method: "POST", credentials: "same-origin",
      headers: { "X-CSRFToken": root.dataset.csrf, "Content-Type": "application/json" },
      body: body === null ? null : JSON.stringify(body),
    });
  } catch (error) {
    return { data: null, refused: error.message };
  }
  const data = await response.json().catch(() => ({}));
  return { data, refused: response.ok ? null : data.message || String(response.status) };
}

function lastPersonMessage(store) {
  // The newest current message a person wrote (what the server lets its author edit).
  return [...store.placed].reverse().find((m) => m.role === "user" && !m.summary
                                          && !m.supersededBy && m.author);
}

/** Where the transcript's last turn stands, as the server judges Regenerate: `answered`, an
 * answer (a current assistant message) follows the last message a person wrote (any answer
 * when that message is on a page not loaded); `unanswered`, a person's message is the last one
 * with none after it (a fork that ends with a question, a run that failed before answering),
 * which "Ask the agent" answers. */
export function lastTurn(store) {
  const last = lastPersonMessage(store);
  const after = last ? store.placed.slice(store.placed.indexOf(last) + 1) : store.placed;
  const answered = after.some((m) => m.role === "assistant" && !m.supersededBy);
  return { answered, unanswered: !!last && !answered };
}

function button(action, text, title) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = `message-action ${action}`;
  b.dataset.action = action;
  b.textContent = text;
  b.title = title;
  return b;
}

function actionsOf(article) {
  const head = article.querySelector(".message-head");
  let box = head.querySelector(":scope > .message-actions");
  if (!box) {
    box = document.createElement("span");
    box.className = "message-actions";
    box.append(button("fork", gettext("Fork"),
                      gettext("A new conversation whose history ends with this message")),
               button("edit-message", gettext("Edit"), ""));
    head.append(box);
  }
  return box;
}

function editWords(store) {
  // What Edit does, as a sent message would (docs/protocol.md, "Agent modes"): [button
  // title, save label].
  return store.agentMode === "mention"
    ? [gettext("Change your message; the old one stays as an earlier version. The agent answers only if the new text mentions it."),
       gettext("Save")]
    : [gettext("Change your message and ask again; the old one stays as an earlier version"),
       gettext("Save and ask again")];
}

/** Show or hide each message's Fork and Edit buttons (`store.placed`; `renderer.articleFor`). */
export function renderMessageActions(store, renderer) {
  const idle = store.canWrite && !store.run;
  const last = lastPersonMessage(store);
  const you = store.you ? String(store.you.id) : null;
  const [editTitle] = editWords(store);
  for (const msg of store.placed) {
    const box = actionsOf(renderer.articleFor(msg));
    const whole = idle && !msg.supersededBy && !msg.summary && !msg.sending && !msg.queued
      && !BUSY_STATUSES.has(msg.status) && msg.status === "complete"
      && (msg.role === "user" || msg.role === "assistant") && !!(msg.id || msg.engineId);
    box.querySelector(".fork").hidden = !whole;
    const edit = box.querySelector(".edit-message");
    edit.hidden = !(whole && msg === last && msg.id && msg.author && String(msg.author.id) === you);
    if (edit.title !== editTitle) edit.title = editTitle;
  }
}

async function rowId(root, msg) {
  // A message streamed live is known here by its engine id only; the newest page of the
  // transcript (GET .../messages, as the state frame has it) says its row id.
  if (msg.id) return msg.id;
  const response = await fetch(`/api/conversations/${root.dataset.conversationId}/messages`,
                               { credentials: "same-origin" });
  const page = response.ok ? await response.json() : { messages: [] };
  const row = (page.messages || []).find((m) => m.engine_id && m.engine_id === msg.engineId);
  if (row) msg.id = row.id;
  return msg.id;
}

async function fork(root, store, msg, control) {
  control.disabled = true;
  const id = await rowId(root, msg);
  const { data, refused } = id ? await apiPost(root, `/api/conversations/${root.dataset.conversationId}/fork`,
                                               { message_id: id })
    : { refused: gettext("This message is not stored yet: try again in a moment.") };
  control.disabled = false;
  if (refused) {
    store.notice("fork", "error", interpolate(gettext("Could not fork: %(why)s"), { why: refused },
                                              true), { replace: true });
    return;
  }
  window.location.assign(`/conversations/${data.id}/`);
}

function editor(article, msg, store) {
  // The inline editor under the message's text; Esc or Cancel closes it.
  let form = article.querySelector(":scope > form.message-edit");
  if (form) return form;
  form = document.createElement("form");
  form.className = "message-edit";
  const area = document.createElement("textarea");
  area.name = "text";
  area.rows = 3;
  area.required = true;
  area.value = msg.text;
  area.setAttribute("aria-label", gettext("Edited message"));
  const save = document.createElement("button");
  save.type = "submit";
  save.textContent = editWords(store)[1];
  const cancel = button("cancel-message-edit", gettext("Cancel"), gettext("Keep the message as it is"));
  const error = document.createElement("p");
  error.className = "message-edit-error";
  error.setAttribute("role", "alert");
  form.append(area, save, cancel, error);
  article.querySelector(".body").after(form);
  return form;
}

async function saveEdit(root, store, msg, form) {
  const text = form.querySelector("textarea").value.trim();
  if (!text) return;
  form.querySelectorAll("textarea, button").forEach((el) => { el.disabled = true; });
  const path = `/api/conversations/${root.dataset.conversationId}/messages/${msg.id}/edit`;
  const { refused } = await apiPost(root, path, { text });
  form.querySelectorAll("textarea, button").forEach((el) => { el.disabled = false; });
  if (refused) {
    form.querySelector(".message-edit-error").textContent = interpolate(
      gettext("Not saved: %(why)s"), { why: refused }, true);
    return;
  }
  form.remove(); // the new message and its run arrive as events, for everyone
}

/** Wire the transcript's Fork and Edit buttons (clicks and the editor's keys). */
export function setupMessageActions(root, store, renderer) {
  const messageOf = (el) => {
    const article = el.closest("article.message");
    return article ? [article, store.messages.get(article.dataset.messageId)] : [null, null];
  };
  root.addEventListener("click", (event) => {
    const control = event.target.closest("button[data-action]");
    if (!control || !root.contains(control)) return;
    const [article, msg] = messageOf(control);
    if (!msg) return;
    if (control.dataset.action === "fork") {
      fork(root, store, msg, control).then(() => renderer.schedule());
    } else if (control.dataset.action === "edit-message") {
      editor(article, msg, store).querySelector("textarea").focus();
    } else if (control.dataset.action === "cancel-message-edit") {
      control.closest("form").remove();
    }
  });
  root.addEventListener("submit", (event) => {
    const form = event.target.closest("form.message-edit");
    if (!form) return;
    event.preventDefault();
    const [, msg] = messageOf(form);
    if (msg) saveEdit(root, store, msg, form);
  });
  root.addEventListener("keydown", (event) => {
    const form = event.target.closest && event.target.closest("form.message-edit");
    if (form && event.key === "Escape" && !imeKey(event)) { // not an IME's own Escape
      event.stopPropagation(); // Esc closes the editor; it does not stop the run
      form.remove();
    }
  });
}
