// The composer: Enter sends, Shift+Enter is a new line; "typing" goes out at most every 3 s.
// It stays usable while the agent runs: a message sent then waits for the run's next step.

const TYPING_EVERY_MS = 3000;

/** True for an Enter that should send (not Shift+Enter, not while an IME composes). */
export function isSendKey(event) {
  return event.key === "Enter" && !event.shiftKey && !event.isComposing && event.keyCode !== 229;
}

export const BLANK_TEXT = "Not sent: the message is only spaces or blank lines — type some text.";

/** Why a message of `length` characters cannot be sent when at most `max` fit. */
export function tooLongText(length, max) {
  const n = (v) => v.toLocaleString("en-US");
  return `the message is ${n(length)} characters long; at most ${n(max)} fit in one message. `
    + "Shorten it or split it.";
}

function setupAttachments(form) {
  // "Attach a resource": a team MCP server's resource (server, URI) goes with the next
  // message; the server reads it when the message is sent. Chips show what is attached.
  const list = form.querySelector("#composer-attachments");
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
      remove.setAttribute("aria-label", `Remove ${a.uri}`);
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

/**
 * Wire `form` (form#composer, `data-max-chars`: the server's CONFAB_MESSAGE_MAX_CHARS):
 * `onSend(text, attachments)` for each message (attachments: `[{kind: "mcp_resource", server,
 * uri}]`, maybe empty); `onTyping()` while typing. Returns `{ focus(), refused(text, reason,
 * attachments) }`: `refused` puts a message the server turned down back in the textarea
 * (unless something new is typed there), with its attachments, and says why under it.
 */
export function setupComposer(form, { onSend, onTyping }) {
  const area = form.querySelector('textarea[name="text"]');
  const status = form.querySelector("#composer-status");
  const attachments = setupAttachments(form);
  let lastTyping = 0;

  function say(text) {
    if (status) status.textContent = text;
  }

  function submit() {
    const text = area.value;
    if (!text.trim()) {
      say(BLANK_TEXT); // the text stays: the person may have meant to type more
      area.focus();
      return;
    }
    const max = Number(form.dataset.maxChars) || Infinity;
    if (text.length > max) {
      say(`Not sent: ${tooLongText(text.length, max)}`);
      area.focus();
      return;
    }
    say("");
    onSend(text, attachments.take());
    area.value = "";
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
      attachments.restore(attached);
    }
    say(`Not sent: ${reason}`);
  }

  return { focus: () => area.focus(), refused };
}
