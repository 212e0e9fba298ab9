// Earlier versions, regenerate, and the conversation's title (issue 19).
//
// A message the server marked superseded (an edit or a regenerated answer replaced it) stays in
// the transcript as an earlier version: hidden until "Show earlier versions" switches them on,
// and marked "earlier version" then. "Regenerate" and renaming are REST and socket calls; what
// they change arrives as events (messages_superseded, title_changed) like anyone's.

export function supersede(store, ev) {
  // messages_superseded: the listed messages became earlier versions of run ev.run_id. A
  // message streamed live is known by its engine id (its row id never reached this page).
  const ids = new Set((ev.message_ids || []).map(String));
  const engineIds = new Set(ev.engine_ids || []);
  for (const msg of store.messages.values()) {
    if ((msg.id !== undefined && ids.has(String(msg.id))) || engineIds.has(msg.key)) {
      msg.supersededBy = ev.run_id;
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

export function renderVersions(root, store) {
  // The "earlier versions" switch shows how many there are; hidden while there are none.
  const earlier = [...store.messages.values()].filter((m) => m.supersededBy).length;
  const toggle = root.querySelector('button[data-action="earlier-versions"]');
  if (toggle) {
    toggle.hidden = earlier === 0;
    const shown = root.querySelector("#transcript").classList.contains("show-earlier");
    toggle.setAttribute("aria-pressed", String(shown));
    toggle.textContent = interpolate(shown ? gettext("Hide earlier versions (%(count)s)")
      : gettext("Show earlier versions (%(count)s)"), { count: earlier }, true);
  }
  const regenerate = root.querySelector('button[data-action="regenerate"]');
  if (regenerate) {
    const answered = [...store.messages.values()].some((m) => m.role === "assistant"
                                                              && !m.supersededBy);
    regenerate.hidden = !!store.run || !store.canWrite || !answered;
  }
}

export function renderTitle(root, store) {
  const title = store.conversation && store.conversation.title;
  const heading = root.querySelector(".room-title");
  if (!title || !heading || heading.textContent === title) return;
  heading.textContent = title;
  const parts = document.title.split(" · ");
  document.title = [title, ...parts.slice(1)].join(" · ");
}

async function post(root, path) {
  const response = await fetch(path, {
    method: "POST", credentials: "same-origin",
    headers: { "X-CSRFToken": root.dataset.csrf, "Content-Type": "application/json" },
  });
  if (response.ok) return null;
  const body = await response.json().catch(() => ({}));
  return body.message || String(response.status);
}

export function setupVersions(root, store, socket, renderer) {
  const id = root.dataset.conversationId;
  root.addEventListener("click", async (event) => {
    const button = event.target.closest("button[data-action]");
    if (!button || !root.contains(button)) return;
    if (button.dataset.action === "earlier-versions") {
      root.querySelector("#transcript").classList.toggle("show-earlier");
      store.dirty.run = true;
      renderer.schedule();
    } else if (button.dataset.action === "regenerate") {
      button.disabled = true;
      const refused = await post(root, `/api/conversations/${id}/regenerate`);
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
    if (event.key === "Escape") {
      event.stopPropagation(); // Esc closes the form here; it does not stop the run
      form.hidden = true;
    }
  });
}
