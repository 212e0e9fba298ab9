// Earlier versions, regenerate, and the conversation's title (issue 19).
//
// A message the server marked superseded (an edit or a regenerated answer replaced it) stays in
// the transcript as an earlier version: one version of each slot (version_slots.js) is shown,
// the newest unless someone flips the ‹ k/n › switcher on its first message, and an earlier
// one is marked "earlier version". "Regenerate", Edit, Fork and renaming are REST and socket
// calls; what they change arrives as events (messages_superseded, title_changed) like anyone's.

import { imeKey } from "./ime.js";
import { apiPost, lastTurn, renderMessageActions, setupMessageActions } from "./message_actions.js";
import { editKey, hiddenMessages, versionSlots } from "./version_slots.js";

export function supersede(store, ev) {
  // messages_superseded: the listed messages became earlier versions of run ev.run_id, or of
  // message ev.message_id (a chat edit, no run). A message streamed live is known by its
  // engine id (its row id never reached this page).
  const ids = new Set((ev.message_ids || []).map(String));
  const engineIds = new Set(ev.engine_ids || []);
  const key = ev.run_id ?? editKey(ev.message_id);
  for (const msg of store.messages.values()) {
    if ((msg.id !== undefined && ids.has(String(msg.id))) || engineIds.has(msg.key)) {
      msg.supersededBy = key;
      store.touch(msg);
    }
  }
  store.dirty.run = true;
}

export function retitle(store, ev) {
  // title_changed: a person renamed the conversation, or the automatic title arrived.
  if (store.conversation) store.conversation.title = ev.title;
  store.dirty.title = true;
}

const chosen = new Map(); // String(slot id) -> {index, count}: the version this page shows

function chosenIndex(slot) {
  // The newest version, until someone flips; a new version arriving shows the new one.
  const id = String(slot.id);
  const seen = chosen.get(id);
  if (!seen || seen.count !== slot.versions.length) {
    chosen.set(id, { index: slot.versions.length - 1, count: slot.versions.length });
  }
  return chosen.get(id).index;
}

function switcher(head) {
  let nav = head.querySelector(":scope > .version-switch");
  if (!nav) {
    nav = document.createElement("nav");
    nav.className = "version-switch";
    nav.setAttribute("aria-label", gettext("Versions"));
    const button = (action, text, label) => {
      const b = document.createElement("button");
      b.type = "button";
      b.dataset.action = action;
      b.textContent = text;
      b.setAttribute("aria-label", label);
      return b;
    };
    const count = document.createElement("span");
    count.className = "version-count";
    nav.append(button("version-prev", "‹", gettext("Previous version")), count,
               button("version-next", "›", gettext("Next version")));
    head.append(nav);
  }
  return nav;
}

function renderSwitchers(store, renderer) {
  // Each slot shows one version; its first message carries the ‹ k/n › switcher.
  const slots = versionSlots(store.placed);
  const hidden = hiddenMessages(slots, chosenIndex);
  const wanted = new Map(); // article -> {slot, index, count}
  for (const slot of slots) {
    const index = chosenIndex(slot);
    const first = slot.versions[index][0];
    if (!hidden.has(first)) wanted.set(renderer.articleFor(first), { slot, index });
  }
  for (const msg of store.placed) {
    const article = renderer.articleFor(msg);
    if (article.hidden !== hidden.has(msg)) article.hidden = hidden.has(msg);
    const want = wanted.get(article);
    const head = article.querySelector(".message-head");
    if (!want) {
      head.querySelector(":scope > .version-switch")?.remove();
      continue;
    }
    const nav = switcher(head);
    const count = want.slot.versions.length;
    nav.dataset.slot = String(want.slot.id);
    nav.querySelector(".version-count").textContent = `${want.index + 1}/${count}`;
    nav.querySelector('[data-action="version-prev"]').disabled = want.index === 0;
    nav.querySelector('[data-action="version-next"]').disabled = want.index === count - 1;
  }
}

export function renderVersions(root, store, renderer) {
  renderSwitchers(store, renderer);
  renderMessageActions(store, renderer);
  const regenerate = root.querySelector('button[data-action="regenerate"]');
  if (regenerate) regenerate.hidden = !!store.run || !store.canWrite || !lastTurn(store).answered;
}

function flip(store, nav, step) {
  const seen = chosen.get(nav.dataset.slot);
  if (!seen) return;
  seen.index = Math.min(seen.count - 1, Math.max(0, seen.index + step));
  store.dirty.run = true; // redraws the switchers
}

export function renderTitle(root, store) {
  const title = store.conversation && store.conversation.title;
  const heading = root.querySelector(".room-title");
  if (!title || !heading || heading.textContent === title) return;
  heading.textContent = title;
  const parts = document.title.split(" · ");
  document.title = [title, ...parts.slice(1)].join(" · ");
}


export function setupVersions(root, store, socket, renderer) {
  const id = root.dataset.conversationId;
  setupMessageActions(root, store, renderer);
  root.addEventListener("click", async (event) => {
    const button = event.target.closest("button[data-action]");
    if (!button || !root.contains(button)) return;
    if (button.dataset.action === "version-prev" || button.dataset.action === "version-next") {
      flip(store, button.closest(".version-switch"), button.dataset.action === "version-next" ? 1 : -1);
      renderer.schedule();
    } else if (button.dataset.action === "regenerate") {
      button.disabled = true;
      const { refused } = await apiPost(root, `/api/conversations/${id}/regenerate`);
      button.disabled = false;
      if (refused) store.notice("regenerate", "error", refused, { replace: true });
      renderer.schedule();
    } else if (button.dataset.action === "rename") {
      const form = root.querySelector("#rename");
      form.hidden = false;
      form.querySelector("input").value = (store.conversation && store.conversation.title) || "";
      form.querySelector("input").focus();
    }
  });
  const form = root.querySelector("#rename");
  if (!form) return;
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const title = form.querySelector("input").value.trim();
    if (title && socket.send({ type: "rename", title })) form.hidden = true;
  });
  form.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && !imeKey(event)) { // not an IME's own Escape
      event.stopPropagation(); // Esc closes the form here; it does not stop the run
      form.hidden = true;
    }
  });
}
