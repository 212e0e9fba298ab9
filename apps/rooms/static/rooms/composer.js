// The composer: Enter sends, Shift+Enter is a new line; "typing" goes out at most every 3 s.
// It stays usable while the agent runs: a message sent then waits for the run's next step.
// "@" completes the agent's handles and the team's people (mentions.js); images are pasted,
// dropped or attached (attachments.js).

import { setupAttachments } from "./attachments.js";
import { imeKey } from "./ime.js";
import { setupMentions } from "./mentions.js";

const TYPING_EVERY_MS = 3000;

/** True for an Enter that should send (not Shift+Enter, not while an IME composes). */
export function isSendKey(event) {
  return event.key === "Enter" && !event.shiftKey && !imeKey(event);
}

export const BLANK_TEXT = gettext(
  "Not sent: the message is only spaces or blank lines — type some text.");

/** Why a message of `length` characters cannot be sent when at most `max` fit. */
export function tooLongText(length, max) {
  const n = (v) => v.toLocaleString("en-US");
  const text = gettext(
    "the message is %(length)s characters long; at most %(max)s fit in one message. Shorten it or split it.");
  return interpolate(text, { length: n(length), max: n(max) }, true);
}

/** "Not sent: <reason>", in the page's language. */
function notSent(reason) {
  return interpolate(gettext("Not sent: %(reason)s"), { reason }, true);
}

export const UPLOADING_TEXT = gettext(
  "Not sent yet: an image is still uploading — send again in a moment.");

function setupResources(form) {
  // "Attach a resource": a team MCP server's resource (server, URI) goes with the next
  // message; the server reads it when the message is sent. Chips show what is attached.
  const list = form.querySelector("#composer-resources");
  let attached = [];

  function render() {
    if (!list) return;
    list.hidden = attached.length === 0;
    list.replaceChildren(...attached.map((a, i) => {
      const chip = document.createElement("span");
      chip.className = "attachment-chip";
      chip.textContent = `${a.server}: ${a.uri} `;
      const remove = document.createElement("button");
      remove.type = "button";
      remove.dataset.action = "attach-remove";
      remove.dataset.index = String(i);
      remove.setAttribute("aria-label", interpolate(gettext("Remove %(uri)s"), { uri: a.uri }, true));
      remove.textContent = "×";
      chip.append(remove);
      return chip;
    }));
  }

  form.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-action]");
    if (!button) return;
    if (button.dataset.action === "attach-add") {
      const uri = form.querySelector('input[name="attach-uri"]');
      const server = form.querySelector('select[name="attach-server"]');
      if (!uri.value.trim() || !server.value) return;
      attached.push({ kind: "mcp_resource", server: server.value, uri: uri.value.trim() });
      uri.value = "";
      render();
    } else if (button.dataset.action === "attach-remove") {
      attached.splice(Number(button.dataset.index), 1);
      render();
    }
  });
  return {
    take() {
      const taken = attached;
      attached = [];
      render();
      return taken;
    },
    restore(items) {
      if (items && items.length && !attached.length) attached = [...items];
      render();
    },
  };
}

