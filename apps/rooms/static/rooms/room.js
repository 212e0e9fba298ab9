// The room page's entry: wires the socket, the store, the renderer and the composer.
// Data comes from the #room element's data-* attributes (no inline script: the CSP forbids it).

import { collect as collectElicitation } from "./elicitation.js";
import { setupComposer, isSendKey } from "./composer.js";
import { copiedText, copyWith } from "./copy.js";
import { setupMessageFocus } from "./focus.js";
import { imeKey } from "./ime.js";
import { setupModelSettings } from "./model_settings.js";
import { Renderer } from "./render.js";
import { Sidebar } from "./sidebar.js";
import { RoomSocket } from "./socket.js";
import { personName, Store } from "./store.js";
import { setupVersions } from "./versions.js";

// What a deleted conversation's page can no longer do (its links and the copy buttons stay).
const GONE_CONTROLS = ".run-bar button, .run-bar select, button.rename, #composer textarea, #composer button, #composer input, #transcript .message-actions button"; // i18n: not prose

const CONNECTION_TEXT = {
  connecting: gettext("Connecting…"),
  open: gettext("Connected"),
  reconnecting: gettext("Reconnecting…"),
  closed: gettext("Disconnected"),
};

function clientId() {
  if (window.crypto && typeof window.crypto.randomUUID === "function") {
    return window.crypto.randomUUID();
  }
  const bytes = new Uint8Array(16);
  window.crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function sendFrame(id, text, images, resources, prompt) {
  // attachments: the MCP resources, then the uploaded images (docs/protocol.md, send)
  const frame = { type: "send", client_id: id, text };
  const attachments = [...(resources || []), ...(images || []).map((i) => ({ kind: "image", id: i.id }))];
  if (attachments.length) frame.attachments = attachments;
  if (prompt) frame.prompt = prompt;
  return frame;
}

function pageEnd(root) {
  // How the last run ended, from the server-rendered #run-status (the state frame has no
  // finished run).
  const status = root.querySelector("#run-status");
  if (!status || !status.dataset.lastStatus) return null;
  const by = status.dataset.lastStoppedBy;
  return { status: status.dataset.lastStatus, stopped_by: by ? { name: by } : null,
           error_kind: status.dataset.lastErrorKind || null, message: "" };
}

function start(root) {
  const you = { id: Number(root.dataset.userId), name: root.dataset.userName,
                role: root.dataset.role };
  const clock = { timeZone: root.dataset.timeZone, locale: document.documentElement.lang };
  const store = new Store(you, pageEnd(root), clock);
  const renderer = new Renderer(root, store);
  const sidebar = new Sidebar(root);
  const socket = new RoomSocket(root.dataset.socketPath, {
    onFrame: (frame) => {
      handleFrame(frame);
      renderer.schedule();
      if (frame.type === "state" || frame.type === "history") focusMessage();
    },
    onStatus: (state, detail) => {
      renderer.setConnection(state, CONNECTION_TEXT[state] || state);
      if (state === "closed") {
        store.notice("connection", "error", detail === "not_found"
          ? gettext("This conversation is not available to you (not found).")
          : gettext("You are signed out: sign in again to rejoin the room."), { replace: true });
        renderer.schedule();
      }
    },
    onOpen: () => {
      socket.send({ type: "sidebar" }); // the room's conversations, then their changes
      // A configure sent as the last socket died may never have arrived: the server's word.
      if (renderer.settingsUi) renderer.settingsUi.reset();
      for (const msg of store.unsent()) {
        socket.send(sendFrame(msg.clientId, msg.text, msg.images, msg.attachments, msg.prompt));
      }
    },
  });

  function handleFrame(frame) {
    switch (frame.type) {
      case "state":
        store.applyState(frame);
        return;
      case "event":
        store.applyEvent(frame.event);
        if (frame.event.kind === "settings_changed" && renderer.settingsUi) {
          renderer.settingsUi.heard(frame.event);
        }
        if (frame.event.kind === "mcp_list_changed" && frame.event.list === "prompts"
            && composerUi) composerUi.forgetPrompts(); // the next "/" asks again
        if (frame.event.kind === "conversation_archived"
            || frame.event.kind === "conversation_deleted") gone(frame.event);
        return;
      case "ack":
        store.ack(frame);
        return;
      case "prompts":
        if (composerUi) composerUi.setPrompts(frame.prompts);
        return;
      case "history":
        store.applyHistory(frame);
        return;
      case "presence":
        store.setPresence(frame);
        return;
      case "sidebar":
      case "sidebar_conversation":
      case "sidebar_removed":
      case "sidebar_presence":
        sidebar.apply(frame);
        return;
      case "error":
        if (refusedSend(frame)) return;
        store.notice(`error:${frame.code}`, "error", frame.message || frame.code, { replace: true });
        store.dirty.run = true; // a refused mode switch: the select shows the mode again
        if (frame.refused === "configure" && renderer.settingsUi) renderer.settingsUi.reset();
        root.querySelectorAll("form.ask-user [disabled], .tool-approval [disabled], "
                              + "form.elicitation [disabled]")
          .forEach((el) => { el.disabled = false; });
        return;
      default:
    }
  }

  function gone(ev) {
    // Someone archived the conversation (it leaves the room's list; it still works here) or
    // deleted it (nothing more can be said: the socket stops, and the page's controls with it).
    const deleted = ev.kind === "conversation_deleted";
    const text = deleted
      ? gettext("%(name)s deleted this conversation: nothing more can be said here.")
      : gettext("%(name)s archived this conversation: it is no longer listed in the room.");
    store.notice("gone", deleted ? "error" : "warn",
                 interpolate(text, { name: personName(ev.by) }, true),
                 { replace: true, link: root.dataset.roomUrl, linkText: gettext("Back to the room") });
    if (!deleted) return;
    socket.stop();
    renderer.setConnection("closed", CONNECTION_TEXT.closed);
    root.querySelectorAll(GONE_CONTROLS).forEach((el) => { el.disabled = true; });
  }

  function refusedSend(frame) {
    // A refused `send` is shown where it was typed: its bubble says "not sent" and why, and
    // its text goes back in the composer. Older servers name no client_id: the oldest unsent.
    if (frame.client_id === undefined && frame.code !== "rate_limited") return false;
    const reason = frame.message || frame.code;
    const msg = store.sendFailed(reason, frame.client_id);
    if (!msg) return false;
    if (composerUi) composerUi.refused(msg.text, reason, msg.attachments);
    return true;
  }

  function send(text, images = [], resources = [], prompt = null) {
    const id = clientId();
    const msg = store.addLocal(id, text, images);
    msg.attachments = resources; // resent with the message after a reconnect
    msg.prompt = prompt;
    socket.send(sendFrame(id, text, images, resources, prompt));
    renderer.schedule();
  }

  function loadHistory() {
    const before = store.requestHistory();
    if (before !== null && !socket.send({ type: "history", before })) store.loadingHistory = false;
    renderer.schedule();
  }

  const focusMessage = setupMessageFocus({ store, renderer, loadHistory }); // #message-<id>

  const more = root.querySelector("#history-more");
  if (more && "IntersectionObserver" in window) {
    // Scrolling up to the top of what is loaded brings the page before it.
    new IntersectionObserver((entries) => {
      if (entries.some((entry) => entry.isIntersecting)) loadHistory();
    }).observe(more);
  }

  function stop() {
    if (!store.run || !store.canWrite) return;
    socket.send({ type: "stop" });
  }

  const settingsBox = root.querySelector("#model-settings");
  if (settingsBox) {
    renderer.settingsUi = setupModelSettings(settingsBox, { store, send: (f) => socket.send(f) });
  }

  const composer = root.querySelector("#composer");
  const composerUi = composer
    ? setupComposer(composer, { onSend: send, onTyping: () => socket.send({ type: "typing" }),
                                requestPrompts: () => socket.send({ type: "prompts" }) })
    : null;

  root.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-action]");
    if (!button || !root.contains(button)) return;
    const action = button.dataset.action;
    if (action === "stop") {
      stop();
    } else if (action === "history") {
      loadHistory();
    } else if (action === "compact") {
      if (!store.run && store.canWrite) socket.send({ type: "compact" });
    } else if (action === "ask-agent") {
      if (!store.run && store.canWrite) socket.send({ type: "ask_agent" });
    } else if (action === "approve" || action === "deny") {
      const card = button.closest(".tool-card");
      if (!card || !card.dataset.callId) return;
      if (socket.send({ type: "decide", tool_call_id: card.dataset.callId, decision: action })) {
        card.querySelectorAll(".tool-approval button").forEach((b) => { b.disabled = true; });
      }
    } else if (action === "edit" || action === "cancel-edit") {
      const form = button.closest(".tool-card")?.querySelector("form.tool-edit");
      if (form) form.hidden = action === "cancel-edit";
      if (form && !form.hidden) form.querySelector("textarea").focus();
    } else if (action === "elicit-decline" || action === "elicit-cancel") {
      answerElicitation(button.closest("form.elicitation"), action.slice("elicit-".length));
    } else if (action === "copy") {
      copyWith(button, copiedText(button, (article) => renderer.messageText(article)));
    } else if (action === "dismiss") {
      store.dismiss(button.dataset.noticeId);
      renderer.schedule();
    }
  });

  root.addEventListener("change", (event) => {
    // The mode switches when the server says so (agent_mode_changed); a refusal puts it back.
    if (event.target.id !== "agent-mode" || !store.canWrite) return;
    socket.send({ type: "set_agent_mode", agent_mode: event.target.value });
  });

  function answerElicitation(form, action) {
    // An MCP server's question: the form's content with "accept"; the server checks it against
    // the schema (an `invalid` error re-enables the form).
    if (!form) return;
    const frame = { type: "elicit", elicitation_id: form.dataset.elicitationId, action };
    if (action === "accept") frame.content = collectElicitation(form);
    if (socket.send(frame)) {
      form.querySelectorAll("input, select, button").forEach((el) => { el.disabled = true; });
    }
  }

  function approveEdited(form) {
    // Approve with the edited arguments: JSON that is not an object is refused here; whether
    // they fit the tool's schema the server says (an `invalid` error re-enables the form).
    const card = form.closest(".tool-card");
    const problem = form.querySelector(".tool-edit-error");
    let args;
    try {
      args = JSON.parse(form.querySelector("textarea").value);
    } catch (error) {
      problem.textContent = interpolate(gettext("Not valid JSON: %(error)s"), { error: error.message }, true);
      return;
    }
    if (args === null || typeof args !== "object" || Array.isArray(args)) {
      problem.textContent = gettext("The arguments must be a JSON object.");
      return;
    }
    problem.textContent = "";
    if (socket.send({ type: "decide", tool_call_id: card.dataset.callId, decision: "approve",
                      arguments: args })) {
      card.querySelectorAll(".tool-approval button, .tool-approval textarea")
        .forEach((el) => { el.disabled = true; });
    }
  }

  root.addEventListener("submit", (event) => {
    const question = event.target.closest("form.elicitation");
    if (question) {
      event.preventDefault();
      answerElicitation(question, "accept");
      return;
    }
    const edit = event.target.closest("form.tool-edit");
    if (edit) {
      event.preventDefault();
      approveEdited(edit);
      return;
    }
    const form = event.target.closest("form.ask-user");
    if (!form) return;
    event.preventDefault();
    const area = form.querySelector("textarea");
    const text = area.value.trim();
    if (!text) return;
    if (socket.send({ type: "answer", question_id: form.dataset.questionId, text })) {
      area.disabled = true;
      form.querySelector("button").disabled = true;
    }
  });

  root.addEventListener("keydown", (event) => {
    const area = event.target.closest && event.target.closest("form.ask-user textarea");
    if (area && isSendKey(event)) {
      event.preventDefault();
      area.form.requestSubmit();
    }
  });

  document.addEventListener("keydown", (event) => {
    // Esc stops the run, from anywhere in the room (not from the site's menus).
    if (event.key !== "Escape" || imeKey(event) || event.defaultPrevented) return;
    if (event.target === document.body || root.contains(event.target)) stop();
  });

  setupVersions(root, store, socket, renderer);
  window.confabRoom = { store, socket, renderer }; // for debugging and the browser tests
  renderer.schedule();
  socket.start();
}

const root = document.getElementById("room");
if (root) start(root);