function setupPrompts(form, area, requestPrompts) {
  // Slash commands: typing "/" asks the server once for the team's MCP prompts; the menu
  // offers each `/server:prompt` whose command starts with what is typed (CJK names too);
  // picking one asks its arguments inline, and the message is sent with the prompt.
  const menu = form.querySelector("#prompt-menu");
  const args = form.querySelector("#prompt-args");
  let prompts = null; // null: not asked yet
  let matches = [];
  let picked = null;

  const command = (p) => `/${p.server}:${p.name}`;

  function renderMenu() {
    const typed = area.value.split(/\s/, 1)[0];
    const open = typed.startsWith("/") && !picked && prompts !== null;
    matches = open ? prompts.filter((p) => command(p).startsWith(typed)) : [];
    menu.hidden = matches.length === 0;
    menu.replaceChildren(...matches.map((p, i) => {
      const item = document.createElement("li");
      const choose = document.createElement("button");
      choose.type = "button";
      choose.dataset.action = "prompt-pick";
      choose.dataset.index = String(i);
      choose.textContent = command(p);
      item.append(choose);
      if (p.description) item.append(` — ${p.description}`);
      return item;
    }));
  }

  function renderArgs() {
    args.hidden = !picked || picked.arguments.length === 0;
    args.replaceChildren(...(picked ? picked.arguments : []).map((a) => {
      const label = document.createElement("label");
      label.className = "prompt-arg";
      label.append(a.name + (a.required ? " *" : ""));
      const input = document.createElement("input");
      input.type = "text";
      input.name = a.name;
      if (a.required) input.setAttribute("aria-required", "true"); // checked on send, not by the browser
      input.placeholder = a.description || "";
      label.append(input);
      return label;
    }));
  }

  function pick(prompt) {
    picked = prompt;
    area.value = command(prompt);
    renderMenu();
    renderArgs();
    const first = args.querySelector("input");
    (first || area).focus();
  }

  area.addEventListener("input", () => {
    if (picked && !area.value.startsWith(command(picked))) {
      picked = null; // the command was edited away: a plain message again
      renderArgs();
    }
    if (area.value.startsWith("/") && prompts === null) {
      prompts = [];
      requestPrompts();
    }
    renderMenu();
  });
  form.addEventListener("click", (event) => {
    const button = event.target.closest('button[data-action="prompt-pick"]');
    if (button) pick(matches[Number(button.dataset.index)]);
  });

  return {
    setPrompts(list) {
      prompts = list || [];
      renderMenu();
    },
    forgetPrompts() {
      prompts = null;
    },
    // The prompt to send with `text` ({server, name, arguments}), null for none; throws a
    // sentence when a required argument is missing.
    take(text) {
      if (!picked || !text.startsWith(command(picked))) return null;
      const values = {};
      for (const input of args.querySelectorAll("input")) {
        if (input.value.trim()) values[input.name] = input.value.trim();
      }
      const missing = picked.arguments.filter((a) => a.required && !values[a.name]);
      if (missing.length) {
        throw new Error(interpolate(gettext("%(command)s needs %(names)s."), {
          command: command(picked), names: missing.map((a) => a.name).join(", ") }, true));
      }
      const prompt = { server: picked.server, name: picked.name, arguments: values };
      picked = null;
      renderArgs();
      return prompt;
    },
  };
}

/**
 * Wire `form` (form#composer, `data-max-chars`: the server's CONFAB_MESSAGE_MAX_CHARS):
 * `onSend(text, images, resources, prompt)` for each message (images: the attached
 * `{ id, url }`; resources: `[{kind: "mcp_resource", server, uri}]`; both maybe empty; prompt:
 * `{server, name, arguments}` or null); `onTyping()` while
 * typing; `requestPrompts()` when the prompts are first needed (answer with `setPrompts`). Returns `{ focus(), refused(text, reason,
 * attachments) }`: `refused` puts a message the server turned down back in the textarea
 * (unless something new is typed there), with its attachments, and says why under it.
 */
export function setupComposer(form, { onSend, onTyping, requestPrompts = () => {} }) {
  const area = form.querySelector('textarea[name="text"]');
  const status = form.querySelector("#composer-status");
  const list = form.querySelector("#mention-list");
  if (list && form.dataset.mentionNames) {
    setupMentions(area, list, JSON.parse(form.dataset.mentionNames));
  }
  const resources = setupResources(form);
  const prompts = setupPrompts(form, area, requestPrompts);
  let lastTyping = 0;

  function say(text) {
    if (status) status.textContent = text;
  }
  const attachments = setupAttachments(form, say);

  function submit() {
    const text = area.value;
    if (attachments.busy()) {
      say(UPLOADING_TEXT);
      return;
    }
    const images = attachments.list();
    if (!text.trim() && !images.length) {
      say(BLANK_TEXT); // the text stays: the person may have meant to type more
      area.focus();
      return;
    }
    const max = Number(form.dataset.maxChars) || Infinity;
    if (text.length > max) {
      say(notSent(tooLongText(text.length, max)));
      area.focus();
      return;
    }
    let prompt;
    try {
      prompt = prompts.take(text);
    } catch (missing) {
      say(notSent(missing.message));
      return;
    }
    say("");
    onSend(images.length ? text.trim() : text, images, resources.take(), prompt);
    area.value = "";
    attachments.clear();
    area.focus();
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit();
  });
  area.addEventListener("keydown", (event) => {
    if (isSendKey(event)) {
      event.preventDefault();
      submit();
    }
  });
  area.addEventListener("input", () => {
    if (area.value.trim()) say("");
    const now = Date.now();
    if (area.value && now - lastTyping >= TYPING_EVERY_MS) {
      lastTyping = now;
      onTyping();
    }
  });
  function refused(text, reason, attached) {
    if (!area.value.trim()) {
      area.value = text;
      resources.restore(attached);
    }
    say(notSent(reason));
  }

  return { focus: () => area.focus(), refused, setPrompts: prompts.setPrompts,
           forgetPrompts: prompts.forgetPrompts };
}
